"""Issue 30.2-30.4 on the notebooks' JSON (fast, no build): every experimental chapter (7-10) opens,
before its first "##" section, with its title and question, an answer cell (``say(f"...")``, tagged
remove-input: computed, never typed) and exactly one figure; its claims read in words first
(claim_words), the full table folded; the statistics rule is said once, in chapter 11, and linked
from each chapter; one folded "Run these yourself" cell per chapter. And claim_words' sentences say
what the runs show, at a CPU scale as data that needs the full recipe."""
import copy
import json
from pathlib import Path

import pytest

from fake_runs import save
from idmap_book.evidence import claim_words, claims, rule

BOOK = Path(__file__).resolve().parents[1] / "book"
# the chapters that test a paper's claims (the interventions' chapter opens otherwise)
CHAPTERS = [ch for ch, kind in claims.chapters().items() if kind == "paper"]


def load(chapter):
    return json.loads((BOOK / f"{chapter}.ipynb").read_text())


def src(cell) -> str:
    return "".join(cell["source"])


def tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


def opening(cells) -> list:
    """The cells before the first '## ' section heading."""
    out = []
    for c in cells:
        if c["cell_type"] == "markdown" and any(ln.startswith("## ") for ln in src(c).splitlines()):
            break
        out.append(c)
    return out


def computed_say(cell) -> bool:
    """A code cell that says computed words: say(f"...") or say(<a library function>(...))."""
    import re
    return cell["cell_type"] == "code" and bool(re.search(r"\bsay\((f[\"']|[A-Za-z_][\w.]*\()",
                                                           src(cell)))


def opening_problems(nb) -> list[str]:
    """What the chapter's opening lacks: a title with its question, an answer cell computed by
    say(f"...") or say(a library function) and tagged remove-input, exactly one figure (a
    ``.show()`` call), the answer before the figure."""
    cells = opening(nb["cells"])
    problems = []
    if not cells or not src(cells[0]).startswith("# ") or "?" not in src(cells[0]):
        problems.append("no title cell with the chapter's question")
    answers = [i for i, c in enumerate(cells) if computed_say(c) and "remove-input" in tags(c)]
    figures = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
               for _ in range(src(c).count(".show()"))]
    if not answers:
        problems.append("no answer cell: computed words said in a cell tagged remove-input")
    if len(figures) != 1:
        problems.append(f"{len(figures)} figure calls before the first section, not exactly one")
    if answers and figures and answers[0] > figures[0]:
        problems.append("the figure comes before the answer")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_experimental_chapter_opens_with_its_answer_and_one_figure(chapter):
    assert opening_problems(load(chapter)) == []


def test_an_opening_without_its_answer_or_with_two_figures_is_caught():
    nb = load("08_activations")
    no_answer = copy.deepcopy(nb)
    first = opening(no_answer["cells"])  # the opening's answer (and its figure's caption) removed
    no_answer["cells"] = [c for c in no_answer["cells"] if not (computed_say(c) and c in first)]
    assert any("no answer cell" in p for p in opening_problems(no_answer))
    typed = copy.deepcopy(nb)  # the answer typed in markdown instead of computed
    first = opening(typed["cells"])
    for c in first:
        if computed_say(c):
            c["cell_type"], c["source"] = ("markdown",
                                           "Full pre-activation's loss rises by 0.022 at the jump.")
    assert any("no answer cell" in p for p in opening_problems(typed))
    two = copy.deepcopy(nb)
    fig = next(c for c in opening(two["cells"]) if ".show()" in src(c))
    two["cells"].insert(two["cells"].index(fig), copy.deepcopy(fig))
    assert any("2 figure calls" in p for p in opening_problems(two))
    none = copy.deepcopy(nb)  # the figure moved below the first section
    none["cells"] = [c for c in none["cells"] if c is not next(x for x in opening(none["cells"])
                                                               if ".show()" in src(x))]
    assert any("0 figure calls" in p for p in opening_problems(none))
    no_question = copy.deepcopy(nb)
    no_question["cells"][0]["source"] = ("# Where the activation goes, tested\n\nThis chapter "
                                         "tests Table 2.")
    assert any("question" in p for p in opening_problems(no_question))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_claims_in_words_first_the_rule_linked_and_one_run_yourself_block(chapter):
    cells = load(chapter)["cells"]
    assert not any("rule.RULE" in src(c)
                   for c in cells), "the rule is said once, in chapter 11: link it"
    assert any("<statistics-rule>" in src(c) for c in cells if c["cell_type"] == "markdown")
    # the claims: one block call (in words first, the full table folded: tests/test_blocks.py), no
    # piece alone
    assert any("blocks.claims(" in src(c) for c in cells)
    assert not any(p in src(c) for c in cells for p in ("verdicts.claims_table(", "cw.readable_table(",
                                                        "forest.forest("))
    live = [c for c in cells if "yourself.cell(" in src(c)]
    assert len(live) == 1 and "hide-cell" in tags(live[0])
    assert not any(h in src(c) for c in cells for h in ("## Training these runs yourself",
                                                        "## Train it yourself, live"))


def test_chapter_11_states_the_rule_once_under_its_label():
    cells = load("11_reproductions")["cells"]
    assert sum("rule.RULE" in src(c) for c in cells) == 1
    label = next(i for i, c in enumerate(cells) if "(statistics-rule)=" in src(c))
    assert "rule.RULE" in src(cells[label + 1])


def test_every_claim_has_a_readable_title():
    titles = {k: c.title for k, c in claims.CLAIMS_BY_KEY.items()}
    assert all(titles.values()) and len(set(titles.values())) == len(titles)
    assert all(claim_words.key_of(t) == k for k, t in titles.items())
    # words, not keys
    assert not any(k in t for k in claims.CLAIMS_BY_KEY for t in titles.values())


def test_a_short_run_says_what_it_shows_as_data_and_that_the_final_error_needs_the_full_recipe(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.60, 0.61, 0.62])
    s = claim_words.sentence("t1_gating_bias", out_dir=tmp_path)
    assert s.startswith("After 400 steps, test error: exclusive gating at b_g = −6 41.0 %, "
                        "exclusive gating at b_g = 0 61.0 "
                        "%") and s.endswith(claim_words.VERDICT_WORDS[rule.NEEDS_FULL]
                                                         + ".")
    # no d, no interval, no identifier
    assert "d =" not in s and "[" not in s and "t1_gating_bias" not in s
    t = claim_words.tally("t1_gating_bias", out_dir=tmp_path)
    assert t["worse"] == ["exclusive gating at b_g = 0"] and t["worse_range"] == "20.0 points"
    row = claim_words.readable_table(["t1_gating_bias"],
                               out_dir=tmp_path).loc[claims.CLAIMS_BY_KEY["t1_gating_bias"].title]
    assert row["verdict"] == rule.NEEDS_FULL and row["what the runs show"] == s


def test_runs_at_chance_count_on_either_side_and_a_run_stuck_before_the_jump_is_said_and_left_out(tmp_path):
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.40, 0.41, 0.42])
    # at chance
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.9] * 3,
         losses=(2.3, 2.3, 2.3, 2.3))
    s = claim_words.sentence("t1_gating_bias", out_dir=tmp_path)
    assert "left out" not in s and "exclusive gating at b_g = 0 90.0 %" in s
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.9] * 3,
         losses=(2.3, 2.3, 2.3, 2.3))
    s = claim_words.sentence("t1_gating_bias", out_dir=tmp_path)  # either side: counted as measured
    assert "left out" not in s and "exclusive gating at b_g = −6 90.0 %" in s
    c = claims.CLAIMS_BY_KEY["swap_jump_bn_after_add"]
    stuck = tmp_path / "stuck"
    # BN after addition at chance through the warm-up: no rise to read, left out
    for v in c.variants:
        save(stuck, "a_swaps", v, [0.5] * 5, losses=(2.3,) * 40 if v == "bn_after_add-110" else
             (2.3,) + (1.5,) * 39, scale="cpu_step_warmup")
    s = claim_words.sentence(c.key, out_dir=stuck)
    assert "BN after addition was stuck at chance before the jump in 5 of 5 seeds" in s


def test_a_chapters_title_is_plain_text_and_a_figure_number_is_never_e_notation():
    """Issue 42.6: a browser tab shows a title's TeX raw (chapter 4's read 'Why \\(f =
    \\mathrm{ReLU}\\) hurts'); a slider's title read '2.1e+04' where every other step reads
    x10^n."""
    import nbformat
    from idmap_book.figures import slider_figures

    for nb_path in sorted(Path(__file__).resolve().parents[1].glob("book/[0-9]*.ipynb")):
        first = next(c for c in nbformat.read(nb_path, as_version=4).cells
                     if c.cell_type == "markdown")
        title = first.source.splitlines()[0]
        assert (title.startswith("# ")
                and not any(ch in title for ch in "$\\")), (nb_path.name, title)
    for v in (20959.0, 1.01 ** 1000, 0.5, 693.2, 1e-7, -4.2e6):
        assert "e+" not in slider_figures.number(v) and "e-" not in slider_figures.number(v)
    assert slider_figures.number(20959.0) == "21,000" and slider_figures.number(693.2) == "693"


def test_the_lr_jump_is_said_in_nats_with_each_verdict_and_the_units_stuck_before_it(tmp_path):
    """Chapter 8's opening: the claim compares log rises, the reader reads medians in nats; a unit
    whose every run was at chance when the lr jumped is said so, never given a rise."""
    c = claims.CLAIMS_BY_KEY["lr_jump_preact_tolerates"]
    for v in c.variants:
        stuck = v == "relu_before_add-110"
        save(tmp_path, "a_table2_activations", v, [0.5] * 5, scale="cpu_step_warmup",
             losses=(2.4,) * 40 if stuck else (2.0,) * 10
             + ((2.0,) if v == "full_preact-110" else (4.0,)) * 30)
    s = claim_words.jump_in_words(out_dir=tmp_path)
    assert (s.startswith("full pre-activation's training loss rises by a median of 0.00 nats (5 "
                         "seeds)"))
    assert "the original unit's by 2.00 (*reproduced*)" in s
    assert "ReLU before addition was still at chance when the lr jumped in 5 of 5 seeds" in s


def test_the_books_own_hypotheses_are_supported_never_reproduced(tmp_path):
    """Issue 42.6: chapter 10 said 'reproduced' for the book's own Keras hypotheses."""
    from fake_runs import mnist_run
    from idmap_lib.engine import results
    from idmap_book.evidence import tables

    for seed in range(3):
        results.save_result(mnist_run("gresnet_keras-d10", seed, test_err=0.010 + seed / 1000),
                            tmp_path)
        results.save_result(mnist_run("gresnet-d10", seed, test_err=0.020 + seed / 1000), tmp_path)
    row = claim_words.readable_table(["probe_keras_err_d10"], out_dir=tmp_path).iloc[0]
    assert row["verdict"] == "supported" and "(supported)" in row["what the runs show"]
    assert "reproduced" not in row["what the runs show"]
    assert tables.VERDICT_COLOURS["supported"] == tables.VERDICT_COLOURS["reproduced"]


def test_paper_b_opening_says_each_mnist_verdict_and_table_3s_at_the_cpu_scale(monkeypatch):
    told = {"plain": dict(verdict="reproduced", a_span="1.9-2.0 %", b_span="85.0-90.0 %"),
            "gres": dict(verdict="inconclusive", a="2.1 %", b="2.4 %"),
            "k": dict(verdict="reproduced"), "greedy": dict(verdict="contradicted"),
            "half": dict(verdict="reproduced", a="3.0 %", b="40.0 %"),
            "c1": dict(verdict="needs the full recipe"), "c2": dict(verdict="inconclusive")}
    monkeypatch.setattr(claim_words, "tally", lambda key, out_dir=None: told[key])
    text = claim_words.paper_b_opening(["plain", "gres", "k", "greedy", "half"], ["c1", "c2", "c1"])
    assert text.startswith("**At Paper B's own MNIST recipe, depth breaks plain networks and not "
                           "residual ones, gated or not.**")
    assert "end at 85.0-90.0 % test error, residual ones at 1.9-2.0 % (*reproduced*)" in text
    assert "2.1 % against 2.4 %, is *inconclusive*" in text
    assert "(3.0 % against 40.0 %, the figure) it is *reproduced*" in text
    assert "falls with depth (*reproduced*)" in text and "at random (*contradicted*)" in text
    assert text.endswith("*inconclusive and needs the full recipe*.")
    told["plain"] = {**told["plain"], "verdict": "inconclusive"}
    assert "that depth breaks plain networks and not residual ones is *inconclusive*" in \
        claim_words.paper_b_opening(["plain", "gres", "k", "greedy", "half"], ["c1"])


def test_every_metric_a_claim_tests_is_said_in_words():
    """A claim's sentence names its metric in words, never by its key (lr_jump_log_rise)."""
    used = {m for c in claims.CLAIMS + list(claims.PROBES) for t in c.tests
            for m in (t.metric, t.metric_b) if m}
    assert used <= set(claim_words.METRIC_SHORT), sorted(used - set(claim_words.METRIC_SHORT))
    text = claim_words.sentence("swap_jump_original_final_bn_relu")
    assert "lr_jump_log_rise" not in text and "log10 (0.1 + loss rise at the jump)" in text
