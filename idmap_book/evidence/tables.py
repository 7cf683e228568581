"""How the book prints a table and a number: ``styled`` (rounded, wrapped, verdicts coloured:
VERDICT_COLOURS), ``num`` (no sign on a value that rounds to zero), ``mean_sd`` over seeds,
``drop_if_empty`` (no column that says nothing). Every table of chapters 7-11 goes through here.
"""
from __future__ import annotations

import statistics

from .rule import NEEDS_FULL, NOT_TESTABLE

# green and red only for a tested verdict; a short run's data on a claim it cannot test (NEEDS_FULL)
# and a comparison with a side that did not train (NOT_TESTABLE) in neutral colours
VERDICT_COLOURS = {"reproduced": "#d9f2d9", "contradicted": "#f8d7d7", "inconclusive": "#fff3cd",
                   NOT_TESTABLE: "#e4e4e4", NEEDS_FULL: "#dbe8f6", "not run yet": "#eeeeee"}
# the words for the book's own hypotheses
OURS = {"reproduced": "supported", "contradicted": "not supported"}
VERDICT_COLOURS.update({OURS[k]: VERDICT_COLOURS[k] for k in OURS})


def styled(df):
    """For reading: numbers rounded, empty cells '–', long text wrapped, verdicts coloured."""
    import pandas as pd

    colour = VERDICT_COLOURS
    num = [c for c in df.columns if df[c].dtype.kind == "f"]
    s = df.style.format({c: "{:.2f}" for c in num}, na_rep="–")
    # long keys (t1_shortcut_only_gating_...) break after an underscore, not mid-word
    if pd.api.types.is_string_dtype(df.index):
        s = s.format_index(lambda k: str(k).replace("_", "_\u200b"), axis=0)
    if "verdict" in df.columns:
        s = s.map(lambda v: f"background-color: {colour.get(v, '')}", subset=["verdict"])
    if df.attrs.get("caption"):  # (e.g. how a table's starred times are derived)
        s = s.set_caption(df.attrs["caption"])
    return s.set_table_styles([{"selector": "td, th",
                                "props": "font-size: 0.85em; padding: 0.2em 0.6em; "
                                         "vertical-align: top; text-align: left;"},
                               {"selector": "th.row_heading",
                                "props": "overflow-wrap: normal; min-width: 7em;"}])


def num(x, fmt=".2f", sign=False) -> str:
    """x formatted (with its sign, + or -, if `sign`), without the sign of a value that rounds to
    zero ("-0.0" reads as a direction)."""
    t = f"{x:+{fmt}}" if sign else f"{x:{fmt}}"
    return t.lstrip("+-") if float(t) == 0 else t


def drop_if_empty(df, column):
    """`df` without `column` where no row has anything in it (zeros, empty strings): a column that
    says nothing."""
    return df if df[column].any() else df.drop(columns=column)


def mean_sd(xs, unit=1.0, digits=2) -> str:
    """'41.23 ± 1.05' over the seeds found, times `unit` ('41.23' for one seed, '–' for none)."""
    if not xs:
        return "–"
    m = num(unit * statistics.fmean(xs), f".{digits}f")
    return m if len(xs) == 1 else f"{m} ± {unit * statistics.stdev(xs):.{digits}f}"
