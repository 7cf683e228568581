"""A variant on the page: its table over seeds, and what each scale trains."""
from fake_runs import save
from idmap_book.evidence import variants
from idmap_lib.models.registry import UNIT_ROWS


def test_variant_table_reads_the_seeds_and_says_what_is_missing(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61])
    t = variants.variant_table("a_table1_shortcuts",
                               ["exclusive_gating-b-6", "exclusive_gating-b0"], out_dir=tmp_path)
    assert t.loc["exclusive gating at b_g = −6", "ours: test error %"] == "41.00 ± 1.00"
    assert t.loc["exclusive gating at b_g = −6", "paper: test error % (Paper A Table 1)"] == "8.70"
    assert t.loc["exclusive gating at b_g = 0",
                 "to run"].endswith("--variant exclusive_gating-b0 --scale cpu --seed 2")
    assert t.loc["exclusive gating at b_g = −6", "network trained"] == "ResNet-110 (basic)"
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    assert "to run" not in variants.variant_table("a_table1_shortcuts", ["exclusive_gating-b0"],
                                                  out_dir=tmp_path)


def test_what_we_ran_says_the_schedule_each_scale_really_has():
    text = variants.scale_text("a_table2_activations", "original-110")
    # the CPU scale's ramp
    assert "lr rising linearly from 0.01 over the first 100 steps to 0.1" in text
    # not the step warm-up it replaced
    assert "lr 0.01 for the first" not in text


def test_scale_differences_show_whole_values_setting_by_setting():
    df = variants.scale_differences("a_table3_preact", "c10-1001-original")
    assert list(df.columns) == ["CPU scale", "CPU scale, step warm-up (the lr-jump probe)",
                                "full recipe"]
    assert df.loc["schedule.warmup"].tolist() == ["linear", "step (the paper's)",
                                                  "step (the paper's)"]
    assert df.loc["steps"].tolist() == ["128", "128", "64000"]
    assert (df.loc["subset.train_per_class", "full recipe"] == "all the data"
            and "subset" not in df.index)
    assert "experiment" not in df.index and "scale" not in df.index   # labels are not settings


def test_each_chapter_shows_the_variants_its_claims_compare():
    """SHOWN is the one list of each experiment chapter: every variant a CPU-scale claim compares,
    none other."""
    from idmap_book.evidence import claims
    from idmap_lib.engine import recipes
    compared = {}
    for c in claims.CLAIMS:
        if c.scale != "full":
            compared.setdefault(c.experiment, set()).update(c.variants)
    assert {e: set(v) for e, v in variants.SHOWN.items()} == compared
    for e, shown in variants.SHOWN.items():
        assert len(set(shown)) == len(shown) and set(shown) <= set(recipes.EXPERIMENTS[e]["variants"])
    assert set(variants.T1_CURVES) | set(variants.T1_FULL) <= set(variants.SHOWN["a_table1_shortcuts"])
    # every unit of Table 2 (a registry row with its number), in its order
    assert variants.UNITS_110 == tuple(f"{u}-110" for u, r in UNIT_ROWS.items() if 110 in r.paper)


def test_a_table1_variant_names_its_shortcut_and_options_as_make_unit_takes_them():
    from idmap_lib import make_unit
    assert variants.shortcut_options("a_table1_shortcuts", "original") == ("identity", {})
    assert variants.shortcut_options("a_table1_shortcuts", "constant_scaling-0.5-1") == \
        ("constant_scaling", {"shortcut_scale": 0.5, "residual_scale": 1.0})
    assert variants.shortcut_options("a_table1_shortcuts", "dropout-0.5") == ("dropout", {"p": 0.5})
    for v in variants.SHOWN["a_table1_shortcuts"]:
        name, opts = variants.shortcut_options("a_table1_shortcuts", v)
        make_unit("full_preact", name, 16, 16, **opts)   # every option is one make_unit takes


def test_the_papers_numbers_print_as_the_papers_do():
    from idmap_book.evidence import paper_numbers
    # 2 decimals, as printed
    assert paper_numbers.printed("a_table1_shortcuts", "exclusive_gating-b-6") == "8.70"
    # Paper A's word
    assert paper_numbers.printed("a_table1_shortcuts", "dropout-0.5") == "fail"
    assert paper_numbers.printed("b_wrn", "c100-plain") == "18.85"
    assert paper_numbers.printed("a_table3_preact", "no-such-variant") == "–"
