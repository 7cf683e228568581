"""DDP through PyTorch's own engine: ``torchrun --nproc_per_node=N -m idmap_lib train ...``.

nccl on CUDA when every local process has a GPU of its own, else gloo on the CPU (on a one-GPU
machine a second process would ask for ``cuda:1``, which does not exist; ``--device cpu`` also asks
for the CPU). Every rank draws the same data permutation; the global batch of the recipe (e.g. 128)
is split rank::world, so N processes see exactly the batches one process would (a
DistributedSampler-equivalent sharding of the on-device index permutation). Only rank 0 writes.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from .device import Single


def use_cuda(local_world: int, device=None) -> bool:
    """DDP on CUDA only if every local process gets its own GPU and no other device was asked
    for."""
    if device is not None and torch.device(device).type != "cuda":
        return False
    return torch.cuda.is_available() and torch.cuda.device_count() >= local_world


class DDPContext(Single):
    def __init__(self, device=None):
        self.world = int(os.environ["WORLD_SIZE"])
        self.rank = int(os.environ["RANK"])
        local = int(os.environ.get("LOCAL_RANK", 0))
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))
        if use_cuda(local_world, device):
            self.backend, self.device = "nccl", torch.device("cuda", local)
            torch.cuda.set_device(self.device)
        else:
            if torch.cuda.is_available() and device is None and local == 0:
                print(f"DDP: {local_world} processes but {torch.cuda.device_count()} GPU(s) here: "
                      f"training on the CPU (gloo); use "
                      f"--nproc_per_node={torch.cuda.device_count()} for the GPUs", flush=True)
            self.backend, self.device = "gloo", torch.device("cpu")
            # share the cores between the local processes
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
        if not dist.is_initialized():
            dist.init_process_group(self.backend)

    def all_reduce(self, t):
        dist.all_reduce(t)
        return t

    def all_reduce_max(self, t):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t

    def gather_object(self, obj):
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def wrap(self, model):
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, device_ids=[self.device] if self.device.type == "cuda" else None)

    def params_in_sync(self, model) -> bool:
        """Every rank holds the same parameters (a checksum compared across ranks)."""
        s = torch.stack([p.detach().double().sum() for p in model.parameters()]).to(self.device)
        lo, hi = s.clone(), s.clone()
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        return bool(torch.equal(lo, hi))


_CTX = None


def context(device=None):
    """The process group context: DDP when launched by torchrun with WORLD_SIZE > 1, else single."""
    global _CTX
    if _CTX is None:
        _CTX = DDPContext(device) if int(os.environ.get("WORLD_SIZE", 1)) > 1 else Single()
    return _CTX


def cleanup():
    global _CTX
    if dist.is_initialized():
        dist.destroy_process_group()
    _CTX = None


def int_env(name, default):
    return int(os.environ.get(name, default))
