"""The claims in words, for a reader: each claim's readable title (``Claim.title``), one plain
sentence of what its runs show (``sentence``, computed from judge.evaluate: the same numbers as the
claims table, without identifiers, d or intervals), the table of both (``readable_table``: what
chapters 7-11 show first; the full ``verdicts.claims_table`` is folded under it), and the page's one
"Run these yourself" block (``run_yourself``: the commands, the full-recipe queue). A claim about
the paper's final error read at a CPU scale gets no verdict: its sentence says what the short runs
show, "after N steps", and that the final error needs the full recipe (rule.NEEDS_FULL).
"""
from __future__ import annotations

from idmap_lib.engine import recipes
from . import claims, judge
from .variants import WORDS, words  # noqa: F401  (said here by many)
from .metrics import (PERCENT, ended_at_chance, final_test_err, lr_jump_rise, shown_as,
                      stuck_before_jump)
from .rule import NEEDS_FULL, NOT_TESTABLE, side_of
from .runs import seed_runs
from .tables import OURS, num

METRIC_SHORT = {"test_err": "test error", "train_loss": "training loss",
                "steps_to_80": "steps to 80 % train error",
                "lr_jump_rise": "loss rise at the jump",
                "lr_jump_log_rise": "log10 (0.1 + loss rise at the jump)",
                "lr_jump_ranked_rise": "loss rise at the jump (by ranks)",
                "mean_k": "mean k", "pruned_half_random":
                "error with half the blocks removed",
                "pruned_greedy": "error pruning by smallest k",
                "pruned_random": "error pruning at random"}
VERDICT_WORDS = {"reproduced": "as claimed (reproduced)",
                 "contradicted": "the other way round (contradicted)",
                 "inconclusive": "not told apart by these seeds (inconclusive)",
                 NOT_TESTABLE: "not testable here: a side's runs had nothing to show (stuck before "
                               "the jump)",
                 NEEDS_FULL: "data, not a verdict: the final error needs the full recipe",
                 "not run yet": "not run yet"}


def named(text: str, experiment: str) -> str:
    """`text` with every variant key of `experiment` in it written in words (``words``): a
    generated sentence or table cell never shows 'full_preact-110 < each of original-110'."""
    import re

    keys = sorted(recipes.EXPERIMENTS.get(experiment, {}).get("variants", ()), key=len,
                  reverse=True)
    if not keys or not text:
        return text
    pattern = r"(?<![\w+@-])(" + "|".join(map(re.escape, keys)) + r")(?:@fp32)?(?![\w+-])"
    return re.sub(pattern, lambda m: words(experiment, m.group(0)), text)


def compared(claim, test) -> str:
    """One comparison in words: "the identity shortcut vs the dropout shortcut"; two readings of one
    variant: "the GResNet (d = 100): error pruning by smallest k vs error pruning at random"."""
    e = claim.experiment
    if test.metric_b:
        return (f"{words(e, test.a)}: {METRIC_SHORT.get(test.metric, test.metric)} vs "
                f"{METRIC_SHORT.get(test.metric_b, test.metric_b)}")
    return f"{words(e, test.a)} vs {words(e, test.b)}"


def _val(metric, x) -> str:
    unit, fmt = shown_as(metric)
    return num(unit * x, fmt) + (" %" if metric in PERCENT else "")


def _gap(metric, x) -> str:
    unit, fmt = shown_as(metric)
    return num(unit * x,
               fmt if metric in PERCENT or fmt == ".0f"
               else ".2f") + (" points" if metric in PERCENT else "")


def parts_in_words(claim, v) -> list[str]:
    """What each group of the claim's comparisons shows, in plain words (no d, no interval)."""
    e = claim.experiment
    done = [(t, r) for t, r in v.parts if "d" in r]
    out = []
    if (
        done
        and len({t.a for t, _ in done}) == 1
        and len(done) > 1
        and all(t.kind == "better" for t, _ in done)
    ):
        t0, r0 = done[0]
        out.append(f"{words(e, t0.a)} has a {METRIC_SHORT.get(t0.metric, t0.metric)} of "
                   f"{_val(t0.metric, r0['mean_a'])}")
        ahead = [(t, r) for t, r in done if side_of(r) > 0]
        behind = [(t, r) for t, r in done if side_of(r) < 0]
        close = [(t, r) for t, r in done if side_of(r) == 0]
        if ahead:
            ds = [r["d"] + t.margin for t, r in ahead]
            rng = _gap(t0.metric, min(ds)) if len(ds) == 1 else \
                f"{_gap(t0.metric, min(ds)).split()[0]}-{_gap(t0.metric, max(ds))}"
            who = ", ".join(words(e, t.b) for t, _ in ahead)
            out.append(f"{len(ahead)} of the others ({who}) are {rng} worse" if len(ahead) > 1 else
                       f"{who} is {rng} worse")
        if behind:
            out.append(", ".join(f"{words(e, t.b)} is {_gap(t.metric, -r['d'] - t.margin)} better"
                                 for t, r in behind))
        if close:
            out.append(", ".join(words(e, t.b) for t, _ in close)
                       + (" are" if len(close) > 1 else " is") + " too close to it to judge")
    else:
        for t, r in done:
            a, b = words(e, t.a), words(e, t.metric_b or t.b)
            if t.metric_b:
                a, b = (f"{METRIC_SHORT.get(t.metric, t.metric)}",
                        METRIC_SHORT.get(t.metric_b, t.metric_b))
                out.append(f"{words(e, t.a)}'s {a} is {_val(t.metric, r['mean_a'])}, its {b} "
                           f"{_val(t.metric_b, r['mean_b'])}")
                continue
            never = r.get("censored", (0, 0))[1]
            out.append(f"{METRIC_SHORT.get(t.metric, t.metric)}: {a} "
                       f"{_val(t.metric, r['mean_a'])}, {b} {_val(t.metric, r['mean_b'])}"
                       + (f" (never below 80 % in {never} of {r['n'][1]} seeds: counted at the "
                          f"run's length, by ranks)" if never else ""))
    stuck = {}
    for t, r in v.parts:
        for side, k, n in zip("ab", r.get("excluded", (0, 0)), r.get("n", (0, 0))):
            if k:
                total = n + k if "d" in r else n
                stuck.setdefault(getattr(t, side), f"{k} of {total}")
    if len(stuck) > 2:
        out.append(f"{len(stuck)} were stuck at chance before the jump in some or all of their "
                   f"seeds, left out ("
                   + "; ".join(f"{words(e, s)}: {k}" for s, k in stuck.items()) + ")")
    elif stuck:
        out.append(" and ".join(f"{words(e, s)} was stuck at chance before the jump in {k} seeds"
                                for s, k in stuck.items())
                   + " (left out)")
    return out


def sentence(key, scale=None, out_dir=None) -> str:
    """One plain sentence of what a claim's runs show, computed: 'After 400 steps the identity
    shortcut has a test error of 47.9 %; 5 of the others (...) are 23-30 points behind it; ...:
    data, not a verdict: the final error needs the full recipe.'"""
    c = claims.CLAIMS_BY_KEY[key]
    scale = scale or c.scale
    v = judge.evaluate(c, scale, out_dir)
    steps = next((r["steps"] for _, r in v.parts if r.get("steps")), None)
    if v.verdict == "not run yet" and not any("d" in r for _, r in v.parts):
        return "Not run yet: the claims table below lists its missing runs."
    lead = f"After {steps:,} steps" if scale != "full" and steps else "At the full recipe"
    said = parts_in_words(c, v)
    body = "; ".join(said) if said else "no comparison has its seeds yet"
    said = VERDICT_WORDS[v.verdict]
    # the book's own hypothesis: supported or not, never "reproduced"
    if c.by == "ours" and v.verdict in OURS:
        said = said.replace(f"({v.verdict})",
                            f"({OURS[v.verdict]})").replace("as claimed", "as we expected")
    return f"{lead}, {body}: {said}."


def readable_table(keys, scale=None, out_dir=None):
    """The claims a reader sees first: one row per claim, its readable title, the verdict and what
    the runs show (``sentence``); the full ``verdicts.claims_table`` (identifiers, tests, d,
    intervals, per-part evidence) is folded below it on the page."""
    import pandas as pd

    rows = []
    for k in keys:
        c = claims.CLAIMS_BY_KEY[k]
        v = judge.evaluate(c, scale, out_dir).verdict
        rows.append({"claim": c.title, "source": c.source,
                     "verdict": OURS.get(v, v) if c.by == "ours" else v,
                     "what the runs show": sentence(k, scale, out_dir)})
    return pd.DataFrame(rows).set_index("claim")


def in_sentence(title: str) -> str:
    """A title as it reads inside a sentence: its first letter lowercased, unless its first word
    keeps its capitals (an acronym: BN, ReLU, GResNet; a name: Keras)."""
    first = title.split(" ", 1)[0]
    if any(ch.isupper() for ch in first[1:]) or first.startswith("Keras"):
        return title
    return title[:1].lower() + title[1:]


def key_of(title) -> str | None:
    """The claim a readable title names (the inverse of ``Claim.title``), or None."""
    return next((k for k, c in claims.CLAIMS_BY_KEY.items() if c.title == title), None)


def _span(metric, xs) -> str:
    """'1.9-2.0 %' (or '1.9 %') over values in the runs' units."""
    lo, hi = min(xs), max(xs)
    a, b = _val(metric, lo), _val(metric, hi)
    return a if a == b else f"{a.split()[0]}-{b}"


def tally(key, scale=None, out_dir=None) -> dict:
    """A claim's numbers for a chapter's opening sentences (the chapter writes the words, these are
    computed): steps, verdict, the compared sides' means (formatted, in %, steps or loss), and for a
    claim whose parts share their side a: the others that are worse (``worse``, ``worse_range``),
    better, too close to judge, and those that did not train (``stuck``, left out);
    ``a_span``/``b_span`` over every part; ``never``: runs of b counted at the run's length because
    they never reached the threshold (steps_to_80)."""
    c = claims.CLAIMS_BY_KEY[key]
    scale = scale or c.scale
    v = judge.evaluate(c, scale, out_dir)
    e, done = c.experiment, [(t, r) for t, r in v.parts if "d" in r]
    out = {"verdict": v.verdict,
           "steps": next((f"{r['steps']:,}" for _, r in v.parts if r.get("steps")), "–"),
           "full_steps": f"{recipes.config(e, c.variants[0], 'full')['steps']:,}",
           "parts": len(v.parts),
           "worse": [], "better": [], "close": [], "worse_range": "", "a": "–", "b": "–",
           "a_span": "–", "b_span": "–",
           "never": 0, "n_b": 0, "at_chance": [], "at_chance_err": ""}
    if done:
        t0, r0 = done[0]
        out.update(a=_val(t0.metric, r0["mean_a"]), b=_val(t0.metric_of_b, r0["mean_b"]),
                   a_span=_span(t0.metric, [r["mean_a"] for _, r in done]),
                   b_span=_span(t0.metric_of_b, [r["mean_b"] for _, r in done]), n_b=r0["n"][1],
                   never=r0.get("censored", (0, 0))[1])
        worse = [(t, r) for t, r in done if side_of(r) > 0]
        out["worse"] = [words(e, t.b) for t, _ in worse]
        out["better"] = [words(e, t.b) for t, r in done if side_of(r) < 0]
        out["close"] = [words(e, t.b) for t, r in done if side_of(r) == 0]
        # the worse sides whose every run ended at chance: "worse" because they never trained
        chance = {t.b: seed_runs(e, t.b, scale, c.seeds, out_dir)[0] for t, _ in worse}
        chance = {v: rs for v, rs in chance.items() if rs and all(map(ended_at_chance, rs))}
        out["at_chance"] = [words(e, v) for v in chance]
        out["at_chance_err"] = _span("test_err", [final_test_err(x) for rs in chance.values()
                                                  for x in rs]) if chance else ""
        if worse:
            gaps = [r["d"] + t.margin for t, r in worse]
            lo, hi = _gap(t0.metric, min(gaps)), _gap(t0.metric, max(gaps))
            out["worse_range"] = lo if lo == hi else f"{lo.split()[0]}-{hi}"
        out["a_values"] = [_val(t.metric, r["mean_a"]) for t, r in done]
        out["b_values"] = [_val(t.metric_of_b, r["mean_b"]) for t, r in done]
    stuck = {}
    for t, r in v.parts:
        for side, k, n in zip("ab", r.get("excluded", (0, 0)), r.get("n", (0, 0))):
            if k:
                stuck.setdefault(words(e, getattr(t, side)), f"{k} of {n + k if 'd' in r else n}")
    out["stuck"], out["stuck_of"] = list(stuck), stuck
    return out


def paper_b_opening(mnist, cifar, out_dir=None) -> str:
    """Chapter 10's opening (Markdown): Paper B's MNIST claims at its own recipe, `mnist` in the
    order plain nets break deep, the GResNet beats the ResNet, k falls with depth, pruning by
    smallest k beats random, the GResNet survives random pruning; then the verdicts of its CIFAR
    claims `cifar` at the CPU scale."""
    p, g, k, greedy, half = (tally(x, out_dir=out_dir) for x in mnist)
    table3 = listed(sorted({tally(x, out_dir=out_dir)["verdict"] for x in cifar}))
    what = "depth breaks plain networks and not residual ones"
    head = (f"{what}, gated or not" if p["verdict"] == "reproduced"
            else f"that {what} is *{p['verdict']}*")
    return (
        f"**At Paper B's own MNIST recipe, {head}.** Plain nets of 50 and 100 layers end at "
        f"{p['b_span']} test error, residual ones at {p['a_span']} (*{p['verdict']}*); the "
        f"100-layer GResNet against the ResNet, {g['a']} against {g['b']}, is *{g['verdict']}*; "
        f"with half their blocks removed at random ({half['a']} against {half['b']}, the figure) "
        f"it is *{half['verdict']}*. Their gates learn what Paper B says: the mean k falls with "
        f"depth (*{k['verdict']}*) and pruning by smallest k beats pruning at random "
        f"(*{greedy['verdict']}*). Table 3's CIFAR claims at the CPU scale: *{table3}*.")


def listed(items, empty="none") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def jump_in_words(key="lr_jump_preact_tolerates", out_dir=None) -> str:
    """What the lr-jump claim's runs show, in nats a reader can picture (the claim itself compares
    them on its log scale): each unit's median rise over its seeds, the verdict of each comparison,
    and the units whose runs were still at chance when the lr jumped (left out: their rise says
    nothing of tolerance)."""
    import statistics

    c = claims.CLAIMS_BY_KEY[key]
    v = judge.evaluate(c, out_dir=out_dir)
    seeds = tuple(dict.fromkeys(c.seeds + (3, 4)))
    e = c.experiment

    def rises(variant):
        runs = seed_runs(e, variant, c.scale, seeds, out_dir)[0]
        stuck = sum(stuck_before_jump(r) for r in runs)
        ok = [lr_jump_rise(r) for r in runs if not stuck_before_jump(r)]
        return ok, stuck, len(runs)

    a = c.tests[0].a
    ra, _, na = rises(a)
    if not ra:
        return "Not run yet: the claims table below lists its missing runs."
    out = ([f"{words(e, a)}'s training loss rises by a median of {statistics.median(ra):.2f} nats "
            f"({na} seeds)"])
    stuck_words = []
    for t, r in v.parts:
        rb, stuck, nb = rises(t.b)
        if stuck == nb and nb:
            stuck_words.append(f"{words(e, t.b)} was still at chance when the lr jumped in {stuck} "
                               f"of {nb} seeds, so its rise is not read (*{r['verdict']}*)")
        elif rb:
            out.append(f"{words(e, t.b)}'s by {statistics.median(rb):.2f} (*{r['verdict']}*)")
    return "; ".join(out) + (". " + "; ".join(stuck_words) if stuck_words else "") + "."
