"""Where and in what precision a run computes, the process-wide switches it needs, and how long it takes.

bf16 autocast where the hardware has it (GPUs of compute capability >= 8; CPUs with AVX512-BF16/AMX), fp16 with
a GradScaler on older GPUs (e.g. Colab's T4), else fp32.
"""
from __future__ import annotations

import os

import torch

# cuBLAS reads this when it is first initialised (the first matmul on a GPU, after any import): deterministic CUDA
# runs need it, so it is set when the engine is imported, before a run can start.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pick_device(device=None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def amp_dtype(device: torch.device, amp="auto"):
    """bf16 / fp16 / None (fp32) for autocast on `device`.

    On CUDA bf16 needs compute capability >= 8 (Ampere and later): ``torch.cuda.is_bf16_supported()`` also
    counts *emulated* bf16 and says yes on a T4 (7.5), where cuDNN has no bf16 convolutions; there fp16 with
    a GradScaler is the fast path."""
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
        try:  # native bf16 (AVX512-BF16 / AMX); emulated bf16 would be slower than fp32
            return torch.bfloat16 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else None
        except (AttributeError, RuntimeError):
            return None
    return None


def precision_name(dtype) -> str:
    return str(dtype).replace("torch.", "") if dtype is not None else "float32"


class EngineSettings:
    """Process-wide switches a run needs, restored afterwards: deterministic algorithms, cudnn.benchmark."""

    def __init__(self, deterministic, device):
        self.deterministic, self.cuda = deterministic, pick_device(device).type == "cuda"

    def __enter__(self):
        self.saved = torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark
        if self.deterministic:  # on CUDA a few kernels have no deterministic version: warn, don't stop
            torch.use_deterministic_algorithms(True, warn_only=self.cuda)
        torch.backends.cudnn.benchmark = self.cuda and not self.deterministic

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.saved[0])
        torch.backends.cudnn.benchmark = self.saved[1]


def format_duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
