"""What chapter 8 says about the weight layers' inputs it measured (``mechanism_figures.weight_input_summary``): the
strongest fact in one sentence (``headline``) and the measurement in full (``in_full``), each number read from the
records, beside the arguments that are not measured (said as such)."""
from __future__ import annotations

from ..evidence import mechanisms
from .mechanism_figures import span


def _at(w):
    """at(unit, depth, step, key): one value per seed, in seed order."""
    return lambda unit, depth, step, key: [w[(unit, depth)][s]["steps"][step][key] for s in sorted(w[(unit, depth)])]


def _ten(xs):
    return [10 ** x for x in xs]  # a spread in log10 -> the ratio largest / smallest


def headline(w) -> str:
    """The largest weight-layer input of the original ResNet-1001 after its last recorded step, against full
    pre-activation's (Markdown)."""
    at, last = _at(w), {d: mechanisms.AT[d][-1] for d in mechanisms.DEPTHS}
    return f"""**Measured, in one sentence:** {last[1001]} steps at lr {span(at("original", 1001, last[1001], "lr"), "g")} into
training, the largest input of any weight layer of the original ResNet-1001 has a std of
{span(at("original", 1001, last[1001], "max"), ".0f")}, against {span(at("full_preact", 1001, last[1001], "max"), ".3g")}
in full pre-activation (each started below
{max(at("original", 1001, 0, "max") + at("full_preact", 1001, 0, "max")):.2g}). The measurement in full is folded below;
which part of the unit matters is decided by the swaps of [Why pre-activation helps](09_why_preactivation.ipynb)."""


def in_full(w, verdict: str, synthesis_words: str) -> str:
    """Every weight layer's input spread at both depths, the first unit's input, the classifier's input, the
    pre-registered claim's `verdict`, what the swaps say (`synthesis_words`) and the first steps at 1001 layers
    (Markdown)."""
    at, last, ten = _at(w), {d: mechanisms.AT[d][-1] for d in mechanisms.DEPTHS}, _ten
    return f"""**The measurement in full** ({len(w[("full_preact", 110)])} seeds each; the lr-jump probe's recipe, so these are the first
forwards of the runs above). In full pre-activation every weight layer reads a BN-ReLU output, and in ResNet-110 the
largest and the smallest std of any weight layer's input, over all units, differ by a factor of
{span(ten(at("full_preact", 110, 0, "spread")), ".2f")} at initialisation and
{span(ten(at("full_preact", 110, last[110], "spread")), ".2f")} after {last[110]} steps. In the original unit and in
ReLU-only pre-activation the first weight layer of each unit reads $\\mathbf{{x}}_l$ itself (or its ReLU), the un-normalised
sum of every branch before it: its std grows from {span(at("original", 110, 0, "first_0"))} in the first unit to
{span(at("original", 110, 0, "first_L"))} in the last (ReLU-only pre-activation: {span(at("relu_preact", 110, 0, "first_0"))}
to {span(at("relu_preact", 110, 0, "first_L"))}), a factor of {span(ten(at("original", 110, 0, "spread")), ".2g")}
and {span(ten(at("relu_preact", 110, 0, "spread")), ".2g")} over all weight layers. At depth 1001 (¼ width) the factor
at initialisation is {span(ten(at("full_preact", 1001, 0, "spread")), ".2g")} (full pre-activation) against
{span(ten(at("original", 1001, 0, "spread")), ".2g")} (original) and {span(ten(at("relu_preact", 1001, 0, "spread")), ".2g")}
(ReLU-only); {last[1001]} steps at lr {span(at("original", 1001, last[1001], "lr"), "g")} later the bottom layers' inputs have grown in all three, most in the original:
the largest input std is {span(at("original", 1001, last[1001], "max"), ".0f")} there,
{span(at("relu_preact", 1001, last[1001], "max"), ".0f")} in ReLU-only pre-activation and
{span(at("full_preact", 1001, last[1001], "max"), ".3g")} in full pre-activation (each started below
{max(at("original", 1001, 0, "max") + at("relu_preact", 1001, 0, "max") + at("full_preact", 1001, 0, "max")):.2g}). The
classifier sees the same: the std of its input is {span(at("full_preact", 110, 0, "fc_input_std"))} in full
pre-activation ResNet-110 against {span(at("original", 110, 0, "fc_input_std"))} (original) and
{span(at("relu_preact", 110, 0, "fc_input_std"))} (ReLU-only), {span(at("original", 1001, 0, "fc_input_std"))} in the
original ResNet-1001. The claim fixed before these numbers, that only full pre-activation feeds every weight layer a
normalised input (a largest-to-smallest ratio more than 2 times smaller, at both depths, at initialisation and in the last
forward recorded), is **{verdict}**.

**What it says, and what it does not.** Of the three units, the one with normalised inputs to every weight layer, and a normalised input to the classifier, is the one that trains through the lr jump: properties it shares with the outcome, not a test of cause. The swaps of [Why pre-activation helps](09_why_preactivation.ipynb) change one part at a time; when this page was built: {synthesis_words} An argued caveat: a weight layer followed by BN (every weight layer of the original and of the ReLU-only
pre-activation unit) is blind to the scale of its input in the forward pass; what the scale changes is how the
gradient reaches the layers below, and the first steps of ResNet-1001 show it: one step multiplies the std of the first unit's
input by {span([a / b for a, b in zip(at("original", 1001, 1, "first_0"), at("original", 1001, 0, "first_0"))], ".0f")} in
the original ResNet-1001 (argued: between the image and that input lie only the stem's convolution, its BN and a ReLU,
and the BN undoes any scale of the convolution, so it is the BN's learned scale and shift that one step moved), by
{span([a / b for a, b in zip(at("relu_preact", 1001, 1, "first_0"), at("relu_preact", 1001, 0, "first_0"))], ".2g")} in
ReLU-only pre-activation and {span([a / b for a, b in zip(at("full_preact", 1001, 1, "first_0"), at("full_preact", 1001, 0, "first_0"))], ".2g")}
in full pre-activation."""
