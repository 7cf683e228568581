"""Train it yourself: one call in an experiment chapter (7-10) trains a variant of its experiment,
live, beside the book's recorded runs of the same variant and the paper's final number.

``train_live(experiment, variant, scale="cpu" | "full", seed=YOUR_SEED, run=...)``
- draws the figure first: the recorded seeds of this variant at this scale (thin lines, mean ± sd
  band), the lr schedule, the paper's final test error (dotted, labelled: after the paper's whole
  recipe), and your run as far as it has trained (bold: a finished run, or a stopped one's
  checkpoint); with ``run=False`` (the static site, or a reader who only looks) that is all, with
  the command that trains it -- and where there is nothing to draw, one line saying so instead of
  empty panels;
- with ``run=True`` trains on the best device (``trainer.train``), redrawing *your* curve (training
  loss; test error at each evaluation) in place: one output, updated with the figure's data (a
  display handle: no widget library needed, so it works on Colab's older ipywidgets, in Jupyter and
  in an executed notebook alike);
- says, as soon as the first log window gives a pace, how long the whole run takes here (and, where
  that is long on a CPU, asks for a GPU); checkpoints every ``checkpoint_minutes`` of wall time (and
  at the recipe's own checkpoint steps) into your runs folder, so a disconnect loses at most that
  much; running the same cell again resumes it;
- when the run reaches the recipe's end its result is written to your runs folder (``results/``),
  where the chapter's variant table reads it as *yours*, beside the recorded seeds and the paper. A
  run stopped by ``max_steps`` is resumable and records nothing yet: the line it ends with says to
  raise ``max_steps``.

Your runs folder: ``IDMAP_RUNS``, else ``idmap_runs/`` next to the notebook; with ``DRIVE = True``
in the setup cell, on Google Drive (``use_drive``), where it outlives the runtime.
"""
from __future__ import annotations

import os
import time

from idmap_lib.engine import paths, recipes, results
from idmap_lib.engine.checkpoint import CheckpointError, load_checkpoint, path_of
from idmap_lib.engine.device import format_duration, pick_device
from idmap_lib.engine.trainer import train
from ..evidence import paper_numbers
from ..evidence.claim_words import words
from ..evidence.reports import hardware
from ..evidence.runs import runs_dir, seed_runs
from ..evidence.seeds import ALL_SEEDS, READER_SEED
from ..page.figure_style import LEAST_PX
from ..plan.run_times import cpu_core_hours, full_recipe_time
from .curves import PANELS, band_curves

# none of the book's seeds (0-4): your run is your own, never a recorded one under another name
YOUR_SEED = READER_SEED
OFFERED_SCALES = dict(zip(recipes.CLAIM_SCALES, ("the recorded runs' scale, minutes on a CPU",
                                                  "the paper's whole recipe, for a GPU")))
GPU_WORTH_S = 3600  # a whole run longer than this on a CPU: the cell asks for a GPU
# your curve is redrawn at most this often (and once at the end): each redraw sends the whole figure
REDRAW_S = 2.0


def command(experiment, variant, scale, seed=YOUR_SEED, folder="idmap_runs") -> str:
    """How to train your run: the cell's call, or the same run from a terminal into the same runs
    folder (on Colab with DRIVE = True: book.DRIVE_RUNS), so that its result is yours in the
    chapter's tables either way."""
    return (f"live.train_live({experiment!r}, {variant!r}, scale={scale!r}, seed={seed}, run=True) "
            f"  # or: python -m idmap_lib train --experiment {experiment} --variant {variant} "
            f"--scale {scale} --seed {seed} --checkpoint-dir {folder}/checkpoints --out "
            f"{folder}/results --resume --checkpoint-minutes 3")


def recorded_runs(experiment, variant, scale) -> list[dict]:
    """The book's recorded runs of this variant at this scale (every seed it has)."""
    return seed_runs(experiment, variant, scale, ALL_SEEDS)[0]


def offered_variants(experiment) -> list[str]:
    """The variants a chapter offers to train: those of its experiment the book has recorded runs of
    (the ones its tables and figures show), in the recipe's order; every variant where none is
    recorded yet."""
    variants = list(recipes.EXPERIMENTS[experiment]["variants"])
    return ([v for v in variants if any(recorded_runs(experiment, v, s) for s in OFFERED_SCALES)]
            or variants)


def check_choice(experiment, variant, scale) -> None:
    """A variant and scale the cell can train, or one ValueError saying what to write instead."""
    if scale not in OFFERED_SCALES:
        words = "; ".join(f"{s!r}: {w}" for s, w in OFFERED_SCALES.items())
        hint = (" ('gpu' is the exercises' word, chapter 6: on this page a GPU's run is SCALE = "
                "'full')"
                if scale == "gpu" else "")
        raise ValueError(f"unknown scale {scale!r}{hint}. This page's scales: {words}")
    if variant not in recipes.EXPERIMENTS[experiment]["variants"]:
        raise ValueError(f"unknown variant {variant!r} of this page; its variants: "
                         f"{', '.join(offered_variants(experiment))}")


def recorded_time(runs) -> str:
    """How long the book's recorded runs took (median training wall time, and where), in words."""
    import statistics

    runs = [r for r in runs if r["final"].get("wall_s")]
    if not runs:
        return ""
    wall = statistics.median(r["final"]["wall_s"] for r in runs)
    return (f"The book's {len(runs)} recorded runs of it took {format_duration(wall)} each "
            f"(median; {'; '.join(sorted({hardware(r) for r in runs}))}). ")


def checkpointed(cfg, folder) -> dict | None:
    """Your stopped run's checkpoint in your runs folder (its step and history), or None. One that
    cannot be read is left to the trainer, which says what to do with it."""
    path = path_of(paths.runs_folder(folder)[1], cfg)
    try:
        return load_checkpoint(path, results.config_hash(cfg)) if path.exists() else None
    except CheckpointError:
        return None


class LiveFigure:
    """The recorded band of one variant (``curves.band_curves``), the paper's final number, and one
    run of yours whose traces are updated in place (``update``)."""

    SHOWN = ("train_loss", "train_err", "test_err")  # its panels (curves.PANELS)

    def __init__(self, experiment, variant, scale, seed):
        import plotly.graph_objects as go

        self.fig = fig = band_curves(experiment, [variant], scale, panels=self.SHOWN,
                                     title=f"{words(experiment, variant)}: your run "
                                           f"(seed {seed}) beside the book's "
                                           f"recorded runs ({recipes.SCALE_WORDS[scale]})")
        p = (paper_numbers.paper_number(experiment, variant) or {}).get("value")
        if isinstance(p, (int, float)):
            self._paper_line(p)
        self.traces = []  # yours: (trace, history part, key, scale of the value) per panel
        for col, name in enumerate(self.SHOWN, 1):
            part, key, scale_y, _ = PANELS[name]
            fig.add_trace(go.Scatter(x=[], y=[], mode="lines+markers", name=f"yours (seed {seed})",
                                     legendgroup="yours", showlegend=col == 1,
                                     line={"color": "black", "width": 3}, marker={"size": 5}), 1,
                                     col)
            self.traces.append((fig.data[-1], part, key, scale_y))
        fig.update_layout(height=600)

    def _paper_line(self, p):
        """The paper's final test error on the last panel: a dotted line where it lies near the
        recorded curves; a note at the panel's foot where it lies far below them (a short run ends
        far above the paper's 64k steps, and an axis stretched down to it would flatten every
        curve)."""
        col = len(self.SHOWN)
        axis = self.fig.get_subplot(1, col).yaxis.anchor  # the panel's x axis, e.g. "x3"
        ys = [y for t in self.fig.data if t.xaxis == axis and t.y is not None for y in t.y
              if y is not None]

        text = f"paper: {p:.2f} % (its full recipe)"
        if ys and p < min(ys) - 0.5 * (max(ys) - min(ys)):
            self.fig.add_annotation(text=f"{text},<br>far below this axis", xref=f"{axis} domain",
                                    yref=f"{axis.replace('x', 'y')} domain", x=0.02, y=0.02,
                                    xanchor="left",
                                    yanchor="bottom", align="left", showarrow=False,
                                    font_size=LEAST_PX)
        else:
            self.fig.add_hline(y=p, line_dash="dot", line_color="black", row=1, col=col,
                               annotation_text=text,
                               annotation_font_size=LEAST_PX, annotation_position="top left")

    @property
    def points(self) -> int:
        """Points drawn of yours: training windows (loss and error count once) and evaluations."""
        return sum(len(t.x) for t, part, key, _ in self.traces if key != "train_err")

    def update(self, history):
        for trace, part, key, scale_y in self.traces:
            h = history[part]
            trace.x, trace.y = [x["step"] for x in h], [scale_y * x[key] for x in h]


def mimebundle(fig) -> dict:
    """The figure as the data a cell output holds (the notebook's plotly renderer, as ``fig.show()``
    would emit it; the plotly mimetype where no renderer is set). Not the Figure itself: it displays
    itself (``_ipython_display_``), past any display handle, so every update would add a copy."""
    return fig._repr_mimebundle_() or {"application/vnd.plotly.v1+json": fig.to_plotly_json()}


def _redrawn_by_update() -> bool:
    """Whether the frontend redraws a plotly figure that a display update replaces. Colab's does;
    JupyterLab's plotly renderer before plotly 7.2 draws a figure once and ignores updates
    (plotly.py #5865)."""
    import sys

    import plotly

    return ("google.colab" in sys.modules
            or tuple(int(p) for p in plotly.__version__.split(".")[:2]) >= (7, 2))


class Output:
    """One cell output that is redrawn in place (an IPython display handle); nothing outside
    IPython.

    Where an update alone is not redrawn (``_redrawn_by_update``), each redraw first replaces the
    figure with an empty text output: JupyterLab then makes a new renderer for the figure, as it
    does whenever the output's kind changes (OutputArea._setOutput), and the classic notebook
    redraws either way."""

    def __init__(self, fig):
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            get_ipython = None
        shell = get_ipython() if get_ipython is not None else None
        self.handle = (display(mimebundle(fig), raw=True, display_id=True) if shell is not None
                       else None)
        self.renew = shell is not None and not _redrawn_by_update()
        self.drawn = time.monotonic()

    def redraw(self, fig, now=False):
        """Redraw (at most every REDRAW_S seconds, unless ``now``)."""
        if self.handle is not None and (now or time.monotonic() - self.drawn >= REDRAW_S):
            if self.renew:
                self.handle.update({"text/plain": ""}, raw=True)
            self.handle.update(mimebundle(fig), raw=True)
            self.drawn = time.monotonic()


def _long(seconds) -> str:
    return format_duration(seconds) + (f" ({seconds / 86400:.0f} days)" if seconds >= 2 * 86400
                                       else "")


def gpu_ask(cfg) -> str:
    """Where a run is long for a CPU: what it takes on a GPU (``run_times.full_recipe_time``) and
    how to get one."""
    full = cfg["scale"] == "full"
    return (f"That is long for a CPU: {'the full recipe is for' if full else 'use'} a GPU "
            f"({full_recipe_time(cfg)}; *: derived, not measured; on Colab: Runtime > Change "
            f"runtime type > GPU, then run the page again)"
            + (", or SCALE = 'cpu' for the recorded runs' scale" if full else ""))


def first_line(cfg, device_type) -> str:
    """Before a full recipe trains on a CPU: its length and the ask for a GPU, from the recorded
    runs' pace (``run_times``), where that is long; the pace measured here follows (``pace_line``).
    Else ''."""
    derived = cpu_core_hours(cfg)
    if (device_type != "cpu" or cfg["scale"] != "full" or derived is None
            or derived[0] * 3600 <= GPU_WORTH_S):
        return ""
    return (f"SCALE = 'full' on a CPU: the paper's whole recipe, {cfg['steps']:,} steps. "
            f"{gpu_ask(cfg)}. The pace measured here comes after the first {cfg['log_every']} "
            f"steps.")


def pace_line(cfg, step, img_per_s, stop, device_type) -> str:
    """The whole run's time at the pace measured here (one log window's images per second), what is
    left of it, where ``max_steps`` stops it; on a CPU, where the whole run is long, the ask for a
    GPU."""
    per_step = cfg["batch_size"] / img_per_s
    total = cfg["steps"]
    line = (f"At {img_per_s:.0f} img/s here ({device_type}), the whole run ({total:,} steps) takes "
            f"about {_long(total * per_step)} (plus evaluations); from step {step}, "
            f"{_long((total - step) * per_step)} more"
            + (f"; max_steps = {stop} stops it at step {stop}" if stop < total else ""))
    return line + (f". {gpu_ask(cfg)}" if device_type == "cpu" and total * per_step > GPU_WORTH_S
                   else "")


def stop_line(r, max_steps) -> str:
    """What the cell says when the trainer returns: finished, or stopped and how to go on."""
    total = r["config"]["steps"]
    if r["status"] != "stopped":
        why = f" ({r['fail']['reason']} at step {r['fail']['step']})" if r.get("fail") else ""
        return f"finished: {r['status']}{why}; recorded as yours in {r.get('path')}"
    if max_steps is not None and r["step"] >= max_steps:
        return (f"stopped at step {r['step']} of {total} by max_steps = {max_steps}: raise "
                f"max_steps (None trains to the end) and run the cell again to go on from there "
                f"(checkpoint: {r['checkpoint']})")
    return (f"stopped at step {r['step']} of {total}: run the cell again to go on (checkpoint: "
            f"{r['checkpoint']})")


def train_live(experiment, variant, scale="cpu", seed=YOUR_SEED, run=False, max_steps=None,
               checkpoint_minutes=3,
               folder=None, data=None, device=None, show=True, **train_kwargs) -> dict:
    """Train (``run=True``) or only show (``run=False``) your run of one variant; see the module's
    docstring. Returns {"figure": LiveFigure or None (nothing to draw), "result": your result or
    None, "stopped": your stopped run or None, "command": how to train it}."""
    check_choice(experiment, variant, scale)
    cfg = recipes.config(experiment, variant, scale, seed)
    folder = runs_dir(folder)
    mine, ckpts = paths.runs_folder(folder)
    done = results.find_result(cfg, mine, same_training=False)
    ck = None if done is not None else checkpointed(cfg, folder)
    recorded = recorded_runs(experiment, variant, scale)
    # (the command names the folder as set, never a path)
    out = {"figure": None, "result": done, "stopped": None,
           "command": command(experiment, variant, scale, seed,
                              os.environ.get("IDMAP_RUNS", "idmap_runs"))}
    log = print if show else (lambda *a: None)
    if not (run or done or ck or recorded):
        log(f"Nothing to draw yet: the book has no recorded run of "
            f"{words(experiment, variant)} at the "
            f"{recipes.SCALE_WORDS[scale]} and you have none. To train it: {out['command']}")
        return out
    live = out["figure"] = LiveFigure(experiment, variant, scale, seed)
    if done or ck:
        live.update((done or ck)["history"])  # every step trained so far, in the first drawing
    shown = Output(live.fig) if show else None
    if ck:  # your stopped run, whether or not this call trains on
        out["stopped"] = {"status": "stopped", "step": ck["step"], "config": cfg,
                          "checkpoint": str(path_of(ckpts, cfg))}
    if done is not None or not run:
        log(f"Your run {results.run_name(cfg)}: " + (
            f"recorded ({done['path']}), test error "
            f"{100 * done['final'].get('test_err', float('nan')):.2f} %"
            if done else (f"stopped at step {ck['step']} of {cfg['steps']}; " if ck
                          else "not run yet. ")
            + f"{recorded_time(recorded)}To train it: {out['command']}"))
        return out
    # nothing to train: say so, without loading data
    if ck and max_steps is not None and ck["step"] >= max_steps:
        log(stop_line(out["stopped"], max_steps))
        return out
    device_type = pick_device(device).type
    if line := first_line(cfg, device_type):
        log(line)
    start, stop = (ck or {}).get("step", 0), min(cfg["steps"], max_steps or cfg["steps"])
    paced = []

    def on_log(history):
        live.update(history)
        if shown is not None:
            shown.redraw(live.fig)
        new = [h for h in history["train"] if h["step"] > start]
        if new and not paced:
            paced.append(new[0])
            log(pace_line(cfg, new[0]["step"], new[0]["img_per_s"], stop, device_type))

    try:
        r = train(cfg, data=data, device=device, out_dir=mine, checkpoint_dir=ckpts,
                  resume=True, max_steps=max_steps, on_log=on_log,
                  checkpoint_minutes=checkpoint_minutes,
                  progress=show, **train_kwargs)
    # the stop button: the trainer kept a checkpoint and says, in one line, how to go on
    except KeyboardInterrupt:
        # (trainer.TrainingInterrupted); the figure shows every step logged until then
        if shown is not None:
            shown.redraw(live.fig, now=True)
        raise
    live.update(r["history"])
    if shown is not None:
        shown.redraw(live.fig, now=True)
    out["result"] = r if r["status"] != "stopped" else None
    out["stopped"] = r if r["status"] == "stopped" else None
    first_log = (start // cfg["log_every"] + 1) * cfg["log_every"]
    log(stop_line(r, max_steps) + ("" if paced or r["status"] != "stopped" else
                                   f"; no pace measured yet: the first comes at step {first_log}"))
    return out
