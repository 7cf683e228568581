"""Where and in what precision a run computes (``Single``: in one process; under torchrun,
distributed.py), the process-wide switches it needs, and how long it takes.

bf16 autocast where the hardware has it (GPUs of compute capability >= 8; CPUs with
AVX512-BF16/AMX), fp16 with a GradScaler on older GPUs (e.g. Colab's T4), else fp32.
"""
from __future__ import annotations

import contextlib
import os

import torch

# cuBLAS reads this when it is first initialised (the first matmul on a GPU, after any import):
# deterministic CUDA runs need it, so it is set when the engine is imported, before a run can start.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


class Single:
    """One process: the loop's view of the processes that train it (``ctx``) when not under
    torchrun; distributed.DDPContext is the other (the same methods over a process group)."""

    rank, world, backend = 0, 1, None
    device = None

    def all_reduce(self, t):
        return t

    def all_reduce_max(self, t):
        return t

    def gather_object(self, obj):
        return [obj]

    def wrap(self, model):
        return model


def pick_device(device=None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def amp_dtype(device: torch.device, amp="auto"):
    """bf16 / fp16 / None (fp32) for autocast on `device`.

    On CUDA bf16 needs compute capability >= 8 (Ampere and later):
    ``torch.cuda.is_bf16_supported()`` also counts *emulated* bf16 and says yes on a T4 (7.5), where
    cuDNN has no bf16 convolutions; there fp16 with a GradScaler is the fast path."""
    if amp in (None, False, "fp32", "off"):
        return None
    if amp == "bf16":
        return torch.bfloat16
    if amp == "fp16":
        return torch.float16
    if amp != "auto":
        raise ValueError(f"unknown amp {amp!r}; valid: auto, bf16, fp16, fp32")
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.get_device_capability(device)[0] >= 8 else torch.float16
    if device.type == "cpu":
        return torch.bfloat16 if native_cpu_bf16() else None
    return None


def native_cpu_bf16() -> bool:
    """Whether this CPU runs bf16 natively (AVX512-BF16 / AMX; emulated bf16 would be slower than
    fp32): oneDNN says so *and* torch dispatches its AVX-512 kernels
    (``torch.backends.cpu.get_cpu_capability()``), so that a capability lowered with
    ``ATEN_CPU_CAPABILITY=avx2`` (as on an AVX2-only CPU) takes that CPU's float32 path."""
    try:
        return (torch.backends.cpu.get_cpu_capability() == "AVX512"
                and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()))
    except (AttributeError, RuntimeError):
        return False


def precision_name(dtype) -> str:
    return str(dtype).replace("torch.", "") if dtype is not None else "float32"


def physical_cores(cpuinfo="/proc/cpuinfo") -> int:
    """The cores this process may run on, a core's hyperthreads counted once (Colab's 2 vCPUs are
    one core's two hyperthreads); where /proc/cpuinfo does not say, the CPUs it may run on."""
    allowed = (os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity")
               else set(range(os.cpu_count() or 1)))
    cores, cpu = set(), {}
    try:
        with open(cpuinfo) as f:
            for line in [*f, ""]:
                key, _, value = line.partition(":")
                if key.strip() in ("processor", "physical id", "core id"):
                    cpu[key.strip()] = value.strip()
                elif not line.strip() and cpu:
                    if int(cpu.get("processor", -1)) in allowed:
                        cores.add((cpu.get("physical id"),
                                   cpu.get("core id", cpu.get("processor"))))
                    cpu = {}
    except (OSError, ValueError):
        cores = set()
    return max(1, min(len(cores) or len(allowed), len(allowed)))


def cpu_threads(cfgs) -> int:
    """Threads to train the recipe configs `cfgs` with on a CPU ("auto"): one for Paper B's MLPs,
    whose 50-unit layers gain little from a second thread and lose much beside any other work; else
    every physical core, never more (a second hyperthread of one core only contends for it). Why:
    on two cores a second thread makes an MLP step about 1.3x faster when the machine is idle and
    4x slower beside one busy process, while a ResNet step gains about 1.8x idle (the classroom
    configs, timed with ``python -m idmap_class time``)."""
    return 1 if all(c["model"]["builder"] == "mlp" for c in cfgs) else physical_cores()


@contextlib.contextmanager
def threads(n):
    """torch's CPU threads set to `n` for a block (None: as they are), restored after: the one way
    the library changes them for a piece of work (a chapter's kernel keeps its own setting,
    ``physical_cores``, outside)."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(old)


class EngineSettings:
    """Process-wide switches a run needs, restored afterwards: deterministic algorithms,
    cudnn.benchmark, and on a CPU the threads (`threads`: a number, "auto" for
    ``cpu_threads(cfgs)``, None to leave them as they are)."""

    def __init__(self, deterministic, device, threads=None, cfgs=()):
        self.deterministic, self.cuda = deterministic, pick_device(device).type == "cuda"
        self.threads = (None if self.cuda or threads is None else cpu_threads(cfgs)
                        if threads == "auto" else int(threads))

    def __enter__(self):
        self.saved = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark)
        # on CUDA a few kernels have no deterministic version: warn, don't stop
        if self.deterministic:
            torch.use_deterministic_algorithms(True, warn_only=self.cuda)
        torch.backends.cudnn.benchmark = self.cuda and not self.deterministic
        self.held = threads(self.threads)
        self.held.__enter__()
        return self

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.saved[0])
        torch.backends.cudnn.benchmark = self.saved[1]
        self.held.__exit__(*exc)


def format_duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
