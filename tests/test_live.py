"""Train it yourself (idmap_book.figures.live), as a student would: a few steps, a disconnect,
the same cell again, the finished run shown as theirs in the chapter's table; and the trainer's part
of it (wall-time checkpoints, a progress line from the first steps that counts max_steps)."""
import pytest

from idmap_book.evidence import variants
from idmap_lib.models.registry import UNIT_ROWS
from idmap_book.figures import live
from idmap_lib.engine import recipes
from idmap_lib.engine import checkpoint
from idmap_lib.engine.trainer import train
from support import tiny_mnist

EXP, VAR = "b_mnist", "gresnet-d10"


@pytest.fixture
def tiny_recipe(monkeypatch):
    """Paper B's MNIST recipe made tiny (d = 4, 24 steps), everywhere the book and the engine ask
    for it."""
    real = recipes.config

    def config(experiment, variant, scale="cpu", seed=0):
        if (experiment, variant, scale) != (EXP, VAR, "full"):
            return real(experiment, variant, scale, seed)
        cfg = tiny_mnist("gresnet", seed, steps=24, log=3, eval_every=12)
        cfg["variant"] = VAR
        return cfg

    monkeypatch.setattr(recipes, "config", config)
    return config


def test_a_student_trains_stops_resumes_and_finds_the_run_as_theirs(tiny_recipe, mnist, tmp_path):
    first = live.train_live(EXP, VAR, "full", run=True, max_steps=9, folder=tmp_path, data=mnist,
                            show=False)
    # a short try records nothing yet...
    assert first["result"] is None and first["stopped"]["step"] == 9
    assert first["figure"].points == 3  # ...but its curve got a point per log window (3, 6, 9)
    ckpts = list((tmp_path / "checkpoints").glob("*.pt"))
    assert [p.name for p in ckpts] == [f"{EXP}__{VAR}__full__s{live.YOUR_SEED}.pt"]
    # the cell again
    second = live.train_live(EXP, VAR, "full", run=True, folder=tmp_path, data=mnist, show=False)
    r = second["result"]
    assert (r["status"] == "ok" and r["final"]["steps"] == 24
            and r["config"]["seed"] == live.YOUR_SEED)
    alone = train(tiny_recipe(EXP, VAR, "full", live.YOUR_SEED), data=mnist, progress=False,
                  write_result=False)
    assert [h["train_loss"] for h in r["history"]["train"]] == pytest.approx(
        # resumed = never interrupted
        [h["train_loss"] for h in alone["history"]["train"]], abs=1e-6)
    assert second["figure"].points == 8 + 2  # 8 training windows, 2 evaluations
    table = variants.variant_table(EXP, [VAR], "full", yours=tmp_path)
    assert table.loc[variants.words(EXP, VAR),
                     "yours: test error % "
                     "(seed)"] == f"{100 * r['final']['test_err']:.1f} (seed 100)"
    again = live.train_live(EXP, VAR, "full", run=True, folder=tmp_path, data=mnist, show=False)
    # recorded: never trained twice
    assert again["result"]["path"] == r["path"] and again["stopped"] is None
    assert "yours" not in " ".join(variants.variant_table(EXP, [VAR], "full",
                                                          yours=tmp_path / "nobody").columns)


def test_only_looking_shows_the_recorded_band_and_the_paper_and_says_how_to_train(tiny_recipe, tmp_path, capsys):
    out = live.train_live("a_table2_activations", "full_preact-110", "cpu", folder=tmp_path)
    assert out["result"] is None and out["figure"].points == 0
    fig = out["figure"].fig
    # Table 2's
    assert any(a.text.startswith("paper: 6.37 % (its full recipe)") for a in fig.layout.annotations)
    # 400 CPU steps end near 50 %: the paper's 6.37 % is said at the panel's foot, not drawn (it
    # would flatten the axis)
    assert "far below" in " ".join(a.text for a in fig.layout.annotations)
    assert not any(sh.type == "line" and sh.y0 == sh.y1 == 6.37 for sh in fig.layout.shapes)
    # the book's recorded seeds drawn under it
    assert any("seed 0" in (t.name or "") for t in fig.data)
    assert "train_live('a_table2_activations', 'full_preact-110', scale='cpu', seed=100, run=True)" in \
        capsys.readouterr().out


class Shown:
    """A cell output in place of IPython's: how many there are, what the first drawing held, how
    often redrawn."""
    made = []

    def __init__(self, fig):
        self.first_points = sum(len(t.x) for t in fig.data if t.name and t.name.startswith("yours"))
        self.redraws = 0
        Shown.made.append(self)

    def redraw(self, fig, now=False):
        self.redraws += 1
        self.last_now = now
        self.last_points = sum(len(t.x) for t in fig.data if t.name and t.name.startswith("yours"))


def test_one_output_whose_first_drawing_holds_the_steps_already_trained(tiny_recipe, mnist, tmp_path, monkeypatch):
    monkeypatch.setattr(live, "Output", Shown)
    monkeypatch.setattr(Shown, "made", [])
    live.train_live(EXP, VAR, "full", run=True, max_steps=9, folder=tmp_path, data=mnist)
    live.train_live(EXP, VAR, "full", run=True, folder=tmp_path, data=mnist)  # the cell again
    first, second = Shown.made
    # resumed: its 3 windows (loss, error)
    assert first.first_points == 0 and second.first_points == 3 * 2 + 0
    assert first.redraws >= 1 and second.redraws >= 1  # redrawn in place, never a second output


class Handle:
    def __init__(self):
        self.updates = []

    def update(self, obj, **kw):
        self.updates.append((obj, kw))


@pytest.mark.parametrize("redrawn", [True, False])
def test_the_output_is_the_figures_data_updated_in_place(monkeypatch, redrawn):
    """A plotly Figure displays itself past any display handle (``_ipython_display_``): each update
    would add a copy. The output holds the figure's data, a mimebundle dict, shown once and updated
    through its handle; where the frontend does not redraw an update (JupyterLab, plotly < 7.2),
    each redraw first swaps in an empty text output, so that the figure is drawn anew."""
    import IPython
    import IPython.display
    import plotly.graph_objects as go

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display",
                        lambda obj, **kw: shown.append((obj, kw)) or Handle())
    monkeypatch.setattr(live, "_redrawn_by_update", lambda: redrawn)
    fig = go.Figure(go.Scatter(x=[1], y=[2]))
    out = live.Output(fig)
    fig.data[0].x = [1, 2]
    out.redraw(fig, now=True)
    (obj, kw), = shown
    assert isinstance(obj, dict) and kw == {"raw": True, "display_id": True}
    *first, (new, kw) = out.handle.updates
    assert first == ([] if redrawn else [({"text/plain": ""}, {"raw": True})])
    assert kw == {"raw": True} and "application/vnd.plotly.v1+json" in new
    assert list(new["application/vnd.plotly.v1+json"]["data"][0]["x"]) == [1, 2]
    out.redraw(fig)  # within REDRAW_S of the last: not sent again
    assert len(out.handle.updates) == 1 + len(first)


def test_which_frontends_redraw_an_update(monkeypatch):
    """Colab's does, with any plotly; elsewhere (JupyterLab's renderer) only from plotly 7.2
    (plotly.py #5865)."""
    import sys

    import plotly

    for version, colab, redrawn in (("7.1.0", False, False), ("5.24.1", True, True),
                                    ("7.2.0", False, True),
                                    ("10.0.1", False, True)):
        monkeypatch.setattr(plotly, "__version__", version)
        monkeypatch.setitem(sys.modules, "google.colab", object()) if colab else \
            monkeypatch.delitem(sys.modules, "google.colab", raising=False)
        assert live._redrawn_by_update() is redrawn, (version, colab)


def test_a_plain_jupyter_kernel_also_gets_each_figures_html(monkeypatch):
    """plotly's bare mimetype needs its extension, which the classic notebook lacks for plotly >= 6:
    outside the build the setup adds the HTML renderer there, and leaves Colab's, VS Code's and the
    others' alone."""
    import plotly.io as pio

    from idmap_book.page import setup

    for before, after in (("plotly_mimetype", setup.JUPYTER_RENDERER), ("colab", "colab"),
                          ("vscode", "vscode")):
        monkeypatch.setattr(pio.renderers, "default", before)
        setup.use_jupyter_renderer()
        assert pio.renderers.default == after


def test_an_interrupt_leaves_the_figure_as_far_as_it_got_and_the_trainers_line(tiny_recipe, mnist, tmp_path,
                                                                                 monkeypatch):
    """The stop button during training: the trainer keeps a checkpoint and raises one line
    (guard.TrainingInterrupted, a KeyboardInterrupt); the cell lets it through (Run all stops there)
    after drawing every step logged."""
    monkeypatch.setattr(live, "Output", Shown)
    monkeypatch.setattr(Shown, "made", [])
    real = live.train

    def train(cfg, **kw):
        def on_log(history):
            kw["on_log"](history)
            if history["train"][-1]["step"] == 6:
                raise KeyboardInterrupt  # the stop button, in the window that ends at step 6
        return real(cfg, **{**kw, "on_log": on_log})

    monkeypatch.setattr(live, "train", train)
    with pytest.raises(KeyboardInterrupt):
        live.train_live(EXP, VAR, "full", run=True, folder=tmp_path, data=mnist)
    shown, = Shown.made
    # redrawn at the stop: windows 3 and 6, loss and error
    assert shown.last_now and shown.last_points == 2 * 2


# ---- what the cell says --------------------------------------------------------------------------
def test_a_run_stopped_by_max_steps_says_to_raise_it(tiny_recipe, mnist, tmp_path, capsys,
                                                     monkeypatch):
    live.train_live(EXP, VAR, "full", run=True, max_steps=6, folder=tmp_path, data=mnist)
    out = capsys.readouterr().out
    assert "stopped at step 6 of 24 by max_steps = 6: raise max_steps" in out
    assert ("the whole run (24 steps) takes about" in out
            and "max_steps = 6 stops it at step 6" in out)
    # the same cell again, max_steps unchanged: nothing trains, and it says why
    monkeypatch.setattr(live, "train", lambda *a, **k: pytest.fail("trained again"))
    again = live.train_live(EXP, VAR, "full", run=True, max_steps=6, folder=tmp_path, data=mnist)
    assert again["stopped"]["step"] == 6 and "raise max_steps" in capsys.readouterr().out
    shown = live.train_live(EXP, VAR, "full", run=False, folder=tmp_path, data=mnist, show=False)
    # only shown: the stopped run is still yours
    assert shown["stopped"]["step"] == 6 and shown["result"] is None


def test_the_whole_runs_time_as_soon_as_there_is_a_pace(tiny_recipe, mnist, tmp_path, capsys):
    live.train_live(EXP, VAR, "full", run=True, max_steps=2, folder=tmp_path, data=mnist)
    # stopped before the first log window (step 3): no pace, and it says when
    out = capsys.readouterr().out
    assert "no pace measured yet: the first comes at step 3" in out and "takes about" not in out
    live.train_live(EXP, VAR, "full", run=True, max_steps=4, folder=tmp_path, data=mnist)
    out = capsys.readouterr().out  # resumed at 2: the window that ends at 3 gives the pace
    line = next(ln for ln in out.splitlines() if ln.startswith("At "))
    assert "the whole run (24 steps) takes about" in line and "from step 3, " in line, line


def test_the_full_recipe_on_a_cpu_says_how_long_and_asks_for_a_gpu():
    cfg = recipes.config("a_table2_activations", "full_preact-110", "full")
    # 2 s a step: 64,000 steps are 1.5 days
    line = live.pace_line(cfg, 100, 64.0, cfg["steps"], "cpu")
    assert ("35.6 h" in line and "GPU" in line and "Change runtime type" in line
            and "SCALE = 'cpu'" in line)
    assert "GPU" not in live.pace_line(cfg, 100, 6400.0, cfg["steps"], "cuda")
    assert "days" in live.pace_line(cfg, 100, 16.0, cfg["steps"], "cpu")  # 8 s a step: 6 days
    first = live.first_line(cfg, "cpu")  # before the first log window: from the recorded runs' pace
    assert (first.startswith("SCALE = 'full' on a CPU: the paper's whole recipe, 64,000 steps.")
            and "GPU" in first)
    assert live.first_line(cfg, "cuda") == ""
    assert live.first_line(recipes.config("a_table2_activations", "full_preact-110", "cpu"),
                           "cpu") == ""


def test_only_looking_where_nothing_is_recorded_says_so_in_one_line(tmp_path, capsys):
    # TRAIN = False
    out = live.train_live("a_table2_activations", "full_preact-110", "full", folder=tmp_path)
    assert out["figure"] is None and out["result"] is None
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("Nothing to draw yet: the book has no recorded "
                                                 "run of full pre-activation at the full recipe")


def test_a_scale_or_variant_the_page_does_not_offer_says_what_to_write():
    with pytest.raises(ValueError, match=r"'gpu' is the exercises' word.*SCALE = 'full'"):
        live.train_live("a_table2_activations", "full_preact-110", "gpu")
    with pytest.raises(ValueError, match=r"unknown scale 'CPU'.*'cpu': .*'full': ") as e:
        live.train_live("a_table2_activations", "full_preact-110", "CPU")
    assert "cpu_step_warmup" not in str(e.value)
    with pytest.raises(ValueError, match="unknown variant 'full_preact-1001' of this page") as e:
        live.train_live("a_table2_activations", "full_preact-1001")
    offered = str(e.value).split("its variants: ")[1].split(", ")
    # the recorded ones: Table 2's units at 110 layers (a unit the book adds, once it has runs),
    # then chapter 8's pair (no unrecorded -164)
    assert offered == [f"{u}-110" for u, row in UNIT_ROWS.items() if row.paper] + [
        "original-164", "full_preact-164"]


def test_wall_time_checkpoints_between_the_recipe_checkpoints(monkeypatch, mnist, tmp_path):
    saved = []
    monkeypatch.setattr(checkpoint, "save_checkpoint",
                        lambda path, state: saved.append(state["step"]))
    cfg = tiny_mnist(steps=12, log=3, eval_every=12)
    train(cfg, data=mnist, progress=False, write_result=False, checkpoint_dir=tmp_path,
          checkpoint_every=12)
    assert saved == [12]
    saved.clear()
    train(cfg, data=mnist, progress=False, write_result=False, checkpoint_dir=tmp_path,
          checkpoint_every=12,
          checkpoint_minutes=1e-9)  # every step is "minutes" after the last checkpoint
    assert saved == list(range(1, 13))


def test_the_progress_line_comes_after_the_first_steps_and_counts_max_steps(mnist, capsys):
    # no log window before the stop: the line is all there is
    cfg = tiny_mnist(steps=30, log=30, eval_every=30)
    train(cfg, data=mnist, max_steps=20, write_result=False)
    out = capsys.readouterr()
    line = next(s for s in (out.out + out.err).splitlines() if "img/s ->" in s)
    assert ("step 15, training loss " in line
            and "the remaining 5 steps (stopping at step 20 of 30)" in line)


@pytest.mark.slow
def test_the_stop_button_in_a_real_kernel_shows_one_line_and_the_cell_run_again_resumes(tmp_path):
    """Issue 33.3 in a Jupyter kernel, as a student meets it: a long training cell, the stop button
    (the kernel's interrupt), one line of output saying how to go on and no traceback; the same cell
    again resumes from the checkpoint at the step where it stopped."""
    import json
    import os
    import queue
    import time
    from pathlib import Path

    from jupyter_client.manager import start_new_kernel

    cell = ("import sys, json; sys.path.insert(0, {tests!r})\n"
            "from support import tiny_mnist\n"
            "from idmap_lib.engine.trainer import train\n"
            "cfg = tiny_mnist('gresnet', 0, d=4, steps=100000, log=5, eval_every=100000)\n"
            "r = train(cfg, checkpoint_dir={ck!r}, resume=True, max_steps={stop}, "
            "write_result=False, progress=False,\n          on_log=lambda h: print('logged', "
            "h['train'][-1]['step'], flush=True))\nprint(json.dumps({{'status': r['status'], "
            "'step': r['step']}}))")
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path),
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        def run(code, interrupt_after=None):
            msg_id, out, error, t0 = kc.execute(code), [], None, time.time()
            while True:
                try:
                    msg = kc.get_iopub_msg(timeout=5)
                except queue.Empty:
                    assert time.time() - t0 < 120, "the cell hangs"
                    continue
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    out.append(content["text"])
                    if interrupt_after and "logged" in content["text"] and len(out) >= interrupt_after:
                        km.interrupt_kernel()
                        interrupt_after = None
                elif kind == "error":
                    error = content
                elif kind == "status" and content["execution_state"] == "idle":
                    return "".join(out), error

        tests, ck = str(Path(__file__).parent), str(tmp_path / "ck")
        out, error = run(cell.format(tests=tests, ck=ck, stop=None), interrupt_after=3)
        assert error is not None and error["ename"] == "TrainingInterrupted", (out, error)
        assert (len(error["traceback"]) == 1
                and error["traceback"][0].startswith("interrupted at step ")), error
        step = int(error["traceback"][0].split()[3])
        out, error = run(cell.format(tests=tests, ck=ck, stop=step + 5))
        assert (error is None
                and json.loads(out.splitlines()[-1]) == {"status": "stopped",
                                                         "step": step + 5}), out
        # the next log after it: went on from there
        assert out.split()[:2] == ["logged", str((step // 5 + 1) * 5)], out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
