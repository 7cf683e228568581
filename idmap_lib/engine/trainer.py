"""Train a recipe config: one result (with provenance) out. The entry points over the loop
(loop.py).

- best device (CUDA, then CPU); the whole uint8 dataset on that device; batches gathered by index
  from a seeded permutation, normalised and augmented there (augment.py): no DataLoader, no PIL;
- autocast: bf16 where the hardware has it (GPUs of compute capability >= 8; CPUs with
  AVX512-BF16/AMX), fp16 + GradScaler on older GPUs (Colab's T4), else fp32; channels_last for conv
  nets (solo.py);
- no host-device sync per step: the sums live on the device and are read every ``log_every`` steps;
- divergence is a result (outcome.Divergence): a non-finite loss ends the run "fail" at its step;
- atomic checkpoints of the whole state and exact resume; DDP under torchrun (only rank 0 writes);
- ``train_many``: several runs interleaved a step at a time in one process, each on its own CUDA
  stream; ``train_loops``, the entry every caller goes through (solo, fused and stacked runs):
  the per-run lock, groups interleaved, Ctrl-C keeping a checkpoint.
"""
from __future__ import annotations

from . import data as data_mod, distributed as dist_mod, runlock
from .checkpoint import path_of
from .device import EngineSettings
from .interrupt import DeferredInterrupt, TrainingInterrupted
from .loop import Loop
from .options import TrainOptions
from .recipes import config
from .results import find_result
from .solo import Solo


def Run(cfg: dict, data=None, options: TrainOptions | None = None, **changes) -> Loop:
    """One run's loop (``advance`` until ``done``, then ``finish``): what ``train`` drives."""
    return Loop([cfg], data, options, stepper=Solo, **changes)


def train(cfg: dict, data=None, options: TrainOptions | None = None, **changes) -> dict:
    """Train one recipe config; returns the result dict (also written under the options' out_dir
    when finished).

    data: a data.Data, a path (like --data), or None ($IDMAP_DATA, then torchvision's download).
    options / keyword arguments: how to train (``options.TrainOptions``: device, out_dir,
    checkpoint_dir, resume, max_steps, amp, ...; a keyword changes that one of `options`). Ctrl-C (a
    notebook's stop button) stops at the end of the step under way, writes the checkpoint and raises
    ``TrainingInterrupted`` (a KeyboardInterrupt of one line); a second Ctrl-C interrupts at once.
    """
    return train_many([cfg], data, options, **changes)[0]


def train_many(cfgs: list[dict], data=None, options: TrainOptions | None = None,
               **changes) -> list[dict]:
    """Several runs interleaved step by step in one process (the options of ``train``): on CUDA each
    on its own stream, so that small networks share one GPU. Every run is exactly the run ``train``
    would make."""
    return train_groups([([c], Solo) for c in cfgs], data, options, **changes)


def run(experiment: str, variant: str, scale: str = "cpu", seed: int = 0, out_dir=None,
        retrain=False,
        **train_kwargs) -> dict:
    """The result of one recipe run: looked up by config hash in `out_dir`, trained (and saved) if
    missing.

    train_kwargs go to ``train`` (data=, and the options: device=, on_log=, progress=,
    checkpoint_dir=, ...).
    """
    cfg = config(experiment, variant, scale, seed)
    if not retrain:
        hit = find_result(cfg, out_dir)
        if hit is not None:
            return hit
    return train(cfg, out_dir=out_dir, **train_kwargs)


def train_groups(groups, data=None, options: TrainOptions | None = None, **changes) -> list[dict]:
    """Every run's result, in order, of ``train_loops``."""
    return [res for lp in train_loops(groups, data, options, **changes) for res in lp.results]


def train_loops(groups, data=None, options: TrainOptions | None = None, **changes) -> list[Loop]:
    """Train groups of runs, each group ``(cfgs, stepper)`` one ``Loop``, interleaved a step at a
    time; returns the finished loops (their ``results``, their ``stepper``'s trained networks).

    On CUDA each group issues its work on its own stream, so several small networks share one GPU.
    Each group draws from its own global RNG streams (dropout), as if it ran alone. One process at a
    time trains a run into a checkpoint folder (``runlock``). Ctrl-C (a notebook's stop button)
    stops at the end of the step under way, writes every unfinished run's checkpoint and raises
    ``TrainingInterrupted``."""
    opts = TrainOptions.of(options, **changes)
    cfgs = [c for g, _ in groups for c in g]
    d = opts.checkpoint_dir
    held = [path_of(d, c) for c in cfgs] if d and dist_mod.int_env("RANK", 0) == 0 else []
    with runlock.hold(held):
        if not isinstance(data, data_mod.Data):  # each dataset loaded once for all groups
            data = {k: data_mod.load(k, data) for k in sorted({c["dataset"] for c in cfgs})}
        with EngineSettings(opts.deterministic, opts.device, opts.threads, cfgs):
            loops = [Loop(g, data if isinstance(data, data_mod.Data) else data[g[0]["dataset"]],
                          opts, stepper=kind) for g, kind in groups]
            several = len(loops) > 1
            with DeferredInterrupt(all(lp.ctx.world == 1 for lp in loops)) as interrupt:
                while not all(lp.done for lp in loops) and not interrupt.hit:
                    for lp in loops:  # one step of every unfinished group
                        if lp.done:
                            continue
                        if several:
                            lp.set_rng_state(lp.rng)
                        lp.advance()
                        if several:
                            lp.rng = lp.rng_state()
            if interrupt.hit:
                _interrupted([lp for lp in loops if not lp.done])
            for lp in loops:
                lp.finish()
            return loops


def _interrupted(left):
    """A checkpoint of every unfinished run at the step it reached, and one line."""
    for lp in left:
        lp.checkpoint()
        lp.bar.close()
    lp = left[0]
    kept = (f"checkpoint{'s' if len(left) > 1 or lp.n > 1 else ''} kept ({lp.paths[0].parent}); "
            f"run the cell (or the command, with --resume) again to go on from "
            f"there" if lp.paths else
            "no checkpoint folder, so nothing was kept")
    raise TrainingInterrupted(f"interrupted at step {lp.step} of {lp.total}: {kept}")
