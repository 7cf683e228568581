"""What the mechanism experiments show (mechanisms.py): per-unit summaries over seeds, the claims'
table, and one figure each, all read from the records under data/mechanisms/ (nothing is measured
here).

- ``forward_summary`` / ``forward_figure``: chapter 3's λ-scaled stack at initialisation;
- ``weight_input_summary`` / ``weight_input_figure``: the std of the weight layers' inputs (chapters
  4, 8);
- ``truncation_summary`` / ``truncation_figure``: the fraction of y_l < 0 in the original unit
  (chapter 4);
- ``claims_table``: each MECHANISM_CLAIMS claim, its verdict by rule.compare and its parts' d [lo,
  hi].
"""
from __future__ import annotations

import math
import statistics

from idmap_lib.models.registry import UNIT_ROWS
from ..page import figure_style, palette
from ..evidence import mechanisms as mech
from ..page.log_axes import log_range
from ..page.prose import plain_number
from ..evidence.seeds import SEEDS

# a unit's legend: its row's short words and figure, "original (Fig 4a)"
UNIT_WORDS = {u: f"{r.short} ({r.figure.removeprefix('Paper A ').replace('(', '').rstrip(')')})"
              for u, r in UNIT_ROWS.items()}
FONT = figure_style.FONT
# the λ stack's figure draws every 5th unit (and the last): 1000 units x 48 lines would weigh ~2 MB
SHOW_EVERY = 5


def _forward(lam, seeds, out_dir):
    return mech._records(f"lam{lam:g}", "mech_forward_signal", seeds, out_dir)


def _training(unit, depth, seeds, out_dir):
    return mech._records(f"{unit}-{depth}", "mech_training_forwards", seeds, out_dir)


def _gmean(xs):
    return 10 ** statistics.fmean(math.log10(x) for x in xs)


def forward_summary(seeds=SEEDS, out_dir=None) -> dict:
    """Per λ, per seed: rms of x_0, x_{L/2}, x_L; log10 of the share of x_L carried by x_0's direct
    term; the branch ratio ‖F(x_l)‖ / ‖λ x_l‖ at the first and deepest unit; log10 ‖∂E/∂x_0‖ /
    ‖∂E/∂x_L‖; and the wall time."""
    out = {}
    for lam in mech.LAMS:
        for r in _forward(lam, seeds, out_dir):
            v, L = r["values"], len(r["values"]["branch_ratio"])
            out.setdefault(lam, {})[r["config"]["seed"]] = {
                "rms_0": v["rms"][0], "rms_mid": v["rms"][L // 2], "rms_L": v["rms"][-1],
                "log10_share_x0": v["log10_share"][0], "log10_share_mid": v["log10_share"][L // 2],
                "branch_first": v["branch_ratio"][0], "branch_last": v["branch_ratio"][-1],
                "log10_grad_ratio": v["log10_grad_ratio"][0], "wall_s": r["wall_s"], "units": L}
    return out


def weight_input_summary(seeds=SEEDS, out_dir=None) -> dict:
    """Per (unit, depth), per seed, per recorded step: the spread log10(max/min) of the weight
    layers' input std over all units; the first weight layer's input std in the first, middle and
    last unit; the largest and smallest input std; the classifier's input std and the logits'
    std."""
    out = {}
    for depth in mech.DEPTHS:
        for unit in mech.UNITS:
            for r in _training(unit, depth, seeds, out_dir):
                per = {}
                for f in r["values"]["forwards"]:
                    stds = f["weight_input_std"]
                    flat = [s for u in stds for s in u]
                    per[f["step"]] = {"spread": mech._spread(stds), "first_0": stds[0][0],
                                      "first_mid": stds[len(stds) // 2][0], "first_L": stds[-1][0],
                                      "max": max(flat), "min": min(flat),
                                      "fc_input_std": f["fc_input_std"],
                                      "logits_std": f["logits_std"], "lr": f["lr"]}
                out.setdefault((unit, depth),
                               {})[r["config"]["seed"]] = {"steps": per, "wall_s": r["wall_s"]}
    return out


def truncation_summary(seeds=SEEDS, out_dir=None) -> dict:
    """Per depth, per seed, per recorded step: the mean over units of the fraction of y_l < 0 in the
    original unit, the same mean over the first and the last third of the units, the first unit's
    and the largest."""
    out = {}
    for depth in mech.DEPTHS:
        for r in _training("original", depth, seeds, out_dir):
            per = {}
            for f in r["values"]["forwards"]:
                neg = f["negative_fraction"]
                third = max(len(neg) // 3, 1)
                per[f["step"]] = {"mean": statistics.fmean(neg),
                                  "first_third": statistics.fmean(neg[:third]),
                                  "last_third": statistics.fmean(neg[-third:]),
                                  "first_unit": neg[0],
                                  "max": max(neg)}
            out.setdefault(depth, {})[r["config"]["seed"]] = per
    return out


def over_seeds(per_seed: dict, key, step=None) -> list[float]:
    """The values of `key` over the seeds of one entry of a summary (at `step` for the training
    summaries)."""
    vals = []
    for s in sorted(per_seed):
        v = per_seed[s]
        v = v.get("steps", v) if step is not None else v
        vals.append((v[step] if step is not None else v)[key])
    return vals


def _said(variant: str) -> str:
    """A mechanism run's net in words: 'the original ResNet-110' for original-110, 'λ = 0.9' for
    chapter 3's stack lam0.9."""
    if variant.startswith("lam"):
        return f"λ = {variant.removeprefix('lam')}"
    unit, _, depth = variant.rpartition("-")
    return UNIT_ROWS[unit].net(depth) if unit in UNIT_ROWS else variant


def compared(t) -> str:
    return f"{_said(t.a)} vs {_said(t.b)}"


def claims_table(keys=None, seeds=SEEDS, out_dir=None):
    """One row per mechanism claim (those of `keys`, default all): chapter, the claim's words, its
    verdict, each part's d [lo, hi] and what its seeds resolve, and the single records whose removal
    changes the verdict."""
    import pandas as pd

    rows = []
    for c in mech.MECHANISM_CLAIMS:
        if keys is not None and c.key not in keys:
            continue
        res = mech.evaluate(c, seeds, out_dir)
        said, named = [], set()
        for t, r in res["parts"]:  # each metric in words, once
            said.append(("" if t.metric in named else f"{mech.METRIC_WORDS[t.metric]} — ")
                        + f"{compared(t)}: " + (
                            f"d = {r['d']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}], resolves "
                            f"{r['resolvable']:.2f}" if "d" in r else r["verdict"]))
            named.add(t.metric)
        parts = "; ".join(said)
        one = "; ".join(f"without seed {s} of {_said(v)}: {w}"
                        for v, s, w in res["fragile"]) or "none"
        rows.append({"chapter": mech.CHAPTER[c.key], "claim": c.words, "source": c.source,
                     "verdict": res["verdict"],
                     "parts (metric in log10 or a fraction; d by Welch's t, 95 %)": parts,
                     "one seed changes it": one})
    return pd.DataFrame(rows).set_index("claim")


def verdicts(seeds=SEEDS, out_dir=None) -> dict:
    """{claim key: verdict}."""
    return {c.key: mech.evaluate(c, seeds, out_dir)["verdict"] for c in mech.MECHANISM_CLAIMS}


def _caption(records) -> str:
    r = records[0]
    hw = r["hardware"]
    return (f"Recorded {min(x['date'] for x in records)[:10]} on {hw['cpu']} "
            f"({hw['torch_threads']} thread), torch {r['versions']['torch']}; seeds "
            f"{', '.join(str(s) for s in sorted({x['config']['seed'] for x in records}))}.")


def forward_figure(seeds=SEEDS, out_dir=None):
    """Chapter 3's stack at init, one line per λ and seed: rms(x_l), the direct term's share of x_L,
    the branch ratio ‖F(x_l)‖ / ‖λ x_l‖ and the gradient ratio, against the unit l (log axes)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.16, horizontal_spacing=0.12,
                        subplot_titles=(
        "signal: rms of xₗ (λ > 1: off the top)", "share of x_L carried by λᴸ⁻ˡ xₗ",
        "branch ÷ shortcut: ‖F(xₗ)‖ / ‖λ xₗ‖ (λ > 1: below)",
        "gradient: ‖∂E/∂xₗ‖ / ‖∂E/∂x_L‖"))
    every = []
    for lam in mech.LAMS:
        for n, r in enumerate(_forward(lam, seeds, out_dir)):
            every.append(r)
            v = r["values"]
            l = list(range(len(v["rms"])))
            panels = ((v["rms"], 1, 1), ([10 ** min(max(s, -300), 300) for s in v["log10_share"]],
                                         1, 2),
                      (v["branch_ratio"], 2, 1), ([10 ** g for g in v["log10_grad_ratio"]], 2, 2))
            for ys, row, col in panels:
                # fewer points to ship
                keep = sorted(set(range(0, len(ys), SHOW_EVERY)) | {len(ys) - 1})
                fig.add_trace(go.Scatter(x=[l[k] for k in keep], y=[ys[k] for k in keep],
                                         mode="lines", name=f"λ = {lam:g}", legendgroup=str(lam),
                                         showlegend=n == 0 and (row, col) == (1, 1), opacity=0.8,
                                         **palette.style(palette.lam(lam), width=2)), row, col)
    if not every:
        return None
    grad = {}
    for r in every:
        grad.setdefault(r["config"]["network"]["lam"], []).append(
            r["values"]["log10_grad_ratio"][0])
    fig.update_layout(meta={"alt": (
        "At initialisation the gradient at the first of the 1000 units, as a multiple of the "
        "last's (median over seeds), by λ: " + "; ".join(
            f"{lam:g}: {plain_number(10 ** statistics.median(g))}" for lam, g in grad.items())
        + ".")})
    fig.update_yaxes(type="log", exponentformat="power")
    # λ > 1 runs off these two: the range shows λ <= 1
    for row, key in ((1, "rms"), (2, "branch_ratio")):
        kept = [y for r in every if r["config"]["network"]["lam"] <= 1 for y in r["values"][key]]
        fig.update_yaxes(range=log_range(kept), row=row, col=1)
    fig.update_xaxes(title_text="unit l (x_L: l = 1000)")
    # the legend at the foot, off the curves (inside, it covered λ = 1's)
    fig.update_layout(height=760, font=FONT)
    # (on a phone the λ legend wraps: rows enough for that, off the caption)
    figure_style.caption(fig, _caption(every), legend_rows=3)
    return figure_style.title(fig, "A stack of 1000 units with shortcuts scaled by λ, at "
                              "initialisation", "one line per λ and seed; log axes")


def weight_input_figure(seeds=SEEDS, out_dir=None):
    """Per unit l, the std of its first weight layer's input (solid: at init; dashed: the last
    forward recorded) and of its other weight layers' (dotted, at init), seed mean (geometric),
    ResNet-110 and ResNet-1001 side by side."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=[f"ResNet-{d}" + (" (¼ width)" if d == 1001 else "")
                                        for d in mech.DEPTHS])
    every, spread = [], {}  # (unit, depth): largest ÷ smallest 1st-layer input std, init and last
    for col, depth in enumerate(mech.DEPTHS, 1):
        for unit in mech.UNITS:
            recs = _training(unit, depth, seeds, out_dir)
            if not recs:
                continue
            every += recs
            first, last = (recs[0]["values"]["forwards"][i]["step"] for i in (0, -1))
            for step, dash, which in ((first, "solid", 0), (last, "dash", 0), (first, "dot", 1)):
                stds = [mech._forward_at(r, step)["weight_input_std"] for r in recs]
                if which == 0:
                    ys = [_gmean([s[k][0] for s in stds]) for k in range(len(stds[0]))]
                    spread.setdefault((unit, depth), []).append(max(ys) / min(ys))
                else:
                    ys = [_gmean([max(s[k][1:]) for s in stds]) for k in range(len(stds[0]))]
                what = "1st weight layer" if which == 0 else "other weight layers (largest)"
                fig.add_trace(go.Scatter(y=ys, mode="lines",
                                         **palette.style(unit, dash=dash, width=2),
                                         name=UNIT_WORDS[unit], legendgroup=unit,
                                         showlegend=col == 1 and dash == "solid",
                                         hovertemplate=f"{UNIT_WORDS[unit]}, {what}, step "
                                                       f"{step}<br>unit %{{x}}: "
                                                       "%{y:.3g}<extra></extra>"), 1, col)
    if not every:
        return None
    fig.update_yaxes(type="log", title_text="std of the weight layer's input", col=1)
    fig.update_yaxes(type="log")
    fig.update_xaxes(title_text="unit l")
    key = (
        "solid: each unit's 1st weight layer at init; dotted: its other weight layers "
        "(largest), at init;<br>dashed: the 1st weight layer in the last forward recorded "
        "(steps "
        + ", ".join(
            f"{step} at ResNet-{d}"
            for d, step in sorted(
                {
                    r["config"]["recipe"]["model"]["kwargs"]["depth"]: r["values"]["forwards"][-1][
                        "step"
                    ]
                    for r in every
                }.items()
            )
        )
        + ")"
    )
    fig.update_layout(height=640, font=FONT, meta={"alt": (
        "The first weight layer's input std, largest over smallest across the units, at init and "
        "in the last forward recorded: " + "; ".join(
            f"{UNIT_ROWS[u].short} ResNet-{d}: {plain_number(a)} and {plain_number(b)}"
            for (u, d), (a, b) in spread.items()) + ".")})
    figure_style.title(fig, "How far each weight layer's input strays from 1, unit by unit")
    return figure_style.caption(fig, key + "<br>" + _caption(every), legend_rows=3)


def truncation_figure(seeds=SEEDS, out_dir=None):
    """The original unit's fraction of y_l < 0 per unit, against the relative depth l / L, at init
    and at TRUNCATION_STEP (seed mean; ResNet-110 also at its last forward recorded)."""
    import plotly.graph_objects as go

    fig, every, said = go.Figure(), [], {}
    for depth in (110, 1001):
        recs = _training("original", depth, seeds, out_dir)
        if not recs:
            continue
        every += recs
        steps = sorted({0, mech.TRUNCATION_STEP, recs[0]["values"]["forwards"][-1]["step"]})
        for step, dash in zip(steps, ("dot", "solid", "dash")):
            negs = [mech._forward_at(r, step)["negative_fraction"] for r in recs]
            n = len(negs[0])
            ys = [statistics.fmean(x[k] for x in negs) for k in range(n)]
            said.setdefault(depth, []).append(f"{statistics.fmean(ys):.2f} at step {step}")
            fig.add_trace(go.Scatter(x=[(k + 0.5) / n for k in range(n)], y=ys,
                                     mode="lines",
                                     **palette.style(f"ResNet-{depth}", dash=dash, width=2),
                                     name=f"ResNet-{depth}, step {step}"))
    if not every:
        return None
    fig.update_layout(height=520, font=FONT, xaxis_title="relative depth l / L",
                      yaxis_title="fraction of yₗ = xₗ + F(xₗ) below 0", meta={"alt": (
                          "The original unit's fraction of yₗ below 0, averaged over its units: "
                          + "; ".join(f"ResNet-{d}: " + ", ".join(v) for d, v in said.items())
                          + ".")})
    # on a phone each of its entries takes a row of its own
    figure_style.caption(fig, _caption(every), legend_rows=6)
    return figure_style.title(fig, "The original unit's truncation by depth, in training",
                              "dotted: at initialisation; solid: at step "
                              f"{mech.TRUNCATION_STEP}; dashed: the last forward recorded",
                              room=16)


def gain_fit(seeds=SEEDS, out_dir=None) -> dict:
    """Argued, fitted to the records (not a claim): one model of the gradient's growth for every λ.
    A unit multiplies the gradient by g_l with g_l² = λ² + c² r_l², r_l = ‖F(x_l)‖ / ‖x_l‖ the
    branch's size beside the signal it joins (measured forward); the c² that makes ∏ g_l equal the
    measured gradient ratio over all units, per λ and seed (bisection), and the measured per-unit
    gain (the ratio's L-th root)."""
    out = {}
    for lam in mech.LAMS:
        for r in _forward(lam, seeds, out_dir):
            v = r["values"]
            r2 = [(lam * b) ** 2 for b in v["branch_ratio"]]
            target = v["log10_grad_ratio"][0]
            lo, hi = 0.0, 20.0
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid,
                          hi) if sum(0.5 * math.log10(lam ** 2 + mid * x)
                                     for x in r2) < target else (lo, mid)
            out.setdefault(lam, {})[r["config"]["seed"]] = {
                "c2": (lo + hi) / 2,
                "per_unit_gain": 10 ** (target / len(r2)),
            }
    return out


def span(values, fmt=".2g", tens=False) -> str:
    """'a–b' over `values` (seeds, say) in `fmt`, or one value where they print alike; `tens`: the
    values are log10s, printed as powers of ten in inline math ('$10^{-46}$ to $10^{-45}$')."""
    lo, hi = (format(f(values), fmt) for f in (min, max))
    if tens:
        lo, hi = f"$10^{{{lo}}}$", f"$10^{{{hi}}}$"
    return lo if lo == hi else f"{lo} to {hi}" if tens else f"{lo}–{hi}"
