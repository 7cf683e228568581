"""The gates in sympy: the shortcut gates of Paper A (Fig 2c,d: h'(0) = 1 - sigma(b_g)) and Paper
B's argument (Savarese et al. 2016, Sec 2): a weight's distance from the identity point, a layer's,
and the gated layer u = g(k) f(x, W) + (1 - g(k)) x, exactly the identity for k <= 0."""
from __future__ import annotations

import sympy as sp

from .derivation import Derivation
from .notation import tex


def gate_shortcut_derivative():
    """h'(x) for shortcut-only / exclusive gating h(x) = (1 - g(x)) x, g = sigmoid(w x + b) (Fig
    2c,d), and its value at x = 0, 1 - sigmoid(b): returns (h, h', h'(0))."""
    xs, w, b = sp.symbols("x w_g b_g", real=True)
    g = 1 / (1 + sp.exp(-(w * xs + b)))
    hx = (1 - g) * xs
    d = sp.simplify(sp.diff(hx, xs))
    return hx, d, sp.simplify(d.subs(xs, 0))


def gate_shortcut_displayed() -> list:
    """Chapter 3's gate lines, as ("math", LaTeX) pairs printed by sympy: h(x), h'(x) written with
    g(x) (checked equal to sympy's derivative), and h'(0) = 1 / (1 + e^{b_g}) = 1 - sigma(b_g)."""
    xs, w, b = sp.symbols("x w_g b_g", real=True)
    hx, d, d0 = gate_shortcut_derivative()
    gx = sp.Function("g")(xs)
    with_g = 1 - gx - w * xs * gx * (1 - gx)
    sigmoid = 1 / (1 + sp.exp(-(w * xs + b)))
    if sp.simplify(with_g.subs(gx, sigmoid) - d) != 0:
        raise AssertionError("h'(x) written with g(x) differs from sympy's derivative")
    hp, hp0 = sp.Symbol("h'(x)"), sp.Symbol("h'(0)")
    return [("math", tex(sp.Eq(sp.Function("h")(xs), hx))),
            ("math", tex(sp.Eq(hp, with_g))),
            ("math", tex(sp.Eq(hp0, d0)))]


# ---- Paper B, Sec 2 ------------------------------------------------------------------------------
n, sigma, c = sp.symbols("n sigma c", positive=True)
w = sp.Symbol("w", real=True)


def paper_b_component_distance() -> Derivation:
    """E[(w - 0)^2] = sigma^2: a zero-mean weight's expected squared distance from the identity
    point W = 0 is the initialisation variance ("the distance is given by the distribution's
    variance")."""
    from sympy.stats import E as Ex, Normal, Uniform
    wn = Normal("w", 0, sigma)
    a = sp.sqrt(3) * sigma                                   # U(-a, a) has variance a^2/3 = sigma^2
    wu = Uniform("w_u", -a, a)
    en = sp.simplify(Ex((wn - 0) ** 2))
    eu = sp.simplify(Ex((wu - 0) ** 2))
    pdf = sp.exp(-w ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    integral_n = sp.Integral((w - 0) ** 2 * pdf, (w, -sp.oo, sp.oo))
    integral_u = sp.Integral((w - 0) ** 2 / (2 * a), (w, -a, a))
    d = sp.Symbol(r"\mathbb{E}[(w_{o} - 0)^2]")
    steps = [("Normal initialisation $w \\sim \\mathcal{N}(0, \\sigma^2)$ (He et al. 2015):",
              sp.Eq(d, integral_n)),
             ("sympy integrates:", sp.Eq(d, sp.simplify(integral_n.doit()))),
             ("Uniform initialisation with the same variance, $w \\sim U(-\\sqrt{3}\\sigma, "
              "\\sqrt{3}\\sigma)$:",
              sp.Eq(d, integral_u)),
             ("sympy integrates:", sp.Eq(d, sp.simplify(integral_u.doit()))),
             ("Any zero-mean law: $\\mathbb{E}[w^2] = \\mathrm{Var}(w) + \\mathbb{E}[w]^2 = "
              "\\sigma^2$. For comparison, the expected absolute distance (normal):",
              sp.Eq(sp.Symbol(r"\mathbb{E}|w_{o} - 0|"), sp.simplify(Ex(sp.Abs(wn)))))]
    checks = {"normal (sympy.stats)": sp.simplify(en - sigma ** 2) == 0,
              "normal (integral)": sp.simplify(integral_n.doit() - sigma ** 2) == 0,
              "uniform": sp.simplify(eu - sigma ** 2) == 0
              and sp.simplify(integral_u.doit() - sigma ** 2) == 0,
              "E|w| (normal) = sigma "
              "sqrt(2/pi)": sp.simplify(Ex(sp.Abs(wn)) - sigma * sp.sqrt(2 / sp.pi)) == 0}
    return Derivation("Paper B: component-wise distance", steps, sp.Eq(d, en), sp.Eq(d, sigma ** 2),
                      checks,
                      paper_label="Paper B's statement (\"the distance is given by the "
                                  "distribution's variance\"), in symbols:")


def paper_b_layer_distance(gain: int = 2) -> dict:
    """Total distance of an n x n layer W_o from W = 0 with variance sigma^2 = gain / n (He: gain
    2).

    Returns the three expectations, each as a function of n, and their orders as n -> oo:
    - squared Euclidean (sum of the component-wise distances): n^2 sigma^2 = gain * n -> O(n), the
      paper's claim;
    - Euclidean ||W||_F: at most sqrt(gain * n) (Jensen)                              -> O(sqrt n);
    - absolute sum |w_ij|: n^2 sigma sqrt(2/pi) (normal) -> O(n^{3/2}).
    """
    s2 = sp.Integer(gain) / n
    sq = sp.simplify(n ** 2 * s2)
    l2 = sp.sqrt(sq)
    l1 = sp.simplify(n ** 2 * sp.sqrt(s2) * sp.sqrt(2 / sp.pi))
    order = lambda e: sp.Order(e, (n, sp.oo))
    return {"sigma^2": s2, "squared_euclidean": sq, "euclidean_bound": l2, "absolute": l1,
            "orders": {"squared_euclidean": order(sq), "euclidean_bound": order(l2),
                       "absolute": order(l1)}}


def paper_b_layer_distance_displayed(gain: int = 2) -> list:
    """Chapter 5's lines for :func:`paper_b_layer_distance`, as ("math", LaTeX) pairs printed by
    sympy."""
    r = paper_b_layer_distance(gain)
    o = r["orders"]
    then = r"\quad\Rightarrow\quad "
    return [("math", r"\sigma^2 = " + tex(r["sigma^2"])),
            ("math",
             r"\mathbb{E}\Big[\sum_{ij} w_{ij}^2\Big] = n^2\sigma^2 = "
             + tex(r["squared_euclidean"])
             + then + tex(o["squared_euclidean"])),
            ("math",
             r"\mathbb{E}\,\|W_o\|_F \le \sqrt{\mathbb{E}\,\|W_o\|_F^2} = "
             + tex(r["euclidean_bound"])
             + then + tex(o["euclidean_bound"])),
            ("math",
             r"\mathbb{E}\Big[\sum_{ij} |w_{ij}|\Big] = n^2\sigma\sqrt{2/\pi} = "
             + tex(r["absolute"])
             + then + tex(o["absolute"]))]


def paper_b_gate() -> Derivation:
    """Paper B's gate: u = g(k) f(x, W) + (1 - g(k)) x with g = ReLU; k <= 0 gives u = x, and for a
    residual layer f = f_r + x it reduces to u = g(k) f_r(x, W) + x."""
    k = sp.Symbol("k", real=True)
    kneg = sp.Symbol("k", nonpositive=True)
    xs = sp.Symbol("x")
    fx, fr = sp.Function("f")(xs), sp.Function("f_r")(xs)
    g = lambda a: sp.Max(0, a)
    u = sp.Symbol("u")
    layer = sp.Eq(u, g(k) * fx + (1 - g(k)) * xs)
    ident = sp.Eq(u, layer.rhs.subs(k, kneg))
    res = sp.Eq(u, sp.expand(layer.rhs.subs(fx, fr + xs)))
    steps = [("The gated layer.", layer),
             ("$k \\le 0 \\Rightarrow g(k) = \\mathrm{ReLU}(k) = 0$: the layer is an identity.",
              ident),
             ("Residual layer $f = f_r + \\mathbf{x}$: the $(1-g(k))$ gate cancels.", res)]
    checks = {"k <= 0 gives u = x": sp.simplify(ident.rhs - xs) == 0,
              "k = 1 gives the ungated layer": sp.simplify(layer.rhs.subs(k, 1) - fx) == 0}
    return Derivation("Paper B: residual gate", steps, res, sp.Eq(u, g(k) * fr + xs), checks,
                      paper_label="Paper B's gated residual layer, typed from its text ($g = "
                                  "\\mathrm{ReLU}$):")
