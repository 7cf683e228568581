"""Removing residual blocks without retraining (Paper B Figs 5 and 7): exact identities, orders,
curves."""
import pytest
import torch

import idmap_lib as im
from idmap_lib.models import pruning


def _net(kind="gresnet", d=10):
    torch.manual_seed(0)
    return im.mlp(kind, d=d).eval()


def test_a_removed_block_is_exactly_the_identity_and_equals_a_closed_gate():
    net = _net()
    units = im.residual_units(net)
    x = torch.randn(7, 50)
    n_params = sum(p.numel() for p in net.parameters())
    with pruning.removed(net, [2]):
        assert torch.equal(units[2](x), x)              # x_{l+1} = x_l, bit for bit
        # the branch stays in the model, unused
        assert sum(p.numel() for p in net.parameters()) == n_params
        out_removed = net(torch.rand(5, 1, 28, 28, generator=torch.Generator().manual_seed(1)))
    with torch.no_grad():
        k = units[2].k.clone()
        # Paper B: k <= 0 makes the block an identity
        units[2].k.fill_(-0.5)
        out_gate = net(torch.rand(5, 1, 28, 28, generator=torch.Generator().manual_seed(1)))
        units[2].k.copy_(k)
    assert torch.equal(out_removed, out_gate)
    assert not torch.equal(units[2](x), x)               # and the block is back after the context


def test_orders_and_curve():
    net = _net()
    with torch.no_grad():
        for i, u in enumerate(im.residual_units(net)):
            u.k.fill_([0.9, 0.1, 0.5, 0.3, 0.7][i])
    assert pruning.by_gate(net) == [1, 3, 2, 4, 0]
    assert sorted(pruning.at_random(net, seed=3)) == list(range(5))
    assert pruning.at_random(net, seed=3) == pruning.at_random(net,
                                                               seed=3) != pruning.at_random(net, seed=4)
    x = torch.rand(16, 1, 28, 28)
    base = net(x)
    dist = pruning.curve(net, [1, 3], lambda m: float((m(x) - base).abs().max()))
    assert dist[0] == 0 and dist[1] > 0 and dist[2] > 0 and len(dist) == 3
    assert torch.equal(net(x), base)                     # the model is left as it was
    with pytest.raises(ValueError, match="gated model"):
        pruning.by_gate(_net("resnet"))


def test_bad_blocks_are_clear_errors():
    with pytest.raises(ValueError, match="outside 0..4"):
        with pruning.removed(_net(), [5]):
            pass
    net = im.cifar_resnet(20)
    with pytest.raises(ValueError, match="would not become an identity"):
        with pruning.removed(net, [3]):                  # the first unit of stage 2 projects
            pass
