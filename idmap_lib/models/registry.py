"""The variants of both papers, by name, and the one place that validates a choice. A residual unit
is one row (``UNIT_ROWS``), a shortcut too (``SHORTCUT_ROWS``): adding one is adding its row (and,
for a shortcut, its module in shortcuts.py).

Paper A = He et al. 2016, "Identity Mappings in Deep Residual Networks".
Paper B = Savarese et al. 2016, "Learning Identity Mappings with Residual Gates".
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    """One residual unit of Paper A Fig 4: what it is, how a page shows it, and how it is built
    (plain data: the models build from it, the book reads its words, colour and the paper's numbers
    from it).

    A page names it three ways: `words` in a sentence ("the original unit"), `short` in a legend
    ("original"), `adjective` before a net's name ("the original ResNet-164", "BN-after-addition
    ResNet-110"). The construction names the ops around the unit's weight layers ("BN", "ReLU";
    units.OPS): `pre` before each weight layer, `after` after each but the last, `last` after the
    last, `post` (f) after the addition; `stem` what follows conv1 (less what the first unit's
    pre-activation brings), `final` what sits before the pool (a key of FINALS).
    """

    figure: str  # where the paper draws it
    describes: str  # its ops in words
    words: str  # what a sentence calls it
    short: str  # what a legend calls it
    adjective: str  # what a net's name calls it
    colour: str  # its colour on every page (Okabe and Ito 2008: the book's palette)
    paper: dict = field(default_factory=dict)  # depth -> Paper A Table 2's CIFAR-10 test error %
    named: bool = True  # whether a network's name says its unit (the original's goes unsaid)
    pre: tuple = ()
    after: tuple = ()
    last: tuple = ()
    post: tuple = ()
    stem: tuple = ("BN", "ReLU")
    final: str = "none"

    @property
    def f(self) -> str:
        """f, the op after the addition (Paper A Eqn 2), in words: 'ReLU', 'BN+ReLU', 'identity'."""
        return "+".join(self.post) or "identity"

    def net(self, depth) -> str:
        """Its network in words: 'the original ResNet-164'."""
        return f"{self.adjective} ResNet-{depth}"


BN_RELU = ("BN", "ReLU")
UNIT_ROWS = {
    "original": Unit(
        "Paper A Fig 4(a)", "conv-BN-ReLU-conv-BN, add, then ReLU (f = ReLU), the ResNet of 2015",
        words="the original unit", short="original", adjective="the original",
        colour="#D55E00", paper={110: 6.61, 164: 5.93}, named=False,  # vermillion
        after=BN_RELU, last=("BN",), post=("ReLU",)),
    "bn_after_add": Unit(
        "Paper A Fig 4(b)", "conv-BN-ReLU-conv, add, then BN and ReLU (f = BN+ReLU)",
        words="BN after addition", short="BN after addition", adjective="BN-after-addition",
        colour="#CC79A7", paper={110: 8.17, 164: 6.50},  # reddish purple
        after=BN_RELU, post=BN_RELU),
    "relu_before_add": Unit(
        "Paper A Fig 4(c)", "conv-BN-ReLU-conv-BN-ReLU, then add (F >= 0, f = identity)",
        words="ReLU before addition", short="ReLU before addition",
        adjective="ReLU-before-addition", colour="#E69F00", paper={110: 7.84, 164: 6.14},  # orange
        after=BN_RELU, last=BN_RELU),
    "relu_preact": Unit(
        "Paper A Fig 4(d)", "ReLU-only pre-activation, ReLU-conv-BN-ReLU-conv-BN, then add",
        words="ReLU-only pre-activation", short="ReLU-only pre-activation",
        adjective="ReLU-only pre-activation", colour="#56B4E9",  # sky blue
        paper={110: 6.71, 164: 5.91}, pre=("ReLU",), after=("BN",), last=("BN",), stem=("BN",),
        final="relu"),
    "full_preact": Unit(
        "Paper A Fig 4(e)", "full pre-activation, BN-ReLU-conv-BN-ReLU-conv, then add (f = "
        "identity)", words="full pre-activation", short="full pre-activation",
        adjective="pre-activation", colour="#0072B2", paper={110: 6.37, 164: 5.46},  # blue
        pre=BN_RELU, stem=(), final="bn_relu"),
}
UNITS = {name: f"{row.figure}: {row.describes}" for name, row in UNIT_ROWS.items()}


@dataclass(frozen=True)
class Shortcut:
    """One shortcut of Paper A Fig 2, the unit around it the original (Fig 4(a)): what it is, how a
    page shows it, the options it takes with their defaults (the paper's values), and Paper A
    Table 1's CIFAR-10 test error of ResNet-110 with it (median of 5 runs; "fail": above 20 %),
    keyed by its options' values in `options`' order. Its module is shortcuts.make_shortcut's.
    """

    figure: str  # where the paper draws it
    describes: str  # what it computes
    words: str  # what a page calls it
    colour: str = ""  # its colour on every page ("": the original unit's, as the identity's)
    options: dict = field(default_factory=dict)  # option -> default
    paper: dict = field(default_factory=dict)  # options' values -> Table 1's test error %


FAIL = "fail"  # Paper A Table 1's word for a test error above 20 %
SHORTCUT_ROWS = {
    "identity": Shortcut("Paper A Fig 2(a)", "h(x) = x, the identity shortcut",
                         "the identity shortcut", paper={(): 6.61}),
    "constant_scaling": Shortcut(
        "Paper A Fig 2(b)", "shortcut_scale * x + residual_scale * F(x) (Table 1 rows 2-4)",
        "constant scaling", "#009E73",  # bluish green
        {"shortcut_scale": 0.5, "residual_scale": 1.0},
        {(0.0, 1.0): FAIL, (0.5, 1.0): FAIL, (0.5, 0.5): 12.35}),
    "exclusive_gating": Shortcut(
        "Paper A Fig 2(c)", "(1 - g(x)) * x + g(x) * F(x), g(x) = sigmoid(1x1 conv(x) + b_g)",
        "exclusive gating", "#000000",  # black
        {"gate_bias": -6.0},  # b_g = -6 is the best exclusive gate (0 to -5 fail)
        {(0.0,): FAIL, (-6.0,): 8.70, (-7.0,): 9.81}),
    "shortcut_only_gating": Shortcut(
        "Paper A Fig 2(d)", "(1 - g(x)) * x + F(x), g(x) = sigmoid(1x1 conv(x) + b_g)",
        "shortcut-only gating", "#882255",  # Tol's wine
        {"gate_bias": -6.0}, {(0.0,): 12.86, (-6.0,): 6.91}),
    "conv1x1": Shortcut("Paper A Fig 2(e)", "a 1x1 convolution on every shortcut",
                        "the 1×1-convolution shortcut", "#6E6E6E",  # grey
                        paper={(): 12.22}),
    # indigo: a brown beside the original's vermillion is one colour on a phone
    "dropout": Shortcut("Paper A Fig 2(f)", "dropout (rate p) on the shortcut",
                        "the dropout shortcut", "#332288",  # Tol's indigo
                        {"p": 0.5}, {(0.5,): FAIL}),
}
SHORTCUTS = {name: f"{row.figure}: {row.describes}" for name, row in SHORTCUT_ROWS.items()}

BLOCKS = {
    "basic": "two 3x3 convolutions per unit; CIFAR depth 6n+2 (ResNet-20 ... 110, 1202)",
    "bottleneck": "1x1, 3x3, 1x1 convolutions per unit; CIFAR depth 9n+2 (ResNet-164, 1001)",
    "single": "one 3x3 convolution per unit, the 1-layer skip of Paper A Table 3; CIFAR depth 3n+2",
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
    allowed = SHORTCUT_ROWS[choose(shortcut, SHORTCUTS, "shortcut")].options
    wrong = sorted(set(options) - set(allowed))
    if wrong:
        takes = ", ".join(allowed) if allowed else "no options"
        raise ValueError(f"shortcut {shortcut!r} does not take {', '.join(wrong)}; it takes "
                         f"{takes}")
    return {**allowed, **options}
