"""The paper's full recipe on the page: where each run stands (``full_scale_status``: finished,
under way from its committed checkpoint, or the command, with the time one run takes) and its curves
over the whole recipe (``full_recipe_curves``) beside the paper's final error.
"""
from __future__ import annotations

from idmap_lib.engine import recipes, results
from ..evidence import claims, paper_numbers, power, verdicts
from ..evidence.checkpoints import committed_checkpoint
from ..evidence.claim_words import words
from ..evidence.metrics import final_test_err
from ..evidence.reports import LOSSY_NOTE, command, hardware, lossy_copy, net_name
from ..evidence.rule import MIN_SEEDS
from ..evidence.seeds import SEEDS
from ..page import figure_style, palette
from ..page.repository import repository_url
from ..plan.run_times import derived_note, full_recipe_time
from .curves import lr_marks


PAPER_A = ("a_table1_shortcuts", "a_table2_activations", "a_table3_preact")  # Paper A's experiments


def _checkpoints_readme() -> str:
    """A link to data/checkpoints/README.md (how to resume a run under way) in the book's
    repository."""
    readme = "data/checkpoints/README.md"
    return f'<a href="{repository_url()}/blob/main/{readme}">{readme}</a>'


def full_scale_status(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None):
    """For the full recipe: recorded (test error), under way (a committed checkpoint's step), or the
    command, and the time one run takes (``run_times``: measured on an H200, derived for a T4)."""
    import pandas as pd

    rows, lossy = [], False
    for v in variants:
        cfg = recipes.config(experiment, v, "full", seed)
        r = results.find_result(cfg, out_dir)
        lossy = lossy or (r is not None and lossy_copy(r))
        # a number, or Paper A's "fail": text either way
        row = {"variant": words(experiment, v), "network": net_name(cfg),
               "paper: error %": paper_numbers.printed(experiment, v)}
        # what trains (results.training_hash): rows of several tables with one id are one training
        training = results.training_hash(cfg)[:12]
        c = None if r is not None else committed_checkpoint(cfg, checkpoint_dir)[0]
        if r is not None:
            row.update({"ours: error %": f"{100 * final_test_err(r):.2f}",
                        "state": f"finished on {hardware(r)}"})
        elif c is not None:
            last = c["history"]["test"][-1] if c["history"]["test"] else {}
            row.update({"ours: error %": "–",
                        "state": f"under way: step {c['step']:,} of {cfg['steps']:,} (test error "
                                 f"{100 * last.get('test_err', float('nan')):.1f} % at step "
                                 f"{last.get('step', 0):,}; resume on a GPU: "
                                 f"{_checkpoints_readme()})"})
        else:
            row.update({"ours: error %": "–", "state": "not run: " + command(experiment, v, "full")
                        + " --cuda-graph"})
        row["one run takes"] = "–" if r is not None else full_recipe_time(cfg, out_dir=out_dir)
        row["training"] = training
        rows.append(row)
    df = pd.DataFrame(rows).set_index("variant")
    lossy_words = f" A finished run here was {LOSSY_NOTE}." if lossy else ""
    df.attrs["caption"] = derived_note().rstrip(".") + "." + lossy_words
    return df


def full_scale_table(experiments, seed=0, out_dir=None, checkpoint_dir=None):
    """``full_scale_status`` of every CIFAR-10 variant of these experiments, one table with the
    paper's table first (no copy of CIFAR-100 is available offline where the book is built)."""
    import pandas as pd

    tables = []
    for e in experiments:
        df = full_scale_status(e,
                               [v for v in recipes.EXPERIMENTS[e]["variants"]
                                if not v.startswith("c100")], seed,
                               out_dir, checkpoint_dir)
        df.insert(0, "table", recipes.EXPERIMENTS[e]["title"].split(":")[0])
        tables.append(df)
    return pd.concat(tables)


def _states(df):
    return df["state"].map(lambda s: "finished" if s.startswith("finished") else s.split(":")[0])


def state_counts(df) -> dict:
    """{state: trainings} of a ``full_scale_status`` table: finished, under way, not run (most
    first), each training counted once however many rows (tables) show it: rows with one
    ``training`` id (results.training_hash) are one run, one result or one checkpoint."""
    states = _states(df)
    if "training" in df.columns:
        states = states.groupby(df["training"].to_numpy()).first()
    return {s: int(n) for s, n in states.value_counts().items()}


def shown_more_than_once(df) -> dict:
    """{state: [[where, ...] for each training that several rows show]} of a ``full_scale_table``,
    where = 'Table 2 (the original unit)': the paper's table, the variant in words."""
    tables = df["table"].str.replace("Paper A ", "") if "table" in df.columns else None
    where = [f"{t} ({v})" if tables is not None else str(v)
             for t, v in zip(tables if tables is not None else df.index, df.index)]
    out = {}
    groups = df.assign(_s=_states(df).to_numpy()).groupby(["training", "_s"], sort=False).indices
    for (_, state), idx in groups.items():
        if len(idx) > 1:
            out.setdefault(state, []).append([where[i] for i in idx])
    return out


def counts_in_words(df) -> str:
    """'24 distinct trainings in 29 rows: 22 not run (...), 1 finished (one training, shown as
    Table 1 (the identity shortcut), Table 2 (the original unit), ...), ...' of a
    ``full_scale_table``: each training counted once."""
    counts, more = state_counts(df), shown_more_than_once(df)
    parts = []
    for s, n in counts.items():
        shown = "; ".join("one training, shown as " + ", ".join(w) for w in more.get(s, []))
        parts.append(f"{n} {s}" + (f" ({shown})" if shown else ""))
    return f"{sum(counts.values())} distinct trainings in {len(df)} rows: " + ", ".join(parts)


def full_recipe_runs(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None):
    """{variant: (history, step, total, state, result)} of the full-recipe runs finished (their
    result) or under way (their committed checkpoint; result None); variants with neither are left
    out."""
    out = {}
    for v in variants:
        cfg = recipes.config(experiment, v, "full", seed)
        r = results.find_result(cfg, out_dir)
        if r is not None:
            out[v] = (r["history"], cfg["steps"], cfg["steps"], f"finished on {hardware(r)}", r)
            continue
        c = committed_checkpoint(cfg, checkpoint_dir)[0]
        if c is not None:
            out[v] = (c["history"], c["step"], cfg["steps"],
                      f"under way, step {c['step']:,} of {cfg['steps']:,}",
                      None)
    return out


def full_recipe_words(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None,
                      runs=None) -> str:
    """Where the full-recipe runs stand, in sentences: each finished run's test error beside the
    paper's, each run under way's step, no verdict below the rule's seeds, and what a finished run's
    data was. `runs`: what ``full_recipe_runs`` read, when the caller has it."""
    runs = (runs if runs is not None else full_recipe_runs(experiment, variants, seed, out_dir,
                                                           checkpoint_dir))
    done, going = [], []
    for v, (h, step, total, _, r) in runs.items():
        cfg = recipes.config(experiment, v, "full", seed)
        if r is not None:
            done.append((net_name(cfg), final_test_err(r), paper_numbers.printed(experiment, v),
                         lossy_copy(r)))
        else:
            going.append(f"{net_name(cfg)} is under way (step {step:,} of {total:,})")
    parts = [f"{n} finished with {100 * e:.2f} % test error (the paper: {p} %)"
             for n, e, p, _ in done] + going
    if not parts:
        return "No full-recipe run of this page has started yet."
    text = f"Seed {seed}: " + "; ".join(parts) + "."
    text += (f" One seed is no verdict: a claim about the recipe's end needs {MIN_SEEDS} seeds of "
             f"each unit, "
             "finished.")
    if any(lossy for *_, lossy in done):
        text += f" The finished run{'s were' if len(done) > 1 else ' was'} {LOSSY_NOTE}."
    return text


def full_recipe_curves(experiment, variants, seed=0, out_dir=None, checkpoint_dir=None, title=None,
                       runs=None):
    """The full-recipe runs as they stand (finished, or under way: their committed checkpoint), over
    the whole recipe's steps with its lr schedule marked, and the paper's final test error as a
    dotted line per variant -- one scale only: the CPU scale's runs are in ``band_curves``. `runs`:
    as ``full_recipe_words``."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    runs = (runs if runs is not None else full_recipe_runs(experiment, variants, seed, out_dir,
                                                           checkpoint_dir))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss (log axis)", "test error %"),
                        horizontal_spacing=0.08)
    total = recipes.config(experiment, variants[0], "full", seed)["steps"]
    said_alt = []  # the text alternative: each run's last test error
    for v in variants:
        pk, said = palette.key(experiment, v), words(experiment, v)
        if v in runs:
            h, _, _, state, _ = runs[v]
            if h["test"]:
                said_alt.append(f"{said}: {100 * h['test'][-1]['test_err']:.2f} % at step "
                                f"{h['test'][-1]['step']:,} ({state})")
            for col, key, part, k in ((1, "train_loss", "train", 1), (2, "test_err", "test", 100)):
                fig.add_trace(go.Scatter(x=[x["step"] for x in h[part]],
                                         y=[k * x[key] for x in h[part]],
                                         mode="lines" if col == 1 else "lines+markers",
                                         **palette.style(pk, dash=palette.dash(experiment, v)),
                                         name=f"{said} ({state})", legendgroup=v,
                                         showlegend=col == 1,
                                         hovertemplate=f"{said}<br>step %{{x}}: "
                                                       f"%{{y:.3f}}<extra></extra>"), 1, col)
        p = paper_numbers.paper_number(experiment, v)
        if p:
            fig.add_trace(go.Scatter(x=[0, total], y=[p["value"]] * 2, mode="lines", legendgroup=v,
                                     **palette.style(pk, dash="dot"),
                                     # short enough for one line on a phone: the subtitle and the
                                     # hover name the source
                                     name=f"{said} (paper {p['value']:g} %)",
                                     hovertemplate=f"{said}: {p['source']} %{{y}} %"
                                                   "<extra></extra>"),
                                     1, 2)
    lr_marks(fig, recipes.config(experiment, variants[0], "full", seed)["schedule"])
    fig.update_xaxes(title_text="step", range=[0, total])
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    missing = [v for v in variants if v not in runs]
    sub = (f"seed {seed}; solid: ours as it stands; dotted: the paper's final test error"
           + (f"; not run yet: {', '.join(words(experiment, v) for v in missing)}"
              if missing else ""))
    head = title or recipes.EXPERIMENTS[experiment]["title"].split(":")[0] + ", the full recipe"
    fig.update_layout(figure_style.LAYOUT, height=560, legend=figure_style.LEGEND_BELOW,
                      meta={"alt": f"{head}: the test error where each run stands: "
                                   + ("; ".join(said_alt) or "none evaluated yet") + "."})
    return figure_style.title(fig, head, sub)


def paper_a_keys() -> list[str]:
    """The keys of Paper A's claims in the CPU-scale table (those the full recipe would decide)."""
    return [k.key for k in claims.CLAIMS if k.experiment.startswith("a_") and k.scale == "cpu"
            and k.by == "paper" and k.experiment != "a_swaps"]


def seeds_table(keys=None, mc_draws: int = 4000):
    """The seeds a side each final-error part of Paper A's claims (or `keys`') needs
    (``power.seeds_table``): at Paper A's spreads 0.14, 0.16 and 0.20, at 5 % and at the Holm level,
    the queue's choice and the rule simulated there."""
    return power.seeds_table(paper_a_keys() if keys is None else keys, mc_draws)


def paper_a_words(table=None, out_dir=None) -> str:
    """Paper A's claims at the full recipe, in words: their verdicts there, where their runs stand
    (`table`: the ``full_scale_table`` of PAPER_A, seed 0 of each) and how many seeds a verdict
    needs (``power.seeds_in_words``)."""
    gpu = full_scale_table(PAPER_A, out_dir=out_dir) if table is None else table
    keys = paper_a_keys()
    return (verdicts.counts_in_words(verdicts.claims_table(keys, scale="full", out_dir=out_dir),
                                     "Full recipe on a GPU (Paper A's claims)")
            + f" These are the {len(keys)} claims of Paper A in the CPU-scale table; the "
              f"full-recipe table below (seed 0 of each) has {counts_in_words(gpu)}: a row of "
              f"Table 1 or 3 that trains what a row of Table 2 trains is that run, counted once"
            + f"; a verdict needs {power.seeds_in_words(keys)}, and the queue asks for them after "
              f"every claim's first "
            f"{len(SEEDS)}.")
