"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

Where things live: four layers, each a folder, none importing a layer above it (tests/test_layers.py)
- models/: registry.py (variant names), units.py (Fig 4 units, Paper B gates), shortcuts.py (Fig 2
  shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mlp.py (Paper B MNIST nets), init.py
  (He init), introspect.py (units, gates, identity point, layouts), pruning.py (removing blocks);
- engine/ (on models): recipes.py (every experiment as data), data.py, augment.py, trainer.py,
  checkpoint.py, results.py, distributed.py, stacked.py (Paper B's MNIST nets trained as one), fused.py (N runs of
  one architecture as one network), bench.py;
- book/ (on both; what the chapters call): the setup and prose helpers (``from idmap_lib.book import
  setup, say``), repository.py (the URL setting, ``python -m idmap_lib.book``), theory.py (sympy
  derivations), probes.py (measurements), diagrams.py; claims.py (the claims as data), rule.py (their test),
  metrics.py (every number read from a run), runs.py (the runs a page reads); what chapters 7-11 show: variants.py,
  verdicts.py, curves.py, full_recipe.py, checkpoints.py, trained_probes.py, cpu_scale.py; sweep.py (what to train
  next), paper_numbers.py, reports.py, mnist_grid.py, gate_figures.py, live.py (the reader's runs folder is
  ``book.default_runs_dir``);
- checks/ (on the book): the exercise graders, the student editions and batch grading (``python -m
  idmap_lib.checks``). Import those as submodules (``from idmap_lib.book import theory``).
On top: this file (the ``im.`` API below) and cli.py (``python -m idmap_lib``).
"""
from .models import (BLOCKS, FINALS, MLP_KINDS, SHORTCUTS, UNITS, cifar_resnet, gates, imagenet_resnet, make_unit, mlp,
                     residual_units, unit_layout, wide_resnet, zero_residuals)
from .engine.data import load as load_data
from .engine.recipes import EXPERIMENTS, config, lr_at
from .engine.results import load_results
from .engine.trainer import run, train

__version__ = "0.1.0"

__all__ = [
    "UNITS", "SHORTCUTS", "BLOCKS", "FINALS", "MLP_KINDS", "cifar_resnet", "wide_resnet", "mlp",
    "imagenet_resnet", "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout",
    "EXPERIMENTS", "config", "lr_at", "train", "run", "load_results", "load_data",
]
