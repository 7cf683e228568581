"""The three mechanism measurements (book/evidence/mechanisms.py), each on a tiny network against a
hand computation, their records (looked up, never measured twice) and the claims' evaluation by the
rule."""
import json
import math

import pytest
import torch
import torch.nn as nn

import idmap_lib as im
from idmap_book.evidence import mechanisms as mech
from idmap_book.maths import probes
from idmap_lib.models.introspect import post_relu, weight_layers


def _stack(depth, lam, zero=False, seed=0):
    model = probes.lambda_stack(depth, lam, channels=2, seed=seed)
    return im.zero_residuals(model) if zero else model


@pytest.mark.parametrize("lam", [1.0, 0.5, 1.1])
def test_direct_share_is_one_when_the_branches_are_zero(lam):
    """F = 0: x_L = λ^(L-l) x_l exactly, so the direct term carries all of x_L and the branches
    nothing."""
    x = probes.probe_input(2, 4, 2)
    v = mech.signal_along(_stack(6, lam, zero=True), x)
    assert v["log10_share"] == pytest.approx([0.0] * 7, abs=1e-12)
    assert v["branch_ratio"] == [0.0] * 6
    rms0 = float(x.norm()) / math.sqrt(x.numel())
    assert v["rms"] == pytest.approx([rms0 * lam ** l for l in range(7)], rel=1e-12)
    assert v["log10_grad_ratio"] == pytest.approx([(6 - l) * math.log10(lam) for l in range(7)],
                                                  abs=1e-12)


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
    assert v["log10_share"] == pytest.approx([math.log10(lam ** 2 * n[0] / n[2]),
                                              math.log10(lam * n[1] / n[2]), 0.0])
    assert v["branch_ratio"] == pytest.approx([float(f0.norm()) / (lam * n[0]),
                                               float(f1.norm()) / (lam * n[1])])
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
    # 0 is not negative: ReLU keeps it (as 0)
    assert mech.negative_fraction(x) == pytest.approx(2 / 6)


def _net():
    torch.manual_seed(0)
    return im.cifar_resnet(8, "original", width_scale=0.25)  # 3 basic units, widths 4/8/16


def test_watch_sees_each_weight_layer_input_and_y_l():
    """Every weight layer's input std and the negative fraction of y_l (the post ReLU's input),
    against the same tensors caught by separate hooks; nothing is recorded while off."""
    model, x = _net().train(), torch.randn(4, 3, 8, 8)
    seen, ys = {}, {}
    units = im.residual_units(model)
    hooks = [layer.register_forward_pre_hook(lambda m, a, k=(k,
                                                             j): seen.__setitem__(k, a[0].detach().clone()))
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
    assert snap["logits_std"] == pytest.approx(float(model(x).detach().std(correction=0)), rel=1e-5)
    assert all(not layer._forward_pre_hooks for u in units for layer in weight_layers(u))  # removed


def test_first_weight_layer_reads_a_known_input():
    """A unit's first weight layer in the original unit reads x_l itself: its std is the std of the
    input."""
    torch.manual_seed(0)
    unit = im.make_unit("original", "identity", 2, 2).train()
    watch = mech.Watch(nn.Sequential(unit))
    watch.on = True
    x = torch.arange(2 * 2 * 3 * 3, dtype=torch.float32).reshape(2, 2, 3, 3)
    unit(x)
    assert watch.stds[0][0] == pytest.approx(float(x.std(correction=0)))
    # full pre-activation's first weight layer reads BN+ReLU of x: normalised whatever the scale of
    # x
    pre = mech.Watch(nn.Sequential(u := im.make_unit("full_preact", "identity", 2, 2).train()))
    pre.on = True
    u(1000 * x)
    assert pre.stds[0][0] < 1.0


def test_introspect_helpers():
    original, preact = im.make_unit("original"), im.make_unit("full_preact")
    assert post_relu(original) is original.post and post_relu(preact) is None
    assert [type(m) for m in weight_layers(im.make_unit("original", "identity", 4, 8, 2,
                                                        "bottleneck"))] == \
        [nn.Conv2d] * 4  # three in F, the projection last


def test_training_forwards_records_the_steps_asked(tmp_path):
    """Two steps of a tiny CIFAR-scale recipe through the engine: forwards at steps 0 and 1, each
    unit's layers."""
    from idmap_lib.engine import data as data_mod

    cfg = mech.recipe_of(110, "original", 0)
    cfg["model"]["kwargs"].update(depth=8, width_scale=0.25)
    cfg["subset"] = {"train_per_class": 30, "test_per_class": 3}
    gen = torch.Generator().manual_seed(0)
    data = data_mod.Data("cifar10", torch.randint(0, 256, (300, 3, 32, 32), dtype=torch.uint8,
                                                  generator=gen),
                         torch.arange(300) % 10, torch.randint(0, 256, (30, 3, 32, 32),
                                                               dtype=torch.uint8,
                                                               generator=gen),
                                                               torch.arange(30) % 10)
    v = mech.training_forwards(cfg, [0, 1], data=data)
    assert [f["step"] for f in v["forwards"]] == [0, 1]
    assert [len(u) for u in v["forwards"][0]["weight_input_std"]] == [2, 2, 2]
    # it trained
    assert v["forwards"][0]["weight_input_std"] != v["forwards"][1]["weight_input_std"]
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
    save_result({"config": spec, "config_hash": config_hash(spec), "values": values, "wall_s": 1.0,
                 "hardware": {"cpu": "test", "torch_threads": 1}, "versions": {"torch": "test"},
                 "date": "2026-01-01T00:00:00+00:00"}, out_dir)


def test_evaluate_applies_the_rule_to_per_seed_values(tmp_path):
    claim = next(c for c in mech.MECHANISM_CLAIMS if c.key == "m_truncation_grows_with_depth")
    assert mech.evaluate(claim, out_dir=tmp_path)["verdict"] == "not run yet"
    for s, (a, b) in enumerate([(0.10, 0.30), (0.12, 0.31), (0.11, 0.29)]):
        for depth, frac in ((110, a), (1001, b)):
            fwd = [{"step": t, "negative_fraction": [frac, frac]} for t in mech.AT[depth]]
            _fake(tmp_path, mech.training_spec(depth, "original", s), {"forwards": fwd})
    res = mech.evaluate(claim, out_dir=tmp_path)
    assert res["verdict"] == "reproduced"
    assert res["parts"][0][1]["xa"] == [0.10, 0.12, 0.11]


def test_evaluate_corrects_a_claims_parts_for_their_number(tmp_path):
    """Holm over a claim's parts, as judge.evaluate: two parts each reproduced alone (p ~ 0.03-0.04
    < 5 %) are both inconclusive once the smallest p is tested at 5 % / 2; with one part clear of
    that, the other is tested at 5 % and passes."""
    # lam1 < lam0.9, lam0.5
    claim = next(c for c in mech.MECHANISM_CLAIMS if c.key == "m_branches_keep_size")

    def record(shifts):
        for lam, shift in shifts.items():
            for s, x in enumerate((0.0, 0.1, 0.2) if lam == 1.0 else (0.0, 0.15, 0.25)):
                _fake(tmp_path, mech.forward_spec(lam, s),
                      {"branch_ratio": [1.0, 10 ** (x + shift)]})
    record({1.0: 0.0, 0.9: 0.26, 0.5: 0.27})
    res = mech.evaluate(claim, out_dir=tmp_path)
    alone = [mech.compare(t, r["xa"], r["xb"])["verdict"] for t, r in res["parts"]]
    assert (alone == ["reproduced", "reproduced"]
            and all(0.025 < r["p"] < 0.05 for _, r in res["parts"]))
    assert ([r["verdict"] for _, r in res["parts"]] == ["inconclusive"] * 2
            and res["verdict"] == "inconclusive")
    assert sorted(r["holm"][1] for _, r in res["parts"]) == pytest.approx([0.025, 0.05])
    record({0.5: 2.0})                                               # lam0.5 far above: its p tiny
    res = mech.evaluate(claim, out_dir=tmp_path)
    assert ([r["verdict"] for _, r in res["parts"]] == ["reproduced"] * 2
            and res["verdict"] == "reproduced")


def test_spread_metric():
    assert mech._spread([[1.0, 10.0], [2.0, None]]) == pytest.approx(1.0)


def _fake_records(out_dir):
    """Made-up records of every measurement, with known numbers (figures and summaries read only
    records)."""
    for s in mech.SEEDS:
        for lam in mech.LAMS:
            L = 4
            _fake(out_dir, mech.forward_spec(lam, s), {
                "rms": [1.0 + s] * (L + 1),
                "log10_share": [(L - l) * math.log10(lam) for l in range(L + 1)],
                "branch_ratio": [0.5] * L,
                "log10_grad_ratio": [(L - l) * 0.1 for l in range(L + 1)]})
        for depth in mech.DEPTHS:
            for unit in mech.UNITS:
                neg = [0.25, 0.5, 0.75] if unit == "original" else [None] * 3
                fwd = [{"step": t, "lr": 0.01, "weight_input_std": [[1.0, 2.0], [4.0, 1.0],
                                                                    [1.0, 1.0]],
                        "negative_fraction": neg, "fc_input_std": 1.0, "logits_std": 2.0}
                        for t in mech.AT[depth]]
                _fake(out_dir, mech.training_spec(depth, unit, s), {"forwards": fwd})


def test_summaries_and_figures_read_the_records(tmp_path):
    from idmap_book.figures import mechanism_figures as mf

    assert (mf.forward_figure(out_dir=tmp_path) is None
            and mf.truncation_figure(out_dir=tmp_path) is None)
    _fake_records(tmp_path)
    fwd = mf.forward_summary(out_dir=tmp_path)
    assert (fwd[0.5][2]["rms_L"] == 3.0
            and fwd[0.5][0]["log10_share_x0"] == pytest.approx(4 * math.log10(0.5)))
    w = mf.weight_input_summary(out_dir=tmp_path)[("original", 110)][0]["steps"][0]
    assert (w["spread"] == pytest.approx(math.log10(4))
            and (w["first_0"], w["first_L"]) == (1.0, 1.0))
    t = mf.truncation_summary(out_dir=tmp_path)[1001][1][0]
    assert (t["mean"], t["first_third"], t["last_third"]) == (0.5, 0.25, 0.75)
    assert mf.over_seeds(mf.truncation_summary(out_dir=tmp_path)[110], "mean", step=0) == [0.5] * 3
    # the gain model: g_l^2 = λ^2 + c^2 r_l^2 with r_l = λ * 0.5 and a gain of 10^0.1 a unit
    c2 = mf.gain_fit(out_dir=tmp_path)[0.9][0]["c2"]
    assert 0.9 ** 2 + c2 * (0.9 * 0.5) ** 2 == pytest.approx(10 ** 0.2, rel=1e-9)
    for f in (mf.forward_figure, mf.weight_input_figure, mf.truncation_figure):
        assert f(out_dir=tmp_path).data
    assert set(mf.verdicts(out_dir=tmp_path)) == {c.key for c in mech.MECHANISM_CLAIMS}
    assert len(mf.claims_table(out_dir=tmp_path)) == len(mech.MECHANISM_CLAIMS)
    # equal sides
    assert list(mf.claims_table(["m_truncation_grows_with_depth"],
                                out_dir=tmp_path)["verdict"]) == ["inconclusive"]


def test_metrics_read_the_right_entry(tmp_path):
    """Each claim metric on a record whose entries all differ."""
    fwd = {"values": {"log10_share": [-5.0, -1.0, 0.0], "branch_ratio": [10.0, 100.0],
                      "log10_grad_ratio": [3.0, 1.0, 0.0]}}
    assert [mech.METRICS[k](fwd) for k in ("log10_share_x0", "log10_branch_ratio_last",
                                           "log10_grad_ratio_0")] == \
        [-5.0, 2.0, 3.0]
    steps = [{"step": t, "weight_input_std": [[1.0, 10.0 ** (t + 1)]],
              "negative_fraction": [t / 100, t / 50]}
             for t in mech.AT[1001]]
    tr = {"values": {"forwards": steps}}
    assert mech.METRICS["input_std_spread_init"](tr) == pytest.approx(1.0)
    assert mech.METRICS["input_std_spread_last"](tr) == pytest.approx(mech.AT[1001][-1] + 1)
    assert mech.METRICS["truncation_mean"](tr) == pytest.approx(1.5 * mech.TRUNCATION_STEP / 100)
    from idmap_book.figures import mechanism_figures as mf
    assert (mf.span([0.5, 0.25]), mf.span([1.0, 1.0])) == ("0.25–0.5", "1")
    assert mf.span([-46.1, -45.2], ".0f", tens=True) == "$10^{-46}$ to $10^{-45}$"


def test_the_jump_watch_records_every_unit_at_the_steps_asked_in_the_very_training_of_the_run(cifar):
    """Issue 40.2: per unit the weight layers' input std, the branch beside its input and the
    gradient norm, the classifier's input; the measurement's logged windows are those a plain
    training of the same recipe logs."""
    from idmap_book.plan import jump_watch
    from idmap_lib.engine import recipes, schedule, trainer

    cfg = recipes.config("a_swaps", "original+final_bn_relu-110", "cpu_step_warmup", 0)
    # a small net of the same recipe: the mechanism, not the numbers
    cfg["model"]["kwargs"].update(depth=8)
    cfg.update(steps=24, log_every=4, eval_every=12, batch_size=16,
               subset={"train_per_class": 32, "test_per_class": 10},
               schedule=schedule.step_schedule(24, 0.1, 10, milestones=[20], warmup_steps=8,
                                              warmup_lr=0.01))
    data = cifar
    rec = {"values": jump_watch.watch_training(cfg, [0, 7, 8, 9], data)}
    fw = rec["values"]["forwards"]
    assert ([f["step"] for f in fw] == [0, 7, 8, 9]
            and [f["lr"] for f in fw] == [0.01, 0.01, 0.1, 0.1])
    units = len(fw[0]["weight_input_std"])
    assert units == 3 and all(len(f["branch_ratio"]) == units == len(f["grad_norm"]) for f in fw)
    assert (all(g > 0 for f in fw for g in f["grad_norm"])
            and all(b > 0 for f in fw for b in f["branch_ratio"]))
    assert fw[0]["fc_input_std"] > 0 and len(jump_watch.summary(rec)) == 4
    plain = trainer.train(cfg, data=data, max_steps=12, write_result=False, progress=False)
    assert jump_watch.same_run(rec, plain)
    other = trainer.train({**cfg, "seed": 1}, data=data, max_steps=12, write_result=False,
                          progress=False)
    assert not jump_watch.same_run(rec, other)


def test_a_mechanism_claim_is_read_again_without_each_record_as_the_claims_are(monkeypatch):
    """Issue 40.3: the mechanism claims get the claims' evaluation, leave-one-out included."""
    from idmap_book.evidence.claims import Claim

    claim = Claim("k", "", "", mech.TRAINING, (mech._b("a-110", "b-110", "m"),))
    vals = {"a-110": [1.0, 1.1, 1.2, 1.0], "b-110": [2.0, 2.1, 2.2, 9.0]}
    monkeypatch.setattr(mech, "_records", lambda v, e, s, o: [{"config": {"seed": i}, "x": x}
                                                               for i, x in enumerate(vals[v])])
    monkeypatch.setitem(mech.METRICS, "m", lambda r: r["x"])
    got = mech.evaluate(claim)
    assert got["verdict"] == "inconclusive" and "resolvable" in got["parts"][0][1]
    assert ("b-110", 3, "reproduced") in got["fragile"]  # the one far-off record decides it
