"""How long a full recipe takes, before you start it: measured where a lent GPU measured it, derived and
labelled where not (issue 22).

A lent H200 measured ResNet-110 and ResNet-1001 (``tools/gpu_session.sh``; ``data/gpu/<date>-h200/modes.json``:
images per second of one run with the whole step as one CUDA graph). A T4 (Colab's free GPU) has not been
measured: these CIFAR ResNets are bound by memory traffic and kernel launches, not arithmetic, so its time is
derived from the H200's by the ratio of their memory bandwidths -- an estimate, and labelled one.
"""
from __future__ import annotations

import json

from ..engine.data import DEFAULT_ROOT

GPU_DIR = DEFAULT_ROOT / "gpu"
H200_TB_S, T4_TB_S = 4.8, 0.32  # HBM3e of an H200; GDDR6 of a T4 (the vendors' data sheets)


def h200_measured(gpu_dir=None) -> dict:
    """{depth: (img/s of one run with the CUDA graph, the folder it was measured in)}, newest measurement first."""
    out = {}
    for f in sorted((gpu_dir or GPU_DIR).glob("*h200*/modes.json"), reverse=True):
        for depth, modes in json.loads(f.read_text()).items():
            if "cuda_graph" in modes:
                out.setdefault(int(depth), (modes["cuda_graph"]["img_per_s_total"], f.parent.name))
    return out


def _measured_net(cfg) -> int | None:
    """The depth whose H200 pace applies to this config: a full-width CIFAR ResNet of a measured depth."""
    from ..models.networks import cifar_block

    kw = cfg["model"]["kwargs"]
    if cfg["model"]["builder"] != "cifar_resnet" or kw.get("width_scale", 1) != 1:
        return None
    return kw["depth"] if cifar_block(kw["depth"], kw.get("block")) == cifar_block(kw["depth"], None) else None


def full_recipe_time(cfg, gpu_dir=None) -> str:
    """'H200 11.6 min (measured 2026-11-30-h200); T4 ~2.9 h (derived: H200 x 15, memory bandwidth)', or what is
    not measured."""
    pace = h200_measured(gpu_dir).get(_measured_net(cfg))
    if pace is None:
        return "not measured on a GPU yet"
    img_s, where = pace
    minutes = cfg["steps"] * cfg["batch_size"] / img_s / 60
    ratio = H200_TB_S / T4_TB_S
    return (f"H200 {_words(minutes)} (measured, {where}); T4 ~{_words(minutes * ratio)} (derived: H200 x "
            f"{ratio:g}, the ratio of their memory bandwidths; not measured)")


def _words(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"
