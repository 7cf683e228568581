"""How every plotly figure of the book reads: one definition of its fonts, its legend's place and
its caption line, which every figure module applies, so that no module types its own sizes.

- :data:`FONT_PX`: the figure's text, 13 px (axis titles, ticks, legend, annotations). plotly draws
  a title at 1.4 times it (18 px) and a title's ``<sup>`` subtitle at 70 % of that, 12.6 px; over
  plotly's default 12 px the subtitle would be 11.9 px. :data:`LAYOUT` sets it:
  ``fig.update_layout(figure_style.LAYOUT, ...)``.
- :data:`LEGEND_ABOVE`: a horizontal legend above the plot, left-aligned (chapters 2-4);
  :data:`LEGEND_BELOW`: the same at the figure's foot, for the multi-panel figures whose panel
  titles stand above and for long legends (placed in the figure's coordinates, plotly widens the
  bottom margin to hold it: it never meets the x-axis titles, however tall the plot). A phone wraps
  either into rows; a legend beside the plot (plotly's default) squeezes the plot or is cut off
  there.
- :data:`LAYOUT_LEGEND_ABOVE`: the font, the legend above the plot and the title above it,
  left-aligned, with the room they need (up to three rows of legend): chapters 2-4's figures
  (``slider_figures.THEORY_LAYOUT``), and any one-panel figure.
- :func:`title`: a title and its subtitle at the figure's top-left, wrapped, with the top margin
  they need.
- :func:`caption`: a line under the plot for what a title must not carry (the hardware a run trained
  on, its date), at :data:`LEAST_PX`, the smallest text a figure may have.
"""
from __future__ import annotations

FONT_PX = 13
LEAST_PX = 12  # px: nothing in a figure smaller (tests/site_hygiene.py's small_fonts)
FONT = {"size": FONT_PX}
LEAST_FONT = {"size": LEAST_PX}
LAYOUT = {"font": FONT}
LEGEND_ABOVE = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom",
                "font": FONT,
                "bgcolor": "rgba(255,255,255,0.85)"}
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0,
                "yanchor": "bottom",
                "font": FONT}
CAPTION_FONT = {**LEAST_FONT, "color": "grey"}
LAYOUT_LEGEND_ABOVE = dict(
    font=FONT,
    title=dict(font=dict(size=FONT_PX + 2), x=0, xanchor="left", xref="paper", y=1, yanchor="top",
               # below plotly's toolbar, which a tap shows on a phone
               yref="container", pad=dict(t=30)),
    legend=LEGEND_ABOVE,
    # the toolbar, the title, then a legend of up to three rows (a phone)
    margin=dict(l=64, r=16, t=118, b=56),
)


CAPTION_BELOW_PX = 56  # under the plot's bottom edge: below the x-axis tick labels and title
# a caption line at most: about 330 px at 12 px, a phone's column (plotly does not wrap text)
CAPTION_CHARS = 52
CAPTION_LINE_PX = 17  # a caption line's height (12 px text, plotly's 1.3 em spacing, rounded up)
LEGEND_ROW_PX = 22  # a row of a horizontal legend at 13 px
# a title's line (18 px) and a <sup> subtitle's (12.6 px): ~570 px each
TITLE_CHARS, SUBTITLE_CHARS = 72, 100
# the title's top under the figure's; plotly spaces its lines at 1.3 em, <sup> too
TITLE_PAD_PX, TITLE_LINE_PX = 16, 24


def soft_wrap(text: str, chars: int) -> tuple[str, int]:
    """`text` in lines of at most `chars` (its own ``<br>`` kept; the breaks added are soft, ``
    <br>``, which a phone's layout joins and wraps again at its width: book/_ext/idmap_phone.js),
    and how many lines it has."""
    import textwrap

    lines = [textwrap.wrap(line, chars) or [""] for line in text.split("<br>")]
    return "<br>".join(" <br>".join(ws) for ws in lines), sum(map(len, lines))


def title(fig, head: str, sub: str = "", room: int = 44):
    """Give `fig` the title `head` with the subtitle `sub` (a smaller line, ``<sup>``), both wrapped
    (:func:`soft_wrap`), anchored at the figure's top-left so that more lines push the plot down
    instead of growing into the subplot titles under them (plotly's default centres the first line
    in the top margin), and the top margin that holds them with `room` px under them (a subplot
    title's line); returns `fig`."""
    head, n = soft_wrap(head, TITLE_CHARS)
    if sub:
        sub, m = soft_wrap(sub, SUBTITLE_CHARS)
        head, n = f"{head}<br><sup>{sub}</sup>", n + m
    fig.update_layout(title=dict(text=head, x=0, xanchor="left", xref="paper", y=1, yanchor="top",
                                 yref="container",
                                 pad=dict(t=TITLE_PAD_PX)),
                      margin_t=TITLE_PAD_PX + TITLE_LINE_PX * n + room)
    return fig


def caption(fig, text: str, below: int = CAPTION_BELOW_PX, legend_rows: int = 0):
    """Write `text` under the plot, left-aligned, `below` px under its bottom edge, in lines of at
    most :data:`CAPTION_CHARS` (:func:`soft_wrap`), and make the bottom margin hold it -- and, under
    it, a legend of `legend_rows` rows at the figure's foot (:data:`LEGEND_BELOW`, which it sets: as
    many rows as the legend takes on a phone, where it wraps); returns `fig`."""
    text, n = soft_wrap(text, CAPTION_CHARS)
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0, y=0,
                       yshift=-below, xanchor="left", yanchor="top", align="left",
                       font=CAPTION_FONT)
    if legend_rows:
        fig.update_layout(legend=LEGEND_BELOW)
    fig.update_layout(margin_b=max(fig.layout.margin.b or 0,
                                   below + CAPTION_LINE_PX * n + 12 + LEGEND_ROW_PX * legend_rows))
    return fig


def _plain(text) -> str:
    """A figure's label as plain words: no HTML tags, no TeX dollars or backslashes, one line."""
    import re

    text = re.sub(r"<br\s*/?>", "; ", str(text or ""))
    text = re.sub(r"<[^>]+>|\$|\\(mathrm|mathbf|text)\b|[{}\\]", "", text)
    return " ".join(text.split()).strip(" ;:")


def _axis_titles(layout: dict, prefix: str) -> list:
    """The distinct titles of a figure's axes named `prefix` (xaxis, xaxis2, ...), as plain
    words."""
    out = []
    for k in sorted(k for k in layout if k.startswith(prefix)):
        t = (layout[k] or {}).get("title")
        t = _plain(t.get("text") if isinstance(t, dict) else t)
        if t and t not in out:
            out.append(t)
    return out


def alt_text(fig) -> str:
    """The figure's text alternative (WCAG 2.1 AA, 1.1.1), one sentence: the one a figure's module
    computed (``layout.meta.alt``), else what its title, axes and series say: "<title>: <y> against
    <x>, for <series>"."""
    d = fig if isinstance(fig, dict) else fig.to_plotly_json()
    layout = d.get("layout", {})
    meta = layout.get("meta")
    if isinstance(meta, dict) and meta.get("alt"):
        return _plain(meta["alt"])
    title = layout.get("title")
    title = _plain(title.get("text") if isinstance(title, dict) else title)
    ys, xs = _axis_titles(layout, "yaxis"), _axis_titles(layout, "xaxis")
    if not ys:  # panels titled above (make_subplots): what each shows
        ys = [t for t in (_plain(a.get("text")) for a in layout.get("annotations", [])
                          if a.get("yanchor") == "bottom" and a.get("yref") == "paper") if t][:4]
    y, x = " and ".join(ys), " and ".join(xs)
    names = []
    for t in d.get("data", []):
        n = _plain(t.get("name"))
        if n and t.get("showlegend", True) is not False and n not in names:
            names.append(n)
    what = f"{y} against {x}" if y and x else (y or x)
    series = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    sentence = ": ".join(p for p in (title, what) if p) or "A figure"
    return sentence + (f", for {series}" if series else "") + "."
