"""Batch grading: a folder of submissions into one CSV, each submission run in its own sandbox,
marks computed here.

For each submission (a notebook, or the zip its export cell made) :func:`grade_folder`

1. unpacks it into a scratch folder of its own (:mod:`.unpack`: no path outside it, no link, no
   pickle, no checkpoint, a size limit);
2. runs the notebook there inside :mod:`.sandbox` (no network, no view of the other submissions, the
   CSV or the instructor's files; time and memory limits; everything it started killed at the end),
   which writes the values its grading cells would grade (:mod:`.extract`): answers and predictions,
   and for the implementation exercises the outputs of the student's code on inputs drawn from a
   seed chosen here, per submission;
3. computes every mark *here*, with this checkout's graders (never the submission's copy, never in a
   kernel the student's code ran in): ablation answers against the runs read from the submission's
   own files (``ablations.status``), implementation outputs against the library's reference
   (``implementation.judge``);
4. spot-checks the runs (:mod:`.spotcheck`: the first steps of two runs trained again from their
   config and seed);
5. writes the CSV after every submission (a crash or an interrupt keeps the rows graded so far) and,
   at the end, flags submissions that share a seed or a run's history ("same runs as <student>").

A submission that hangs is a row "time limit (N s)"; a corrupt, empty or unreadable one is a row
with 0 and its reason. Scratch folders are removed.
"""
from __future__ import annotations

import ast
import contextlib
import csv
import functools
import hashlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from . import ablations, collect, delegates, implementation, sandbox, spotcheck
from .ablation_exercises import book_runs as folder
from .chapter_parts import split_chapter
from .editions import BOOK, CHAPTERS
from .student import RUNS
from .unpack import free_text, strip_links, unpack

PREFLIGHT = collect.LIBRARY_FIRST + ("import idmap_lib, nbclient, ipykernel; from idmap_class "
                                     "import ablations, extract; print('ok')")
BOX_PREFLIGHT = "import sys; sys.path += sys.argv[1:]; import torch; print('ok')"


# ---- what a chapter grades -----------------------------------------------------------------------

def plan(chapter: str) -> dict:
    """{"questions": [label, ...], "calls": [{"question", "check", "args": [source, ...], "name"},
    ...]}: every grader call of the chapter's grading cells, read from this checkout's chapter (not
    from the submission)."""
    questions, calls = [], []
    nb = json.loads((BOOK / CHAPTERS[chapter]).read_text())
    for kind, part in split_chapter(nb):
        if kind != "exercise" or not part["grading"]:
            continue
        questions.append(part["label"])
        for source in part["grading"]:
            for stmt in ast.parse(source).body:
                call = (stmt.value if isinstance(stmt, ast.Expr)
                        and isinstance(stmt.value, ast.Call) else None)
                if call is None or not isinstance(call.func, ast.Attribute):
                    continue
                check = ast.unparse(call.func)
                if check == "ablations.check" or check.startswith("checks.check_"):
                    args = [ast.unparse(a) for a in call.args]
                    name = ast.literal_eval(args[0]) if check == "ablations.check" else None
                    calls.append({"question": part["label"], "check": check, "args": args,
                                  "name": name})
    return {"questions": questions, "calls": calls}


def chapter_of(autograder) -> str:
    """The chapter an autograder zip (``assign``'s) grades: its ``otter_config.json``'s assignment
    name."""
    with zipfile.ZipFile(autograder) as z:
        name = json.loads(z.read("otter_config.json"))["assignment_name"]
    if name not in CHAPTERS:
        raise ValueError(f"{autograder}: assignment {name!r} is none of this book's chapters "
                         f"({', '.join(CHAPTERS)})")
    return name


# ---- marks, computed here ------------------------------------------------------------------------

def _decode(v):
    """A JSON value from the sandbox back to what the graders take (Ellipsis, inf, nan)."""
    if isinstance(v, dict):
        if v.keys() == {"__ellipsis__"}:
            return Ellipsis
        if v.keys() == {"__float__"} and v["__float__"] in ("inf", "-inf", "nan"):
            return float(v["__float__"])
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


@contextlib.contextmanager
def _trusted():
    """The graders as this process runs them for a submission: no book-runs exemption
    (IDMAP_CLASSROOM), the grading mode on (nothing trains), their printed lines kept out of the
    grader's output."""
    saved = {k: os.environ.get(k) for k in ("IDMAP_CLASSROOM", "IDMAP_GRADING")}
    os.environ.pop("IDMAP_CLASSROOM", None)
    os.environ["IDMAP_GRADING"] = "1"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def submitted_runs(name: str, folder: Path) -> dict:
    """{key: the recorded run or None} of ablation `name` in a submission's runs folder, found as
    ``ablations.run`` finds them (the folder's seed, any offered scale), read from the files by this
    process."""
    seed = ablations.student_seed(folder) if folder.is_dir() else None
    if seed is None:
        return {k: None for k in ablations.ABLATIONS[name].runs}
    return ablations.lookup(name, seed, None, folder)[1]


def _message(e: BaseException) -> str:
    """The grader's verdict (its AssertionError), else a fixed message: never text the values
    carried."""
    if isinstance(e, AssertionError):
        return " ".join(str(e).split())[:400]
    return "the grader could not read this submission's values"


def score(chapter_plan: dict, extracted: dict, runs_folder: Path, seed: int) -> dict:
    """{question: (points, feedback, {run key: run} graded)} from the sandbox's values, graded by
    this checkout."""
    got = {q: [] for q in chapter_plan["questions"]}
    values = {(c.get("question"), c.get("check")): c for c in extracted.get("calls", [])
              if isinstance(c, dict)}
    for call in chapter_plan["calls"]:
        q, v = call["question"], values.get((call["question"], call["check"]))
        if v is None:
            got[q].append(("failed",
                           "the notebook never reached this question's values (see 'reason')", {}))
            continue
        ablation = call["check"] == "ablations.check"
        runs = submitted_runs(call["name"], runs_folder) if ablation else {}
        try:
            with _trusted():
                # the notebook did not define what its grading cell reads: runs missing, most often
                if "error" in v:  # (never its text: the notebook's)
                    why = (f"{call['args'][0] if not ablation else ', '.join(call['args'][2:])} "
                           f"was not defined once the notebook's code had run (a cell that "
                           f"defines it failed, or it was never written)")
                    if ablation and any(r is None for r in runs.values()):
                        ablations.status(call["name"], runs, {}, None)  # raises "runs missing"
                    raise AssertionError(why)
                if ablation:
                    status = ablations.status(call["name"], runs, _decode(v.get("answers")),
                                              _decode(v.get("prediction")))
                else:
                    status = implementation.judge(call["check"].split(".")[-1],
                                                  v.get("observation"), seed)
            got[q].append((status, "" if status == "passed" else status, runs))
        # the grader's verdict (AssertionError), or data it cannot read
        except Exception as e:  # noqa: BLE001
            got[q].append(("failed", _message(e), {} if "error" in v else runs))
    out = {}
    for q, results in got.items():
        ok = bool(results) and all(s == "passed" for s, _, _ in results)
        feedback = " | ".join(f for _, f, _ in results if f)
        out[q] = (1.0 if ok else 0.0, feedback,
                  {k: r for _, _, rs in results for k, r in rs.items() if r})
    return out


# ---- one submission ------------------------------------------------------------------------------

def _collect(nb_path, scratch, chapter_plan, seed, limits, isolate, hidden):
    """(the sandboxes' outcomes, the values, the problems): the implementation calls observed in
    :mod:`.box`, the ablation calls answered in a kernel (:mod:`.collect`)."""
    outcomes, values, problems = [], {"calls": []}, []
    impl = [c for c in chapter_plan["calls"] if c["check"] != "ablations.check"]
    abl = [c for c in chapter_plan["calls"] if c["check"] == "ablations.check"]
    for calls, run in ((impl, lambda: collect.observed(nb_path, scratch, impl, seed, limits,
                                                       isolate, hidden)),
                       (abl, lambda: collect.answered(nb_path, scratch, abl, limits, isolate,
                                                      hidden))):
        if calls:
            outcome, got, problem = run()
            outcomes.append(outcome)
            values["calls"] += got.get("calls", []) if isinstance(got.get("calls"), list) else []
            problems += [problem] if problem else []
    return outcomes, values, problems


def grade_one(sub: Path, chapter_plan: dict, limits=sandbox.Limits(), isolate=True, hidden=(),
              data=None,
              spot=2) -> dict:
    """One CSV row for submission `sub` (see the module's docstring)."""
    row = {"student": sub.stem, "total": 0.0, "possible": float(len(chapter_plan["questions"])),
           "reason": ""}
    scratch = Path(tempfile.mkdtemp(prefix="idmap-sub-"))
    try:
        nb_path, why, left_out = unpack(sub, scratch)
        if nb_path is None:
            row["reason"] = why
            return row
        # the implementation graders' inputs, fresh per submission
        seed = random.SystemRandom().randrange(1, 2 ** 31)
        outcomes, extracted, reasons = _collect(nb_path, scratch, chapter_plan, seed, limits,
                                                isolate, hidden)
        # before this process reads one file the notebook may have written
        links = strip_links(scratch)
        if links:
            reasons.append(f"links or special files made by the notebook, removed unread: "
                           f"{', '.join(links[:5])}"
                           + (" ..." if len(links) > 5 else ""))
        runs_folder = nb_path.parent / RUNS
        marks = score(chapter_plan, extracted, runs_folder, seed)
        graded_runs = {}
        delegated = delegates.flagged(nb_path, chapter_plan)
        for q, why in delegated.items():
            marks[q] = (0.0, why, {})
        if delegated:
            row["library use"] = f"answers use idmap_lib: {', '.join(sorted(delegated))}"
        for q, (points, feedback, runs) in marks.items():
            row[q], row[f"{q}: feedback"] = points, feedback
            if points:
                graded_runs.update({f"{q}/{k}": (q, r) for k, r in runs.items()})
        copies = spotcheck.copied({k: r for k, (_, r) in graded_runs.items()}, book_runs())
        # its history after the first steps is a book run's
        for key, source in sorted(copies.items()):
            q = graded_runs[key][0]
            row[q], row[f"{q}: feedback"] = (0.0,
                                             f"run {key} repeats a book run's history after its "
                                             f"first steps")
        if copies:
            reasons.append(f"{len(copies)} run(s) copy the history of the book's runs "
                           f"({Path(next(iter(copies.values()))).name})")
            graded_runs = {k: v for k, v in graded_runs.items() if k not in copies}
        failures, row["spot check"] = spotcheck.check(graded_runs, k=spot, data=data,
                                                      rng=random.Random(sub.stem))
        # all of a student's runs share one seed: one run not trained as recorded discredits them
        # all
        if failures:
            key, _, detail = failures[0]
            for q in {q for q, _ in graded_runs.values()}:
                row[q], row[f"{q}: feedback"] = 0.0, f"spot check: run {key} {detail}"
            reasons.append("spot check failed: the runs were not trained as recorded, so none of "
                           "them is graded")
        row["total"] = sum(row[q] for q in chapter_plan["questions"])
        aside = (sorted(p.parent.name for p in (runs_folder / "set_aside").glob("*/*.json"))
                 if runs_folder.is_dir() else [])
        if aside:
            reasons.append(f"runs set aside after a rewritten prediction: "
                           f"{', '.join(sorted(set(aside)))}")
        if left_out:
            reasons.append(f"not read: {', '.join(left_out[:5])}"
                           + (" ..." if len(left_out) > 5 else ""))
        row["reason"] = "; ".join(reasons)
        row["seed"] = _seed_of(runs_folder)
        row["runs fingerprint"] = _fingerprint(graded_runs)
        row["seconds"] = round(sum(o.seconds for o in outcomes), 1)
        row.update(free_text(nb_path))
        return row
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _seed_of(folder: Path):
    f = folder / "seed.txt"
    try:
        return int(f.read_text().strip()) if f.is_file() else None
    except ValueError:
        return None


@functools.cache
def _book_runs() -> tuple:
    return tuple(json.loads(p.read_text()) | {"path": str(p)}
                 for p in sorted(Path(folder()).glob("*.json")))


def book_runs() -> list:
    """The book's recorded classroom runs (data/classroom, seeds 0-2): what a forged submission
    copies."""
    return list(_book_runs())


def _fingerprint(graded_runs: dict) -> str:
    """A short hash of the graded runs' histories after their first steps (equal for a copied runs
    folder, also where the copier trained the first steps again: spotcheck.later_losses)."""
    hist = sorted(json.dumps(spotcheck.later_losses(r)) for _, r in graded_runs.values())
    return hashlib.sha256("".join(hist).encode()).hexdigest()[:12] if hist else ""


def _flag_shared(rows):
    """'same runs as <student>' where two submissions share a seed or their runs' histories."""
    for r in rows:
        same = sorted({o["student"] for o in rows if o is not r and (
            (r.get("seed") is not None and o.get("seed") == r.get("seed")) or
            (r.get("runs fingerprint")
             and o.get("runs fingerprint") == r.get("runs fingerprint")))})
        r["flag"] = "; ".join(filter(None, [r.get("library use", ""),
                                            f"same runs as {', '.join(same)}" if same else ""]))


def _write(rows, csv_path):
    keys = list(dict.fromkeys(["student", "total", "possible", "flag", "reason"]
                              + [k for r in rows for k in r]))
    tmp = Path(str(csv_path) + ".partial")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, csv_path)


def preflight(limits=sandbox.Limits(), isolate=True, hidden=()):
    """Before any submission: the sandbox imports the library, the notebook runner and the graders
    exactly as a student's notebook will (an empty folder, the grader's Python); else one error that
    says what to fix, and no student gets a 0 for the grader's environment."""
    scratch = Path(tempfile.mkdtemp(prefix="idmap-preflight-"))
    try:
        outs = [sandbox.run([sys.executable, "-I", "-c", PREFLIGHT], scratch, limits=limits,
                            hidden=hidden, isolate=isolate),
                # the implementation exercises' box: torch without the library (collect.observed)
                sandbox.run([sys.executable, "-I", "-S", "-c", BOX_PREFLIGHT,
                             *collect.site_dirs()], scratch, limits=limits, hidden=hidden,
                            isolate=isolate, library=False)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for out in outs:
        if out.returncode == 0 and "ok" in out.output:
            continue
        last = " ".join(out.output.split())[-300:] or "no output"
        raise RuntimeError(f"the sandbox cannot import the library or the notebook runner "
                           f"({last}): install the book's environment where `{sys.executable}` "
                           f"finds it (make setup, or pip install -e . and the packages of "
                           f"requirements-grading.txt), then grade again; nobody was graded")


def grade_folder(folder, autograder=None, csv_path="grades.csv", chapter=None,
                 limits=sandbox.Limits(),
                 isolate=True, data=None, spot=2, ext=(".ipynb", ".zip"), progress=print):
    """Grade every submission in `folder` (each file's stem is the student) into `csv_path`; the
    chapter is read from `autograder` (the zip ``assign`` made) or given as `chapter`.
    `isolate=False` runs the students' code without the sandbox (only where bubblewrap cannot run:
    see :mod:`.sandbox`). Returns the rows."""
    chapter = chapter or chapter_of(autograder)
    why = isolate and sandbox.available()
    if why:
        raise RuntimeError(f"cannot grade safely here: {why}. Install bubblewrap, or grade on "
                           f"Gradescope, or pass --no-sandbox to run the students' code with your "
                           f"rights (time and memory limits only)")
    if isolate and progress and sandbox.task_limit():
        progress(f"warning: {sandbox.task_limit()}")
    folder, csv_path = Path(folder).resolve(), Path(csv_path).resolve()
    hidden = [p for p in {folder, csv_path.parent}
              if any(p.is_relative_to(b) for b in sandbox.binds())]
    chapter_plan, rows = plan(chapter), []
    preflight(limits, isolate, hidden)
    for sub in sorted(p for p in folder.iterdir() if p.suffix in ext and p.is_file()):
        try:
            row = grade_one(sub, chapter_plan, limits, isolate, hidden, data, spot)
        # one submission never stops the grading of the others
        except Exception as e:  # noqa: BLE001
            row = {"student": sub.stem, "total": 0.0,
                   "possible": float(len(chapter_plan["questions"])),
                   "reason": f"could not be graded: {_message(e)}"}
        rows.append(row)
        _flag_shared(rows)
        _write(rows, csv_path)
        if progress:
            progress(f"{row['student']}: {row['total']:g} / {row['possible']:g}"
                     + (f" ({row['reason'][:80]})" if row["reason"] else ""))
    if not rows:
        _write(rows, csv_path)
    return rows
