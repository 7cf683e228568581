"""The claims' verdicts on the page: ``claims_table`` (each claim, its test, verdict and evidence;
its figure, each comparison's d with its 95 % interval: figures/forest.py), ``verdict_changes``
between two scales, and
the notes that qualify a verdict: runs that ended at chance (``at_chance``, ``stuck_note``:
metrics.ended_at_chance, the one definition) and what a contradicted claim's seeds show
(``contradiction_note``). A claim about the paper's end read at a CPU scale has no verdict (needs
the full recipe): its numbers are shown as a short run's data, "after N steps", in the neutral
colour of that verdict. The verdicts themselves come from judge.evaluate (the rule: rule.py).
"""
from __future__ import annotations

from idmap_lib.engine import recipes
from . import claim_words as cw, claims, judge, paper_numbers
from .claim_words import compared
from .history import folded, preregistration  # noqa: F401  (said beside every claims table)
from .metrics import AT_CHANCE, METRIC_WORDS, PERCENT, ended_at_chance, shown_as
from .rule import ABOUT, NEEDS_FULL, VERDICTS, side_of, tests_in_words
from .runs import seed_runs
from .seeds import ALL_SEEDS, SEEDS
from .tables import drop_if_empty, num


def _evidence(test, res, same_a=False) -> str:
    """'a 41.0 ± 1.0 vs b 61.0 ± 1.0; d = 20.0 [16.9, 23.1]' (a said once for a run of parts that
    share it), with 'after 400 steps: ' before a short run's data (no verdict: rule.needs_full);
    where a side did not train, what it was."""
    if "d" not in res:
        return _not_trained(test, res)
    unit, fmt = shown_as(test.metric)
    a, b = (test.metric, test.metric_b) if test.metric_b else (test.a, test.b)
    # a censored metric: medians, the runs that never got there, the exact test
    if res.get("test") == "ranks":
        n = {k: num(unit * res[k], fmt) for k in ("mean_a", "mean_b", "d", "lo", "hi")}
        never = res.get("censored", (0, 0))
        never = (f"; never reached: {never[0]} and {never[1]} of {res['n'][0]} and {res['n'][1]}"
                 if any(never) else "")
        return (f"median {a} {n['mean_a']} vs {b} {n['mean_b']}{never}; shift {n['d']} [{n['lo']}, "
                f"{n['hi']}], exact rank test p = {res['p']:.3f}")
    n = {k: num(unit * res[k], fmt) for k in ("mean_a", "sd_a", "mean_b", "sd_b", "d", "lo", "hi")}
    head = "" if same_a else f"{a} {n['mean_a']} ± {n['sd_a']} "
    short = f"after {res['steps']} steps: " if res.get("short_run") and res.get("steps") else ""
    seeds = "" if tuple(res["n"]) == (len(SEEDS),) * 2 else " ({} vs {} seeds)".format(*res["n"])
    return (f"{short}{head}vs {b} {n['mean_b']} ± {n['sd_b']}; d = {n['d']} [{n['lo']}, "
            f"{n['hi']}]{seeds}")


def _not_trained(test, res) -> str:
    """A part without numbers because a side's runs were left out: 'b stuck before the jump in 3 of
    3 seeds'."""
    ex = res.get("excluded")
    if not ex or not any(ex):
        return ""
    sides = [f"{getattr(test, s)} left out in {k} of {n} seeds (stuck before the jump)"
             for s, k, n in zip("ab", ex, res["n"]) if k]
    return f"{test.a} vs {test.b}: " + "; ".join(sides)


# a claim of more comparisons shows the ones that decide it in full, the rest summed up
FULL_PARTS = 2


def _summable(t, r) -> bool:
    """A part that a long claim sums up: reproduced, or a short run's data whose interval lies above
    0."""
    return ("d" in r and t.kind == "better" and (r["verdict"] == "reproduced"
                                                 or (r.get("short_run") and side_of(r) > 0)))


def _evidence_of(parts) -> list[str]:
    """Each comparison's evidence; for a claim of more than FULL_PARTS comparisons, the ones that
    are not reproduced in full (they decide an inconclusive or contradicted verdict) and the
    reproduced ones (a short run's: those whose interval lies above 0) summed up in one line (their
    names and the range of d; each interval is in the forest plot)."""
    done = [(t, r) for t, r in parts if "d" in r]
    summed = [(t, r) for t, r in done if _summable(t, r)] if len(done) > FULL_PARTS else []
    if len(summed) < 2 or len({bool(r.get("short_run")) for _, r in summed}) > 1:
        summed = []
    out, last = [], None
    for t, r in parts:
        if (t, r) in summed:
            continue
        key = (t.a, t.metric, t.metric_b)
        out.append(_evidence(t, r, same_a=key == last and bool(out and out[-1])))
        last = key
    if summed:
        unit, fmt = shown_as(summed[0][0].metric)
        ds = [unit * r["d"] for _, r in summed]
        sides = {t.a for t, _ in summed}
        names = ", ".join(t.metric_b or t.b for t, _ in summed) if len(sides) == 1 else \
            ", ".join(f"{t.a} vs {t.metric_b or t.b}" for t, _ in summed)
        head = f"{sides.pop()} vs " if len(sides) == 1 else ""
        # many: the test names them
        names = f" ({names})" if len(summed) <= 3 else " (the test's other variants)"
        short = summed[0][1].get("short_run")
        each = f"after {summed[0][1]['steps']} steps" if short else "each reproduced"
        out.append(f"{head}{len(summed)} more, {each}{names}: d = {min(ds):{fmt}} to "
                   f"{max(ds):{fmt}}, every interval above 0 (the forest plot)")
    return out


def _left_out(parts) -> str:
    """Per part, the seeds of each side left out for what they did ('a 1 of 5 left out: stuck before
    the jump') and those counted at the run's length ('b 3 of 3 never reached, counted at the run's
    length, by ranks'); '' when every run gave its value."""
    out = []
    for t, r in parts:
        ex, cens, n = r.get("excluded", (0, 0)), r.get("censored", (0, 0)), r.get("n")
        # n counts the kept runs once tested
        total = [k + m for k, m in zip(ex, n)] if "d" in r else list(n)
        words = [f"{getattr(t, s)} {k} of {total[i]} left out: stuck before the jump"
                 for i, (s, k) in enumerate(zip("ab", ex)) if k]
        words += [f"{getattr(t, s)} {k} of {total[i]} never reached, counted at the run's length "
                  f"(by ranks)"
                  for i, (s, k) in enumerate(zip("ab", cens)) if k]
        if words:
            out.append("; ".join(words))
    return " | ".join(dict.fromkeys(out))


def _power(claim, parts) -> str:
    """Per part, the smallest difference its seeds resolve beside the paper's gap: 'resolves 2.1,
    paper 0.34: cannot resolve at this scale'."""
    out = []
    for t, r in parts:
        if "resolvable" not in r:
            continue
        unit, fmt = shown_as(t.metric)
        words = f"{t.a} vs {t.metric_b or t.b}: resolves {num(unit * r['resolvable'], fmt)}"
        if "paper_gap" in r:
            words += f", the paper's gap {num(unit * r['paper_gap'], '.2f')}"
            if r.get("cannot_resolve"):
                words += ": cannot resolve at this scale"
        if "holm" in r:
            words += f" (Holm, {r['holm'][0]} parts: tested at {100 * r['holm'][1]:.1f} %)"
        out.append(words)
    return " | ".join(out)


def tested_for(claim, scale) -> str:
    """What a claim's verdict at `scale` says, in words (ABOUT): an 'end' or 'converged' claim at a
    CPU scale gets none (its numbers are a short run's data)."""
    short = [a for a in claim.about if a in ("end", "converged")] if scale != "full" else []
    words = [ABOUT[a] for a in claim.about if a not in short]
    if short:
        steps = recipes.config(claim.experiment, claim.variants[0], scale)["steps"]
        what = " and ".join({"end": "the end of the paper's recipe",
                             "converged": "its converged end"}[a] for a in short)
        words.insert(0,
                     f"{what}: {NEEDS_FULL}; the numbers are data after {steps} steps, no verdict")
    return "; ".join(words)


def claims_table(keys=None, scale=None, out_dir=None):
    """One row per claim: where it comes from, its words, its pre-registered test, our verdict and
    the evidence (means ± sd over seeds, the difference d with its 95 % interval; a short run's data
    labelled 'after N steps'), the seeds left out because they did not train, the smallest
    difference the seeds resolve beside the paper's gap, the single seed whose removal changes the
    verdict, and what the verdict can say at this scale (``tested_for``). scale: default each
    claim's own (Paper A's and Paper B's CIFAR claims: the CPU scale; Paper B's MNIST claims: the
    full recipe)."""
    import pandas as pd

    rows = []
    for c in (claims.CLAIMS if keys is None else [claims.CLAIMS_BY_KEY[k] for k in keys]):
        v = judge.evaluate(c, scale, out_dir)
        fragile = "; ".join(f"without seed {s} of {name}: {w}" for name, s, w in v.fragile)
        said = lambda text: cw.named(text, c.experiment)  # noqa: E731  (variants in words)
        rows.append({"claim": c.key, "source": c.source, "the paper says": c.words,
                     "test (fixed before the runs)": said(tests_in_words(c.tests))
                     + (f" ({c.scale_note})" if c.scale_note else ""),
                     "verdict": v.verdict, "tested for": tested_for(c, scale or c.scale),
                     "evidence": said(" | ".join(filter(None, _evidence_of(v.parts)))) or "–",
                     "left out or censored": said(_left_out(v.parts)),
                     "resolves (the paper's gap)": said(_power(c, v.parts)),
                     "one seed changes it": said(fragile),
                     "missing runs": sum(len(s) for _, s in v.missing)})
    df = pd.DataFrame(rows).set_index("claim")
    for col in ("left out or censored", "resolves (the paper's gap)", "one seed changes it",
                "missing runs"):
        df = drop_if_empty(df, col)
    return df


def titled(df):
    """A table by claim key, shown by the claims' titles (a reader never sees a claim's key)."""
    return df.rename(index=lambda k: claims.CLAIMS_BY_KEY[k].title).rename_axis("claim")


def _at(claim, scale, out_dir) -> str:
    """A claim's verdict at `scale`; for one it cannot test there, where its short run's intervals
    of *a better than b* lie (data, not a verdict)."""
    v = judge.evaluate(claim, scale, out_dir)
    short = [r for t, r in v.parts if r.get("short_run") and "d" in r and t.kind == "better"]
    if v.verdict != NEEDS_FULL or not short:
        return v.verdict
    where = {"above 0": sum(side_of(r) > 0 for r in short),
             "across 0": sum(side_of(r) == 0 for r in short),
             "below 0": sum(side_of(r) < 0 for r in short)}
    return f"{v.verdict} (after {short[0]['steps']} steps, intervals: " + \
        ", ".join(f"{k} {w}" for w, k in where.items() if k) + ")"


def verdict_changes(keys, before=recipes.JUMP_PROBE, after="cpu", out_dir=None):
    """The claims' verdicts read at two scales by today's rule, side by side (for a claim neither
    can test, where the short run's intervals lie: data, not a verdict), with what drove a change
    where it can be measured: the compared runs whose number of seeds at chance differs between the
    two scales."""
    import pandas as pd

    rows = []
    for k in keys:
        c = claims.CLAIMS_BY_KEY[k]
        counts = {s: {name: (n, runs)
                      for name, n, runs, _ in sum(at_chance(c.experiment, c.variants, s,
                                                            out_dir=out_dir), [])}
                  for s in (before, after)}

        def seeds(s, v):
            return "{} of {}".format(*counts[s][v]) if v in counts[s] else "none"

        moved = [f"{cw.words(c.experiment, v)}: {seeds(before, v)} seeds → "
                 f"{seeds(after, v)}"
                 for v in sorted(set(counts[before]) | set(counts[after]))
                 if counts[before].get(v, (0,))[0] != counts[after].get(v, (0,))[0]]
        rows.append({"claim": k, recipes.SCALE_WORDS[before]: _at(c, before, out_dir),
                     recipes.SCALE_WORDS[after]: _at(c, after, out_dir),
                     f"runs at chance ({recipes.SCALE_WORDS[before]} → "
                     f"{recipes.SCALE_WORDS[after]}), where they differ":
                         "; ".join(moved) or "the same"})
    return pd.DataFrame(rows).set_index("claim")


def verdict_counts(df) -> dict:
    """{verdict: number of claims} for a ``claims_table``."""
    return {v: int((df["verdict"] == v).sum()) for v in VERDICTS}


def counts_in_words(df, where) -> str:
    """'**CPU scale**: of 15 claims, reproduced 6, contradicted 1, ...' for a ``claims_table``
    (Markdown)."""
    n = verdict_counts(df)
    return f"**{where}**: of {len(df)} claims, " + ", ".join(f"{k} {v}" for v, k in n.items()
                                                             if k) + "."


def at_chance(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None):
    """The variants with a recorded run that ended at chance, as (own, schedule): lists of (variant,
    runs at chance, runs, the paper's number) -- `own` where the paper marks the variant "fail"
    (error > 20 % after its full recipe), `schedule` where the paper trains it to a low error (the
    short schedule's kind of failure)."""
    own, schedule = [], []
    for v in variants:
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        n = sum(ended_at_chance(r) for r in runs)
        if n:
            p = (paper_numbers.paper_number(experiment, v) or {}).get("value")
            failed_in_paper = p == paper_numbers.FAIL or (isinstance(p, float) and p > 20)
            (own if failed_in_paper else schedule).append((v, n, len(runs), p))
    return own, schedule


def stuck_note(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None) -> str:
    """Which variants ended a run at chance at this scale, and whether that is the paper's kind of
    failure or the short schedule's (``at_chance``). Markdown; empty when no recorded run ended at
    chance."""
    def label(v, n, runs, p):
        return (f"**{cw.words(experiment, v)}** ({n} of {runs} seeds; the paper: "
                + (f"{p:.2f} %" if isinstance(p, float) else str(p)) + ")")

    own, schedule = ([label(*x) for x in xs] for xs in at_chance(experiment, variants, scale, seeds,
                                                                 out_dir))
    out = []
    if own:
        out.append("Ended at chance, as the paper's own runs *fail* (error > 20 % after the full "
                   "recipe): "
                   + ", ".join(own) + ".")
    if schedule:
        out.append("Ended at chance **at this scale only**: " + ", ".join(schedule)
                   + ". The paper trains these "
                   "to a low error, so this is the short run's kind of failure, not the paper's: "
                   "such a run did not train; every comparison counts it as measured, on both "
                   "sides alike (the claims table counts it, under *did not train*). What happened "
                   "to each seed at the lr change is said below the curves.")
    if out:  # what "at chance" means here: the training loss, not the test error
        out.append(f"*At chance*: the run diverged, or its final training loss is within "
                   f"{100 * (1 - AT_CHANCE):.0f} % "
                   "of ln C (C classes), where it began; a run can learn its training data and "
                   "still test near chance, which this does not count.")
    return "\n\n".join(out)


def contradiction_note(keys, out_dir=None, scale=None) -> str:
    """For each of the claims `keys` that its scale contradicts: the part that does it, its per-seed
    values, and the paper's own numbers for the two variants (what the paper's recipe separates, by
    how much). Markdown, computed from the recorded runs; empty when none is contradicted."""
    lines = []
    for key in keys:
        claim = claims.CLAIMS_BY_KEY[key]
        v = judge.evaluate(claim, scale, out_dir=out_dir)
        for t, res in v.parts if v.verdict == "contradicted" else []:
            if res.get("verdict") != "contradicted":
                continue
            unit, fmt = shown_as(t.metric)
            u = " %" if t.metric in PERCENT else ""
            each = {side: ", ".join(num(unit * x, fmt) for x in res[f"x{side}"]) for side in "ab"}
            d, lo, hi = (num(unit * res[k], fmt) for k in ("d", "lo", "hi"))
            pa, pb = (paper_numbers.paper_number(claim.experiment, x) or {} for x in (t.a, t.b))
            wa, wb = (cw.words(claim.experiment, x) for x in (t.a, t.b))
            paper = (f" The paper, after its whole recipe: {wa} {pa['value']:.2f} %, {wb} "
                     f"{pb['value']:.2f} % ({abs(pa['value'] - pb['value']):.2f} points apart)."
                     if isinstance(pa.get("value"), float) and isinstance(pb.get("value"), float)
                     else "")
            lines.append(f"- **{key}** is contradicted at the "
                         f"{recipes.SCALE_WORDS[scale or claim.scale]} by its part "
                         f"*{cw.named(t.words(), claim.experiment)}*: "
                         f"it holds the other way round, d = {d} [{lo}, {hi}] over the seeds "
                         f"recorded ({wa}: {each['a']}{u}; {wb}: {each['b']}{u}).{paper}")
    return "\n".join(lines)


def opposite_note(keys, out_dir=None, scale=None) -> str:
    """For each short-run part of the claims `keys` (a claim about the end of the paper's recipe,
    read after a few hundred steps: no verdict) whose interval lies wholly on the other side of the
    paper's direction: what it shows and what it does not. Such a part cannot contradict the paper
    (the run is early training); for a training loss it is faster optimisation, not the end the
    paper describes. Markdown; empty when there is none."""
    lines = []
    for key in keys:
        claim = claims.CLAIMS_BY_KEY[key]
        v = judge.evaluate(claim, scale, out_dir=out_dir)
        for t, res in v.parts:
            if not res.get("short_run") or "d" not in res or side_of(res) >= 0:
                continue
            unit, fmt = shown_as(t.metric)
            d, lo, hi = (num(unit * res[k], fmt) for k in ("d", "lo", "hi"))
            early = ("faster optimisation early on, not the converged end Paper A's regularisation "
                     "is about"
                     if t.metric == "train_loss"
                     else "early training, not the end of the paper's recipe")
            lines.append(f"- After {res['steps']} steps, *{METRIC_WORDS[t.metric]}: "
                         f"{compared(claim, t)}* lies wholly the other way round (d = {d} [{lo}, "
                         f"{hi}]): {early}. No verdict: {NEEDS_FULL}.")
    return "\n".join(lines)


def open_claims_words(keys_by_scale: dict, out_dir=None) -> str:
    """What a page's claims leave open, by scale ({scale in words: claim keys}): the claims with no
    verdict at that scale, those tested and not reproduced (with their verdicts), and how to read
    both."""
    words = []
    for scale, keys in keys_by_scale.items():
        table = claims_table(keys, out_dir=out_dir)
        tested = table[table["verdict"] != NEEDS_FULL]
        not_yet = tested[tested["verdict"] != "reproduced"]
        data = table[table["verdict"] == NEEDS_FULL]
        if not data.empty:
            words.append(f"No verdict at the {scale} (*{NEEDS_FULL}*): "
                         + "; ".join(f"**{claims.CLAIMS_BY_KEY[k].title}**"
                                     for k in data.index) + ".")
        if not tested.empty:
            words.append(f"At the {scale}, every claim it can test was reproduced." if not_yet.empty
                         else
                         f"Not reproduced (yet) at the {scale}: "
                         + "; ".join(f"**{claims.CLAIMS_BY_KEY[k].title}** ({v})"
                                     for k, v in not_yet["verdict"].items()) + ".")
    return " ".join(words + [
        "At the CPU scale a claim about the final error *needs the full recipe*: its numbers are a "
        "short run's data. An *inconclusive* verdict means our seeds could not separate the two "
        "sides (the folded claims table sets the smallest difference they can resolve beside the "
        "paper's gap); *not run yet* lists its missing runs there."])
