"""The statistical test every claim's comparison is decided by (claims.py holds the claims), fixed before any
result is read. Every test is a comparison of means over seeds by Welch's t (unequal variances), at the level the
old "2 se" rule meant (5 % two-sided):

- ``better(a, b, metric, margin=0)``: *a* has a lower metric than *b* by more than ``margin``. With d = mean(b) -
  mean(a) - margin, se = sqrt(var_a / n_a + var_b / n_b) (sample variances) and q the 97.5 % quantile of
  Student's t with the Welch-Satterthwaite degrees of freedom, the verdict is **reproduced** if the interval
  d ± q se lies above 0, **contradicted** if it lies below, **inconclusive** otherwise: the same rule for and
  against the paper. With 3 seeds a side q is 2.8-4.3, not 2: se is itself estimated from a handful of
  values, so one seed far from the others widens the interval instead of carrying the verdict.
- ``similar(a, b, metric, margin)``: |mean(a) - mean(b)| < margin. **reproduced** if d ± q se lies inside
  (-margin, margin), **contradicted** if it lies outside, **inconclusive** otherwise.
- A claim made of several comparisons is reproduced if every part is, contradicted if any part is,
  inconclusive otherwise (a conjunction is false when one of its parts is: ``combine``).
- What a comparison is about (``ABOUT``): the end of the paper's recipe ("end": at the CPU scale, tested as
  what it predicts for a short run of the same network, and said so beside the verdict), the converged end of
  training ("converged": a short run cannot test it, its verdict is **needs the full recipe** at any scale but
  the full one), or early optimisation ("early": testable in a short run, by a metric that neither the loss at
  initialisation nor an lr change can drive: ``metrics.steps_to_80``).

A run that failed (non-finite loss) counts at chance (metrics.py). Fewer than ``MIN_SEEDS`` seeds of a run give
**not run yet**, with the command that trains the missing seeds. The seeds: ``SEEDS``, and ``MORE_SEEDS`` where
those leave a comparison inconclusive.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .metrics import METRIC_WORDS

RULE = ("Each claim's test was fixed before any of its runs was read. For *a is better than b* we take the "
        "difference d of the means over seeds (b minus a, minus a margin where the claim says *far*), its "
        "standard error se = sqrt(var_a / n_a + var_b / n_b) and the interval d ± q se, with q the 97.5 % "
        "quantile of Student's t at the Welch-Satterthwaite degrees of freedom (2.8-4.3 with 3 seeds a side, "
        "so a single seed cannot carry a verdict): **reproduced** if the interval lies above 0, "
        "**contradicted** if it lies below, **inconclusive** otherwise -- the same rule for and against the "
        "paper. *a is close to b* is reproduced if the interval lies inside the margin, contradicted if it lies "
        "outside. A claim with several parts is reproduced if every part is and contradicted if any part is. "
        "A claim about the converged end of training **needs the full recipe**: a short run cannot test it, "
        "so it is neither reproduced nor contradicted there. A diverged run counts at chance.")
MIN_SEEDS = 3
SEEDS = (0, 1, 2)
MORE_SEEDS = (3, 4)  # trained where 3 seeds leave a comparison inconclusive (a rule fixed before they are read)
ALL_SEEDS = SEEDS + MORE_SEEDS  # shown wherever recorded: the claim's 3 seeds, and 5 where 3 left it open
LEVEL = 0.975  # one side of a 5 % two-sided test: the level the old "2 se" rule meant
NEEDS_FULL = "needs the full recipe"
VERDICTS = ("reproduced", "contradicted", "inconclusive", NEEDS_FULL, "not run yet")
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
    default = "early" if metric in ("steps_to_80", "lr_jump_rise") else "end"
    return Compare("better", a, b, metric, margin, metric_b, about or default)


def similar(a, b, metric="test_err", margin=0.02):
    return Compare("similar", a, b, metric, margin)


def tests_in_words(tests) -> str:
    """The tests in words, runs of plain comparisons that share their metric, margin and one side said once:
    'final test error: original < each of a, b, c'."""
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


def welch_q(xa: list[float], xb: list[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(se, degrees of freedom, q): the standard error of mean(b) - mean(a) with unequal variances, the
    Welch-Satterthwaite degrees of freedom and Student's t quantile at `level` for them. With no spread on
    either side the interval is the point d itself (q = 0)."""
    from scipy.stats import t as student_t

    va, vb = statistics.variance(xa) / len(xa), statistics.variance(xb) / len(xb)
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0, math.inf, 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(xa) - 1) + vb ** 2 / (len(xb) - 1))
    return se, df, float(student_t.ppf(level, df))


def compare(test: Compare, xa: list[float], xb: list[float], scale: str = "cpu") -> dict:
    """The verdict of one comparison from the per-seed values of a and b at `scale` (Welch's t, see RULE)."""
    if test.about == "converged" and scale != "full":
        return {"verdict": NEEDS_FULL, "n": (len(xa), len(xb))}
    if len(xa) < MIN_SEEDS or len(xb) < MIN_SEEDS:
        return {"verdict": "not run yet", "n": (len(xa), len(xb))}
    ma, mb = statistics.fmean(xa), statistics.fmean(xb)
    se, df, q = welch_q(xa, xb)
    out = {"mean_a": ma, "mean_b": mb, "sd_a": statistics.stdev(xa), "sd_b": statistics.stdev(xb),
           "se": se, "df": df, "q": q, "n": (len(xa), len(xb)), "xa": list(xa), "xb": list(xb)}
    if test.kind == "better":
        d = mb - ma - test.margin
        lo, hi = d - q * se, d + q * se
        verdict = "reproduced" if lo > 0 else "contradicted" if hi < 0 else "inconclusive"
    elif test.kind == "similar":
        d = ma - mb
        lo, hi = d - q * se, d + q * se
        verdict = ("reproduced" if -test.margin < lo and hi < test.margin
                   else "contradicted" if lo >= test.margin or hi <= -test.margin else "inconclusive")
    else:
        raise ValueError(f"unknown test kind {test.kind!r}; valid: better, similar")
    out.update(d=d, lo=lo, hi=hi, verdict=verdict)
    return out


def combine(verdicts: list[str]) -> str:
    """A conjunction: reproduced if every part is, contradicted if any part is; a part this scale cannot test
    makes the claim need the full recipe (unless another part already contradicts it)."""
    if any(v == "contradicted" for v in verdicts):
        return "contradicted"
    if any(v == "not run yet" for v in verdicts):
        return "not run yet"
    if any(v == NEEDS_FULL for v in verdicts):
        return NEEDS_FULL
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    return "inconclusive"
