"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

Where things live: four layers, each a folder, none importing a layer above it
(tests/test_layers.py)
- models/: registry.py (variant names), units.py (Fig 4 units, Paper B gates), shortcuts.py (Fig 2
  shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mlp.py (Paper B MNIST nets), init.py
  (He init), introspect.py (units, gates, identity point, layouts), pruning.py (removing blocks);
- engine/ (on models): recipes.py (every experiment as data), data.py, augment.py, loop.py (the one
  training loop) with its steppers solo.py, fused.py (N runs of one architecture as one network) and
  stacked.py (Paper B's MNIST nets as one), trainer.py (``train``, ``run``), checkpoint.py,
  results.py, distributed.py (the benchmarks: tools/bench.py);
- book/ (on both; what the chapters call), in five rooms: page/ (setup, prose, figure style), maths/
  (sympy derivations, probes), evidence/ (claims, the rule, metrics, runs, verdicts, synthesis),
  plan/ (what to train next), figures/; ``from idmap_lib.book import say, claims`` reaches any of
  them by its short name;
- checks/ (on the book): the exercise graders, the student editions and batch grading (``python -m
  idmap_lib.checks``).
On top: this file (the ``im.`` API below) and cli.py (``python -m idmap_lib``).
"""
from .models import (BLOCKS, FINALS, MLP_KINDS, SHORTCUTS, UNITS, cifar_resnet, gates,
                     imagenet_resnet, make_unit, mlp,
                     residual_units, unit_layout, wide_resnet, zero_residuals)
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
