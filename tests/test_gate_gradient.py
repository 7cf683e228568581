"""Paper B's gate g(k) = ReLU(k) passes no gradient to k <= 0 (probes.gate_gradients), checked
against the hand computation on one gated block; and the shut gates of the recorded GResNets are
counted by metrics.shut_gates."""
import pytest
import torch
import torch.nn as nn

import idmap_lib as im
from idmap_book.figures import gate_figures as gf
from idmap_book.maths import probes
from idmap_lib.engine import results
from idmap_lib.models.shortcuts import Shortcut
from idmap_lib.models.units import GatedLayer, ResidualUnit


def _v(shape, seed=0):  # the probe's E = <v, output>, v ~ N(0, 1) from the seeded generator
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("k", [-0.5, -1e-6, 0.0, 1e-6, 0.3, 1.0])
def test_a_gate_at_k_at_most_0_gets_exactly_no_gradient(k):
    """One GResNet block u = x + ReLU(k) F(x), F linear: by hand, dE/dk = 1[k > 0] <v, F(x)>."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    block = nn.Sequential(ResidualUnit(nn.Sequential(lin), Shortcut(), gated=True)).double()
    x = torch.randn(4, 3, dtype=torch.float64)
    with torch.no_grad():
        hand = (k > 0) * float((_v((4, 3)) * (x @ lin.weight.T + lin.bias)).sum())
    got = probes.gate_gradients(block, x, k)
    assert got.shape == (1,) and float(got[0]) == pytest.approx(hand, rel=1e-12, abs=0)
    if k <= 0:
        # exactly: no step of any size moves a shut gate
        assert float(got[0]) == 0.0
    assert float(block[0].k.detach()) == 1.0                    # the gate is put back


def test_a_gated_layer_and_a_whole_gresnet_obey_the_same_rule():
    """Gated layer u = g f(x) + (1 - g) x: by hand dE/dk = 1[k > 0] <v, f(x) - x>; a GResNet of
    Paper B's MNIST net with cross-entropy: every gate 0 at k <= 0, every gate nonzero at k > 0."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    layer = nn.Sequential(GatedLayer(lin)).double()
    x = torch.randn(4, 3, dtype=torch.float64)
    with torch.no_grad():
        hand = float((_v((4, 3)) * (x @ lin.weight.T + lin.bias - x)).sum())
    assert float(probes.gate_gradients(layer, x, 0.5)[0]) == pytest.approx(hand, rel=1e-12)
    assert float(probes.gate_gradients(layer, x, -0.5)[0]) == 0.0
    net = im.mlp("gresnet", d=4, width=8)
    x, y = torch.rand(6, 1, 28, 28), torch.arange(6) % 10
    assert probes.gate_gradients(net, x, -0.1, y).abs().max() == 0
    assert probes.gate_gradients(net, x, 0.5, y).abs().min() > 0
    with pytest.raises(ValueError, match="no gates k"):
        probes.gate_gradients(im.mlp("resnet", d=2, width=8), x, 0.5, y)


def test_shut_gate_counts_read_the_recorded_gresnets(tmp_path):
    from fake_runs import mnist_run
    assert gf.shut_gate_counts(out_dir=tmp_path) == {}
    # k = 0 is shut: ReLU(0) = 0
    for seed, ks in enumerate(([0.5, 0.0, -0.1, 0.2], [0.5, 0.1, 0.2, 0.3])):
        results.save_result(mnist_run("gresnet-d100", seed, ks=ks), tmp_path)
    assert gf.shut_gate_counts(out_dir=tmp_path) == {0: (2, 4), 1: (0, 4)}
