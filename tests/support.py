"""What several test files share: where the offline data is, Paper B's MNIST recipe made tiny, a
run's history without its timings, and the step a checkpoint on disk has reached."""
import os
from pathlib import Path

from idmap_lib.engine.recipes import config
from idmap_lib.engine.schedule import step_schedule

SHARED = (os.environ.get("IDMAP_DATA")
          or str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def tiny_mnist(kind="gresnet", seed=0, *, d=4, steps=12, lr=0.002, log=3, eval_every=6):
    """Paper B's full MNIST recipe (NAdam, batch 128) made tiny: depth d, 600 + 200 images, and a
    step schedule (lr / 10 at half the steps) so that a test sees the lr move."""
    cfg = config("b_mnist", f"{kind}-d10", "full", seed)
    cfg["model"]["kwargs"]["d"] = d
    cfg.update(steps=steps, log_every=log, eval_every=eval_every,
               schedule=step_schedule(steps, lr, 10, [0.5]),
               subset={"train_per_class": 60, "test_per_class": 20})
    return cfg


def untimed(history: dict) -> dict:
    """A run's history without its timings (img/s, wall time): what two runs of one training must
    share bit for bit."""
    return {k: [{a: b for a, b in h.items() if a not in ("img_per_s", "wall_s")} for h in v]
            for k, v in history.items()}


def checkpoint_step(path) -> int:
    """The step of the checkpoint at `path`, or -1 while there is none (or it is being written)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)["step"]
    except (FileNotFoundError, RuntimeError, EOFError):
        return -1


class Words:
    """A prose module whose functions' Markdown is read as words: a line break inside a paragraph
    is a space to the reader, so the tests compare the words, not where the source wraps them."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        f = getattr(self.module, name)
        if not callable(f):
            return f

        def words(*args, **kwargs):
            out = f(*args, **kwargs)
            flat = lambda t: " ".join(t.split()) if isinstance(t, str) else t  # noqa: E731
            return tuple(map(flat, out)) if isinstance(out, tuple) else flat(out)
        return words



def loop_of(cfgs, data=None, stepper=None, **changes):
    """A loop built as ``trainer.train`` builds it (its stepper's check first), for a test that
    steps it by hand (``advance``) or reads its state."""
    from idmap_lib.engine.loop import Loop
    from idmap_lib.engine.options import TrainOptions
    from idmap_lib.engine.solo import Solo

    cfgs, kind = [cfgs] if isinstance(cfgs, dict) else list(cfgs), stepper or Solo
    opts = TrainOptions.of(**changes)
    kind.check(cfgs, opts)
    return Loop(cfgs, data, opts, kind)
