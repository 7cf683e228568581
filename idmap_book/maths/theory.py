"""Sympy derivations of Paper A's Eqns 3-8 (He et al. 2016, Secs 2-3); ``ALL`` lists them with
Paper B's (gate_theory.py).

Each ``eqn*`` / ``paper_b_*`` function returns a :class:`Derivation`: the steps (each a sympy ``Eq``
with the reason for it), the derived ``result``, the equation typed as the paper states it
(``paper``) and the checks sympy ran on the way (base case and inductive step of an induction, ...).
``Derivation.holds()`` is True when every check passed and ``simplify(result - paper) == 0``.
Symbols follow Paper A: x_l is the input of the l-th residual unit, W_l its weights, F the residual
function, E the loss, lambda_l the shortcut scale.
"""
from __future__ import annotations

import sympy as sp

# (theory.show_displayed: the chapters' way to show a list of lines)
from .derivation import Derivation, chain, same, show_displayed  # noqa: F401
from .gate_theory import paper_b_component_distance, paper_b_gate
# (theory.x, theory.tex: the symbols the derivations use)
from .notation import (E, F, Fhat, L, ResidualSum, ResidualSumHat, W, dE_dxL,  # noqa: F401
                       dE_dxl, f, h, hp, i, j, l, lam, tex, tex_display, x, xl, y)


# ---- Paper A, Sec 2 ------------------------------------------------------------------------------
def eqn3() -> Derivation:
    """Eqn 3, x_{l+1} = x_l + F(x_l, W_l), from Eqns 1-2 with h and f identity mappings."""
    z = sp.Symbol("z")
    eq1 = sp.Eq(y[l], h(x[l]) + F(x[l], W[l]))
    eq2 = sp.Eq(x[l + 1], f(y[l]))
    sub = sp.Eq(x[l + 1], eq2.rhs.subs(y[l], eq1.rhs))
    ident = {h: sp.Lambda(z, z), f: sp.Lambda(z, z)}
    res = sp.Eq(x[l + 1], sub.rhs.subs(ident))
    paper = sp.Eq(x[l + 1], x[l] + F(x[l], W[l]))
    steps = [("Eqn 1: the unit adds the shortcut $h$ and the residual function.", eq1),
             ("Eqn 2: $f$ after the addition.", eq2),
             ("Substitute Eqn 1 into Eqn 2.", sub),
             ("Identity mappings: $h(\\mathbf{x}) = \\mathbf{x}$ and $f(\\mathbf{y}) = "
              "\\mathbf{y}$.", res)]
    return Derivation("Eqn 3", steps, res, paper)


def _step3(k):
    """Eqn 3 at unit k: x_{k+1} = x_k + F(x_k, W_k)."""
    return sp.Eq(x[k + 1], x[k] + F(x[k], W[k]))


def eqn4() -> Derivation:
    """Eqn 4, x_L = x_l + sum_{i=l}^{L-1} F(x_i, W_i), for every L > l, by induction on L."""
    t = F(x[i], W[i])
    claim = lambda M: sp.Eq(x[M], x[l] + sp.Sum(t, (i, l, M - 1)))
    base = claim(l + 1)
    base_ok = same(base.rhs.doit(), _step3(l).rhs)
    s = [("Eqn 3 at unit $L$.", _step3(L)),
         ("Induction hypothesis (Eqn 4 for $L$) replaces $\\mathbf{x}_L$.",
          sp.Eq(x[L + 1], claim(L).rhs + F(x[L], W[L]))),
         ("Write the new term as a one-term sum.",
          sp.Eq(x[L + 1], x[l] + sp.Sum(t, (i, l, L - 1)) + sp.Sum(t, (i, L, L)))),
         ("Adjacent sums merge: Eqn 4 for $L+1$.", claim(L + 1))]
    checks = {"base case L = l+1 equals Eqn 3": base_ok,
              "step 1 -> 2 uses the hypothesis": same(s[1][1].rhs,
                                                      _replace_lead(s[0][1].rhs, x[L],
                                                                    claim(L).rhs)),
              "one-term sum equals F(x_L, W_L)": same(s[2][1].rhs.doit(), s[1][1].rhs)}
    checks.update(chain("inductive step", s[1:]))
    checks.update(unroll_checks(eqn=4))
    steps = [("Base case $L = l+1$: the sum has the single term $i = l$, which is Eqn 3.",
              base)] + s
    paper = sp.Eq(x[L], x[l] + sp.Sum(F(x[i], W[i]), (i, l, L - 1)))
    return Derivation("Eqn 4", steps, claim(L), paper, checks)


def unroll(n: int, scaled: bool = False):
    """x_{l+n} by applying Eqn 3 (or Eqn 6 if scaled) n times to the leading x term (concrete
    check)."""
    e = x[l + n]
    for k in range(n - 1, -1, -1):
        step = (lam[l + k] * x[l + k] if scaled else x[l + k]) + F(x[l + k], W[l + k])
        e = _replace_lead(e, x[l + k + 1], step)
    return e


def _replace_lead(e, old, new):
    """Replace the bare term ``old`` (not the ones inside F's arguments) in a sum of terms."""
    return sp.expand(sum((a.xreplace({old: new}) if a.has(old) and not a.has(F) else a)
                         for a in sp.Add.make_args(e)))


def unroll_checks(eqn: int, upto: int = 5) -> dict:
    """Eqn 4 (or 7) against 1..upto concrete unrolls of Eqn 3 (or 6)."""
    out = {}
    for n in range(1, upto + 1):
        if eqn == 4:
            closed = x[l] + sp.Sum(F(x[i], W[i]), (i, l, l + n - 1))
        else:
            closed = (sp.Product(lam[j], (j, l, l + n - 1)) * x[l]
                      + sp.Sum(sp.Product(lam[j], (j, i + 1, l + n - 1)) * F(x[i], W[i]),
                               (i, l, l + n - 1)))
        out[f"unroll L-l={n}"] = sp.expand(closed.doit() - unroll(n, scaled=(eqn == 7))) == 0
    return out


def eqn5() -> Derivation:
    """Eqn 5, the gradient at x_l = gradient at x_L times (1 + d/dx_l sum F): the chain rule on Eqn
    4."""
    S = ResidualSum(xl)
    xL = xl + S                                  # Eqn 4, with every x_i (i > l) a function of x_l
    raw = sp.diff(E(xL), xl)                     # sympy applies the chain rule
    subs = raw.atoms(sp.Subs)
    res_rhs = raw.xreplace({s_: dE_dxL for s_ in subs})
    steps = [("Eqn 4 makes $\\mathbf{x}_L$ a function of $\\mathbf{x}_l$.",
              sp.Eq(sp.Symbol(r"\mathbf{x}_{L}"), xL)),
             ("Chain rule (computed by sympy): $\\partial\\mathcal{E}/\\partial \\mathbf{x}_l = "
              "\\partial\\mathcal{E}/\\partial \\mathbf{x}_L \\cdot \\partial "
              "\\mathbf{x}_L/\\partial \\mathbf{x}_l$; the $\\mathbf{x}_l$ term of Eqn 4 "
              "differentiates to the 1.", sp.Eq(dE_dxl, res_rhs))]
    direct, through = dE_dxL, sp.expand(res_rhs) - dE_dxL
    steps.append(("Split: the direct term, which reaches $\\mathbf{x}_l$ without passing any "
                  "weight layer, plus the term through the weight layers.",
                  sp.Eq(dE_dxl, sp.Add(direct, through, evaluate=False))))
    paper = sp.Eq(dE_dxl, dE_dxL * (1 + sp.Derivative(ResidualSum(xl), xl)))
    checks = {"chain rule left exactly one Subs (dE/dx_L)": len(subs) == 1,
              "d x_L / d x_l = 1 + d/dx_l sum F": same(sp.diff(xL, xl), 1 + sp.Derivative(S, xl)),
              "direct term is dE/dx_L (coefficient 1)": sp.expand(res_rhs).coeff(dE_dxL).subs(
                  sp.Derivative(S, xl), 0) == 1}
    return Derivation("Eqn 5", steps, sp.Eq(dE_dxl, res_rhs), paper, checks)


# ---- Paper A, Sec 3 ------------------------------------------------------------------------------
def eqn6() -> Derivation:
    """Eqn 6, x_{l+1} = lambda_l x_l + F(x_l, W_l): Eqns 1-2 with h(x_l) = lambda_l x_l and f
    identity."""
    z = sp.Symbol("z")
    sub = sp.Eq(x[l + 1], f(h(x[l]) + F(x[l], W[l])))
    res = sp.Eq(x[l + 1], sub.rhs.subs({h: sp.Lambda(z, lam[l] * z), f: sp.Lambda(z, z)}))
    steps = [("Eqns 1-2 combined.", sub),
             ("$h(\\mathbf{x}_l) = \\lambda_l \\mathbf{x}_l$, $f$ identity.", res)]
    return Derivation("Eqn 6", steps, res, sp.Eq(x[l + 1], lam[l] * x[l] + F(x[l], W[l])))


def _eqn7_unhatted(M):
    Pi = lambda a, b: sp.Product(lam[i], (i, a, b))      # outer product: index i, as in the paper
    P = lambda a, b: sp.Product(lam[j], (j, a, b))
    return sp.Eq(x[M], Pi(l, M - 1) * x[l] + sp.Sum(P(i + 1, M - 1) * F(x[i], W[i]), (i, l, M - 1)))


def fhat_definition(M=L):
    """Fhat(x_i, W_i) = (prod_{j=i+1}^{L-1} lambda_j) F(x_i, W_i): the F that absorbs the
    scalars."""
    return lambda e: sp.Product(lam[j], (j, e.args[0].indices[0] + 1, M - 1)) * F(*e.args)


def eqn7() -> Derivation:
    """Eqn 7, x_L = (prod lambda_i) x_l + sum Fhat(x_i, W_i), for every L > l, by induction on L."""
    P = lambda a, b: sp.Product(lam[j], (j, a, b))
    Pi = lambda a, b: sp.Product(lam[i], (i, a, b))
    t = F(x[i], W[i])
    claim = _eqn7_unhatted
    base = claim(l + 1)
    eq6L = sp.Eq(x[L + 1], lam[L] * x[L] + F(x[L], W[L]))
    s = [
        ("Eqn 6 at unit $L$.", eq6L),
        (
            "Induction hypothesis replaces $\\mathbf{x}_L$.",
            sp.Eq(x[L + 1], lam[L] * claim(L).rhs + F(x[L], W[L])),
        ),
        (
            "Write $\\lambda_L$ as a one-factor product and the new term as a one-term sum (empty "
            "product = 1).",
            sp.Eq(
                x[L + 1],
                Pi(L, L) * Pi(l, L - 1) * x[l]
                + P(L, L) * sp.Sum(P(i + 1, L - 1) * t, (i, l, L - 1))
                + sp.Sum(P(i + 1, L) * t, (i, L, L)),
            ),
        ),
        (
            "Move $\\lambda_L$ into the sum and merge the products.",
            sp.Eq(
                x[L + 1],
                Pi(l, L) * x[l]
                + sp.Sum(P(i + 1, L) * t, (i, l, L - 1))
                + sp.Sum(P(i + 1, L) * t, (i, L, L)),
            ),
        ),
        ("Adjacent sums merge: the claim for $L+1$.", claim(L + 1)),
    ]
    checks = {"base case L = l+1 equals Eqn 6": same(base.rhs.doit(), eqn6().result.rhs),
              "step 1 -> 2 uses the hypothesis": same(s[1][1].rhs,
                                                      _replace_lead(s[0][1].rhs, x[L],
                                                                    claim(L).rhs)),
              "one-factor product and one-term sum": same(s[2][1].rhs.doit(), s[1][1].rhs)}
    checks.update(chain("inductive step", s[2:]))
    checks.update(unroll_checks(eqn=7))
    hat = sp.Eq(x[L], Pi(l, L - 1) * x[l] + sp.Sum(Fhat(x[i], W[i]), (i, l, L - 1)))
    steps = ([("Base case $L = l+1$ (the product over $j$ from $l+1$ to $l$ is empty, = 1).", base)]
             + s
             + [("Let $\\hat{\\mathcal{F}}(\\mathbf{x}_i,\\mathcal{W}_i) = "
                 "(\\prod_{j=i+1}^{L-1}\\lambda_j)\\mathcal{F}(\\mathbf{x}_i,\\mathcal{W}_i)$ "
                 "absorb the scalars.", hat)])
    checks["Fhat substituted back gives the derived form"] = same(
        hat.rhs.replace(lambda e: e.func == Fhat, fhat_definition()), claim(L).rhs)
    return Derivation("Eqn 7", steps, claim(L), eqn7_paper(), checks,
                      paper_defs=lambda e: e.replace(lambda a: a.func == Fhat, fhat_definition()))


def eqn7_paper() -> sp.Eq:
    """Eqn 7 as printed (with Fhat)."""
    return sp.Eq(x[L], sp.Product(lam[i], (i, l,
                                           L - 1)) * x[l] + sp.Sum(Fhat(x[i], W[i]), (i, l, L - 1)))


def eqn8() -> Derivation:
    """Eqn 8: dE/dx_l = dE/dx_L ((prod lambda_i) + d/dx_l sum Fhat): the chain rule on Eqn 7."""
    Lam = sp.Product(lam[i], (i, l, L - 1))
    S = ResidualSumHat(xl)
    xL = Lam * xl + S
    raw = sp.diff(E(xL), xl)
    subs = raw.atoms(sp.Subs)
    res_rhs = raw.xreplace({s_: dE_dxL for s_ in subs})
    steps = [("Eqn 7 makes $\\mathbf{x}_L$ a function of $\\mathbf{x}_l$.",
              sp.Eq(sp.Symbol(r"\mathbf{x}_{L}"), xL)),
             ("Chain rule (sympy): the first term now carries $\\prod\\lambda_i$ instead of 1.",
              sp.Eq(dE_dxl, res_rhs))]
    paper = sp.Eq(dE_dxl, dE_dxL * (Lam + sp.Derivative(ResidualSumHat(xl), xl)))
    checks = {
        "chain rule left exactly one Subs": len(subs) == 1,
        "lambda = 1 gives back Eqn 5": same(
            res_rhs.subs(Lam, 1).subs(ResidualSumHat(xl), ResidualSum(xl)).doit(), eqn5().result.rhs
        ),
    }
    return Derivation("Eqn 8", steps, sp.Eq(dE_dxl, res_rhs), paper, checks)


def shortcut_derivative_product() -> Derivation:
    """Sec 3: for a general shortcut h the first term of Eqn 8 becomes prod_{i=l}^{L-1} h'_i
    (induction on L).

    Along the shortcut path alone, x_{i+1} = h_i(x_i); G_L(x_l) denotes that composition up to
    x_L."""
    G = sp.Function("G_L")
    hL = sp.Function("h_L")
    base_raw = sp.diff(sp.Function("h_l")(xl), xl)
    step_raw = sp.diff(hL(G(xl)), xl)                   # chain rule, by sympy
    derivs = [d for d in step_raw.atoms(sp.Derivative, sp.Subs) if d.has(hL)]   # h_L'(G_L(x_l))
    step_sub = step_raw.xreplace({d: hp[L] for d in derivs}).subs(sp.Derivative(G(xl), xl),
                                                                  sp.Product(hp[i], (i, l, L - 1)))
    lhs1 = sp.Symbol(r"\frac{\partial \mathbf{x}_{L+1}}{\partial \mathbf{x}_{l}}")
    step_res = sp.Eq(lhs1, sp.Product(hp[i], (i, l, L)))
    first = (sp.Symbol(r"\frac{\partial \mathbf{x}_{L}}{\partial "
                       r"\mathbf{x}_{l}}\Big|_{\mathcal{F}=0}"))
    res = sp.Eq(first, sp.Product(hp[i], (i, l, L - 1)))
    steps = [("Base: one unit, $\\partial h_l(\\mathbf{x}_l)/\\partial \\mathbf{x}_l = h'_l = "
              "\\prod_{i=l}^{l} h'_i$.",
              sp.Eq(sp.Symbol(r"\frac{\partial \mathbf{x}_{l+1}}{\partial \mathbf{x}_{l}}"),
                    base_raw)),
             ("Step: along the shortcut path $\\mathbf{x}_{L+1} = h_L(G_L(\\mathbf{x}_l))$; chain "
              "rule (sympy).",
              sp.Eq(lhs1, step_raw)),
             ("Hypothesis $G_L' = \\prod_{i=l}^{L-1} h'_i$; write $h'_L$ for $h_L'(G_L)$.",
              sp.Eq(lhs1, step_sub)),
             ("Products merge: the claim for $L+1$.", step_res),
             ("So for every $L > l$ the first term of Eqn 8 (the path through the shortcuts alone) "
              "is", res)]
    checks = {"base equals prod_{i=l}^{l} h'_i": same(sp.Product(hp[i], (i, l, l)).doit(), hp[l]),
              "chain rule produced h_L'(G) * G'": len(derivs) == 1
              and step_raw.has(sp.Derivative(G(xl), xl)),
              "step merges to prod_{i=l}^{L} "
              "h'_i": same(step_sub.subs(hp[L], sp.Product(hp[i], (i, L, L))), step_res.rhs),
              "h_i = lambda_i x gives Eqn 8's first term": same(
                  sp.Product(sp.diff(lam[i] * xl, xl), (i, l, L - 1)),
                  sp.Product(lam[i], (i, l, L - 1)))}
    return Derivation("Eqn 8, first term for a general h", steps, res,
                      sp.Eq(first, sp.Product(hp[i], (i, l, L - 1))),
                      checks)


ALL = {"eqn3": eqn3, "eqn4": eqn4, "eqn5": eqn5, "eqn6": eqn6, "eqn7": eqn7, "eqn8": eqn8,
       "shortcut_product": shortcut_derivative_product,
       "paper_b_component": paper_b_component_distance,
       "paper_b_gate": paper_b_gate}
