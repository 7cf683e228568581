"""Recipes as data: the lr schedule at its boundaries, every variant's config, names and errors."""
import json
import subprocess
import sys

import pytest

from idmap_lib.engine import results
from idmap_lib.engine.recipes import EXPERIMENTS, config, recorded_scale
from idmap_lib.engine.schedule import lr_at
from idmap_lib.engine.results import config_hash


def test_paper_a_lr_schedule_boundaries():
    s = config("a_table2_activations", "full_preact-110", "full")["schedule"]
    # Paper A appendix: 0.01 for iterations < 400, then 0.1; /10 at 32k and 48k; stop at 64k
    assert lr_at(s, 0) == 0.01 and lr_at(s, 399) == 0.01
    assert lr_at(s, 400) == 0.1
    assert lr_at(s, 31999) == 0.1 and lr_at(s, 32000) == 0.01
    assert lr_at(s, 47999) == 0.01 and lr_at(s, 48000) == 0.001
    assert lr_at(s, 63999) == 0.001
    with pytest.raises(ValueError, match="stops at 64000"):
        lr_at(s, 64000)
    assert config("a_table2_activations", "full_preact-110", "full")["steps"] == 64000


def test_the_cpu_scale_ramps_its_warm_up_and_the_superseded_scale_steps():
    ramp = config("a_table2_activations", "original-110", "cpu")["schedule"]
    step = config("a_table2_activations", "original-110", "cpu_step_warmup")["schedule"]
    assert [lr_at(ramp, s) for s in (0, 50, 100, 199, 200,
                                     300)] == pytest.approx([0.01, 0.055, 0.1, 0.1, 0.01, 0.001])
    assert [lr_at(step, s) for s in (0, 50, 99, 100,
                                     200)] == pytest.approx([0.01, 0.01, 0.01, 0.1, 0.01])
    assert max(lr_at(ramp, s + 1) - lr_at(ramp, s) for s in range(399)) < 0.001   # no jump anywhere
    r1001 = config("a_table3_preact", "c10-1001-original", "cpu")["schedule"]
    assert (r1001["warmup_steps"], lr_at(r1001, 16),
            lr_at(r1001, 32)) == (32, pytest.approx(0.055), 0.1)
    # Paper B's CIFAR recipes state no warm-up: both CPU scales train the same
    for v in ("gated", "original"):
        assert results.training_hash(config("b_resnet32", v, "cpu")) == \
            results.training_hash(config("b_resnet32", v, "cpu_step_warmup"))


def test_one_training_is_found_under_every_label_that_names_it(tmp_path):
    """Table 1's original, Table 2's original-110 and Table 3's c10-110-original are one
    ResNet-110."""
    t2 = config("a_table2_activations", "original-110", "cpu", 1)
    t1, t3 = config("a_table1_shortcuts", "original", "cpu",
                    1), config("a_table3_preact", "c10-110-original", "cpu", 1)
    assert results.training_hash(t1) == results.training_hash(t2) == results.training_hash(t3)
    assert config_hash(t1) != config_hash(t2)
    assert results.training_hash(config("a_table1_shortcuts", "conv1x1", "cpu",
                                        1)) != results.training_hash(t1)
    assert results.find_result(t1, tmp_path) is None
    results.save_result({"config": t2, "config_hash": config_hash(t2), "final": {"test_err": 0.3}},
                        tmp_path)
    hit = results.find_result(t1, tmp_path)
    assert hit["config"] == t2 and hit["shown_as"] == {"experiment": "a_table1_shortcuts",
                                                       "variant": "original",
                                                       "scale": "cpu"}
    assert results.find_result(t3, tmp_path)["final"]["test_err"] == 0.3
    # an exercise's runs: by name only
    assert results.find_result(t1, tmp_path, same_training=False) is None
    assert results.find_result(config("a_table2_activations", "original-110", "cpu", 2),
                               tmp_path) is None
    assert results.find_result(config("a_table2_activations", "original-110", "cpu_step_warmup", 1),
                               tmp_path) is None
    # a result recorded under the first CPU scale's name ("shrunk") is today's cpu_step_warmup
    old = {**config("a_table2_activations", "original-110", "cpu_step_warmup", 1),
           "scale": "shrunk"}
    assert recorded_scale(old) == "cpu_step_warmup" and recorded_scale({**old, "steps": 10}) is None


def test_paper_b_schedules():
    r = config("b_resnet32", "gated", "full")
    s = r["schedule"]
    assert r["optimizer"]["nesterov"] and lr_at(s, 0) == 0.1  # no warm-up in Paper B
    assert lr_at(s, s["total"] // 2 - 1) == 0.1 and lr_at(s, s["total"] // 2) == 0.01
    assert lr_at(s, s["total"] * 3 // 4) == 0.001
    w = config("b_wrn", "plain", "full")
    s = w["schedule"]
    assert w["optimizer"]["weight_decay"] == 5e-4 and w["model"]["kwargs"]["dropout"] == 0.3
    assert [lr_at(s, m) for m in s["milestones"]] == pytest.approx([0.02, 0.004, 0.0008])
    assert lr_at(s, s["milestones"][0] - 1) == 0.1
    m = config("b_mnist", "gresnet-d50", "full")
    assert m["optimizer"]["name"] == "nadam" and m["optimizer"]["lr"] == 0.002
    assert m["steps"] == 100 * (60000 // 128) and m["batch_size"] == 128
    assert lr_at(m["schedule"], m["steps"] - 1) == 0.002


def test_every_variant_at_both_scales_is_json_and_keeps_the_papers_variant():
    hashes = set()
    for exp, e in EXPERIMENTS.items():
        assert e["baseline"] in e["variants"]
        for v in e["variants"]:
            full, cpu = config(exp, v, "full"), config(exp, v, "cpu")
            json.dumps(full), json.dumps(cpu)
            hashes |= {config_hash(full), config_hash(cpu)}
            fk, sk = full["model"]["kwargs"], cpu["model"]["kwargs"]
            for key in ("unit", "shortcut", "gated", "kind", "d", "dropout", "gate_bias", "p",
                        "shortcut_scale", "residual_scale", "num_classes"):
                assert fk.get(key) == sk.get(key), (exp, v, key)
            assert cpu["optimizer"] == full["optimizer"] and cpu["preprocess"] == full["preprocess"]
            assert cpu["steps"] <= 400 and cpu["subset"]
    n = sum(len(e["variants"]) for e in EXPERIMENTS.values())
    assert len(hashes) == 2 * n  # every (variant, scale) has its own hash


def test_table_contents():
    t1 = EXPERIMENTS["a_table1_shortcuts"]["variants"]
    assert len(t1) == 11
    assert config("a_table1_shortcuts", "exclusive_gating-b-6",
                  "full")["model"]["kwargs"]["gate_bias"] == -6.0
    assert config("a_table3_preact", "c10-110-single-original",
                  "full")["model"]["kwargs"]["block"] == "single"
    c100 = config("a_table3_preact", "c100-1001-full_preact", "full")
    assert c100["dataset"] == "cifar100" and c100["model"]["kwargs"]["num_classes"] == 100
    k = config("b_resnet32", "gated-k_decay", "full")
    assert (k["optimizer"]["decay_gates"] and not config("b_resnet32", "gated",
                                                         "full")["optimizer"]["decay_gates"])
    assert sorted({v.split("-d")[1] for v in EXPERIMENTS["b_mnist"]["variants"]},
                  key=int) == ["2", "10", "20", "50", "100"]


def test_unknown_names_in_a_config_are_clear_errors_and_the_default_scale_is_the_cpu_scale():
    with pytest.raises(ValueError, match="unknown experiment 'nope'; valid: a_table1_shortcuts"):
        config("nope", "original")
    with pytest.raises(ValueError, match="unknown variant 'nope' of b_wrn; valid: plain, gated"):
        config("b_wrn", "nope")
    with pytest.raises(ValueError, match="unknown scale 'tiny'; valid: cpu, cpu_step_warmup, full"):
        config("b_wrn", "plain", "tiny")
    assert config("b_wrn", "plain") == config("b_wrn", "plain", "cpu")


def test_unknown_names_are_clear_errors():
    p = subprocess.run([sys.executable, "-m", "idmap_lib", "train", "--experiment", "b_wrn",
                        "--variant", "x"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "valid: plain, gated" in p.stderr
    p = subprocess.run([sys.executable, "-m", "idmap_lib", "list"], capture_output=True, text=True)
    assert p.returncode == 0 and "gresnet-d100" in p.stdout and "c100-1001-full_preact" in p.stdout


def test_the_listing_names_every_experiment_and_variant_and_marks_the_baseline():
    from idmap_lib.engine.recipes import listing
    lines = listing().splitlines()
    assert sum(1 for line in lines if not line.startswith(" ")) == len(EXPERIMENTS)
    for name, e in EXPERIMENTS.items():
        assert f"{name}: {e['title']}" in lines
        for v in e["variants"]:
            assert f"    {v}{'  (baseline)' if v == e['baseline'] else ''}" in lines


def test_mnist_configs_are_one_depths_full_recipe_kind_by_kind_and_seed_by_seed():
    from idmap_lib.engine.recipes import MNIST_KINDS, mnist_configs
    got = mnist_configs(20, ["1", 2])
    assert got == [config("b_mnist", f"{k}-d20", "full", s) for k in MNIST_KINDS for s in (1, 2)]
    assert [c["variant"] for c in mnist_configs(10, [0], kinds=("gresnet_keras",
                                                                ))] == ["gresnet_keras-d10"]


def test_overrides_change_a_config_in_one_place_and_the_exercise_scales_are_recipe_data():
    """recipes.config is the one constructor: an exercise's scale and change are overrides given to
    it (the exercises' scales are data there), never edits made to its config afterwards."""
    from idmap_class import ablation_exercises as ax
    from idmap_lib.engine import recipes

    base = recipes.config("a_table2_activations", "original-110", recipes.JUMP_PROBE, 3)
    cfg = recipes.config("a_table2_activations", "original-110", recipes.JUMP_PROBE, 3,
                         overrides={"steps": 150, "depth": 20, "warmup_steps": 10,
                                    "model": {"unit": "full_preact"},
                                    "variant": "mine", "scale": "ablation-classroom",
                                    "why": {"ablation": "x"}})
    assert cfg["model"]["kwargs"]["depth"] == 20 and cfg["model"]["kwargs"]["unit"] == "full_preact"
    assert (cfg["steps"], cfg["log_every"], cfg["eval_every"], cfg["variant"], cfg["scale"]) == \
        (150, 10, 150, "mine", "ablation-classroom")
    s, b = cfg["schedule"], base["schedule"]
    assert (s["total"] == 150 and s["milestones"] == [round(m * 150 / b["total"])
                                                      for m in b["milestones"]])
    assert s["warmup_steps"] == 10 and cfg["why"]["ablation"] == "x" and cfg["seed"] == 3
    assert base["model"]["kwargs"]["depth"] == 110  # the recipe itself untouched
    assert (ax.MNIST_SCALES is recipes.EXERCISE_MNIST_SCALES
            and ax.cifar_scales is recipes.exercise_cifar_scales)
