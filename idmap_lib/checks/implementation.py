"""Auto-graders for the exercises chapter (book/06_exercises.ipynb).

Each ``check_*`` takes what the student wrote and compares it with idmap_lib's reference on random
inputs. It prints one ``PASSED`` line, or raises ``AssertionError`` whose message says what differs
and gives a hint. Student code that still raises ``NotImplementedError`` (the stub) is reported as
"NOT ATTEMPTED", without raising, so a notebook with untouched stubs still runs from top to bottom.
``check_*.status(student)`` returns "passed" or "not attempted" instead of None.

| exercise | the student writes | grader | |---|---|---| | 1 | ``PreActUnit(channels)``: full
pre-activation unit, Paper A Fig 4(e) | :func:`check_full_preact_unit` | | 2 | ``exclusive_gating(x,
Fx, W_g, b_g)``: Paper A Fig 2(c) | :func:`check_exclusive_gating` | | 3 | ``direct_term(lams)`` =
prod lambda, Paper A Eqn 8 | :func:`check_direct_term` | | 3 | ``vanishing_depth(lam, eps)``: units
until lam^L < eps | :func:`check_vanishing_depth` | | 4 | ``GatedResidual(F)``: u = ReLU(k) F(x) +
x, Paper B | :func:`check_gated_residual` | | 5 | ``truncation_rate(unit, x)``: Paper A Sec 4.2 |
:func:`check_truncation_rate` |

Each grader is two halves (:mod:`.grading`): ``observe_*`` builds the inputs from a seed, runs the
student's code and notes what it returned (JSON facts); the function under ``@split`` is the judge:
it rebuilds the reference from the same seed, reads the facts in order and fails with the grader's
message (hints: :mod:`.mistakes`). ``check_*(student, seed=0)`` runs both in one process (the
notebook); a batch grader runs :func:`observe` in the student's sandbox and :func:`judge`, which
never runs the student's code, in its own. The facts (fields) each observer notes, in order, an
``output`` being :func:`.grading.encode`, a ``value`` or ``rate`` :func:`.grading.number`, a
``type`` a type's name:

- full_preact_unit: factory (instance); per channel count: unit (module, type); bn1, conv1, bn2,
  conv2 (present, type, kind = the expected nn class; convs: geometry, bias); parameters (count);
  output (in_place, output) in eval then train mode.
- exclusive_gating: output (output) x 5, b_g near -6, 0, 2, then -40, +40. direct_term: value
  (value) x 5.
- vanishing_depth: value (value) x 6. truncation_rate: rate (rate, eval: the unit was left in eval
  mode) x 3.
- gated_residual: module (module, type); k (parameter, shape, value); parameters (count); output
  (output) for each k in GATES; gradient (grad: dE/dk or None) at k = 1, -1.

:func:`grade` runs every grader on a namespace (the chapter's last cell). The student edition, the
autograder package and batch grading are Otter-Grader's (see :mod:`idmap_lib.checks.editions`).
"""
from __future__ import annotations

import contextlib
import io
import math

import torch
import torch.nn as nn

from ..models.shortcuts import Shortcut
from ..models.units import ResidualUnit
from . import mistakes
from .grading import (WIDTH, encode, fail, jsonable, number, one_thread,  # noqa: F401 (WIDTH)
                      read, record, split)
from .references import (GATE_BIASES, GATES, MEASURED_CASES, PREACT_LAYOUT, TOL, TRUNCATION_CASES,
                         branch, close,
                         count, direct_term_cases, gating_inputs, geometry, max_diff,
                         measured_direct_term,
                         preact_input, randn, reference_gating, reference_preact, truncation_case,
                         vanishing_cases)


# ---- exercise 1: the full pre-activation unit (Paper A Fig 4e) -----------------------------------

def observe_full_preact_unit(PreActUnit, seed, note, channels=(4, 8)):
    """Build each unit, copy the reference's weights into its bn1, conv1, bn2, conv2, run it in eval
    and train."""
    note("factory", instance=isinstance(PreActUnit, nn.Module))
    if isinstance(PreActUnit, nn.Module):
        return
    for c in channels:
        ref, student = reference_preact(c, seed + c), PreActUnit(c)
        note("unit", module=isinstance(student, nn.Module), type=type(student).__name__)
        if not isinstance(student, nn.Module):
            return
        student.double()  # before loading, so the reference's float64 weights arrive unrounded
        for name, i in PREACT_LAYOUT.items():
            theirs, ours = getattr(student, name, None), ref.residual[i]
            kind = isinstance(theirs, type(ours))
            conv = {"geometry": jsonable(geometry(theirs)), "bias": theirs.bias is not None} \
                if kind and isinstance(ours, nn.Conv2d) else {}
            note(name, present=theirs is not None, type=type(theirs).__name__, kind=kind, **conv)
            if not kind:
                return
            theirs.load_state_dict(ours.state_dict())
        note("parameters", count=count(student))
        for train in (False, True):
            x = preact_input(c, seed, train)
            student.train(train)
            with torch.no_grad():
                x_in = x.clone()
                got = student(x_in)
            note("output", in_place=not torch.equal(x_in, x), output=encode(got))


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
            fail(check, f"PreActUnit({c}) returned a {unit.text('type')}, not an nn.Module",
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
                     f"`{name}` is a {layer.text('type')}, expected nn.{type(ours).__name__}",
                     "bn1/bn2 are nn.BatchNorm2d(channels); conv1/conv2 are nn.Conv2d(channels, "
                     "channels, 3, padding=1, bias=False)")
            if isinstance(ours, nn.Conv2d):
                got, want = layer.plain("geometry"), geometry(ours)
                if got != want:
                    fail(check,
                         f"`{name}` has (in, out, kernel, stride, padding) = {got}, expected "
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
                shape = tuple(got.shape) if isinstance(got, torch.Tensor) else got
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


# ---- exercise 2: exclusive gating (Paper A Fig 2c) -----------------------------------------------

def observe_exclusive_gating(exclusive_gating, seed, note, channels=4):
    x, Fx, W_g, biases = gating_inputs(channels, seed)
    for b_g in biases:
        note("output", output=encode(exclusive_gating(x.clone(), Fx.clone(), W_g.clone(),
                                                      b_g.clone())))


@split("exclusive_gating", observe_exclusive_gating)
def check_exclusive_gating(tape, seed, channels=4):
    """Exercise 2. `exclusive_gating(x, Fx, W_g, b_g)` must return Paper A Fig 2(c)'s
    y = (1 - g(x)) * x + g(x) * F(x), g(x) = sigmoid(W_g * x + b_g), W_g a 1x1 convolution
    (weight (C, C, 1, 1), bias (C,)).

    Checked against idmap_lib's ExclusiveGating module for b_g in {-6, 0, 2} (random W_g), then the
    limits: b_g = -40 must give the identity shortcut y = x, b_g = +40 must give y = F(x).
    """
    check = "check_exclusive_gating"
    x, Fx, W_g, biases = gating_inputs(channels, seed)
    for b, b_g in zip(GATE_BIASES, biases):
        want, got = reference_gating(x, Fx, W_g, b_g), tape.next("output").tensor("output")
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else got
            fail(check, f"output shape {shape}, expected {tuple(want.shape)}",
                 "the combination is elementwise; g(x) = sigmoid(conv2d(x, W_g, b_g)) has x's "
                 "shape")
        if not close(got, want):
            fail(check,
                 f"with b_g near {b:g} your output differs from Fig 2(c) by up to "
                 f"{max_diff(got, want):.3g}",
                 mistakes.gating(x, Fx, W_g, b_g, got))
    limits = {-40.0: (x, "the identity shortcut y = x (the gate is closed: g -> 0)"),
              40.0: (Fx, "y = F(x): the gate is open (g -> 1), the shortcut is cut")}
    for b, (want, what) in limits.items():
        got = tape.next("output").tensor("output")
        if not close(got, want):
            fail(check,
                 f"with b_g = {b:g} the output should be {what}; it differs by "
                 f"{max_diff(got, want):.3g}",
                 "a very negative gate bias makes g(x) = sigmoid(W_g x + b_g) ~ 0 everywhere")
    return ("exclusive_gating equals idmap_lib's Fig 2(c) shortcut for b_g in {-6, 0, 2}; b_g = "
            "-40 gives the identity, b_g = +40 gives F(x).")


# ---- exercise 3: the direct term of Eqn 8 --------------------------------------------------------

def _as_float(value, check, name):
    """A number(...) fact's float value, or the grader's failure."""
    if value.value is None:
        fail(check, f"{name} returned {value.type} {value.repr:.60}, not a number",
             "return one float (a 0-d tensor is fine too)")
    return value.value


def observe_direct_term(direct_term, seed, note):
    for lams in direct_term_cases(seed).values():
        note("value", value=number(direct_term(list(lams))))


@split("direct_term", observe_direct_term)
def check_direct_term(tape, seed):
    """Exercise 3a. `direct_term(lams)` must return prod_i lambda_i, the factor of Eqn 8's direct
    term (dE/dx_l = (prod_{i=l}^{L-1} lambda_i) dE/dx_L + ...).

    Compared with math.prod and with the gradient ratio ||dE/dx_0|| / ||dE/dx_L|| measured by
    autograd in a real idmap_lib stack of constant-scaling units whose residual branches are zeroed
    (only the direct term is left), relative tolerance 1e-9.
    """
    check, rows = "check_direct_term", []
    for what, lams in direct_term_cases(seed).items():
        want = math.prod(lams)
        got = _as_float(tape.next("value").number("value"), check, "direct_term")
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300):
            fail(check, f"{what}: direct_term = {got:.6g}, expected {want:.6g}",
                 mistakes.direct_term(lams, got))
        if what in MEASURED_CASES:
            meas = measured_direct_term(lams)
            assert math.isclose(meas, want,
                                rel_tol=1e-9), f"internal: measured {meas} != prod {want}"
            rows.append(f"{what}: predicted {got:.6g}, measured {meas:.6g}")
    return ("direct_term = prod(lambda) in every case; in a real zero-residual stack "
            "") + "; ".join(rows) + "."


def observe_vanishing_depth(vanishing_depth, seed, note):
    for lam, eps in vanishing_cases(seed):
        note("value", value=number(vanishing_depth(lam, eps)))


@split("vanishing_depth", observe_vanishing_depth)
def check_vanishing_depth(tape, seed):
    """Exercise 3b. `vanishing_depth(lam, eps)` must return the smallest number of units L with
    lam**L < eps (0 < lam < 1): how deep a lambda-stack can be before the direct term falls below
    eps. One answer is also checked on a real zero-residual stack."""
    check, cases = "check_vanishing_depth", vanishing_cases(seed)
    for lam, eps in cases:
        want = next(n for n in range(1, 10 ** 6) if lam ** n < eps)
        got = tape.next("value").number("value")
        whole = (got.value is not None and (got.is_int or (got.is_float or got.numel == 1)
                                            and got.value.is_integer()))
        if not whole:
            fail(check,
                 f"vanishing_depth({lam}, {eps}) returned {got.repr}, not a whole number of units",
                 "round up: the depth is the smallest integer L with lam**L < eps (math.ceil, or a "
                 "loop)")
        got = int(got.value)
        if got != want:
            fail(check,
                 f"vanishing_depth({lam}, {eps}) = {got}, expected {want} ({lam}**{want} = "
                 f"{lam ** want:.4g})",
                 mistakes.vanishing_depth(lam, eps, got, want))
    meas = [measured_direct_term([0.9] * n) for n in (65, 66)]
    assert meas[0] >= 1e-3 > meas[1], f"internal: measured {meas}"
    return (f"vanishing_depth is right in {len(cases)} cases; measured in a real stack of lambda = "
            f"0.9: 65 units keep {meas[0]:.4g} of the gradient, 66 keep {meas[1]:.4g} < 1e-3.")


# ---- exercise 4: Paper B's gated residual unit ---------------------------------------------------

def observe_gated_residual(GatedResidual, seed, note, channels=4):
    student = GatedResidual(branch(channels, seed))
    note("module", module=isinstance(student, nn.Module), type=type(student).__name__)
    k = getattr(student, "k", None)
    param = isinstance(k, nn.Parameter)
    note("k", parameter=param, shape=list(k.shape) if param else [],
         value=float(k.detach()) if param and k.numel() == 1 else None)
    if not param or k.numel() != 1 or not isinstance(student, nn.Module):
        return
    note("parameters", count=count(student))
    student.double().eval()
    # the same parameter after .double() (converted in place), fetched again to be safe
    k = student.k
    x = randn(2, channels, 5, 5, seed=seed + 1)
    for kv in GATES:
        with torch.no_grad():
            k.fill_(kv)
            note("output", output=encode(student(x.clone())))
    for kv in (1.0, -1.0):
        with torch.no_grad():
            k.fill_(kv)
        k.grad = None
        student(x.clone()).sum().backward()
        note("gradient", grad=None if k.grad is None else float(k.grad))


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
        fail(check, f"GatedResidual(F) returned a {module.text('type')}",
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


# ---- exercise 5: ReLU truncation after the addition (Paper A Sec 4.2) ----------------------------

def observe_truncation_rate(truncation_rate, seed, note):
    for n in range(len(TRUNCATION_CASES)):
        unit, x, _ = truncation_case(n, seed)
        note("rate", rate=number(truncation_rate(unit, x.clone())), eval=not unit.training)


@split("truncation_rate", observe_truncation_rate)
def check_truncation_rate(tape, seed):
    """Exercise 5. `truncation_rate(unit, x)` must return the fraction of the entries of y_l =
    h(x_l) + F(x_l) (Eqn 1) that the original unit's f = ReLU sets to zero (those with y_l < 0), for
    an idmap_lib ``original`` unit (Fig 4a) in train mode.

    Compared with idmap_lib.book.maths.probes.truncation_rates, to 1e-9, on same-shape and
    downsampling units.
    """
    check, rows = "check_truncation_rate", []
    for n, (cin, cout, stride) in enumerate(TRUNCATION_CASES):
        unit, x, want = truncation_case(n, seed)
        rate = tape.next("rate")
        got = _as_float(rate.number("rate"), check, "truncation_rate")
        if not math.isclose(got, want, abs_tol=1e-9):
            fail(check,
                 f"unit {cin}->{cout}, stride {stride}: truncation_rate = {got:.4f}, expected "
                 f"{want:.4f}",
                 mistakes.truncation(unit, x, got, want, rate.flag("eval")))
        rows.append(f"{want:.3f}")
    return (f"truncation_rate agrees with probes.truncation_rates on {len(TRUNCATION_CASES)} units "
            f"(rates {', '.join(rows)}).")


# ---- the two halves by name, batch grading -------------------------------------------------------

CHECKS = (check_full_preact_unit, check_exclusive_gating, check_direct_term, check_vanishing_depth,
          check_gated_residual, check_truncation_rate)
OBSERVERS = {c.__name__: c.observer for c in CHECKS}  # check name -> its observing half
JUDGES = {c.__name__: c.judge for c in CHECKS}  # check name -> its judging half


def _known(check_name):
    if check_name not in OBSERVERS:
        raise ValueError(f"no implementation grader {check_name!r}; they are "
                         f"{', '.join(OBSERVERS)}")
    return check_name


def observe(check_name, student, seed) -> dict:
    """The observing half of grader `check_name` (a key of OBSERVERS), run in the student's process:
    the JSON facts the judge reads (module docstring). Never raises for the student's code (their
    exception, or the stub's NotImplementedError, ends the facts); ValueError for an unknown name or
    a bad seed."""
    with one_thread():
        return record(_known(check_name), OBSERVERS[check_name], student, seed)[0]


def judge(check_name, observation, seed) -> str:
    """The judging half, in the trusted process: "passed" or "not attempted", or AssertionError with
    the grader's message (also for an observation it cannot read). Never runs the student's code."""
    try:
        with one_thread():
            read(_known(check_name), JUDGES[check_name], observation, seed)
    except NotImplementedError:
        return "not attempted"
    return "passed"


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
                # the whole message (what differs, and the hint) on one line
                message = " ".join(str(e).split())
                kind = "" if isinstance(e, AssertionError) else f"{type(e).__name__}: "
                results[exercise] = f"failed: {kind}{message}"
    return results
