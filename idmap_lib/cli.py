"""Command line: train a recipe, list the experiments, run the benchmark.

    python -m idmap_lib train --experiment NAME --variant NAME[,NAME..]
        --scale cpu|cpu_step_warmup|full [--seed N[,N..]] [--data PATH] [--out DIR]
        [--max-steps N] [--resume] [--checkpoint-dir DIR] [--compile] [--cuda-graph] [--fused]
        (several variants or seeds train together in one process: on a GPU they share it, each
        on its stream; with --fused, runs of one architecture -- seeds, Table 1's scaling factors
        or gate biases -- train as one fused network: engine/fused.py)
    python -m idmap_lib list
    python -m idmap_lib bench [--steps N] [--data PATH] [--modes | --stacked | --fused N[,N..]]
        (the benchmarks live outside the library: the same as python tools/bench.py ...)
    torchrun --nproc_per_node=N -m idmap_lib train ...    (DDP: gloo on CPU, nccl on CUDA)

The book's and the classroom's commands live with them (python -m idmap_book sweep|mnist|set-url|
check, python -m idmap_class assign|publish|grade|guide); their old forms here (python -m idmap_lib
sweep, mnist, book ..., checks ...) forward to them for one release.

The commands import what they need when they run: ``--help`` answers in about 3.5 s here, against
8.3 s with every command's modules imported (measured on this repository's 2-core machine).
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import runpy
import sys
from pathlib import Path

from .engine import paths
from .engine.recipes import SCALES


def _parser():
    p = argparse.ArgumentParser(prog="python -m idmap_lib", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train one experiment variant (skips it if its result exists)")
    t.add_argument("--experiment", required=True)
    t.add_argument("--variant", required=True, help="a variant, or several separated by commas")
    t.add_argument("--scale", default="cpu", choices=list(SCALES))
    t.add_argument("--seed", default="0", help="a seed, or several separated by commas")
    t.add_argument("--data", default=None,
                   help="local copy: tarball, image-folder tree, or a directory "
                        "holding <name>-jpeg.tar.gz (default: $IDMAP_DATA, then "
                        "torchvision's download into data/)")
    t.add_argument("--out", default=None, help="results directory (default data/results)")
    t.add_argument("--max-steps", type=int, default=None,
                   help="stop after N steps, checkpoint, exit")
    t.add_argument("--resume", action="store_true",
                   help="continue from the checkpoint in --checkpoint-dir")
    t.add_argument("--move", action="store_true",
                   help="with --resume: continue a checkpoint written on another "
                        "kind of device or precision (no longer bit-exact; the "
                        "result records the move)")
    t.add_argument("--checkpoint-dir", default=None,
                   help="where checkpoints go (default data/checkpoints "
                        "when --resume or --max-steps is given)")
    t.add_argument("--checkpoint-every", type=int, default=None)
    t.add_argument("--checkpoint-minutes", type=float, default=None,
                   help="also a checkpoint every so many minutes "
                        "of wall time (a disconnect loses no more)")
    t.add_argument("--compile", action="store_true", help="torch.compile the model")
    t.add_argument("--cuda-graph", action="store_true",
                   help="CUDA: replay the whole training step as one CUDA "
                        "graph (several times faster for deep CIFAR nets)")
    t.add_argument("--fused", action="store_true",
                   help="train the runs (seeds or scalar variants of one "
                        "architecture) as one fused network (engine/fused.py)")
    t.add_argument("--amp", default="auto", choices=["auto", "bf16", "fp16", "fp32"],
                   help="autocast precision (auto: bf16 where the hardware has it, fp16 on older "
                        "GPUs)")
    t.add_argument("--device", default=None)
    t.add_argument("--deterministic", action="store_true")
    t.add_argument("--retrain", action="store_true",
                   help="train even if a result with this config exists")
    t.add_argument("--no-progress", action="store_true")
    sub.add_parser("list", help="show experiments and variants")
    return p


# The commands that moved to the packages built on the library, by name (never imported here):
# their old forms forward for one release (python -m idmap_lib sweep == python -m idmap_book sweep).
MOVED = {"sweep": ("idmap_book", True), "mnist": ("idmap_book", True),
         "book": ("idmap_book", False), "checks": ("idmap_class", False)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MOVED:  # a command of the book or the classroom: its own command line
        package, keep = MOVED[argv[0]]
        main_of = importlib.import_module(f"{package}.__main__").main
        return main_of(argv if keep else argv[1:]) or 0
    if argv and argv[0] == "bench":  # a checkout's tools/bench.py (not part of the library)
        bench = Path(__file__).resolve().parents[1] / "tools" / "bench.py"
        if not bench.exists():
            print(f"error: the benchmarks are a checkout's tools/bench.py, not found at {bench}: "
                  "run them from a clone of the repository", file=sys.stderr)
            return 2
        return runpy.run_path(str(bench))["main"](argv[1:]) or 0
    args = _parser().parse_args(argv)
    # the library's log lines (a dataset decoded)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.cmd == "list":
        from .engine.recipes import listing
        print(listing())
        return 0
    from .engine.recipes import config
    from .engine.results import find_result
    from .engine.trainer import train

    try:
        cfgs = [config(args.experiment, v, args.scale, int(sd)) for v in args.variant.split(",")
                for sd in str(args.seed).split(",")]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.retrain and args.max_steps is None:
        todo = []
        for cfg in cfgs:
            hit = find_result(cfg, args.out)
            if hit is None:
                todo.append(cfg)
            else:
                print(f"result exists: {hit['path']} (status {hit['status']}, final "
                      f"{hit['final']}); use --retrain to train again")
        cfgs = todo
    if not cfgs:
        return 0
    from .engine.options import TrainOptions
    from .engine.trainer import TrainingInterrupted

    opts = TrainOptions(
        device=args.device, out_dir=args.out, resume=args.resume, max_steps=args.max_steps,
        checkpoint_dir=args.checkpoint_dir or (paths.CHECKPOINTS if (args.resume or args.max_steps)
                                               else None),
        checkpoint_every=args.checkpoint_every, checkpoint_minutes=args.checkpoint_minutes,
        compile=args.compile, progress=not args.no_progress, deterministic=args.deterministic,
        amp=args.amp, cuda_graph=args.cuda_graph, move=args.move)
    if args.fused:
        return _fused(args, cfgs, opts)
    try:
        results = train(cfgs, args.data, opts)
    except TrainingInterrupted as e:  # Ctrl-C: the checkpoints are written; one line, no traceback
        print(e, file=sys.stderr)
        return 130
    finally:
        if int(os.environ.get("WORLD_SIZE", 1)) > 1:  # under torchrun: leave the process group
            from .engine import distributed

            distributed.cleanup()
    if int(os.environ.get("RANK", 0)) == 0:
        _summaries(results)
    return 0 if all(r["status"] in ("ok", "fail", "stopped") for r in results) else 1


def _summaries(results):
    for r in results:
        keys = ("status", "fail", "final", "path", "checkpoint", "step")
        print(json.dumps({k: r.get(k) for k in keys if r.get(k) is not None}, indent=1))


def _fused(args, cfgs, opts) -> int:
    from .engine import fused
    from .engine.trainer import train

    try:
        opts.refuse("--fused", fused.NOT_FUSED)
    except ValueError as e:  # "--fused does not take compile, ...": one line
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        fused.check_fusable(cfgs)
    except ValueError as e:
        print(f"error: these runs cannot be fused: {e}", file=sys.stderr)
        return 2
    results = train(cfgs, args.data, opts, stepper=fused.Fused)
    _summaries(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
