"""Our recorded runs beside the papers' numbers: tables, training curves, provenance lines.

- ``table(experiment)``: one row per variant; the paper's number (labelled as the paper's), then for each
  scale our test error, status, steps, wall time, hardware, date and commit of the result whose config hash
  matches the recipe exactly (``results.find_result``), or ``missing`` with the command that produces it.
  Nothing trains here (a page never trains on its own).
- ``curves(experiment, variants)``: training loss and test error against the step, from each result's history.
- ``provenance_note(result)``: one line saying where and how a number was made.
"""
from __future__ import annotations

import math

from . import paper_numbers, recipes, results

# the columns of each scale in ``table`` (plus "mean k" for experiments with gated nets)
FIELDS = ("net", "test error %", "status", "steps", "wall s", "hardware", "date", "commit", "command", "note")


def command(experiment: str, variant: str, scale: str, seed: int = 0) -> str:
    """The command line that produces this run's result (``python -m idmap_lib train ...``)."""
    cmd = f"python -m idmap_lib train --experiment {experiment} --variant {variant} --scale {scale}"
    return cmd + (f" --seed {seed}" if seed else "")


def net_name(cfg: dict) -> str:
    """Name of the network a config really trains: ResNet-110 (basic), ResNet-1001 (bottleneck, 1/4 width:
    16/32/64), WRN-28-1, MLP gresnet d=10."""
    m, kw = cfg["model"]["builder"], cfg["model"]["kwargs"]
    if m == "cifar_resnet":
        from .networks import cifar_block
        block, _ = cifar_block(kw["depth"], kw.get("block"))
        scale = kw.get("width_scale", 1)
        width = ""
        if scale != 1:
            base = (64, 128, 256) if block == "bottleneck" else (16, 32, 64)
            frac = f"1/{round(1 / scale)}" if (1 / scale).is_integer() else f"{scale:g}x"
            width = f", {frac} width: {'/'.join(str(int(w * scale)) for w in base)}"
        block = "1-layer skip" if block == "single" else block
        return f"ResNet-{kw['depth']} ({block}{width}{', gated' if kw.get('gated') else ''})"
    if m == "wide_resnet":
        return f"WRN-{kw['depth']}-{kw['widen']}{' gated' if kw.get('gated') else ''}"
    if m == "mlp":
        return f"MLP {kw['kind']} d={kw['d']}"
    return m


def hardware(result: dict) -> str:
    """'GPU name' or 'CPU name (N cores)' of a result, with the process count under DDP."""
    hw = result.get("hardware", {})
    if hw.get("gpu"):
        name = hw["gpu"]
    else:
        name = f"CPU {hw.get('cpu', '?')} ({hw.get('cpu_count', '?')} cores)"
    world = hw.get("world_size", 1) or 1
    return f"{world} x {name}" if world > 1 else name


def commit(result: dict) -> str:
    """Short git commit of the library that produced a result ('+modified' if it had local changes)."""
    g = result.get("git") or {}
    c = (g.get("commit") or "unknown")[:7]
    return c + ("+modified" if g.get("library_modified") else "")


def test_error_pct(result: dict) -> float:
    """Final test error of a result in %, NaN if the run ended without one (e.g. it diverged)."""
    e = (result.get("final") or {}).get("test_err")
    return float("nan") if e is None else 100.0 * e


def status(result: dict) -> str:
    """'ok', or 'fail (step s)' for a run the trainer stopped as diverged at step s."""
    if result.get("status") == "fail":
        step = (result.get("fail") or {}).get("step")
        return f"fail (step {step})"
    return str(result.get("status"))


def mean_k(result: dict) -> float:
    """Mean of the final learned gates k of a gated net (Paper B Table 2 reports it), NaN without gates."""
    ks = (result.get("final") or {}).get("gates_k")
    return sum(ks) / len(ks) if ks else float("nan")


def provenance_note(result: dict) -> str:
    """One line: hardware, torch version, seed, date, dataset source, commit."""
    src = result.get("dataset_source") or {}
    if src.get("kind") == "local":
        data = f"local copy {src.get('path', '?').rsplit('/', 1)[-1]} (sha256 {str(src.get('sha256'))[:12]})"
    elif src.get("kind") == "torchvision":
        data = f"torchvision {src.get('dataset', '')} download"
    else:
        data = str(src.get("kind", "unknown source"))
    v = result.get("versions") or {}
    return (f"{hardware(result)}, torch {v.get('torch', '?')}, {result.get('precision', '?')}, "
            f"seed {result.get('seed', (result.get('config') or {}).get('seed'))}, "
            f"{str(result.get('date', '?'))[:10]}, data: {data}, commit {commit(result)}")


def _row_from_result(r: dict, cfg: dict) -> dict:
    fail = r.get("fail") or {}
    return {"net": net_name(cfg), "test error %": test_error_pct(r), "status": status(r),
            "steps": (r.get("final") or {}).get("steps", float("nan")),
            "wall s": (r.get("final") or {}).get("wall_s", float("nan")), "hardware": hardware(r),
            "date": str(r.get("date", ""))[:10], "commit": commit(r), "command": "",
            "note": fail.get("reason", "")}


def _row_missing(cfg: dict, reason: str = "") -> dict:
    nan = float("nan")
    return {"net": net_name(cfg), "test error %": nan, "status": "missing", "steps": nan, "wall s": nan,
            "hardware": "", "date": "", "commit": "",
            "command": command(cfg["experiment"], cfg["variant"], cfg["scale"], cfg["seed"]), "note": reason}


def _has_gates(experiment: str) -> bool:
    for v in recipes.EXPERIMENTS[experiment]["variants"]:
        kw = recipes.config(experiment, v, "shrunk")["model"]["kwargs"]
        if kw.get("gated") or kw.get("kind") == "gresnet":
            return True
    return False


def table(experiment: str, scales=("shrunk", "full"), seed: int = 0, out_dir=None):
    """Paper's numbers and ours for every variant of `experiment`, one row per variant.

    Columns (a two-level header): ``(paper source, "test error %")`` and ``(…, "remark")`` are the paper's;
    then per scale ``(scale, field)`` for the fields in ``FIELDS`` (plus ``mean k`` where the nets are gated).
    A result counts only if its config hash equals the recipe's (``results.find_result``); otherwise the
    row says ``missing`` and gives the command. Nothing is trained here (a page never trains on its own).
    """
    import pandas as pd

    if experiment not in recipes.EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; valid: {', '.join(recipes.EXPERIMENTS)}")
    scales = (scales,) if isinstance(scales, str) else tuple(scales)
    bad = [s for s in scales if s not in recipes.SCALES]
    if bad:
        raise ValueError(f"unknown scale(s) {bad}; valid: {', '.join(recipes.SCALES)}")
    gated = _has_gates(experiment)
    src = paper_numbers.source(experiment)
    rows, index = [], []
    for variant in recipes.EXPERIMENTS[experiment]["variants"]:
        p = paper_numbers.paper_number(experiment, variant) or {}
        row = {(f"paper ({src})", "test error %"): p.get("value", float("nan")),
               (f"paper ({src})", "remark"): p.get("remark", "not in the paper")}
        if gated and experiment == "b_mnist":
            row[(f"paper ({src})", "mean k (Paper B Table 2)")] = p.get("mean_k", float("nan"))
        for scale in scales:
            cfg = recipes.config(experiment, variant, scale, seed)
            r = results.find_result(cfg, out_dir)
            if r is not None:
                cells = _row_from_result(r, cfg)
                if gated:
                    cells["mean k"] = mean_k(r)
            else:
                cells = _row_missing(cfg)
            if gated:
                cells.setdefault("mean k", float("nan"))
            row.update({(scale, k): v for k, v in cells.items()})
        rows.append(row)
        index.append(variant)
    df = pd.DataFrame(rows, index=pd.Index(index, name="variant"))
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    df.attrs.update(experiment=experiment, title=recipes.EXPERIMENTS[experiment]["title"], source=src)
    return df


def styled(df):
    """The table for reading (a pandas Styler): numbers rounded, empty cells as '–', columns empty in every
    row left out, the paper's remarks last (so our numbers stand next to the paper's), compact cells that do
    not wrap (the page scrolls the table sideways) except remarks and notes."""
    def empty(col):
        s = df[col]
        return all((isinstance(v, float) and math.isnan(v)) or v == "" for v in s)

    keep = [c for c in df.columns if not empty(c)]
    keep = [c for c in keep if c[1] != "remark"] + [c for c in keep if c[1] == "remark"]  # ours next to theirs
    view = df[keep]
    def number(digits):  # numbers rounded; words ("fail") as they are
        return lambda x: f"{x:.{digits}f}" if isinstance(x, (int, float)) else str(x)

    fmt = {c: number(2) for c in keep if c[1] in ("test error %", "mean k", "mean k (Paper B Table 2)")}
    fmt.update({c: number(0) for c in keep if c[1] in ("steps", "wall s")})
    wrap = [c for c in keep if c[1] in ("remark", "note")]
    return (view.style.format(fmt, na_rep="–")
            .set_table_styles([{"selector": "td, th", "props": "white-space: nowrap; font-size: 0.8em; "
                                                               "padding: 0.15em 0.5em; vertical-align: top;"},
                               {"selector": "th.col_heading.level0", "props": "text-align: center; "
                                                                              "border-bottom: 1px solid #bbb;"}])
            .set_properties(subset=wrap, **{"white-space": "normal !important", "min-width": "18em"}))


def curves(experiment: str, variants, scale: str = "shrunk", seed: int = 0, out_dir=None):
    """Training loss and test error (%) against the step for recorded runs of `variants` (a plotly figure).

    Each trace is one recorded result (looked up by config hash); its hover text and the figure's subtitle
    give hardware and date. Variants without a result are named in the title as missing.
    """
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    if isinstance(variants, str):
        variants = [variants]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss (mean over 10-step windows)",
                                                        "test error %"))
    colours = qualitative.Plotly + qualitative.D3
    missing, where = [], set()
    for i, v in enumerate(variants):
        cfg = recipes.config(experiment, v, scale, seed)
        r = results.find_result(cfg, out_dir)
        if r is None:
            missing.append(v)
            continue
        prov = f"{hardware(r)}, {str(r.get('date', ''))[:10]}"
        where.add(prov)
        c = colours[i % len(colours)]
        tr, te = r["history"]["train"], r["history"]["test"]
        name = v + (f" ({status(r)})" if r.get("status") != "ok" else "")
        hover = f"{v}<br>step %{{x}}: %{{y:.3f}}<br>{prov}<extra></extra>"
        fig.add_trace(go.Scatter(x=[h["step"] for h in tr], y=[h["train_loss"] for h in tr], name=name,
                                 legendgroup=v, line={"color": c}, hovertemplate=hover), 1, 1)
        fig.add_trace(go.Scatter(x=[h["step"] for h in te], y=[100 * h["test_err"] for h in te], name=name,
                                 legendgroup=v, showlegend=False, mode="lines+markers", line={"color": c},
                                 hovertemplate=hover), 1, 2)
    fig.update_xaxes(title_text="step")
    title = f"{recipes.EXPERIMENTS[experiment]['title'].split(':')[0]}, our {scale} runs (seed {seed})"
    sub = "; ".join(sorted(where)) if where else "no recorded runs"
    if missing:
        sub += f"; missing: {', '.join(missing)}"
    fig.update_layout(title={"text": f"{title}<br><sup>{sub}</sup>"}, height=440, margin={"t": 90},
                      legend={"title": {"text": "variant"}})
    return fig


def provenance_lines(tables, out_dir=None, seed: int = 0) -> list[str]:
    """``provenance_note`` of every recorded run behind the given tables (any scale), one line each."""
    recorded = {}
    for r in results.load_results(out_dir):  # sorted by file name; the first of a hash wins, as find_result
        recorded.setdefault(r.get("config_hash"), r)
    lines = []
    for t in (tables.values() if isinstance(tables, dict) else tables):
        experiment = t.attrs["experiment"]
        for v in t.index:
            for scale in recipes.SCALES:
                r = recorded.get(results.config_hash(recipes.config(experiment, v, scale, seed)))
                if r is not None:
                    lines.append(f"{experiment} / {v} / {scale}: {provenance_note(r)}")
    return lines
