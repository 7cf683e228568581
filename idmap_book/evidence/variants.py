"""A variant on the page: which ones each chapter shows (``SHOWN`` and its groups: chapters 7-10
read their lists here, never typing them again), its table over seeds beside the paper's number
(``variant_table``, with the reader's own runs where they trained it), and what it trains at each
scale, in words (``scale_text``) and setting by setting (``scale_differences``). The variants
themselves are recipes (engine/recipes.py).
"""
from __future__ import annotations

from idmap_lib.engine import recipes, results
# (train, test) images: variants.DATASET_SIZES
from idmap_lib.engine.data import SIZES as DATASET_SIZES
from idmap_lib.models.registry import SHORTCUT_ROWS, UNIT_ROWS
from . import paper_numbers
from .metrics import censored, final_test_err, final_train_loss, steps_to_80
from .reports import net_name
from .seeds import ALL_SEEDS, SEEDS
from .runs import seed_runs, seeds_command, your_results
from .tables import drop_if_empty, mean_sd

# Fig 4: Table 2's units (each with its row's number at 110 layers)
UNITS_110 = tuple(f"{unit}-110" for unit, row in UNIT_ROWS.items() if 110 in row.paper)
# against full pre-activation
LR_JUMP_OTHERS = ("original-110", "relu_preact-110", "relu_before_add-110")
# the units of the lr-jump claim (chapter 8's first figure)
LR_JUMP = ("full_preact-110",) + LR_JUMP_OTHERS
# Sec 4.2's pair, ResNet-164 (chapter 8)
PAIR_164 = ("original-164", "full_preact-164")
# Fig 1: ResNet-1001 (chapter 9)
DEPTH_1001 = ("c10-1001-original", "c10-1001-full_preact")
# Table 3: 1-layer residual units
SINGLE_110 = ("c10-110-single-original", "c10-110-single-full_preact")
# every variant an experiment chapter (7-10) shows, in its tables' order: what its claims compare
SHOWN = {
    "a_table1_shortcuts": tuple(recipes.EXPERIMENTS["a_table1_shortcuts"]["variants"]),
    "a_table2_activations": UNITS_110 + PAIR_164,
    "a_table3_preact": DEPTH_1001 + SINGLE_110,
    "b_resnet32": ("original", "gated", "gated-k_decay"),
    "b_wrn": ("plain", "gated", "gated-k_decay"),
    # the chapter "Why pre-activation helps": every unit and swap of the interventions
    # (synthesis.PROPERTIES' rows)
    "a_swaps": tuple(recipes.EXPERIMENTS["a_swaps"]["variants"]),
}
# chapter 7's figures: one curve for each kind of shortcut the text discusses, and the rows queued
# for the full recipe
T1_CURVES = ("original", "constant_scaling-0.5-1", "constant_scaling-0.5-0.5",
             "exclusive_gating-b0",
             "exclusive_gating-b-6", "shortcut_only_gating-b-6", "dropout-0.5")
T1_FULL = ("original", "exclusive_gating-b-6", "shortcut_only_gating-b-6")
# a Table 1 variant's kwargs that are not its shortcut's
NETWORK = ("depth", "unit", "shortcut", "num_classes", "block")


def variant_table(experiment, variants=None, scale="cpu", seeds=ALL_SEEDS, out_dir=None,
                  yours=None):
    """One row per variant: the network that trains, the paper's number (labelled), and ours over
    seeds (mean ± sd, and each seed's test error): test error, final training loss, steps to a
    training error below 80 %; seeds found, failed runs, the command for the missing seeds; and,
    where the reader has trained the variant (``live.train_live``, runs folder `yours`), their own
    test error, marked as theirs."""
    import pandas as pd

    variants = variants or list(recipes.EXPERIMENTS[experiment]["variants"])
    src = paper_numbers.source(experiment, variants) or paper_numbers.source(experiment)
    rows = []
    for v in variants:
        runs, missing = seed_runs(experiment, v, scale, seeds, out_dir)
        # more seeds are asked for only where 3 leave a claim open
        missing = [s for s in missing if s in SEEDS]
        rows.append({
            "variant": words(experiment, v),  # in words, never its key
            "network trained": net_name(recipes.config(experiment, v, scale)),
            f"paper: test error % ({src})": paper_numbers.printed(experiment, v),
            "ours: test error %": mean_sd([final_test_err(r) for r in runs], 100),
            "ours, per seed": ", ".join(f"{100 * final_test_err(r):.1f}" for r in runs) or "–",
            "ours: final training loss": mean_sd([final_train_loss(r) for r in runs], digits=3),
            "ours: steps to train error < 80 %": steps_text(runs),
            "seeds": len(runs), "diverged": sum(r["status"] == "fail" for r in runs),
            "to run": seeds_command(experiment, v, missing, scale) if missing else ""})
        mine = your_results(experiment, v, scale, yours)
        # the reader's own finished runs (live.train_live), beside the recorded seeds and the paper
        if mine:
            rows[-1]["yours: test error % (seed)"] = ", ".join(
                f"{100 * final_test_err(r):.1f} (seed {r['config']['seed']})" for r in mine)
    # every seed recorded: nothing to run
    df = drop_if_empty(pd.DataFrame(rows).set_index("variant"), "to run")
    if "yours: test error % (seed)" in df:
        df["yours: test error % (seed)"] = df["yours: test error % (seed)"].fillna("–")
    df.attrs.update(experiment=experiment, scale=scale)
    return df


def steps_text(runs) -> str:
    """Steps to a training error below 80 % over seeds: mean ± sd of the runs that got there, then
    how many did not (``metrics.censored``: "not reached within N steps"). A run that never got
    there is counted in words, its length N a lower bound, never a value inside the mean (the claims
    compare such values by ranks). '–' for no runs."""
    why = [censored(r, "steps_to_80") for r in runs]
    parts = [mean_sd([steps_to_80(r) for r, w in zip(runs, why) if w is None], digits=0)]
    parts += [f"{why.count(w)} of {len(runs)} {w}" for w in dict.fromkeys(w for w in why if w)]
    return "; ".join(p for p in parts if p != "–") or "–"


def scale_text(experiment, variant, scale="cpu", paper=True) -> str:
    """What the run of a variant at a CPU `scale` trains, beside the paper's recipe (unless not
    `paper`), in words (from the configs), with its precision, width and length (``confounds``)."""
    c, f = recipes.config(experiment, variant, scale), recipes.config(experiment, variant, "full")
    n_train, n_test = DATASET_SIZES[c["dataset"]]

    def sched(cfg):
        s = cfg["schedule"]
        if s["kind"] == "constant":
            return f"lr {s['base']:g} throughout"
        if not s.get("warmup_steps"):
            warm = "lr "
        elif s.get("warmup") == "linear":
            warm = (f"lr rising linearly from {s['warmup_lr']:g} over the first "
                    f"{s['warmup_steps']} steps to ")
        else:
            warm = f"lr {s['warmup_lr']:g} for the first {s['warmup_steps']} steps, then "
        return (f"{warm}{s['base']:g}, divided by {s['divisor']:g} at steps "
                f"{', '.join(map(str, s['milestones']))}")

    def data(cfg):
        sub = cfg.get("subset")
        if not sub:
            return f"all {n_train:,} training images (test: {n_test:,})"
        return (f"{10 * sub['train_per_class']:,} training images (test: "
                f"{10 * sub['test_per_class']:,})")

    # Paper B does not say how long it trained
    ours = "unstated" in f.get("why", {}).get("steps", "")
    full = ("The full recipe (its length is ours: the paper does not state it)" if ours
            else "The paper")
    theirs = (f"{full}: **{net_name(f)}**, {f['steps']:,} steps of batch {f['batch_size']} on "
              f"{data(f)}. " if paper else "")
    return (f"**{net_name(c)}**, {c['steps']:,} steps of batch {c['batch_size']} on {data(c)}, "
            f"{sched(c)}. "
            + theirs + confounds(experiment, variant, scale))


PRECISION_WORDS = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def precision_text(experiment, variant, scale="cpu", out_dir=None) -> str:
    """The precision its recorded runs trained in: 'bf16 (all 5 recorded seeds)', 'bf16 in 3, fp32
    in 2 of the 5 recorded seeds', 'no recorded run yet' (every CPU-scale run so far trained in
    bfloat16)."""
    runs, _ = seed_runs(experiment, variant, scale, ALL_SEEDS, out_dir)
    if not runs:
        return "no recorded run yet"
    kinds = [PRECISION_WORDS.get(r.get("precision"), str(r.get("precision") or "fp32"))
             for r in runs]
    if len(set(kinds)) == 1:
        return (f"{kinds[0]} (all {len(runs)} recorded "
                f"seeds)") if len(runs) > 1 else f"{kinds[0]} (its one recorded seed)"
    return ", ".join(f"{k} in {kinds.count(k)}"
                     for k in dict.fromkeys(kinds)) + f" of the {len(runs)} recorded seeds"


def _width(cfg) -> float:
    kw = cfg["model"]["kwargs"]
    return kw.get("width_scale", 1) * kw.get("widen", 1) * kw.get("width", 1)


def confounds(experiment, variant, scale="cpu", out_dir=None) -> str:
    """What a reader must keep in mind beside every number of a scale: the precision its runs
    trained in, its width and its length against the paper's recipe, in one sentence."""
    c, f = recipes.config(experiment, variant, scale), recipes.config(experiment, variant, "full")
    ratio = _width(c) / _width(f)
    width = "the paper's width" if ratio == 1 else \
        (f"1/{round(1 / ratio)} of the paper's width" if (1 / ratio).is_integer()
         else f"{ratio:g} x the paper's width")
    length = "the paper's length" if c["steps"] == f["steps"] else (
        f"{c['steps']:,} steps, {100 * c['steps'] / f['steps']:.2g} % of the full recipe's "
        f"{f['steps']:,}")
    return (f"*Precision, width, length*: trained in "
            f"{precision_text(experiment, variant, scale, out_dir)}, at {width}, for {length}.")



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
    """Every setting in which the scales' configs of one variant differ, one row each (nested
    settings by their dotted path, e.g. ``schedule.warmup``; a setting a scale lacks is '–'), whole
    values, never cut."""
    import pandas as pd

    cfgs = {s: _flat(recipes.config(experiment, variant, s)) for s in scales}
    keys = [k for k in dict.fromkeys(k for c in cfgs.values() for k in c)
            # subset: by its parts
            if k != "subset" and len({repr(c.get(k, "–")) for c in cfgs.values()}) > 1]
    absent = {"schedule.warmup": "step (the paper's)", "subset.": "all the data"}

    def value(s, k):
        if k in cfgs[s]:
            return _short(cfgs[s][k])
        return next((w for key, w in absent.items() if k.startswith(key)), "the builder's default")
    return pd.DataFrame({recipes.SCALE_WORDS[s]: [value(s, k) for k in keys] for s in scales},
                        index=pd.Index(keys, name="setting"))


def shortcut_options(experiment, variant) -> tuple[str, dict]:
    """The shortcut (Fig 2) of a Table 1 variant and its options, as ``models.make_unit`` takes
    them: ("constant_scaling", {"shortcut_scale": 0.5, "residual_scale": 1.0}) for
    constant_scaling-0.5-1."""
    kw = recipes.config(experiment, variant)["model"]["kwargs"]
    return kw["shortcut"], {k: v for k, v in kw.items() if k not in NETWORK}


# a swap (recipes.SWAPS) after its unit's words: "the original unit with a final BN-ReLU"
SWAP_PHRASES = {"final_bn_relu": "with a final BN-ReLU", "no_final": "without its final BN-ReLU",
                "zero_gamma": "with its branches off at init",
                "zero_gamma_scaled_input": "with its branches off at init and the original's "
                                           "classifier input"}


def _swap_words(unit, swap, depth):
    row = UNIT_ROWS[unit]
    net = row.words if depth == 110 else row.net(depth)
    return f"{net} {SWAP_PHRASES[swap]}"


def _table1_words(variant):
    """A Table 1 variant in its shortcut row's words, a gate with its b_g (Paper A Fig 2):
    'exclusive gating at b_g = −6'."""
    name, options = shortcut_options("a_table1_shortcuts", variant)
    bias = options.get("gate_bias")
    return SHORTCUT_ROWS[name].words + (f" at b_g = {bias:g}".replace("-", "−")
                                        if bias is not None else "")


# variant -> words, where its key does not read as English; (experiment, variant) where it depends
# on it. A unit's and a shortcut's words are its registry row's (models/registry.py).
WORDS = {
    **{v: _table1_words(v) for v in recipes.EXPERIMENTS["a_table1_shortcuts"]["variants"]},
    "constant_scaling-0-1": "the shortcut scaled by 0",
    "constant_scaling-0.5-1": "the shortcut scaled by 0.5",
    "constant_scaling-0.5-0.5": "both paths scaled by 0.5",
    **{f"{unit}-110": row.words for unit, row in UNIT_ROWS.items()},  # each unit's row
    # its net at the other depths, Table 3's keys too: "the original ResNet-1001"
    **{k: row.net(d) for unit, row in UNIT_ROWS.items() for d in (164, 1001)
       for k in (f"{unit}-{d}", f"c10-{d}-{unit}")},
    **{f"{u}+{swap}-{d}": _swap_words(u, swap, d)
       for (u, swap), depths in recipes.SWAPPED.items() for d in depths},
    "c10-110-single-original": "the original unit",
    "c10-110-single-full_preact": "pre-activation",
    ("b_resnet32", "original"): "the ungated ResNet-32",
    "gated": "the gated net", "gated-k_decay": "the gated net with weight decay on k",
    "plain": "the ungated WRN",
}


def words(experiment, variant) -> str:
    """A variant in words: 'the original unit' for original-110; its key, plain, where it has none
    (a student's own variant), so that a figure, a table and prose can each use it as it is."""
    if variant.endswith(recipes.AT_FP32):
        return words(experiment, variant.removesuffix(recipes.AT_FP32)) + " in float32"
    w = WORDS.get((experiment, variant)) or WORDS.get(variant)
    if w:
        return w
    if variant.startswith(("plain-d", "resnet-d", "gresnet-d", "gresnet_keras-d")):
        kind, d = variant.split("-d")
        name = {"plain": "plain net", "resnet": "ResNet", "gresnet": "GResNet",
                "gresnet_keras": "GResNet with Keras's defaults"}[kind]
        return f"the {name} (d = {d})"
    kw = recipes.EXPERIMENTS.get(experiment, {}).get("variants", {}).get(variant)
    kw = kw and recipes.config(experiment, variant, "cpu")["model"]["kwargs"]
    c100 = " on CIFAR-100" if kw and kw.get("num_classes") == 100 else ""
    if kw and kw.get("unit") in UNIT_ROWS and kw.get("shortcut", "identity") == "identity":
        return UNIT_ROWS[kw["unit"]].net(kw["depth"]) + c100
    if c100 and variant.startswith("c100-"):
        return words(experiment, variant.removeprefix("c100-")) + c100
    return variant
