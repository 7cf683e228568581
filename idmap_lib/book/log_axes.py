"""Log axes labelled in full (1 2 5 10 20 ..., not plotly's minor "2 3 ... 10 2 3"): ``log_ticks`` for a range,
``readable_log_axes`` for every log axis of a figure. The book's renderer applies the latter to every figure of the
site (book/__init__.py).
"""
from __future__ import annotations

import math
import re


def log_ticks(lo: float, hi: float) -> dict:
    """Tick values and labels for a log axis from `lo` to `hi`: 1, 2, 5 of each decade, written out in full (plotly's
    own minor labels read "2 3 ... 10 2 3", where the second "2" is 20)."""
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    for ms in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 4, 5, 6, 8)):  # short: more
        vals = [m * 10.0 ** e for e in decades for m in ms if lo <= m * 10.0 ** e <= hi]
        if len(vals) >= 4:
            break
    return {"tickvals": vals, "ticktext": [f"{v:g}" for v in vals]}


def _plotly_values(v):
    """A trace's values as numbers: a list, or plotly's encoded array ({"dtype", "bdata"}: base64 of the buffer)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(float).ravel().tolist()
    return v


def readable_log_axes(fig_dict: dict) -> dict:
    """Every log axis of a figure (its dict) without ticks of its own gets ``log_ticks`` over the positive values of
    the traces drawn on it (or over its range, where set): the book's renderer applies it to every figure of the site,
    whose log axes would otherwise carry plotly's minor labels ("2 3 ... 10 2 3")."""
    layout = fig_dict.get("layout", {})
    for name, ax in list(layout.items()):
        m = re.fullmatch(r"([xy])axis(\d*)", name)
        if not m or not isinstance(ax, dict) or ax.get("type") != "log" or "tickvals" in ax:
            continue
        ref = m.group(1) + m.group(2)
        if ax.get("range"):
            lo, hi = (10 ** v for v in ax["range"])
        else:
            vals = []
            for t in fig_dict.get("data", []):
                if t.get(f"{m.group(1)}axis", m.group(1)) == ref:
                    try:
                        vals += [float(v) for v in _plotly_values(t.get(m.group(1), [])) if v is not None and v > 0]
                    except (TypeError, ValueError):  # not numbers (text, categories): leave the axis as it is
                        vals = []
                        break
            vals = [v for v in vals if math.isfinite(v)]
            if len(vals) < 2:
                continue
            lo, hi = min(vals), max(vals)
        if hi > lo > 0:
            ax.update(log_ticks(lo, hi))
    return fig_dict
