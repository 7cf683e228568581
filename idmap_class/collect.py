"""What a submission's sandbox hands back to the batch grader (:mod:`.batch`): never a mark, only
values, and why there are none.

- :func:`observed`, the implementation exercises: the notebook's code runs in :mod:`.box`, a plain
  Python process started from the grader's own copy of :mod:`.box` and :mod:`.observers` (mounted
  read-only), with no kernel and no idmap_lib: the checkout is not mounted, so the references the
  judges compare with (``make_unit``, ``reference_gating``, ``measured_direct_term``,
  ``probes.truncation_rates``...) cannot be imported. The seed is drawn here and sent on the
  process's stdin only once it has said that the notebook's code has loaded: no plan or seed file
  is ever in the sandbox. The observations come back on its stdout and are judged here, on inputs
  rebuilt from that seed.
- :func:`answered`, the ablation exercises: the notebook runs in a kernel (its cells call the
  library) and :mod:`.extract` writes the answers and predictions the grading cells would grade;
  the plan is passed on the command line (the chapter's grading calls: public).

Each returns (the sandbox's :class:`.sandbox.Outcome`, the values, a problem: "" or the grader's own
words for why values are missing, garbled or late).
"""
from __future__ import annotations

import json
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from . import sandbox
from .student import RUNS

MAX_EXTRACT_MB = 20  # what the ablations' extraction may hand back
PASSED_ON = ("IDMAP_ABLATION_SCALE",)  # the grader's settings the notebook sees too
HERE = Path(__file__).resolve().parent
GRADER = "/grader"  # where the sandbox sees the observers' folder
LIBRARY_FIRST = f"import sys; sys.path.insert(0, {str(sandbox.ROOT)!r}); "


def site_dirs() -> list[str]:
    """The grader's Python's package folders (torch...), added to the box's path by hand."""
    dirs = site.getsitepackages() + [sysconfig.get_paths()["purelib"]]
    return list(dict.fromkeys(d for d in dirs if Path(d).is_dir()))


def _problem(outcome, limits, what) -> str:
    if outcome.timed_out:
        return f"time limit ({limits.wall_s:.0f} s): the notebook did not finish"
    return f"{what} (the sandbox ended with status {outcome.returncode})"


def observed(nb_path: Path, scratch: Path, calls: list, seed: int, limits=sandbox.Limits(),
             isolate=True, hidden=()):
    """Run the notebook's code in :mod:`.box` and observe `calls` ([{"check": "checks.check_x",
    "args": [expression]}, ...]) at `seed`; values: {"calls": [{"check", "observation" | "error"}],
    "cell_errors": [exception type, ...]}."""
    rel = nb_path.relative_to(scratch)
    grader = Path(tempfile.mkdtemp(prefix="idmap-observers-"))
    try:
        for f in ("box.py", "observers.py"):
            shutil.copy(HERE / f, grader / f)
            (grader / f).chmod(0o644)
        grader.chmod(0o755)
        where = GRADER if isolate else str(grader)
        inside = Path(sandbox.WORK if isolate else scratch)
        cmd = [sys.executable, "-I", "-S", f"{where}/box.py", str(inside / rel), *site_dirs()]
        asked = [[c["check"].split(".")[-1], c["args"][0]] for c in calls]
        said = {}

        def reply(line):
            said["loaded"] = line
            return (json.dumps({"seed": seed, "calls": asked}) + "\n").encode()

        outcome = sandbox.run(cmd, scratch, env={"OMP_NUM_THREADS": "1"}, limits=limits,
                              hidden=hidden, isolate=isolate, library=False,
                              ro={grader: GRADER} if isolate else None, reply=reply)
    finally:
        shutil.rmtree(grader, ignore_errors=True)
    lines = outcome.stdout.splitlines()
    try:
        loaded, values = json.loads(lines[0]), json.loads(lines[1])
        got = values["calls"]
        assert isinstance(got, list) and len(got) == len(calls)
        errors = loaded.get("cell_errors", [])
    except (ValueError, IndexError, KeyError, AssertionError, TypeError, AttributeError):
        what = ("the notebook's code did not finish loading" if "loaded" not in said else
                "the observer's values were missing or garbled")
        return outcome, {}, _problem(outcome, limits, what)
    values = {"calls": [{"question": c["question"], "check": c["check"],
                         **({"observation": g.get("observation")} if isinstance(g, dict)
                            and "observation" in g else {"error": "undefined"})}
                        for c, g in zip(calls, got)],
              "cell_errors": [e if isinstance(e, str) else "" for e in errors][:50]}
    return outcome, values, ""


def answered(nb_path: Path, scratch: Path, calls: list, limits=sandbox.Limits(), isolate=True,
             hidden=()):
    """Run the notebook in a kernel (:mod:`.extract`) and read the ablation answers of `calls`;
    values: {"calls": [...]} as :mod:`.extract` writes them."""
    meta = scratch / ".idmap-grader"
    meta.mkdir(exist_ok=True)
    rel = nb_path.relative_to(scratch)
    inside = Path(sandbox.WORK if isolate else scratch)
    out = inside / ".idmap-grader" / "values.json"
    cmd = [sys.executable, "-I", "-c", LIBRARY_FIRST + "from idmap_class.extract import main; "
           "main(*sys.argv[1:4])", str(inside / rel), json.dumps({"calls": calls}), str(out)]
    env = {"IDMAP_GRADING": "1", "IDMAP_RUNS": str(inside / rel.parent / RUNS),
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(sandbox.ROOT),
           **{k: os.environ[k] for k in PASSED_ON if k in os.environ}}
    outcome = sandbox.run(cmd, scratch, env=env, limits=limits, hidden=hidden, isolate=isolate)
    values, status = meta / "values.json", meta / "values.json.status"

    def read(f):
        if f.is_file() and not f.is_symlink() and f.stat().st_size <= MAX_EXTRACT_MB * 2 ** 20:
            try:
                return json.loads(f.read_text())
            except ValueError:
                return None
        return None
    got, said = read(values), read(status)
    if isinstance(said, dict) and said.get("kernel_died"):
        return outcome, {}, "the notebook's kernel died before its answers could be read"
    if not isinstance(got, dict):
        return outcome, {}, _problem(outcome, limits, "the notebook's answers were missing or "
                                                      "garbled")
    return outcome, got, ""
