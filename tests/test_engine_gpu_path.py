"""The GPU path of the engine: choices a CPU can check (mocked capability, device count, checkpoint
mismatch), several runs in one process, the projected-time report; and, where a GPU is present, the
CUDA graph step against the eager one."""
from pathlib import Path

import pytest
import torch

from idmap_lib.engine import device, distributed
from idmap_lib.engine.checkpoint import CheckpointError
from idmap_lib.engine.recipes import config
from idmap_lib.engine.schedule import step_schedule
from idmap_lib.engine.build import build_optimizer
from idmap_lib.engine.device import amp_dtype
from idmap_lib.engine.trainer import train
from support import untimed

CUDA = torch.cuda.is_available()


def tiny(steps=12, lr=0.1, dropout=0.3, batch=32):
    """Paper B's WRN recipe (dropout, augmentation, Nesterov, gates) made tiny."""
    cfg = config("b_wrn", "gated", "cpu")
    cfg["model"] = {"builder": "wide_resnet",
                    "kwargs": {"depth": 10, "widen": 1, "dropout": dropout, "gated": True,
                               "num_classes": 10}}
    cfg.update(steps=steps, batch_size=batch, log_every=3, eval_every=6,
               subset={"train_per_class": 20, "test_per_class": 10},
               schedule=step_schedule(steps, lr, 5, fractions=[0.5]),
               divergence={"grace_fraction": None})
    return cfg


# ---------------------------------------------------------------- precision and optimizer per
# device

@pytest.mark.parametrize("capability, want", [((7, 5), torch.float16), ((7, 0), torch.float16),
                                              ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)])
def test_bf16_only_on_compute_capability_8_and_up(monkeypatch, capability, want):
    # torch.cuda.is_bf16_supported() says yes on a T4 (emulation): the engine must not ask it
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
    assert amp_dtype(torch.device("cuda"), "auto") is want
    assert amp_dtype(torch.device("cuda"), "fp32") is None
    with pytest.raises(ValueError, match="valid: auto, bf16, fp16, fp32"):
        amp_dtype(torch.device("cuda"), "half")


# (oneDNN's bf16, torch's CPU capability): an AVX-512 EPYC with AVX512-BF16 or an AMX Xeon; an
# AVX2-only EPYC (or one run with ATEN_CPU_CAPABILITY=avx2); AVX-512 without AVX512-BF16
@pytest.mark.parametrize("mkldnn_bf16, capability, native_bf16",
                         [(True, "AVX512", True), (False, "AVX2", False), (True, "AVX2", False),
                          (False, "AVX512", False), (True, "DEFAULT", False)])
def test_precision_per_request_and_device(monkeypatch, mkldnn_bf16, capability, native_bf16):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: mkldnn_bf16)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (8, 0))
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    for dev in (cpu, cuda, torch.device("meta")):  # an explicit request holds on every device
        assert [amp_dtype(dev, a) for a in ("bf16", "fp16", "fp32", "off", None, False)] == \
            [torch.bfloat16, torch.float16, None, None, None, None]
    # "auto": bf16 on a CPU only where it is native (emulated bf16 is slower than fp32), as torch's
    # CPU capability says it (ATEN_CPU_CAPABILITY=avx2 takes the AVX2 machine's float32 path);
    # none elsewhere
    assert device.native_cpu_bf16() is native_bf16
    assert amp_dtype(cpu) is amp_dtype(cpu, "auto") is (torch.bfloat16 if native_bf16 else None)
    assert (amp_dtype(cuda, "auto") is torch.bfloat16 and amp_dtype(torch.device("meta"),
                                                                    "auto") is None)
    assert [device.precision_name(d) for d in (None, torch.bfloat16, torch.float16)] == \
        ["float32", "bfloat16", "float16"]


def test_sgd_is_fused_on_cuda_only_and_nadam_capturable_for_graphs():
    model = torch.nn.Linear(3, 2)
    sgd = config("a_table2_activations", "full_preact-110", "full")["optimizer"]
    assert build_optimizer(model, sgd, torch.device("cuda")).param_groups[0]["fused"] is True
    assert not build_optimizer(model, sgd, torch.device("cpu")).param_groups[0]["fused"]
    nadam = config("b_mnist", "gresnet-d2", "full")["optimizer"]
    assert build_optimizer(model, nadam, torch.device("cuda"),
                           capturable=True).param_groups[0]["capturable"]
    assert not build_optimizer(model, nadam, torch.device("cuda")).param_groups[0]["capturable"]


def test_cudnn_benchmark_on_for_cuda_runs_and_restored(monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    with device.EngineSettings(deterministic=False, device="cuda"):
        assert torch.backends.cudnn.benchmark is True
    assert torch.backends.cudnn.benchmark is False
    with device.EngineSettings(deterministic=True, device="cuda"):
        # benchmark picks algorithms by timing: not reproducible
        assert torch.backends.cudnn.benchmark is False
    with device.EngineSettings(deterministic=False, device="cpu"):
        assert torch.backends.cudnn.benchmark is False


# ---------------------------------------------------------------- DDP on machines with fewer GPUs
# than processes

@pytest.mark.parametrize("gpus, local_world, device, want", [
    (0, 2, None, False), (1, 2, None, False), (2, 2, None, True), (4, 2, None, True),
    (2, 2, "cpu", False)])
def test_ddp_uses_cuda_only_with_a_gpu_per_process(monkeypatch, gpus, local_world, device, want):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    assert distributed.use_cuda(local_world, device) is want


# ---------------------------------------------------------------- checkpoints from another kind of
# device

def test_resume_on_another_device_type_or_precision_is_a_clear_error(cifar, tmp_path):
    cfg = tiny(steps=6)
    train(cfg, data=cifar, checkpoint_dir=tmp_path, max_steps=3, progress=False, device="cpu")
    path = next(tmp_path.glob("*.pt"))
    ck = torch.load(path, weights_only=True)
    assert (ck["device_type"] == "cpu"
            and ck["precision"] == device.precision_name(amp_dtype(torch.device("cpu"))))
    # as a T4 would write it
    torch.save({**ck, "device_type": "cuda", "precision": "float16"}, path)
    with pytest.raises(CheckpointError, match="written on cuda in float16"):
        train(cfg, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False, device="cpu")
    # an older checkpoint without the record, whose augment generator state is a CUDA one (16 bytes)
    old = {k: v for k, v in ck.items() if k not in ("device_type", "precision")}
    old["rng"] = {**ck["rng"], "augment": [torch.zeros(16, dtype=torch.uint8)]}
    torch.save(old, path)
    with pytest.raises(CheckpointError, match="kind of device"):
        train(cfg, data=cifar, checkpoint_dir=tmp_path, resume=True, progress=False, device="cpu")


# ---------------------------------------------------------------- several runs in one process

def test_train_many_equals_each_run_alone(cifar):
    """Interleaved step by step (dropout draws from the global RNG), each run is exactly its solo
    run."""
    a, b = tiny(steps=9), {**tiny(steps=6, lr=0.05), "seed": 1}
    kw = dict(data=cifar, progress=False, write_result=False, deterministic=True)
    together = train([a, b], **kw)
    alone = [train(a, **kw), train(b, **kw)]
    for t, s in zip(together, alone):
        assert t["status"] == s["status"] == "ok"
        assert untimed(t["history"]) == untimed(s["history"])
        assert t["final"]["gates_k"] == s["final"]["gates_k"]
    assert untimed(together[0]["history"]) != untimed(together[1]["history"])


def test_run_reports_device_and_projected_time(cifar, capsys):
    r = train(tiny(steps=20), data=cifar, write_result=False, cuda_graph=True)
    out = capsys.readouterr()
    text = out.out + out.err
    dev = device.pick_device()
    assert f": {dev.type}" in text and device.precision_name(amp_dtype(dev)) in text
    assert ("img/s -> the remaining 5 steps take about" in text
            and ": step 15, training loss " in text)
    if not CUDA:  # the option is refused with its reason, and the result says what ran
        assert "no CUDA graph: CUDA graphs need a CUDA device" in text and r["cuda_graph"] is False


def test_duration_format_and_bench_block():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from bench import block_for  # the benchmarks live outside the library

    assert block_for(1001) == block_for(164) == "bottleneck" and block_for(110) == "basic"
    assert device.format_duration(42) == "42 s"
    assert device.format_duration(5 * 60) == "5 min"
    assert [device.format_duration(s) for s in (89, 90, 2 * 3600 - 1,
                                                2 * 3600)] == ["89 s", "2 min", "120 min", "2.0 h"]
    assert device.format_duration(17 * 3600) == "17.0 h"


def test_the_benchmarks_live_outside_the_library_and_the_command_forwards(capsys):
    """tools/bench.py times the library through its one entry; ``python -m idmap_lib bench`` runs
    it."""
    from idmap_lib import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--help"])
    assert e.value.code == 0 and "usage: tools/bench.py" in capsys.readouterr().out
    assert not (Path(cli.__file__).parent / "engine" / "bench.py").exists()


# ---------------------------------------------------------------- the CUDA graph step (GPU only)

@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("amp", ["auto", "fp16"])  # fp16: GradScaler inside the graph (a T4's path)
def test_cuda_graph_step_trains_as_the_eager_step(cifar, tmp_path, amp):
    cfg = tiny(steps=30, dropout=0.0)
    # 2 recaptures
    cfg["schedule"] = step_schedule(30, 0.1, 10, fractions=[0.5], warmup_steps=8, warmup_lr=0.01)
    kw = dict(data=cifar, progress=False, write_result=False, deterministic=True, amp=amp)
    eager, graph = train(cfg, **kw), train(cfg, cuda_graph=True, **kw)
    assert graph["cuda_graph"] is True and eager["cuda_graph"] is False
    assert graph["precision"] == eager["precision"]
    for e, g in zip(eager["history"]["train"], graph["history"]["train"]):
        assert g["step"] == e["step"] and abs(g["train_loss"] - e["train_loss"]) < 1e-3 * max(1, e["train_loss"])
    assert abs(graph["final"]["test_err"] - eager["final"]["test_err"]) <= 0.02
    # exact resume with the graph: stop, resume (eager warm-up, fresh capture), same weights as
    # uninterrupted
    a = train(cfg, checkpoint_dir=tmp_path / "a", cuda_graph=True, checkpoint_every=3, **kw)
    train(cfg, checkpoint_dir=tmp_path / "b", cuda_graph=True, checkpoint_every=3, max_steps=14,
          **kw)
    b = train(cfg, checkpoint_dir=tmp_path / "b", cuda_graph=True, checkpoint_every=3, resume=True,
              **kw)
    assert untimed(a["history"]) == untimed(b["history"])


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_cuda_graph_step_records_a_diverging_run_as_fail(cifar):
    r = train(tiny(steps=30, lr=1e8), data=cifar, progress=False, write_result=False,
              cuda_graph=True)
    assert r["cuda_graph"] is True and r["status"] == "fail" and "non-finite" in r["fail"]["reason"]
    assert 0 <= r["fail"]["step"] < 30


# ---------------------------------------------------------------- committed runs under way

def test_committed_checkpoints_still_fit_their_recipes():
    """A full-recipe run started on a lent GPU resumes on the next one only if its recipe (config
    hash) and model are unchanged: a recipe edit that would orphan it fails here first."""
    from idmap_lib.engine.results import config_hash
    from idmap_lib.engine.build import build_model
    found = sorted((Path(__file__).resolve().parents[1] / "data" / "checkpoints").glob("*.pt"))
    for path in found:
        ck = torch.load(path, map_location="cpu", weights_only=True)
        c = ck["config"]
        assert ck["config_hash"] == config_hash(config(c["experiment"], c["variant"], c["scale"],
                                                       c["seed"])), path
        assert ck["device_type"] == "cuda" and 0 < ck["step"] < c["steps"]
        build_model(c["model"]).load_state_dict(ck["model"])  # same architecture, every tensor


def test_fp16_steps_are_graphed_with_fused_sgd_only():
    """A T4's path (fp16 + GradScaler) keeps its CUDA graph with fused SGD, whose step skips an
    overflow on the device; GradScaler with another optimizer reads found_inf on the host, which a
    graph cannot hold."""
    from types import SimpleNamespace

    from idmap_lib.engine.solo import Solo

    def blocker(optimizer, scaler=True):
        run = SimpleNamespace(scaler=object() if scaler else None,
                              cfg={"optimizer": {"name": optimizer}},
                              ctx=SimpleNamespace(world=1), compile=False)
        return Solo._graph_blocker(run, True, True)

    assert blocker("sgd") is None and blocker("nadam", scaler=False) is None
    assert "host sync" in blocker("nadam")
