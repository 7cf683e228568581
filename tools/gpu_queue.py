"""What a lent GPU trains next: the full-recipe runs, in the order that settles the papers' claims soonest.

Runs under way (a checkpoint in data/checkpoints/) come first: the seeds of one variant at one step together
(fused), single runs of one experiment and seed in pairs (two CUDA streams). Then QUEUE. Each claim's verdict
needs three seeds (the rule: idmap_lib/book/claims.py). With fusion (``--fuse N``, N > 1: the window's benchmark
found N nets of one architecture fused faster than one after another) a variant's seeds train as one fused
network (``train --seed 0,1,2 --fused``), so a row gets its three seeds for little more than the cost of one;
without it (N = 1), a seed of every row goes before a second seed of any, two variants of one experiment at a
time. A run is skipped when its result is recorded (looked up by training: Table 1's original is Table 2's
original-110) or it is under way.

    python tools/gpu_queue.py [--groups N] [--fuse N]
        prints "EXPERIMENT VARIANT[,VARIANT] SEED[,SEED..]" per line, one process each, in order
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


def in_flight(checkpoint_dir=None) -> list[tuple[str, str, int, int]]:
    """(experiment, variant, seed, step) of each committed checkpoint of a run under way."""
    import torch

    out = []
    for p in sorted(Path(checkpoint_dir or ROOT / "data" / "checkpoints").glob("*.pt")):
        ck = torch.load(p, map_location="cpu", weights_only=True)
        c = ck["config"]
        out.append((c["experiment"], c["variant"], c["seed"], ck.get("step", 0)))
    return out


def _pairs(runs):
    """(experiment, variant, seed) runs as groups of one process: two variants of one experiment and seed."""
    groups = []
    for e, v, s in runs:
        last = groups[-1] if groups else None
        if last and last[0] == e and last[2] == [s] and len(last[1]) < 2:
            last[1].append(v)
        else:
            groups.append((e, [v], [s]))
    return groups


def next_runs(n_groups=2, out_dir=None, checkpoint_dir=None, fuse=1) -> list[tuple[str, list[str], list[int]]]:
    """Up to n_groups (experiment, [variants], [seeds]) groups, one process each: runs under way first, then the
    queue (``fuse`` > 1: up to that many seeds of one variant fused; 1: pairs of variants at one seed)."""
    from idmap_lib.engine import recipes
    from idmap_lib.engine.results import find_result, training_hash

    flying = in_flight(checkpoint_dir)
    busy = {training_hash(recipes.config(e, v, "full", s)) for e, v, s, _ in flying}
    groups, alone = [], []
    for e, v, step in dict.fromkeys((e, v, step) for e, v, _, step in flying):
        seeds = [s for e2, v2, s, st in flying if (e2, v2, st) == (e, v, step)]
        if len(seeds) > 1:
            groups.append((e, [v], seeds[:max(fuse, 1)]))  # a fused run resumes fused: its seeds are at one step
        else:
            alone.append((e, v, seeds[0]))
    groups += _pairs(alone)

    def todo(e, v, s):
        h = training_hash(recipes.config(e, v, "full", s))
        return h not in busy and find_result(recipes.config(e, v, "full", s), out_dir) is None

    seen = set()
    if fuse > 1:
        for e, v in QUEUE:
            h = training_hash(recipes.config(e, v, "full", 0))  # one variant under several labels: once
            seeds = [s for s in SEEDS if todo(e, v, s)][:fuse]
            if seeds and h not in seen:
                seen.add(h)
                groups.append((e, [v], seeds))
    else:
        runs = []
        for s in SEEDS:
            for e, v in QUEUE:
                h = training_hash(recipes.config(e, v, "full", s))
                if h not in seen and todo(e, v, s):
                    seen.add(h)
                    runs.append((e, v, s))
        groups += _pairs(runs)
    return groups[:n_groups]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=2, help="how many groups (one process each)")
    ap.add_argument("--fuse", type=int, default=1, help="up to N seeds of one variant as one fused network")
    a = ap.parse_args(argv)
    for e, vs, seeds in next_runs(a.groups, fuse=a.fuse):
        print(e, ",".join(vs), ",".join(map(str, seeds)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
