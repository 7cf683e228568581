"""The editions of the exercise chapters, the LMS autograder package and batch grading, with
Otter-Grader.

The book's chapters (``book/06_exercises.ipynb``, ``book/06_ablations.ipynb``) are the instructor
edition: each exercise is a sphinx-exercise block (statement and starter cells), grading cells, and
a dropdown solution block. :func:`otter_master` turns a chapter into an Otter-Grader *master
notebook*:

- every exercise becomes a question; a starter cell and the solution cell that defines the same
  names become one Otter solution cell (a BEGIN SOLUTION NO PROMPT block, then a BEGIN PROMPT block:
  the student sees the starter, the autograder runs the solution); other cells of the solution block
  (the book's discussion) are left out;
- every grading cell becomes an exception-based Otter test whose body is :func:`run_grading_cell`,
  i.e. the graders of ``idmap_class`` (a grader that prints NOT ATTEMPTED fails the test); the
  student edition checks each question once, with ``grader.check`` (which shows the graders' hints
  and never stops "Run all");
- after the chapter's setup cell, a cell makes the grader, and the last cell makes the submission
  zip (both in :mod:`.student`, which also runs on Colab, where Otter's client alone cannot);
- cells tagged ``instructor`` or ``book-only`` (notes for instructors, sentences about the book's
  hidden solutions) are left out.

``otter assign`` then writes the student notebook, its question tests and the autograder zip
(Gradescope, Canvas via Gradescope, or ``otter run`` locally without Docker). :func:`publish` writes
the student editions to ``book/student/<name>/`` (notebook and tests, committed), which the exercise
pages' Colab button opens. Batch grading (each submission in its own sandbox, the marks computed by
the trusted grader) is :mod:`.batch`.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import idmap_class as checks
from idmap_class import ablations

from idmap_book.page.repository import site_url
from . import autograder, chapter_parts as parts
from .ablation_exercises import book_runs
from .delegates import ALLOWED
from .student import PUBLISHED

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PACKAGES = ("idmap_lib", "idmap_book", "idmap_class")  # the graders travel in the zip
CHAPTERS = {"exercises": "06_exercises.ipynb", "ablations": "06_ablations.ipynb"}

ASSIGNMENT_CONFIG = """\
# ASSIGNMENT CONFIG
name: {name}
requirements: requirements.txt
files: [idmap_lib, idmap_book, idmap_class]
export_cell: false
generate:
  show_stdout: true
tests:
  files: true
  ok_format: false
check_all_cell: false
init_cell: false
python_version: "3.11"
"""
# The student edition's grader (instead of Otter's init cell, which imports otter and stops where it
# is missing, as on Colab), right after the chapter's setup cell, which makes idmap_lib importable:
# see checks/student.py.
INIT_CELL = """\
# Grading: this notebook's grader (otter-grader, installed here where it is missing, as on Colab;
# nothing already installed is changed). It needs the setup cell above.
from idmap_class.student import student_grader
grader = student_grader("{name}")
"""
SUBMIT_TEXT = """\
## Submission

Run every cell in order first. The cell below makes the zip you hand in: your notebook{runs_text}.
In Jupyter, save the notebook before you run it; on Colab it takes the notebook as it is open and
downloads the zip."""
RUNS_TEXT = (" and your runs folder (`idmap_runs`), which the grader reads instead of training "
             "again (without runs the submission is still valid: the grader marks the missing runs "
             "and never trains them)")
SUBMIT_CELL = """\
from idmap_class.student import submit
submit(grader, "{name}", runs={runs})
"""
# the first line of a chapter's setup cell (idmap_book.page.repository.setup_cell)
SETUP_MARK = "# Setup."


def _cell(kind, source, **extra):
    c = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        c.update(outputs=[], execution_count=None)
    c.update(extra)
    return c


def _with_ids(cells):
    """`cells`, each new one given the id nbformat 4.5 requires (stable, unique: its place; the
    book's cells keep theirs). Without one a notebook reader warns now, and future nbformat versions
    refuse the notebook."""
    for i, c in enumerate(cells):
        c.setdefault("id", f"idmap-{i:03d}")
    return cells


CHAPTER_LINK = re.compile(r"\]\((\d\d_\w+)\.ipynb(#[^)\s]*)?\)")


def _site_links(text, site):
    """Links to the book's chapters made absolute (pages of the site at `site`): the student edition
    lives elsewhere."""
    return CHAPTER_LINK.sub(lambda m: f"]({site}{m.group(1)}.html{m.group(2) or ''})", text)


def otter_master(src, dst, name=None):
    """Write the Otter-Grader master notebook of a book chapter (see the module's docstring)."""
    src, dst = Path(src), Path(dst)
    nb = json.loads(src.read_text())
    name = name or re.sub(r"^\d+_", "", src.stem)
    # a chapter that trains: the recorded runs go with the notebook
    runs = "ablations.run(" in src.read_text()
    cells = [_cell("raw", ASSIGNMENT_CONFIG.format(name=name))]
    for kind, part in parts.split_chapter(nb):
        if kind == "cell":
            c = dict(part)
            if c["cell_type"] == "code":
                c.update(outputs=[], execution_count=None)
            cells.append(c)
            if c["cell_type"] == "code" and parts.src(c).startswith(SETUP_MARK):
                cells.append(_cell("code", INIT_CELL.format(name=name)))
                if "checks.check_" in src.read_text():  # what the implementation answers may use
                    cells.append(_cell("markdown", f"**What your answers may use.** {ALLOWED}"))
            continue
        ex = part
        cells.append(_cell("raw", f"# BEGIN QUESTION\nname: {ex['label']}\npoints: 1"))
        cells += [_cell("markdown", p) for p in ex["prompt"]]
        starters = list(ex["starters"])
        for st in starters:
            sol = parts.solution_for(st, ex["solutions"])
            if sol is None:
                cells.append(_cell("code", st))
            else:
                cells += [_cell("raw", "# BEGIN SOLUTION"),
                          _cell("code", f"# BEGIN SOLUTION NO PROMPT\n{sol}\n# END SOLUTION\n"
                                        f'""" # BEGIN PROMPT\n{st}\n""" # END PROMPT'),
                          _cell("raw", "# END SOLUTION")]
        if ex["grading"]:
            cells.append(_cell("raw", "# BEGIN TESTS"))
            for i, g in enumerate(ex["grading"]):
                cells.append(_cell("code", f"def test_{ex['label']}_{i}(env):\n"
                                           f"    from idmap_class.editions import "
                                           f"run_grading_cell\n    run_grading_cell(env, {g!r})"))
            cells.append(_cell("raw", "# END TESTS"))
        cells.append(_cell("raw", "# END QUESTION"))
        # one check per question: Otter's (its test runs the book's graders and shows their hints),
        # not the book's grading cells too -- they raise on a wrong answer, and "Run all" would stop
        # before the export
    if not any(INIT_CELL.format(name=name) == parts.src(c) for c in cells):
        raise ValueError(f"{src.name} has no setup cell (a code cell starting {SETUP_MARK!r}): the "
                         f"grader needs it")
    cells += [_cell("markdown", SUBMIT_TEXT.format(runs_text=RUNS_TEXT if runs else "")),
              _cell("code", SUBMIT_CELL.format(name=name, runs=runs))]

    hidden, site = {parts.src(c) for c in nb["cells"]
                    if parts.tags(c) & {"remove-input", "hide-input"}}, site_url()
    # the text a cell shows or prints, in the student's folder or on Colab: links to the site
    for c in cells:
        # the site shows only its output: so do Jupyter and Colab
        if c["cell_type"] == "code" and parts.src(c) in hidden:
            c["metadata"] = {**c.get("metadata", {}), "jupyter": {"source_hidden": True},
                             "cellView": "form"}
        c["source"] = _site_links(parts.src(c), site)
    nb["cells"] = _with_ids(cells)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(nb, indent=1) + "\n")
    return dst


class _ToStatus(ast.NodeTransformer):
    """checks.check_x(args) -> checks.check_x.status(args); ablations.check(args) ->
    ablations.status(args)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "checks" and f.attr.startswith("check_"):
                node.func = ast.Attribute(value=f, attr="status", ctx=ast.Load())
            elif f.value.id == "ablations" and f.attr == "check":
                node.func = ast.Attribute(value=f.value, attr="status", ctx=ast.Load())
        return node


def run_grading_cell(env, source):
    """Otter's test body: every grader call of a grading cell, run on the student's namespace `env`;
    each must return "passed" (a failing grader raises its AssertionError with its hint; NOT
    ATTEMPTED fails)."""
    ns = {**dict(env or {}), "checks": checks, "ablations": ablations}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = ast.fix_missing_locations(_ToStatus().visit(stmt.value))
            try:
                status = eval(compile(ast.Expression(call), "<grading cell>", "eval"), ns)
            except NameError as e:  # the cells that define it failed: say why, when it is the runs
                asked = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)
                         and n.id.startswith("runs_")}
                missing = [f"{k}[{key!r}]" for k in sorted(asked) if isinstance(ns.get(k), dict)
                           for key, r in ns[k].items() if r is None]
                if missing:
                    raise AssertionError(f"runs missing: the submission has no recorded "
                                         f"{', '.join(missing)}, so {e.name} could not be "
                                         f"computed. Hint: hand in the notebook with its "
                                         f"idmap_runs/ folder (the export cell zips both); a "
                                         f"grader never trains") from e
                raise
            assert status == "passed", f"{ast.unparse(stmt.value)}: {status}"
        else:
            exec(compile(ast.Module([stmt], []), "<grading cell>", "exec"), ns)


# ---- otter assign: the student edition and the autograder ----------------------------------------

class AssignError(RuntimeError):
    """``otter assign`` failed; the message holds what Otter said (its output's last lines)."""


def _otter(*args, cwd=None, env=None):
    exe = shutil.which("otter", path=str(Path(sys.executable).parent)) or shutil.which("otter")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "otter", *args]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        said = "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-40:])
        raise AssignError(f"otter {args[0]} failed (exit {done.returncode}); Otter said:\n{said}")
    return done


def assign(out="dist", chapters=None, run_tests=True):
    """Write, for each chapter, ``out/<name>/student/<name>.ipynb`` (the student edition) and
    ``out/<name>/autograder/<name>-autograder_*.zip`` (the LMS package) with ``otter assign``, which
    (unless `run_tests` is False) first grades the solutions with the book's recorded runs. A
    chapter whose assign fails leaves nothing behind (its folder removed) and raises
    :class:`AssignError` with what Otter said. Returns {name: {"student": path, "autograder": path,
    "master": path}}."""
    out = Path(out).resolve()
    made = {}
    # The solutions' runs are the book's recorded ones: Otter grades them in a temporary copy of the
    # autograder, whose copied library would look for data/classroom beside itself, so the folder is
    # named (ablations.book_runs).
    classroom = str(book_runs().resolve())
    env = {**os.environ, "IDMAP_RUNS": classroom, "IDMAP_CLASSROOM": classroom}
    for name in chapters or CHAPTERS:
        work = out / name
        shutil.rmtree(work, ignore_errors=True)
        try:
            master = otter_master(BOOK / CHAPTERS[name], work / "master" / f"{name}.ipynb", name)
            shutil.copy(ROOT / "requirements-grading.txt", master.parent / "requirements.txt")
            for package in PACKAGES:
                shutil.copytree(ROOT / package, master.parent / package,
                                ignore=shutil.ignore_patterns("__pycache__"))
            args = ["assign", str(master),
                    str(work / "dist")] + ([] if run_tests else ["--no-run-tests"])
            _otter(*args, cwd=master.parent, env=env)
            zipped = next((work / "dist" / "autograder").glob("*.zip"))
            autograder.lean(zipped, BOOK / CHAPTERS[name], name)
        except BaseException:
            # never a half-made package an instructor could upload
            shutil.rmtree(work, ignore_errors=True)
            raise
        made[name] = {"master": master, "student": work / "dist" / "student" / f"{name}.ipynb",
                      "autograder": zipped}
    return made


def student_edition_paths() -> dict:
    """{chapter page: its published student edition, relative to book/} (the pages' Colab
    buttons)."""
    return {Path(f).stem: f"student/{name}/{name}.ipynb" for name, f in CHAPTERS.items()}


def publish(chapters=None, dest=None) -> list[Path]:
    """Write the student editions (notebook and ``tests/``) to ``book/student/<name>/`` (or `dest`),
    with stable cell ids, so that the committed copy changes only when the chapter does. Returns the
    files written."""
    import tempfile

    dest = Path(dest or PUBLISHED)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, made in assign(tmp, chapters, run_tests=False).items():
            student = made["student"].parent
            target = dest / name
            shutil.rmtree(target, ignore_errors=True)
            (target / "tests").mkdir(parents=True)
            nb = json.loads(made["student"].read_text())
            for i, c in enumerate(nb["cells"]):
                c["id"] = f"{name}-{i:03d}"
            (target / made["student"].name).write_text(json.dumps(nb, indent=1) + "\n")
            written.append(target / made["student"].name)
            for t in sorted((student / "tests").glob("*.py")):
                written.append(Path(shutil.copy(t, target / "tests" / t.name)))
    return written


def solved_notebook(src, dst):
    """The chapter as a student who solved every exercise would submit it: each starter cell
    replaced by its solution, the grading cells kept, the book's solution blocks and instructor
    cells left out (for tests)."""
    nb = json.loads(Path(src).read_text())
    cells = []
    for kind, part in parts.split_chapter(nb):
        if kind == "cell":
            cells.append(part)
            continue
        cells += [_cell("markdown", p) for p in part["prompt"]]
        for st in part["starters"]:
            cells.append(_cell("code", parts.solution_for(st, part["solutions"]) or st))
        cells += [_cell("code", g) for g in part["grading"]]
    nb["cells"] = _with_ids(cells)
    Path(dst).write_text(json.dumps(nb, indent=1) + "\n")
    return Path(dst)
