"""The committed checkpoints of full-recipe runs (data/checkpoints/, trained on a lent GPU), the
weights of the finished ones (``data/gpu/<window>/weights-<run>.pt``, as the window brought them
back) and the trained networks loaded from either (``trained_model``), with the test images they are
probed on (``test_images``; chapter 8).
"""
from __future__ import annotations

import functools
from pathlib import Path

from idmap_lib.engine import paths, recipes, results
from idmap_lib.engine.batches import prepare_data
from idmap_lib.engine.build import build_model
from idmap_lib.engine.checkpoint import path_of
from .reports import hardware, net_name


def committed_checkpoint(cfg, checkpoint_dir=None):
    """The checkpoint of this config's run under `checkpoint_dir` (default data/checkpoints/),
    loaded on the CPU, and its path -- by its name, else a checkpoint of the same training under
    other labels (Table 1's original is Table 2's original-110); (None, path) if there is none."""
    import torch

    folder = Path(checkpoint_dir or paths.CHECKPOINTS)
    path = path_of(folder, cfg)
    if not path.exists():
        path = _checkpoints_by_training(folder).get(results.training_hash(cfg), path)
    if not path.exists():
        return None, path
    return torch.load(path, map_location="cpu", weights_only=True), path


def finished_weights(cfg, weights_dir=None):
    """The weights of this config's finished run (``{"config", "config_hash", "model"}``) from a GPU
    window's folder under `weights_dir` (default data/gpu/), loaded on the CPU, by name or by what
    it trains; None if none."""
    import torch

    folder = Path(weights_dir or paths.GPU)
    path = next(iter(sorted(folder.glob(f"*/weights-{results.run_name(cfg)}.pt"))), None)
    path = (path or _checkpoints_by_training(folder,
                                             "*/weights-*.pt").get(results.training_hash(cfg)))
    return None if path is None else torch.load(path, map_location="cpu", weights_only=True)


@functools.lru_cache(maxsize=8)
def _checkpoints_by_training_at(folder: Path, pattern: str, stamp: tuple) -> dict:
    import torch

    out = {}
    for p in sorted(folder.glob(pattern)):
        cfg = torch.load(p, map_location="cpu", weights_only=True).get("config")
        if cfg:
            out.setdefault(results.training_hash(cfg), p)
    return out


def _checkpoints_by_training(folder: Path, pattern: str = "*.pt") -> dict:
    """training hash -> checkpoint file in `folder` matching `pattern` (read again only when one
    changed)."""
    files = sorted(folder.glob(pattern))
    return _checkpoints_by_training_at(folder, pattern,
                                       tuple((str(p), p.stat().st_mtime_ns) for p in files))


def trained_model(experiment, variant, scale="full", seed=0, checkpoint_dir=None, weights_dir=None):
    """The network of a run in eval mode, with its committed checkpoint's weights (under way) or its
    finished weights; a line saying which step of which recipe on which device they come from; and
    that step. (None, why, 0) if there is neither."""
    cfg = recipes.config(experiment, variant, scale, seed)
    ck, _ = committed_checkpoint(cfg, checkpoint_dir)
    done = None if ck is not None else finished_weights(cfg, weights_dir)
    if ck is None and done is None:
        return None, f"no checkpoint or weights of {results.run_name(cfg)}", 0
    net = build_model((ck or done)["config"]["model"])
    net.load_state_dict((ck or done)["model"])
    if ck is not None:
        return net.eval(), (f"{net_name(cfg)} after {ck['step']:,} of {cfg['steps']:,} steps of "
                            f"the paper's recipe ({ck['device_type']}, "
                            f"{ck['precision']})"), ck["step"]
    r = results.find_result(cfg) or {}
    return net.eval(), (f"{net_name(cfg)} after the paper's whole recipe ({cfg['steps']:,} steps; "
                        f"{hardware(r)}, {r.get('precision', '?')})"), cfg["steps"]


def test_images(experiment, variant, n=256, data=None):
    """The first n test images of a recipe's dataset, normalised as that recipe trains, with their
    labels."""
    import torch

    cfg = recipes.config(experiment, variant, "full")
    D = prepare_data(cfg, data, torch.device("cpu"))
    return D["x_test"][:n].float().div(255).sub(D["mean"]).div(D["std"]), D["y_test"][:n]
