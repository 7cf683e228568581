"""The repository URL: one setting, ``repository.url`` in ``_config.yml``.

Jupyter Book's launch buttons (Colab) read it; ``python -m idmap_lib.book set-url URL`` writes it there and into
every chapter's setup cell (:func:`setup_cell`), the README and the intro; ``python -m idmap_lib.book check`` says
whether they all agree (the tests and the publishing workflow run it).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the repository checkout (for set-url / check)
CONFIG = "_config.yml"
DOCS = ("README.md", "book/intro.md")        # pages that quote the repository URL
SETUP_FIRST_LINE = "# Setup."


def setup_cell(url: str) -> str:
    """The first code cell of every chapter, for the repository at ``url``.

    Where ``idmap_lib`` is missing (Colab, a downloaded notebook) it clones the repository, installs the
    library's dependencies from the clone and imports the library from the clone itself, so that the
    chapter also finds the recorded runs in the clone's ``data/results``.
    """
    return f"""{SETUP_FIRST_LINE} Where idmap_lib is missing (on Colab, say), this clones the book's repository
# and works from the clone, which also holds the recorded runs (data/results).
REPOSITORY = {json.dumps(url)}  # the one URL setting: _config.yml
try:
    import idmap_lib
except ImportError:
    import os, subprocess, sys
    clone = os.path.abspath("idmap")
    if not os.path.isdir(clone):
        subprocess.run(["git", "clone", "--depth", "1", REPOSITORY, clone], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", clone], check=True)
    sys.path.insert(0, clone)
    import idmap_lib
from idmap_lib.book import setup
device = setup()"""


def repository_url(root: Path = ROOT) -> str:
    """``repository.url`` from ``_config.yml``: the repository the site, Colab and the README point to."""
    import yaml

    return yaml.safe_load((Path(root) / CONFIG).read_text(encoding="utf-8"))["repository"]["url"]


def chapter_notebooks(root: Path = ROOT) -> list:
    """Every chapter notebook under book/ whose first code cell is the setup cell."""
    out = []
    for nb_path in sorted((Path(root) / "book").glob("*.ipynb")):
        code = [c for c in json.loads(nb_path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        if code and "".join(code[0]["source"]).startswith("# Setup"):
            out.append(nb_path)
    return out


def first_code_cell(nb_path) -> str:
    nb = json.loads(Path(nb_path).read_text(encoding="utf-8"))
    return "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])


def check(root: Path = ROOT, expect: str | None = None) -> list:
    """Where the repository URL setting is not followed: [] when the setup cells, README and intro agree."""
    url = repository_url(root)
    problems = [] if expect in (None, url) else [f"{CONFIG}: repository.url is {url}, expected {expect}"]
    for nb_path in chapter_notebooks(root):
        if first_code_cell(nb_path) != setup_cell(url):
            problems.append(f"{nb_path.relative_to(root)}: setup cell does not match setup_cell({url!r})")
    for doc in DOCS:
        if url not in (Path(root) / doc).read_text(encoding="utf-8"):
            problems.append(f"{doc}: does not mention {url}")
    return problems


def set_url(url: str, root: Path = ROOT) -> list:
    """Write ``url`` as the repository URL: _config.yml, every chapter's setup cell, README, intro.

    Returns the files changed. Notebooks keep their format (JSON, one-space indent, as Jupyter writes).
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
        if first["source"] != source:
            first["source"] = source
            nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(nb_path)
    for doc in DOCS:
        path = root / doc
        text = path.read_text(encoding="utf-8")
        if old != url and old in text:
            path.write_text(text.replace(old, url), encoding="utf-8")
            changed.append(path)
    return changed
