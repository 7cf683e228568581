"""The variants of both papers, by name, and the one place that validates a choice. A residual unit
is one row (``UNIT_ROWS``): adding one is adding its row.

Paper A = He et al. 2016, "Identity Mappings in Deep Residual Networks".
Paper B = Savarese et al. 2016, "Learning Identity Mappings with Residual Gates".
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    """One residual unit: what it is, how a page shows it, and how it is built (plain data: the
    models build from it, the book reads its words, colour and the paper's numbers from it).

    The construction names the ops around the unit's weight layers ("BN", "ReLU"; units.OPS):
    `pre` before each weight layer, `after` after each but the last, `last` after the last, `post`
    (f) after the addition; `stem` what follows conv1 (less what the first unit's pre-activation
    brings), `final` what sits before the pool (a key of FINALS).
    """

    figure: str  # where the paper draws it
    describes: str  # its ops in words
    words: str  # what a page calls it
    colour: str  # its colour on every page (Okabe and Ito 2008: the book's palette)
    paper: dict = field(default_factory=dict)  # depth -> Paper A Table 2's CIFAR-10 test error %
    named: bool = True  # whether a network's name says its unit (the original's goes unsaid)
    pre: tuple = ()
    after: tuple = ()
    last: tuple = ()
    post: tuple = ()
    stem: tuple = ("BN", "ReLU")
    final: str = "none"


BN_RELU = ("BN", "ReLU")
UNIT_ROWS = {
    "original": Unit("Paper A Fig 4(a)", "conv-BN-ReLU-conv-BN, add, then ReLU (f = ReLU), the "
                     "ResNet of 2015", "the original unit", "#D55E00",  # vermillion
                     {110: 6.61, 164: 5.93}, named=False,
                     after=BN_RELU, last=("BN",), post=("ReLU",)),
    "bn_after_add": Unit("Paper A Fig 4(b)", "conv-BN-ReLU-conv, add, then BN and ReLU (f = "
                         "BN+ReLU)", "BN after addition", "#CC79A7",  # reddish purple
                         {110: 8.17, 164: 6.50}, after=BN_RELU, post=BN_RELU),
    "relu_before_add": Unit("Paper A Fig 4(c)", "conv-BN-ReLU-conv-BN-ReLU, then add (F >= 0, f "
                            "= identity)", "ReLU before addition", "#E69F00",  # orange
                            {110: 7.84, 164: 6.14}, after=BN_RELU, last=BN_RELU),
    "relu_preact": Unit("Paper A Fig 4(d)", "ReLU-only pre-activation, ReLU-conv-BN-ReLU-conv-BN, "
                        "then add", "ReLU-only pre-activation", "#56B4E9",  # sky blue
                        {110: 6.71, 164: 5.91}, pre=("ReLU",), after=("BN",), last=("BN",),
                        stem=("BN",), final="relu"),
    "full_preact": Unit("Paper A Fig 4(e)", "full pre-activation, BN-ReLU-conv-BN-ReLU-conv, then "
                        "add (f = identity)", "full pre-activation", "#0072B2",  # blue
                        {110: 6.37, 164: 5.46}, pre=BN_RELU, stem=(), final="bn_relu"),
}
UNITS = {name: f"{row.figure}: {row.describes}" for name, row in UNIT_ROWS.items()}

SHORTCUTS = {
    "identity": "Paper A Fig 2(a): h(x) = x, the identity shortcut",
    "constant_scaling": "Paper A Fig 2(b): shortcut_scale * x + residual_scale * F(x) (Table 1 "
                        "rows 2-4)",
    "exclusive_gating": "Paper A Fig 2(c): (1 - g(x)) * x + g(x) * F(x), g(x) = sigmoid(1x1 "
                        "conv(x) + b_g)",
    "shortcut_only_gating": "Paper A Fig 2(d): (1 - g(x)) * x + F(x), g(x) = sigmoid(1x1 conv(x) + "
                            "b_g)",
    "conv1x1": "Paper A Fig 2(e): a 1x1 convolution on every shortcut",
    "dropout": "Paper A Fig 2(f): dropout (rate p) on the shortcut",
}

BLOCKS = {
    "basic": "two 3x3 convolutions per unit; CIFAR depth 6n+2 (ResNet-20 ... 110, 1202)",
    "bottleneck": "1x1, 3x3, 1x1 convolutions per unit; CIFAR depth 9n+2 (ResNet-164, 1001)",
    "single": "one 3x3 convolution per unit, the 1-layer skip of Paper A Table 3; CIFAR depth 3n+2",
}

# Options each shortcut takes, with their defaults (the paper's values, Table 1).
SHORTCUT_OPTIONS = {
    "identity": {},
    "constant_scaling": {"shortcut_scale": 0.5, "residual_scale": 1.0},
    "exclusive_gating": {"gate_bias": -6.0},  # Table 1: b_g = -6 is the best exclusive gate
    "shortcut_only_gating": {"gate_bias": -6.0},  # Table 1: b_g = -6 gives 6.91%
    "conv1x1": {},
    "dropout": {"p": 0.5},  # Table 1: dropout 0.5 on the shortcut
}

# What sits between the last unit and the pool (Paper A Sec 4.1); each unit has its own
# (networks._final), and the book's interventions swap it alone (chapter "Why pre-activation
# helps").
FINALS = {
    "bn_relu": "BN and ReLU: full pre-activation's (the pre-activation of a unit that does not "
               "exist)",
    "relu": "ReLU only: ReLU-only pre-activation's",
    "none": "nothing: the post-activation units' (their last unit already ends in f)",
}

MLP_KINDS = {
    "plain": "Paper B Sec 4.1: d Dot-BN-ReLU layers of width 50",
    "resnet": "Paper B Sec 4.1: d/2 residual blocks of two Dot-BN-ReLU layers, u = F(x) + x",
    "gresnet": "Paper B Sec 4.1: the same blocks gated, u = ReLU(k) F(x) + x",
    "gated_plain": "Paper B Sec 3: d gated plain layers, u = ReLU(k) f(x) + (1 - ReLU(k)) x",
}


def choose(name, table, what):
    """Return `name` if it is a key of `table`, else raise one ValueError that lists the choices."""
    if name not in table:
        raise ValueError(f"unknown {what} {name!r}; choose one of: {', '.join(table)}")
    return name


def shortcut_options(shortcut, options):
    """The shortcut's options: its defaults updated by `options`; an option it does not take is an
    error."""
    allowed = SHORTCUT_OPTIONS[choose(shortcut, SHORTCUTS, "shortcut")]
    wrong = sorted(set(options) - set(allowed))
    if wrong:
        takes = ", ".join(allowed) if allowed else "no options"
        raise ValueError(f"shortcut {shortcut!r} does not take {', '.join(wrong)}; it takes "
                         f"{takes}")
    return {**allowed, **options}
