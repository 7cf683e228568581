"""The data on the device: the whole uint8 dataset moved once, training batches gathered by index,
normalised and augmented there (augment.py; no DataLoader, no PIL), and the test-set evaluation."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import data as data_mod
from .augment import crop_flip


def prepare_data(cfg, data, device):
    d = data if isinstance(data, data_mod.Data) else data_mod.load(cfg["dataset"], data)
    xtr, ytr, xte, yte = d.x_train, d.y_train, d.x_test, d.y_test
    sub = cfg.get("subset")
    if sub:
        seed = sub.get("seed", 0)
        i = data_mod.stratified_subset(ytr, sub["train_per_class"], seed)
        j = data_mod.stratified_subset(yte, sub["test_per_class"], seed)
        xtr, ytr, xte, yte = xtr[i], ytr[i], xte[j], yte[j]
    mean, std = data_mod.normalization(cfg["preprocess"], xtr)
    return dict(x_train=xtr.to(device), y_train=ytr.to(device), x_test=xte.to(device),
                y_test=yte.to(device),
                mean=mean.to(device), std=std.to(device), num_classes=d.num_classes,
                source=d.source)


def normalise(D, x):
    """uint8 images -> normalised floats of the default dtype (float32; a test may compute in
    float64)."""
    return x.to(torch.get_default_dtype()).div_(255).sub_(D["mean"]).div_(D["std"])


def train_batch(D, idx, aug, gen, channels_last):
    """Training batch: gather uint8 images by index, normalise, augment (pad + crop + flip) on the
    device."""
    x = normalise(D, D["x_train"][idx])
    if aug:
        x = crop_flip(x, aug["pad"], aug["flip"], generator=gen, channels_last=channels_last)
    elif channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def to_device(t, device):
    """Host -> device copy that does not block the host (pinned memory on CUDA)."""
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


@torch.no_grad()
def evaluate_sums(sums, n, D, device, ctx, batch=1000) -> list[tuple[float, float]]:
    """Each of `n` models' test loss and error on D's test set: ``sums(x, y)`` gives one batch's
    loss sums (n,) and wrong answers (n,). Sharded over DDP ranks, summed; the models in eval mode
    (the caller's)."""
    idx_all = torch.arange(len(D["y_test"]), device=device)[ctx.rank::ctx.world]
    acc = torch.zeros(n, 3, device=device, dtype=torch.float64)  # loss sum, errors, count
    for s in range(0, len(idx_all), batch):
        idx = idx_all[s:s + batch]
        x, y = normalise(D, D["x_test"][idx]), D["y_test"][idx]
        loss, wrong = sums(x, y)
        acc[:, 0] += loss
        acc[:, 1] += wrong
        acc[:, 2] += len(y)
    ctx.all_reduce(acc)
    return [(loss / k, err / k) for loss, err, k in acc.tolist()]


def model_sums(model, dtype, channels_last, device):
    """``evaluate_sums``'s `sums` for one model: its loss sum (1,) and wrong answers (1,) on a
    batch."""
    def sums(x, y):
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            out = model(x)
        loss = F.cross_entropy(out.to(torch.get_default_dtype()), y, reduction="sum")
        return loss.reshape(1), (out.argmax(1) != y).sum().reshape(1)
    return sums


def evaluate(model, D, dtype, channels_last, device, ctx, batch=1000):
    """One model's test loss and error (BN in eval mode: the running statistics, not the
    batch's)."""
    was = model.training
    model.eval()
    (loss, err), = evaluate_sums(model_sums(model, dtype, channels_last, device), 1, D, device, ctx,
                                 batch)
    model.train(was)
    return loss, err
