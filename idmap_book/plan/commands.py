"""``python -m idmap_book sweep|mnist``: the runs the claims need (sweep.py, queue.py) and Paper B's
MNIST grid at the full recipe (mnist_grid.py). Each command imports what it needs when it runs."""
from __future__ import annotations

import sys

from idmap_lib.engine import paths
from idmap_lib.engine.recipes import CLAIM_SCALES, KERAS_PROBE, MNIST_DEPTHS, MNIST_KINDS


def add_parsers(sub) -> None:
    """The two commands' arguments, on the book's command line's subparsers."""
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


def sweep(args) -> int:
    if args.scale or args.queue or args.status or args.executor:
        return _queue(args)
    from ..evidence.claims import CLAIMS_BY_KEY
    from .sweep import SWEEP_ORDER, sweep_in_words, sweep_status

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
    from idmap_lib.engine.trainer import run
    for experiment, variant, seed, scale in missing:
        run(experiment, variant, scale, seed, out_dir=args.out, data=args.data)
    return 0


def _queue(args) -> int:
    """sweep --scale/--queue/--status/--executor: the queue of book/plan/queue.py."""
    from . import queue as q
    from .queue_status import status, status_text

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
          + "; python -m idmap_book sweep --scale " + scale + " --status shows where they stand")
    return 0


def mnist(args) -> int:
    from .mnist_grid import configs, missing, train_depth
    from idmap_lib.engine.results import run_name

    depths, seeds = [int(d) for d in args.depths.split(",")], [int(s)
                                                               for s in args.seeds.split(",")]
    kinds = tuple(args.kinds.split(","))
    bad = [d for d in depths if d not in MNIST_DEPTHS]
    if bad:
        print(f"error: depths {bad} are not in Paper B's grid {MNIST_DEPTHS}", file=sys.stderr)
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
