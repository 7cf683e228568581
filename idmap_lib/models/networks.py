"""Whole networks: CIFAR ResNets (Paper A), Wide ResNets (Paper B), ImageNet ResNets (Paper A Table
5).

All share one shape: stem -> residual units -> final activation (pre-activation nets only: the
"extra activation after the final addition", Paper A Sec 4.1) -> global average pool -> FC.
"""

import torch
import torch.nn as nn

from .init import he_init
from .registry import BLOCKS, FINALS, UNIT_ROWS, UNITS, choose
from .units import OPS, make_unit

LAYERS_PER_UNIT = {"basic": 2, "bottleneck": 3, "single": 1}
PAPER_BOTTLENECK_DEPTHS = (164, 1001)  # Paper A: ResNet-164 and -1001 are bottleneck nets
IMAGENET_UNITS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3),
                  200: (3, 24, 36, 3)}  # ResNet-200 = ResNet-152 + 16 units on 28x28 maps


class ResNet(nn.Module):
    """stem -> units -> final -> global average pool -> fc."""

    def __init__(self, stem, units, final, width, num_classes):
        super().__init__()
        if not (isinstance(num_classes, int) and num_classes > 0):
            raise ValueError(f"num_classes must be a positive integer, got {num_classes!r}")
        self.stem, self.units, self.final = stem, nn.Sequential(*units), final
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, num_classes)
        # the units were initialised when made
        he_init(self.stem), he_init(self.final), he_init(self.fc)

    def forward(self, x):
        x = self.final(self.units(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def _final(unit, channels, final=None):
    """The activation after the last addition (Paper A Sec 4.1: pre-activation nets need one before
    the pool, being the pre-activation of a unit that does not exist): BN+ReLU for full
    pre-activation (Fig 4e), ReLU for ReLU-only pre-activation (Fig 4d, whose pre-activation is a
    ReLU), none for the post-activation units. `final` (a key of FINALS) swaps it alone: the
    intervention that gives a unit the classifier input of another."""
    final = choose(final, FINALS, "final") if final is not None else UNIT_ROWS[unit].final
    if final == "bn_relu":
        return nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU())
    if final == "relu":
        return nn.ReLU()
    return nn.Identity()


class ScaledInput(nn.Module):
    """Multiplies the classifier's input by a fixed factor (no parameter, no random number): the
    intervention that gives a net the classifier-input scale of another while changing nothing
    else (chapter "Why pre-activation helps": zero gamma with the original unit's classifier
    input)."""

    def __init__(self, factor: float):
        super().__init__()
        if not (isinstance(factor, (int, float)) and factor > 0):
            raise ValueError(f"classifier_scale must be a positive number, got {factor!r}")
        self.factor = float(factor)

    def forward(self, x):
        return x * self.factor

    def extra_repr(self):
        return f"factor={self.factor}"


# the units whose branch ends in BN (optionally followed by a ReLU): those zero gamma can switch off
_ENDS_IN_BN = [u for u, r in UNIT_ROWS.items() if [o for o in r.last if o != "ReLU"][-1:] == ["BN"]]


def zero_branch_gammas(units):
    """Zero the scale (gamma) of the BN that ends each residual branch, so every F(x) = 0 at
    initialisation and each unit starts as its shortcut (Goyal et al. 2017's "zero gamma"; De &
    Smith 2020's identity bias): the intervention that down-weights the branches at init and changes
    nothing else. A branch that does not end in BN (optionally followed by a ReLU) has no such
    scale: a clear error."""
    for i, u in enumerate(units):
        ops = [m for m in u.residual if not isinstance(m, nn.ReLU)]
        if not ops or not isinstance(ops[-1], nn.BatchNorm2d):
            raise ValueError(f"zero_gamma zeroes the BN that ends each residual branch, but unit "
                             f"{i} ({u.variant['unit']}) ends its branch in "
                             f"{type(ops[-1]).__name__ if ops else 'nothing'}: use a unit whose "
                             f"branch ends in BN ({', '.join(_ENDS_IN_BN)})")
        nn.init.zeros_(ops[-1].weight)


def _cifar_stem(unit, width=16):
    """conv1 (3x3, 16). Post-activation nets follow it with BN+ReLU. Pre-activation nets take its
    activation in their first unit, before the split (Paper A Sec 4.1): full pre-activation leaves
    conv1 bare (the unit brings BN+ReLU); ReLU-only pre-activation keeps BN after every weight
    layer, conv1 included (its unit brings only the ReLU), so no un-normalised signal rides the
    identity path."""
    conv = nn.Conv2d(3, width, 3, padding=1, bias=False)
    ops = [OPS[name](width) for name in UNIT_ROWS[unit].stem]
    return nn.Sequential(conv, *ops) if ops else conv


def cifar_block(depth, block=None):
    """The block type and units per stage of a CIFAR ResNet of `depth` (3 stages, conv1 and fc)."""
    if not isinstance(depth, int):
        raise ValueError(f"depth must be an integer, got {depth!r}")
    if block is None:  # as in the paper: 110 (and any 6n+2) basic; 164 and 1001 bottleneck
        basic_ok = depth >= 8 and (depth - 2) % 6 == 0
        block = "bottleneck" if depth in PAPER_BOTTLENECK_DEPTHS or not basic_ok else "basic"
        if block == "bottleneck" and (depth < 11 or (depth - 2) % 9):
            raise ValueError(f"depth {depth} fits no CIFAR ResNet: use 6n+2 with basic units "
                             "(20, 32, 44, 56, 110, 1202) or 9n+2 with bottleneck units (164, "
                             "1001), or block='single' for 3n+2")
    choose(block, BLOCKS, "block")
    per_stage = 3 * LAYERS_PER_UNIT[block]
    n, rest = divmod(depth - 2, per_stage)
    if rest or n < 1:
        examples = ", ".join(str(per_stage * m + 2) for m in (1, 2, 3, 5, 18))
        raise ValueError(f"depth {depth} is impossible with {block} units: CIFAR depth must be "
                         f"{per_stage}n+2 with n >= 1 (e.g. {examples})")
    return block, n


def cifar_resnet(depth, unit="full_preact", shortcut="identity", num_classes=10, block=None,
                 gated=False, width_scale=1, final=None, zero_gamma=False, classifier_scale=None,
                 **shortcut_options):
    """CIFAR ResNet-`depth` (Paper A Sec 4, Tables 1-4; Paper B Table 3 when `gated`).

    Widths 16/32/64 (basic, single) or 64/128/256 with bottlenecks of 16/32/64 (Paper A appendix).
    Every unit is `unit` x `shortcut`; `gated` scales every F by Paper B's ReLU(k). width_scale:
    every channel count (conv1 included) times this factor -- the book's CPU scale narrows
    ResNet-164 and ResNet-1001 (e.g. 0.25: widths 16/32/64, bottlenecks of 4/8/16) and keeps the
    depth.
    final: what sits before the pool (FINALS), when not the unit's own (``_final``): one part
    swapped alone. zero_gamma: every branch's last BN starts at scale 0 (``zero_branch_gammas``), F
    = 0 at initialisation. classifier_scale: the classifier's input multiplied by this fixed
    factor (``ScaledInput``, after the final activation), the classifier-input scale swapped alone.
    """
    choose(unit, UNITS, "unit")
    block, n = cifar_block(depth, block)
    widths = (64, 128, 256) if block == "bottleneck" else (16, 32, 64)
    stem = 16
    if width_scale != 1:
        # a bottleneck's 3x3 has a quarter of the unit's width
        mid = 4 if block == "bottleneck" else 1
        if not (isinstance(width_scale, (int, float)) and width_scale > 0
                and all(w * width_scale >= mid and (w * width_scale / mid).is_integer()
                        for w in widths + (stem,))):
            raise ValueError(f"width_scale {width_scale!r} must be a positive factor that leaves "
                             f"whole channel counts (e.g. 0.5 or 0.25)")
        widths, stem = tuple(int(w * width_scale) for w in widths), int(stem * width_scale)
    units, c_in = [], stem
    for stage, width in enumerate(widths):
        for i in range(n):
            first_of_net = stage == 0 and i == 0
            units.append(make_unit(unit, shortcut, c_in, width, 2 if stage and not i else 1, block,
                                   gated, preact="shared" if first_of_net else None,
                                   **shortcut_options))
            c_in = width
    if zero_gamma:
        zero_branch_gammas(units)
    last = _final(unit, c_in, final)
    if classifier_scale is not None:
        last = nn.Sequential(last, ScaledInput(classifier_scale))
    return ResNet(_cifar_stem(unit, stem), units, last, c_in, num_classes)


def wide_resnet(depth, widen, dropout=0.0, gated=False, num_classes=10):
    """WRN-`depth`-`widen` (Zagoruyko & Komodakis 2016) as used by Paper B Tables 3-4.

    Full pre-activation basic units, widths 16k/32k/64k, depth 6n+4, dropout between the two
    convolutions, 1x1 conv projections on the three dimension-changing units. The first unit
    pre-activates the stem's output once, before the split (as Paper A's first unit), also where it
    keeps the dimensions (k = 1).
    """
    n, rest = divmod(depth - 4, 6) if isinstance(depth, int) else (0, 1)
    if rest or n < 1:
        raise ValueError(f"Wide ResNet depth must be 6n+4 with n >= 1 (e.g. 16, 22, 28, 40), got "
                         f"{depth!r}")
    if not (isinstance(widen, int) and widen >= 1):
        raise ValueError(f"widen must be a positive integer (e.g. 10 for WRN-28-10), got {widen!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    units, c_in = [], 16
    for stage, width in enumerate((16 * widen, 32 * widen, 64 * widen)):
        for i in range(n):
            units.append(make_unit("full_preact", "identity", c_in, width,
                                   2 if stage and not i else 1,
                                   "basic", gated, projection="conv", dropout=dropout,
                                   preact="shared" if stage == 0 and i == 0 else None))
            c_in = width
    return ResNet(_cifar_stem("full_preact"), units, _final("full_preact", c_in), c_in, num_classes)


def imagenet_resnet(depth, unit="full_preact", num_classes=1000):
    """ImageNet ResNet-50/101/152/200 with bottleneck units (Paper A Table 5; fb.resnet.torch).

    Stem: 7x7/2 conv, BN, ReLU, 3x3/2 max pool. Projection (1x1 conv) shortcuts on the first unit of
    each stage; in pre-activation nets the first unit of stage 1 takes the stem's activation. The
    stride of a downsampling unit sits on its 3x3 conv, as in fb.resnet.torch (and torchvision's
    "ResNet v1.5"); the CIFAR nets follow the official CIFAR code instead (first 1x1).
    """
    choose(unit, UNITS, "unit")
    if depth not in IMAGENET_UNITS:
        raise ValueError(f"ImageNet ResNet depth must be one of "
                         f"{', '.join(map(str, IMAGENET_UNITS))}, got {depth!r}")
    stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.MaxPool2d(3, 2, 1))
    units, c_in = [], 64
    for stage, count in enumerate(IMAGENET_UNITS[depth]):
        width = 256 * 2 ** stage
        for i in range(count):
            units.append(make_unit(unit, "identity", c_in, width, 2 if stage and not i else 1,
                                   "bottleneck", preact="none" if stage == 0 and i == 0 else None,
                                   stride_at="3x3"))
            c_in = width
    return ResNet(stem, units, _final(unit, c_in), c_in, num_classes)

