"""The Colab path, tested here: a chapter's setup cell in a clean virtual environment, against a clone
of this repository given by URL (file://), then the whole chapter, top to bottom.

The environment is clean of idmap_lib: it is a new venv that sees the shared environment's third-party
packages (torch, sympy, plotly, ...; Colab has its own) but not idmap_lib, PYTHONPATH is unset, and the
chapter runs in an empty directory with no data/results. So `import idmap_lib` in the setup cell fails,
the cell clones the repository (its last commit: commit before running this test) and must import the
library from the clone, where the recorded runs are. pip runs offline (--no-index): every dependency
must already be there, as on Colab. The datasets come from IDMAP_DATA (the offline copies), as a
reader's torchvision download would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from idmap_lib import book
from idmap_lib.book import repository

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = os.environ.get("IDMAP_COLAB_CHAPTER", "01_residual_units")  # a chapter that trains nothing
# Chapters owned by other branches while this check was introduced: `python -m idmap_lib.book set-url`
# rewrites their setup cells too once they are merged.
PENDING_SETUP_CELL = set()


def test_setup_cells_readme_and_intro_follow_the_url_setting():
    problems = [p for p in repository.check() if not any(name in p for name in PENDING_SETUP_CELL)]
    assert not problems, "\n".join(problems)
    assert repository.chapter_notebooks(), "no chapter notebook with a setup cell"


def test_set_url_writes_one_setting_everywhere(tmp_path):
    for rel in [repository.CONFIG, *repository.DOCS, *[p.relative_to(ROOT) for p in repository.chapter_notebooks()]]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    url = "https://github.com/someone/idmap-fork"
    changed = repository.set_url(url, root=tmp_path)
    assert repository.repository_url(tmp_path) == url
    assert repository.check(tmp_path, expect=url) == []
    assert {p.name for p in changed} >= {"_config.yml", "README.md", "intro.md", f"{CHAPTER}.ipynb"}
    assert repository.check(tmp_path, expect=repository.repository_url(ROOT)) != []   # CI's guard sees a mismatch


def _overlay(tmp: Path) -> Path:
    """The shared environment's site-packages without idmap_lib (symlinks; .pth files are not needed)."""
    site = Path(sysconfig.get_paths()["purelib"])
    overlay = tmp / "site-overlay"
    overlay.mkdir()
    for entry in site.iterdir():
        low = entry.name.lower()
        if "idmap" in low or low.endswith(".pth") or low.startswith("__editable__"):
            continue
        (overlay / entry.name).symlink_to(entry)
    return overlay


def _clean_venv(tmp: Path) -> Path:
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "shared-packages.pth").write_text(str(_overlay(tmp)) + "\n")
    return python


def test_a_chapter_runs_from_a_clone_in_a_clean_environment(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    python = _clean_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", book.BUILD_ENV, "VIRTUAL_ENV")}
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               PIP_DISABLE_PIP_VERSION_CHECK="1",
               IDMAP_DATA=os.environ.get("IDMAP_DATA", str(ROOT.parent / "shared" / "data")))
    check = subprocess.run([python, "-c", "import torch, sympy, plotly, ipykernel\n"
                            "try:\n import idmap_lib\nexcept ImportError: print('clean')"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.stdout.strip() == "clean", check.stdout + check.stderr

    kernels = tmp_path / "jupyter" / "kernels" / "colab-like"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "clean venv", "language": "python"}))

    nb_path = ROOT / "book" / f"{CHAPTER}.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert setup.source == repository.setup_cell(repository.repository_url())  # the cell readers get ...
    setup.source = repository.setup_cell(ROOT.as_uri())                         # ... with a local clone's URL
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json, subprocess\n"
        "print(json.dumps({'library': idmap_lib.__file__, 'results': len(idmap_lib.load_results()),\n"
        "  'changed': subprocess.run(['git', '-C', clone, 'status', '--porcelain', '--untracked-files=all',\n"
        "                             'data/results', 'data/checkpoints'],\n"
        "                            capture_output=True, text=True, check=True).stdout}))"))

    work = tmp_path / "content"                                          # Colab's /content: empty
    work.mkdir()
    old_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        client = NotebookClient(nb, kernel_name="colab-like", timeout=900,
                                resources={"metadata": {"path": str(work)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old_env)

    report = json.loads(nb.cells[-1].outputs[-1]["text"])
    clone = work / "idmap"
    assert Path(report["library"]).is_relative_to(clone), f"idmap_lib imported from {report['library']}"
    assert report["results"] > 0, "the chapter does not find the recorded runs of the clone"
    assert report["changed"] == "", f"the chapter trained or wrote runs it did not announce:\n{report['changed']}"
    assert not (work / "data").exists(), "the chapter wrote data/ into the working directory"
