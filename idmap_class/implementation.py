"""Auto-graders for the exercises chapter (book/06_exercises.ipynb).

Each ``check_*`` takes what the student wrote and compares it with idmap_lib's reference on random
inputs. It prints one ``PASSED`` line, or raises ``AssertionError`` whose message says what differs
and gives a hint. Student code that still raises ``NotImplementedError`` (the stub) is reported as
"NOT ATTEMPTED", without raising, so a notebook with untouched stubs still runs from top to bottom.
``check_*.status(student)`` returns "passed" or "not attempted" instead of None.

Exercise by exercise, what the student writes and its grader:

1. ``PreActUnit(channels)``, the full pre-activation unit of Paper A Fig 4(e):
   :func:`.module_checks.check_full_preact_unit`;
2. ``exclusive_gating(x, Fx, W_g, b_g)``, Paper A Fig 2(c): :func:`check_exclusive_gating`;
3. ``direct_term(lams)`` = prod lambda, Paper A Eqn 8: :func:`check_direct_term`; and
   ``vanishing_depth(lam, eps)``, the units until lam^L < eps: :func:`check_vanishing_depth`;
4. ``GatedResidual(F)``, u = ReLU(k) F(x) + x, Paper B: :func:`.module_checks.check_gated_residual`;
5. ``truncation_rate(unit, x)``, Paper A Sec 4.2: :func:`check_truncation_rate`.

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
- exclusive_gating: output (output) x 5, b_g near -6, 0, 2, then -40, +40.
- direct_term: value (value) x 5.
- vanishing_depth: value (value) x 6.
- truncation_rate: rate (rate, eval: the unit was left in eval mode) x 3.
- gated_residual: module (module, type); k (parameter, shape, value); parameters (count); output
  (output) for each k in GATES; gradient (grad: dE/dk or None) at k = 1, -1.

:func:`grade` runs every grader on a namespace (the chapter's last cell). The student edition, the
autograder package and batch grading are Otter-Grader's (see :mod:`idmap_class.editions`).
"""
from __future__ import annotations

import contextlib
import io
import math

import torch

from . import mistakes
from .grading import fail, one_thread, read, shown_type, split
from .module_checks import check_full_preact_unit, check_gated_residual
from .observers import (observe_direct_term, observe_exclusive_gating, observe_truncation_rate,
                        observe_vanishing_depth, record)
from .references import (GATE_BIASES, MEASURED_CASES, TRUNCATION_CASES, close, direct_term_cases,
                         gating_inputs, max_diff, measured_direct_term, reference_gating,
                         truncation_case, vanishing_cases)


# ---- exercise 2: exclusive gating (Paper A Fig 2c) -----------------------------------------------

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
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else shown_type(got)
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
        fail(check, f"{name} returned a {shown_type(value.type)}, not a number",
             "return one float (a 0-d tensor is fine too)")
    return value.value


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
                 f"vanishing_depth({lam}, {eps}) returned "
                 f"{'a ' + shown_type(got.type) if got.value is None else f'{got.value:g}'}, "
                 f"not a whole number of units",
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


# ---- exercise 5: ReLU truncation after the addition (Paper A Sec 4.2) ----------------------------

@split("truncation_rate", observe_truncation_rate)
def check_truncation_rate(tape, seed):
    """Exercise 5. `truncation_rate(unit, x)` must return the fraction of the entries of y_l =
    h(x_l) + F(x_l) (Eqn 1) that the original unit's f = ReLU sets to zero (those with y_l < 0), for
    an idmap_lib ``original`` unit (Fig 4a) in train mode.

    Compared with idmap_book.maths.probes.truncation_rates, to 1e-9, on same-shape and
    downsampling units.
    """
    check, rows = "check_truncation_rate", []
    for n, (cin, cout, stride) in enumerate(TRUNCATION_CASES):
        unit, x, want = truncation_case(n, seed)
        rate = tape.next("rate")
        got = _as_float(rate.number("rate"), check, "truncation_rate")
        if not math.isclose(got, want, abs_tol=1e-9):
            fail(check,
                 f"unit {cin}->{cout}, stride {stride}: truncation_rate = {got:.4f}, not the "
                 f"fraction of entries with y_l < 0",
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
