"""Paper B's MNIST experiments at the paper's full recipe (Sec 4.1: Tables 1-2, Fig 5), on a CPU.

The grid: plain / ResNet / GResNet MLPs for d in DEPTHS, several seeds, NAdam lr 0.002 for 100
epochs of batch 128 (``paper_recipes.paper_b_mnist``). Runs are data: ``train_depth`` looks every
run up by config hash and trains only the missing ones of a depth, all together as one stacked
network (``stacked.py``). At d = 100 it also records, with each ResNet's and GResNet's result,
Paper B's pruning curves (blocks removed without retraining, Fig 5) and keeps the trained weights
(``weights_path``), so the book can look again without retraining.
"""
from __future__ import annotations

from pathlib import Path

import torch

from idmap_lib.engine import paths
from idmap_lib.engine.batches import prepare_data
from idmap_lib.engine.build import build_model
from idmap_lib.engine.recipes import (KERAS_PROBE, MNIST_DEPTHS as DEPTHS, MNIST_KINDS as KINDS,
                               mnist_configs as configs)
from idmap_lib.engine.results import config_hash, find_result, run_name, save_result
from idmap_lib.engine.stacked import Stacked
from idmap_lib.engine.trainer import train
from idmap_lib.models import pruning
from idmap_lib.models.introspect import residual_units

EXPERIMENT = "b_mnist"
PRUNE_DEPTH = 100
# chapter 10's probe: the GResNet with Keras's defaults (recipes.KERAS_PROBE)
PROBE_DEPTHS = (10, 100)
RANDOM_ORDERS = 5  # random removal orders per net (seeds 0..4 of pruning.at_random)
WEIGHTS_DIR = paths.WEIGHTS


def grid_variants() -> list[str]:
    """Every variant of the grid and of the probe, as recipe variant names (``gresnet-d100``)."""
    return [f"{k}-d{d}" for d in DEPTHS for k in KINDS] + [f"{k}-d{d}" for d in PROBE_DEPTHS
                                                           for k in KERAS_PROBE]


def train_variants(variants, seeds, out_dir=None):
    """Train the missing runs of `variants` (``gresnet-d100``, ...), each depth's together; the new
    results."""
    by_depth = {}
    for v in variants:
        kind, d = v.rsplit("-d", 1)
        by_depth.setdefault(int(d), []).append(kind)
    return [r for d, kinds in by_depth.items() for r in train_depth(d, seeds, out_dir=out_dir,
                                                                    kinds=kinds)]


def missing(d, seeds, out_dir=None, kinds=KINDS):
    """The configs of depth d whose results are not recorded yet."""
    return [c for c in configs(d, seeds, kinds) if find_result(c, out_dir) is None]


def weights_path(cfg, weights_dir=None) -> Path:
    return Path(weights_dir or WEIGHTS_DIR) / f"{run_name(cfg)}__{config_hash(cfg)[:12]}.pt"


def trained_net(cfg, weights_dir=None):
    """The trained network of a recorded run whose weights were kept (the d = 100 ResNets and
    GResNets)."""
    path = weights_path(cfg, weights_dir)
    if not path.is_file():
        depth = cfg['model']['kwargs']['d']
        raise FileNotFoundError(f"no kept weights for {run_name(cfg)} at {path}: train it with "
                                f"python -m idmap_book mnist --depths {depth}")
    net = build_model(cfg["model"])
    net.load_state_dict(torch.load(path, weights_only=True))
    return net.eval()


def test_set(cfg, data=None):
    """(x, y) of the whole test set, preprocessed as the recipe says."""
    D = prepare_data(cfg, data, torch.device("cpu"))
    return D["x_test"].float().div_(255).sub_(D["mean"]).div_(D["std"]), D["y_test"]


@torch.no_grad()
def test_error(net, x, y) -> float:
    was = net.training
    net.eval()
    err = (net(x).argmax(1) != y).double().mean().item()
    net.train(was)
    return err


def pruning_curves(net, x, y, gated) -> dict:
    """Test error with 0, 1, ..., all blocks removed (pruning.removed): greedily by smallest k
    (gated nets) and in RANDOM_ORDERS random orders."""
    ev = lambda m: test_error(m, x, y)  # noqa: E731
    out = {"blocks": len(residual_units(net)), "metric": "test_err",
           "at_random": [pruning.curve(net, pruning.at_random(net, seed), ev)
                         for seed in range(RANDOM_ORDERS)]}
    if gated:
        out["by_gate"] = pruning.curve(net, pruning.by_gate(net), ev)
    return out


def train_depth(d, seeds, data=None, out_dir=None, weights_dir=None, checkpoint_dir=None,
                kinds=KINDS,
                progress=True):
    """Train the missing runs of depth d together (resuming from checkpoint_dir), record their
    results (and at PRUNE_DEPTH their pruning curves and weights); returns the new results."""
    todo = missing(d, seeds, out_dir, kinds)
    if not todo:
        return []
    results = train(todo, data=data, stepper=Stacked, checkpoint_dir=checkpoint_dir,
                    resume=True, progress=progress, write_result=False)
    nets = results.nets
    if d == PRUNE_DEPTH:
        x, y = test_set(todo[0], data)
        for cfg, r, net in zip(todo, results, nets):
            kind = cfg["model"]["kwargs"]["kind"]
            if r["status"] == "ok" and kind != "plain":
                r["analysis"] = {"pruning": pruning_curves(net, x, y, gated=kind == "gresnet")}
                path = weights_path(cfg, weights_dir)
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.save(net.state_dict(), path)
    for r in results:
        r["path"] = str(save_result(r, out_dir))
    return results
