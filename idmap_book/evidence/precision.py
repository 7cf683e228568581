"""The precision check (claims.FP32_CLAIMS): every other CPU run in the book trains in bf16
autocast, where the identity path sums in an 8-bit mantissa; the comparisons that decide "why
pre-activation helps" are trained again in float32 (recipes.FP32). A verdict differs *between the
precisions* only if the bf16 runs, read by the float32 claim's own rule (``bf16_by_rule``: its
metric, seeds and Holm), say otherwise; the bf16 comparison's own claim, under the rule fixed for
it (``bf16_twin``), is named beside it, so that a difference of rules is never taken for one of
precision.
"""
from __future__ import annotations

from dataclasses import replace
from functools import cache

from idmap_lib.engine import recipes
from idmap_lib.engine.results import training_hash
from .claim_words import METRIC_SHORT, compared, listed, words
from .claims import CLAIMS, FP32_CLAIMS
from .judge import evaluate
from .rule import CENSORED, RANKED, rank_test
from .runs import seed_runs
from .synthesis import PROPERTIES, PROPERTY_SHORT, parent_of


@cache
def _trains(experiment, variant, scale) -> str:
    """What a variant trains, whatever its precision (``amp``) and labels."""
    cfg = recipes.config(experiment, variant, scale)
    cfg.pop("amp", None)
    return training_hash(cfg)


def _twin(claim, test):
    """(claim, index) of the bf16 comparison whose two sides train what `test`'s train but for the
    precision, by what trains whatever the names; None where the book has none."""
    want = [_trains(claim.experiment, v, claim.scale) for v in (test.a, test.b)]
    for c in CLAIMS:
        if c in FP32_CLAIMS or c.scale != claim.scale:
            continue
        for i, t in enumerate(c.tests):
            if [_trains(c.experiment, v, c.scale) for v in (t.a, t.b)] == want:
                return c, i
    return None


def bf16_twin(claim, test, out_dir=None):
    """The same comparison in bf16 under its own claim's rule: (claim, test, result); None where
    the book has none. Only the twin's claim is evaluated."""
    found = _twin(claim, test)
    if found is None:
        return None
    c, i = found
    return c, c.tests[i], evaluate(c, out_dir=out_dir).parts[i][1]


def bf16_by_rule(claim, out_dir=None):
    """The bf16 runs read by `claim`'s own rule (its metric, seeds, Holm over its parts): the claim
    with each side named by its bf16 variant (``row`` for ``row@fp32``). So a verdict that moves
    between the two differs with the precision, never with the rule."""
    tests = tuple(replace(t, a=t.a.removesuffix(recipes.AT_FP32),
                          b=t.b.removesuffix(recipes.AT_FP32)) for t in claim.tests)
    return evaluate(replace(claim, key=f"{claim.key}@bf16", tests=tests), out_dir=out_dir)


def _rule(test) -> str:
    """A comparison's rule in words: its metric and its test."""
    how = "ranks" if test.metric in RANKED else "Welch's t"
    return f"{METRIC_SHORT[test.metric].removesuffix(' (by ranks)')}, by {how}"


def _side(xs, never) -> str:
    """One side's values, sorted, its `never` censored runs (the largest) said as such."""
    shown = [f"{x:g}" for x in sorted(xs)[:len(xs) - never]] + ["never"] * never
    return f"never in all {len(xs)}" if never == len(xs) else ", ".join(shown)


def _sides(result) -> str:
    """Both sides' values of a censored comparison, seed by seed."""
    na, nb = result.get("censored", (0, 0))
    return f"{_side(result['xa'], na)} against {_side(result['xb'], nb)}"


def _first_up(text: str) -> str:
    return text[:1].upper() + text[1:]


def seeds_said(test, result) -> str:
    """What drove a censored comparison: each side's steps, seed by seed ('' for other metrics)."""
    if test.metric not in CENSORED or "xa" not in result:
        return ""
    return f" ({METRIC_SHORT[test.metric]}: {_sides(result)})"


def checks(out_dir=None) -> dict:
    """The float32 check, comparison by comparison: {"rows": [{"comparison", "bf16", "float32",
    "note"}], "recorded", "need", "read", "moved", "by_rule"}. A comparison whose seeds are all
    recorded has its float32 verdict beside the bf16 runs' read by the same rule
    (``bf16_by_rule``); where they differ, the note says what drove each, seed by seed; where the
    bf16 comparison's own claim, under its own rule, says otherwise, the note names it as the
    rule's difference, not the precision's. One whose seeds are not all recorded says how many
    are, with no verdict."""
    found = {(c.key, v): len(seed_runs(c.experiment, v, c.scale, c.seeds, out_dir)[0])
             for c in FP32_CLAIMS for v in c.variants}
    out = {"rows": [], "recorded": sum(found.values()), "read": 0, "moved": [], "by_rule": [],
           "need": sum(len(c.seeds) * len(c.variants) for c in FP32_CLAIMS)}
    for c in FP32_CLAIMS:
        bf16 = None
        for i, (t, r) in enumerate(evaluate(c, out_dir=out_dir).parts):
            name = compared(c, t).replace(" in float32", "")  # (the table says it once)
            seeds = [found[c.key, v] for v in (t.a, t.b)]
            if seeds != [len(c.seeds)] * 2:
                out["rows"].append({"comparison": _first_up(name), "bf16": "", "float32": "",
                                    "note": f"{seeds[0]} and {seeds[1]} of {len(c.seeds)} seeds "
                                            f"recorded"})
                continue
            bf16 = bf16 or bf16_by_rule(c, out_dir)
            b = bf16.parts[i][1]
            notes = []
            if r["verdict"] != b["verdict"]:
                out["moved"].append(name)
                if "xa" in r and "xa" in b and t.metric in CENSORED:
                    notes.append(f"{METRIC_SHORT[t.metric]}, bf16: {_sides(b)}; float32: "
                                 f"{_sides(r)}")
            twin = bf16_twin(c, t, out_dir)
            if twin and twin[2]["verdict"] != b["verdict"]:
                out["by_rule"].append(name)
                notes.append(f"its bf16 claim's own rule ({_rule(twin[1])}): "
                             f"*{twin[2]['verdict']}*, the rule's difference, not the precision's")
            out["rows"].append({"comparison": _first_up(name), "bf16": f"*{b['verdict']}*",
                                "float32": f"*{r['verdict']}*", "note": "; ".join(notes)})
            out["read"] += 1
    return out


def precision_table(out_dir=None, found=None):
    """The float32 check as a table: one row a comparison, its verdict in bf16 (by the float32
    claim's rule) and in float32, and a note (``checks``)."""
    import pandas as pd

    found = found or checks(out_dir)
    return pd.DataFrame(found["rows"], columns=["comparison", "bf16", "float32", "note"])


def precision_words(out_dir=None) -> str:
    """The float32 check in Markdown: what it trains and how many of its runs are recorded, the
    table (``precision_table``), and whether any verdict differs between the precisions."""
    found = checks(out_dir)
    n = len(FP32_CLAIMS[0].seeds)
    moved = found["moved"]
    said = ("no comparison has all its float32 seeds yet" if not found["read"] else
            f"of the {found['read']} with all their seeds, "
            + (f"the verdict differs between the precisions for {listed(moved)} (not shown to "
               f"be the precision's doing: with {n} seeds a side, one run can move a verdict by "
               f"ranks)" if moved else "no verdict differs between the precisions"))
    return (f"Every other CPU run in this book trained in bf16 autocast, where the identity path "
            f"sums in an 8-bit mantissa. The comparisons that decide this page were trained again "
            f"in float32, {n} seeds a side, and both precisions are read by one rule (ranks; a "
            f"diverged run counts as the largest rise): {found['recorded']} of {found['need']} "
            f"float32 runs recorded.\n\n{precision_table(found=found).to_markdown(index=False)}"
            f"\n\nSo far, {said}.")


def swap_words(out_dir=None) -> str:
    """The float32 comparisons that swap one part of a unit (a row of synthesis.PROPERTIES against
    the unit it was made from), in words for the chapter's answer: the part added or removed, the
    claim's direction and its verdict, and how many float32 runs of the swapped side diverged; a
    comparison is said once all its seeds are recorded ("" before any is)."""
    out, named = [], None
    for c in FP32_CLAIMS:
        v = evaluate(c, out_dir=out_dir)
        missing = dict(v.missing)
        for t, r in v.parts:
            a, b = (x.removesuffix(recipes.AT_FP32) for x in (t.a, t.b))
            swapped, unit = (a, b) if parent_of(a) == b else (b, a)
            if parent_of(swapped) != unit or missing.get(t.a) or missing.get(t.b):
                continue
            part, = set(PROPERTIES[swapped]) ^ set(PROPERTIES[unit])
            added = part in PROPERTIES[swapped]
            runs = seed_runs(c.experiment, swapped + recipes.AT_FP32, c.scale, c.seeds, out_dir)[0]
            blew = sum(x["status"] == "fail" for x in runs)
            it = "it" if part == named else f"the {PROPERTY_SHORT[part]}"
            named = part
            out.append(f"{'adding' if added else 'removing'} {it} "
                       f"{'lowered' if added else 'raised'} {words(c.experiment, unit)}'s rise "
                       f"(*{r['verdict']}*"
                       + (f"; {blew} of {len(runs)} seeds diverged" if blew and not added else "")
                       + ")")
    return (f"**In float32** (by ranks, {len(FP32_CLAIMS[0].seeds)} seeds a side): "
            f"{'; '.join(out)}." if out else "")


def beside(claim_key, out_dir=None) -> str:
    """The float32 check of a bf16 claim's comparison, for the chapter that shows the claim: its
    float32 verdict and the bf16 runs' by the same rule, each with what drove it where they differ;
    "" where the claim has no float32 twin or its float32 seeds are not all recorded."""
    out = []
    for c in FP32_CLAIMS:
        v = evaluate(c, out_dir=out_dir)
        missing = dict(v.missing)
        for i, (t, r) in enumerate(v.parts):
            twin = _twin(c, t)
            if not twin or twin[0].key != claim_key or missing.get(t.a) or missing.get(t.b):
                continue
            b = bf16_by_rule(c, out_dir).parts[i][1]
            differs = b["verdict"] != r["verdict"]
            out.append(f"{compared(c, t).replace(' in float32', '')}: *{r['verdict']}* in "
                       f"float32{seeds_said(t, r) if differs else ''}, *{b['verdict']}* in bf16"
                       f"{seeds_said(t, b) if differs else ''}")
    return (f"**In float32** (the precision check, {len(FP32_CLAIMS[0].seeds)} seeds a side, one "
            f"rule for both precisions): {'; '.join(out)}." if out else "")


def start_words(claim_key, out_dir=None) -> str:
    """A start claim judged by ranks (Fig 1), said with what bounds it: its p beside the smallest p
    its split can give (rule.rank_floor), the single seeds whose removal changes it, its float32
    twin's verdict with any run that crossed only in the last logged window (there it ties with a
    run that never did), and both precisions pooled, said as exploration, never as a test."""
    claim = next(c for c in CLAIMS if c.key == claim_key)
    v = evaluate(claim, out_dir=out_dir)
    t, r = v.parts[0]
    if "p" not in r:
        return ""
    na, nb = r["n"]
    started = na - r.get("censored", (0, 0))[0]
    said = [f"p = {r['p']:.3f} by ranks, the smallest p that {started} of {na} against "
            f"{nb - r.get('censored', (0, 0))[1]} of {nb} started can give"
            if abs(r["p"] - r["floor"]) < 1e-12 else
            f"p = {r['p']:.3f} by ranks (the smallest this split can give: {r['floor']:.3f})"]
    if v.fragile:
        seeds = sorted({s for _, s, _ in v.fragile})
        said.append(f"**fragile**: without any one of seeds {listed([str(s) for s in seeds])} of "
                    f"{listed(sorted({words(claim.experiment, x) for x, _, _ in v.fragile}))} it "
                    f"reads *{v.fragile[0][2]}*")
    for c in FP32_CLAIMS:
        fv = evaluate(c, out_dir=out_dir)
        for i, (ft, fr) in enumerate(fv.parts):
            if _twin(c, ft) != (claim, 0) or "p" not in fr:
                continue
            runs = seed_runs(c.experiment, ft.a, c.scale, c.seeds, out_dir)[0]
            late = [x for x in runs if x["status"] != "fail" and
                    next((h["step"] for h in x["history"]["train"] if h["train_err"] < 0.8),
                         None) == x["config"]["steps"]]
            fp = (f"in float32 it is *{fr['verdict']}* (p = {fr['p']:.3f})")
            if late:
                fp += (f": {len(late)} pre-activation run{'s' if len(late) > 1 else ''} got below "
                       f"80 % only in the last logged window (step {late[0]['config']['steps']}), "
                       f"where it ties with a run that never did")
            said.append(fp)
            pooled = rank_test(r["xa"] + fr["xa"], r["xb"] + fr["xb"])
            said.append(f"both precisions pooled ({na + fr['n'][0]} runs a side; exploration, not "
                        f"a test fixed before): p = {pooled:.4f}")
    return "; ".join(said)
