"""The CPU sweep: every run the claims need, in order, each training once; what is left and what it
costs."""
import pytest

from fake_runs import history, result, save
from idmap_book.evidence import claims, judge, rule
from idmap_book.plan import cpu_scale, sweep
from idmap_book.evidence.claims import CLAIMS
from idmap_lib.engine import recipes, results


def test_the_sweep_order_covers_every_cpu_claim_and_trains_each_training_once():
    runs = sweep.runs_needed()
    assert len(runs) == len(set(runs)) and {s for _, _, s, _ in runs} >= set(rule.SEEDS)
    # the scale's probe first
    assert runs[:3] == [(*cpu_scale.PROBE, s, "cpu") for s in rule.SEEDS]
    # the CPU sweep trains every claim at a CPU scale; Paper B's MNIST claims rest on the
    # full-recipe grid
    assert sorted(sweep.SWEEP_ORDER) == sorted(c.key for c in CLAIMS if c.scale != "full")
    assert all(e != "b_mnist" and scale in recipes.CPU_SCALES for e, _, _, scale in runs)
    # one training once: Table 1's original is Table 2's original-110 (and Table 3's ResNet-110) at
    # the same scale
    hashes = [results.training_hash(recipes.config(e, v, sc, s)) for e, v, s, sc in runs]
    assert len(hashes) == len(set(hashes))
    assert ("a_table1_shortcuts", "original", 0, "cpu") not in runs


def test_sweep_lists_the_missing_runs_in_order_and_skips_the_recorded(tmp_path, capsys):
    from idmap_lib.cli import main
    todo = sweep.runs_needed(out_dir=tmp_path)
    main(["sweep", "--missing", "--out", str(tmp_path)])
    assert [tuple(l.split()) for l in capsys.readouterr().out.splitlines()] == \
        [(e, v, str(s), sc) for e, v, s, sc in todo]
    e, v, s, sc = todo[0]
    results.save_result(result(e, v, s, scale=sc), tmp_path)
    main(["sweep", "--next", "--out", str(tmp_path)])
    assert capsys.readouterr().out.split() == [todo[1][0], todo[1][1], str(todo[1][2]), todo[1][3]]


def test_pace_prices_missing_runs_by_the_recorded_runs_of_the_same_network():
    done = []
    for variant, wall, threads in (("original-110", 600.0, 1), ("full_preact-110", 400.0, 2),
                                   ("bn_after_add-110",
                                   1300.0, 1)):
        r = result("a_table2_activations", variant, 0)
        r["final"]["wall_s"], r["hardware"] = wall, {"torch_threads": threads}
        done.append(r)
    # ResNet-110 too: 800 core-s
    todo = [recipes.config("a_table1_shortcuts", "conv1x1", "cpu", 1),
            recipes.config("a_table2_activations", "original-110", "cpu", 2),
            recipes.config("a_table2_activations", "original-164", "cpu", 2)]  # not timed yet
    hours, untimed = results.pace(todo, done)
    # the median of 600, 800 and 1300 core-s
    assert hours == pytest.approx(2 * 800 / 3600) and untimed == 1
    assert [results.core_seconds(r) for r in done] == [600.0, 800.0, 1300.0]
    # no wall time recorded
    assert results.core_seconds(result("a_table2_activations", "original-110", 1)) is None


def test_sweep_says_what_the_recorded_runs_cost_and_what_is_left(tmp_path, capsys):
    from idmap_lib.cli import main
    (e, v, s, _), (e2, v2, s2, _) = sweep.runs_needed(out_dir=tmp_path)[:2]
    for exp, var, seed, wall in ((e, v, s, 900.0), (e2, v2, s2, 1800.0)):
        r = result(exp, var, seed)
        r["final"]["wall_s"], r["hardware"] = wall, {"torch_threads": 2}
        results.save_result(r, tmp_path)
    main(["sweep", "--out", str(tmp_path)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert (last.startswith(f"2 of {len(sweep.runs_needed(out_dir=tmp_path))} runs recorded (1.5 "
                            f"CPU core-hours: "))
    done = {"found": {("e", "v", 0): {}}, "spent_h": 0.3, "left_h": 0.0, "untimed": 0}
    assert (sweep.sweep_in_words(done) == "1 of 1 runs recorded (0.3 CPU core-hours: training wall "
                                          "time x threads)")
    assert sweep.sweep_in_words({**done, "spent_h": 1.0, "today_h": 0.6}) == (
        "1 of 1 runs recorded (1.0 CPU core-hours: training wall time x threads; 0.6 of them "
        "trained at today's CPU scale, the rest recorded before it and read again: the step "
        "warm-up's runs, and trainings the change left as they were)")


def _starts(tmp_path, variant, steps, seeds=None):
    """Recorded CPU runs of `variant` whose training error first falls below 80 % at `steps`
    (steps_to_80)."""
    for seed, at in zip(seeds or range(len(steps)), steps):
        r = result("a_table2_activations", variant, seed)
        r["history"]["train"] = history([2.0] * 40,
                                        [0.9] * (at // 10 - 1) + [0.7] * (41 - at // 10))
        results.save_result(r, tmp_path)


def test_more_seeds_are_asked_for_only_where_three_leave_a_comparison_open(tmp_path):
    # early optimisation: a verdict at the CPU scale
    c = claims.CLAIMS_BY_KEY["fig6_bn_after_add_slow_start"]
    key = [("a_table2_activations", v, s, "cpu") for s in rule.MORE_SEEDS for v in ("original-110",
                                                                                    "bn_after_add-110")]
    # not run yet: 3 seeds first
    assert not set(key) & set(sweep.runs_needed([c], out_dir=tmp_path))
    # by ranks (a censored metric) 3 a side never decide
    _starts(tmp_path, "original-110", (50, 60, 190))
    _starts(tmp_path, "bn_after_add-110", (200, 210, 220))
    assert judge.evaluate(c, out_dir=tmp_path).verdict == "inconclusive"
    assert set(key) <= set(sweep.runs_needed([c], out_dir=tmp_path))
    # seeds given: those
    assert not set(key) & set(sweep.runs_needed([c], seeds=(0, 1, 2), out_dir=tmp_path))
    # the two more seeds agree with the three: they are read with them
    _starts(tmp_path, "original-110", (50, 60), rule.MORE_SEEDS)
    _starts(tmp_path, "bn_after_add-110", (200, 210), rule.MORE_SEEDS)
    v = judge.evaluate(c, out_dir=tmp_path)
    assert v.parts[0][1]["n"] == (5, 5) and v.verdict == "reproduced"
    # a claim its 3 seeds decide asks for no more
    other = tmp_path / "clear"
    t2 = claims.CLAIMS_BY_KEY["lr_jump_preact_tolerates"]
    assert (t2.seeds == rule.ALL_SEEDS and not [r for r in sweep.runs_needed([t2], out_dir=other)
                                                if r[2] > 4])


def test_no_more_seeds_for_a_claim_a_cpu_scale_cannot_test(tmp_path):
    """A final-error claim at the CPU scale needs the full recipe whatever its seeds show: more
    seeds would not give it a verdict, so none are asked for."""
    c = claims.CLAIMS_BY_KEY["t1_gating_bias"]
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b-6", [0.828, 0.850, 0.721])
    save(tmp_path, "a_table1_shortcuts", "exclusive_gating-b0", [0.888, 0.886, 0.898])
    assert judge.evaluate(c, out_dir=tmp_path).verdict == rule.NEEDS_FULL
    assert {s for _, _, s, _ in sweep.runs_needed([c], out_dir=tmp_path)} == set(rule.SEEDS)
