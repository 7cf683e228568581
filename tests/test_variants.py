"""A variant on the page: its table over seeds, and what each scale trains."""
from fake_runs import save
from idmap_lib.book import variants


def test_variant_table_reads_the_seeds_and_says_what_is_missing(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61])
    t = variants.variant_table("a_table1_shortcuts", ["exclusive_gating-b-6", "exclusive_gating-b0"], results_dir=tmp_path)
    assert t.loc["exclusive_gating-b-6", "ours: test error %"] == "41.00 ± 1.00"
    assert t.loc["exclusive_gating-b-6", "paper: test error % (Paper A Table 1)"] == "8.70"
    assert t.loc["exclusive_gating-b0", "to run"].endswith("--variant exclusive_gating-b0 --scale cpu --seed 2")
    assert t.loc["exclusive_gating-b-6", "network trained"] == "ResNet-110 (basic)"
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    assert "to run" not in variants.variant_table("a_table1_shortcuts", ["exclusive_gating-b0"], results_dir=tmp_path)


def test_what_we_ran_says_the_schedule_each_scale_really_has():
    text = variants.scale_text("a_table2_activations", "original-110")
    assert "lr rising linearly from 0.01 over the first 100 steps to 0.1" in text  # the CPU scale's ramp
    assert "lr 0.01 for the first" not in text                                     # not the step warm-up it replaced


def test_scale_differences_show_whole_values_setting_by_setting():
    df = variants.scale_differences("a_table3_preact", "c10-1001-original")
    assert list(df.columns) == ["CPU scale", "CPU scale, step warm-up (superseded)", "full recipe"]
    assert df.loc["schedule.warmup"].tolist() == ["linear", "step (the paper's)", "step (the paper's)"]
    assert df.loc["steps"].tolist() == ["128", "128", "64000"]
    assert df.loc["subset.train_per_class", "full recipe"] == "all the data" and "subset" not in df.index
    assert "experiment" not in df.index and "scale" not in df.index   # labels are not settings
