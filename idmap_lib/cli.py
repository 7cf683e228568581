"""Command line: train a recipe, list the experiments, run the benchmark; the book's and the checks'
commands.

    python -m idmap_lib train --experiment NAME --variant NAME[,NAME..]
        --scale cpu|cpu_step_warmup|full [--seed N[,N..]] [--data PATH] [--out DIR]
        [--max-steps N] [--resume] [--checkpoint-dir DIR] [--compile] [--cuda-graph] [--fused]
        (several variants or seeds train together in one process: on a GPU they share it, each
        on its stream; with --fused, runs of one architecture -- seeds, Table 1's scaling factors
        or gate biases -- train as one fused network: engine/fused.py)
    python -m idmap_lib list
    python -m idmap_lib sweep [--scale cpu|full] [--claims KEY,..] [--seeds 0,1,2]
        [--next|--missing|--queue] [--status] [--run]
        [--executor local|slurm --partition P --gpus-per-job 1 --time 4h [--max-jobs N]]
        (the runs the claims need, in the order that settles them soonest: listed, or submitted
        through submitit as jobs that resume from their checkpoints -- on SLURM one job array;
        book/plan/queue.py)
    python -m idmap_lib mnist [--depths 100,10,50,20,2] [--kinds plain,resnet,gresnet]
        [--seeds 0,1,2] [--list]                       (Paper B's MNIST grid, full recipe)
    python -m idmap_lib bench [--steps N] [--data PATH] [--modes | --stacked | --fused N[,N..]]
        (the benchmarks, outside the library: the same as python tools/bench.py ...)
    torchrun --nproc_per_node=N -m idmap_lib train ...    (DDP: gloo on CPU, nccl on CUDA)
    python -m idmap_lib book set-url URL | check [--expect URL]    (the repository URL setting)
    python -m idmap_lib checks assign|publish|grade|guide ...      (the exercises)
        (the same as python -m idmap_lib.book ... and python -m idmap_lib.checks ...)

The commands import what they need when they run: ``--help`` answers in about 3.5 s here, against
8.3 s with every command's modules imported (measured on this repository's 2-core machine).
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from pathlib import Path

from .engine import paths
from .engine.recipes import CLAIM_SCALES, KERAS_PROBE, MNIST_DEPTHS, MNIST_KINDS, SCALES


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
    w = sub.add_parser("sweep",
                       help="the runs the claims need, at the CPU scale or (--scale full) the "
                            "papers' recipes: list them, see where they stand (--status), or "
                            "submit the missing ones through submitit (--executor local|slurm; "
                            "recorded runs are skipped)")
    w.add_argument("--claims", default=None, help="claim keys separated by commas (default: all)")
    w.add_argument("--seeds", default=None,
                   help="seeds separated by commas (default: each claim's own)")
    w.add_argument("--out", default=None, help="results directory (default data/results)")
    w.add_argument("--next", action="store_true",
                   help="print the next missing run as 'EXPERIMENT VARIANT SEED SCALE'")
    w.add_argument("--missing", action="store_true", help="print every missing run, in order, one "
                                                          "'EXPERIMENT VARIANT SEED SCALE' a line "
                                                          "(for parallel workers)")
    w.add_argument("--run", action="store_true", help="train every missing run, in order")
    w.add_argument("--data", default=None)
    w.add_argument("--scale", default=None, choices=list(CLAIM_SCALES),
                   help="the claims' CPU scale (default) or the "
                   "papers' full recipes")
    w.add_argument("--queue", action="store_true",
                   help="print the queue: what a submission sends, in order (runs "
                        "recorded or under way left out, started ones first)")
    w.add_argument("--status", action="store_true",
                   help="per claim: runs recorded, running, queued, failed (job "
                        "ids), and the hours left at the measured pace")
    w.add_argument("--executor", default=None, choices=["local", "slurm"],
                   help="submit the queue through submitit")
    w.add_argument("--partition", default=None, help="SLURM partition")
    w.add_argument("--gpus-per-job", type=int, default=1)
    w.add_argument("--cpus-per-job", type=int, default=None, help="default 4 per GPU")
    w.add_argument("--mem-gb", type=int, default=None,
                   help="host memory per job (default 16 per GPU)")
    w.add_argument("--time", default=None,
                   help="a job's time limit: 4h, 90m, H:MM:SS (slurm default 4h; a job "
                        "cut off is requeued and resumes from its checkpoint)")
    w.add_argument("--max-jobs", type=int, default=None, help="submit at most N jobs")
    w.add_argument("--parallel", type=int, default=1,
                   help="--executor local: jobs at once (one a core)")
    w.add_argument("--array-parallelism", type=int, default=None,
                   help="slurm: array tasks running at once")
    w.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE",
                   help="another sbatch option (account=..., qos=..., constraint=...); repeatable")
    w.add_argument("--fuse", type=int, default=1,
                   help="up to N seeds of one variant as one fused network a job")
    w.add_argument("--pairs", action="store_true",
                   help="two runs of one experiment and seed a job (two CUDA streams)")
    w.add_argument("--folder", default=None,
                   help="submitit's folder and the ledger (default data/sweep)")
    w.add_argument("--checkpoint-dir", default=None, help="default data/checkpoints")
    w.add_argument("--cuda-graph", action="store_true",
                   help="jobs replay each step as one CUDA graph")
    m = sub.add_parser("mnist",
                       help="Paper B's MNIST grid at the full recipe: list it, or train each "
                            "depth's missing runs together as one stacked network (recorded runs "
                            "are skipped)")
    m.add_argument("--depths", default=",".join(map(str, MNIST_DEPTHS)))
    m.add_argument("--kinds", default=",".join(MNIST_KINDS),
                   help=f"variant prefixes (default the paper's grid; {','.join(KERAS_PROBE)}: "
                        f"chapter 10's probe of Keras's initialisation and BN settings)")
    m.add_argument("--seeds", default="0,1,2")
    m.add_argument("--out", default=None, help="results directory (default data/results)")
    m.add_argument("--weights-dir", default=None,
                   help="where the d = 100 nets' weights go (default data/weights)")
    m.add_argument("--checkpoint-dir", default=None,
                   help="checkpoints of a depth in training, resumed (default "
                        "data/checkpoints)")
    m.add_argument("--list", action="store_true", help="only list the runs, recorded or missing")
    m.add_argument("--data", default=None)
    return p


# (their old forms work too)
ROOMS = {"book": "idmap_lib.book.__main__", "checks": "idmap_lib.checks.__main__"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # python -m idmap_lib book|checks ...: that room's own command line
    if argv and argv[0] in ROOMS:
        return importlib.import_module(ROOMS[argv[0]]).main(argv[1:]) or 0
    # python -m idmap_lib bench ...: the benchmarks, which live outside the library (tools/)
    if argv and argv[0] == "bench":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
        return importlib.import_module("bench").main(argv[1:]) or 0
    args = _parser().parse_args(argv)
    # the library's log lines (a dataset decoded)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.cmd == "list":
        from .engine.recipes import listing
        print(listing())
        return 0
    if args.cmd == "sweep":
        return _sweep(args)
    if args.cmd == "mnist":
        return _mnist(args)
    from .engine import distributed
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
        distributed.cleanup()
    if distributed.int_env("RANK", 0) == 0:
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


def _sweep(args) -> int:
    if args.scale or args.queue or args.status or args.executor:
        return _queue(args)
    from .book.evidence.claims import CLAIMS_BY_KEY
    from .book.plan.sweep import SWEEP_ORDER, sweep_in_words, sweep_status

    try:
        claims = [CLAIMS_BY_KEY[k] for k in (args.claims.split(",") if args.claims
                                             else SWEEP_ORDER)]
    except KeyError as e:
        print(f"error: unknown claim {e}; valid: {', '.join(SWEEP_ORDER)}", file=sys.stderr)
        return 2
    full = [c.key for c in claims if c.scale == "full"]
    if full:
        print(f"error: {', '.join(full)} rest on Paper B's MNIST grid at the full recipe: python "
              f"-m idmap_lib mnist",
              file=sys.stderr)
        return 2
    seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else None
    status = sweep_status(None if args.claims is None else claims, seeds, args.out)
    missing = [r for r, f in status["found"].items() if f is None]
    if args.next or args.missing:
        for r in missing[:1] if args.next else missing:
            print(*r)
        return 0
    if not args.run:
        for r in status["found"]:
            print(("  missing  " if r in missing else "  recorded ") + " ".join(map(str, r)))
        print(sweep_in_words(status))
        return 0
    from .engine.trainer import run
    for experiment, variant, seed, scale in missing:
        run(experiment, variant, scale, seed, out_dir=args.out, data=args.data)
    return 0


def _queue(args) -> int:
    """sweep --scale/--queue/--status/--executor: the queue of book/plan/queue.py."""
    from .book.plan import queue as q
    from .book.plan.queue_status import status, status_text

    scale, keys = args.scale or "cpu", args.claims.split(",") if args.claims else None
    seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else None
    where = dict(out_dir=args.out, folder=args.folder, checkpoint_dir=args.checkpoint_dir)
    try:
        if args.status:
            print(status_text(status(scale, keys, seeds, **where), args.out))
            return 0
        todo = q.queue(scale, keys, seeds, **where)
        if not args.executor:
            for r in todo:
                print(*r)
            return 0
        job = dict(data=args.data, cuda_graph=args.cuda_graph, progress=False, fuse=args.fuse,
                   pairs=args.pairs)
        if args.executor == "local":
            report = q.run_local(scale, keys, seeds, args.out, args.folder, args.checkpoint_dir,
                                 args.parallel,
                                 args.max_jobs, time_limit=args.time or "24h", **job)
            for path in report["paths"]:
                print(f"recorded: {path}")
            print(f"sweep: {len(report['done'])} runs trained, {len(report['failed'])} failed")
            return 1 if report["failed"] else 0
        slurm = dict(kv.split("=", 1) if "=" in kv else (kv, None) for kv in args.slurm)
        ex = q.executor("slurm", args.folder, args.partition, args.gpus_per_job, args.time or "4h",
                        args.cpus_per_job, args.array_parallelism, slurm, args.mem_gb)
        groups = q.groups(todo, args.fuse, args.pairs,
                          q.started(args.checkpoint_dir))[:args.max_jobs]
        jobs = q.submit(ex, groups, args.out, args.folder, args.checkpoint_dir, args.fuse,
                        data=args.data,
                        cuda_graph=args.cuda_graph, progress=False)
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"sweep: submitted {len(jobs)} jobs" + (f" (array {jobs[0].job_id.split('_')[0]})" if jobs
                                                  else "")
          + "; python -m idmap_lib sweep --scale " + scale + " --status shows where they stand")
    return 0


def _mnist(args) -> int:
    from .book.plan.mnist_grid import configs, missing, train_depth
    from .engine.results import run_name

    depths, seeds = [int(d) for d in args.depths.split(",")], [int(s)
                                                               for s in args.seeds.split(",")]
    kinds = tuple(args.kinds.split(","))
    bad = [d for d in depths if d not in DEPTHS]
    if bad:
        print(f"error: depths {bad} are not in Paper B's grid {DEPTHS}", file=sys.stderr)
        return 2
    bad = [k for k in kinds if k not in MNIST_KINDS + KERAS_PROBE]
    if bad:
        print(f"error: unknown kinds {bad}; choose from {', '.join(MNIST_KINDS + KERAS_PROBE)}",
              file=sys.stderr)
        return 2
    if args.list:
        for d in depths:
            todo = {run_name(c) for c in missing(d, seeds, args.out, kinds)}
            for c in configs(d, seeds, kinds):
                print(("  missing  " if run_name(c) in todo else "  recorded ") + run_name(c))
        return 0
    for d in depths:
        for r in train_depth(d, seeds, data=args.data, out_dir=args.out,
                             weights_dir=args.weights_dir,
                             checkpoint_dir=args.checkpoint_dir or paths.CHECKPOINTS, kinds=kinds):
            print(f"{run_name(r['config'])}: {r['status']}, test error "
                  f"{r['final'].get('test_err')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
