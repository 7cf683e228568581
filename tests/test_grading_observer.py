"""Issue 60: marks from what the grader observes itself. Each cheating student of the issue's table,
built from the student edition and zipped by the edition's own export (``student._zip``), graded in
one batch (``grade``) and through the zip's ``run_otter.py`` (Gradescope's path): each scores 0
(the delegate flagged), the honest student full marks, and no host path, host name, solution or
/etc content appears in any output; ``otter run`` refuses the zip before it reads the submission."""
import csv
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from idmap_class import batch, editions, sandbox, student

pytestmark = pytest.mark.slow
pytest.importorskip("otter")
ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

BLANK_BUT = {
    # reads the seed file and writes the values file the old extraction trusted, then ends the kernel
    "seed_reader": "import json, os\nplan = json.load(open('.idmap-grader/plan.json'))\n"
                   "from idmap_class import implementation as I, references as R\n"
                   "os._exit(0)\n",
    # replaces the observer, then json.dump, so that the references' observations are written
    "observer_patch": "import idmap_class.implementation as I, idmap_class.references as R\n"
                      "I.observe = lambda check, obj, seed: {'check': check, 'seed': seed}\n",
    "dump_patch": "import json\n_dump = json.dump\njson.dump = lambda v, f, **k: _dump({'calls': []}, f)\n"
                  "json.dumps = lambda v, **k: '{\"calls\": []}'\n",
    # replaces the graders with objects whose status() is "passed"
    "grader_patch": "import idmap_class as C\nclass P:\n    def __call__(self, *a, **k):\n"
                    "        pass\n    def status(self, *a, **k):\n        return 'passed'\n"
                    "for n in dir(C):\n    if n.startswith('check_'):\n        setattr(C, n, P())\n",
    # a module (and an exception) whose type names carry what the notebook can read
    "namer": "import os, socket\nLEAK = ('x_' + socket.gethostname() + '_' + os.getcwd() + '_' + "
             "open('/etc/passwd').read()[:40] + '_' + ','.join(os.listdir('/')))\n"
             "PreActUnit = lambda c: type(LEAK, (), {})()\n"
             "def direct_term(lams):\n    raise type(LEAK, (Exception,), {})(LEAK)\n"
             "def vanishing_depth(lam, eps):\n    return LEAK\n",
}
# answers that are the library's own references
DELEGATE = {
    "def exclusive_gating": "from idmap_class.references import reference_gating\n"
                            "def exclusive_gating(x, Fx, W_g, b_g):\n"
                            "    return reference_gating(x, Fx, W_g, b_g)\n",
    "def direct_term": "from idmap_class import measured_direct_term\n"
                       "def direct_term(lams):\n    return measured_direct_term(lams)\n\n"
                       "def vanishing_depth(lam, eps):\n    n = 1\n"
                       "    while lam ** n >= eps:\n        n += 1\n    return n\n",
    "class PreActUnit": "class PreActUnit(nn.Module):\n    def __init__(self, c):\n"
                        "        super().__init__()\n"
                        "        self.u = im.make_unit('full_preact', 'identity', c, c)\n"
                        "        self.bn1, self.conv1 = self.u.residual[0], self.u.residual[2]\n"
                        "        self.bn2, self.conv2 = self.u.residual[3], self.u.residual[5]\n"
                        "    def forward(self, x):\n        return self.u(x)\n",
    "class GatedResidual": "from idmap_lib.models.units import ResidualUnit\n"
                           "from idmap_lib.models.shortcuts import Shortcut\n"
                           "class GatedResidual(nn.Module):\n    def __init__(self, F):\n"
                           "        super().__init__()\n"
                           "        self.u = ResidualUnit(F, Shortcut(), gated=True)\n"
                           "        self.k = self.u.k\n"
                           "    def forward(self, x):\n        return self.u(x)\n",
    "def truncation_rate": "def truncation_rate(unit, x):\n"
                           "    return float(probes.truncation_rates(torch.nn.Sequential(unit), x)[0])\n",
}


class _Marker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return editions.assign(tmp_path_factory.mktemp("dist"), ["exercises"],
                           run_tests=False)["exercises"]


def _edition(made):
    return json.loads(Path(made["student"]).read_text())


def _cell(source):
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": source}


def _export(nb, name, where, extra=None):
    """The submission as the edition's export cell makes it (student._zip), renamed for the
    student."""
    where.mkdir(exist_ok=True)
    path = student._zip("exercises", nb, None, where)
    if extra:
        with zipfile.ZipFile(path, "a") as z:
            for arc, data in extra.items():
                z.writestr(arc, data)
    return Path(shutil.move(path, where / f"{name}.zip"))


def _students(made, tmp_path):
    nb = _edition(made)
    # after the starters (which would redefine the names), before the export cell
    at = max(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code") - 1
    subs = tmp_path / "subs"
    for name, code in BLANK_BUT.items():
        _export({**nb, "cells": nb["cells"][:at + 1] + [_cell(code)] + nb["cells"][at + 1:]},
                name, subs)
    solved = editions.solved_notebook(BOOK / "06_exercises.ipynb", tmp_path / "solved.ipynb")
    honest = {**nb, "cells": json.loads(solved.read_text())["cells"]}
    _export(honest, "honest", subs)
    delegate = json.loads(json.dumps(honest))
    for c in delegate["cells"]:
        for start, code in DELEGATE.items():
            if "".join(c["source"]).startswith(start):
                c["source"] = code
    _export(delegate, "delegate", subs)
    marker = tmp_path / "pickle-ran"
    _export(nb, "pickler", subs, {".OTTER_LOG": pickle.dumps(_Marker(str(marker)))})
    return subs, marker


def _leaks(text):
    """What of the grader's machine or the solutions appears in `text`."""
    found = [s for s in (str(ROOT), socket.gethostname(), "root:x:0", "math.prod(lams)",
                         "/etc/", "BEGIN SOLUTION") if s in text]
    return found


def test_every_cheat_of_the_table_scores_0_in_one_batch_and_on_gradescope(made, tmp_path):
    subs, marker = _students(made, tmp_path)
    rows = {r["student"]: r for r in batch.grade_folder(subs, made["autograder"],
                                                        tmp_path / "grades.csv", progress=None)}
    possible = len(batch.plan("exercises")["questions"])
    assert rows["honest"]["total"] == possible and rows["honest"]["reason"] == "", rows["honest"]
    for who in (*BLANK_BUT, "delegate", "pickler"):
        assert rows[who]["total"] == 0, rows[who]
    assert "answers use idmap_lib" in rows["delegate"]["flag"], rows["delegate"]
    assert all("the library's, not yours" in rows["delegate"][f"{q}: feedback"]
               for q in batch.plan("exercises")["questions"]), rows["delegate"]
    assert not marker.exists()
    csv_text = (tmp_path / "grades.csv").read_text()
    assert not _leaks(csv_text), _leaks(csv_text)
    with open(tmp_path / "grades.csv") as f:
        assert {r["student"] for r in csv.DictReader(f)} == set(rows)

    # Gradescope's path: the zip's run_otter.py, laid out as Gradescope lays it out
    for who in ("honest", "delegate", "namer", "observer_patch", "pickler"):
        base = tmp_path / "gs" / who
        with zipfile.ZipFile(made["autograder"]) as z:
            z.extractall(base / "source")
        (base / "submission").mkdir(parents=True)
        shutil.copy(subs / f"{who}.zip", base / "submission" / f"{who}.zip")
        done = subprocess.run([sys.executable, str(base / "source" / "run_otter.py")],
                              capture_output=True, text=True, timeout=900,
                              env={**os.environ, "IDMAP_AUTOGRADER_DIR": str(base)})
        out = json.loads((base / "results" / "results.json").read_text())
        assert out["score"] == (possible if who == "honest" else 0), (who, out)
        assert not _leaks(json.dumps(out)), (who, _leaks(json.dumps(out)), done.stderr[-500:])
    assert not marker.exists()


def test_otter_run_refuses_the_zip_before_reading_the_submission(made, tmp_path):
    subs, marker = _students(made, tmp_path)
    done = subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(made["autograder"]),
                           "-o", str(tmp_path), str(subs / "pickler.zip")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "not-otter-run" in done.stdout + done.stderr
    assert not marker.exists() and not (tmp_path / "results.json").exists()


def test_the_sandbox_holds_no_reference_and_the_seed_comes_after_the_code(tmp_path):
    """An answer that reaches the library in a way the source reading misses cannot import it in
    the sandbox; the seed is not in the sandbox while the code loads."""
    from idmap_class import collect
    nb = {"cells": [_cell("import os\nSEEN = sorted(os.listdir('.'))\n"
                          "def direct_term(lams):\n"
                          "    m = [__builtins__['__import__'] if isinstance(__builtins__, dict) "
                          "else __builtins__.__import__][0]('idmap' + '_lib')\n"
                          "    return 1.0\n"
                          "def vanishing_depth(lam, eps):\n    return len(SEEN)\n")],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    scratch = tmp_path / "s"
    scratch.mkdir()
    (scratch / "n.ipynb").write_text(json.dumps(nb))
    calls = [c for c in batch.plan("exercises")["calls"] if c["question"] == "ex_direct"]
    outcome, values, problem = collect.observed(scratch / "n.ipynb", scratch, calls, 12345,
                                                isolate=sandbox.available() is None)
    assert problem == "", outcome.output
    direct, depth = (v["observation"] for v in values["calls"])
    assert direct["end"] == "raised" and direct["raised"]["type"] == "ModuleNotFoundError"
    assert depth["facts"][0]["value"]["float"] == 1.0  # the notebook alone in its folder
