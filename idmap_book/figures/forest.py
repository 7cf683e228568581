"""The forest of the claims' effects: each comparison's d with its 95 % interval, a panel per
metric, coloured by its verdict (judge.evaluate), with every seed beside it."""
from __future__ import annotations

import textwrap

from ..evidence import claim_words as cw, claims, judge
from ..evidence.metrics import METRIC_WORDS, shown_as
from ..evidence.tables import VERDICT_COLOURS, num
from ..page import figure_style

# a row label's line at most: ~310 px at 13 px, what a phone's plot holds (plotly does not wrap)
ROW_CHARS = 42
# a label line; a row's interval and seeds; room under a panel's title
LINE_PX, DOT_PX, TOP_PX = 17, 34, 8
# between panels: the x ticks, the axis title, the next panel's title; under the last
GAP_PX, BOTTOM_PX = 96, 56


def forest(keys=None, scale=None, out_dir=None, title=None):
    """Each comparison's effect d with its 95 % interval (Welch's t), one row per comparison and a
    panel per metric: right of 0 is the paper's direction. Colour: the comparison's verdict; a short
    run's data on a claim about the paper's end (no verdict: needs the full recipe) in its neutral
    colour, labelled "after N steps". Beside it, every seed: one seed of a (or b) against the other
    side's mean -- their mean is d, so one seed that carries d stands out. Each row is labelled in
    words above its interval, across the plot's width (the claim's title where a claim's rows begin,
    then "a vs b"), in lines short enough for a phone: a y axis's labels left of the plot would
    leave a phone's plot no width, or be cut off."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = {}
    for c in (claims.CLAIMS if keys is None else [claims.CLAIMS_BY_KEY[k] for k in keys]):
        for t, r in judge.evaluate(c, scale, out_dir).parts:
            if "d" in r:
                short = f" (after {r['steps']} steps: data)" if r.get("short_run") else ""
                rows.setdefault(t.metric, []).append((c, short, r, t))
    if not rows:
        fig = go.Figure()
        fig.update_layout(figure_style.LAYOUT, height=160)
        return figure_style.title(fig, title or "Effects with their intervals",
                                  "no comparison has its seeds yet")

    def wrapped(text, bold=False):
        lines = textwrap.wrap(text, ROW_CHARS)
        return [f"<b>{x}</b>" if bold else x for x in lines]

    # per metric: its rows as (label lines, y of the dot, item), y in px from the panel's top
    panels = []
    for metric, items in rows.items():
        # head: the claim whose rows these are, and the note its title carries
        y, out, head = TOP_PX, [], None
        for c, short, r, t in items:
            label = cw.compared(c, t)
            # a claim's first row here: its title, then the comparison
            if head is None or head[0] != c.key:
                head = (c.key, short)
                lines = wrapped(c.title + short, bold=True) + wrapped(label)
            # a further row of it: the comparison, and its note where the title's is not its own
            else:
                lines = wrapped(label + (short if short != head[1] else ""))
            y += LINE_PX * len(lines) + DOT_PX / 2
            out.append((lines, y, (c, label + short, r, t)))
            y += DOT_PX / 2
        panels.append((metric, out, y))
    plot = sum(h for _, _, h in panels) + GAP_PX * (len(panels) - 1)
    fig = make_subplots(rows=len(panels), cols=1, row_heights=[h for _, _, h in panels],
                        vertical_spacing=GAP_PX / plot if len(panels) > 1 else 0,
                        subplot_titles=[f"{METRIC_WORDS[m]}: d" for m, _, _ in panels])
    said = []  # the text alternative: each row's d, interval and verdict
    for i, (metric, out, h) in enumerate(panels, start=1):
        unit, fmt = shown_as(metric)
        for lines, y, (c, label, r, t) in out:
            d, lo, hi = (unit * r[k] for k in ("d", "lo", "hi"))
            # each seed against the other side's mean
            for side, xs in (("a", r["xa"]), ("b", r["xb"])):
                if t.kind == "better":
                    per = [r["mean_b"] - x - t.margin for x in xs] if side == "a" else \
                        [x - r["mean_a"] - t.margin for x in xs]
                else:
                    per = ([x - r["mean_b"] for x in xs] if side == "a"
                           else [r["mean_a"] - x for x in xs])
                seed_of = cw.words(c.experiment, getattr(t, side))
                fig.add_trace(go.Scatter(x=[unit * v for v in per], y=[y] * len(per),
                                         mode="markers",
                                         showlegend=False,
                                         marker={"size": 6, "color": "grey", "opacity": 0.6,
                                                 "symbol": "circle-open" if side == "a"
                                                 else "x-thin",
                                                 "line": {"width": 1, "color": "grey"}},
                                         hovertemplate=f"{label}<br>one seed of {seed_of} "
                                                       f"against the other side's mean: "
                                                       f"%{{x:{fmt}}}<extra></extra>"), i, 1)
            said.append(f"{label}: d = {num(d, fmt)} [{num(lo, fmt)}, {num(hi, fmt)}], "
                        f"{r['verdict']}")
            fig.add_trace(go.Scatter(x=[d], y=[y], mode="markers", showlegend=False,
                                     name=f"{c.key}: {label}",
                                     marker={"size": 10, "color": VERDICT_COLOURS[r["verdict"]],
                                             "line": {"color": "black", "width": 1}},
                                     error_x={"type": "data", "symmetric": False, "array": [hi - d],
                                              "arrayminus": [d - lo], "color": "black"},
                                     hovertemplate=f"{label}<br>d = {num(d, fmt)} [{num(lo, fmt)}, "
                                                   f"{num(hi, fmt)}], "
                                                   f"{r['verdict']}<extra></extra>"), i, 1)
            axis = "" if i == 1 else str(i)
            fig.add_annotation(text="<br>".join(lines), xref=f"x{axis} domain", yref=f"y{axis}",
                               x=0, y=y,
                               yshift=DOT_PX / 2 - 6, xanchor="left", yanchor="bottom",
                               align="left",
                               showarrow=False, font=figure_style.FONT)
        fig.add_vline(x=0, line_color="grey", row=i, col=1)
        fig.update_yaxes(range=[h, 0], showticklabels=False, showgrid=False, zeroline=False,
                         fixedrange=True,
                         row=i, col=1)
    figure_style.title(fig, title or "Effects with their 95 % intervals",
                       "right of the line: the paper's direction (d = b − a − any margin); colour: "
                       "the verdict (pale blue: none, a short run's data); grey: each seed (o: a, "
                       "x: b) against the other side's mean")
    top = fig.layout.margin.t
    fig.update_layout(figure_style.LAYOUT, height=top + BOTTOM_PX + plot,
                      margin={"l": 20, "r": 20, "b": BOTTOM_PX},
                      meta={"alt": "Effects d (the paper's direction above 0) with their 95 % "
                                   "intervals: " + "; ".join(said) + "."})
    return fig
