"""What the student edition of an exercise chapter runs on the student's side: its grader and its
submission.

The same notebook runs in Jupyter and on Colab, where Otter-Grader's client has three limits (otter
7): it is not installed, it cannot read tests stored in the notebook, and it cannot export. So

- :func:`ensure_otter` installs the pinned otter-grader where it is missing, without its
  dependencies, then only those of its requirements that are not installed at all, also without
  theirs: nothing the runtime ships is upgraded (Colab's ipywidgets 7.x stays; otter's checks run
  with it);
- :func:`student_grader` makes the ``grader`` with the question tests as files: the ``tests/``
  folder next to the notebook (the student folder ``otter assign`` writes), else the published
  student edition's in the library's checkout (``book/student/<name>/tests``, in the clone the setup
  cell makes on Colab);
- :func:`submit` makes the submission zip: Otter's export in Jupyter; on Colab the same zip made
  here (the notebook as the browser holds it, with its runs folder as ``idmap_runs/``), then
  downloaded.

A submission always carries the notebook; a chapter that trains adds its runs folder, and says when
it holds no run (the grader marks the runs missing; it never trains them).
"""
from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from idmap_book import default_runs_dir

# the autograder's otter too: requirements-grading.txt (a test holds them equal)
OTTER = "otter-grader==7.0.0"
ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "book" / "student"  # the committed student editions (editions.publish)
RUNS = "idmap_runs"  # the runs folder's name in a submission (the grader reads it there)


def on_colab() -> bool:
    return "google.colab" in sys.modules


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _missing(dists) -> list[str]:
    """The requirements of the installed distributions `dists` (not their extras) that are not
    installed at all."""
    from packaging.requirements import Requirement

    out = []
    for dist in dists:
        for r in map(Requirement, importlib.metadata.requires(dist) or []):
            if (
                (r.marker is None or r.marker.evaluate({"extra": ""}))
                and not _installed(r.name)
                and r.name not in out
            ):
                out.append(r.name)
    return out


def ensure_otter(pin: str = OTTER) -> list[str]:
    """Install `pin` where otter cannot be imported (see the module's docstring); the distributions
    installed.

    Each round installs, without dependencies, the requirements of the last round's distributions
    that are not installed at all, until none is missing: no requirement is left unmet (``pip
    check``) but for a version the runtime ships that otter would have upgraded, which is kept
    (otter's checks run with Colab's own)."""
    if importlib.util.find_spec("otter") is not None:
        return []

    def pip(*names):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *names],
                       check=True)
        importlib.invalidate_caches()

    from packaging.requirements import Requirement

    pip(pin)
    installed, new = [pin], [Requirement(pin).name]
    for _ in range(20):  # (a requirement graph is a few levels deep)
        new = [n for n in _missing(new) if n not in installed]
        if not new:
            break
        pip(*new)
        installed += new
    both = ' and '.join([installed[0], ', '.join(installed[1:])]) if installed[1:] else pin
    print(f"installed {both} (nothing already here changed)")
    return installed


def tests_dir(name: str) -> Path:
    """The question tests of chapter `name`: ./tests where the student folder has them, else the
    published ones."""
    here = Path("tests")
    return here if any(here.glob("*.py")) else PUBLISHED / name / "tests"


def student_grader(name: str):
    """The student edition's ``grader`` (an ``otter.Notebook``), in Jupyter and on Colab alike."""
    ensure_otter()
    import otter

    tests = tests_dir(name)
    if not tests.is_dir():
        raise FileNotFoundError(f"no tests for {name!r} in ./tests or {tests}: run the setup cell "
                                f"first (it makes the clone that holds them), or hand out the "
                                f"student folder with its tests/")
    # on Colab the notebook is not a file here: no path (otter would read it)
    return otter.Notebook(None if on_colab() else f"{name}.ipynb", tests_dir=str(tests))


def runs_folder(note: bool = True) -> Path:
    """The runs folder the exercises recorded into (made if missing); with `note`, a NO_RUNS.txt
    where it holds no run, so that the submission says so."""
    out = default_runs_dir()
    out.mkdir(parents=True, exist_ok=True)
    recorded = sorted(out.glob("*.json"))
    if note and not recorded:
        (out / "NO_RUNS.txt").write_text("No run was recorded before the export.\n")
    print(f"{out}: {len(recorded)} recorded runs go with the notebook")
    return out


def _colab_notebook() -> dict:
    """The notebook as Colab's browser holds it (with its outputs): Colab's own request, as its File
    menu uses."""
    from google.colab import _message

    got = _message.blocking_request("get_ipynb", timeout_sec=60)
    if not got or "ipynb" not in got:
        raise RuntimeError("Colab did not hand over the notebook: save it (Ctrl+S) and run this "
                           "cell again, or use File > Download > .ipynb and hand it in with a zip "
                           "of your runs folder")
    return got["ipynb"]


def handed_in(runs: Path) -> list[Path]:
    """The files of the runs folder a submission carries: the results carry what is graded; the
    checkpoints (network weights, megabytes a run) stay behind, on every path."""
    return [f for f in sorted(runs.rglob("*")) if f.is_file()
            and f.relative_to(runs).parts[0] != "checkpoints"]


def _zip(name: str, nb: dict, runs: Path | None, where: Path) -> Path:
    stamp = datetime.datetime.now().strftime("%Y_%m_%dT%H_%M_%S")
    path = where / f"{name}_{stamp}.zip"
    # Otter checks it
    nb.setdefault("metadata", {}).setdefault("otter", {})["assignment_name"] = name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}.ipynb", json.dumps(nb, indent=1))
        for f in handed_in(runs) if runs else []:
            z.write(f, f"{RUNS}/{f.relative_to(runs).as_posix()}")
    return path


def submit(grader, name: str, runs: bool) -> Path | None:
    """The submission of chapter `name` (see the module's docstring): Otter's export where it can
    (Jupyter, the runs in ./idmap_runs); else the zip made here (on Colab also downloaded), whose
    path it returns."""
    folder = runs_folder() if runs else None
    if not on_colab() and (folder is None or folder.resolve() == Path(RUNS).resolve()):
        files = ([os.path.join(RUNS, f.relative_to(folder)) for f in handed_in(folder)] if runs
                 else [])
        return grader.export(pdf=False, run_tests=False, files=files)
    if on_colab():
        nb = _colab_notebook()
    # runs recorded elsewhere (IDMAP_RUNS): the notebook as saved, the runs put where the grader
    # reads them
    else:
        nb = json.loads(Path(f"{name}.ipynb").read_text())
    path = _zip(name, nb, folder, Path(os.getcwd()))
    if on_colab():
        from google.colab import files

        files.download(str(path))
    print(f"{path.name}: your notebook{' and runs' if runs else ''}; hand in this zip")
    return path
