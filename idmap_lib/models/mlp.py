"""Paper B's fully connected MNIST networks (Sec 4.1, Tables 1-2).

Linear(784 -> width) as a Dot-BN-ReLU layer, then d middle layers of `width` units, then a linear
classifier (the softmax is in the loss). Only the d middle layers differ between the kinds.
Paper B does not state the initialisation: the library's (init.py), which for these nets (linear layers
only) is PyTorch's default, uniform +-1/sqrt(fan_in) like Torch7's, with BN weight 1 and bias 0.
"""

import torch.nn as nn

from .init import he_init
from .registry import MLP_KINDS, choose
from .shortcuts import Shortcut
from .units import GatedLayer, ResidualUnit, dense_layer


def mlp(kind, d, width=50, num_classes=10, in_features=28 * 28):
    """Paper B MNIST net of `kind` (see registry.MLP_KINDS) with `d` middle layers."""
    choose(kind, MLP_KINDS, "mlp kind")
    if not (isinstance(d, int) and d >= 1):
        raise ValueError(f"d (the number of middle layers) must be a positive integer, got {d!r}")
    if kind in ("resnet", "gresnet") and d % 2:
        raise ValueError(f"a {kind} has residual blocks of two layers, so d must be even, got {d}")
    layers = [nn.Flatten(), dense_layer(in_features, width)]
    if kind == "plain":
        layers += [dense_layer(width, width) for _ in range(d)]
    elif kind == "gated_plain":
        layers += [GatedLayer(dense_layer(width, width)) for _ in range(d)]
    else:
        layers += [ResidualUnit(nn.Sequential(dense_layer(width, width), dense_layer(width, width)),
                                Shortcut(), gated=kind == "gresnet") for _ in range(d // 2)]
    layers.append(nn.Linear(width, num_classes))
    return he_init(nn.Sequential(*layers))
