"""Chapter 6's honest questions: what the book's own classroom runs show, from the records."""
import pytest

from idmap_class import effects, guide, questions

SCALE = {"net": "ResNet-20 (9 residual units)", "length": "400 steps",
         "paper_net": "ResNet-110 (54 residual units)", "paper_length": "64,000 steps"}


@pytest.fixture
def records(monkeypatch):
    book = {"exclusive_gate_bias": {"best_b_g": [0, 0, -6], "loss_b-6_minus_b0": [0.05, 0.12, -0.01]},
            "bn_after_addition": {"ends_worse": [True, True, False], "final_gap": [0.01, 0.2, -0.03],
                                  "slower_start": [False, False, True],
                                  "early_gap": [-0.1, -0.02, 0.004]},
            "plain_depth": {"plain_breaks_at": [30, 30, 40], "gated_breaks_at": [30, 40, 40]},
            "prune_by_k": {"greedy_beats_random": [False, False, True],
                           "gated_prunes_better": [False, True, True],
                           "gresnet_pruned_err": [0.5, 0.4, 0.3], "gresnet_random_err": [0.2, 0.2, 0.35],
                           "resnet_pruned_err": [0.6, 0.61, 0.62]}}
    monkeypatch.setattr(effects, "recorded", lambda name, scale="classroom": ([0, 1, 2], book[name]))
    monkeypatch.setattr(guide, "scales_in_words", lambda name, scale="classroom": SCALE)
    monkeypatch.setattr(effects, "recorded_mean", lambda name, key, metric, scale="classroom": 0.25)


def test_each_question_gives_the_records_numbers_and_asks_for_a_prediction(records):
    q = questions.honest_question
    t = q("exclusive_gate_bias")
    assert "lowest final training loss is at $b_g = 0$ in 2 of 3 seeds" in t
    assert "ends -0.01 to 0.12 higher than $b_g = 0$ (seeds 0, 1, 2)" in t
    assert "trains ResNet-20 (9 residual units) for 400 steps" in t
    t = q("bn_after_addition")
    assert "higher training loss in 2 of 3 seeds (final gap -0.030 to +0.200)" in t
    assert "first third of training in 1 of 3 seeds (early gap -0.100 to +0.004" in t
    t = q("plain_depth")
    assert "first fails at $d$ = 30 / 30 / 40 (seeds 0, 1, 2)" in t and "same depth in 2 of 3 seeds" in t
    assert "stays between 0.25 and 0.25" in t
    t = q("prune_by_k")
    assert "random ones in 2 of 3 seeds (50.0% / 40.0% / 30.0% against 20.0% / 20.0% / 35.0%" in t
    assert "(60.0% / 61.0% / 62.0%) in 1 of 3 seeds; the learned $k$ average 0.25" in t
    assert all("Predict what your runs will show" in q(n) for n in questions.HONEST)


def test_an_ablation_without_a_question_is_told_which_have_one():
    with pytest.raises(ValueError, match="constant_scaling.*has no honest question; these do: "
                                         "exclusive_gate_bias"):
        questions.honest_question("constant_scaling")


def test_the_chapter_asks_each_question_through_the_library():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "book" / "06_ablations.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    for name in questions.HONEST:
        assert sum(f'say(questions.honest_question("{name}"))' in c for c in code) == 1, name


def test_every_exercise_whose_runs_do_not_show_the_paper_asks_one():
    from idmap_class import ablations

    assert set(questions.HONEST) == {n for n in ablations.ABLATIONS
                                     if not all(effects.SHOWS_PAPER_EFFECT[n].values())}
