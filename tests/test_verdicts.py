"""The verdicts on the page: the claims table's evidence, the forest, the notes that qualify a verdict."""
import pytest

from fake_runs import mnist_run, result, save
from idmap_lib.book import claims, rule, tables, verdicts
from idmap_lib.engine import results


def test_claims_table_reads_the_seeds(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61])
    c = verdicts.claims_table(["t1_gating_bias"], results_dir=tmp_path)
    assert c.loc["t1_gating_bias", "verdict"] == "not run yet" and c.loc["t1_gating_bias", "missing runs"] == 1
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    c = verdicts.claims_table(["t1_gating_bias"], results_dir=tmp_path)
    assert c.loc["t1_gating_bias", "verdict"] == "reproduced"
    assert "exclusive_gating-b-6 41.0 ± 1.0 vs exclusive_gating-b0 61.0 ± 1.0; d = 20.0" in c.loc["t1_gating_bias", "evidence"]
    assert verdicts.verdict_counts(c)["reproduced"] == 1
    assert "missing runs" not in c  # every run recorded: no column of zeros, and no empty "to run" either


def test_the_evidence_of_two_readings_of_one_variant_names_both_metrics(tmp_path):
    c = claims.CLAIMS_BY_KEY["b_greedy_pruning_beats_random"]
    for seed in range(3):
        p = {"blocks": 2, "by_gate": [0.01, 0.02 + seed / 1000, 0.5], "at_random": [[0.01, 0.30 + seed / 1000, 0.9]]}
        results.save_result(mnist_run("gresnet-d100", seed, pruning=p), tmp_path)
    evidence = verdicts.claims_table([c.key], results_dir=tmp_path).loc[c.key, "evidence"]
    assert evidence.startswith("pruned_greedy 2.1 ± 0.1 vs pruned_random 30.1 ± 0.1")


def test_a_claim_of_many_comparisons_shows_the_deciding_ones_and_sums_up_the_rest(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "original", [0.50, 0.51, 0.52])
    for i, v in enumerate(claims.T1_MODIFIED):
        save(tmp_path, "a_table1_shortcuts", v, [0.52, 0.53, 0.54] if i == 0 else [0.80 + 0.01 * i, 0.81 + 0.01 * i, 0.82 + 0.01 * i])
    ev_text = verdicts.claims_table(["t1_identity_best"], results_dir=tmp_path).loc["t1_identity_best", "evidence"]
    first, rest = ev_text.split(" | ")[:2]
    assert first.startswith("original 51.0 ± 1.0 vs constant_scaling-0-1 53.0 ± 1.0; d = 2.0 [")  # inconclusive: in full
    assert rest.startswith("original vs 9 more, each reproduced (the test's other variants): ") and "d = 31.0 to 39.0" in rest


def test_verdict_changes_say_what_drove_a_change_between_scales(tmp_path):
    for scale, stuck in (("cpu_step_warmup", 2), ("cpu", 0)):  # the original: at chance in 2 of 3 seeds, then none
        for seed in range(3):
            losses = (2.3, 2.3, 2.3, 2.3) if seed < stuck else (2.3, 1.5, 1.2, 1.0)
            results.save_result(result("a_table1_shortcuts", "original", seed, 0.9 if seed < stuck else 0.4, losses,
                                       scale=scale), tmp_path)
            results.save_result(result("a_table1_shortcuts", "shortcut_only_gating-b-6", seed, 0.5, scale=scale),
                                tmp_path)
    df = verdicts.verdict_changes(["t1_shortcut_only_gating_near_identity"], results_dir=tmp_path)
    row = df.loc["t1_shortcut_only_gating_near_identity"]
    assert {row["CPU scale, step warm-up (superseded)"], row["CPU scale"]} <= set(rule.VERDICTS)
    assert row.iloc[2] == "original: 2 of 3 seeds → none"


def test_the_forest_draws_each_interval_and_every_seed(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    fig = verdicts.forest(["t1_gating_bias", "t2_full_preact_best"], results_dir=tmp_path)
    seeds_a, seeds_b, dot = fig.data                              # only the comparison that has its seeds
    assert dot.x[0] == pytest.approx(20.0) and dot.error_x.array[0] == pytest.approx(dot.error_x.arrayminus[0])
    assert dot.marker.color == tables.VERDICT_COLOURS["reproduced"]
    # every seed beside it: one seed of a (b) against b's (a's) mean; they average to d
    assert list(seeds_a.x) == pytest.approx([21.0, 20.0, 19.0]) and list(seeds_b.x) == pytest.approx([19.0, 20.0, 21.0])


def test_stuck_note_tells_the_papers_failures_from_the_schedules(tmp_path):
    for seed in range(3):  # the original ResNet-110 at chance: the paper trains it (6.61 %)
        results.save_result(result("a_table1_shortcuts", "original", seed, losses=(2.3, 2.31, 2.30, 2.302)),
                            tmp_path)
        results.save_result(result("a_table1_shortcuts", "dropout-0.5", seed, status="fail" if seed else "ok",
                                   losses=(2.3, 2.3, 2.3, 2.3 if seed else 1.0)), tmp_path)
        results.save_result(result("a_table1_shortcuts", "conv1x1", seed), tmp_path)  # trained: loss 1.0
    note = verdicts.stuck_note("a_table1_shortcuts", ["original", "dropout-0.5", "conv1x1"], results_dir=tmp_path)
    own, schedule, means = note.split("\n\n")
    assert means.startswith("*At chance*: ") and "training loss" in means  # said once, what it counts
    assert "**dropout-0.5** (2 of 3 seeds; the paper: fail)" in own and "original" not in own
    assert "**original** (3 of 3 seeds; the paper: 6.61 %)" in schedule and "conv1x1" not in note
    assert verdicts.stuck_note("a_table1_shortcuts", ["conv1x1"], results_dir=tmp_path) == ""
    # the claims table says it beside the evidence of every claim that compares such a run (not the paper's fails)
    evidence = verdicts.claims_table(["t1_shortcut_only_gating_near_identity", "t1_fail_rows_far_behind"],
                               results_dir=tmp_path)["evidence"]
    assert evidence["t1_shortcut_only_gating_near_identity"] == \
        "at chance at this scale only (the paper trains it): original 3/3 seeds"
    assert "dropout-0.5 at chance" not in evidence["t1_fail_rows_far_behind"]


def test_contradiction_note_names_the_part_its_seeds_and_the_papers_gap(tmp_path):
    """A contradicted claim is explained from its runs: the part that contradicts it, each seed, the paper's two
    numbers; a claim that is not contradicted gets no line."""
    save(tmp_path, "a_table2_activations", "full_preact-110", [0.55, 0.54, 0.56])
    save(tmp_path, "a_table2_activations", "relu_preact-110", [0.50, 0.51, 0.49])
    for v in ("original-110", "bn_after_add-110", "relu_before_add-110"):
        save(tmp_path, "a_table2_activations", v, [0.80, 0.81, 0.82])
    note = verdicts.contradiction_note(["t2_full_preact_best", "t2_bn_after_add_worst"], results_dir=tmp_path)
    assert note.count("\n- ") == 0 and note.startswith("- **t2_full_preact_best** is contradicted")
    assert "full_preact-110 < relu_preact-110" in note and "55.0, 54.0, 56.0 %" in note
    assert "6.37 %" in note and "6.71 %" in note and "0.34 points apart" in note
    save(tmp_path, "a_table2_activations", "relu_preact-110", [0.60, 0.61, 0.59])
    assert verdicts.contradiction_note(["t2_full_preact_best"], results_dir=tmp_path) == ""


def test_verdicts_are_counted_in_words():
    import pandas as pd
    df = pd.DataFrame({"verdict": ["reproduced", "reproduced", "inconclusive"]}, index=["a", "b", "c"])
    assert verdicts.counts_in_words(df, "CPU scale") == "**CPU scale**: of 3 claims, 2 reproduced, 1 inconclusive."
