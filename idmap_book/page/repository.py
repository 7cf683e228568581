"""The repository and every chapter's setup cell.

The repository URL is one setting, ``repository.url`` in ``_config.yml``. Jupyter Book's launch
buttons (Colab) read it; ``python -m idmap_book set-url URL`` writes it there and into every
chapter's setup cell (:func:`setup_cell`), the README and the intro; ``python -m idmap_book
check`` says whether they all agree (the tests and the publishing workflow run it). The setup cell
clones the repository where the library is missing and calls :func:`start`, which does the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from .setup import setup

ROOT = Path(__file__).resolve().parents[2]   # the repository checkout (for set-url / check)
CONFIG = "_config.yml"
DOCS = ("README.md", "book/intro.md")        # pages that quote the repository URL
# the site shows nothing of the setup cell (a page opens on its answer); Jupyter and Colab show it
SETUP_TAG = "remove-input"
SETUP_FIRST_LINE = "# Setup."


def requirements(root: Path = ROOT) -> list:
    """The library's requirements by name (``dependencies`` in pyproject.toml, without their
    versions): what ``start`` checks it can import, and installs when it cannot. [] for a
    pip-installed copy (no pyproject.toml beside it: pip installed its requirements with it)."""
    import re
    import tomllib

    pyproject = Path(root) / "pyproject.toml"
    if not pyproject.is_file():
        return []
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in deps]


CLONE = "idmap"  # where the setup cell clones the repository, next to the notebook


def setup_cell(url: str) -> str:
    """The first code cell of every chapter, for the repository at ``url``: the two settings, the
    clone where the library is missing, and :func:`start`.

    Where ``idmap_lib`` cannot be imported and there is no clone yet (Colab, a downloaded notebook),
    it clones the repository into ./idmap, once. Wherever that clone exists (a restart, a second
    chapter in the same runtime, a re-run) it puts the clone first on ``sys.path`` before anything
    imports ``idmap_lib``, so that the library comes from the clone and finds the clone's recorded
    runs (data/results), even where an older copy was pip-installed. Those lines stay in the cell
    because they run before the library can be imported; the rest is :func:`start`'s.
    """
    return f"""{SETUP_FIRST_LINE} Where idmap_lib is missing (on Colab, say), this clones the book's
# repository once, into ./{CLONE}, and imports the library from the clone, which also holds the
# recorded runs (data/results). Run again (after a restart, in another chapter) it uses the same
# clone. It installs only what cannot be imported: no upgrades.
REPOSITORY = {json.dumps(url)}  # the one URL setting: _config.yml
# True: mount Google Drive (Colab) and record your runs there, where they outlive the runtime
DRIVE = False
import importlib.util, os, subprocess, sys
# nowhere here: clone it
if not os.path.isdir("{CLONE}") and importlib.util.find_spec("idmap_book") is None:
    subprocess.run(["git", "clone", "--depth", "1", REPOSITORY, "{CLONE}"], check=True)
sys.path.insert(0, os.path.abspath("{CLONE}"))  # the clone's library first, before any other copy
device = importlib.import_module("idmap_book.page.repository").start(drive=DRIVE)"""


def start(drive: bool = False):
    """What the setup cell does once the library is importable; returns the device (``book.setup``).

    - ``sys.path`` holds the clone once (the cell puts it first again at every run), and ``!python``
      in the notebook imports the same library: the clone goes on ``PYTHONPATH`` where the cell put
      it on ``sys.path``;
    - only the requirements that cannot be imported are installed, with every package already there
      held at its version (a pip constraint file): Colab's own packages (torch, numpy, ipywidgets
      7.x, ...) are never upgraded;
    - ``book.setup(drive=drive)``: the device, Google Drive for your runs when asked, where
      everything is.
    """
    import importlib.util
    import os
    import sys

    sys.path[:] = list(dict.fromkeys(sys.path))
    if str(ROOT) in sys.path:  # the library is the cell's clone (not an installed copy)
        paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    missing = [name for name in requirements() if importlib.util.find_spec(name) is None]
    if missing:
        install(missing)
    return setup(drive=drive)


def install(names) -> None:
    """pip-install ``names`` only, every package already here held at the version an import finds (a
    pip constraint file): none is upgraded or replaced."""
    import importlib.metadata
    import subprocess
    import sys
    import tempfile

    here = {}
    # in sys.path order: the version an import finds comes first
    for dist in importlib.metadata.distributions():
        here.setdefault((dist.metadata["Name"] or "").lower(), dist.version)
    pins = Path(tempfile.gettempdir()) / "idmap-installed.txt"
    pins.write_text("\n".join(f"{name}=={version}" for name, version in here.items() if name))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *names, "-c", str(pins)],
                   check=True)


def repository_url(root: Path = ROOT) -> str:
    """``repository.url`` from ``_config.yml``: the repository the site, Colab and the README point
    to."""
    import yaml

    return yaml.safe_load((Path(root) / CONFIG).read_text(encoding="utf-8"))["repository"]["url"]


def site_url(root: Path = ROOT) -> str:
    """The published site's address: GitHub Pages of the repository (docs/publishing.md), ending
    in '/'."""
    owner, repo = repository_url(root).rstrip("/").split("/")[-2:]
    return f"https://{owner.lower()}.github.io/{repo}/"


def chapter_notebooks(root: Path = ROOT) -> list:
    """Every chapter notebook under book/ whose first code cell is the setup cell."""
    out = []
    for nb_path in sorted((Path(root) / "book").glob("*.ipynb")):
        code = [c for c in json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
                if c["cell_type"] == "code"]
        if code and "".join(code[0]["source"]).startswith("# Setup"):
            out.append(nb_path)
    return out


def first_code_cell(nb_path) -> str:
    return "".join(_first_code(nb_path)["source"])



def _first_code(nb_path) -> dict:
    nb = json.loads(Path(nb_path).read_text(encoding="utf-8"))
    return next(c for c in nb["cells"] if c["cell_type"] == "code")


def check(root: Path = ROOT, expect: str | None = None) -> list:
    """Where the repository URL setting is not followed: [] when the setup cells, README and intro
    agree."""
    url = repository_url(root)
    problems = ([] if expect in (None, url)
                else [f"{CONFIG}: repository.url is {url}, expected {expect}"])
    for nb_path in chapter_notebooks(root):
        if first_code_cell(nb_path) != setup_cell(url):
            problems.append(f"{nb_path.relative_to(root)}: setup cell does not match "
                            f"setup_cell({url!r})")
        if SETUP_TAG not in _first_code(nb_path)["metadata"].get("tags", []):
            problems.append(f"{nb_path.relative_to(root)}: setup cell is not tagged {SETUP_TAG} "
                            f"(the site hides it)")
    for doc in DOCS:
        if url not in (Path(root) / doc).read_text(encoding="utf-8"):
            problems.append(f"{doc}: does not mention {url}")
    return problems


def set_url(url: str, root: Path = ROOT) -> list:
    """Write ``url`` as the repository URL: _config.yml, every chapter's setup cell, README, intro.

    Returns the files changed. Notebooks keep their format (JSON, one-space indent, as Jupyter
    writes).
    """
    root = Path(root)
    old = repository_url(root)
    changed = []
    config = root / CONFIG
    lines = config.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(k for k, ln in enumerate(lines) if ln.startswith("repository:"))
    k = next(k for k in range(start + 1, len(lines)) if lines[k].lstrip().startswith("url:"))
    new_line = lines[k].split("url:")[0] + f"url: {url}\n"
    if lines[k] != new_line:
        lines[k] = new_line
        config.write_text("".join(lines), encoding="utf-8")
        changed.append(config)
    cell = setup_cell(url).split("\n")
    for nb_path in chapter_notebooks(root):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        source = [ln + "\n" for ln in cell[:-1]] + [cell[-1]]
        tags = first.setdefault("metadata", {}).setdefault("tags", [])
        if first["source"] != source or SETUP_TAG not in tags:
            first["source"] = source
            if SETUP_TAG not in tags:
                tags.append(SETUP_TAG)
            nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                               encoding="utf-8")
            changed.append(nb_path)
    for doc in DOCS:
        path = root / doc
        text = path.read_text(encoding="utf-8")
        if old != url and old in text:
            path.write_text(text.replace(old, url), encoding="utf-8")
            changed.append(path)
    return changed
