"""The book's derivations (idmap_book.maths.theory) reproduce the papers' equations, and the
probes (idmap_book.maths.probes) measure what the equations say on real idmap_lib networks."""
import json
import math
import re
from pathlib import Path

import pytest
import sympy as sp
import torch

from idmap_book.evidence import claims
from idmap_book.maths import gate_theory as G, notation, theory as T
from idmap_book.page import repository

# ---- sympy: every derived equation equals the paper's --------------------------------------------

DERIVATIONS = ["eqn3", "eqn4", "eqn5", "eqn6", "eqn7", "eqn8", "shortcut_product",
               "paper_b_component",
               "paper_b_gate"]


@pytest.fixture(scope="module")
def derived():
    return {name: T.ALL[name]() for name in DERIVATIONS}


@pytest.mark.parametrize("name", DERIVATIONS)
def test_derivation_equals_paper(derived, name):
    d = derived[name]
    assert d.difference() == 0, f"{d.name}: derived - paper = {d.difference()}"
    failed = [k for k, ok in d.checks.items() if not ok]
    assert not failed, f"{d.name}: sympy checks failed: {failed}"
    assert d.steps and isinstance(T.tex(d.result), str)
    assert d.holds()


def test_inductions_check_base_and_step(derived):
    for name in ("eqn4", "eqn7"):
        checks = derived[name].checks
        assert any(k.startswith("base case") for k in checks)
        assert any("hypothesis" in k for k in checks)
        assert sum(k.startswith("unroll") for k in checks) >= 3


def test_a_wrong_equation_is_caught(derived):
    """The comparison is not vacuous: an off-by-one upper limit or a missing x_l term is
    detected."""
    d = derived["eqn4"]
    wrong = T.Derivation("wrong", [], d.result,
                         sp.Eq(T.x[T.L], T.x[T.l] + sp.Sum(T.F(T.x[T.i], T.W[T.i]),
                                                            (T.i, T.l, T.L))))
    assert wrong.difference() != 0
    wrong5 = T.Derivation("wrong", [], derived["eqn5"].result,
                          # no "1 +"
                          sp.Eq(T.dE_dxl, T.dE_dxL * sp.Derivative(T.ResidualSum(T.xl), T.xl)))
    assert wrong5.difference() != 0
    d7 = derived["eqn7"]
    wrong7 = T.Derivation("wrong", [], d7.result, T.eqn7_paper(),
                          paper_defs=lambda e: e.replace(lambda a: a.func == T.Fhat,
                                                         lambda a: T.F(*a.args)))
    assert wrong7.difference() != 0  # Fhat = F (lambdas not absorbed) is wrong


def test_eqn5_direct_term_is_one(derived):
    rhs = sp.expand(derived["eqn5"].result.rhs)
    assert rhs.coeff(T.dE_dxL).subs(sp.Derivative(T.ResidualSum(T.xl), T.xl), 0) == 1


def test_paper_b_layer_distance_orders():
    r = G.paper_b_layer_distance(gain=2)
    n = G.n
    assert sp.simplify(r["squared_euclidean"] - 2 * n) == 0          # n^2 * (2/n)
    assert r["orders"]["squared_euclidean"] == sp.Order(n, (n, sp.oo))  # the paper's O(n)
    assert r["orders"]["euclidean_bound"] == sp.Order(sp.sqrt(n), (n, sp.oo))
    assert r["orders"]["absolute"] == sp.Order(n ** sp.Rational(3, 2), (n, sp.oo))


# ---- what the pages display: every equation's LaTeX, as printed by sympy -------------------------
DISPLAYED = json.loads((Path(__file__).parent / "theory_displayed.json").read_text())


def _displayed_now():
    out = {name: [s for k, s in fn().displayed() if k == "math"] for name, fn in T.ALL.items()}
    out["gate_shortcut"] = [s for _, s in G.gate_shortcut_displayed()]
    out["paper_b_layer_distance"] = [s for _, s in G.paper_b_layer_distance_displayed()]
    return out


def test_every_displayed_equation_is_the_reviewed_string():
    """Each equation chapters 2, 3 and 5 display, exactly as reviewed
    (tests/theory_displayed.json)."""
    now = _displayed_now()
    assert set(now) == set(DISPLAYED)
    for name, lines in now.items():
        assert lines == DISPLAYED[name], f"{name}: the displayed LaTeX changed"


def test_gate_lines_read_as_the_paper_writes_them():
    h, hp, hp0 = [s for _, s in G.gate_shortcut_displayed()]
    # = 1 - sigma(b_g), never 1/(e + 1^{b_g})
    assert hp0 == r"h'(0) = \frac{1}{1 + e^{b_{g}}}"
    assert r"\frac{1}{1 + e^{- b_{g} - w_{g} x}}" in h
    assert "e + 1" not in h + hp + hp0


def test_index_arithmetic_reads_l_plus_1_and_sums_keep_1_first():
    assert T.tex(T.x[T.l
                     + 1]) == r"\mathbf{x}_{l + 1}" and T.tex(T.x[T.L - 1]) == r"\mathbf{x}_{L - 1}"
    assert T.tex(sp.Product(T.lam[T.j],
                            (T.j, T.i + 1, T.L - 1))) == r"\prod_{j=i + 1}^{L - 1} \lambda_{j}"
    b = sp.Symbol("b")
    assert T.tex(1 / (1 + sp.exp(b))) == r"\frac{1}{1 + e^{b}}"
    assert T.tex(1 + sp.exp(-b)) == r"1 + e^{- b}"
    assert T.tex(T.hp[T.i]) == "h'_{i}"


def test_long_equations_are_set_on_several_lines():
    eq7 = T.eqn7()
    long_steps = [T.tex_display(e) for _, e in eq7.steps if len(sp.sstr(e)) > notation.WRAP]
    assert (long_steps and all(s.startswith(r"\begin{aligned}") and r"\\ &\quad + " in s
                               for s in long_steps))
    assert not T.tex_display(T.eqn3().result).startswith(r"\begin")


def test_no_chapter_prints_latex_itself():
    """Chapters display math through idmap_book.maths.theory (sympy's printer), never sp.latex
    or a regex on LaTeX."""
    for nb in sorted((Path(__file__).parents[1] / "book").glob("0[1-5]_*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                         if c["cell_type"] == "code")
        assert "sp.latex(" not in code and "re.sub(" not in code, nb.name


def test_gate_shortcut_derivative_at_zero():
    _, _, at0 = G.gate_shortcut_derivative()
    b = sp.Symbol("b_g", real=True)
    assert sp.simplify(at0 - (1 - 1 / (1 + sp.exp(-b)))) == 0
    assert abs(float(at0.subs(b, -6)) - 0.997527) < 1e-5


# ---- probes on real idmap_lib networks -----------------------------------------------------------
import json
from pathlib import Path

import torch.nn as nn

import idmap_lib as im
from idmap_book.maths import probes


def _stack(n, unit="full_preact", shortcut="identity", channels=4, **opts):
    torch.manual_seed(0)
    return nn.Sequential(*[im.make_unit(unit, shortcut, channels, channels, **opts)
                           for _ in range(n)]).double()


def test_eqn5_holds_on_a_deep_stack():
    """Eqn 5 measured: dE/dx_l = dE/dx_L + (VJP through the residual branches), three separate
    autograd runs."""
    stack, x = _stack(60), probes.probe_input(4, 8, 3)
    for l, L in ((0, 60), (10, 50)):
        r = probes.eqn5_check(stack, x, l=l, L=L)
        assert r["relative_error"] < 1e-12
        assert r["norms"]["through"] > 0 and r["norms"]["direct"] > 0


def test_eqn5_holds_inside_a_cifar_resnet_stage():
    torch.manual_seed(0)
    net = im.cifar_resnet(20, unit="full_preact").double()
    # units 1, 2: identity h and f
    r = probes.eqn5_check(net, probes.probe_input(3, 16, 2), l=1, L=3)
    assert r["relative_error"] < 1e-12


def test_eqn5_check_refuses_units_without_identity_f():
    with pytest.raises(ValueError, match="identity"):
        probes.eqn5_check(_stack(3, unit="original"), probes.probe_input(4, 8, 2))
    with pytest.raises(ValueError, match="l < L"):
        probes.eqn5_check(_stack(3), probes.probe_input(4, 8, 2), l=2, L=2)


def test_zero_residuals_leaves_exactly_the_direct_term():
    stack, x = _stack(40), probes.probe_input(4, 8, 2)
    im.zero_residuals(stack)
    r = probes.eqn5_check(stack, x)
    # gradient at the first input == at the last output
    assert torch.equal(r["full"], r["direct"])
    assert r["norms"]["through"] == 0.0
    g = probes.unit_gradient_norms(stack, x)
    assert torch.equal(g, torch.full_like(g, float(g[-1])))


def test_lambda_stack_after_zero_residuals_scales_by_lambda_power():
    depth = 40
    k = torch.arange(depth + 1, dtype=torch.float64)
    for lam, r in probes.gradient_decay([0.8, 1.25], depth=depth, channels=2, size=4, batch=2,
                                        zero=True).items():
        assert torch.allclose(r, lam ** k, rtol=1e-12, atol=0)


def test_lambda_one_keeps_the_direct_term_and_more():
    r = probes.gradient_decay([1.0], depth=30, channels=2, size=4, batch=2)[1.0]
    # with F at init the gradient does not vanish at lambda = 1
    assert r[0] == 1.0 and torch.all(r > 0.5)


def test_truncation_rate_is_zero_when_f_is_identity():
    torch.manual_seed(0)
    net = im.cifar_resnet(20, unit="full_preact")
    rates = probes.truncation_rates(net, probes.probe_input(3, 16, 2, dtype=torch.float32))
    assert rates.shape == (9,) and torch.all(rates == 0)


def test_truncation_rate_matches_a_hand_computation():
    unit = im.make_unit("original", "identity", 4, 4).double()
    x = torch.relu(probes.probe_input(4, 8, 4))     # x_l >= 0, as after a previous ReLU
    rate = probes.truncation_rates(nn.Sequential(unit), x)
    unit.train()
    with torch.no_grad():
        y = unit.shortcut(x, unit.residual(x))     # y_l = x_l + F(x_l), Eqn 1
    assert abs(float(rate[0]) - float((y < 0).double().mean())) < 1e-12
    assert 0 < float(rate[0]) < 0.5


def test_probes_do_not_change_the_model():
    torch.manual_seed(0)
    net = im.cifar_resnet(20, unit="original").eval()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    probes.truncation_rates(net, probes.probe_input(3, 16, 2, dtype=torch.float32))
    probes.unit_gradient_norms(net, probes.probe_input(3, 16, 2, dtype=torch.float32))
    assert not net.training and not any(m.training for m in net.modules())
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_direct_path_survival():
    x = probes.probe_input(4, 8, 2)
    assert torch.all(probes.direct_path_survival(_stack(10), x) == 1)
    s = probes.direct_path_survival(_stack(20, unit="original"), torch.relu(x))
    assert torch.all(s[:-1] <= s[1:]) and 0 < float(s[0]) < float(s[-1]) < 1


def test_distance_to_identity_and_gates():
    torch.manual_seed(0)
    unit = im.make_unit("full_preact", "identity", 64, 64)
    d = probes.distance_to_identity(nn.Sequential(unit))[0]
    w = torch.cat([m.weight.detach().flatten() for m in unit.residual
                   if isinstance(m, nn.Conv2d)]).double()
    assert d["params"] == 2 * 9 * 64 * 64 and abs(d["squared"] - float((w ** 2).sum())) < 1e-9
    assert abs(d["squared"] / (4 * 64) - 1) < 0.05            # He (fan_out): 2 * 9C^2 * 2/(9C) = 4C
    assert d["gate_distance"] is None
    g = probes.distance_to_identity(im.mlp("gresnet", d=4, width=30))
    assert [u["gate_distance"] for u in g] == [1.0, 1.0]      # k starts at 1


def test_layer_distance_grows_like_n():
    for n in (256, 1024):
        m = probes.layer_distance(n, init="he")
        assert abs(m["squared"] / (2 * n) - 1) < 0.02
        assert abs(m["absolute"] / (2 * n ** 1.5 / math.sqrt(math.pi)) - 1) < 0.02
    with pytest.raises(ValueError):
        probes.layer_distance(8, init="glorot")


def test_gate_at_k_le_0_is_an_exact_identity():
    torch.manual_seed(0)
    net = im.mlp("gresnet", d=4, width=20)
    with torch.no_grad():
        for k in im.gates(net):
            k.fill_(-0.25)
    pairs = probes.unit_io(net, torch.rand(6, 1, 28, 28))
    assert len(pairs) == 2 and all(torch.equal(a, b) for a, b in pairs)


def test_set_shortcut_scale_needs_constant_scaling():
    with pytest.raises(ValueError, match="constant_scaling"):
        probes.set_shortcut_scale(_stack(2), 0.5)


# ---- the chapters: the shared setup cell, no stored outputs --------------------------------------
CHAPTERS = ["02_propagation", "03_scaled_shortcuts", "04_relu_truncation", "05_learning_identity"]
SETUP = repository.setup_cell(repository.repository_url())  # the one URL setting (_config.yml)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_notebook_shape(chapter):
    nb = json.loads((Path(__file__).parents[1] / "book" / f"{chapter}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "".join(code[0]["source"]).strip() == SETUP
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    titles = [ln for c in nb["cells"] if c["cell_type"] == "markdown"
              for ln in "".join(c["source"]).splitlines()
              if ln.startswith("# ")]
    assert len(titles) == 1


# Numbers a page measures are written by the page (idmap_book.say with f-strings), never typed
# in its prose: typed powers of ten, long decimals and "about half" are how measured numbers crept
# in.
TYPED_MEASUREMENT = (re.compile(r"10\^\{?-?\d|2\^\{?-\d|\\cdot\s*10|\d\.\d{3,}|about half|orders "
                                r"of magnitude"))
CITED = re.compile(r"arXiv:\d{4}\.\d{4,5}")  # a paper's identifier, not a measurement


@pytest.mark.parametrize("chapter", ["01_residual_units"] + CHAPTERS + list(claims.chapters())
                         + ["11_reproductions"])
def test_prose_types_no_measured_number(chapter):
    nb = json.loads((Path(__file__).parents[1] / "book" / f"{chapter}.ipynb").read_text())
    typed = [ln for c in nb["cells"] if c["cell_type"] == "markdown"
             for ln in "".join(c["source"]).splitlines()
             # the paper's tables quoted
             if not ln.startswith("|") and TYPED_MEASUREMENT.search(CITED.sub("", ln))]
    assert (not typed), (f"{chapter}: numbers typed in prose (compute them in the "
                         f"page):\n") + "\n".join(typed)
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "say(" in "".join(c["source"])]
    assert all("remove-input" in c["metadata"].get("tags", [])
               for c in code), "prose cells show their code"
