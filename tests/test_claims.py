"""The claims registry: pre-registered tests give the same verdicts for and against the paper."""
import math

import pytest

from idmap_lib.book import claims
from idmap_lib.book.claims import CLAIMS, Claim, better, combine, compare, similar
from idmap_lib.engine import recipes, results


def result(experiment, variant, seed, test_err=0.5, losses=(2.3, 1.5, 1.2, 1.0), status="ok", scale="cpu"):
    """A recorded run of today's recipe with the given numbers (nothing trained)."""
    cfg = recipes.config(experiment, variant, scale, seed)
    n = cfg["steps"]
    train = [{"step": round((i + 1) * n / len(losses)), "train_loss": l, "train_err": 0.5, "lr": 0.1,
              "img_per_s": 100.0, "wall_s": 1.0} for i, l in enumerate(losses)]
    final = {"train_loss": losses[-1], "train_err": 0.5, "steps": n}
    if status == "ok":
        final.update(test_err=test_err, test_loss=1.0)
    return {"config": cfg, "config_hash": results.config_hash(cfg), "status": status,
            "fail": {"step": 3, "reason": "non-finite training loss"} if status == "fail" else None,
            "final": final, "history": {"train": train, "test": []}, "seed": seed}


def save(tmp_path, experiment, variant, errs, **kw):
    for seed, e in enumerate(errs):
        results.save_result(result(experiment, variant, seed, test_err=e, **kw), tmp_path)


# ---------------------------------------------------------------------------------------------- the rule

def test_better_is_decided_by_twice_the_standard_error_both_ways():
    t = better("a", "b")
    assert compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])["verdict"] == "reproduced"
    assert compare(t, [0.50, 0.51, 0.52], [0.40, 0.41, 0.42])["verdict"] == "contradicted"
    assert compare(t, [0.40, 0.50, 0.45], [0.44, 0.48, 0.46])["verdict"] == "inconclusive"
    # the bar is twice the standard error: a difference of 1.5 se is inconclusive, 2.5 se decides
    xa = [0.40, 0.41, 0.42]
    se1 = math.sqrt(2 * 0.0001 / 3)
    assert compare(t, xa, [x + 1.5 * se1 for x in xa])["verdict"] == "inconclusive"
    assert compare(t, xa, [x + 2.5 * se1 for x in xa])["verdict"] == "reproduced"
    assert compare(t, xa, [x - 2.5 * se1 for x in xa])["verdict"] == "contradicted"
    r = compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])
    assert r["mean_a"] == pytest.approx(0.41) and r["se"] == pytest.approx(math.sqrt(2 * 0.0001 / 3))
    # a margin moves the bar: "far behind" by more than 0.05
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.43, 0.44, 0.45])["verdict"] == "contradicted"
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.60, 0.61, 0.62])["verdict"] == "reproduced"


def test_similar_needs_the_whole_interval_inside_or_outside_the_margin():
    t = similar("a", "b", margin=0.02)
    assert compare(t, [0.400, 0.401, 0.402], [0.405, 0.406, 0.407])["verdict"] == "reproduced"
    assert compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])["verdict"] == "contradicted"
    assert compare(t, [0.40, 0.44, 0.42], [0.43, 0.40, 0.46])["verdict"] == "inconclusive"


def test_fewer_than_three_seeds_is_not_run_yet_and_a_conjunction_falls_with_one_part():
    assert compare(better("a", "b"), [0.4, 0.4], [0.5, 0.5, 0.5])["verdict"] == "not run yet"
    assert combine(["reproduced", "reproduced"]) == "reproduced"
    assert combine(["reproduced", "inconclusive"]) == "inconclusive"
    assert combine(["reproduced", "contradicted", "not run yet"]) == "contradicted"
    assert combine(["reproduced", "not run yet"]) == "not run yet"


# ---------------------------------------------------------------------------------------------- on recorded runs

def test_a_claim_on_synthetic_runs_reproduced_contradicted_inconclusive(tmp_path):
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]   # exclusive gating: b_g = -6 better than b_g = 0
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    v = claims.evaluate(c, results_dir=tmp_path)
    assert v.verdict == "reproduced" and not v.missing
    assert v.parts[0][1]["mean_a"] == pytest.approx(0.41)
    other = tmp_path / "b"
    save(other, "a_table1_shortcuts", "exclusive_gating-b-6", [0.60, 0.61, 0.62])
    save(other, "a_table1_shortcuts", "exclusive_gating-b0", [0.40, 0.41, 0.42])
    assert claims.evaluate(c, results_dir=other).verdict == "contradicted"
    third = tmp_path / "c"
    save(third, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.60, 0.50])
    save(third, "a_table1_shortcuts", "exclusive_gating-b0", [0.45, 0.55, 0.52])
    assert claims.evaluate(c, results_dir=third).verdict == "inconclusive"


def test_missing_seeds_and_stale_configs_do_not_count(tmp_path):
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41])
    stale = result("a_table1_shortcuts", "exclusive_gating-b0", 0)
    stale["config"] = {**stale["config"], "steps": 150}   # an older recipe
    stale["config_hash"] = results.config_hash(stale["config"])
    results.save_result(stale, tmp_path)
    v = claims.evaluate(c, results_dir=tmp_path)
    assert v.verdict == "not run yet"
    assert dict(v.missing) == {"exclusive_gating-b-6": [2], "exclusive_gating-b0": [0, 1, 2]}


def test_a_failed_run_counts_at_chance():
    r = result("a_table1_shortcuts", "dropout-0.5", 0, status="fail")
    assert claims.final_test_err(r) == pytest.approx(0.9)
    assert claims.early_train_loss(r) == pytest.approx(math.log(10))
    ok = result("a_table1_shortcuts", "original", 0, losses=(2.0, 1.0, 0.5, 0.25))
    assert claims.early_train_loss(ok) == pytest.approx(1.5)  # the windows of the first half: 2.0 and 1.0


def test_every_claim_names_real_runs_and_the_sweep_order_covers_them():
    for c in CLAIMS + claims.PROBES:
        assert isinstance(c, Claim) and c.tests and c.words and c.source
        for v in c.variants:
            recipes.config(c.experiment, v, c.scale)  # raises for a variant that does not exist
        for t in c.tests:
            assert t.metric in claims.METRICS and t.metric_of_b in claims.METRICS and t.kind in ("better", "similar")
    runs = claims.runs_needed()
    assert len(runs) == len(set(runs)) and {s for _, _, s in runs} == set(claims.SEEDS)
    # the CPU sweep trains every claim at the CPU scale; Paper B's MNIST claims rest on the full-recipe grid
    assert sorted(claims.SWEEP_ORDER) == sorted(c.key for c in CLAIMS if c.scale == "cpu")
    assert {c.experiment for c in CLAIMS if c.scale == "full"} == {"b_mnist"}
    assert all(e != "b_mnist" for e, _, _ in runs)
    assert not {c.key for c in CLAIMS} & {p.key for p in claims.PROBES}  # our probes are not the papers' claims


def test_sweep_lists_the_missing_runs_in_order_and_skips_the_recorded(tmp_path, capsys):
    from idmap_lib.cli import main
    todo = claims.runs_needed()
    main(["sweep", "--missing", "--out", str(tmp_path)])
    assert [tuple(l.split()) for l in capsys.readouterr().out.splitlines()] == [(e, v, str(s)) for e, v, s in todo]
    e, v, s = todo[0]
    results.save_result(result(e, v, s), tmp_path)
    main(["sweep", "--next", "--out", str(tmp_path)])
    assert capsys.readouterr().out.split() == [todo[1][0], todo[1][1], str(todo[1][2])]


def test_pace_prices_missing_runs_by_the_recorded_runs_of_the_same_network():
    done = []
    for variant, wall, threads in (("original-110", 600.0, 1), ("full_preact-110", 400.0, 2), ("bn_after_add-110",
                                                                                              1300.0, 1)):
        r = result("a_table2_activations", variant, 0)
        r["final"]["wall_s"], r["hardware"] = wall, {"torch_threads": threads}
        done.append(r)
    todo = [recipes.config("a_table1_shortcuts", "conv1x1", "cpu", 1),        # ResNet-110 too: 800 core-s
            recipes.config("a_table2_activations", "original-110", "cpu", 2),
            recipes.config("a_table2_activations", "original-164", "cpu", 2)]  # not timed yet
    hours, untimed = results.pace(todo, done)
    assert hours == pytest.approx(2 * 800 / 3600) and untimed == 1   # the median of 600, 800 and 1300 core-s
    assert [results.core_seconds(r) for r in done] == [600.0, 800.0, 1300.0]
    assert results.core_seconds(result("a_table2_activations", "original-110", 1)) is None  # no wall time recorded


def test_sweep_says_what_the_recorded_runs_cost_and_what_is_left(tmp_path, capsys):
    from idmap_lib.cli import main
    (e, v, s), (e2, v2, s2) = claims.runs_needed()[:2]
    for exp, var, seed, wall in ((e, v, s, 900.0), (e2, v2, s2, 1800.0)):
        r = result(exp, var, seed)
        r["final"]["wall_s"], r["hardware"] = wall, {"torch_threads": 2}
        results.save_result(r, tmp_path)
    main(["sweep", "--out", str(tmp_path)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"2 of {len(claims.runs_needed())} runs recorded (1.5 CPU core-hours: ")
    done = {"found": {("e", "v", 0): {}}, "spent_h": 0.3, "left_h": 0.0, "untimed": 0}
    assert claims.sweep_in_words(done) == "1 of 1 runs recorded (0.3 CPU core-hours: training wall time x threads)"


def test_tests_in_words_say_a_shared_side_once():
    assert claims.tests_in_words([better("a", "x"), better("a", "y"), better("b", "y", margin=0.05),
                              better("c", "y", margin=0.05), similar("a", "z")]) == (
        "final test error: a < each of x, y; final test error: each of b, c < y by more than 0.05; "
        "final test error: |a - z| < 0.02")
    assert claims.tests_in_words([better("a", "x", "mean_k"), better("a", "y")]) == \
        "mean learned k: a < x; final test error: a < y"   # another metric: said apart


def mnist_run(variant, seed, test_err=0.015, ks=None, pruning=None, status="ok"):
    r = result("b_mnist", variant, seed, test_err=test_err, status=status, scale="full")
    if ks is not None:
        r["final"]["gates_k"] = ks
    if pruning is not None:
        r["analysis"] = {"pruning": pruning}
    return r


def test_paper_b_metrics_read_gates_and_pruning_curves():
    curve = lambda start, step: [start + step * i for i in range(5)]  # noqa: E731  (4 blocks: half = 2)
    gated = {"blocks": 4, "by_gate": curve(0.01, 0.01), "at_random": [curve(0.01, 0.1), curve(0.01, 0.2)]}
    r = mnist_run("gresnet-d100", 0, ks=[1.0, 0.5, 3.0], pruning=gated)
    assert claims.mean_k(r) == pytest.approx(1.5)
    assert claims.pruned_half(r) == pytest.approx(0.03)                      # by_gate after removing 2 blocks
    assert claims.pruned_greedy(r) == pytest.approx((0.02 + 0.03) / 2)       # removals 1 and 2, not 0
    assert claims.pruned_random(r) == pytest.approx(((0.11 + 0.21) / 2 + (0.21 + 0.41) / 2) / 2)
    ungated = mnist_run("resnet-d100", 0, pruning={"blocks": 4, "at_random": [curve(0.01, 0.1), curve(0.01, 0.2)]})
    assert claims.pruned_half(ungated) == pytest.approx((0.21 + 0.41) / 2)  # the mean over the random orders
    assert claims.pruned_half(mnist_run("resnet-d100", 1, status="fail")) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="python -m idmap_lib mnist"):
        claims.pruned_half(mnist_run("resnet-d100", 2))


def test_a_claim_on_two_readings_of_one_variant(tmp_path):
    """b_greedy_pruning_beats_random compares two metrics of the same GResNets, at the full recipe."""
    c = claims.CLAIMS_BY_KEY["b_greedy_pruning_beats_random"]
    for seed in range(3):
        p = {"blocks": 2, "by_gate": [0.01, 0.02 + seed / 1000, 0.5], "at_random": [[0.01, 0.30 + seed / 1000, 0.9]]}
        results.save_result(mnist_run("gresnet-d100", seed, pruning=p), tmp_path)
    v = claims.evaluate(c, results_dir=tmp_path)
    assert v.verdict == "reproduced" and v.parts[0][1]["mean_a"] == pytest.approx(0.021)
    from idmap_lib.book import evidence
    ev = evidence.claims_table([c.key], out_dir=tmp_path).loc[c.key, "evidence"]
    assert ev.startswith("pruned_greedy 2.1 ± 0.1 vs pruned_random 30.1 ± 0.1")


# ---------------------------------------------------------------------------------------------- on the page

def test_variant_table_and_claims_table_read_the_seeds(tmp_path):
    from idmap_lib.book import evidence
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61])
    t = evidence.variant_table("a_table1_shortcuts", ["exclusive_gating-b-6", "exclusive_gating-b0"], out_dir=tmp_path)
    assert t.loc["exclusive_gating-b-6", "ours: test error %"] == "41.00 ± 1.00"
    assert t.loc["exclusive_gating-b-6", "paper: test error % (Paper A Table 1)"] == "8.70"
    assert t.loc["exclusive_gating-b0", "to run"].endswith("--variant exclusive_gating-b0 --scale cpu --seed 2")
    assert t.loc["exclusive_gating-b-6", "network trained"] == "ResNet-110 (basic)"
    c = evidence.claims_table(["t1_gating_bias"], out_dir=tmp_path)
    assert c.loc["t1_gating_bias", "verdict"] == "not run yet" and c.loc["t1_gating_bias", "missing runs"] == 1
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    c = evidence.claims_table(["t1_gating_bias"], out_dir=tmp_path)
    assert c.loc["t1_gating_bias", "verdict"] == "reproduced"
    assert "exclusive_gating-b-6 41.0 ± 1.0 vs exclusive_gating-b0 61.0 ± 1.0; d = 20.0" in c.loc["t1_gating_bias", "evidence"]
    assert evidence.verdict_counts(c)["reproduced"] == 1


def test_band_curves_draw_mean_and_band_per_variant_and_name_the_missing(tmp_path):
    from idmap_lib.book import evidence
    save(tmp_path, "a_table1_shortcuts", "original", [0.5, 0.5, 0.5], losses=(2.0, 1.0, 0.5, 0.25))
    fig = evidence.band_curves("a_table1_shortcuts", ["original", "conv1x1"], out_dir=tmp_path)
    lines = [d for d in fig.data if d.fill != "toself"]
    assert len(lines) == 2 and list(lines[0].y) == [2.0, 1.0, 0.5, 0.25]  # training loss, then test error
    assert "not run yet: conv1x1" in fig.layout.title.text


def test_full_scale_status_shows_runs_under_way_and_the_command(tmp_path):
    import torch
    from idmap_lib.book import evidence
    cfg = recipes.config("a_table2_activations", "full_preact-110", "full")
    torch.save({"step": 29000, "history": {"test": [{"step": 28000, "test_err": 0.162}]}},
               tmp_path / f"{results.run_name(cfg)}.pt")
    df = evidence.full_scale_status("a_table2_activations", ["full_preact-110", "full_preact-164"],
                                    out_dir=tmp_path, checkpoint_dir=tmp_path)
    assert df.loc["full_preact-110", "state"].startswith("under way: step 29,000 of 64,000 (test error 16.2 %")
    assert df.loc["full_preact-164", "state"] == ("not run: python -m idmap_lib train --experiment "
                                                 "a_table2_activations --variant full_preact-164 --scale full --cuda-graph")


def test_stuck_note_tells_the_papers_failures_from_the_schedules(tmp_path):
    from idmap_lib.book import evidence
    for seed in range(3):  # the original ResNet-110 at chance: the paper trains it (6.61 %)
        results.save_result(result("a_table1_shortcuts", "original", seed, losses=(2.3, 2.31, 2.30, 2.302)),
                            tmp_path)
        results.save_result(result("a_table1_shortcuts", "dropout-0.5", seed, status="fail" if seed else "ok",
                                   losses=(2.3, 2.3, 2.3, 2.3 if seed else 1.0)), tmp_path)
        results.save_result(result("a_table1_shortcuts", "conv1x1", seed), tmp_path)  # trained: loss 1.0
    note = evidence.stuck_note("a_table1_shortcuts", ["original", "dropout-0.5", "conv1x1"], out_dir=tmp_path)
    own, schedule = note.split("\n\n")
    assert "**dropout-0.5** (2 of 3 seeds; the paper: fail)" in own and "original" not in own
    assert "**original** (3 of 3 seeds; the paper: 6.61 %)" in schedule and "conv1x1" not in note
    assert evidence.stuck_note("a_table1_shortcuts", ["conv1x1"], out_dir=tmp_path) == ""
    # the claims table says it beside the evidence of every claim that compares such a run (not the paper's fails)
    ev = evidence.claims_table(["t1_shortcut_only_gating_near_identity", "t1_fail_rows_far_behind"],
                               out_dir=tmp_path)["evidence"]
    assert ev["t1_shortcut_only_gating_near_identity"] == \
        "original at chance in 3 of 3 seeds at this scale only (the paper trains it)"
    assert "dropout-0.5 at chance" not in ev["t1_fail_rows_far_behind"]
