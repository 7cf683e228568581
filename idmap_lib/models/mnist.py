"""Paper B's fully connected MNIST networks (Sec 4.1, Tables 1-2).

Linear(784 -> width) as a Dot-BN-ReLU layer, then d middle layers of `width` units, then a linear
classifier (the softmax is in the loss). Only the d middle layers differ between the kinds. Paper B
does not state the initialisation: the library's (init.py), which for these nets (linear layers
only) is PyTorch's default, uniform +-1/sqrt(fan_in) like Torch7's, with BN weight 1 and bias 0
(``defaults="torch"``). ``defaults="keras"`` builds the same net with Keras's defaults instead (the
framework whose Nadam the recipe names; Paper B does not say which it used): Glorot-uniform linear
weights, +-sqrt(6 / (fan_in + fan_out)), and BatchNormalization(epsilon=1e-3, momentum=0.99), i.e.
PyTorch momentum 0.01. Chapter 10 trains both to test whether these unstated settings explain our
smaller learned k.
"""

import torch.nn as nn

from .init import he_init
from .registry import MLP_KINDS, choose
from .shortcuts import Shortcut
from .units import GatedLayer, ResidualUnit, dense_layer


# dense_layer's BN settings
DEFAULTS = {"torch": {}, "keras": {"bn_eps": 1e-3, "bn_momentum": 0.01}}


def mlp(kind, d, width=50, num_classes=10, in_features=28 * 28, defaults="torch"):
    """Paper B MNIST net of `kind` (see registry.MLP_KINDS) with `d` middle layers; `defaults`: the
    initialisation and BN settings of PyTorch ("torch") or Keras ("keras"), see the module's
    docstring."""
    choose(kind, MLP_KINDS, "mlp kind")
    bn = DEFAULTS[choose(defaults, DEFAULTS, "mlp defaults")]
    dense = lambda i, o: dense_layer(i, o, **bn)  # noqa: E731
    if not (isinstance(d, int) and d >= 1):
        raise ValueError(f"d (the number of middle layers) must be a positive integer, got {d!r}")
    if kind in ("resnet", "gresnet") and d % 2:
        raise ValueError(f"a {kind} has residual blocks of two layers, so d must be even, got {d}")
    layers = [nn.Flatten(), dense(in_features, width)]
    if kind == "plain":
        layers += [dense(width, width) for _ in range(d)]
    elif kind == "gated_plain":
        layers += [GatedLayer(dense(width, width)) for _ in range(d)]
    else:
        layers += [ResidualUnit(nn.Sequential(dense(width, width), dense(width, width)),
                                Shortcut(), gated=kind == "gresnet") for _ in range(d // 2)]
    layers.append(nn.Linear(width, num_classes))
    net = he_init(nn.Sequential(*layers))
    if defaults == "keras":
        for m in net.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
    return net
