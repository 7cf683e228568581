"""The claims registry: pre-registered tests give the same verdicts for and against the paper."""
import math

import pytest

from idmap_lib import claims, recipes, results
from idmap_lib.claims import CLAIMS, Claim, better, combine, compare, similar


def result(experiment, variant, seed, test_err=0.5, losses=(2.3, 1.5, 1.2, 1.0), status="ok"):
    """A recorded run of today's recipe with the given numbers (nothing trained)."""
    cfg = recipes.config(experiment, variant, "shrunk", seed)
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
    for c in CLAIMS:
        assert isinstance(c, Claim) and c.tests and c.words and c.source
        for v in c.variants:
            recipes.config(c.experiment, v, "shrunk")  # raises for a variant that does not exist
        for t in c.tests:
            assert t.metric in claims.METRICS and t.kind in ("better", "similar")
    runs = claims.runs_needed()
    assert len(runs) == len(set(runs)) and {s for _, _, s in runs} == set(claims.SEEDS)
    assert sorted(claims.SWEEP_ORDER) == sorted(c.key for c in CLAIMS)
