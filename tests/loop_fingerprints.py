"""What the training loops recorded for a few tiny runs, as a fingerprint to compare a later loop
with.

``fingerprints()`` trains each case below on one CPU thread and keeps everything a run records but
its timings (every log window's loss and error, every evaluation, the first steps' losses, the final
metrics and gates) plus a digest of the trained weights where the entry point returns them.
``RECORDED`` holds what the loops that came before ``engine/loop.py`` (``trainer.Run``,
``fused.FusedRun``, ``stacked._Stack``; all now ``trainer.train`` over the one loop) recorded on
an AVX-512 AMD EPYC with AVX512-BF16 (``python tests/loop_fingerprints.py`` wrote it, at commit
558e55d); ``RECORDED_AVX2`` what the same cases
train at torch's AVX2 capability, where "auto" is float32 (recorded on that EPYC with
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``, which gave the AVX2-only EPYC's numbers that
issue 61 quotes: solo_mnist_nadam's first evaluation 0.35, solo_bf16's final training error 0.8125).
``test_engine_loop.py`` compares with the recording of this machine's capability."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

import torch

from idmap_lib.engine import data
from idmap_lib.engine.recipes import config
from idmap_lib.engine.schedule import step_schedule
from support import SHARED, tiny_mnist, untimed

RECORDED = Path(__file__).parent / "loop_fingerprints.json"
RECORDED_AVX2 = Path(__file__).parent / "loop_fingerprints.avx2.json"
# the settings that cap the instruction sets oneDNN (convolutions, bf16 matmuls) and MKL (float32
# matmuls) use, whatever the CPU has: a part of the machine kind when set
ISA_CAPS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR")
KINDS = ("plain", "resnet", "gresnet")


def tiny_cifar(seed=0, variant="original-110", steps=12):
    """ResNet-8 of Table 2's recipe, 320 images, batch 16, augmented, lr 0.01 -> 0.1 at step 4, / 5
    at half."""
    cfg = config("a_table2_activations", variant, "cpu", seed)
    cfg["model"]["kwargs"]["depth"] = 8
    cfg.update(steps=steps, batch_size=16, log_every=2, eval_every=6,
               divergence={"grace_fraction": None},
               subset={"train_per_class": 32, "test_per_class": 10},
               schedule=step_schedule(steps, 0.1, 5, fractions=[0.5], warmup_steps=4,
                                      warmup_lr=0.01))
    return cfg


def _record(result) -> dict:
    keep = ("status", "fail", "config_hash", "first_steps", "precision", "channels_last")
    out = {k: result.get(k) for k in keep}
    out["history"] = untimed(result["history"])
    out["final"] = {k: v for k, v in result.get("final", {}).items()
                    if k not in ("wall_s", "img_per_s")}
    return out


def _digest(net) -> str:
    h = hashlib.sha256()
    for k, v in net.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def machine() -> str:
    """What a bit-exact comparison depends on: torch's version and build, the kernels it
    dispatches (``torch.backends.cpu.get_cpu_capability()``), the CPU's AVX-512 and AMX flags
    (oneDNN's and MKL's kernels follow them) and any setting that caps those (``ISA_CAPS``)."""
    flags = ""
    if Path("/proc/cpuinfo").exists():
        line = next((l for l in Path("/proc/cpuinfo").read_text().splitlines()
                     if l.startswith("flags")), "")
        flags = " ".join(sorted(f for f in line.split() if f.startswith(("avx512", "amx"))))
    caps = "".join(f" {k}={os.environ[k]}" for k in ISA_CAPS if os.environ.get(k))
    return (f"{platform.machine()} torch {torch.__version__} "
            f"{torch.backends.cpu.get_cpu_capability()} {flags}{caps}")


def fingerprints(cases=None) -> dict:
    """Each case's fingerprint (a list of run records), trained now with the library as it is."""
    from idmap_lib.engine.fused import Fused
    from idmap_lib.engine.stacked import Stacked
    from idmap_lib.engine.trainer import train

    cifar = data.load("cifar10", SHARED, verbose=False)
    mnist = data.load("mnist", SHARED, verbose=False)
    kw = dict(progress=False, write_result=False, device="cpu", threads=1)
    runs = {
        "solo_bf16": lambda: [train(tiny_cifar(0), cifar, amp="bf16", **kw)],
        "solo_fp32_preact": lambda: [train(tiny_cifar(1, "full_preact-110"), cifar, amp="fp32",
                                           **kw)],
        "solo_mnist_nadam": lambda: [train(tiny_mnist("gresnet", 2), mnist, **kw)],
        "many_interleaved": lambda: train([tiny_cifar(0), tiny_cifar(2, "full_preact-110")],
                                          cifar, amp="bf16", **kw),
        "fused_bf16": lambda: train([tiny_cifar(s) for s in (0, 1)], cifar, amp="bf16",
                                     stepper=Fused, **kw),
        "fused_fp32": lambda: train([tiny_cifar(s, "full_preact-110") for s in (0, 3)], cifar,
                                    amp="fp32", stepper=Fused, **kw),
        "stacked": lambda: _stacked(train, Stacked, mnist),
    }
    out = {}
    for name, fn in runs.items():
        if cases is None or name in cases:
            # what a caller's global stream was does not matter to a run: the same anyway
            torch.manual_seed(1234)
            out[name] = [r if "digest" in r else _record(r) for r in fn()]
    return out


def _stacked(train, Stacked, mnist):
    results = train([tiny_mnist(k, s) for k in KINDS for s in (0, 1)], mnist, stepper=Stacked,
                    progress=False, write_result=False, device="cpu")
    return [{**_record(r), "digest": _digest(n)} for r, n in zip(results, results.nets)]


if __name__ == "__main__":
    # python tests/loop_fingerprints.py [PATH]: this machine's recording (by default the file of
    # its capability: RECORDED at AVX512, RECORDED_AVX2 at AVX2)
    torch.set_num_threads(1)
    capability = torch.backends.cpu.get_cpu_capability()
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (RECORDED_AVX2 if capability == "AVX2"
                                                      else RECORDED)
    out.write_text(json.dumps({"machine": machine(), "capability": capability,
                               "runs": fingerprints()}, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
