"""Atomic checkpoints (tmp file + os.replace) loaded with ``torch.load(weights_only=True)``.

A checkpoint holds only tensors and plain containers (model/optimizer state, RNG states as uint8
tensors, the data permutation, history dicts), so the safe loader reads it. A file that cannot be
read (corrupt, truncated) or that belongs to another recipe raises CheckpointError saying what to
do.

What a training loop's checkpoint holds, and how its runs come back from it, is here too (``write``,
``resume``): one file a run, in one format, whichever stepper wrote it.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from .device import precision_name
from .results import run_name, segment_at, segments_before


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


# ---------------------------------------------------------------- a Loop's runs (loop.py)
def write(loop, runs=None):
    """The checkpoints of `loop`'s runs `runs` (default: all), one file each, in one format: all
    that ``resume`` needs."""
    if loop.paths is None:
        return
    ctx, one = loop.ctx, loop.n == 1
    aug = [ctx.gather_object(g.get_state()) for g in loop.gen_aug]
    torch_now = ctx.gather_object(torch.get_rng_state()) if one else None
    cuda = ctx.gather_object(torch.cuda.get_rng_state(loop.device)) \
        if one and loop.device.type == "cuda" else None
    if ctx.rank != 0:
        return
    states = loop.stepper.states()
    for r in range(loop.n) if runs is None else runs:
        model, optimizer, scaler = states[r]
        save_checkpoint(loop.paths[r], {
            "format": 1, "config": loop.cfgs[r], "config_hash": loop.hashes[r],
            "world_size": ctx.world, "device_type": loop.device.type,
            "precision": precision_name(loop.stepper.dtype), "step": loop.step,
            "model": model, "optimizer": optimizer,
            "scheduler": {"kind": "pure function of the step (schedule.lr_at)",
                          "step": loop.step},
            "scaler": scaler,
            "rng": {"torch": torch_now if one else [loop.stepper.torch_rng[r]], "cuda": cuda,
                    "order": loop.gen_order[r].get_state(), "augment": aug[r]},
            # int32: half
            "data": {"perm": loop.perm[r].to(torch.int32).cpu(), "pos": loop.pos},
            "acc": loop.acc[r].cpu().clone(), "first": loop.first[r].cpu().clone(),
            "history": loop.histories[r], "elapsed": loop.elapsed[r],
            "status": loop.status[r], "fail": loop.fails[r], "moves": loop.moves,
            "segments": loop.segments[r] + [segment_at(loop.segment, loop.step)]})


def resume(loop) -> str | None:
    """`loop`'s runs back from their checkpoints (``Loop.paths``), all or none: the whole state
    (the stepper's, each run's generators, data order, sums, histories), so that each goes on bit
    for bit. Returns the line to say ("resumed ... at step 200/64000"), None where there is none."""
    now = (loop.device.type, precision_name(loop.stepper.dtype))
    cks = load_together(loop.paths, loop.hashes, loop.ctx.world, now, loop.opts.move)
    if cks is None:
        return None
    live = [i for i, ck in enumerate(cks) if ck.get("status", "running") == "running"]
    loop.step = cks[live[0]]["step"] if live else max(ck["step"] for ck in cks)
    kind = (cks[0].get("device_type"), cks[0].get("precision"))
    moved = kind[0] is not None and kind != now
    same_device = kind[0] in (None, loop.device.type)
    rank = loop.ctx.rank
    try:
        loop.stepper.load(cks, live)
        for r, ck in enumerate(cks):
            rng = ck["rng"]
            loop.stepper.torch_rng[r] = rng["torch"][rank]
            loop.gen_order[r].set_state(rng["order"])
            if same_device:
                loop.gen_aug[r].set_state(rng["augment"][rank])
            else:  # a CUDA generator's state means nothing to a CPU one: a new stream
                loop.gen_aug[r].manual_seed(loop.seeds[r] * 1000 + 1 + rank + 7919 * ck["step"])
        if loop.n == 1:  # one run owns the global streams (dropout)
            torch.set_rng_state(cks[0]["rng"]["torch"][rank])
            cuda = cks[0]["rng"].get("cuda")
            if loop.device.type == "cuda" and cuda is not None and same_device:
                torch.cuda.set_rng_state(cuda[rank], loop.device)
    except (RuntimeError, ValueError, KeyError, IndexError) as e:
        raise CheckpointError(
            f"the checkpoint(s) in {loop.paths[0].parent} do not fit this "
            f"model/optimizer/device ({e}); written by a different recipe, library version or "
            f"kind of device: delete them or run without --resume") from e
    pos = {cks[i]["data"]["pos"] for i in live}
    loop.pos = pos.pop() if pos else cks[0]["data"]["pos"]
    loop.perm = [ck["data"]["perm"].to(loop.device, torch.int64) for ck in cks]
    loop.acc = torch.stack([ck["acc"] for ck in cks]).to(loop.device)
    if all("first" in ck for ck in cks):
        loop.first = torch.stack([ck["first"] for ck in cks]).to(loop.device)
    loop.histories = [ck["history"] for ck in cks]
    loop.elapsed = [ck["elapsed"] for ck in cks]
    loop.status = [ck.get("status", "running") for ck in cks]
    loop.fails = [ck.get("fail") for ck in cks]
    loop.alive = torch.tensor([s == "running" for s in loop.status], device=loop.device)
    loop.moves = list(cks[0].get("moves", []))
    loop.segments = [segments_before(ck) for ck in cks]
    if moved:
        loop.moves.append({"step": loop.step, "from": f"{kind[0]} {kind[1]}",
                           "to": f"{now[0]} {now[1]}"})
    where = (loop.paths[0] if loop.n == 1
             else f"{loop.n} checkpoints from {loop.paths[0].parent}")
    return f"resumed {where} at step {loop.step}/{loop.total}" + (
        f", moved from {kind[0]} {kind[1]} to {now[0]} {now[1]}: no longer bit-exact"
        if moved else "")
