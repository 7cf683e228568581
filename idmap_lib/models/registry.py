"""The variants of both papers, by name, and the one place that validates a choice.

Paper A = He et al. 2016, "Identity Mappings in Deep Residual Networks".
Paper B = Savarese et al. 2016, "Learning Identity Mappings with Residual Gates".
"""

UNITS = {
    "original": "Paper A Fig 4(a): conv-BN-ReLU-conv-BN, add, then ReLU (f = ReLU), the ResNet of "
                "2015",
    "bn_after_add": "Paper A Fig 4(b): conv-BN-ReLU-conv, add, then BN and ReLU (f = BN+ReLU)",
    "relu_before_add": "Paper A Fig 4(c): conv-BN-ReLU-conv-BN-ReLU, then add (F >= 0, f = "
                       "identity)",
    "relu_preact": "Paper A Fig 4(d): ReLU-only pre-activation, ReLU-conv-BN-ReLU-conv-BN, then "
                   "add",
    "full_preact": "Paper A Fig 4(e): full pre-activation, BN-ReLU-conv-BN-ReLU-conv, then add (f "
                   "= identity)",
}

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
