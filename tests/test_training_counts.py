"""Issue 57.8: the book counts trainings, not table rows (one run shown by Tables 1, 2 and 3 is one
run), and a full-recipe run trained in segments records every segment's commit and library hash."""
import json
from pathlib import Path

from idmap_book.figures import full_recipe
from idmap_lib.engine import recipes, results

ROOT = Path(__file__).resolve().parents[1]


def _finished(cfg, out_dir):
    results.save_result({"config": cfg, "config_hash": results.config_hash(cfg), "status": "ok",
                         "final": {"test_err": 0.1019, "steps": cfg["steps"]},
                         "history": {"train": [], "test": []}, "seed": 0,
                         "dataset_source": {"kind": "torchvision"}}, out_dir)


def test_one_training_shown_by_three_tables_is_counted_once(tmp_path):
    import torch

    _finished(recipes.config("a_table2_activations", "original-110", "full"), tmp_path)
    going = recipes.config("a_table2_activations", "full_preact-110", "full")
    torch.save({"step": 38466, "config": going, "history": {"train": [], "test": []}},
               tmp_path / f"{results.run_name(going)}.pt")
    df = full_recipe.full_scale_table(full_recipe.PAPER_A, out_dir=tmp_path,
                                      checkpoint_dir=tmp_path)
    rows = df["state"].map(lambda s: s.split(" ")[0]).value_counts().to_dict()
    assert rows["finished"] == 3 and rows["under"] == 2  # the rows: Tables 1, 2, 3 and 2, 3
    counts = full_recipe.state_counts(df)
    assert counts["finished"] == 1 and counts["under way"] == 1
    assert sum(counts.values()) == df["training"].nunique() < len(df)
    words = full_recipe.counts_in_words(df)
    assert words.startswith(f"{df['training'].nunique()} distinct trainings in {len(df)} rows")
    assert ("1 finished (one training, shown as Table 1 (the identity shortcut), Table 2 (the "
            "original unit), Table 3 (the original ResNet-110))") in words
    assert "1 under way (one training, shown as Table 2 (full pre-activation), Table 3 " \
           "(pre-activation ResNet-110))" in words
    page = full_recipe.paper_a_words(df, out_dir=tmp_path)
    assert "3 finished" not in page and "2 under way" not in page and "1 finished" in page


def test_the_training_id_is_the_training_hash():
    df = full_recipe.full_scale_status("a_table1_shortcuts", ["original"])
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    assert df.loc["the identity shortcut", "training"] == results.training_hash(cfg)[:12]


def _tiny():
    from idmap_lib.engine.schedule import step_schedule

    cfg = recipes.config("b_wrn", "gated", "cpu")
    cfg["model"] = {"builder": "wide_resnet",
                    "kwargs": {"depth": 10, "widen": 1, "dropout": 0.0, "gated": True,
                               "num_classes": 10}}
    cfg.update(steps=9, batch_size=16, log_every=3, eval_every=9,
               subset={"train_per_class": 8, "test_per_class": 4},
               schedule=step_schedule(9, 0.1, 5, fractions=[0.5]),
               divergence={"grace_fraction": 1.0, "chance_margin": 0.01})
    return cfg


def test_a_resumed_run_records_every_segment_in_its_checkpoints_and_its_result(cifar, tmp_path):
    import torch

    from idmap_lib.engine.trainer import train

    cfg, kw = _tiny(), dict(data=cifar, progress=False, checkpoint_every=3, out_dir=tmp_path / "r")
    ck_dir = tmp_path / "ck"
    train(cfg, checkpoint_dir=ck_dir, max_steps=3, **kw)           # segment 1: steps 0-3
    (path,) = ck_dir.glob("*.pt")
    first = torch.load(path, weights_only=True)["segments"]
    assert [s["steps"] for s in first] == [[0, 3]]
    assert first[0]["library_sha256"] == results.library_sha256() and first[0]["commit"]
    train(cfg, checkpoint_dir=ck_dir, max_steps=6, resume=True, **kw)  # segment 2: 3-6
    assert [s["steps"] for s in torch.load(path, weights_only=True)["segments"]] == [[0, 3],
                                                                                    [3, 6]]
    r = train(cfg, checkpoint_dir=ck_dir, resume=True, **kw)         # segment 3: 6-9, the end
    assert r["status"] == "ok"
    assert [s["steps"] for s in r["segments"]] == [[0, 3], [3, 6], [6, 9]]
    for s in r["segments"]:
        assert {"commit", "library_sha256", "hardware", "started", "ended"} <= set(s)
    saved = json.loads(Path(r["path"]).read_text())
    assert saved["segments"] == r["segments"]
    # a straight run: one segment
    straight = train(cfg, checkpoint_dir=tmp_path / "ck2", **{**kw, "out_dir": tmp_path / "s"})
    assert [s["steps"] for s in straight["segments"]] == [[0, 9]]


def test_a_checkpoint_written_before_segments_gets_one_segment_marked_not_recorded():
    before = results.segments_before({"step": 29000, "device_type": "cuda",
                                      "precision": "bfloat16"})
    assert [s["steps"] for s in before] == [[0, 29000]] and before[0]["commit"] is None
    assert "not recorded" in before[0]["note"]
    assert results.segments_before({"step": 0}) == []


def test_the_finished_full_recipe_run_lists_its_three_segments_across_the_library_move():
    """Table 2's original-110, seed 0: 0-18,000 and 18,000-29,000 on 2026-11-30 (the library as at
    f86b735, before idmap_lib/engine/ existed), 29,000-64,000 on 2026-12-04 (fe96bf7): the first two
    recovered after the fact, each segment's commit and library hash named."""
    (p,) = (ROOT / "data" / "results").glob("a_table2_activations__original-110__full__s0__*.json")
    r = json.loads(p.read_text())
    segs = r["segments"]
    assert [s["steps"] for s in segs] == [[0, 18000], [18000, 29000], [29000, 64000]]
    assert all(s["commit"] and s["library_sha256"] and s["hardware"] for s in segs)
    assert segs[-1]["commit"] == r["git"]["commit"]
    assert segs[-1]["library_sha256"] == r["library_sha256"]
    assert segs[0]["library_sha256"] != segs[-1]["library_sha256"]  # across the library move
    assert [bool(s.get("recovered")) for s in segs] == [True, True, True]
    assert all("recovered after the fact" in s["recovered"] for s in segs)
    # the config (and so its hashes) untouched
    cfg = recipes.config("a_table2_activations", "original-110", "full", 0)
    assert r["config_hash"] == results.config_hash(cfg)
