"""How long a full recipe takes, before you start it: measured where a lent GPU measured it, derived
and labelled where not.

A lent H200 measured ResNet-110 and ResNet-1001 (``tools/gpu_session.sh``;
``data/gpu/<date>-h200/modes.json``: images per second of one run with the whole step as one CUDA
graph). A T4 (Colab's free GPU) has not been measured: these CIFAR ResNets are bound by memory
traffic and kernel launches, not arithmetic, so its time is derived from the H200's by the ratio of
their memory bandwidths -- an estimate, and labelled one. A CPU's time is derived from the recorded
CPU-scale runs of the same network (the same model config): their median cost per step (training
wall time x threads) times the recipe's steps, per core -- also an estimate, and labelled one.
"""
from __future__ import annotations

import json
from pathlib import Path

from idmap_lib.engine import paths
from idmap_lib.engine.results import RESULTS_DIR, core_seconds, load_results
from idmap_lib.models.networks import cifar_block

GPU_DIR = paths.GPU
H200_TB_S, T4_TB_S = 4.8, 0.32  # HBM3e of an H200; GDDR6 of a T4 (the vendors' data sheets)


def h200_measured(gpu_dir=None) -> dict:
    """{depth: (img/s of one run with the CUDA graph, the folder it was measured in)}, newest
    measurement first."""
    out = {}
    for f in sorted((gpu_dir or GPU_DIR).glob("*h200*/modes.json"), reverse=True):
        for depth, modes in json.loads(f.read_text()).items():
            if "cuda_graph" in modes:
                out.setdefault(int(depth), (modes["cuda_graph"]["img_per_s_total"], f.parent.name))
    return out


def _measured_net(cfg) -> int | None:
    """The depth whose H200 pace applies to this config: a full-width CIFAR ResNet of a measured
    depth."""
    kw = cfg["model"]["kwargs"]
    if cfg["model"]["builder"] != "cifar_resnet" or kw.get("width_scale", 1) != 1:
        return None
    return kw["depth"] if cifar_block(kw["depth"],
                                      kw.get("block")) == cifar_block(kw["depth"], None) else None


def _network(cfg) -> tuple:
    """What sets a step's cost: the builder, depth, block (as built: a CIFAR ResNet's default made
    explicit) and widths -- not the unit, shortcut or gate, which cost about the same."""
    kw = cfg["model"]["kwargs"]
    block = (cifar_block(kw["depth"], kw.get("block")) if cfg["model"]["builder"] == "cifar_resnet"
             else None)
    return (cfg["model"]["builder"], kw.get("depth"), block, kw.get("width_scale", 1),
            kw.get("widen"), kw.get("d"),
            kw.get("width"))


# results folder -> (its mtime, {(network, batch): [core-seconds per step of each run]})
_PACES: dict = {}


def _paces(out_dir=None) -> dict:
    """Every recorded run's cost per step (training wall time x threads / steps), by network and
    batch; read again only when the folder changed. A stacked or fused run's wall time is its whole
    stack's: left out."""
    folder = Path(out_dir or RESULTS_DIR)
    stamp = folder.stat().st_mtime_ns if folder.is_dir() else None
    if _PACES.get(folder, (None,))[0] != stamp or stamp is None:
        paces = {}
        for r in load_results(folder) if stamp else []:
            if core_seconds(r) and r["final"].get("steps") and not ("stacked" in r or "fused" in r):
                paces.setdefault((_network(r["config"]), r["config"]["batch_size"]), []).append(
                    core_seconds(r) / r["final"]["steps"])
        _PACES[folder] = (stamp, paces)
    return _PACES[folder][1]


def cpu_core_hours(cfg, out_dir=None) -> tuple[float, int] | None:
    """(core-hours the full recipe would take on a CPU, how many recorded runs that rests on): the
    median cost per step of the recorded runs of the same network and batch at any scale (each
    trained alone), times the recipe's steps; None if no run of that network is recorded."""
    import statistics

    per_step = _paces(out_dir).get((_network(cfg), cfg["batch_size"]))
    if not per_step:
        return None
    return statistics.median(per_step) * cfg["steps"] / 3600, len(per_step)


DERIVED = ("* derived, not measured: a T4's time from the H200's by the ratio of their memory "
           "bandwidths (x{ratio:g}; these nets are bound by memory traffic and kernel launches); a "
           "CPU's from the median pace of the recorded runs of the same network (training wall "
           "time x threads per step)")


def derived_note() -> str:
    """The footnote every table of full_recipe_time's entries carries: how the starred times are
    derived."""
    return DERIVED.format(ratio=H200_TB_S / T4_TB_S)


def full_recipe_time(cfg, gpu_dir=None, out_dir=None) -> str:
    """'H200 11.6 min (measured 2026-11-30); T4 ~2.9 h*; CPU ~30 h at 1 thread*' -- each part only
    where it can be said, a star where it is derived (``derived_note``)."""
    parts = []
    pace = h200_measured(gpu_dir).get(_measured_net(cfg))
    if pace is None:
        parts.append("GPU: not measured yet")
    else:
        img_s, where = pace
        minutes = cfg["steps"] * cfg["batch_size"] / img_s / 60
        # the folder data/gpu/<date>-h200: its date
        day = where[:10] if where[:4].isdigit() else where
        parts.append(f"H200 {_words(minutes)} (measured {day}); T4 "
                     f"~{_words(minutes * H200_TB_S / T4_TB_S)}*")
    cpu = cpu_core_hours(cfg, out_dir)
    if cpu is not None:
        parts.append(f"CPU ~{_words(cpu[0] * 60)} at 1 thread*")
    return "; ".join(parts)


def _words(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def _threads(n) -> str:
    return f"{n} thread{'' if n == 1 else 's'}"


def runs_took(runs) -> str:
    """How long the recorded runs of one table took, in the words prose uses, read from those runs
    themselves: '2.7 min for its 2 runs together, at 1 thread (2026-11-30)' where they trained
    together (one exercise, the record's ``exercise.wall_s_together``), else the sum of their
    training times, '5.2 min for its 2 runs one after the other'. `runs`: {name: a run's record, or
    None where not run}."""
    done = [r for r in (runs.values() if isinstance(runs, dict) else runs) if r]
    if not done:
        raise ValueError("no recorded run to time: run the exercise first")
    together = {(r.get("exercise") or {}).get("wall_s_together") for r in done}
    threads = sorted({(r.get("hardware") or {}).get("torch_threads") for r in done} - {None})
    days = sorted({str(r.get("date", ""))[:10] for r in done} - {""})
    n = f"{len(done)} run{'' if len(done) == 1 else 's'}"
    if len(together) == 1 and None not in together:
        what = f"{_words(together.pop() / 60)} for its {n} together"
    else:
        what = (f"{_words(sum(r['final']['wall_s'] for r in done) / 60)} for its {n} one after the "
                f"other")
    at = f", at {' or '.join(_threads(t) for t in threads)}" if threads else ""
    return what + at + (f" ({', '.join(days)})" if days else "")


def timed_alone(measured: dict) -> str:
    """A dedicated timing of a whole exercise (``checks.ablations.time_exercises``: one seed trained
    alone, as the notebook trains it), in words that say how and when: '0.7 min timed alone at 2
    threads (a 2-core AMD EPYC, 2026-12-02)'. `measured`: {"s", "torch_threads", "cpu", "cpu_count",
    "date"}."""
    missing = {"s", "torch_threads", "date"} - set(measured or {})
    if missing:
        raise ValueError(f"a timing needs {sorted(missing)}: time it with `python -m "
                         f"idmap_class time`")
    where = ", ".join(p for p in (f"a {measured['cpu_count']}-core {measured['cpu']}"
                                  if measured.get("cpu") else "",
                                  str(measured["date"])[:10]) if p)
    return (f"{_words(measured['s'] / 60)} timed alone at {_threads(measured['torch_threads'])} "
            f"({where})")
