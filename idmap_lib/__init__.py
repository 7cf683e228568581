"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

How a pre-activation ResNet-110 trains (``python -m idmap_lib train --experiment
a_table2_activations --variant full_preact-110``, or ``train(config(...))``), read in this order:

1. models/registry.py: each residual unit as one row of data (``UNIT_ROWS["full_preact"]``)
2. models/units.py: a unit built from its row, x_{l+1} = f(h(x_l) + F(x_l)) (Paper A Eqns 1-2)
3. models/networks.py: ``cifar_resnet``: conv1, three stages of 18 units, the pool, the classifier
4. engine/recipes.py: the experiment as data (``config``: the network, SGD, the schedule, steps)
5. engine/batches.py: the dataset on the device, a training batch (crop, flip), the evaluation
6. engine/loop.py: ``Loop``: data order, lr, the step (``advance``, top to bottom), logs, results
7. engine/solo.py: ``Solo``, the stepper: one network's forward, loss, backward and update
8. engine/trainer.py: ``train``, the entry: the per-run lock, the loops a step at a time, Ctrl-C

Helpers on the way, each taken by its name: cli.py (the command line), models/shortcuts.py (Fig
2), models/init.py (He init), engine/paper_recipes.py (each paper's recipe), engine/schedule.py
(the lr), engine/data.py (a dataset from disk), engine/augment.py (crop and flip), engine/build.py
(the model, SGD), engine/device.py (device, precision), engine/options.py (how to train),
engine/outcome.py (divergence, the result dict), engine/results.py (one JSON a run),
engine/checkpoint.py (what a run's checkpoint holds, resume), engine/paths.py (where files go),
engine/runlock.py (one process a run), engine/interrupt.py (Ctrl-C), and what each folder holds:
__init__.py, models/__init__.py, engine/__init__.py.
(The test of the layers holds the path to 8 files and 2,500 lines and has every module that
training imports named here.)

This package is the library that trains, and only that: two layers, each a folder, the second on
the first (tests/test_layers.py)
- models/: registry.py (variant names), units.py (Fig 4 units, Paper B gates), shortcuts.py (Fig 2
  shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mnist.py (Paper B MNIST nets), init.py
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
