"""Train it yourself: one call in an experiment chapter (7-10) trains a variant of its experiment, live, beside
the book's recorded runs of the same variant and the paper's final number.

``train_live(experiment, variant, scale="cpu" | "full", seed=YOUR_SEED, run=...)``
- draws the figure first: the recorded seeds of this variant at this scale (thin lines, mean ± sd band), the
  lr schedule, the paper's final test error (dotted, labelled: after the paper's whole recipe), and any run of
  yours already recorded (bold); with ``run=False`` (the static site, or a reader who only looks) that is all,
  with the command that trains it;
- with ``run=True`` trains on the best device (``trainer.train``), redrawing *your* curve (training loss; test
  error at each evaluation) in place: one output, updated with the figure's data (a display handle: no widget
  library needed, so it works on Colab's older ipywidgets, in Jupyter and in an executed notebook alike);
- checkpoints every ``checkpoint_minutes`` of wall time (and at the recipe's own checkpoint steps) into your
  runs folder, so a disconnect loses at most that much; running the same cell again resumes it;
- when the run reaches the recipe's end its result is written to your runs folder (``results/``), where the
  chapter's variant table reads it as *yours*, beside the recorded seeds and the paper. A run stopped by
  ``max_steps`` is resumable and records nothing yet.

Your runs folder: ``IDMAP_RUNS``, else ``idmap_runs/`` next to the notebook; with ``DRIVE = True`` in the setup
cell, on Google Drive (``use_drive``), where it outlives the runtime.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..engine import recipes, results
from . import paper_numbers

YOUR_SEED = 100  # none of the book's seeds (0-4): your run is your own, never a recorded one under another name
REDRAW_S = 2.0  # your curve is redrawn at most this often (and once at the end): each redraw sends the whole figure


def runs_dir(folder=None) -> Path:
    """Your runs folder (see the module's docstring)."""
    from . import default_runs_dir

    return Path(folder) if folder else default_runs_dir()


def your_results(experiment, variant, scale="cpu", folder=None) -> list[dict]:
    """Your finished runs of this variant at this scale, any seed, whose config is today's recipe."""
    found = results.load_results(runs_dir(folder) / "results", experiment, variant, scale)
    return [r for r in found
            if r.get("config_hash") == results.config_hash(recipes.config(experiment, variant, scale,
                                                                           r["config"]["seed"]))]


def command(experiment, variant, scale, seed=YOUR_SEED, folder="idmap_runs") -> str:
    """How to train your run: the cell's call, or the same run from a terminal into the same runs folder (on
    Colab with DRIVE = True: book.DRIVE_RUNS), so that its result is yours in the chapter's tables either way."""
    return (f"live.train_live({experiment!r}, {variant!r}, scale={scale!r}, seed={seed}, run=True)   "
            f"# or: python -m idmap_lib train --experiment {experiment} --variant {variant} --scale {scale} "
            f"--seed {seed} --checkpoint-dir {folder}/checkpoints --out {folder}/results --resume "
            f"--checkpoint-minutes 3")


def recorded_time(experiment, variant, scale) -> str:
    """How long the book's recorded runs of this variant took (median training wall time, and where), in words."""
    import statistics

    from .rule import ALL_SEEDS
    from .runs import seed_runs
    from .reports import hardware
    from ..engine.device import format_duration

    runs = [r for r in seed_runs(experiment, variant, scale, ALL_SEEDS)[0] if r["final"].get("wall_s")]
    if not runs:
        return ""
    wall = statistics.median(r["final"]["wall_s"] for r in runs)
    return (f"The book's {len(runs)} recorded runs of it took {format_duration(wall)} each (median; "
            f"{'; '.join(sorted({hardware(r) for r in runs}))}). ")


def checkpointed(cfg, folder) -> dict | None:
    """Your stopped run's checkpoint in your runs folder (its step and history), or None. One that cannot be read
    is left to the trainer, which says what to do with it."""
    from ..engine.checkpoint import CheckpointError, load_checkpoint

    path = Path(folder) / "checkpoints" / f"{results.run_name(cfg)}.pt"
    try:
        return load_checkpoint(path, results.config_hash(cfg)) if path.exists() else None
    except CheckpointError:
        return None


class LiveFigure:
    """The recorded band of one variant (``evidence.band_curves``), the paper's final number, and one run of yours
    whose two traces are updated in place (``update``)."""

    def __init__(self, experiment, variant, scale, seed):
        import plotly.graph_objects as go

        from .curves import PANELS, band_curves

        self.fig = fig = band_curves(experiment, [variant], scale, panels=self.SHOWN,
                                     title=f"{variant}: your run (seed {seed}) beside the book's recorded runs "
                                           f"({recipes.SCALE_WORDS[scale]})")
        p = (paper_numbers.paper_number(experiment, variant) or {}).get("value")
        if isinstance(p, (int, float)):
            self._paper_line(p)
        self.traces = []  # yours: (trace, history part, key, scale of the value) per panel
        for col, name in enumerate(self.SHOWN, 1):
            part, key, scale_y, _ = PANELS[name]
            fig.add_trace(go.Scatter(x=[], y=[], mode="lines+markers", name=f"yours (seed {seed})",
                                     legendgroup="yours", showlegend=col == 1,
                                     line={"color": "black", "width": 3}, marker={"size": 5}), 1, col)
            self.traces.append((fig.data[-1], part, key, scale_y))
        fig.update_layout(height=600)

    SHOWN = ("train_loss", "train_err", "test_err")  # its panels (evidence.PANELS)

    def _paper_line(self, p):
        """The paper's final test error on the last panel: a dotted line where it lies near the recorded curves; a
        note at the panel's foot where it lies far below them (a short run ends far above the paper's 64k steps,
        and an axis stretched down to it would flatten every curve)."""
        col = len(self.SHOWN)
        axis = self.fig.get_subplot(1, col).yaxis.anchor  # the panel's x axis, e.g. "x3"
        ys = [y for t in self.fig.data if t.xaxis == axis and t.y is not None for y in t.y if y is not None]
        text = f"paper: {p:.2f} % (its full recipe)"
        if ys and p < min(ys) - 0.5 * (max(ys) - min(ys)):
            self.fig.add_annotation(text=f"{text}, far below this axis", xref=f"{axis} domain",
                                    yref=f"{axis.replace('x', 'y')} domain", x=0.02, y=0.02, xanchor="left",
                                    yanchor="bottom", showarrow=False, font_size=11)
        else:
            self.fig.add_hline(y=p, line_dash="dot", line_color="black", row=1, col=col, annotation_text=text,
                               annotation_font_size=11, annotation_position="top left")

    @property
    def points(self) -> int:
        """Points drawn of yours: training windows (loss and error count once) and evaluations."""
        return sum(len(t.x) for t, part, key, _ in self.traces if key != "train_err")

    def update(self, history):
        for trace, part, key, scale_y in self.traces:
            h = history[part]
            trace.x, trace.y = [x["step"] for x in h], [scale_y * x[key] for x in h]


def mimebundle(fig) -> dict:
    """The figure as the data a cell output holds (the notebook's plotly renderer, as ``fig.show()`` would emit it;
    the plotly mimetype where no renderer is set). Not the Figure itself: it displays itself (``_ipython_display_``),
    past any display handle, so every update would add a copy."""
    return fig._repr_mimebundle_() or {"application/vnd.plotly.v1+json": fig.to_plotly_json()}


class Output:
    """One cell output that is redrawn in place (an IPython display handle); nothing outside IPython."""

    def __init__(self, fig):
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            get_ipython = None
        shell = get_ipython() if get_ipython is not None else None
        self.handle = display(mimebundle(fig), raw=True, display_id=True) if shell is not None else None
        self.drawn = time.monotonic()

    def redraw(self, fig, now=False):
        """Redraw (at most every REDRAW_S seconds, unless ``now``)."""
        if self.handle is not None and (now or time.monotonic() - self.drawn >= REDRAW_S):
            self.handle.update(mimebundle(fig), raw=True)
            self.drawn = time.monotonic()


def train_live(experiment, variant, scale="cpu", seed=YOUR_SEED, run=False, max_steps=None, checkpoint_minutes=3,
               folder=None, data=None, device=None, show=True, **train_kwargs) -> dict:
    """Train (``run=True``) or only show (``run=False``) your run of one variant; see the module's docstring.
    Returns {"figure": LiveFigure, "result": your result or None, "command": how to train it}."""
    from ..engine.trainer import train

    cfg = recipes.config(experiment, variant, scale, seed)
    live = LiveFigure(experiment, variant, scale, seed)
    folder = runs_dir(folder)
    done = results.find_result(cfg, folder / "results", same_training=False)
    out = {"figure": live, "result": done,  # (the command names the folder as set, never a machine's own path)
           "command": command(experiment, variant, scale, seed, os.environ.get("IDMAP_RUNS", "idmap_runs"))}
    ck = None if done is not None else checkpointed(cfg, folder)
    if done or ck:
        live.update((done or ck)["history"])  # every step trained so far, in the first drawing
    shown = Output(live.fig) if show else None
    if done is not None or not run:
        if show:
            print(f"Your run {results.run_name(cfg)}: " + (
                f"recorded ({done['path']}), test error {100 * done['final'].get('test_err', float('nan')):.2f} %"
                if done else f"not run yet. {recorded_time(experiment, variant, scale)}To train it: {out['command']}"))
        return out

    def on_log(history):
        live.update(history)
        if shown is not None:
            shown.redraw(live.fig)

    r = train(cfg, data=data, device=device, out_dir=folder / "results", checkpoint_dir=folder / "checkpoints",
              resume=True, max_steps=max_steps, on_log=on_log, checkpoint_minutes=checkpoint_minutes,
              progress=show, **train_kwargs)
    live.update(r["history"])
    if shown is not None:
        shown.redraw(live.fig, now=True)
    out["result"] = r if r["status"] != "stopped" else None
    out["stopped"] = r if r["status"] == "stopped" else None
    if show:
        print(f"stopped at step {r['step']} of {cfg['steps']}: run the cell again to go on (checkpoint: "
              f"{r['checkpoint']})" if r["status"] == "stopped" else
              f"finished: {r['status']}; recorded as yours in {r.get('path')}")
    return out
