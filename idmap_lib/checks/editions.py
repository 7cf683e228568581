"""The editions of the exercise chapters, the LMS autograder package and batch grading, with Otter-Grader.

The book's chapters (``book/06_exercises.ipynb``, ``book/06_ablations.ipynb``) are the instructor edition:
each exercise is a sphinx-exercise block (statement and starter cells), grading cells, and a dropdown
solution block. :func:`otter_master` turns a chapter into an Otter-Grader *master notebook*:

- every exercise becomes a question; a starter cell and the solution cell that defines the same names become
  one Otter solution cell (a BEGIN SOLUTION NO PROMPT block, then a BEGIN PROMPT block: the student sees the
  starter, the autograder runs the solution); other cells of the solution block (the book's discussion)
  are left out;
- every grading cell becomes an exception-based Otter test whose body is :func:`run_grading_cell`, i.e. the
  graders of ``idmap_lib.checks`` (a grader that prints NOT ATTEMPTED fails the test);
- cells tagged ``instructor`` or ``book-only`` (notes for instructors, sentences about the book's hidden
  solutions) are left out.

``otter assign`` then writes the student notebook and the autograder zip (Gradescope, Canvas via
Gradescope, or ``otter run`` locally without Docker). :func:`grade_folder` grades every submission in a
folder with Otter (no Docker) and writes one CSV row per student, with each exercise's score, and the
predictions and explanations (free text, for the instructor, not graded).
"""
from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHAPTERS = {"exercises": "06_exercises.ipynb", "ablations": "06_ablations.ipynb"}
DROP_TAGS = {"instructor", "book-only"}
FREE_TEXT = ("prediction", "explanation")  # prefixes of the names whose text the batch grader collects

ASSIGNMENT_CONFIG = """\
# ASSIGNMENT CONFIG
name: {name}
requirements: requirements.txt
files: [idmap_lib]
export_cell:
  pdf: false
  run_tests: false{export_files}
generate:
  show_stdout: true
tests:
  files: false
  ok_format: false
check_all_cell: false
init_cell: true
"""


def _src(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def _cell(kind, source, **extra):
    c = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        c.update(outputs=[], execution_count=None)
    c.update(extra)
    return c


def _defined(source):
    """Top-level names a code cell defines (assignments, functions, classes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _is_grading(source):
    return bool(re.search(r"\b(checks\.check_\w+|ablations\.check)\(", source))


DIRECTIVE = re.compile(r"```\{(exercise|solution)-(start|end)\}[^\n]*\n(?::[^\n]*\n)*```\n?", re.M)


def _strip_directives(text):
    return DIRECTIVE.sub("", text).strip()


def _label(text):
    m = re.search(r":label:\s*(\S+)", text)
    return m.group(1).replace("-", "_") if m else None


def split_chapter(nb):
    """The chapter as a list of parts: ("cell", cell) or ("exercise", {label, prompt, starters, grading,
    solutions}), with the cells tagged instructor/book-only left out."""
    parts, cur, where = [], None, None
    for cell in nb["cells"]:
        if _tags(cell) & DROP_TAGS:
            continue
        text = _src(cell)
        if cell["cell_type"] == "markdown" and "{exercise-start}" in text:
            cur = {"label": _label(text), "prompt": [], "starters": [], "grading": [], "solutions": [], "after": []}
            parts.append(("exercise", cur))
            where = "exercise"
        if cell["cell_type"] == "markdown" and "{solution-start}" in text:
            where = "solution"
        if where is None:
            parts.append(("cell", cell))
        elif where == "exercise":
            if cell["cell_type"] == "markdown":
                if _strip_directives(text) and "{exercise-end}" not in text:
                    cur["prompt"].append(_strip_directives(text))
            elif _is_grading(text) and not _defined(text):
                cur["grading"].append(text)
            else:
                cur["starters"].append(text)
        elif where == "solution" and cell["cell_type"] == "code":
            cur["solutions"].append(text)
        if cell["cell_type"] == "markdown" and "{exercise-end}" in text:
            where = "graded"
        if cell["cell_type"] == "markdown" and "{solution-end}" in text:
            where = None
        if where == "graded" and cell["cell_type"] == "code":
            (cur["grading"] if _is_grading(text) else cur["starters"]).append(text)
        elif where == "graded" and cell["cell_type"] == "markdown" and _strip_directives(text):
            cur["after"].append(_strip_directives(text))
    return parts


def _solution_for(starter, solutions):
    names = _defined(starter)
    for s in solutions:
        if names and names <= _defined(s):
            body = "\n".join(ln for ln in s.splitlines() if not _is_grading(ln))  # the grading stays a test
            return body.strip()
    return None


def otter_master(src, dst, name=None):
    """Write the Otter-Grader master notebook of a book chapter (see the module's docstring)."""
    src, dst = Path(src), Path(dst)
    nb = json.loads(src.read_text())
    name = name or re.sub(r"^\d+_", "", src.stem)
    runs = "ablations.run(" in src.read_text()  # a chapter that trains: the recorded runs go with the notebook
    export_files = ("\n  files: [idmap_runs]\n  instructions: \"The zip holds your notebook and your recorded "
                    "runs (the folder idmap_runs), which the autograder reads instead of training again.\""
                    if runs else "")
    cells = [_cell("raw", ASSIGNMENT_CONFIG.format(name=name, export_files=export_files))]
    for kind, part in split_chapter(nb):
        if kind == "cell":
            c = dict(part)
            if c["cell_type"] == "code":
                c.update(outputs=[], execution_count=None)
            cells.append(c)
            continue
        ex = part
        cells.append(_cell("raw", f"# BEGIN QUESTION\nname: {ex['label']}\npoints: 1"))
        cells += [_cell("markdown", p) for p in ex["prompt"]]
        starters = list(ex["starters"])
        for st in starters:
            sol = _solution_for(st, ex["solutions"])
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
                                           f"    from idmap_lib.checks.editions import run_grading_cell\n"
                                           f"    run_grading_cell(env, {g!r})"))
            cells.append(_cell("raw", "# END TESTS"))
        cells.append(_cell("raw", "# END QUESTION"))
        cells += [_cell("markdown", t) for t in ex["after"]]  # e.g. "Grade your unit:"
        cells += [_cell("code", g) for g in ex["grading"]]  # the hints of idmap_lib.checks, as in the book
    nb["cells"] = cells
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(nb, indent=1) + "\n")
    return dst


class _ToStatus(ast.NodeTransformer):
    """checks.check_x(args) -> checks.check_x.status(args); ablations.check(args) -> ablations.status(args)."""

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
    """Otter's test body: every grader call of a grading cell, run on the student's namespace `env`; each
    must return "passed" (a failing grader raises its AssertionError with its hint; NOT ATTEMPTED fails)."""
    from idmap_lib import checks
    from idmap_lib.checks import ablations
    ns = {**dict(env or {}), "checks": checks, "ablations": ablations}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = ast.fix_missing_locations(_ToStatus().visit(stmt.value))
            status = eval(compile(ast.Expression(call), "<grading cell>", "eval"), ns)
            assert status == "passed", f"{ast.unparse(stmt.value)}: {status}"
        else:
            exec(compile(ast.Module([stmt], []), "<grading cell>", "exec"), ns)


# ---- otter assign: the student edition and the autograder ---------------------------------------------------

def _otter(*args, cwd=None, env=None):
    exe = shutil.which("otter", path=str(Path(sys.executable).parent)) or shutil.which("otter")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "otter", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True)


def assign(out="dist", chapters=None, run_tests=True):
    """Write, for each chapter, ``out/<name>/student/<name>.ipynb`` (the student edition) and
    ``out/<name>/autograder/<name>-autograder_*.zip`` (the LMS package) with ``otter assign``.
    Returns {name: {"student": path, "autograder": path, "master": path}}."""
    out = Path(out).resolve()
    made = {}
    env = {**os.environ, "IDMAP_RUNS": str(ROOT / "data" / "classroom")}  # the solutions' runs are recorded
    for name in chapters or CHAPTERS:
        work = out / name
        shutil.rmtree(work, ignore_errors=True)
        master = otter_master(BOOK / CHAPTERS[name], work / "master" / f"{name}.ipynb", name)
        shutil.copy(ROOT / "requirements-grading.txt", master.parent / "requirements.txt")
        shutil.copytree(ROOT / "idmap_lib", master.parent / "idmap_lib",  # the graders travel in the zip
                        ignore=shutil.ignore_patterns("__pycache__"))
        args = ["assign", str(master), str(work / "dist")] + ([] if run_tests else ["--no-run-tests"])
        _otter(*args, cwd=master.parent, env=env)
        made[name] = {"master": master, "student": work / "dist" / "student" / f"{name}.ipynb",
                      "autograder": next((work / "dist" / "autograder").glob("*.zip"))}
    return made


# ---- batch grading ---------------------------------------------------------------------------------------------

def _free_text(path):
    """{name: text} for the prediction_.../explanation_... strings a submitted notebook assigns (read, not
    run); a name assigned twice keeps its last text."""
    nb = json.loads(Path(path).read_text())
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(_src(cell))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id.startswith(FREE_TEXT):
                        found[t.id] = " ".join(node.value.value.split())
    return found


def grade_folder(folder, autograder, csv_path, ext=(".ipynb", ".zip")):
    """Grade every submission in `folder` with Otter (no Docker) against `autograder` (the zip that
    ``assign`` made); write one CSV row per student (the file's stem): total, each question's score, and the
    free-text answers. Returns the rows."""
    from otter.api import grade_submission
    rows = []
    for sub in sorted(p for p in Path(folder).iterdir() if p.suffix in ext):
        res = grade_submission(str(sub), str(autograder), quiet=True)
        row = {"student": sub.stem, "total": res.total, "possible": res.possible}
        for q, r in sorted(res.results.items()):
            row[q] = r.score
        nb = sub
        if sub.suffix == ".zip":
            import tempfile
            import zipfile
            tmp = Path(tempfile.mkdtemp())
            with zipfile.ZipFile(sub) as z:
                z.extractall(tmp)
            nb = next(tmp.glob("*.ipynb"))
        row.update(_free_text(nb))
        rows.append(row)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    return rows


def solved_notebook(src, dst):
    """The chapter as a student who solved every exercise would submit it: each starter cell replaced by its
    solution, the grading cells kept, the book's solution blocks and instructor cells left out (for tests)."""
    nb = json.loads(Path(src).read_text())
    cells = []
    for kind, part in split_chapter(nb):
        if kind == "cell":
            cells.append(part)
            continue
        cells += [_cell("markdown", p) for p in part["prompt"]]
        for st in part["starters"]:
            cells.append(_cell("code", _solution_for(st, part["solutions"]) or st))
        cells += [_cell("code", g) for g in part["grading"]]
    nb["cells"] = cells
    Path(dst).write_text(json.dumps(nb, indent=1) + "\n")
    return Path(dst)
