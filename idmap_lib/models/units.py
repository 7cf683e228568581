"""Residual units: Paper A Eqns 1-2 with the activation variants of Fig 4, and Paper B's gate. Each
unit is built from its registry row (registry.UNIT_ROWS: the ops around its weight layers).

A unit computes x_{l+1} = f(h(x_l) + F(x_l, W_l)) (Eqns 1-2). Its parts, as attributes:

- `preact`:   activation shared by both paths before the split (pre-activation units that change
              dimensions, and the first unit after conv1; Paper A Sec 4.1 and the official code), or
              nn.Identity.
- `residual`: F, an nn.Sequential.
- `shortcut`: combines h(x) and F's output (Fig 2 variants, see shortcuts.py).
- `post`:     f, applied after the addition (ReLU in the original unit, identity in pre-activation).
- `k`:        Paper B's gate scalar (None unless gated): F is scaled by ReLU(k), k initialised to 1.
"""

import torch
import torch.nn as nn

from .init import he_init
from .registry import BLOCKS, UNIT_ROWS, UNITS, choose, shortcut_options
from .shortcuts import make_shortcut

OPS = {"BN": nn.BatchNorm2d, "ReLU": lambda channels: nn.ReLU()}  # a unit's ops, by row name
PREACT_PLACEMENTS = {
    "residual": "inside F: the ordinary pre-activation unit",
    "shared": "before the split, seen by both paths (first unit, dimension-changing units)",
    "none": "left out: the input is already activated (ImageNet stage 1, after the stem)",
}


class ResidualUnit(nn.Module):
    """x_{l+1} = f(h(x_l) + [ReLU(k)] F(x_l)) -- Paper A Eqns 1-2; with `gated`, Paper B Eqn for
    u."""

    def __init__(self, residual, shortcut, preact=None, post=None, gated=False):
        super().__init__()
        self.preact = preact if preact is not None else nn.Identity()
        self.residual = residual
        self.shortcut = shortcut
        self.post = post if post is not None else nn.Identity()
        self.k = nn.Parameter(torch.ones(())) if gated else None

    def forward(self, x):
        x = self.preact(x)
        r = self.residual(x)
        if self.k is not None:
            r = torch.relu(self.k) * r
        return self.post(self.shortcut(x, r))


class GatedLayer(nn.Module):
    """Paper B Sec 3: any layer u = f(x) becomes u = g(k) f(x) + (1 - g(k)) x, g = ReLU, k = 1 at
    start."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer
        self.k = nn.Parameter(torch.ones(()))

    def forward(self, x):
        g = torch.relu(self.k)
        return g * self.layer(x) + (1 - g) * x


def gates(model):
    """Paper B's gate scalars k of a gated model, in forward order (empty if not gated)."""
    return [m.k for m in model.modules() if isinstance(m, (ResidualUnit, GatedLayer))
            and m.k is not None]


STRIDE_PLACEMENTS = {
    "first": "on the first weight layer (the official CIFAR code, resnet-1k-layers)",
    "3x3": "on the 3x3 conv of a bottleneck (fb.resnet.torch's ImageNet nets); = first for other "
           "blocks",
}


def _convs(block, in_channels, out_channels, stride, stride_at="first"):
    """The weight layers of one unit, with the stride where `stride_at` says."""
    conv = lambda i, o, k, s=1: nn.Conv2d(i, o, k, s, padding=k // 2, bias=False)  # noqa: E731
    if block == "basic":
        return [conv(in_channels, out_channels, 3, stride), conv(out_channels, out_channels, 3)]
    if block == "bottleneck":
        mid = out_channels // 4  # [1x1, c; 3x3, c; 1x1, 4c] (Paper A Sec 4, official code)
        s1, s3 = (stride, 1) if stride_at == "first" else (1, stride)
        return [conv(in_channels, mid, 1, s1), conv(mid, mid, 3, s3), conv(mid, out_channels, 1)]
    return [conv(in_channels, out_channels, 3, stride)]  # "single": Table 3's 1-layer skip


def _ops(names, channels):
    """The unit's ops named in its registry row ("BN", "ReLU"), in order."""
    return [OPS[name](channels) for name in names]


def _one(ops):
    """Ops as one module: nothing is nn.Identity, one op itself, several an nn.Sequential."""
    return nn.Identity() if not ops else ops[0] if len(ops) == 1 else nn.Sequential(*ops)


def make_unit(unit="full_preact", shortcut="identity", in_channels=16, out_channels=16, stride=1,
              block="basic", gated=False, *, projection=None, preact=None, dropout=0.0,
              stride_at="first",
              **shortcut_opts):
    """One convolutional residual unit: any Fig 4 `unit` x any Fig 2 `shortcut`, in `block` form.

    projection: h when dimensions change, "zero_pad" (default for basic/single) or "conv" (default
        for bottleneck); see shortcuts.py for why.
    preact: where a pre-activation unit's first BN/ReLU goes: "residual" (inside F, the usual unit),
        "shared" (before the split, so the shortcut also sees it: Paper A's rule for the first unit
        and for dimension-changing units), or "none" (input already activated). Default: "shared"
        when dimensions change, else "residual".
    dropout: Wide-ResNet dropout between the convolutions (Paper B), not the Fig 2(f) shortcut `p`.
    stride_at: "first" (default, official CIFAR code) or "3x3" (fb.resnet.torch's ImageNet
    bottlenecks).
    """
    row = UNIT_ROWS[choose(unit, UNITS, "unit")]
    choose(block, BLOCKS, "block")
    options = shortcut_options(shortcut, shortcut_opts)
    changes = in_channels != out_channels or stride != 1
    preact = preact or ("shared" if changes else "residual")
    choose(preact, PREACT_PLACEMENTS, "preact placement")
    choose(stride_at, STRIDE_PLACEMENTS, "stride placement")
    projection = projection or ("conv" if block == "bottleneck" else "zero_pad")

    convs = _convs(block, in_channels, out_channels, stride, stride_at)
    ops = []
    for i, conv in enumerate(convs):
        last = i == len(convs) - 1
        ops += _ops(row.pre, conv.in_channels)
        if last and dropout:
            ops.append(nn.Dropout(dropout))
        ops.append(conv)
        ops += _ops(row.last if last else row.after, conv.out_channels)
    shared = None
    if row.pre and preact != "residual":
        n = len(row.pre)
        shared, ops = (nn.Sequential(*ops[:n]) if preact == "shared" else None), ops[n:]

    # BN after a projection wherever the unit puts BN after its weight layers (Fig 4 a-d;
    # fb.resnet.torch); full pre-activation's projection is a bare 1x1 conv (the official
    # pre-activation code)
    sc = make_shortcut(shortcut, in_channels, out_channels, stride, projection,
                       bn="BN" in row.after + row.last, options=options)
    module = ResidualUnit(nn.Sequential(*ops), sc, shared, _one(_ops(row.post, out_channels)),
                          gated)
    module.variant = {"unit": unit, "shortcut_name": shortcut, "block": block}
    return he_init(module)


def dense_layer(in_features, out_features, bn_eps=1e-5, bn_momentum=0.1):
    """Paper B Sec 4.1: a 'Dot-BN-ReLU' fully connected layer (no bias: BN follows)."""
    return nn.Sequential(nn.Linear(in_features, out_features, bias=False),
                         nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum), nn.ReLU())
