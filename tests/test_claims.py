"""The claims registry: pre-registered tests, applied to recorded runs, give the same verdicts for and against the
paper."""
import pytest

from fake_runs import mnist_run, result, save
from idmap_lib.book import claims, metrics, rule
from idmap_lib.book.claims import CLAIMS, Claim
from idmap_lib.book.rule import compare
from idmap_lib.engine import recipes, results


def test_every_claim_names_real_runs():
    for c in CLAIMS + claims.PROBES:
        assert isinstance(c, Claim) and c.tests and c.words and c.source
        for v in c.variants:
            recipes.config(c.experiment, v, c.scale)  # raises for a variant that does not exist
        for t in c.tests:
            assert t.metric in metrics.METRICS and t.metric_of_b in metrics.METRICS and t.kind in ("better", "similar")
    assert not {c.key for c in CLAIMS} & {p.key for p in claims.PROBES}  # our probes are not the papers' claims
    assert {c.experiment for c in CLAIMS if c.scale == "full"} == {"b_mnist"}


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


def test_a_claim_on_two_readings_of_one_variant(tmp_path):
    """b_greedy_pruning_beats_random compares two metrics of the same GResNets, at the full recipe."""
    c = claims.CLAIMS_BY_KEY["b_greedy_pruning_beats_random"]
    for seed in range(3):
        p = {"blocks": 2, "by_gate": [0.01, 0.02 + seed / 1000, 0.5], "at_random": [[0.01, 0.30 + seed / 1000, 0.9]]}
        results.save_result(mnist_run("gresnet-d100", seed, pruning=p), tmp_path)
    v = claims.evaluate(c, results_dir=tmp_path)
    assert v.verdict == "reproduced" and v.parts[0][1]["mean_a"] == pytest.approx(0.021)


def test_claims_are_grouped_per_scale():
    groups = claims.by_scale()
    assert list(groups) == ["cpu", "cpu_step_warmup", "full"]
    assert sorted(k for ks in groups.values() for k in ks) == sorted(c.key for c in CLAIMS)
    assert all(claims.CLAIMS_BY_KEY[k].scale == s for s, ks in groups.items() for k in ks)
