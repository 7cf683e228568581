"""What the theory chapters (2-4) say about their probes' measurements: each number read from the
measurement it is given, each argument said as one."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..page.prose import plain_number, sci


def eqn5_check(rows) -> str:
    """The Eqn 5 check of chapter 2 (`rows`: l, L and the three gradient norms with their relative
    error, one per probed unit l of a stack of 100 units, float64): how exact, how large the term
    through the weights is, and why (argued; Markdown)."""
    t = pd.DataFrame(rows)
    ratio = t["‖through‖"] / t["‖direct‖"]
    return f"""Measured: the gradient at $\\mathbf{{x}}_l$ equals the gradient at $\\mathbf{{x}}_L$
plus the term through the weights to a relative error of at most ${sci(t["relative error"].max())}$,
float64 rounding. The table also shows something Eqn 5 alone does not say: at initialisation the
term through the weights is ${ratio.min():.3g}$ to ${ratio.max():.3g}$ times the direct term, and
the ratio is {"largest" if ratio.idxmax() == 0 else "not largest"} for the shallowest $l$, the
longest stretch $L - l$. A likely reason (argued, not measured here): a batch-normalised branch's
Jacobian $\\partial\\mathcal{{F}}/\\partial\\mathbf{{x}}$ scales roughly like
$1/\\mathrm{{std}}(\\mathbf{{x}}_l)$, and the signal's spread grows with depth, so the shallow
units, where it is still small, contribute the most. The direct term's job is to guarantee a floor,
not to dominate."""


def depth_growth(full, direct, depths) -> str:
    """Chapter 2's stacks of L units (`full`, `direct`: ||dE/dx_l|| / ||dE/dx_L|| per L in `depths`,
    with the branches at their initial weights and zeroed): the direct term alone is 1, the whole
    grows about like L (Markdown)."""
    first = {L: float(full[L][0]) for L in depths}
    per_unit = [first[L] / L for L in depths]
    off = max(float((direct[L] - 1).abs().max()) for L in depths)
    lowest = min(float(full[L].min()) for L in depths)
    return f"""**Measured.** With every $\\mathcal{{F}}$ zeroed, the ratio is
{"exactly 1" if off == 0 else f"1 to within ${sci(off)}$"} at every unit of every depth: the direct
term alone, Eqn 5's "1". With the branches at their initial weights, the gradient at the first
unit's input is {plain_number(first[depths[0]])} times the last unit's for $L = {depths[0]}$ and
{plain_number(first[depths[-1]])} times for $L = {depths[-1]}$: {plain_number(min(per_unit), 2)} to
{plain_number(max(per_unit), 2)}
times $L$ over these depths, so at initialisation it grows about in proportion to the depth instead
of vanishing. The smallest ratio anywhere in these stacks is {plain_number(lowest)}: Eqn 5 makes
one of its
two terms exactly the last unit's gradient, and their sum can be a little shorter where the term
through the weights points against it."""


def scaled_gradient(rows, lams, depth) -> str:
    """Chapter 3's gradient under shortcuts scaled by λ (`rows`: theory and measurement per λ in
    `lams`, at 100 units and at `depth`): where the measurement follows Eqn 8's direct term and
    where the term through the weights takes over, beside the paper's argument (Markdown)."""
    t = pd.DataFrame(rows).set_index("λ")
    up, down = t[t.index > 1], t[t.index < 1]
    agree100 = (up["measured, 100 units"] / up["theory ∏λ, 100 units"] - 1).abs().max()
    factor1000 = up["measured, 1000 units"] / up["theory ∏λ, 1000 units"]
    lo, hi = min(lams), max(lams)
    return f"""**Measured** (these networks, at initialisation):

- **λ > 1**: the measured gradient tracks $\\lambda^{{L-l}}$, because the direct term dominates. At
  100 units the two agree within {plain_number(100 * agree100, 2)}%. At 1000 units the measurement
is
  {plain_number(factor1000.min(), 2)} to {plain_number(factor1000.max(), 2)} times the theory,
while the factor itself is
  ${sci(up["theory ∏λ, 1000 units"].min())}$ to ${sci(up["theory ∏λ, 1000 units"].max())}$: the term
  through the weights adds the rest. At λ = {hi}, ${sci(hi ** depth)}$ is beyond float32's largest
  number, ${sci(float(torch.finfo(torch.float32).max))}$: this is why the probe runs in float64.
- **λ = 1**: the direct term is exactly 1 at every depth. The measured gradient is
  {plain_number(t.loc[1.0, "measured, 1000 units"])} times the last unit's after 1000 units:
larger, by the
  term through the weights (chapter 2 measured the same thing), and not exponential in λ.
- **λ < 1**: the direct term vanishes exponentially, as Eqn 8 says (at λ = {lo} it is
  ${sci(lo ** depth)}$ after 1000 units), yet the measured gradient does not vanish: it is
  ${sci(down["measured, 1000 units"].min())}$ to ${sci(down["measured, 1000 units"].max())}$ times
  the last unit's. With the identity path gone, the gradient travels through the weight layers only,
  and in these batch-normalised networks at initialisation it grows along that route.

**Argued, not measured here.** A plausible reading of the λ < 1 growth: the λ keep shrinking
$\\mathbf{{x}}_l$ while the BN branches refill it, so its scale stays of order 1, each unit's
Jacobian stays of order 1, and a product of 1000 such Jacobians has no reason to stay near 1. Paper
A's argument (Sec 3) is about the direct term alone: for λ < 1 it becomes exponentially small, which
blocks the signal on the shortcut and forces the gradient through the weight layers; the paper does
not say that the gradient then grows or explodes. **The paper measured** that constant scaling by
0.5 fails to train ResNet-110 (Table 1: "fail", an error above 20%). Why the gradient grows while
the direct term vanishes is measured below (*Why the gradient grows*); whether that growth is what
makes training fail is not."""


def truncation_at_init(rates) -> str:
    """Chapter 4's truncation at initialisation (`rates`: the fraction of y_l < 0 per unit, per
    depth): the first unit against the later ones, a reading that is not measured, and what the
    paper's remark is about (Markdown)."""
    first = {d: r[0] for d, r in rates.items()}
    later = {d: r[1:].mean() for d, r in rates.items()}
    return f"""**Measured: at initialisation, truncation is rarer after the first unit.** The first
unit's input is a fresh BN–ReLU output, and a fraction {min(first.values()):.3f} to
{max(first.values()):.3f} of its $\\mathbf{{y}}_l$ is negative across the three networks; the later
units average {min(later.values()):.3f} to {max(later.values()):.3f}. **A reading, not measured:**
after the first unit, $\\mathbf{{x}}_l \\ge 0$ keeps accumulating non-negative mass while each
$\\mathcal{{F}}$ ends in a BN with unit scale, so $\\mathbf{{y}}_l$ is pushed upward and fewer
elements fall below zero; the jumps are the stage transitions, where the shortcut changes dimension
(ResNet-110: subsampled and zero-padded; the bottleneck nets: a 1×1 projection) and the new channels
start without that accumulated mass.

**What the paper says** (Sec 4.2) is about *training* a 1000-layer network, and these networks are
untrained. Whether trained original-unit networks truncate more, unit by unit, is a question for the
same probe on trained weights; there is no trained original ResNet-1001 on this page, so that curve
is missing here, not filled in."""


def gate_gain() -> str:
    """Chapter 3's gated shortcut near x = 0: h'(0) = 1 - sigma(b_g) per unit and over ResNet-110's
    54 units, at b_g = 0 and -6, and what a closed gate means (Markdown)."""
    units = (110 - 2) // 2  # the residual units of ResNet-110
    per_unit = {b: 1 / (1 + np.exp(b)) for b in (0.0, -6.0)}        # h'(0) = 1 / (1 + e^{b_g})
    return f"""So near $x = 0$ each gated shortcut multiplies the gradient by
$h'(0) = 1 - \\sigma(b_g)$. With $b_g = 0$ that is ${per_unit[0.0]:.2g}$ per unit, and over the
{units} units of a ResNet-110 it is ${sci(per_unit[0.0] ** units)}$. With $b_g = -6$ it is
${per_unit[-6.0]:.4f}$ per unit and ${per_unit[-6.0] ** units:.3f}$ over {units} units, at
$\\mathbf{{x}} = 0$ (the measurement below, with real inputs, gives less: $W_g \\mathbf{{x}}$ moves
each gate away from $\\sigma(b_g)$). A gate with $b_g = -6$ starts **closed**
($g = \\sigma(-6) = {1 - per_unit[-6.0]:.4f}$): its shortcut passes $\\mathbf{{x}}$ almost unchanged
and, in exclusive gating, $\\mathcal{{F}}$ is almost shut off too (chapter 1 defines the word).
$b_g = -6$ is the bias of the paper's two best gated rows in Table 1: exclusive gating, whose gate
scales both paths, and shortcut-only gating, whose gate scales the shortcut alone and leaves
$\\mathcal{{F}}$ untouched."""


def shortcut_gains(gains) -> str:
    """Chapter 3's measured direct-path gain of each Fig 2 shortcut over 54 units (`gains`: the
    chapter's table, by Table 1 variant, its shortcut in words), the nearest to 1, and what the
    paper's Table 1 numbers say beside it (Markdown)."""
    g = gains["measured ∏h' gain over 54 units (F = 0)"]  # by variant (Table 1's rows)
    tiny = g[[v.startswith("constant_scaling") or v.endswith("-b0") for v in g.index]]
    gated6 = g[[v.endswith("-b-6") for v in g.index]]
    non_identity = g.drop("original")
    dist = np.log10(non_identity[non_identity > 0]).abs()  # dropout's gain is 0: no log
    ties = [gains.loc[v, "shortcut (Fig 2)"] for v, d in dist.items()
            if f"{10 ** -d:.2g}" == f"{10 ** -dist.min():.2g}"]
    nearest = " and ".join(ties) + (", tied at two digits" if len(ties) > 1 else "")
    return f"""**Measured.** Every multiplicative shortcut moves the direct path away from 1.
Scaling by 0.5 and gates with $b_g = 0$ shrink it to between ${sci(tiny.min())}$ and
${sci(tiny.max())}$. The 1×1 convolutions change it in both norm and direction, as a product of 54
random matrices. Dropout ($p = 0.5$) keeps an element's path open only if all 54 masks keep it, with
probability ${sci(0.5 ** 54)}$, so in this batch no path survives (gain
{plain_number(g["dropout-0.5"])}). The gates with $b_g = -6$ keep $\\prod h'$ at
{" to ".join(sorted({f"{plain_number(v, 2)}" for v in gated6}))} ($W_g x$ spreads each gate around
$\\sigma(b_g)$); the nearest to 1 of all non-identity shortcuts: {nearest}.

**The paper's numbers, and what they mean.** The two $b_g = -6$ gates are the paper's two best
non-identity rows of Table 1. The column is not the whole story, though: the 0.5/0.5 row has the
same tiny direct factor as the 0.5/1 row, yet it trains (12.35% in the paper), because scaling
$\\mathcal{{F}}$ by 0.5 as well changes the path through the weights; the paper calls that case a
"frozen gating". Paper A's own conclusion is that these shortcuts have at least the representational
power of the identity, so their higher errors come from optimisation, not from representation."""
