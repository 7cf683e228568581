"""The common mistakes the implementation graders (:mod:`.implementation`) recognise, and their
hints.

Each function is given the reference's inputs (rebuilt from the seed in the trusted judge) and the
student's observed output, computes the candidate wrong formulas and returns the hint for the first
one the output equals (or the rule, stated plainly, when it equals none). Compared in float64 to
:data:`.references.TOL`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .references import PREACT_LAYOUT, close

def _first(candidates, out, otherwise):
    for what, value in candidates.items():
        if close(out, value):
            return f"your output equals {what}."
    return otherwise


def preact(ref, x, out, train):
    """Exercise 1: which common mistake does `out` match? (computed with the reference's own
    layers)"""
    bn1, conv1, bn2, conv2 = (ref.residual[i] for i in PREACT_LAYOUT.values())
    relu = torch.relu
    ref.train(train)
    with torch.no_grad():
        Fx = ref.residual(x)
        candidates = {
            "F(x) alone: the shortcut is missing. The unit adds its input: x_{l+1} = x_l + F(x_l) "
            "(Eqn 3)": Fx,
            "ReLU(x + F(x)): an activation after the addition. In full pre-activation f is the "
            "identity (Fig 4e): nothing follows the addition": relu(x + Fx),
            "the original post-activation unit, ReLU(x + BN(conv(ReLU(BN(conv(x)))))) (Fig 4a). "
            "Move BN and ReLU BEFORE each convolution": relu(x + bn2(conv2(relu(bn1(conv1(x)))))),
            "x + conv(ReLU(BN(conv(ReLU(BN(x)))))) with bn1/bn2 swapped": x
            + conv2(relu(bn1(conv1(relu(bn2(x)))))),
            "x + BN(conv(ReLU(BN(conv(ReLU(x)))))), the ReLU-only pre-activation (Fig 4d)":
                x + bn2(conv2(relu(bn1(conv1(relu(x)))))),
        }
    return _first(candidates, out,
                  "the order must be x_{l+1} = x_l + conv2(ReLU(bn2(conv1(ReLU(bn1(x_l))))))) "
                  "(Fig 4e: BN -> ReLU -> conv -> BN -> ReLU -> conv, then add the untouched "
                  "input).")


def gating(x, Fx, W_g, b_g, out):
    """Exercise 2: which wrong formula for exclusive gating does `out` match?"""
    g, gF, lin = torch.sigmoid(F.conv2d(x, W_g,
                                        b_g)), torch.sigmoid(F.conv2d(Fx, W_g,
                                                                      b_g)), F.conv2d(x, W_g, b_g)
    g0 = torch.sigmoid(F.conv2d(x, W_g))
    candidates = {
        "(1 - g) x + F: that is shortcut-only gating, Fig 2(d). Exclusive gating also scales F by "
        "g":
            (1 - g) * x + Fx,
        "x + g F: the (1 - g) factor on the shortcut is missing": x + g * Fx,
        "g x + (1 - g) F: g and 1 - g are swapped. g(x) gates the residual branch F, 1 - g(x) the "
        "shortcut":
            g * x + (1 - g) * Fx,
        "the formula with g computed from F(x). The gate reads the unit's input: g(x) = "
        "sigmoid(W_g x + b_g)":
            (1 - gF) * x + gF * Fx,
        "the formula without the sigmoid. g(x) = sigmoid(W_g x + b_g) lies in (0, 1)": (1 - lin) * x
        + lin * Fx,
        "(1 - g) x + g F with g = sigmoid(W_g x) - the bias b_g is missing": (1 - g0) * x + g0 * Fx,
    }
    return _first(candidates, out,
                  "y = (1 - g(x)) * x + g(x) * F(x) with g(x) = sigmoid(conv2d(x, W_g, b_g)), a "
                  "1x1 convolution of the unit's input x (Paper A Eqn 1 with the Highway gate, Fig "
                  "2c).")


def direct_term(lams, got):
    """Exercise 3a: the hint for a wrong direct term `got` (the product of `lams` is right)."""
    if lams and math.isclose(got, sum(lams), rel_tol=1e-9):
        return ("you returned the sum. The factors multiply: each unit scales the gradient by its "
                "lambda (chain rule).")
    if not lams:
        return ("with no unit between x_l and x_L the gradient passes unchanged: the empty product "
                "is 1.")
    if len(lams) > 1 and math.isclose(got, lams[0] ** len(lams), rel_tol=1e-9):
        return ("you returned lambda_0^L; the lambdas may differ from unit to unit: multiply them "
                "all.")
    return "Eqn 8's direct term is (prod_{i=l}^{L-1} lambda_i) dE/dx_L: return that product."


def vanishing_depth(lam, eps, got, want):
    """Exercise 3b: the hint for a wrong depth `got` (`want` is right)."""
    if got == want - 1:
        return (f"{lam}**{got} = {lam ** got:.4g} is not yet below {eps:g}: round up (math.ceil), "
                f"not down, and "
                "make sure the inequality is strict.")
    return "solve lam**L < eps for L: L > log(eps) / log(lam) (log(lam) < 0 flips the inequality)."


def gated_not_identity(kv, Fx, x, got):
    """Exercise 4: the hint when k <= 0 does not give exactly u = x."""
    if close(got, torch.sigmoid(torch.tensor(kv, dtype=torch.float64)) * Fx + x):
        return "sigmoid(k) is never 0: use ReLU(k), which is exactly 0 for k <= 0."
    return "for k <= 0, ReLU(k) = 0 and u = x exactly: that is why the identity is easy to learn."


def gated(kv, Fx, x, got):
    """Exercise 4: which wrong gate does `got` (the output at k = kv) match?"""
    g = max(kv, 0.0)
    if close(got, g * Fx + (1 - g) * x):
        return ("you wrote Paper B's gated PLAIN layer, g f(x) + (1 - g) x. A gated residual layer "
                "keeps the shortcut: u = g(k) F(x) + x.")
    if close(got, kv * Fx + x):
        return "you used k itself; the gate is g(k) = ReLU(k)."
    if close(got, torch.sigmoid(torch.tensor(kv, dtype=torch.float64)) * Fx + x):
        return ("you used sigmoid(k). Paper B's gate is ReLU(k): sigmoid(k) is never 0, so the "
                "layer could never become exactly the identity.")
    return "u = torch.relu(self.k) * self.F(x) + x"


def truncation(unit, x, got, want, left_in_eval):
    """Exercise 5: the hint for a wrong truncation rate `got` of `unit` (in train mode, `want` is
    right)."""
    with torch.no_grad():
        unit.eval()
        y_eval = unit.shortcut(x, unit.residual(x))
        unit.train()
        r = unit.residual(x)
        y = unit.shortcut(x, r)
    if math.isclose(got, 1 - want, abs_tol=1e-9):
        return "you measured the fraction that survives; the truncated fraction is where y < 0."
    if math.isclose(got, float((r < 0).double().mean()), abs_tol=1e-9):
        return ("you looked at F(x) alone; f acts on the SUM y = h(x) + F(x) (use unit.shortcut(x, "
                "F(x))).")
    if math.isclose(got, float((x < 0).double().mean()), abs_tol=1e-9):
        return "you looked at the input x; f acts on y = h(x) + F(x)."
    if left_in_eval or math.isclose(got, float((y_eval < 0).double().mean()), abs_tol=1e-9):
        return ("you measured in eval mode (running statistics); measure with batch statistics: "
                "leave the unit in train mode, as at the start of training.")
    return ("compute y = unit.shortcut(x, unit.residual(x)) with the unit in train mode and return "
            "(y < 0).float().mean().")
