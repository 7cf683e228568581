"""How long a full recipe takes: measured on an H200, derived for a T4 and a CPU."""
from idmap_lib.book import run_times
from idmap_lib.engine import recipes, results


def test_run_times_are_measured_on_the_h200_and_derived_for_a_t4(tmp_path):
    import json
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
