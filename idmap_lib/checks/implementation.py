"""Auto-graders for the exercises chapter (book/06_exercises.ipynb).

Each ``check_*`` takes what the student wrote and compares it with idmap_lib's reference on random
inputs. It prints one ``PASSED`` line, or raises ``AssertionError`` whose message says what differs and
gives a hint. Student code that still raises ``NotImplementedError`` (the stub) is reported as
"NOT ATTEMPTED", without raising, so a notebook with untouched stubs still runs from top to bottom.
``check_*.status(student)`` returns "passed" or "not attempted" instead of None.

| exercise | the student writes | grader |
|---|---|---|
| 1 | ``PreActUnit(channels)``: full pre-activation unit, Paper A Fig 4(e) | :func:`check_full_preact_unit` |
| 2 | ``exclusive_gating(x, Fx, W_g, b_g)``: Paper A Fig 2(c) | :func:`check_exclusive_gating` |
| 3 | ``direct_term(lams)`` = prod lambda, Paper A Eqn 8 | :func:`check_direct_term` |
| 3 | ``vanishing_depth(lam, eps)``: units until lam^L < eps | :func:`check_vanishing_depth` |
| 4 | ``GatedResidual(F)``: u = ReLU(k) F(x) + x, Paper B | :func:`check_gated_residual` |
| 5 | ``truncation_rate(unit, x)``: Paper A Sec 4.2 | :func:`check_truncation_rate` |

:func:`grade` runs every grader on a namespace (the chapter's last cell). The student edition, the
autograder package and batch grading are Otter-Grader's (see :mod:`idmap_lib.checks.editions`).
"""
from __future__ import annotations

import contextlib
import io
import math

import torch
import torch.nn as nn

from ..models.introspect import zero_residuals
from ..book.probes import truncation_rates, unit_gradient_norms
from ..models.shortcuts import Shortcut, make_shortcut
from ..models.units import ResidualUnit, make_unit
from .grading import WIDTH, fail, grader  # noqa: F401  (WIDTH: checks.WIDTH)

TOL = 1e-6  # outputs must agree to this (absolute and relative), compared in float64


# ---- comparisons ------------------------------------------------------------------------------------------

def _close(a, b, tol=TOL):
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=tol, rtol=tol)


def _max_diff(a, b):
    return float((a.double() - b.double()).abs().max()) if a.shape == b.shape else float("inf")


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=_gen(seed), dtype=torch.float64) * scale


# ---- exercise 1: the full pre-activation unit (Paper A Fig 4e) ----------------------------------------------

PREACT_LAYOUT = {"bn1": 0, "conv1": 2, "bn2": 3, "conv2": 5}  # attribute -> index in make_unit(...).residual


def _randomise_bn(bn, seed):
    """Non-trivial BN parameters and running statistics, so that every BN really matters."""
    c = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(0.5 + torch.rand(c, generator=_gen(seed), dtype=torch.float64))
        bn.bias.copy_(_randn(c, seed=seed + 1, scale=0.5))
        bn.running_mean.copy_(_randn(c, seed=seed + 2, scale=0.5))
        bn.running_var.copy_(0.5 + 1.5 * torch.rand(c, generator=_gen(seed + 3), dtype=torch.float64))


def _reference_preact(channels, seed):
    torch.manual_seed(seed)
    ref = make_unit("full_preact", "identity", channels, channels).double()
    for name, i in PREACT_LAYOUT.items():
        if name.startswith("bn"):
            _randomise_bn(ref.residual[i], seed + 10 * i)
    return ref


def _load_preact(student, ref, check):
    """Copy the reference weights into the student's bn1, conv1, bn2, conv2 (the stated layout)."""
    for name, i in PREACT_LAYOUT.items():
        theirs, ours = getattr(student, name, None), ref.residual[i]
        if theirs is None:
            fail(check, f"your module has no attribute `{name}`",
                  "expose the four layers as self.bn1, self.conv1, self.bn2, self.conv2 "
                  "(nn.BatchNorm2d, nn.Conv2d, nn.BatchNorm2d, nn.Conv2d): the grader copies weights into them")
        if not isinstance(theirs, type(ours)):
            fail(check, f"`{name}` is a {type(theirs).__name__}, expected nn.{type(ours).__name__}",
                  "bn1/bn2 are nn.BatchNorm2d(channels); conv1/conv2 are nn.Conv2d(channels, channels, 3, "
                  "padding=1, bias=False)")
        if isinstance(ours, nn.Conv2d):
            got = (theirs.in_channels, theirs.out_channels, theirs.kernel_size, theirs.stride, theirs.padding)
            want = (ours.in_channels, ours.out_channels, ours.kernel_size, ours.stride, ours.padding)
            if got != want:
                fail(check, f"`{name}` has (in, out, kernel, stride, padding) = {got}, expected {want}",
                      "a same-shape unit uses 3x3 convolutions with stride 1 and padding 1")
            if theirs.bias is not None:
                fail(check, f"`{name}` has a bias", "use bias=False: the official code has none (a BN "
                      "follows conv1, and conv2's bias would only shift the residual)")
        theirs.load_state_dict(ours.state_dict())


def _make_student(factory, channels, check):
    if isinstance(factory, nn.Module):
        fail(check, "you passed a module instance", "pass the class itself, check_full_preact_unit(PreActUnit): "
              "the grader builds units of several widths")
    student = factory(channels)
    if not isinstance(student, nn.Module):
        fail(check, f"PreActUnit({channels}) returned a {type(student).__name__}, not an nn.Module",
              "write `class PreActUnit(nn.Module)` whose __init__ takes the number of channels")
    return student


def _preact_diagnosis(ref, x, out, train):
    """Which common mistake does `out` match? (computed with the reference's own layers)"""
    bn1, conv1, bn2, conv2 = (ref.residual[i] for i in PREACT_LAYOUT.values())
    relu = torch.relu
    ref.train(train)
    with torch.no_grad():
        F = ref.residual(x)
        candidates = {
            "F(x) alone: the shortcut is missing. The unit adds its input: x_{l+1} = x_l + F(x_l) (Eqn 3)": F,
            "ReLU(x + F(x)): an activation after the addition. In full pre-activation f is the identity "
            "(Fig 4e): nothing follows the addition": relu(x + F),
            "the original post-activation unit, ReLU(x + BN(conv(ReLU(BN(conv(x)))))) (Fig 4a). Move BN "
            "and ReLU BEFORE each convolution": relu(x + bn2(conv2(relu(bn1(conv1(x)))))),
            "x + conv(ReLU(BN(conv(ReLU(BN(x)))))) with bn1/bn2 swapped": x + conv2(relu(bn1(conv1(relu(bn2(x)))))),
            "x + BN(conv(ReLU(BN(conv(ReLU(x)))))), the ReLU-only pre-activation (Fig 4d)":
                x + bn2(conv2(relu(bn1(conv1(relu(x)))))),
        }
    for what, value in candidates.items():
        if value.shape == out.shape and torch.allclose(value, out.double(), atol=TOL, rtol=TOL):
            return f"your output equals {what}."
    return ("the order must be x_{l+1} = x_l + conv2(ReLU(bn2(conv1(ReLU(bn1(x_l))))))) (Fig 4e: "
            "BN -> ReLU -> conv -> BN -> ReLU -> conv, then add the untouched input).")


@grader("PreActUnit")
def check_full_preact_unit(PreActUnit, channels=(4, 8), seed=0):
    """Exercise 1. `PreActUnit(channels)` (a class or any factory) must build an nn.Module with layers
    `bn1, conv1, bn2, conv2` whose forward is Paper A Fig 4(e):
    x_{l+1} = x_l + conv2(ReLU(bn2(conv1(ReLU(bn1(x_l)))))).

    Protocol: for each channel count, the grader builds idmap_lib's ``make_unit("full_preact")`` with
    random BN parameters and running statistics, copies its weights into the student's four layers,
    then compares parameter counts and outputs (float64, to 1e-6) in eval mode and in train mode.
    """
    check = "check_full_preact_unit"
    for c in channels:
        ref = _reference_preact(c, seed + c)
        student = _make_student(PreActUnit, c, check)
        n_ref = sum(p.numel() for p in ref.parameters())
        n_student = sum(p.numel() for p in student.parameters())
        student.double()  # before loading, so the reference's float64 weights arrive unrounded
        _load_preact(student, ref, check)
        if n_student != n_ref:
            fail(check, f"with {c} channels your unit has {n_student} parameters, the reference "
                  f"{n_ref} = 2 x (3*3*{c}*{c}) conv weights + 2 x 2*{c} BN scales and shifts",
                  "no biases in the convolutions, no extra layers; the identity shortcut has no parameters")
        for train in (False, True):
            x = _randn(3, c, 6, 6, seed=seed + 100 * c + train)
            ref.train(train), student.train(train)
            with torch.no_grad():
                want = ref(x)
                x_in = x.clone()
                got = student(x_in)
            mode = "train" if train else "eval"
            if not torch.equal(x_in, x):
                fail(check, "your forward changed its input in place",
                      "don't use in-place ops on x (x += ..., ReLU(inplace=True) on x): the shortcut needs x unchanged")
            if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
                fail(check, f"output shape {shape}, expected {tuple(want.shape)} (same as the input)",
                      "a same-shape unit maps (N, C, H, W) to (N, C, H, W): 3x3 convolutions need padding=1")
            if not _close(got, want):
                fail(check, f"in {mode} mode your output differs from the reference by up to "
                      f"{_max_diff(got, want):.3g} ({c} channels)", _preact_diagnosis(ref, x, got, train))
    return (f"PreActUnit matches make_unit('full_preact') for channels {tuple(channels)} in eval and train "
            f"mode (max |diff| <= {TOL:g}), with the same number of parameters.")


# ---- exercise 2: exclusive gating (Paper A Fig 2c) ----------------------------------------------------------

def _reference_gating(x, Fx, W_g, b_g):
    """idmap_lib's own ExclusiveGating shortcut with the gate's 1x1 conv set to (W_g, b_g)."""
    c = x.shape[1]
    sc = make_shortcut("exclusive_gating", c, c, 1, "zero_pad", bn=False, options={"gate_bias": 0.0}).double()
    with torch.no_grad():
        sc.gate.conv.weight.copy_(W_g)
        sc.gate.conv.bias.copy_(b_g)
        return sc(x, Fx)


def _gating_diagnosis(x, Fx, W_g, b_g, out):
    g = torch.sigmoid(torch.nn.functional.conv2d(x, W_g, b_g))
    gF = torch.sigmoid(torch.nn.functional.conv2d(Fx, W_g, b_g))
    lin = torch.nn.functional.conv2d(x, W_g, b_g)
    candidates = {
        "(1 - g) x + F: that is shortcut-only gating, Fig 2(d). Exclusive gating also scales F by g":
            (1 - g) * x + Fx,
        "x + g F: the (1 - g) factor on the shortcut is missing": x + g * Fx,
        "g x + (1 - g) F: g and 1 - g are swapped. g(x) gates the residual branch F, 1 - g(x) the shortcut":
            g * x + (1 - g) * Fx,
        "the formula with g computed from F(x). The gate reads the unit's input: g(x) = sigmoid(W_g x + b_g)":
            (1 - gF) * x + gF * Fx,
        "the formula without the sigmoid. g(x) = sigmoid(W_g x + b_g) lies in (0, 1)": (1 - lin) * x + lin * Fx,
        "(1 - g) x + g F with g = sigmoid(W_g x) - the bias b_g is missing":
            (1 - torch.sigmoid(torch.nn.functional.conv2d(x, W_g))) * x
            + torch.sigmoid(torch.nn.functional.conv2d(x, W_g)) * Fx,
    }
    for what, value in candidates.items():
        if torch.allclose(value, out.double(), atol=TOL, rtol=TOL):
            return f"your output equals {what}."
    return ("y = (1 - g(x)) * x + g(x) * F(x) with g(x) = sigmoid(conv2d(x, W_g, b_g)), a 1x1 convolution "
            "of the unit's input x (Paper A Eqn 1 with the Highway gate, Fig 2c).")


@grader("exclusive_gating")
def check_exclusive_gating(exclusive_gating, channels=4, seed=0):
    """Exercise 2. `exclusive_gating(x, Fx, W_g, b_g)` must return Paper A Fig 2(c)'s
    y = (1 - g(x)) * x + g(x) * F(x), g(x) = sigmoid(W_g * x + b_g), W_g a 1x1 convolution
    (weight (C, C, 1, 1), bias (C,)).

    Checked against idmap_lib's ExclusiveGating module for b_g in {-6, 0, 2} (random W_g), then the limits:
    b_g = -40 must give the identity shortcut y = x, b_g = +40 must give y = F(x).
    """
    check = "check_exclusive_gating"
    c = channels
    x, Fx = _randn(2, c, 5, 5, seed=seed), _randn(2, c, 5, 5, seed=seed + 1)
    W_g = _randn(c, c, 1, 1, seed=seed + 2, scale=0.5)
    for b in (-6.0, 0.0, 2.0):
        b_g = torch.full((c,), b, dtype=torch.float64) + _randn(c, seed=seed + 3, scale=0.1)
        want = _reference_gating(x, Fx, W_g, b_g)
        got = exclusive_gating(x.clone(), Fx.clone(), W_g.clone(), b_g.clone())
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            fail(check, f"output shape {shape}, expected {tuple(want.shape)}",
                  "the combination is elementwise; g(x) = sigmoid(conv2d(x, W_g, b_g)) has x's shape")
        if not _close(got, want):
            fail(check, f"with b_g near {b:g} your output differs from Fig 2(c) by up to {_max_diff(got, want):.3g}",
                  _gating_diagnosis(x, Fx, W_g, b_g, got))
    limits = {-40.0: (x, "the identity shortcut y = x (the gate is closed: g -> 0)"),
              40.0: (Fx, "y = F(x): the gate is open (g -> 1), the shortcut is cut")}
    for b, (want, what) in limits.items():
        got = exclusive_gating(x.clone(), Fx.clone(), W_g.clone(), torch.full((c,), b, dtype=torch.float64))
        if not _close(got, want):
            fail(check, f"with b_g = {b:g} the output should be {what}; it differs by {_max_diff(got, want):.3g}",
                  "a very negative gate bias makes g(x) = sigmoid(W_g x + b_g) ~ 0 everywhere")
    return ("exclusive_gating equals idmap_lib's Fig 2(c) shortcut for b_g in {-6, 0, 2}; b_g = -40 gives the "
            "identity, b_g = +40 gives F(x).")


# ---- exercise 3: the direct term of Eqn 8 -------------------------------------------------------------------

def lambda_stack_of(lams, channels=2):
    """Same-shape full pre-activation units with shortcut scales `lams` (Eqn 6), F zeroed, in float64."""
    torch.manual_seed(0)
    units = [make_unit("full_preact", "constant_scaling", channels, channels, shortcut_scale=float(lam),
                       residual_scale=1.0) for lam in lams]
    return zero_residuals(nn.Sequential(*units).double())


def measured_direct_term(lams, channels=2, size=4):
    """||dE/dx_0|| / ||dE/dx_L|| measured with autograd in a real zero-residual lambda-stack."""
    if not len(lams):
        return 1.0
    model = lambda_stack_of(lams, channels)
    x = torch.randn(2, channels, size, size, generator=_gen(0), dtype=torch.float64)
    g = unit_gradient_norms(model, x)
    return float(g[0] / g[-1])


def _as_float(value, check, name):
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        fail(check, f"{name} returned {type(value).__name__} {value!r:.60}, not a number",
              "return one float (a 0-d tensor is fine too)")


@grader("direct_term")
def check_direct_term(direct_term, seed=0):
    """Exercise 3a. `direct_term(lams)` must return prod_i lambda_i, the factor of Eqn 8's direct term
    (dE/dx_l = (prod_{i=l}^{L-1} lambda_i) dE/dx_L + ...).

    Compared with math.prod and with the gradient ratio ||dE/dx_0|| / ||dE/dx_L|| measured by autograd in a
    real idmap_lib stack of constant-scaling units whose residual branches are zeroed (only the direct
    term is left), relative tolerance 1e-9.
    """
    check = "check_direct_term"
    g = _gen(seed)
    cases = {
        "one unit, lambda = 0.5": [0.5],
        "50 units of lambda = 0.9": [0.9] * 50,
        "20 units of lambda = 1.2": [1.2] * 20,
        "30 random lambdas in [0.6, 1.4]": (0.6 + 0.8 * torch.rand(30, generator=g, dtype=torch.float64)).tolist(),
        "no units (l = L)": [],
    }
    measured_cases = ("50 units of lambda = 0.9", "30 random lambdas in [0.6, 1.4]")
    rows = []
    for what, lams in cases.items():
        want = math.prod(lams)
        got = _as_float(direct_term(list(lams)), check, "direct_term")
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300):
            if lams and math.isclose(got, sum(lams), rel_tol=1e-9):
                hint = "you returned the sum. The factors multiply: each unit scales the gradient by its lambda (chain rule)."
            elif not lams:
                hint = "with no unit between x_l and x_L the gradient passes unchanged: the empty product is 1."
            elif len(lams) > 1 and math.isclose(got, lams[0] ** len(lams), rel_tol=1e-9):
                hint = "you returned lambda_0^L; the lambdas may differ from unit to unit: multiply them all."
            else:
                hint = "Eqn 8's direct term is (prod_{i=l}^{L-1} lambda_i) dE/dx_L: return that product."
            fail(check, f"{what}: direct_term = {got:.6g}, expected {want:.6g}", hint)
        if what in measured_cases:
            meas = measured_direct_term(lams)
            assert math.isclose(meas, want, rel_tol=1e-9), f"internal: measured {meas} != prod {want}"
            rows.append(f"{what}: predicted {got:.6g}, measured {meas:.6g}")
    return "direct_term = prod(lambda) in every case; in a real zero-residual stack " + "; ".join(rows) + "."


@grader("vanishing_depth")
def check_vanishing_depth(vanishing_depth):
    """Exercise 3b. `vanishing_depth(lam, eps)` must return the smallest number of units L with
    lam**L < eps (0 < lam < 1): how deep a lambda-stack can be before the direct term falls below eps.
    One answer is also checked on a real zero-residual stack."""
    check = "check_vanishing_depth"
    cases = [(0.9, 1e-3), (0.5, 1e-3), (0.99, 0.5), (0.999, 1e-2), (0.5, 0.3)]
    for lam, eps in cases:
        want = next(n for n in range(1, 10 ** 6) if lam ** n < eps)
        got = vanishing_depth(lam, eps)
        if not isinstance(got, int) and not (isinstance(got, float) and got.is_integer()) and not (
                isinstance(got, torch.Tensor) and got.numel() == 1 and float(got).is_integer()):
            fail(check, f"vanishing_depth({lam}, {eps}) returned {got!r}, not a whole number of units",
                  "round up: the depth is the smallest integer L with lam**L < eps (math.ceil, or a loop)")
        got = int(got)
        if got != want:
            if got == want - 1:
                hint = (f"{lam}**{got} = {lam ** got:.4g} is not yet below {eps:g}: round up (math.ceil), "
                        "not down, and make sure the inequality is strict.")
            else:
                hint = "solve lam**L < eps for L: L > log(eps) / log(lam) (log(lam) < 0 flips the inequality)."
            fail(check, f"vanishing_depth({lam}, {eps}) = {got}, expected {want} ({lam}**{want} = {lam ** want:.4g})",
                  hint)
    meas = [measured_direct_term([0.9] * n) for n in (65, 66)]
    assert meas[0] >= 1e-3 > meas[1], f"internal: measured {meas}"
    return (f"vanishing_depth is right in {len(cases)} cases; measured in a real stack of lambda = 0.9: "
            f"65 units keep {meas[0]:.4g} of the gradient, 66 keep {meas[1]:.4g} < 1e-3.")


# ---- exercise 4: Paper B's gated residual unit --------------------------------------------------------------

def _branch(channels, seed):
    torch.manual_seed(seed)
    F = make_unit("full_preact", "identity", channels, channels).residual.double()
    return F.eval()  # running statistics: F is a fixed function during the check


@grader("GatedResidual")
def check_gated_residual(GatedResidual, channels=4, seed=0):
    """Exercise 4. `GatedResidual(F)` must wrap a residual branch F as Paper B's gated residual layer
    u = ReLU(k) * F(x) + x, with one scalar parameter `k` initialised to 1.

    Checks: k's shape and initial value; exactly one parameter more than F; outputs equal to idmap_lib's
    gated ResidualUnit for k in {1, 0.3, 2.5}; exactly u = x for k in {0, -1.5} (the identity is one scalar
    away); dE/dk = sum F(x) at k = 1 (the gate learns) and 0 for k < 0.
    """
    check = "check_gated_residual"
    F = _branch(channels, seed)
    student = GatedResidual(F)
    if not isinstance(student, nn.Module):
        fail(check, f"GatedResidual(F) returned a {type(student).__name__}", "write `class GatedResidual(nn.Module)`")
    k = getattr(student, "k", None)
    if not isinstance(k, nn.Parameter):
        fail(check, "your module has no nn.Parameter `k`",
              "store the gate as self.k = nn.Parameter(torch.ones(())) so the optimiser learns it")
    if k.numel() != 1:
        fail(check, f"k has shape {tuple(k.shape)}, expected one scalar", "Paper B uses a single scalar k per layer")
    if float(k.detach()) != 1.0:
        hint = ("with k = 0 the gate sits on ReLU's kink: ReLU'(0) = 0 in PyTorch, so k never gets a gradient "
                "and the layer is stuck at the identity. " if float(k.detach()) == 0.0 else "")
        fail(check, f"k starts at {float(k.detach()):g}, expected 1", hint + "Paper B initialises k = 1: the layer "
              "starts as an ordinary residual layer, u = F(x) + x.")
    n_F = sum(p.numel() for p in F.parameters())
    n = sum(p.numel() for p in student.parameters())
    if n != n_F + 1:
        fail(check, f"{n} parameters, expected F's {n_F} + 1 (k)",
              "register F as a submodule (self.F = F) and add exactly one scalar parameter k")
    student.double().eval()
    k = student.k  # the same parameter after .double() (converted in place), fetched again to be safe
    ref = ResidualUnit(F, Shortcut(), gated=True).double().eval()
    x = _randn(2, channels, 5, 5, seed=seed + 1)
    for kv in (1.0, 0.3, 2.5, 0.0, -1.5):
        with torch.no_grad():
            k.fill_(kv)
            ref.k.fill_(kv)
            want, got = ref(x), student(x.clone())
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            fail(check, "output shape differs from the input's", "u = ReLU(k) F(x) + x has x's shape")
        if kv <= 0 and not torch.equal(got.double(), x):
            hint = ("sigmoid(k) is never 0: use ReLU(k), which is exactly 0 for k <= 0."
                    if _close(got, torch.sigmoid(torch.tensor(kv, dtype=torch.float64)) * F(x) + x)
                    else "for k <= 0, ReLU(k) = 0 and u = x exactly: that is why the identity is easy to learn.")
            fail(check, f"with k = {kv:g} the output is not exactly x (max |u - x| = {_max_diff(got, x):.3g})", hint)
        if not _close(got, want):
            with torch.no_grad():
                g, Fx = max(kv, 0.0), F(x)
            if _close(got, g * Fx + (1 - g) * x):
                hint = ("you wrote Paper B's gated PLAIN layer, g f(x) + (1 - g) x. A gated residual layer keeps "
                        "the shortcut: u = g(k) F(x) + x.")
            elif _close(got, kv * Fx + x):
                hint = "you used k itself; the gate is g(k) = ReLU(k)."
            elif _close(got, torch.sigmoid(torch.tensor(kv, dtype=torch.float64)) * Fx + x):
                hint = ("you used sigmoid(k). Paper B's gate is ReLU(k): sigmoid(k) is never 0, so the layer "
                        "could never become exactly the identity.")
            else:
                hint = "u = torch.relu(self.k) * self.F(x) + x"
            fail(check, f"with k = {kv:g} the output differs from ReLU(k) F(x) + x by {_max_diff(got, want):.3g}", hint)
    for kv, want in ((1.0, None), (-1.0, 0.0)):
        with torch.no_grad():
            k.fill_(kv)
        k.grad = None
        student(x.clone()).sum().backward()
        if want is None:
            with torch.no_grad():
                want = float(F(x).sum())
        got = 0.0 if k.grad is None else float(k.grad)
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            fail(check, f"at k = {kv:g}, dE/dk = {got:.6g} for E = sum(u); expected {want:.6g}",
                  "compute the gate inside forward from the parameter (torch.relu(self.k)), so autograd sees it")
    with torch.no_grad():
        k.fill_(1.0)
    return (f"GatedResidual has one scalar k = 1 at start ({n_F} + 1 parameters), matches idmap_lib's gated "
            "unit for k in {1, 0.3, 2.5}, is exactly the identity for k <= 0, and k gets the right gradient.")


# ---- exercise 5: ReLU truncation after the addition (Paper A Sec 4.2) ----------------------------------------

@grader("truncation_rate")
def check_truncation_rate(truncation_rate, seed=0):
    """Exercise 5. `truncation_rate(unit, x)` must return the fraction of the entries of
    y_l = h(x_l) + F(x_l) (Eqn 1) that the original unit's f = ReLU sets to zero (those with y_l < 0),
    for an idmap_lib ``original`` unit (Fig 4a) in train mode.

    Compared with idmap_lib.book.probes.truncation_rates, to 1e-9, on same-shape and downsampling units.
    """
    check = "check_truncation_rate"
    cases = [(4, 4, 1), (8, 8, 1), (4, 8, 2)]
    rows = []
    for n, (cin, cout, stride) in enumerate(cases):
        torch.manual_seed(seed + n)
        unit = make_unit("original", "identity", cin, cout, stride).double().train()
        x = _randn(4, cin, 8, 8, seed=seed + n) + 0.5 * ((n + 1) % 2)
        want = float(truncation_rates(nn.Sequential(unit), x)[0])
        got = _as_float(truncation_rate(unit, x.clone()), check, "truncation_rate")
        left_in_eval = not unit.training
        if not math.isclose(got, want, abs_tol=1e-9):
            with torch.no_grad():
                unit.eval()
                y_eval = unit.shortcut(x, unit.residual(x))
                unit.train()
                r = unit.residual(x)
                y = unit.shortcut(x, r)
            if math.isclose(got, 1 - want, abs_tol=1e-9):
                hint = "you measured the fraction that survives; the truncated fraction is where y < 0."
            elif math.isclose(got, float((r < 0).double().mean()), abs_tol=1e-9):
                hint = "you looked at F(x) alone; f acts on the SUM y = h(x) + F(x) (use unit.shortcut(x, F(x)))."
            elif math.isclose(got, float((x < 0).double().mean()), abs_tol=1e-9):
                hint = "you looked at the input x; f acts on y = h(x) + F(x)."
            elif left_in_eval or math.isclose(got, float((y_eval < 0).double().mean()), abs_tol=1e-9):
                hint = ("you measured in eval mode (running statistics); measure with batch statistics: "
                        "leave the unit in train mode, as at the start of training.")
            else:
                hint = ("compute y = unit.shortcut(x, unit.residual(x)) with the unit in train mode and return "
                        f"(y < 0).float().mean(); here that is {float((y < 0).double().mean()):.4f}.")
            fail(check, f"unit {cin}->{cout}, stride {stride}: truncation_rate = {got:.4f}, expected {want:.4f}", hint)
        rows.append(f"{want:.3f}")
    return f"truncation_rate agrees with probes.truncation_rates on {len(cases)} units (rates {', '.join(rows)})."


# ---- batch grading -------------------------------------------------------------------------------------------

EXERCISES = {  # exercise -> (the name the student defines, its grader)
    "1 full pre-activation unit": ("PreActUnit", check_full_preact_unit),
    "2 exclusive gating": ("exclusive_gating", check_exclusive_gating),
    "3a direct term": ("direct_term", check_direct_term),
    "3b vanishing depth": ("vanishing_depth", check_vanishing_depth),
    "4 gated residual": ("GatedResidual", check_gated_residual),
    "5 truncation rate": ("truncation_rate", check_truncation_rate),
}


def grade(namespace):
    """Run every exercise's grader on what `namespace` (a dict, e.g. globals()) defines.
    Returns {exercise: "passed" | "not attempted" | "missing" | "failed: <message>"}."""
    results = {}
    for exercise, (name, check) in EXERCISES.items():
        if name not in namespace:
            results[exercise] = "missing"
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                results[exercise] = check.status(namespace[name])
            except Exception as e:  # noqa: BLE001 - AssertionError, or the student's code crashing
                message = " ".join(str(e).split())  # the whole message (what differs, and the hint) on one line
                kind = "" if isinstance(e, AssertionError) else f"{type(e).__name__}: "
                results[exercise] = f"failed: {kind}{message}"
    return results
