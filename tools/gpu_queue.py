"""What a lent GPU trains next: the full-recipe runs, in the order that settles the papers' claims soonest.

Runs under way (a checkpoint in data/checkpoints/) come first; then QUEUE, seed by seed: each claim's verdict
needs three seeds (the rule: idmap_lib/book/claims.py), so a seed of every row of a table goes before a second
seed of any. A run is skipped when its result is recorded (looked up by training: Table 1's original is Table
2's original-110) or it is under way. Runs of one experiment go in pairs (``train --variant a,b``: one process,
a CUDA stream each), so one window brings back at most two new checkpoints.

    python tools/gpu_queue.py [--pairs N]     prints "EXPERIMENT VARIANT[,VARIANT] SEED" per line, in order
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (0, 1, 2)
QUEUE = (  # (experiment, variant), most decisive first
    # Table 2 at ResNet-110: the five units (t2_full_preact_best, t2_bn_after_add_worst)
    ("a_table2_activations", "original-110"), ("a_table2_activations", "full_preact-110"),
    ("a_table2_activations", "bn_after_add-110"), ("a_table2_activations", "relu_preact-110"),
    ("a_table2_activations", "relu_before_add-110"),
    # Table 1: the fail rows and the gated rows (t1_fail_rows_far_behind, t1_gating_bias, t1_shortcut_only_...)
    ("a_table1_shortcuts", "constant_scaling-0.5-0.5"), ("a_table1_shortcuts", "exclusive_gating-b0"),
    ("a_table1_shortcuts", "exclusive_gating-b-6"), ("a_table1_shortcuts", "shortcut_only_gating-b-6"),
    ("a_table1_shortcuts", "constant_scaling-0-1"), ("a_table1_shortcuts", "dropout-0.5"),
    # Table 3: the 1-layer skip (t3_preact_1layer_skip)
    ("a_table3_preact", "c10-110-single-original"), ("a_table3_preact", "c10-110-single-full_preact"),
    # ResNet-164 (s42_preact164_regularises; Table 2's bottleneck column)
    ("a_table2_activations", "original-164"), ("a_table2_activations", "full_preact-164"),
)


def in_flight(checkpoint_dir=None) -> list[tuple[str, str, int]]:
    """(experiment, variant, seed) of each committed checkpoint of a run under way."""
    import torch

    out = []
    for p in sorted(Path(checkpoint_dir or ROOT / "data" / "checkpoints").glob("*.pt")):
        c = torch.load(p, map_location="cpu", weights_only=True)["config"]
        out.append((c["experiment"], c["variant"], c["seed"]))
    return out


def next_runs(n_pairs=2, out_dir=None, checkpoint_dir=None) -> list[tuple[str, list[str], int]]:
    """Up to n_pairs (experiment, [variant, variant?], seed) groups: runs under way first, then the queue."""
    from idmap_lib.engine import recipes
    from idmap_lib.engine.results import find_result, training_hash

    flying = in_flight(checkpoint_dir)
    busy = {training_hash(recipes.config(e, v, "full", s)) for e, v, s in flying}
    todo = list(flying) + [(e, v, s) for s in SEEDS for e, v in QUEUE]
    groups, seen = [], set()
    for e, v, s in todo:
        cfg = recipes.config(e, v, "full", s)
        h = training_hash(cfg)
        if h in seen or (find_result(cfg, out_dir) is not None) or (h in busy and (e, v, s) not in flying):
            continue
        seen.add(h)
        last = groups[-1] if groups else None
        if last and last[0] == e and last[2] == s and len(last[1]) < 2:
            last[1].append(v)
        elif len(groups) < n_pairs:
            groups.append((e, [v], s))
        else:
            break
    return groups


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=2)
    for e, vs, s in next_runs(ap.parse_args(argv).pairs):
        print(e, ",".join(vs), s)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
