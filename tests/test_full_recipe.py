"""The full recipe on the page: runs finished, under way (committed checkpoints) or not run, and
their curves."""
from idmap_book.figures import full_recipe
from idmap_book.evidence import tables
from idmap_book.evidence.variants import words
from idmap_lib.engine import recipes, results


def test_full_scale_status_shows_runs_under_way_and_the_command(tmp_path):
    import torch
    cfg = recipes.config("a_table2_activations", "full_preact-110", "full")
    torch.save({"step": 29000, "history": {"test": [{"step": 28000, "test_err": 0.162}]}},
               tmp_path / f"{results.run_name(cfg)}.pt")
    df = full_recipe.full_scale_status("a_table2_activations",
                                       ["full_preact-110", "full_preact-164"],
                                    out_dir=tmp_path, checkpoint_dir=tmp_path)
    assert df.loc[words("a_table2_activations", "full_preact-110"),
                  "state"].startswith("under way: step 29,000 of 64,000 (test error 16.2 %")
    w110, w164 = (words("a_table2_activations", v) for v in ("full_preact-110", "full_preact-164"))
    assert df.loc[w164, "state"] == ("not run: python -m idmap_lib train --experiment "
                                     "a_table2_activations --variant full_preact-164 "
                                     "--scale full --cuda-graph")
    assert df.loc[w164, "one run takes"] == "GPU: not measured yet"
    # text, like "fail": one column, one format
    assert df.loc[w164, "paper: error %"] == "5.46"
    # data/gpu/*-h200/modes.json
    assert df.loc[w110, "one run takes"].startswith("H200 ")
    # the stars explained, once
    assert "* derived, not measured: a T4's time" in tables.styled(df).to_html()
    # the same training named by another table (Table 1's original is Table 2's original-110) finds
    # it too
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    torch.save({"step": 29000, "config": cfg, "history": {"test": [{"step": 28000,
                                                                    "test_err": 0.149}]}},
               tmp_path / f"{results.run_name(cfg)}.pt")
    t1 = full_recipe.full_scale_status("a_table1_shortcuts", ["original", "conv1x1"],
                                       out_dir=tmp_path,
                                    checkpoint_dir=tmp_path)
    assert t1.loc["the identity shortcut",
                  "state"].startswith("under way: step 29,000 of 64,000 (test error 14.9 %")
    assert t1.loc["the 1×1-convolution shortcut", "state"].startswith("not run")


def test_full_recipe_curves_show_runs_under_way_over_the_whole_recipe_beside_the_papers_number(tmp_path):
    import torch
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    hist = {"train": [{"step": s, "train_loss": 2.0 / s ** 0.1} for s in (100, 200)],
            "test": [{"step": 2000, "test_err": 0.3}, {"step": 4000, "test_err": 0.2}]}
    torch.save({"step": 4000, "config": cfg, "history": hist},
               tmp_path / f"{results.run_name(cfg)}.pt")
    fig = full_recipe.full_recipe_curves("a_table1_shortcuts", ["original", "conv1x1"],
                                         out_dir=tmp_path,
                                      checkpoint_dir=tmp_path)
    ours = [d for d in fig.data if "under way" in (d.name or "")]
    assert [list(d.y) for d in ours] == [[2.0 / 100 ** 0.1, 2.0 / 200 ** 0.1], [30.0, 20.0]]
    assert ours[0].name == "the identity shortcut (under way, step 4,000 of 64,000)"  # in words
    paper = {d.name: list(d.y) for d in fig.data if (d.line.dash or "") == "dot"}
    assert paper == {"the identity shortcut (paper 6.61 %)": [6.61, 6.61],
                     "the 1×1-convolution shortcut (paper 12.22 %)": [12.22, 12.22]}
    assert ("not run yet: the <br>1×1-convolution shortcut" in fig.layout.title.text
            and tuple(fig.layout.xaxis.range) == (0, 64000))
    assert sorted(s.x0 for s in fig.layout.shapes
                  if s.type == "line") == [400, 400, 32000, 32000, 48000, 48000]


def test_one_table_of_every_cifar10_full_recipe_run_and_its_states_counted(tmp_path):
    import torch
    cfg = recipes.config("a_table2_activations", "original-110", "full")
    torch.save({"step": 29000, "config": cfg, "history": {"test": [{"step": 28000,
                                                                    "test_err": 0.149}]}},
               tmp_path / f"{results.run_name(cfg)}.pt")
    df = full_recipe.full_scale_table(("a_table1_shortcuts", "a_table3_preact"), out_dir=tmp_path,
                                      checkpoint_dir=tmp_path)
    assert (list(df["table"].unique()) == ["Paper A Table 1", "Paper A Table 3"]
            and df.columns[0] == "table")
    # no CIFAR-100 copy offline; variants in words, never their keys
    keys = {v for e in full_recipe.PAPER_A for v in recipes.EXPERIMENTS[e]["variants"]}
    assert not [v for v in df.index if "CIFAR-100" in v or v in keys]
    assert len(df) == 11 + 8
    # Table 1's original and Table 3's ResNet-110 are Table 2's original-110: one training, one
    # checkpoint, counted once (issue 57.8)
    counts = full_recipe.state_counts(df)
    assert counts == {"not run": 17, "under way": 1} and list(counts) == ["not run", "under way"]


def test_the_words_give_each_run_where_it_stands_no_verdict_from_one_seed_and_the_lossy_copy(tmp_path):
    """Finished: its error beside the paper's, and (trained on the JPEG copy) that the two are not
    comparable; under way: its step; never a verdict from one seed."""
    import torch
    done = recipes.config("a_table2_activations", "original-110", "full")
    hist = {"train": [], "test": [{"step": 64000, "test_err": 0.1019}]}
    results.save_result({"config": done, "config_hash": results.config_hash(done), "status": "ok",
                         "final": {"test_err": 0.1019, "steps": 64000}, "history": hist, "seed": 0,
                         "dataset_source": {"kind": "local", "path": "/x/cifar10-jpeg.tar.gz"}},
                         tmp_path)
    going = recipes.config("a_table2_activations", "full_preact-110", "full")
    torch.save({"step": 38466, "config": going, "history": hist},
               tmp_path / f"{results.run_name(going)}.pt")
    words = full_recipe.full_recipe_words("a_table2_activations",
                                          ["original-110", "full_preact-110"],
                                          out_dir=tmp_path, checkpoint_dir=tmp_path)
    assert words.startswith("Seed 0: ResNet-110 (basic) finished with 10.19 % test error (the "
                            "paper: 6.61 %); ResNet-110 (basic, full pre-activation) is under way "
                            "(step 38,466 of 64,000).")
    assert "needs 3 seeds of each unit" in words and "JPEG re-encoding" in words
    assert "JPEG" in full_recipe.full_scale_status("a_table2_activations", ["original-110"],
                                                   out_dir=tmp_path,
                                                   checkpoint_dir=tmp_path).attrs["caption"]
    # the same run on torchvision's download: no such note
    (p,) = tmp_path.glob("a_table2*.json")
    import json
    r = json.loads(p.read_text()); r["dataset_source"] = {"kind": "torchvision"}; p.write_text(json.dumps(r))
    assert "JPEG" not in full_recipe.full_recipe_words("a_table2_activations", ["original-110"],
                                                       out_dir=tmp_path,
                                                       checkpoint_dir=tmp_path)
    assert full_recipe.full_recipe_words("a_table2_activations", ["full_preact-164"],
                                         out_dir=tmp_path,
                                         checkpoint_dir=tmp_path) == "No full-recipe run of this page has started yet."
