"""The three mechanism measurements (book/mechanisms.py), each on a tiny network against a hand computation, their
records (looked up, never measured twice) and the claims' evaluation by the rule."""
import json
import math

import pytest
import torch
import torch.nn as nn

import idmap_lib as im
from idmap_lib.book import mechanisms as mech
from idmap_lib.book import probes
from idmap_lib.models.introspect import post_relu, weight_layers


def _stack(depth, lam, zero=False, seed=0):
    model = probes.lambda_stack(depth, lam, channels=2, seed=seed)
    return im.zero_residuals(model) if zero else model


@pytest.mark.parametrize("lam", [1.0, 0.5, 1.1])
def test_direct_share_is_one_when_the_branches_are_zero(lam):
    """F = 0: x_L = λ^(L-l) x_l exactly, so the direct term carries all of x_L and the branches nothing."""
    x = probes.probe_input(2, 4, 2)
    v = mech.signal_along(_stack(6, lam, zero=True), x)
    assert v["log10_share"] == pytest.approx([0.0] * 7, abs=1e-12)
    assert v["branch_ratio"] == [0.0] * 6
    rms0 = float(x.norm()) / math.sqrt(x.numel())
    assert v["rms"] == pytest.approx([rms0 * lam ** l for l in range(7)], rel=1e-12)
    assert v["log10_grad_ratio"] == pytest.approx([(6 - l) * math.log10(lam) for l in range(7)], abs=1e-12)


def test_signal_along_against_a_hand_computation():
    """Two units, the forward done by hand: x1 = λ x0 + F0(x0), x2 = λ x1 + F1(x1)."""
    lam, model = 0.9, _stack(2, 0.9)
    x0 = probes.probe_input(2, 4, 2)
    with probes.batch_statistics(model), torch.no_grad():
        f0 = model[0].residual(x0)
        x1 = lam * x0 + f0
        f1 = model[1].residual(x1)
        x2 = lam * x1 + f1
    v = mech.signal_along(model, x0)
    n = [float(t.norm()) for t in (x0, x1, x2)]
    assert v["log10_share"] == pytest.approx([math.log10(lam ** 2 * n[0] / n[2]), math.log10(lam * n[1] / n[2]), 0.0])
    assert v["branch_ratio"] == pytest.approx([float(f0.norm()) / (lam * n[0]), float(f1.norm()) / (lam * n[1])])
    assert v["rms"] == pytest.approx([t / math.sqrt(x0.numel()) for t in n])


def test_signal_along_refuses_a_shortcut_that_is_not_a_scalar():
    model = nn.Sequential(im.make_unit("original", "identity", 2, 2))
    with pytest.raises(ValueError, match="f identity"):
        mech.signal_along(model, probes.probe_input(2, 4, 2, dtype=torch.float32))


def test_std_and_negative_fraction_of_known_tensors():
    x = torch.tensor([[-2.0, -1.0, 0.0, 1.0, 2.0, 6.0]])
    mean = sum([-2.0, -1.0, 0.0, 1.0, 2.0, 6.0]) / 6
    hand = math.sqrt(sum((v - mean) ** 2 for v in [-2.0, -1.0, 0.0, 1.0, 2.0, 6.0]) / 6)
    assert mech.tensor_std(x) == pytest.approx(hand)
    assert mech.negative_fraction(x) == pytest.approx(2 / 6)  # 0 is not negative: ReLU keeps it (as 0)


def _net():
    torch.manual_seed(0)
    return im.cifar_resnet(8, "original", width_scale=0.25)  # 3 basic units, widths 4/8/16


def test_watch_sees_each_weight_layer_input_and_y_l():
    """Every weight layer's input std and the negative fraction of y_l (the post ReLU's input), against the
    same tensors caught by separate hooks; nothing is recorded while off."""
    model, x = _net().train(), torch.randn(4, 3, 8, 8)
    seen, ys = {}, {}
    units = im.residual_units(model)
    hooks = [layer.register_forward_pre_hook(lambda m, a, k=(k, j): seen.__setitem__(k, a[0].detach().clone()))
             for k, u in enumerate(units) for j, layer in enumerate(weight_layers(u))]
    hooks += [u.post.register_forward_pre_hook(lambda m, a, k=k: ys.__setitem__(k, a[0].detach().clone()))
              for k, u in enumerate(units)]
    watch = mech.Watch(model)
    model(x)
    assert watch.snapshot()["weight_input_std"] == [[None, None]] * 3
    watch.on = True
    model(x)
    assert not watch.on  # one forward recorded per arming
    snap = watch.snapshot()
    watch.remove()
    for h in hooks:
        h.remove()
    for (k, j), t in seen.items():
        assert snap["weight_input_std"][k][j] == pytest.approx(float(t.std(correction=0)), rel=1e-6)
    for k, y in ys.items():
        assert snap["negative_fraction"][k] == pytest.approx(float((y < 0).double().mean()))
    assert snap["logits_std"] == pytest.approx(float(model(x).std(correction=0)), rel=1e-5)
    assert all(not layer._forward_pre_hooks for u in units for layer in weight_layers(u))  # removed


def test_first_weight_layer_reads_a_known_input():
    """A unit's first weight layer in the original unit reads x_l itself: its std is the std of the input."""
    torch.manual_seed(0)
    unit = im.make_unit("original", "identity", 2, 2).train()
    watch = mech.Watch(nn.Sequential(unit))
    watch.on = True
    x = torch.arange(2 * 2 * 3 * 3, dtype=torch.float32).reshape(2, 2, 3, 3)
    unit(x)
    assert watch.stds[0][0] == pytest.approx(float(x.std(correction=0)))
    # full pre-activation's first weight layer reads BN+ReLU of x: normalised whatever the scale of x
    pre = mech.Watch(nn.Sequential(u := im.make_unit("full_preact", "identity", 2, 2).train()))
    pre.on = True
    u(1000 * x)
    assert pre.stds[0][0] < 1.0


def test_introspect_helpers():
    original, preact = im.make_unit("original"), im.make_unit("full_preact")
    assert post_relu(original) is original.post and post_relu(preact) is None
    assert [type(m) for m in weight_layers(im.make_unit("original", "identity", 4, 8, 2, "bottleneck"))] == \
        [nn.Conv2d] * 4  # three in F, the projection last


def test_training_forwards_records_the_steps_asked(tmp_path):
    """Two steps of a tiny CIFAR-scale recipe through the engine: forwards at steps 0 and 1, each unit's layers."""
    from idmap_lib.engine import data as data_mod

    cfg = mech.recipe_of(110, "original", 0)
    cfg["model"]["kwargs"].update(depth=8, width_scale=0.25)
    cfg["subset"] = {"train_per_class": 30, "test_per_class": 3}
    gen = torch.Generator().manual_seed(0)
    data = data_mod.Data("cifar10", torch.randint(0, 256, (300, 3, 32, 32), dtype=torch.uint8, generator=gen),
                         torch.arange(300) % 10, torch.randint(0, 256, (30, 3, 32, 32), dtype=torch.uint8,
                                                               generator=gen), torch.arange(30) % 10)
    v = mech.training_forwards(cfg, [0, 1], data=data)
    assert [f["step"] for f in v["forwards"]] == [0, 1]
    assert [len(u) for u in v["forwards"][0]["weight_input_std"]] == [2, 2, 2]
    assert v["forwards"][0]["weight_input_std"] != v["forwards"][1]["weight_input_std"]  # it trained
    with pytest.raises(ValueError, match="increasing"):
        mech.training_forwards(cfg, [1, 0], data=data)


def test_measured_records_once_and_reads_it_back(tmp_path, monkeypatch):
    spec = mech.forward_spec(0.9, 0)
    spec["network"].update(depth=3, channels=2, size=4, batch=2)
    assert mech.measured(spec, tmp_path, compute=False) is None
    rec = mech.measured(spec, tmp_path)
    stored = json.loads(open(rec["path"]).read())
    assert stored["config"] == spec and stored["hardware"]["torch_threads"] == 1
    assert {"versions", "git", "date", "library_sha256", "wall_s"} <= set(stored)
    monkeypatch.setattr(mech, "forward_signal", lambda *a: pytest.fail("measured twice"))
    assert mech.measured(spec, tmp_path)["values"] == rec["values"]


def _fake(out_dir, spec, values):
    from idmap_lib.engine.results import config_hash, save_result
    save_result({"config": spec, "config_hash": config_hash(spec), "values": values}, out_dir)


def test_evaluate_applies_the_rule_to_per_seed_values(tmp_path):
    claim = next(c for c in mech.MECHANISM_CLAIMS if c["key"] == "m_truncation_grows_with_depth")
    assert mech.evaluate(claim, out_dir=tmp_path)["verdict"] == "not run yet"
    for s, (a, b) in enumerate([(0.10, 0.30), (0.12, 0.31), (0.11, 0.29)]):
        for depth, frac in ((110, a), (1001, b)):
            fwd = [{"step": t, "negative_fraction": [frac, frac]} for t in mech.AT[depth]]
            _fake(tmp_path, mech.training_spec(depth, "original", s), {"forwards": fwd})
    res = mech.evaluate(claim, out_dir=tmp_path)
    assert res["verdict"] == "reproduced"
    assert res["parts"][0][1]["xa"] == [0.10, 0.12, 0.11]


def test_spread_metric():
    assert mech._spread([[1.0, 10.0], [2.0, None]]) == pytest.approx(1.0)
