"""The probe that chose the CPU scale (chapter 11)."""
from fake_runs import history, result
from idmap_lib.book import cpu_scale, rule
from idmap_lib.engine import results


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
