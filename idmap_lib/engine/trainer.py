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
  stream.
"""
from __future__ import annotations

from .interrupt import TrainingInterrupted  # noqa: F401  (trainer.TrainingInterrupted)
from .loop import Loop, train_groups
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
