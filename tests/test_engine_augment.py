"""Batched pad-4 crop + flip (Paper A appendix): windows of the zero-padded image, flips,
seeding."""
import torch
import torch.nn.functional as F

from idmap_lib.engine.augment import crop_flip


def _windows(xp, h, w):
    """All h x w windows of one padded image and their mirror images."""
    out = []
    for i in range(xp.shape[-2] - h + 1):
        for j in range(xp.shape[-1] - w + 1):
            win = xp[:, i:i + h, j:j + w]
            out += [(i, j, False, win), (i, j, True, win.flip(-1))]
    return out


def test_output_is_a_window_of_the_zero_padded_input():
    # no zeros inside: padding is visible
    x = torch.randint(1, 256, (64, 3, 8, 8), dtype=torch.uint8)
    out = crop_flip(x, pad=4, generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape and out.dtype == x.dtype
    xp = F.pad(x, [4] * 4)
    offsets, flips = set(), set()
    for n in range(len(x)):
        hits = [(i, j, f) for i, j, f, win in _windows(xp[n], 8, 8) if torch.equal(win, out[n])]
        assert hits, f"image {n} is not a window of its padded copy"
        offsets.add(hits[0][:2])
        flips.add(hits[0][2])
    assert flips == {False, True}  # both plain and mirrored crops occur
    assert len(offsets) > 20  # many of the 81 offsets occur
    assert all(0 <= i <= 8 and 0 <= j <= 8 for i, j in offsets)


def test_flip_only_and_no_flip():
    x = torch.randn(32, 2, 5, 5)
    out = crop_flip(x, pad=0, flip=True, generator=torch.Generator().manual_seed(1))
    same = [torch.equal(out[n], x[n]) for n in range(32)]
    mirrored = [torch.equal(out[n], x[n].flip(-1)) for n in range(32)]
    assert all(s or m for s, m in zip(same, mirrored)) and any(same) and any(mirrored)
    assert torch.equal(crop_flip(x, pad=0, flip=False, generator=torch.Generator()), x)


def test_same_seed_same_batch_and_channels_last():
    x = torch.randn(16, 3, 32, 32)
    a = crop_flip(x, generator=torch.Generator().manual_seed(7))
    b = crop_flip(x, generator=torch.Generator().manual_seed(7), channels_last=True)
    c = crop_flip(x, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert b.is_contiguous(memory_format=torch.channels_last)
