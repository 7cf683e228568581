"""What the chapters say about the mechanisms they measured, each number read from the records,
beside the arguments that are not measured (said as such): chapter 8 on the weight layers' inputs
(``mechanism_figures. weight_input_summary``: the strongest fact in one sentence, ``headline``, and
the measurement in full, ``in_full``), chapter 3 on the forward signal and the gradient under scaled
shortcuts (``scaled_shortcuts``), chapter 4 on ReLU truncation in the first steps
(``truncation``)."""
from __future__ import annotations

import math

from ..evidence import mechanisms
from ..page.prose import sci
from .mechanism_figures import over_seeds, span, verdicts, weight_input_summary


def _at(w):
    """at(unit, depth, step, key): one value per seed, in seed order."""
    return lambda unit, depth, step, key: [w[(unit, depth)][s]["steps"][step][key]
                                           for s in sorted(w[(unit, depth)])]


def _ten(xs):
    return [10 ** x for x in xs]  # a spread in log10 -> the ratio largest / smallest


def headline(w) -> str:
    """The largest weight-layer input of the original ResNet-1001 after its last recorded step,
    against full pre-activation's (Markdown)."""
    at, last = _at(w), {d: mechanisms.AT[d][-1] for d in mechanisms.DEPTHS}
    return f"""**Measured, in one sentence:** {last[1001]} steps at lr
{span(at("original", 1001, last[1001], "lr"), "g")} into training, the largest input of any weight
layer of the original ResNet-1001 has a std of
{span(at("original", 1001, last[1001], "max"), ".0f")}, against
{span(at("full_preact", 1001, last[1001], "max"), ".3g")} in full pre-activation (each started below
{max(at("original", 1001, 0, "max") + at("full_preact", 1001, 0, "max")):.2g}). The measurement in
full is folded below; which part of the unit matters is decided by the swaps of [Why pre-activation
helps](09_why_preactivation.ipynb)."""


def in_full(w, verdict: str, synthesis_words: str) -> str:
    """Every weight layer's input spread at both depths, the first unit's input, the classifier's
    input, the pre-registered claim's `verdict`, what the swaps say (`synthesis_words`) and the
    first steps at 1001 layers (Markdown)."""
    at, last, ten = _at(w), {d: mechanisms.AT[d][-1] for d in mechanisms.DEPTHS}, _ten
    units = ("original", "relu_preact", "full_preact")
    # how one step grows the first unit's input at 1001 layers; where every unit's inputs started
    grew = {u: [a / b for a, b in zip(at(u, 1001, 1, "first_0"), at(u, 1001, 0, "first_0"))]
            for u in units}
    below = max(v for u in units for v in at(u, 1001, 0, "max"))
    return f"""**The measurement in full** ({len(w[("full_preact", 110)])} seeds each; the lr-jump
probe's recipe, so these are the first forwards of the runs above). In full pre-activation every
weight layer reads a BN-ReLU output, and in ResNet-110 the largest and the smallest std of any
weight layer's input, over all units, differ by a factor of
{span(ten(at("full_preact", 110, 0, "spread")), ".2f")} at initialisation and
{span(ten(at("full_preact", 110, last[110], "spread")), ".2f")} after {last[110]} steps. In the
original unit and in ReLU-only pre-activation the first weight layer of each unit reads
$\\mathbf{{x}}_l$ itself (or its ReLU), the un-normalised sum of every branch before it: its std
grows from {span(at("original", 110, 0, "first_0"))} in the first unit to
{span(at("original", 110, 0, "first_L"))} in the last (ReLU-only pre-activation:
{span(at("relu_preact", 110, 0, "first_0"))} to {span(at("relu_preact", 110, 0, "first_L"))}), a
factor of {span(ten(at("original", 110, 0, "spread")), ".2g")} and
{span(ten(at("relu_preact", 110, 0, "spread")), ".2g")} over all weight layers. At depth 1001 (¼
width) the factor at initialisation is {span(ten(at("full_preact", 1001, 0, "spread")), ".2g")}
(full pre-activation) against {span(ten(at("original", 1001, 0, "spread")), ".2g")} (original) and
{span(ten(at("relu_preact", 1001, 0, "spread")), ".2g")} (ReLU-only); {last[1001]} steps at lr
{span(at("original", 1001, last[1001], "lr"), "g")} later the bottom layers' inputs have grown in
all three, most in the original: the largest input std is
{span(at("original", 1001, last[1001], "max"), ".0f")} there,
{span(at("relu_preact", 1001, last[1001], "max"), ".0f")} in ReLU-only pre-activation and
{span(at("full_preact", 1001, last[1001], "max"), ".3g")} in full pre-activation (each started below
{below:.2g}).
The classifier sees the same: the std of its input is
{span(at("full_preact", 110, 0, "fc_input_std"))} in full pre-activation ResNet-110 against
{span(at("original", 110, 0, "fc_input_std"))} (original) and
{span(at("relu_preact", 110, 0, "fc_input_std"))} (ReLU-only),
{span(at("original", 1001, 0, "fc_input_std"))} in the original ResNet-1001. The claim fixed before
these numbers, that only full pre-activation feeds every weight layer a normalised input (a
largest-to-smallest ratio more than 2 times smaller, at both depths, at initialisation and in the
last forward recorded), is **{verdict}**.

**What it says, and what it does not.** Of the three units, the one with normalised inputs to every
weight layer, and a normalised input to the classifier, is the one whose rise at the lr jump is
lowest: properties it shares with the outcome, not a test of cause. The swaps of [Why pre-activation
helps](09_why_preactivation.ipynb) change one part at a time: {synthesis_words}
An argued caveat: a weight layer followed by BN (every weight layer of the
original and of the ReLU-only pre-activation unit) is blind to the scale of its input in the forward
pass; what the scale changes is how the gradient reaches the layers below, and the first steps of
ResNet-1001 show it: one step multiplies the std of the first unit's input by
{span(grew["original"], ".0f")}
in the original ResNet-1001 (argued: between the image and that input lie only the stem's
convolution, its BN and a ReLU, and the BN undoes any scale of the convolution, so it is the BN's
learned scale and shift that one step moved), by
{span(grew["relu_preact"], ".2g")}
in ReLU-only pre-activation and
{span(grew["full_preact"], ".2g")}
in full pre-activation."""


def scaled_shortcuts(fs, fit, verdict: dict) -> str:
    """Chapter 3's measurement of the forward signal and the gradient under scaled shortcuts
    (``mechanism_figures.forward_summary`` `fs`, ``gain_fit`` `fit`), the fit argued from it, and
    the three claims' verdicts (Markdown)."""
    at = lambda lam, key: over_seeds(fs[lam], key)  # noqa: E731
    lo, hi, L = min(mechanisms.LAMS), max(mechanisms.LAMS), fs[1.0][0]["units"]
    mid = next(lam for lam in mechanisms.LAMS if lo < lam < 1)
    return f"""**Measured** ({len(fs[1.0])} seeds per λ; the claims were fixed before the numbers).
At λ = {mid} the direct term of $\\mathbf{{x}}_0$ carries
{span(at(mid, "log10_share_x0"), ".0f", tens=True)} of $\\mathbf{{x}}_L$ (λ = {lo}:
{span(at(lo, "log10_share_x0"), ".0f", tens=True)}; λ = 1:
{span(at(1.0, "log10_share_x0"), ".1f", tens=True)}), as Eqn 7 says. Yet $\\mathbf{{x}}_l$ does not
vanish: the rms of $\\mathbf{{x}}_L$ is {span(at(mid, "rms_L"))} at λ = {mid} and
{span(at(lo, "rms_L"))} at λ = {lo}, where $\\mathbf{{x}}_0$'s is {span(at(1.0, "rms_0"))}; at λ = 1
it grows to {span(at(1.0, "rms_L"))}, at λ = {hi} to ${sci(min(at(hi, "rms_L")))}$ and more. The
residual branches refill what λ takes away, so they keep their size beside the shortcut: at the
deepest unit $\\|\\mathcal{{F}}(\\mathbf{{x}}_l)\\| / \\|\\lambda\\mathbf{{x}}_l\\|$ is
{span(at(mid, "branch_last"))} at λ = {mid} and {span(at(lo, "branch_last"))} at λ = {lo}, against
{span(at(1.0, "branch_last"))} at λ = 1, where $\\mathbf{{x}}_l$ has grown and each BN-fed branch
adds a shrinking part. The gradient, which without the direct path can travel only through those
branches, grows over the {L} units by {span(at(mid, "log10_grad_ratio"), ".0f", tens=True)} (λ =
{mid}) and {span(at(lo, "log10_grad_ratio"), ".0f", tens=True)} (λ = {lo}), against
{span(at(1.0, "log10_grad_ratio"), ".1f", tens=True)} at λ = 1.

**Argued, and fitted to the same records.** The size of $\\mathbf{{x}}_l$ settles where
$v = \\lambda^2 v + 1$ (each branch adds a variance of about 1, with BN in front of it whatever the
size of $\\mathbf{{x}}_l$): $v = 1/(1-\\lambda^2)$, an rms of {1 / math.sqrt(1 - mid ** 2):.2f} at
λ = {mid} and {1 / math.sqrt(1 - lo ** 2):.2f} at λ = {lo}, near the measured values. If each unit
multiplies the gradient by $g_l$ with $g_l^2 = \\lambda^2 + c^2 r_l^2$, where
$r_l = \\|\\mathcal{{F}}(\\mathbf{{x}}_l)\\| / \\|\\mathbf{{x}}_l\\|$ is measured in the forward
pass, one constant fits every λ ≤ 1: the $c^2$ that reproduces each measured gradient ratio is
{span([s["c2"] for lam in fit if lam <= 1 for s in fit[lam].values()])} (every seed). So λ < 1 makes
the gradient grow *because* the forward signal stays small: the branches stay a fixed fraction of
it, and each unit multiplies the gradient by about $\\sqrt{{\\lambda^2 + c^2(1-\\lambda^2)}} > 1$
(measured: {span([s["per_unit_gain"] for s in fit[mid].values()], ".3f")} per unit at λ = {mid},
{span([s["per_unit_gain"] for s in fit[lo].values()], ".3f")} at λ = {lo}), compounded over {L}
units. At λ = 1, $r_l$ falls like $1/\\sqrt{{l}}$ and the product grows only like a power of $L$.
Eqn 8's direct term and the gradient are different things: the first vanishes, the second, through
the weights, grows. Whether that growth is what makes Table 1's 0.5 row fail is not measured here.

The three claims, fixed before these numbers were measured: the direct term vanishes,
**{verdict["m_direct_term_vanishes"]}**; the branches keep their size,
**{verdict["m_branches_keep_size"]}**; the gradient grows through them,
**{verdict["m_gradient_through_branches"]}** (the table above)."""


def truncation(tr, verdict: dict) -> str:
    """Chapter 4's measurement of ReLU truncation in the first steps at depths 110 and 1001
    (``mechanism_figures.truncation_summary`` `tr`), the claim's verdict, and Paper A's remark,
    which these steps cannot test (Markdown)."""
    T, last110 = mechanisms.TRUNCATION_STEP, mechanisms.AT[110][-1]
    lr = mechanisms.recipe_of(110, "original", 0)["schedule"]["warmup_lr"]
    at = lambda depth, step, key: [tr[depth][s][step][key] for s in sorted(tr[depth])]  # noqa: E731
    return f"""**Measured** ({len(tr[110])} seeds a depth, CIFAR-10 batches of the runs themselves).
{T} steps in, the original ResNet-1001's units truncate *less* of $\\mathbf{{y}}_l$ than
ResNet-110's: on average over the units a fraction {span(at(1001, T, "mean"))} against
{span(at(110, T, "mean"))} (at initialisation {span(at(1001, 0, "mean"))} against
{span(at(110, 0, "mean"))}; ResNet-110 after {last110} steps: {span(at(110, last110, "mean"))}).
Less in the first third of the units ({span(at(1001, T, "first_third"))} against
{span(at(110, T, "first_third"))}) and in the last ({span(at(1001, T, "last_third"))} against
{span(at(110, T, "last_third"))}); only the very first unit, whose $\\mathbf{{x}}_l$ is a fresh
BN-ReLU output, truncates more at depth 1001 ({span(at(1001, T, "first_unit"))} against
{span(at(110, T, "first_unit"))}), and the first unit of each later stage peaks higher too (the
figure). Our claim for these first steps, that ResNet-1001 truncates more, is
**{verdict["m_truncation_grows_with_depth"]}**; Paper A's own remark is not tested by it.

**What it means.** At the start of training depth *lowers* truncation: every unit adds to
$\\mathbf{{x}}_l \\ge 0$, which grows with depth (chapter 8 measures it: the input of each unit's
first weight layer), while $\\mathcal{{F}}$ ends in a BN of unit scale, so deeper units rarely have
an $\\mathcal{{F}}$ negative enough. Paper A's remark (Sec 4.2) is about training after the weights
have moved ("after some training ... more frequently above zero"; "the truncation, however, is more
frequent when there are 1000 layers"): a few steps at lr {lr:g} cannot test that, and this page does
not claim to. The ReLU's cost at depth 1001 in these first steps is elsewhere: the direct path must
pass every one of many more ReLUs (the survival figure below)."""


def weight_inputs(out_dir=None) -> tuple[str, str]:
    """Chapter 8's two texts on what the weight layers see, from the records as they stand: the
    ``headline`` and the measurement ``in_full`` (with the pre-registered claim's verdict and what
    the swaps say)."""
    w = weight_input_summary(out_dir=out_dir)
    verdict = verdicts(out_dir=out_dir)["m_normalised_weight_inputs"]
    # the swaps' statuses are said once, on their page (linked above), never pasted here
    return headline(w), in_full(w, verdict, "that page says which part each swap decided.")
