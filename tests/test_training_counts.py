"""Issue 57.8: the book counts trainings, not table rows (one run shown by Tables 1, 2 and 3 is one
run), and a full-recipe run trained in segments records every segment's commit and library hash."""
import json
from pathlib import Path

from idmap_lib.book.figures import full_recipe
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
    assert ("1 finished (one training, shown as Table 1 original, Table 2 original-110, Table 3 "
            "c10-110-original)") in words
    assert "1 under way (one training, shown as Table 2 full_preact-110, Table 3 " \
           "c10-110-full_preact)" in words
    page = full_recipe.paper_a_words(df, out_dir=tmp_path)
    assert "3 finished" not in page and "2 under way" not in page and "1 finished" in page


def test_the_training_id_is_the_training_hash():
    df = full_recipe.full_scale_status("a_table1_shortcuts", ["original"])
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    assert df.loc["original", "training"] == results.training_hash(cfg)[:12]
