"""What units compute, checked against formulas built from their parts (not from their layout).

- Where the projection reads from: a pre-activation unit that changes dimensions (and the first unit
  after conv1) applies its pre-activation once, before the split, so its output is h(P(x)) +
  G(P(x)), P the pre-activation (BN+ReLU or ReLU, here evaluated from its formula) and G the rest of
  the branch. A unit that keeps dimensions adds the raw x: x + F(x).
- Where the stride sits: every convolution's stride, read from the sizes of its actual output.
"""
import pytest
import torch
import torch.nn as nn

import idmap_lib as im

torch.set_num_threads(2)


def _leaves(module):
    return [m for m in module.modules() if not list(m.children())
            and not isinstance(m, nn.Identity)]


def _randomise_bn(module, seed=0):
    """BN statistics and affine parameters far from their initial values: BN+ReLU is then no
    near-identity scaling of a ReLU, so P(x) differs from x and from ReLU(x) everywhere it
    matters."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g))
            m.running_var.copy_(torch.rand(c, generator=g) * 2 + 0.5)
            with torch.no_grad():
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.5)
    return module


def _bn_formula(bn, x):
    shape = (1, -1, 1, 1)
    return ((x - bn.running_mean.view(shape)) / torch.sqrt(bn.running_var.view(shape) + bn.eps)
            * bn.weight.view(shape) + bn.bias.view(shape))


def _split(unit, kind):
    """P (the pre-activation, from its formula) and G (the weight path after it), from the unit's
    ops in forward order, wherever the unit put the split between `preact` and `residual`."""
    ops = _leaves(unit.preact) + _leaves(unit.residual)
    if kind == "full_preact":
        assert isinstance(ops[0], nn.BatchNorm2d) and isinstance(ops[1], nn.ReLU)
        bn = ops[0]
        return (lambda x: torch.relu(_bn_formula(bn, x))), nn.Sequential(*ops[2:])
    assert kind == "relu_preact" and isinstance(ops[0], nn.ReLU)
    return torch.relu, nn.Sequential(*ops[1:])


def _check_shared_preact(unit, kind, x):
    unit = _randomise_bn(unit.double()).eval()
    P, G = _split(unit, kind)
    seen = []
    hook = unit.shortcut.register_forward_hook(lambda m, i, o: seen.append(i[0]))
    with torch.no_grad():
        y = unit(x)
        a = P(x)
        assert (a - x).abs().max() > 0.5  # P is no near-identity ...
        # ... nor (BN+ReLU) a plain ReLU
        assert kind == "relu_preact" or (a - torch.relu(x)).abs().max() > 0.1
        expected = unit.shortcut.h(a) + G(a)
    hook.remove()
    torch.testing.assert_close(y, expected, rtol=1e-10, atol=1e-10)
    # the shortcut's input is P(x), not x
    torch.testing.assert_close(seen[0], a, rtol=1e-10, atol=1e-10)
    return unit


@pytest.mark.parametrize("kind", ["full_preact", "relu_preact"])
@pytest.mark.parametrize("c_in, c_out, stride, block", [
    (16, 32, 2, "basic"),         # zero-pad projection (ResNet-20/110 downsampling)
    # 1x1 conv projection, stage 1 of ResNet-164 (16 -> 64 at stride 1)
    (16, 64, 1, "bottleneck"),
    (64, 128, 2, "bottleneck"),   # 1x1 conv projection with stride
    (16, 32, 2, "single"),
])
def test_dimension_changing_preact_unit_feeds_the_preactivated_input_to_both_paths(kind, c_in, c_out, stride,
                                                                                   block):
    torch.manual_seed(0)
    unit = im.make_unit(kind, "identity", c_in, c_out, stride, block)
    x = torch.randn(2, c_in, 8, 8, dtype=torch.float64) * 2 + 0.5
    _check_shared_preact(unit, kind, x)


def test_first_unit_after_conv1_and_downsampling_units_of_whole_nets_share_one_preactivation():
    torch.manual_seed(0)
    cases = [(im.cifar_resnet(20), "full_preact", (0, 3, 6)),
             (im.cifar_resnet(20, "relu_preact"), "relu_preact", (0, 3, 6)),
             # bottleneck, conv projections
             (im.cifar_resnet(11), "full_preact", (0, 1, 2)),
             (im.wide_resnet(10, 2, dropout=0.3), "full_preact", (0, 1, 2))]
    for net, kind, which in cases:
        units = im.residual_units(net)
        for i in which:
            c_in = next(m for m in _leaves(units[i]) if isinstance(m, nn.Conv2d)).in_channels
            x = torch.randn(2, c_in, 8, 8, dtype=torch.float64) * 2 + 0.5
            _check_shared_preact(units[i], kind, x)


@pytest.mark.parametrize("kind", ["full_preact", "relu_preact"])
def test_unit_that_keeps_dimensions_adds_the_raw_input(kind):
    torch.manual_seed(0)
    unit = _randomise_bn(im.make_unit(kind, "identity", 16, 16, 1, "basic").double()).eval()
    assert isinstance(unit.preact, nn.Identity)
    x = torch.randn(2, 16, 8, 8, dtype=torch.float64) * 2 + 0.5
    P, G = _split(unit, kind)
    with torch.no_grad():
        torch.testing.assert_close(unit(x), x + G(P(x)), rtol=1e-10, atol=1e-10)


def test_paper_b_dense_layer_is_dot_bn_relu():
    torch.manual_seed(0)
    layer = im.models.units.dense_layer(6, 4).double().train()
    x = torch.randn(32, 6, dtype=torch.float64) * 3 + 1
    lin = layer[0]
    assert lin.bias is None                                   # BN follows: no bias
    z = x @ lin.weight.T
    # BN weight 1, bias 0
    want = torch.relu((z - z.mean(0)) / torch.sqrt(z.var(0, unbiased=False) + 1e-5))
    torch.testing.assert_close(layer(x), want, rtol=1e-8, atol=1e-8)


def test_dropout_shortcut_in_training_adds_the_residual_to_the_masked_shortcut():
    torch.manual_seed(0)
    u = im.make_unit("full_preact", "dropout", p=0.25).double().train()
    assert im.unit_layout(u)["on_shortcut"] == "dropout 0.25"
    s = torch.ones(1, 16, 32, 32, dtype=torch.float64)
    r = torch.randn_like(s)
    # y = m * h(s) + r with m in {0, 1}, mean 1 - p
    mask = u.shortcut(s, r) - r
    assert set(mask.round(decimals=12).unique().tolist()) == {0.0, 1.0}
    assert mask.mean().item() == pytest.approx(0.75, abs=0.03)
    assert torch.equal(im.make_unit("full_preact", "dropout",
                                    p=0.0).train().shortcut(s.float(), r.float()),
                       s.float() + r.float())     # p = 0 is allowed: the identity shortcut
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        im.make_unit("full_preact", "dropout", p=1.0)


# --- strides, per convolution ---------------------------------------------------------------------

def _conv_strides(module, x):
    """(declared stride, measured stride) of every conv of `module` in forward order, from its real
    output."""
    out = []
    hooks = [m.register_forward_hook(lambda m, i, o: out.append((m.stride[0],
                                                                 i[0].shape[-1] // o.shape[-1])))
             for m in module.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        module(x)
    for h in hooks:
        h.remove()
    return out


@pytest.mark.parametrize("unit", list(im.UNITS))
@pytest.mark.parametrize("block, stride_at, expected", [
    ("basic", "first", [2, 1]), ("basic", "3x3", [2, 1]), ("single", "first", [2]),
    ("bottleneck", "first", [2, 1, 1]), ("bottleneck", "3x3", [1, 2, 1]),
])
def test_downsampling_unit_strides_per_convolution(unit, block, stride_at, expected):
    torch.manual_seed(0)
    u = im.make_unit(unit, "identity", 16, 32, 2, block, stride_at=stride_at).eval()
    x = torch.randn(2, 16, 8, 8)
    measured = _conv_strides(u.residual, x if isinstance(u.preact, nn.Identity) else u.preact(x))
    assert [s for s, _ in measured] == expected
    assert [m for _, m in measured] == expected          # the output sizes say the same
    assert u(x).shape == (2, 32, 4, 4)
    with pytest.raises(ValueError, match="unknown stride placement 'last'"):
        im.make_unit(unit, "identity", 16, 32, 2, block, stride_at="last")
    with pytest.raises(ValueError, match="unknown preact placement 'twice'"):
        im.make_unit(unit, "identity", 16, 32, 2, block, preact="twice")


def test_strides_of_every_unit_of_a_cifar_resnet():
    torch.manual_seed(0)
    for unit in ("original", "full_preact"):
        net = im.cifar_resnet(20, unit).eval()
        per_unit = []
        hooks = [u.register_forward_pre_hook(lambda m, i: per_unit.append(_conv_strides(m.residual, m.preact(i[0]))))
                 for u in im.residual_units(net)]
        net(torch.randn(1, 3, 16, 16))
        for h in hooks:
            h.remove()
        strides = [[s for s, _ in u] for u in per_unit]
        assert strides == [[1, 1]] * 3 + [[2, 1]] + [[1, 1]] * 2 + [[2, 1]] + [[1, 1]] * 2
        assert all(s == m for u in per_unit for s, m in u)
