"""Training curves over seeds: every seed, the mean and band, the lr schedule, an axis one spike
does not set."""
import re

from fake_runs import history, result, save
from idmap_book.figures import curves
from idmap_book.page import log_axes
from idmap_lib.engine import results


def test_band_curves_draw_each_seed_the_mean_the_band_and_the_lr_schedule(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "original", [0.5, 0.5, 0.5], losses=(2.0, 1.0, 0.5, 0.25))
    fig = curves.band_curves("a_table1_shortcuts", ["original", "conv1x1"], out_dir=tmp_path)
    one_seed = re.compile(r" seed \d+$")
    means = [d for d in fig.data if d.fill != "toself" and not one_seed.search(d.name or "")]
    # training loss, then test error
    assert len(means) == 2 and list(means[0].y) == [2.0, 1.0, 0.5, 0.25]
    seeds = [d for d in fig.data if one_seed.search(d.name or "")]
    # both panels
    assert sorted(d.name for d in seeds) == sorted(f"original seed {s}" for s in (0, 0, 1, 1, 2, 2))
    # and seen
    assert all(d.visible in (None, True) and d.opacity > 0 and d.line.width > 0 for d in seeds)
    # words, not the key
    assert [d.name for d in means if d.showlegend] == ["the identity shortcut (3 seeds)"]
    three = curves.band_curves("a_table1_shortcuts", ["original"], out_dir=tmp_path,
                                 panels=("train_loss", "train_err", "test_err"))
    assert [a.text
            for a in three.layout.annotations[:3]] == ["training loss (10-step windows, log axis)",
                                                       "training error %", "test error %"]
    # the lr marks on every panel
    assert len([s for s in three.layout.shapes if s.type == "rect"]) == 3
    # in words, never the variant's key
    assert "not run yet: the <br>1×1-convolution shortcut" in fig.layout.title.text
    # the lr schedule on both panels: the warm-up shaded (a ramp at the CPU scale), a line at each
    # lr drop
    shapes = fig.layout.shapes
    assert sorted((s.type, s.x0) for s in shapes) == [("line", 200), ("line", 200), ("line", 300),
                                                      ("line", 300),
                                                      ("rect", 0), ("rect", 0)]
    assert {s.x1 for s in shapes if s.type == "rect"} == {100}
    assert "ramps 0.01 → 0.1" in " ".join(a.text for a in fig.layout.annotations)
    step = curves.band_curves("a_table1_shortcuts", ["original"], scale="cpu_step_warmup",
                              out_dir=tmp_path)
    assert sorted(s.x0 for s in step.layout.shapes
                  if s.type == "line") == [100, 100, 200, 200, 300, 300]


def test_every_chapter_figure_of_curves_is_drawn_by_band_curves():
    """The lr marks and per-seed traces live in band_curves (and full_recipe_curves, one seed of the
    full recipe): a chapter that drew curves another way would lack them."""
    import json
    from pathlib import Path
    for p in sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            text = "".join(c["source"])
            if c["cell_type"] == "code" and ("history" in text and "Scatter" in text):
                raise AssertionError(f"{p.name} draws training curves itself: use "
                                     f"curves.band_curves")


def test_lr_change_note_says_once_who_rose_and_who_learned_then_fell_back(tmp_path):
    """Issue 42.2: the lr-change section listed every variant as 'rose more than 0.5 in 0 of N
    seeds' and missed the one real event (a net that learned during the warm-up and fell back to
    chance as the lr rose): one sentence names who rose and who fell back, one table holds the worst
    rise after each change."""
    for seed, spike in enumerate((4.0, 0.0, 0.0)):
        r = result("a_table2_activations", "original-110", seed, scale="cpu_step_warmup")
        r["history"]["train"] = history([2.2] * 10 + [2.2 + spike] + [2.0] * 29, [0.7] * 40)
        results.save_result(r, tmp_path)
    for seed in range(3):  # learned (below 80 % by step 50), then back at chance to the end
        r = result("a_table2_activations", "relu_preact-110", seed, scale="cpu_step_warmup")
        r["history"]["train"] = history([2.0] * 10 + [2.31] * 30, [0.7] * 5 + [0.9] * 35)
        r["final"]["train_loss"] = 2.31
        results.save_result(r, tmp_path)
    note = curves.lr_change_note("a_table2_activations", ["original-110", "relu_preact-110"],
                                 "cpu_step_warmup",
                                 out_dir=tmp_path)
    said, table = note.split("\n\n")
    assert "is 0.01 for the first 100 steps and jumps to 0.1 in one step" in said
    assert "the loss rose by more than 0.5 in the original unit" in said
    assert ("ReLU-only pre-activation (3 of 3) learned (got below 80 % training error) and then "
            "fell back" in said)
    assert ("| the original unit | 4.00 |" in table and "| 10, 10, 10 | 0 of 3 |" in table
            and said.count("rose") == 1)
    # none at cpu
    assert curves.lr_change_note("a_table2_activations", ["original-110"], out_dir=tmp_path) == ""


def test_one_runs_early_spike_does_not_set_the_loss_axis_and_log_ticks_are_written_out(tmp_path):
    """Issue 21: a loss panel whose range one seed's early spike sets flattens every other curve;
    the axis stops above the others, says so, and its ticks read as numbers (20, not a second
    "2")."""
    flat = tuple([2.3] + [1.5 - 0.01 * i for i in range(60)])
    spike = (40.0,) + flat[1:]
    save(tmp_path, "a_table2_activations", "full_preact-110", [0.5, 0.5, 0.5], losses=flat)
    save(tmp_path, "a_table2_activations", "relu_before_add-110", [0.9], losses=spike)
    fig = curves.band_curves("a_table2_activations", ["full_preact-110", "relu_before_add-110"],
                             out_dir=tmp_path)
    lo, hi = fig.layout.yaxis.range
    assert 10 ** hi < 5 and "runs off the top" in fig.layout.title.text
    assert list(fig.layout.yaxis.ticktext) == [f"{v:g}" for v in fig.layout.yaxis.tickvals]
    assert len(fig.layout.yaxis.tickvals) >= 4
    calm = curves.band_curves("a_table2_activations", ["full_preact-110"], out_dir=tmp_path)
    assert (10 ** calm.layout.yaxis.range[1] > 2.3
            and "runs off the top" not in calm.layout.title.text)
    assert (log_axes.log_ticks(8, 60)["ticktext"] == ["10", "20", "50"]
            or len(log_axes.log_ticks(8, 60)["ticktext"]) >= 4)


def test_a_band_on_a_log_axis_is_computed_in_log_space_and_the_hardware_is_a_caption(tmp_path):
    """Issue 30.5: mean - sd on a log axis can fall below every seed (or below zero); in log space
    the band is the geometric mean times / divided by exp(sd of the logs), and stays between the
    seeds. Where and when the runs trained is a caption line, not the title."""
    mean, upper, lower = curves.mean_band([[0.1, 1.0, 1.0, 10.0]], log=True)
    assert (abs(mean[0] - 1.0) < 1e-9 and abs(upper[0] * lower[0] - 1.0) < 1e-9
            and 0.1 < lower[0] < 1 < upper[0] < 10)
    arith = curves.mean_band([[0.1, 1.0, 1.0, 10.0]])
    assert arith[2][0] < 0.1   # the arithmetic band: below every seed
    for seed, f in enumerate((0.1, 1.0, 1.0, 10.0)):  # seeds two decades apart
        r = result("a_table1_shortcuts", "original", seed)
        r["history"]["train"] = history([f * x for x in (2.0, 1.0, 0.5, 0.25)], [0.7] * 4)
        results.save_result(r, tmp_path)
    fig = curves.band_curves("a_table1_shortcuts", ["original"], out_dir=tmp_path)
    band = next(d for d in fig.data if d.fill == "toself" and d.xaxis in (None, "x"))
    # the loss panel's band stays above the lowest seed (in log space)
    assert min(band.y) > 0.1 * 0.25
    caption = curves.trained_on("a_table1_shortcuts", ["original"], out_dir=tmp_path)
    assert (caption.startswith("Trained on ")
            and caption.split("Trained on ")[1].split(",")[0] not in fig.layout.title.text)


def test_a_unit_has_one_colour_in_every_figure(tmp_path):
    """Issue 42.1: full pre-activation was blue, orange and red on one page. Its colour is
    palette.py's wherever a curve of it is drawn (Table 2's, Table 3's or the interventions' runs),
    and no two units share one."""
    from fake_runs import save
    from idmap_book.figures import curves
    from idmap_book.page import palette

    units = ("original-110", "relu_preact-110", "full_preact-110")
    for v in units:
        save(tmp_path, "a_table2_activations", v, [0.5] * 3)
    fig = curves.band_curves("a_table2_activations", units, out_dir=tmp_path)
    seen = {}
    for t in fig.data:
        if t.legendgroup in units and t.line and t.line.color:
            seen.setdefault(t.legendgroup, set()).add(t.line.color)
    assert seen == {v: {palette.UNIT_COLOURS[v.split("-")[0]]} for v in units}
    assert palette.of("a_table3_preact",
                      "c10-1001-original") == palette.of("a_swaps", "original+final_bn_relu-1001") \
        == palette.UNIT_COLOURS["original"]
    # the same network
    assert palette.of("a_table1_shortcuts", "original") == palette.UNIT_COLOURS["original"]
    # chapter 8's probes of the trained nets: each unit in its colour there too
    import torch

    from idmap_book.figures import trained_probes as tp
    m = {"info": "", "pre_info": "", "x": torch.zeros(2, 3, 32, 32),
         "rates": {tp.INIT: torch.rand(54), tp.TRAINED: torch.rand(54)},
         "grads": {tp.GRAD_ORIGINAL: torch.rand(55) + 1, tp.GRAD_PREACT: torch.rand(55) + 1}}
    assert {t.name: t.line.color for t in tp.gradient_figure(m).data} == {
        tp.GRAD_ORIGINAL: palette.UNIT_COLOURS["original"],
        tp.GRAD_PREACT: palette.UNIT_COLOURS["full_preact"]}
    assert {t.line.color
            for t in tp.truncation_figure(m).data} == {palette.UNIT_COLOURS["original"]}


def test_table1_shortcuts_a_colour_per_kind_a_dash_per_setting_and_none_a_units():
    """Issue 42: Table 1's identity was blue on chapter 7 and vermillion (Table 2's original) on
    chapter 8, and two of its shortcuts were teal and cyan. The identity is the original unit's
    colour; each modified shortcut's kind has its own, used by no unit, with 3:1 contrast on white;
    settings of one kind differ by dash."""
    from idmap_book.page import palette
    from idmap_lib.engine import recipes

    t1 = [v for v in recipes.EXPERIMENTS["a_table1_shortcuts"]["variants"] if v != "original"]
    colours = {v: palette.of("a_table1_shortcuts", v) for v in t1}
    kind = {v: recipes.config("a_table1_shortcuts", v)["model"]["kwargs"]["shortcut"] for v in t1}
    assert colours == {v: palette.SHORTCUT_COLOURS[kind[v]] for v in t1}
    assert not set(colours.values()) & set(palette.UNIT_COLOURS.values())
    # every unit's colour (its registry row's) is one of Okabe and Ito's
    assert set(palette.UNIT_COLOURS.values()) <= set(palette.OKABE_ITO.values())

    def luminance(hex_):
        c = [int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    assert all(1.05 / (luminance(c) + 0.05) >= 3 for c in palette.SHORTCUT_COLOURS.values())
    styles = [(colours[v], palette.dash("a_table1_shortcuts", v)) for v in t1]
    assert len(set(styles)) == len(styles)                     # no two shortcuts drawn alike
    assert palette.dash("a_table1_shortcuts", "constant_scaling-0.5-0.5") != \
        palette.dash("a_table1_shortcuts", "constant_scaling-0.5-1")
    assert (palette.of("b_resnet32", "gated") == palette.NET_COLOURS["gresnet"]
            and palette.dash("a_table2_activations", "original-110") == "solid")
