"""The synthesis chapter (book/evidence/synthesis.py): the rows' properties are what their recipes
build, each row's outcome follows from its two comparisons, and each mechanism's status from whether
its property predicts the outcomes across the rows (necessary, sufficient, neither, not testable),
with the rows that decide it."""
import pytest
import torch.nn as nn

from idmap_book.evidence import synthesis
from idmap_book.evidence.claim_words import in_sentence
from idmap_book.figures import swap_figure
from idmap_book.evidence.claims import CLAIMS_BY_KEY
from idmap_lib.engine import recipes
from idmap_lib.engine.build import build_model
from idmap_lib.models.networks import ScaledInput


def _in_order(net):
    """The network's ops in the order its forward pass meets them, "+" for each addition (the
    shortcut's own ops left out: the path the properties are about is the sum's)."""
    leaves = lambda m: [x for x in m.modules() if not list(x.children())  # noqa: E731
                        and not isinstance(x, nn.Identity)]
    ops = leaves(net.stem)
    for u in net.units:
        ops += leaves(u.preact) + leaves(u.residual) + ["+"] + leaves(u.post)
    return ops + leaves(net.final)


def _behind(ops, i):
    """The op that feeds ops[i], looking through ReLUs, dropout and a fixed scaling."""
    skip = (nn.ReLU, nn.Dropout, ScaledInput)
    while i > 0 and isinstance(ops[i - 1], skip):
        i -= 1
    return ops[i - 1] if i else None


def test_every_row_is_a_recipe_whose_built_model_has_exactly_the_properties_listed():
    """The properties are read from the registry's rows and the swaps' words: the networks the
    recipes build must have exactly those, looked at module by module."""
    for row, props in synthesis.PROPERTIES.items():
        net = build_model(recipes.config("a_swaps", row, "cpu_step_warmup")["model"])
        ops = _in_order(net)
        convs = [i for i, op in enumerate(ops) if isinstance(op, nn.Conv2d)][1:]  # after conv1
        built = {"clean_path": all(isinstance(u.post, nn.Identity) for u in net.units),
                 "bn_every_conv": all(isinstance(_behind(ops, i), nn.BatchNorm2d) for i in convs),
                 "normalised_classifier": isinstance(_behind(ops, len(ops)), nn.BatchNorm2d),
                 "branch_zero_at_init": all(
                     float([m for m in u.residual if isinstance(m, nn.BatchNorm2d)][-1]
                           .weight.detach().abs().sum()) == 0 for u in net.units)}
        assert {p for p, on in built.items() if on} == set(props), row
        test = "jump" if row.endswith("-110") else "start"
        if row not in synthesis.REFERENCE[test]:
            assert synthesis.row_claim(row, test) in CLAIMS_BY_KEY, row


def _found(**words):
    return {r: {"outcome": w} for r, w in words.items()}


def test_a_property_is_judged_only_by_the_swaps_that_change_it_alone(monkeypatch):
    """A mechanism is sufficient where adding that one part rescued a failing unit, necessary where
    removing it broke one that coped; rows that differ in several parts (the units themselves) never
    decide it."""
    monkeypatch.setattr(synthesis, "PROPERTIES", {"u-1": (), "u+p-1": ("p",), "v-1": ("p", "q"),
                                                  "v+nop-1": ("q",),
                                                  "w-1": ("q",)})
    good, bad = synthesis.OUTCOMES["jump"]
    found = _found(**{"u-1": bad, "u+p-1": good, "v-1": good, "v+nop-1": bad, "w-1": good})
    s = synthesis.status("p", found)
    assert (s["status"] == "necessary and sufficient" and s["rescued"] == ["u+p-1"]
            and s["broke"] == ["v+nop-1"])
    # w tolerates with q, u fails without it: units, not a swap of q
    s = synthesis.status("q", found)
    assert s["status"] == "not testable at this scale"
    found["v+nop-1"] = {"outcome": good}
    assert synthesis.status("p", found)["status"] == "sufficient, not necessary"
    found["u+p-1"] = {"outcome": bad}
    assert synthesis.status("p", found)["status"] == "neither"
    # the removal swap run, its runs undecided: not "not tested"
    found["v+nop-1"] = {"outcome": "open"}
    assert synthesis.status("p", found)["status"] == "not sufficient; necessity open"
    del found["v+nop-1"]  # no removal swap at all
    assert synthesis.status("p", found)["status"] == "not sufficient; necessity not tested here"
    found["v+nop-1"] = {"outcome": "open"}
    found["u+p-1"] = {"outcome": "not run yet"}
    assert synthesis.status("p", found)["status"] == "open"


GOOD, BAD = ("below the original, not shown above full pre-activation",
             "above full pre-activation, not shown below the original")


@pytest.mark.parametrize("below, above, word", [
    ("reproduced", "inconclusive", GOOD),
    ("inconclusive", "reproduced", BAD),
    ("reproduced", "reproduced", "in between"), ("inconclusive", "inconclusive", "open"),
    ("not run yet", "reproduced", "not run yet"),
    ("contradicted", "reproduced", BAD)])
def test_a_rows_outcome_follows_from_its_two_comparisons(monkeypatch, below, above, word):
    """Issue 57: the outcome says what the comparisons show; below the original and not shown
    above full pre-activation is never said as tolerating the jump as well as it does."""
    assert synthesis.OUTCOMES["jump"] == (GOOD, BAD)
    monkeypatch.setattr(synthesis, "_comparisons", lambda r, t, o, reading=None:
                        ((below, {}), (above, {})))
    assert synthesis.outcome("original+final_bn_relu-110")["outcome"] == word


def test_a_row_stuck_before_the_jump_is_its_own_outcome_never_tolerance(monkeypatch):
    stuck = ("not testable here", {"excluded": (5, 0)})
    monkeypatch.setattr(synthesis, "_comparisons",
                        lambda r, t, o, reading=None: (stuck, ("not testable here",
                                                               {"excluded": (0, 5)})))
    assert synthesis.outcome("bn_after_add-110")["outcome"] == "stuck before the jump"
    # the *other* side left out: not this row's outcome
    other = ("not testable here", {"excluded": (0, 5)})
    monkeypatch.setattr(synthesis, "_comparisons",
                        lambda r, t, o, reading=None: (other, ("inconclusive", {})))
    assert synthesis.outcome("bn_after_add-110")["outcome"] == "open"


def test_the_references_take_their_outcome_from_the_papers_claims(monkeypatch):
    monkeypatch.setattr(synthesis, "_part", lambda k, i, o, reading=None: ("reproduced", {}))
    assert synthesis.outcome("original-110")["outcome"] == BAD
    assert synthesis.outcome("full_preact-110")["outcome"] == GOOD
    assert synthesis.outcome("original-1001", "start")["outcome"] == synthesis.OUTCOMES["start"][1]


def test_the_summary_and_the_tables_name_every_mechanism_with_a_computed_status():
    assessed = synthesis.assess_all()
    words = synthesis.statuses_in_words(assessed)
    for m in synthesis.MECHANISMS:
        assert in_sentence(m.title) in words
        assert all(assessed[m.key][t]["status"] in synthesis.STATUSES for t in synthesis.OUTCOMES)
    assert assessed["truncation"]["jump"]["status"] == "not testable at this scale"
    assert len(synthesis.table(assessed)) == len(synthesis.MECHANISMS)
    assert list(synthesis.swap_table().index)[0] == "the original unit"


def test_the_key_figure_draws_every_recorded_seed_of_every_row_in_its_units_colour():
    from idmap_book.page import palette

    fig, values = swap_figure.key_figure()
    drawn = [t for t in fig.data if len(t.x)]
    assert sum(len(v) for v in values.values()) == sum(len(t.x) for t in drawn)
    assert set(values) == set(synthesis.PROPERTIES) and len(values["full_preact-110"]) >= 3
    by_name = {t.hovertemplate.split(":")[0]: t.marker.color for t in drawn}
    assert by_name["full pre-activation"] == palette.UNIT_COLOURS["full_preact"] == \
        palette.colour("full_preact+no_final-110")
    # two units never share one
    assert len(set(palette.UNIT_COLOURS.values())) == len(palette.UNIT_COLOURS)
    # each row named in words above its markers
    labels = {a.text.split(":")[0] for a in fig.layout.annotations}
    assert {"the original unit", "full pre-activation", "the original ResNet-1001"} <= labels
    alt = swap_figure.key_figure_alt(values)
    assert "full pre-activation" in alt and "ResNet-1001" in alt


def test_a_blown_up_rise_is_drawn_at_the_axis_edge_and_keeps_its_value(monkeypatch):
    """One run's rise of 1e30 nats would squeeze every other rise into the axis' first decades: it
    is drawn at RISE_MAX as a triangle, its value in its hover and the caption."""
    rise, seen = swap_figure.METRICS["lr_jump_rise"], []
    monkeypatch.setitem(swap_figure.METRICS, "lr_jump_rise",  # the first run read: 1e30
                        lambda r: 1e30 if not seen.append(r) and len(seen) == 1 else rise(r))
    fig, values = swap_figure.key_figure()
    jump = [t for t in fig.data if len(t.x) and t.xaxis == "x"]
    points = [(v, x, m) for t in jump for v, x, m in zip(t.customdata, t.x, t.marker.symbol)]
    beyond = [(x, m) for v, x, m in points if v > swap_figure.RISE_MAX]
    assert beyond and set(beyond) == {(swap_figure.RISE_MAX, "triangle-right")}
    assert all(x == v and m != "triangle-right" for v, x, m in points if v <= swap_figure.RISE_MAX)
    assert fig.layout.xaxis.range[1] < 5  # decades: the rises that tell the units apart keep it
    assert max(max(v) for v in values.values() if v) >= 1e30  # the values as measured
    steps = recipes.config("a_swaps", "original-1001", "cpu")["steps"]
    assert f"within the run's {steps} steps" in swap_figure.key_figure_caption(values)


@pytest.mark.parametrize("statuses, said", [
    ({"classifier_input": "sufficient; necessity open",
      "identity_bias": "sufficient; necessity not tested here",
      "clean_path": "not testable at this scale"},
     "a normalised signal into the classifier and branches down-weighted at initialisation were "
     "each enough to bring a failing unit's rise below the original's (**sufficient**; their "
     "claims read *inconclusive*: not told apart from full pre-activation); the swaps do not yet "
     "show that a unit needs either."),
    ({"classifier_input": "necessary and sufficient", "identity_bias": "sufficient, not necessary"},
     "a normalised signal into the classifier and branches down-weighted at initialisation were "
     "each enough to bring a failing unit's rise below the original's (**sufficient**; their "
     "claims read *inconclusive*: not told apart from full pre-activation); a unit that coped "
     "broke without a normalised signal into the classifier (**necessary**); a unit that coped did "
     "without branches down-weighted at initialisation (**not necessary**)."),
    ({"classifier_input": "neither", "clean_path": "necessary, not sufficient"},
     "a normalised signal into the classifier and the clean additive path did not rescue a failing "
     "unit (**not sufficient**); a unit that coped broke without the clean additive path "
     "(**necessary**); a unit that coped did without a normalised signal into the classifier "
     "(**not necessary**)."),
    ({"classifier_input": "open", "clean_path": "not testable at this scale"},
     "no part swapped alone has decided anything yet."),
])
def test_the_answer_says_the_swaps_in_plain_words_and_never_more(statuses, said):
    """Each status in plain words: enough (sufficient), not enough, needed (necessary), done
    without (not necessary), and, where only sufficiency is shown, that need is not yet shown."""
    assert synthesis._plain(statuses) == said


def test_the_answer_says_what_is_still_open(monkeypatch):
    """The mechanisms no swap tests, those whose swaps are undecided and the rows still open are
    said as open; no row is, once every row is decided."""
    good, bad = synthesis.OUTCOMES["jump"]
    found = {t: {r: {"outcome": "open"} for r in synthesis.ROWS[t]} for t in synthesis.OUTCOMES}
    for t in synthesis.OUTCOMES:
        found[t].update({synthesis.REFERENCE[t][0]: {"outcome": synthesis.OUTCOMES[t][1]},
                         synthesis.REFERENCE[t][1]: {"outcome": synthesis.OUTCOMES[t][0]}})
    said = synthesis.answer(found=found)
    assert ("**Still open:** the clean additive path, normalised inputs to every convolution and "
            "less ReLU truncation as depth grows (not testable at this scale); a normalised signal "
            "into the classifier and branches down-weighted at initialisation (the swaps' runs do "
            "not decide yet); {} of {} rows.".format(
                len(synthesis.PROPERTIES) - 4, len(synthesis.PROPERTIES))) in said
    assert "no part swapped alone has decided anything yet" in said
    decided = {t: {r: {"outcome": synthesis.OUTCOMES[t][0]} for r in synthesis.ROWS[t]}
               for t in synthesis.OUTCOMES}
    said = synthesis.answer(found=decided)
    assert " rows." not in said
    # (zero gamma's parent copes here: adding it cannot show sufficiency, so it stays open)
    assert said.endswith("(not testable at this scale); branches down-weighted at initialisation "
                         "(the swaps' runs do not decide yet).")


def test_the_swap_table_says_each_rows_outcome_second_in_three_columns_a_phone_holds():
    """Issue 59: the rows' table is three columns (a phone's 358 px hold them), the outcome second,
    in the answer's words, then the parts each row has by construction, in words."""
    found = {t: synthesis.outcomes(t) for t in synthesis.OUTCOMES}
    table = synthesis.swap_table(found=found)
    assert table.index.name == "unit" and list(table.columns) == ["outcome", "parts it has"]
    assert list(table.index) == [synthesis.words("a_swaps", r) for r in synthesis.PROPERTIES]
    for r, row in zip(synthesis.PROPERTIES, table.itertuples()):
        test = "jump" if r in synthesis.ROWS["jump"] else "start"
        said = dict(zip(synthesis.OUTCOMES[test], synthesis.SHORT_OUTCOMES[test]))
        assert row.outcome == said.get(found[test][r]["outcome"], found[test][r]["outcome"])
        parts = [synthesis.PROPERTY_SHORT[p] for p in synthesis.PROPERTY_WORDS
                 if p in synthesis.PROPERTIES[r]]
        assert row._2 == (", ".join(parts) or "none")
    assert table.loc["full pre-activation", "outcome"] == "copes with the jump"
    # no cell longer than a phone's column holds in a few lines
    assert max(len(str(v)) for v in table.reset_index().to_numpy().ravel()) <= 90


def test_the_mechanisms_table_says_a_status_alone_where_no_swap_decides_it():
    """Three columns a phone holds: each mechanism with who offers it, its status at the lr jump
    and at 1001 layers with the swaps that decided it; 'not testable at this scale' stands alone
    (the page says what it means once)."""
    shown = synthesis.mechanism_table()
    assert list(shown.columns) == ["mechanism", "at the lr jump", "at 1001 layers"]
    assert list(shown["mechanism"]) == [f"{m.title} ({m.who})" for m in synthesis.MECHANISMS]
    assert all(m.who for m in synthesis.MECHANISMS)
    cells = list(shown["at the lr jump"]) + list(shown["at 1001 layers"])
    assert "not testable at this scale" in cells
    assert all(c == "not testable at this scale" or not c.startswith("not testable") for c in cells)
    assert any("(adding it rescued the original unit" in c for c in cells)
