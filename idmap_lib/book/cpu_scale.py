"""Choosing the CPU scale (chapter 11): the probe run before any claim's runs, and its rule.

The probe is the original ResNet-110, whose loss spikes at the abrupt lr jump of the first CPU scale (the paper's
step warm-up, 0.01 -> 0.1, squeezed into 400 steps: cpu_step_warmup). A scale holds if no seed's training loss
rises after the warm-up by more than PROBE_MAX_RISE above its loss at the end of the warm-up
(``metrics.lr_jump_rise``).
"""
from __future__ import annotations

from .metrics import final_test_err, lr_jump_rise
from .rule import SEEDS
from .runs import seed_runs

PROBE = ("a_table2_activations", "original-110")
PROBE_MAX_RISE = 0.5


def scale_probe(scale="cpu", results_dir=None, seeds=SEEDS) -> dict:
    """The rule that chose the CPU scale, on the original ResNet-110's recorded runs at `scale`: each seed's
    rise of the training loss after the warm-up (lr_jump_rise) and whether every one is within PROBE_MAX_RISE
    (None while a seed is missing)."""
    runs, missing = seed_runs(*PROBE, scale, seeds, results_dir)
    rises = {r["config"]["seed"]: lr_jump_rise(r) for r in runs}
    return {"rises": rises, "missing": missing, "final_test_err": {r["config"]["seed"]: final_test_err(r) for r in runs},
            "holds": None if missing else all(x <= PROBE_MAX_RISE for x in rises.values())}
