"""The papers' notation in sympy: Paper A's symbols (He et al. 2016, Secs 2-3: x_l the input of the
l-th residual unit, W_l its weights, F the residual function, E the loss, lambda_l the shortcut
scale, h'_i the shortcut's derivative) and the LaTeX printer that writes sympy's expressions as the
paper does (partial derivatives, x_l + F, L - 1), breaking a long displayed equation into lines. The
derivations that use them: theory.py.
"""
from __future__ import annotations

import sympy as sp
from sympy.printing.latex import LatexPrinter

# ---- Paper A's symbols ---------------------------------------------------------------------------
l, L, i, j = sp.symbols("l L i j", integer=True)
x = sp.IndexedBase(r"\mathbf{x}")            # x[l] = x_l, the input of unit l
y = sp.IndexedBase(r"\mathbf{y}")            # y[l] = y_l, the output of the addition (Eqn 1)
W = sp.IndexedBase(r"\mathcal{W}")           # W[l] = W_l
lam = sp.IndexedBase(r"\lambda")             # lam[l] = lambda_l (Eqn 6)
hp = sp.IndexedBase(r"h'")                   # hp[i] = h'_i, derivative of the shortcut h_i
F = sp.Function(r"\mathcal{F}")              # residual function F(x_l, W_l)
Fhat = sp.Function(r"\hat{\mathcal{F}}")     # F with the lambdas absorbed (Eqn 7)
h = sp.Function("h")
f = sp.Function("f")
E = sp.Function(r"\mathcal{E}")
xl = sp.Symbol(r"\mathbf{x}_{l}")            # x_l as a variable to differentiate by (Eqns 5, 8)
dE_dxL = sp.Symbol(r"\frac{\partial \mathcal{E}}{\partial \mathbf{x}_{L}}")
dE_dxl = sp.Symbol(r"\frac{\partial \mathcal{E}}{\partial \mathbf{x}_{l}}")


class ResidualSum(sp.Function):
    r"""sum_{i=l}^{L-1} F(x_i, W_i) seen as a function of x_l (every x_i, i > l, depends on x_l by
    Eqn 3)."""
    def _latex(self, printer):
        return r"\sum_{i=l}^{L-1}\mathcal{F}(\mathbf{x}_{i},\mathcal{W}_{i})"


class ResidualSumHat(sp.Function):
    r"""sum_{i=l}^{L-1} Fhat(x_i, W_i) as a function of x_l (Eqn 8)."""
    def _latex(self, printer):
        return r"\sum_{i=l}^{L-1}\hat{\mathcal{F}}(\mathbf{x}_{i},\mathcal{W}_{i})"


class _Printer(LatexPrinter):
    """sympy's LaTeX printer in the paper's notation: partial derivatives, sums in sympy's "old"
    term order (x_l + F, 1 + e^{...}), except index arithmetic, which reads as the paper writes it:
    l + 1, L - 1."""

    def __init__(self, settings=None):
        super().__init__({"order": "old", **(settings or {})})

    def _print_Derivative(self, expr):  # always the paper's partial derivatives
        var = expr.variables[0]
        return r"\frac{\partial}{\partial %s}%s" % (self._print(var), self._print(expr.expr))

    # x_l, lambda_i, h'_i (sympy writes {h'}_{i}, which sets the i apart)
    def _print_Indexed(self, expr):
        return "%s_{%s}" % (self._print(expr.base.label),
                            ",".join(self._print(i) for i in expr.indices))

    def add_terms(self, expr):
        """The terms of a sum as (sign, LaTeX) pairs, in the order they are printed."""
        terms = self._as_ordered_terms(expr, order=self._settings["order"])
        if _is_index(expr):          # symbols first, the integer last: L - 1, i + 1
            terms = [t for t in terms if not t.is_Integer] + [t for t in terms if t.is_Integer]
        out = []
        for t in terms:
            sign = "-" if t.could_extract_minus_sign() else "+"
            t = -t if sign == "-" else t
            tex_t = self._print(t)
            out.append((sign, r"\left(%s\right)" % tex_t if self._needs_add_brackets(t) else tex_t))
        return out

    def _print_Add(self, expr, order=None):
        return _join(self.add_terms(expr))


def _is_index(expr) -> bool:
    """True for index arithmetic such as L - 1 or i + 1: one integer plus (negated) plain
    symbols."""
    ints = [t for t in expr.args if t.is_Integer]
    rest = [t for t in expr.args if not t.is_Integer]
    return len(ints) == 1 and all(t.is_Symbol or (-t).is_Symbol for t in rest)


def _join(terms) -> str:
    """'a + b - c' from [('+', 'a'), ('+', 'b'), ('-', 'c')] (a leading '-' stays, a leading '+'
    goes)."""
    s = ""
    for k, (sign, t) in enumerate(terms):
        s += (f"{sign} " if sign == "-" else "") + t if k == 0 else f" {sign} {t}"
    return s


def tex(expr) -> str:
    """LaTeX of a sympy expression in the paper's notation and term order (x_l + F, 1 + ..., L -
    1)."""
    return _Printer().doprint(expr)


# characters of sympy's plain-text form above which a displayed equation is broken into lines
WRAP = 200


def tex_display(expr, wrap: int = WRAP) -> str:
    """LaTeX for a displayed equation: an ``Eq`` whose right-hand side is a long sum is set one term
    per line (``aligned``), so that it fits a page's text column; anything else is :func:`tex`."""
    if not (isinstance(expr, sp.Eq) and expr.rhs.is_Add and len(sp.sstr(expr)) > wrap):
        return tex(expr)
    p = _Printer()
    terms = p.add_terms(expr.rhs)
    lines = [_join(terms[:1])] + [f"\\quad {sign} {t}" for sign, t in terms[1:]]
    return (r"\begin{aligned}" + p.doprint(expr.lhs) + " &= " + r" \\ &".join(lines)
            + r"\end{aligned}")
