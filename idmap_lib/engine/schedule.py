"""Learning-rate schedules: plain dicts (JSON, part of a run's config) and a pure function of the
iteration that reads them (``lr_at``), so that a resumed run gets the same lr as an unbroken one."""
from __future__ import annotations

import copy


def lr_at(schedule: dict, step: int) -> float:
    """Learning rate at iteration `step` (0-based) of `schedule`.

    kind "step": ``base / divisor ** (number of milestones <= step)``, except during the warm-up
    (``step < warmup_steps``): ``warmup_lr`` (Paper A: 0.01 for iterations < 400, then 0.1, /10 at
    32000 and 48000), or with ``warmup: "linear"`` a ramp from ``warmup_lr`` at step 0 towards
    ``base`` (Goyal et al. 2017's gradual warm-up; ours, for the CPU scale). Training stops at
    ``total``, so asking for step >= total is an error. kind "constant": ``base``.
    """
    total = schedule["total"]
    if not 0 <= step < total:
        raise ValueError(f"step {step} is outside the schedule: training runs iterations "
                         f"0..{total - 1} and stops at {total}")
    if schedule["kind"] == "constant":
        return schedule["base"]
    if schedule["kind"] != "step":
        raise ValueError(f"unknown schedule kind {schedule['kind']!r}; valid: step, constant")
    if step < schedule.get("warmup_steps", 0):
        if schedule.get("warmup") == "linear":
            lo, hi = schedule["warmup_lr"], schedule["base"]
            return lo + (hi - lo) * step / schedule["warmup_steps"]
        return schedule["warmup_lr"]
    n = sum(step >= m for m in schedule["milestones"])
    return schedule["base"] / schedule["divisor"] ** n  # exact decimals: 0.1 / 10 == 0.01


def step_schedule(total, base, divisor, fractions=None, milestones=None, warmup_steps=0,
                  warmup_lr=None,
                  warmup="step"):
    """A step schedule over `total` iterations: `base`, divided by `divisor` at each milestone
    (given, or at `fractions` of `total`), after an optional warm-up (see ``lr_at``)."""
    ms = list(milestones) if milestones is not None else [round(f * total) for f in fractions]
    s = {"kind": "step", "total": total, "base": base, "divisor": divisor, "milestones": ms}
    if warmup_steps:
        s.update(warmup_steps=warmup_steps, warmup_lr=warmup_lr)
        if warmup != "step":
            s["warmup"] = warmup
    return s


def rescaled(s: dict, steps: int) -> dict:
    """Schedule `s` over `steps` steps: its milestones at the same fractions, its warm-up at most a
    tenth."""
    s = copy.deepcopy(s)
    old, s["total"] = s["total"], steps
    if s["kind"] == "step":
        s["milestones"] = [max(1, round(m * steps / old)) for m in s["milestones"]]
        if s.get("warmup_steps"):
            s["warmup_steps"] = min(s["warmup_steps"], max(1, steps // 10))
    return s
