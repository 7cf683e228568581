"""Helpers for the book's chapters: the setup cell, the repository URL setting and the build-time plotly
renderer.

The repository URL is one setting, ``repository.url`` in ``_config.yml``: Jupyter Book's launch buttons
(Colab) read it, and ``python -m idmap_lib.book set-url URL`` writes it there and into every chapter's
setup cell (:func:`setup_cell`), the README and the intro; ``python -m idmap_lib.book check`` says
whether they all agree (the tests and the publishing workflow run it).

Every chapter starts with ``device = setup()``. It reports the device found and returns it as a
``torch.device``. When the book is being built (``IDMAP_BOOK_BUILD=1``, set by ``make book``), it also
switches plotly to the ``idmap_book`` renderer: ``fig.show()`` then emits a plain HTML ``<div>`` and a
short script that calls the page's single copy of plotly.js (served by the site, see ``_config.yml``).
No plotly.js and no MathJax are inlined and nothing comes from a CDN. Outside the build nothing about
plotly is changed, so Colab and Jupyter keep their own renderers.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the repository checkout (for set-url / check)
CONFIG = "_config.yml"
DOCS = ("README.md", "book/intro.md")        # pages that quote the repository URL
SETUP_FIRST_LINE = "# Setup."
BUILD_ENV = "IDMAP_BOOK_BUILD"
RENDERER = "idmap_book"


def in_book_build() -> bool:
    """True while ``make book`` executes the chapters (environment variable ``IDMAP_BOOK_BUILD=1``)."""
    return os.environ.get(BUILD_ENV, "").strip().lower() not in ("", "0", "false", "no")


# Runs a figure's drawing code once the page is parsed and, where the page has MathJax (deferred),
# once MathJax is ready: plotly.js can then typeset LaTeX ($...$) in titles and labels.
_WHEN_READY = (
    "(function(draw){function go(){var mj=window.MathJax;"
    "if(mj&&mj.startup&&mj.startup.promise){mj.startup.promise.then(draw,draw);}else{draw();}}"
    "if(document.readyState==='loading'){document.addEventListener('DOMContentLoaded',go);}"
    "else{go();}})(function(){"
)


def _book_renderer():
    """A plotly renderer emitting ``text/html`` that relies on the page's own plotly.js."""
    from plotly.io import to_html
    from plotly.io.base_renderers import MimetypeRenderer

    class BookHtmlRenderer(MimetypeRenderer):
        """``text/html`` only: a div plus ``Plotly.newPlot``; no plotly.js, no MathJax, no CDN."""

        def to_mimebundle(self, fig_dict):
            html = to_html(
                fig_dict,
                include_plotlyjs=False,
                include_mathjax=False,
                full_html=False,
                default_width="100%",
                default_height=480,
                config={"responsive": True, "displaylogo": False},
                validate=False,
            )
            head, sep, rest = html.partition("<script>")
            body, sep2, tail = rest.rpartition("</script>")
            if not (sep and sep2):
                raise RuntimeError("unexpected plotly HTML: cannot find the figure's script")
            return {"text/html": f"{head}<script>{_WHEN_READY}{body}}});</script>{tail}"}

    return BookHtmlRenderer()


def use_book_renderer() -> None:
    """Register the ``idmap_book`` plotly renderer and make it the default."""
    import plotly.io as pio

    pio.renderers[RENDERER] = _book_renderer()
    pio.renderers.default = RENDERER


def say(markdown: str) -> None:
    """Display prose that quotes computed numbers (written as an f-string in the chapter), so that the
    page never types a number it computes. The cells that call it are tagged ``remove-input``."""
    from IPython.display import Markdown, display

    display(Markdown(markdown))


def sci(value: float, digits: int = 2) -> str:
    """A number for inline math: 0.000123 -> '1.2 \\cdot 10^{-4}', 0.875 -> '0.88', 1 -> '1'."""
    import math

    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.{digits}g}"
    exp = math.floor(math.log10(abs(value)))
    mant = value / 10 ** exp
    if round(mant, digits - 1) >= 10:
        mant, exp = mant / 10, exp + 1
    head = "" if f"{mant:.{digits - 1}f}" in ("1", "1.0") else f"{mant:.{digits - 1}f} \\cdot "
    return f"{head}10^{{{exp}}}"


LIVE_ONLY_NOTE = (
    "*Live version: in Jupyter or on Colab (the rocket button at the top of the page) this cell shows "
    "sliders that recompute the figure in Python. A static page has no Python running, so here it shows "
    "nothing; the figure above with its own slider works in the page.*"
)


def live_widget(make):
    """Show an ipywidgets figure only where a kernel runs it (Jupyter, Colab).

    ``make()`` builds and returns the widget. Sliders whose figure is computed in Python
    (``interactive_output``) would look live in the static site but stay frozen at their build-time
    value, so during the book build ``make`` is not called and a note (:data:`LIVE_ONLY_NOTE`) says
    where the live version runs. Returns the widget, or None in the build.
    """
    if in_book_build():
        from IPython.display import Markdown, display

        display(Markdown(LIVE_ONLY_NOTE))
        return None
    return make()


def describe_device(device) -> str:
    """One line naming the device: the CUDA GPU's name, or the CPU and its core count."""
    import torch

    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        return f"CUDA GPU: {torch.cuda.get_device_name(idx)} (torch {torch.__version__})"
    cores = os.cpu_count() or 1
    return f"CPU: {cores} cores, {torch.get_num_threads()} torch threads (torch {torch.__version__})"


def setup(verbose: bool = True):
    """The chapters' setup cell: pick the device, report it, configure plotly for the book build.

    Returns ``torch.device("cuda")`` when a CUDA GPU is available, else ``torch.device("cpu")``.
    """
    import torch

    if in_book_build():
        use_book_renderer()
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if verbose:
        print("Device:", describe_device(device))
    return device


# ---- the repository URL: one setting --------------------------------------------------------------------------
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


def main(argv=None) -> int:
    """``python -m idmap_lib.book set-url URL`` | ``check [--expect URL]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m idmap_lib.book", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("set-url", help="write the repository URL everywhere it is used").add_argument("url")
    chk = sub.add_parser("check", help="fail if the setup cells, README or intro disagree with _config.yml")
    chk.add_argument("--expect", help="also fail unless repository.url is this URL (CI: the repository it runs in)")
    args = parser.parse_args(argv)
    if args.command == "set-url":
        for path in set_url(args.url.rstrip("/")):
            print("updated", path.relative_to(ROOT))
        return 0
    problems = check(expect=args.expect and args.expect.rstrip("/"))
    print("\n".join(problems) or f"repository URL {repository_url()}: setup cells, README and intro agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
