"""The student edition (otter assign) has no solution text and no instructor notes and its graders
still run; the autograder package grades submissions (otter run, no Docker); a folder of submissions
becomes one CSV row per student, with the free-text answers collected; the instructor guide computes
its numbers."""
import csv
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from idmap_class import ablations, batch, chapter_parts, editions, student
from idmap_lib.engine import results

pytestmark = pytest.mark.slow  # minutes: `pytest -m 'not slow'` leaves it out of the quick loop

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

pytest.importorskip("otter")


def _text(nb_path):
    nb = json.loads(Path(nb_path).read_text())
    return nb, "\n".join("".join(c["source"]) for c in nb["cells"])


def _solution_cells(chapter, other=False):
    """The code of every cell of the book's solution blocks and of its instructor-tagged cells
    (other=True: the remaining cells)."""
    nb = json.loads((BOOK / chapter).read_text())
    inside, found, rest = False, [], []
    for c in nb["cells"]:
        src = "".join(c["source"])
        if "{solution-start}" in src:
            inside = True
        if (inside
            and c["cell_type"] == "code") or set(c["metadata"].get("tags",
                                                                   [])) & chapter_parts.DROP_TAGS:
            found.append(src)
        else:
            rest.append(src)
        if "{solution-end}" in src:
            inside = False
    return rest if other else found


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    return editions.assign(out, run_tests=False)


@pytest.mark.parametrize("chapter", ["exercises", "ablations"])
def test_student_edition_has_no_solutions_and_no_instructor_notes(dist, chapter):
    made = dist[chapter]
    nb, text = _text(made["student"])
    for word in ("solution", "hidden", "instructor", "open it after"):
        assert not re.search(word, text, re.I), f"{word!r} in the student edition of {chapter}"
    solutions = _solution_cells(editions.CHAPTERS[chapter])
    elsewhere = {ln.strip() for src in _solution_cells(editions.CHAPTERS[chapter], other=True)
                 for ln in src.splitlines()}
    student_lines = {ln.strip() for ln in text.splitlines()}
    leaked = [ln.strip() for sol in solutions for ln in sol.splitlines()
              if len(ln.strip()) > 12 and ln.strip() not in elsewhere
              and ln.strip() in student_lines]
    assert not leaked, f"solution lines in the student edition of {chapter}: {leaked[:5]}"
    assert sum(len(s.splitlines()) for s in solutions) > 20  # there were solutions to leak
    # the stubs and one check per question (Otter's, whose test runs the book's graders: in the
    # autograder)
    n_ex = sum(1
               for k, _ in chapter_parts.split_chapter(json.loads((BOOK / editions.CHAPTERS[chapter]).read_text()))
               if k == "exercise")
    assert text.count("grader.check(") == n_ex
    assert text.count("checks.check_") + text.count("ablations.check(") == 0
    code = [("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"]
    # the setup cell, then the grader (student.py: installs otter)
    assert code[0].startswith(editions.SETUP_MARK)
    assert (f'grader = student_grader("{chapter}")' in code[1]
            and f'submit(grader, "{chapter}"' in code[-1])
    assert made["autograder"].exists() and zipfile.is_zipfile(made["autograder"])
    with zipfile.ZipFile(made["autograder"]) as z:
        names = z.namelist()
    assert any(n.startswith("files/idmap_class/") for n in names) and "run_autograder" in names
    # Gradescope's image: Python 3.11, CPU torch, no browser
    with zipfile.ZipFile(made["autograder"]) as z:
        env, setup = z.read("environment.yml").decode(), z.read("setup.sh").decode()
    assert "python=3.11" in env and "download.pytorch.org/whl/cpu" in env and "+cpu" in env
    assert "playwright" not in setup and "mamba env create" in setup
    # nobody reaches the env's Python
    assert setup.index("mamba env create") < setup.index("chmod o+x /root")
    # what its grading cells are (batch.plan)
    assert f"files/book/{editions.CHAPTERS[chapter]}" in names
    # the runs a copy is compared with
    assert len([n for n in names if n.startswith("files/data/classroom/")]) >= 90


def test_book_pages_keep_the_instructor_notes_the_student_edition_drops():
    """Issue 9 item 8: the book's chapter still has its notes (tagged), and the sentences about
    hidden solutions sit in a book-only cell instead of the intro that students get."""
    nb = json.loads((BOOK / "06_exercises.ipynb").read_text())
    tagged = {t for c in nb["cells"] for t in c["metadata"].get("tags", [])}
    assert {"instructor", "book-only"} <= tagged
    untagged = "\n".join("".join(c["source"]) for c in nb["cells"]
                         if not set(c["metadata"].get("tags", [])) & chapter_parts.DROP_TAGS
                         and c["cell_type"] == "markdown"
                         and "{solution" not in "".join(c["source"]))
    assert "hidden solution" not in untagged and "Notes for instructors" not in untagged


def _as_submission(solved, student_edition):
    """A solved notebook with the student edition's metadata (Otter checks the assignment's
    name)."""
    nb = json.loads(Path(solved).read_text())
    nb["metadata"] = json.loads(Path(student_edition).read_text())["metadata"]
    return nb


def _submission_zip(nb_path, dest, runs=None):
    with zipfile.ZipFile(dest, "w") as z:
        z.write(nb_path, Path(nb_path).name)
        for p in (runs or []):
            z.write(p, f"idmap_runs/{Path(p).name}")
    return dest


def test_grade_folder_one_row_per_student(dist, tmp_path):
    made = dist["exercises"]
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(made["student"], subs / "ada.ipynb")  # untouched: nothing attempted
    # everything right
    solved = editions.solved_notebook(BOOK / "06_exercises.ipynb", subs / "grace.ipynb")
    nb = _as_submission(solved, made["student"])
    solved.write_text(json.dumps(nb))
    nb = _as_submission(solved, made["student"])  # one wrong answer: a sum instead of a product
    for c in nb["cells"]:
        if "".join(c["source"]).startswith("def direct_term"):
            c["source"] = ("def direct_term(lams):\n    return sum(lams)\n\n\n"
                           "def vanishing_depth(lam, eps):\n    import math\n"
                           "    return math.ceil(math.log(eps) / math.log(lam))\n")
    (subs / "alan.ipynb").write_text(json.dumps(nb))
    # corrupt, empty, not a notebook:
    (subs / "bob.zip").write_bytes(b"PK\x03\x04 cut off mid-export")
    # each a row with its reason,
    (subs / "carl.ipynb").write_text("")
    # and the class is still graded
    (subs / "dora.ipynb").write_text("{ not json")
    rows = batch.grade_folder(subs, made["autograder"], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as f:
        table = {r["student"]: r for r in csv.DictReader(f)}
    assert set(table) == {"ada", "grace", "alan", "bob", "carl", "dora"} and len(rows) == 6
    assert (float(table["grace"]["total"]) == float(table["grace"]["possible"]) > 0
            and table["grace"]["reason"] == "")
    assert float(table["ada"]["total"]) == 0
    assert float(table["alan"]["ex_direct"]) == 0
    assert float(table["alan"]["total"]) == float(table["alan"]["possible"]) - 1
    assert "check_direct_term" in table["alan"]["ex_direct: feedback"]  # why, not only how much
    assert table["grace"]["ex_direct: feedback"] == ""
    for who, why in (("bob", "not a readable zip"), ("carl", "empty file"),
                     ("dora", "not a notebook")):
        assert float(table[who]["total"]) == 0 and why in table[who]["reason"], table[who]
        assert table[who]["possible"] == table["grace"]["possible"]


def _trained_by(solved, runs_dir):
    """Run the solved notebook as its student would (quick scale, runs into `runs_dir`): its own
    runs, its seed."""
    import nbformat
    from nbclient import NotebookClient
    env = {"IDMAP_ABLATION_SCALE": "quick", "IDMAP_RUNS": str(runs_dir), "OMP_NUM_THREADS": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nbformat.read(solved, as_version=4), timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(Path(solved).parent)}}).execute()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return sorted(runs_dir.iterdir())


@pytest.mark.skipif(not ablations.BOOK_RUNS.is_dir(),
                    reason="the book's classroom runs are not recorded")
def test_ablation_submission_graded_from_its_recorded_runs(dist, tmp_path, monkeypatch):
    """The LMS path for the ablations: a zip with the notebook and the student's own recorded runs
    is graded by the autograder without training; predictions and explanations land in the CSV as
    text. The same notebook with the book's recorded runs copied in (every clone has them) does not
    pass; without runs it is 'runs missing'. A classmate's whole submission copied with its
    explanations rewritten is flagged 'same runs as'; runs forged with another seed (the hash
    recomputed, the seed file edited) fail the spot check, which trains only the first steps of two
    runs again; an honest student's pass it."""
    import time
    made = dist["ablations"]
    (tmp_path / "nb").mkdir()
    solved = editions.solved_notebook(BOOK / "06_ablations.ipynb",
                                      tmp_path / "nb" / "ablations.ipynb")
    nb = _as_submission(solved, made["student"])
    for c in nb["cells"]:
        if "".join(c["source"]).startswith("explanation_scaling ="):
            c["source"] = 'explanation_scaling = """My own words about what happened."""'
    solved.write_text(json.dumps(nb))
    own = _trained_by(solved, tmp_path / "nb" / "idmap_runs")
    assert any(p.name == "seed.txt" for p in own)
    subs, others = tmp_path / "subs", tmp_path / "others"
    subs.mkdir()
    others.mkdir()
    _submission_zip(solved, subs / "ada.zip", own)  # (ada trained at the quick scale: graded at it)
    # cora: ada's notebook and runs, her own explanations
    copied = tmp_path / "copied" / "ablations.ipynb"
    copied.parent.mkdir()
    nb_copy = json.loads(solved.read_text())
    for c in nb_copy["cells"]:
        if "".join(c["source"]).startswith("explanation_scaling ="):
            c["source"] = 'explanation_scaling = """Rewritten so that it looks like mine."""'
    copied.write_text(json.dumps(nb_copy))
    _submission_zip(copied, subs / "cora.zip", own)
    # fred: ada's runs relabelled with his own seed
    forged = tmp_path / "forged" / "idmap_runs"
    forged.mkdir(parents=True)
    for p in own:
        if p.suffix != ".json":
            if p.name == "seed.txt":
                (forged / p.name).write_text("4242\n")
            continue
        r = json.loads(p.read_text())
        r["config"]["seed"] = r["seed"] = 4242
        r["config_hash"] = results.config_hash(r["config"])
        # named by its new hash, as looked up
        results.result_path(r["config"], forged).write_text(json.dumps(r))
    _submission_zip(solved, subs / "fred.zip", sorted(forged.iterdir()))
    # the book's, copied
    _submission_zip(solved, others / "bea.zip", ablations.BOOK_RUNS.glob("*__s0__*.json"))
    # no runs at all
    _submission_zip(solved, others / "ben.zip", [])
    t0 = time.perf_counter()
    rows = {r["student"]: r for r in batch.grade_folder(others, made["autograder"],
                                                        tmp_path / "others.csv")}
    monkeypatch.setenv("IDMAP_ABLATION_SCALE", "quick")
    rows.update({r["student"]: r for r in batch.grade_folder(subs, made["autograder"],
                                                             tmp_path / "grades.csv")})
    row = rows["ada"]
    assert row["total"] == row["possible"] == len(ablations.ABLATIONS), row
    assert ("does NOT" not in row["spot check"]
            and row["spot check"].count("reproduces (") == 2), row["spot check"]
    assert (row["flag"], rows["cora"]["flag"]) == ("same runs as cora, fred",
                                                   "same runs as ada, fred")
    # every run discredited
    assert rows["fred"]["total"] == 0 and "does NOT reproduce" in rows["fred"]["spot check"]
    assert "spot check failed" in rows["fred"]["reason"]
    assert "same machine kind" in rows["fred"]["spot check"], rows["fred"]["spot check"]
    assert row["explanation_scaling"] == "My own words about what happened."
    assert row["prediction_scaling"].startswith("The scaled net")
    assert {f"prediction_{t}" for t in ("gate_bias", "bn", "plain", "k_depth", "prune")} <= set(row)
    feedback = {w: [v for k, v in rows[w].items() if k.endswith(": feedback")]
                for w in ("bea", "ben")}
    assert rows["bea"]["total"] == 0 and all("not yours" in v for v in feedback["bea"]), rows["bea"]
    assert (rows["ben"]["total"] == 0 and all("runs missing" in v
                                              for v in feedback["ben"])), rows["ben"]
    # five notebooks graded, only the spot check's first steps trained: a limit that only catches a
    # grader that trains (minutes per run) or hangs, never a slow machine
    assert time.perf_counter() - t0 < 1800


def test_instructor_guide_is_computed():
    from idmap_class.guide import instructor_guide
    text = instructor_guide()
    for name in ablations.ABLATIONS:
        assert f"### {name}" in text
    assert ("python -m idmap_class "
            "assign") in text and "python -m idmap_class grade" in text
    sp = ablations.spread()
    # the time measured as the notebook runs it, or "not measured" with the command
    for name in ablations.ABLATIONS:
        wall = sp.get(name, {}).get("notebook_wall")
        assert (f"{wall['s'] / 60:.1f} min" if wall
                else "not measured: `python -m idmap_class time`") in text
        mlp = all(c["model"]["builder"] == "mlp"
                  for c in ablations.configs(name, 0, "classroom").values())
        # as ablations.run picks them
        assert not wall or wall["torch_threads"] == (1 if mlp else wall["cpu_count"])


def _run_all(nb_path, work):
    """Jupyter's "Run all" on a copy of the notebook in `work` (where the export writes its zip);
    the zip, or the error that stopped it."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    work.mkdir(exist_ok=True)
    shutil.copy(nb_path, work)
    nb = nbformat.read(work / Path(nb_path).name, as_version=4)
    try:
        NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(work)}}).execute()
    except CellExecutionError as e:
        return None, str(e).splitlines()[-1]
    return next(work.glob("*.zip"), None), ""


@pytest.mark.parametrize("chapter", ["exercises", "ablations"])
def test_run_all_goes_top_to_bottom_for_a_blank_student_and_exports_a_valid_submission(dist, chapter, tmp_path,
                                                                                       monkeypatch):
    """A student who runs the edition as handed out, answering nothing (and, for the ablations,
    training nothing: no prediction): every cell runs, one check per question says what is missing,
    and the export makes a valid zip -- with the runs folder where the chapter trains, saying it
    holds no run."""
    monkeypatch.setenv("IDMAP_ABLATION_SCALE", "quick")
    made = dist[chapter]
    # a run stopped before its end
    weights = tmp_path / "blank" / "idmap_runs" / "checkpoints" / "interrupted.pt"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"weights")
    zipped, stopped = _run_all(made["student"], tmp_path / "blank")
    assert zipped is not None, f"Run all stopped: {stopped}"
    with zipfile.ZipFile(zipped) as z:
        names = z.namelist()
    assert f"{chapter}.ipynb" in names and (chapter == "exercises"
                                            or "idmap_runs/NO_RUNS.txt" in names), names
    # Otter's export leaves the weights out too
    assert not [n for n in names if "checkpoints" in n], names
    (tmp_path / "subs").mkdir()
    shutil.copy(zipped, tmp_path / "subs" / "blank.zip")
    row = batch.grade_folder(tmp_path / "subs", made["autograder"], tmp_path / "grades.csv")[0]
    # graded, with reasons:
    assert row["total"] == 0 and row["reason"] == "" and row["possible"] > 0, row
    if chapter == "ablations":
        assert all("runs missing" in v for k, v in row.items() if k.endswith(": feedback")), row


def test_run_all_goes_top_to_bottom_for_a_wrong_student(dist, tmp_path):
    """The student edition with one wrong answer written in: its check fails with a hint, "Run all"
    goes on."""
    made = dist["exercises"]
    nb = json.loads(Path(made["student"]).read_text())
    starter = [c for c in nb["cells"] if "".join(c["source"]).startswith("def direct_term")]
    assert len(starter) == 1
    starter[0]["source"] = ("def direct_term(lams):\n    return sum(lams)\n\n\ndef "
                            "vanishing_depth(lam, eps):\n    return 1\n")
    wrong = tmp_path / "exercises.ipynb"
    wrong.write_text(json.dumps(nb))
    zipped, stopped = _run_all(wrong, tmp_path / "wrong")
    assert zipped is not None, f"Run all stopped: {stopped}"


def test_published_student_editions_are_current(tmp_path):
    """The student editions the exercise pages' Colab buttons open (book/student/) are what the
    chapters make now: `python -m idmap_class publish` writes them; a chapter edited without it
    fails here."""
    fresh = editions.publish(dest=tmp_path)
    committed = sorted(p.relative_to(student.PUBLISHED) for p in student.PUBLISHED.rglob("*")
                       if p.is_file())
    assert committed == sorted(p.relative_to(tmp_path) for p in fresh)
    stale = [str(p) for p in committed
             if (tmp_path / p).read_bytes() != (student.PUBLISHED / p).read_bytes()]
    assert not stale, f"run `python -m idmap_class publish` and commit book/student/: {stale}"
    # the student's otter = the grader's
    assert student.OTTER in (ROOT / "requirements-grading.txt").read_text().split()
    for page, rel in editions.student_edition_paths().items():
        text = (BOOK / rel).read_text()
        assert not re.search(r"\]\(\d\d_\w+\.ipynb",
                             text), f"{rel}: a link relative to the book's folder"
        # no raw MyST fences
        assert "{solution-start}" not in text and "```{exercise" not in text, rel
    for c in json.loads((BOOK / editions.student_edition_paths()["06_ablations"]).read_text())["cells"]:
        # input hidden on the site: hidden in Jupyter and Colab too
        if "An honest question" in "".join(c["source"]):
            assert c["metadata"]["jupyter"]["source_hidden"] and c["metadata"]["cellView"] == "form"


class _FakeColab:
    """google.colab as a test can have it: the notebook the browser holds, and the files it was
    asked to download."""

    def __init__(self, nb):
        import types
        self.downloaded = []
        self.message = types.SimpleNamespace(
            blocking_request=lambda what, timeout_sec=0: {"ipynb": nb} if what == "get_ipynb" else None)
        self.files = types.SimpleNamespace(download=self.downloaded.append)

    def install(self, monkeypatch):
        import sys
        import types

        from otter.check.utils import IPythonInterpreter
        pkg = types.ModuleType("google.colab")
        pkg._message, pkg.files = self.message, self.files
        monkeypatch.setitem(sys.modules, "google.colab", pkg)
        monkeypatch.setitem(sys.modules, "google.colab._message", self.message)
        monkeypatch.setitem(sys.modules, "google.colab.files", self.files)
        # otter itself believes it is Colab
        monkeypatch.setattr(type(IPythonInterpreter.COLAB.value), "running",
                            lambda self: self.check_strs == ["google.colab"])


def test_on_colab_the_grader_checks_and_the_submission_is_made_and_graded(dist, tmp_path, monkeypatch):
    """Colab, where otter cannot read tests from the notebook nor export: the grader takes the
    published tests (no ./tests in /content), a check passes and a wrong answer fails with its hint,
    and submit() zips the notebook as the browser holds it (Colab drops otter's metadata: it is put
    back) with the runs folder and no checkpoint; the batch grader grades that zip."""
    made = dist["exercises"]
    solved = editions.solved_notebook(BOOK / "06_exercises.ipynb", tmp_path / "solved.ipynb")
    nb = json.loads(solved.read_text())
    nb["metadata"] = {"colab": {"provenance": []}}          # as Colab saves it
    colab = _FakeColab(nb)
    colab.install(monkeypatch)
    content = tmp_path / "content"
    content.mkdir()
    monkeypatch.chdir(content)
    monkeypatch.delenv("IDMAP_RUNS", raising=False)
    grader = student.student_grader("exercises")
    assert (Path(grader._tests_dir) == student.PUBLISHED / "exercises" / "tests"
            and grader._notebook is None)
    env = {"math": __import__("math")}
    exec(compile("\n".join(chapter_parts.solution_for(s, p["solutions"]) or s
                           for k, p in chapter_parts.split_chapter(
        json.loads((BOOK / "06_exercises.ipynb").read_text())) if k == "exercise"
        for s in p["starters"]
        if "direct_term" in s), "<student>", "exec"), env)
    assert grader.check("ex_direct", global_env=env).grade == 1
    env["direct_term"] = lambda lams: sum(lams)
    wrong = grader.check("ex_direct", global_env=env)
    assert wrong.grade < 1 and "direct_term" in repr(wrong)
    (content / "idmap_runs" / "checkpoints").mkdir(parents=True)
    (content / "idmap_runs" / "r.json").write_text("{}")
    (content / "idmap_runs" / "checkpoints" / "r.pt").write_bytes(b"weights")
    zipped = student.submit(grader, "exercises", runs=True)
    assert colab.downloaded == [str(zipped)]
    with zipfile.ZipFile(zipped) as z:
        assert sorted(z.namelist()) == ["exercises.ipynb", "idmap_runs/r.json"]
        assert (json.loads(z.read("exercises.ipynb"))["metadata"]["otter"]["assignment_name"] == "exercises")
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(zipped, subs / "grace.zip")
    monkeypatch.undo()  # grading happens on the instructor's machine
    row = batch.grade_folder(subs, made["autograder"], tmp_path / "grades.csv")[0]
    assert row["reason"] == "" and row["total"] == row["possible"] > 0, row


def test_cheating_hanging_and_pickled_submissions_get_nothing_and_touch_nothing(dist, tmp_path, monkeypatch):
    """Issue 32: the marks are the trusted grader's, computed from values the sandbox hands back,
    never from the kernel the student's code ran in. A blank notebook that monkeypatches the graders
    (and Otter's test runner) gets 0; one that hangs is a row "time limit" and the others are still
    graded; an .OTTER_LOG pickle is never loaded; a notebook that tries to write beside the
    submissions (or to the CSV) cannot, nor see the other submissions or the home folder, nor leave
    a process behind; no scratch folder stays."""
    import pickle
    import tempfile
    import time

    from idmap_class.sandbox import Limits
    monkeypatch.setenv("IDMAP_ABLATION_SCALE", "quick")
    made = dist["ablations"]
    nb = json.loads(Path(made["student"]).read_text())
    subs = tmp_path / "subs"
    subs.mkdir()
    marker = tmp_path / "pickle-ran"

    def with_cell(source, name, extra=None):
        cells = list(nb["cells"])
        at = next(i for i, c in enumerate(cells)
                  if "from idmap_class import ablations" in "".join(c["source"]))
        cells.insert(at + 1, {"cell_type": "code", "metadata": {}, "outputs": [],
                              "execution_count": None,
                              "source": source})
        with zipfile.ZipFile(subs / f"{name}.zip", "w") as z:
            z.writestr("ablations.ipynb", json.dumps({**nb, "cells": cells}))
            for arc, data in (extra or {}).items():
                z.writestr(arc, data)

    with_cell("import idmap_class.ablations as A\nA.status = lambda *a, **k: 'passed'\n"
              "A.check = lambda *a, **k: print('PASSED')\n"
              "import otter.test_files.abstract_test as T\n"
              "T.TestFile.run = lambda self, env: setattr(self, 'test_case_results', [])\n",
              "mallory")
    with_cell("import os, time\nif os.environ.get('IDMAP_GRADING'):\n    time.sleep(3600)\n",
              "henry")
    with_cell(f"open({str(subs / 'planted.txt')!r}, 'w').write('x')\n", "eve",
              {".OTTER_LOG": pickle.dumps(_Marker(str(marker)))})
    # a process left behind to act after grading (it would rewrite the CSV)
    detached = tmp_path / "detached-ran"
    with_cell(f"import os, subprocess\nfor p in [{str(subs)!r}, {str(tmp_path)!r}, "
              f"os.path.expanduser('~')]:\n"
              "    try:\n        open(os.path.join(p, 'seen-by-sam'), "
              "'w').write(str(os.listdir(p)))\n    except OSError:\n        pass\n"
              f"subprocess.Popen(['sh', '-c', 'sleep 3; touch {detached}'], "
              f"start_new_session=True)\n", "sam")
    book_runs = Path(__file__).resolve().parents[1] / "data" / "classroom"
    # a file of the instructor's the notebook points the grader at
    secret = tmp_path / "instructor-only.txt"
    secret.write_text("4242\n")
    secret.chmod(0o600)
    with_cell(f"import os\nos.makedirs('idmap_runs', exist_ok=True)\n"
              f"os.symlink({str(secret)!r}, 'idmap_runs/seed.txt')\n"
              f"for f in os.listdir({str(book_runs)!r})[:40]:\n"
              f"    os.symlink(os.path.join({str(book_runs)!r}, f), os.path.join('idmap_runs', "
              f"f))\n", "linus")
    # the grader's temporary folders, here only (other tests may grade meanwhile)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    rows = {r["student"]: r for r in batch.grade_folder(subs, made["autograder"],
                                                        tmp_path / "grades.csv",
                                                          limits=Limits(wall_s=90))}
    assert (rows["mallory"]["total"] == 0
            and rows["mallory"]["possible"] == len(ablations.ABLATIONS)), rows["mallory"]
    assert all("runs missing" in v for k, v in rows["mallory"].items() if k.endswith(": feedback"))
    assert rows["henry"]["total"] == 0 and "time limit (90 s)" in rows["henry"]["reason"]
    assert rows["eve"]["total"] == 0 and not marker.exists()
    # the class and CSV folder unseen
    assert rows["sam"]["total"] == 0 and not list(tmp_path.rglob("seen-by-sam"))
    assert (rows["linus"]["total"] == 0
            and "links or special files made by the notebook" in rows["linus"]["reason"])
    assert "4242" not in json.dumps(rows["linus"])  # the linked file was never read
    assert not (Path.home() / "seen-by-sam").exists()
    time.sleep(5)
    assert not detached.exists()  # everything the notebook started was killed with its sandbox
    assert sorted(p.name for p in subs.iterdir()) == ["eve.zip", "henry.zip", "linus.zip",
                                                      "mallory.zip",
                                                      "sam.zip"]  # nothing planted
    with open(tmp_path / "grades.csv") as f:
        assert {r["student"] for r in csv.DictReader(f)} == set(rows)
    assert not list(scratch.iterdir())  # every scratch folder removed


class _Marker:
    """A pickle that, if anything ever loaded it, would leave a file behind."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_assign_as_the_readme_documents_it(tmp_path):
    """Issue 32.1: the README's and the guide's first command, as written, with Otter's check of the
    solutions on (the solutions' runs are the book's, wherever Otter copies the library): both
    packages made, nothing else."""
    import subprocess
    import sys
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/python -m idmap_class assign --out dist" in readme
    done = subprocess.run([sys.executable, "-m", "idmap_class", "assign", "--out", "dist"],
                          cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for chapter in editions.CHAPTERS:
        assert len(list((tmp_path / "dist" / chapter / "dist" / "autograder").glob("*.zip"))) == 1, chapter


def test_a_failed_assign_says_what_otter_said_and_leaves_nothing(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise editions.AssignError("otter assign failed (exit 1); Otter said:\nsolution check "
                                   "failed")
    monkeypatch.setattr(editions, "_otter", failing)
    with pytest.raises(editions.AssignError, match="solution check failed"):
        editions.assign(tmp_path / "dist", ["exercises"])
    assert not (tmp_path / "dist" / "exercises").exists()


@pytest.mark.parametrize("chapter", sorted(editions.CHAPTERS.values()))
def test_the_notebooks_written_for_grading_are_valid_nbformat_4_5(chapter, tmp_path):
    """The Otter master and a solved submission give every cell a unique id (nbformat 4.5 requires
    one: without, nbformat warns today and its future versions refuse the notebook, and the
    instructor's grading with it)."""
    import warnings

    import nbformat

    for nb_path in (editions.otter_master(BOOK / chapter, tmp_path / "master.ipynb"),
                    editions.solved_notebook(BOOK / chapter, tmp_path / "solved.ipynb")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            nb = nbformat.read(nb_path, as_version=4)
            nbformat.validate(nb)
        ids = [c.id for c in nb.cells]
        assert len(set(ids)) == len(ids), f"{nb_path.name}: repeated cell ids"


def _gradescope(autograder_zip, submission: Path, base: Path) -> dict:
    """Gradescope's run, emulated: the autograder zip unpacked into <base>/source, the upload into
    <base>/submission, then `python source/run_otter.py` as Gradescope's run_autograder calls it."""
    import subprocess
    import sys

    with zipfile.ZipFile(autograder_zip) as z:
        z.extractall(base / "source")
    (base / "submission").mkdir(parents=True)
    shutil.copy(submission, base / "submission" / submission.name)
    done = subprocess.run([sys.executable, str(base / "source" / "run_otter.py")],
                          capture_output=True, text=True,
                          env={**os.environ, "IDMAP_AUTOGRADER_DIR": str(base)}, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((base / "results" / "results.json").read_text())


def test_the_gradescope_run_scores_outside_the_students_kernel(dist, tmp_path):
    """Issue 45.4: under Otter's runner a blank notebook that replaced the graders (and Otter's test
    runner) in its kernel got every mark. The zip's run_otter.py grades as the batch does: the
    solved notebook gets every mark, the same cheat gets what a blank one gets (0), and each
    question says why."""
    made = dist["exercises"]
    solved = editions.solved_notebook(BOOK / "06_exercises.ipynb", tmp_path / "exercises.ipynb")
    solved.write_text(json.dumps(_as_submission(solved, made["student"])))
    grace = _submission_zip(solved, tmp_path / "grace.zip")
    nb = json.loads(Path(made["student"]).read_text())
    at = next(i for i, c in enumerate(nb["cells"]) if "student_grader" in "".join(c["source"]))
    nb["cells"].insert(at + 1, {"cell_type": "code", "metadata": {}, "outputs": [],
                                "execution_count": None,
                                "source": "import idmap_class as C, "
                                          "idmap_class.implementation as I\nfor n in "
                                          "dir(I):\n    if n.startswith('check_'):\n        "
                                          "setattr(I, n, lambda *a, **k: None); setattr(C, n, "
                                          "getattr(I, n))\nimport otter.test_files.abstract_test "
                                          "as T\nT.TestFile.run = lambda self, env: setattr(self, "
                                          "'test_case_results', [])\n"})
    (tmp_path / "mallory").mkdir()
    (tmp_path / "mallory" / "exercises.ipynb").write_text(json.dumps(nb))
    mallory = _submission_zip(tmp_path / "mallory" / "exercises.ipynb", tmp_path / "mallory.zip")
    honest = _gradescope(made["autograder"], grace, tmp_path / "gs-grace")
    cheat = _gradescope(made["autograder"], mallory, tmp_path / "gs-mallory")
    possible = len(batch.plan("exercises")["questions"])
    assert honest["score"] == possible > 0, honest
    assert cheat["score"] == 0 and len(cheat["tests"]) == possible, cheat
    assert all(t["output"] for t in cheat["tests"])  # each question says why it got nothing
