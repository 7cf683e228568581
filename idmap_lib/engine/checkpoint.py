"""Atomic checkpoints (tmp file + os.replace) loaded with ``torch.load(weights_only=True)``.

A checkpoint holds only tensors and plain containers (model/optimizer state, RNG states as uint8
tensors, the data permutation, history dicts), so the safe loader reads it. A file that cannot be
read (corrupt, truncated) or that belongs to another recipe raises CheckpointError saying what to
do.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
from .results import run_name


def path_of(checkpoint_dir, cfg) -> Path:
    """Where a run's checkpoint is kept in `checkpoint_dir`: one file a run, named by the run."""
    return Path(checkpoint_dir) / f"{run_name(cfg)}.pt"


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used to resume this run."""


def save_checkpoint(path, state: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a crash leaves the previous checkpoint intact
    return path


def load_checkpoint(path, config_hash: str | None = None, world_size: int | None = None) -> dict:
    path = Path(path)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError, RuntimeError (bad zip), EOFError ...
        raise CheckpointError(f"checkpoint {path} is unreadable (corrupt or truncated: "
                              f"{type(e).__name__}: {e}). Delete it to start the run afresh, or "
                              f"point --checkpoint-dir elsewhere."
                              ) from e
    if not isinstance(ck, dict) or ck.get("format") != 1 or "model" not in ck:
        raise CheckpointError(f"{path} is not an idmap_lib training checkpoint; delete it or point "
                              f"--checkpoint-dir elsewhere.")
    if config_hash is not None and ck.get("config_hash") != config_hash:
        raise CheckpointError(f"checkpoint {path} belongs to a different configuration (hash "
                              f"{str(ck.get('config_hash'))[:12]} != {config_hash[:12]}): the "
                              f"recipe or seed changed since it was written. Delete it, or resume "
                              f"with the recipe it was written for.")
    if world_size is not None and ck.get("world_size", 1) != world_size:
        raise CheckpointError(f"checkpoint {path} was written by {ck.get('world_size')} processes; "
                              f"resume it with the same number (now {world_size}), or delete it.")
    return ck


def load_together(paths, hashes, world, now, move=False) -> list[dict] | None:
    """The checkpoints of runs trained together (one file a run), or None where there is none: all
    or none of them, each written on the kind of device and in the precision `now` = (device type,
    precision) unless `move`, and those of runs still running at one step."""
    there = [p.exists() for p in paths]
    if not any(there):
        return None
    if not all(there):
        missing = ", ".join(p.name for p, t in zip(paths, there) if not t)
        raise CheckpointError(f"runs trained together resume all or none; no checkpoint for "
                              f"{missing} in {paths[0].parent}: delete the others to start afresh, "
                              f"or train the runs apart")
    cks = [load_checkpoint(p, h, world) for p, h in zip(paths, hashes)]
    for p, ck in zip(paths, cks):
        kind = (ck.get("device_type"), ck.get("precision"))
        if kind[0] is not None and kind != now and not move:
            raise CheckpointError(
                f"checkpoint {p} was written on {kind[0]} in {kind[1]}; this run is on {now[0]} in "
                f"{now[1]}. A resumed run continues on the same kind of device in the same "
                f"precision (e.g. a T4's fp16 run on a T4), bit for bit: resume it there, pass "
                f"--device/--amp to match, pass --move to continue it here (no longer bit-exact; "
                f"the result records the move), or delete the checkpoint to start afresh.")
        if len(cks) > 1 and ck.get("moves"):
            raise CheckpointError(f"checkpoint {p} has moved between devices or precisions; resume "
                                  f"it alone (trainer.train)")
    steps = {ck["step"] for ck in cks if ck.get("status", "running") == "running"}
    if len(steps) > 1:
        raise CheckpointError(f"the checkpoints of runs trained together must be at one step; they "
                              f"are at {sorted(steps)}: resume them apart (trainer.train)")
    return cks
