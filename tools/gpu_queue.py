"""What a lent GPU trains next: the library's queue at the full recipe
(idmap_book/plan/queue.py, as ``python -m idmap_book sweep --scale full`` lists it), cut into the
window's processes.

Runs with a checkpoint in data/checkpoints/ come first (resumed), then the runs the claims need in
the order that settles them soonest, each skipped when its result is recorded (looked up by what it
trains). With fusion (``--fuse N``, N > 1: the window's benchmark found N nets of one architecture
fused faster than one after another) up to N seeds of one variant train as one fused network
(``train --seed 0,1,2 --fused``; a fused group resumes together, so only seeds at one step); without
it, two runs of one experiment and seed a process (two CUDA streams).

    python tools/gpu_queue.py [--groups N] [--fuse N] [--solo]
        prints "EXPERIMENT VARIANT[,VARIANT] SEED[,SEED..]" per line, one process each, in order
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# tools/gpu_preflight.py reads it from here
from idmap_book.plan.queue import in_flight  # noqa: E402,F401


def next_runs(n_groups=2, out_dir=None, checkpoint_dir=None, fuse=1,
              solo=False) -> list[tuple[str, list[str], list[int]]]:
    """Up to n_groups (experiment, [variants], [seeds]) groups, one process each
    (book/plan/queue.py: queue, groups)."""
    from idmap_book.plan import queue as q

    todo = q.queue("full", out_dir=out_dir, checkpoint_dir=checkpoint_dir)
    jobs = q.groups(todo, fuse, pairs=fuse <= 1 and not solo, steps=q.started(checkpoint_dir))
    return [(g[0][0], list(dict.fromkeys(r[1] for r in g)), list(dict.fromkeys(r[2] for r in g)))
            for g in jobs[:n_groups]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=2, help="how many groups (one process each)")
    ap.add_argument("--fuse", type=int, default=1,
                    help="up to N seeds of one variant as one fused network")
    ap.add_argument("--solo", action="store_true",
                    help="one run a process (finishes the first sooner than a pair, which has more "
                         "images/s)")
    a = ap.parse_args(argv)
    for e, vs, seeds in next_runs(a.groups, fuse=a.fuse, solo=a.solo):
        print(e, ",".join(vs), ",".join(map(str, seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
