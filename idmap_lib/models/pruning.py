"""Removing residual blocks from a trained network without retraining (Paper B Sec 4.1 Fig 5, Sec
4.2 Fig 7).

A removed block becomes what a gate with k <= 0 makes of it: its residual branch contributes
nothing, so the block passes its shortcut, x_{l+1} = h(x_l) -- the identity for the same-shape
blocks pruned here. Orders: ``by_gate`` (Paper B: the smallest learned k first, greedily) and
``at_random`` (a seeded permutation). ``curve`` removes blocks one after another in an order and
evaluates after each removal.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn as nn

from .introspect import residual_units


class _Removed(nn.Module):
    """Stands in for a removed block's residual branch F: contributes exactly zero."""

    def __init__(self, branch):
        super().__init__()
        self.branch = branch  # kept, so the block comes back unchanged

    def forward(self, x):
        return torch.zeros_like(x)


@contextlib.contextmanager
def removed(model, blocks):
    """Within the context, the residual units at indices `blocks` (of ``residual_units(model)``) are
    removed: F contributes zero, as with Paper B's gate at k <= 0. Only blocks whose output has
    their input's shape can be removed (a dimension-changing block would still project)."""
    units = residual_units(model)
    blocks = sorted(set(int(b) for b in blocks))
    bad = [b for b in blocks if not 0 <= b < len(units)]
    if bad:
        raise ValueError(f"block indices {bad} are outside 0..{len(units) - 1} ({len(units)} "
                         f"residual units)")
    for b in blocks:
        sc = units[b].shortcut
        if not isinstance(getattr(sc, "h", None),
                          nn.Identity) or not isinstance(units[b].preact, nn.Identity):
            raise ValueError(f"block {b} would not become an identity (it changes dimensions, or a "
                             f"shared pre-activation precedes its split): remove same-shape blocks "
                             f"only")
    saved = {b: units[b].residual for b in blocks}
    try:
        for b in blocks:
            units[b].residual = _Removed(saved[b])
        yield model
    finally:
        for b, branch in saved.items():
            units[b].residual = branch


def by_gate(model) -> list[int]:
    """Paper B's greedy order: the blocks with the smallest learned k first (needs a gated
    model)."""
    units = residual_units(model)
    if any(u.k is None for u in units):
        raise ValueError("ordering by k needs a gated model (every residual unit with a gate k); "
                         "use at_random")
    ks = [float(u.k.detach()) for u in units]
    return sorted(range(len(units)), key=lambda i: (ks[i], i))


def at_random(model, seed=0) -> list[int]:
    """A seeded random order of all residual units."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(len(residual_units(model)), generator=g).tolist()


@torch.no_grad()
def curve(model, order, evaluate, upto=None) -> list[float]:
    """``evaluate(model)`` with the first 0, 1, ..., `upto` blocks of `order` removed (default:
    all); the model is left as it was."""
    upto = len(order) if upto is None else upto
    return [_eval_removed(model, order[:n], evaluate) for n in range(upto + 1)]


def _eval_removed(model, blocks, evaluate):
    with removed(model, blocks):
        return evaluate(model)
