"""The recorded runs as data: every result names what it trained (its config hash and training hash, both derived
from its config), so that a run is found by what it trains and never counted twice under two labels."""
import json
from pathlib import Path

from idmap_lib.engine.results import RESULTS_DIR, config_hash, training_hash


def test_every_recorded_result_carries_its_config_and_training_hashes():
    files = sorted(Path(RESULTS_DIR).glob("*.json"))
    assert len(files) > 200
    seen = {}
    for f in files:
        r = json.loads(f.read_text())
        assert r["config_hash"] == config_hash(r["config"]), f.name
        assert r.get("training_hash") == training_hash(r["config"]), f.name
        assert r["training_hash"] not in seen, f"{f.name} trains what {seen[r['training_hash']]} trained"
        seen[r["training_hash"]] = f.name
