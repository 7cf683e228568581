"""Fused training (idmap_lib.engine.fused): N runs of one architecture as one network equal the N
runs alone.

Exactness is checked in float64, where a grouped convolution and a plain one round alike to ~1e-15:
there every logged loss of a fused run equals its solo run's to 1e-9 over 12 steps. In float32 the
two round differently (~1e-6 relative in a gradient at initialisation) and training amplifies it;
that is measured, not hidden, in ``test_fused_training_in_float32_agrees_to_rounding``."""
import copy
import json
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from idmap_lib import cifar_resnet
from idmap_lib.engine.checkpoint import CheckpointError
from idmap_lib.engine.fused import Fused
from idmap_lib.engine.fused_models import FusedModels, fuse, unfuse
from idmap_lib.engine.recipes import config
from idmap_lib.engine.schedule import step_schedule
from idmap_lib.engine.trainer import train
from support import loop_of

train_fused = partial(train, stepper=Fused)

T1, T2 = "a_table1_shortcuts", "a_table2_activations"


def tiny(seed=0, experiment=T2, variant="original-110", steps=12, depth=8):
    """A CPU-scale recipe made tiny: depth 8, batch 16, 320 training images (no epoch boundary in 12
    steps), the step warm-up (lr 0.01 for 4 steps, then 0.1, / 5 at half) so that the lr moves
    inside the test."""
    cfg = config(experiment, variant, "cpu", seed)
    cfg["model"]["kwargs"]["depth"] = depth
    cfg.update(steps=steps, batch_size=16, log_every=2, eval_every=10,
               subset={"train_per_class": 32, "test_per_class": 10},
               divergence={"grace_fraction": None},
               schedule=step_schedule(steps, 0.1, 5, fractions=[0.5], warmup_steps=4,
                                      warmup_lr=0.01))
    return cfg


@pytest.fixture
def float64():
    was = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(was)


def _losses(result):
    return [(h["step"], h["train_loss"]) for h in result["history"]["train"]]


def _solo(cfg, cifar, **kw):
    return train(cfg, data=cifar, progress=False, write_result=False, amp="fp32",
                 channels_last=False, **kw)


def _assert_same_run(fused, solo, tol):
    assert fused["status"] == solo["status"] and fused["config_hash"] == solo["config_hash"]
    for (sa, la), (sb, lb) in zip(_losses(fused), _losses(solo), strict=True):
        assert sa == sb and abs(la - lb) <= tol, (sa, la, lb)
    assert [h["step"] for h in fused["history"]["test"]] == [h["step"]
                                                             for h in solo["history"]["test"]]
    assert fused["final"]["test_err"] == pytest.approx(solo["final"]["test_err"], abs=tol)
    # the spot check's fingerprint (checks/spotcheck.py): a fused run records its first steps'
    # losses as Run does
    assert len(fused["first_steps"]) == len(solo["first_steps"]) > 0
    assert fused["first_steps"] == pytest.approx(solo["first_steps"], abs=tol)
    assert set(fused) - {"fused"} == set(solo) and fused["training_hash"] == solo["training_hash"]


# ---------------------------------------------------------------- the fused network

def _trained_looking(models):
    with torch.no_grad():
        for m in models:
            for p in m.parameters():
                p.add_(0.05 * torch.randn_like(p))
            for mod in m.modules():
                if isinstance(mod, torch.nn.BatchNorm2d):
                    mod.running_mean.normal_()
                    mod.running_var.uniform_(0.5, 2)
    return models


def test_fused_network_computes_each_model_exactly(float64):
    torch.manual_seed(0)
    models = _trained_looking([cifar_resnet(8, unit="full_preact") for _ in range(3)])
    fused = fuse(copy.deepcopy(models))
    x, y = torch.randn(3, 8, 3, 32, 32), torch.randint(0, 10, (3, 8))
    loss = torch.vmap(F.cross_entropy)(fused(x), y)
    loss.sum().backward()
    # training mode: outputs, every gradient, the running statistics it updates
    for r, m in enumerate(models):
        m.train()
        alone = F.cross_entropy(m(x[r]), y[r])
        assert alone.item() == pytest.approx(loss[r].item(), abs=1e-12)
        alone.backward()
        for name, p in m.named_parameters():
            assert torch.allclose(fused.params[name].grad[r], p.grad, atol=1e-12), name
        for name, b in m.named_buffers():
            assert torch.equal(fused.buffers[name][r], b) if not b.is_floating_point() else \
                torch.allclose(fused.buffers[name][r], b, atol=1e-12), name
    fused.eval()
    # evaluation: one batch for every model, their running statistics
    shared = fused(x[0], shared=True)
    for r, m in enumerate(models):
        assert torch.allclose(shared[r], m.eval()(x[0]), atol=1e-12)


def test_fuse_then_unfuse_is_exact():
    torch.manual_seed(1)
    models = _trained_looking([cifar_resnet(8) for _ in range(2)])
    fused = fuse(models)
    back = unfuse(fused)
    for m, sd in zip(models, back):
        assert list(sd) == list(m.state_dict())
        assert all(torch.equal(sd[k], v) for k, v in m.state_dict().items())
    swapped = FusedModels([cifar_resnet(8), cifar_resnet(8)])
    swapped.load(back[::-1])
    assert all(torch.equal(a, b) for a, b in zip(swapped.unfuse()[0].values(), back[1].values()))


def test_only_one_architecture_fuses():
    with pytest.raises(ValueError, match="not one architecture.*units"):
        fuse([cifar_resnet(8), cifar_resnet(14)])
    with pytest.raises(ValueError, match="other modules than model 0"):
        fuse([cifar_resnet(8, unit="original"), cifar_resnet(8, unit="full_preact")])
    with pytest.raises(ValueError, match="draw random numbers in training"):
        fuse([cifar_resnet(8, shortcut="dropout"), cifar_resnet(8, shortcut="dropout")])
    with pytest.raises(ValueError, match="share their recipe; they differ in 'steps'"):
        train_fused([tiny(0), tiny(1, steps=30)])
    with pytest.raises(ValueError, match="twice"):
        train_fused([tiny(0), tiny(0)])
    with pytest.raises(ValueError,
                       match=r"a fused run does not take compile \(torch.compile of a vmapped "
                             r"network .*\); channels_last \(.*\): train such runs one at a time"):
        # (options.TrainOptions.refuse, each with its reason; before any data)
        train_fused([tiny(0), tiny(1)], compile=True, channels_last=True, move=True)
    with pytest.raises(ValueError, match="fp16"):
        loop_of([tiny(0), tiny(1)], amp="fp16", device="cpu", progress=False, stepper=Fused)


# ---------------------------------------------------------------- fused training equals solo
# training

def test_fused_training_equals_each_run_alone(cifar, float64):
    cfgs = [tiny(s) for s in (0, 1, 2)]
    fused = train_fused(cfgs, data=cifar, progress=False, write_result=False, amp="fp32")
    for cfg, f in zip(cfgs, fused):
        _assert_same_run(f, _solo(cfg, cifar), 1e-9)
        assert f["fused"]["runs"] == 3 and f["seed"] == cfg["seed"]
    # three different runs came out
    assert len({round(f["final"]["train_loss"], 6) for f in fused}) == 3


@pytest.mark.parametrize("experiment, variants", [
    # factors: per-model scalar buffers
    (T1, ("constant_scaling-0.5-1", "constant_scaling-0.5-0.5")),
    (T1, ("exclusive_gating-b0", "exclusive_gating-b-6")),         # gate biases: init-only values
])
def test_scalar_variants_of_one_architecture_fuse(cifar, float64, experiment, variants):
    cfgs = [tiny(0, experiment, v) for v in variants]
    fused = train_fused(cfgs, data=cifar, progress=False, write_result=False, amp="fp32")
    for cfg, f in zip(cfgs, fused):
        _assert_same_run(f, _solo(cfg, cifar), 1e-9)


def test_fused_training_in_float32_agrees_to_rounding(cifar):
    """float32: equal to the solo run's losses to 1e-5 for the first logged windows; later, training
    amplifies the rounding difference of grouped vs plain convolutions (not a different computation:
    see float64)."""
    cfgs = [tiny(s) for s in (0, 1)]
    for cfg, f in zip(cfgs, train_fused(cfgs, data=cifar, progress=False, write_result=False,
                                        amp="fp32")):
        solo = _solo(cfg, cifar)
        diffs = [abs(a[1] - b[1]) for a, b in zip(_losses(f), _losses(solo))]
        assert max(diffs[:2]) <= 1e-5, diffs
        assert max(diffs) <= 0.05 and f["status"] == solo["status"] == "ok"


def test_one_diverging_run_fails_alone(cifar, float64):
    cfgs = [tiny(s) for s in (0, 1, 2)]
    run = loop_of(cfgs, data=cifar, progress=False, write_result=False, amp="fp32",
                  stepper=Fused)
    with torch.no_grad():
        run.stepper.fused.params["fc.weight"][1].fill_(float("nan"))
    while not run.done:
        run.advance()
    out = run.finish()
    assert [r["status"] for r in out] == ["ok", "fail", "ok"]
    assert out[1]["fail"] == {"step": 0, "reason": "non-finite training loss"}
    for r in (0, 2):
        _assert_same_run(out[r], _solo(cfgs[r], cifar), 1e-9)


# ---------------------------------------------------------------- checkpoints: a fused run's are
# the solo runs'

def test_fused_checkpoints_resume_solo_and_solo_ones_resume_fused(cifar, float64, tmp_path):
    cfgs = [tiny(s) for s in (0, 1)]
    whole = [_solo(c, cifar) for c in cfgs]
    kw = dict(data=cifar, progress=False, write_result=False, amp="fp32")
    stopped = train_fused(cfgs, checkpoint_dir=tmp_path / "a", max_steps=8, **kw)
    assert [s["status"] for s in stopped] == ["stopped", "stopped"]
    for c, w in zip(cfgs, whole):  # fused for 8 steps, then each alone to the end
        _assert_same_run(_solo(c, cifar, checkpoint_dir=tmp_path / "a", resume=True), w, 1e-9)
    for c in cfgs:  # each alone for 8 steps, then fused to the end
        _solo(c, cifar, checkpoint_dir=tmp_path / "b", max_steps=8)
    for f, w in zip(train_fused(cfgs, checkpoint_dir=tmp_path / "b", resume=True, **kw), whole):
        _assert_same_run(f, w, 1e-9)
    (tmp_path / "b" / next(p.name for p in (tmp_path / "b").iterdir())).unlink()
    with pytest.raises(CheckpointError, match="resume all or none"):
        train_fused(cfgs, checkpoint_dir=tmp_path / "b", resume=True, **kw)


def test_results_are_the_solo_runs_results(cifar, tmp_path):
    cfgs = [tiny(s, steps=6) for s in (0, 1)]
    out = train_fused(cfgs, data=cifar, progress=False, out_dir=tmp_path, amp="fp32")
    for cfg, r in zip(cfgs, out):
        saved = json.load(open(r["path"]))
        assert saved["config"] == cfg and saved["status"] == "ok" and saved["fused"]["runs"] == 2
        from idmap_lib.engine.results import find_result
        assert find_result(cfg, tmp_path)["path"] == r["path"]  # looked up like any solo run


# ---------------------------------------------------------------- the command line

def test_cli_fused_trains_the_listed_seeds_as_one(monkeypatch):
    from idmap_lib.cli import main
    from idmap_lib.engine import trainer

    seen = {}

    def fake(cfgs, data=None, options=None, stepper=None):
        assert stepper is Fused
        seen.update(cfgs=cfgs, options=options)
        return [{"status": "stopped", "step": 1} for _ in cfgs]

    monkeypatch.setattr(trainer, "train", fake)
    rc = main(["train", "--experiment", T2, "--variant", "full_preact-110", "--seed", "0,1,2",
               "--fused",
               "--max-steps", "1", "--cuda-graph", "--scale", "full"])
    assert rc == 0 and [c["seed"] for c in seen["cfgs"]] == [0, 1, 2]
    assert seen["options"].cuda_graph is True and seen["options"].max_steps == 1


def test_cli_fused_refuses_what_cannot_fuse(capsys):
    from idmap_lib.cli import main

    rc = main(["train", "--experiment", T2, "--variant", "original-110,original-164", "--fused",
               "--max-steps", "1"])
    assert rc == 2 and "cannot be fused" in capsys.readouterr().err
    rc = main(["train", "--experiment", T2, "--variant", "original-110", "--seed", "7,8", "--fused",
               "--compile",
               "--checkpoint-minutes", "3"])
    err = capsys.readouterr().err  # (checkpoint_minutes: the loop's, so a fused run's too)
    assert rc == 2 and "error: --fused does not take compile (" in err
    assert "checkpoint_minutes" not in err


# ---------------------------------------------------------------- on a GPU: the fused step as one
# CUDA graph

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fused_cuda_graph_trains_as_the_eager_fused_step(cifar):
    cfgs = [tiny(s, steps=30) for s in (0, 1)]
    kw = dict(data=cifar, progress=False, write_result=False, amp="fp32", deterministic=True)
    eager, graph = train_fused(cfgs, **kw), train_fused(cfgs, cuda_graph=True, **kw)
    for e, g in zip(eager, graph):
        assert g["cuda_graph"] is True and e["cuda_graph"] is False and g["status"] == e["status"] == "ok"
        # 2 recaptures: the lr moves twice
        for a, b in zip(e["history"]["train"], g["history"]["train"]):
            assert a["step"] == b["step"] and abs(a["train_loss"] - b["train_loss"]) < 1e-3 * max(1, a["train_loss"])
