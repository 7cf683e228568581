"""The float32 check (book/evidence/precision.py): each float32 comparison beside the bf16 runs read
by the same rule, a verdict that differs named with what drove it, a difference of rules
named as the rule's, and no verdict read before a comparison has all its seeds."""
from idmap_book.evidence import precision


def _fp32(monkeypatch, verdicts):
    """Every float32 run recorded, and the float32 comparisons' verdicts `verdicts` (in order)."""
    from types import SimpleNamespace

    from idmap_book.evidence import claims, judge

    real, fp = judge.evaluate, list(claims.FP32_CLAIMS)
    it = iter(verdicts)

    def evaluate(c, scale=None, out_dir=None):
        e = real(c, scale, out_dir)
        if c not in fp:
            return e
        return SimpleNamespace(parts=[(t, {**r, "verdict": next(it)}) for t, r in e.parts])

    monkeypatch.setattr(precision, "evaluate", evaluate)
    monkeypatch.setattr(precision, "seed_runs",
                        lambda e, v, s, seeds, out_dir=None: ([{}] * len(seeds), []))
    return precision.precision_words()


def _row(words, comparison):
    """The precision table's row of `comparison`, its cells stripped, from the page's Markdown."""
    for line in words.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == comparison:
            return dict(zip(("comparison", "bf16", "float32", "note"), cells))
    raise AssertionError(f"no row {comparison!r} in {words}")


def test_the_float32_check_says_which_verdict_differs_from_the_bf16_runs_by_the_same_rule(
        monkeypatch):
    """Each float32 comparison is set beside the bf16 runs read by its own rule
    (``bf16_by_rule``), and a verdict that differs is named."""
    same_rule = [r["verdict"] for c in precision.FP32_CLAIMS
                 for _, r in precision.bf16_by_rule(c).parts]
    same = _fp32(monkeypatch, same_rule)
    assert "30 of 30 float32 runs recorded" in same
    assert "no verdict differs between the precisions" in same
    other = {"reproduced": "contradicted", "contradicted": "reproduced",
             "inconclusive": "reproduced"}
    flip = other.get(same_rule[0], "reproduced")
    moved = _fp32(monkeypatch, [flip] + same_rule[1:])
    row = _row(moved, "Full pre-activation vs the original unit")
    assert (row["float32"], row["bf16"]) == (f"*{flip}*", f"*{same_rule[0]}*")
    assert "differs between the precisions for full pre-activation vs the original unit (" in moved


def _copy_results(tmp_path):
    import shutil

    from idmap_lib.engine.results import RESULTS_DIR

    shutil.copytree(RESULTS_DIR, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _variant_runs(out_dir, variant, scale="cpu_step_warmup"):
    from idmap_book.evidence.runs import seed_runs
    from idmap_book.evidence.seeds import ALL_SEEDS

    return seed_runs("a_swaps", variant, scale, ALL_SEEDS, out_dir)[0]


def test_the_bf16_twin_and_the_same_rule_read_the_folder_they_are_given(tmp_path):
    """In a copy of the book's results, the bf16 runs are read by both rules and the one that
    differs (the pre-registered Welch on the log rise) is named as the rule's difference. Then full
    pre-activation without its final BN-ReLU's bf16 runs are planted as copies of full
    pre-activation's own: read from that folder (never the book's), the bf16 side loses its
    difference by both rules, so the float32 verdict (unchanged) differs from it: named as
    differing between the precisions; the twin is found by what trains."""
    import json
    from pathlib import Path

    from idmap_book.evidence.claims import CLAIMS_BY_KEY

    fp = CLAIMS_BY_KEY["fp32_lr_jump"]
    out = _copy_results(tmp_path)
    before = precision.precision_words(out)  # the book's runs: its own rule (Welch) differs
    name = "Full pre-activation vs full pre-activation without its final BN-ReLU"
    row = _row(before, name)
    assert (row["bf16"], row["float32"]) == ("*reproduced*", "*reproduced*")
    assert row["note"] == ("its bf16 claim's own rule (log10 (0.1 + loss rise at the jump), by "
                           "Welch's t): *inconclusive*, the rule's difference, not the "
                           "precision's")
    assert "differs between the precisions for full pre-activation vs full" not in before
    twin_claim, twin_test, _ = precision.bf16_twin(fp, fp.tests[2], out)
    assert (twin_claim.key, twin_test.a, twin_test.b) == (
        "swap_jump_full_preact_no_final", "full_preact-110", "full_preact+no_final-110")
    preact = {r["config"]["seed"]: r for r in _variant_runs(out, "full_preact-110")}
    for r in _variant_runs(out, "full_preact+no_final-110"):
        planted = {**r, **{k: preact[r["config"]["seed"]][k]
                           for k in ("status", "fail", "final", "history")}}
        planted.pop("path")
        Path(r["path"]).write_text(json.dumps(planted))
    twin = precision.bf16_twin(fp, fp.tests[2], out)[2]
    assert sorted(twin["xb"]) == sorted(twin["xa"]) and twin["verdict"] != "reproduced"
    assert precision.bf16_by_rule(fp, out).parts[2][1]["verdict"] != "reproduced"
    words = precision.precision_words(out)
    assert ("differs between the precisions for full pre-activation vs full pre-activation without "
            "its final BN-ReLU") in words
    assert "the rule's difference" not in _row(words, name)["note"]
    assert _row(precision.precision_words(), name) == row  # (the book's own folder untouched)


def test_the_float32_check_reads_no_verdict_before_a_comparison_has_all_its_seeds(monkeypatch):
    """A comparison with a seed missing on one side says how many are recorded, not a verdict."""
    monkeypatch.setattr(precision, "seed_runs",
                        lambda e, v, s, seeds, out_dir=None: ([{}] * (len(seeds) - ("1001" in v)),
                                                              []))
    words = precision.precision_words()
    n = len(precision.FP32_CLAIMS[0].seeds)
    row = _row(words, "Pre-activation ResNet-1001 vs the original ResNet-1001")
    assert row == {"comparison": row["comparison"], "bf16": "", "float32": "",
                   "note": f"{n - 1} and {n - 1} of {n} seeds recorded"}
    assert "of the 3 with all their seeds" in words


def test_the_float32_swaps_say_the_part_the_direction_the_verdict_and_the_diverged_runs(
        monkeypatch):
    """The float32 comparisons that swap one part (the classifier's BN-ReLU, added to the original,
    removed from full pre-activation) are said with their direction and verdict, and how many
    float32 runs without the part diverged; nothing is said before a comparison has all its
    seeds."""
    words = precision.swap_words()
    assert ("adding the normalised classifier input lowered the original unit's rise "
            "(*reproduced*)") in words
    assert ("removing it raised full pre-activation's rise (*reproduced*; 5 of 5 seeds "
            "diverged)") in words
    assert "ResNet-1001" not in words and words.count("diverged") == 1
    from types import SimpleNamespace

    real = precision.evaluate

    def one_missing(c, out_dir=None):  # seed 4 of every float32 variant not recorded yet
        e = real(c, out_dir=out_dir)
        return SimpleNamespace(parts=e.parts, missing=[(v, [4]) for v in c.variants])

    monkeypatch.setattr(precision, "evaluate", one_missing)
    assert precision.swap_words() == ""


def test_a_verdict_that_differs_between_the_precisions_says_what_drove_it_seed_by_seed():
    """Fig 1's pair: a censored comparison's steps, seed by seed, on both sides and in both
    precisions (a run that never got there said as 'never'), in the precision table's note and
    beside the claim in its chapter; a claim with no float32 twin gets nothing."""
    from idmap_book.evidence.rule import better

    t = better("a", "b", "steps_to_80")
    r = {"xa": [90.0, 70.0, 128.0, 128.0], "xb": [128.0] * 4, "censored": (1, 4)}
    assert precision.seeds_said(t, r) == (" (steps to 80 % train error: 70, 90, 128, never "
                                          "against never in all 4)")
    assert precision.seeds_said(better("a", "b", "lr_jump_ranked_rise"), r) == ""
    said = precision.beside("fig1_1001_original_slow_start")
    assert said.startswith("**In float32** (the precision check, 5 seeds a side, one rule for "
                           "both precisions): pre-activation ResNet-1001 vs the original "
                           "ResNet-1001: *")
    if "*reproduced* in float32, *reproduced* in bf16" not in said:
        assert said.count("(steps to 80 % train error: ") == 2
    assert precision.beside("t2_full_preact_best") == ""
    row = _row(precision.precision_words(), "Pre-activation ResNet-1001 vs the original ResNet-1001")
    if row["bf16"] != row["float32"]:
        assert row["note"].startswith("steps to 80 % train error, bf16: ")
        assert "; float32: " in row["note"] and row["note"].count(" against ") == 2


def test_the_float32_check_is_a_small_table_a_row_a_comparison():
    """The check is a table (comparison, bf16, float32, note), one row a float32 comparison, in the
    page's Markdown between one sentence on what it trains and one on what it found."""
    table = precision.precision_table()
    assert list(table.columns) == ["comparison", "bf16", "float32", "note"]
    assert len(table) == sum(len(c.tests) for c in precision.FP32_CLAIMS)
    words = precision.precision_words()
    head, _, rest = words.partition("\n\n| comparison")
    assert head.count(". ") <= 2 and rest.rstrip().endswith(".")
    assert [_row(words, c)["float32"] for c in table["comparison"]] == list(table["float32"])
