"""How many seeds a claim about the papers' final errors needs: the seeds a side for 80 % power to
resolve the paper's own gap, given the only spread over seeds the papers report.

Paper A Table 4 gives mean ± sd over 5 runs of pre-activation ResNet-1001: 4.89 ± 0.14 % on CIFAR-10
and 22.68 ± 0.22 % on CIFAR-100 (``SPREAD``); no other row of either paper has one, so it stands for
every net on that dataset (an assumption the page states). ``seeds_for`` is the smallest n a side
for which a two-sided two-sample t-test at 5 % (pooled sd, n - 1 degrees of freedom a side) finds a
true difference of the paper's gap with probability >= 80 % (the noncentral t, exactly).
``claim_seeds``: the largest over a claim's parts that have a paper gap. Three seeds resolve Table
2's 0.24-point gap about a third of the time.
"""
from __future__ import annotations

import math
from ...engine import recipes
from .claim_words import TITLES
from .claims import CLAIMS_BY_KEY, paper_gap

SPREAD = {"cifar10": 0.14, "cifar100": 0.22}  # % points: Paper A Table 4, sd over 5 runs
POWER, ALPHA, MOST = 0.80, 0.05, 200


def power(n: int, gap: float, sd: float, alpha: float = ALPHA) -> float:
    """The probability that the two-sided two-sample t-test at `alpha` with n seeds a side finds a
    true difference `gap` (same units as `sd`)."""
    from scipy.stats import nct, t

    df = 2 * n - 2
    crit = t.ppf(1 - alpha / 2, df)
    ncp = abs(gap) / (sd * math.sqrt(2 / n))
    return float(1 - nct.cdf(crit, df, ncp) + nct.cdf(-crit, df, ncp))


def seeds_for(gap: float, sd: float, target: float = POWER) -> int:
    """The smallest n >= 2 seeds a side with ``power`` >= `target` (MOST where even that many fall
    short)."""
    if gap == 0:
        return MOST
    return next((n for n in range(2, MOST) if power(n, gap, sd) >= target), MOST)


def claim_seeds(claim) -> int | None:
    """The seeds a side that a final-error claim needs at the full recipe (its parts with a paper
    gap), or None where the papers give no gap (a "fail", a metric they do not report, our own
    claims)."""
    dataset = recipes.config(claim.experiment, claim.variants[0], "full")["dataset"]
    sd = SPREAD.get(dataset)
    gaps = [paper_gap(claim, t) for t in claim.tests if t.metric == "test_err"]
    # (runs store fractions; the spread is in % points)
    gaps = [abs(g) * 100 for g in gaps if g is not None]
    return max(seeds_for(g, sd) for g in gaps) if gaps and sd else None


def in_words(keys) -> str:
    """'from 2 (...) to 39 (...) seeds a side' over the claims of `keys` that have a paper gap,
    their titles in words."""
    need = {k: claim_seeds(CLAIMS_BY_KEY[k]) for k in keys}
    need = {k: n for k, n in need.items() if n}
    if not need:
        return "no claim here has a gap in the papers' numbers to size its seeds by"
    lo, hi = min(need, key=need.get), max(need, key=need.get)
    return (f"from {need[lo]} ({TITLES[lo].lower()}) to {need[hi]} seeds a side "
            f"({TITLES[hi].lower()}) for 80 % power to resolve the paper's own gap, given the "
            f"spread Paper A reports (Table 4: ± {SPREAD['cifar10']:g} points on CIFAR-10)")
