"""Chapter 4's figures of networks at initialisation, from what ``probes`` measured there (the
chapter computes it): each net in its palette colour, a title, the legend above the plot, and a text
alternative that says the finding from the same numbers the chapter prints.

- :func:`truncation_figure`: the original unit's fraction of yₗ < 0, unit by unit, per depth;
- :func:`direct_path_figure`: the direct paths still open through the last stage's ReLUs;
- :func:`gradient_figure`: the gradient reaching each unit, original against full pre-activation.
"""
from __future__ import annotations

from idmap_lib.models.registry import UNIT_ROWS
from ..page import palette
from ..page.prose import plain_number
from .slider_figures import THEORY_LAYOUT

# a unit's legend: its row's short words and its f, "original (f = ReLU)"
UNIT_WORDS = {u: f"{r.short} (f = {r.f})" for u, r in UNIT_ROWS.items()}


def _figure(traces, title, alt, **layout):
    import plotly.graph_objects as go

    fig = go.Figure(traces)
    fig.update_layout(THEORY_LAYOUT, height=440, title_text=title, meta={"alt": alt}, **layout)
    return fig


def truncation_figure(rates: dict):
    """`rates`: {depth: the fraction of yₗ < 0 at each unit l} (``probes.truncation_rates``)."""
    import numpy as np
    import plotly.graph_objects as go

    traces = [go.Scatter(x=np.arange(len(r)), y=r, name=f"ResNet-{d} ({len(r)} units)",
                         **palette.style(f"ResNet-{d}")) for d, r in rates.items()]
    rarer = all(r[1:].mean() < r[0] for r in rates.values())
    alt = ("At initialisation the original unit's first unit truncates a fraction "
           + ", ".join(f"{r[0]:.2f} (ResNet-{d})" for d, r in rates.items())
           + f" of yₗ, the later units {'less' if rarer else 'not always less'}: "
           + ", ".join(f"{r[1:].mean():.2f}" for r in rates.values()) + " on average.")
    return _figure(traces, "Truncated by f = ReLU, per unit (at init)", alt,
                   xaxis_title="unit l", yaxis_title="fraction of yₗ < 0", yaxis_range=[0, 0.55])


def direct_path_figure(survival: dict):
    """`survival`: {depth: the share of direct paths open from unit l to the last unit, NaN outside
    the last stage} (``probes.direct_path_survival``)."""
    import numpy as np
    import plotly.graph_objects as go

    traces, open_ = [], {}
    for d, s in survival.items():
        s = np.asarray(s)
        ok = ~np.isnan(s)
        back = len(s) - np.arange(len(s))  # units from unit l to the end
        open_[d] = (int(ok.sum()), float(s[ok][0]))
        traces.append(go.Scatter(x=back[ok], y=s[ok], name=f"ResNet-{d}, last stage",
                                 **palette.style(f"ResNet-{d}")))
    alt = ("The share of direct paths open through every ReLU of the whole last stage: "
           + "; ".join(f"{plain_number(v)} in ResNet-{d} ({n} units)"
                       for d, (n, v) in open_.items())
           + ".")
    return _figure(traces, "Direct paths open through every ReLU (at init)", alt,
                   xaxis_title="units from unit l to the last unit", yaxis_type="log",
                   yaxis_title="direct paths still open")


def gradient_figure(grads: dict):
    """`grads`: {unit: ‖∂E/∂xₗ‖ at each unit l, the last unit's output last}
    (``probes.unit_gradient_norms``), for the original and the full pre-activation ResNet-164."""
    import numpy as np
    import plotly.graph_objects as go

    ratio = {u: np.asarray(g) / g[-1] for u, g in grads.items()}
    traces = [go.Scatter(x=np.arange(len(r)), y=r, name=UNIT_WORDS[u], **palette.style(u))
              for u, r in ratio.items()]
    alt = ("At initialisation the gradient reaching the first unit is "
           + " and ".join(f"{plain_number(r[0])} times the last unit's in the "
                          f"{UNIT_ROWS[u].short} net" for u, r in ratio.items()) + ".")
    return _figure(traces, "ResNet-164 at initialisation", alt,
                   xaxis_title="unit l (last: the last unit's output)", yaxis_type="log",
                   yaxis_title="‖∂E/∂xₗ‖ / ‖∂E/∂x_L‖")
