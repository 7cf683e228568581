"""What the implementation graders (:mod:`.implementation`) compare with: the inputs and the
references, each built from the grader's seed (the observer builds the student's inputs, the judge
the same inputs and the reference, in another process: the same seed gives the same tensors), and
the tolerance.
"""
from __future__ import annotations

import math
import random

import torch
import torch.nn as nn

from ..book.maths.probes import truncation_rates, unit_gradient_norms
from ..models.introspect import zero_residuals
from ..models.shortcuts import make_shortcut
from ..models.units import make_unit


# ---- comparisons and random inputs ---------------------------------------------------------------

TOL = 1e-6  # outputs must agree to this (absolute and relative), compared in float64
# attribute -> index in make_unit(...).residual
PREACT_LAYOUT = {"bn1": 0, "conv1": 2, "bn2": 3, "conv2": 5}


def close(a, b, tol=TOL):
    """a (a tensor, or the type name of an output that was not one) equals tensor b to `tol`."""
    return (
        isinstance(a, torch.Tensor)
        and a.shape == b.shape
        and torch.allclose(a.double(), b.double(), atol=tol, rtol=tol)
    )


def max_diff(a, b):
    return (
        float((a.double() - b.double()).abs().max())
        if isinstance(a, torch.Tensor) and a.shape == b.shape
        else float("inf")
    )


def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=gen(seed), dtype=torch.float64) * scale


def count(module):
    return sum(p.numel() for p in module.parameters())


# ---- exercise 1: the full pre-activation unit (Paper A Fig 4e) -----------------------------------

def randomise_bn(bn, seed):
    """Non-trivial BN parameters and running statistics, so that every BN really matters."""
    c = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(0.5 + torch.rand(c, generator=gen(seed), dtype=torch.float64))
        bn.bias.copy_(randn(c, seed=seed + 1, scale=0.5))
        bn.running_mean.copy_(randn(c, seed=seed + 2, scale=0.5))
        bn.running_var.copy_(0.5 + 1.5 * torch.rand(c, generator=gen(seed + 3),
                                                    dtype=torch.float64))


def reference_preact(channels, seed):
    torch.manual_seed(seed)
    ref = make_unit("full_preact", "identity", channels, channels).double()
    for name, i in PREACT_LAYOUT.items():
        if name.startswith("bn"):
            randomise_bn(ref.residual[i], seed + 10 * i)
    return ref


def geometry(conv):
    return conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding


def preact_input(c, seed, train):
    return randn(3, c, 6, 6, seed=seed + 100 * c + train)


# ---- exercise 2: exclusive gating (Paper A Fig 2c) -----------------------------------------------

# b_g near these (random W_g); then the limits b_g = -40 (y = x) and +40 (y = F)
GATE_BIASES = (-6.0, 0.0, 2.0)


def gating_inputs(c, seed):
    """x, F(x), W_g and the five gate biases, from the seed."""
    x, Fx = randn(2, c, 5, 5, seed=seed), randn(2, c, 5, 5, seed=seed + 1)
    full = lambda b: torch.full((c,), b, dtype=torch.float64)  # noqa: E731
    return (x, Fx, randn(c, c, 1, 1, seed=seed + 2, scale=0.5),
            [full(b) + randn(c, seed=seed + 3, scale=0.1) for b in GATE_BIASES]
            + [full(-40.0), full(40.0)])


def reference_gating(x, Fx, W_g, b_g):
    """idmap_lib's own ExclusiveGating shortcut with the gate's 1x1 conv set to (W_g, b_g)."""
    c = x.shape[1]
    sc = make_shortcut("exclusive_gating", c, c, 1, "zero_pad", bn=False,
                       options={"gate_bias": 0.0}).double()
    with torch.no_grad():
        sc.gate.conv.weight.copy_(W_g)
        sc.gate.conv.bias.copy_(b_g)
        return sc(x, Fx)


# ---- exercise 3: the direct term of Eqn 8 --------------------------------------------------------

def lambda_stack_of(lams, channels=2):
    """Same-shape full pre-activation units with shortcut scales `lams` (Eqn 6), F zeroed, in
    float64."""
    torch.manual_seed(0)
    units = [make_unit("full_preact", "constant_scaling", channels, channels,
                       shortcut_scale=float(lam),
                       residual_scale=1.0) for lam in lams]
    return zero_residuals(nn.Sequential(*units).double())


def measured_direct_term(lams, channels=2, size=4):
    """||dE/dx_0|| / ||dE/dx_L|| measured with autograd in a real zero-residual lambda-stack."""
    if not len(lams):
        return 1.0
    model = lambda_stack_of(lams, channels)
    x = torch.randn(2, channels, size, size, generator=gen(0), dtype=torch.float64)
    g = unit_gradient_norms(model, x)
    return float(g[0] / g[-1])


def direct_term_cases(seed):
    g = gen(seed)
    return {
        "one unit, lambda = 0.5": [0.5],
        "50 units of lambda = 0.9": [0.9] * 50,
        "20 units of lambda = 1.2": [1.2] * 20,
        "30 random lambdas in [0.6, 1.4]": (0.6 + 0.8 * torch.rand(30, generator=g,
                                                                   dtype=torch.float64)).tolist(),
        "no units (l = L)": [],
    }


# also measured in a real stack
MEASURED_CASES = ("50 units of lambda = 0.9", "30 random lambdas in [0.6, 1.4]")


def vanishing_cases(seed):
    """Five fixed (lam, eps) and one drawn from the seed (rounded, and never where log(eps)/log(lam)
    is within 1e-3 of a whole number: there the float arithmetic of a right answer could round
    either way)."""
    rng = random.Random(seed)
    while True:
        lam, eps = round(rng.uniform(0.5, 0.99), 3), float(f"{10 ** rng.uniform(-4, -0.5):.1g}")
        ratio = math.log(eps) / math.log(lam)
        if abs(ratio - round(ratio)) > 1e-3:
            return [(0.9, 1e-3), (0.5, 1e-3), (0.99, 0.5), (0.999, 1e-2), (0.5, 0.3), (lam, eps)]


# ---- exercise 4: Paper B's gated residual unit ---------------------------------------------------

GATES = (1.0, 0.3, 2.5, 0.0, -1.5)  # the values of k the outputs are compared at


def branch(channels, seed):
    torch.manual_seed(seed)
    F = make_unit("full_preact", "identity", channels, channels).residual.double()
    return F.eval()  # running statistics: F is a fixed function during the check


# ---- exercise 5: ReLU truncation after the addition (Paper A Sec 4.2) ----------------------------

# (in channels, out channels, stride) of each unit
TRUNCATION_CASES = ((4, 4, 1), (8, 8, 1), (4, 8, 2))


def truncation_case(n, seed):
    """Unit n (an ``original`` unit in train mode) and its input, after one batch through the unit
    (the reference's measurement: BN's running statistics have moved once) as the student's code
    gets them."""
    cin, cout, stride = TRUNCATION_CASES[n]
    torch.manual_seed(seed + n)
    unit = make_unit("original", "identity", cin, cout, stride).double().train()
    x = randn(4, cin, 8, 8, seed=seed + n) + 0.5 * ((n + 1) % 2)
    return unit, x, float(truncation_rates(nn.Sequential(unit), x)[0])
