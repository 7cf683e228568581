"""The training engine: one recipe config in, one result (with provenance) out.

- best device (CUDA, then CPU); the whole uint8 dataset on that device; batches gathered by index from a
  seeded permutation, normalised and augmented there (augment.py) -- no DataLoader, no PIL;
- autocast: bf16 where supported (recent GPUs; CPUs with AVX512-BF16/AMX), fp16 + GradScaler on GPUs
  without bf16 (e.g. a T4), else fp32; channels_last for conv nets; optional torch.compile;
- no host-device sync per step: loss/error sums and the first non-finite step live on the device and
  are read every ``log_every`` steps;
- live reporting: a tqdm.auto bar (loss, error, img/s) and ``on_log(history)`` for the book's curves;
- divergence is a result: a non-finite loss, or training error at chance after a grace period, ends the
  run with status "fail" and the step;
- atomic checkpoints (model, optimizer, schedule position, GradScaler, all RNG states, data order and
  position, accumulators, history) and exact resume;
- DDP under torchrun (distributed.py); only rank 0 writes.
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data as data_mod
from . import distributed as dist_mod
from .augment import crop_flip
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .introspect import gates
from .recipes import lr_at
from .results import config_hash, provenance, run_name, save_result


# ----------------------------------------------------------------------------------------------
# device, precision, model, optimizer

def pick_device(device=None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def amp_dtype(device: torch.device, amp="auto"):
    """bf16 / fp16 / None (fp32) for autocast on `device`."""
    if amp in (None, False, "fp32", "off"):
        return None
    if amp == "bf16":
        return torch.bfloat16
    if amp == "fp16":
        return torch.float16
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu":
        try:  # native bf16 (AVX512-BF16 / AMX); emulated bf16 would be slower than fp32
            return torch.bfloat16 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else None
        except (AttributeError, RuntimeError):
            return None
    return None


def build_model(spec: dict) -> nn.Module:
    """The model named by the config, from the model library (idmap_lib.cifar_resnet, wide_resnet, mlp)."""
    import idmap_lib

    return getattr(idmap_lib, spec["builder"])(**spec["kwargs"])


def build_optimizer(model: nn.Module, opt: dict):
    """SGD / NAdam per the recipe. Gates k get no weight decay unless the recipe says ``decay_gates``
    (Paper B Table 3, 'gated with weight decay on k')."""
    gate_ids = {id(p) for p in gates(model)}
    wd = opt.get("weight_decay", 0.0)
    rest = [p for p in model.parameters() if id(p) not in gate_ids]
    k = [p for p in model.parameters() if id(p) in gate_ids]
    groups = [{"params": rest, "weight_decay": wd}]
    if k:
        groups.append({"params": k, "weight_decay": wd if opt.get("decay_gates") else 0.0})
    if opt["name"] == "sgd":
        return torch.optim.SGD(groups, lr=opt["lr"], momentum=opt["momentum"], nesterov=opt["nesterov"])
    if opt["name"] == "nadam":
        return torch.optim.NAdam(groups, lr=opt["lr"], betas=tuple(opt["betas"]), momentum_decay=4e-3)
    raise ValueError(f"unknown optimizer {opt['name']!r}; valid: sgd, nadam")


def _has_conv(model):
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


# ----------------------------------------------------------------------------------------------
# the run

def _prepare_data(cfg, data, device):
    d = data if isinstance(data, data_mod.Data) else data_mod.load(cfg["dataset"], data)
    xtr, ytr, xte, yte = d.x_train, d.y_train, d.x_test, d.y_test
    sub = cfg.get("subset")
    if sub:
        seed = sub.get("seed", 0)
        i = data_mod.stratified_subset(ytr, sub["train_per_class"], seed)
        j = data_mod.stratified_subset(yte, sub["test_per_class"], seed)
        xtr, ytr, xte, yte = xtr[i], ytr[i], xte[j], yte[j]
    mean, std = data_mod.normalization(cfg["preprocess"], xtr)
    return dict(x_train=xtr.to(device), y_train=ytr.to(device), x_test=xte.to(device), y_test=yte.to(device),
                mean=mean.to(device), std=std.to(device), num_classes=d.num_classes, source=d.source)


def _batch(D, idx, aug, gen, channels_last):
    """Training batch: gather uint8 images by index, normalise, augment (pad + crop + flip) on the device."""
    x = D["x_train"][idx].float().div_(255).sub_(D["mean"]).div_(D["std"])
    if aug:
        x = crop_flip(x, aug["pad"], aug["flip"], generator=gen, channels_last=channels_last)
    elif channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


@torch.no_grad()
def evaluate(model, D, dtype, channels_last, device, ctx, batch=1000):
    """Test loss and error on D's test set (sharded over DDP ranks, summed)."""
    was = model.training
    model.eval()
    n_all = len(D["y_test"])
    idx_all = torch.arange(n_all, device=device)[ctx.rank::ctx.world]
    acc = torch.zeros(3, device=device, dtype=torch.float64)
    for s in range(0, len(idx_all), batch):
        idx = idx_all[s:s + batch]
        x = D["x_test"][idx].float().div_(255).sub_(D["mean"]).div_(D["std"])
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y = D["y_test"][idx]
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            out = model(x)
        acc[0] += F.cross_entropy(out.float(), y, reduction="sum")
        acc[1] += (out.argmax(1) != y).sum()
        acc[2] += len(y)
    ctx.all_reduce(acc)
    model.train(was)
    loss, err, n = acc.tolist()
    return loss / n, err / n


def train(cfg: dict, data=None, device=None, out_dir=None, checkpoint_dir=None, checkpoint_every=None,
          resume=False, max_steps=None, compile=False, on_log=None, progress=True, deterministic=False,
          amp="auto", channels_last="auto", write_result=True) -> dict:
    """Train one recipe config; returns the result dict (also written under out_dir when finished).

    data: a data.Data, a path (like --data), or None ($IDMAP_DATA, then torchvision's download).
    checkpoint_dir: where checkpoints go (e.g. Google Drive on Colab); None = no checkpoints.
    checkpoint_every: steps between checkpoints (rounded up to a multiple of log_every); default eval_every.
    resume: continue from the checkpoint of this run in checkpoint_dir, if there is one.
    max_steps: stop after this many steps of the recipe (schedule unchanged), save a checkpoint and return
        status "stopped" (nothing written to results): a run "killed" on purpose, to be resumed.
    deterministic: torch.use_deterministic_algorithms(True) (exact resume on CPU is bit-for-bit).
    """
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        return _train(cfg, data, device, out_dir, checkpoint_dir, checkpoint_every, resume, max_steps, compile,
                      on_log, progress, deterministic, amp, channels_last, write_result)
    finally:
        torch.use_deterministic_algorithms(was_deterministic)


def _train(cfg, data, device, out_dir, checkpoint_dir, checkpoint_every, resume, max_steps, compile, on_log,
           progress, deterministic, amp, channels_last, write_result):
    ctx = dist_mod.context()
    device = ctx.device if ctx.world > 1 else pick_device(device)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
        if device.type == "cuda":
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    chash = config_hash(cfg)
    seed = int(cfg["seed"])
    total, B, log_every = cfg["steps"], cfg["batch_size"], cfg["log_every"]
    eval_every = cfg["eval_every"]
    if B % ctx.world:
        raise ValueError(f"batch size {B} is not divisible by the number of processes {ctx.world}")

    D = _prepare_data(cfg, data, device)
    C = D["num_classes"]
    torch.manual_seed(seed)
    model = build_model(cfg["model"]).to(device)
    cl = _has_conv(model) if channels_last == "auto" else bool(channels_last)
    if cl:
        model = model.to(memory_format=torch.channels_last)
    raw = model
    opt = build_optimizer(raw, cfg["optimizer"])
    dtype = amp_dtype(device, amp)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 and device.type == "cuda" else None
    if ctx.world > 1:
        model = ctx.wrap(model)
    fwd = torch.compile(model) if compile else model
    if ctx.world > 1:  # same init everywhere (above), but each rank its own dropout masks
        torch.manual_seed(seed * 1000 + 17 + ctx.rank)

    gen_order = torch.Generator().manual_seed(seed)  # data order: identical on every rank
    gen_aug = torch.Generator(device=device).manual_seed(seed * 1000 + 1 + ctx.rank)
    N = len(D["y_train"])
    perm, pos = torch.randperm(N, generator=gen_order).to(device), 0
    acc = torch.zeros(4, device=device, dtype=torch.float64)  # loss sum, error sum, count, first bad step
    acc[3] = -1
    history = {"train": [], "test": []}
    start, elapsed, status, fail = 0, 0.0, "running", None

    ckpt_path = Path(checkpoint_dir) / f"{run_name(cfg)}.pt" if checkpoint_dir else None
    if checkpoint_every is None:
        checkpoint_every = eval_every
    checkpoint_every = max(log_every, math.ceil(checkpoint_every / log_every) * log_every)
    if resume and ckpt_path is not None and ckpt_path.exists():
        ck = load_checkpoint(ckpt_path, chash, ctx.world)
        try:
            raw.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
        except (RuntimeError, ValueError, KeyError) as e:
            raise CheckpointError(f"checkpoint {ckpt_path} does not fit this model/optimizer ({e}); it was "
                                  f"written by a different recipe or library version: delete it or run "
                                  f"without --resume") from e
        if scaler is not None and ck.get("scaler"):
            scaler.load_state_dict(ck["scaler"])
        torch.set_rng_state(ck["rng"]["torch"][ctx.rank])
        if device.type == "cuda" and ck["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(ck["rng"]["cuda"][ctx.rank], device)
        gen_order.set_state(ck["rng"]["order"])
        gen_aug.set_state(ck["rng"]["augment"][ctx.rank])
        perm, pos = ck["data"]["perm"].to(device), ck["data"]["pos"]
        acc = ck["acc"].to(device)
        history, start, elapsed = ck["history"], ck["step"], ck["elapsed"]
        status, fail = ck.get("status", "running"), ck.get("fail")
        if ctx.rank == 0 and progress:
            print(f"resumed {ckpt_path} at step {start}/{total}", flush=True)

    def checkpoint(step):
        if ckpt_path is None:
            return
        aug_states = ctx.gather_object(gen_aug.get_state())
        torch_states = ctx.gather_object(torch.get_rng_state())
        cuda_states = ctx.gather_object(torch.cuda.get_rng_state(device)) if device.type == "cuda" else None
        if ctx.rank == 0:
            save_checkpoint(ckpt_path, {
                "format": 1, "config": cfg, "config_hash": chash, "world_size": ctx.world, "step": step,
                "model": raw.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": {"kind": "pure function of the step (recipes.lr_at)", "step": step},
                "scaler": scaler.state_dict() if scaler is not None else None,
                "rng": {"torch": torch_states, "cuda": cuda_states, "order": gen_order.get_state(),
                        "augment": aug_states},
                "data": {"perm": perm.cpu(), "pos": pos}, "acc": acc.cpu(), "history": history,
                "elapsed": elapsed, "status": status, "fail": fail})

    from tqdm.auto import tqdm
    bar = tqdm(total=total, initial=start, disable=not progress or ctx.rank != 0, dynamic_ncols=True,
               desc=f"{cfg['experiment']}/{cfg['variant']}/{cfg['scale']}")
    aug = cfg.get("augment") or None
    grace = max(int(cfg["divergence"]["grace_fraction"] * total), 2 * log_every)
    chance_err = 1.0 - 1.0 / C
    stop = total if max_steps is None else min(total, max_steps)
    model.train()
    t_window, imgs_window = time.perf_counter(), 0
    step = start
    while status == "running" and step < stop:
        lr = lr_at(cfg["schedule"], step)
        for g in opt.param_groups:
            g["lr"] = lr
        if pos + B > N:  # new epoch (the last partial batch is dropped)
            perm, pos = torch.randperm(N, generator=gen_order).to(device), 0
        idx = perm[pos:pos + B][ctx.rank::ctx.world]
        pos += B
        x = _batch(D, idx, aug, gen_aug, cl)
        y = D["y_train"][idx]
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            out = fwd(x)
            loss = F.cross_entropy(out.float(), y)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        with torch.no_grad():
            l = loss.detach().double()
            acc[0] += l * len(y)
            acc[1] += (out.detach().argmax(1) != y).sum()
            acc[2] += len(y)
            acc[3] = torch.where(~torch.isfinite(l) & (acc[3] < 0), float(step), acc[3])
        imgs_window += len(y) * ctx.world
        step += 1

        if step % log_every == 0 or step == total:
            a = acc.clone()
            ctx.all_reduce(a[:3])
            ctx.all_reduce_max(a[3:])
            loss_sum, err_sum, n, bad = a.tolist()
            acc.zero_()
            acc[3] = -1
            now = time.perf_counter()
            dt = max(now - t_window, 1e-9)
            elapsed += dt
            rec = {"step": step, "train_loss": loss_sum / max(n, 1), "train_err": err_sum / max(n, 1),
                   "lr": lr, "img_per_s": imgs_window / dt, "wall_s": elapsed}
            history["train"].append(rec)
            t_window, imgs_window = now, 0
            if bad >= 0:
                status, fail = "fail", {"step": int(bad), "reason": "non-finite training loss"}
            elif step > grace and rec["train_err"] >= chance_err - cfg["divergence"]["chance_margin"]:
                status, fail = "fail", {"step": step, "reason": f"training error {rec['train_err']:.3f} still at "
                                                                f"chance ({chance_err:.3f}) after {step} steps"}
            if status == "running" and (step % eval_every == 0 or step == total):
                tl, te = evaluate(raw, D, dtype, cl, device, ctx)
                history["test"].append({"step": step, "test_loss": tl, "test_err": te})
                t_window = time.perf_counter()  # evaluation is kept out of img/s and wall_s
            bar.update(step - bar.n)
            bar.set_postfix(loss=f"{rec['train_loss']:.3f}", err=f"{rec['train_err']:.3f}",
                            img_s=f"{rec['img_per_s']:.0f}")
            if on_log is not None and ctx.rank == 0:
                on_log(history)
            if step == total and status == "running":
                status = "ok"
        if status != "running" or step % checkpoint_every == 0 or step == stop:
            checkpoint(step)  # a stop between logs keeps the window's device-side sums in the checkpoint
    bar.close()
    if status == "running":
        return {"status": "stopped", "step": step, "config": cfg, "config_hash": chash, "history": history,
                "checkpoint": str(ckpt_path) if ckpt_path else None}

    final = {"train_loss": history["train"][-1]["train_loss"], "train_err": history["train"][-1]["train_err"],
             "steps": step, "wall_s": elapsed,
             "img_per_s": sum(r["img_per_s"] for r in history["train"][1:]) / max(len(history["train"]) - 1, 1)}
    if history["test"] and history["test"][-1]["step"] == step:  # a test error from before a failure is no final
        final.update(test_err=history["test"][-1]["test_err"], test_loss=history["test"][-1]["test_loss"])
    ks = gates(raw)
    if ks:
        final["gates_k"] = [float(k.detach()) for k in ks]
    result = {"config": cfg, "config_hash": chash, "status": status, "fail": fail, "final": final,
              "history": history, "seed": seed, "dataset_source": D["source"],
              "precision": str(dtype).replace("torch.", "") if dtype else "float32", "channels_last": cl,
              "compiled": bool(compile), "deterministic": bool(deterministic),
              **provenance(device, ctx.world)}
    if ctx.world > 1:
        result["ddp"] = {"world_size": ctx.world, "backend": ctx.backend,
                         "replicas_in_sync": ctx.params_in_sync(raw)}
    if write_result and ctx.rank == 0:
        result["path"] = str(save_result(result, out_dir))
    return result
