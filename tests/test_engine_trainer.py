"""The trainer on real CIFAR-10: loss goes down, exact resume, divergence as a result, checkpoints,
provenance."""
import json
import math
from pathlib import Path

import pytest
import torch

from idmap_lib.engine.checkpoint import CheckpointError
from idmap_lib.engine.recipes import config
from idmap_lib.engine.schedule import step_schedule
from idmap_lib.engine.results import config_hash, load_results
from idmap_lib.engine.device import pick_device
from idmap_lib.engine.trainer import run, train
from support import untimed


def tiny(steps=12, lr=0.1, model=None, per_class=(20, 10), batch=32, log=3, eval_every=6):
    """A real recipe (Paper B WRN at the CPU scale: dropout, augmentation, mean/std, Nesterov) made
    tiny."""
    cfg = config("b_wrn", "gated", "cpu")
    cfg["model"] = model or {"builder": "wide_resnet",
                             "kwargs": {"depth": 10, "widen": 1, "dropout": 0.3, "gated": True,
                                        "num_classes": 10}}
    cfg.update(steps=steps, batch_size=batch, log_every=log, eval_every=eval_every,
               subset={"train_per_class": per_class[0], "test_per_class": per_class[1]},
               schedule=step_schedule(steps, lr, 5, fractions=[0.5]),
               # only non-finite loss fails
               divergence={"grace_fraction": 1.0, "chance_margin": 0.01})
    return cfg


def test_short_cpu_scale_run_on_real_cifar10_loss_goes_down(cifar, tmp_path):
    cfg = config("a_table2_activations", "full_preact-110", "cpu")
    cfg["model"]["kwargs"]["depth"] = 8  # ResNet-8 (n=1) of the same unit, to keep the test short
    cfg.update(steps=60, batch_size=64, log_every=10, eval_every=60,
               subset={"train_per_class": 200, "test_per_class": 20},
               schedule=step_schedule(60, 0.1, 10, fractions=[0.75], warmup_steps=5,
                                      warmup_lr=0.01))
    logs = []
    r = train(cfg, data=cifar, out_dir=tmp_path, progress=False,
              on_log=lambda h: logs.append(len(h["train"])))
    tr = r["history"]["train"]
    assert r["status"] == "ok" and [h["step"] for h in tr] == list(range(10, 61, 10))
    assert logs == list(range(1, 7))  # the callback saw the history grow at every log
    assert tr[0]["train_loss"] > 2.1  # starts near ln(10) = 2.30
    assert tr[-1]["train_loss"] < tr[0]["train_loss"] - 0.2
    assert r["final"]["test_err"] < 0.85  # better than chance (0.9) on held-out images
    assert tr[0]["lr"] == 0.1 and tr[-1]["lr"] == 0.01


def _state(ckdir):
    ck = torch.load(next(Path(ckdir).glob("*.pt")), weights_only=True)
    return ck["model"], ck["history"]


def test_resume_equals_uninterrupted_bit_for_bit(cifar, tmp_path):
    cfg = tiny(steps=12)
    kw = dict(data=cifar, progress=False, deterministic=True, write_result=False,
              checkpoint_every=3)
    a = train(cfg, checkpoint_dir=tmp_path / "a", **kw)
    stopped = train(cfg, checkpoint_dir=tmp_path / "b", max_steps=5, **kw)  # "killed" mid-way
    assert stopped["status"] == "stopped" and stopped["step"] == 5
    b = train(cfg, checkpoint_dir=tmp_path / "b", resume=True, **kw)
    assert a["status"] == b["status"] == "ok"
    (ma, ha), (mb, hb) = _state(tmp_path / "a"), _state(tmp_path / "b")
    assert ma.keys() == mb.keys()
    for k in ma:
        assert torch.equal(ma[k], mb[k]), k
    assert untimed(ha) == untimed(hb) and untimed(a["history"]) == untimed(b["history"])
    assert a["final"]["gates_k"] == b["final"]["gates_k"]
    # and a different seed really does train differently
    c = train({**cfg, "seed": 1}, checkpoint_dir=tmp_path / "c", **kw)
    assert untimed(c["history"]) != untimed(a["history"])


def test_divergence_is_a_result(cifar, tmp_path):
    r = train(tiny(steps=30, lr=1e8), data=cifar, out_dir=tmp_path, progress=False)
    assert r["status"] == "fail" and "non-finite" in r["fail"]["reason"]
    assert 0 <= r["fail"]["step"] < 30 and r["final"]["steps"] < 30
    saved = json.loads(Path(r["path"]).read_text())
    assert saved["status"] == "fail" and saved["fail"] == r["fail"]
    # no learning at all (lr 0): training error stays at chance -> fail after the grace period
    cfg = tiny(steps=24, lr=0.0)
    # fail if error >= 0.75 from step 6
    cfg["divergence"] = {"grace_fraction": 0.25, "chance_margin": 0.15}
    r = train(cfg, data=cifar, out_dir=tmp_path, progress=False)
    assert r["status"] == "fail" and "chance" in r["fail"]["reason"] and r["fail"]["step"] == 9


def test_corrupt_and_mismatched_checkpoints_are_clear_errors(cifar, tmp_path):
    cfg = tiny(steps=6)
    train(cfg, data=cifar, checkpoint_dir=tmp_path, max_steps=3, progress=False)
    ck = next(tmp_path.glob("*.pt"))
    other = {**cfg, "batch_size": 16}  # same run name, different recipe
    with pytest.raises(CheckpointError, match="different configuration"):
        train(other, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False)
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])  # truncated, as by a crash mid-copy
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        train(cfg, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False)


def test_a_checkpoint_moves_to_another_device_or_precision_only_when_asked(cifar, tmp_path):
    """bf16 on an H200 -> fp16 on a T4 -> CPU (issue 22): refused by default (a resumed run is
    bit-exact), done with move=True, and the result says it moved. Here: fp32 -> bf16 on the CPU,
    then a checkpoint made to look as if a CUDA GPU wrote it (its augmentation generator's state
    means nothing to a CPU generator)."""
    import torch
    cfg = tiny(steps=6)
    train(cfg, data=cifar, checkpoint_dir=tmp_path, max_steps=3, progress=False, amp="fp32")
    with pytest.raises(CheckpointError, match="pass --move"):
        train(cfg, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False, amp="bf16")
    r = train(cfg, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False, amp="bf16",
              move=True,
              out_dir=tmp_path / "res")
    assert (r["status"] == "ok" and r["moves"] == [{"step": 3, "from": "cpu float32",
                                                    "to": "cpu bfloat16"}])
    assert json.loads(Path(r["path"]).read_text())["moves"] == r["moves"]
    train(cfg, data=cifar, checkpoint_dir=tmp_path / "c2", max_steps=3, progress=False, amp="fp32")
    ck_path = next((tmp_path / "c2").glob("*.pt"))
    ck = torch.load(ck_path, weights_only=True)
    ck["device_type"], ck["precision"] = "cuda", "bfloat16"
    ck["rng"]["augment"] = [torch.zeros(16, dtype=torch.uint8)]  # a CUDA (Philox) generator's state
    torch.save(ck, ck_path)
    r = train(cfg, data=cifar, checkpoint_dir=tmp_path / "c2", resume=True, progress=False,
              amp="fp32", move=True,
              write_result=False)
    assert (r["status"] == "ok" and r["moves"] == [{"step": 3, "from": "cuda bfloat16",
                                                    "to": "cpu float32"}])
    assert (len(r["history"]["train"]) == 2 and all(math.isfinite(h["train_loss"])
                                                    for h in r["history"]["train"]))


def test_every_move_of_a_run_is_recorded_across_resumes(cifar, tmp_path):
    """A run moved twice (float32 -> bf16 at step 3, back at step 6) records both moves in order: a
    checkpoint carries the moves before it, and a resume adds its own."""
    cfg = tiny(steps=9)
    kw = dict(data=cifar, checkpoint_dir=tmp_path, progress=False, write_result=False)
    train(cfg, max_steps=3, amp="fp32", **kw)
    train(cfg, max_steps=6, amp="bf16", resume=True, move=True, **kw)
    r = train(cfg, amp="fp32", resume=True, move=True, **kw)
    assert r["status"] == "ok" and r["moves"] == [
        {"step": 3, "from": "cpu float32", "to": "cpu bfloat16"},
        {"step": 6, "from": "cpu bfloat16", "to": "cpu float32"}]


def test_results_json_has_provenance_and_run_looks_up_by_hash(cifar, tmp_path, monkeypatch):
    r = train(tiny(steps=6), data=cifar, out_dir=tmp_path, progress=False)
    saved = json.loads(Path(r["path"]).read_text())
    for key in ("config", "config_hash", "final", "history", "status", "hardware", "versions",
                "git", "seed",
                "dataset_source", "date"):
        assert key in saved, key
    assert saved["config_hash"] == config_hash(saved["config"])
    from idmap_lib.engine.results import library_sha256
    assert saved["library_sha256"] == library_sha256() and len(library_sha256()) == 64
    assert saved["versions"]["torch"] == torch.__version__ and "cuda" in saved["versions"]
    assert (saved["dataset_source"]["kind"] == "local"
            and saved["dataset_source"]["sha256"].startswith("d34c68"))
    assert (saved["hardware"]["device"] == str(pick_device())
            and saved["final"]["test_err"] is not None)
    assert len(saved["final"]["gates_k"]) == 3  # WRN-10: 3 gated units
    assert load_results(tmp_path, experiment="b_wrn",
                        variant="gated")[0]["config_hash"] == saved["config_hash"]
    # run(): a stored result with the recipe's hash is returned without training
    cfg = config("b_wrn", "plain", "cpu")
    fake = {**saved, "config": cfg, "config_hash": config_hash(cfg), "final": {"test_err": 0.5}}
    from idmap_lib.engine.results import save_result
    save_result(fake, tmp_path)
    import idmap_lib.engine.trainer
    monkeypatch.setattr(idmap_lib.engine.trainer, "train",
                        lambda *a, **k: pytest.fail("trained again"))
    assert run("b_wrn", "plain", "cpu", out_dir=tmp_path)["final"]["test_err"] == 0.5


def test_a_recipe_that_names_its_precision_trains_in_it(cifar):
    """Issue 40.5: the float32 rows of the precision check (recipes.FP32) train in float32 on a CPU
    whose default is bf16 autocast, whatever the options say; the rest keep the options' choice."""
    from idmap_lib.engine import recipes
    from support import loop_of

    cfg = tiny(steps=3)
    run = loop_of({**cfg, "amp": "fp32"}, data=cifar, device="cpu", progress=False, write_result=False,
              amp="bf16")
    assert run.stepper.dtype is None
    assert loop_of(cfg, data=cifar, device="cpu", progress=False, write_result=False,
               amp="bf16").stepper.dtype == torch.bfloat16
    fp = recipes.config("a_swaps", "original-110@fp32", "cpu_step_warmup")
    assert fp["amp"] == "fp32" and {k: v for k, v in fp.items() if k not in ("amp", "variant")} == \
        {k: v for k, v in recipes.config("a_swaps", "original-110", "cpu_step_warmup").items()
         if k != "variant"}
