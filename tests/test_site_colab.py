"""The Colab path, tested here: a chapter's setup cell in a clean virtual environment, against a
clone of this repository given by URL (file://), then the whole chapter, top to bottom.

The environment is clean of idmap_lib: it is a new venv that sees the shared environment's
third-party packages (torch, sympy, plotly, ...; Colab has its own) but not idmap_lib, PYTHONPATH is
unset, and the chapter runs in an empty directory with no data/results. So `import idmap_lib` in the
setup cell fails, the cell clones the repository (its last commit: commit before running this test)
and must import the library from the clone, where the recorded runs are. pip runs offline
(--no-index): every dependency must already be there, as on Colab. The datasets come from IDMAP_DATA
(the offline copies), as a reader's torchvision download would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import idmap_book as book
from idmap_book.page import repository

pytestmark = pytest.mark.slow  # minutes: `pytest -m 'not slow'` leaves it out of the quick loop

ROOT = Path(__file__).resolve().parents[1]
# a chapter that trains nothing
CHAPTER = os.environ.get("IDMAP_COLAB_CHAPTER", "01_residual_units")
# Chapters owned by other branches while this check was introduced: `python -m idmap_book
# set-url` rewrites their setup cells too once they are merged.
PENDING_SETUP_CELL = set()


def test_setup_cells_readme_and_intro_follow_the_url_setting():
    problems = [p for p in repository.check() if not any(name in p for name in PENDING_SETUP_CELL)]
    assert not problems, "\n".join(problems)
    assert repository.chapter_notebooks(), "no chapter notebook with a setup cell"
    code = [ln for ln in repository.setup_cell(repository.repository_url()).splitlines()
            if not ln.startswith("#")]
    # the two settings, the clone where missing, the path, start(): the rest is start's
    assert len(code) <= 7, code


def test_every_cell_of_every_notebook_has_an_id():
    """nbformat 4.5 gives each cell an id; a cell without one is repaired with a
    MissingIDFieldWarning on every read (in Jupyter, on Colab, in the book's build), "a hard error
    in future nbformat versions"."""
    import warnings

    import nbformat

    for nb_path in sorted((ROOT / "book").rglob("*.ipynb")):
        cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
        ids = [c.get("id") for c in cells]
        assert (None not in ids
                and len(set(ids)) == len(ids)), f"{nb_path.relative_to(ROOT)}: cells without an id"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            nbformat.validate(nbformat.read(nb_path, as_version=4))


def test_set_url_writes_one_setting_everywhere(tmp_path):
    for rel in [repository.CONFIG, *repository.DOCS,
                *[p.relative_to(ROOT) for p in repository.chapter_notebooks()]]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    # a setup cell without its tag (the site folds the cell)
    nb_path = tmp_path / "book" / f"{CHAPTER}.ipynb"
    nb = json.loads(nb_path.read_text())
    next(c for c in nb["cells"] if c["cell_type"] == "code")["metadata"] = {}
    nb_path.write_text(json.dumps(nb))
    assert any("not tagged" in p for p in repository.check(tmp_path))
    url = "https://github.com/someone/idmap-fork"
    changed = repository.set_url(url, root=tmp_path)
    assert repository.repository_url(tmp_path) == url
    assert repository.check(tmp_path, expect=url) == []
    assert {p.name for p in changed} >= {"_config.yml", "README.md", "intro.md", f"{CHAPTER}.ipynb"}
    # CI's guard sees a mismatch
    assert repository.check(tmp_path, expect=repository.repository_url(ROOT)) != []


def _overlay(tmp: Path, exclude=()) -> Path:
    """The shared environment's site-packages without idmap_lib and the ``exclude``d packages
    (symlinks; .pth files are not needed)."""
    site = Path(sysconfig.get_paths()["purelib"])
    overlay = tmp / "site-overlay"
    overlay.mkdir()
    for entry in site.iterdir():
        low = entry.name.lower()
        if ("idmap" in low or low.endswith(".pth") or low.startswith("__editable__")
                or any(low == e or low.startswith(f"{e}-") for e in exclude)):
            continue
        (overlay / entry.name).symlink_to(entry)
    return overlay


def _clean_venv(tmp: Path, exclude=()) -> Path:
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "shared-packages.pth").write_text(str(_overlay(tmp, exclude)) + "\n")
    return python


COLAB_LIKE = ["ipywidgets==7.7.1", "widgetsnbextension==3.6.10", "jupyterlab_widgets==1.1.11",
              # Colab ships ipywidgets 7.x: the setup cell must leave it so
              "ipython_genutils==0.2.0"]
# a requirement this environment lacks: the cell installs it alone
MISSING = "tqdm"
REPORT = ("import importlib.metadata as md, json, os, subprocess, sys, idmap_lib\n"
          "print(json.dumps({'library': idmap_lib.__file__, 'results': "
          "len(idmap_lib.load_results()),\n  'versions': {n: md.version(n) for n in ['ipywidgets', "
          "'torch', 'numpy', 'plotly', 'tqdm']},\n  'paths': "
          "sys.path.count(os.path.abspath('idmap')), 'PYTHONPATH': os.environ.get('PYTHONPATH'),\n "
          " 'changed': subprocess.run(['git', '-C', 'idmap', 'status', '--porcelain', "
          "'--untracked-files=all',\n                             'data/results', "
          "'data/checkpoints'],\n                            capture_output=True, text=True, "
          "check=True).stdout}))")


# Paper B's MNIST recipe made tiny, for a test that trains
TINY = ("from idmap_lib.engine import recipes\n"
        "real = recipes.config\n"
        "def config(experiment, variant, scale='cpu', seed=0):\n"
        "    cfg = real(experiment, variant, scale, seed)\n"
        "    if (experiment, variant, scale) == ('b_mnist', 'gresnet-d10', 'full'):\n"
        "        cfg['model']['kwargs']['d'] = 4\n"
        "        cfg.update(steps=18, log_every=3, eval_every=9, subset={'train_per_class': 60, "
        "'test_per_class': 20})\n    return cfg\n"
        "recipes.config = config")
TRY = ("import glob, json, torch\n"
       "from idmap_book import live, variants\n"
       "first = not glob.glob('idmap_runs/checkpoints/*.pt')\n"
       "before = None if first else torch.load(glob.glob('idmap_runs/checkpoints/*.pt')[0], "
       "weights_only=True)['step']\nout = live.train_live('b_mnist', 'gresnet-d10', scale='full', "
       "run=True, max_steps=9 if first else None)\ntable = variants.variant_table('b_mnist', "
       "['gresnet-d10'], 'full')\nprint(json.dumps({'points': out['figure'].points, 'result': "
       "(out['result'] or {}).get('status'),\n  'checkpoints': "
       "len(glob.glob('idmap_runs/checkpoints/*.pt')), 'resumed_from': before,\n  'yours': "
       "str(table.iloc[0].get('yours: test error % (seed)'))}))")


def _colab_like_packages(python: Path, tmp: Path) -> Path:
    """Install Colab's ipywidgets 7.x into the clean venv (ahead of the shared 8.x) and download the
    missing requirement's wheel into a local index (pip runs offline in the kernel). Needs the
    package registry."""
    wheels = tmp / "wheels"
    purelib = subprocess.run([python, "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    for cmd in (["install", "-q", "--no-deps", "--target", purelib, *COLAB_LIKE],
                ["download", "-q", "--no-deps", "-d", str(wheels), MISSING]):
        got = subprocess.run([sys.executable, "-m", "pip", *cmd, "--disable-pip-version-check"],
                             capture_output=True, text=True)
        if got.returncode:
            pytest.skip(f"no package registry to fetch Colab's packages from: {got.stderr[-300:]}")
    return wheels


def _kernel_env(tmp_path: Path, python: Path, wheels: Path) -> dict:
    """The environment a notebook runs in on the clean venv: no PYTHONPATH, no book build, no runs
    folder of the shell's, pip offline from `wheels`; the venv registered as the kernel
    "colab-like"."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", book.BUILD_ENV,
                                                            "VIRTUAL_ENV", "IDMAP_RUNS")}
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
               PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1",
               IDMAP_DATA=os.environ.get("IDMAP_DATA", str(ROOT.parent / "shared" / "data")))
    kernels = tmp_path / "jupyter" / "kernels" / "colab-like"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "clean venv", "language": "python"}))
    return env


def _execute(nb, env: dict, cwd: Path):
    from nbclient import NotebookClient

    old_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(nb, kernel_name="colab-like", timeout=900,
                       resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old_env)
    return _last_json(nb.cells[-1])


PLOTLY = "application/vnd.plotly.v1+json"


def _plotly_outputs(cell) -> list:
    """The plotly figures among a cell's outputs (as nbclient leaves them: a display updated in
    place stays one)."""
    return [o["data"][PLOTLY] for o in cell.outputs if PLOTLY in o.get("data", {})]


def _last_json(cell):
    """The JSON line a cell printed last (its stdout; progress bars go to stderr). A line another
    thread prints into the same stream (a blank line after it, once in CI) is passed over."""
    lines = [line for o in cell.outputs if o.get("name") == "stdout"
             for line in o["text"].splitlines()]
    last = next((line for line in reversed(lines) if line.startswith("{")), None)
    assert last is not None, f"the cell printed no JSON line: {cell.outputs}"
    return json.loads(last)


def test_a_chapter_runs_from_a_clone_in_a_clean_environment_and_after_a_restart(tmp_path):
    """Colab as a student meets it: ipywidgets 7.x preinstalled, one requirement missing, no
    idmap_lib. The chapter runs top to bottom from the clone; then a new kernel (a restart, or a
    second chapter in the same runtime) runs the setup cell again and finds the same clone and the
    same recorded runs; no package that was there was upgraded, and the missing one was
    installed."""
    import nbformat

    python = _clean_venv(tmp_path, exclude=(MISSING,))
    wheels = _colab_like_packages(python, tmp_path)
    env = _kernel_env(tmp_path, python, wheels)
    check = subprocess.run([python, "-c", "import torch, sympy, plotly, ipykernel, ipywidgets\n"
                            "print(ipywidgets.__version__)\n"
                            f"for name in ('idmap_lib', {MISSING!r}):\n"
                            " try:\n  __import__(name); print(name)\n except ImportError: pass"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.stdout.split() == ["7.7.1"], check.stdout + check.stderr   # Colab-like, and clean

    nb = nbformat.read(ROOT / "book" / f"{CHAPTER}.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    # the cell readers get ...
    assert setup.source == repository.setup_cell(repository.repository_url())
    # ... with a local clone's URL
    setup.source = repository.setup_cell(ROOT.as_uri())
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))

    work = tmp_path / "content"                                          # Colab's /content: empty
    work.mkdir()
    first = _execute(nb, env, work)
    clone = work / "idmap"
    assert (Path(first["library"]).is_relative_to(clone)), (f"idmap_lib imported from "
                                                            f"{first['library']}")
    assert first["results"] > 0, "the chapter does not find the recorded runs of the clone"
    assert (first["changed"] == ""), (f"the chapter trained or wrote runs it did not "
                                      f"announce:\n{first['changed']}")
    assert not (work / "data").exists(), "the chapter wrote data/ into the working directory"
    assert first["versions"]["ipywidgets"] == "7.7.1", "the setup cell upgraded Colab's ipywidgets"

    # !python too
    assert first["paths"] == 1 and first["PYTHONPATH"].split(os.pathsep)[0] == str(clone), first

    again = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                            for c in (setup.source, setup.source, REPORT)])
    # a fresh kernel: the restart, run twice
    second = _execute(again, env, work)
    assert (second == first), ("after a restart the setup cell found another library or other "
                               "recorded runs")
    assert "Cloning" not in str(again.cells[:2]), "the clone was made again"

    # train it yourself in that runtime: a short try, a disconnect (a new kernel), the same cell
    # again
    yours = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                            for c in (setup.source, TINY, TRY, TRY)])
    _execute(yours, env, work)
    tried, finished = (_last_json(c) for c in yours.cells[2:])
    figures = [_plotly_outputs(c) for c in yours.cells[2:]]
    sizes = [[len(json.dumps(f)) for f in cell] for cell in figures]
    assert [len(f) for f in figures] == [1,
                                         1], (f"plotly outputs of the training cells (bytes each): "
                                              f"{sizes}")
    yours_x = [t["x"] for t in figures[1][0]["data"] if t.get("name", "").startswith("yours")][0]
    # every step trained, the resumed part too
    assert list(yours_x) == list(range(3, 19, 3)), yours_x
    assert tried["points"] > 0 and tried["result"] is None and tried["checkpoints"] == 1, tried
    # resumed, then to the end
    assert finished["resumed_from"] == 9 and finished["result"] == "ok", finished
    # in the chapter's table
    assert finished["yours"].endswith("(seed 100)"), finished
    assert (work / "idmap_runs" / "results").is_dir(), "your runs did not go to your runs folder"


OTTER_AND_MISSING = ("otter-grader==7.0.0", "fica", "ipylab", "python-frontmatter", "jupytext",
                     "python-on-whales")
NOT_ON_COLAB = ("otter", "otter_grader", "fica", "ipylab", "frontmatter", "python_frontmatter",
                "jupytext",
                # what Colab lacks of the grader's client: the student edition installs it
                "python_on_whales")
# Colab's modules as the student edition uses them (the notebook as
FAKE_COLAB = ("import json, sys, types\n"
              "nb = json.load(open('exercises.ipynb'))\n"  # the browser holds it; downloads noted)
              "colab = types.ModuleType('google.colab'); google = types.ModuleType('google'); "
              "google.colab = colab\ncolab._message = "
              "types.SimpleNamespace(blocking_request=lambda what, timeout_sec=0: {'ipynb': "
              "nb})\ncolab.files = types.SimpleNamespace(download=lambda p: open('downloaded.txt', "
              "'a').write(p))\nsys.modules.update({'google': google, 'google.colab': colab, "
              "'google.colab._message': colab._message,\n                    'google.colab.files': "
              "colab.files})")
VERSIONS = ("import importlib.metadata as md, json\n"
            "print(json.dumps({n: md.version(n) for n in ['ipywidgets', 'otter-grader', 'ipython', "
            "'pandas']}))")


def test_the_student_edition_runs_on_colab_as_handed_out(tmp_path):
    """The exercises' student edition (the one the page's Colab button opens), opened in a
    Colab-like runtime with neither idmap_lib nor otter-grader: "Run all" clones the book, installs
    the pinned otter without upgrading anything (ipywidgets stays 7.7.1), every check runs (a blank
    student: each says what is missing), and the last cell makes and downloads a submission zip that
    the batch grader grades."""
    import nbformat

    from idmap_class import batch, editions, student

    python = _clean_venv(tmp_path, exclude=(MISSING, *NOT_ON_COLAB))
    wheels = _colab_like_packages(python, tmp_path)
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                          str(wheels),
                          *OTTER_AND_MISSING, "--disable-pip-version-check"], capture_output=True,
                          text=True)
    if got.returncode:
        pytest.skip(f"no package registry to fetch otter-grader from: {got.stderr[-300:]}")
    env = _kernel_env(tmp_path, python, wheels)
    bare = subprocess.run([python, "-c", "import otter"], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert bare.returncode != 0, "otter-grader is importable before the notebook installs it"
    published = student.PUBLISHED / "exercises" / "exercises.ipynb"
    # Colab's /content: no tests/ folder
    work = tmp_path / "content"
    work.mkdir()
    (work / "exercises.ipynb").write_text(published.read_text())         # what get_ipynb hands over
    nb = nbformat.read(published, as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    setup.source = repository.setup_cell(ROOT.as_uri())                  # a local clone's URL
    nb.cells.insert(0, nbformat.v4.new_code_cell(FAKE_COLAB))
    nb.cells.append(nbformat.v4.new_code_cell(VERSIONS))
    versions = _execute(nb, env, work)
    assert versions["ipywidgets"] == "7.7.1" and versions["otter-grader"] == "7.0.0", versions
    checks = [c for c in nb.cells if "grader.check(" in c.source]
    assert (checks and all("NOT ATTEMPTED" in str(c.outputs) or "failed" in str(c.outputs).lower()
                           for c in checks))
    zipped = Path((work / "downloaded.txt").read_text())
    subs = tmp_path / "subs"
    subs.mkdir()
    subs.joinpath("blank.zip").write_bytes(zipped.read_bytes())
    made = editions.assign(tmp_path / "dist", ["exercises"], run_tests=False)["exercises"]
    row = batch.grade_folder(subs, made["autograder"], tmp_path / "grades.csv")[0]
    assert row["reason"] == "" and row["total"] == 0 and row["possible"] > 0, row
