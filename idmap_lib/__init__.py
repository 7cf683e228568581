"""idmap_lib: residual units and networks of He et al. 2016 (Paper A, "Identity Mappings in Deep
Residual Networks") and Savarese et al. 2016 (Paper B, "Learning Identity Mappings with Residual
Gates"), with the trainer and the helpers the book's chapters use.

Where things live: registry.py (variant names), units.py (Fig 4 units, Paper B gates),
shortcuts.py (Fig 2 shortcuts), networks.py (CIFAR, Wide and ImageNet ResNets), mlp.py (Paper B
MNIST nets), init.py (He init), introspect.py (units, gates, identity point, layouts).
"""

from .introspect import gates, residual_units, unit_layout, zero_residuals
from .mlp import mlp
from .networks import cifar_resnet, imagenet_resnet, wide_resnet
from .registry import BLOCKS, MLP_KINDS, SHORTCUTS, UNITS
from .units import make_unit

__version__ = "0.1.0"

__all__ = [
    "UNITS", "SHORTCUTS", "BLOCKS", "MLP_KINDS", "cifar_resnet", "wide_resnet", "mlp",
    "imagenet_resnet", "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout",
]
