"""Helpers for the book's chapters: the setup cell and the build-time plotly renderer.

Every chapter starts with ``device = setup()``. It reports the device found and returns it as a
``torch.device``. When the book is being built (``IDMAP_BOOK_BUILD=1``, set by ``make book``), it also
switches plotly to the ``idmap_book`` renderer: ``fig.show()`` then emits a plain HTML ``<div>`` and a
short script that calls the page's single copy of plotly.js (served by the site, see ``_config.yml``).
No plotly.js and no MathJax are inlined and nothing comes from a CDN. Outside the build nothing about
plotly is changed, so Colab and Jupyter keep their own renderers.
"""

from __future__ import annotations

import os

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
