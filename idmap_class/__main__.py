"""python -m idmap_class COMMAND: the exercise chapters' editions, autograder, batch grading,
guide."""
# Each command imports what it needs when it runs (the CLI's reason: idmap_lib/cli.py), so that
# --help answers at once.
import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m idmap_class", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("assign",
                       help="student notebooks and LMS autograder zips (otter assign) into OUT")
    a.add_argument("--out", default="dist")
    a.add_argument("--chapter", action="append", help="exercises and/or ablations (default: both)")
    a.add_argument("--no-run-tests", action="store_true",
                   help="skip otter's check of the solutions")
    sub.add_parser("publish",
                   help="write the student editions the Colab buttons open (book/student/, "
                        "committed)")
    g = sub.add_parser("grade",
                       help="grade a folder of submissions into one CSV, each in its own sandbox")
    g.add_argument("folder")
    g.add_argument("--autograder", required=True,
                   help="the zip `assign` wrote (it names the chapter)")
    g.add_argument("--csv", default="grades.csv")
    g.add_argument("--time-limit", type=float, default=600,
                   help="seconds a submission's notebook may run")
    g.add_argument("--memory", type=int, default=6144,
                   help="MB of address space for each of its processes")
    g.add_argument("--spot", type=int, default=2,
                   help="runs per submission whose first steps are trained again")
    g.add_argument("--no-sandbox", action="store_true",
                   help="where bubblewrap cannot run: the students' code runs with your rights "
                        "(limits only)")
    i = sub.add_parser("guide", help="write the instructor guide page (Markdown)")
    i.add_argument("--out", default="instructor_guide.md")
    s = sub.add_parser("spread", help="run every ablation over 3 seeds and record the seed spread")
    s.add_argument("names", nargs="*")
    s.add_argument("--scale", default="classroom", choices=("classroom", "gpu"),
                   help="gpu: the papers' networks (trains on a GPU, or slowly on a CPU; the "
                        "configs are the same)")
    t = sub.add_parser("time",
                       help="time every exercise as its notebook runs it (at the threads it picks "
                            "here) for the guide")
    t.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    if args.cmd == "assign":
        from .editions import AssignError, assign
        try:
            made = assign(args.out, args.chapter, run_tests=not args.no_run_tests)
        except AssignError as e:
            print(f"assign stopped, nothing of that chapter left in {args.out}: {e}",
                  file=sys.stderr)
            return 1
        for name, m in made.items():
            print(f"{name}: student edition {m['student']}\n{name}: autograder {m['autograder']}")
    elif args.cmd == "publish":
        from .editions import publish
        for path in publish():
            print(path)
    elif args.cmd == "grade":
        from .batch import grade_folder
        from .sandbox import Limits
        try:
            rows = grade_folder(args.folder, args.autograder, args.csv, isolate=not args.no_sandbox,
                                spot=args.spot,
                                limits=Limits(wall_s=args.time_limit, memory_mb=args.memory))
        except RuntimeError as e:
            print(e, file=sys.stderr)
            return 1
        print(f"{len(rows)} submissions graded -> {args.csv}")
    elif args.cmd == "guide":
        from .guide import instructor_guide
        open(args.out, "w").write(instructor_guide())
        print(f"instructor guide -> {args.out}")
    elif args.cmd == "time":
        from .ablations import time_exercises
        time_exercises(args.names or None)
    elif args.cmd == "spread":
        from .ablations import measure
        measure(args.names or None, scale=args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
