"""The book side of the library: what the chapters call (it builds on the models and the engine, and neither
imports it; only checks/, the exercises' graders, builds on it; tests/test_layers.py).

- this file: the chapters' setup (device, build-time plotly renderer) and their prose helpers (``say``, ``sci``,
  ``live_widget``); repository.py: the repository URL setting (``python -m idmap_lib.book set-url|check``);
- notation.py: the papers' symbols in sympy and their LaTeX; theory.py: sympy derivations of Paper A's Eqns 1-8 and Paper B's gates; probes.py: measurements on real
  networks; slider_figures.py: chapters 2 and 3's slider figures; figure_style.py: every figure's fonts, legend
  place and caption line; diagrams.py: drawings of the units;
- mechanisms.py: the mechanism experiments (forward signal under a scaled shortcut, what the weight layers see,
  ReLU truncation), recorded under data/mechanisms/, and their claims; mechanism_figures.py: their figures;
  synthesis.py: "Why pre-activation helps", each candidate mechanism's status read from the claims that test it;
- claims.py: the papers' claims as data and ``evaluate``; rule.py: the test that decides them (Welch's t, the
  seeds); metrics.py: every number read from a run, and the one definition of a run at chance; runs.py: the runs
  a page reads (the book's, the reader's); paper_numbers.py: the papers' tables as data; reports.py: naming and
  provenance of recorded runs;
- what chapters 7-11 show: variants.py (a variant's table over seeds, what each scale trains), verdicts.py (the
  claims tables, the forest plot, the notes on runs at chance and contradictions), curves.py (training curves
  over seeds), full_recipe.py (the full recipe's runs, finished or under way), checkpoints.py (trained nets from
  committed checkpoints); tables.py and log_axes.py: how every table and log axis prints; sweep.py: what to
  train next (``python -m idmap_lib sweep``, a chapter's RUN cell); queue.py, queue_status.py: the sweep as one
  queue submitted through submitit (SLURM job array or local jobs, resumable) and where it stands; cpu_scale.py:
  the probe that chose the CPU scale;
- mnist_grid.py: Paper B's MNIST grid (looks runs up, trains the missing ones through the engine, records the
  pruning curves); gate_figures.py: chapter 10's figures of it.
- live.py: "train it yourself" in chapters 7-10 (your run, live, beside the recorded ones); run_times.py: how long
  a full recipe takes (measured on an H200, derived for a T4 and a CPU).

Every chapter starts with ``device = setup()``. It reports the device found and returns it as a
``torch.device``. When the book is being built (``IDMAP_BOOK_BUILD=1``, set by ``make book``), it also
switches plotly to the ``idmap_book`` renderer: ``fig.show()`` then emits a plain HTML ``<div>`` and a
short script that calls the page's single copy of plotly.js (served by the site, see ``_config.yml``).
No plotly.js and no MathJax are inlined and nothing comes from a CDN. Outside the build nothing about
plotly is changed, so Colab and Jupyter keep their own renderers.
"""

from __future__ import annotations

import os
from pathlib import Path

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
            from .log_axes import readable_log_axes

            html = to_html(
                readable_log_axes(fig_dict),  # log axes labelled in full (20, not a second "2")
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


DRIVE_RUNS = "/content/drive/MyDrive/idmap/runs"  # where DRIVE = True records the reader's runs on Colab
CLASSROOM_RUNS = Path(__file__).resolve().parents[2] / "data" / "classroom"  # the book's recorded exercise runs


def default_runs_dir() -> Path:
    """Where the reader's runs are recorded (the exercises', and chapters 7-10's "train it yourself"):
    ``IDMAP_RUNS``, else ``idmap_runs/`` next to the notebook. The book's build (``IDMAP_BOOK_BUILD=1``) reads
    the exercise runs recorded in the repository (data/classroom)."""
    if os.environ.get("IDMAP_RUNS"):
        return Path(os.environ["IDMAP_RUNS"])
    if in_book_build() and CLASSROOM_RUNS.is_dir():
        return CLASSROOM_RUNS
    return Path("idmap_runs")


def use_drive(mountpoint: str = "/content/drive") -> bool:
    """Mount Google Drive (Colab asks for permission) and record the reader's runs, with their checkpoints, in
    :data:`DRIVE_RUNS` (``IDMAP_RUNS``, unless it is set already), where they outlive the runtime. Outside
    Colab there is no Drive to mount: it says so and changes nothing. True when Drive is mounted."""
    try:
        from google.colab import drive
    except ImportError:
        print("DRIVE = True: no Google Drive to mount here (only on Colab); your runs stay where they are")
        return False
    drive.mount(mountpoint)
    os.environ.setdefault("IDMAP_RUNS", DRIVE_RUNS)
    return True


def whereabouts() -> list:
    """Two lines: where ``idmap_lib`` was imported from and how many recorded runs it found (its data root's
    results/, never the working directory's); where the reader's runs and their checkpoints are recorded."""
    from ..engine.results import RESULTS_DIR

    library = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    recorded = len(list(RESULTS_DIR.glob("*.json")))
    return [f"idmap_lib: {library}, with {recorded} recorded runs in {RESULTS_DIR}",
            f"Your runs and their checkpoints go to {default_runs_dir().resolve()}"]


def setup(verbose: bool = True, drive: bool = False):
    """The chapters' setup cell: pick the device, report it, configure plotly for the book build; mount Google
    Drive for the reader's runs when asked (``drive``, the cell's ``DRIVE``); say where the library, its
    recorded runs and the reader's runs are (not in the book build: the site shows no machine's paths).

    Returns ``torch.device("cuda")`` when a CUDA GPU is available, else ``torch.device("cpu")``.
    """
    import torch

    if in_book_build():
        use_book_renderer()
    if drive:
        use_drive()
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if verbose:
        print("Device:", describe_device(device))
        if not in_book_build():
            print("\n".join(whereabouts()))
    return device
