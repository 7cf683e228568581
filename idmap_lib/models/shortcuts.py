"""Shortcut variants of Paper A Fig 2 / Table 1.

A shortcut module combines the shortcut input s and the residual branch output r into the sum
y = h(s) (possibly modulated) + r (possibly modulated), Eqn 1 before f. When the unit changes
dimensions, h includes a projection:

- `zero_pad` (ResNet v1 "option A"): subsample by the stride, append zero channels. Parameter-free.
  Used for basic and 1-layer-skip CIFAR units. Paper A does not state the shortcut of the basic
  ResNet-110 at downsampling; we keep ResNet v1's choice because Paper A says its CIFAR set-up is
  "the same as" v1, and it gives the stated 1.7M parameters.
- `conv` (a 1x1 convolution with the unit's stride), as the official pre-activation code does for
  every dimension-changing bottleneck unit, and Wide ResNets for theirs. Followed by BN in
  post-activation units (fb.resnet.torch "type B"), not in pre-activation ones (resnet-1k-layers).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ZeroPad(nn.Module):
    """Option A projection: x[:, :, ::stride, ::stride] with zero channels appended."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.extra, self.stride = out_channels - in_channels, stride

    def forward(self, x):
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, 0, self.extra)) if self.extra else x


def conv_projection(in_channels, out_channels, stride, bn):
    """A 1x1 convolution with the unit's stride, followed by BN in post-activation units."""
    conv = nn.Conv2d(in_channels, out_channels, 1, stride, bias=False)
    return nn.Sequential(conv, nn.BatchNorm2d(out_channels)) if bn else conv


def projection(kind, in_channels, out_channels, stride, bn):
    """h for a dimension-changing unit (identity when nothing changes)."""
    if in_channels == out_channels and stride == 1:
        return nn.Identity()
    if kind == "conv":
        return conv_projection(in_channels, out_channels, stride, bn)
    if kind == "zero_pad":
        return ZeroPad(in_channels, out_channels, stride)
    raise ValueError(f"unknown projection {kind!r}; choose zero_pad or conv")


class Shortcut(nn.Module):
    """Fig 2(a), identity: y = h(s) + r, with h = the projection when dimensions change."""

    on_shortcut, on_residual = "1", "1"

    def __init__(self, h=None):
        super().__init__()
        self.h = h if h is not None else nn.Identity()

    def forward(self, s, r):
        return self.h(s) + r


class ConstantScaling(Shortcut):
    """Fig 2(b), Table 1 rows 2-4: y = shortcut_scale * h(s) + residual_scale * r (Eqn 6 with λ
    constant)."""

    def __init__(self, h, shortcut_scale, residual_scale):
        super().__init__(h)
        self.shortcut_scale, self.residual_scale = float(shortcut_scale), float(residual_scale)
        self.on_shortcut, self.on_residual = f"{self.shortcut_scale:g}", f"{self.residual_scale:g}"

    def forward(self, s, r):
        return self.shortcut_scale * self.h(s) + self.residual_scale * r


class Gate(nn.Module):
    """g(x) = sigmoid(W_g x + b_g), W_g a 1x1 convolution (Paper A Sec 3.1); b_g starts at
    gate_bias.

    The 1x1 conv keeps its bias (b_g is the bias Table 1 initialises) and has no BN after it: Paper
    A's formula has none, and a BN would undo the initial b_g (its output mean is learned from
    zero)."""

    def __init__(self, in_channels, out_channels, stride, gate_bias):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, stride, bias=True)
        self.conv.init_bias = float(gate_bias)  # read by init.he_init

    def forward(self, x):
        return torch.sigmoid(self.conv(x))


class ExclusiveGating(Shortcut):
    """Fig 2(c): y = (1 - g(s)) * h(s) + g(s) * r, the Highway-network gate."""

    on_shortcut, on_residual = "1-g(x)", "g(x)"

    def __init__(self, h, gate):
        super().__init__(h)
        self.gate = gate

    def forward(self, s, r):
        g = self.gate(s)
        return (1 - g) * self.h(s) + g * r


class ShortcutOnlyGating(ExclusiveGating):
    """Fig 2(d): y = (1 - g(s)) * h(s) + r, the gate on the shortcut only."""

    on_residual = "1"

    def forward(self, s, r):
        return (1 - self.gate(s)) * self.h(s) + r


class Conv1x1(Shortcut):
    """Fig 2(e): y = conv1x1(s) + r on every unit (h is always the 1x1 projection)."""

    on_shortcut = "1x1 conv"


class DropoutShortcut(Shortcut):
    """Fig 2(f): y = m * h(s) + r with a random mask m ~ Bernoulli(1 - p).

    Paper A reads this shortcut as a random scale with expectation λ = 1 - p (0.5 in Table 1), so
    the kept entries are NOT rescaled by 1/(1 - p) as nn.Dropout would do (that would make the
    expected scale 1, a different variant). At evaluation h(s) is multiplied by its expectation
    1 - p, as in Torch's original ("v1") dropout.
    """

    def __init__(self, h, p):
        super().__init__(h)
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout rate p must be in [0, 1), got {p!r}")
        self.p = float(p)
        self.on_shortcut = f"dropout {p:g}"

    def forward(self, s, r):
        h, keep = self.h(s), 1.0 - self.p
        if self.training:
            return h * torch.empty_like(h).bernoulli_(keep) + r
        return keep * h + r


def make_shortcut(name, in_channels, out_channels, stride, projection_kind, bn, options):
    """Build shortcut `name` (a row of registry.SHORTCUT_ROWS) with its validated `options`."""
    if name == "conv1x1":
        return Conv1x1(conv_projection(in_channels, out_channels, stride, bn))
    h = projection(projection_kind, in_channels, out_channels, stride, bn)
    if name == "identity":
        return Shortcut(h)
    if name == "constant_scaling":
        return ConstantScaling(h, options["shortcut_scale"], options["residual_scale"])
    if name in ("exclusive_gating", "shortcut_only_gating"):
        gate = Gate(in_channels, out_channels, stride, options["gate_bias"])
        return (ExclusiveGating if name == "exclusive_gating" else ShortcutOnlyGating)(h, gate)
    if name == "dropout":
        return DropoutShortcut(h, options["p"])
    raise AssertionError(name)  # registry.choose has already rejected unknown names
