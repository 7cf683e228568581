"""The claims registry: pre-registered tests, applied to recorded runs, give the same verdicts for
and against the paper."""
import dataclasses

import pytest

from fake_runs import history, mnist_run, result, save
from idmap_book.evidence import claims, judge, metrics, rule
from idmap_book.evidence.claims import CLAIMS, Claim
from idmap_book.evidence.rule import compare
from idmap_book.evidence.runs import seed_runs
from idmap_lib.engine import recipes, results


def test_every_claim_names_real_runs():
    for c in CLAIMS + claims.PROBES:
        assert isinstance(c, Claim) and c.tests and c.words and c.source
        for v in c.variants:
            recipes.config(c.experiment, v, c.scale)  # raises for a variant that does not exist
        for t in c.tests:
            assert t.metric in metrics.METRICS and t.metric_of_b in metrics.METRICS and t.kind in ("better", "similar")
    # our probes are not the papers' claims
    assert not {c.key for c in CLAIMS} & {p.key for p in claims.PROBES}
    assert {c.experiment for c in CLAIMS if c.scale == "full"} == {"b_mnist"}


def test_a_claim_its_scale_cannot_test_needs_the_full_recipe(tmp_path):
    """Sec 4.2: both halves are about the end of the full recipe: at the CPU scale neither is
    reproduced or contradicted, whatever the short runs show, and their numbers stay as data."""
    c = claims.CLAIMS_BY_KEY["s42_preact164_regularises"]
    t_loss = c.tests[1]
    assert t_loss.about == "converged"
    assert compare(t_loss, [1.8, 1.8, 1.8], [2.1, 2.1, 2.1], "cpu")["verdict"] == rule.NEEDS_FULL
    assert compare(t_loss, [1.8, 1.81, 1.82], [2.1, 2.11, 2.12], "full")["verdict"] == "reproduced"
    save(tmp_path, "a_table2_activations", "full_preact-164", [0.60, 0.61, 0.62], losses=(2.3, 1.8))
    save(tmp_path, "a_table2_activations", "original-164", [0.80, 0.81, 0.82], losses=(2.3, 2.1))
    v = judge.evaluate(c, out_dir=tmp_path)
    assert ([p[1]["verdict"] for p in v.parts] == [rule.NEEDS_FULL, rule.NEEDS_FULL]
            and v.verdict == rule.NEEDS_FULL)
    # data after 400 steps
    assert v.parts[0][1]["d"] == pytest.approx(0.20) and v.parts[0][1]["steps"] == 400
    # a short run that points the other way contradicts nothing either
    other = tmp_path / "b"
    save(other, "a_table2_activations", "full_preact-164", [0.80, 0.81, 0.82], losses=(2.3, 1.8))
    save(other, "a_table2_activations", "original-164", [0.60, 0.61, 0.62], losses=(2.3, 2.1))
    assert judge.evaluate(c, out_dir=other).verdict == rule.NEEDS_FULL


def test_no_final_error_claim_gets_a_verdict_at_a_cpu_scale(tmp_path):
    """Issue 29's planted bug: a CPU-scale final-error claim given "reproduced". Every claim whose
    parts are about the end of the paper's recipe, fed runs that would clear the bar, needs the full
    recipe at both CPU scales."""
    ends = [c for c in CLAIMS if c.scale != "full" and set(c.about) <= {"end", "converged"}]
    assert len(ends) >= 10 and "t2_full_preact_best" in {c.key for c in ends}
    for c in ends:
        for scale in recipes.CPU_SCALES:
            d = tmp_path / f"{c.key}-{scale}"
            for t in c.tests:  # a better than b by 30 points, every run trained
                save(d, c.experiment, t.a, [0.40, 0.41, 0.42], scale=scale)
                save(d, c.experiment, t.b, [0.80, 0.81, 0.82], scale=scale)
            v = judge.evaluate(c, scale, d)
            assert (v.verdict == rule.NEEDS_FULL and all(r["verdict"] == rule.NEEDS_FULL
                                                         for _, r in v.parts)), c.key
    early = {c.key for c in CLAIMS if c.scale != "full" and c.about == ("early",)}
    assert early == {"fig6_bn_after_add_slow_start", "fig1_1001_original_slow_start",
                     "lr_jump_preact_tolerates"} | \
        {c.key for c in claims.SWAP_CLAIMS + claims.ROW_CLAIMS + claims.FP32_CLAIMS}


def test_a_claim_on_synthetic_runs_reproduced_contradicted_inconclusive(tmp_path):
    # exclusive gating: b_g = -6 better than b_g = 0, at the full recipe
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42], scale="full")
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62], scale="full")
    v = judge.evaluate(c, "full", out_dir=tmp_path)
    assert v.verdict == "reproduced" and not v.missing
    assert v.parts[0][1]["mean_a"] == pytest.approx(0.41)
    other = tmp_path / "b"
    save(other, "a_table1_shortcuts", "exclusive_gating-b-6", [0.60, 0.61, 0.62], scale="full")
    save(other, "a_table1_shortcuts", "exclusive_gating-b0", [0.40, 0.41, 0.42], scale="full")
    assert judge.evaluate(c, "full", out_dir=other).verdict == "contradicted"
    third = tmp_path / "c"
    save(third, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.60, 0.50], scale="full")
    save(third, "a_table1_shortcuts", "exclusive_gating-b0", [0.45, 0.55, 0.52], scale="full")
    assert judge.evaluate(c, "full", out_dir=third).verdict == "inconclusive"


def test_missing_seeds_and_stale_configs_do_not_count(tmp_path):
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41], scale="full")
    stale = result("a_table1_shortcuts", "exclusive_gating-b0", 0, scale="full")
    stale["config"] = {**stale["config"], "steps": 150}   # an older recipe
    stale["config_hash"] = results.config_hash(stale["config"])
    results.save_result(stale, tmp_path)
    v = judge.evaluate(c, "full", out_dir=tmp_path)
    assert v.verdict == "not run yet"
    assert dict(v.missing) == {"exclusive_gating-b-6": [2], "exclusive_gating-b0": [0, 1, 2]}


def test_every_run_counts_on_both_sides_whatever_the_claim_predicts(tmp_path):
    """Issue 40's planted asymmetry: a rule that counted a stuck run on the side the claim predicts
    fails and dropped it on the other. Table 1's b_g = 0 stuck at chance (the paper's "fail")
    counts; so does b_g = -6 stuck, and then the claim is contradicted, not "not testable": the same
    runs, sides swapped, give the mirrored verdict."""
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    stuck = (2.3, 2.3, 2.3, 2.302)
    good, bad = tmp_path / "good", tmp_path / "bad"
    save(good, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42], scale="full")
    save(good, "a_table1_shortcuts", "exclusive_gating-b0", [0.88, 0.89, 0.90], losses=stuck,
         scale="full")
    save(bad, "a_table1_shortcuts", "exclusive_gating-b-6", [0.88, 0.89, 0.90], losses=stuck,
         scale="full")
    save(bad, "a_table1_shortcuts", "exclusive_gating-b0", [0.40, 0.41, 0.42], scale="full")
    v, w = judge.evaluate(c, "full", out_dir=good), judge.evaluate(c, "full", out_dir=bad)
    assert (v.verdict == "reproduced" and v.parts[0][1]["n"] == (3, 3)
            and v.parts[0][1]["excluded"] == (0, 0))
    assert (w.verdict == "contradicted" and w.parts[0][1]["n"] == (3, 3)
            and w.parts[0][1]["excluded"] == (0, 0))
    assert w.parts[0][1]["d"] == pytest.approx(-v.parts[0][1]["d"])


def test_a_threshold_never_reached_counts_at_the_runs_length_on_both_sides_by_ranks(tmp_path):
    """steps_to_80: a run that never gets below 80 % training error counts as N on whichever side it
    is (censored), and the comparison is by ranks; nothing is dropped from a start metric for what
    the claim predicts."""
    c = claims.CLAIMS_BY_KEY["fig6_bn_after_add_slow_start"]
    for v, starts in (("original-110", (40, 60, None, 50, 70)),
                      ("bn_after_add-110", (None, None, 300, None, None))):
        for seed, at in enumerate(starts):
            r = result("a_table2_activations", v, seed)
            errs = [0.9] * 40 if at is None else [0.9] * (at // 10 - 1) + [0.7] * (41 - at // 10)
            r["history"]["train"] = history([2.0] * 40, errs)
            results.save_result(r, tmp_path)
    v = judge.evaluate(c, out_dir=tmp_path, seeds=(0, 1, 2))
    res = v.parts[0][1]
    assert res["test"] == "ranks" and res["excluded"] == (0, 0) and res["censored"] == (1, 2)
    assert (res["xa"] == [40, 60, 400] and res["xb"] == [400, 400, 300]
            and res["verdict"] == "inconclusive")
    # five a side: the censored original seed 2 still counts
    v = judge.evaluate(c, out_dir=tmp_path)
    assert v.parts[0][1]["xa"] == [40, 60, 400, 50, 70] and v.verdict == "reproduced"
    assert metrics.censored(seed_runs("a_table2_activations", "original-110", "cpu", (2,),
                                      tmp_path)[0][0],
                            "steps_to_80") == "not reached within 400 steps"


def test_a_verdict_that_one_seed_decides_says_so(tmp_path):
    c = claims.CLAIMS_BY_KEY["b_gresnet_beats_resnet"]
    for seed, (g, r) in enumerate(((0.0120, 0.0150), (0.0121, 0.0151), (0.0122, 0.0152),
                                   (0.0123, 0.0153))):
        results.save_result(mnist_run("gresnet-d100", seed, test_err=g), tmp_path)
        results.save_result(mnist_run("resnet-d100", seed, test_err=r), tmp_path)
    # four seeds that agree: none decides it
    assert judge.evaluate(c, out_dir=tmp_path).fragile == []
    results.save_result(mnist_run("resnet-d100", 4, test_err=0.0100), tmp_path)   # one seed far off
    results.save_result(mnist_run("gresnet-d100", 4, test_err=0.0124), tmp_path)
    v = judge.evaluate(c, out_dir=tmp_path, seeds=(0, 1, 2, 3, 4))
    assert v.verdict == "inconclusive" and ("resnet-d100", 4, "reproduced") in v.fragile


def test_each_part_sets_the_papers_gap_beside_what_its_seeds_resolve(tmp_path):
    # the paper: 1.26 % vs 1.50 %
    c = claims.CLAIMS_BY_KEY["b_gresnet_beats_resnet"]
    assert judge.paper_gap(c, c.tests[0]) == pytest.approx(0.0024)
    fails = claims.CLAIMS_BY_KEY["t1_fail_rows_far_behind"]
    # the paper's "fail"
    assert judge.paper_gap(fails, fails.tests[0]) is None
    # ours: no paper number
    assert judge.paper_gap(claims.PROBES[0], claims.PROBES[0].tests[0]) is None
    save(tmp_path, "b_mnist", "gresnet-d100", [0.010, 0.015, 0.020], scale="full")
    save(tmp_path, "b_mnist", "resnet-d100", [0.012, 0.017, 0.022], scale="full")
    res = judge.evaluate(c, out_dir=tmp_path).parts[0][1]
    assert res["resolvable"] > 0.0024 and res["cannot_resolve"]


def test_a_claim_on_two_readings_of_one_variant(tmp_path):
    """b_greedy_pruning_beats_random compares two metrics of the same GResNets, at the full
    recipe."""
    c = claims.CLAIMS_BY_KEY["b_greedy_pruning_beats_random"]
    for seed in range(3):
        p = {"blocks": 2, "by_gate": [0.01, 0.02 + seed / 1000, 0.5],
             "at_random": [[0.01, 0.30 + seed / 1000, 0.9]]}
        results.save_result(mnist_run("gresnet-d100", seed, pruning=p), tmp_path)
    v = judge.evaluate(c, out_dir=tmp_path)
    assert v.verdict == "reproduced" and v.parts[0][1]["mean_a"] == pytest.approx(0.021)


def test_claims_are_grouped_per_scale():
    groups = claims.by_scale()
    assert list(groups) == ["cpu", "cpu_step_warmup", "full"]
    assert sorted(k for ks in groups.values() for k in ks) == sorted(c.key for c in CLAIMS)
    assert all(claims.CLAIMS_BY_KEY[k].scale == s for s, ks in groups.items() for k in ks)


def test_pruning_compares_both_nets_pruned_at_random(tmp_path):
    """Issue 29's planted bug: pruning compared greedy (GResNet) against random (ResNet). A GResNet
    whose shut gates make greedy pruning free, but that degrades like the ResNet when both lose
    blocks at random, does not survive pruning better (Paper B's fair comparison); greedy against
    random within it is the other claim."""
    c = claims.CLAIMS_BY_KEY["b_gresnet_survives_pruning"]
    for seed in range(3):
        bad = [0.02, 0.04 + seed / 1000, 0.08 + seed / 1000]                   # 2 blocks: half = 1
        gated = {"blocks": 2, "by_gate": [0.02, 0.02, 0.5], "at_random": [bad, bad]}
        results.save_result(mnist_run("gresnet-d100", seed, ks=[-1.0, 2.0], pruning=gated),
                            tmp_path)
        results.save_result(mnist_run("resnet-d100", seed,
                                      pruning={"blocks": 2, "at_random": [bad]}), tmp_path)
    assert judge.evaluate(c, out_dir=tmp_path).verdict != "reproduced"
    assert judge.evaluate(claims.CLAIMS_BY_KEY["b_greedy_pruning_beats_random"],
                           out_dir=tmp_path).verdict == \
        "reproduced"


def test_a_claims_parts_are_corrected_for_their_number(tmp_path):
    """Issue 29's planted bug: Holm skipped. Paper B's plain nets against ResNets and GResNets at
    two depths: four parts, each just past the uncorrected bar (p about 0.03); as one claim of four
    they are inconclusive."""
    import math

    c = claims.CLAIMS_BY_KEY["b_plain_breaks_deep"]
    assert len(c.tests) == 4
    base = [0.40, 0.41, 0.42]
    se1 = math.sqrt(2 * 0.0001 / 3)
    for d in (50, 100):
        save(tmp_path, "b_mnist", f"plain-d{d}", [x + 0.05 + 3.2 * se1 for x in base], scale="full")
        for k in ("resnet", "gresnet"):
            save(tmp_path, "b_mnist", f"{k}-d{d}", base, scale="full")
    v = judge.evaluate(c, out_dir=tmp_path)
    assert all(0.02 < r["p"] < 0.05 for _, r in v.parts)            # each alone: reproduced
    assert v.verdict == "inconclusive" and {r["verdict"] for _, r in v.parts} == {"inconclusive"}
    assert all(r["holm"][0] == 4 for _, r in v.parts)


def test_a_claim_is_one_row_with_its_title_chapter_and_sweep_place(monkeypatch):
    """A claim carries its readable title, the chapter that shows it (a notebook of the book) and
    its place in the CPU sweep (none at the full recipe): the sweep's order, the chapters' key lists
    and a chapter's kind are read from the rows."""
    from pathlib import Path

    from idmap_book.plan.sweep import SWEEP_ORDER

    book = Path(__file__).resolve().parents[1] / "book"
    for c in claims.CLAIMS_BY_KEY.values():
        assert c.title and (book / f"{c.chapter}.ipynb").exists(), c.key
        assert (c.sweep is None) == (c.scale == "full"), c.key
    places = [claims.CLAIMS_BY_KEY[k].sweep for k in SWEEP_ORDER]
    assert places == sorted(places) and len(SWEEP_ORDER) == sum(
        c.sweep is not None for c in claims.CLAIMS)
    assert claims.in_chapter("09_depth") == ["fig1_1001_original_slow_start",
                                             "t3_preact_1layer_skip"]
    kinds = claims.chapters()
    assert list(kinds) == sorted(kinds) and kinds["07_shortcuts"] == "paper"
    assert kinds["09_why_preactivation"] == "ours"  # the interventions: the book's own claims only
    # a paper's claim shown in the interventions' chapter makes it a paper's chapter
    t1 = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    monkeypatch.setitem(claims.CLAIMS_BY_KEY, t1.key,
                        dataclasses.replace(t1, chapter="09_why_preactivation"))
    assert claims.chapters()["09_why_preactivation"] == "paper"
    assert "t1_gating_bias" in claims.in_chapter("09_why_preactivation")
