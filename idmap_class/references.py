"""What the implementation graders (:mod:`.implementation`) compare with: the references, built in
the trusted process from the grader's seed on the inputs the observer gave the student's code
(:mod:`.observers` makes them; the sandbox holds that module, never this one), and the tolerance.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from idmap_book.maths.probes import truncation_rates, unit_gradient_norms
from idmap_lib.models.introspect import zero_residuals
from idmap_lib.models.shortcuts import make_shortcut
from idmap_lib.models.units import make_unit
from .observers import (GATE_BIASES, GATES, PREACT_LAYOUT, TRUNCATION_CASES,  # noqa: F401
                        branch, count, direct_term_cases, gating_inputs, gen, preact_input, randn,
                        truncation_input, vanishing_cases)

TOL = 1e-6  # outputs must agree to this (absolute and relative), compared in float64


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


def geometry(conv):
    return conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding


def reference_preact(channels, seed):
    """idmap_lib's full pre-activation unit, with the weights the observer copied into the
    student's."""
    ref = make_unit("full_preact", "identity", channels, channels).double()
    ref.residual.load_state_dict(branch(channels, seed, randomised=True).state_dict())
    return ref


def reference_gating(x, Fx, W_g, b_g):
    """idmap_lib's own ExclusiveGating shortcut with the gate's 1x1 conv set to (W_g, b_g)."""
    c = x.shape[1]
    sc = make_shortcut("exclusive_gating", c, c, 1, "zero_pad", bn=False,
                       options={"gate_bias": 0.0}).double()
    with torch.no_grad():
        sc.gate.conv.weight.copy_(W_g)
        sc.gate.conv.bias.copy_(b_g)
        return sc(x, Fx)


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


# also measured in a real stack
MEASURED_CASES = ("50 units of lambda = 0.9", "30 random lambdas in [0.6, 1.4]")


def truncation_case(n, seed):
    """Unit n (idmap_lib's ``original`` unit in train mode, with the weights of the unit the
    observer gave the student's code) and its input, and the reference's rate (after one batch
    through the unit: BN's running statistics have moved once, as in the student's measurement)."""
    cin, cout, stride = TRUNCATION_CASES[n]
    given, x = truncation_input(n, seed)
    unit = make_unit("original", "identity", cin, cout, stride).double().train()
    unit.load_state_dict(given.state_dict())
    return unit, x, float(truncation_rates(nn.Sequential(unit), x)[0])
