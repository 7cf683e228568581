"""Chapter 8's probes of the trained ResNet-110s: what the notes say is read from the measured
numbers."""
import pytest
import torch

from idmap_book.figures import trained_probes as tp
from idmap_lib.engine import recipes


def fake(init, trained, grads=None):
    """A measurement as ``tp.measure`` returns it, with these truncation rates (fractions per
    unit)."""
    rates = {tp.INIT: torch.tensor(init, dtype=torch.float64),
             tp.TRAINED: torch.tensor(trained, dtype=torch.float64)}
    m = {"info": "ResNet-110 (basic) after 29,000 of 64,000 steps", "step": 29000,
         "x": torch.zeros(4, 3, 32, 32),
         "config": recipes.config(tp.EXPERIMENT, tp.ORIGINAL, "full"), "rates": rates}
    if grads:
        m["grads"], m["pre_info"] = {k: torch.tensor(v, dtype=torch.float64)
                                     for k, v in grads.items()}, "pre"
    return m


def test_the_notes_read_the_stages_and_say_whether_training_lowered_the_truncation():
    # 3 stages of 3 units
    m = fake([0.2] * 3 + [0.4] * 3 + [0.6] * 3, [0.1] * 3 + [0.5] * 3 + [0.5] * 3)
    third, by_stage = tp.stages(m)
    assert third == 3 and by_stage == {tp.INIT: pytest.approx([20.0, 40.0, 60.0]),
                                       tp.TRAINED: pytest.approx([10.0, 50.0, 50.0])}
    assert tp.truncation_note(m).startswith("Averaged over the units, f truncates 40.0 % of the "
                                            "elements at initialisation and 36.7 % after training "
                                            "(ResNet-110")
    note = tp.stages_note(m)
    assert "at initialisation 20.0, 40.0, 60.0 %, trained 10.0, 50.0, 50.0 %" in note
    assert "Here training lowered it in stage 1; raised it in stage 2; lowered it in stage 3 (on " \
           "average over the units it fell)" in note and "a measurement that matches the paper's account" in note
    # the recipe's, not typed
    assert "at step 29,000 of 64,000, before the lr drops at 32,000" in note
    up = tp.stages_note(fake([0.1] * 9, [0.3] * 9))
    assert "it rose" in up and "does not match" in up


def test_the_gradient_note_reads_the_first_units_ratio_and_the_lowest_point():
    m = fake([0.1] * 3, [0.1] * 3, grads={tp.GRAD_ORIGINAL: [40.0, 8.0, 2.0],
                                          tp.GRAD_PREACT: [3.0, 0.5, 2.0]})
    note = tp.gradient_note(m)
    assert note.startswith("**Measured:** the gradient at the first unit is 20 times the last "
                           "unit's (original (trained)) and 1.5 times the last unit's (full "
                           "pre-activation (trained))")
    assert "dips to 0.25 of it (unit 1)" in note
    fig = tp.gradient_figure(m)
    assert ([list(d.y) for d in fig.data] == [[20.0, 4.0, 1.0], [1.5, 0.25, 1.0]]
            and fig.layout.yaxis.type == "log")


def test_measure_says_which_weights_are_missing(tmp_path):
    m = tp.measure(checkpoint_dir=tmp_path, weights_dir=tmp_path)
    assert m == {"info": "no checkpoint or weights of a_table2_activations__original-110__full__s0"}


def test_measure_probes_the_committed_weights_and_a_fresh_net():
    """On the book's committed weights (a finished run's, data/gpu/, or a checkpoint's,
    data/checkpoints/): the original truncates in each of its 54 units (4 test images: fast)."""
    m = tp.measure(n=4)
    if "rates" not in m:
        pytest.skip(m["info"])
    assert set(m["rates"]) == {tp.INIT,
                               tp.TRAINED} and all(len(r) == 54 for r in m["rates"].values())
    assert all(0 < float(r.mean()) < 1 for r in m["rates"].values()) and m["step"] > 0
    if "grads" in m:
        assert set(m["grads"]) == {tp.GRAD_ORIGINAL,
                                   tp.GRAD_PREACT} and all(len(g) == 55
                                                           for g in m["grads"].values())


@pytest.mark.parametrize("pre_step, compared", [(29000, True), (38466, False), (None, False)])
def test_the_two_trained_nets_are_compared_only_at_one_step(monkeypatch, pre_step, compared):
    """Both sides alike: the gradient of the original and of full pre-activation only when both
    nets' weights come from the same step of the recipe; else the note says the comparison waits,
    naming both."""
    from idmap_lib.engine.build import build_model
    cfg = recipes.config(tp.EXPERIMENT, tp.ORIGINAL, "full")

    def trained(experiment, variant, **_):
        step = 29000 if variant == tp.ORIGINAL else pre_step
        if step is None:
            return None, f"no checkpoint or weights of {variant}", 0
        torch.manual_seed(1)
        return build_model(cfg["model"]).eval(), f"{variant} after {step:,}", step
    monkeypatch.setattr(tp, "trained_model", trained)
    monkeypatch.setattr(tp, "test_images", lambda *a: (torch.randn(2, 3, 32, 32), None))
    m = tp.measure(n=2)
    assert ("grads" in m) == compared
    if not compared:
        note = tp.gradient_note(m)
        assert note.startswith("**Not measured yet:**") and "original-110 after 29,000" in note
        assert m["pre_info"] in note


def test_the_notes_say_where_in_the_recipe_the_weights_are():
    m = fake([0.2] * 9, [0.1] * 9)
    for step, words in ((64000, "at the end of the recipe (64,000 steps)"),
                        (40000, "at step 40,000 of 64,000, after the lr dropped at 32,000")):
        m["step"] = step
        assert words in tp.stages_note(m)
    assert ", partly trained" not in tp.truncation_note({**m, "step": 64000})
