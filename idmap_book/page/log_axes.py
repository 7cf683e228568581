"""Log axes labelled in full (1 2 5 10 20 ..., not plotly's minor "2 3 ... 10 2 3"): ``log_ticks``
for a range, ``readable_log_axes`` for every log axis of a figure, never more than ``MAX_TICKS``
labels; ``log_range`` for a log axis's range and ``log_band`` for a spread band on one (computed in
log space). The book's renderer applies ``readable_log_axes`` to every figure of the site
(book/__init__.py).
"""
from __future__ import annotations

import math
import re

# labels on one axis, at most: more pile into a smear (1e-46 to 1e41 at 1, 2, 5 a decade)
MAX_TICKS = 12


def tick_label(v: float, powers: bool = False) -> str:
    """A log tick's label: 0.05, 20, 5000 in full; a power of ten beyond them (or any but 1, where
    `powers`: an axis labelled in powers of ten only) as 10<sup>-46</sup>."""
    if 1e-3 <= v < 1e5 and not (powers and v != 1):
        return f"{v:g}"
    e = round(math.log10(v))
    return f"10<sup>{e}</sup>" if math.isclose(v, 10.0 ** e, rel_tol=1e-9) else f"{v:.0e}"


def log_ticks(lo: float, hi: float, max_ticks: int = MAX_TICKS) -> dict:
    """Tick values and labels for a log axis from `lo` to `hi`: 1, 2, 5 of each decade, written out
    in full (plotly's own minor labels read "2 3 ... 10 2 3", where the second "2" is 20); finer on
    a short range, and on a long one powers of ten only, every 1, 2, 5, 10, 20 ... decades, so that
    there are never more than `max_ticks` labels."""
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"a log axis needs 0 < lo < hi, got lo={lo}, hi={hi}")
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    # short: more
    for ms in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 4, 5, 6, 8)):
        vals = [m * 10.0 ** e for e in decades for m in ms if lo <= m * 10.0 ** e <= hi]
        if len(vals) >= 4:
            break
    # long: powers of ten, every `every` decades (a multiple of it, so 10^-40, 10^-30)
    if len(vals) > max_ticks:
        first, last = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
        every = next(s * 10 ** p for p in range(6) for s in (1, 2, 5)
                     if (last - first) // (s * 10 ** p) + 1 <= max_ticks)
        vals = [10.0 ** e for e in range(first, last + 1) if e % every == 0]
        # one style on an axis: 10^-5 ... 10^5, not 10^-4, 0.001
        powers = not all(1e-3 <= v < 1e5 for v in vals)
        return {"tickvals": vals, "ticktext": [tick_label(v, powers=powers) for v in vals]}
    return {"tickvals": vals, "ticktext": [tick_label(v) for v in vals]}


def log_range(values, pad: float = 0.05, least: float = 0.6) -> list[float]:
    """A log axis's range (log10 units, as plotly takes it) holding every positive finite value,
    padded by `pad` of its span at each end, and at least `least` decades wide (a flat curve at 1
    gets 10^-0.3 to 10^0.3)."""
    logs = [math.log10(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not logs:
        raise ValueError("a log axis needs at least one positive finite value")
    lo, hi = min(logs), max(logs)
    mid, half = (lo + hi) / 2, max((hi - lo) * (1 + 2 * pad), least) / 2
    return [mid - half, mid + half]


def log_band(samples, axis: int = 0):
    """A spread band for a log axis, computed in log space: (geometric mean, its value times and
    divided by the geometric standard deviation) over `axis` of positive `samples` (seeds x steps,
    say). A band of mean +- sd in linear space falls below every seed on a log axis where the seeds
    spread over decades; this one never leaves the seeds' own range."""
    import numpy as np

    a = np.asarray(samples, dtype=float)
    if (a <= 0).any() or not np.isfinite(a).all():
        raise ValueError("a band on a log axis needs positive finite values")
    logs = np.log10(a)
    mean, sd = logs.mean(axis=axis), logs.std(axis=axis)
    return 10 ** mean, 10 ** (mean - sd), 10 ** (mean + sd)


def _plotly_values(v):
    """A trace's values as numbers: a list, or plotly's encoded array ({"dtype", "bdata"}: base64 of
    the buffer)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(v["bdata"]),
                             dtype=np.dtype(v["dtype"])).astype(float).ravel().tolist()
    return v


def readable_log_axes(fig_dict: dict) -> dict:
    """Every log axis of a figure (its dict) without ticks of its own gets ``log_ticks`` over the
    positive values of the traces drawn on it (or over its range, where set): the book's renderer
    applies it to every figure of the site, whose log axes would otherwise carry plotly's minor
    labels ("2 3 ... 10 2 3")."""
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
                        vals += [float(v) for v in _plotly_values(t.get(m.group(1), []))
                                 if v is not None and v > 0]
                    # not numbers (text, categories): leave the axis as it is
                    except (TypeError, ValueError):
                        vals = []
                        break
            vals = [v for v in vals if math.isfinite(v)]
            if len(vals) < 2:
                continue
            lo, hi = min(vals), max(vals)
        if hi > lo > 0:
            ax.update(log_ticks(lo, hi))
    return fig_dict
