"""Looking inside a model: its residual units, its gates (``units.gates``), its identity point, a
unit's drawing."""

import torch
import torch.nn as nn

from .shortcuts import ZeroPad
from .units import ResidualUnit, gates  # noqa: F401 (gates: the units' k, defined with them)


def residual_units(model):
    """The residual units of `model` in forward order; each maps its input x_l to its output
    x_{l+1}."""
    return [m for m in model.modules() if isinstance(m, ResidualUnit)]


def weight_layers(unit):
    """The weight layers (convolutions, linear layers) of a residual unit in the order its modules
    are held: the residual branch F first, then the shortcut's (a projection, a gate's 1x1 conv)."""
    return [m for m in unit.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def post_relu(unit):
    """The ReLU of a unit's f (``unit.post``): its input is y_l = h(x_l) + F(x_l) (Eqn 1), what f
    truncates; None where f has no ReLU (pre-activation units: f is the identity)."""
    relus = [m for m in unit.post.modules() if isinstance(m, nn.ReLU)]
    return relus[-1] if relus else None


@torch.no_grad()
def zero_residuals(model):
    """Make every residual branch F output exactly zero: Paper B's identity point (W = 0).

    Zeroes the last weight layer of each F (its weight and bias; for a trailing BN, gamma and beta),
    so F(x) = 0 for any x while the rest of the network is untouched. Returns `model`.
    """
    for unit in residual_units(model):
        last = [m for m in unit.residual.modules()
                if any(True for _ in m.parameters(recurse=False))]
        if not last:
            raise ValueError("a residual branch without weights cannot be zeroed")
        for p in last[-1].parameters(recurse=False):
            p.zero_()
    return model


def _op(m):
    if isinstance(m, nn.Conv2d):
        k, s = m.kernel_size[0], m.stride[0]
        return f"{k}x{k} conv, {m.out_channels}" + (f", /{s}" if s > 1 else "")
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return "BN"
    if isinstance(m, nn.ReLU):
        return "ReLU"
    if isinstance(m, nn.Dropout):
        return f"dropout {m.p:g}"
    if isinstance(m, nn.Linear):
        return f"linear, {m.out_features}"
    if isinstance(m, ZeroPad):
        return (f"subsample /{m.stride}, zero-pad "
                f"+{m.extra}") if m.extra else f"subsample /{m.stride}"
    return type(m).__name__


def _ops(module):
    if module is None:
        return []
    leaves = [m for m in module.modules() if not list(m.children())]
    return [_op(m) for m in leaves if not isinstance(m, nn.Identity)]


def unit_layout(unit):
    """A plain description of a unit for drawings: the ops of each path, in order.

    Keys: preact (shared, before the split), residual (F), shortcut (h), gate (ops of g(x), if any),
    on_shortcut / on_residual (the factors of Table 1's columns), post (f), gated (Paper B's k),
    and unit / shortcut_name / block when the unit came from make_unit.
    """
    sc = unit.shortcut
    gate = getattr(sc, "gate", None)
    layout = {
        "preact": _ops(unit.preact), "residual": _ops(unit.residual), "shortcut": _ops(sc.h),
        "gate": _ops(gate) + (["sigmoid"] if gate is not None else []),
        "on_shortcut": sc.on_shortcut,
        "on_residual": sc.on_residual, "post": _ops(unit.post), "gated": unit.k is not None,
    }
    if hasattr(sc, "p"):
        layout["shortcut"] = layout["shortcut"] + [f"dropout {sc.p:g}"]
    layout.update(getattr(unit, "variant", {}))
    return layout
