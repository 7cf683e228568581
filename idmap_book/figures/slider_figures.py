"""Figures with a slider of precomputed steps, for the theory chapters: they work in the static page
with no kernel, because every curve a step can show was computed when the page was built.

A step of a slider sets which traces show *and* the axes they are drawn on: every y axis's range and
ticks (a log axis gets at most ``log_axes.MAX_TICKS`` labels at every step, never ticks computed
over the traces of the other steps), every x axis's range, and the title. The panels are stacked in
one column, so that each is the column's width at 1280 px and at 390 px; the legend sits in the
figure, between the title and the first panel (it wraps on a phone); fonts are 13 px.
``THEORY_LAYOUT`` is that layout (``figure_style.LAYOUT_LEGEND_ABOVE``), for the theory chapters'
other figures too.

- :func:`lambda_slider`: chapter 3, Paper A's Eqn 8: the direct term prod lambda = lambda^(L-l) and
  the gradient measured in lambda-scaled networks (``probes.gradient_decay``), one step per lambda.
- :func:`depth_slider`: chapter 2, Paper A's Eqn 5 measured: the gradient at every unit of an L-unit
  stack of identity-mapping units and its direct term alone (F = 0), one step per depth L.
- :func:`slider_figure`: the machinery both use, for any stack of log-axis panels with one step per
  setting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..page.figure_style import FONT_PX, LAYOUT_LEGEND_ABOVE
from ..page.palette import style
from ..page.prose import plain_number
from ..page.log_axes import log_range, log_ticks

# defined with every figure's fonts and legends (figure_style.py)
THEORY_LAYOUT = LAYOUT_LEGEND_ABOVE


@dataclass
class Step:
    """One setting of the slider: its label on the slider, the figure's title there, and the traces
    it shows, each as (row, plotly trace)."""
    label: str
    title: str
    traces: list = field(default_factory=list)


def number(v: float) -> str:
    """A number for a figure's title: 0.05, 693, 1 in full; beyond 10^-3 to 10^5 as
    1.75×10<sup>-46</sup>."""
    if v == 0 or 1e-3 <= abs(v) < 1e3:
        return f"{v:.3g}"
    # three significant digits, written out: 20959 -> 21,000 (never 2.1e+04)
    if 1e3 <= abs(v) < 1e5:
        return f"{float(f'{v:.3g}'):,.0f}"
    e = math.floor(math.log10(abs(v)))
    m = round(v / 10 ** e, 2)
    if abs(m) >= 10:
        m, e = m / 10, e + 1
    return f"{m:g}×10<sup>{e}</sup>"


def _axis(kind: str, row: int) -> str:
    return f"{kind}axis" if row == 1 else f"{kind}axis{row}"


def _numbers(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def step_axes(step: Step, rows: int) -> dict:
    """The layout a step sets (plotly's dotted names): each row's log y range (log10 units, as
    plotly takes them) and ticks from the traces this step shows on it, each row's x range from the
    same traces."""
    out = {}
    for row in range(1, rows + 1):
        traces = [t for r, t in step.traces if r == row]
        ys = [y for t in traces for y in _numbers(t.y) if y > 0]  # a log axis draws only these
        xs = [x for t in traces for x in _numbers(t.x)]
        if not ys or not xs:
            raise ValueError(f"step {step.label!r} shows nothing in row {row} (no positive value "
                             f"for its log axis): "
                             "every panel needs a curve at every step")
        y, rng = _axis("y", row), log_range(ys)
        ticks = log_ticks(10 ** rng[0], 10 ** rng[1])
        out.update({f"{y}.range": rng, f"{y}.tickvals": ticks["tickvals"],
                    f"{y}.ticktext": ticks["ticktext"]})
        out[f"{_axis('x', row)}.range"] = [min(xs), max(xs)]
    return out


def slider_figure(steps: list[Step], active: int, y_titles: list[str], x_title: str,
                  slider_title: str,
                  height: int = 460):
    """A plotly figure of `steps` (one column of panels, one y title each, a log y axis each) with a
    slider whose step n shows only step n's traces and sets step n's axes (:func:`step_axes`) and
    title; `active` is shown first."""
    from plotly.subplots import make_subplots

    if not steps or not 0 <= active < len(steps):
        raise ValueError(f"need at least one step and 0 <= active < {len(steps)}, got "
                         f"active={active}")
    rows = len(y_titles)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True,
                        vertical_spacing=0.08 if rows > 1 else 0.0)
    owner = []
    for n, step in enumerate(steps):
        for row, trace in step.traces:
            trace.visible = n == active
            fig.add_trace(trace, row=row, col=1)
            owner.append(n)
    layouts = [{"title.text": s.title, **step_axes(s, rows)} for s in steps]
    sliders = [dict(method="update", label=s.label,
                    args=[{"visible": [o == n for o in owner]}, layouts[n]])
                    for n, s in enumerate(steps)]
    fig.update_layout(**THEORY_LAYOUT, height=height)
    fig.update_layout(layouts[active])
    fig.update_layout(sliders=[dict(active=active, steps=sliders, x=0, xanchor="left", len=1.0, y=0,
                                    yanchor="top",
                                    pad=dict(t=44, b=0), font=dict(size=12),
                                    currentvalue=dict(visible=True, prefix=slider_title,
                                                      font=dict(size=FONT_PX),
                                                      xanchor="right", offset=4))])
    fig.update_layout(margin=dict(b=128))  # the x title, then the slider and its labels
    for row, title in enumerate(y_titles, start=1):
        fig.update_yaxes(type="log", title_text=title, title_standoff=4, tickfont=dict(size=12),
                         row=row, col=1)
    fig.update_xaxes(tickfont=dict(size=12))
    fig.update_xaxes(title_text=x_title, title_standoff=6, row=rows, col=1)
    return fig


def _sample(n: int, dense: int = 50, total: int = 150):
    """Indices 0..n: every one of the first `dense`, then `total` spaced geometrically (fewer points
    to ship)."""
    import numpy as np

    if n <= dense + total:
        return np.arange(n + 1)
    return np.unique(np.r_[np.arange(0, dense), np.geomspace(dense, n, total).astype(int), n])


def lambda_slider(measured: dict, start: float = 1.0):
    """Chapter 3's figure: for each lambda of `measured` ({lambda: ||dE/dx_l|| / ||dE/dx_L|| at L -
    l = 0..depth}, ``probes.gradient_decay``), Eqn 8's direct term lambda^(L-l) (top) and the
    measured ratio beside it (bottom), against the number of units L - l; one slider step per
    lambda, `start` first."""
    import numpy as np
    import plotly.graph_objects as go

    lams = list(measured)
    if start not in measured:
        raise ValueError(f"start={start} is not one of the measured lambdas {lams}")
    depth = len(measured[lams[0]]) - 1
    k = _sample(depth)
    steps = []
    for lam in lams:
        theory = np.array([lam ** int(i) for i in k])
        meas = np.array([float(measured[lam][int(i)]) for i in k])
        steps.append(Step(label=f"{lam:g}",
                          title=f"λ = {lam:g}: ∏λ over {depth} units = {number(lam ** depth)}",
                          traces=[
            (1, go.Scatter(x=k, y=theory, name="Eqn 8's direct term ∏λ = λ^(L−l)",
                           legendgroup="theory",
                           **style("direct term", dash="dash"))),
            (2, go.Scatter(x=k, y=meas, name="measured at initialisation",
                           **style("measured", width=2.5))),
            (2, go.Scatter(x=k, y=theory, name="direct term", legendgroup="theory",
                           showlegend=False,
                           **style("direct term", dash="dash"))),
        ]))
    fig = slider_figure(steps, lams.index(start), y_titles=["∏λ (Eqn 8)",
                                                            "‖∂E/∂xₗ‖ / ‖∂E/∂x_L‖"],
                        x_title="number of units L − l", slider_title="λ = ", height=640)
    return fig.update_layout(meta={"alt": (
        f"Over {depth} units the measured gradient ratio is, by λ: " + "; ".join(
            f"{lam:g}: {plain_number(float(measured[lam][-1]))} (∏λ = "
            f"{plain_number(lam ** depth)})" for lam in lams)
        + ".")})


def depth_slider(full: dict, direct: dict, start: int | None = None):
    """Chapter 2's figure: for each depth L ({L: ||dE/dx_l|| / ||dE/dx_L|| at l = 0..L},
    ``probes.unit_gradient_norms`` divided by its last entry), the full gradient of an initialised
    L-unit stack (`full`) and the direct term alone (`direct`: the same stack with every F zeroed),
    against the unit l; one slider step per L, `start` (default the middle depth) first."""
    import numpy as np
    import plotly.graph_objects as go

    depths = list(full)
    if set(depths) != set(direct):
        raise ValueError(f"full and direct need the same depths, got {sorted(full)} and "
                         f"{sorted(direct)}")
    start = depths[len(depths) // 2] if start is None else start
    steps = []
    for L in depths:
        ks = _sample(L)
        f = np.array([float(full[L][int(i)]) for i in ks])
        d = np.array([float(direct[L][int(i)]) for i in ks])
        steps.append(Step(label=str(L), title=f"L = {L}: ‖∂E/∂x₀‖ = {number(f[0])} × ‖∂E/∂x_L‖",
                          traces=[
            (1, go.Scatter(x=ks, y=f, name="full gradient (initialised)",
                           **style("measured", width=2.5))),
            (1, go.Scatter(x=ks, y=d, name="direct term alone (F = 0)",
                           **style("direct term", dash="dash"))),
        ]))
    fig = slider_figure(steps, depths.index(start), y_titles=["‖∂E/∂xₗ‖ / ‖∂E/∂x_L‖"],
                        x_title="unit l (L: the last unit's output)", slider_title="L = ",
                        height=480)
    return fig.update_layout(meta={"alt": (
        "The gradient at the first unit, as a multiple of the last unit's, by depth L: "
        + "; ".join(
            f"{L}: {plain_number(float(full[L][0]))}" for L in depths)
        + "; the direct term alone (every F zeroed): " + ", ".join(sorted(
            {plain_number(float(direct[L][0])) for L in depths})) + ".")})
