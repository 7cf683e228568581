"""Training curves over seeds (chapters 7-11): ``band_curves`` draws each recorded seed, their mean
and a band of ± one sd, with the lr schedule marked (``lr_marks``) and a loss axis that one seed's
early spike does not set (``loss_range``; on a log axis the band is computed in log space:
``mean_band``); ``trained_on`` is the caption line of where and when the runs trained (never in a
title); ``lr_change_note`` says in words what each seed did when the lr reached its peak. Plotly
figures, so they work in the static site; they read recorded runs (runs.py) and never train.
"""
from __future__ import annotations

import math
import statistics

from idmap_lib.engine import recipes
from ..evidence import paper_numbers
from ..evidence.claim_words import listed, words
from ..evidence.metrics import ended_at_chance, reached_80, steps_to_80
from ..evidence.reports import hardware
from ..evidence.runs import seed_runs
from ..evidence.seeds import ALL_SEEDS
from ..page import figure_style, palette
from ..page.prose import plain_number
from ..page.log_axes import log_ticks
from ..plan.cpu_scale import PROBE_MAX_RISE


PANELS = {  # what a curve panel shows: (history part, key, scale of the value, its title)
    "train_loss": ("train", "train_loss", 1, "training loss ({log}-step windows, log axis)"),
    "train_err": ("train", "train_err", 100, "training error %"),
    "test_err": ("test", "test_err", 100, "test error %"),
}


def lr_marks(fig, schedule, cols=(1, 2)):
    """The learning-rate schedule on every panel: the warm-up shaded (a ramp, or a step at its end:
    the paper's), a dashed line at each lr change, labelled (on the first panel) with the lr that
    starts there."""
    def label(text, col, **where):
        size = figure_style.LEAST_PX
        return ({"annotation_text": text, "annotation_font_size": size, **where} if col == cols[0]
                else {})

    warm, lr = schedule.get("warmup_steps", 0), schedule["base"]
    ramp = schedule.get("warmup") == "linear"
    changes = [] if ramp or not warm else [(warm, lr)]
    changes += [(m, lr / schedule["divisor"] ** (i + 1))
                for i, m in enumerate(schedule.get("milestones", []))]
    for col in cols:
        if warm:
            text = (f"warm-up: lr ramps {schedule['warmup_lr']:g} → {lr:g}" if ramp else
                    f"warm-up: lr {schedule['warmup_lr']:g}")
            fig.add_vrect(x0=0, x1=warm, fillcolor="grey", opacity=0.08, line_width=0, row=1,
                          col=col,
                          exclude_empty_subplots=False,
                          **label(text, col, annotation_position="bottom left"))
        for x, new_lr in changes:
            fig.add_vline(x=x, line_dash="dash", line_color="grey", row=1, col=col,
                          exclude_empty_subplots=False,
                          **label(f"lr {new_lr:g}", col))


def loss_range(traces, spread=2.0) -> tuple[float, float, bool]:
    """(low, high, cut) of a log axis for these traces (one list of values each: a seed, or all
    seeds of a variant): all of them, unless one trace's highest value (an early spike) lies more
    than `spread` times above every other trace's: then the axis stops just above the others (cut =
    True), so that one curve does not flatten all the others."""
    tops = sorted((max(t) for t in traces if t), reverse=True)
    lo = min(min(t) for t in traces if t) * 0.9
    if len(tops) > 1 and tops[0] > spread * tops[1]:
        return lo, tops[1] * 1.15, True
    return lo, tops[0] * 1.1, False


def band_curves(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None, title=None,
                panels=("train_loss", "test_err"), height=560):
    """Training loss (log axis) and test error (%) against the step -- or the ``panels`` asked for
    (PANELS: a run evaluated only at its end, like ResNet-1001's 128 steps, is better read by its
    training error): for each variant every recorded seed as a thin line, their mean as a thick one
    with a band of ± one standard deviation, and the lr schedule marked (``lr_marks``; a plotly
    figure that works without a kernel). `height`: px (a chapter's opening figure is shorter, to
    share the first screen with the answer)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    recipe = recipes.config(experiment, variants[0], scale)  # what the variants share
    titles = [PANELS[p][3].format(log=recipe["log_every"]) for p in panels]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=titles, horizontal_spacing=0.08)
    missing, where, losses = [], set(), {}  # losses: variant -> every seed's values
    ends, jumps = {}, {}  # the text alternative's numbers: the means' last values, the jump's rise
    for v in variants:
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        if not runs:
            missing.append(v)
            continue
        where.update(hardware(r) for r in runs)
        pk = palette.key(experiment, v)  # a unit keeps its colour on every page
        said = words(experiment, v)  # the legend in words, never the variant's key
        if recipe["schedule"].get("warmup_steps") and recipe["schedule"].get("warmup") != "linear":
            jumps[said] = statistics.median(_rises(r, [recipe["schedule"]["warmup_steps"]])[0]
                                            for r in runs)
        label = f"{said} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        for col, (part, key, scale_y, _) in enumerate((PANELS[p] for p in panels), 1):
            for r in runs:
                h = r["history"][part]
                if key == "train_loss":
                    losses.setdefault(v, []).extend(x[key] for x in h)
                fig.add_trace(go.Scatter(x=[x["step"] for x in h], y=[scale_y * x[key] for x in h],
                                         mode="lines", **palette.style(pk, width=1),
                                         opacity=0.45, legendgroup=v,
                                         showlegend=False, name=f"{v} seed {r['config']['seed']}",
                                         hovertemplate=f"{said} seed {r['config']['seed']}<br>step "
                                                       f"%{{x}}: %{{y:.3f}}<extra></extra>"), 1,
                                                       col)
            steps = sorted({h["step"] for r in runs for h in r["history"][part]})
            per = [[scale_y * h[key] for r in runs for h in r["history"][part] if h["step"] == s]
                   for s in steps]
            mean, upper, lower = mean_band(per, log=key == "train_loss")
            if mean:
                ends.setdefault(PANELS[panels[col - 1]][3].split(" (")[0], {})[said] = mean[-1]
            fig.add_trace(go.Scatter(x=steps + steps[::-1], y=upper + lower[::-1], fill="toself",
                                     **palette.style(pk, fill=True, width=0), opacity=0.15,
                                     hoverinfo="skip",
                                     legendgroup=v,
                                     showlegend=False), 1, col)
            fig.add_trace(go.Scatter(x=steps, y=mean, name=label, legendgroup=v,
                                     showlegend=col == 1,
                                     mode="lines+markers" if part == "test" else "lines",
                                     **palette.style(pk, width=3,
                                                     dash=palette.dash(experiment, v)),
                                     hovertemplate=f"{said} mean<br>step %{{x}}: "
                                                   f"%{{y:.3f}}<extra></extra>"), 1, col)
    lr_marks(fig, recipe["schedule"], cols=range(1, len(panels) + 1))
    fig.update_xaxes(title_text="step")
    log_band = " (log axis: geometric mean × / ÷ sd)" if "train_loss" in panels else ""
    sub = "thin: each seed; thick: mean ± sd" + log_band + ("" if where
                                                            else "; no recorded runs yet")
    if "train_loss" in panels and losses:
        lo, hi, cut = loss_range(list(losses.values()))
        fig.update_yaxes(type="log", range=[math.log10(lo), math.log10(hi)], **log_ticks(lo, hi),
                         row=1, col=panels.index("train_loss") + 1)
        if cut:
            top = max(losses, key=lambda v: max(losses[v]))
            sub += (f"<br>loss axis cut at {hi:.2g}: {words(experiment, top)}'s "
                    f"early spike, up to "
                    f"{max(losses[top]):.3g}, runs off the top (hover its lines)")
    if missing:
        sub += f"; not run yet: {', '.join(words(experiment, v) for v in missing)}"
    tables = (paper_numbers.source(experiment, variants)
              or recipes.EXPERIMENTS[experiment]["title"].split(":")[0])
    # the tables of the variants shown
    head = title or f"{tables}, our runs ({recipes.SCALE_WORDS[scale]})"
    # below: wide panels
    fig.update_layout(figure_style.LAYOUT, height=height, legend=figure_style.LEGEND_BELOW,
                      meta={"alt": curves_alt(head, ends, jumps, recipe["steps"])})
    return figure_style.title(fig, head, sub)


def curves_alt(head, ends, jumps, steps) -> str:
    """What a figure of curves shows, in words (its text alternative): the loss each variant's
    mean rose by at the lr jump (`jumps`: {name: the seeds' median rise, nats}; flat: within
    PROBE_MAX_RISE) and where each panel's mean ended (`ends`: {panel: {name: last value}}), best
    first."""
    said = []
    if jumps:
        flat = [n for n, r in jumps.items() if r <= PROBE_MAX_RISE]
        rose = [f"{n}'s loss rises {r:.2g} nats"
                for n, r in sorted(jumps.items(), key=lambda x: x[1]) if r > PROBE_MAX_RISE]
        said.append("at the lr jump " + "; ".join(
            ([f"{listed(flat)}'s loss stays flat"] if flat else []) + rose)
                    + " (median over seeds)")
    for panel, by in ends.items():
        ranked = sorted(by.items(), key=lambda x: x[1])
        said.append(f"{panel} after {steps:,} steps: "
                    + ", ".join(f"{n} {plain_number(x)}" for n, x in ranked))
    text = "; ".join(said) if said else "no recorded run yet"
    return f"{head}. {text[0].upper()}{text[1:]}."


def mean_band(per, log=False):
    """(mean, upper, lower) over the seeds at each step (`per`: a list of each step's values): mean
    ± one sd, or on a log axis (`log`) in log space -- the geometric mean times and divided by
    exp(sd of the logs) -- so that the band stays around the curves it summarises (a band of mean -
    sd on a log axis falls below every seed)."""
    if not log:
        mean = [statistics.fmean(p) for p in per]
        sd = [statistics.stdev(p) if len(p) > 1 else 0.0 for p in per]
        return mean, [m + d for m, d in zip(mean, sd)], [max(m - d, 1e-3) for m, d in zip(mean, sd)]
    logs = [[math.log(max(x, 1e-12)) for x in p] for p in per]
    mu = [statistics.fmean(p) for p in logs]
    sd = [statistics.stdev(p) if len(p) > 1 else 0.0 for p in logs]
    return ([math.exp(m) for m in mu], [math.exp(m + d) for m, d in zip(mu, sd)],
            [math.exp(m - d) for m, d in zip(mu, sd)])


def _rises(run, marks) -> list[float]:
    """How far the training loss rose after each lr change in `marks` (the end of the warm-up, then
    each drop): the highest window loss up to the next change minus the loss of the window that ends
    at the change; 0 if it fell."""
    tr = run["history"]["train"]
    out = []
    for m, nxt in zip(marks, list(marks[1:]) + [math.inf]):
        before = [h["train_loss"] for h in tr if h["step"] <= m]
        after = [h["train_loss"] for h in tr if m < h["step"] <= nxt]
        out.append(max([0.0] + [x - before[-1] for x in after if math.isfinite(x)]) if before
                   else 0.0)
    return out


def lr_change_note(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None) -> str:
    """What the recorded seeds did at the lr's changes, said once: one sentence (how the lr moves,
    which variants rose by more than PROBE_MAX_RISE, and which learned -- got below 80 % training
    error -- then ended at chance) and one small table (per variant: the worst rise after each
    change over its seeds, the steps to 80 %, how many ended at chance). Markdown; "" where the
    recipe has no warm-up or no run is recorded."""
    sched = recipes.config(experiment, variants[0], scale)["schedule"]
    if not sched.get("warmup_steps"):
        return ""
    warm, lo, hi = sched["warmup_steps"], sched["warmup_lr"], sched["base"]
    how = (f"ramps from {lo:g} to {hi:g} over the first {warm} steps"
           if sched.get("warmup") == "linear" else
           f"is {lo:g} for the first {warm} steps and jumps to {hi:g} in one step")
    marks = [warm] + list(sched["milestones"])
    heads = [f"worst rise after step {m}" for m in marks]
    rows, rose, fell_back = [], [], []
    for v in variants:
        runs, _ = seed_runs(experiment, v, scale, seeds, out_dir)
        if not runs:
            continue
        rises = [_rises(r, marks) for r in runs]
        worst = [max(x[i] for x in rises) for i in range(len(marks))]
        back = sum(reached_80(r) and ended_at_chance(r) for r in runs)
        name = words(experiment, v)
        if worst[0] > PROBE_MAX_RISE:
            rose.append(name)
        if back:
            fell_back.append(f"{name} ({back} of {len(runs)})")
        rows.append("| " + " | ".join([name, *(f"{x:.2f}" for x in worst),
                                       ", ".join(f"{steps_to_80(r):.0f}" for r in runs),
                                       f"{sum(ended_at_chance(r) for r in runs)} of {len(runs)}"])
                                       + " |")
    if not rows:
        return ""
    said = (f"At the {recipes.SCALE_WORDS[scale]} the lr {how}, then is divided by "
            f"{sched['divisor']:g} at steps {', '.join(map(str, sched['milestones']))}. When it "
            f"reached {hi:g}, the loss rose by more than {PROBE_MAX_RISE:g} in "
            f"{listed(rose, 'no variant')}"
            + (f"; {listed(fell_back)} learned (got below 80 % training error) and then fell back "
               f"to chance"
               if fell_back else "") + ".")
    head = "| variant | " + " | ".join(heads) + " | steps to 80 % (each seed) | ended at chance |"
    return said + "\n\n" + head + "\n|" + "---|" * (len(heads) + 3) + "\n" + "\n".join(rows)


def trained_on(experiment, variants, scale="cpu", seeds=ALL_SEEDS, out_dir=None) -> str:
    """The caption line of a figure of these runs: where and when they trained ('Trained on CPU AMD
    EPYC (2 cores, 1 thread), 2026-11-30 to 2026-12-01.'), never in the figure's title; '' without
    runs."""
    where, dates = set(), set()
    for v in variants:
        for r in seed_runs(experiment, v, scale, seeds, out_dir)[0]:
            where.add(hardware(r))
            if r.get("date"):
                dates.add(r["date"][:10])
    if not where:
        return ""
    when = sorted(dates)
    span = f", {when[0]}" + (f" to {when[-1]}" if len(when) > 1 else "") if when else ""
    return "Trained on " + "; ".join(sorted(where)) + span + "."
