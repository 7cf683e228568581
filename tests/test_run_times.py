"""How long a full recipe takes: measured on an H200, derived for a T4 and a CPU."""
from idmap_book.plan import run_times
from idmap_lib.engine import recipes, results


def test_run_times_are_measured_on_the_h200_and_derived_for_a_t4(tmp_path):
    import json
    (tmp_path / "2026-01-01-h200").mkdir()
    modes = {"110": {"cuda_graph": {"img_per_s_total": 12800.0}}}
    (tmp_path / "2026-01-01-h200" / "modes.json").write_text(json.dumps(modes))
    t = run_times.full_recipe_time(recipes.config("a_table2_activations", "original-110", "full"),
                                   tmp_path,
                                   out_dir=tmp_path / "none")
    # 64,000 x 128 images at 12,800 img/s
    assert t == "H200 10.7 min (measured 2026-01-01); T4 ~2.7 h*"
    assert ("a T4's time from the H200's by the ratio of their memory bandwidths "
            "(x15" in run_times.derived_note())
    # same depth, but a subset: pace applies
    narrow = recipes.config("a_table2_activations", "original-110", "cpu")
    assert run_times.full_recipe_time(narrow, tmp_path,
                                      out_dir=tmp_path / "none").startswith("H200 0.1 min")
    r164 = recipes.config("a_table2_activations", "full_preact-164", "full")
    assert run_times.full_recipe_time(r164, tmp_path, out_dir=tmp_path) == "GPU: not measured yet"
    # a CPU: derived from the recorded runs of the same network (any scale, trained alone), never
    # measured 400 steps at one thread: 1.5, 2.25, 1.65 s a step
    for seed, wall in ((0, 600.0), (1, 900.0), (2, 660.0)):
        cfg = recipes.config("a_table1_shortcuts", "conv1x1", "cpu", seed)
        results.save_result({"config": cfg, "config_hash": results.config_hash(cfg), "status": "ok",
                             "final": {"wall_s": wall, "steps": 400},
                             "hardware": {"torch_threads": 1},
                             "history": {"train": [], "test": []}}, tmp_path / "runs")
    t = run_times.full_recipe_time(recipes.config("a_table2_activations", "original-110", "full"),
                                   tmp_path,
                                   out_dir=tmp_path / "runs")
    assert t.endswith("; CPU ~29.3 h at 1 thread*")  # 64,000 steps x the median 1.65 s


def test_an_exercises_time_in_words_comes_from_the_runs_it_describes():
    """Issue 30.7: the prose above an exercise's table of runs says the time those runs took
    (together where they trained together, with their threads and day), or says that it is a
    separate timing, alone, with its day."""
    import pytest

    def run(wall, together=None, threads=1, day="2026-11-30"):
        return {"final": {"wall_s": wall}, "hardware": {"torch_threads": threads},
                "date": f"{day}T01:32:01+00:00",
                **({"exercise": {"wall_s_together": together}} if together else {})}
    table = {"original": run(155.8, 164.2), "constant_scaling-0.5-1": run(157.7, 164.2)}
    assert run_times.runs_took(table) == "2.7 min for its 2 runs together, at 1 thread (2026-11-30)"
    assert run_times.runs_took({"a": run(60.0), "b": run(90.0, threads=2, day="2026-12-01"),
                                "c": None}) == (
        "2.5 min for its 2 runs one after the other, at 1 thread or 2 threads (2026-11-30, "
        "2026-12-01)")
    with pytest.raises(ValueError, match="run the exercise first"):
        run_times.runs_took({"a": None})
    alone = {"s": 44.79, "torch_threads": 2, "cpu": "AMD EPYC", "cpu_count": 2,
             "date": "2026-12-02T00:06:24+00:00"}
    assert (run_times.timed_alone(alone) == "0.7 min timed alone at 2 threads (a 2-core AMD EPYC, "
                                            "2026-12-02)")
    with pytest.raises(ValueError, match="python -m idmap_class time"):
        run_times.timed_alone({"s": 44.79})
