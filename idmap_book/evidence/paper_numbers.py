"""The papers' published numbers as data, keyed like ``recipes.EXPERIMENTS`` (experiment ->
variant).

Every value is copied from the papers' tables (checked against their full texts, see
``shared/reference/papers.md``); the book prints them beside our runs, labelled as the papers'. An
entry is ``{"value": float | "fail", "unit": "test error %", "source": "Paper A Table 1", "remark":
str}``; Paper B's gated MNIST nets also carry ``mean_k`` (Paper B Table 2, the mean learned gate k).

"fail" is Paper A's word for a run whose test error stayed above 20% (Table 1); the paper gives no
number.
"""
from __future__ import annotations

from idmap_lib.engine import recipes
from idmap_lib.models.registry import FAIL, SHORTCUT_ROWS, UNIT_ROWS

ERR = "test error %"
FAIL_MEANING = "fail: Paper A's mark for test error > 20%"


def _e(value, source, remark=""):
    return {"value": value, "unit": ERR, "source": source, "remark": remark}


_A1 = "Paper A Table 1"
_A2 = "Paper A Table 2"
_A3 = "Paper A Table 3"
_B1 = "Paper B Table 1"
_B3 = "Paper B Table 3"
_B4 = "Paper B Table 4"
_MEDIAN = "ResNet-110, CIFAR-10, median of 5 runs"

PAPER = {
    # Paper A Table 1: shortcut variants on the original ResNet-110, CIFAR-10 (each shortcut's
    # registry row holds its numbers)
    "a_table1_shortcuts": {},
    # Paper A Table 2: activation variants, CIFAR-10
    # (each unit's registry row holds its numbers)
    "a_table2_activations": {
        f"{unit}-{d}": _e(row.paper[d], _A2, f"{row.figure.removeprefix('Paper A ')}"
                          f"{' ' + row.words if row.named else ''}, ResNet-{d}")
        for d in (110, 164) for unit, row in UNIT_ROWS.items() if d in row.paper},
    # Paper A Table 3: original vs pre-activation, CIFAR-10 and CIFAR-100
    "a_table3_preact": {
        "c10-110-single-original": _e(9.90, _A3,
                                      "CIFAR-10, ResNet-110 with 1-layer skip, original unit"),
        "c10-110-single-full_preact": _e(8.91, _A3,
                                         "CIFAR-10, ResNet-110 with 1-layer skip, pre-activation"),
        "c10-110-original": _e(6.61, _A3, "CIFAR-10, ResNet-110, original unit"),
        "c10-110-full_preact": _e(6.37, _A3, "CIFAR-10, ResNet-110, pre-activation"),
        "c10-164-original": _e(5.93, _A3, "CIFAR-10, ResNet-164, original unit"),
        "c10-164-full_preact": _e(5.46, _A3, "CIFAR-10, ResNet-164, pre-activation"),
        "c10-1001-original": _e(7.61, _A3, "CIFAR-10, ResNet-1001, original unit"),
        "c10-1001-full_preact": _e(4.92, _A3, "CIFAR-10, ResNet-1001, pre-activation (median of 5; "
                                   "mean 4.89 ± 0.14, Table 4)"),
        "c100-164-original": _e(25.16, _A3, "CIFAR-100, ResNet-164, original unit"),
        "c100-164-full_preact": _e(24.33, _A3, "CIFAR-100, ResNet-164, pre-activation"),
        "c100-1001-original": _e(27.82, _A3, "CIFAR-100, ResNet-1001, original unit"),
        "c100-1001-full_preact": _e(22.71, _A3,
                                    "CIFAR-100, ResNet-1001, pre-activation (median of 5; "
                                    "mean 22.68 ± 0.22, Table 4)"),
    },
    # Paper B Table 1 (MNIST test error %) and Table 2 (mean learned k of the gated nets)
    "b_mnist": {},
    # Paper B Table 3: CIFAR-10
    "b_resnet32": {
        "original": _e(7.16, _B3, "pre-activation ResNet-32 (n=5, 15 blocks)"),
        "gated": _e(6.67, _B3, "gated pre-activation ResNet-32 (15 gates k)"),
        "gated-k_decay": _e(7.04, _B3, "gated ResNet-32 with weight decay on k"),
    },
    "b_wrn": {
        "plain": _e(3.89, _B3, "Wide ResNet (4,10) + dropout 0.3 = WRN-28-10, 36.5M parameters"),
        "gated": _e(3.65, _B3, "Wide Gated ResNet (4,10) + dropout 0.3 (12 gates k)"),
        "gated-k_decay": _e(3.74, _B3, "Wide Gated ResNet (4,10) + dropout 0.3, weight decay on k"),
        "c100-plain": _e(18.85, _B4, "CIFAR-100, Wide ResNet (4,10) + dropout 0.3"),
        "c100-gated": _e(18.27, _B4, "CIFAR-100, Wide Gated ResNet (4,10) + dropout 0.3"),
    },
}

# Paper B Table 1: d -> (plain, ResNet, GResNet) test error %; Table 2: d -> mean k of the GResNet
_B_MNIST = {2: (2.29, 2.20, 2.17), 10: (2.22, 1.64, 1.60), 20: (2.21, 1.61, 1.57),
            50: (60.37, 1.62, 1.48), 100: (90.20, 1.50, 1.26)}
_B_MEAN_K = {2: 5.58, 10: 2.54, 20: 1.73, 50: 1.04, 100: 0.67}
for _d, _errs in _B_MNIST.items():
    for _kind, _err in zip(("plain", "resnet", "gresnet"), _errs):
        _entry = _e(_err, _B1, f"MNIST, {_kind} MLP, d={_d} layers of 50 units, 100 epochs")
        if _kind == "gresnet":
            _entry["mean_k"] = _B_MEAN_K[_d]
            _entry["remark"] += f"; mean learned k {_B_MEAN_K[_d]} (Paper B Table 2)"
        PAPER["b_mnist"][f"{_kind}-d{_d}"] = _entry
    # chapter 10's probe trains Paper B's GResNet with Keras's defaults: the paper's number is the
    # GResNet's
    PAPER["b_mnist"][f"gresnet_keras-d{_d}"] = {**_entry,
                                                "remark": _entry["remark"]
                                                + " (the paper's GResNet; "
                                                "ours with Keras's initialisation and BN settings)"}
del _d, _errs, _kind, _err, _entry


# Paper A Table 1's remarks column, beside its rows' numbers
_T1_REMARKS = {"constant_scaling-0-1": "a plain net", "constant_scaling-0.5-0.5": "frozen gating",
               "exclusive_gating-b0": "b_g = 0 to -5 all fail"}
for _v in recipes.EXPERIMENTS["a_table1_shortcuts"]["variants"]:
    _kw = recipes.config("a_table1_shortcuts", _v)["model"]["kwargs"]
    _row = SHORTCUT_ROWS[_kw["shortcut"]]
    _set = tuple(_kw.get(o, d) for o, d in _row.options.items())
    if _set in _row.paper:  # the shortcut's options as this variant sets them
        _said = "".join(f", {o} {x:g}" for o, x in zip(_row.options, _set))
        PAPER["a_table1_shortcuts"][_v] = _e(_row.paper[_set], _A1, "; ".join(filter(None, (
            f"{_row.figure.removeprefix('Paper A ')} {_row.words}{_said}", _T1_REMARKS.get(_v),
            FAIL_MEANING if _row.paper[_set] == FAIL else "", _MEDIAN))))
del _v, _kw, _row, _set


def paper_number(experiment: str, variant: str) -> dict | None:
    """The paper's entry for this experiment variant, or None if the paper reports none."""
    if experiment not in PAPER:
        raise ValueError(f"unknown experiment {experiment!r}; valid: {', '.join(PAPER)}")
    return PAPER[experiment].get(variant)


def source(experiment: str, variants=None) -> str:
    """The tables an experiment's numbers come from ("Paper A Table 1" ...): of the `variants` shown
    where given (b_wrn's CIFAR-100 rows, Table 4, are not among its CPU-scale runs); "" when none of
    them has a number."""
    entries = PAPER[experiment].values() if variants is None else \
        [PAPER[experiment][v] for v in variants if v in PAPER[experiment]]
    return " / ".join(sorted({e["source"] for e in entries}))


def printed(experiment: str, variant: str) -> str:
    """The paper's number as the book prints it: '6.61' (2 decimals, as the papers print them),
    Paper A's 'fail', or '–' where the paper reports none."""
    value = (paper_number(experiment, variant) or {}).get("value", "–")
    return value if isinstance(value, str) else f"{value:.2f}"
# The interventions (recipes.SWAPS) are the book's: the paper's numbers only for the units it
# trained (Table 2's ResNet-110 units, Table 3's ResNet-1001), and none for a swapped unit.
PAPER["a_swaps"] = {**{v: PAPER["a_table2_activations"][v] for v in PAPER["a_table2_activations"]
                       if v.endswith("-110")},
                    **{f"{u}-1001": PAPER["a_table3_preact"][f"c10-1001-{u}"]
                       for u in ("original", "full_preact")}}
