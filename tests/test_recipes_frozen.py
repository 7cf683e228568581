"""Recipes are reviewed data: none changes unseen, and each builds the network the paper names.

Runs are looked up by the hash of their config (results.config_hash), then by the hash of what
trains (results.training_hash: the config without its labels), so a recipe that changes without
anyone meaning it silently orphans every recorded run of it: the book would show them missing, the
sweep would retrain them. tests/recipes_snapshot.json holds, for every experiment x variant x scale,
both hashes and a hash of its ``why`` notes (the reasons shown to the reader, outside the config
hash). A deliberate change updates it: ``IDMAP_UPDATE_RECIPES=1 python -m pytest
tests/test_recipes_frozen.py``, and the diff of the snapshot shows which recipes changed.
"""
import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

from idmap_lib.engine.build import build_model
from idmap_lib.engine.recipes import EXPERIMENTS, SCALES, config
from idmap_lib.engine.results import config_hash, training_hash
from idmap_lib.models.introspect import residual_units

SNAPSHOT = Path(__file__).with_name("recipes_snapshot.json")


def fingerprints():
    out = {}
    for exp, e in EXPERIMENTS.items():
        for v in e["variants"]:
            for scale in SCALES:
                cfg = config(exp, v, scale)
                why = json.dumps(cfg.get("why"), sort_keys=True).encode()
                out[f"{exp}/{v}/{scale}"] = {"config": config_hash(cfg)[:16],
                                             "training": training_hash(cfg)[:16],
                                             "why": hashlib.sha256(why).hexdigest()[:16]}
    return out


def test_no_recipe_changes_unseen():
    now = fingerprints()
    if os.environ.get("IDMAP_UPDATE_RECIPES"):
        SNAPSHOT.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}"
                                               # a recipe a line
                                               for k, v in sorted(now.items())) + "\n}\n")
    old = json.loads(SNAPSHOT.read_text())
    changed = sorted(k for k in now.keys() | old.keys() if now.get(k) != old.get(k))
    assert not changed, (
        f"{len(changed)} recipes differ from tests/recipes_snapshot.json: {', '.join(changed[:8])}"
        f"{' ...' if len(changed) > 8 else ''}. A changed config no longer finds its recorded runs "
        f"(they are looked "
        "up by config hash). If the change is meant, update the snapshot (IDMAP_UPDATE_RECIPES=1 "
        "python -m pytest tests/test_recipes_frozen.py) and retrain or re-record the runs of those "
        "recipes.")


# Paper A Sec 4 / appendix and Paper B Sec 4: the networks of each table, by parameter count. At
# full scale the recipe must build the paper's network; at the CPU scale the same depth (units),
# narrower only where the recipe says so (ResNet-164/1001: every channel x 1/4, ~1/16 of the
# weights; WRN-28-1: a tenth of the width). (experiment, variant, residual units, full-scale
# parameters (M), CPU-scale width, the paper's words)
NETWORKS = [
    ("a_table2_activations", "full_preact-110", 54, 1.73, 1, "ResNet-110, 1.7M"),
    ("a_table2_activations", "original-164", 54, 1.70, 1 / 4, "ResNet-164, 1.7M"),
    ("a_table3_preact", "c10-1001-full_preact", 333, 10.3, 1 / 4, "ResNet-1001, 10.2M"),
    ("a_table3_preact", "c10-110-single-original", 108, 1.73, 1, "1-layer-skip ResNet-110"),
    ("b_resnet32", "gated", 15, 0.46, 1, "ResNet-32 (n = 5), 0.46M"),
    ("b_wrn", "plain", 12, 36.5, 1 / 10, "WRN-28-10, 36.5M"),
]


@pytest.mark.parametrize("exp, variant, units, millions, width, words", NETWORKS)
def test_each_recipe_builds_the_papers_network(exp, variant, units, millions, width, words):
    sizes = {}
    for scale in SCALES:
        with torch.device("meta"):
            net = build_model(config(exp, variant, scale)["model"])
        assert len(residual_units(net)) == units, (scale, words)  # the depth is never shrunk
        assert net.fc.out_features == 10
        sizes[scale] = sum(p.numel() for p in net.parameters())
    assert sizes["full"] / 1e6 == pytest.approx(millions, rel=0.01), words
    # weights ~ width^2
    assert sizes["cpu"] / sizes["full"] == pytest.approx(width ** 2, rel=0.1), words
