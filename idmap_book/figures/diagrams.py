"""Drawings of residual units as SVG, made from the modules themselves (Paper A Figs 2 and 4).

`draw_units` takes `unit_layout(unit)` dicts (see introspect.py), so a drawing shows exactly the ops
the code runs: x_l enters at the top; the shortcut h runs down the left, the gate g(x) (Fig 2c, d)
in the middle and the residual branch F on the right; both meet at the addition, then f, then
x_{l+1}. The gate's path is dashed, in the sigmoid's colour. The factors on each path (Table 1's "on
shortcut" / "on F" columns) are written beside the arrows. The SVG is self-contained: it shows in
the static book, in Jupyter and in Colab.
"""

from __future__ import annotations

from html import escape

BOX_W, BOX_H, GAP = 104, 22, 12
COLORS = {  # fill, stroke per kind of op
    "conv": ("#dbe8fb", "#4a74b4"), "linear": ("#dbe8fb", "#4a74b4"),
    "BN": ("#fdf0c8", "#b48a1e"), "ReLU": ("#dcf2dc", "#3f8f3f"), "sigmoid": ("#f7dcef", "#a4468a"),
    "dropout": ("#e6e6e6", "#777777"), "subsample": ("#e6e6e6", "#777777"),
}
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


def _kind(op):
    for key in COLORS:
        if key in op:
            return key
    return "dropout"


def _lines(op, limit=17):
    """Split a long op name at its commas into lines of at most about `limit` characters."""
    lines = []
    for word in op.split(", "):
        if lines and len(lines[-1]) + 2 + len(word) <= limit:
            lines[-1] += ", " + word
        else:
            lines.append(word)
    return lines


def _box_h(op):
    return BOX_H + 12 * (len(_lines(op)) - 1)


def _box(x, y, op):
    fill, stroke = COLORS[_kind(op)]
    lines = _lines(op)
    text = "".join(
        f"<text x='{x:.1f}' y='{y + 15 + 12 * i:.1f}' text-anchor='middle' font-size='11' {FONT}>"
        f"{escape(line)}</text>"
        for i, line in enumerate(lines)
    )
    return (
        f"<rect x='{x - BOX_W / 2:.1f}' y='{y:.1f}' width='{BOX_W}' height='{_box_h(op)}' rx='4' "
        f"fill='{fill}' stroke='{stroke}'/>" + text
    )


# the gate's path g(x) (Fig 2c, d): dashed, in the sigmoid's colour
GATE_COLOR = COLORS["sigmoid"][1]


def _line(x1, y1, x2, y2, dashed=False, arrow=True, color="#333"):
    dash = " stroke-dasharray='3 2'" if dashed else ""
    head = " marker-end='url(#idmap-arrow)'" if arrow else ""
    return (f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' stroke='{color}' "
            f"stroke-width='1.3'{dash}{head}/>")


def _text(x, y, s, size=12, anchor="middle", weight="normal", color="#222", italic=False):
    style = " font-style='italic'" if italic else ""
    return (f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}' font-size='{size}' "
            f"font-weight='{weight}' fill='{color}'{style} {FONT}>{s}</text>")


def _factor(x, y, factor, anchor):
    return _text(x, y, "× " + escape(factor), size=11, anchor=anchor, color="#a02020")


def _stack(x, y, ops, dashed=False, color="#333"):
    """Boxes for `ops` from y downwards, joined by arrows; returns (svg, y below the last box)."""
    parts = []
    for op in ops:
        parts.append(_box(x, y, op))
        y += _box_h(op)
        parts.append(_line(x, y, x, y + GAP, dashed=dashed, color=color))
        y += GAP
    return "".join(parts), y


def _panel(layout, title, x0, add_y, top):
    """One unit, its addition at height add_y; returns (svg, panel width, bottom y)."""
    has_gate = bool(layout["gate"])
    cols = 3 if has_gate else 2
    width = cols * (BOX_W + 14) + 10
    xs = x0 + 10 + BOX_W / 2
    xg = xs + BOX_W + 14
    xr = x0 + width - 10 - BOX_W / 2
    xm = (xs + xr) / 2  # the trunk: x_l, the addition, f, x_{l+1}
    out = [_text(x0 + width / 2, top, escape(title), size=13, weight="bold")]

    y = top + 22
    out.append(_text(xm, y + 4, "x<tspan baseline-shift='sub' font-size='9'>l</tspan>", 14,
                     italic=True))
    y += 12
    out.append(_line(xm, y, xm, y + GAP))
    y += GAP
    svg, y = _stack(xm, y, layout["preact"])  # shared pre-activation, before the split
    out.append(svg)
    split = y
    out.append(f"<circle cx='{xm:.1f}' cy='{split:.1f}' r='2.5' fill='#333'/>")

    # branches: shortcut h (left), gate g (middle), residual F (right)
    residual = layout["residual"]
    out.append(_line(xm, split, xr, split, arrow=False))
    out.append(_line(xr, split, xr, split + GAP))
    svg, res_end = _stack(xr, split + GAP, residual)
    out.append(svg)
    out.append(_line(xr, res_end, xr, add_y, arrow=False))
    out.append(_text(xr + 6, split - 5, "F", 12, anchor="start", italic=True, color="#4a74b4"))

    out.append(_line(xm, split, xs, split, arrow=False))
    shortcut = layout["shortcut"]
    if shortcut:
        out.append(_line(xs, split, xs, split + GAP))
        svg, sc_end = _stack(xs, split + GAP, shortcut)
        out.append(svg)
        out.append(_line(xs, sc_end, xs, add_y, arrow=False))
    else:
        out.append(_line(xs, split, xs, add_y, arrow=False))
    out.append(_text(xs - 6, split - 5, "h", 12, anchor="end", italic=True,
                     color="#4a74b4"))

    if has_gate:
        out.append(_line(xm, split, xg, split, dashed=True, arrow=False, color=GATE_COLOR))
        out.append(_line(xg, split, xg, split + GAP, dashed=True, color=GATE_COLOR))
        svg, g_end = _stack(xg, split + GAP, layout["gate"], dashed=True, color=GATE_COLOR)
        out.append(svg)
        out.append(_text(xg, g_end + 11, "g(x)", 11, italic=True, color="#a4468a"))

    # factors written just above the addition on each path
    # (a factor that is an op already drawn on its path, like "1x1 conv" or "dropout 0.5", is not
    # written again)
    fy = add_y - 12
    on_shortcut = layout["on_shortcut"]
    if on_shortcut != "1" and not any(op.startswith(on_shortcut) for op in shortcut):
        out.append(_factor(xs + 5, fy, on_shortcut, "start"))
    on_residual = layout["on_residual"]
    if layout.get("gated"):
        on_residual = "ReLU(k)" if on_residual == "1" else f"ReLU(k)·{on_residual}"
    if on_residual != "1" and not any(op.startswith(on_residual) for op in residual):
        out.append(_factor(xr - 5, fy, on_residual, "end"))

    # addition, then f, then x_{l+1}
    out.append(_line(xs, add_y, xm - 9, add_y))
    out.append(_line(xr, add_y, xm + 9, add_y))
    out.append(f"<circle cx='{xm:.1f}' cy='{add_y:.1f}' r='9' fill='white' stroke='#333' "
               f"stroke-width='1.3'/>")
    out.append(_text(xm, add_y + 5, "+", 15, weight="bold"))
    y = add_y + 9
    out.append(_line(xm, y, xm, y + GAP))
    svg, y = _stack(xm, y + GAP, layout["post"])
    out.append(svg)
    out.append(_text(xm, y + 10, "x<tspan baseline-shift='sub' font-size='9'>l+1</tspan>", 14,
                     italic=True))
    if layout["post"]:
        out.append(_text(xm + BOX_W / 2 + 4, add_y + 9 + GAP + 4, "f", 12, anchor="start",
                         italic=True, color="#4a74b4"))
    return "".join(out), width, y + 22


def _row(layouts, titles):
    """One row of panels sharing the height of their addition; returns (svg, width, height)."""
    top = 18
    head = top + 22 + 12 + GAP

    def height(ops):
        return sum(_box_h(op) + GAP for op in ops)

    longest = max(
        height(l["preact"]) + max(height(l["residual"]), height(l["shortcut"]),
                                  height(l["gate"]) + 16)
        for l in layouts
    )
    add_y = head + longest + GAP + 26
    parts, x, bottom = [], 0, 0
    for layout, title in zip(layouts, titles):
        svg, w, b = _panel(layout, title, x, add_y, top)
        parts.append(svg)
        x += w + 16
        bottom = max(bottom, b)
    return "".join(parts), x - 16, bottom


def draw_units(layouts, titles=None, per_row=3):
    """An SVG string drawing the units described by `layouts` (dicts from `unit_layout`).

    titles: one caption per unit (default: the layout's unit and shortcut names).
    per_row: panels per row (rows keep the drawing readable in a book's text column).
    """
    layouts = list(layouts)
    if not layouts:
        raise ValueError("draw_units needs at least one unit_layout(...) dict")
    if titles is None:
        titles = [f"{l.get('unit', '?')} / {l.get('shortcut_name', '?')}" for l in layouts]
    titles = list(titles)
    if len(titles) != len(layouts):
        raise ValueError(f"got {len(titles)} titles for {len(layouts)} layouts")
    if not (isinstance(per_row, int) and per_row > 0):
        raise ValueError(f"per_row must be a positive integer, got {per_row!r}")
    rows, width, height = [], 0, 0
    for i in range(0, len(layouts), per_row):
        svg, w, h = _row(layouts[i:i + per_row], titles[i:i + per_row])
        rows.append(f"<g transform='translate(0,{height:.0f})'>{svg}</g>")
        width, height = max(width, w), height + h + 10
    height -= 10
    defs = ("<defs><marker id='idmap-arrow' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' "
            "markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' "
            "fill='#333'/></marker></defs>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width:.0f} {height:.0f}' "
            f"width='{width:.0f}' height='{height:.0f}' style='max-width:100%;height:auto'>"
            f"{defs}{''.join(rows)}</svg>")
