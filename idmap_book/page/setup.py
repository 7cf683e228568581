"""The chapters' setup: ``device = setup()`` picks the device and reports it; during the book's
build (``IDMAP_BOOK_BUILD=1``, set by ``make book``) it also switches plotly to the ``idmap_book``
renderer, so that ``fig.show()`` emits a plain HTML ``<div>`` and a short script that calls the
page's single copy of plotly.js (served by the site, see ``_config.yml``): no plotly.js or MathJax
inlined, nothing from a CDN. Outside the build Colab, VS Code and the others keep plotly's own
renderer; only in a plain Jupyter kernel, whose default needs a plotly extension that the classic
notebook (6.5) lacks, is the figure's HTML added (``use_jupyter_renderer``). Also where the reader's
runs are recorded (``default_runs_dir``, Google Drive on Colab).
"""

from __future__ import annotations

import os
from pathlib import Path

import idmap_lib
from idmap_lib.engine.device import physical_cores
from idmap_lib.engine.results import RESULTS_DIR
from .figure_style import alt_text
from .log_axes import readable_log_axes

BUILD_ENV = "IDMAP_BOOK_BUILD"
RENDERER = "idmap_book"


def in_book_build() -> bool:
    """True while ``make book`` executes the chapters (environment variable
    ``IDMAP_BOOK_BUILD=1``)."""
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
            from html import escape

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
            # its text alternative (WCAG 1.1.1), for screen readers
            alt = escape(alt_text(fig_dict), quote=True)
            head = head.replace('class="plotly-graph-div"',
                                f'class="plotly-graph-div" role="figure" aria-label="{alt}"', 1)
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


JUPYTER_RENDERER = "plotly_mimetype+notebook"


def use_jupyter_renderer() -> None:
    """Where plotly chose its bare mimetype (a Jupyter kernel that is not Colab's, VS Code's, ...),
    also emit each figure's HTML: JupyterLab draws the mimetype with plotly's extension, the classic
    notebook (6.5), which has none for plotly >= 6, draws the HTML, with plotly.js put in the page
    once (offline). Plotly 5 did so itself."""
    import plotly.io as pio

    if pio.renderers.default == "plotly_mimetype":
        pio.renderers.default = JUPYTER_RENDERER


def describe_device(device) -> str:
    """One line naming the device: the CUDA GPU's name, or the CPU and its core count."""
    import torch

    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        return f"CUDA GPU: {torch.cuda.get_device_name(idx)} (torch {torch.__version__})"
    cores = os.cpu_count() or 1
    return (f"CPU: {cores} cores, {torch.get_num_threads()} torch threads (torch "
            f"{torch.__version__})")


# where DRIVE = True records the reader's runs on Colab
DRIVE_RUNS = "/content/drive/MyDrive/idmap/runs"
# the book's recorded exercise runs
CLASSROOM_RUNS = Path(__file__).resolve().parents[2] / "data" / "classroom"


def default_runs_dir() -> Path:
    """Where the reader's runs are recorded (the exercises', and chapters 7-10's "train it
    yourself"): ``IDMAP_RUNS``, else ``idmap_runs/`` next to the notebook. The book's build
    (``IDMAP_BOOK_BUILD=1``) reads the exercise runs recorded in the repository (data/classroom)."""
    if os.environ.get("IDMAP_RUNS"):
        return Path(os.environ["IDMAP_RUNS"])
    if in_book_build() and CLASSROOM_RUNS.is_dir():
        return CLASSROOM_RUNS
    return Path("idmap_runs")


def use_drive(mountpoint: str = "/content/drive") -> bool:
    """Mount Google Drive (Colab asks for permission) and record the reader's runs, with their
    checkpoints, in :data:`DRIVE_RUNS` (``IDMAP_RUNS``, unless it is set already), where they
    outlive the runtime. Outside Colab there is no Drive to mount: it says so and changes nothing.
    True when Drive is mounted."""
    try:
        from google.colab import drive
    except ImportError:
        print("DRIVE = True: no Google Drive to mount here (only on Colab); your runs stay where "
              "they are")
        return False
    drive.mount(mountpoint)
    os.environ.setdefault("IDMAP_RUNS", DRIVE_RUNS)
    return True


def whereabouts() -> list:
    """Two lines: where ``idmap_lib`` was imported from and how many recorded runs it found (its
    data root's results/, never the working directory's); where the reader's runs and their
    checkpoints are recorded."""
    library = str(Path(idmap_lib.__file__).resolve().parent)
    recorded = len(list(RESULTS_DIR.glob("*.json")))
    return [f"idmap_lib: {library}, with {recorded} recorded runs in {RESULTS_DIR}",
            f"Your runs and their checkpoints go to {default_runs_dir().resolve()}"]


def setup(verbose: bool = True, drive: bool = False):
    """The chapters' setup cell: pick the device (on a CPU, torch on every physical core: the book's
    one thread policy), report it, configure plotly (the book build's renderer, or
    ``use_jupyter_renderer``); mount Google Drive for the reader's runs when asked (``drive``, the
    cell's ``DRIVE``); say where the library, its recorded runs and the reader's runs are (not in
    the book build: the site shows no machine's paths).

    Returns ``torch.device("cuda")`` when a CUDA GPU is available, else ``torch.device("cpu")``.
    """
    import torch

    if in_book_build():
        use_book_renderer()
    else:
        use_jupyter_renderer()
    if drive:
        use_drive()
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    # the one thread policy: every physical core, never a hyperthread more (engine.device)
    if device.type == "cpu":
        torch.set_num_threads(physical_cores())
    if verbose:
        print("Device:", describe_device(device))
        if not in_book_build():
            print("\n".join(whereabouts()))
    return device
