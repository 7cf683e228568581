"""A variant on the page: its table over seeds beside the paper's number (``variant_table``, with the reader's own
runs where they trained it), and what it trains at each scale, in words (``scale_text``) and setting by setting
(``scale_differences``). The variants themselves are recipes (engine/recipes.py).
"""
from __future__ import annotations

from ..engine import recipes, results
from . import paper_numbers
from .metrics import final_test_err, final_train_loss, steps_to_80
from .reports import net_name
from .rule import ALL_SEEDS, SEEDS
from .runs import seed_runs, seeds_command, your_results
from .tables import drop_if_empty, mean_sd


def variant_table(experiment, variants=None, scale="cpu", seeds=ALL_SEEDS, results_dir=None, yours=None):
    """One row per variant: the network that trains, the paper's number (labelled), and ours over seeds
    (mean ± sd, and each seed's test error): test error, final training loss, steps to a training error below
    80 %; seeds found, failed runs, the command for the missing seeds; and, where the reader has trained the
    variant (``live.train_live``, runs folder `yours`), their own test error, marked as theirs."""
    import pandas as pd

    variants = variants or list(recipes.EXPERIMENTS[experiment]["variants"])
    src = paper_numbers.source(experiment, variants) or paper_numbers.source(experiment)
    rows = []
    for v in variants:
        runs, missing = seed_runs(experiment, v, scale, seeds, results_dir)
        missing = [s for s in missing if s in SEEDS]  # more seeds are asked for only where 3 leave a claim open
        p = paper_numbers.paper_number(experiment, v) or {}
        paper = p.get("value", "–")
        rows.append({
            "variant": v, "network trained": net_name(recipes.config(experiment, v, scale)),
            f"paper: test error % ({src})": paper if isinstance(paper, str) else f"{paper:.2f}",
            "ours: test error %": mean_sd([final_test_err(r) for r in runs], 100),
            "ours, per seed": ", ".join(f"{100 * final_test_err(r):.1f}" for r in runs) or "–",
            "ours: final training loss": mean_sd([final_train_loss(r) for r in runs], digits=3),
            "ours: steps to train error < 80 %": mean_sd([steps_to_80(r) for r in runs], digits=0),
            "seeds": len(runs), "diverged": sum(r["status"] == "fail" for r in runs),
            "to run": seeds_command(experiment, v, missing, scale) if missing else ""})
        mine = your_results(experiment, v, scale, yours)
        if mine:  # the reader's own finished runs (live.train_live), beside the recorded seeds and the paper
            rows[-1]["yours: test error % (seed)"] = ", ".join(
                f"{100 * final_test_err(r):.1f} (seed {r['config']['seed']})" for r in mine)
    df = drop_if_empty(pd.DataFrame(rows).set_index("variant"), "to run")  # every seed recorded: nothing to run
    if "yours: test error % (seed)" in df:
        df["yours: test error % (seed)"] = df["yours: test error % (seed)"].fillna("–")
    df.attrs.update(experiment=experiment, scale=scale)
    return df


def scale_text(experiment, variant) -> str:
    """What the CPU-scale run of a variant trains, beside the paper's recipe, in words (from the configs)."""
    c, f = recipes.config(experiment, variant, "cpu"), recipes.config(experiment, variant, "full")
    n_train, n_test = DATASET_SIZES[c["dataset"]]

    def sched(cfg):
        s = cfg["schedule"]
        if s["kind"] == "constant":
            return f"lr {s['base']:g} throughout"
        if not s.get("warmup_steps"):
            warm = "lr "
        elif s.get("warmup") == "linear":
            warm = f"lr rising linearly from {s['warmup_lr']:g} over the first {s['warmup_steps']} steps to "
        else:
            warm = f"lr {s['warmup_lr']:g} for the first {s['warmup_steps']} steps, then "
        return f"{warm}{s['base']:g}, divided by {s['divisor']:g} at steps {', '.join(map(str, s['milestones']))}"

    def data(cfg):
        sub = cfg.get("subset")
        if not sub:
            return f"all {n_train:,} training images (test: {n_test:,})"
        return f"{10 * sub['train_per_class']:,} training images (test: {10 * sub['test_per_class']:,})"

    ours = "unstated" in f.get("why", {}).get("steps", "")   # Paper B does not say how long it trained
    full = ("The full recipe (its length is ours: the paper does not state it)" if ours else "The paper")
    return (f"**{net_name(c)}**, {c['steps']:,} steps of batch {c['batch_size']} on {data(c)}, {sched(c)}. "
            f"{full}: **{net_name(f)}**, {f['steps']:,} steps of batch {f['batch_size']} on {data(f)}.")


DATASET_SIZES = {"cifar10": (50000, 10000), "cifar100": (50000, 10000), "mnist": (60000, 10000)}


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if k == "why" or (not prefix and k in results.LABELS):
            continue
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _short(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def scale_differences(experiment, variant, scales=recipes.SCALES):
    """Every setting in which the scales' configs of one variant differ, one row each (nested settings by their
    dotted path, e.g. ``schedule.warmup``; a setting a scale lacks is '–'), whole values, never cut."""
    import pandas as pd

    cfgs = {s: _flat(recipes.config(experiment, variant, s)) for s in scales}
    keys = [k for k in dict.fromkeys(k for c in cfgs.values() for k in c)
            if k != "subset" and len({repr(c.get(k, "–")) for c in cfgs.values()}) > 1]  # subset: by its parts
    absent = {"schedule.warmup": "step (the paper's)", "subset.": "all the data"}

    def value(s, k):
        if k in cfgs[s]:
            return _short(cfgs[s][k])
        return next((w for key, w in absent.items() if k.startswith(key)), "the builder's default")
    return pd.DataFrame({recipes.SCALE_WORDS[s]: [value(s, k) for k in keys] for s in scales},
                        index=pd.Index(keys, name="setting"))
