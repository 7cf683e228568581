"""A claim judged on its recorded runs: ``evaluate`` -> its ``Verdict``.

Each of the claim's tests (claims.py) compares the metric read from every run (metrics.py) by the
rule fixed before the runs (rule.compare): every run counts, on both sides alike (a run is left out
only for what it did: ``metrics.left_out``; a threshold never reached counts as the run's length,
by ranks: ``metrics.censored``). The parts are corrected for their number (``rule.holm``), each
part's smallest resolvable difference is set beside the paper's gap (``paper_gap``), the parts are
combined (``rule.combine``), and the verdict is read again without each single run in turn: which
one seed, removed, would change it (``Verdict.fragile``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import paper_numbers
from .metrics import METRICS, censored, left_out
from .rule import TESTED, combine, compare, holm
from .runs import seed_runs
from .seeds import MORE_SEEDS, SEEDS

if TYPE_CHECKING:
    from .claims import Claim


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    parts: list = field(default_factory=list)    # (Compare, result dict)
    missing: list = field(default_factory=list)  # (variant, seeds missing)
    fragile: list = field(default_factory=list)  # (variant, seed, the verdict without that one run)
    # (variant, seed, each part's verdict without that one run), where any part's moves
    fragile_parts: list = field(default_factory=list)


def values(experiment, variant, scale, metric, out_dir=None, seeds=SEEDS):
    """Per-seed metric values of one variant's recorded runs, and the seeds still missing."""
    runs, missing = seed_runs(experiment, variant, scale, seeds, out_dir)
    return [METRICS[metric](r) for r in runs], missing


def paper_gap(claim: Claim, test) -> float | None:
    """The paper's own difference for a comparison, in the metric's units and the test's form (b
    minus a, minus the margin): from its tables' test errors (paper_numbers; a fraction like the
    runs') or Paper B Table 2's mean k; None where the paper gives no number (its "fail", a metric
    it does not report, two readings of one net)."""
    if test.metric_b or test.kind != "better" or test.metric not in ("test_err", "mean_k") or \
            claim.by == "ours":  # (our probes: the paper has one number for both of their nets)
        return None
    key, unit = ("value", 100) if test.metric == "test_err" else ("mean_k", 1)
    pa, pb = ((paper_numbers.paper_number(claim.experiment, v) or {}).get(key)
              for v in (test.a, test.b))
    if not isinstance(pa, float) or not isinstance(pb, float):
        return None
    return (pb - pa) / unit - test.margin


def _decide(claim, runs, scale, min_seeds=None, stuck=None):
    """(verdict, parts) of `claim` from `runs` ({variant: [run, ...]}): each part by rule.compare
    (the runs that did not train marked), Holm across the parts, the paper's gap beside the smallest
    resolvable difference."""
    kw = {} if min_seeds is None else {"min_seeds": min_seeds}
    parts = []
    for t in claim.tests:
        ra, rb = runs[t.a], runs[t.b]
        xa, xb = [METRICS[t.metric](r) for r in ra], [METRICS[t.metric_of_b](r) for r in rb]
        why = ([left_out(r, t.metric, stuck) for r in ra],
               [left_out(r, t.metric_of_b, stuck) for r in rb])
        cens = ([censored(r, t.metric) for r in ra], [censored(r, t.metric_of_b) for r in rb])
        res = compare(t, xa, xb, scale, why, censored=cens, **kw)
        res["steps"] = (ra or rb)[0]["config"]["steps"] if ra or rb else None
        gap = paper_gap(claim, t)
        if gap is not None:
            res["paper_gap"] = gap
            if "resolvable" in res:
                res["cannot_resolve"] = abs(gap) < res["resolvable"]
        parts.append((t, res))
    parts = holm(parts)
    return combine([p[1]["verdict"] for p in parts]), parts


def evaluate(claim: Claim, scale=None, out_dir=None, seeds=None, stuck=None) -> Verdict:
    """Apply the claim's pre-registered tests to the runs recorded at `scale` (default: the claim's)
    for `seeds` (default: the claim's, plus any of MORE_SEEDS recorded; only the claim's own count
    as missing). A tested verdict is then read again without each single run in turn (down to 2
    seeds a side): every run whose removal changes it is listed in ``fragile``, and every run whose
    removal changes any part's verdict in ``fragile_parts`` (the statuses read them). `stuck`: an
    earlier definition of a run stuck before the jump (history.py), default today's."""
    scale = scale or claim.scale
    more = () if seeds else tuple(s for s in MORE_SEEDS if s not in claim.seeds)
    seeds = seeds or claim.seeds
    runs, missing = {}, {}
    for v in claim.variants:
        found, m = seed_runs(claim.experiment, v, scale, seeds, out_dir)
        runs[v] = found + seed_runs(claim.experiment, v, scale, more, out_dir)[0]
        if m:
            missing[v] = m
    verdict, parts = _decide(claim, runs, scale, stuck=stuck)
    fragile, fragile_parts = [], []
    said = [p[1]["verdict"] for p in parts]
    if any(v in TESTED for v in said):
        for v in claim.variants:
            for i, r in enumerate(runs[v]):
                without, wparts = _decide(claim, {**runs, v: runs[v][:i] + runs[v][i + 1:]}, scale,
                                          min_seeds=2, stuck=stuck)
                seed = r["config"]["seed"]
                if without != verdict and verdict in TESTED:
                    fragile.append((v, seed, without))
                if [p[1]["verdict"] for p in wparts] != said:
                    fragile_parts.append((v, seed, [p[1]["verdict"] for p in wparts]))
    return Verdict(claim, verdict, parts, sorted(missing.items()), fragile, fragile_parts)
