"""Reports: the papers' numbers as data, our results beside them, missing runs shown as missing."""
import math

import pytest

from idmap_lib import data, recipes, reports, results, trainer
from idmap_lib.paper_numbers import PAPER


def fake_result(experiment, variant, scale="shrunk", test_err=0.4321, status="ok", fail=None,
                hardware=None, date="2031-02-03T04:05:06+00:00", gates_k=None):
    """A result as the trainer writes it, for a real recipe config; nothing is trained."""
    cfg = recipes.config(experiment, variant, scale)
    final = {"train_loss": 1.5, "train_err": 0.5, "steps": cfg["steps"], "wall_s": 12.5, "img_per_s": 900.0}
    if test_err is not None:
        final.update(test_err=test_err, test_loss=1.4)
    if gates_k is not None:
        final["gates_k"] = gates_k
    return {"config": cfg, "config_hash": results.config_hash(cfg), "status": status, "fail": fail,
            "final": final,
            "history": {"train": [{"step": 10, "train_loss": 2.3, "train_err": 0.9, "lr": 0.1, "img_per_s": 900.0,
                                   "wall_s": 1.0},
                                  {"step": 20, "train_loss": 1.5, "train_err": 0.5, "lr": 0.1, "img_per_s": 900.0,
                                   "wall_s": 2.0}],
                        "test": [{"step": 20, "test_loss": 1.4, "test_err": test_err or 0.9}]},
            "seed": 0, "dataset_source": {"kind": "local", "path": "/x/cifar10-jpeg.tar.gz", "sha256": "ab" * 32},
            "precision": "float32",
            "hardware": hardware or {"device": "cuda", "cpu": "Some CPU", "cpu_count": 8, "world_size": 1,
                                     "gpu": "Tesla T4"},
            "versions": {"torch": "2.99.0"}, "git": {"commit": "0123456789abcdef", "library_modified": False},
            "date": date}


@pytest.fixture
def no_training(monkeypatch):
    """Any attempt to train fails the test."""
    def refuse(*a, **k):
        raise AssertionError("the report tried to train a run")
    monkeypatch.setattr(trainer, "train", refuse)


# ---------------------------------------------------------------------------------------------- paper numbers

def test_paper_numbers_are_the_papers():
    assert PAPER["a_table1_shortcuts"]["original"]["value"] == 6.61
    assert PAPER["a_table1_shortcuts"]["exclusive_gating-b-6"]["value"] == 8.70
    assert PAPER["a_table1_shortcuts"]["dropout-0.5"]["value"] == "fail"
    assert "20%" in PAPER["a_table1_shortcuts"]["dropout-0.5"]["remark"]
    assert PAPER["a_table2_activations"]["bn_after_add-110"]["value"] == 8.17
    assert PAPER["a_table2_activations"]["full_preact-164"]["value"] == 5.46
    assert PAPER["a_table3_preact"]["c10-1001-original"]["value"] == 7.61
    assert PAPER["a_table3_preact"]["c100-1001-full_preact"]["value"] == 22.71
    assert PAPER["b_mnist"]["plain-d100"]["value"] == 90.20
    assert PAPER["b_mnist"]["gresnet-d50"]["value"] == 1.48
    assert PAPER["b_mnist"]["gresnet-d2"]["mean_k"] == 5.58
    assert PAPER["b_resnet32"]["gated-k_decay"]["value"] == 7.04
    assert PAPER["b_wrn"]["gated"]["value"] == 3.65
    assert PAPER["a_table1_shortcuts"]["original"]["source"] == "Paper A Table 1"
    assert PAPER["b_mnist"]["resnet-d20"]["source"] == "Paper B Table 1"


def test_paper_number_keys_name_real_experiments_and_variants():
    assert set(PAPER) == set(recipes.EXPERIMENTS)
    for e, entries in PAPER.items():
        # every variant the papers report is a recipe, and every recipe has the paper's number
        assert set(entries) == set(recipes.EXPERIMENTS[e]["variants"]), e
        for v, entry in entries.items():
            assert entry["unit"] == "test error %"
            assert entry["source"].startswith(("Paper A Table", "Paper B Table"))
            assert entry["value"] == "fail" or (isinstance(entry["value"], float) and 0 < entry["value"] < 100)


# ---------------------------------------------------------------------------------------------- tables

def test_missing_config_is_missing_with_its_command(tmp_path, no_training):
    df = reports.table("b_wrn", out_dir=tmp_path)
    assert list(df.index) == ["plain", "gated"]
    assert df.loc["gated", ("paper (Paper B Table 3)", "test error %")] == 3.65
    for scale in ("shrunk", "full"):
        assert df.loc["gated", (scale, "status")] == "missing"
        assert df.loc["gated", (scale, "command")] == (
            f"python -m idmap_lib train --experiment b_wrn --variant gated --scale {scale}")
        assert math.isnan(df.loc["gated", (scale, "test error %")])
    assert [c[1] for c in df.columns if c[0] == "shrunk"] == [*reports.FIELDS, "mean k"]  # b_wrn is gated


def test_every_missing_command_names_exactly_its_recipe(tmp_path, no_training):
    from idmap_lib.cli import _parser

    for experiment, e in recipes.EXPERIMENTS.items():
        df = reports.table(experiment, out_dir=tmp_path)
        assert list(df.index) == list(e["variants"])
        for variant in df.index:
            for scale in ("shrunk", "full"):
                args = _parser().parse_args(df.loc[variant, (scale, "command")].split()[3:])
                assert recipes.config(args.experiment, args.variant, args.scale, args.seed) == \
                    recipes.config(experiment, variant, scale)


def test_present_result_is_found_with_hardware_and_date(tmp_path, no_training):
    results.save_result(fake_result("a_table1_shortcuts", "conv1x1", test_err=0.4321), tmp_path)
    df = reports.table("a_table1_shortcuts", out_dir=tmp_path, scales=("full", "shrunk"))
    row = df.loc["conv1x1"]
    assert row[("shrunk", "status")] == "ok"
    assert row[("shrunk", "test error %")] == pytest.approx(43.21)
    assert row[("shrunk", "hardware")] == "Tesla T4"
    assert row[("shrunk", "date")] == "2031-02-03"
    assert row[("shrunk", "commit")] == "0123456"
    assert row[("shrunk", "steps")] == recipes.config("a_table1_shortcuts", "conv1x1", "shrunk")["steps"]
    assert row[("shrunk", "command")] == ""
    assert row[("paper (Paper A Table 1)", "test error %")] == 12.22
    assert df.loc["original", ("shrunk", "status")] == "missing"


def test_tables_never_train_and_show_recorded_full_runs(tmp_path, no_training):
    results.save_result(fake_result("a_table1_shortcuts", "conv1x1", scale="full", test_err=0.1234), tmp_path)
    df = reports.table("a_table1_shortcuts", scales=("full",), out_dir=tmp_path)
    assert df.loc["conv1x1", ("full", "test error %")] == pytest.approx(12.34)  # a recorded full run is shown
    assert df.loc["conv1x1", ("full", "net")] == "ResNet-110 (basic)"
    missing = df.drop(index="conv1x1")
    assert (missing[("full", "status")] == "missing").all()
    assert missing.loc["dropout-0.5", ("full", "command")] == (
        "python -m idmap_lib train --experiment a_table1_shortcuts --variant dropout-0.5 --scale full")


def test_a_result_of_a_different_config_does_not_count(tmp_path, no_training):
    r = fake_result("a_table1_shortcuts", "conv1x1")
    r["config"]["steps"] = 151  # same names, another recipe
    r["config_hash"] = results.config_hash(r["config"])
    results.save_result(r, tmp_path)
    df = reports.table("a_table1_shortcuts", scales="shrunk", out_dir=tmp_path)
    assert df.loc["conv1x1", ("shrunk", "status")] == "missing"


def test_failed_run_shows_fail_with_step_and_cpu_hardware(tmp_path, no_training):
    cpu = {"device": "cpu", "cpu": "AMD EPYC", "cpu_count": 2, "world_size": 1}
    results.save_result(fake_result("a_table1_shortcuts", "dropout-0.5", test_err=None, status="fail",
                                    fail={"step": 60, "reason": "training error at chance"}, hardware=cpu),
                        tmp_path)
    df = reports.table("a_table1_shortcuts", scales=("shrunk",), out_dir=tmp_path)
    assert df.loc["dropout-0.5", ("shrunk", "status")] == "fail (step 60)"
    assert df.loc["dropout-0.5", ("shrunk", "hardware")] == "CPU AMD EPYC (2 cores)"
    assert df.loc["dropout-0.5", ("shrunk", "note")] == "training error at chance"


def test_gated_nets_show_mean_k(tmp_path, no_training):
    results.save_result(fake_result("b_mnist", "gresnet-d2", gates_k=[1.0, 2.0, 6.0], test_err=0.03), tmp_path)
    df = reports.table("b_mnist", scales=("shrunk",), out_dir=tmp_path)
    assert df.loc["gresnet-d2", ("shrunk", "mean k")] == pytest.approx(3.0)
    assert df.loc["gresnet-d2", ("paper (Paper B Table 1)", "mean k (Paper B Table 2)")] == 5.58


def test_bad_arguments_say_what_is_valid():
    with pytest.raises(ValueError, match="a_table1_shortcuts"):
        reports.table("table9")
    with pytest.raises(ValueError, match="shrunk"):
        reports.table("b_wrn", scales=("tiny",))


# ---------------------------------------------------------------------------------------------- curves, notes

def test_curves_plot_each_recorded_history_and_name_the_missing(tmp_path):
    results.save_result(fake_result("b_wrn", "plain"), tmp_path)
    fig = reports.curves("b_wrn", ["plain", "gated"], out_dir=tmp_path)
    assert len(fig.data) == 2  # training loss and test error of the one recorded run
    assert list(fig.data[0].y) == [2.3, 1.5] and list(fig.data[1].y) == pytest.approx([43.21])
    assert "Tesla T4, 2031-02-03" in fig.layout.title.text
    assert "missing: gated" in fig.layout.title.text


def test_provenance_note_names_hardware_torch_seed_date_data_commit():
    note = reports.provenance_note(fake_result("b_wrn", "plain"))
    for part in ("Tesla T4", "torch 2.99.0", "seed 0", "2031-02-03", "cifar10-jpeg.tar.gz", "0123456"):
        assert part in note


def test_styled_rounds_numbers_keeps_words_and_drops_empty_columns(tmp_path, no_training):
    results.save_result(fake_result("a_table1_shortcuts", "conv1x1", test_err=0.43219), tmp_path)
    html = reports.styled(reports.table("a_table1_shortcuts", out_dir=tmp_path)).to_html()
    assert "43.22" in html and ">fail<" in html and "12.22" in html
    assert "python -m idmap_lib train --experiment a_table1_shortcuts --variant original --scale full" in html
    assert ">note<" not in html  # empty in every row
    html = html[html.index("<thead>"):]
    assert html.index("43.22") < html.index("Fig 2(e)")  # our number before the paper's remark


def test_provenance_lines_cover_the_recorded_runs(tmp_path, no_training):
    results.save_result(fake_result("b_resnet32", "original", test_err=0.30), tmp_path)
    t = reports.table("b_resnet32", out_dir=tmp_path)
    lines = reports.provenance_lines({"B3": t}, out_dir=tmp_path)
    assert len(lines) == 1 and lines[0].startswith("b_resnet32 / original / shrunk: Tesla T4")


def test_every_committed_result_is_its_recipe_and_names_its_real_network():
    """A committed run counts only if its config is exactly today's recipe (else it is stale: delete it and
    rerun), and its label names the network that really trained (depth and width)."""
    import json
    from pathlib import Path
    stale = []
    for p in sorted((Path(__file__).resolve().parents[1] / "data" / "results").glob("*.json")):
        r = json.loads(p.read_text())
        c = r["config"]
        if recipes.config(c["experiment"], c["variant"], c["scale"], c["seed"]) != c:
            stale.append(p.name)
        net = reports.net_name(c)
        kw = c["model"]["kwargs"]
        assert str(kw.get("depth", kw.get("d"))) in net, (p.name, net)
        if kw.get("width_scale", 1) != 1:
            assert "width" in net, (p.name, net)
    assert not stale, "results whose config is no longer the recipe (delete and rerun): " + ", ".join(stale)
