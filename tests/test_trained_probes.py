"""Chapter 8's probes of the trained ResNet-110s: what the notes say is read from the measured numbers."""
import pytest
import torch

from idmap_lib.book.figures import trained_probes as tp
from idmap_lib.engine import recipes


def fake(init, trained, grads=None):
    """A measurement as ``tp.measure`` returns it, with these truncation rates (fractions per unit)."""
    rates = {tp.INIT: torch.tensor(init, dtype=torch.float64), tp.TRAINED: torch.tensor(trained, dtype=torch.float64)}
    m = {"info": "ResNet-110 (basic) after 29,000 of 64,000 steps", "step": 29000, "x": torch.zeros(4, 3, 32, 32),
         "config": recipes.config(tp.EXPERIMENT, tp.ORIGINAL, "full"), "rates": rates}
    if grads:
        m["grads"], m["pre_info"] = {k: torch.tensor(v, dtype=torch.float64) for k, v in grads.items()}, "pre"
    return m


def test_the_notes_read_the_stages_and_say_whether_training_lowered_the_truncation():
    m = fake([0.2] * 3 + [0.4] * 3 + [0.6] * 3, [0.1] * 3 + [0.5] * 3 + [0.5] * 3)   # 3 stages of 3 units
    third, by_stage = tp.stages(m)
    assert third == 3 and by_stage == {tp.INIT: pytest.approx([20.0, 40.0, 60.0]),
                                       tp.TRAINED: pytest.approx([10.0, 50.0, 50.0])}
    assert tp.truncation_note(m).startswith("Averaged over the units, f truncates 40.0 % of the elements at "
                                            "initialisation and 36.7 % after training (ResNet-110")
    note = tp.stages_note(m)
    assert "at initialisation 20.0, 40.0, 60.0 %, trained 10.0, 50.0, 50.0 %" in note
    assert "Here training lowered it in stage 1; raised it in stage 2; lowered it in stage 3 (on average over the " \
           "units it fell)" in note and "a measurement that matches the paper's account" in note
    assert "at step 29,000 of 64,000, before the lr drops at 32,000" in note     # the recipe's, not typed
    up = tp.stages_note(fake([0.1] * 9, [0.3] * 9))
    assert "it rose" in up and "does not match" in up


def test_the_gradient_note_reads_the_first_units_ratio_and_the_lowest_point():
    m = fake([0.1] * 3, [0.1] * 3, grads={tp.GRAD_ORIGINAL: [40.0, 8.0, 2.0], tp.GRAD_PREACT: [3.0, 0.5, 2.0]})
    note = tp.gradient_note(m)
    assert note.startswith("**Measured:** the gradient at the first unit is 20 times the last unit's (original "
                           "(trained)) and 1.5 times the last unit's (full pre-activation (trained))")
    assert "dips to 0.25 of it (unit 1)" in note
    fig = tp.gradient_figure(m)
    assert [list(d.y) for d in fig.data] == [[20.0, 4.0, 1.0], [1.5, 0.25, 1.0]] and fig.layout.yaxis.type == "log"


def test_measure_says_which_checkpoint_is_missing(tmp_path):
    m = tp.measure(checkpoint_dir=tmp_path)
    assert m == {"info": "no checkpoint of a_table2_activations__original-110__full__s0"}


def test_measure_probes_the_committed_checkpoints_and_a_fresh_net():
    """On the book's committed checkpoints (data/checkpoints/): the original truncates in each of its 54 units, and
    full pre-activation's gradient is measured beside it (4 test images: fast)."""
    from idmap_lib.engine.data import DEFAULT_ROOT
    if not (DEFAULT_ROOT / "checkpoints" / "a_table2_activations__original-110__full__s0.pt").exists():
        pytest.skip("no committed checkpoint of the original ResNet-110")
    m = tp.measure(n=4)
    assert set(m["rates"]) == {tp.INIT, tp.TRAINED} and all(len(r) == 54 for r in m["rates"].values())
    assert all(0 < float(r.mean()) < 1 for r in m["rates"].values()) and m["step"] > 0
    assert set(m["grads"]) == {tp.GRAD_ORIGINAL, tp.GRAD_PREACT} and all(len(g) == 55 for g in m["grads"].values())
