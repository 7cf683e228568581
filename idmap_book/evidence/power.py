"""How many seeds a claim about the papers' final errors needs: the seeds a side for 80 % power to
resolve the paper's own gap with the rule that decides it, given the spreads over seeds Paper A
reports.

Paper A gives mean ± sd over 5 runs of pre-activation ResNet-1001 only: ± 0.14 % at batch 128 (Table
4) and ± 0.20 % at batch 64 on CIFAR-10, ± 0.22 % on CIFAR-100 (``SPREAD``, the one the recipes'
batch 128 matches; no other row of either paper has one, so it stands for every net on that dataset,
an assumption the page states). ``SDS``: the spreads every seed count is shown at (0.14, 0.16 and
0.20 on CIFAR-10: the batch-128 spread, a little more, and the batch-64 one).

``power`` is the probability that the rule's *a is better than b* (rule.py: Welch's interval d ± q
se at the two-sided level `alpha`, q Student's t at the Welch-Satterthwaite degrees of freedom)
comes out **reproduced** (the interval above 0, the paper's direction) when the true difference is
the paper's gap and both sides have sd `sd`, n seeds a side. With equal n and sd it is exact: the
sum of the two sample variances is sd² chi²(2n - 2) / (n - 1), their share R = s_a² / (s_a² + s_b²)
is Beta((n - 1) / 2, (n - 1) / 2) and independent of it, Welch's degrees of freedom are (n - 1) /
(R² + (1 - R)²), and the rule reproduces iff Z + ncp > q(R) sqrt(V / (2n - 2)) (Z standard normal, V
the chi²(2n - 2), ncp = gap / (sd sqrt(2 / n))). So power = E[Phi(ncp - q(R) sqrt(V / (2n - 2)))],
computed by Gauss quadrature over R and V: a weighted sum of normal probabilities of finite numbers,
which cannot be NaN (scipy's ``nct.cdf(-crit, df, ncp)``, which the first version used, returns NaN
for a large ncp, and its search walked on past the right n). ``monte_carlo`` simulates the same rule
(the check that the formula is the rule's).

Holm: a claim's ``better`` parts are corrected for their number m (rule.holm): the part with the
smallest p is tested at alpha / m, the strictest level a part may face. ``seeds_for(..., alpha /
m)`` is the seeds a side at that level (``holm_alpha``); the queue (plan/queue.py) asks for the
seeds at the Holm level and the batch-128 spread (``claim_seeds``), and the page shows every spread
at both levels (``seeds_table``).
"""
from __future__ import annotations

import math
import warnings

from idmap_lib.engine import recipes
from .claim_words import in_sentence, named
from .claims import CLAIMS_BY_KEY
from .judge import paper_gap
from .rule import ALPHA, LEVEL, MIN_SEEDS

SPREAD = {"cifar10": 0.14, "cifar100": 0.22}  # % points: Paper A, sd over 5 runs at batch 128
# the spreads each seed count is shown at: Paper A's batch 128 (0.14), a little more, batch 64
SDS = {"cifar10": (0.14, 0.16, 0.20), "cifar100": (0.22,)}
POWER, MOST = 0.80, 200
NODES = 48  # Gauss nodes over each of R and V: power to ~1e-10 for n >= 2
assert math.isclose(ALPHA, 2 * (1 - LEVEL))  # the rule's two-sided level, which Holm divides


def power(n: int, gap: float, sd: float, alpha: float = ALPHA) -> float:
    """The probability that the rule's *a is better than b* at two-sided level `alpha`, with n seeds
    a side, each side's sd `sd`, comes out reproduced when b's mean exceeds a's by `gap` (same units
    as `sd`). Exact for the rule's Welch test (module docstring); never NaN."""
    import numpy as np
    from scipy.special import roots_genlaguerre, roots_jacobi
    from scipy.stats import norm, t

    if n < 2:
        raise ValueError(f"n = {n}: a sample sd needs at least 2 seeds a side")
    if not (sd > 0 and 0 < alpha < 1):
        raise ValueError(f"sd {sd} and alpha {alpha}: sd > 0 and 0 < alpha < 1")
    nu, k = 2 * n - 2, (n - 1) / 2
    ncp = abs(gap) / (sd * math.sqrt(2 / n))
    x, wx = roots_genlaguerre(NODES, nu / 2 - 1)  # V / 2 ~ Gamma(nu / 2): weight x^(nu/2-1) e^-x
    u, wu = roots_jacobi(NODES, k - 1, k - 1)      # R = (1 + u) / 2 ~ Beta(k, k)
    wx, wu = wx / wx.sum(), wu / wu.sum()
    r = (1 + u) / 2
    q = t.ppf(1 - alpha / 2, (n - 1) / (r ** 2 + (1 - r) ** 2))
    p = norm.cdf(ncp - q[:, None] * np.sqrt(2 * x[None, :] / nu))
    return float(min(1.0, max(0.0, wu @ p @ wx)))


def monte_carlo(n: int, gap: float, sd: float, alpha: float = ALPHA, draws: int = 20000,
                seed: int = 0) -> tuple[float, float]:
    """(power, its standard error) of the rule itself, simulated: `draws` pairs of n normal seeds a
    side (a's mean 0, b's `gap`, sd `sd`), each decided as rule.compare decides *a is better than b*
    (Welch's interval d ± q se, q Student's t at 1 - alpha / 2 and the Welch-Satterthwaite degrees
    of freedom: reproduced where it lies above 0)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    xa = rng.normal(0.0, sd, (draws, n))
    xb = rng.normal(abs(gap), sd, (draws, n))
    hits = welch_reproduced(xa, xb, alpha)
    p = float(hits.mean())
    return p, math.sqrt(max(p * (1 - p), 1 / draws) / draws)


def welch_reproduced(xa, xb, alpha: float = ALPHA):
    """For each row of xa, xb (seeds along the last axis): whether the rule's *a is better than b*
    comes out reproduced, its Welch interval above 0 (scipy's ``ttest_ind``, vectorised;
    rule.compare row by row gives the same)."""
    from scipy.stats import ttest_ind

    with warnings.catch_warnings():  # nearly identical draws: scipy warns, the numbers stand
        warnings.simplefilter("ignore", RuntimeWarning)
        return ttest_ind(xb, xa, axis=-1, equal_var=False).confidence_interval(1 - alpha).low > 0


def seeds_for(gap: float, sd: float, target: float = POWER, alpha: float = ALPHA) -> int:
    """The smallest n >= 2 seeds a side with ``power`` >= `target` at level `alpha` (MOST where even
    that many fall short). The rule itself asks for at least MIN_SEEDS a side (``claim_seeds``)."""
    if gap == 0:
        return MOST
    for n in range(2, MOST):
        p = power(n, gap, sd, alpha)
        if not math.isfinite(p):  # never walk on past a power that could not be computed
            raise ValueError(f"power({n}, {gap}, {sd}, {alpha}) = {p}")
        if p >= target:
            return n
    return MOST


def holm_parts(claim) -> int:
    """The number of parts Holm's step-down corrects a claim for (rule.holm: its ``better``
    parts)."""
    return sum(t.kind == "better" for t in claim.tests)


def holm_alpha(claim) -> float:
    """The strictest level a part of `claim` may face under Holm: alpha / m."""
    return ALPHA / max(1, holm_parts(claim))


def _gaps(claim) -> list[tuple]:
    """(test, gap in % points) of a claim's final-error parts with a paper gap."""
    out = []
    for t in claim.tests:
        g = paper_gap(claim, t) if t.metric == "test_err" else None
        if g is not None:
            out.append((t, abs(g) * 100))  # runs store fractions; the spread is in % points
    return out


def dataset_of(claim) -> str:
    return recipes.config(claim.experiment, claim.variants[0], "full")["dataset"]


def claim_seeds(claim, sd: float | None = None, holm: bool = True) -> int | None:
    """The seeds a side that a final-error claim needs at the full recipe: the largest over its
    parts with a paper gap, at the Holm level (``holm_alpha``; `holm` False: at 5 %), at `sd`
    (default: the dataset's batch-128 ``SPREAD``), never fewer than the rule's MIN_SEEDS; None where
    the papers give no gap (a "fail", a metric they do not report, our own claims)."""
    sd = sd if sd is not None else SPREAD.get(dataset_of(claim))
    gaps = _gaps(claim)
    if not gaps or not sd:
        return None
    alpha = holm_alpha(claim) if holm else ALPHA
    return max(MIN_SEEDS, max(seeds_for(g, sd, alpha=alpha) for _, g in gaps))


def seeds_table(keys, mc_draws: int = 4000):
    """One row per final-error part with a paper gap of the claims `keys`: the gap, Holm's m, the
    seeds a side at 5 % and at the Holm level (alpha / m) for each spread of ``SDS``, and the rule
    simulated (``monte_carlo``, `mc_draws` draws; 0: left out) at the seeds the queue asks for (the
    Holm level, the batch-128 spread) beside the formula's power there."""
    import pandas as pd

    rows = []
    for key in keys:
        c = CLAIMS_BY_KEY[key]
        gaps = _gaps(c)
        if not gaps:
            continue
        ds, m = dataset_of(c), holm_parts(c)
        a_holm = holm_alpha(c)
        for t, g in gaps:
            row = {"claim": c.title, "part": named(f"{t.a} < {t.b}", c.experiment),
                   "paper's gap (points)": round(g, 2), "Holm m": m}
            for sd in SDS[ds]:
                row[f"sd {sd:g}: at 5 %"] = seeds_for(g, sd)
                row[f"sd {sd:g}: at Holm"] = seeds_for(g, sd, alpha=a_holm)
            n = max(MIN_SEEDS, seeds_for(g, SPREAD[ds], alpha=a_holm))
            row["queue asks (a side)"] = n
            if mc_draws:
                p_mc, se = monte_carlo(n, g, SPREAD[ds], a_holm, mc_draws)
                row["power there: formula / rule simulated (± se)"] = (
                    f"{power(n, g, SPREAD[ds], a_holm):.3f} / {p_mc:.3f} ± {se:.3f}")
            rows.append(row)
    df = pd.DataFrame(rows).set_index("claim")
    df.attrs["caption"] = caption()
    return df


def caption() -> str:
    return ("Seeds a side for 80 % power to find the paper's own gap by the rule's Welch test "
            "(exact for equal seeds and spreads, checked against the rule simulated), at 5 % and "
            "at the Holm level (5 % / m, the strictest level a part of an m-part claim may face), "
            "at Paper A's spreads over 5 runs of ResNet-1001: ± 0.14 points at batch 128 (our "
            "recipes' batch), ± 0.20 at batch 64, and 0.16 between. The queue asks for the Holm "
            "level at ± 0.14 (never fewer than the rule's 3 seeds).")


def seeds_in_words(keys) -> str:
    """'from 3 (...) to 39 (...) seeds a side' over the claims of `keys` that have a paper gap,
    their titles in words, at the Holm level and the batch-128 spread, and the batch-64 spread's
    top."""
    need = {k: claim_seeds(CLAIMS_BY_KEY[k]) for k in keys}
    need = {k: n for k, n in need.items() if n}
    if not need:
        return "no claim here has a gap in the papers' numbers to size its seeds by"
    lo, hi = min(need, key=need.get), max(need, key=need.get)
    wide = max(claim_seeds(CLAIMS_BY_KEY[k], sd=SDS["cifar10"][-1])
               for k in need if dataset_of(CLAIMS_BY_KEY[k]) == "cifar10")
    lo_title, hi_title = (in_sentence(CLAIMS_BY_KEY[k].title) for k in (lo, hi))
    return (f"from {need[lo]} ({lo_title}) to {need[hi]} seeds a side ({hi_title}) for 80 % "
            f"power to resolve the paper's own gap at the Holm level of the claim's parts, given "
            f"the spread Paper A reports at batch 128 (± {SPREAD['cifar10']:g} points on "
            f"CIFAR-10; at its batch-64 spread, ± {SDS['cifar10'][-1]:g}, up to {wide})")
