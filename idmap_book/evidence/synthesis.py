"""Why pre-activation helps, decided by intervention (the chapter "Why pre-activation helps"): every
unit and every swap of one part (recipes.SWAPS) is a row with the properties it has by construction
(``PROPERTIES``) and the outcomes its runs show (``outcome``: through the lr jump, at the start of
ResNet-1001); each candidate mechanism is a property, and its status is computed from whether that
property predicts the outcomes across all rows whose outcome the runs decide (``status``):
**necessary** (no row without it has the outcome), **sufficient** (every row with it has the
outcome), both, **neither**, or **not testable at this scale** -- with the rows that decide it.
Nothing here is typed: a status changes when the recorded runs do.

A row's outcome comes from two comparisons fixed before its runs (claims.SWAP_CLAIMS,
claims.ROW_CLAIMS, and for the two reference units the lr-jump and Fig 1 claims): is its rise at the
jump (its steps to 80 % at 1001 layers) below the original unit's, and is it above full
pre-activation's? Below the original and not above full pre-activation: it *tolerates* the jump (it
*starts*); above full pre-activation and not below the original: it *fails*; both: *in between*; a
row whose runs were stuck at chance before the jump: *stuck before the jump* (its own outcome, never
tolerance); otherwise *open*.
"""
from __future__ import annotations

from dataclasses import dataclass

from idmap_lib.models.registry import UNIT_ROWS
from .claim_words import in_sentence, listed, words
from .claims import CLAIMS_BY_KEY
from .judge import evaluate

# The interventions' design (claims.SWAP_CLAIMS): every unit and swap as a row, each with the
# properties it has by construction. Each candidate mechanism is a hypothesis "property P is what
# lets a unit train through the lr jump (or start at 1001 layers)": it predicts that the rows with P
# do and the rows without P do not. Fixed with the swap claims, before any swap run was trained; a
# property is then *necessary* if no row without it has the outcome, *sufficient* if every row with
# it has the outcome, each judged only on rows whose outcome the runs decide.
PROPERTY_WORDS = {
    "clean_path": "a clean additive path (h and f identity, Eqns 4-5)",
    "bn_every_conv": "BN in front of every convolution (inputs normalised, Sec 4.2)",
    "normalised_classifier": "a normalised classifier input (a BN-ReLU before the pool)",
    "branch_zero_at_init": "branches switched off at initialisation (zero gamma)",
}
PROPERTY_SHORT = {"clean_path": "clean path", "bn_every_conv": "BN before every conv",
                  "normalised_classifier": "normalised classifier input",
                  "branch_zero_at_init": "branches off at init"}


def built(unit: str) -> tuple:
    """The properties a unit has by construction, read from its registry row: f is the identity (a
    clean path); BN before each weight layer, or after each but the last and in f (BN in front of
    every convolution); a BN before the pool, in its final or, where it has none, in its f (a
    normalised classifier input)."""
    r = UNIT_ROWS[unit]
    has = {"clean_path": not r.post,
           "bn_every_conv": "BN" in r.pre or ("BN" in r.after and "BN" in r.post),
           "normalised_classifier": r.final == "bn_relu" or (r.final == "none" and "BN" in r.post)}
    return tuple(p for p, on in has.items() if on)


PROPERTIES = {  # row (a_swaps variant) -> the properties it has by construction
    **{f"{unit}-110": built(unit) for unit, r in UNIT_ROWS.items()  # Table 2's (recipes._swaps')
       if 110 in r.paper},
    "original+final_bn_relu-110": ("normalised_classifier",),
    "relu_preact+final_bn_relu-110": ("clean_path", "normalised_classifier"),
    "full_preact+no_final-110": ("clean_path", "bn_every_conv"),
    "original+zero_gamma-110": ("branch_zero_at_init",),
    "original+zero_gamma_scaled_input-110": ("branch_zero_at_init",),
    "original-1001": (),
    "full_preact-1001": ("clean_path", "bn_every_conv", "normalised_classifier"),
    "original+final_bn_relu-1001": ("normalised_classifier",),
    "full_preact+no_final-1001": ("clean_path", "bn_every_conv"),
}
LR_JUMP, FIG1 = "lr_jump_preact_tolerates", "fig1_1001_original_slow_start"
OUTCOMES = {  # what a row can show, per test: (the good outcome, the bad one), said as what the
    # comparisons show: below the original and not shown above full pre-activation is no evidence
    # that a row rises as little as full pre-activation (no equivalence margin), only that the
    # runs do not tell them apart
    "jump": ("below the original, not shown above full pre-activation",
             "above full pre-activation, not shown below the original"),
    "start": ("sooner than the original, not shown later than full pre-activation",
              "later than full pre-activation, not shown sooner than the original"),
}
# the answer's plain words for the same
SHORT_OUTCOMES = {"jump": ("copes with the jump", "fails at the jump"),
                  "start": ("starts sooner", "starts later")}
ROWS = {"jump": tuple(r for r in PROPERTIES if r.endswith("-110")),
        "start": tuple(r for r in PROPERTIES if r.endswith("-1001"))}
REFERENCE = {"jump": ("original-110", "full_preact-110"),
             "start": ("original-1001", "full_preact-1001")}


def _part(claim_key, index, out_dir, reading=None):
    """(verdict, result) of one comparison of a claim, from the recorded runs; `reading` (a claim
    -> claim function, robustness.py) reads it another way."""
    claim = CLAIMS_BY_KEY[claim_key]
    v = evaluate(reading(claim) if reading else claim, out_dir=out_dir)
    return v.parts[index][1]["verdict"], v.parts[index][1]


def _comparisons(row, test, out_dir, reading=None):
    """The row's two comparisons: (below the original?, above full pre-activation?), each (verdict,
    result) or None where the row is that reference itself."""
    original, full = REFERENCE[test]
    ref_claim = LR_JUMP if test == "jump" else FIG1
    ref_index = 0  # both reference claims hold full pre-activation against the original first
    if row == original:
        return None, _part(ref_claim, ref_index, out_dir, reading)
    if row == full:
        return _part(ref_claim, ref_index, out_dir, reading), None
    key = row_claim(row, test)
    return _part(key, 0, out_dir, reading), _part(key, 1, out_dir, reading)


def row_claim(row, test) -> str:
    """The key of the claim that places `row` between the two references."""
    name = row.rsplit("-", 1)[0].replace("+", "_")
    key = f"swap_{test}_{name}" + ("_1001" if test == "start" else "")
    return key if key in CLAIMS_BY_KEY else f"row_{test}_{name}"


def word(below: str, above: str, test="jump") -> str:
    """A row's outcome from the verdicts of its two comparisons ("–" where it is that reference):
    below the original and not shown above full pre-activation, the good outcome (OUTCOMES); the
    reverse, the bad one; both shown, "in between"; neither, "open"."""
    good, bad = OUTCOMES[test]
    if "not run yet" in (below, above):
        return "not run yet"
    is_below, is_above = below == "reproduced", above == "reproduced"
    return ("in between" if is_below and is_above else good if is_below else bad if is_above
            else "open")


def outcome(row, test="jump", out_dir=None, reading=None) -> dict:
    """{"outcome", "below", "above"} of one row: its outcome in words (``word``, or "stuck before
    the jump" where its runs were) and the verdicts of its two comparisons ("–" where the row is
    that reference)."""
    below, above = _comparisons(row, test, out_dir, reading)
    # the row is side a of "below the original" and side b of "above full pre-activation"
    mine = [(c, i) for c, i in ((below, 0), (above, 1)) if c is not None]
    b, a = (c[0] if c else "–" for c in (below, above))
    if "not run yet" not in (b, a) and any(
            c[0] == "not testable here" and c[1].get("excluded", (0, 0))[i] for c, i in mine):
        return {"outcome": "stuck before the jump", "below": b, "above": a}
    return {"outcome": word(b, a, test), "below": b, "above": a}


def outcomes(test="jump", out_dir=None, reading=None) -> dict:
    return {r: outcome(r, test, out_dir, reading) for r in ROWS[test]}


STATUSES = ("necessary and sufficient", "sufficient, not necessary", "necessary, not sufficient",
            "neither",
            "sufficient; necessity not tested here", "not sufficient; necessity not tested here",
            "necessary; sufficiency not tested here", "not necessary; sufficiency not tested here",
            "sufficient; necessity open", "not sufficient; necessity open",
            "necessary; sufficiency open", "not necessary; sufficiency open",
            "not testable at this scale", "open")


def parent_of(row: str) -> str | None:
    """The unit a swapped row was made from (``unit+swap-depth`` -> ``unit-depth``); None for a unit
    itself."""
    name, depth = row.rsplit("-", 1)
    return f"{name.split('+')[0]}-{depth}" if "+" in name else None


def status(prop, found: dict, test="jump") -> dict:
    """The status of property `prop`, decided only by the swaps that change that one part (a row and
    its parent that differ in `prop` alone): *sufficient* where adding it turned a failing unit into
    one with the good outcome of `test` (``rescued``), *not sufficient* where it did not
    (``not_rescued``); *necessary* where removing it made a unit with the good outcome fail
    (``broke``), *not necessary* where the unit kept it (``kept``). Units that differ in several
    parts never decide it: with no such swap decided it is *not testable at this scale* (no swap of
    that part exists) or *open* (its runs do not decide it yet); a half decided says whether the
    other half's swap is *open* or *not tested here*."""
    good, bad = OUTCOMES[test]
    out = {k: [] for k in ("rescued", "not_rescued", "broke", "kept")}
    # a swap of that direction whose runs do not decide it yet
    pending = {"add": False, "remove": False}
    swaps = [(parent_of(r), r) for r in found if parent_of(r) in found and
             set(PROPERTIES[r]) ^ set(PROPERTIES[parent_of(r)]) == {prop}]
    for parent, row in swaps:
        o_parent, o_row = found[parent]["outcome"], found[row]["outcome"]
        # added to a failing unit
        if prop in PROPERTIES[row] and o_parent == bad and o_row in (good, bad):
            out["rescued" if o_row == good else "not_rescued"].append(row)
        # taken from one that copes
        elif prop not in PROPERTIES[row] and o_parent == good and o_row in (good, bad):
            out["broke" if o_row == bad else "kept"].append(row)
        else:
            pending["add" if prop in PROPERTIES[row] else "remove"] = True
    add = ("sufficient" if out["rescued"] and not out["not_rescued"] else "not sufficient"
           if out["not_rescued"] else "")
    rem = ("necessary" if out["broke"] and not out["kept"] else "not necessary" if out["kept"]
           else "")
    if add and rem:
        out["status"] = {("sufficient", "necessary"): "necessary and sufficient",
                         ("sufficient", "not necessary"): "sufficient, not necessary",
                         ("not sufficient",
                          "necessary"): "necessary, not sufficient"}.get((add, rem), "neither")
    elif add:
        out["status"] = f"{add}; necessity {'open' if pending['remove'] else 'not tested here'}"
    elif rem:
        out["status"] = f"{rem}; sufficiency {'open' if pending['add'] else 'not tested here'}"
    else:
        out["status"] = "open" if swaps else "not testable at this scale"
    return out


@dataclass(frozen=True)
class Mechanism:
    key: str
    title: str
    words: str               # the mechanism, as the paper (or the later work) argues it
    where: str               # the chapter and figure that show it (Markdown link)
    # the property it names (PROPERTIES); None: no swap at this scale tests it
    prop: str | None = None
    why_not: str = ""        # why no swap here tests it (prop None)
    by: str = ""             # who offers it
    who: str = ""            # the same in a few words, for the page's table


MECHANISMS = (
    Mechanism("clean_path", "The clean additive path",
              "With an identity shortcut and an identity after the addition, x_L = x_l + the sum "
              "of the residual functions (Eqn 4) and the gradient reaching any unit has a direct "
              "term of 1 (Eqn 5).",
              "[chapter 2](02_propagation.ipynb): the gradient at every unit, and its direct term",
              "clean_path", by="Paper A (its reason for easier optimisation, Sec 3-4.1)",
              who="Paper A"),
    Mechanism("normalised_inputs", "Normalised inputs to every convolution",
              "In full pre-activation every convolution reads a BN-ReLU output; in the original "
              "unit and in ReLU-only pre-activation the first convolution of each unit reads the "
              "un-normalised sum of every branch before it.",
              "[chapter 8](08_activations.ipynb): the std of every weight layer's input, per unit",
              "bn_every_conv",
              by="Paper A, as its reason for *regularisation* (Sec 4.2); this book tests it for "
                 "optimisation", who="Paper A, for regularisation"),
    Mechanism("classifier_input", "A normalised signal into the classifier",
              "Full pre-activation ends in a BN-ReLU before the pool, so the classifier (the one "
              "weight layer no BN follows, whose step grows with its input's square) reads a "
              "normalised input; the original unit's classifier reads the un-normalised sum of "
              "every unit.",
              "[chapter 8](08_activations.ipynb): the std of the classifier's input",
              "normalised_classifier",
              by="this book (a consequence of Paper A's final BN-ReLU, Sec 4.1)", who="this book"),
    Mechanism("identity_bias", "Branches down-weighted at initialisation",
              "A BN-fed branch on an un-normalised path is down-weighted with depth at "
              "initialisation, so a deep net starts close to a shallow one (De & Smith 2020; "
              "SkipInit, Fixup, zero gamma).",
              "[chapter 3](03_scaled_shortcuts.ipynb): the branch beside the path, unit by unit",
              "branch_zero_at_init", by="De & Smith 2020; Goyal et al. 2017 (zero gamma)",
              who="De & Smith 2020"),
    Mechanism("truncation", "Less ReLU truncation as depth grows",
              "The original unit's ReLU after the addition truncates y_l = x_l + F(x_l); Paper A "
              "(Sec 4.2) argues this is more frequent at 1000 layers, once trained.",
              "[chapter 4](04_relu_truncation.ipynb): the fraction of y_l < 0 per unit",
              why_not="Paper A's remark is about trained networks; a swap that removes the ReLU "
                      "after the addition is ReLU-only pre-activation's path, not one part alone",
                      by="Paper A (Sec 4.2)", who="Paper A"),
)
MECHANISMS_BY_KEY = {m.key: m for m in MECHANISMS}


def assess(mechanism: Mechanism, found=None, out_dir=None) -> dict:
    """{test: status dict} of one mechanism over both tests (``status``); {"status": "not testable
    at this scale"} for a mechanism no swap tests."""
    if mechanism.prop is None:
        return {t: {"status": "not testable at this scale", "rescued": [], "not_rescued": [],
                    "broke": [], "kept": []}
                for t in OUTCOMES}
    found = found or {t: outcomes(t, out_dir) for t in OUTCOMES}
    return {t: status(mechanism.prop, found[t], t) for t in OUTCOMES}


def assess_all(out_dir=None) -> dict:
    found = {t: outcomes(t, out_dir) for t in OUTCOMES}
    return {m.key: assess(m, found) for m in MECHANISMS}


def short_outcome(found_row: dict, test="jump") -> str:
    """A row's outcome in the answer's plain words (SHORT_OUTCOMES: "copes with the jump", "fails
    at the jump", "starts sooner", "starts later"); any other outcome as it is."""
    o = found_row["outcome"]
    return dict(zip(OUTCOMES[test], SHORT_OUTCOMES[test])).get(o, o)


def swap_table(out_dir=None, found=None):
    """The page's table: one row a unit or swap, its outcome (``short_outcome``) second, then the
    parts it has by construction (PROPERTY_SHORT), in three columns that fit a phone."""
    import pandas as pd

    found = found or {t: outcomes(t, out_dir) for t in OUTCOMES}
    rows = []
    for r in PROPERTIES:
        test = "jump" if r in ROWS["jump"] else "start"
        rows.append({"unit": words("a_swaps", r), "outcome": short_outcome(found[test][r], test),
                     "parts it has": ", ".join(PROPERTY_SHORT[p] for p in PROPERTY_WORDS
                                               if p in PROPERTIES[r]) or "none"})
    return pd.DataFrame(rows).set_index("unit")


def table(assessed=None):
    """One row a mechanism: who offers it, its status at the lr jump and at the start of
    ResNet-1001, with the swaps that decide it, and where the book shows it. A status no swap can
    decide is said alone: the page says once what *not testable at this scale* means."""
    import pandas as pd

    assessed = assessed or assess_all()
    said = {"rescued": "adding it rescued", "not_rescued": "adding it did not rescue",
            "broke": "removing it broke", "kept": "removing it did not break"}
    rows = []
    for m in MECHANISMS:
        a = assessed[m.key]
        row = {"mechanism": m.title, "offered by": m.by}
        for t, label in (("jump", "at the lr jump"), ("start", "at 1001 layers")):
            s = a[t]
            why = [f"{said[k]} {listed([words('a_swaps', parent_of(r)) for r in s[k]])}"
                   for k in said if s[k]]
            row[label] = s["status"] + (f" ({'; '.join(why)})" if why else "")
        row["shown in"] = m.where
        rows.append(row)
    return pd.DataFrame(rows)


def mechanism_table(assessed=None):
    """The page's table of mechanisms (``table``) in three columns a phone holds: each mechanism
    with who offers it in a few words, its status at the lr jump and at 1001 layers."""
    rows = table(assessed)
    who = {m.title: m.who for m in MECHANISMS}
    rows["mechanism"] = [f"{t} ({who[t]})" for t in rows["mechanism"]]
    return rows[["mechanism", "at the lr jump", "at 1001 layers"]]


def statuses_in_words(assessed=None) -> str:
    """Each mechanism's status at the lr jump, in one sentence (for the chapter's opening answer and
    chapters 4 and 9)."""
    assessed = assessed or assess_all()
    out = []
    for m in MECHANISMS:
        out.append(f"{in_sentence(m.title)}: {assessed[m.key]['jump']['status']}")
    return "At the lr jump, " + "; ".join(out) + "."


def _plain(statuses: dict) -> str:
    """What the swaps decided of the mechanisms, in plain words with each status in bold, from
    their statuses at the lr jump ({mechanism key: status}): which part was enough to carry a
    failing unit through the jump and which was not, which a unit that coped could or could not
    lose, and where the swaps do not yet show whether a unit needs it."""
    def having(*test):
        return [in_sentence(MECHANISMS_BY_KEY[k].title) for k, s in statuses.items()
                if any(t(s) for t in test)]
    enough = having(lambda s: s.startswith("sufficient"), lambda s: s == "necessary and sufficient")
    short = having(lambda s: s.startswith("not sufficient"),
                   lambda s: s in ("neither", "necessary, not sufficient"))
    needed = having(lambda s: s.startswith("necessary"))
    spare = having(lambda s: "not necessary" in s, lambda s: s == "neither")
    said = []
    if enough:
        said.append(f"{listed(enough)} {'was' if len(enough) == 1 else 'were each'} enough to "
                    f"bring a failing unit's rise below the original's (**sufficient**; their "
                    f"claims read *inconclusive*: not told apart from full pre-activation)")
    if short:
        said.append(f"{listed(short)} did not rescue a failing unit (**not sufficient**)")
    if needed:
        said.append(f"a unit that coped broke without {listed(needed)} (**necessary**)")
    if spare:
        said.append(f"a unit that coped did without {listed(spare)} (**not necessary**)")
    open_ = [m for m in enough if m not in needed + spare]
    if open_:
        it = ("it" if len(enough) == 1 else "either") if open_ == enough else listed(open_)
        said.append(f"the swaps do not yet show that a unit needs {it}")
    return "; ".join(said) + "." if said else "no part swapped alone has decided anything yet."


def answer(assessed=None, found=None, out_dir=None, float32="", notes=None) -> str:
    """The chapter's opening answer, computed: what full pre-activation buys at this scale (the
    reference rows' outcomes), what the swaps decided of each mechanism in plain words
    (``_plain``) with `float32` beside it (precision.swap_words: the same swaps in float32), and
    what is still open: the mechanisms no swap tests here or decides yet, the rows undecided or
    missing, last. `notes`: {mechanism key: sentence} said right after the
    swaps' verdict (robustness.confounds: a status that rests on a confounded row carries it)."""
    found = found or {t: outcomes(t, out_dir) for t in OUTCOMES}
    assessed = assessed or {m.key: assess(m, found) for m in MECHANISMS}
    def plain(test, row):
        return short_outcome(found[test][row], test)
    full, orig = (plain("jump", r) for r in ("full_preact-110", "original-110"))
    start, slow = (plain("start", r) for r in ("full_preact-1001", "original-1001"))
    buys = (f"At this scale full pre-activation {full} and the original unit "
            f"{orig.replace(' the jump', ' it')}; at 1001 layers pre-activation {start}"
            + (" than the original." if (start, slow) == SHORT_OUTCOMES["start"] else
               f" and the original {slow}."))
    statuses = {m.key: assessed[m.key]["jump"]["status"] for m in MECHANISMS}
    untested = [in_sentence(m.title) for m in MECHANISMS
                if statuses[m.key] == "not testable at this scale"]
    undecided = [in_sentence(m.title) for m in MECHANISMS if statuses[m.key] == "open"]
    waiting = [r for t in OUTCOMES for r, o in found[t].items()
               if o["outcome"] in ("not run yet", "open")]
    rest = ([f"{listed(untested)} (not testable at this scale)"] if untested else []) + (
        [f"{listed(undecided)} (the swaps' runs do not decide yet)"] if undecided else []) + (
        [f"{len(waiting)} of {sum(map(len, ROWS.values()))} rows"]
        if waiting else [])
    why = " ".join([f"**Why, one part swapped at a time:** {_plain(statuses)}",
                    *(notes or {}).values()])
    still = f" **Still open:** {'; '.join(rest)}." if rest else ""
    return f"**What it buys.** {buys} {why} {float32}".strip() + still
