"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

Where things live
- models: registry.py (variant names), units.py (Fig 4 units, Paper B gates), shortcuts.py (Fig 2
  shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mlp.py (Paper B MNIST nets), init.py
  (He init), introspect.py (units, gates, identity point, layouts);
- training: recipes.py (every experiment as data), data.py, augment.py, trainer.py, checkpoint.py,
  results.py, distributed.py, cli.py (``python -m idmap_lib``), bench.py;
- the book: theory.py (sympy derivations), probes.py (measurements), book.py, diagrams.py, checks.py
  (exercise graders). Import those as submodules (``from idmap_lib import theory``).
"""

from .models import (BLOCKS, MLP_KINDS, SHORTCUTS, UNITS, cifar_resnet, gates, imagenet_resnet, make_unit, mlp,
                     residual_units, unit_layout, wide_resnet, zero_residuals)
from .engine.data import load as load_data
from .engine.recipes import EXPERIMENTS, config, lr_at
from .engine.results import load_results
from .engine.trainer import run, train

__version__ = "0.1.0"

__all__ = [
    "UNITS", "SHORTCUTS", "BLOCKS", "MLP_KINDS", "cifar_resnet", "wide_resnet", "mlp",
    "imagenet_resnet", "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout",
    "EXPERIMENTS", "config", "lr_at", "train", "run", "load_results", "load_data",
]
