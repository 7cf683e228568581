"""Reports: the papers' numbers as data, our results beside them, missing runs shown as missing."""


from idmap_book.evidence import reports
from idmap_book.evidence.paper_numbers import PAPER
from idmap_lib.engine import recipes, results
from idmap_lib.models.registry import UNIT_ROWS


def fake_result(experiment, variant, scale="cpu", test_err=0.4321, status="ok", fail=None,
                hardware=None, date="2031-02-03T04:05:06+00:00", gates_k=None):
    """A result as the trainer writes it, for a real recipe config; nothing is trained."""
    cfg = recipes.config(experiment, variant, scale)
    final = {"train_loss": 1.5, "train_err": 0.5, "steps": cfg["steps"], "wall_s": 12.5,
             "img_per_s": 900.0}
    if test_err is not None:
        final.update(test_err=test_err, test_loss=1.4)
    if gates_k is not None:
        final["gates_k"] = gates_k
    return {"config": cfg, "config_hash": results.config_hash(cfg), "status": status, "fail": fail,
            "final": final,
            "history": {"train": [{"step": 10, "train_loss": 2.3, "train_err": 0.9, "lr": 0.1,
                                   "img_per_s": 900.0,
                                   "wall_s": 1.0},
                                  {"step": 20, "train_loss": 1.5, "train_err": 0.5, "lr": 0.1,
                                   "img_per_s": 900.0,
                                   "wall_s": 2.0}],
                        "test": [{"step": 20, "test_loss": 1.4, "test_err": test_err or 0.9}]},
            "seed": 0, "dataset_source": {"kind": "local", "path": "/x/cifar10-jpeg.tar.gz",
                                          "sha256": "ab" * 32},
            "precision": "float32",
            "hardware": hardware or {"device": "cuda", "cpu": "Some CPU", "cpu_count": 8,
                                     "world_size": 1,
                                     "gpu": "Tesla T4"},
            "versions": {"torch": "2.99.0"}, "git": {"commit": "0123456789abcdef",
                                                     "library_modified": False},
            "date": date}


# ----------------------------------------------------------------------------------------------
# paper numbers

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
    # Table 1 is read from the shortcuts' rows: all eleven of its rows, each a recipe's, as printed
    assert {v: e["value"] for v, e in PAPER["a_table1_shortcuts"].items()} == {
        "original": 6.61, "constant_scaling-0-1": "fail", "constant_scaling-0.5-1": "fail",
        "constant_scaling-0.5-0.5": 12.35, "exclusive_gating-b0": "fail",
        "exclusive_gating-b-6": 8.70, "exclusive_gating-b-7": 9.81,
        "shortcut_only_gating-b0": 12.86, "shortcut_only_gating-b-6": 6.91, "conv1x1": 12.22,
        "dropout-0.5": "fail"}


def test_paper_number_keys_name_real_experiments_and_variants():
    assert set(PAPER) == set(recipes.EXPERIMENTS)
    for e, entries in PAPER.items():
        # every variant the papers report is a recipe, and every recipe has the paper's number (the
        # book's interventions: only the units the paper trained, never a swapped one) (nor a
        # float32 copy of the precision check: the book's rows, not the paper's)
        ours = ({v for v in recipes.EXPERIMENTS[e]["variants"] if "+" in v or "@" in v}
                if e == "a_swaps" else set())
        # (nor a unit at a depth the paper gives no number for: its registry row says)
        ours |= {f"{u}-{d}" for u, row in UNIT_ROWS.items() for d in (110, 164) if d not in row.paper}
        assert set(entries) == set(recipes.EXPERIMENTS[e]["variants"]) - ours, e
        for v, entry in entries.items():
            assert entry["unit"] == "test error %"
            assert entry["source"].startswith(("Paper A Table", "Paper B Table"))
            assert (entry["value"] == "fail" or (isinstance(entry["value"],
                                                            float) and 0 < entry["value"] < 100))


# ----------------------------------------------------------------------------------------------
# tables

# ----------------------------------------------------------------------------------------------
# curves, notes

def test_provenance_note_names_hardware_torch_seed_date_data_commit():
    note = reports.provenance_note(fake_result("b_wrn", "plain"))
    for part in ("Tesla T4", "torch 2.99.0", "seed 0", "2031-02-03", "cifar10-jpeg.tar.gz",
                 "0123456"):
        assert part in note


def test_provenance_lines_list_each_recorded_run_of_todays_recipes(tmp_path):
    results.save_result(fake_result("b_resnet32", "gated"), tmp_path)
    stale = fake_result("b_resnet32", "original")
    stale["config"]["steps"] += 1  # no longer the recipe: not listed
    results.save_result(stale, tmp_path)
    lines = reports.provenance_lines(tmp_path)
    assert (len(lines) == 1
            and lines[0].startswith("b_resnet32 / gated / cpu / seed 0: Tesla T4, torch 2.99.0"))


def test_every_committed_result_is_its_recipe_and_names_its_real_network():
    """A committed run counts only if what it trained is exactly today's recipe of its experiment
    and variant at one of the scales (its labels aside: the first CPU scale was called "shrunk";
    else it is stale: delete it and rerun), and its label names the network that really trained
    (depth and width)."""
    import json
    from pathlib import Path
    stale = []
    for p in sorted((Path(__file__).resolve().parents[1] / "data" / "results").glob("*.json")):
        r = json.loads(p.read_text())
        c = r["config"]
        if recipes.recorded_scale(c) is None:
            stale.append(p.name)
        net = reports.net_name(c)
        kw = c["model"]["kwargs"]
        assert str(kw.get("depth", kw.get("d"))) in net, (p.name, net)
        if kw.get("width_scale", 1) != 1:
            assert "width" in net, (p.name, net)
    assert not stale, ("results whose config is no longer the recipe (delete and rerun): "
                       "") + ", ".join(stale)


def test_a_narrowed_bottleneck_net_is_named_by_the_channels_that_really_trained():
    import torch
    from idmap_lib.engine.build import build_model
    cfg = recipes.config("a_table2_activations", "full_preact-164", "cpu")
    assert reports.net_name(cfg) == ("ResNet-164 (bottleneck, 1/4 width: 4/8/16 inside, 16/32/64 "
                                     "out, full pre-activation)")
    widths = {m.out_channels for m in build_model(cfg["model"]).modules()
              if isinstance(m, torch.nn.Conv2d)}
    # inside 4/8/16, out 16/32/64: nothing wider
    assert {4, 8, 16, 32, 64} <= widths and max(widths) == 64
    assert reports.net_name(recipes.config("a_table2_activations", "original-110",
                                           "cpu")) == "ResNet-110 (basic)"
    # Paper B's ungated ResNet-32 is its "original" but a pre-activation net: the label says which
    # unit trained
    assert reports.net_name(recipes.config("b_resnet32", "original",
                                           "cpu")) == "ResNet-32 (basic, full pre-activation)"
