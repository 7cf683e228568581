"""Graders of the two exercises where the student writes a module (book/06_exercises.ipynb): the
full pre-activation unit (exercise 1, Paper A Fig 4e) and Paper B's gated residual unit (exercise
4). Each is two halves, as every grader (:mod:`.implementation` says how they are run and which
facts each observer notes)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from idmap_lib.models.shortcuts import Shortcut
from idmap_lib.models.units import ResidualUnit
from . import mistakes
from .grading import fail, shown_type, split
from .observers import observe_full_preact_unit, observe_gated_residual
from .references import (GATES, PREACT_LAYOUT, TOL, branch, close, count, geometry, max_diff,
                         preact_input, randn, reference_preact)


def _flat(v):
    return [x for item in v for x in _flat(item)] if isinstance(v, tuple) else [v]


# ---- exercise 1: the full pre-activation unit (Paper A Fig 4e) -----------------------------------

@split("PreActUnit", observe_full_preact_unit)
def check_full_preact_unit(tape, seed, channels=(4, 8)):
    """Exercise 1. `PreActUnit(channels)` (a class or any factory) must build an nn.Module with
    layers `bn1, conv1, bn2, conv2` whose forward is Paper A Fig 4(e): x_{l+1} = x_l +
    conv2(ReLU(bn2(conv1(ReLU(bn1(x_l)))))).

    Protocol: for each channel count, the grader builds idmap_lib's ``make_unit("full_preact")``
    with random BN parameters and running statistics, copies its weights into the student's four
    layers, then compares parameter counts and outputs (float64, to 1e-6) in eval mode and in train
    mode.
    """
    check = "check_full_preact_unit"
    if tape.next("factory").flag("instance"):
        fail(check, "you passed a module instance",
             "pass the class itself, check_full_preact_unit(PreActUnit): "
             "the grader builds units of several widths")
    for c in channels:
        ref = reference_preact(c, seed + c)
        unit = tape.next("unit")
        if not unit.flag("module"):
            fail(check, f"PreActUnit({c}) returned a {shown_type(unit.text('type'))}, not an "
                        f"nn.Module",
                 "write `class PreActUnit(nn.Module)` whose __init__ takes the number of channels")
        for name, i in PREACT_LAYOUT.items():
            ours, layer = ref.residual[i], tape.next(name)
            if not layer.flag("present"):
                fail(check, f"your module has no attribute `{name}`",
                     "expose the four layers as self.bn1, self.conv1, self.bn2, self.conv2 "
                     "(nn.BatchNorm2d, nn.Conv2d, nn.BatchNorm2d, nn.Conv2d): the grader copies "
                     "weights into them")
            if not layer.flag("kind"):
                fail(check,
                     f"`{name}` is a {shown_type(layer.text('type'))}, expected "
                     f"nn.{type(ours).__name__}",
                     "bn1/bn2 are nn.BatchNorm2d(channels); conv1/conv2 are nn.Conv2d(channels, "
                     "channels, 3, padding=1, bias=False)")
            if isinstance(ours, nn.Conv2d):
                got, want = layer.plain("geometry"), geometry(ours)
                if got != want:
                    # its values only where they are whole numbers (else text of the student's)
                    said = got if all(isinstance(v, int) for v in _flat(got)) else "other values"
                    fail(check,
                         f"`{name}` has (in, out, kernel, stride, padding) = {said}, expected "
                         f"{want}",
                         "a same-shape unit uses 3x3 convolutions with stride 1 and padding 1")
                if layer.flag("bias"):
                    fail(check, f"`{name}` has a bias",
                         "use bias=False: the official code has none (a BN "
                         "follows conv1, and conv2's bias would only shift the residual)")
        n_ref, n_student = count(ref), tape.next("parameters").integer("count")
        if n_student != n_ref:
            fail(check, f"with {c} channels your unit has {n_student} parameters, the reference "
                 f"{n_ref} = 2 x (3*3*{c}*{c}) conv weights + 2 x 2*{c} BN scales and shifts",
                 "no biases in the convolutions, no extra layers; the identity shortcut has no "
                 "parameters")
        for train in (False, True):
            x = preact_input(c, seed, train)
            ref.train(train)
            with torch.no_grad():
                want = ref(x)
            out = tape.next("output")
            if out.flag("in_place"):
                fail(check, "your forward changed its input in place",
                     "don't use in-place ops on x (x += ..., ReLU(inplace=True) on x): the "
                     "shortcut needs x unchanged")
            got = out.tensor("output")
            if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                shape = tuple(got.shape) if isinstance(got, torch.Tensor) else shown_type(got)
                fail(check,
                     f"output shape {shape}, expected {tuple(want.shape)} (same as the input)",
                     "a same-shape unit maps (N, C, H, W) to (N, C, H, W): 3x3 convolutions need "
                     "padding=1")
            if not close(got, want):
                fail(check,
                     f"in {'train' if train else 'eval'} mode your output differs from the "
                     f"reference by up to {max_diff(got, want):.3g} ({c} channels)",
                     mistakes.preact(ref, x, got, train))
    return (f"PreActUnit matches make_unit('full_preact') for channels {tuple(channels)} in eval "
            f"and train mode (max |diff| <= {TOL:g}), with the same number of parameters.")


# ---- exercise 4: Paper B's gated residual unit ---------------------------------------------------

@split("GatedResidual", observe_gated_residual)
def check_gated_residual(tape, seed, channels=4):
    """Exercise 4. `GatedResidual(F)` must wrap a residual branch F as Paper B's gated residual
    layer u = ReLU(k) * F(x) + x, with one scalar parameter `k` initialised to 1.

    Checks: k's shape and initial value; exactly one parameter more than F; outputs equal to
    idmap_lib's gated ResidualUnit for k in {1, 0.3, 2.5}; exactly u = x for k in {0, -1.5} (the
    identity is one scalar away); dE/dk = sum F(x) at k = 1 (the gate learns) and 0 for k < 0.
    """
    check = "check_gated_residual"
    F = branch(channels, seed)
    module = tape.next("module")
    if not module.flag("module"):
        fail(check, f"GatedResidual(F) returned a {shown_type(module.text('type'))}",
             "write `class GatedResidual(nn.Module)`")
    k = tape.next("k")
    if not k.flag("parameter"):
        fail(check, "your module has no nn.Parameter `k`",
             "store the gate as self.k = nn.Parameter(torch.ones(())) so the optimiser learns it")
    if math.prod(k.shape("shape")) != 1:
        fail(check, f"k has shape {k.shape('shape')}, expected one scalar",
             "Paper B uses a single scalar k per layer")
    k0 = k.real("value")
    if k0 != 1.0:
        hint = ("with k = 0 the gate sits on ReLU's kink: ReLU'(0) = 0 in PyTorch, so k never gets "
                "a gradient and the layer is stuck at the identity. " if k0 == 0.0 else "")
        fail(check, f"k starts at {k0:g}, expected 1",
             hint + "Paper B initialises k = 1: the layer "
             "starts as an ordinary residual layer, u = F(x) + x.")
    n_F, n = count(F), tape.next("parameters").integer("count")
    if n != n_F + 1:
        fail(check, f"{n} parameters, expected F's {n_F} + 1 (k)",
             "register F as a submodule (self.F = F) and add exactly one scalar parameter k")
    ref = ResidualUnit(F, Shortcut(), gated=True).double().eval()
    x = randn(2, channels, 5, 5, seed=seed + 1)
    with torch.no_grad():
        Fx = F(x)
    for kv in GATES:
        with torch.no_grad():
            ref.k.fill_(kv)
            want = ref(x)
        got = tape.next("output").tensor("output")
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            fail(check, "output shape differs from the input's",
                 "u = ReLU(k) F(x) + x has x's shape")
        if kv <= 0 and not torch.equal(got, x):
            fail(check,
                 f"with k = {kv:g} the output is not exactly x (max |u - x| = "
                 f"{max_diff(got, x):.3g})",
                 mistakes.gated_not_identity(kv, Fx, x, got))
        if not close(got, want):
            fail(check,
                 f"with k = {kv:g} the output differs from ReLU(k) F(x) + x by "
                 f"{max_diff(got, want):.3g}",
                 mistakes.gated(kv, Fx, x, got))
    for kv, want in ((1.0, float(Fx.sum())), (-1.0, 0.0)):
        got = tape.next("gradient").real("grad", none=True) or 0.0
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            fail(check, f"at k = {kv:g}, dE/dk = {got:.6g} for E = sum(u); expected {want:.6g}",
                 "compute the gate inside forward from the parameter (torch.relu(self.k)), so "
                 "autograd sees it")
    return (f"GatedResidual has one scalar k = 1 at start ({n_F} + 1 parameters), matches "
            f"idmap_lib's gated "
            "unit for k in {1, 0.3, 2.5}, is exactly the identity for k <= 0, and k gets the right "
            "gradient.")
