"""The papers' claims that an experiment can test, as data, with their tests fixed before any result is read.

A claim names its words, the figure or table it comes from, the runs that test it (experiment, variants),
the metric read from each run, what each comparison is *about*, and the test. Every test is a comparison of
means over seeds by Welch's t (unequal variances), at the level the old "2 se" rule meant (5 % two-sided):

- ``better(a, b, metric, margin=0)``: *a* has a lower metric than *b* by more than ``margin``. With d = mean(b) -
  mean(a) - margin, se = sqrt(var_a / n_a + var_b / n_b) (sample variances) and q the 97.5 % quantile of
  Student's t with the Welch-Satterthwaite degrees of freedom, the verdict is **reproduced** if the interval
  d ± q se lies above 0, **contradicted** if it lies below, **inconclusive** otherwise: the same rule for and
  against the paper. With 3 seeds a side q is 2.8-4.3, not 2: se is itself estimated from a handful of
  values, so one seed far from the others widens the interval instead of carrying the verdict.
- ``similar(a, b, metric, margin)``: |mean(a) - mean(b)| < margin. **reproduced** if d ± q se lies inside
  (-margin, margin), **contradicted** if it lies outside, **inconclusive** otherwise.
- A claim made of several comparisons is reproduced if every part is, contradicted if any part is,
  inconclusive otherwise (a conjunction is false when one of its parts is).
- What a comparison is about (``ABOUT``): the end of the paper's recipe ("end": at the CPU scale, tested as
  what it predicts for a short run of the same network, and said so beside the verdict), the converged end of
  training ("converged": a short run cannot test it, its verdict is **needs the full recipe** at any scale but
  the full one), or early optimisation ("early": testable in a short run, by a metric that neither the loss at
  initialisation nor an lr change can drive: ``steps_to_80``).

A run that failed (non-finite loss) counts at chance: test error 1 - 1/C (also with blocks removed), training
loss ln C. Fewer than
``MIN_SEEDS`` seeds of a run give **not run yet**, with the command that trains the missing seeds.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

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
ALL_SEEDS = SEEDS + MORE_SEEDS
LEVEL = 0.975  # one side of a 5 % two-sided test: the level the old "2 se" rule meant
NEEDS_FULL = "needs the full recipe"
VERDICTS = ("reproduced", "contradicted", "inconclusive", NEEDS_FULL, "not run yet")
ABOUT = {"end": "the end of the paper's recipe",
         "converged": "the converged end of training (a short run cannot test it)",
         "early": "early optimisation"}


# ----------------------------------------------------------------------------------------------
# metrics read from one recorded run

def _chance(result):
    c = result["config"]["model"]["kwargs"].get("num_classes", 10)
    return 1 - 1 / c, math.log(c)


def final_test_err(result):
    """Test error at the end of training."""
    if result["status"] == "fail":
        return _chance(result)[0]
    return result["final"]["test_err"]


def final_train_loss(result):
    """Training loss of the last logged window."""
    if result["status"] == "fail":
        return _chance(result)[1]
    return result["final"]["train_loss"]


def early_train_loss(result):
    """Mean training loss over the logged windows of the first half of training. Shown, never tested: a high
    loss at initialisation or a spike at an lr change moves it as much as a slow start does."""
    if result["status"] == "fail":
        return _chance(result)[1]
    half = result["config"]["steps"] / 2
    losses = [h["train_loss"] for h in result["history"]["train"] if h["step"] <= half]
    return statistics.fmean(losses)


START_ERR = 0.80  # ResNet v1's warm-up rule: "until the training error is below 80 %"


def steps_to_80(result):
    """How fast a net starts (early optimisation): the first logged step whose window's training error is below
    80 % (ResNet v1's sign that training has started). A run that never gets there, or failed, counts as its
    length (a lower bound). Fixed before the cpu-scale runs: training error is bounded, so a huge loss at
    initialisation does not move it, and only the *first* crossing counts, so a later spike does not either."""
    steps = result["config"]["steps"]
    if result["status"] == "fail":
        return float(steps)
    return float(next((h["step"] for h in result["history"]["train"] if h["train_err"] < START_ERR), steps))


def lr_jump_rise(result):
    """How far the training loss rises after the warm-up (the lr jump of the cpu_step_warmup scale): the highest
    window loss between the end of the warm-up and the first lr drop, minus the loss of the window that ends
    the warm-up; 0 if it never rises. A failed run counts as a rise to its last loss (non-finite: ln C)."""
    s = result["config"]["schedule"]
    warm, drop = s.get("warmup_steps", 0), s["milestones"][0]
    tr = result["history"]["train"]
    at_end = [h["train_loss"] for h in tr if h["step"] <= warm]
    after = [h["train_loss"] for h in tr if warm < h["step"] <= drop]
    if not at_end:
        raise ValueError("lr_jump_rise needs a logged window before the end of the warm-up")
    if result["status"] == "fail":
        after.append(_chance(result)[1])
    return max([0.0] + [x - at_end[-1] for x in after])


def mean_k(result):
    """Mean of the learned gates k at the end of training (Paper B Table 2)."""
    return statistics.fmean(result["final"]["gates_k"])


def _pruning(result):
    p = (result.get("analysis") or {}).get("pruning")
    if p is None:
        raise ValueError(f"{result.get('path', 'this result')} has no pruning curves (they are recorded with the "
                         f"d = 100 MNIST runs: python -m idmap_lib mnist)")
    return p


def pruned_half(result):
    """Test error with half of the blocks removed without retraining: by Paper B's order (smallest k first)
    for a gated net, the mean over random orders for an ungated one (Paper B Fig 5)."""
    if result["status"] == "fail":
        return _chance(result)[0]
    p = _pruning(result)
    half = p["blocks"] // 2
    if "by_gate" in p:
        return p["by_gate"][half]
    return statistics.fmean(c[half] for c in p["at_random"])


def _removal_mean(curve, p):
    return statistics.fmean(curve[1:p["blocks"] // 2 + 1])


def pruned_greedy(result):
    """Mean test error over removing 1, 2, ..., half of the blocks by smallest k first (Paper B Fig 5)."""
    if result["status"] == "fail":
        return _chance(result)[0]
    p = _pruning(result)
    return _removal_mean(p["by_gate"], p)


def pruned_random(result):
    """Mean test error over removing 1, 2, ..., half of the blocks in random orders (mean over the orders)."""
    if result["status"] == "fail":
        return _chance(result)[0]
    p = _pruning(result)
    return statistics.fmean(_removal_mean(c, p) for c in p["at_random"])


METRICS = {"test_err": final_test_err, "train_loss": final_train_loss, "early_train_loss": early_train_loss,
           "steps_to_80": steps_to_80, "lr_jump_rise": lr_jump_rise,
           "mean_k": mean_k, "pruned_half": pruned_half, "pruned_greedy": pruned_greedy,
           "pruned_random": pruned_random}
METRIC_WORDS = {"test_err": "final test error", "train_loss": "final training loss",
                "early_train_loss": "mean training loss over the first half of training",
                "steps_to_80": "steps until the training error first falls below 80 %",
                "lr_jump_rise": "rise of the training loss after the lr jump",
                "mean_k": "mean learned k", "pruned_half": "test error with half of the blocks removed",
                "pruned_greedy": "mean test error removing up to half of the blocks, smallest k first",
                "pruned_random": "mean test error removing up to half of the blocks at random"}
PERCENT = ("test_err", "pruned_half", "pruned_greedy", "pruned_random")  # metrics shown in %


# ----------------------------------------------------------------------------------------------
# tests

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


def better(a, b, metric="test_err", margin=0.0, metric_b=None, about=None):
    default = "early" if metric in ("steps_to_80", "lr_jump_rise") else "end"
    return Compare("better", a, b, metric, margin, metric_b, about or default)


def similar(a, b, metric="test_err", margin=0.02):
    return Compare("similar", a, b, metric, margin)


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


# ----------------------------------------------------------------------------------------------
# the claims

@dataclass(frozen=True)
class Claim:
    key: str
    words: str                      # what the paper says
    source: str                     # figure / table / section
    experiment: str
    tests: tuple                    # Compare, ... (all must hold)
    scale_note: str = ""            # what this scale can and cannot show about it
    scale: str = "cpu"              # the scale its runs are recorded at (Paper B's MNIST nets: the full recipe)
    seeds: tuple = SEEDS            # the seeds its verdict reads

    @property
    def about(self) -> tuple[str, ...]:
        """What its comparisons are about (ABOUT keys), each once."""
        return tuple(dict.fromkeys(t.about for t in self.tests))

    @property
    def variants(self) -> list[str]:
        seen = []
        for t in self.tests:
            for v in (t.a, t.b):
                if v not in seen:
                    seen.append(v)
        return seen


T1, T2, T3 = "a_table1_shortcuts", "a_table2_activations", "a_table3_preact"
T1_MODIFIED = ("constant_scaling-0-1", "constant_scaling-0.5-1", "constant_scaling-0.5-0.5", "exclusive_gating-b0",
               "exclusive_gating-b-6", "exclusive_gating-b-7", "shortcut_only_gating-b0",
               "shortcut_only_gating-b-6", "conv1x1", "dropout-0.5")
T1_FAIL = ("constant_scaling-0-1", "constant_scaling-0.5-1", "exclusive_gating-b0", "dropout-0.5")
UNITS_110 = ("original-110", "bn_after_add-110", "relu_before_add-110", "relu_preact-110")

CLAIMS = [
    Claim("t1_identity_best",
          "The identity shortcut gives the lowest error: every modification of the shortcut (scaling, gating, "
          "1x1 convolution, dropout) is worse.", "Paper A Table 1", T1,
          tuple(better("original", v) for v in T1_MODIFIED)),
    Claim("t1_fail_rows_far_behind",
          "Constant scaling of the shortcut (0 or 0.5), exclusive gating with b_g = 0 and the dropout shortcut "
          "'fail' (error > 20 % where the original reaches 6.61 %): they fall far behind.", "Paper A Table 1", T1,
          tuple(better("original", v, margin=0.05) for v in T1_FAIL),
          "far behind, at this scale: more than 5 points of test error above the original"),
    Claim("t1_gating_bias",
          "Exclusive gating trains only when its gates start nearly shut on F (b_g = -6: 8.70 %); at b_g = 0 it "
          "fails.", "Paper A Table 1", T1, (better("exclusive_gating-b-6", "exclusive_gating-b0"),)),
    Claim("t1_shortcut_only_gating_near_identity",
          "Shortcut-only gating with b_g = -6 (the shortcut kept almost whole) is close to the identity: "
          "6.91 % vs 6.61 %.", "Paper A Table 1", T1,
          (similar("shortcut_only_gating-b-6", "original", margin=0.02),),
          "close, at this scale: within 2 points of test error"),
    Claim("t2_full_preact_best",
          "Full pre-activation gives the lowest error of the five units of Fig 4 (ResNet-110: 6.37 %).",
          "Paper A Table 2", T2, tuple(better("full_preact-110", v) for v in UNITS_110)),
    Claim("t2_bn_after_add_worst",
          "BN after addition is the worst unit at depth 110 (8.17 %).", "Paper A Table 2", T2,
          tuple(better(v, "bn_after_add-110") for v in UNITS_110 if v != "bn_after_add-110")
          + (better("full_preact-110", "bn_after_add-110"),)),
    Claim("fig6_bn_after_add_slow_start",
          "With BN after addition, ResNet-110 has trouble reducing the training loss at the beginning of "
          "training.", "Paper A Fig 6", T2,
          (better("original-110", "bn_after_add-110", "steps_to_80"),)),
    Claim("fig1_1001_original_slow_start",
          "At 1001 layers, the original unit reduces the training loss very slowly at the start; the "
          "pre-activation unit reduces it quickly.", "Paper A Fig 1, Table 3", T3,
          (better("c10-1001-full_preact", "c10-1001-original", "steps_to_80"),),
          "ResNet-1001 at its real depth, a quarter of its width"),
    Claim("t3_preact_1layer_skip",
          "Pre-activation helps even with 1-layer skips (ResNet-110, 1-layer residual units: 8.91 % vs 9.90 %).",
          "Paper A Table 3", T3,
          (better("c10-110-single-full_preact", "c10-110-single-original"),)),
    Claim("s42_preact164_regularises",
          "Pre-activation ResNet-164 ends with a higher training loss but a lower test error than the original: "
          "pre-activation regularises.", "Paper A Sec 4.2, Fig 6 right", T2,
          (better("full_preact-164", "original-164"),
           better("original-164", "full_preact-164", "train_loss", about="converged")),
          "its training-loss half is about the converged end of the full recipe: a short run is far from it, so "
          "only the full recipe can test it"),
    Claim("lr_jump_preact_tolerates",
          "Ours, on Paper A Sec 4.1 and Fig 1 (the pre-activation unit eases optimisation): when the lr jumps from "
          "0.01 to 0.1 in one step, the original ResNet-110's training loss rises; the full pre-activation unit's "
          "does not.", "ours (chapter 8), on Paper A Sec 4.1", T2,
          (better("full_preact-110", "original-110", "lr_jump_rise"),),
          "the CPU scale with the paper's step warm-up, where the jump comes at 25 % of the run; seeds 0-2 were "
          "seen before this claim was written (they showed the jump), seeds 3-4 trained after it was fixed",
          scale="cpu_step_warmup", seeds=(0, 1, 2, 3, 4)),
]
MNIST, R32, WRN = "b_mnist", "b_resnet32", "b_wrn"
CLAIMS += [
    Claim("b_plain_breaks_deep",
          "Plain networks break at d >= 50 (60.37 % and 90.20 % error); ResNets and GResNets of the same depth do "
          "not (1.62 % and below).", "Paper B Table 1", MNIST,
          tuple(better(f"{k}-d{d}", f"plain-d{d}", margin=0.05) for d in (50, 100) for k in ("resnet", "gresnet")),
          "far behind: more than 5 points of test error", scale="full"),
    Claim("b_gresnet_beats_resnet",
          "The gated ResNet has a lower error than the ResNet, most clearly at d = 100 (1.26 % vs 1.50 %).",
          "Paper B Table 1", MNIST, (better("gresnet-d100", "resnet-d100"),), scale="full"),
    Claim("b_k_falls_with_depth",
          "The mean learned k falls as the network deepens (5.58 at d = 2, 2.54 at d = 10, 0.67 at d = 100): "
          "deeper nets lean more on their identity.", "Paper B Table 2", MNIST,
          (better("gresnet-d100", "gresnet-d10", "mean_k"), better("gresnet-d10", "gresnet-d2", "mean_k")),
          scale="full"),
    Claim("b_greedy_pruning_beats_random",
          "Removing blocks of a trained GResNet by smallest k first is better than removing them at random.",
          "Paper B Sec 4.1, Fig 5", MNIST,
          (better("gresnet-d100", "gresnet-d100", "pruned_greedy", metric_b="pruned_random"),),
          "d = 100 (50 blocks), removals of 1 to 25 blocks, no retraining", scale="full"),
    Claim("b_gresnet_survives_pruning",
          "A GResNet keeps most of its accuracy with half of its blocks removed; a ResNet degrades after a few.",
          "Paper B Sec 4.1, Fig 5", MNIST, (better("gresnet-d100", "resnet-d100", "pruned_half"),),
          "d = 100, 25 of 50 blocks removed (GResNet: smallest k first; ResNet: random orders)", scale="full"),
    Claim("b_gated_resnet32_better",
          "Gating the pre-activation ResNet-32 lowers its error (6.67 % vs 7.16 %).", "Paper B Table 3", R32,
          (better("gated", "original"),)),
    Claim("b_resnet32_k_decay_worse",
          "Weight decay on the gates k takes part of the gain back (ResNet-32: 7.04 % vs 6.67 % without).",
          "Paper B Table 3", R32, (better("gated", "gated-k_decay"),)),
    Claim("b_gated_wrn_better",
          "Gating the Wide ResNet lowers its error (WRN-28-10: 3.65 % vs 3.89 %).", "Paper B Table 3", WRN,
          (better("gated", "plain"),), "WRN-28-1: the depth of WRN-28-10 at a tenth of its width"),
    Claim("b_wrn_k_decay_worse",
          "Weight decay on the gates k takes part of the gain back (WRN-28-10: 3.74 % vs 3.65 % without).",
          "Paper B Table 3", WRN, (better("gated", "gated-k_decay"),),
          "WRN-28-1: the depth of WRN-28-10 at a tenth of its width"),
]
# Our own hypotheses, tested by the same rule and fixed before their runs were read (chapter 10): our learned k
# is far below Paper B's Table 2; is it Paper B's unstated initialisation and BN settings? The probe trains the
# GResNet with Keras's defaults (models/mlp.py), the framework whose Nadam the recipe names.
KERAS = "Keras's defaults (Glorot-uniform weights, BN epsilon 1e-3 and momentum 0.99)"
PROBES = [
    Claim("probe_keras_k_d10", f"Ours: with {KERAS} the d = 10 GResNet learns a larger mean k than with PyTorch's.",
          "ours (chapter 10), on Paper B Table 2", MNIST, (better("gresnet-d10", "gresnet_keras-d10", "mean_k"),),
          scale="full"),
    Claim("probe_keras_k_d100", f"Ours: with {KERAS} the d = 100 GResNet learns a larger mean k than with "
          "PyTorch's.", "ours (chapter 10), on Paper B Table 2", MNIST,
          (better("gresnet-d100", "gresnet_keras-d100", "mean_k"),), scale="full"),
    Claim("probe_keras_err_d10", f"Ours: with {KERAS} the d = 10 GResNet reaches a lower test error than with "
          "PyTorch's.", "ours (chapter 10), on Paper B Table 1", MNIST,
          (better("gresnet_keras-d10", "gresnet-d10"),), scale="full"),
]
CLAIMS_BY_KEY = {c.key: c for c in CLAIMS + PROBES}
# The probe that decides the CPU scale (chapter 11), run before any claim's runs: the original ResNet-110, whose
# loss spikes at the abrupt lr jump of cpu_step_warmup. The scale holds if no seed's training loss rises after the
# warm-up by more than PROBE_MAX_RISE above its loss at the end of the warm-up (lr_jump_rise).
PROBE = ("a_table2_activations", "original-110")
PROBE_MAX_RISE = 0.5
# the order the sweep trains them in: the claims each CPU hour settles soonest first (Paper B's ResNet-32 and
# WRN-28-1 runs are the same training at both CPU scales: recorded already). Table 2's ResNet-110 units settle
# three claims, Fig 6's with the probe's runs; Table 1's identity claim comes last: it has a verdict once any one
# of its parts is contradicted, which Table 1's other runs settle first; then the two new seeds of our lr-jump claim
SWEEP_ORDER = ("b_gated_resnet32_better", "b_resnet32_k_decay_worse", "b_gated_wrn_better", "b_wrn_k_decay_worse",
               "fig6_bn_after_add_slow_start", "t2_full_preact_best", "t2_bn_after_add_worst", "t1_gating_bias",
               "t1_shortcut_only_gating_near_identity", "fig1_1001_original_slow_start", "t3_preact_1layer_skip",
               "t1_fail_rows_far_behind", "s42_preact164_regularises", "t1_identity_best", "lr_jump_preact_tolerates")
assert sorted(SWEEP_ORDER) == sorted(c.key for c in CLAIMS if c.scale != "full")


def by_scale(claim_list=None) -> dict[str, list[str]]:
    """The claims' keys grouped by the scale their runs are recorded at (recipes.SCALES order): one table and one
    count per scale, never mixed (chapter 11)."""
    from ..engine.recipes import SCALES

    claim_list = CLAIMS if claim_list is None else claim_list
    return {s: [c.key for c in claim_list if c.scale == s] for s in SCALES if any(c.scale == s for c in claim_list)}


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    parts: list = field(default_factory=list)   # (Compare, result dict)
    missing: list = field(default_factory=list)  # (variant, seeds missing)


def seed_runs(experiment, variant, scale="cpu", seeds=SEEDS, results_dir=None):
    """The recorded runs of one variant whose config is today's recipe, one per seed found, and the seeds
    still missing."""
    from ..engine.recipes import config
    from ..engine.results import find_result

    found, missing = [], []
    for s in seeds:
        r = find_result(config(experiment, variant, scale, s), results_dir)
        if r is None:
            missing.append(s)
        else:
            found.append(r)
    return found, missing


def values(experiment, variant, scale, metric, results_dir=None, seeds=SEEDS):
    """Per-seed metric values of one variant's recorded runs, and the seeds still missing."""
    runs, missing = seed_runs(experiment, variant, scale, seeds, results_dir)
    return [METRICS[metric](r) for r in runs], missing


def evaluate(claim: Claim, scale=None, results_dir=None, seeds=None) -> Verdict:
    """Apply the claim's pre-registered tests to the runs recorded at `scale` (default: the claim's) for
    `seeds` (default: the claim's, plus any of MORE_SEEDS recorded; only the claim's own count as missing)."""
    scale = scale or claim.scale
    more = () if seeds else tuple(s for s in MORE_SEEDS if s not in claim.seeds)
    seeds = seeds or claim.seeds
    parts, missing = [], {}
    for t in claim.tests:
        if t.about == "converged" and scale != "full":
            parts.append((t, compare(t, [], [], scale)))
            continue
        xa, ma = values(claim.experiment, t.a, scale, t.metric, results_dir, seeds)
        xb, mb = values(claim.experiment, t.b, scale, t.metric_of_b, results_dir, seeds)
        xa += values(claim.experiment, t.a, scale, t.metric, results_dir, more)[0]
        xb += values(claim.experiment, t.b, scale, t.metric_of_b, results_dir, more)[0]
        for v, m in ((t.a, ma), (t.b, mb)):
            if m:
                missing[v] = m
        parts.append((t, compare(t, xa, xb, scale)))
    return Verdict(claim, combine([p[1]["verdict"] for p in parts]), parts, sorted(missing.items()))


def scale_probe(scale="cpu", results_dir=None, seeds=SEEDS) -> dict:
    """The rule that chose the CPU scale, on the original ResNet-110's recorded runs at `scale`: each seed's
    rise of the training loss after the warm-up (lr_jump_rise) and whether every one is within PROBE_MAX_RISE
    (None while a seed is missing)."""
    runs, missing = seed_runs(*PROBE, scale, seeds, results_dir)
    rises = {r["config"]["seed"]: lr_jump_rise(r) for r in runs}
    return {"rises": rises, "missing": missing, "final_test_err": {r["config"]["seed"]: final_test_err(r) for r in runs},
            "holds": None if missing else all(x <= PROBE_MAX_RISE for x in rises.values())}


def runs_needed(claims=None, seeds=None, results_dir=None):
    """(experiment, variant, seed, scale) of every run the claims need (default: the scale probe's runs, then the
    CPU sweep's claims in SWEEP_ORDER), claim by claim, each training once: a run of the same training under
    other labels (Table 1's "original" is Table 2's "original-110") is not listed again. Unless `seeds` is given,
    a comparison that its claim's seeds leave inconclusive then asks for MORE_SEEDS of both its sides."""
    from ..engine.recipes import config
    from ..engine.results import training_hash

    todo = [(*PROBE, s, "cpu") for s in SEEDS] if claims is None else []
    chosen = [CLAIMS_BY_KEY[k] for k in SWEEP_ORDER] if claims is None else claims
    for c in chosen:
        todo += [(c.experiment, v, s, c.scale) for s in (seeds or c.seeds) for v in c.variants]
    for c in chosen if seeds is None else []:
        open_parts = [t for t, r in evaluate(c, results_dir=results_dir, seeds=c.seeds).parts
                      if r["verdict"] == "inconclusive"]
        more = [s for s in MORE_SEEDS if s not in c.seeds]
        todo += [(c.experiment, v, s, c.scale) for s in more for t in open_parts for v in (t.a, t.b)]
    out, seen = [], set()
    for r in todo:
        h = training_hash(config(r[0], r[1], r[3], r[2]))
        if h not in seen:
            seen.add(h)
            out.append(r)
    return out


def sweep_status(claims=None, seeds=None, results_dir=None) -> dict:
    """Where the CPU sweep stands: every run the claims need (`runs_needed`) with its recorded result or None,
    the core-hours the recorded ones took (training wall time x threads; ``today_h``: those trained at today's CPU
    scale, recorded under its label) and the core-hours the missing ones
    will take at the pace of every recorded run of the same network and steps, with how many of them run a
    network not timed yet."""
    from ..engine.recipes import config
    from ..engine.results import core_seconds, find_result, load_results, pace

    runs = runs_needed(claims, seeds, results_dir)
    cfgs = {r: config(r[0], r[1], r[3], r[2]) for r in runs}
    found = {r: find_result(cfgs[r], results_dir) for r in runs}
    done = [f for f in found.values() if f]
    left, untimed = pace([cfgs[r] for r in runs if found[r] is None], load_results(results_dir))
    today = [f for f in done if f["config"].get("scale") == "cpu"]  # trained at today's CPU scale (the ramp)
    return {"found": found, "spent_h": sum(core_seconds(f) or 0 for f in done) / 3600, "left_h": left,
            "untimed": untimed, "today_h": sum(core_seconds(f) or 0 for f in today) / 3600}


def sweep_in_words(status: dict) -> str:
    """`sweep_status` in one sentence."""
    n, done = len(status["found"]), sum(f is not None for f in status["found"].values())
    words = f"{done} of {n} runs recorded ({status['spent_h']:.1f} CPU core-hours: training wall time x threads"
    if "today_h" in status and status["spent_h"] - status["today_h"] > 0.05:
        words += (f"; {status['today_h']:.1f} of them trained at today's CPU scale, the rest recorded before it and "
                  f"read again: the step warm-up's runs, and trainings the change left as they were")
    words += ")"
    if done < n:
        words += f"; the missing ones take about {status['left_h']:.1f} CPU core-hours at the recorded pace"
        if status["untimed"]:
            words += f", plus {status['untimed']} of a network not timed yet"
    return words
