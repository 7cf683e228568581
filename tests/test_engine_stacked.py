"""Stacked training (idmap_lib.engine.stacked): R networks trained as one equal R networks trained
alone."""
import json
from functools import partial
import time
from pathlib import Path

import pytest
import torch

from idmap_lib import gates, mlp
from idmap_lib.engine.recipes import config
from idmap_lib.engine.results import config_hash, run_name
from idmap_lib.engine.stacked import Stacked, StackedMLP, check_stackable
from idmap_lib.engine.trainer import train
from support import SHARED, tiny_mnist, untimed

KINDS = ("plain", "resnet", "gresnet")


tiny = partial(tiny_mnist, steps=14, log=4, eval_every=8)  # 14 steps: test evals at 8 and 14


def train_stacked(cfgs, data=None, **kw):
    """Stacked runs through the one entry: their results and trained networks."""
    results = train(cfgs, data, stepper=Stacked, **kw)
    return results, results.nets


def _close(a, b, atol=2e-5):
    return all(torch.allclose(a[k].float(), b[k].float(), atol=atol, rtol=1e-4) for k in a)


def test_stacked_module_is_exactly_the_nets_it_stacks():
    torch.manual_seed(0)
    nets = [mlp(k, 6) for k in KINDS] + [mlp("gresnet", 6)]
    with torch.no_grad():
        for n in nets:  # trained-looking gates and BN statistics, one k at <= 0 (a removed block)
            for p in n.parameters():
                p.add_(0.1 * torch.randn_like(p))
            for m in n.modules():
                if isinstance(m, torch.nn.BatchNorm1d):
                    m.running_mean.normal_()
                    m.running_var.uniform_(0.5, 2)
        nets[2][3].k.fill_(-0.5)
    s = StackedMLP(nets, list(KINDS) + ["gresnet"]).eval()
    x = torch.randn(4, 32, 1, 28, 28)
    out = s(x)
    for r, n in enumerate(nets):
        assert torch.allclose(out[r], n.eval()(x[r]), atol=1e-5)
    alone = StackedMLP(nets[1:2], ["resnet"]).eval()  # a stack of one is the net itself
    assert torch.allclose(alone(x[:1])[0], nets[1].eval()(x[0]), atol=1e-5)
    fresh = [mlp(k, 6) for k in list(KINDS) + ["gresnet"]]
    s.unstack(fresh)  # unstacking gives back every weight, gate and statistic
    for a, b in zip(nets, fresh):
        assert _close(a.state_dict(), b.state_dict(), atol=0)


def test_stacked_training_equals_each_run_alone(mnist, tmp_path):
    """Each window's loss within 0.5 % in float32: batched and single matrix products round apart
    and training carries it (0.14 % by step 12 on an AMX Xeon; below 1e-4 nats on the AVX-512 AMD
    EPYC, and below 0.001 % with 0 examples apart at AVX2, emulated there with
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2, 2026-12-06); a stack that mixed two nets'
    weights or steps would be off by far more."""
    cfgs = [tiny(k, s) for k in KINDS for s in (0, 1)]
    results, nets = train_stacked(cfgs, data=mnist, out_dir=tmp_path / "stacked", progress=False)
    for cfg, r in zip(cfgs, results):
        alone = train(cfg, data=mnist, out_dir=tmp_path / "alone", progress=False, amp="fp32")
        assert r["status"] == alone["status"] == "ok" and r["config_hash"] == alone["config_hash"]
        for a, b in zip(r["history"]["train"], alone["history"]["train"]):
            assert a["step"] == b["step"]
            assert a["train_loss"] == pytest.approx(b["train_loss"], rel=5e-3)
            # (an example or two on the boundary may flip, here and in the test set: measured two
            # on the Xeon, none on the EPYC at AVX-512 or AVX2; so 16 of a window's 512 examples and
            # 10 of the test set's 200, which a few flips cannot cross and a net scored against
            # another's labels, ~0.5 off, cannot pass)
            assert a["train_err"] == pytest.approx(b["train_err"], abs=16 / 512 + 1e-9)
        assert [h["step"] for h in r["history"]["test"]] == [8, 14]
        assert r["final"]["test_err"] == pytest.approx(alone["final"]["test_err"],
                                                       abs=1e-9 + 10 / 200)
        assert r["final"]["test_loss"] == pytest.approx(alone["final"]["test_loss"], rel=5e-3)
        assert ("gates_k" in r["final"]) == (cfg["model"]["kwargs"]["kind"] == "gresnet")
        if "gates_k" in r["final"]:
            # (k moves ~2e-3 in these steps)
            assert r["final"]["gates_k"] == pytest.approx(alone["final"]["gates_k"], abs=2e-4)
        assert r["stacked"]["runs"] == 6 and Path(r["path"]).parent == tmp_path / "stacked"
    # the seeds differ and so do the kinds: six different networks came out
    assert len({round(r["final"]["train_loss"], 6) for r in results}) == 6


def test_stacked_weights_equal_the_weights_of_a_run_alone(mnist, tmp_path):
    cfgs = [tiny(k, 3) for k in KINDS]
    _, nets = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    from support import loop_of

    for cfg, net in zip(cfgs, nets):
        run = loop_of(cfg, data=mnist, progress=False, amp="fp32", write_result=False)
        while not run.done:
            run.advance()
        assert _close(run.stepper.raw.state_dict(), net.state_dict())


def test_stacked_resume_equals_uninterrupted(mnist, tmp_path):
    cfgs = [tiny(k, 0, steps=12) for k in KINDS]
    full, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    part, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False,
                            checkpoint_dir=tmp_path,
                            checkpoint_every=4, max_steps=8)
    assert {p["status"] for p in part} == {"stopped"}
    done, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False,
                            checkpoint_dir=tmp_path,
                            resume=True)
    for a, b in zip(full, done):
        assert [h["train_loss"] for h in a["history"]["train"]] == [h["train_loss"]
                                                                    for h in b["history"]["train"]]
        assert a["final"]["test_err"] == b["final"]["test_err"]


def test_a_diverging_run_is_a_fail_and_the_others_go_on(mnist, monkeypatch):
    cfgs = [tiny(k, 0) for k in KINDS]
    clean, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    real = StackedMLP.__init__

    def poisoned(self, nets, kinds):
        real(self, nets, kinds)
        with torch.no_grad():
            # the ResNet's classifier: its loss is not finite from step 0
            self.w_out[1].fill_(float("inf"))

    monkeypatch.setattr(StackedMLP, "__init__", poisoned)
    res, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    assert [r["status"] for r in res] == ["ok", "fail", "ok"]
    assert (res[1]["fail"] == {"step": 0, "reason": "non-finite training loss"}
            and "test_err" not in res[1]["final"])
    for r in (0, 2):  # the others trained exactly as without the poisoned run
        assert res[r]["final"]["train_loss"] == pytest.approx(clean[r]["final"]["train_loss"],
                                                              abs=1e-6)
        assert res[r]["final"]["test_err"] == clean[r]["final"]["test_err"]


def test_what_cannot_stack_is_refused_with_a_clear_error():
    a, b = tiny("plain", 0), tiny("resnet", 0, d=6)
    with pytest.raises(ValueError, match="share the network's d"):
        check_stackable([a, b])
    with pytest.raises(ValueError, match="differ in 'steps'"):
        check_stackable([a, tiny("resnet", 0, steps=20)])
    with pytest.raises(ValueError, match="appears twice"):
        check_stackable([a, tiny("plain", 0)])
    with pytest.raises(ValueError, match="only Paper B's MLPs"):
        check_stackable([config("b_resnet32", "gated", "cpu")])
    decayed = tiny("plain", 3)
    decayed["optimizer"]["weight_decay"] = 1e-4
    with pytest.raises(ValueError,
                       match="plain-d10__full__s3: stacked training implements NAdam without "
                             "weight decay"):
        check_stackable([decayed])
    with pytest.raises(ValueError, match="nothing to train"):
        check_stackable([])
    c100 = tiny("resnet", 1)
    c100["model"]["kwargs"]["num_classes"] = 100
    with pytest.raises(ValueError, match="share the network's num_classes"):
        check_stackable([a, c100])
    with pytest.raises(ValueError,
                       match="^StackedMLP needs one kind per network, and at least one network$"):
        StackedMLP([], [])
    wide = tiny("resnet", 1)
    wide["model"]["kwargs"]["width"] = 60
    with pytest.raises(ValueError, match="share the network's width"):
        check_stackable([a, wide])
    with pytest.raises(ValueError, match="stacks the kinds plain, resnet, gresnet; got dense"):
        StackedMLP([mlp("plain", 4)], ["dense"])
    keras = tiny("gresnet", 1)
    keras["model"]["kwargs"]["defaults"] = "keras"  # another BN epsilon: one stack cannot hold both
    with pytest.raises(ValueError, match="share the network's defaults"):
        check_stackable([a, keras])


def test_stacked_keras_nets_equal_each_alone():
    torch.manual_seed(0)
    nets = [mlp(k, 4, defaults="keras") for k in KINDS]
    with torch.no_grad():
        for n in nets:
            for m in n.modules():
                if isinstance(m, torch.nn.BatchNorm1d):
                    m.running_var.uniform_(1e-3, 1e-2)  # where epsilon 1e-3 vs 1e-5 shows
    s = StackedMLP(nets, list(KINDS))
    x = torch.randn(3, 16, 784)
    # the second eval reads the statistics the training step updated
    for mode in ("eval", "train", "eval"):
        out = getattr(s, mode)()(x)
        for r, n in enumerate(nets):
            # (outputs reach 1e5 over a running variance of 1e-3: an output near 0 carries the
            # big ones' rounding, so the tolerance is the output's scale; epsilon 1e-5 for 1e-3
            # moves them by tens of percent)
            ref = getattr(n, mode)()(x[r])
            assert torch.allclose(out[r], ref, rtol=1e-4, atol=1e-6 * ref.abs().max().item()), mode
    assert s.eps == 1e-3 and s.momentum == 0.01


def test_mnist_grid_trains_only_what_is_missing_and_records_pruning(mnist, tmp_path, monkeypatch):
    from idmap_book.plan import mnist_grid

    monkeypatch.setattr(mnist_grid, "configs",
                        lambda d, seeds, kinds=KINDS: [tiny(k, s, d=6) for k in kinds
                                                         for s in seeds])
    monkeypatch.setattr(mnist_grid, "PRUNE_DEPTH", 6)
    kw = dict(data=mnist, out_dir=tmp_path / "res", weights_dir=tmp_path / "w", progress=False)
    new = mnist_grid.train_depth(6, [0, 1], **kw)
    # recorded runs are not retrained
    assert len(new) == 6 and mnist_grid.train_depth(6, [0, 1], **kw) == []
    assert [r["config"]["seed"] for r in mnist_grid.train_depth(6, [0, 2], **kw)] == [2, 2, 2]
    x, y = mnist_grid.test_set(new[0]["config"], mnist)
    for r in new:
        kind = r["config"]["model"]["kwargs"]["kind"]
        if kind == "plain":
            assert "analysis" not in r and not mnist_grid.weights_path(r["config"], tmp_path / "w").exists()
            continue
        p = r["analysis"]["pruning"]
        assert p["blocks"] == 3 and len(p["at_random"]) == mnist_grid.RANDOM_ORDERS
        assert ("by_gate" in p) == (kind == "gresnet")
        for c in p["at_random"] + ([p["by_gate"]] if "by_gate" in p else []):
            assert len(c) == 4 and c[0] == pytest.approx(r["final"]["test_err"], abs=1.01 / len(y))
        # the kept weights are the trained net
        net = mnist_grid.trained_net(r["config"], tmp_path / "w")
        assert mnist_grid.test_error(net, x, y) == p["at_random"][0][0]
        if kind == "gresnet":
            assert [float(k.detach()) for k in gates(net)] == pytest.approx(r["final"]["gates_k"])
    with pytest.raises(FileNotFoundError, match="python -m idmap_book mnist --depths 6"):
        mnist_grid.trained_net(tiny("resnet", 5, d=6), tmp_path / "w")


def test_a_stacked_result_is_the_trainers_result_plus_what_trained_together(mnist, tmp_path, capsys):
    cfgs = [tiny(k, 0) for k in KINDS]
    t0 = time.perf_counter()
    res, _ = train_stacked(cfgs, data=mnist, out_dir=tmp_path, progress=True)
    wall = time.perf_counter() - t0
    assert (f"{run_name(cfgs[0])} and 2 more: 3 runs stacked on cpu, float32; 14 steps to "
            f"go" in capsys.readouterr().out)
    alone = train(cfgs[2], data=mnist, progress=False, amp="fp32", write_result=False)
    for r in res:
        assert set(r) == set(alone) | {"stacked", "path"} and set(r["final"]) <= set(alone["final"])
        assert r["stacked"]["runs"] == 3 and r["stacked"]["with"] == [run_name(c) for c in cfgs]
        assert ("trained together" in r["stacked"]["note"]
                and "its own images per second" in r["stacked"]["note"])
        assert [h["lr"] for h in r["history"]["train"]] == [h["lr"]
                                                            for h in alone["history"]["train"]]
        # and each window's speed: >= 2 steps of 128 images within it
        assert 0 < r["final"]["wall_s"] <= wall
        assert all(h["img_per_s"] >= 2 * 128 / wall for h in r["history"]["train"])
        assert json.loads(Path(r["path"]).read_text())["stacked"] == r["stacked"]
        flags = ("precision", "channels_last", "compiled", "cuda_graph", "deterministic")
        assert [r[k] for k in flags] == [alone[k] for k in flags] == ["float32", False, False,
                                                                      False, False]
    # by path
    two, _ = train_stacked([tiny("plain", 0, log=7)], data=SHARED, progress=False,
                           write_result=False)
    tr = two[0]["history"]["train"]  # two windows: the speed is the second's (the first warms up)
    assert len(tr) == 2 and two[0]["final"]["img_per_s"] == tr[1]["img_per_s"]


def test_a_stopped_stack_keeps_each_runs_checkpoint_and_resumes_where_it_stopped(mnist, tmp_path, capsys):
    """One checkpoint format (loop.py): a stack writes each run's own file, which a run alone
    resumes too."""
    cfgs = [tiny(k, 0) for k in KINDS]
    part, _ = train_stacked(cfgs, data=mnist, progress=False, checkpoint_dir=tmp_path, max_steps=8)
    cks = [tmp_path / f"{run_name(c)}.pt" for c in cfgs]
    assert [{k: p[k] for k in ("status", "step", "config", "config_hash", "checkpoint")}
            for p in part] == \
        [{"status": "stopped", "step": 8, "config": c, "config_hash": config_hash(c),
          "checkpoint": str(ck)}
         for c, ck in zip(cfgs, cks)]
    assert all(len(p["first_steps"]) == 8 and len(p["history"]["train"]) == 8 // c["log_every"]
               # a stopped run says what trainer.train's stopped run says
               for p, c in zip(part, cfgs))
    # each file is the solo run's checkpoint, model and optimizer alike
    for c, ck in zip(cfgs, cks):
        state = torch.load(ck, weights_only=True)
        assert (state["format"], state["config_hash"], state["config"], state["step"]) == \
            (1, config_hash(c), c, 8)
        net = mlp(c["model"]["kwargs"]["kind"], 4)
        net.load_state_dict(state["model"])
        assert len(state["optimizer"]["state"]) == len(list(net.parameters()))
    (tmp_path / "solo").mkdir()
    for ck in cks:  # a copy for the runs alone
        (tmp_path / "solo" / ck.name).write_bytes(ck.read_bytes())
    whole, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    done, _ = train_stacked(cfgs, data=mnist, progress=True, checkpoint_dir=tmp_path, resume=True,
                            write_result=False)
    out = capsys.readouterr().out
    assert f"resumed 3 checkpoints from {tmp_path} at step 8/14" in out and "6 steps to go" in out
    for c, w, d in zip(cfgs, whole, done):  # stacked to step 8, then alone (or stacked) to the end
        alone = train(c, data=mnist, progress=False, amp="fp32", write_result=False,
                      checkpoint_dir=tmp_path / "solo", resume=True)
        assert untimed(d["history"]) == untimed(w["history"])
        for a, b in zip(alone["history"]["train"], w["history"]["train"], strict=True):
            assert a["step"] == b["step"] and abs(a["train_loss"] - b["train_loss"]) < 1e-5


def test_stacked_checkpoints_fall_on_multiples_of_checkpoint_every_and_at_the_stop(mnist, tmp_path, monkeypatch):
    from idmap_lib.engine import checkpoint
    steps = []
    monkeypatch.setattr(checkpoint, "save_checkpoint", lambda path, state: steps.append(state["step"]))
    cfgs = [tiny(k, 0, log=2) for k in KINDS]
    train_stacked(cfgs, data=mnist, progress=False, checkpoint_dir=tmp_path, checkpoint_every=4,
                  max_steps=10)
    assert steps == [4] * 3 + [8] * 3 + [10] * 3  # each run's file


def test_a_stack_applies_the_recipes_whole_divergence_rule_as_train_does(mnist):
    """outcome.Divergence is the loop's rule, whatever its stepper: a recipe that fails a run still
    at chance after a grace period fails it stacked exactly as trainer.train does (the stack once
    applied only the non-finite rule). A margin of 0.9 around chance (0.9) puts every run "at
    chance" at its first log after the grace period."""
    from support import loop_of

    cfgs = [tiny(k, 0) for k in ("plain", "resnet")]
    for c in cfgs:
        # grace: max(0.25 x 14, 2 logs) = 8 steps
        c["divergence"] = {"grace_fraction": 0.25, "chance_margin": 0.9}
    stacked, _ = train_stacked(cfgs, data=mnist, progress=False, write_result=False)
    for cfg, s in zip(cfgs, stacked):
        alone = loop_of(cfg, data=mnist, progress=False, amp="fp32", write_result=False)
        while not alone.done:
            alone.advance()
        assert s["status"] == alone.finish()[0]["status"] == "fail" and s["fail"] == alone.fails[0]
        assert ("still at chance" in s["fail"]["reason"]
                and s["final"]["steps"] == s["fail"]["step"] == 12)


def test_a_stack_refuses_the_options_it_does_not_implement(mnist):
    with pytest.raises(ValueError, match=r"a stacked run does not take compile \(.*\); "
                                         r"channels_last \(MLPs have no image layout\)"):
        train_stacked([tiny("plain", 0)], data=mnist, compile=True, channels_last=True)
    with pytest.raises(ValueError, match="a stacked run trains in float32"):
        train_stacked([tiny("plain", 0)], data=mnist, amp="bf16")
    with pytest.raises(TypeError,
                       match="unknown training option chekpoint_dir: the options are device, "
                             "out_dir"):
        train_stacked([tiny("plain", 0)], data=mnist, chekpoint_dir="x")
