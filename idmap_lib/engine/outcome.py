"""What a training run comes to, for the loop (loop.py) whatever its stepper: the divergence rule
that ends a run as "fail", the record of one log window, the final metrics and the result dict (its
schema is the book's data: every page reads results through it).

- ``chance(C)``: the test error and training loss of a net that guesses among C classes (1 - 1/C, ln
  C); the book's metrics (book/evidence/metrics.py) read a run "at chance" from these;
- ``Divergence``: the recipe's rule. A non-finite training loss fails the run at the step it
  appeared; recipes that set ``grace_fraction`` also fail a run whose training error is still within
  ``chance_margin`` of chance after that fraction of its steps (at least two log windows: the older
  rule of some recipes);
- ``evaluates`` / ``eval_steps``: when the test set is evaluated (at the log windows' ends only);
- ``window``: one log window's training record; ``final``: the final metrics, from the history alone
  (a test error only if one was measured at the last logged step: a test error from before a failure
  is no final);
- ``result`` / ``stopped``: the dict of a run that ended (ok or fail) / of one stopped early to be
  resumed.
"""
from __future__ import annotations

import math

from ..models.units import gates
from .results import config_hash, provenance, run_name, training_hash


def chance(num_classes: int) -> tuple[float, float]:
    """(test error, training loss) of a net that guesses among `num_classes` classes: 1 - 1/C and ln
    C."""
    return 1.0 - 1.0 / num_classes, math.log(num_classes)


def evaluates(step: int, cfg: dict) -> bool:
    """Whether the log window ending at `step` is followed by an evaluation on the test set: at the
    multiples of ``eval_every`` that end a window, and at the last step. Evaluation happens only at
    a window's end, so the effective cadence is the least common multiple of ``log_every`` and
    ``eval_every`` (ResNet-1001's 128 CPU steps with windows of 10 and ``eval_every`` 64: once, at
    the end)."""
    return step % cfg["eval_every"] == 0 or step == cfg["steps"]


def eval_steps(cfg: dict, until: int | None = None) -> list[int]:
    """The steps a run of `cfg` records a test evaluation at, up to `until` (a run that failed stops
    early)."""
    ends = sorted(set(range(cfg["log_every"], cfg["steps"] + 1, cfg["log_every"])) | {cfg["steps"]})
    return [s for s in ends if evaluates(s, cfg) and (until is None or s <= until)]


class Divergence:
    """The recipe's divergence rule (its ``divergence`` entry), for a run of `cfg` over
    `num_classes` classes."""

    def __init__(self, cfg: dict, num_classes: int):
        div = cfg["divergence"]
        self.grace = None if div.get("grace_fraction") is None else \
            max(int(div["grace_fraction"] * cfg["steps"]), 2 * cfg["log_every"])
        self.chance_margin = div.get("chance_margin", 0.01)
        self.chance_err = chance(num_classes)[0]

    def fail(self, rec: dict, first_bad: float) -> dict | None:
        """The run's failure at the log window `rec` (its first non-finite step `first_bad`, -1 if
        none), or None."""
        if first_bad >= 0:
            return {"step": int(first_bad), "reason": "non-finite training loss"}
        if self.grace is not None and rec["step"] > self.grace and \
                rec["train_err"] >= self.chance_err - self.chance_margin:
            return {"step": rec["step"],
                    "reason": f"training error {rec['train_err']:.3f} still at chance "
                              f"({self.chance_err:.3f}) after {rec['step']} steps"}
        return None


def window(step, loss_sum, err_sum, n, lr, img_per_s, wall_s) -> dict:
    """One log window's training record: its mean loss and error over the `n` images it trained
    on."""
    return {"step": step, "train_loss": loss_sum / max(n, 1), "train_err": err_sum / max(n, 1),
            "lr": lr,
            "img_per_s": img_per_s, "wall_s": wall_s}


def final(history: dict, net=None) -> dict:
    """The final metrics of a run that ended, from its history (and its trained `net`'s gates, if it
    has any)."""
    tr, test = history["train"], history["test"]
    last = tr[-1]
    out = {"train_loss": last["train_loss"], "train_err": last["train_err"], "steps": last["step"],
           "wall_s": last["wall_s"],
           "img_per_s": sum(r["img_per_s"] for r in tr[1:]) / max(len(tr) - 1, 1)}
    if test and test[-1]["step"] == last["step"]:
        out.update(test_err=test[-1]["test_err"], test_loss=test[-1]["test_loss"])
    ks = gates(net) if net is not None else []
    if ks:
        out["gates_k"] = [float(k.detach()) for k in ks]
    return out


def result(cfg: dict, *, status, fail, history, net, first_steps, dataset_source, precision, device,
           world=1,
           channels_last=False, compiled=False, cuda_graph=False, deterministic=False,
           **extra) -> dict:
    """The result of a run that ended ("ok" or "fail"): config, hashes, status, final metrics,
    history, the first steps' losses (the spot check's fingerprint), how it was trained, `extra`
    (fused, stacked, moves, ddp) and the provenance (hardware, versions, date)."""
    return {"config": cfg, "config_hash": config_hash(cfg), "training_hash": training_hash(cfg),
            "status": status, "fail": fail, "final": final(history, net), "history": history,
            "first_steps": list(first_steps), "seed": int(cfg["seed"]),
            "dataset_source": dataset_source,
            "precision": precision, "channels_last": channels_last, "compiled": compiled,
            "cuda_graph": cuda_graph,
            "deterministic": deterministic, **extra, **provenance(device, world)}


def stopped(cfg: dict, step: int, history: dict, checkpoint, **extra) -> dict:
    """A run stopped before its end (``max_steps``), to be resumed from `checkpoint`: nothing is
    recorded."""
    return {"status": "stopped", "step": step, "config": cfg, "config_hash": config_hash(cfg),
            "history": history,
            "checkpoint": str(checkpoint) if checkpoint else None, **extra}


def together(kind: str, cfgs, module: str) -> dict:
    """The note a fused or stacked result carries: how many runs trained together, and which."""
    return {"runs": len(cfgs), "with": [run_name(c) for c in cfgs],
            "note": f"trained together as one {kind} network (idmap_lib.engine.{module}); each "
                    f"run's img_per_s is its own images per second"}
