"""A variant's table: the steps to a training error below 80 % never put a run that did not get
there inside the mean (metrics.did_not_train: "not reached within N steps")."""
from fake_runs import history, result
from idmap_book.evidence import variants
from idmap_lib.engine import results


def test_a_run_that_never_starts_is_counted_in_words_not_inside_the_mean(tmp_path):
    # seed 2 never gets below 80 % training error in 400 steps
    for seed, at in enumerate((40, 60, None)):
        r = result("a_table2_activations", "original-110", seed)
        errs = [0.9] * 40 if at is None else [0.9] * (at // 10 - 1) + [0.7] * (41 - at // 10)
        r["history"]["train"] = history([2.0] * 40, errs)
        results.save_result(r, tmp_path)
    t = variants.variant_table("a_table2_activations", ["original-110"], out_dir=tmp_path)
    assert t.loc["the original unit", "ours: steps to train error < 80 %"] == \
        "50 ± 14; 1 of 3 not reached within 400 steps"                 # 40 and 60; not (40 + 60 + 400) / 3
    runs = [result("a_table2_activations", "original-110", s, status="fail") for s in range(2)]
    # diverged: never got there
    assert variants.steps_text(runs) == "2 of 2 not reached within 400 steps"
    assert variants.steps_text([]) == "–"
