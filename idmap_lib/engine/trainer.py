"""The one entry: ``train`` takes configs and returns their results, whichever stepper trains them
(solo.py, fused.py, stacked.py; loop.py drives them all); ``run`` returns a recorded result or
trains it. Here, once for every caller: the per-run lock (runlock.py), the process-wide settings
and thread policy (device.EngineSettings), several loops interleaved a step at a time (each on its
own CUDA stream and global RNG), Ctrl-C keeping a checkpoint (interrupt.py). How a step trains
(device, precision, on-device data, device-side sums, checkpoints, DDP): loop.py and solo.py.
"""
from __future__ import annotations

import os

from . import data as data_mod, runlock
from .checkpoint import path_of
from .device import EngineSettings
from .interrupt import DeferredInterrupt, TrainingInterrupted
from .loop import Loop, Stepper
from .options import TrainOptions
from .recipes import config
from .results import find_result
from .solo import Solo

__all__ = ["train", "run", "Trained", "TrainingInterrupted"]


class Trained(list):
    """One result dict per config, in order, whatever trained them; ``nets``: each run's trained
    network, in the same order; ``loops``: the finished loops."""

    def __init__(self, loops):
        super().__init__(res for lp in loops for res in lp.results)
        self.loops, self.nets = loops, [net for lp in loops for net in lp.nets]


def train(cfgs: dict | list[dict], data=None, options: TrainOptions | None = None, *,
          stepper: type[Stepper] = Solo, **changes):
    """Train recipe configs: a config -> its result dict; a list of configs -> their results
    (``Trained``: a list, with the trained ``nets``), whichever stepper trains them. A finished
    run's result is also written under the options' out_dir.

    stepper: ``solo.Solo`` (each run alone, the runs interleaved a step at a time; on CUDA each on
    its own stream, so that small networks share one GPU), ``fused.Fused`` (N runs of one
    architecture as one network) or ``stacked.Stacked`` (Paper B's MNIST MLPs of one depth as
    one). Every run is exactly the run it would be alone (fused: up to rounding).
    data: a data.Data, a path (like --data), or None ($IDMAP_DATA, then torchvision's download).
    options / keyword arguments: how to train (``options.TrainOptions``: device, out_dir,
    checkpoint_dir, resume, max_steps, amp, ...; a keyword changes that one of `options`). One
    process at a time trains a run into a checkpoint folder (``runlock``). Ctrl-C (a notebook's
    stop button) stops at the end of the step under way, writes every unfinished run's checkpoint
    and raises ``TrainingInterrupted`` (a KeyboardInterrupt of one line); a second Ctrl-C
    interrupts at once.
    """
    one = isinstance(cfgs, dict)
    cfgs = [cfgs] if one else list(cfgs)
    groups = [[c] for c in cfgs] if stepper is Solo else [cfgs]
    opts = TrainOptions.of(options, **changes)
    for g in groups:  # before the data is loaded: a refusal is free
        stepper.check(g, opts)
    d = opts.checkpoint_dir
    held = [path_of(d, c) for c in cfgs] if d and int(os.environ.get("RANK", 0)) == 0 else []
    with runlock.hold(held):
        if not isinstance(data, data_mod.Data):  # each dataset loaded once for all loops
            data = {k: data_mod.load(k, data) for k in sorted({c["dataset"] for c in cfgs})}
        with EngineSettings(opts.deterministic, opts.device, opts.threads, cfgs):
            loops = [Loop(g, data if isinstance(data, data_mod.Data) else data[g[0]["dataset"]],
                          opts, stepper) for g in groups]
            several = len(loops) > 1
            with DeferredInterrupt(all(lp.ctx.world == 1 for lp in loops)) as interrupt:
                while not all(lp.done for lp in loops) and not interrupt.hit:
                    for lp in loops:  # one step of every unfinished loop, on its own RNG
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
    out = Trained(loops)
    return out[0] if one else out


def run(experiment: str, variant: str, scale: str = "cpu", seed: int = 0, out_dir=None,
        retrain=False, **train_kwargs) -> dict:
    """The result of one recipe run: looked up by config hash in `out_dir`, trained (and saved) if
    missing. train_kwargs go to ``train`` (data=, and the options: device=, on_log=, progress=,
    checkpoint_dir=, ...)."""
    cfg = config(experiment, variant, scale, seed)
    if not retrain:
        hit = find_result(cfg, out_dir)
        if hit is not None:
            return hit
    return train(cfg, out_dir=out_dir, **train_kwargs)


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
