"""The benchmarks, outside the library: they time it (``trainer.train``, its one entry) and never
train a recorded run.

``versus_naive``: this engine vs a naive training loop, same model, same data, same number of steps.

(a) the engine (trainer.train): uint8 dataset on the device, batched on-device crop/flip, autocast
    (bf16 where supported), channels_last, device-side loss sums read every `log_every` steps;
(b) the usual loop: a torchvision Dataset (torchvision's own CIFAR10 when downloaded into data/,
    else the same uint8 arrays served exactly as torchvision.datasets.CIFAR10 does: PIL image per
    item) + DataLoader with PIL transforms (RandomCrop(32, padding=4), RandomHorizontalFlip,
    ToTensor, Normalize), fp32, NCHW, ``loss.item()`` every step.

Each runs in its own fresh process (so peak memory is its own). Prints images/s of each (median and
per-window figures: on a shared CPU other load makes single figures unreliable), their ratio, peak
memory, and the projected wall time of the full ResNet-110 recipe (64k iterations x 128) measured
with the engine on this device.

    python tools/bench.py [--steps 30] [--depth 20] [--data PATH] [--workers 2]
    python tools/bench.py --modes | --stacked [--depth 100] | --fused N[,N..] [--json PATH]
    (``python -m idmap_lib bench ...`` is the same command)

``modes`` (``--modes``) measures the engine's own options against each
other at the full recipes' batch: eager, one CUDA graph per step, and two runs sharing the device
(``trainer.train``), for ResNet-110 and ResNet-1001, with the projected time of each full
recipe (64k iterations).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import time

import torchvision
from PIL import Image

from idmap_lib.engine import data as data_mod
from idmap_lib.engine.build import build_model
from idmap_lib.engine.data import load
from idmap_lib.engine.device import format_duration, pick_device
from idmap_lib.engine.fused import Fused
from idmap_lib.engine.loop import GRAPH_WARMUP
from idmap_lib.engine.recipes import MNIST_KINDS, config, mnist_configs
from idmap_lib.engine.results import provenance
from idmap_lib.engine.schedule import step_schedule
from idmap_lib.engine.stacked import Stacked
from idmap_lib.engine.trainer import train
from idmap_lib.models.networks import cifar_block


# steps per timing window; the median window is reported (the CPU here is shared and noisy)
WINDOW = 5


def _peak_rss_mb(children=False):
    r = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF).ru_maxrss
    return r / 1024  # Linux: KiB


def block_for(depth: int) -> str:
    """The block Paper A uses at this depth: bottleneck for ResNet-164 and -1001, basic
    otherwise."""

    return cifar_block(depth)[0]


def _engine(depth, steps, warmup, batch_size, data, device, compile, cuda_graph=False,
            unit="full_preact"):
    import torch

    cfg = config("a_table2_activations", "full_preact-110", "cpu")
    cfg["model"]["kwargs"].update(depth=depth, unit=unit, block=block_for(depth))
    total = warmup + steps
    cfg.update(steps=total, batch_size=batch_size, log_every=WINDOW, eval_every=10 ** 9,
               subset={"train_per_class": 5000, "test_per_class": 10},  # all 50k training images
               schedule=step_schedule(total, 0.1, 10, milestones=[]))
    cfg["divergence"] = {"grace_fraction": 1.0, "chance_margin": 0.0}
    dev = pick_device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    r = train(cfg, data=data, device=dev, progress=False, write_result=False, compile=compile,
              cuda_graph=cuda_graph)
    rates = [h["img_per_s"] for h in r["history"]["train"] if h["step"] > warmup]
    out = {"img_per_s": statistics.median(rates), "img_per_s_windows": rates,
           "precision": r["precision"],
           "channels_last": r["channels_last"], "cuda_graph": r["cuda_graph"],
           "peak_rss_mb": _peak_rss_mb(), "device": str(dev),
           "final_loss": r["final"]["train_loss"]}
    if dev.type == "cuda":
        out["peak_gpu_mb"] = torch.cuda.max_memory_allocated(dev) / 2 ** 20
    return out


class ArrayCIFAR(torchvision.datasets.VisionDataset):
    """torchvision.datasets.CIFAR10's __getitem__ (a PIL image per item) over the same uint8
    arrays."""

    def __init__(self, x, y, transform):
        super().__init__(None, transform=transform)
        self.data, self.targets = x.permute(0, 2, 3, 1).numpy(), y.tolist()

    def __getitem__(self, i):
        return self.transform(Image.fromarray(self.data[i])), self.targets[i]

    def __len__(self):
        return len(self.data)


def _naive(depth, steps, warmup, batch_size, data, device, workers):
    import numpy as np
    import torch
    import torch.nn.functional as F
    import torchvision
    import torchvision.transforms as T
    from PIL import Image

    dev = pick_device(device)
    d = data_mod.load("cifar10", data, verbose=False)
    mean, std = (t.flatten().tolist() for t in data_mod.normalization("mean_std", d.x_train))
    tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(mean, std)])
    if d.source["kind"] == "torchvision":
        ds = torchvision.datasets.CIFAR10(d.source["root"], train=True, transform=tf)
    else:
        ds = ArrayCIFAR(d.x_train, d.y_train, tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True,
                                         num_workers=workers,
                                         drop_last=True, pin_memory=dev.type == "cuda",
                                         persistent_workers=workers > 0)
    torch.manual_seed(0)
    model = build_model({"builder": "cifar_resnet",
                         "kwargs": {"depth": depth, "unit": "full_preact",
                                    "block": block_for(depth)}}).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    model.train()
    it, losses, rates = iter(loader), [], []
    for step in range(warmup + steps):
        if step >= warmup and (step - warmup) % WINDOW == 0:
            if step > warmup:
                rates.append(WINDOW * batch_size / (time.perf_counter() - t0))
            t0 = time.perf_counter()
        x, y = next(it)
        x, y = x.to(dev), y.to(dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())  # the usual per-step host sync
    rates.append(WINDOW * batch_size / (time.perf_counter() - t0))
    out = {"img_per_s": statistics.median(rates), "img_per_s_windows": rates,
           "precision": "float32", "channels_last": False,
           "peak_rss_mb": _peak_rss_mb(), "peak_rss_workers_mb": _peak_rss_mb(children=True),
           "device": str(dev), "final_loss": float(np.mean(losses[-5:])), "num_workers": workers}
    if dev.type == "cuda":
        out["peak_gpu_mb"] = torch.cuda.max_memory_allocated(dev) / 2 ** 20
    del it, loader
    return out


def _child(fn, kwargs, q):
    import torch
    if torch.device(kwargs.get("device") or "cpu").type == "cpu" and not torch.cuda.is_available():
        torch.set_num_threads(min(torch.get_num_threads(), 2))
    q.put(fn(**kwargs))


def _in_process(fn, **kwargs):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(fn, kwargs, q))
    p.start()
    while True:
        try:
            out = q.get(timeout=5)
            break
        except Exception:  # queue.Empty: is the child still working?
            if not p.is_alive():
                raise RuntimeError(f"benchmark child {fn.__name__} died (exit code {p.exitcode}); "
                                   f"see its traceback above") from None
    p.join()
    return out


def versus_naive(steps=30, depth=20, batch_size=128, data=None, workers=2, device=None,
                 compile=False, cuda_graph=False, warmup=5, projection_steps=10):
    steps = max(WINDOW, steps // WINDOW * WINDOW)
    warmup = max(WINDOW, warmup // WINDOW * WINDOW)
    common = dict(depth=depth, steps=steps, warmup=warmup, batch_size=batch_size, data=data,
                  device=device)
    print(f"benchmark: CIFAR-10 pre-act ResNet-{depth}, batch {batch_size}, {steps} timed steps "
          f"after {warmup} warm-up steps, each loop in a fresh process; img/s = median over "
          f"windows of {WINDOW} steps", flush=True)
    a = _in_process(_engine, compile=compile, cuda_graph=cuda_graph, **common)
    print(f"(a) engine: {a['img_per_s']:8.1f} img/s  [{a['precision']}, "
          f"channels_last={a['channels_last']}, cuda_graph={a['cuda_graph']}, "
          f"{a['device']}]  peak RSS {a['peak_rss_mb']:.0f} MB"
          + (f", peak GPU {a['peak_gpu_mb']:.0f} MB" if "peak_gpu_mb" in a else ""), flush=True)
    b = _in_process(_naive, workers=workers, **common)
    print(f"(b) naive:  {b['img_per_s']:8.1f} img/s  [fp32, NCHW, DataLoader+PIL, {workers} "
          f"workers, .item() per step]  peak RSS {b['peak_rss_mb']:.0f} MB (+ workers "
          f"{b['peak_rss_workers_mb']:.0f} MB)"
          + (f", peak GPU {b['peak_gpu_mb']:.0f} MB" if "peak_gpu_mb" in b else ""), flush=True)
    print(f"    windows (img/s): engine {[round(r) for r in a['img_per_s_windows']]}, "
          f"naive {[round(r) for r in b['img_per_s_windows']]}", flush=True)
    ratio = a["img_per_s"] / b["img_per_s"]
    best = max(a["img_per_s_windows"]) / max(b["img_per_s_windows"])
    print(f"ratio engine / naive: {ratio:.2f}x (medians), {best:.2f}x (best windows: the least "
          f"disturbed by other load on a shared machine)", flush=True)
    p = _in_process(_engine, compile=compile, cuda_graph=cuda_graph,
                    **{**common, "depth": 110, "steps": projection_steps, "warmup": WINDOW})
    hours = 64000 * 128 / p["img_per_s"] / 3600
    print(f"ResNet-110 with the engine: {p['img_per_s']:.1f} img/s -> projected full Paper A "
          f"recipe (64k iterations x 128 = 8.19M images): {format_duration(hours * 3600)} on "
          f"{p['device']}", flush=True)
    return {"engine": a, "naive": b, "ratio": ratio, "ratio_best": best, "resnet110": p,
            "projected_resnet110_hours": hours}


def _rate(cfgs, steps, data, log, **kw):
    """Steady img/s of each run (median of its log windows after the first) over `steps` steps."""
    import torch

    cfgs = [dict(c, log_every=log, eval_every=10 ** 9) for c in cfgs]
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    rs = train(cfgs, data=data, max_steps=steps, progress=False, write_result=False, **kw)
    each = [statistics.median(h["img_per_s"] for h in r["history"]["train"][1:]) for r in rs]
    out = {"runs": len(cfgs), "steps": steps, "img_per_s_each": [round(e, 1) for e in each],
           "img_per_s_total": round(sum(each), 1), "wall_s": round(time.perf_counter() - t, 1)}
    if torch.cuda.is_available():
        out["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2 ** 20)
    return out


MODE_RUNS = {  # (experiment, variants) at the full recipe: the Table 2 pair and the Fig 1 pair
    110: ("a_table2_activations", ("full_preact-110", "original-110")),
    1001: ("a_table3_preact", ("c10-1001-full_preact", "c10-1001-original")),
}


def modes(data=None, depths=(110, 1001), steps=None, device=None):
    """Eager vs CUDA graph vs two runs at once on this device; returns {depth: {mode: rate}} and
    prints the projected minutes of one full recipe (and of the pair) for each."""

    steps = steps or {110: (60, 150), 1001: (16, 40)}
    report = {}
    for depth in depths:
        exp, variants = MODE_RUNS[depth]
        cfgs = [config(exp, v, "full") for v in variants]
        total, B = cfgs[0]["steps"], cfgs[0]["batch_size"]
        n_eager, n_graph = steps[depth]
        log = max(n_eager // 4, 4)
        r = {"eager": _rate(cfgs[:1], n_eager, data, log, device=device),
             "cuda_graph": _rate(cfgs[:1], n_graph, data, max(n_graph // 6, 4), device=device,
                                 cuda_graph=True),
             "cuda_graph_x2": _rate(cfgs, n_graph, data, max(n_graph // 6, 4), device=device,
                                    cuda_graph=True)}
        for mode, m in r.items():
            m["projected_full_min"] = round(total * B * m["runs"] / m["img_per_s_total"] / 60, 1)
            print(f"ResNet-{depth} {mode:14s} {m['img_per_s_total']:9.0f} img/s  -> {m['runs']} "
                  f"full recipe(s) ({total} steps of {B}) in {m['projected_full_min']:.1f} min  "
                  f"[{m}]", flush=True)
        report[depth] = r
    return report


def stacked(depth=100, seeds=(0, 1, 2), steps=40, data=None):
    """Paper B's MNIST grid at one depth: its plain/ResNet/GResNet runs one after another through
    the engine (``trainer.train``, its default precision) vs all of them as one stacked network
    (``stacked.py``), the same number of steps each; prints images/s and the ratio, both measured
    here and now."""
    import torch

    cfgs = mnist_configs(depth, seeds)
    data = load("mnist", data)
    log = max(steps // 4, 2)
    alone = {k: _rate([c], steps, data, log)["img_per_s_total"]
             for k, c in zip(MNIST_KINDS, cfgs[::len(seeds)])}
    s_alone = sum(len(seeds) * steps * c["batch_size"] / alone[c["model"]["kwargs"]["kind"]]
                  for c in cfgs[::len(seeds)])
    device = pick_device()
    s_stacked = _steps_only(cfgs, data, 3, steps, Stacked, device=device)
    n = len(cfgs) * steps * cfgs[0]["batch_size"]
    report = {"depth": depth, "runs": len(cfgs), "steps": steps, "threads": torch.get_num_threads(),
              "alone_img_per_s": {k: round(v) for k, v in alone.items()},
              "alone_img_per_s_total": round(n / s_alone),
              "stacked_img_per_s_total": round(n / s_stacked),
              "speedup": round(s_alone / s_stacked, 2), **provenance(device)}
    print(f"MNIST d={depth}: {len(cfgs)} runs one after another {report['alone_img_per_s_total']} "
          f"img/s, stacked {report['stacked_img_per_s_total']} img/s -> "
          f"{report['speedup']}x", flush=True)
    return report


def _steps_only(cfgs, data, warmup, steps, stepper, **kw) -> float:
    """Seconds `steps` training steps of `cfgs` trained by `stepper` take after `warmup` ones
    (``trainer.train``, timed from ``on_step``): no log window, evaluation or checkpoint inside the
    timing."""
    cfgs, t = [dict(c, log_every=10 ** 9, eval_every=10 ** 9) for c in cfgs], {}

    def clock(loop):
        if loop.step in (warmup, warmup + steps):
            float(loop.acc.sum())  # wait for the device
            t[loop.step] = time.perf_counter()

    train(cfgs, data, stepper=stepper, max_steps=warmup + steps, progress=False,
          write_result=False, on_step=clock, **kw)
    return t[warmup + steps] - t[warmup]


def grouped_conv(n=4, batch=128, reps=20, device=None):
    """ResNet-110's 3x3 convolutions (16/32/64 channels at 32/16/8 pixels), N separate convolutions
    vs one grouped convolution over the N models' channels (what a fused network runs); forward
    only."""
    import torch
    import torch.nn.functional as F

    dev = pick_device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    out = {}
    for c, hw in ((16, 32), (32, 16), (64, 8)):
        xs = [torch.randn(batch, c, hw, hw, device=dev, dtype=dtype) for _ in range(n)]
        ws = [torch.randn(c, c, 3, 3, device=dev, dtype=dtype) for _ in range(n)]
        xg, wg = torch.cat(xs, 1), torch.cat(ws, 0)

        def separate():
            return [F.conv2d(x, w, padding=1) for x, w in zip(xs, ws)]

        def grouped():
            return F.conv2d(xg, wg, padding=1, groups=n)

        t = {}
        for name, fn in (("separate", separate), ("grouped", grouped)):
            fn()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t[name] = (time.perf_counter() - t0) / reps
        out[f"{c}ch_{hw}px"] = {"separate_ms": round(t["separate"] * 1e3, 3),
                                "grouped_ms": round(t["grouped"] * 1e3, 3),
                                "speedup": round(t["separate"] / t["grouped"], 2)}
        print(f"3x3 conv, {c} channels at {hw}x{hw}, batch {batch}, N = {n}: separate "
              f"{t['separate'] * 1e3:.2f} ms, grouped {t['grouped'] * 1e3:.2f} ms -> "
              f"{t['separate'] / t['grouped']:.2f}x",
              flush=True)
    return out


def fused(depth=20, ns=(4,), steps=20, warmup=3, experiment="a_table2_activations",
          variant="full_preact-110",
          scale="cpu", data=None, device=None, cuda_graph=False):
    """N seeds of one network one after another (each through the engine, ``trainer.train``) vs the
    N as one fused network (``fused.py``), the same steps each, measured here and now; the recipe's
    batch, its network at `depth`. Returns the img/s of each and their ratio (printed). On a CPU the
    default is ResNet-20, N = 4; a GPU window runs ResNet-110 at N = 1, 2, 4, 8 (the full recipe's
    batch) with ``cuda_graph``."""
    import torch


    def cfg_for(seed):
        c = config(experiment, variant, scale, seed)
        c["model"]["kwargs"].update(depth=depth, block=block_for(depth))
        return c

    data = load(cfg_for(0)["dataset"], data)
    solo = _rate([cfg_for(0)], warmup + steps, data, max((warmup + steps) // 4, 1), device=device,
                 cuda_graph=cuda_graph)["img_per_s_total"]
    report = {"depth": depth, "steps": steps, "batch_size": cfg_for(0)["batch_size"],
              "threads": torch.get_num_threads(),
              "one_after_another_img_per_s": solo, "fused": {}}
    for n in ns:
        # (the warm-up: and the graph's capture)
        rate = n * steps * cfg_for(0)["batch_size"] / _steps_only(
            [cfg_for(s) for s in range(n)], data, warmup + (GRAPH_WARMUP if cuda_graph else 0),
            steps, Fused, device=device, cuda_graph=cuda_graph)
        report["fused"][n] = {"img_per_s_total": round(rate, 1), "ratio": round(rate / solo, 2)}
        print(f"ResNet-{depth}, N = {n}: one after another {solo:.0f} img/s, fused {rate:.0f} "
              f"img/s in all -> {rate / solo:.2f}x", flush=True)
    report.update(provenance(pick_device(device)))
    return report


def main(argv=None) -> int:
    b = argparse.ArgumentParser(prog="tools/bench.py",
                                description="this engine vs a naive DataLoader loop, same model "
                                            "and data; or --modes, --stacked, --fused")
    b.add_argument("--steps", type=int, default=30)
    b.add_argument("--depth", type=int, default=None, help="default 20 (--stacked: 100)")
    b.add_argument("--batch-size", type=int, default=128)
    b.add_argument("--data", default=None)
    b.add_argument("--workers", type=int, default=2)
    b.add_argument("--device", default=None)
    b.add_argument("--compile", action="store_true")
    b.add_argument("--cuda-graph", action="store_true")
    b.add_argument("--modes", action="store_true",
                   help="instead: eager vs CUDA graph vs two runs at once, "
                        "ResNet-110 and ResNet-1001 at the full recipe's batch")
    b.add_argument("--stacked", action="store_true",
                   help="instead: Paper B's MNIST runs of one depth (--depth, "
                        "default 100) one after another vs stacked")
    b.add_argument("--fused", default=None, metavar="N[,N..]",
                   help="instead: N seeds of ResNet-DEPTH (default 20) "
                        "one after another vs fused (engine/fused.py)")
    b.add_argument("--json", default=None,
                   help="with --modes, --stacked or --fused: also write the report here")
    args = b.parse_args(argv)
    if not (args.modes or args.stacked or args.fused):
        versus_naive(steps=args.steps, depth=args.depth or 20, batch_size=args.batch_size,
                     data=args.data, workers=args.workers, device=args.device,
                     compile=args.compile, cuda_graph=args.cuda_graph)
        return 0
    if args.fused:
        report = fused(depth=args.depth or 20, ns=[int(n) for n in args.fused.split(",")],
                       steps=args.steps, data=args.data, device=args.device,
                       cuda_graph=args.cuda_graph)
    else:
        report = modes(data=args.data, device=args.device) if args.modes else \
            stacked(depth=args.depth or 100, steps=args.steps, data=args.data)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
