"""The claims of claims.py beside our recorded runs: verdict tables, per-variant statistics over seeds, and
training curves with a band over seeds (plotly, so they work in the static site).

Everything here reads recorded runs (``results.find_result``: config hash equal to today's recipe); nothing
trains. A run that is missing is shown as missing, with the command that makes it.
"""
from __future__ import annotations

import functools
import statistics
from pathlib import Path

from ..engine import recipes, results
from . import claims, cpu_scale, metrics, paper_numbers, rule
from .live import your_results
from .reports import command, hardware, net_name
from .runs import seed_runs as _seed_runs

SEEDS = rule.SEEDS
ALL_SEEDS = rule.ALL_SEEDS  # shown wherever recorded: the claim's 3 seeds, and 5 where 3 left it open


def seed_runs(experiment, variant, scale="cpu", seeds=SEEDS, out_dir=None):
    """The recorded runs of one variant, one per seed found, and the seeds still missing."""
    return _seed_runs(experiment, variant, scale, seeds, out_dir)


def committed_checkpoint(cfg, checkpoint_dir=None):
    """The checkpoint of this config's run under `checkpoint_dir` (default data/checkpoints/), loaded on the
    CPU, and its path -- by its name, else a checkpoint of the same training under other labels (Table 1's
    original is Table 2's original-110); (None, path) if there is none."""
    import torch

    from ..engine.data import DEFAULT_ROOT

    folder = Path(checkpoint_dir or DEFAULT_ROOT / "checkpoints")
    path = folder / f"{results.run_name(cfg)}.pt"
    if not path.exists():
        path = _checkpoints_by_training(folder).get(results.training_hash(cfg), path)
    if not path.exists():
        return None, path
    return torch.load(path, map_location="cpu", weights_only=True), path


@functools.lru_cache(maxsize=8)
def _checkpoints_by_training_at(folder: Path, stamp: tuple) -> dict:
    import torch

    out = {}
    for p in sorted(folder.glob("*.pt")):
        cfg = torch.load(p, map_location="cpu", weights_only=True).get("config")
        if cfg:
            out.setdefault(results.training_hash(cfg), p)
    return out


def _checkpoints_by_training(folder: Path) -> dict:
    """training hash -> checkpoint file in `folder` (read again only when a file there changed)."""
    files = sorted(folder.glob("*.pt"))
    return _checkpoints_by_training_at(folder, tuple((p.name, p.stat().st_mtime_ns) for p in files))


def seeds_command(experiment, variants, seeds, scale="cpu") -> str:
    """One command that trains these variants and seeds (together, in one process)."""
    v = ",".join(variants) if not isinstance(variants, str) else variants
    return (f"python -m idmap_lib train --experiment {experiment} --variant {v} --scale {scale} "
            f"--seed {','.join(map(str, seeds))}")


def _mean_sd(xs, unit=1.0, digits=2) -> str:
    """'41.23 ± 1.05' over the seeds found ('41.23' for one seed, '–' for none)."""
    if not xs:
        return "–"
    m = unit * statistics.fmean(xs)
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {unit * statistics.stdev(xs):.{digits}f}"


def variant_table(experiment, variants=None, scale="cpu", seeds=ALL_SEEDS, out_dir=None, yours=None):
    """One row per variant: the network that trains, the paper's number (labelled), and ours over seeds
    (mean ± sd, and each seed's test error): test error, final training loss, steps to a training error below
    80 %; seeds found, failed runs, the command for the missing seeds; and, where the reader has trained the
    variant (``live.train_live``, runs folder `yours`), their own test error, marked as theirs."""
    import pandas as pd

    variants = variants or list(recipes.EXPERIMENTS[experiment]["variants"])
    src = paper_numbers.source(experiment, variants) or paper_numbers.source(experiment)
    rows = []
    for v in variants:
        runs, missing = seed_runs(experiment, v, scale, seeds, out_dir)
        missing = [s for s in missing if s in SEEDS]  # more seeds are asked for only where 3 leave a claim open
        p = paper_numbers.paper_number(experiment, v) or {}
        paper = p.get("value", "–")
        rows.append({
            "variant": v, "network trained": net_name(recipes.config(experiment, v, scale)),
            f"paper: test error % ({src})": paper if isinstance(paper, str) else f"{paper:.2f}",
            "ours: test error %": _mean_sd([metrics.final_test_err(r) for r in runs], 100),
            "ours, per seed": ", ".join(f"{100 * metrics.final_test_err(r):.1f}" for r in runs) or "–",
            "ours: final training loss": _mean_sd([metrics.final_train_loss(r) for r in runs], digits=3),
            "ours: steps to train error < 80 %": _mean_sd([metrics.steps_to_80(r) for r in runs], digits=0),
            "seeds": len(runs), "diverged": sum(r["status"] == "fail" for r in runs),
            "to run": seeds_command(experiment, v, missing, scale) if missing else ""})
        mine = your_results(experiment, v, scale, yours)
        if mine:  # the reader's own finished runs (live.train_live), beside the recorded seeds and the paper
            rows[-1]["yours: test error % (seed)"] = ", ".join(
                f"{100 * metrics.final_test_err(r):.1f} (seed {r['config']['seed']})" for r in mine)
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


def _unit(metric):
    """(factor, format) a metric is shown in: % for errors, whole steps, 3 decimals otherwise."""
    return (100, ".1f") if metric in metrics.PERCENT else (1, ".0f") if metric == "steps_to_80" else (1, ".3f")


def drop_if_empty(df, column):
    """`df` without `column` where no row has anything in it (zeros, empty strings): a column that says nothing."""
    return df if df[column].any() else df.drop(columns=column)


def num(x, fmt=".2f", sign=False) -> str:
    """x formatted (with its sign, + or -, if `sign`), without the sign of a value that rounds to zero ("-0.0" reads
    as a direction)."""
    t = f"{x:+{fmt}}" if sign else f"{x:{fmt}}"
    return t.lstrip("+-") if float(t) == 0 else t


def _evidence(test, res, same_a=False) -> str:
    """'a 41.0 ± 1.0 vs b 61.0 ± 1.0; d = 20.0 [16.9, 23.1]' (a said once for a run of parts that share it)."""
    if "d" not in res:
        return ""
    unit, fmt = _unit(test.metric)
    a, b = (test.metric, test.metric_b) if test.metric_b else (test.a, test.b)
    n = {k: num(unit * res[k], fmt) for k in ("mean_a", "sd_a", "mean_b", "sd_b", "d", "lo", "hi")}
    head = "" if same_a else f"{a} {n['mean_a']} ± {n['sd_a']} "
    return f"{head}vs {b} {n['mean_b']} ± {n['sd_b']}; d = {n['d']} [{n['lo']}, {n['hi']}]"


FULL_PARTS = 2  # a claim of more comparisons shows the ones that decide it in full, the rest summed up


def _evidence_of(parts) -> list[str]:
    """Each comparison's evidence; for a claim of more than FULL_PARTS comparisons, the ones that are not
    reproduced in full (they decide an inconclusive or contradicted verdict) and the reproduced ones summed up in
    one line (their names and the range of d; each interval is in the forest plot)."""
    done = [(t, r) for t, r in parts if "d" in r]
    summed = [(t, r) for t, r in done if r["verdict"] == "reproduced" and t.kind == "better"] \
        if len(done) > FULL_PARTS else []
    if len(summed) < 2:
        summed = []
    out, last = [], None
    for t, r in parts:
        if (t, r) in summed:
            continue
        key = (t.a, t.metric, t.metric_b)
        out.append(_evidence(t, r, same_a=key == last and bool(out and out[-1])))
        last = key
    if summed:
        unit, fmt = _unit(summed[0][0].metric)
        ds = [unit * r["d"] for _, r in summed]
        sides = {t.a for t, _ in summed}
        names = ", ".join(t.metric_b or t.b for t, _ in summed) if len(sides) == 1 else \
            ", ".join(f"{t.a} vs {t.metric_b or t.b}" for t, _ in summed)
        head = f"{sides.pop()} vs " if len(sides) == 1 else ""
        names = f" ({names})" if len(summed) <= 3 else " (the test's other variants)"  # many: the test names them
        out.append(f"{head}{len(summed)} more, each reproduced{names}: d = {min(ds):{fmt}} to {max(ds):{fmt}}, "
                   f"every interval above 0 (the forest plot)")
    return out


def tested_for(claim, scale) -> str:
    """What a claim's verdict at `scale` says, in words (rule.ABOUT): an 'end' claim at a CPU scale is tested as
    what it predicts for a short run of the same network."""
    words = []
    for about in claim.about:
        if about == "end" and scale != "full":
            words.append("its prediction for a short run of the same network")
        elif about == "converged" and scale != "full":
            words.append(rule.NEEDS_FULL + " (the converged end of training)")
        else:
            words.append(rule.ABOUT[about])
    return "; ".join(words)


def claims_table(keys=None, scale=None, out_dir=None):
    """One row per claim: where it comes from, its words, its pre-registered test, our verdict and the
    evidence (means ± sd over seeds, the difference d with its 95 % interval), and what the verdict can say at
    this scale (``tested_for``). scale: default each
    claim's own (Paper A's and Paper B's CIFAR claims: the CPU scale; Paper B's MNIST claims: the full recipe)."""
    import pandas as pd

    rows = []
    for c in (claims.CLAIMS if keys is None else [claims.CLAIMS_BY_KEY[k] for k in keys]):
        v = claims.evaluate(c, scale, out_dir)
        _, slow = at_chance(c.experiment, c.variants, scale or c.scale, out_dir=out_dir)
        slow = [("at chance at this scale only (the paper trains them): " if len(slow) > 1 else
                 "at chance at this scale only (the paper trains it): ")
                + ", ".join(f"{name} {n}/{runs} seeds" for name, n, runs, _ in slow)] if slow else []
        # (a verdict that reads a slow start as a worse end says so)
        rows.append({"claim": c.key, "source": c.source, "the paper says": c.words,
                     "test (fixed before the runs)": rule.tests_in_words(c.tests)
                     + (f" ({c.scale_note})" if c.scale_note else ""),
                     "verdict": v.verdict, "tested for": tested_for(c, scale or c.scale),
                     "evidence": " | ".join(filter(None, _evidence_of(v.parts) + slow)) or "–",
                     "missing runs": sum(len(s) for _, s in v.missing)})
    return drop_if_empty(pd.DataFrame(rows).set_index("claim"), "missing runs")


def verdict_changes(keys, before="cpu_step_warmup", after="cpu", out_dir=None):
    """The claims' verdicts read at two scales by today's rule, side by side, with what drove a change where it
    can be measured: the compared runs whose number of seeds at chance differs between the two scales."""
    import pandas as pd

    rows = []
    for k in keys:
        c = claims.CLAIMS_BY_KEY[k]
        counts = {s: {name: (n, runs) for name, n, runs, _ in sum(at_chance(c.experiment, c.variants, s, out_dir=out_dir), [])}
                  for s in (before, after)}

        def seeds(s, v):
            return "{} of {}".format(*counts[s][v]) if v in counts[s] else "none"

        moved = [f"{v}: {seeds(before, v)} seeds → {seeds(after, v)}" for v in sorted(set(counts[before]) | set(counts[after]))
                 if counts[before].get(v, (0,))[0] != counts[after].get(v, (0,))[0]]
        rows.append({"claim": k, recipes.SCALE_WORDS[before]: claims.evaluate(c, before, out_dir).verdict,
                     recipes.SCALE_WORDS[after]: claims.evaluate(c, after, out_dir).verdict,
                     f"runs at chance ({recipes.SCALE_WORDS[before]} → {recipes.SCALE_WORDS[after]}), where they differ":
                         "; ".join(moved) or "the same"})
    return pd.DataFrame(rows).set_index("claim")


def verdict_counts(df) -> dict:
    """{verdict: number of claims} for a ``claims_table``."""
    return {v: int((df["verdict"] == v).sum()) for v in rule.VERDICTS}


VERDICT_COLOURS = {"reproduced": "#d9f2d9", "contradicted": "#f8d7d7", "inconclusive": "#fff3cd",
                   rule.NEEDS_FULL: "#dbe8f6", "not run yet": "#eeeeee"}


def styled(df):
    """For reading: numbers rounded, empty cells '–', long text wrapped, verdicts coloured."""
    import pandas as pd

    colour = VERDICT_COLOURS
    num = [c for c in df.columns if df[c].dtype.kind == "f"]
    s = df.style.format({c: "{:.2f}" for c in num}, na_rep="–")
    if pd.api.types.is_string_dtype(df.index):  # long keys (t1_shortcut_only_gating_...) break after an underscore, not mid-word
        s = s.format_index(lambda k: str(k).replace("_", "_\u200b"), axis=0)
    if "verdict" in df.columns:
        s = s.map(lambda v: f"background-color: {colour.get(v, '')}", subset=["verdict"])
    if df.attrs.get("caption"):  # (e.g. how a table's starred times are derived)
        s = s.set_caption(df.attrs["caption"])
    return s.set_table_styles([{"selector": "td, th", "props": "font-size: 0.85em; padding: 0.2em 0.6em; "
                                                               "vertical-align: top; text-align: left;"},
                               {"selector": "th.row_heading", "props": "overflow-wrap: normal; min-width: 7em;"}])


def lr_marks(fig, schedule, cols=(1, 2)):
    """The learning-rate schedule on every panel: the warm-up shaded (a ramp, or a step at its end: the paper's),
    a dashed line at each lr change, labelled (on the first panel) with the lr that starts there."""
    def label(text, col, **where):
        return {"annotation_text": text, "annotation_font_size": 11, **where} if col == cols[0] else {}

    warm, lr = schedule.get("warmup_steps", 0), schedule["base"]
    ramp = schedule.get("warmup") == "linear"
    changes = [] if ramp or not warm else [(warm, lr)]
    changes += [(m, lr / schedule["divisor"] ** (i + 1)) for i, m in enumerate(schedule.get("milestones", []))]
    for col in cols:
        if warm:
            text = (f"warm-up: lr ramps {schedule['warmup_lr']:g} → {lr:g}" if ramp else
                    f"warm-up: lr {schedule['warmup_lr']:g}")
            fig.add_vrect(x0=0, x1=warm, fillcolor="grey", opacity=0.08, line_width=0, row=1, col=col,
                          exclude_empty_subplots=False,
                          **label(text, col, annotation_position="bottom left"))
        for x, new_lr in changes:
            fig.add_vline(x=x, line_dash="dash", line_color="grey", row=1, col=col, exclude_empty_subplots=False,
                          **label(f"lr {new_lr:g}", col))


PANELS = {  # what a curve panel shows: (history part, key, scale of the value, its title)
    "train_loss": ("train", "train_loss", 1, "training loss ({log}-step windows, log axis)"),
    "train_err": ("train", "train_err", 100, "training error %"),
    "test_err": ("test", "test_err", 100, "test error %"),
}


def log_ticks(lo: float, hi: float) -> dict:
    """Tick values and labels for a log axis from `lo` to `hi`: 1, 2, 5 of each decade, written out in full (plotly's
    own minor labels read "2 3 ... 10 2 3", where the second "2" is 20)."""
    import math

    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    for ms in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 4, 5, 6, 8)):  # short: more
        vals = [m * 10.0 ** e for e in decades for m in ms if lo <= m * 10.0 ** e <= hi]
        if len(vals) >= 4:
            break
    return {"tickvals": vals, "ticktext": [f"{v:g}" for v in vals]}


def _plotly_values(v):
    """A trace's values as numbers: a list, or plotly's encoded array ({"dtype", "bdata"}: base64 of the buffer)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(float).ravel().tolist()
    return v


def readable_log_axes(fig_dict: dict) -> dict:
    """Every log axis of a figure (its dict) without ticks of its own gets ``log_ticks`` over the positive values of
    the traces drawn on it (or over its range, where set): the book's renderer applies it to every figure of the site,
    whose log axes would otherwise carry plotly's minor labels ("2 3 ... 10 2 3")."""
    import math
    import re

    layout = fig_dict.get("layout", {})
    for name, ax in list(layout.items()):
        m = re.fullmatch(r"([xy])axis(\d*)", name)
        if not m or not isinstance(ax, dict) or ax.get("type") != "log" or "tickvals" in ax:
            continue
        ref = m.group(1) + m.group(2)
        if ax.get("range"):
            lo, hi = (10 ** v for v in ax["range"])
        else:
            vals = []
            for t in fig_dict.get("data", []):
                if t.get(f"{m.group(1)}axis", m.group(1)) == ref:
                    try:
                        vals += [float(v) for v in _plotly_values(t.get(m.group(1), [])) if v is not None and v > 0]
                    except (TypeError, ValueError):  # not numbers (text, categories): leave the axis as it is
                        vals = []
                        break
            vals = [v for v in vals if math.isfinite(v)]
            if len(vals) < 2:
                continue
            lo, hi = min(vals), max(vals)
        if hi > lo > 0:
            ax.update(log_ticks(lo, hi))
    return fig_dict


def loss_range(traces, spread=2.0) -> tuple[float, float, bool]:
    """(low, high, cut) of a log axis for these traces (one list of values each: a seed, or all seeds of a
    variant): all of them, unless one trace's highest value (an early spike) lies more than `spread` times above
    every other trace's: then the axis stops just above the others (cut = True), so that one curve does not
    flatten all the others."""
    tops = sorted((max(t) for t in traces if t), reverse=True)
    lo = min(min(t) for t in traces if t) * 0.9
    if len(tops) > 1 and tops[0] > spread * tops[1]:
        return lo, tops[1] * 1.15, True
    return lo, tops[0] * 1.1, False


def band_curves(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None, title=None,
                panels=("train_loss", "test_err")):
    """Training loss (log axis) and test error (%) against the step -- or the ``panels`` asked for (PANELS: a run
    evaluated only at its end, like ResNet-1001's 128 steps, is better read by its training error): for each
    variant every recorded seed as a thin line, their mean as a thick one with a band of ± one standard
    deviation, and the lr schedule marked (``lr_marks``; a plotly figure that works without a kernel)."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    log_every = recipes.config(experiment, variants[0], scale)["log_every"]
    titles = [PANELS[p][3].format(log=log_every) for p in panels]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=titles, horizontal_spacing=0.08)
    colours = qualitative.Plotly + qualitative.D3
    missing, where, losses = [], set(), {}  # losses: variant -> every seed's values
    for i, v in enumerate(variants):
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        if not runs:
            missing.append(v)
            continue
        where.update(hardware(r) for r in runs)
        c = colours[i % len(colours)]
        label = f"{v} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        for col, (part, key, scale_y, _) in enumerate((PANELS[p] for p in panels), 1):
            for r in runs:
                h = r["history"][part]
                if key == "train_loss":
                    losses.setdefault(v, []).extend(x[key] for x in h)
                fig.add_trace(go.Scatter(x=[x["step"] for x in h], y=[scale_y * x[key] for x in h], mode="lines",
                                         line={"color": c, "width": 1}, opacity=0.45, legendgroup=v,
                                         showlegend=False, name=f"{v} seed {r['config']['seed']}",
                                         hovertemplate=f"{v} seed {r['config']['seed']}<br>step %{{x}}: "
                                                       f"%{{y:.3f}}<extra></extra>"), 1, col)
            steps = sorted({h["step"] for r in runs for h in r["history"][part]})
            per = [[scale_y * h[key] for r in runs for h in r["history"][part] if h["step"] == s] for s in steps]
            mean = [statistics.fmean(p) for p in per]
            sd = [statistics.stdev(p) if len(p) > 1 else 0.0 for p in per]
            fig.add_trace(go.Scatter(x=steps + steps[::-1], y=[m + d for m, d in zip(mean, sd)]
                                     + [max(m - d, 1e-3) for m, d in zip(mean, sd)][::-1], fill="toself",
                                     fillcolor=c, opacity=0.15, line={"width": 0}, hoverinfo="skip", legendgroup=v,
                                     showlegend=False), 1, col)
            fig.add_trace(go.Scatter(x=steps, y=mean, name=label, legendgroup=v, showlegend=col == 1,
                                     mode="lines+markers" if part == "test" else "lines", line={"color": c, "width": 3},
                                     hovertemplate=f"{v} mean<br>step %{{x}}: %{{y:.3f}}<extra></extra>"), 1, col)
    lr_marks(fig, recipes.config(experiment, variants[0], scale)["schedule"], cols=range(1, len(panels) + 1))
    fig.update_xaxes(title_text="step")
    sub = "thin: each seed; thick: mean ± sd; " + ("; ".join(sorted(where)) if where else "no recorded runs yet")
    if "train_loss" in panels and losses:
        import math

        lo, hi, cut = loss_range(list(losses.values()))
        fig.update_yaxes(type="log", range=[math.log10(lo), math.log10(hi)], **log_ticks(lo, hi),
                         row=1, col=panels.index("train_loss") + 1)
        if cut:
            top = max(losses, key=lambda v: max(losses[v]))
            sub += (f"<br>loss axis cut at {hi:.2g}: {top}'s early spike, up to {max(losses[top]):.3g}, runs off the "
                    f"top (hover its lines)")
    if missing:
        sub += f"; not run yet: {', '.join(missing)}"
    tables = paper_numbers.source(experiment, variants) or recipes.EXPERIMENTS[experiment]["title"].split(":")[0]
    head = title or f"{tables}, our runs ({recipes.SCALE_WORDS[scale]})"  # the tables of the variants shown
    fig.update_layout(title={"text": f"{head}<br><sup>{sub}</sup>"}, height=560,
                      margin={"t": 110 + 22 * sub.count("<br>")},
                      legend={"orientation": "h", "y": -0.18, "font": {"size": 13}})  # below: wide panels
    return fig


def forest(keys=None, scale=None, out_dir=None, title=None):
    """Each comparison's effect d with its 95 % interval (Welch's t), one row per comparison and a panel per
    metric: right of 0 is the paper's direction. Colour: the comparison's verdict. Beside it, every seed: one seed
    of a (or b) against the other side's mean -- their mean is d, so one seed that carries d stands out."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = {}
    for c in (claims.CLAIMS if keys is None else [claims.CLAIMS_BY_KEY[k] for k in keys]):
        for t, r in claims.evaluate(c, scale, out_dir).parts:
            if "d" in r:
                rows.setdefault(t.metric, []).append((f"{c.key}<br>{t.a} vs {t.metric_b or t.b}", r, t))
    if not rows:
        fig = go.Figure()
        fig.update_layout(title={"text": (title or "Effects with their intervals") + "<br><sup>no comparison has "
                                 "its seeds yet</sup>"}, height=160)
        return fig
    sizes = [max(len(v), 2) for v in rows.values()]  # a panel of one comparison still has room for its ticks
    height = 150 + 46 * sum(sizes) + 90 * len(rows)
    fig = make_subplots(rows=len(rows), cols=1, row_heights=sizes,
                        vertical_spacing=min(0.25, 90 / height) if len(rows) > 1 else 0.1,
                        subplot_titles=[f"{metrics.METRIC_WORDS[m]}: d" for m in rows])
    for i, (metric, items) in enumerate(rows.items(), start=1):
        unit, fmt = _unit(metric)
        for label, r, t in items:
            d, lo, hi = (unit * r[k] for k in ("d", "lo", "hi"))
            for side, xs in (("a", r["xa"]), ("b", r["xb"])):  # each seed against the other side's mean
                if t.kind == "better":
                    per = [r["mean_b"] - x - t.margin for x in xs] if side == "a" else \
                        [x - r["mean_a"] - t.margin for x in xs]
                else:
                    per = [x - r["mean_b"] for x in xs] if side == "a" else [r["mean_a"] - x for x in xs]
                fig.add_trace(go.Scatter(x=[unit * v for v in per], y=[label] * len(per), mode="markers",
                                         showlegend=False, marker={"size": 6, "color": "grey", "opacity": 0.6,
                                                                   "symbol": "circle-open" if side == "a" else "x-thin",
                                                                   "line": {"width": 1, "color": "grey"}},
                                         hovertemplate=f"{label}<br>one seed of {getattr(t, side)} against the "
                                                       f"other side's mean: %{{x:{fmt}}}<extra></extra>"), i, 1)
            fig.add_trace(go.Scatter(x=[d], y=[label], mode="markers", showlegend=False,
                                     marker={"size": 10, "color": VERDICT_COLOURS[r["verdict"]],
                                             "line": {"color": "black", "width": 1}},
                                     error_x={"type": "data", "symmetric": False, "array": [hi - d],
                                              "arrayminus": [d - lo], "color": "black"},
                                     hovertemplate=f"{label}<br>d = {num(d, fmt)} [{num(lo, fmt)}, {num(hi, fmt)}], "
                                                   f"{r['verdict']}<extra></extra>"), i, 1)
        fig.add_vline(x=0, line_color="grey", row=i, col=1)
    fig.update_layout(title={"text": (title or "Effects with their 95 % intervals") + "<br><sup>right of the line: "
                             "the paper's direction (d = b minus a, minus any margin); colour: the verdict;<br>grey: "
                             "each seed (o of a, x of b) against the other side's mean</sup>"},
                      height=height, margin={"l": 20, "t": 110})
    fig.update_yaxes(automargin=True, autorange="reversed")
    return fig


def _checkpoints_readme() -> str:
    """A link to data/checkpoints/README.md (how to resume a run under way) in the book's repository."""
    from .repository import repository_url

    return f'<a href="{repository_url()}/blob/main/data/checkpoints/README.md">data/checkpoints/README.md</a>'


def full_scale_status(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None):
    """For the full recipe: recorded (test error), under way (a committed checkpoint's step), or the command, and
    the time one run takes (``run_times``: measured on an H200, derived for a T4)."""
    from .run_times import derived_note, full_recipe_time

    import pandas as pd

    rows = []
    for v in variants:
        cfg = recipes.config(experiment, v, "full", seed)
        r = results.find_result(cfg, out_dir)
        p = paper_numbers.paper_number(experiment, v) or {}
        paper = p.get("value", "–")  # a number, or Paper A's "fail": text either way (one column, one format)
        row = {"variant": v, "network": net_name(cfg), "paper: error %": paper if isinstance(paper, str) else f"{paper:.2f}"}
        c = None if r is not None else committed_checkpoint(cfg, checkpoint_dir)[0]
        if r is not None:
            row.update({"ours: error %": f"{100 * metrics.final_test_err(r):.2f}", "state": f"finished on {hardware(r)}"})
        elif c is not None:
            last = c["history"]["test"][-1] if c["history"]["test"] else {}
            row.update({"ours: error %": "–",
                        "state": f"under way: step {c['step']:,} of {cfg['steps']:,} (test error "
                                 f"{100 * last.get('test_err', float('nan')):.1f} % at step {last.get('step', 0):,}; "
                                 f"resume on a GPU: {_checkpoints_readme()})"})
        else:
            row.update({"ours: error %": "–", "state": "not run: " + command(experiment, v, "full")
                        + " --cuda-graph"})
        row["one run takes"] = "–" if r is not None else full_recipe_time(cfg, results_dir=out_dir)
        rows.append(row)
    df = pd.DataFrame(rows).set_index("variant")
    df.attrs["caption"] = derived_note()
    return df


def full_recipe_runs(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None):
    """{variant: (history, step, total, state)} of the full-recipe runs finished (their result) or under way (their
    committed checkpoint); variants with neither are left out."""
    out = {}
    for v in variants:
        cfg = recipes.config(experiment, v, "full", seed)
        r = results.find_result(cfg, out_dir)
        if r is not None:
            out[v] = (r["history"], cfg["steps"], cfg["steps"], f"finished on {hardware(r)}")
            continue
        c = committed_checkpoint(cfg, checkpoint_dir)[0]
        if c is not None:
            out[v] = (c["history"], c["step"], cfg["steps"], f"under way, step {c['step']:,} of {cfg['steps']:,}")
    return out


def full_recipe_curves(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None, title=None):
    """The full-recipe runs as they stand (finished, or under way: their committed checkpoint), over the whole
    recipe's steps with its lr schedule marked, and the paper's final test error as a dotted line per variant --
    one scale only: the CPU scale's runs are in ``band_curves``."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    runs = full_recipe_runs(experiment, variants, seed, out_dir, checkpoint_dir)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss (log axis)", "test error %"),
                        horizontal_spacing=0.08)
    colours = qualitative.Plotly + qualitative.D3
    total = recipes.config(experiment, variants[0], "full", seed)["steps"]
    for i, v in enumerate(variants):
        c = colours[i % len(colours)]
        if v in runs:
            h, step, _, state = runs[v]
            for col, key, part, k in ((1, "train_loss", "train", 1), (2, "test_err", "test", 100)):
                fig.add_trace(go.Scatter(x=[x["step"] for x in h[part]], y=[k * x[key] for x in h[part]],
                                         mode="lines" if col == 1 else "lines+markers", line={"color": c},
                                         name=f"{v} ({state})", legendgroup=v, showlegend=col == 1,
                                         hovertemplate=f"{v}<br>step %{{x}}: %{{y:.3f}}<extra></extra>"), 1, col)
        p = paper_numbers.paper_number(experiment, v)
        if p:
            fig.add_trace(go.Scatter(x=[0, total], y=[p["value"]] * 2, mode="lines", legendgroup=v,
                                     line={"color": c, "dash": "dot"}, name=f"{v}: {p['source']}, {p['value']:g} %",
                                     hovertemplate=f"{v}: {p['source']} %{{y}} %<extra></extra>"), 1, 2)
    lr_marks(fig, recipes.config(experiment, variants[0], "full", seed)["schedule"])
    fig.update_xaxes(title_text="step", range=[0, total])
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    missing = [v for v in variants if v not in runs]
    sub = (f"seed {seed}; solid: ours as it stands; dotted: the paper's final test error"
           + (f"; not run yet: {', '.join(missing)}" if missing else ""))
    head = title or recipes.EXPERIMENTS[experiment]["title"].split(":")[0] + ", the full recipe"
    fig.update_layout(title={"text": f"{head}<br><sup>{sub}</sup>"}, height=560, margin={"t": 110 + 22 * sub.count("<br>")},
                      legend={"orientation": "h", "y": -0.18, "font": {"size": 13}})
    return fig


def trained_model(experiment, variant, scale="full", seed=0, checkpoint_dir=None):
    """The network of a run, with the weights of its committed checkpoint (data/checkpoints/), in eval mode;
    and a line saying which step of which recipe on which device they come from. None if there is none."""
    from ..engine.build import build_model

    cfg = recipes.config(experiment, variant, scale, seed)
    ck, _ = committed_checkpoint(cfg, checkpoint_dir)
    if ck is None:
        return None, f"no checkpoint of {results.run_name(cfg)}"
    net = build_model(ck["config"]["model"])
    net.load_state_dict(ck["model"])
    return net.eval(), (f"{net_name(cfg)} after {ck['step']:,} of {cfg['steps']:,} steps of the paper's recipe "
                        f"({ck['device_type']}, {ck['precision']})")


def test_images(experiment, variant, n=256, data=None):
    """The first n test images of a recipe's dataset, normalised as that recipe trains, with their labels."""
    import torch

    from ..engine.batches import prepare_data

    cfg = recipes.config(experiment, variant, "full")
    D = prepare_data(cfg, data, torch.device("cpu"))
    return D["x_test"][:n].float().div(255).sub(D["mean"]).div(D["std"]), D["y_test"][:n]


def ended_at_chance(result) -> bool:
    """A run that ended where it began: diverged, or its final training loss still within 3 % of ln C."""
    import math

    if result["status"] == "fail":
        return True
    c = result["config"]["model"]["kwargs"].get("num_classes", 10)
    return result["final"]["train_loss"] >= 0.97 * math.log(c)


def at_chance(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None):
    """The variants with a recorded run that ended at chance, as (own, schedule): lists of (variant, runs at
    chance, runs, the paper's number) -- `own` where the paper marks the variant "fail" (error > 20 % after its
    full recipe), `schedule` where the paper trains it to a low error (the short schedule's kind of failure)."""
    own, schedule = [], []
    for v in variants:
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        n = sum(ended_at_chance(r) for r in runs)
        if n:
            p = (paper_numbers.paper_number(experiment, v) or {}).get("value")
            failed_in_paper = p == paper_numbers.FAIL or (isinstance(p, float) and p > 20)
            (own if failed_in_paper else schedule).append((v, n, len(runs), p))
    return own, schedule


def stuck_note(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None) -> str:
    """Which variants ended a run at chance at this scale, and whether that is the paper's kind of failure
    or the short schedule's (``at_chance``). Markdown; empty when no recorded run ended at chance."""
    def label(v, n, runs, p):
        return f"**{v}** ({n} of {runs} seeds; the paper: " + (f"{p:.2f} %" if isinstance(p, float) else str(p)) + ")"

    own, schedule = ([label(*x) for x in xs] for xs in at_chance(experiment, variants, scale, seeds, out_dir))
    out = []
    if own:
        out.append("Ended at chance, as the paper's own runs *fail* (error > 20 % after the full recipe): "
                   + ", ".join(own) + ".")
    if schedule:
        out.append("Ended at chance **at this scale only**: " + ", ".join(schedule) + ". The paper trains these "
                   "to a low error, so this is the short run's kind of failure, not the paper's: a test of final "
                   "errors then reads it as a worse end. What happened to each seed at the lr change is said "
                   "below the curves.")
    if out:  # what "at chance" means here: the training loss, not the test error
        out.append("*At chance*: the run diverged, or its final training loss is within 3 % of ln C (C classes), "
                   "where it began; a run can learn its training data and still test near chance, which this "
                   "does not count.")
    return "\n\n".join(out)


def contradiction_note(keys, out_dir=None) -> str:
    """For each of the claims `keys` that its scale contradicts: the part that does it, its per-seed values, and
    the paper's own numbers for the two variants (what the paper's recipe separates, by how much). Markdown, computed
    from the recorded runs; empty when none is contradicted."""
    lines = []
    for key in keys:
        claim = claims.CLAIMS_BY_KEY[key]
        v = claims.evaluate(claim, results_dir=out_dir)
        for t, res in v.parts if v.verdict == "contradicted" else []:
            if res.get("verdict") != "contradicted":
                continue
            unit, fmt = _unit(t.metric)
            u = " %" if t.metric in metrics.PERCENT else ""
            each = {side: ", ".join(num(unit * x, fmt) for x in res[f"x{side}"]) for side in "ab"}
            d, lo, hi = (num(unit * res[k], fmt) for k in ("d", "lo", "hi"))
            pa, pb = (paper_numbers.paper_number(claim.experiment, x) or {} for x in (t.a, t.b))
            paper = (f" The paper, after its whole recipe: {t.a} {pa['value']:.2f} %, {t.b} {pb['value']:.2f} % "
                     f"({abs(pa['value'] - pb['value']):.2f} points apart)."
                     if isinstance(pa.get("value"), float) and isinstance(pb.get("value"), float) else "")
            short = (" What it contradicts is the prediction for a short run of the same network, not the paper's "
                     "number." if t.about == "end" and claim.scale != "full" else "")
            lines.append(f"- **{key}** is contradicted at the {recipes.SCALE_WORDS[claim.scale]} by its part "
                         f"*{t.words()}*: it holds the other way round, d = {d} [{lo}, {hi}] over the seeds "
                         f"recorded ({t.a}: {each['a']}{u}; {t.b}: {each['b']}{u}).{paper}{short}")
    return "\n".join(lines)


def lr_change_note(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None) -> str:
    """What each variant's recorded seeds did when the lr reached its peak, in words computed from the runs: how
    many seeds' training loss rose by more than cpu_scale.PROBE_MAX_RISE after the warm-up (metrics.lr_jump_rise,
    each rise listed), when each first got below 80 % training error, and how many ended at chance. Markdown."""
    sched = recipes.config(experiment, variants[0], scale)["schedule"]
    if not sched.get("warmup_steps"):
        return ""
    warm, lo, hi = sched["warmup_steps"], sched["warmup_lr"], sched["base"]
    how = (f"ramps from {lo:g} to {hi:g} over the first {warm} steps" if sched.get("warmup") == "linear" else
           f"is {lo:g} for the first {warm} steps and jumps to {hi:g} in one step")
    steps = recipes.config(experiment, variants[0], scale)["steps"]
    lines = []
    for v in variants:
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        if not runs:
            continue
        rises = [metrics.lr_jump_rise(r) for r in runs]
        big = sum(x > cpu_scale.PROBE_MAX_RISE for x in rises)
        starts = ", ".join(f"{metrics.steps_to_80(r):.0f}" for r in runs)
        stuck = sum(ended_at_chance(r) for r in runs)
        lines.append(f"- **{v}**: rose more than {cpu_scale.PROBE_MAX_RISE:g} in {big} of {len(runs)} seeds (rises "
                     + ", ".join(f"{x:.2f}" for x in rises) + f"); first below 80 % training error at step {starts}; "
                     f"ended at chance in {stuck} of {len(runs)}.")
    if not lines:
        return ""
    return (f"At the {recipes.SCALE_WORDS[scale]} the lr {how}, then is divided by {sched['divisor']:g} at steps "
            f"{', '.join(map(str, sched['milestones']))}. What each seed did: how far its training loss rose above "
            f"its level at the end of the warm-up before the first lr drop (a rise: more than "
            f"{cpu_scale.PROBE_MAX_RISE:g}), the step where it first got below 80 % training error (a run that never "
            f"did counts as its length, {steps}), and whether it ended at chance:\n\n" + "\n".join(lines))
