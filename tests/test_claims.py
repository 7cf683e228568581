"""The claims registry: pre-registered tests give the same verdicts for and against the paper."""
import math
import re

import pytest

from idmap_lib.book import claims, cpu_scale, metrics, rule, sweep
from idmap_lib.book import evidence as ev
from idmap_lib.book.claims import CLAIMS, Claim
from idmap_lib.book.rule import better, combine, compare, similar
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

def test_better_is_decided_by_welchs_t_both_ways():
    t = better("a", "b")
    assert compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])["verdict"] == "reproduced"
    assert compare(t, [0.50, 0.51, 0.52], [0.40, 0.41, 0.42])["verdict"] == "contradicted"
    assert compare(t, [0.40, 0.50, 0.45], [0.44, 0.48, 0.46])["verdict"] == "inconclusive"
    # the bar is Student's t at 97.5 % for the Welch-Satterthwaite df: equal spread, 3 + 3 seeds -> df 4, q 2.776
    xa = [0.40, 0.41, 0.42]
    se1 = math.sqrt(2 * 0.0001 / 3)
    r = compare(t, xa, [x + 2.5 * se1 for x in xa])
    assert r["verdict"] == "inconclusive"        # the old "2 se" rule called this reproduced
    assert r["df"] == pytest.approx(4) and r["q"] == pytest.approx(2.7764, abs=1e-4)
    assert r["lo"] == pytest.approx(r["d"] - r["q"] * r["se"])
    assert compare(t, xa, [x + 3.0 * se1 for x in xa])["verdict"] == "reproduced"
    assert compare(t, xa, [x - 3.0 * se1 for x in xa])["verdict"] == "contradicted"
    r = compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])
    assert r["mean_a"] == pytest.approx(0.41) and r["se"] == pytest.approx(math.sqrt(2 * 0.0001 / 3))
    # no spread on one side: df = n - 1 of the other (2), q = 4.303
    r = compare(t, [0.5, 0.5, 0.5], [0.40, 0.41, 0.42])
    assert r["df"] == pytest.approx(2) and r["q"] == pytest.approx(4.3027, abs=1e-4)
    # a margin moves the bar: "far behind" by more than 0.05
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.41, 0.42, 0.43])["verdict"] == "contradicted"
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.60, 0.61, 0.62])["verdict"] == "reproduced"


def test_one_seed_cannot_carry_a_verdict():
    """Issue 19's case: exclusive gating b_g = -6 at 82.8 / 85.0 / 72.1 % against b_g = 0 at 88.8 / 88.6 / 89.8 %:
    d = 9.1 points, and the old rule (d > 2 se = 8.0) called it reproduced on the strength of the 72.1 % seed."""
    t = better("b-6", "b0")
    r = compare(t, [0.828, 0.850, 0.721], [0.888, 0.886, 0.898])
    assert r["d"] > 2 * r["se"] and r["verdict"] == "inconclusive"
    # three seeds that agree with each other decide it
    assert compare(t, [0.828, 0.830, 0.821], [0.888, 0.886, 0.898])["verdict"] == "reproduced"
    assert compare(t, [0.888, 0.886, 0.898], [0.828, 0.830, 0.821])["verdict"] == "contradicted"


def test_a_claim_its_scale_cannot_test_needs_the_full_recipe(tmp_path):
    """Sec 4.2's training-loss half is about the converged end of training: never contradicted by a short run."""
    c = claims.CLAIMS_BY_KEY["s42_preact164_regularises"]
    t_loss = c.tests[1]
    assert t_loss.about == "converged"
    assert compare(t_loss, [1.8, 1.8, 1.8], [2.1, 2.1, 2.1], "cpu")["verdict"] == rule.NEEDS_FULL
    assert compare(t_loss, [1.8, 1.81, 1.82], [2.1, 2.11, 2.12], "full")["verdict"] == "reproduced"
    save(tmp_path, "a_table2_activations", "full_preact-164", [0.60, 0.61, 0.62], losses=(2.3, 1.8))
    save(tmp_path, "a_table2_activations", "original-164", [0.80, 0.81, 0.82], losses=(2.3, 2.1))
    v = claims.evaluate(c, results_dir=tmp_path)
    assert [p[1]["verdict"] for p in v.parts] == ["reproduced", rule.NEEDS_FULL]
    assert v.verdict == rule.NEEDS_FULL
    # a testable part that is contradicted still contradicts the claim
    other = tmp_path / "b"
    save(other, "a_table2_activations", "full_preact-164", [0.80, 0.81, 0.82], losses=(2.3, 1.8))
    save(other, "a_table2_activations", "original-164", [0.60, 0.61, 0.62], losses=(2.3, 2.1))
    assert claims.evaluate(c, results_dir=other).verdict == "contradicted"


def history(losses, errs, every=10):
    return [{"step": every * (i + 1), "train_loss": l, "train_err": e, "lr": 0.1, "img_per_s": 1.0, "wall_s": 1.0}
            for i, (l, e) in enumerate(zip(losses, errs))]


def test_steps_to_80_is_moved_by_neither_the_loss_at_initialisation_nor_a_spike_at_the_lr_jump():
    r = result("a_table2_activations", "original-110", 0)
    errs = [0.9] * 3 + [0.7] * 37                                 # starts training at step 40
    r["history"]["train"] = history([2.3] * 40, errs)
    base = metrics.steps_to_80(r)
    assert base == 40
    r["history"]["train"] = history([9.0, 6.0, 3.0] + [2.0] * 37, errs)  # a huge loss at initialisation
    assert metrics.steps_to_80(r) == base
    r["history"]["train"] = history([2.0] * 40, [0.9] * 3 + [0.7] + [0.95] * 3 + [0.6] * 33)
    assert metrics.steps_to_80(r) == 40                             # a spike after the first crossing: no matter
    r["history"]["train"] = history([2.3] * 40, [0.9] * 40)
    assert metrics.steps_to_80(r) == r["config"]["steps"]           # never started: its length, a lower bound
    assert metrics.steps_to_80(result("a_table2_activations", "original-110", 0, status="fail")) == r["config"]["steps"]


def test_lr_jump_rise_reads_the_loss_after_the_warm_up_only():
    r = result("a_table2_activations", "original-110", 0, scale="cpu_step_warmup")
    warm = r["config"]["schedule"]["warmup_steps"]
    assert warm == 100 and r["config"]["schedule"]["milestones"][0] == 200
    losses = [5.0, 3.0] + [2.0] * 8 + [2.1, 6.0, 3.0] + [1.8] * 27   # a high start, then a spike at step 120
    r["history"]["train"] = history(losses, [0.8] * 40)
    assert metrics.lr_jump_rise(r) == pytest.approx(4.0)            # 6.0 - the loss ending the warm-up (2.0)
    r["history"]["train"] = history([9.0] + [2.0] * 9 + [1.9] * 30, [0.8] * 40)
    assert metrics.lr_jump_rise(r) == 0                             # the loss at initialisation: outside the window


def test_the_scale_probe_holds_where_no_seed_of_the_original_spikes(tmp_path):
    calm = [2.2] * 10 + [2.1] * 30
    for s in rule.SEEDS:
        r = result(*cpu_scale.PROBE, s)
        r["history"]["train"] = history(calm, [0.8] * 40)
        results.save_result(r, tmp_path)
    p = cpu_scale.scale_probe("cpu", tmp_path)
    assert p["holds"] and set(p["rises"]) == set(rule.SEEDS)
    r = result(*cpu_scale.PROBE, 2)
    r["history"]["train"] = history([2.2] * 10 + [2.8] + [2.1] * 29, [0.8] * 40)   # one seed rises by 0.6
    results.save_result(r, tmp_path)
    assert cpu_scale.scale_probe("cpu", tmp_path)["holds"] is False
    assert cpu_scale.scale_probe("cpu", tmp_path / "none")["holds"] is None


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
    assert metrics.final_test_err(r) == pytest.approx(0.9)
    assert metrics.early_train_loss(r) == pytest.approx(math.log(10))
    ok = result("a_table1_shortcuts", "original", 0, losses=(2.0, 1.0, 0.5, 0.25))
    assert metrics.early_train_loss(ok) == pytest.approx(1.5)  # the windows of the first half: 2.0 and 1.0


def test_every_claim_names_real_runs_and_the_sweep_order_covers_them():
    for c in CLAIMS + claims.PROBES:
        assert isinstance(c, Claim) and c.tests and c.words and c.source
        for v in c.variants:
            recipes.config(c.experiment, v, c.scale)  # raises for a variant that does not exist
        for t in c.tests:
            assert t.metric in metrics.METRICS and t.metric_of_b in metrics.METRICS and t.kind in ("better", "similar")
    runs = sweep.runs_needed()
    assert len(runs) == len(set(runs)) and {s for _, _, s, _ in runs} >= set(rule.SEEDS)
    assert runs[:3] == [(*cpu_scale.PROBE, s, "cpu") for s in rule.SEEDS]   # the scale's probe first
    # the CPU sweep trains every claim at a CPU scale; Paper B's MNIST claims rest on the full-recipe grid
    assert sorted(sweep.SWEEP_ORDER) == sorted(c.key for c in CLAIMS if c.scale != "full")
    assert {c.experiment for c in CLAIMS if c.scale == "full"} == {"b_mnist"}
    assert all(e != "b_mnist" and scale in recipes.CPU_SCALES for e, _, _, scale in runs)
    # one training once: Table 1's original is Table 2's original-110 (and Table 3's ResNet-110) at the same scale
    hashes = [results.training_hash(recipes.config(e, v, sc, s)) for e, v, s, sc in runs]
    assert len(hashes) == len(set(hashes))
    assert ("a_table1_shortcuts", "original", 0, "cpu") not in runs
    assert not {c.key for c in CLAIMS} & {p.key for p in claims.PROBES}  # our probes are not the papers' claims


def test_sweep_lists_the_missing_runs_in_order_and_skips_the_recorded(tmp_path, capsys):
    from idmap_lib.cli import main
    todo = sweep.runs_needed(results_dir=tmp_path)
    main(["sweep", "--missing", "--out", str(tmp_path)])
    assert [tuple(l.split()) for l in capsys.readouterr().out.splitlines()] == \
        [(e, v, str(s), sc) for e, v, s, sc in todo]
    e, v, s, sc = todo[0]
    results.save_result(result(e, v, s, scale=sc), tmp_path)
    main(["sweep", "--next", "--out", str(tmp_path)])
    assert capsys.readouterr().out.split() == [todo[1][0], todo[1][1], str(todo[1][2]), todo[1][3]]


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
    (e, v, s, _), (e2, v2, s2, _) = sweep.runs_needed(results_dir=tmp_path)[:2]
    for exp, var, seed, wall in ((e, v, s, 900.0), (e2, v2, s2, 1800.0)):
        r = result(exp, var, seed)
        r["final"]["wall_s"], r["hardware"] = wall, {"torch_threads": 2}
        results.save_result(r, tmp_path)
    main(["sweep", "--out", str(tmp_path)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"2 of {len(sweep.runs_needed(results_dir=tmp_path))} runs recorded (1.5 CPU core-hours: ")
    done = {"found": {("e", "v", 0): {}}, "spent_h": 0.3, "left_h": 0.0, "untimed": 0}
    assert sweep.sweep_in_words(done) == "1 of 1 runs recorded (0.3 CPU core-hours: training wall time x threads)"
    assert sweep.sweep_in_words({**done, "spent_h": 1.0, "today_h": 0.6}) == (
        "1 of 1 runs recorded (1.0 CPU core-hours: training wall time x threads; 0.6 of them trained at today's CPU "
        "scale, the rest recorded before it and read again: the step warm-up's runs, and trainings the change left "
        "as they were)")


def test_tests_in_words_say_a_shared_side_once():
    assert rule.tests_in_words([better("a", "x"), better("a", "y"), better("b", "y", margin=0.05),
                              better("c", "y", margin=0.05), similar("a", "z")]) == (
        "final test error: a < each of x, y; final test error: each of b, c < y by more than 0.05; "
        "final test error: |a - z| < 0.02")
    assert rule.tests_in_words([better("a", "x", "mean_k"), better("a", "y")]) == \
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
    assert metrics.mean_k(r) == pytest.approx(1.5)
    assert metrics.pruned_half(r) == pytest.approx(0.03)                      # by_gate after removing 2 blocks
    assert metrics.pruned_greedy(r) == pytest.approx((0.02 + 0.03) / 2)       # removals 1 and 2, not 0
    assert metrics.pruned_random(r) == pytest.approx(((0.11 + 0.21) / 2 + (0.21 + 0.41) / 2) / 2)
    ungated = mnist_run("resnet-d100", 0, pruning={"blocks": 4, "at_random": [curve(0.01, 0.1), curve(0.01, 0.2)]})
    assert metrics.pruned_half(ungated) == pytest.approx((0.21 + 0.41) / 2)  # the mean over the random orders
    assert metrics.pruned_half(mnist_run("resnet-d100", 1, status="fail")) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="python -m idmap_lib mnist"):
        metrics.pruned_half(mnist_run("resnet-d100", 2))


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
    assert "missing runs" not in c  # every run recorded: no column of zeros, and no empty "to run" either
    assert "to run" not in evidence.variant_table("a_table1_shortcuts", ["exclusive_gating-b0"], out_dir=tmp_path)


def test_a_claim_of_many_comparisons_shows_the_deciding_ones_and_sums_up_the_rest(tmp_path):
    from idmap_lib.book import claims as cl, evidence
    save(tmp_path, "a_table1_shortcuts", "original", [0.50, 0.51, 0.52])
    for i, v in enumerate(cl.T1_MODIFIED):
        save(tmp_path, "a_table1_shortcuts", v, [0.52, 0.53, 0.54] if i == 0 else [0.80 + 0.01 * i, 0.81 + 0.01 * i, 0.82 + 0.01 * i])
    ev_text = evidence.claims_table(["t1_identity_best"], out_dir=tmp_path).loc["t1_identity_best", "evidence"]
    first, rest = ev_text.split(" | ")[:2]
    assert first.startswith("original 51.0 ± 1.0 vs constant_scaling-0-1 53.0 ± 1.0; d = 2.0 [")  # inconclusive: in full
    assert rest.startswith("original vs 9 more, each reproduced (the test's other variants): ") and "d = 31.0 to 39.0" in rest


def test_verdict_changes_say_what_drove_a_change_between_scales(tmp_path):
    from idmap_lib.book import evidence
    for scale, stuck in (("cpu_step_warmup", 2), ("cpu", 0)):  # the original: at chance in 2 of 3 seeds, then none
        for seed in range(3):
            losses = (2.3, 2.3, 2.3, 2.3) if seed < stuck else (2.3, 1.5, 1.2, 1.0)
            results.save_result(result("a_table1_shortcuts", "original", seed, 0.9 if seed < stuck else 0.4, losses,
                                       scale=scale), tmp_path)
            results.save_result(result("a_table1_shortcuts", "shortcut_only_gating-b-6", seed, 0.5, scale=scale),
                                tmp_path)
    df = evidence.verdict_changes(["t1_shortcut_only_gating_near_identity"], out_dir=tmp_path)
    row = df.loc["t1_shortcut_only_gating_near_identity"]
    assert {row["CPU scale, step warm-up (superseded)"], row["CPU scale"]} <= set(rule.VERDICTS)
    assert row.iloc[2] == "original: 2 of 3 seeds → none"


def test_band_curves_draw_each_seed_the_mean_the_band_and_the_lr_schedule(tmp_path):
    from idmap_lib.book import evidence
    save(tmp_path, "a_table1_shortcuts", "original", [0.5, 0.5, 0.5], losses=(2.0, 1.0, 0.5, 0.25))
    fig = evidence.band_curves("a_table1_shortcuts", ["original", "conv1x1"], out_dir=tmp_path)
    one_seed = re.compile(r" seed \d+$")
    means = [d for d in fig.data if d.fill != "toself" and not one_seed.search(d.name or "")]
    assert len(means) == 2 and list(means[0].y) == [2.0, 1.0, 0.5, 0.25]  # training loss, then test error
    seeds = [d for d in fig.data if one_seed.search(d.name or "")]
    assert sorted(d.name for d in seeds) == sorted(f"original seed {s}" for s in (0, 0, 1, 1, 2, 2))  # both panels
    assert all(d.visible in (None, True) and d.opacity > 0 and d.line.width > 0 for d in seeds)  # and seen
    three = evidence.band_curves("a_table1_shortcuts", ["original"], out_dir=tmp_path,
                                 panels=("train_loss", "train_err", "test_err"))
    assert [a.text for a in three.layout.annotations[:3]] == ["training loss (10-step windows, log axis)",
                                                              "training error %", "test error %"]
    assert len([s for s in three.layout.shapes if s.type == "rect"]) == 3  # the lr marks on every panel
    assert "not run yet: conv1x1" in fig.layout.title.text
    # the lr schedule on both panels: the warm-up shaded (a ramp at the CPU scale), a line at each lr drop
    shapes = fig.layout.shapes
    assert sorted((s.type, s.x0) for s in shapes) == [("line", 200), ("line", 200), ("line", 300), ("line", 300),
                                                      ("rect", 0), ("rect", 0)]
    assert {s.x1 for s in shapes if s.type == "rect"} == {100}
    assert "ramps 0.01 → 0.1" in " ".join(a.text for a in fig.layout.annotations)
    step = evidence.band_curves("a_table1_shortcuts", ["original"], scale="cpu_step_warmup", out_dir=tmp_path)
    assert sorted(s.x0 for s in step.layout.shapes if s.type == "line") == [100, 100, 200, 200, 300, 300]


def test_what_we_ran_says_the_schedule_each_scale_really_has():
    from idmap_lib.book import evidence
    text = evidence.scale_text("a_table2_activations", "original-110")
    assert "lr rising linearly from 0.01 over the first 100 steps to 0.1" in text  # the CPU scale's ramp
    assert "lr 0.01 for the first" not in text                                     # not the step warm-up it replaced


def test_every_chapter_figure_of_curves_is_drawn_by_band_curves():
    """The lr marks and per-seed traces live in band_curves (and full_recipe_curves, one seed of the full recipe):
    a chapter that drew curves another way would lack them."""
    import json
    from pathlib import Path
    for p in sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            text = "".join(c["source"])
            if c["cell_type"] == "code" and ("history" in text and "Scatter" in text):
                raise AssertionError(f"{p.name} draws training curves itself: use evidence.band_curves")


def test_lr_change_note_counts_each_seeds_rise_in_words(tmp_path):
    from idmap_lib.book import evidence
    for seed, spike in enumerate((4.0, 0.0, 0.0)):
        r = result("a_table2_activations", "original-110", seed, scale="cpu_step_warmup")
        r["history"]["train"] = history([2.2] * 10 + [2.2 + spike] + [2.0] * 29, [0.7] * 40)
        results.save_result(r, tmp_path)
    note = evidence.lr_change_note("a_table2_activations", ["original-110"], "cpu_step_warmup", out_dir=tmp_path)
    assert "is 0.01 for the first 100 steps and jumps to 0.1 in one step" in note
    assert "**original-110**: rose more than 0.5 in 1 of 3 seeds (rises 4.00, 0.00, 0.00)" \
        in note and "first below 80 % training error at step 10, 10, 10" in note
    assert evidence.lr_change_note("a_table2_activations", ["original-110"], out_dir=tmp_path) == ""  # none at cpu


def test_claims_are_counted_per_scale_and_the_forest_draws_each_interval(tmp_path):
    groups = claims.by_scale()
    assert list(groups) == ["cpu", "cpu_step_warmup", "full"]
    assert sorted(k for ks in groups.values() for k in ks) == sorted(c.key for c in CLAIMS)
    assert all(claims.CLAIMS_BY_KEY[k].scale == s for s, ks in groups.items() for k in ks)
    from idmap_lib.book import evidence
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    fig = evidence.forest(["t1_gating_bias", "t2_full_preact_best"], out_dir=tmp_path)
    seeds_a, seeds_b, dot = fig.data                              # only the comparison that has its seeds
    assert dot.x[0] == pytest.approx(20.0) and dot.error_x.array[0] == pytest.approx(dot.error_x.arrayminus[0])
    assert dot.marker.color == evidence.VERDICT_COLOURS["reproduced"]
    # every seed beside it: one seed of a (b) against b's (a's) mean; they average to d
    assert list(seeds_a.x) == pytest.approx([21.0, 20.0, 19.0]) and list(seeds_b.x) == pytest.approx([19.0, 20.0, 21.0])


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
    assert df.loc["full_preact-164", "one run takes"] == "GPU: not measured yet"
    assert df.loc["full_preact-164", "paper: error %"] == "5.46"  # text, like "fail": one column, one format
    assert df.loc["full_preact-110", "one run takes"].startswith("H200 ")  # data/gpu/*-h200/modes.json
    assert "* derived, not measured: a T4's time" in evidence.styled(df).to_html()  # the stars explained, once
    # the same training named by another table (Table 1's original is Table 2's original-110) finds it too
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    torch.save({"step": 29000, "config": cfg, "history": {"test": [{"step": 28000, "test_err": 0.149}]}},
               tmp_path / f"{results.run_name(cfg)}.pt")
    t1 = evidence.full_scale_status("a_table1_shortcuts", ["original", "conv1x1"], out_dir=tmp_path,
                                    checkpoint_dir=tmp_path)
    assert t1.loc["original", "state"].startswith("under way: step 29,000 of 64,000 (test error 14.9 %")
    assert t1.loc["conv1x1", "state"].startswith("not run")


def test_run_times_are_measured_on_the_h200_and_derived_for_a_t4(tmp_path):
    import json
    from idmap_lib.book import run_times
    (tmp_path / "2026-01-01-h200").mkdir()
    (tmp_path / "2026-01-01-h200" / "modes.json").write_text(json.dumps({"110": {"cuda_graph": {"img_per_s_total": 12800.0}}}))
    t = run_times.full_recipe_time(recipes.config("a_table2_activations", "original-110", "full"), tmp_path,
                                   results_dir=tmp_path / "none")
    assert t == "H200 10.7 min (measured 2026-01-01); T4 ~2.7 h*"  # 64,000 x 128 images at 12,800 img/s
    assert "a T4's time from the H200's by the ratio of their memory bandwidths (x15" in run_times.derived_note()
    narrow = recipes.config("a_table2_activations", "original-110", "cpu")  # same depth, but a subset: pace applies
    assert run_times.full_recipe_time(narrow, tmp_path, results_dir=tmp_path / "none").startswith("H200 0.1 min")
    r164 = recipes.config("a_table2_activations", "full_preact-164", "full")
    assert run_times.full_recipe_time(r164, tmp_path, results_dir=tmp_path) == "GPU: not measured yet"
    # a CPU: derived from the recorded runs of the same network (any scale, trained alone), never measured
    for seed, wall in ((0, 600.0), (1, 900.0), (2, 660.0)):  # 400 steps at one thread: 1.5, 2.25, 1.65 s a step
        cfg = recipes.config("a_table1_shortcuts", "conv1x1", "cpu", seed)
        results.save_result({"config": cfg, "config_hash": results.config_hash(cfg), "status": "ok",
                             "final": {"wall_s": wall, "steps": 400}, "hardware": {"torch_threads": 1},
                             "history": {"train": [], "test": []}}, tmp_path / "runs")
    t = run_times.full_recipe_time(recipes.config("a_table2_activations", "original-110", "full"), tmp_path,
                                   results_dir=tmp_path / "runs")
    assert t.endswith("; CPU ~29.3 h at 1 thread*")  # 64,000 steps x the median 1.65 s


def test_full_recipe_curves_show_runs_under_way_over_the_whole_recipe_beside_the_papers_number(tmp_path):
    import torch
    from idmap_lib.book import evidence
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    hist = {"train": [{"step": s, "train_loss": 2.0 / s ** 0.1} for s in (100, 200)],
            "test": [{"step": 2000, "test_err": 0.3}, {"step": 4000, "test_err": 0.2}]}
    torch.save({"step": 4000, "config": cfg, "history": hist}, tmp_path / f"{results.run_name(cfg)}.pt")
    fig = evidence.full_recipe_curves("a_table1_shortcuts", ["original", "conv1x1"], out_dir=tmp_path,
                                      checkpoint_dir=tmp_path)
    ours = [d for d in fig.data if "under way" in (d.name or "")]
    assert [list(d.y) for d in ours] == [[2.0 / 100 ** 0.1, 2.0 / 200 ** 0.1], [30.0, 20.0]]
    assert ours[0].name == "original (under way, step 4,000 of 64,000)"
    paper = {d.name: list(d.y) for d in fig.data if (d.line.dash or "") == "dot"}
    assert paper == {"original: Paper A Table 1, 6.61 %": [6.61, 6.61], "conv1x1: Paper A Table 1, 12.22 %": [12.22, 12.22]}
    assert "not run yet: conv1x1" in fig.layout.title.text and tuple(fig.layout.xaxis.range) == (0, 64000)
    assert sorted(s.x0 for s in fig.layout.shapes if s.type == "line") == [400, 400, 32000, 32000, 48000, 48000]


def test_stuck_note_tells_the_papers_failures_from_the_schedules(tmp_path):
    from idmap_lib.book import evidence
    for seed in range(3):  # the original ResNet-110 at chance: the paper trains it (6.61 %)
        results.save_result(result("a_table1_shortcuts", "original", seed, losses=(2.3, 2.31, 2.30, 2.302)),
                            tmp_path)
        results.save_result(result("a_table1_shortcuts", "dropout-0.5", seed, status="fail" if seed else "ok",
                                   losses=(2.3, 2.3, 2.3, 2.3 if seed else 1.0)), tmp_path)
        results.save_result(result("a_table1_shortcuts", "conv1x1", seed), tmp_path)  # trained: loss 1.0
    note = evidence.stuck_note("a_table1_shortcuts", ["original", "dropout-0.5", "conv1x1"], out_dir=tmp_path)
    own, schedule, means = note.split("\n\n")
    assert means.startswith("*At chance*: ") and "training loss" in means  # said once, what it counts
    assert "**dropout-0.5** (2 of 3 seeds; the paper: fail)" in own and "original" not in own
    assert "**original** (3 of 3 seeds; the paper: 6.61 %)" in schedule and "conv1x1" not in note
    assert evidence.stuck_note("a_table1_shortcuts", ["conv1x1"], out_dir=tmp_path) == ""
    # the claims table says it beside the evidence of every claim that compares such a run (not the paper's fails)
    ev = evidence.claims_table(["t1_shortcut_only_gating_near_identity", "t1_fail_rows_far_behind"],
                               out_dir=tmp_path)["evidence"]
    assert ev["t1_shortcut_only_gating_near_identity"] == \
        "at chance at this scale only (the paper trains it): original 3/3 seeds"
    assert "dropout-0.5 at chance" not in ev["t1_fail_rows_far_behind"]


def test_scale_differences_show_whole_values_setting_by_setting():
    from idmap_lib.book import evidence
    df = evidence.scale_differences("a_table3_preact", "c10-1001-original")
    assert list(df.columns) == ["CPU scale", "CPU scale, step warm-up (superseded)", "full recipe"]
    assert df.loc["schedule.warmup"].tolist() == ["linear", "step (the paper's)", "step (the paper's)"]
    assert df.loc["steps"].tolist() == ["128", "128", "64000"]
    assert df.loc["subset.train_per_class", "full recipe"] == "all the data" and "subset" not in df.index
    assert "experiment" not in df.index and "scale" not in df.index   # labels are not settings


def test_more_seeds_are_asked_for_only_where_three_leave_a_comparison_open(tmp_path):
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    key = [("a_table1_shortcuts", v, s, "cpu") for s in rule.MORE_SEEDS for v in ("exclusive_gating-b-6",
                                                                                      "exclusive_gating-b0")]
    assert not set(key) & set(sweep.runs_needed([c], results_dir=tmp_path))        # not run yet: 3 seeds first
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.828, 0.850, 0.721])   # one seed far off
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.888, 0.886, 0.898])
    assert claims.evaluate(c, results_dir=tmp_path).verdict == "inconclusive"
    assert set(key) <= set(sweep.runs_needed([c], results_dir=tmp_path))
    assert not set(key) & set(sweep.runs_needed([c], seeds=(0, 1, 2), results_dir=tmp_path))  # seeds given: those
    # the two more seeds agree with the three: they are read with them
    for seed, (a, b) in zip(rule.MORE_SEEDS, ((0.83, 0.89), (0.84, 0.89))):
        results.save_result(result("a_table1_shortcuts", "exclusive_gating-b-6", seed, test_err=a), tmp_path)
        results.save_result(result("a_table1_shortcuts", "exclusive_gating-b0", seed, test_err=b), tmp_path)
    v = claims.evaluate(c, results_dir=tmp_path)
    assert v.parts[0][1]["n"] == (5, 5) and v.verdict == "reproduced"
    other = tmp_path / "clear"                                                     # decided by 3: no more asked
    save(other, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(other, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    assert not set(key) & set(sweep.runs_needed([c], results_dir=other))


def test_styled_tables_let_long_claim_keys_break_after_an_underscore():
    """Pandas 3 gives a text index the "str" dtype: the break points must still go in (issue 21: keys wrapped
    mid-word, or not at all and pushed the evidence off the page)."""
    import pandas as pd

    for index in (pd.Index(["t1_shortcut_only_gating"], name="claim"),
                  pd.Index(["t1_shortcut_only_gating"], dtype=object, name="claim")):
        html = ev.styled(pd.DataFrame({"verdict": ["reproduced"]}, index=index)).to_html()
        assert "t1_\u200bshortcut_\u200bonly_\u200bgating" in html
        assert "background-color: #d9f2d9" in html


def test_contradiction_note_names_the_part_its_seeds_and_the_papers_gap(tmp_path):
    """A contradicted claim is explained from its runs: the part that contradicts it, each seed, the paper's two
    numbers; a claim that is not contradicted gets no line."""
    save(tmp_path, "a_table2_activations", "full_preact-110", [0.55, 0.54, 0.56])
    save(tmp_path, "a_table2_activations", "relu_preact-110", [0.50, 0.51, 0.49])
    for v in ("original-110", "bn_after_add-110", "relu_before_add-110"):
        save(tmp_path, "a_table2_activations", v, [0.80, 0.81, 0.82])
    note = ev.contradiction_note(["t2_full_preact_best", "t2_bn_after_add_worst"], out_dir=tmp_path)
    assert note.count("\n- ") == 0 and note.startswith("- **t2_full_preact_best** is contradicted")
    assert "full_preact-110 < relu_preact-110" in note and "55.0, 54.0, 56.0 %" in note
    assert "6.37 %" in note and "6.71 %" in note and "0.34 points apart" in note
    save(tmp_path, "a_table2_activations", "relu_preact-110", [0.60, 0.61, 0.59])
    assert ev.contradiction_note(["t2_full_preact_best"], out_dir=tmp_path) == ""


def test_one_runs_early_spike_does_not_set_the_loss_axis_and_log_ticks_are_written_out(tmp_path):
    """Issue 21: a loss panel whose range one seed's early spike sets flattens every other curve; the axis stops
    above the others, says so, and its ticks read as numbers (20, not a second "2")."""
    flat = tuple([2.3] + [1.5 - 0.01 * i for i in range(60)])
    spike = (40.0,) + flat[1:]
    save(tmp_path, "a_table2_activations", "full_preact-110", [0.5, 0.5, 0.5], losses=flat)
    save(tmp_path, "a_table2_activations", "relu_before_add-110", [0.9], losses=spike)
    fig = ev.band_curves("a_table2_activations", ["full_preact-110", "relu_before_add-110"], out_dir=tmp_path)
    lo, hi = fig.layout.yaxis.range
    assert 10 ** hi < 5 and "runs off the top" in fig.layout.title.text
    assert list(fig.layout.yaxis.ticktext) == [f"{v:g}" for v in fig.layout.yaxis.tickvals]
    assert len(fig.layout.yaxis.tickvals) >= 4
    calm = ev.band_curves("a_table2_activations", ["full_preact-110"], out_dir=tmp_path)
    assert 10 ** calm.layout.yaxis.range[1] > 2.3 and "runs off the top" not in calm.layout.title.text
    assert ev.log_ticks(8, 60)["ticktext"] == ["10", "20", "50"] or len(ev.log_ticks(8, 60)["ticktext"]) >= 4
