"""How the book names and attributes a recorded run: the network that really trained, the command
that makes a run, the hardware and commit behind a number, and one provenance line per run (the
tables and curves of the chapters are in variants.py, verdicts.py, curves.py, full_recipe.py and
gate_figures.py)."""
from __future__ import annotations

from idmap_lib.engine import recipes, results
from idmap_lib.models.networks import cifar_block
from idmap_lib.models.registry import UNIT_ROWS


def command(experiment: str, variant: str, scale: str, seed: int = 0) -> str:
    """The command line that produces this run's result (``python -m idmap_lib train ...``)."""
    cmd = f"python -m idmap_lib train --experiment {experiment} --variant {variant} --scale {scale}"
    return cmd + (f" --seed {seed}" if seed else "")


def net_name(cfg: dict) -> str:
    """Name of the network a config really trains: ResNet-110 (basic), ResNet-1001 (bottleneck, 1/4
    width: 4/8/16 inside, 16/32/64 out; the paper's: 16/32/64 inside, 64/128/256 out), ResNet-32
    (basic, full pre-activation, gated) -- the unit named unless it is the original (Fig 4a) --,
    WRN-28-1, MLP gresnet d=10."""
    m, kw = cfg["model"]["builder"], cfg["model"]["kwargs"]
    if m == "cifar_resnet":
        block, _ = cifar_block(kw["depth"], kw.get("block"))
        scale = kw.get("width_scale", 1)
        width = ""
        # the channel counts that really trained: a bottleneck's inside and its output
        if scale != 1:
            frac = f"1/{round(1 / scale)}" if (1 / scale).is_integer() else f"{scale:g}x"
            inside = "/".join(str(int(w * scale)) for w in (16, 32, 64))
            out = "/".join(str(int(w * scale)) for w in (64, 128, 256))
            width = f", {frac} width: {inside} inside, {out} out" if block == "bottleneck" else \
                f", {frac} width: {inside}"
        block = "1-layer skip" if block == "single" else block
        row = UNIT_ROWS.get(kw.get("unit"))  # its unit in its row's words, where the name says it
        unit = f", {row.words}" if row and row.named else ""
        return f"ResNet-{kw['depth']} ({block}{width}{unit}{', gated' if kw.get('gated') else ''})"
    if m == "wide_resnet":
        return f"WRN-{kw['depth']}-{kw['widen']}{' gated' if kw.get('gated') else ''}"
    if m == "mlp":
        return f"MLP {kw['kind']} d={kw['d']}"
    return m


def hardware(result: dict) -> str:
    """'GPU name' or 'CPU name (N cores, T threads)' of a result (the threads its training used,
    where recorded: a run at 1 thread of 2 cores is twice as slow as the machine), with the process
    count under DDP."""
    hw = result.get("hardware", {})
    if hw.get("gpu"):
        name = hw["gpu"]
    else:
        t = hw.get("torch_threads")
        threads = f", {t} thread{'s' if t > 1 else ''}" if isinstance(t, int) else ""
        name = f"CPU {hw.get('cpu', '?')} ({hw.get('cpu_count', '?')} cores{threads})"
    world = hw.get("world_size", 1) or 1
    return f"{world} x {name}" if world > 1 else name


def commit(result: dict) -> str:
    """Short git commit of the library that produced a result ('+modified' if it had local
    changes)."""
    g = result.get("git") or {}
    c = (g.get("commit") or "unknown")[:7]
    return c + ("+modified" if g.get("library_modified") else "")


def lossy_copy(result: dict) -> bool:
    """Whether a result trained on a JPEG re-encoding of its dataset (the offline copy the book is
    built with: ``*-jpeg.tar.gz``), whose pixels are not the original images the papers trained
    on."""
    src = result.get("dataset_source") or {}
    return src.get("kind") == "local" and "jpeg" in str(src.get("path", "")).rsplit("/", 1)[-1]


LOSSY_NOTE = ("trained on the offline JPEG re-encoding of CIFAR-10 (lossy: fine detail and colour "
              "are lost), not the original images the paper used, so its final error is not the "
              "paper's to compare with; runs on one copy compare with each other")


def provenance_note(result: dict) -> str:
    """One line: hardware, torch version, seed, date, dataset source, commit."""
    src = result.get("dataset_source") or {}
    if src.get("kind") == "local":
        data = (f"local copy {src.get('path', '?').rsplit('/', 1)[-1]} (sha256 "
                f"{str(src.get('sha256'))[:12]})")
    elif src.get("kind") == "torchvision":
        data = f"torchvision {src.get('dataset', '')} download"
    else:
        data = str(src.get("kind", "unknown source"))
    v = result.get("versions") or {}
    return (f"{hardware(result)}, torch {v.get('torch', '?')}, {result.get('precision', '?')}, "
            f"seed {result.get('seed', (result.get('config') or {}).get('seed'))}, "
            f"{str(result.get('date', '?'))[:10]}, data: {data}, commit {commit(result)}")


def provenance_lines(out_dir=None) -> list[str]:
    """``provenance_note`` of every recorded run that trained one of today's recipes, one line each,
    named by the scale it is today."""
    lines = []
    for r in results.load_results(out_dir):
        c = r["config"]
        scale = recipes.recorded_scale(c)
        if scale:
            lines.append(f"{c['experiment']} / {c['variant']} / {scale} / seed {c['seed']}: "
                         f"{provenance_note(r)}")
    return lines
