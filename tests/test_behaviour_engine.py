"""What the engine feeds the model and how it updates it, checked against formulas on known data.

- preprocessing: the normalised training and test batches equal (x/255 - mean) / std on known
  pixels, with mean and std computed here from the training images (Paper A: per-pixel mean; WRN:
  per-channel mean/std);
- optimizer: per-parameter weight decay of the optimizer the engine builds (gates k: none unless the
  recipe says ``decay_gates``), seen in the update it makes from a zero gradient;
- evaluation: BN in eval mode (the running statistics), so it leaves BN buffers untouched and its
  numbers do not depend on the evaluation batch size.
"""
import copy
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import idmap_lib as im
from idmap_lib.engine import data as data_mod
from idmap_lib.engine.distributed import Single
from idmap_lib.engine.recipes import config
from idmap_lib.engine.batches import evaluate
from idmap_lib.engine.build import build_optimizer
from support import loop_of

torch.set_num_threads(2)


def _synthetic(n_train=40, n_test=20, hw=8, seed=0):
    """A CIFAR-shaped Data of known pixels: random uint8 images, every pixel its own value
    distribution."""
    g = torch.Generator().manual_seed(seed)
    # a per-pixel offset: the mean image is not flat
    base = torch.randint(0, 200, (1, 3, hw, hw), generator=g)
    x_tr = (base + torch.randint(0, 56, (n_train, 3, hw, hw), generator=g)).to(torch.uint8)
    x_te = (base + torch.randint(0, 56, (n_test, 3, hw, hw), generator=g)).to(torch.uint8)
    y_tr = torch.arange(n_train) % 10
    y_te = torch.arange(n_test) % 10
    return data_mod.Data("cifar10", x_tr, y_tr, x_te, y_te, source={"kind": "synthetic"})


def _tiny_cfg(experiment, variant, model_kwargs=None, augment=None, batch=8):
    cfg = config(experiment, variant, "cpu")
    if model_kwargs:
        cfg["model"]["kwargs"].update(model_kwargs)
    cfg.update(steps=2, batch_size=batch, log_every=1, eval_every=1, subset=None, augment=augment)
    return cfg


# --- preprocessing -------------------------------------------------------------------------------

def test_normalization_statistics_on_known_pixels():
    # 2 images, 1x2x2
    x = torch.tensor([[[[0, 255], [51, 102]]], [[[255, 255], [153, 0]]]], dtype=torch.uint8)
    mean, std = data_mod.normalization("per_pixel_mean", x)
    torch.testing.assert_close(mean, torch.tensor([[[[0.5, 1.0], [0.4, 0.2]]]]), rtol=0, atol=1e-7)
    assert torch.equal(std, torch.ones(1, 1, 1, 1))
    x3 = _synthetic().x_train
    m, s = data_mod.normalization("mean_std", x3)
    xf = x3.double() / 255
    torch.testing.assert_close(m.double().flatten(), xf.mean((0, 2, 3)), rtol=0, atol=1e-6)
    torch.testing.assert_close(s.double().flatten(), xf.transpose(0, 1).reshape(3, -1).std(1),
                               rtol=0, atol=1e-6)
    m, s = data_mod.normalization("scale", x3)
    assert torch.equal(m, torch.zeros(1, 3, 1, 1)) and torch.equal(s, torch.ones(1, 3, 1, 1))


def test_normalization_over_many_chunks_is_exact_even_for_a_small_spread():
    """More images than one chunk of the float64 sums, all near grey 200 (a spread of 1/255): a
    float32 sum or one that keeps only the last chunk shows in the mean or, through cancellation, in
    the std."""
    g = torch.Generator().manual_seed(0)
    x = (200 + torch.randint(0, 2, (10000, 2, 2, 2), generator=g)).to(torch.uint8)
    xf = x.double() / 255
    mean, _ = data_mod.normalization("per_pixel_mean", x)
    torch.testing.assert_close(mean.double(), xf.mean(0, keepdim=True), rtol=1e-7, atol=0)
    m, s = data_mod.normalization("mean_std", x)
    assert m.shape == s.shape == (1, 2, 1, 1)
    torch.testing.assert_close(m.double().flatten(), xf.mean((0, 2, 3)), rtol=1e-7, atol=0)
    torch.testing.assert_close(s.double().flatten(), xf.transpose(0, 1).reshape(2, -1).std(1),
                               rtol=1e-5, atol=0)


@pytest.mark.parametrize("experiment, variant, kwargs, kind", [
    ("a_table2_activations", "full_preact-110", {"depth": 8}, "per_pixel_mean"),     # Paper A
    # Paper B's WRN
    ("b_wrn", "plain", {"depth": 10}, "mean_std"),
])
def test_training_and_test_batches_are_normalised_with_the_training_statistics(experiment, variant, kwargs, kind):
    d = _synthetic()
    cfg = _tiny_cfg(experiment, variant, kwargs)
    assert cfg["preprocess"] == kind
    xtr = d.x_train.double() / 255
    if kind == "per_pixel_mean":   # the mean image of the training set, std 1
        mean, std = xtr.mean(0, keepdim=True), torch.ones(1, 1, 1, 1, dtype=torch.float64)
    else:                          # per-channel mean and std of the training set
        mean = xtr.mean((0, 2, 3)).view(1, 3, 1, 1)
        std = xtr.transpose(0, 1).reshape(3, -1).std(1).view(1, 3, 1, 1)
    # not a flat mean
    assert (mean.flatten() - mean.mean()).abs().max() > 0.05 or kind != "per_pixel_mean"
    want_train = ((xtr - mean) / std).float()
    want_test = ((d.x_test.double() / 255 - mean) / std).float()

    run = loop_of(cfg, data=d, device="cpu", progress=False, write_result=False, amp="fp32")
    seen = []
    run.stepper.raw.register_forward_pre_hook(lambda m, i: seen.append((m.training, i[0].detach().clone())))
    run.advance()  # one training step, then (eval_every=1) an evaluation of the whole test set
    (mode_tr, x_tr), (mode_te, x_te) = seen
    assert mode_tr and not mode_te
    assert x_tr.shape == (8, 3, 8, 8) and x_te.shape == want_test.shape
    for row in x_tr:  # every training input is one training image, normalised
        err = (want_train - row).abs().flatten(1).max(1).values
        assert err.min() < 1e-5, "a training input is no normalised training image"
    torch.testing.assert_close(x_te, want_test, rtol=0, atol=1e-5)


def test_augmented_training_batches_are_crops_of_the_zero_padded_normalised_images():
    """Normalise, then pad with zeros (0 = the mean pixel) and crop + flip: every input is a window
    of one padded normalised training image, plain or mirrored, and not all are the plain image
    itself."""
    d = _synthetic()
    cfg = _tiny_cfg("a_table2_activations", "full_preact-110", {"depth": 8},
                    augment={"pad": 4, "flip": True},
                    batch=16)
    xtr = d.x_train.double() / 255
    want = ((xtr - xtr.mean(0, keepdim=True)).float())
    windows = F.pad(want, [4] * 4).unfold(2, 8, 1).unfold(3, 8, 1)  # (N, C, 9, 9, 8, 8)
    run = loop_of(cfg, data=d, device="cpu", progress=False, write_result=False, amp="fp32",
              channels_last=True)
    seen = []
    run.stepper.raw.register_forward_pre_hook(lambda m, i: seen.append(i[0].detach().clone())
                                              if m.training else None)
    run.advance()
    (x,) = seen
    assert x.shape == (16, 3, 8, 8) and x.is_contiguous(memory_format=torch.channels_last)
    kinds = set()
    for row in x:
        for mirrored, r in ((False, row), (True, row.flip(-1))):
            err = (windows - r[None, :, None, None]).abs().amax((1, 4, 5))  # (N, 9, 9)
            if err.min() < 1e-5:
                n, dy, dx = [int(v) for v in torch.nonzero(err == err.min())[0]]
                kinds.add((mirrored, (dy, dx) != (4, 4)))
                break
        else:
            raise AssertionError("a training input is no crop of a padded normalised training "
                                 "image")
    assert (False, True) in kinds or (True, True) in kinds  # some crops are shifted
    assert {m for m, _ in kinds} == {False, True}           # plain and mirrored both occur


def test_schedule_errors_name_the_valid_range_and_the_kind():
    s = config("a_table2_activations", "full_preact-110", "full")["schedule"]
    with pytest.raises(ValueError, match=r"iterations 0\.\.63999 and stops at 64000"):
        im.engine.schedule.lr_at(s, 64000)
    with pytest.raises(ValueError, match="unknown schedule kind 'cosine'; valid: step, constant"):
        im.engine.schedule.lr_at({**s, "kind": "cosine"}, 0)


def test_prepare_data_loads_the_recipes_dataset_and_takes_a_stratified_subset(monkeypatch):
    from idmap_lib.engine import batches
    d = _synthetic(n_train=60, n_test=30)
    calls = []
    monkeypatch.setattr(data_mod, "load", lambda name, path: calls.append((name, path)) or d)
    cfg = _tiny_cfg("a_table2_activations", "full_preact-110", {"depth": 8})
    cfg["subset"] = {"train_per_class": 2, "test_per_class": 1}
    D = batches.prepare_data(cfg, "/some/where", torch.device("cpu"))
    assert calls == [("cifar10", "/some/where")]
    assert (D["y_train"].bincount().tolist() == [2] * 10
            and D["y_test"].bincount().tolist() == [1] * 10)
    sub = d.x_train[data_mod.stratified_subset(d.y_train, 2, 0)]
    # the images of the subset ...
    assert torch.equal(D["x_train"], sub)
    torch.testing.assert_close(D["mean"], sub.double().div(255).mean(0, keepdim=True).float(),
                               rtol=0, atol=1e-6)
    # ... and the subset's mean
    assert D["num_classes"] == 10 and D["source"] == {"kind": "synthetic"}
    cfg["subset"]["seed"] = 5  # a subset's own seed draws other images
    other = batches.prepare_data(cfg, "/some/where", torch.device("cpu"))["x_train"]
    assert (torch.equal(other, d.x_train[data_mod.stratified_subset(d.y_train, 2, 5)])
            and not torch.equal(other, sub))


# --- optimizer: weight decay per group -----------------------------------------------------------

def _decay_steps(model, opt):
    """One optimizer step from a zero gradient: each parameter p becomes (1 - c) p; returns c per
    parameter (the largest and smallest over its entries)."""
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    out = {}
    for n, p in model.named_parameters():
        nz = before[n] != 0
        if nz.any():  # (zero-initialised biases stay zero either way)
            c = 1 - p.detach()[nz] / before[n][nz]
            out[n] = (c.max().item(), c.min().item())
    return out


@pytest.mark.parametrize("variant, gates_decay", [("gated", False), ("gated-k_decay", True)])
def test_gates_get_weight_decay_only_when_the_recipe_says_so(variant, gates_decay):
    cfg = config("b_resnet32", variant, "cpu")
    o = cfg["optimizer"]
    assert o["decay_gates"] is gates_decay and o["weight_decay"] == 1e-4
    torch.manual_seed(0)
    model = im.cifar_resnet(8, gated=True).double()
    gate_ids = {id(k) for k in im.gates(model)}
    opt = build_optimizer(model, o, "cpu")
    wd_of = {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}
    assert len(wd_of) == len(list(model.parameters()))
    for p in model.parameters():
        assert wd_of[id(p)] == (1e-4 if id(p) not in gate_ids or gates_decay else 0.0)
    # the update: SGD, Nesterov momentum m, from g = 0: p <- p - lr (1 + m) wd p
    for g in opt.param_groups:
        g["lr"] = 0.1
    step = 0.1 * (1 + o["momentum"]) * 1e-4
    c = _decay_steps(model, opt)
    assert len(c) > len(gate_ids) > 0
    for n, p in model.named_parameters():
        if n not in c:
            continue
        expected = step if (id(p) not in gate_ids or gates_decay) else 0.0
        assert c[n] == pytest.approx((expected, expected), rel=1e-9, abs=1e-15), n
    assert all(k.item() == pytest.approx(1 - step if gates_decay else 1.0, rel=1e-12)
               for k in im.gates(model))


def test_a_recipe_without_weight_decay_decays_nothing():
    torch.manual_seed(0)
    model = im.cifar_resnet(8, gated=True).double()
    opt = build_optimizer(model, {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False},
                          "cpu")
    assert [g["weight_decay"] for g in opt.param_groups] == [0.0, 0.0]
    assert all(c == (0.0, 0.0) for c in _decay_steps(model, opt).values())


def test_optimizer_hyperparameters_come_from_the_recipe():
    torch.manual_seed(0)
    model = im.cifar_resnet(8)
    o = config("b_resnet32", "original", "full")["optimizer"]
    for device in ("cpu", None):
        sgd = build_optimizer(model, o, device)
        # the fused kernel is CUDA's
        assert type(sgd) is torch.optim.SGD and not sgd.defaults.get("fused")
        assert (sgd.defaults["lr"], sgd.defaults["momentum"],
                sgd.defaults["nesterov"]) == (0.1, 0.9, True)
    mlp = im.mlp("gresnet", 2)
    nadam = build_optimizer(mlp, {**config("b_mnist", "gresnet-d2", "full")["optimizer"],
                                  "betas": [0.8, 0.99]},
                            "cpu", capturable=True)
    assert type(nadam) is torch.optim.NAdam and nadam.defaults["lr"] == 0.002
    # Keras' 0.004
    assert nadam.defaults["betas"] == (0.8, 0.99) and nadam.defaults["momentum_decay"] == 4e-3
    assert not nadam.defaults.get("capturable")  # device-side step counters: only for CUDA graphs
    with pytest.raises(ValueError, match="unknown optimizer 'adam'; valid: sgd, nadam"):
        build_optimizer(mlp, {"name": "adam", "lr": 1e-3})


@pytest.mark.parametrize("experiment, variant, model_kwargs, wd", [
    ("b_resnet32", "gated", {"depth": 8}, 1e-4),
    ("b_resnet32", "gated-k_decay", {"depth": 8}, 1e-4),
    ("b_wrn", "gated", {"depth": 10}, 5e-4),
    ("b_mnist", "gresnet-d2", None, 0.0),
])
def test_the_engines_optimizer_decays_per_the_recipe(experiment, variant, model_kwargs, wd):
    cfg = _tiny_cfg(experiment, variant, model_kwargs)
    d = _synthetic() if cfg["dataset"] == "cifar10" else data_mod.Data(
        "mnist", torch.randint(0, 255, (20, 1, 28, 28), dtype=torch.uint8), torch.arange(20) % 10,
        torch.randint(0, 255, (10, 1, 28, 28), dtype=torch.uint8), torch.arange(10) % 10)
    run = loop_of(cfg, data=d, device="cpu", progress=False, write_result=False, amp="fp32")
    gate_ids = {id(k) for k in im.gates(run.stepper.raw)}
    assert gate_ids
    decay_k = cfg["optimizer"]["decay_gates"]
    for g in run.opt.param_groups:
        for p in g["params"]:
            assert g["weight_decay"] == (wd if id(p) not in gate_ids or decay_k else 0.0)


# --- evaluation ----------------------------------------------------------------------------------

def _eval_setup():
    torch.manual_seed(0)
    model = im.cifar_resnet(8)
    # running statistics far from any batch's: train-mode BN would give other numbers
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 3)
                m.num_batches_tracked.fill_(7)
    d = _synthetic(n_test=30)
    mean, std = data_mod.normalization("per_pixel_mean", d.x_train)
    D = {"x_test": d.x_test, "y_test": d.y_test, "mean": mean, "std": std}
    return model, D


def test_evaluation_uses_running_statistics_and_leaves_bn_buffers_untouched():
    model, D = _eval_setup()
    model.train()
    buffers = copy.deepcopy({n: b for n, b in model.named_buffers()})
    loss, err = evaluate(model, D, None, False, torch.device("cpu"), Single())
    assert model.training  # restored
    for n, b in model.named_buffers():
        assert torch.equal(b, buffers[n]), f"evaluation changed {n}"
    # the same numbers from the model in eval mode, computed here
    model.eval()
    with torch.no_grad():
        x = (D["x_test"].float() / 255 - D["mean"]) / D["std"]
        out = model(x)
    assert loss == pytest.approx(F.cross_entropy(out, D["y_test"]).item(), rel=1e-5)
    assert err == pytest.approx((out.argmax(1) != D["y_test"]).double().mean().item(), abs=1e-9)
    loss2, _ = evaluate(model, D, None, False, torch.device("cpu"), Single())
    # eval mode is also restored
    assert not model.training and loss2 == pytest.approx(loss, rel=1e-6)


def test_evaluation_does_not_depend_on_the_batch_size():
    model, D = _eval_setup()
    model.train()
    results = [evaluate(model, D, None, False, torch.device("cpu"), Single(), batch=b)
               for b in (1000, 7, 1)]
    for loss, err in results[1:]:
        assert loss == pytest.approx(results[0][0],
                                     rel=1e-5) and err == pytest.approx(results[0][1], abs=1e-9)


def test_augmentation_draws_from_the_runs_own_generator_only():
    """A batch's crops and flips depend on the run's augmentation generator, not on the global RNG
    (which dropout and other runs in the same process move)."""
    from idmap_lib.engine import batches
    cfg = _tiny_cfg("a_table2_activations", "full_preact-110", {"depth": 8},
                    augment={"pad": 4, "flip": True})
    D = batches.prepare_data(cfg, _synthetic(), torch.device("cpu"))
    idx = torch.arange(16)
    out = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        out.append(batches.train_batch(D, idx, cfg["augment"], torch.Generator().manual_seed(5),
                                       False))
    assert torch.equal(out[0], out[1])
    assert not torch.equal(out[0], batches.train_batch(D, idx, cfg["augment"],
                                                       torch.Generator().manual_seed(6), False))


# ---- threads on a CPU (issue 33.2) ---------------------------------------------------------------

def test_hyperthreads_of_one_core_count_once(tmp_path):
    """Colab's 2 vCPUs are one core's two hyperthreads: one physical core, so one thread for a conv
    net there."""
    from idmap_lib.engine.device import physical_cores
    allowed = sorted(os.sched_getaffinity(0))[:2]
    one_core = "".join(f"processor\t: {i}\nphysical id\t: 0\ncore id\t\t: 0\n\n" for i in allowed)
    (tmp_path / "ht").write_text(one_core)
    two = "".join(f"processor\t: {i}\nphysical id\t: 0\ncore id\t\t: {j}\n\n"
                  for j, i in enumerate(allowed))
    (tmp_path / "two").write_text(two)
    assert physical_cores(tmp_path / "ht") == 1
    assert physical_cores(tmp_path / "two") == len(allowed)
    # no cpuinfo: the CPUs allowed
    assert physical_cores(tmp_path / "absent") == len(os.sched_getaffinity(0))


def test_auto_threads_train_an_mlp_at_one_thread_and_restore_the_process_setting(mnist):
    from idmap_lib.engine.device import cpu_threads, physical_cores
    from idmap_lib.engine.recipes import config
    from idmap_lib.engine.trainer import train
    from support import tiny_mnist

    conv = config("a_table2_activations", "full_preact-110", "cpu", 0)
    assert (cpu_threads([tiny_mnist()]) == 1
            and cpu_threads([conv]) == cpu_threads([conv, tiny_mnist()]) == physical_cores())
    before = torch.get_num_threads()
    r = train(tiny_mnist(steps=3), data=mnist, device="cpu", progress=False, write_result=False,
              threads="auto")
    assert r["hardware"]["torch_threads"] == 1 and torch.get_num_threads() == before
    # None: as they are
    r = train(tiny_mnist(steps=3), data=mnist, device="cpu", progress=False, write_result=False)
    assert r["hardware"]["torch_threads"] == before
