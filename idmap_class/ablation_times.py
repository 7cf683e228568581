"""What the ablation exercises measure and cost: the book's measurement of the seed spread
(``measure``), the exercises timed on this machine (``time_exercises``), the derived time on a T4
(``gpu_time``) and the overview table of chapter 06_ablations (``overview``)."""
from __future__ import annotations

import math
from pathlib import Path

from idmap_book import CLASSROOM_RUNS as BOOK_RUNS
from idmap_book.evidence.seeds import SEEDS, TIMING_SEED
from idmap_book.plan import run_times as rt
from idmap_book.plan.run_times import _threads, h200_measured
from .ablation_exercises import ABLATIONS, configs, final, mean_k, resolve_scale
from .ablation_grading import spread, spread_key, write_spread
from .ablation_runs import run

# ---- the book's measurement of the spread --------------------------------------------------------

def measure(names=None, seeds=SEEDS, out_dir=None, data=None, progress=False, scale="classroom"):
    """Run every ablation at `scale` (classroom or gpu) for each seed (recorded in `out_dir`, the
    book's data/classroom; trained only where missing) and write the seed spread (standard deviation
    over seeds) of every run's metrics and every numeric answer under ``spread_key(name, scale)``.
    An exercise whose gpu scale is its classroom scale is not written twice."""
    import statistics
    out = Path(out_dir or BOOK_RUNS)
    result = spread()
    for name in names or ABLATIONS:
        ab = ABLATIONS[name]
        if resolve_scale(name, scale) != scale:
            continue
        per_seed = [run(name, f"(the book's measurement of the seed spread, seed {s})", seed=s,
                        scale=scale,
                        out_dir=out, data=data, progress=progress) for s in seeds]
        runs_sp = {}
        for k in ab.runs:
            ms = {"train_loss": [final(p[k]) for p in per_seed],
                  "test_err": [p[k]["final"].get("test_err", float("nan")) for p in per_seed],
                  "wall_s": [p[k]["final"]["wall_s"] for p in per_seed]}
            for m in ("pruned_test_err", "pruned_random_test_err"):
                if m in per_seed[0][k]:
                    ms[m] = [p[k][m] for p in per_seed]
            if per_seed[0][k]["final"].get("gates_k"):
                ms["mean_k"] = [mean_k(p[k]) for p in per_seed]
            runs_sp[k] = {m: statistics.stdev(v) for m, v in ms.items()
                          if not any(map(math.isnan, v))}
            runs_sp[k]["mean"] = {m: statistics.mean(v) for m, v in ms.items()
                                  if not any(map(math.isnan, v))}
        truths = [ab.truth(p) for p in per_seed]
        answers_sp = {}
        for a in ab.answers:
            vals = [t[a] for t in truths]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                answers_sp[a] = statistics.stdev(vals)
        walls = [max(r.get("exercise", {}).get("wall_s_together") or r["final"]["wall_s"]
                     for r in p.values())
                 for p in per_seed]
        sk = spread_key(name, scale)
        result[sk] = {**result.get(sk, {}), "seeds": list(seeds), "runs": runs_sp,
                      "answers": answers_sp,
                      "exercise_wall_s": statistics.mean(walls), "exercise_wall_s_by_seed": walls,
                      "answers_by_seed": {a: [t[a] for t in truths] for a in ab.answers}}
    write_spread(result)
    return result




def time_exercises(names=None, data=None):
    """Train each exercise once as its notebook does (classroom scale, at the threads
    ``ablations.run`` picks on this machine: ``engine.device.cpu_threads``; one seed; runs in a
    scratch folder, then deleted) and record the wall time of the whole exercise, with the machine,
    threads and date, in :data:`SPREAD_FILE` (``notebook_wall``): the guide's times."""
    import tempfile

    result = spread()
    for name in names or ABLATIONS:
        with tempfile.TemporaryDirectory() as tmp:
            got = run(name, "(the book's timing of the exercise)", seed=TIMING_SEED,
                      scale="classroom", out_dir=tmp,
                      data=data, progress=False)
        r = next(iter(got.values()))
        hw = r.get("hardware", {})
        result.setdefault(name, {})["notebook_wall"] = {
            "s": r["exercise"]["wall_s_together"], "torch_threads": hw.get("torch_threads"),
            "cpu": hw.get("cpu"),
            "cpu_count": hw.get("cpu_count"), "measured_threads": hw.get("torch_threads"),
            "date": r["date"],
            "seed": TIMING_SEED}
        print(f"{name}: {r['exercise']['wall_s_together'] / 60:.1f} min at "
              f"{_threads(hw.get('torch_threads'))}", flush=True)
        write_spread(result)  # each as it lands
    return result


# ---- overview ------------------------------------------------------------------------------------

# Throughput assumed for a Colab T4 where no GPU has measured the network (an estimate, not a
# measurement: eager PyTorch, where a small net's step is bound by kernel launches and an MLP step
# by the optimizer's small kernels).
COLAB_IMG_PER_S = {"cifar_resnet": 4000.0, "mlp": 30000.0}
COLAB_OVERHEAD_S = 30.0  # data download and decoding, first CUDA kernels (assumed)
GPU_BUDGET_S = 120.0  # an exercise at its gpu scale takes <= 2 min on a T4


def t4_pace(cfg, h200=None) -> tuple[float, str]:
    """(images per second of one run of `cfg` on a T4, how it is known): derived from a lent H200's
    measured pace of the same network (`h200`: ``run_times.h200_measured()``, read here if not
    given) by the ratio of their memory bandwidths (``book.run_times``), else the assumed
    :data:`COLAB_IMG_PER_S`."""
    measured = (rt.h200_measured() if h200 is None else h200).get(rt._measured_net(cfg))
    if measured:
        return measured[0] / (rt.H200_TB_S / rt.T4_TB_S), (f"derived from the H200's pace measured "
                                                           f"{measured[1][:10]}")
    return COLAB_IMG_PER_S[cfg["model"]["builder"]], "estimated: no GPU has measured this network"


def gpu_time(name) -> dict:
    """{"s": seconds of the exercise at its gpu scale on a T4, "how": "derived" or "estimated",
    "basis": from what, "net": what trains, in a few words}."""
    cfgs, h200 = configs(name, 0, "gpu"), h200_measured()
    paces = [t4_pace(c, h200) for c in cfgs.values()]
    train = sum(c["steps"] * c["batch_size"] / p for c, (p, _) in zip(cfgs.values(), paces))
    basis = "; ".join(sorted({b for _, b in paces}))
    c0 = next(iter(cfgs.values()))
    net = (f"ResNet-{c0['model']['kwargs']['depth']}, {c0['steps']} steps"
           if c0["model"]["builder"] == "cifar_resnet"
           else "the classroom scale (Paper B's nets)")
    return {"s": COLAB_OVERHEAD_S + train, "how": basis.split(" ")[0].rstrip(":"), "basis": basis,
            "net": net}


def run_times(name):
    """{"cpu_s": the classroom scale measured as the notebook runs it, "gpu": ``gpu_time``} for one
    exercise."""
    sp = spread().get(name, {})
    # measured as the notebook runs it (time_exercises)
    cpu = (sp.get("notebook_wall") or {}).get("s")
    return {"cpu_s": cpu, "gpu": gpu_time(name), "runs": len(ABLATIONS[name].runs),
            "cpu_measured": sp.get("notebook_wall")}


def overview():
    """One row per ablation exercise: the chapter, how many runs, and their times at each scale."""
    import pandas as pd
    rows = []
    for name, ab in ABLATIONS.items():
        t = run_times(name)
        rows.append({"exercise": name, "paper": ab.paper, "chapter": int(ab.chapter.split("_")[0]),
                     "runs": t["runs"],
                     "CPU, 2 threads, timed alone (min)": t["cpu_s"] and t["cpu_s"] / 60,
                     "gpu scale": t["gpu"]["net"], "T4 (min)": t["gpu"]["s"] / 60,
                     "T4 time": t["gpu"]["how"]})
    return (pd.DataFrame(rows).style.format(precision=1, na_rep="not measured").hide(axis="index")
            .set_table_styles([{"selector": "", "props": "margin-left: 0; margin-right: auto;"},
                               {"selector": "td, th", "props": "text-align: left;"}]))
