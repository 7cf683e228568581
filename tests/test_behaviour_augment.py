"""The crop's offsets: every offset 0..2*pad occurs, in both directions and jointly, about equally
often.

Each image is an arange of distinct positive values, so one pixel of a crop that is not padding
tells the offset (dy, dx) the crop was cut at (and whether it was mirrored).
"""
import pytest
import torch

from idmap_lib.engine.augment import crop_flip


def _offsets(x, out, pad):
    """(dy, dx, mirrored) of every crop: out[n] = F.pad(x[n])[dy:dy+h, dx:dx+w], flipped left-right
    or not."""
    n, _, h, w = x.shape
    res = []
    for i in range(n):
        o = out[i, 0]
        r, c = (o > 0).nonzero()[0].tolist()           # a pixel of the image itself (padding is 0)
        v = int(o[r, c]) - int(x[i, 0, 0, 0])
        sy, sx = divmod(v, w)                          # where it came from in the image
        dy = sy + pad - r
        plain = sx + pad - c
        mirrored = sx + pad - (w - 1 - c)
        # the crop must be the window at (dy, dx) of the padded image, plain or mirrored
        xp = torch.nn.functional.pad(x[i], [pad] * 4)
        if 0 <= plain <= 2 * pad and torch.equal(xp[:, dy:dy + h, plain:plain + w], out[i]):
            res.append((dy, plain, False))
        else:
            assert torch.equal(xp[:, dy:dy + h, mirrored:mirrored + w].flip(-1), out[i]), i
            res.append((dy, mirrored, True))
    return res


def _images(n, h=6, w=6):
    return (torch.arange(h * w, dtype=torch.int64).view(1, 1, h, w) + 1
            + (h * w + 1) * torch.arange(n).view(n, 1, 1, 1)).double()


@pytest.mark.parametrize("pad", [1, 2, 4])
@pytest.mark.parametrize("flip", [False, True])
def test_every_crop_offset_from_0_to_2pad_occurs_equally_often(pad, flip):
    n = 4000
    x = _images(n)
    out = crop_flip(x, pad=pad, flip=flip, generator=torch.Generator().manual_seed(pad))
    got = _offsets(x, out, pad)
    k = 2 * pad + 1
    dys = torch.tensor([g[0] for g in got])
    dxs = torch.tensor([g[1] for g in got])
    assert set(dys.tolist()) == set(range(k)) and set(dxs.tolist()) == set(range(k))
    assert len({(a, b) for a, b, _ in got}) == k * k                    # every (dy, dx) pair
    # uniform: each within 20 % of n / k
    for d in (dys, dxs):
        counts = torch.bincount(d, minlength=k).double()
        assert ((counts - n / k).abs() < 0.2 * n / k).all(), counts.tolist()
    mirrored = sum(m for _, _, m in got)
    assert (mirrored == 0) if not flip else abs(mirrored - n / 2) < 0.1 * n


def test_pad_0_is_the_image_itself():
    x = _images(50)
    assert torch.equal(crop_flip(x, pad=0, flip=False, generator=torch.Generator().manual_seed(0)),
                       x)


def test_memory_layout_is_nchw_unless_channels_last_is_asked_for():
    x = _images(4).expand(4, 3, 6, 6).contiguous()
    for pad in (0, 2):
        a = crop_flip(x, pad=pad, generator=torch.Generator().manual_seed(0))
        b = crop_flip(x, pad=pad, generator=torch.Generator().manual_seed(0), channels_last=True)
        assert (a.is_contiguous() and b.is_contiguous(memory_format=torch.channels_last)
                and torch.equal(a, b))


def test_the_defaults_are_the_papers_augmentation():
    """Called bare, crop_flip is Paper A's: pad 4, crop back to the size, flip half the images."""
    x = _images(2000)
    got = _offsets(x, crop_flip(x, generator=torch.Generator().manual_seed(0)), 4)
    assert {g[0] for g in got} == set(range(9)) and 0.4 < sum(m for _, _, m in got) / len(got) < 0.6
