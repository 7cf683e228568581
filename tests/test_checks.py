"""The exercise graders (idmap_lib.checks) pass the reference solutions and catch typical wrong answers
with the right hint. (The editions and batch grading: test_editions.py.)"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from idmap_lib import checks



@pytest.fixture(autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def fails(check, answer, *hint_words):
    """`check(answer)` raises AssertionError whose message contains every one of `hint_words`."""
    with pytest.raises(AssertionError) as e:
        check(answer)
    flat = " ".join(str(e.value).split())  # messages are wrapped: compare with whitespace collapsed
    for w in hint_words:
        assert w in flat, f"expected {w!r} in the message:\n{e.value}"
    assert all(len(line) <= checks.WIDTH for line in str(e.value).splitlines())
    return str(e.value)


# ---- exercise 1 ---------------------------------------------------------------------------------------------

class PreAct(nn.Module):
    """Reference solution: Paper A Fig 4(e)."""

    order = "preact"

    def __init__(self, channels, bias=False):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)

    def forward(self, x):
        r = torch.relu
        if self.order == "post":  # Fig 4(a) with the same layers
            return r(x + self.bn2(self.conv2(r(self.bn1(self.conv1(x))))))
        if self.order == "relu_after_add":
            return r(x + self.conv2(r(self.bn2(self.conv1(r(self.bn1(x)))))))
        if self.order == "no_shortcut":
            return self.conv2(r(self.bn2(self.conv1(r(self.bn1(x))))))
        if self.order == "functional_bn":  # always batch statistics: right in train mode, wrong in eval
            bn = lambda m, t: F.batch_norm(t, None, None, m.weight, m.bias, training=True)  # noqa: E731
            return x + self.conv2(r(bn(self.bn2, self.conv1(r(bn(self.bn1, x))))))
        return x + self.conv2(r(self.bn2(self.conv1(r(self.bn1(x))))))


def variant(order, **kw):
    return type(f"PreAct_{order}", (PreAct,), {"order": order, **kw})


def test_full_preact_passes_reference(capsys):
    assert checks.check_full_preact_unit.status(PreAct) == "passed"
    assert "PASSED check_full_preact_unit" in capsys.readouterr().out


def test_full_preact_catches_post_activation_order():
    fails(checks.check_full_preact_unit, variant("post"), "Fig 4a", "eval mode")


def test_full_preact_catches_relu_after_addition():
    fails(checks.check_full_preact_unit, variant("relu_after_add"), "activation after the addition")


def test_full_preact_catches_missing_shortcut():
    fails(checks.check_full_preact_unit, variant("no_shortcut"), "shortcut is missing")


def test_full_preact_catches_eval_mode_bn():
    msg = fails(checks.check_full_preact_unit, variant("functional_bn"), "in eval mode")
    assert "in train mode" not in msg


def test_full_preact_catches_conv_bias_and_layout():
    fails(checks.check_full_preact_unit, lambda c: PreAct(c, bias=True), "bias")

    class Renamed(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = PreAct(c)

        def forward(self, x):
            return self.body(x)
    fails(checks.check_full_preact_unit, Renamed, "no attribute `bn1`")
    fails(checks.check_full_preact_unit, PreAct(4), "pass the class itself")


def test_full_preact_catches_in_place_input():
    class InPlace(PreAct):
        def forward(self, x):
            x += self.conv2(torch.relu(self.bn2(self.conv1(torch.relu(self.bn1(x))))))
            return x
    fails(checks.check_full_preact_unit, InPlace, "in place")


# ---- exercise 2 ---------------------------------------------------------------------------------------------

def gate(x, W_g, b_g):
    return torch.sigmoid(F.conv2d(x, W_g, b_g))


def exclusive_gating(x, Fx, W_g, b_g):
    g = gate(x, W_g, b_g)
    return (1 - g) * x + g * Fx


def test_gating_passes_reference():
    assert checks.check_exclusive_gating.status(exclusive_gating) == "passed"


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, Fx, W, b: x + gate(x, W, b) * Fx, "(1 - g) factor on the shortcut is missing"),
    (lambda x, Fx, W, b: (1 - gate(x, W, b)) * x + Fx, "shortcut-only gating, Fig 2(d)"),
    (lambda x, Fx, W, b: gate(x, W, b) * x + (1 - gate(x, W, b)) * Fx, "swapped"),
    (lambda x, Fx, W, b: (1 - gate(Fx, W, b)) * x + gate(Fx, W, b) * Fx, "computed from F(x)"),
    (lambda x, Fx, W, b: (1 - gate(x, W, None)) * x + gate(x, W, None) * Fx, "bias b_g is missing"),
])
def test_gating_catches_wrong_formulas(wrong, hint):
    fails(checks.check_exclusive_gating, wrong, hint)


# ---- exercise 3 ---------------------------------------------------------------------------------------------

def test_direct_term_passes_product_and_matches_a_real_stack(capsys):
    assert checks.check_direct_term.status(math.prod) == "passed"
    out = capsys.readouterr().out
    assert "measured 0.00515378" in out  # 0.9^50, measured by autograd in a zero-residual stack


def test_measured_direct_term_is_prod_lambda():
    lams = [0.7, 1.3, 0.9, 1.1, 0.5]
    assert checks.measured_direct_term(lams) == pytest.approx(math.prod(lams), rel=1e-12)


@pytest.mark.parametrize("wrong, hint", [
    (sum, "you returned the sum"),
    (lambda lams: lams[0] ** len(lams) if lams else 1.0, "may differ from unit to unit"),
    (lambda lams: math.prod(lams) if lams else 0.0, "empty product is 1"),
    (lambda lams: math.prod(lams[1:]), "Eqn 8"),
])
def test_direct_term_catches_wrong_answers(wrong, hint):
    fails(checks.check_direct_term, wrong, hint)


def test_vanishing_depth():
    right = lambda lam, eps: next(n for n in range(1, 10 ** 6) if lam ** n < eps)  # noqa: E731
    assert checks.check_vanishing_depth.status(right) == "passed"
    fails(checks.check_vanishing_depth, lambda lam, eps: int(math.log(eps) / math.log(lam)), "round up")
    fails(checks.check_vanishing_depth, lambda lam, eps: math.log(eps) / math.log(lam), "whole number")


# ---- exercise 4 ---------------------------------------------------------------------------------------------

class Gated(nn.Module):
    k0 = 1.0

    def __init__(self, F):
        super().__init__()
        self.F = F
        self.k = nn.Parameter(torch.full((), self.k0))

    def forward(self, x):
        return torch.relu(self.k) * self.F(x) + x


def gated(forward=None, k0=1.0):
    body = {"k0": k0}
    if forward is not None:
        body["forward"] = forward
    return type("GatedVariant", (Gated,), body)


def test_gated_residual_passes_reference():
    assert checks.check_gated_residual.status(Gated) == "passed"


def test_gated_residual_catches_k_initialised_to_zero():
    fails(checks.check_gated_residual, gated(k0=0.0), "k starts at 0", "never gets a gradient")


def test_gated_residual_catches_sigmoid_gate():
    fails(checks.check_gated_residual, gated(lambda s, x: torch.sigmoid(s.k) * s.F(x) + x), "sigmoid(k) is never 0")


def test_gated_residual_catches_gated_plain_layer():
    def plain(s, x):
        g = torch.relu(s.k)
        return g * s.F(x) + (1 - g) * x
    fails(checks.check_gated_residual, gated(plain), "gated PLAIN layer")


def test_gated_residual_catches_detached_gate_and_extra_parameters():
    fails(checks.check_gated_residual, gated(lambda s, x: torch.relu(s.k).item() * s.F(x) + x), "dE/dk")

    class Extra(Gated):
        def __init__(self, F):
            super().__init__(F)
            self.bias = nn.Parameter(torch.zeros(()))
    fails(checks.check_gated_residual, Extra, "expected F's")


# ---- exercise 5 ---------------------------------------------------------------------------------------------

def truncation_rate(unit, x):
    y = unit.shortcut(x, unit.residual(x))
    return (y < 0).double().mean()


def test_truncation_passes_reference():
    assert checks.check_truncation_rate.status(truncation_rate) == "passed"


@pytest.mark.parametrize("wrong, hint", [
    (lambda u, x: 1 - truncation_rate(u, x), "fraction that survives"),
    (lambda u, x: (u.residual(x) < 0).double().mean(), "F(x) alone"),
    (lambda u, x: truncation_rate(u.eval(), x), "eval mode"),
])
def test_truncation_catches_wrong_answers(wrong, hint):
    fails(checks.check_truncation_rate, wrong, hint)


# ---- stubs, batch grading, the students' copy ---------------------------------------------------------------

def stub(*args, **kwargs):
    raise NotImplementedError("exercise")


def test_stub_is_reported_not_attempted(capsys):
    assert checks.check_direct_term(stub) is None  # no exception: a notebook with stubs runs through
    assert "NOT ATTEMPTED check_direct_term" in capsys.readouterr().out
    assert checks.check_gated_residual.status(stub) == "not attempted"


def test_grade_a_namespace():
    """checks.grade (the chapter's last cell) runs every grader on what a namespace defines."""
    res = checks.grade({"direct_term": sum, "GatedResidual": Gated, "truncation_rate": stub})
    assert res["4 gated residual"] == "passed"
    assert res["3a direct term"].startswith("failed") and "direct_term = " in res["3a direct term"]
    assert res["5 truncation rate"] == "not attempted"
    assert res["1 full pre-activation unit"] == "missing"
