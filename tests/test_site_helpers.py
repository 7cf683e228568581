"""The book's Python helpers: the setup cell, the build-time plotly renderer, the unit drawings."""

import re
from html import escape

import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch

import idmap_lib as im
import idmap_book as book
from idmap_book.figures.diagrams import _lines, draw_units


@pytest.fixture
def keep_renderer():
    default = pio.renderers.default
    yield
    pio.renderers.default = default


def test_setup_outside_build_reports_device_and_leaves_plotly_alone(monkeypatch, capsys,
                                                                    keep_renderer):
    monkeypatch.delenv(book.BUILD_ENV, raising=False)
    before = pio.renderers.default
    device = book.setup()
    assert isinstance(device, torch.device)
    assert device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    out = capsys.readouterr().out
    assert out.startswith("Device: ") and ("CUDA GPU" in out or "cores" in out)
    assert pio.renderers.default == before


def test_setup_in_build_emits_html_that_uses_the_pages_plotly(monkeypatch, capsys, keep_renderer):
    monkeypatch.setenv(book.BUILD_ENV, "1")
    book.setup()
    assert pio.renderers.default == book.RENDERER
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[3, 1, 2]))
    fig.update_layout(sliders=[{"steps": [{"label": "a", "method": "restyle",
                                           "args": ["y", [[1, 2, 3]]]}]}])
    bundle = pio.renderers[book.RENDERER].to_mimebundle(fig.to_dict())
    assert list(bundle) == ["text/html"]  # myst-nb renders it; no plotly mimetype it would drop
    html = bundle["text/html"]
    assert 'class="plotly-graph-div"' in html and "Plotly.newPlot" in html
    assert len(html) < 50_000, "plotly.js must not be inlined"
    assert "cdn" not in html.lower() and "<script src" not in html and "MathJax.Hub" not in html
    assert html.count("<script>") == 1 and html.count("</script>") == 1


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False),
                                             ("", False)])
def test_in_book_build_reads_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(book.BUILD_ENV, value)
    assert book.in_book_build() is expected


def _drawn_texts(svg):
    return [t.replace("&#x27;", "'") for t in re.findall(r">([^<>]+)</text>", svg)]


@pytest.mark.parametrize("unit, shortcut", [(u, "identity") for u in im.UNITS]
                         + [("original", s) for s in im.SHORTCUTS]
                         + [("full_preact", "conv1x1"), ("relu_preact", "exclusive_gating")])
def test_drawing_shows_every_op_of_the_module(unit, shortcut):
    """The drawing is made from unit_layout, so every op the module runs appears, path by path."""
    layout = im.unit_layout(im.make_unit(unit, shortcut))
    svg = draw_units([layout], ["title"])
    texts = _drawn_texts(svg)
    paths = ("preact", "residual", "shortcut", "gate", "post")
    for path in paths:
        for op in layout[path]:
            for line in _lines(op):
                assert escape(line) in texts, (path, op, texts)
    assert svg.count("<rect") == sum(len(layout[p]) for p in paths)  # one box per op, no more


def test_drawing_of_dimension_changing_and_gated_units():
    units = [im.make_unit("full_preact", in_channels=16, out_channels=32, stride=2),
             im.make_unit("full_preact", gated=True)]
    svg = draw_units([im.unit_layout(u) for u in units], ["down", "gated"])
    texts = _drawn_texts(svg)
    assert "3x3 conv, 32, /2" in texts and "× ReLU(k)" in texts
    assert svg.startswith("<svg") and svg.endswith("</svg>")


def test_drawing_rejects_bad_input():
    layout = im.unit_layout(im.make_unit())
    with pytest.raises(ValueError, match="at least one"):
        draw_units([])
    with pytest.raises(ValueError, match="titles"):
        draw_units([layout], ["a", "b"])
    with pytest.raises(ValueError, match="per_row"):
        draw_units([layout], per_row=0)


def test_live_widget_only_where_a_kernel_runs(monkeypatch, capsys):
    """In the book build the widget is not built (its sliders would be frozen there) and a note says
    where it runs; in Jupyter/Colab the widget is returned to be displayed."""
    made = []

    def make():
        made.append(1)
        return "widget"

    monkeypatch.setenv(book.BUILD_ENV, "1")
    assert book.live_widget(make) is None and not made
    monkeypatch.setenv(book.BUILD_ENV, "0")
    assert book.live_widget(make) == "widget" and made == [1]


def test_the_gate_path_is_drawn_dashed_and_the_others_solid():
    """Chapter 1 says the gate's path is dashed: every line of it is, and no other line is."""
    from idmap_book.figures.diagrams import GATE_COLOR

    gated = draw_units([im.unit_layout(im.make_unit("original", "exclusive_gating"))], ["g"])
    lines = re.findall(r"<line [^>]*/>", gated)
    gate_lines = [ln for ln in lines if GATE_COLOR in ln]
    assert len(gate_lines) >= 3 and all("stroke-dasharray" in ln for ln in gate_lines)
    assert not any("stroke-dasharray" in ln for ln in lines if GATE_COLOR not in ln)
    plain = draw_units([im.unit_layout(im.make_unit("original", "identity"))], ["p"])
    assert "stroke-dasharray" not in plain


def test_the_book_renderer_writes_log_ticks_out_in_full(monkeypatch, keep_renderer):
    """Issue 21: plotly's minor labels on a log axis read "2 3 ... 10 2 3" (the second "2" is 20);
    on the site every log axis without ticks of its own is labelled 1, 2, 5, 10, 20 ... in full; a
    linear axis, or one with its own ticks, is left alone."""
    import numpy as np

    from plotly.subplots import make_subplots
    monkeypatch.setenv(book.BUILD_ENV, "1")
    book.setup(verbose=False)
    fig = make_subplots(rows=1, cols=3)
    fig.add_scatter(y=np.array([0.03, 0.4, 7.0, 250.0]), row=1, col=1)
    fig.add_scatter(y=[1.0, 2.0, 3.0], row=1, col=2)
    fig.add_scatter(y=[5.0, 50.0], row=1, col=3)
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(type="log", tickvals=[5, 50], row=1, col=3)
    html = pio.renderers[book.RENDERER].to_mimebundle(fig.to_dict())["text/html"]
    d = fig.to_dict()
    from idmap_book.page.log_axes import readable_log_axes
    lay = readable_log_axes(d)["layout"]
    assert lay["yaxis"]["ticktext"] == ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20",
                                        "50", "100", "200"]
    assert "tickvals" not in lay["yaxis2"] and list(lay["yaxis3"]["tickvals"]) == [5, 50]
    assert '"ticktext":["0.05","0.1"' in html.replace(" ", "")
