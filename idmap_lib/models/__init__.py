"""The models: residual units, shortcuts and networks of He et al. 2016 (Paper A, "Identity Mappings
in Deep Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with
Residual Gates").

The bottom layer: it imports nothing from the engine or the book (tests/test_layers.py).

- registry.py: the names of all variants, with the figure each comes from; a residual unit is one
  row (``UNIT_ROWS``: its words, colour, the paper's numbers and its construction, as data), a
  shortcut too (``SHORTCUT_ROWS``: its words, colour, options and Paper A Table 1's numbers);
- units.py: residual units (Paper A Fig 4, Paper B's gated units); shortcuts.py: shortcuts (Paper A
  Fig 2);
- networks.py: CIFAR, Wide and ImageNet ResNets; mnist.py: Paper B's MNIST nets (``mlp``); init.py:
  He init;
- introspect.py: residual units, identity point and layout of a network (a unit's gate: units.py);
- pruning.py: removing residual blocks without retraining (Paper B Figs 5, 7).

A recipe names its network by a builder of this package (``cfg["model"]["builder"]``: cifar_resnet,
wide_resnet, imagenet_resnet, mlp); the engine's ``build_model`` looks it up here. ``mlp`` and
introspect.py's helpers are imported when first asked for: training a ResNet needs neither.
"""

import importlib

from .networks import cifar_resnet, imagenet_resnet, wide_resnet
from .registry import BLOCKS, FINALS, MLP_KINDS, SHORTCUTS, UNITS
from .units import gates, make_unit

# imported when first asked for: name -> its module
LAZY = {"mlp": "mnist", "residual_units": "introspect", "zero_residuals": "introspect",
        "unit_layout": "introspect"}


def __getattr__(name):
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{LAZY[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["UNITS", "SHORTCUTS", "BLOCKS", "FINALS", "MLP_KINDS", "cifar_resnet", "wide_resnet",
           "mlp", "imagenet_resnet",
           "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout"]
