"""The residual-unit library: every variant, the papers' parameter counts, the identity property."""

import math
import re

import pytest
import torch
import torch.nn as nn

import idmap_lib as im
from idmap_lib.models.registry import FAIL, SHORTCUT_ROWS, UNIT_ROWS, shortcut_options
from idmap_lib.models.units import OPS

torch.set_num_threads(2)
SMALL = {"basic": 8, "bottleneck": 11, "single": 5}  # the shallowest net of each block type


def count(model):
    return sum(p.numel() for p in model.parameters())


# --- every registered unit x shortcut x block: forward, backward, shapes ------------------------

@pytest.mark.parametrize("block", list(im.BLOCKS))
@pytest.mark.parametrize("shortcut", list(im.SHORTCUTS))
@pytest.mark.parametrize("unit", list(im.UNITS))
def test_every_variant_trains_a_step(unit, shortcut, block):
    torch.manual_seed(0)
    model = im.cifar_resnet(SMALL[block], unit, shortcut, num_classes=100, block=block,
                            gated=block == "single")
    x = torch.randn(4, 3, 32, 32, requires_grad=True)
    y = model(x)
    assert y.shape == (4, 100) and torch.isfinite(y).all()
    y.logsumexp(1).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    layers = {"basic": 2, "bottleneck": 3, "single": 1}[block]
    assert len(im.residual_units(model)) == 3 * (SMALL[block] - 2) // (3 * layers)


@pytest.mark.parametrize("unit, row", list(UNIT_ROWS.items()))
def test_each_unit_row_is_all_a_unit_needs(unit, row):
    """A unit is its registry row: its figure and ops in words (``im.UNITS``), words and a colour of
    its own, the paper's number at a depth of Table 2, and a construction made of known ops that
    builds and trains."""
    assert im.UNITS[unit] == f"{row.figure}: {row.describes}"
    others = [r for u, r in UNIT_ROWS.items() if u != unit]
    assert all(row.figure != r.figure and row.words != r.words and row.colour != r.colour
               for r in others)
    assert re.fullmatch("#[0-9A-F]{6}", row.colour) and row.final in im.FINALS
    assert set(row.paper) <= {110, 164} and all(0 < e < 100 for e in row.paper.values())
    assert set(row.pre + row.after + row.last + row.post + row.stem) <= set(OPS)
    # the construction is the row's: f is its post, and its first weight layer follows its pre
    u = im.make_unit(unit)
    assert im.unit_layout(u)["post"] == list(row.post)
    assert im.unit_layout(u)["residual"][:len(row.pre)] == list(row.pre)


@pytest.mark.parametrize("name, row", list(SHORTCUT_ROWS.items()))
def test_each_shortcut_row_is_all_a_shortcut_needs(name, row):
    """A shortcut is its registry row (and its module): its figure and maths in words
    (``im.SHORTCUTS``), words and a colour of its own (none: the original unit's), its options'
    defaults as a unit takes them, and Table 1's numbers keyed by its options' values (every variant
    builds and trains: test_every_variant_trains_a_step)."""
    assert im.SHORTCUTS[name] == f"{row.figure}: {row.describes}"
    others = [r for n, r in SHORTCUT_ROWS.items() if n != name]
    assert all(row.figure != r.figure and row.words != r.words for r in others)
    assert not row.colour or (re.fullmatch("#[0-9A-F]{6}", row.colour)
                              and all(row.colour != r.colour for r in others))
    assert all(len(k) == len(row.options) and (e == FAIL or 0 < e < 100)
               for k, e in row.paper.items())
    assert shortcut_options(name, {}) == row.options


def test_registries_describe_every_variant_with_its_figure():
    fig4 = [row.figure for row in UNIT_ROWS.values() if row.figure.startswith("Paper A Fig 4")]
    assert fig4 == [f"Paper A Fig 4({letter})" for letter in "abcde"]  # all five, in order
    fig2 = [row.figure for row in SHORTCUT_ROWS.values() if row.figure.startswith("Paper A Fig 2")]
    assert fig2 == [f"Paper A Fig 2({letter})" for letter in "abcdef"]  # all six, in order


# --- parameter counts --------------------------------------------------------------------------

def test_parameter_counts_of_the_official_architectures():
    assert count(im.cifar_resnet(164)) == 1_703_258          # Paper A, official code
    assert count(im.cifar_resnet(1001)) == 10_327_706
    assert 1.70e6 < count(im.cifar_resnet(110)) < 1.75e6      # "1.7M"
    assert count(im.cifar_resnet(110, unit="original")) == count(im.cifar_resnet(110))
    wrn = count(im.wide_resnet(28, 10, dropout=0.3))
    assert abs(wrn - 36.5e6) < 0.05e6                         # Paper B: 36.5M
    assert count(im.wide_resnet(28, 10, dropout=0.3, gated=True)) == wrn + 12
    assert count(im.cifar_resnet(32, gated=True)) == count(im.cifar_resnet(32)) + 15
    assert count(im.cifar_resnet(32, unit="original",
                                 gated=True)) == count(im.cifar_resnet(32, unit="original")) + 15


def test_imagenet_parameter_counts():
    import torchvision
    assert count(im.imagenet_resnet(152, "original")) == count(torchvision.models.resnet152())
    pre152, pre200 = count(im.imagenet_resnet(152)), count(im.imagenet_resnet(200))
    assert abs(pre152 - 60.2e6) < 0.1e6 and abs(pre200 - 64.7e6) < 0.1e6
    y = im.imagenet_resnet(50)(torch.randn(1, 3, 64, 64))
    assert y.shape == (1, 1000)


def test_default_blocks_follow_the_paper():
    assert im.residual_units(im.cifar_resnet(110))[0].variant["block"] == "basic"
    assert len(im.residual_units(im.cifar_resnet(110))) == 54
    for depth, n in [(164, 54), (1001, 333)]:
        units = im.residual_units(im.cifar_resnet(depth))
        assert units[0].variant["block"] == "bottleneck" and len(units) == n
    assert len(im.residual_units(im.cifar_resnet(110, block="bottleneck"))) == 36
    # Table 3 1-layer skip
    assert len(im.residual_units(im.cifar_resnet(110, block="single"))) == 108


def test_mlp_shapes_and_counts():
    w = 50
    plain = im.mlp("plain", 2)
    assert count(plain) == 784 * w + 2 * w + 2 * (w * w + 2 * w) + w * 10 + 10
    for kind in ("plain", "resnet", "gresnet", "gated_plain"):
        m = im.mlp(kind, 10)
        assert m(torch.rand(3, 1, 28, 28)).shape == (3, 10)
        assert m(torch.rand(3, 784)).shape == (3, 10)
    assert len(im.residual_units(im.mlp("resnet", 100))) == 50
    assert len(im.gates(im.mlp("gresnet", 100))) == 50
    assert len(im.gates(im.mlp("gated_plain", 6))) == 6
    assert count(im.mlp("gresnet", 20)) == count(im.mlp("resnet", 20)) + 10


def test_mlp_keras_defaults_are_glorot_uniform_and_keras_batch_norm():
    torch.manual_seed(0)
    ours, keras = im.mlp("gresnet", 10), im.mlp("gresnet", 10, defaults="keras")
    assert count(ours) == count(keras)
    for net, eps, momentum in ((ours, 1e-5, 0.1), (keras, 1e-3, 0.01)):
        bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm1d)]
        assert len(bns) == 11 and all(b.eps == eps and b.momentum == momentum for b in bns)
    for a, b in zip((m for m in ours.modules() if isinstance(m, nn.Linear)),
                    (m for m in keras.modules() if isinstance(m, nn.Linear))):
        fan_out, fan_in = b.weight.shape
        glorot, torch_default = (6 / (fan_in + fan_out)) ** 0.5, fan_in ** -0.5
        # uniform +-glorot
        assert b.weight.abs().max() <= glorot and b.weight.abs().max() > 0.95 * glorot
        assert a.weight.abs().max() <= torch_default and a.weight.abs().max() > 0.95 * torch_default
    with pytest.raises(ValueError, match="unknown mlp defaults 'tf'"):
        im.mlp("resnet", 2, defaults="tf")


# --- the identity property (Eqns 4-5 with F = 0; Eqn 8) ------------------------------------------

def stack(units):
    return nn.Sequential(*units).double()


@pytest.mark.parametrize("block", ["basic", "bottleneck"])
def test_zero_residuals_makes_full_preact_units_identities(block):
    torch.manual_seed(0)
    k = 12
    net = stack(im.make_unit("full_preact", "identity", 16, 16, block=block) for _ in range(k))
    im.zero_residuals(net)
    x = torch.randn(2, 16, 8, 8, dtype=torch.float64, requires_grad=True)
    y = net(x)
    assert torch.equal(y, x)                                   # Eqn 4 with F = 0: x_L = x_l
    g_out = torch.randn_like(y)
    y.backward(g_out)
    assert torch.equal(x.grad, g_out)                          # Eqn 5 with F = 0: dE/dx_l = dE/dx_L


@pytest.mark.parametrize("lam", [0.5, 0.9, 1.1])
def test_constant_scaling_scales_signal_and_gradient_by_lambda_to_the_k(lam):
    torch.manual_seed(0)
    k = 20
    net = stack(im.make_unit("full_preact", "constant_scaling", 16, 16, shortcut_scale=lam)
                for _ in range(k))
    im.zero_residuals(net)
    x = torch.randn(2, 16, 8, 8, dtype=torch.float64, requires_grad=True)
    y = net(x)
    torch.testing.assert_close(y, lam ** k * x, rtol=1e-12, atol=0)      # Eqn 7 with F = 0
    g_out = torch.randn_like(y)
    y.backward(g_out)
    # Eqn 8: prod of lambdas
    torch.testing.assert_close(x.grad, lam ** k * g_out, rtol=1e-12, atol=0)


def test_zero_residuals_in_whole_network_passes_same_shape_units_through():
    torch.manual_seed(0)
    for model in (im.cifar_resnet(20), im.cifar_resnet(11, unit="original"),
                  im.cifar_resnet(20, gated=True), im.wide_resnet(10, 1, dropout=0.3)):
        im.zero_residuals(model).eval()
        seen = []
        hooks = [u.register_forward_hook(lambda m, i, o: seen.append((m, i[0], o)))
                 for u in im.residual_units(model)]
        model(torch.randn(2, 3, 32, 32))
        for h in hooks:
            h.remove()
        assert [m for m, _, _ in seen] == im.residual_units(model)   # forward order
        for (_, _, prev_out), (_, nxt_in, _) in zip(seen, seen[1:]):
            assert nxt_in is prev_out                                 # each maps x_l to x_{l+1}
        for unit, x_in, x_out in seen:
            if x_in.shape == x_out.shape and isinstance(unit.preact, nn.Identity):
                expected = torch.relu(x_in) if unit.variant["unit"] == "original" else x_in
                assert torch.equal(x_out, expected)


# --- what each variant computes ----------------------------------------------------------------

def branch(unit, x):
    """F(x) of a unit, computed on its own (after any shared pre-activation)."""
    s = unit.preact(x)
    return s, unit.residual(s)


def test_shortcut_formulas_match_table_1():
    torch.manual_seed(0)
    x = torch.randn(2, 16, 8, 8, dtype=torch.float64)
    u = im.make_unit("full_preact", "constant_scaling", shortcut_scale=0.5,
                     residual_scale=0.5).double().eval()
    s, f = branch(u, x)
    torch.testing.assert_close(u(x), 0.5 * s + 0.5 * f)
    u = im.make_unit("original", "constant_scaling", shortcut_scale=0.0).double().eval()
    s, f = branch(u, x)
    torch.testing.assert_close(u(x), torch.relu(f))                     # "a plain net"
    u = im.make_unit("full_preact", "exclusive_gating", gate_bias=-6.0).double().eval()
    assert torch.all(u.shortcut.gate.conv.bias == -6.0)
    s, f = branch(u, x)
    g = torch.sigmoid(u.shortcut.gate.conv(s))
    torch.testing.assert_close(u(x), (1 - g) * s + g * f)
    u = im.make_unit("full_preact", "shortcut_only_gating", gate_bias=0.0).double().eval()
    s, f = branch(u, x)
    g = torch.sigmoid(u.shortcut.gate.conv(s))
    torch.testing.assert_close(u(x), (1 - g) * s + f)
    u = im.make_unit("full_preact", "conv1x1").double().eval()
    s, f = branch(u, x)
    torch.testing.assert_close(u(x), u.shortcut.h(s) + f)
    assert isinstance(u.shortcut.h, nn.Conv2d) and u.shortcut.h.kernel_size == (1, 1)
    u = im.make_unit("full_preact", "dropout", p=0.5).double()
    s, f = branch(u.eval(), x)
    # eval: the expected scale 1 - p
    torch.testing.assert_close(u(x), 0.5 * s + f)
    u.train()
    ones = torch.ones(1, 16, 64, 64, dtype=torch.float64)
    kept = u.shortcut(ones, torch.zeros_like(ones))
    # kept entries are not rescaled
    assert set(kept.unique().tolist()) == {0.0, 1.0}
    # Paper A: a scale of 0.5 in expectation
    assert kept.mean().item() == pytest.approx(0.5, abs=0.03)


def test_activation_variants_match_figure_4():
    torch.manual_seed(0)
    x = torch.randn(4, 16, 8, 8)
    layouts = {u: im.unit_layout(im.make_unit(u)) for u in im.UNITS}
    assert layouts["original"]["residual"] == ["3x3 conv, 16", "BN", "ReLU", "3x3 conv, 16", "BN"]
    assert layouts["original"]["post"] == ["ReLU"]
    assert layouts["bn_after_add"]["residual"][-1] == "3x3 conv, 16"
    assert layouts["bn_after_add"]["post"] == ["BN", "ReLU"]
    assert (layouts["relu_before_add"]["residual"][-2:] == ["BN", "ReLU"]
            and layouts["relu_before_add"]["post"] == [])
    assert layouts["relu_preact"]["residual"] == ["ReLU", "3x3 conv, 16", "BN", "ReLU",
                                                  "3x3 conv, 16", "BN"]
    assert layouts["full_preact"]["residual"] == ["BN", "ReLU", "3x3 conv, 16", "BN", "ReLU",
                                                  "3x3 conv, 16"]
    assert layouts["full_preact"]["post"] == []
    assert (im.make_unit("original")(x) >= 0).all()                    # f = ReLU
    u = im.make_unit("relu_before_add")
    assert (u.residual(x) >= 0).all()                                  # F >= 0 (Sec 4.1)
    assert (im.make_unit("full_preact")(x) < 0).any()                  # f = identity


def test_dimension_changing_units_follow_the_official_code():
    net = im.cifar_resnet(164)
    first = im.residual_units(net)[0]
    lay = im.unit_layout(first)
    assert lay["preact"] == ["BN", "ReLU"]                             # one shared BN+ReLU
    # projection on the pre-activated x
    assert lay["shortcut"] == ["1x1 conv, 64"]
    assert lay["residual"][0] == "1x1 conv, 16"                        # F starts at its first conv
    down = im.residual_units(net)[18]
    assert im.unit_layout(down)["residual"][0] == "1x1 conv, 32, /2"   # stride on the first 1x1
    assert im.unit_layout(down)["shortcut"] == ["1x1 conv, 128, /2"]
    plain = im.residual_units(net)[1]
    assert im.unit_layout(plain)["preact"] == [] and im.unit_layout(plain)["shortcut"] == []
    # the basic ResNet-110: zero-padded identity at downsampling (our documented choice)
    down110 = im.residual_units(im.cifar_resnet(110))[18]
    assert im.unit_layout(down110)["shortcut"] == ["subsample /2, zero-pad +16"]
    # original units: BN after the projection (fb.resnet.torch type B)
    assert im.unit_layout(im.residual_units(im.cifar_resnet(164,
                                                            "original"))[0])["shortcut"] == ["1x1 conv, 64", "BN"]
    # pre-activation nets end with BN+ReLU; original nets do not
    assert isinstance(im.cifar_resnet(20).final[0], nn.BatchNorm2d)
    assert isinstance(im.cifar_resnet(20, "original").final, nn.Identity)


def test_relu_only_preact_keeps_bn_after_every_weight_layer():
    """Fig 4(d): ReLU -> weight -> BN; conv1 and the projections too, and its final activation is a
    ReLU."""
    net = im.cifar_resnet(164, "relu_preact")
    # conv1 -> BN, ReLU in unit 1
    assert [type(m).__name__ for m in net.stem] == ["Conv2d", "BatchNorm2d"]
    assert im.unit_layout(im.residual_units(net)[0])["preact"] == ["ReLU"]
    assert im.unit_layout(im.residual_units(net)[0])["shortcut"] == ["1x1 conv, 64", "BN"]
    assert isinstance(net.final, nn.ReLU)
    # Fig 4(e): bare conv1, bare projections, BN+ReLU at the end
    full = im.cifar_resnet(164, "full_preact")
    assert (isinstance(full.stem, nn.Conv2d)
            and im.unit_layout(im.residual_units(full)[0])["shortcut"] == ["1x1 conv, 64"])
    assert [type(m).__name__ for m in full.final] == ["BatchNorm2d", "ReLU"]
    # every signal on the identity path of a relu_preact net is a sum of BN outputs: none is
    # un-normalised
    x = torch.randn(4, 3, 32, 32) * 50 + 20
    with torch.no_grad():
        h = im.cifar_resnet(20, "relu_preact").train().stem(x)
    assert h.mean().abs() < 0.1 and (h.std() - 1).abs() < 0.1


def test_stride_of_bottleneck_downsampling_follows_each_official_code():
    def strides(unit):
        return [m.stride[0] for m in unit.residual if isinstance(m, nn.Conv2d)]
    # resnet-1k-layers: first 1x1
    assert strides(im.residual_units(im.cifar_resnet(164))[18]) == [2, 1, 1]
    # fb.resnet.torch: the 3x3
    assert strides(im.residual_units(im.imagenet_resnet(50))[3]) == [1, 2, 1]
    assert strides(im.residual_units(im.imagenet_resnet(50, "original"))[3]) == [1, 2, 1]
    tv = __import__("torchvision").models.resnet50()
    assert tv.layer2[0].conv2.stride == (2, 2) and tv.layer2[0].conv1.stride == (1, 1)


def test_he_initialisation_as_official_code():
    torch.manual_seed(0)
    net = im.cifar_resnet(164)
    conv = im.residual_units(net)[-1].residual[-1]              # 1x1, 64 -> 256
    expected = math.sqrt(2 / (1 * 1 * conv.out_channels))
    assert conv.weight.std().item() == pytest.approx(expected, rel=0.05)
    assert torch.all(net.fc.bias == 0)
    bn = im.residual_units(net)[5].residual[0]
    assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0)


def test_gates_reach_identity_with_one_scalar():
    torch.manual_seed(0)
    model = im.cifar_resnet(32, gated=True)
    ks = im.gates(model)
    assert len(ks) == 15 and all(k.item() == 1.0 and k.numel() == 1 for k in ks)
    unit = im.make_unit("full_preact", gated=True).double()
    x = torch.randn(2, 16, 8, 8, dtype=torch.float64)
    with torch.no_grad():
        unit.k.fill_(-0.3)                                      # k <= 0: ReLU(k) = 0
    assert torch.equal(unit(x), x)
    layer = im.mlp("gated_plain", 2)[2]
    h = torch.randn(5, 50)
    with torch.no_grad():
        layer.k.fill_(0.0)
    assert torch.equal(layer(h), h)                              # u = (1 - 0) x
    with torch.no_grad():
        layer.k.fill_(1.0)
    torch.testing.assert_close(layer(h), layer.layer(h))         # k = 1: the plain layer
    assert im.gates(im.cifar_resnet(32)) == []


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, words", [
    (lambda: im.cifar_resnet(110, unit="preact"), ["full_preact", "original"]),
    (lambda: im.cifar_resnet(110, shortcut="gating"), ["exclusive_gating", "identity"]),
    (lambda: im.cifar_resnet(100), ["6n+2", "9n+2"]),
    (lambda: im.cifar_resnet(110, block="bottleneck2"), ["basic", "bottleneck", "single"]),
    (lambda: im.cifar_resnet(164, block="bottleneck", shortcut="identity", p=0.5),
     ["does not take", "no options"]),
    (lambda: im.cifar_resnet(110, block="bottleneck", shortcut="dropout", gate_bias=-6),
     ["does not take", "p"]),
    (lambda: im.cifar_resnet(39, block="bottleneck"), ["9n+2"]),
    (lambda: im.cifar_resnet(110, num_classes=0), ["num_classes"]),
    (lambda: im.wide_resnet(27, 10), ["6n+4"]),
    (lambda: im.wide_resnet(28, 0), ["widen"]),
    (lambda: im.wide_resnet(28.0, 10), ["6n+4", "28.0"]),
    (lambda: im.wide_resnet(28, 10, dropout=1.0), ["dropout must be in [0, 1)", "1.0"]),
    (lambda: im.wide_resnet(28, 10, dropout=-0.1), ["dropout must be in [0, 1)"]),
    (lambda: im.mlp("highway", 10), ["plain", "resnet", "gresnet"]),
    (lambda: im.mlp("resnet", 5), ["even"]),
    (lambda: im.imagenet_resnet(151), ["50, 101, 152, 200", "151"]),
    (lambda: im.imagenet_resnet(50, "preact"), ["unknown unit 'preact'", "full_preact"]),
    (lambda: im.make_unit("full_preact", preact="somewhere"), ["shared", "residual"]),
    (lambda: im.make_unit("full_preact", "dropout", p=1.5), ["[0, 1)"]),
])
def test_bad_arguments_raise_one_clear_value_error(call, words):
    with pytest.raises(ValueError) as err:
        call()
    for word in words:
        assert word in str(err.value)


def test_imagenet_stem_is_7x7_stride_2_bn_relu_then_3x3_stride_2_max_pool():
    """Paper A Table 5's nets (fb.resnet.torch): the stem halves a 224 image twice, to 56 x 56 maps,
    and its activation is the input of the first (pre-activation-less) unit."""
    net = im.imagenet_resnet(50)
    conv, bn, relu, pool = net.stem
    assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
            conv.bias) == \
        (3, 64, (7, 7), (2, 2), (3, 3), None)
    assert isinstance(bn, torch.nn.BatchNorm2d) and isinstance(relu, torch.nn.ReLU)
    assert (pool.kernel_size, pool.stride, pool.padding) == (3, 2, 1)
    x = torch.randn(2, 3, 224, 224)
    assert net.stem.eval()(x).shape == (2, 64, 56, 56)
    assert (net.stem(x) >= 0).all()  # after the ReLU (and max pooling of non-negative maps)


@pytest.mark.parametrize("depth", [50, 101])
def test_imagenet_preact_nets_pre_activate_every_unit_but_the_first_and_end_with_bn_relu(depth):
    """Pre-activation ImageNet nets (Paper A Table 5, fb.resnet.torch): the first unit takes the
    stem's activation (no BN-ReLU of its own); every dimension-changing unit pre-activates once,
    before the split; every other unit starts its residual with BN-ReLU; an extra BN-ReLU follows
    the last addition. The original unit has neither."""
    net = im.imagenet_resnet(depth)
    units = im.residual_units(net)
    first_of_stage = {0, 3, 3 + 4, 3 + 4 + (6 if depth == 50 else 23)}
    for i, u in enumerate(units):
        ops = [type(m).__name__ for m in u.residual][:2]
        if i == 0:
            assert isinstance(u.preact, torch.nn.Identity) and ops[0] == "Conv2d"
        elif i in first_of_stage:
            assert [type(m).__name__ for m in u.preact] == ["BatchNorm2d",
                                                            "ReLU"] and ops[0] == "Conv2d"
        else:
            assert isinstance(u.preact, torch.nn.Identity) and ops == ["BatchNorm2d", "ReLU"], i
    assert [type(m).__name__ for m in net.final] == ["BatchNorm2d",
                                                     "ReLU"] and net.final[0].num_features == 2048
    assert isinstance(im.imagenet_resnet(depth, "original").final, torch.nn.Identity)


def test_wide_resnet_defaults_no_dropout_and_ten_classes():
    net = im.wide_resnet(16, 1)
    assert (not any(isinstance(m, torch.nn.Dropout) for m in net.modules())
            and net.fc.out_features == 10)
    assert sum(isinstance(m, torch.nn.Dropout)
               for m in im.wide_resnet(16, 1, dropout=0.3).modules()) == 6
    # 16 -> 16 channels at k = 1, and still one shared pre-activation
    first = im.residual_units(net)[0]
    assert [type(m).__name__ for m in first.preact] == ["BatchNorm2d", "ReLU"]


@pytest.mark.parametrize("widen", [1, 2])
def test_wide_resnet_layout_stem_strides_preactivation_and_final(widen):
    """WRN-16-k (n = 2): a bare 3x3 conv stem; each stage's first unit pre-activates once before the
    split (and downsamples by 2 from the second stage on), the other units start their residual with
    BN-ReLU; a final BN-ReLU after the last addition. Maps: 32 -> 32 -> 16 -> 8."""
    net = im.wide_resnet(16, widen).eval()
    assert (isinstance(net.stem, torch.nn.Conv2d)
            and (net.stem.in_channels, net.stem.out_channels) == (3, 16))
    assert ([type(m).__name__ for m in net.final] == ["BatchNorm2d", "ReLU"]
            and net.final[0].num_features == 64 * widen)
    units, x, sizes = im.residual_units(net), net.stem(torch.randn(1, 3, 32, 32)), []
    for i, u in enumerate(units):
        first = i % 2 == 0
        if first:
            assert [type(m).__name__ for m in u.preact] == ["BatchNorm2d", "ReLU"], i
        else:
            assert isinstance(u.preact, torch.nn.Identity) and \
                [type(m).__name__ for m in u.residual][:2] == ["BatchNorm2d", "ReLU"], i
        x = u(x)
        sizes.append(x.shape[-1])
    assert sizes == [32, 32, 16, 16, 8, 8]


def test_a_paper_b_gate_trades_off_with_the_last_bn_scale_and_shift():
    """For k > 0, k·ReLU(γẑ + β) = ReLU(kγẑ + kβ): one block's k trades with its last BN's scale and
    shift."""
    torch.manual_seed(0)
    net = im.mlp("gresnet", 2).eval()
    block = im.residual_units(net)[0]
    last_bn = block.residual[-1][1]   # the block's second Dot-BN-ReLU layer
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.normal_()
                m.running_var.uniform_(0.5, 2)
                m.weight.normal_()
                m.bias.normal_()
        x = torch.randn(8, 784)
        reference = net(x)                # k = 1
        block.k.fill_(2.5)
        assert not torch.allclose(net(x), reference, atol=1e-3)   # k alone changes the function ...
        last_bn.weight.div_(2.5)
        last_bn.bias.div_(2.5)
        # ... k with γ / k and β / k does not
        assert torch.allclose(net(x), reference, atol=1e-5)


def test_a_gresnet_computes_the_same_function_with_every_k_scaled_by_c():
    """Chapter 10's symmetry: every branch starts with BN, which ignores the scale of its input, so
    multiplying every k and the input layer's BN scale and shift by c > 0 and dividing the
    classifier's weights by c leaves the function unchanged (training-mode BN; eps -> 0). The level
    of k is therefore not fixed by the function."""
    torch.manual_seed(0)
    net = im.mlp("gresnet", 6).double().train()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.eps = 1e-12
    x = torch.randn(64, 784, dtype=torch.double)
    with torch.no_grad():
        for u in im.residual_units(net):
            u.k.uniform_(-0.5, 2.0)           # some gates closed, some open
        reference = net(x)
        c = 7.0
        bn0, out = net[1][1], net[-1]
        bn0.weight.mul_(c)
        bn0.bias.mul_(c)
        # the stream's scale alone changes the logits
        assert not torch.allclose(net(x), reference, atol=1e-3)
        for u in im.residual_units(net):
            u.k.mul_(c)
        out.weight.div_(c)
        assert torch.allclose(net(x), reference, atol=1e-8)


def test_width_scale_narrows_every_layer_and_keeps_every_layer():
    """The CPU scale's ResNet-164/1001 (recipes.SHRUNK_WIDTH): every channel count x 1/4, conv1
    included (it still reads the 3 colour channels); the same convolutions in the same order, the fc
    on 1/4 of the features."""
    convs = lambda m: [(c.in_channels, c.out_channels, c.kernel_size, c.stride)  # noqa: E731
                       for c in m.modules() if isinstance(c, nn.Conv2d)]
    for depth, scale in ((164, 0.25), (20, 0.5), (20, 0.125)):
        full, narrow = im.cifar_resnet(depth), im.cifar_resnet(depth, width_scale=scale)
        assert convs(narrow) == [(i if i == 3 else int(i * scale), int(o * scale), k, s)
                                 for i, o, k, s in convs(full)]
        assert narrow.fc.in_features == int(full.fc.in_features * scale)
    for depth, bad in ((20, 0.3), (20, 0), (20, -0.5), (20, "half"), (164, 0.125), (164, 0.375)):
        # 0.125 of a bottleneck net: conv1 gets 2 channels, fewer than the 4 a bottleneck's 3x3
        # needs at least; 0.375: a bottleneck of 6 channels would give its 3x3 1.5
        with pytest.raises(ValueError, match="whole channel counts"):
            im.cifar_resnet(depth, width_scale=bad)


# ----------------------------------------------------------------------------------------------
# the book's interventions: one part swapped at a time (recipes.SWAPS)

@pytest.mark.parametrize("unit,final,kind", [("original", "bn_relu", nn.Sequential),
                                             ("relu_preact", "bn_relu", nn.Sequential),
                                             ("full_preact", "none", nn.Identity),
                                             ("original", "relu", nn.ReLU)])
def test_a_swapped_final_changes_only_what_the_classifier_reads(unit, final, kind):
    """The swapped net has the parent's every weight, bit for bit (the swap draws no random number),
    and only the part before the pool differs: the classifier reads a normalised input with a final
    BN-ReLU."""
    torch.manual_seed(0)
    parent = im.cifar_resnet(20, unit=unit)
    torch.manual_seed(0)
    swapped = im.cifar_resnet(20, unit=unit, final=final)
    assert isinstance(swapped.final, kind)
    for (n, p), (_, q) in zip(parent.units.named_parameters(), swapped.units.named_parameters()):
        assert torch.equal(p, q), n
    assert torch.equal(parent.fc.weight, swapped.fc.weight)
    x = torch.randn(8, 3, 32, 32)
    seen = {}
    swapped.fc.register_forward_hook(lambda m, a, o: seen.setdefault("in", a[0]))
    swapped.train()(x)
    # BN (batch statistics) then ReLU, pooled: non-negative, of unit scale at most
    if final == "bn_relu":
        assert seen["in"].min() >= 0 and seen["in"].std() < 1
    with pytest.raises(ValueError, match="unknown final 'bn'"):
        im.cifar_resnet(20, unit=unit, final="bn")


def test_zero_gamma_makes_every_unit_its_shortcut_at_init():
    """Goyal et al.'s zero gamma: F = 0 at initialisation, so the original unit is x -> ReLU(x + 0)
    = x on its non-negative input, and the net's output is the classifier of the stem alone; without
    it F is not 0."""
    torch.manual_seed(0)
    net = im.cifar_resnet(20, unit="original", zero_gamma=True).eval()
    x = torch.randn(4, 3, 32, 32)
    for u in im.residual_units(net):
        inp = net.stem(x) if u is im.residual_units(net)[0] else None
        if inp is not None:
            assert torch.equal(u.residual(inp), torch.zeros_like(u.residual(inp)))
    last_bn = [m for m in im.residual_units(net)[3].residual if isinstance(m, nn.BatchNorm2d)][-1]
    assert float(last_bn.weight.detach().abs().sum()) == 0
    torch.manual_seed(0)
    plain = im.cifar_resnet(20, unit="original").eval()
    assert float(plain.units[0].residual(plain.stem(x)).abs().sum()) > 0
    with pytest.raises(ValueError, match="ends its branch in Conv2d"):
        im.cifar_resnet(20, unit="full_preact", zero_gamma=True)


def test_every_swap_is_a_recipe_that_differs_from_its_parent_in_one_model_keyword():
    from idmap_lib.engine import recipes

    variants = recipes.EXPERIMENTS["a_swaps"]["variants"]
    for (unit, swap), depths in recipes.SWAPPED.items():
        for d in depths:
            a = recipes.config("a_swaps", f"{unit}-{d}", "cpu_step_warmup", 0)
            b = recipes.config("a_swaps", f"{unit}+{swap}-{d}", "cpu_step_warmup", 0)
            diff = {k for k in a["model"]["kwargs"].keys() | b["model"]["kwargs"].keys()
                    if a["model"]["kwargs"].get(k) != b["model"]["kwargs"].get(k)}
            assert diff == set(recipes.SWAPS[swap]["kwargs"]) and f"{unit}+{swap}-{d}" in variants
            assert {k: v for k, v in a.items() if k not in ("model", "variant")} == \
                {k: v for k, v in b.items() if k not in ("model", "variant")}


def test_the_separating_swap_scales_the_classifier_input_by_the_recorded_ratio():
    """Issue 57's swap: zero gamma with its classifier's input scaled back to the original unit's.
    The factor in the recipe is the recorded ratio (the mean over the recorded seeds of the
    original's classifier-input std at initialisation over zero gamma's), to 2 significant digits;
    the scaled net is zero gamma's bit for bit, its classifier's input that factor larger."""
    import json
    import statistics
    from pathlib import Path

    from idmap_lib.engine import recipes

    def std0(row):
        files = sorted(Path("data/mechanisms").glob(f"mech_jump_forwards__{row}__*.json"))
        assert files, row
        return statistics.fmean(json.loads(f.read_text())["values"]["forwards"][0]["fc_input_std"]
                                for f in files)
    factor = recipes.SWAPS["zero_gamma_scaled_input"]["kwargs"]["classifier_scale"]
    assert factor == float(f"{std0('original-110') / std0('original+zero_gamma-110'):.2g}")
    torch.manual_seed(0)
    zero = im.cifar_resnet(20, unit="original", zero_gamma=True).train()
    torch.manual_seed(0)
    scaled = im.cifar_resnet(20, unit="original", zero_gamma=True, classifier_scale=factor).train()
    for (n, p), (_, q) in zip(zero.named_parameters(), scaled.named_parameters()):
        assert torch.equal(p, q), n
    seen = {}
    zero.fc.register_forward_hook(lambda m, a, o: seen.setdefault("zero", a[0]))
    scaled.fc.register_forward_hook(lambda m, a, o: seen.setdefault("scaled", a[0]))
    x = torch.randn(8, 3, 32, 32)
    zero(x), scaled(x)
    assert torch.allclose(seen["scaled"], factor * seen["zero"])
    with pytest.raises(ValueError, match="classifier_scale must be a positive number"):
        im.cifar_resnet(20, classifier_scale=0)
