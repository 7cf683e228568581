"""One palette by construction: every chapter's figures, built by the functions the chapters call
(from the recorded runs, and the theory chapters' from made-up measurements), take each trace's
colour from palette.py by what it draws (its ``meta``, never its name): one key, one colour on every
page; no two keys of a figure share one; no trace in plotly's default colours; a title on every
figure; no legend over the plot. A notebook that draws a trace itself takes its colour the same
way."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from idmap_book.page import palette

BOOK = Path(__file__).resolve().parents[1] / "book"


def _theory():
    from idmap_book.figures import init_probes, mechanism_figures as mf, slider_figures as sf

    curve = {L: torch.linspace(2, 1, L + 1) for L in (10, 30)}
    survival = {d: np.r_[np.full(5, np.nan), np.logspace(0, -3, 9)] for d in (164, 1001)}
    return {
        "2: the depth slider": sf.depth_slider(curve, {L: torch.ones(L + 1) for L in curve}),
        "3: the λ slider": sf.lambda_slider({lam: torch.linspace(1, 2, 31) for lam in (0.9, 1.0)},
                                            start=1.0),
        "3: the λ-scaled stack": mf.forward_figure(),
        "4: truncation at init": init_probes.truncation_figure(
            {d: np.linspace(0.3, 0.2, 9) for d in (110, 164, 1001)}),
        "4: direct paths": init_probes.direct_path_figure(survival),
        "4: gradient at init": init_probes.gradient_figure(
            {u: np.linspace(3, 1, 9) for u in ("original", "full_preact")}),
        "4: truncation in training": mf.truncation_figure(),
        "8: weight inputs": mf.weight_input_figure(),
    }


def _runs():
    from idmap_book.evidence import variants as V
    from idmap_book.figures import (curves, explorer, forest, full_recipe, gate_figures as gf,
                                        keras_probe, swap_figure, trained_probes as tp)
    from idmap_lib.engine import recipes

    m = {"info": "", "pre_info": "", "x": torch.zeros(2, 3, 32, 32),
         "rates": {tp.INIT: torch.rand(54), tp.TRAINED: torch.rand(54)},
         "grads": {tp.GRAD_ORIGINAL: torch.rand(55) + 1, tp.GRAD_PREACT: torch.rand(55) + 1}}
    band = {"7": ("a_table1_shortcuts", V.T1_CURVES, "cpu"),
            "8: the lr jump": ("a_table2_activations", V.LR_JUMP, recipes.JUMP_PROBE),
            "8: units": ("a_table2_activations", V.UNITS_110, "cpu"),
            "8: ResNet-164": ("a_table2_activations", V.PAIR_164, "cpu"),
            "9: ResNet-1001": ("a_table3_preact", V.DEPTH_1001, "cpu"),
            "9: 1-layer units": ("a_table3_preact", V.SINGLE_110, "cpu"),
            "10: ResNet-32": ("b_resnet32", V.SHOWN["b_resnet32"], "cpu"),
            "10: WRN": ("b_wrn", V.SHOWN["b_wrn"], "cpu")}
    figs = {k: curves.band_curves(e, vs, scale=s) for k, (e, vs, s) in band.items()}
    return {**figs,
            "7: full recipe": full_recipe.full_recipe_curves("a_table1_shortcuts", V.T1_FULL),
            "8: full recipe": full_recipe.full_recipe_curves("a_table2_activations",
                                                             V.UNITS_110),
            "8: trained truncation": tp.truncation_figure(m),
            "8: trained gradient": tp.gradient_figure(m),
            "9: key figure": swap_figure.key_figure()[0], "9: explorer": explorer.explorer(),
            "10: Fig 5": gf.pruning_figure(), "10: k": gf.k_figure(),
            "10: Keras probe": keras_probe.probe_figure(),
            "8: forest (verdicts)": forest.forest(["t2_full_preact_best",
                                                   "lr_jump_preact_tolerates"])}


@pytest.fixture(scope="module")
def figures():
    return {k: f for k, f in {**_theory(), **_runs()}.items() if f is not None}


def _grey(c) -> bool:
    """A neutral colour (grey, black, white, the explorer's faint grey): no unit's."""
    m = re.fullmatch(r"#(..)(..)(..)", c or "") or re.match(r"rgba?\((\d+), ?(\d+), ?(\d+)", c)
    if c in ("grey", "gray", "black", "white"):
        return True
    if not m:
        return False
    rgb = [int(x, 16) if c.startswith("#") else int(x) for x in m.groups()]
    return max(rgb) - min(rgb) < 8


def _colours(trace) -> set:
    """The colours a trace draws in (its line, markers, fill), greys left out."""
    out = set()
    for c in (trace.line.color if "line" in trace else None,
              trace.marker.color if "marker" in trace else None,
              trace.fillcolor if "fillcolor" in trace else None):
        for x in ([c] if isinstance(c, str) else list(c) if c is not None else []):
            if isinstance(x, str) and not _grey(x):
                out.add(x.upper())
    return out


def findings(figs: dict) -> list[str]:
    """What breaks one palette by construction in `figs` ({what: figure})."""
    bad, seen = [], {}
    for what, fig in figs.items():
        if "(verdicts)" in what:  # coloured by verdict (tables.VERDICT_COLOURS), no unit drawn
            continue
        in_fig = {}
        for t in fig.data:
            key = (t.meta or {}).get("palette") if isinstance(t.meta, dict) else None
            cs = _colours(t)
            if key is None:
                if cs or ("line" in t and t.line.color is None
                          and ("marker" not in t or t.marker.color is None)):
                    bad.append(f"{what}: {t.name!r} is not keyed by the palette ({cs or 'default'})")
                continue
            for c in cs:
                seen.setdefault(key, set()).add(c)
                in_fig.setdefault(c, set()).add(key)
        bad += [f"{what}: {sorted(keys)} share {c}" for c, keys in in_fig.items() if len(keys) > 1]
        if not (fig.layout.title.text or "").strip():
            bad.append(f"{what}: no title")
        lg, shown = fig.layout.legend, [t for t in fig.data if t.showlegend is not False]
        if fig.layout.showlegend is not False and shown and not (
                lg.yref == "container" or (lg.x, lg.y) == (None, None)  # plotly's: beside it
                or (lg.y is not None and (lg.y >= 1 or lg.y < 0)) or (lg.x or 0) >= 1):
            bad.append(f"{what}: its legend is over the plot (x={lg.x}, y={lg.y})")
    bad += [f"{k} drawn in {sorted(cs)}" for k, cs in seen.items() if len(cs) > 1]
    return bad


def test_every_chapters_figures_take_one_palette_by_what_they_draw(figures):
    assert {k.split(":")[0] for k in figures} >= {"2", "3", "4", "7", "8", "9", "10"}
    assert not findings(figures), "\n".join(findings(figures))
    drawn = {t.meta["palette"] for f in figures.values() for t in f.data
             if isinstance(t.meta, dict)}
    assert {"original", "full_preact", "gresnet", "resnet", "ResNet-1001", "dropout"} <= drawn


def test_the_check_catches_two_colours_a_shared_colour_a_default_and_a_legend_on_the_curves():
    import plotly.graph_objects as go

    def fig(*traces, **layout):
        return go.Figure(list(traces), layout={"title_text": "t", **layout})

    s = go.Scatter
    orig, pre = palette.style("original"), palette.style("full_preact")
    assert not findings({"a": fig(s(y=[1], **orig), s(y=[2], **pre))})
    # one unit in two colours (two figures), keyed by meta whatever its name
    two = {**orig, "line": {"color": palette.COLOURS["full_preact"]}, "marker": {}}
    assert findings({"a": fig(s(y=[1], name="x", **orig)), "b": fig(s(y=[1], name="x", **two))})
    # two keys in one colour in a figure
    same = {**pre, "line": {"color": palette.COLOURS["original"]}, "marker": {}}
    assert findings({"a": fig(s(y=[1], **orig), s(y=[2], **same))})
    # plotly's default colour, or a colour not from the palette
    assert findings({"a": fig(s(y=[1], name="original"))})
    assert findings({"a": fig(s(y=[1], line={"color": "#1f77b4"}))})
    # no title; a legend inside the plot
    assert findings({"a": go.Figure([s(y=[1], **orig)])})
    assert findings({"a": fig(s(y=[1], **orig), legend={"x": 0.6, "y": 0.98})})


def test_the_palette_tells_each_familys_members_apart():
    for family in palette.FAMILIES.values():
        assert len(set(family.values())) == len(family)
    # chapter 7: the dropout shortcut is no brown beside the original's vermillion
    assert palette.of("a_table1_shortcuts", "dropout-0.5") not in ("#8C510A",
                                                                  palette.COLOURS["original"])
    assert {palette.key("b_mnist", v) for v in ("gresnet-d100", "resnet-d100", "plain-d10")} \
        == {"gresnet", "resnet", "plain"}
    assert palette.key("b_resnet32", "original") == palette.key("b_wrn", "plain") == "resnet"


def test_a_notebook_that_draws_a_trace_takes_its_colour_from_the_palette():
    """A chapter's own trace (chapters 3 and 5 draw a few) is keyed like the library's: every
    go.Scatter in a code cell passes palette.style."""
    bare = []
    for nb in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            src = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            for call in re.split(r"(?=go\.Scatter\()", src)[1:]:
                if "palette.style(" not in call.split("go.Scatter(")[1].split("\n\n")[0][:400]:
                    bare.append(f"{nb.name}: {call[:60]}")
    assert not bare, bare


def test_every_figure_says_its_finding_in_numbers(figures):
    """Each figure's text alternative is the one its module computed (``meta.alt``), with the
    numbers it draws, not the generic "<y> against <x>" of its axes."""
    from idmap_book.page.figure_style import alt_text

    bare = [k for k, f in figures.items()
            if not (isinstance(f.layout.meta, dict) and f.layout.meta.get("alt")
                    and re.search(r"\d", alt_text(f)) and " against " not in alt_text(f))]
    assert not bare, bare


def test_the_lr_jump_figure_says_which_unit_stays_flat_and_how_far_the_other_rises(tmp_path):
    """Chapter 8's figure in words: full pre-activation's loss stays flat at the jump, the
    original's rises 2.7 nats (the rise lr_change_note reads, the seeds' median)."""
    from fake_runs import save
    from idmap_book.figures import curves
    from idmap_book.page.figure_style import alt_text
    from idmap_lib.engine import recipes

    e, s = "a_table2_activations", recipes.JUMP_PROBE
    save(tmp_path, e, "full_preact-110", [0.5] * 3, losses=(2.0, 1.9, 1.8, 1.7), scale=s)
    save(tmp_path, e, "original-110", [0.5] * 3, losses=(2.0, 4.7, 2.0, 1.5), scale=s)
    alt = alt_text(curves.band_curves(e, ["full_preact-110", "original-110"], scale=s,
                                      out_dir=tmp_path, panels=("train_loss",)))
    assert ("full pre-activation's loss stays flat; the original unit's loss rises 2.7 nats"
            in alt
            and "training loss after 400 steps: the original unit 1.5, full pre-activation 1.7"
            in alt), alt


def test_no_variant_key_in_what_a_reader_sees(figures):
    """The book names a variant in words (variants.words): never 'c10-1001-original's early
    spike', 'full_preact-110: your run' or a table row 'original-110' -- in a figure's title,
    legend, annotations or text alternative, nor in the generated tables and notes; and a figure
    writes its numbers as the book does (2.74×10⁴, never 2.74e+04)."""
    import site_hygiene as h
    from idmap_book.evidence import variants, verdicts
    from idmap_book.figures import curves, mechanism_figures as mf
    from idmap_book.page.figure_style import alt_text
    from idmap_lib.engine import recipes

    seen = []
    for what, fig in figures.items():
        texts = [fig.layout.title.text, alt_text(fig)] + [a.text for a in fig.layout.annotations]
        texts += [t.name for t in fig.data if t.showlegend is not False]
        seen += [f"{what}: {t}" for t in texts if h.keys_in(t) or h.E_NOTATION.search(t or "")]
    tables = [verdicts.claims_table(), mf.claims_table()]
    tables += [variants.variant_table(e) for e in ("a_table1_shortcuts", "a_table2_activations",
                                                   "a_table3_preact", "b_resnet32")]
    for df in tables:
        cells = [str(x) for x in df.index] + [str(x) for x in df.to_numpy().ravel()]
        seen += [c[:120] for c in cells if h.keys_in(c)]
    notes = [curves.lr_change_note("a_table2_activations", variants.UNITS_110,
                                   scale=recipes.JUMP_PROBE),
             curves.lr_change_note("a_table3_preact", variants.DEPTH_1001)]
    seen += [n[:120] for n in notes if h.keys_in(n)]
    assert not seen, "\n".join(seen)


# Machado, Oliveira and Fernandes (2009) at full severity: what a deuteranope and a protanope see
CVD = {"deutan": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                  (-0.011820, 0.042940, 0.968881)),
       "protan": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                  (-0.003882, -0.048116, 1.051998)),
       "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1))}


def _lab(hex_, vision):
    c = np.array([int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    c = np.clip(np.array(CVD[vision]) @ np.where(c <= 0.04045, c / 12.92,
                                                 ((c + 0.055) / 1.055) ** 2.4), 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ c / np.array([0.95047, 1, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours: dict) -> tuple[float, str, str, str]:
    """(ΔE, key, key, vision): the two colours of a figure nearest each other (CIE76), for normal
    vision, a deuteranope and a protanope."""
    from itertools import combinations

    return min((float(np.linalg.norm(_lab(colours[a], v) - _lab(colours[b], v))), a, b, v)
               for a, b in combinations(colours, 2) for v in CVD)


def test_the_keys_of_every_figure_stay_apart_for_the_common_colour_deficiencies(figures):
    """Distinguishable pairs (a phone's thin lines): in every figure any two keys' colours are at
    least ΔE 15 apart, for deuteranopes and protanopes too. Chapter 7's old dropout brown beside
    the identity's vermillion was 13.9 for a protanope."""
    assert closest_pair({"original": palette.COLOURS["original"], "dropout": "#8C510A"})[0] < 15
    near = []
    for what, fig in figures.items():
        keys = {t.meta["palette"] for t in fig.data if isinstance(t.meta, dict)
                and "palette" in t.meta}
        if len(keys) > 1 and closest_pair({k: palette.COLOURS[k] for k in keys})[0] < 15:
            near.append((what, closest_pair({k: palette.COLOURS[k] for k in keys})))
    assert not near, near
