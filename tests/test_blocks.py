"""The blocks chapters 7-10 repeat (idmap_book.figures.blocks): one call shows the claims in
words, then in full under a fold, the forest and the notes, in that order; the full recipe's words
and curves from one reading of its runs."""
import pytest

from idmap_book.evidence.claims import CLAIMS_BY_KEY
from idmap_book.figures import blocks

KEYS = ["t1_identity_best", "t1_fail_rows_far_behind"]


@pytest.fixture
def shown(monkeypatch):
    out = []
    monkeypatch.setattr(blocks, "display", lambda x: out.append(x))
    import plotly.graph_objects as go

    monkeypatch.setattr(go.Figure, "show", lambda fig, *a, **k: out.append(fig))
    return out


def test_the_claims_block_shows_words_then_the_folded_table_then_the_forest_and_notes(shown):
    assert blocks.claims(KEYS, ["a_table1_shortcuts"], forest="Table 1's claims",
                         contradictions=True) is None
    kinds = [type(x).__name__ for x in shown]
    assert kinds == ["Styler", "HTML", "Figure", "Markdown", "Markdown"], kinds
    words, folded = shown[0].data, shown[1].data
    assert "present rule" in folded  # when each claim took its rule (history), in the fold
    assert len(words) == len(KEYS)  # one row a claim
    assert (folded.startswith('<details class="admonition hide above-output')
            and blocks.FOLD in folded)
    assert "<summary>" in folded and folded.endswith("</details>") and "<table" in folded
    # every claim's row, in full, by its title (never its key)
    assert all(CLAIMS_BY_KEY[k].title.replace("_", "_\u200b") in folded for k in KEYS)
    assert not any(k.replace("_", "_\u200b") in folded for k in KEYS)
    assert "Table 1's claims" in shown[2].layout.title.text
    shown.clear()
    blocks.claims(KEYS)  # no forest, no notes: the words and the fold only
    assert [type(x).__name__ for x in shown] == ["Styler", "HTML"]


def test_the_full_recipe_block_reads_its_runs_once(shown, monkeypatch):
    from idmap_book.figures import full_recipe

    reads, real = [], full_recipe.full_recipe_runs
    monkeypatch.setattr(full_recipe, "full_recipe_runs",
                        lambda *a, **k: reads.append(a) or real(*a, **k))
    blocks.full_recipe("a_table2_activations", ("original-110", "full_preact-110",
                                                "relu_preact-110"),
                       started_only=True)
    assert len(reads) == 1
    words, fig = shown
    assert "Seed 0" in words.data and "relu_preact-110" not in str([t.name for t in fig.data])


def test_open_claims_words_names_what_each_scale_leaves_open(monkeypatch):
    import pandas as pd

    from idmap_book.evidence import claims, rule, verdicts

    k1, k2, k3 = "b_plain_breaks_deep", "b_gresnet_beats_resnet", "b_gated_wrn_better"
    said = {k1: "reproduced", k2: "inconclusive", k3: rule.NEEDS_FULL}
    monkeypatch.setattr(verdicts, "claims_table", lambda keys, out_dir=None: pd.DataFrame(
        {"verdict": [said[k] for k in keys]}, index=keys))
    text = verdicts.open_claims_words({"full recipe": [k1, k2], "CPU scale": [k3]})
    assert (f"Not reproduced (yet) at the full recipe: **{claims.CLAIMS_BY_KEY[k2].title}** "
            f"(inconclusive)." in text)
    assert (f"No verdict at the CPU scale (*{rule.NEEDS_FULL}*): "
            f"**{claims.CLAIMS_BY_KEY[k3].title}**." in text)
    assert claims.CLAIMS_BY_KEY[k1].title not in text
    every = verdicts.open_claims_words({"full recipe": [k1]})
    assert every.startswith("At the full recipe, every claim it can test was reproduced.")


def test_the_run_yourself_cell_trains_only_when_asked(monkeypatch):
    from idmap_book.figures import live, yourself
    from idmap_book.plan import mnist_grid, sweep

    calls = []
    monkeypatch.setattr(yourself, "show", lambda *a, **k: calls.append(("show", a[0])))
    monkeypatch.setattr(sweep, "train_missing", lambda e, vs: calls.append(("train", e, vs)))
    monkeypatch.setattr(live, "train_live",
                        lambda e, v, **k: calls.append(("live", e, v, k["run"])) or "drawn")
    assert yourself.cell(["k"], "a_table1_shortcuts", "conv1x1") == "drawn"
    assert calls == [("show", ["k"]), ("live", "a_table1_shortcuts", "conv1x1", False)]
    calls.clear()
    yourself.cell(["k"], "b_resnet32", "gated", run=True, train=True,
                  missing={"b_mnist": None, "b_wrn": ["plain"]})
    assert calls[1:] == [("train", "b_mnist", None), ("train", "b_wrn", ["plain"]),
                         ("live", "b_resnet32", "gated", True)]


def test_training_what_is_missing_trains_paper_bs_mnist_nets_a_depth_at_a_time(monkeypatch):
    from idmap_book.plan import mnist_grid, sweep

    depths = []
    monkeypatch.setattr(mnist_grid, "train_depth",
                        lambda d, seeds, out_dir=None, kinds=(): depths.append((d, kinds)) or [])
    sweep.train_missing("b_mnist", ["gresnet-d100", "resnet-d100", "gresnet_keras-d10"])
    assert depths == [(100, ["gresnet", "resnet"]), (10, ["gresnet_keras"])]
    depths.clear()
    sweep.train_missing("b_mnist")  # the whole grid and the probe
    assert {d for d, _ in depths} == set(mnist_grid.DEPTHS) | set(mnist_grid.PROBE_DEPTHS)
