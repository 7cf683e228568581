"""Measurements on real idmap_lib networks, for the theory chapters and later ones.

- :func:`unit_gradient_norms`: ||dE/dx_l|| at the input of every residual unit (Paper A Eqns 5, 8).
- :func:`eqn5_check`: the gradient at x_l split into Eqn 5's direct term dE/dx_L and the term
  through the weight layers, each measured separately with autograd.
- :func:`truncation_rates`: how often f = ReLU truncates the addition's output y_l (Eqn 1), per unit
  (Sec 4.2).
- :func:`distance_to_identity`, :func:`layer_distance`: how far weights are from the identity point
  W = 0, and a gate's k from k <= 0 (Paper B Sec 2).
- :func:`lambda_stack`: a deep same-shape stack of lambda-scaled units (Eqn 6, Fig 2b).
- :func:`gate_gradients`: dE/dk of every gate of a gated net with its gates set to one k (Paper B
  Sec 3, g = ReLU): exactly 0 at k <= 0, so a shut gate never reopens.

Every probe runs the model with batch statistics (train-mode BN, as at the start of training) and
restores the model's mode and BN buffers afterwards, so probing never changes a model.
"""
from __future__ import annotations

import contextlib
import math

import torch
import torch.nn as nn

from idmap_lib.engine.device import threads
from idmap_lib.models.introspect import gates, residual_units, zero_residuals
from idmap_lib.models.shortcuts import ConstantScaling, Shortcut
from idmap_lib.models.units import make_unit


@contextlib.contextmanager
def batch_statistics(model: nn.Module):
    """Run `model` in train mode (BN uses the batch's statistics) and put back its mode and buffers
    after."""
    was = {m: m.training for m in model.modules()}
    buffers = {k: v.clone() for k, v in model.state_dict().items() if "running" in k
               or "num_batches" in k}
    model.train()
    try:
        yield model
    finally:
        for m, t in was.items():
            m.train(t)
        if buffers:
            model.load_state_dict(buffers, strict=False)


def _units(model):
    units = residual_units(model)
    if not units:
        raise ValueError("the model has no residual units (idmap_lib.residual_units found none)")
    return units


def _probe_vector(shape, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def _forward_capture(model, x, units, residuals=False):
    """Forward `x`; returns (inputs x_l of every unit, output of the last unit, [F outputs])."""
    xs, rs, out = [], [], {}
    hooks = [u.register_forward_pre_hook(lambda m, a: xs.append(a[0])) for u in units]
    hooks.append(units[-1].register_forward_hook(lambda m, a, o: out.setdefault("y", o)))
    if residuals:
        hooks += [u.residual.register_forward_hook(lambda m, a, o: rs.append(o)) for u in units]
    try:
        model(x)
    finally:
        for hk in hooks:
            hk.remove()
    return xs, out["y"], rs


def unit_gradient_norms(model, x, seed=0, grad_output=None):
    """||dE/dx_l|| for l = 0..L: the input of every residual unit, then the last unit's output x_L.

    E = <v, x_L> with v ~ N(0, 1) (seeded) or `grad_output`, so dE/dx_L = v and dE/dx_l = v
    dx_L/dx_l: the ratios to the last entry are the gains of Eqns 5 and 8. Returns a float64 tensor
    of length L+1.
    """
    units = _units(model)
    x = x.detach().clone().requires_grad_(True)
    with batch_statistics(model), torch.enable_grad():
        xs, xL, _ = _forward_capture(model, x, units)
        v = grad_output if grad_output is not None else _probe_vector(xL.shape, seed, xL.dtype)
        E = (v * xL).sum()
        grads = torch.autograd.grad(E, xs + [xL])
    return torch.stack([g.detach().double().norm() for g in grads])


def _check_identity_units(units):
    for k, u in enumerate(units):
        ok = (type(u.shortcut) is Shortcut and isinstance(u.shortcut.h, nn.Identity)
              and isinstance(u.post, nn.Identity) and isinstance(u.preact, nn.Identity))
        if not ok:
            raise ValueError(f"Eqn 5 needs h and f identity (Eqns 3-4), but unit {k} has shortcut "
                             f"{type(u.shortcut).__name__}, preact {type(u.preact).__name__}, post "
                             f"{type(u.post).__name__}: use full_preact units with the identity "
                             f"shortcut, "
                             "inside one stage (pass l and L)")


def eqn5_check(model, x, l=0, L=None, seed=0):
    """Measure Eqn 5 between units l < L of `model`: dE/dx_l = dE/dx_L + dE/dx_L d/dx_l
    sum_{i=l}^{L-1} F_i.

    All three terms are measured separately with autograd: `full` = dE/dx_l through the whole
    network, `direct` = dE/dx_L, `through` = the vector-Jacobian product of dE/dx_L with the outputs
    F(x_i, W_i) of the residual branches i = l..L-1 (hooked on `unit.residual`). Units l..L-1 must
    have h and f identity. E = <v, output of the last unit>, v ~ N(0, 1). Returns a dict of tensors
    and the relative error ||full - (direct + through)|| / ||full||.
    """
    units = _units(model)
    L = len(units) if L is None else L
    if not 0 <= l < L <= len(units):
        raise ValueError(f"need 0 <= l < L <= {len(units)} (the number of residual units), got "
                         f"l={l}, L={L}")
    _check_identity_units(units[l:L])
    x = x.detach().clone().requires_grad_(True)
    with batch_statistics(model), torch.enable_grad():
        xs, y, rs = _forward_capture(model, x, units, residuals=True)
        xs = xs + [y]
        v = _probe_vector(y.shape, seed, y.dtype)
        E = (v * y).sum()
        full, direct = torch.autograd.grad(E, [xs[l], xs[L]], retain_graph=True)
        scale = [torch.relu(u.k) if u.k is not None else 1.0 for u in units[l:L]]
        through, = torch.autograd.grad(rs[l:L], xs[l], grad_outputs=[direct * s for s in scale],
                                       allow_unused=True)
        through = torch.zeros_like(full) if through is None else through
    err = (full - direct - through).norm() / full.norm()
    return {"full": full.detach(), "direct": direct.detach(), "through": through.detach(),
            "relative_error": float(err), "norms": {k: float(t.norm()) for k, t in
                                                    (("full", full), ("direct", direct),
                                                     ("through", through))}}


def _forward_once(model, x, hooks):
    """One forward pass of `model` on `x` (BN on batch statistics, no grad), then remove `hooks`."""
    try:
        with batch_statistics(model), torch.no_grad():
            model(x)
    finally:
        for hk in hooks:
            hk.remove()


def _signs_before_f(model, x):
    """Run `model` on `x` (BN on batch statistics) and return, per residual unit, the sign (int8) of
    the input of the last ReLU in its `post` (for the original unit: y_l = h(x_l) + F(x_l), Eqn 1),
    or None when f has no ReLU; and each unit's output shape."""
    units = _units(model)
    signs, shapes, hooks = [None] * len(units), [None] * len(units), []
    for k, u in enumerate(units):
        hooks.append(u.register_forward_hook(
            lambda m, a, o, k=k: shapes.__setitem__(k, tuple(o.shape))))
        relus = [m for m in u.post.modules() if isinstance(m, nn.ReLU)]
        if relus:
            hooks.append(relus[-1].register_forward_pre_hook(
                lambda m, a, k=k: signs.__setitem__(k, torch.sign(a[0]).to(torch.int8))))
    _forward_once(model, x, hooks)
    return signs, shapes


def truncation_rates(model, x):
    """Per unit, the fraction of elements of f's input that f = ReLU sets to zero (Paper A Sec 4.2).

    Hooks the input of the last ReLU inside `unit.post` (for the original unit, post is that ReLU
    and its input is y_l = h(x_l) + F(x_l), Eqn 1). A unit whose post has no ReLU (pre-activation)
    truncates nothing: 0.
    """
    signs, _ = _signs_before_f(model, x)
    return torch.tensor([0.0 if s is None else float((s < 0).double().mean()) for s in signs],
                        dtype=torch.float64)


def _weights(module):
    """Weight tensors of the layers (convolutions, linear layers) of a module: not BN, not
    biases."""
    return [m.weight for m in module.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def distance_to_identity(model):
    """Per residual unit, the distance of its residual branch's weights W from the identity point W
    = 0 (Paper B Sec 2), and of its gate k from the identity half-line k <= 0.

    Returns a list of dicts: params (number of weights), squared (sum w^2), euclidean (sqrt of it),
    absolute (sum |w|), and gate_distance (max(k, 0), None for an ungated unit).
    """
    out = []
    for u in _units(model):
        ws = [w.detach().double().flatten() for w in _weights(u.residual)]
        w = torch.cat(ws) if ws else torch.zeros(0, dtype=torch.float64)
        sq = float((w ** 2).sum())
        out.append({"params": w.numel(), "squared": sq, "euclidean": math.sqrt(sq),
                    "absolute": float(w.abs().sum()),
                    "gate_distance": None if u.k is None else max(float(u.k.detach()), 0.0)})
    return out


def layer_distance(n, init="he", trials=3, seed=0):
    """Measured distance of a freshly initialised n x n weight matrix from W = 0, averaged over
    `trials`.

    init: "he" (normal, variance 2/n, He et al. 2015) or "torch" (nn.Linear's default uniform,
    variance 1/(3n)). Returns dict squared / euclidean / absolute (means) and the variance used.
    """
    if init not in ("he", "torch"):
        raise ValueError(f"init must be 'he' or 'torch', got {init!r}")
    g = torch.Generator().manual_seed(seed)
    acc = {"squared": 0.0, "euclidean": 0.0, "absolute": 0.0}
    for _ in range(trials):
        if init == "he":
            w = torch.randn(n, n, generator=g, dtype=torch.float64) * math.sqrt(2.0 / n)
        else:
            w = (torch.rand(n, n, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(n)
        sq = float((w ** 2).sum())
        acc["squared"] += sq / trials
        acc["euclidean"] += math.sqrt(sq) / trials
        acc["absolute"] += float(w.abs().sum()) / trials
    acc["variance"] = 2.0 / n if init == "he" else 1.0 / (3 * n)
    return acc


def lambda_stack(depth, lam, channels=4, unit="full_preact", block="basic", dtype=torch.float64,
                 seed=0):
    """`depth` same-shape residual units with h(x) = lam * x (Eqn 6; Fig 2b with residual_scale 1).

    Same seed, same weights for every lam, so curves for different lam differ only by the shortcut.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    torch.manual_seed(seed)
    units = [make_unit(unit, "constant_scaling", channels, channels, block=block,
                       shortcut_scale=lam, residual_scale=1.0) for _ in range(depth)]
    return nn.Sequential(*units).to(dtype)


def probe_input(channels=4, size=8, batch=4, dtype=torch.float64, seed=0):
    """A small N(0, 1) input batch (N, C, size, size) for the probes."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, channels, size, size, generator=g, dtype=torch.float64).to(dtype)


def direct_path_survival(model, x):
    """Paper A Sec 4.2: with f = ReLU, the direct term of the gradient from x_L back to x_l is
    multiplied at every unit by ReLU's derivative 1[y_i > 0], so it survives only where no unit in
    between truncated.

    Returns, per unit l, the fraction of elements of y_l whose direct path is open through every
    later unit up to the last one: mean over elements of prod_{i >= l} 1[y_i > 0]. Computed over the
    trailing units that share the last unit's shape (a same-shape stack: all of them; a CIFAR net:
    its last stage); earlier units are NaN.
    """
    signs, shapes = _signs_before_f(model, x)
    masks = [None if sg is None else sg > 0 for sg in signs]
    out = torch.full((len(signs),), float("nan"), dtype=torch.float64)
    alive = None
    for k in range(len(signs) - 1, -1, -1):
        if shapes[k] != shapes[-1]:
            break
        # f identity: all open
        m = masks[k] if masks[k] is not None else torch.ones(shapes[k], dtype=torch.bool)
        alive = m if alive is None else alive & m
        out[k] = alive.double().mean()
    return out


def set_shortcut_scale(model, lam):
    """Set lambda (Eqn 6) on every constant_scaling shortcut of `model`; returns the model."""
    found = [u.shortcut for u in _units(model) if isinstance(u.shortcut, ConstantScaling)]
    if not found:
        raise ValueError("the model has no constant_scaling shortcuts (make it with "
                         "shortcut='constant_scaling')")
    for sc in found:
        sc.shortcut_scale = float(lam)
        sc.on_shortcut = f"{float(lam):g}"
    return model


def gradient_decay(lams, depth=1000, channels=4, size=8, batch=4, zero=False, seed=0):
    """For each lambda: ||dE/dx_l|| / ||dE/dx_L|| against the number of units L - l = 0..depth,
    measured at initialisation in a `depth`-unit lambda-scaled full pre-activation stack (float64:
    lambda^1000 would overflow float32). zero=True first zeroes every F (idmap_lib.zero_residuals):
    only Eqn 8's direct term remains, so the ratio is exactly prod lambda = lambda^(L-l). Returns
    {lam: float64 tensor, index = L-l}.

    Tiny tensors: runs on one thread, which is faster here than two (per-op overhead dominates).
    """
    with threads(1):
        model = lambda_stack(depth, 1.0, channels=channels, seed=seed)
        if zero:
            zero_residuals(model)
        x = probe_input(channels, size, batch, seed=seed)
        out = {}
        for lam in lams:
            g = unit_gradient_norms(set_shortcut_scale(model, lam), x, seed=seed)
            out[lam] = (g / g[-1]).flip(0)
    return out


def unit_io(model, x):
    """(input, output) of every residual unit for one forward pass (batch statistics, no grad): e.g.
    to check that a gated unit with k <= 0 is an identity (Paper B: ReLU(k) = 0 gives u = x)."""
    units = _units(model)
    pairs = [None] * len(units)
    hooks = [u.register_forward_hook(lambda m, a, o, k=k: pairs.__setitem__(k, (a[0], o)))
             for k, u in enumerate(units)]
    _forward_once(model, x, hooks)
    return pairs


def gate_gradients(model, x, k, y=None, seed=0):
    """dE/dk of every gate of a gated net with all its gates set to `k` (Paper B Sec 3: the branch
    scaled by g(k) = ReLU(k); Eqn 5's GResNet block u = g(k) f_r(x) + x, or u = g(k) f(x) + (1 -
    g(k)) x for a gated layer).

    E is the cross-entropy of the output against the labels `y`, or E = <v, output> with v ~ N(0, 1)
    (seeded) when `y` is None. By the chain rule dE/dk = g'(k) dE/dg, and ReLU'(k) = 1 for k > 0, 0
    for k <= 0 (PyTorch's too, at k = 0 itself): a gate at k <= 0 gets a gradient of exactly 0, so
    no gradient step moves it back, and a gate once shut stays shut. Runs on batch statistics; the
    gates' values are put back. Returns a float64 tensor, one entry per gate, in forward order."""
    ks = gates(model)
    if not ks:
        raise ValueError("the model has no gates k: gate_gradients reads a gated net, e.g. "
                         "im.mlp('gresnet', d=4) (Paper B's GResNet) or im.mlp('gated_plain', d=4)")
    before = [g.detach().clone() for g in ks]
    try:
        with torch.no_grad():
            for g in ks:
                g.fill_(k)
        with batch_statistics(model), torch.enable_grad():
            out = model(x)
            if y is None:
                E = (_probe_vector(out.shape, seed, out.dtype) * out).sum()
            else:
                E = nn.functional.cross_entropy(out, y)
            grads = torch.autograd.grad(E, ks)
    finally:
        with torch.no_grad():
            for g, b in zip(ks, before):
                g.copy_(b)
    return torch.stack([g.detach().double() for g in grads])
