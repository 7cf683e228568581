"""Batched, on-device data augmentation (Paper A appendix / ResNet v1 Sec. 4.2).

"4 pixels are padded on each side, and a 32x32 crop is randomly sampled from the padded image or its
horizontal flip." Done for a whole batch at once with one gather on the training device; the random
offsets and flips come from a seeded ``torch.Generator`` (saved in checkpoints, so a resumed run
draws the same crops).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def crop_flip(x: torch.Tensor, pad: int = 4, flip: bool = True,
              generator: torch.Generator | None = None,
              channels_last: bool = False) -> torch.Tensor:
    """Random crop of every image from its zero-padded copy (pad each side) and random horizontal
    flip.

    x: (N, C, H, W) of any dtype. Returns (N, C, H, W); each output image equals an H x W window of
    ``F.pad(x, [pad]*4)`` (mirrored left-right with probability 1/2 when `flip`). With
    ``channels_last`` the result has channels-last strides (free: the gather produces N, H, W, C).
    """
    n, c, h, w = x.shape
    dev = x.device
    dy = torch.randint(0, 2 * pad + 1, (n,), device=dev, generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (n,), device=dev, generator=generator)
    rows = dy[:, None] + torch.arange(h, device=dev)  # (N, H) rows of the padded image
    cols = torch.arange(w, device=dev).expand(n, w)
    if flip:
        mirror = torch.randint(0, 2, (n,), device=dev, generator=generator).bool()
        cols = torch.where(mirror[:, None], cols.flip(1), cols)
    cols = dx[:, None] + cols  # (N, W)
    xp = F.pad(x, [pad] * 4) if pad else x
    # advanced indices around a slice: the result is (N, H, W, C)
    out = xp[torch.arange(n, device=dev)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    out = out.permute(0, 3, 1, 2)  # NCHW view with channels-last strides
    return out if channels_last else out.contiguous()
