"""Paper B's experiments on the page: the MNIST grid beside Tables 1-2, the learned gates k block by
block, and the pruning curves of Fig 5 (plotly figures, so they work in the static site).

Everything here reads recorded runs (``results.find_result``: config hash equal to today's recipe);
nothing trains. A missing run is shown as missing, with the command that makes it.
"""
from __future__ import annotations

import statistics

import torch.nn as nn

from idmap_lib.engine import recipes
from idmap_lib.engine.build import build_model
from idmap_lib.models.introspect import residual_units
from ..evidence import metrics, paper_numbers
from ..evidence.reports import hardware
from ..evidence.runs import seed_runs
from ..evidence.seeds import ALL_SEEDS, SEEDS
from ..evidence.tables import drop_if_empty, mean_sd
from ..page import figure_style, palette
from ..plan.mnist_grid import DEPTHS, EXPERIMENT, KINDS, PRUNE_DEPTH
# the gates are read over every recorded seed: 3, and 5 where a claim needed more

KIND_NAMES = {"plain": "plain", "resnet": "ResNet", "gresnet": "GResNet"}


LOG_TICKS = [0.5, 1, 2, 5, 10, 20, 50, 100]  # % on the pruning figure's log axis

def recorded_runs(experiment, variant, scale, seeds, out_dir):
    """The recorded runs of one variant whose config is today's recipe (``runs.seed_runs``)."""
    return seed_runs(experiment, variant, scale, seeds, out_dir)[0]


def ok_runs(experiment, variant, scale, seeds=SEEDS, out_dir=None):
    """The recorded runs of one variant (today's recipe) that trained to the end: the ones with
    gates to read."""
    return [r for r in recorded_runs(experiment, variant, scale, seeds, out_dir)
            if r["status"] == "ok"]


def mnist_table(seeds=SEEDS, out_dir=None):
    """Paper B Tables 1-2 beside ours: one row per depth d; test error % of each kind (paper | ours,
    mean ± sd over seeds), the GResNet's mean learned k (paper | ours), the seeds found and the
    command for what is missing."""
    import pandas as pd

    rows = []
    for d in sorted(DEPTHS):
        row, missing = {"d": d}, False
        for k in KINDS:
            runs = recorded_runs(EXPERIMENT, f"{k}-d{d}", "full", seeds, out_dir)
            missing |= len(runs) < len(seeds)
            p = paper_numbers.paper_number(EXPERIMENT, f"{k}-d{d}")
            row[f"{KIND_NAMES[k]}: paper %"] = paper_numbers.printed(EXPERIMENT, f"{k}-d{d}")
            row[f"{KIND_NAMES[k]}: ours %"] = mean_sd([100 * metrics.final_test_err(r)
                                                       for r in runs])
            if k == "gresnet":
                row["mean k: paper"] = f"{p['mean_k']:.2f}"
                row["mean k: ours"] = mean_sd([metrics.mean_k(r) for r in runs
                                               if r["status"] == "ok"])
                row["seeds"] = len(runs)
        row["to run"] = f"python -m idmap_book mnist --depths {d}" if missing else ""
        rows.append(row)
    # every run recorded: nothing to run
    return drop_if_empty(pd.DataFrame(rows).set_index("d"), "to run")


def _band(fig, x, per, name, key, col=1, dash=None, group=None):
    """Mean line with a ± sd band over the lists in `per` (one list of values per x), in the colour
    of the palette's `key` (the net it draws)."""
    import plotly.graph_objects as go

    mean = [statistics.fmean(p) for p in per]
    sd = [statistics.stdev(p) if len(p) > 1 else 0.0 for p in per]
    group = group or name
    fig.layout.meta = {**(fig.layout.meta or {}), name: mean}  # for the text alternative
    fig.add_trace(go.Scatter(x=list(x) + list(x)[::-1], y=[m + s for m, s in zip(mean, sd)]
                             + [m - s for m, s in zip(mean, sd)][::-1], fill="toself",
                             **palette.style(key, fill=True, width=0),
                             opacity=0.18, hoverinfo="skip", showlegend=False,
                             legendgroup=group), 1, col)
    fig.add_trace(go.Scatter(x=list(x), y=mean, name=name, legendgroup=group,
                             **palette.style(key, marker={"size": 4}, dash=dash),
                             mode="lines+markers",
                             hovertemplate=f"{name}<br>%{{x}}: %{{y:.3f}}<extra></extra>"), 1, col)


def panel_note(fig, col, text, y=0.5):
    """Text in subplot `col` (row 1), on a white box over whatever is drawn there: e.g. what is not
    run yet."""
    axis = "" if col == 1 else col
    fig.add_annotation(text=text, showarrow=False, xref=f"x{axis} domain", yref=f"y{axis} domain",
                       x=0.5, y=y,
                       font=figure_style.FONT, bgcolor="rgba(255,255,255,0.85)")


def dimension_changing_blocks(cfg) -> list[int]:
    """1-based indices of the residual blocks of a config's network whose shortcut is not the
    identity."""
    units = residual_units(build_model(cfg["model"]))
    return [i + 1 for i, u in enumerate(units) if not isinstance(getattr(u.shortcut, "h", None),
                                                                 nn.Identity)]


def k_figure(seeds=ALL_SEEDS, out_dir=None):
    """The learned k block by block, mean ± sd over every recorded seed (each panel counts the seeds
    it found): the d = 100 GResNet on MNIST (full recipe) and the gated ResNet-32 and WRN-28-1 on
    CIFAR-10 (CPU scale), dimension-changing blocks marked. A panel without runs says so, with the
    command that makes them; the hardware the runs trained on is printed under the panels."""
    from plotly.subplots import make_subplots

    panels = [(EXPERIMENT, f"gresnet-d{PRUNE_DEPTH}", "full",
               f"MNIST GResNet d = {PRUNE_DEPTH}<br>full recipe",
               f"python -m idmap_book mnist --depths {PRUNE_DEPTH}"),
              ("b_resnet32", "gated", "cpu", "CIFAR-10 gated ResNet-32<br>CPU scale",
               "python -m idmap_book sweep --run --claims b_gated_resnet32_better"),
              ("b_wrn", "gated", "cpu", "CIFAR-10 gated WRN-28-1<br>CPU scale",
               "python -m idmap_book sweep --run --claims b_gated_wrn_better")]
    found = [ok_runs(e, v, scale, seeds, out_dir) for e, v, scale, _, _ in panels]
    fig = make_subplots(rows=1, cols=3, subplot_titles=[f"{title} ({len(runs)} seeds)"
                                                        for (*_, title,
                                                             _), runs in zip(panels, found)])
    machines = set()
    for col, ((e, v, scale, title, command), runs) in enumerate(zip(panels, found), 1):
        if not runs:
            panel_note(fig, col, f"{e} {v}: not run yet<br>{command.replace(' --', '<br>--')}")
            continue
        ks = [r["final"]["gates_k"] for r in runs]
        _band(fig, range(1, len(ks[0]) + 1), list(zip(*ks)), title.replace("<br>", ", "),
              palette.key(e, v), col)
        for b in dimension_changing_blocks(recipes.config(e, v, scale)):
            fig.add_vline(x=b, line={"dash": "dot", "color": "grey"}, row=1, col=col)
        machines |= {hardware(r) for r in runs}
    fig.layout.meta = {"alt": "The learned k after training, over the blocks: " + "; ".join(
        f"{n}: mean {statistics.fmean(m):.2f}, from {min(m):.2f} to {max(m):.2f}"
        for n, m in (fig.layout.meta or {}).items()) + "."}
    fig.update_xaxes(title_text="block")
    fig.update_yaxes(title_text="learned k", col=1)
    # the panel titles: two lines each, three abreast
    fig.update_annotations(font_size=figure_style.LEAST_PX)
    fig.update_layout(figure_style.LAYOUT, height=460, margin_b=90, showlegend=False)
    if machines:  # after the margin above: the caption widens it to what its lines need
        figure_style.caption(fig, "trained on: " + "; ".join(sorted(machines)))
    return figure_style.title(fig, "Paper B: the gates k after training",
                              # 2-line panel titles
                              "mean ± sd over seeds; dotted: dimension-changing blocks", room=56)


def pruning_figure(seeds=SEEDS, out_dir=None):
    """Paper B Fig 5: test error of the trained d = 100 nets against the number of blocks removed
    without retraining -- GResNet by smallest k first, GResNet and ResNet at random; mean ± sd over
    seeds (and random orders)."""
    import plotly.graph_objects as go

    fig = go.Figure().set_subplots(rows=1, cols=1)
    lines = [("gresnet", "by_gate", "GResNet, smallest k first", None),
             ("gresnet", "at_random", "GResNet, random order", "dash"),
             ("resnet", "at_random", "ResNet, random order", "dash")]
    notes, blocks = [], PRUNE_DEPTH // 2
    for kind, order, name, dash in lines:
        runs = [r for r in recorded_runs(EXPERIMENT, f"{kind}-d{PRUNE_DEPTH}", "full", seeds,
                                         out_dir)
                if (r.get("analysis") or {}).get("pruning")]
        if not runs:
            notes.append(f"{name}: not run yet")
            continue
        blocks = runs[0]["analysis"]["pruning"]["blocks"]
        curves = [c for r in runs for c in ([r["analysis"]["pruning"][order]] if order == "by_gate"
                                             else r["analysis"]["pruning"][order])]
        per = [[100 * c[n] for c in curves] for n in range(len(curves[0]))]
        _band(fig, range(len(per)), per, f"{name} ({len(runs)} seeds, {len(curves)} curves)",
              kind, dash=dash)
    fig.update_xaxes(title_text=f"blocks removed (of {blocks})")
    # ticks at 1, 2, 5 per decade, written out (plotly's default log ticks read "1 2 ... 9 10 2" for
    # 1-20 %)
    fig.update_yaxes(title_text="test error % (log scale)", type="log", tickvals=LOG_TICKS,
                     ticktext=[f"{v:g}" for v in LOG_TICKS])
    sub = "mean ± sd; MNIST, full recipe; no retraining" + ("; " + "; ".join(notes) if notes
                                                            else "")
    half = {n.split(" (")[0]: m[min(len(m) - 1, blocks // 2)]
            for n, m in (fig.layout.meta or {}).items()}
    fig.layout.meta = {"alt": (
        f"With half the {blocks} blocks removed, without retraining, the test error is "
        + ", ".join(f"{v:.1f} % ({n})" for n, v in sorted(half.items(), key=lambda x: x[1]))
        + ".") if half else "No pruned net recorded yet."}
    fig.update_layout(figure_style.LAYOUT, height=480, legend=figure_style.LEGEND_BELOW)
    return figure_style.title(fig,
                              f"Paper B Fig 5: removing residual blocks of a trained d = "
                              f"{PRUNE_DEPTH} net", sub,
                              room=36)  # no panel titles


def shut_gate_counts(depth=PRUNE_DEPTH, seeds=ALL_SEEDS,
                     out_dir=None) -> dict[int, tuple[int, int]]:
    """Per recorded MNIST GResNet of `depth` (full recipe) that trained: seed -> (its gates shut at
    the end, k <= 0 (``metrics.shut_gates``), its gates). Empty when none is recorded (`python -m
    idmap_book mnist --depths d`)."""
    return {r["config"]["seed"]: (metrics.shut_gates(r), len(r["final"]["gates_k"]))
            for r in ok_runs(EXPERIMENT, f"gresnet-d{depth}", "full", seeds, out_dir)}
