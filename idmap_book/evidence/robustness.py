"""The synthesis statuses held to the claims' standard: what one seed, another reading
of the same runs, or the status rule the present one replaced does to each mechanism's status, and
the confound a status carries where every row that decides it also moved a property its ticks do
not record.

- ``fragile``: leave-one-out carried from the claims' parts to the statuses. For every recorded run
  whose removal changes a part of a row's claim (judge.Verdict.fragile_parts), every row's outcome
  is read again without that run and every status recomputed; a status that moves is fragile, with
  the run.
- ``readings``: the statuses under the pre-registered log rise by Welch's t and under ranks (a
  diverged run the largest rise: the rule fixed later, for the float32 check), where they differ.
- ``status_over_all_rows``: the status rule before commit c223c2c (history.FORMS): a property
  *necessary* if no decided row without it has the good outcome, *sufficient* if every decided row
  with it has, whatever else the rows differ in.
- ``confounds``: a status decided only by rows whose classifier input, measured around the jump
  (data/mechanisms), is small as a normalised one is, though no BN-ReLU precedes their pool.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import replace

from idmap_lib.engine import recipes
from .claim_words import in_sentence, listed, words
from .claims import CLAIMS_BY_KEY
from .judge import evaluate
from .history import STATUSES, record
from .rule import TESTED
from .runs import seed_runs
from .seeds import ALL_SEEDS
from .synthesis import (FIG1, LR_JUMP, MECHANISMS, OUTCOMES, PROPERTIES, REFERENCE, ROWS, assess,
                        outcomes, row_claim, status, word)

LOG, RANKED = "lr_jump_log_rise", "lr_jump_ranked_rise"
SEPARATING = "original+zero_gamma_scaled_input-110"  # the swap that separates the confound
NORMALISED = "normalised_classifier"


def _keys(test) -> dict:
    """{row: the claim whose parts give its outcome} (the references: the reference claim)."""
    ref = LR_JUMP if test == "jump" else FIG1
    return {r: ref if r in REFERENCE[test] else row_claim(r, test) for r in ROWS[test]}


def _found_from(parts: dict, base: dict, test) -> dict:
    """Every row's outcome from {claim key: [part verdicts]}, a row stuck before the jump kept."""
    original, full = REFERENCE[test]
    keys, out = _keys(test), {}
    for r in ROWS[test]:
        if base[r]["outcome"] == "stuck before the jump":
            out[r] = base[r]
            continue
        p = parts[keys[r]]
        below, above = (("–", p[0]) if r == original else (p[0], "–") if r == full
                        else (p[0], p[1]))
        out[r] = {"outcome": word(below, above, test)}
    return out


def fragile(test="jump", out_dir=None, found=None) -> dict:
    """{mechanism key: [(variant, seed, its status without that run)]}: every single run whose
    removal moves a status (leave-one-out, as judge.evaluate does for a claim's verdict)."""
    found = found or outcomes(test, out_dir)
    verdicts = {k: evaluate(CLAIMS_BY_KEY[k], out_dir=out_dir) for k in set(_keys(test).values())}
    said = {k: [p[1]["verdict"] for p in v.parts] for k, v in verdicts.items()}
    props = {m.key: m.prop for m in MECHANISMS if m.prop}
    base = {k: status(p, found, test)["status"] for k, p in props.items()}
    out = {k: [] for k in props}
    runs = sorted({(v, s) for V in verdicts.values() for v, s, _ in V.fragile_parts})
    for v, s in runs:
        parts = {k: next((p for vv, ss, p in verdicts[k].fragile_parts if (vv, ss) == (v, s)),
                         said[k]) for k in verdicts}
        without = _found_from(parts, found, test)
        for k, p in props.items():
            moved = status(p, without, test)["status"]
            if moved != base[k]:
                out[k].append((v, s, moved))
    return out


def by_ranks(claim):
    """The claim read by ranks instead of its log rise by Welch's t (the other readings' rule)."""
    return replace(claim, tests=tuple(replace(t, metric=RANKED) if t.metric == LOG else t
                                      for t in claim.tests))


def readings(test="jump", out_dir=None, found=None) -> dict:
    """{mechanism key: (status by the pre-registered log-Welch rule, status by ranks)} where the
    two differ."""
    found = found or outcomes(test, out_dir)
    ranked = outcomes(test, out_dir, reading=by_ranks)
    out = {}
    for m in MECHANISMS:
        if m.prop:
            a, b = (status(m.prop, f, test)["status"] for f in (found, ranked))
            if a != b:
                out[m.key] = (a, b)
    return out


def status_over_all_rows(prop, found: dict, test="jump") -> str:
    """The status rule before c223c2c: judged over every decided row, whatever else it differs
    in."""
    good, bad = OUTCOMES[test]
    decided = {r: o["outcome"] for r, o in found.items() if o["outcome"] in (good, bad)}
    with_ = [o for r, o in decided.items() if prop in PROPERTIES[r]]
    without = [o for r, o in decided.items() if prop not in PROPERTIES[r]]
    if not with_ or not without:
        return "not testable at this scale"
    necessary, sufficient = all(o == bad for o in without), all(o == good for o in with_)
    return {(True, True): "necessary and sufficient", (False, True): "sufficient, not necessary",
            (True, False): "necessary, not sufficient"}.get((necessary, sufficient), "neither")


def classifier_std_at_jump(measured: dict, row: str) -> float | None:
    """The mean over a row's measured seeds of its classifier input's std in the forward at the lr
    jump (the first step at the higher lr); None where the row is not measured."""
    jump = recipes.config("a_swaps", row, recipes.JUMP_PROBE)["schedule"]["warmup_steps"]
    at = [f["fc_input_std"] for rec in measured.get(row, []) for f in rec if f["step"] == jump]
    return statistics.fmean(at) if at else None


def _span(xs) -> str:
    return f"{min(xs):.2f}" if min(xs) == max(xs) else f"{min(xs):.2f}-{max(xs):.2f}"


def confounds(assessed: dict, found: dict, measured: dict, test="jump", out_dir=None) -> dict:
    """{mechanism key: sentence} for each status at the jump that rests only on rows whose measured
    classifier input is small as a normalised one is (nearer, on a log scale, to the rows with a
    BN-ReLU before the pool than to the rows that fail at the jump: below the geometric mean of the
    largest of the first and the smallest of the second) with no BN-ReLU of their own: the status
    cannot tell that part from a small classifier input until a row separates them
    (``SEPARATING``)."""
    std = {r: classifier_std_at_jump(measured, r) for r in ROWS[test]}
    norm = [x for r, x in std.items() if x is not None and NORMALISED in PROPERTIES[r]]
    failing = [x for r, x in std.items() if x is not None and
               found[test][r]["outcome"] == OUTCOMES[test][1]]
    if not norm or not failing:
        return {}
    small = math.sqrt(max(norm) * min(failing))
    seps = len(seed_runs("a_swaps", SEPARATING, recipes.JUMP_PROBE, ALL_SEEDS, out_dir)[0])
    out = {}
    for m in MECHANISMS:
        if m.prop in (None, NORMALISED) or m.key not in assessed:
            continue
        s = assessed[m.key][test]
        rows = s["rescued"] + s["broke"] + s["not_rescued"] + s["kept"]
        if rows and all(std.get(r) is not None and std[r] < small and
                        NORMALISED not in PROPERTIES[r] for r in rows):
            said = (f"{'its one row' if len(rows) == 1 else 'its rows'} "
                    f"({listed([words('a_swaps', r) for r in rows])}) also "
                    f"{'has' if len(rows) == 1 else 'have'} a small classifier input (std "
                    f"{_span([std[r] for r in rows])} at the jump, {_span(failing)} where units "
                    f"fail)")
            out[m.key] = (separated(found, out_dir) or
                          f"**Confounded:** {said}; the separating swap has {seps} of "
                          f"{len(ALL_SEEDS)} seeds.")
    return out


def separated(found: dict, out_dir=None) -> str:
    """What the separating swap decided, once all its seeds are recorded ("" before): its row's two
    comparisons (with the original's classifier input, do branches off at init still bring the
    rise below the original's, and is it above full pre-activation's?) and its own claim (does zero
    gamma rise less than itself with that input?), each with its verdict."""
    key = "swap_jump_separates_zero_gamma"
    v = evaluate(CLAIMS_BY_KEY[key], out_dir=out_dir)
    row = found["jump"].get(SEPARATING)
    below, above = (row or {}).get("below"), (row or {}).get("above")
    if v.missing or v.verdict not in TESTED or below not in TESTED or above not in TESTED:
        return ""
    small = {"reproduced": "cuts it further", "contradicted": "raises it",
             "inconclusive": "is not told apart from it"}[v.verdict]
    return (f"**Separated:** with the original's classifier input, branches off at init "
            f"{'still cut' if below == 'reproduced' else 'do not cut'} the rise below the "
            f"original's (*{below}*)"
            + (f", not to full pre-activation's (*{above}*);" if above == "reproduced"
               else f", above full pre-activation's *{above}*;")
            + f" zero gamma's small classifier input {small} (*{v.verdict}*).")


def _status_runs(out_dir=None) -> dict:
    """{row: its recorded runs} of every row of the synthesis, at its test's scale."""
    out = {}
    for test in OUTCOMES:
        scale = CLAIMS_BY_KEY[LR_JUMP if test == "jump" else FIG1].scale
        for r in ROWS[test]:
            out[r] = seed_runs("a_swaps", r, scale, ALL_SEEDS, out_dir)[0]
    return out


def firmness(found: dict, out_dir=None) -> str:
    """How firm the statuses are, in words: each status one seed moves (with the run), each that
    ranks read otherwise (and which rule came first), and the status rule's own history: when it
    took its form, after how many of the rows' runs, and the statuses the rule it replaced gives
    where they differ."""
    said = []
    where = {"jump": "at the lr jump", "start": "at 1001 layers"}
    assessed = {m.key: assess(m, found) for m in MECHANISMS}
    for test in OUTCOMES:
        for key, moves in fragile(test, out_dir, found[test]).items():
            title = _title(key)
            for v, seed, other in moves:
                said.append(f"{title} {where[test]} (*{assessed[key][test]['status']}*) reads "
                            f"*{other}* without seed {seed} of {words('a_swaps', v)}: **fragile**")
    for key, (log, ranks) in readings("jump", out_dir, found["jump"]).items():
        said.append(f"by ranks (a diverged run the largest rise; fixed later, for the float32 "
                    f"check), {_title(key)} at the lr jump reads *{ranks}*, where the "
                    f"pre-registered log rise by Welch's t reads *{log}*")
    history_ = _status_history(found, assessed, out_dir)
    head = ("**How firm.** " + "; ".join(s[0].upper() + s[1:] if i == 0 else s
                                          for i, s in enumerate(said)) + ".") if said else ""
    return (head + " " + history_).strip()


def _title(key: str) -> str:
    return in_sentence(next(m for m in MECHANISMS if m.key == key).title)


def _status_history(found, assessed, out_dir=None) -> str:
    rec = record(STATUSES, out_dir, runs=_status_runs(out_dir))
    if not rec["before"]:
        return ""
    f = rec["form"]
    moved = [(m, status_over_all_rows(m.prop, found["jump"]), assessed[m.key]["jump"]["status"])
             for m in MECHANISMS if m.prop]
    moved = [(m, old, now) for m, old, now in moved if old != now]
    said = (f"The status rule took its present form ({f.what}; commit {f.commit}, {f.date[:10]}) "
            f"after {rec['before']} of the rows' {rec['runs']} runs were recorded")
    if moved:
        said += ("; under the rule it replaced (every decided row, whatever else it differs in), "
                 + "; ".join(f"{_title(m.key)} would read *{old}* (today *{now}*)"
                             for m, old, now in moved))
    return said + "."


def head_words(found: dict, measured: dict) -> str:
    """Why a classifier input's size matters at the jump, in two sentences from the records around
    it (the explorer's classifier panel): one SGD step moves the logits of an input x by lr x |x|^2
    x the loss's gradient at the logits (the classifier is the one weight layer no BN follows), so
    a tenfold lr on a large input is a large step of the head; the rows' classifier-input std and
    their logits' std just before the jump and at its largest in the steps after, for the rows
    below the original and those above full pre-activation."""
    jump = recipes.config("a_swaps", ROWS["jump"][0], recipes.JUMP_PROBE)["schedule"]
    step = jump["warmup_steps"]
    good, bad = OUTCOMES["jump"]
    groups = {o: [r for r in ROWS["jump"] if found["jump"][r]["outcome"] == o and r in measured]
              for o in (good, bad)}
    if not all(groups.values()):
        return ""

    def at(rows, key, when):
        return [statistics.fmean(max(f[key] for f in rec if when(f["step"])) for rec in
                                 measured[r]) for r in rows]
    said = {o: (at(rs, "fc_input_std", lambda s: s == step),
                at(rs, "logits_std", lambda s: s == step - 1),
                at(rs, "logits_std", lambda s: step < s <= step + 10)) for o, rs in groups.items()}
    g, b = said[good], said[bad]
    return (f"**Why the classifier's input matters at the jump.** The classifier is the one weight "
            f"layer no BN follows, and one step of SGD moves its logits for an input x by the "
            f"learning rate times |x|² times the loss's gradient there: when the lr jumps "
            f"{jump['base'] / jump['warmup_lr']:g}-fold, a large input makes a large step of the "
            f"head. In the rows that rise above full pre-activation the classifier's input has std "
            f"{_span(b[0])} at the jump and their logits' std goes from {_span(b[1])} just before "
            f"it to {_span(b[2])} at most in the next 10 steps; in the rows below the original, "
            f"input std {_span(g[0])}, from {_span(g[1])} to {_span(g[2])} (the explorer's "
            f"classifier-input panel).")
