"""An explorer for "why" (the synthesis page): what each row of the interventions -- the units of
Fig 4 and the swaps of one part -- sees around the lr jump, measured in the very trainings the
claims judge (jump_watch.py).

One slider step per row: that row's seeds drawn in its unit's colour (palette.py), every other row
faint grey, on four small panels that share the steps around the jump: how far apart the weight
layers' input stds are (log10 of the largest over the smallest), the classifier's input std, the
largest branch beside its path (||F(x_l)|| / ||x_l||) and the gradient norm on the first unit's
weights. The slider's label says the row's loss rise at the jump in its recorded runs. A plotly
figure: it works on the static page, without a kernel, and its slider steps from the keyboard
(book/_ext/idmap_keys.js).
"""
from __future__ import annotations

import statistics

from idmap_lib.engine import recipes
from ..evidence import claim_words, judge
from ..evidence.seeds import ALL_SEEDS
from ..evidence.synthesis import PROPERTIES
from ..page import figure_style, palette
from ..page.prose import plain_number
from ..plan import jump_watch

PANELS = (("input_spread", "weight-layer input std,<br>log10 largest / smallest", "linear"),
          ("fc_input_std", "classifier input std", "log"),
          ("branch_ratio_max", "largest branch / path", "log"),
          ("grad_norm_first", "gradient norm, first unit", "log"))
FAINT = "rgba(120, 120, 120, 0.35)"
# The title (a row's name and its rise) sits under plotly's toolbar, which spans a phone's width:
# its first line's top is TITLE_PAD_PX - 16 px from the figure's top, the toolbar's bottom 28 px
# (their boxes in Chromium). Its lines are wrapped for a phone's column (about 330 px: 18 px title
# text, 12.6 px subtitle), since a slider step's new title is not laid out again there.
TITLE_PAD_PX, HEAD_CHARS, SUB_CHARS = 50, 32, 47


def rows_measured(out_dir=None) -> dict:
    """{row: [summary of each recorded seed]} for the ResNet-110 rows (jump_watch.summary), measured
    ones only."""
    found = {}
    for row in (r for r in PROPERTIES if jump_watch.depth_of(r) == 110):
        recs = [jump_watch.measured(jump_watch.spec(row, s), out_dir, compute=False)
                for s in ALL_SEEDS]
        recs = [r for r in recs if r is not None]
        if recs:
            found[row] = [jump_watch.summary(r) for r in recs]
    return found


def _step_name(step: int) -> str:
    return "init" if step == 0 else f"{step} (jump)" if step == 100 else str(step)


def explorer(out_dir=None, height=800):
    """The explorer figure (see the module's docstring); None where no row is measured yet."""
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    found = rows_measured(out_dir)
    if not found:
        return None
    fig = make_subplots(rows=len(PANELS), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[p[1].replace("<br>", " ") for p in PANELS])
    owner = []
    for row, seeds in found.items():
        for s, summ in enumerate(seeds):
            x = [_step_name(f["step"]) for f in summ]
            for k, (key, _, _) in enumerate(PANELS, start=1):
                fig.add_trace(go.Scatter(x=x, y=[f[key] for f in summ], mode="lines+markers",
                                         name=claim_words.words("a_swaps", row), legendgroup=row,
                                         meta={"palette": palette.unit_of(row)[0]},
                                         showlegend=False,
                                         marker=dict(symbol=palette.symbol(row), size=6),
                                         hovertemplate=claim_words.words("a_swaps", row)
                                         + "<br>step %{x}: %{y:.3g}<extra></extra>"), row=k, col=1)
                owner.append(row)
    rises = {r: judge.values("a_swaps", r, recipes.JUMP_PROBE, "lr_jump_rise", out_dir,
                              ALL_SEEDS)[0] for r in found}
    steps = []
    for n, row in enumerate(found, start=1):
        on, said = [o == row for o in owner], claim_words.words("a_swaps", row)
        rise = (f"its loss rose {plain_number(statistics.median(rises[row]), 2)} nats at the jump "
                f"(median of "
                f"{len(rises[row])} runs)" if rises[row] else "no run of it recorded yet")
        steps.append(dict(method="update", label=str(n), value=f"{n}: {said}", args=[{
            "line.color": [palette.colour(o) if o == row else FAINT for o in owner],
            "marker.color": [palette.colour(o) if o == row else FAINT for o in owner],
            "line.width": [3 if x else 1 for x in on], "opacity": [1 if x else 0.6 for x in on]},
            {"title.text": _title(f"{n}. {said[0].upper()}{said[1:]}", rise)[0]}]))
    first = steps[0]["args"][0]
    for i, t in enumerate(fig.data):
        t.line.color, t.marker.color, t.line.width, t.opacity = (first["line.color"][i],
                                                                 first["marker.color"][i],
                                                                  first["line.width"][i],
                                                                  first["opacity"][i])
    for k, (_, _, kind) in enumerate(PANELS, start=1):
        fig.update_yaxes(type=kind, tickfont=figure_style.LEAST_FONT, row=k, col=1)
    fig.update_xaxes(type="category", tickfont=figure_style.LEAST_FONT)
    fig.update_xaxes(title_text="updates so far (the lr jumps at 100)", row=len(PANELS), col=1)
    lines = max(s["args"][1]["title.text"].count("<br>") + 1 for s in steps)  # the longest row's
    fig.update_layout(**figure_style.LAYOUT, height=height,
                      margin=dict(t=TITLE_PAD_PX + figure_style.TITLE_LINE_PX * lines + 40, b=150,
                                  l=60, r=20),
                      title=dict(text=steps[0]["args"][1]["title.text"], x=0, xanchor="left",
                                 xref="paper", y=1, yanchor="top", yref="container",
                                 pad=dict(t=TITLE_PAD_PX)),
                      sliders=[dict(active=0, steps=steps, x=0, len=1.0, y=0, yanchor="top",
                                    pad=dict(t=72),
                                    font=figure_style.LEAST_FONT,
                                    currentvalue=dict(prefix="row ", font=figure_style.FONT))],
                      meta={"alt": alt(found, out_dir)},
                      title_text=steps[0]["args"][1]["title.text"])
    return fig


def _wrap(text: str, chars: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, chars, break_on_hyphens=False)


def _title(head: str, sub: str) -> tuple[str, int]:
    """A row's title (`head`, its subtitle `sub` smaller) in lines that fit a phone (soft breaks,
    as figure_style.soft_wrap writes them), and how many lines it has."""
    heads, subs = _wrap(head, HEAD_CHARS), _wrap(sub, SUB_CHARS)
    return (" <br>".join(heads) + (f"<br><sup>{' <br>'.join(subs)}</sup>" if subs else ""),
            len(heads) + len(subs))


def alt(found: dict, out_dir=None) -> str:
    """The explorer's text alternative: what it shows, for how many rows and seeds, and each row's
    median rise at the jump (the number its slider's titles give)."""
    n = sum(len(s) for s in found.values())
    rises = {r: judge.values("a_swaps", r, recipes.JUMP_PROBE, "lr_jump_rise", out_dir,
                              ALL_SEEDS)[0] for r in found}
    said = "; ".join(f"{claim_words.words('a_swaps', r)} {plain_number(statistics.median(x), 2)}"
                     for r, x in rises.items() if x)
    return (f"An explorer over {len(found)} rows of the interventions ({n} measured trainings): "
            f"for the row picked with the slider, "
            f"{', '.join(p[1].replace('<br>', ' ') for p in PANELS)}, at initialisation and around "
            f"the lr jump at step 100. The loss rose at the jump by (median, nats): {said}.")


def alt_caption(out_dir=None) -> str:
    """The caption under the explorer: its text alternative, and the rows not measured yet."""
    found = rows_measured(out_dir)
    missing = [claim_words.words("a_swaps", r) for r in PROPERTIES if jump_watch.depth_of(r) == 110
               and r not in found]
    return alt(found, out_dir) + (f" Not measured yet: {'; '.join(missing)}." if missing else "")
