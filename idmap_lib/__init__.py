"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

This package is the library that trains, and only that: two layers, each a folder, the second on
the first (tests/test_layers.py)
- models/: registry.py (variant names), units.py (Fig 4 units, Paper B gates), shortcuts.py (Fig 2
  shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mlp.py (Paper B MNIST nets), init.py
  (He init), introspect.py (units, gates, identity point, layouts), pruning.py (removing blocks);
- engine/ (on models): recipes.py (every experiment as data), data.py, augment.py, loop.py (the one
  training loop) with its steppers solo.py, fused.py (N runs of one architecture as one network) and
  stacked.py (Paper B's MNIST nets as one), trainer.py (``train``, ``run``), checkpoint.py,
  results.py, distributed.py (the benchmarks: tools/bench.py);
on top: this file (the ``im.`` API below) and cli.py (``python -m idmap_lib train|list|bench``).

Built on it, each its own package: ``idmap_book`` (what the chapters call: the claims, the rule,
the evidence, prose and figures; ``python -m idmap_book sweep|mnist``) and ``idmap_class`` (the
exercise graders, the student editions, batch grading; ``python -m idmap_class``). Nothing here
imports them; their old paths (``idmap_lib.book``, ``idmap_lib.checks``) forward for one release.
"""
from . import models
from .models import (BLOCKS, FINALS, MLP_KINDS, SHORTCUTS, UNITS, cifar_resnet, gates,
                     imagenet_resnet, make_unit, wide_resnet)
from .engine.data import load as load_data
from .engine.recipes import EXPERIMENTS, config
from .engine.schedule import lr_at
from .engine.results import load_results
from .engine.trainer import run, train

__version__ = "0.1.0"

__all__ = [
    "UNITS", "SHORTCUTS", "BLOCKS", "FINALS", "MLP_KINDS", "cifar_resnet", "wide_resnet", "mlp",
    "imagenet_resnet", "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout",
    "EXPERIMENTS", "config", "lr_at", "train", "run", "load_results", "load_data",
]


def __getattr__(name):  # Paper B's MNIST nets and the introspection helpers, when first asked for
    if name not in models.LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(models, name)
