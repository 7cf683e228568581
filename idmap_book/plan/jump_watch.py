"""What the networks see at the moment that matters: every row of the interventions
(synthesis.PROPERTIES) measured in the steps around the lr jump (ResNet-110, the lr-jump probe) and
in the first steps of ResNet-1001 (Fig 1's recipe), in the very trainings the claims read.

Per forward recorded, per unit: the std of each weight layer's input (mechanisms.Watch), the size of
the residual branch beside the path it is added to (``branch_ratio``: ||F(x_l)|| / ||x_l||, x_l the
branch's input), and the norm of the gradient on the unit's weights in that step (``grad_norm``);
for the whole net, the std of the classifier's input and of the logits. The measurement trains the
recipe of a recorded run (same config, seed and precision, one thread) up to the last step it
watches, and keeps its logged windows: a test compares them with the recorded run's, so the numbers
are those of the run the claims judge. One JSON a (row, seed) under data/mechanisms/, recorded like
a run (mechanisms.measured), looked up by what it measures and computed only when missing.
"""
from __future__ import annotations

import math
from functools import partial

from idmap_lib.engine import data as data_mod, recipes
from idmap_lib.models.introspect import residual_units
from ..evidence import mechanisms
from ..evidence.claims import CLAIMS_BY_KEY
from ..evidence.seeds import SEEDS
from ..evidence.synthesis import PROPERTIES

EXPERIMENT = "mech_jump_forwards"
# the updates made before each forward recorded: at initialisation, then around the jump (step 100
# of 400 at 110 layers: the lr is 0.01 up to step 99 and 0.1 from step 100) and over ResNet-1001's
# first steps
AT = {110: (0, 1, 95, 99, 100, 101, 102, 105, 110), 1001: (0, 1, 2, 5, 10, 20)}
SCALE = {110: CLAIMS_BY_KEY["lr_jump_preact_tolerates"].scale,
         1001: CLAIMS_BY_KEY["fig1_1001_original_slow_start"].scale}


def depth_of(row: str) -> int:
    return int(row.rsplit("-", 1)[1])


def spec(row: str, seed: int) -> dict:
    """What is measured: the a_swaps recipe of `row` at its test's scale, watched at AT."""
    d = depth_of(row)
    return {"experiment": EXPERIMENT, "variant": row, "scale": SCALE[d], "seed": int(seed),
            "recipe": recipes.config("a_swaps", row, SCALE[d], seed), "at": list(AT[d]),
            "threads": 1}


def all_specs(rows=None, seeds=SEEDS) -> list:

    return [spec(r, s) for s in seeds for r in (rows or PROPERTIES)]


class JumpWatch(mechanisms.Watch):
    """mechanisms.Watch, plus each unit's branch beside its input (a forward hook on F) while
    ``on``."""

    def __init__(self, model):
        super().__init__(model)
        self.units, self.fc = residual_units(model), getattr(model, "fc", None)
        self.branch = [None] * len(self.units)
        for k, u in enumerate(self.units):
            self.hooks.append(u.residual.register_forward_hook(partial(self._branch, k)))

    def _branch(self, k, module, args, out):
        if self.on:
            x = args[0].detach().float()
            self.branch[k] = float(out.detach().float().norm() / x.norm().clamp_min(1e-30))

    def snapshot(self) -> dict:
        return {**super().snapshot(), "branch_ratio": list(self.branch),
                "grad_norm": self.grad_norms(), "fc_grad_norm": self.fc_grad_norm()}

    def fc_grad_norm(self) -> float | None:
        """||dE/dW|| of the classifier's weights in the step just made: with the logits' std, the
        head's step at the jump (recorded from commit f909178 on; earlier records lack it)."""
        g = self.fc.weight.grad if self.fc is not None else None
        return None if g is None else float(g.detach().float().norm())

    def grad_norms(self) -> list:
        """Per unit, ||dE/dW|| over its weights in the step just made (the optimizer zeroes them at
        the next)."""
        out = []
        for u in self.units:
            sq = sum(float(p.grad.detach().float().pow(2).sum()) for p in u.parameters()
                     if p.grad is not None)
            out.append(math.sqrt(sq))
        return out


def watch_training(recipe, at, data=None) -> dict:
    """mechanisms.training_forwards with ``JumpWatch``: the weight layers' inputs, each unit's
    branch and its gradient norm in the steps `at`."""
    return mechanisms.training_forwards(recipe, at, data, watch=JumpWatch)


def same_run(record, result) -> bool:
    """Whether the measurement trained what `result` recorded: every logged window it has equals the
    result's."""
    mine = {h["step"]: (h["train_loss"], h["train_err"])
            for h in record["values"]["history"]["train"]}
    theirs = {h["step"]: (h["train_loss"], h["train_err"]) for h in result["history"]["train"]}
    return bool(mine) and all(theirs.get(s) == v for s, v in mine.items())


def summary(record) -> dict:
    """Per forward recorded: the spread of the weight layers' input std (log10 largest / smallest),
    the classifier's input std, the largest branch ratio and the largest unit gradient norm: the
    panels of the explorer."""
    rows = []
    for f in record["values"]["forwards"]:
        flat = [s for unit in f["weight_input_std"] for s in unit if s]
        rows.append({"step": f["step"], "lr": f["lr"],
                     "input_spread": math.log10(max(flat) / min(flat)),
                     "fc_input_std": f["fc_input_std"], "logits_std": f["logits_std"],
                     "branch_ratio_max": max(b for b in f["branch_ratio"] if b is not None),
                     "grad_norm_max": max(f["grad_norm"]), "grad_norm_first": f["grad_norm"][0]})
    return rows


def measured(spec_, out_dir=None, compute=True, data=None):
    """The record of one spec (mechanisms.measured: looked up, or measured now and saved)."""
    return mechanisms.measured(spec_, out_dir, compute, data,
                               measure=lambda s, d: watch_training(s["recipe"], s["at"], d))


def measure_missing(rows=None, seeds=SEEDS, out_dir=None, log=print):
    """Measure every spec not yet recorded, one after another (the CIFAR-10 data loaded once);
    returns the paths."""
    data, paths = None, []
    for s in all_specs(rows, seeds):
        if measured(s, out_dir, compute=False) is not None:
            continue
        data = data or data_mod.load("cifar10")
        rec = measured(s, out_dir, data=data)
        log(f"recorded: {rec['path']} ({rec['wall_s']:.0f} s)")
        paths.append(rec["path"])
    return paths


# python -m idmap_book.plan.jump_watch [ROW ...]: what tools/jump_watch.sh runs
if __name__ == "__main__":
    import sys

    measure_missing(sys.argv[1:] or None)
