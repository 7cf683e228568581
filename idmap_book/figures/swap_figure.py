"""The figure of "Why pre-activation helps" (evidence/synthesis.py): every row's runs, a unit and
each swap of one part, one marker a seed -- the rise at the lr jump (ResNet-110) and the steps to
80 % (ResNet-1001) -- with its text alternative and caption."""
from __future__ import annotations

import math

from idmap_lib.engine import recipes
from ..evidence.claim_words import words
from ..evidence.claims import CLAIMS_BY_KEY
from ..evidence.metrics import LOG_FLOOR, METRICS, censored, left_out
from ..evidence.runs import seed_runs
from ..evidence.seeds import ALL_SEEDS
from ..evidence.synthesis import FIG1, LR_JUMP, OUTCOMES, ROWS
from ..page import figure_style, palette
from ..page.prose import plain_number

# a row: its label above its markers; the gap holds an axis and the next panel's title
ROW_PX, GAP_PX = 30, 70
# the rise axis' end, in nats: a loss that rose further has blown up (a finite spike before it
# overflows can reach 1e30), so such a run is drawn at the edge, its value in its hover and the alt
# text, and the rises that tell the units apart (0.1 to 1e3) keep the axis' width
RISE_MAX = 1e4


def key_figure(out_dir=None):
    """The chapter's figure: every row's runs, one marker a seed, in its unit's colour (palette.py;
    a swap in its parent's colour with its own marker), each row labelled in words above its markers
    across the plot's width (readable on a phone). Top: how far the training loss rises when the lr
    jumps (ResNet-110, the lr-jump probe; a cross: stuck at chance before the jump). Bottom: steps
    until the training error first falls below 80 % (ResNet-1001; a hollow marker: never within the
    run, drawn at its length). A rise beyond RISE_MAX is drawn at the axis' edge as a triangle.
    Returns (figure, values)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    scales = {"jump": CLAIMS_BY_KEY[LR_JUMP].scale, "start": CLAIMS_BY_KEY[FIG1].scale}
    heights = [ROW_PX * len(ROWS[t]) for t in OUTCOMES]
    plot = sum(heights) + GAP_PX
    fig = make_subplots(rows=2, cols=1, row_heights=heights, vertical_spacing=GAP_PX / plot,
                        subplot_titles=("ResNet-110: rise at the lr jump",
                                        "ResNet-1001: steps to 80 %"))
    values = {}
    for row, test in ((1, "jump"), (2, "start")):
        for i, r in enumerate(ROWS[test]):
            runs = seed_runs("a_swaps", r, scales[test], ALL_SEEDS, out_dir)[0]
            if test == "jump":
                xs = [LOG_FLOOR + METRICS["lr_jump_rise"](x) for x in runs]
                odd = [left_out(x, "lr_jump_rise") is not None for x in runs]
            else:
                xs = [METRICS["steps_to_80"](x) for x in runs]
                odd = [censored(x, "steps_to_80") is not None for x in runs]
            values[r] = xs
            name, key, sym = words("a_swaps", r), palette.unit_of(r)[0], palette.symbol(r)
            c = palette.COLOURS[key]
            y = ROW_PX * (i + 1) - 8
            marks = [("x-thin" if test == "jump" else f"{sym}-open") if o else sym for o in odd]
            beyond = [test == "jump" and v > RISE_MAX for v in xs]
            marks = ["triangle-right" if b else m for m, b in zip(marks, beyond)]
            fig.add_trace(go.Scatter(x=[RISE_MAX if b else v for v, b in zip(xs, beyond)],
                                     y=[y] * len(xs), customdata=xs, mode="markers",
                                     showlegend=False, meta={"palette": key},
                                     marker={"size": 9, "color": c, "symbol": marks,
                                             "opacity": 0.85,
                                             "line": {"width": 1.5, "color": c}},
                                     hovertemplate=f"{name}: %{{customdata:.3g}}<extra></extra>"),
                          row=row, col=1)
            axis = "" if row == 1 else "2"
            fig.add_annotation(text=name, xref=f"x{axis} domain",
                               yref=f"y{axis}", x=0, y=y - 7, xanchor="left", yanchor="bottom",
                               showarrow=False,
                               font=figure_style.FONT)
        fig.update_yaxes(range=[heights[row - 1], 0], showticklabels=False, showgrid=False,
                         zeroline=False,
                         fixedrange=True, row=row, col=1)
    fig.update_xaxes(type="log", dtick=1, range=[-1.3, math.log10(RISE_MAX) + 0.2],
                     title_text=f"0.1 + rise, nats (log; ▶: beyond {RISE_MAX:,.0f})", row=1,
                     col=1, title_standoff=2)
    fig.update_xaxes(title_text="steps (never: at the run's length)", row=2, col=1,
                     title_standoff=2)
    fig.update_layout(height=plot + 134, margin={"l": 10, "r": 10, "b": 50},
                      font=figure_style.FONT)
    figure_style.title(fig, "Each intervention's runs, one part swapped at a time", room=24)
    for a in fig.layout.annotations:
        if a.text in ("ResNet-110: rise at the lr jump", "ResNet-1001: steps to 80 %"):
            a.update(font=figure_style.FONT, xref="paper", x=0, xanchor="left")
    # its text alternative (figure_style.alt_text)
    fig.update_layout(meta={"alt": key_figure_alt(values)})
    return fig, values


def key_figure_caption(values) -> str:
    """Under the figure: how to read its markers (the runs' length from their recipe); the medians
    are the figure's text alternative (``key_figure_alt``, its ``meta.alt``), not repeated here."""
    steps = recipes.config("a_swaps", ROWS["start"][0], CLAIMS_BY_KEY[FIG1].scale)["steps"]
    return (f"One marker a seed, in its unit's colour; a swap in its parent's colour, with its "
            f"own marker. Top: a cross, stuck at chance before the jump; a triangle at the edge, a "
            f"rise beyond {RISE_MAX:,.0f} nats. Bottom: hollow, never below 80 % within the run's "
            f"{steps} steps.")


def key_figure_alt(values) -> str:
    """The figure's text alternative: the median per row, in one sentence a screen reader says."""
    import statistics

    parts = {t: "; ".join(f"{words('a_swaps', r)} {plain_number(statistics.median(values[r]))}"
                          for r in ROWS[t] if values[r])
             for t in OUTCOMES}
    return (f"Median over seeds of 0.1 + the rise of the training loss at the lr jump, in nats: "
            f"{parts['jump']}. Median steps until ResNet-1001's training error is below 80 %: "
            f"{parts['start']}.")
