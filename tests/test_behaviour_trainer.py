"""The trainer's contract, on networks small enough to train in a blink (Paper B's MNIST MLP at d =
4): what a result, a stopped run and a checkpoint hold; when checkpoints are written; exact resume;
a non-finite loss or a run stuck at chance as a recorded "fail"; the options `train` passes on.
(test_engine_trainer.py checks the same engine end to end on small CIFAR-10 networks.)"""
import json
import time
from pathlib import Path

import pytest
import torch

from idmap_lib.engine import build, checkpoint, data, loop, trainer
from idmap_lib.engine.schedule import lr_at, step_schedule
from idmap_lib.engine.results import config_hash, provenance, training_hash
from support import SHARED, loop_of, tiny_mnist as tiny, untimed

RESULT_KEYS = {"config", "config_hash", "training_hash", "status", "fail", "final", "history",
               "first_steps", "seed", "dataset_source", "precision",
               "channels_last", "compiled", "cuda_graph", "deterministic", "segments"}
CHECKPOINT_KEYS = {"format", "config", "config_hash", "world_size", "device_type", "precision",
                   "step", "model",
                   "optimizer", "scheduler", "scaler", "rng", "data", "acc", "first", "history",
                   "elapsed", "status", "fail", "moves", "segments"}


def quiet(cfg, mnist, **kw):
    return trainer.train(cfg, data=mnist, progress=False, **{"write_result": False, **kw})


def test_a_finished_result_holds_what_the_book_reads(mnist, tmp_path):
    cfg = tiny()
    seen = []
    t0 = time.perf_counter()
    r = quiet(cfg, mnist, out_dir=tmp_path, write_result=True, amp="fp32",
              on_log=lambda h: seen.append((len(h["train"]), len(h["test"]))))
    wall = time.perf_counter() - t0
    assert set(r) == RESULT_KEYS | set(provenance(torch.device("cpu"), 1)) | {"path"}
    # one process trained it: one segment, every step, with this tree's provenance
    assert [s["steps"] for s in r["segments"]] == [[0, cfg["steps"]]]
    assert r["segments"][0]["library_sha256"] == r["library_sha256"]
    assert (r["status"] == "ok" and r["fail"] is None and r["config"] == cfg
            and r["config_hash"] == config_hash(cfg))
    assert r["training_hash"] == training_hash(cfg) != r["config_hash"]
    assert (r["seed"], r["precision"], r["channels_last"], r["compiled"], r["cuda_graph"],
            r["deterministic"]) == \
        (0, "float32", False, False, False, False)  # an MLP has no convolution: no channels_last
    assert r["dataset_source"] == mnist.source
    tr, te = r["history"]["train"], r["history"]["test"]
    assert [h["step"] for h in tr] == [3, 6, 9, 12] and [h["step"] for h in te] == [6, 12]
    assert all(set(h) == {"step", "train_loss", "train_err", "lr", "img_per_s", "wall_s"}
               for h in tr)
    assert all(set(h) == {"step", "test_loss", "test_err"} for h in te)
    assert [h["lr"] for h in tr] == [lr_at(cfg["schedule"], s - 1)
                                     for s in (3, 6, 9, 12)] == [2e-3, 2e-3, 2e-4, 2e-4]
    # on_log sees the history after each log and evaluation
    assert seen == [(1, 0), (2, 1), (3, 1), (4, 2)]
    f = r["final"]
    assert set(f) == {"train_loss", "train_err", "steps", "wall_s", "img_per_s", "test_err",
                      "test_loss", "gates_k"}
    assert (f["train_loss"], f["train_err"], f["steps"]) == (tr[-1]["train_loss"],
                                                             tr[-1]["train_err"], 12)
    assert (f["test_err"], f["test_loss"]) == (te[-1]["test_err"], te[-1]["test_loss"])
    # the first window warms up
    assert f["img_per_s"] == pytest.approx(sum(h["img_per_s"] for h in tr[1:]) / 3)
    # d = 4: two blocks of 2 layers
    assert wall >= f["wall_s"] == tr[-1]["wall_s"] > 0 and len(f["gates_k"]) == 2
    # each window: 3 steps of 128 images within it
    assert all(h["img_per_s"] >= 3 * 128 / wall for h in tr)
    assert json.loads(Path(r["path"]).read_text()) == json.loads(json.dumps({k: v for k, v in r.items()
                                                                              if k != "path"}))
    assert "gates_k" not in quiet(tiny(kind="resnet"), mnist)["final"]
    assert ("path" not in quiet(cfg, mnist, out_dir=tmp_path / "none")
            and not (tmp_path / "none").exists())


def test_ctrl_c_stops_at_the_end_of_its_step_keeps_a_checkpoint_and_the_run_resumes_exactly(
        mnist, tmp_path, request):
    """Issue 33.3: the stop button (SIGINT) during training stops at the end of the step under way,
    writes the checkpoint and raises a KeyboardInterrupt whose rendering in IPython is one line
    saying how to go on (so "Run all" stops, without a traceback); resumed, the run is the
    uninterrupted one bit for bit. A second Ctrl-C while it stops interrupts at once."""
    import os
    import signal

    # Python's own Ctrl-C handler, as in a notebook or a script at a terminal, whatever this process
    # started with: a background job of a non-interactive shell and mutmut's workers ignore SIGINT
    # (the handler given back below would then be SIG_IGN)
    started_with = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, started_with))
    cfg = tiny()
    whole = quiet(cfg, mnist)
    hit = []

    def stop_button(history):
        if not hit:
            hit.append(history["train"][-1]["step"])
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(trainer.TrainingInterrupted) as stopped:
        quiet(cfg, mnist, checkpoint_dir=tmp_path, on_log=stop_button)
    line = (f"interrupted at step {hit[0]} of {cfg['steps']}: checkpoint kept ({tmp_path}); run "
            f"the cell")
    assert (stopped.value._render_traceback_() == [str(stopped.value)]
            and str(stopped.value).startswith(line))
    assert torch.load(next(tmp_path.glob("*.pt")), weights_only=True)["step"] == hit[0]
    again = quiet(cfg, mnist, checkpoint_dir=tmp_path, resume=True)
    assert again["status"] == "ok" and again["final"] == {**whole["final"],
                                                          "wall_s": again["final"]["wall_s"],
                                                         "img_per_s": again["final"]["img_per_s"]}
    assert again["first_steps"] == whole["first_steps"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler given back

    def two_presses(history):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt) as at_once:
        quiet(cfg, mnist, on_log=two_presses)
    assert type(at_once.value) is KeyboardInterrupt


def test_a_stopped_run_says_where_it_stopped_and_its_checkpoint_holds_the_whole_state(mnist, tmp_path):
    cfg = tiny()
    r = quiet(cfg, mnist, checkpoint_dir=tmp_path, max_steps=6)
    ck_path = tmp_path / f"{cfg['experiment']}__{cfg['variant']}__{cfg['scale']}__s0.pt"
    assert r == {"status": "stopped", "step": 6, "config": cfg, "config_hash": config_hash(cfg),
                 "history": r["history"], "checkpoint": str(ck_path),
                 "first_steps": r["first_steps"],
                 "precision": r["precision"], **provenance(torch.device("cpu"),
                                                           1) | {"date": r["date"]}}
    # (where it was trained and its first steps: what the spot check compares)
    assert len(r["first_steps"]) == 6
    assert [h["step"] for h in r["history"]["train"]] == [3, 6]
    ck = torch.load(ck_path, weights_only=True)
    assert set(ck) == CHECKPOINT_KEYS
    assert (ck["format"], ck["config"], ck["config_hash"], ck["world_size"], ck["device_type"],
            ck["step"]) == \
        (1, cfg, config_hash(cfg), 1, "cpu", 6)
    assert (ck["scheduler"]["step"] == 6 and ck["scaler"] is None
            and ck["data"]["pos"] == 6 % (600 // 128) * 128)
    # (an epoch is the 4 whole batches of 600 images: the last partial batch is dropped)
    assert (ck["status"], ck["fail"], ck["history"]) == ("running", None, r["history"])
    assert set(ck["rng"]) == {"torch", "cuda", "order", "augment"} and ck["rng"]["cuda"] is None
    # stopped on a log: the window's sums were just reported
    assert ck["acc"].tolist() == [0.0, 0.0, 0.0, -1.0]
    assert ck["model"].keys() == build.build_model(cfg["model"]).state_dict().keys()
    assert quiet(cfg, mnist, max_steps=6)["checkpoint"] is None  # no checkpoint_dir: nothing saved


def test_checkpoints_fall_on_multiples_of_checkpoint_every_and_at_the_stop(mnist, tmp_path, monkeypatch):
    steps = []
    monkeypatch.setattr(checkpoint, "save_checkpoint", lambda path, state: steps.append(state["step"]))
    quiet(tiny(steps=12, log=2), mnist, checkpoint_dir=tmp_path, checkpoint_every=4, max_steps=10)
    assert steps == [4, 8, 10]
    # rounded up to a multiple of log_every (checkpoints hold no half-reported window)
    steps.clear()
    quiet(tiny(steps=12, log=3), mnist, checkpoint_dir=tmp_path, checkpoint_every=4)
    assert steps == [6, 12]
    steps.clear()  # the default: at every evaluation
    quiet(tiny(steps=12, log=3, eval_every=6), mnist, checkpoint_dir=tmp_path)
    assert steps == [6, 12]


def test_resume_from_a_stop_between_logs_equals_the_run_uninterrupted(mnist, tmp_path):
    cfg = tiny(steps=12, log=3)
    full = quiet(cfg, mnist, deterministic=True)
    part = quiet(cfg, mnist, deterministic=True, checkpoint_dir=tmp_path, max_steps=5)  # mid-window
    assert part["status"] == "stopped" and part["step"] == 5
    ck = torch.load(Path(part["checkpoint"]), weights_only=True)
    # the two steps since the last log are kept in the checkpoint
    assert ck["acc"][2].item() == 2 * 128
    logs = []
    done = quiet(cfg, mnist, deterministic=True, checkpoint_dir=tmp_path, resume=True,
                 on_log=lambda h: logs.append(h["train"][-1]["step"]))
    assert logs == [6, 9, 12]  # it went on from step 5
    assert (untimed(done["history"]) == untimed(full["history"])
            and done["final"]["gates_k"] == full["final"]["gates_k"])
    # afresh
    assert quiet(cfg, mnist, checkpoint_dir=tmp_path,
                 resume=False)["history"]["train"][0]["step"] == 3


def test_a_non_finite_loss_is_a_recorded_fail_at_its_step(mnist, tmp_path, monkeypatch):
    cfg = tiny(steps=12)
    # lr 1e30 from step 5
    cfg["schedule"] = step_schedule(12, 1e30, 10, [0.5], warmup_steps=5, warmup_lr=0.0)
    r = quiet(cfg, mnist, out_dir=tmp_path, write_result=True)
    assert r["status"] == "fail" and r["fail"] == {"step": 6, "reason": "non-finite training loss"}
    # stopped at the log after it
    assert r["final"]["steps"] == r["history"]["train"][-1]["step"] == 9
    assert ("test_err" not in r["final"]
            and json.loads(Path(r["path"]).read_text())["fail"] == r["fail"])
    real = build.build_model

    def poisoned(spec):  # a classifier of infinities: the very first loss is not finite
        net = real(spec)
        torch.nn.init.constant_(net[-1].weight, float("inf"))
        return net

    monkeypatch.setattr(build, "build_model", poisoned)
    assert quiet(tiny(), mnist)["fail"] == {"step": 0, "reason": "non-finite training loss"}


def test_a_run_stuck_at_chance_fails_only_where_the_recipe_asks(mnist):
    cfg = tiny(steps=12, lr=0.0)  # no learning: training error stays at chance (0.9)
    # the recipes' rule: only a non-finite loss stops a run
    assert quiet(cfg, mnist)["status"] == "ok"
    # error >= 0.75 after step 6 fails
    cfg["divergence"] = {"grace_fraction": 0.25, "chance_margin": 0.15}
    r = quiet(cfg, mnist)
    assert r["status"] == "fail" and r["fail"]["step"] == 9 and "still at chance (0.900) after 9 steps" in \
        r["fail"]["reason"]
    cfg["divergence"] = {"grace_fraction": 0.25}
    # the default margin
    assert loop_of(cfg, data=mnist, progress=False).divergence.chance_margin == 0.01


def test_train_passes_its_options_to_the_run(mnist, tmp_path, monkeypatch):
    during = []
    r = quiet(tiny(steps=6), mnist, deterministic=True,
              on_log=lambda h: during.append(torch.are_deterministic_algorithms_enabled()))
    assert (r["deterministic"] and during == [True, True]
            and not torch.are_deterministic_algorithms_enabled())
    r = quiet(tiny(steps=6), mnist, amp="bf16", channels_last=True, cuda_graph=True)
    # no graph on a CPU
    assert (r["precision"], r["channels_last"], r["cuda_graph"]) == ("bfloat16", True, False)
    run = loop_of(tiny(steps=6), data=mnist, progress=False, amp="fp16", write_result=False)
    assert run.stepper.scaler is None  # a GradScaler only for fp16 on CUDA
    assert run.stepper.graph_note is None and not run.graph_on
    settings = []  # the process-wide switches hear of the run's device and determinism
    real_settings = trainer.EngineSettings
    monkeypatch.setattr(trainer, "EngineSettings",
                        lambda det, dev, threads, cfgs: settings.append((det, dev, threads))
                        or real_settings(det, dev, threads, cfgs))
    quiet(tiny(steps=3), mnist, deterministic=True, device="cpu", threads=1)
    assert settings == [(True, "cpu", 1)]
    # a data path (not a Data): train loads each dataset the configs name, once
    loads = []
    real = data.load
    monkeypatch.setattr(data, "load",
                        lambda name, d=None: loads.append((name, d))
                        or real(name, d, verbose=False))
    trainer.train([tiny(steps=3), tiny(steps=3, seed=1)], data=SHARED, progress=False,
                       write_result=False)
    monkeypatch.setenv("IDMAP_DATA", SHARED)  # no data at all: $IDMAP_DATA
    trainer.train([tiny(steps=3)], progress=False, write_result=False)
    assert loads == [("mnist", SHARED), ("mnist", None)]
    # compile=True reaches the run: it compiles the model (here a stand-in for torch.compile)
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda m: compiled.append(m) or m)
    assert quiet(tiny(steps=3), mnist, compile=True)["compiled"] and len(compiled) == 1


def test_a_wall_time_checkpoint_waits_for_its_minutes(mnist, tmp_path, monkeypatch):
    """checkpoint_minutes: a checkpoint once that much wall time has passed since the last one, not
    before (here a clock that gains 1 ms a reading: only the recipe's checkpoint at the stop)."""
    import itertools

    steps, ms = [], itertools.count()
    monkeypatch.setattr(checkpoint, "save_checkpoint", lambda path, state: steps.append(state["step"]))
    monkeypatch.setattr(loop.time, "perf_counter", lambda: 1000 + next(ms) / 1000)
    quiet(tiny(steps=12, log=3, eval_every=12), mnist, checkpoint_dir=tmp_path,
          checkpoint_every=12, checkpoint_minutes=1)
    assert steps == [12]


def test_the_projected_time_is_the_measured_time_a_step_times_the_steps_left(mnist, monkeypatch):
    run = loop_of(tiny(steps=20, log=5, eval_every=10), data=mnist, progress=False,
                      write_result=False)
    # a clock of 0.5 s a step
    monkeypatch.setattr(loop.time, "perf_counter", lambda: run.step * 0.5)
    while not run.done:
        run.advance()
    # timed over steps 5..15 (after the first steps), projected for the 5 steps left then
    assert (run._probe["at"], run._probe["until"], run.projected_s) == (5, 15, 0.5 * 5)


def test_the_first_line_says_where_and_how_the_run_computes(mnist, capsys):
    cfg = tiny(steps=6)
    quiet(cfg, mnist, amp="fp32", channels_last=True)  # progress=False: nothing is said
    assert capsys.readouterr().out == ""
    trainer.train(cfg, data=mnist, write_result=False, amp="bf16", channels_last=True,
                  cuda_graph=True)
    assert (f"{cfg['experiment']}__{cfg['variant']}__full__s0: cpu, bfloat16, channels_last (no "
            f"CUDA graph: CUDA "
            "graphs need a CUDA device); 6 steps to go\n") in capsys.readouterr().out
