"""The result object of the sympy derivations (theory.py): a :class:`Derivation` holds the steps,
the derived result, the equation as the paper prints it and the checks sympy ran; ``normal`` and
``same`` let sympy compare sums and products it would otherwise evaluate too early."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import sympy as sp
from sympy.simplify.simplify import product_simplify

from .notation import tex_display


def _as_code(name: str) -> str:
    """A check's name as the page shows it: in code font where it writes symbols the ASCII way
    (``prod_{i=l}^{L}``), which would otherwise read as TeX that failed to render."""
    return f"`{name}`" if re.search(r"[_^{}\\]", name) else name

@dataclass
class Derivation:
    name: str
    steps: list            # [(reason, sympy Eq or expr)]
    result: sp.Eq
    paper: sp.Eq
    checks: dict = field(default_factory=dict)   # name -> bool, checks sympy ran on the way
    # expands the paper's shorthand (e.g. Fhat) before comparing
    paper_defs: object = None
    paper_label: str = ""                        # how the paper's side is introduced in show()

    def difference(self):
        """(derived rhs - paper rhs) simplified; 0 when the derivation reproduces the paper."""
        paper = self.paper.rhs if self.paper_defs is None else self.paper_defs(self.paper.rhs)
        if sp.simplify(self.result.lhs - self.paper.lhs) != 0:
            return sp.nan
        return sp.simplify(normal(self.result.rhs) - normal(paper))

    def holds(self) -> bool:
        return all(self.checks.values()) and self.difference() == 0

    def displayed(self) -> list:
        """What :meth:`show` puts on the page, in order: ("text", Markdown) and ("math", LaTeX)
        pairs."""
        out = [("text", f"**{self.name}**")]
        for why, e in self.steps:
            out += [("text", why), ("math", tex_display(e))]
        out += [("text", self.paper_label or f"The paper's {self.name.split(':')[0]}, as printed:"),
                ("math", tex_display(self.paper))]
        ok = "".join(f"\n- {_as_code(k)}: {'✓' if v else '✗ FAILED'}"
                     for k, v in self.checks.items())
        out.append(("text", f"sympy: `simplify(derived − paper) = {self.difference()}`"
                            + (f"\n\nChecks sympy ran on the way:{ok}" if ok else "")))
        return out

    def show(self):
        """Display the steps as math (in a notebook)."""
        show_displayed(self.displayed())


def show_displayed(items):
    """Display ("text", Markdown) / ("math", LaTeX) pairs in a notebook."""
    from IPython.display import Markdown, Math, display
    for kind, s in items:
        display(Math(s) if kind == "math" else Markdown(s))


# ---- helpers: let sympy merge the sums/products it would otherwise evaluate too early ------------
def _into_sums(e):
    """c * Sum(a_i) -> Sum(c * a_i) when c does not depend on the summation index (linearity)."""
    def pull(m):
        sums = [a for a in m.args if isinstance(a, sp.Sum)]
        if len(sums) != 1:
            return m
        s = sums[0]
        rest = sp.Mul(*[a for a in m.args if a is not s])
        if rest.has(*s.variables):
            return m
        return sp.Sum(rest * s.function, *s.limits)
    return e.replace(lambda a: a.is_Mul and any(isinstance(b, sp.Sum) for b in a.args), pull)


def normal(e):
    """Push constants into sums and merge adjacent products (lambda_L * prod_{j=m}^{L-1} =
    prod_{j=m}^{L})."""
    e = _into_sums(sp.expand(e))
    return e.replace(lambda a: a.is_Mul and a.has(sp.Product), product_simplify)


def same(a, b) -> bool:
    """True when sympy shows a == b (plain simplify, or after :func:`normal`)."""
    if isinstance(a, sp.Eq):
        return same(a.lhs, b.lhs) and same(a.rhs, b.rhs)
    return sp.simplify(a - b) == 0 or sp.simplify(normal(a) - normal(b)) == 0


def chain(name, steps):
    """Check that every step's right-hand side equals the previous one's (each check done by
    sympy)."""
    return {f"{name}: line {k + 1} = line {k + 2}": same(steps[k][1].rhs, steps[k + 1][1].rhs)
            for k in range(len(steps) - 1)}
