"""The spot check of a submission's runs: are they what their config and seed train?

A run's config hash proves only that the config was not edited; a forged run (the book's seed-0 run
with its seed set to 4242 and the hash recomputed, or a classmate's run relabelled) passes it.
:func:`check` trains the first steps of a few of a submission's runs again, from their recorded
config and seed, at the torch threads they were trained with, and compares the training loss of each
of the first :data:`FIRST_STEPS` steps (the result's ``first_steps``, which the trainer records)
with what the run recorded:

- **the same machine** (CPU model, torch version, precision, threads as recorded): the retrained
  steps are bit-for-bit the recorded ones, so every step must agree within :data:`EXACT_TOL`.
  Another seed's steps differ by 0.04-0.22 (below): a forged or relabelled run cannot pass.
- **another machine**: other kernels give other roundings in bf16, so the steps are compared within
  :data:`LOOSE_TOL`, a weak test that the CSV names (a forged seed can pass it; an instructor who
  wants the strong test grades on the machine kind the class trained on, or asks for runs trained
  there).
- a run recorded without ``first_steps`` (older runs): the first logged window's loss and error,
  within :data:`WINDOW_TOL` (weak as well, said so).

Measured 2026-12-02 on this 2-core AMD EPYC, bf16 autocast, classroom configs, seeds 0-3: at the
same threads the first steps are bit-for-bit equal; at 1 vs 2 threads they differ by up to 0.0056
(ResNet-20) and 0.034 (plain MLP d = 50, whose steps all sit near ln 10); two seeds' worst step
differs by 0.061-0.22 (ResNet-20) and 0.040-0.094 (MLP). A run trained on a GPU is not compared on a
CPU: the CSV says "trained on cuda: not comparable here". Each check costs the first window's steps:
a few seconds a run (ResNet-20, 10 steps: ~4 s at one thread; MLPs ~1-2 s).
"""
from __future__ import annotations

import math

from idmap_lib.engine import trainer
from idmap_lib.engine.results import FIRST_STEPS

EXACT_TOL = 1e-6
LOOSE_TOL = 0.04
WINDOW_TOL = {"train_loss": 2e-3, "train_err": 4e-3}
SAME_MACHINE = (("hardware", "cpu"), ("versions", "torch"), ("precision",))


def _comparable(run) -> str | None:
    hw = run.get("hardware") or {}
    if hw.get("device", "cpu") != "cpu":
        return f"trained on {hw.get('device')}: not comparable here"
    return None


def retrain_first_steps(run, data=None) -> dict:
    """The first logged window of `run`'s config (a result without a file: history and provenance),
    trained again here at its recorded threads."""
    cfg = run["config"]
    # enough logged windows to hold the first steps, at the run's recorded threads
    logs = -(-FIRST_STEPS // cfg["log_every"])
    return trainer.train(cfg, data=data, max_steps=logs * cfg["log_every"], write_result=False,
                         progress=False,
                         threads=(run.get("hardware") or {}).get("torch_threads") or 1)


def _field(run, path):
    v = run
    for k in path:
        v = (v or {}).get(k)
    return v


def same_machine(run, here) -> bool:
    """Whether `run` (a recorded result) was trained on the machine kind `here` (a retrained result)
    describes."""
    return all(_field(run, p) == _field(here, p) for p in SAME_MACHINE)


def compare(recorded: dict, again: dict, exact: bool = False) -> tuple[bool, str]:
    """(whether the retrained first steps agree with the recorded ones, how they were compared): two
    results; `exact` where the retraining ran on the recorded machine kind (``same_machine``)."""
    mine, theirs = recorded.get("first_steps"), again.get("first_steps")
    if mine and theirs:
        n = min(len(mine), len(theirs), FIRST_STEPS)
        diffs = [0.0 if math.isnan(a) and math.isnan(b) else abs(a - b)
                 for a, b in zip(map(float, mine[:n]), map(float, theirs[:n]))]
        worst = max(diffs, default=math.inf)
        tol = EXACT_TOL if exact else LOOSE_TOL
        how = "same machine kind" if exact else "another machine kind: weak test"
        return (worst <= tol,
                f"first {n} steps' losses within {worst:.2g} (tolerance {tol:g}, {how})")
    rec, new = [((r.get("history") or {}).get("train") or [None])[0] for r in (recorded, again)]
    if not rec or not new:
        return False, "no first window recorded"
    worst = {m: abs(float(rec[m]) - float(new[m])) for m in WINDOW_TOL}
    ok = all(math.isfinite(d) and d <= WINDOW_TOL[m] for m, d in worst.items())
    return ok, (f"first window (step {rec['step']}): loss within {worst['train_loss']:.2g}, error "
                f"within {worst['train_err']:.2g} (weak test: recorded without first_steps)")


def check(graded_runs: dict, k=2, data=None, rng=None):
    """Spot-check `k` of `graded_runs` ({label: (question, run)}), chosen with `rng`. Returns
    (failures, summary): failures [(label, question, what)], summary one line for the CSV."""
    import random

    labels = sorted(graded_runs)
    if not labels or k <= 0:
        return [], ""
    picked = (rng or random.Random(0)).sample(labels, min(k, len(labels)))
    failures, said = [], []
    for label in picked:
        q, run = graded_runs[label]
        skip = _comparable(run)
        if skip:
            said.append(f"{label}: {skip}")
            continue
        try:
            again = retrain_first_steps(run, data)
            ok, how = compare(run, again, exact=same_machine(run, again))
        # e.g. no dataset on the grader's machine: said, not a failure
        except Exception as e:  # noqa: BLE001
            said.append(f"{label}: not checked ({type(e).__name__}: {str(e)[:80]})")
            continue
        said.append(f"{label}: {'reproduces' if ok else 'does NOT reproduce'} ({how})")
        if not ok:
            failures.append((label, q,
                             f"does not reproduce from its config and seed ({how}): not trained as "
                             f"recorded (a forged seed, or a run copied and edited)"))
    return failures, "; ".join(said)


# ----------------------------------------------------------------------------------------------
# the rest of the history: a run must be the student's all the way

LATER_WINDOWS = 3  # a copy is judged on at least this many logged windows after the first steps


def later_losses(run) -> tuple:
    """The training loss of every logged window that lies wholly after the first FIRST_STEPS steps
    (the steps the spot check retrains), rounded to 1e-7: what a forger who retrains only the first
    steps has copied."""
    every = run["config"]["log_every"]
    return tuple(round(h["train_loss"], 7) for h in run["history"]["train"]
                 if h["step"] - every >= FIRST_STEPS)


def copied(runs: dict, others: list) -> dict:
    """{key: what it copies} of the runs in `runs` ({key: run}) whose later windows
    (``later_losses``, at least LATER_WINDOWS of them) equal those of one of `others` (the book's
    recorded runs, any seed): a run relabelled to a new seed with its first steps trained again
    passes the spot check, never this."""
    seen = {}
    for o in others:
        losses = later_losses(o)
        if len(losses) >= LATER_WINDOWS:
            seen.setdefault(losses, o.get("path") or f"seed {o['config'].get('seed')}")
    out = {}
    for key, r in runs.items():
        losses = later_losses(r)
        if len(losses) >= LATER_WINDOWS and losses in seen:
            out[key] = seen[losses]
    return out
