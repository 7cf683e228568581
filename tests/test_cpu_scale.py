"""The probe that chose the CPU scale (chapter 11)."""
from fake_runs import history, result
from idmap_book.plan import cpu_scale
from idmap_book.evidence import rule
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
    # one seed rises by 0.6
    r["history"]["train"] = history([2.2] * 10 + [2.8] + [2.1] * 29, [0.8] * 40)
    results.save_result(r, tmp_path)
    assert cpu_scale.scale_probe("cpu", tmp_path)["holds"] is False
    assert cpu_scale.scale_probe("cpu", tmp_path / "none")["holds"] is None


def _probe_runs(folder, scale, losses_of_seed):
    for s, losses in losses_of_seed.items():
        r = result(*cpu_scale.PROBE, s, scale=scale)
        r["history"]["train"] = history(losses, [0.8] * len(losses))
        results.save_result(r, folder)


def test_chapter_11s_probe_table_and_note_say_where_the_rule_holds(tmp_path):
    calm, spike = [2.2] * 10 + [2.1] * 30, [2.2] * 10 + [3.0] + [2.1] * 29
    _probe_runs(tmp_path, "cpu_step_warmup", {0: spike, 1: calm, 2: calm, 3: calm, 4: calm})
    # seed 2 of the ramp not recorded
    _probe_runs(tmp_path, "cpu", {0: calm, 1: calm, 3: calm, 4: calm})
    t = cpu_scale.probe_table(out_dir=tmp_path)
    assert t.loc[("CPU scale, step warm-up (the lr-jump probe)", 0),
                 "rise after the warm-up"] == "0.80"
    assert t.loc[("CPU scale", 2), "rise after the warm-up"] == "not run yet"
    # every seed
    assert (t.loc[("CPU scale", 2), "final test error %"] == "–"
            and len(t) == 2 * len(rule.ALL_SEEDS))
    note = cpu_scale.probe_note(out_dir=tmp_path)
    assert note.startswith("With the step warm-up the rule **fails**; with the ramp it **is not "
                           "decided yet (seed 2 not recorded: `python -m idmap_book sweep`)**")


def test_inside_the_ramp_each_seeds_peak_and_whether_it_recovers_before_the_ramp_ends(tmp_path):
    # nothing recorded: nothing said
    assert cpu_scale.inside_ramp_note(out_dir=tmp_path) == ""
    # below ln 10 from step 30 (warm-up: 100)
    early = [9.0, 4.0, 2.2] + [2.1] * 37
    # ... from step 130: after the ramp
    late = [9.0] + [3.0] * 11 + [2.0] * 28
    _probe_runs(tmp_path, "cpu", {0: early, 1: early, 2: early})
    x = cpu_scale.inside_ramp(out_dir=tmp_path)
    assert (x["original-110"][0] == {"peak": (9.0, 10), "below": 30, "warm": 100}
            and "full_preact-110" not in x)
    note = cpu_scale.inside_ramp_note(out_dir=tmp_path)
    assert "window per seed is 9.00 at step 10 (below ln 10 from step 30); 9.00 at step 10" in note
    assert ("full pre-activation's is not run yet" in note
            and "is gone before the ramp ends in every seed" in note)
    _probe_runs(tmp_path, "cpu", {2: late})
    assert "outlasts the ramp in some seeds" in cpu_scale.inside_ramp_note(out_dir=tmp_path)
