"""The statistical test every claim's comparison is decided by (claims.py holds the claims), fixed
before any result is read. Every test is a comparison of means over seeds by Welch's t (unequal
variances), at the level a "2 se" rule means (5 % two-sided):

- ``better(a, b, metric, margin=0)``: *a* has a lower metric than *b* by more than ``margin``. With
  d = mean(b) - mean(a) - margin, se = sqrt(var_a / n_a + var_b / n_b) (sample variances) and q the
  97.5 % quantile of Student's t with the Welch-Satterthwaite degrees of freedom, the verdict is
  **reproduced** if the interval d ± q se lies above 0, **contradicted** if it lies below,
  **inconclusive** otherwise: the same rule for and against the paper. With 3 seeds a side q is
  2.8-4.3, not 2: se is itself estimated from a handful of values, so one seed far from the others
  widens the interval instead of carrying the verdict.
- ``similar(a, b, metric, margin)``: |mean(a) - mean(b)| < margin. **reproduced** if d ± q se lies
  inside (-margin, margin), **contradicted** if it lies outside, **inconclusive** otherwise.
- What a comparison is about (``ABOUT``): the end of the paper's recipe ("end", Tables 1-3 and Paper
  B Table 3's final errors) or the converged end of training ("converged"): at any scale but the
  full recipe its verdict is **needs the full recipe**, always, and its per-seed numbers are still
  computed and returned as what they are (``short_run``: the values after the short run's steps,
  data, never a verdict); or early optimisation and mechanism ("early": ``metrics.steps_to_80``,
  ``metrics.lr_jump_rise``), the only verdicts a CPU scale gives.
- **Both sides alike.** Every run counts, on both sides, as what it measured: a run that never
  trained or diverged at chance (metrics.py), wherever the claim expects it to fail or to train. A
  run is left out only for what it did, never for what the claim predicts, and then on both sides
  alike (``metrics.left_out``: a run still at chance when the lr jumps cannot show whether the jump
  hurts it, "stuck before the jump"); a side left with fewer than ``MIN_SEEDS`` runs makes the
  comparison **not testable here**.
- **Censored metrics by ranks** (``CENSORED``: ``steps_to_80``, where a run that never gets below 80
  % has only a lower bound, its length N): such a run counts as N on either side, tied with every
  other run that never got there, and the comparison is an exact permutation test on mid-ranks
  (two-sided, every split of the pooled runs), never a mean or a Welch interval over censored
  values. Its verdict: reproduced (or contradicted) where p < 5 % in the claim's direction (or
  against it); its d is the Hodges-Lehmann shift (the median of the pairwise differences), shown
  with the distribution-free interval of the pairwise differences' order statistics. With 3 runs a
  side no split is rarer than 1 in 20, so 3 seeds never decide: such a comparison takes 5. The same
  test reads ``lr_jump_ranked_rise`` (``RANKED``), where a run that diverged ranks above every
  finite rise.
- Power (``resolvable``): the smallest difference the seeds can resolve, q x the pooled se (pooled
  sd, Student's t at n_a + n_b - 2 degrees of freedom); claims.py sets it beside the paper's own
  gap, and a part whose paper gap is below it *cannot resolve at this scale*.
- Multiplicity: the ``better`` parts of one claim that get a verdict are corrected for their number
  by Holm's step-down (``holm``): the smallest p is tested at 5 % / m, the next at 5 % / (m - 1),
  ..., until one fails; a part that fails the corrected test is **inconclusive**, whatever its
  uncorrected interval says.
- A claim made of several comparisons is reproduced if every part is, contradicted if any part is
  (``combine``).

A run that failed (non-finite loss) counts at chance (metrics.py). Fewer than ``MIN_SEEDS`` seeds of
a run give **not run yet**, with the command that trains the missing seeds. The seeds: ``SEEDS``,
and ``MORE_SEEDS`` where those leave a comparison inconclusive (``SEQUENTIAL``).
"""
from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass

from .metrics import METRIC_WORDS
from .seeds import ALL_SEEDS, MORE_SEEDS, SEEDS  # noqa: F401  (the seed policy lives in seeds.py)

RULE = ("Each claim's test is data (its metric, sides, margin and seeds), and the records say when "
        "it took its present form against when its runs were recorded (beside each table). For "
        "*a is better than b* we "
        "take the difference d of the means over seeds (b minus a, minus a margin where the claim "
        "says *far*), its standard error se = sqrt(var_a / n_a + var_b / n_b) and the interval d ± "
        "q se, with q the 97.5 % quantile of Student's t at the Welch-Satterthwaite degrees of "
        "freedom (2.8-4.3 with 3 seeds a side, so a single seed cannot carry a verdict): "
        "**reproduced** if the interval lies above 0, **contradicted** if it lies below, "
        "**inconclusive** otherwise -- the same rule for and against the paper. *a is close to b* "
        "is reproduced if the interval lies inside the margin, contradicted if it lies outside. A "
        "claim with several parts is reproduced if every part is and contradicted if any part is; "
        "its parts are corrected for their number by **Holm's step-down** (the smallest p at 5 % / "
        "m, the next at 5 % / (m - 1), ...). A claim about the error at the end of the paper's "
        "recipe (Tables 1-3, Paper B Table 3) or its converged end **needs the full recipe**, "
        "always, at a CPU scale: a run of a few hundred steps is not the paper's experiment, so "
        "its numbers are shown as what they are (*after N steps*), in a neutral colour, never as "
        "reproduced or contradicted. A CPU scale gives verdicts only on early optimisation and "
        "mechanism, each by a metric written down as data. **Both sides are judged "
        "alike**: every run counts as what it measured (a run that never trained, at chance), "
        "whichever side the claim expects to fail; a run is left out only for what it did, on both "
        "sides alike (still at chance when the lr jumps: *stuck before the jump*), and a side left "
        "with fewer than 3 runs makes the comparison **not testable here**. A start metric that a "
        "run may never reach (*steps until the training error falls below 80 %*) is **censored**: "
        "such a run counts as the run's length on either side, and the comparison is an exact test "
        "on ranks, never a mean. The float32 lr-jump check ranks the same "
        "way: a run that diverged counts as the largest rise on either side. Beside each "
        "comparison: the smallest difference its seeds can resolve (q x the pooled se) and the "
        "paper's gap; where the gap is smaller, the comparison *cannot resolve at this scale*. A "
        "verdict that removing any one seed would change says so. ")
SEQUENTIAL = ("**More seeds, and what they do to the error rate.** Seeds 0-2 were trained first. "
              "Where they left a comparison inconclusive, seeds 3 and 4 of both its sides were "
              "added by a rule fixed before they were read (``MORE_SEEDS``; the lr-jump claim's "
              "other seeds were trained after it was written, for that reason), and the verdict "
              "then reads all five. That is a two-stage, *sequential* test: a comparison left open "
              "by three seeds gets a second look at the same 5 % bar, with five seeds of which "
              "three are the first look's. Without a correction the chance that a comparison with "
              "no true difference ends reproduced or contradicted is then above 5 %: about 8 % for "
              "two looks at this spacing (Armitage, McPherson and Rowe 1969), 10 % at most. We do "
              "not correct for it; a verdict reached only at the second look says so (its seeds "
              "are listed), and deserves that much less weight than one that three seeds reached.")
MIN_SEEDS = 3
LEVEL = 0.975  # one side of a 5 % two-sided test: the level a "2 se" rule means
ALPHA = 2 * (1 - LEVEL)  # the two-sided level Holm's correction divides
NEEDS_FULL = "needs the full recipe"
NOT_TESTABLE = "not testable here"
VERDICTS = ("reproduced", "contradicted", "inconclusive", NOT_TESTABLE, NEEDS_FULL, "not run yet")
# the verdicts of a comparison that was tested
TESTED = ("reproduced", "contradicted", "inconclusive")
CENSORED = ("steps_to_80",)  # a run may never reach it: a lower bound, compared by ranks
RANKED = CENSORED + ("lr_jump_ranked_rise",)  # compared by ranks (a diverged run: the largest rise)
# early optimisation and mechanism: the metrics a CPU scale can test
EARLY = ("steps_to_80", "lr_jump_rise", "lr_jump_log_rise", "lr_jump_ranked_rise")
ABOUT = {"end": "the end of the paper's recipe",
         "converged": "the converged end of training (a short run cannot test it)",
         "early": "early optimisation"}


@dataclass(frozen=True)
class Compare:
    kind: str        # "better" or "similar"
    a: str           # variant names within the claim's experiment
    b: str
    metric: str = "test_err"
    margin: float = 0.0
    metric_b: str | None = None  # b's metric, when a and b are two readings of one variant
    about: str = "end"           # what it is about (ABOUT): "end", "converged" or "early"

    @property
    def metric_of_b(self) -> str:
        return self.metric_b or self.metric

    def words(self) -> str:
        m = METRIC_WORDS[self.metric]
        if self.metric_b:
            return f"{m} < {METRIC_WORDS[self.metric_b]} ({self.a})"
        if self.kind == "better":
            by = f" by more than {self.margin:g}" if self.margin else ""
            return f"{m}: {self.a} < {self.b}{by}"
        return f"{m}: |{self.a} - {self.b}| < {self.margin:g}"


def better(a, b, metric="test_err", margin=0.0, metric_b=None, about=None):
    default = "early" if metric in EARLY else "end"
    return Compare("better", a, b, metric, margin, metric_b, about or default)


def similar(a, b, metric="test_err", margin=0.02):
    return Compare("similar", a, b, metric, margin)


def needs_full(test: Compare, scale: str) -> bool:
    """A comparison about the end of the paper's recipe (or its converged end), read at a scale that
    is not it."""
    return test.about in ("end", "converged") and scale != "full"


def tests_in_words(tests) -> str:
    """The tests in words, runs of plain comparisons that share their metric, margin and one side
    said once: 'final test error: original < each of a, b, c'."""
    groups = []
    for t in tests:
        last = groups[-1] if groups else None
        plain = t.kind == "better" and not t.metric_b
        if last and plain and last[0].kind == "better" and not last[0].metric_b and \
                (last[0].metric, last[0].margin) == (t.metric, t.margin) and \
                (all(x.a == t.a for x in last) or all(x.b == t.b for x in last)):
            last.append(t)
        else:
            groups.append([t])
    out = []
    for g in groups:
        if len(g) == 1:
            out.append(g[0].words())
            continue
        t, by = g[0], f" by more than {g[0].margin:g}" if g[0].margin else ""
        same_a = all(x.a == t.a for x in g)
        sides = (t.a, "each of " + ", ".join(x.b for x in g)) if same_a else \
            ("each of " + ", ".join(x.a for x in g), t.b)
        out.append(f"{METRIC_WORDS[t.metric]}: {sides[0]} < {sides[1]}{by}")
    return "; ".join(out)


def resolvable(xa: list[float], xb: list[float], level: float = LEVEL) -> float:
    """The smallest difference of means these seeds can resolve: q x the pooled se, with the pooled
    sd of both sides, se = sd sqrt(1/n_a + 1/n_b) and q Student's t at `level` for n_a + n_b - 2
    degrees of freedom. A true difference of this size is found about half the time; a smaller one
    mostly is not."""
    from scipy.stats import t as student_t

    na, nb = len(xa), len(xb)
    pooled = ((na - 1) * statistics.variance(xa)
              + (nb - 1) * statistics.variance(xb)) / (na + nb - 2)
    return float(student_t.ppf(level, na + nb - 2)) * math.sqrt(pooled * (1 / na + 1 / nb))


def _kept(xs, why):
    """The values of one side that count (those of runs not left out: ``metrics.left_out``) and how
    many were left out. The same function for both sides: no side is treated otherwise for what the
    claim predicts of it."""
    why = list(why) if why is not None else [None] * len(xs)
    kept = [x for x, w in zip(xs, why) if w is None]
    return kept, len(xs) - len(kept)


def side_of(res) -> int:
    """Which way a tested comparison came out: 1 where its interval lies above 0 (a better than b,
    or inside the margin for *similar*), -1 below, 0 across; by ranks, the exact test's direction
    where p < 5 %."""
    if "d" not in res:
        return 0
    if res.get("test") == "ranks":
        return {"reproduced": 1, "contradicted": -1}.get(res["verdict"],
                                                         0) if res["p"] < ALPHA else 0
    return 1 if res["lo"] > 0 else -1 if res["hi"] < 0 else 0


def rank_test(xa: list[float], xb: list[float]) -> float:
    """Two-sided p of the exact permutation test on mid-ranks: the share of all splits of the pooled
    values into groups of len(xa) and len(xb) whose rank sum of the first group lies at least as far
    from its expectation as xa's. Ties (runs censored at the same length) share their mid-rank, on
    both sides alike. (scipy's Mann-Whitney p, twice the smaller tail, is the same test only where
    the ties leave the rank sum's null distribution symmetric.)"""
    import numpy as np
    from scipy.stats import permutation_test, rankdata

    r, na = rankdata(list(xa) + list(xb), nan_policy="raise"), len(xa)
    mid = na * (len(r) + 1) / 2
    return float(permutation_test((r[:na], r[na:]), lambda a, b, axis: abs(a.sum(axis) - mid),
                                  n_resamples=np.inf, alternative="greater",
                                  vectorized=True).pvalue)


def shift_interval(xa: list[float], xb: list[float],
                   level: float = LEVEL) -> tuple[float, float, float]:
    """(Hodges-Lehmann shift, lo, hi) of b minus a: the median of the pairwise differences and the
    distribution-free interval between their k-th smallest and k-th largest, k from the exact null
    distribution of Mann-Whitney's U (-inf, inf where the seeds are too few for `level`)."""
    import itertools

    diffs = sorted(0.0 if a == b else b - a for a in xa for b in xb)  # two diverged runs tie
    na, nb = len(xa), len(xb)
    counts = {}  # the exact null distribution of U (pairs with a < b) over all splits, without ties
    for c in itertools.combinations(range(na + nb), na):
        u = sum(1 for i in c for j in range(na + nb) if j not in c and j > i)
        counts[u] = counts.get(u, 0) + 1
    total = sum(counts.values())
    k, below = 0, 0.0
    for u in sorted(counts):
        below += counts[u] / total
        if below > 1 - level:
            break
        k = u + 1
    mid = statistics.median(diffs)
    if k == 0:
        return mid, -math.inf, math.inf
    return mid, diffs[k - 1], diffs[-k]


def _welch(xa, xb, margin):
    """(se, df, q, lo, hi, p) of Welch's t for mean(b) - mean(a) - margin (scipy's ``ttest_ind``,
    unequal variances): its standard error, Welch-Satterthwaite degrees of freedom, Student's t
    quantile at LEVEL for them, the two-sided interval at that level and p. With no spread on
    either side the interval is the point d itself (q = 0; p 1 where d = 0, else 0)."""
    from scipy.stats import t as student_t
    from scipy.stats import ttest_ind

    if statistics.variance(xa) == statistics.variance(xb) == 0:
        d = statistics.fmean(xb) - statistics.fmean(xa) - margin
        return 0.0, math.inf, 0.0, d, d, float(d == 0)
    with warnings.catch_warnings():  # nearly identical seeds: scipy warns, the numbers stand
        warnings.simplefilter("ignore", RuntimeWarning)
        w = ttest_ind(xb, [x + margin for x in xa], equal_var=False)
    lo, hi = w.confidence_interval(2 * LEVEL - 1)
    q = float(student_t.ppf(LEVEL, w.df))
    return (hi - lo) / (2 * q), float(w.df), q, float(lo), float(hi), float(w.pvalue)


def compare(test: Compare, xa: list[float], xb: list[float], scale: str = "cpu", why=None,
            min_seeds: int = MIN_SEEDS, censored=None) -> dict:
    """The verdict of one comparison from the per-seed values of a and b at `scale` (see RULE).

    why: for each side, for each value, why that run is left out (``metrics.left_out``: what it did)
    or None; the same rule on both sides (``excluded``: per side). censored: for each side, for each
    value, whether the run never reached a censored metric's threshold (counted at its length, by
    ranks: ``censored`` per side). A comparison this scale cannot test (``needs_full``) gets
    NEEDS_FULL with its numbers (``short_run``: True)."""
    why_a, why_b = why or (None, None)
    short = needs_full(test, scale)
    out = {"n": (len(xa), len(xb)), "short_run": short}
    if len(xa) < min_seeds or len(xb) < min_seeds:
        return {**out, "verdict": NEEDS_FULL if short else "not run yet"}
    ka, ea = _kept(xa, why_a)
    kb, eb = _kept(xb, why_b)
    out.update(excluded=(ea, eb))
    if censored is not None:
        out["censored"] = tuple(sum(bool(c) for c, w in zip(cs, ws or [None] * len(cs))
                                    if w is None)
                                for cs, ws in zip(censored, (why_a, why_b)))
    if len(ka) < min_seeds or len(kb) < min_seeds:
        return {**out, "verdict": NEEDS_FULL if short else NOT_TESTABLE}
    out.update(n=(len(ka), len(kb)), xa=list(ka), xb=list(kb))
    if test.metric_of_b in RANKED and test.kind == "better":
        return _by_ranks(test, ka, kb, short, out)
    ma, mb = statistics.fmean(ka), statistics.fmean(kb)
    se, df, q, lo, hi, p = _welch(ka, kb, test.margin) if test.kind == "better" else \
        _welch(kb, ka, 0.0)
    out.update(mean_a=ma, mean_b=mb, sd_a=statistics.stdev(ka), sd_b=statistics.stdev(kb), se=se,
               df=df, q=q, resolvable=resolvable(ka, kb))
    if test.kind == "better":
        d = mb - ma - test.margin
        verdict = "reproduced" if lo > 0 else "contradicted" if hi < 0 else "inconclusive"
        out["p"] = p
    elif test.kind == "similar":
        d = ma - mb
        verdict = ("reproduced" if -test.margin < lo and hi < test.margin
                   else "contradicted" if lo >= test.margin or hi <= -test.margin
                   else "inconclusive")
    else:
        raise ValueError(f"unknown test kind {test.kind!r}; valid: better, similar")
    out.update(d=d, lo=lo, hi=hi, verdict=NEEDS_FULL if short else verdict)
    return out


def rank_floor(xa: list[float], xb: list[float]) -> float:
    """The smallest p the exact rank test can give with these sides and these ties at the run's
    length (values equal to the largest, counted at the run's length: never reached): every value
    that reached it below every other, the order most extreme for a. With 4 of 5 against 0 of 5
    it is 1/21 = 0.048: such a split cannot say more, however far apart the runs are."""
    top = max(list(xa) + list(xb))
    reached = sorted(x for x in list(xa) + list(xb) if x < top)
    na = sum(x < top for x in xa)
    a = reached[:na] + [top] * (len(xa) - na)
    return rank_test(a, reached[na:] + [top] * (len(xb) - (len(reached) - na)))


def _by_ranks(test, ka, kb, short, out):
    """A censored metric's comparison: the exact rank test decides, the shift and its interval are
    shown, beside the smallest p the split can give (``rank_floor``)."""
    from scipy.stats import rankdata

    p = rank_test(ka, kb)
    out["floor"] = rank_floor(ka, kb)
    d, lo, hi = (x - test.margin for x in shift_interval(ka, kb))
    # a's runs rank lower
    ahead = statistics.fmean(rankdata(ka + kb)[:len(ka)]) < (len(ka) + len(kb) + 1) / 2
    verdict = "inconclusive" if p >= ALPHA else "reproduced" if ahead else "contradicted"
    out.update(test="ranks", p=p, d=d, lo=lo, hi=hi, mean_a=statistics.median(ka),
               mean_b=statistics.median(kb),
               centre="median", verdict=NEEDS_FULL if short else verdict)
    return out


def holm(parts: list[tuple], alpha: float = ALPHA) -> list[tuple]:
    """Holm's step-down over a claim's tested ``better`` parts ((Compare, result) pairs): ordered by
    p, the i-th smallest (from 0) is tested at alpha / (m - i) until one fails; it and every later
    one are inconclusive. A part that passes keeps the direction of its d. With one such part it is
    the plain test. Each tested part's result gets ``holm`` = (m, the level it was tested at).
    Returns the parts, results copied."""
    tested = [i for i, (t, r) in enumerate(parts) if t.kind == "better" and r["verdict"] in TESTED
              and "p" in r]
    out = [(t, dict(r)) for t, r in parts]
    m = len(tested)
    if m < 2:
        return out
    failed = False
    for rank, i in enumerate(sorted(tested, key=lambda j: parts[j][1]["p"])):
        t, r = out[i]
        level = alpha / (m - rank)
        failed = failed or r["p"] >= level
        r["holm"] = (m, level)
        if failed:
            r["verdict"] = "inconclusive"
    return out


def combine(verdicts: list[str]) -> str:
    """A conjunction: contradicted if any part is; not run yet while a part's seeds are missing;
    reproduced if every part is; else a part this scale cannot test makes the claim need the full
    recipe, a part with a side that did not train makes it not testable here (more seeds would not
    help), and otherwise it is inconclusive."""
    if any(v == "contradicted" for v in verdicts):
        return "contradicted"
    if any(v == "not run yet" for v in verdicts):
        return "not run yet"
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    if any(v == NEEDS_FULL for v in verdicts):
        return NEEDS_FULL
    if any(v == NOT_TESTABLE for v in verdicts):
        return NOT_TESTABLE
    return "inconclusive"
