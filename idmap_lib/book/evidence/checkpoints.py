"""The committed checkpoints of full-recipe runs (data/checkpoints/, trained on a lent GPU) and the trained networks
loaded from them (``trained_model``), with the test images they are probed on (``test_images``; chapter 8).
"""
from __future__ import annotations

import functools
from pathlib import Path

from ...engine import recipes, results
from .reports import net_name


def committed_checkpoint(cfg, checkpoint_dir=None):
    """The checkpoint of this config's run under `checkpoint_dir` (default data/checkpoints/), loaded on the
    CPU, and its path -- by its name, else a checkpoint of the same training under other labels (Table 1's
    original is Table 2's original-110); (None, path) if there is none."""
    import torch

    from ...engine.data import DEFAULT_ROOT

    folder = Path(checkpoint_dir or DEFAULT_ROOT / "checkpoints")
    path = folder / f"{results.run_name(cfg)}.pt"
    if not path.exists():
        path = _checkpoints_by_training(folder).get(results.training_hash(cfg), path)
    if not path.exists():
        return None, path
    return torch.load(path, map_location="cpu", weights_only=True), path


@functools.lru_cache(maxsize=8)
def _checkpoints_by_training_at(folder: Path, stamp: tuple) -> dict:
    import torch

    out = {}
    for p in sorted(folder.glob("*.pt")):
        cfg = torch.load(p, map_location="cpu", weights_only=True).get("config")
        if cfg:
            out.setdefault(results.training_hash(cfg), p)
    return out


def _checkpoints_by_training(folder: Path) -> dict:
    """training hash -> checkpoint file in `folder` (read again only when a file there changed)."""
    files = sorted(folder.glob("*.pt"))
    return _checkpoints_by_training_at(folder, tuple((p.name, p.stat().st_mtime_ns) for p in files))


def trained_model(experiment, variant, scale="full", seed=0, checkpoint_dir=None):
    """The network of a run, with the weights of its committed checkpoint (data/checkpoints/), in eval mode;
    and a line saying which step of which recipe on which device they come from. None if there is none."""
    from ...engine.build import build_model

    cfg = recipes.config(experiment, variant, scale, seed)
    ck, _ = committed_checkpoint(cfg, checkpoint_dir)
    if ck is None:
        return None, f"no checkpoint of {results.run_name(cfg)}"
    net = build_model(ck["config"]["model"])
    net.load_state_dict(ck["model"])
    return net.eval(), (f"{net_name(cfg)} after {ck['step']:,} of {cfg['steps']:,} steps of the paper's recipe "
                        f"({ck['device_type']}, {ck['precision']})")


def test_images(experiment, variant, n=256, data=None):
    """The first n test images of a recipe's dataset, normalised as that recipe trains, with their labels."""
    import torch

    from ...engine.batches import prepare_data

    cfg = recipes.config(experiment, variant, "full")
    D = prepare_data(cfg, data, torch.device("cpu"))
    return D["x_test"][:n].float().div(255).sub(D["mean"]).div(D["std"]), D["y_test"][:n]
