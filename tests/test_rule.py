"""The rule: Welch's t decides a comparison the same way for and against the paper."""
import math

import pytest

from idmap_lib.book import rule
from idmap_lib.book.rule import better, combine, compare, similar


def test_better_is_decided_by_welchs_t_both_ways():
    t = better("a", "b")
    assert compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])["verdict"] == "reproduced"
    assert compare(t, [0.50, 0.51, 0.52], [0.40, 0.41, 0.42])["verdict"] == "contradicted"
    assert compare(t, [0.40, 0.50, 0.45], [0.44, 0.48, 0.46])["verdict"] == "inconclusive"
    # the bar is Student's t at 97.5 % for the Welch-Satterthwaite df: equal spread, 3 + 3 seeds -> df 4, q 2.776
    xa = [0.40, 0.41, 0.42]
    se1 = math.sqrt(2 * 0.0001 / 3)
    r = compare(t, xa, [x + 2.5 * se1 for x in xa])
    assert r["verdict"] == "inconclusive"        # the old "2 se" rule called this reproduced
    assert r["df"] == pytest.approx(4) and r["q"] == pytest.approx(2.7764, abs=1e-4)
    assert r["lo"] == pytest.approx(r["d"] - r["q"] * r["se"])
    assert compare(t, xa, [x + 3.0 * se1 for x in xa])["verdict"] == "reproduced"
    assert compare(t, xa, [x - 3.0 * se1 for x in xa])["verdict"] == "contradicted"
    r = compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])
    assert r["mean_a"] == pytest.approx(0.41) and r["se"] == pytest.approx(math.sqrt(2 * 0.0001 / 3))
    # no spread on one side: df = n - 1 of the other (2), q = 4.303
    r = compare(t, [0.5, 0.5, 0.5], [0.40, 0.41, 0.42])
    assert r["df"] == pytest.approx(2) and r["q"] == pytest.approx(4.3027, abs=1e-4)
    # a margin moves the bar: "far behind" by more than 0.05
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.41, 0.42, 0.43])["verdict"] == "contradicted"
    assert compare(better("a", "b", margin=0.05), [0.40, 0.41, 0.42], [0.60, 0.61, 0.62])["verdict"] == "reproduced"


def test_one_seed_cannot_carry_a_verdict():
    """Issue 19's case: exclusive gating b_g = -6 at 82.8 / 85.0 / 72.1 % against b_g = 0 at 88.8 / 88.6 / 89.8 %:
    d = 9.1 points, and the old rule (d > 2 se = 8.0) called it reproduced on the strength of the 72.1 % seed."""
    t = better("b-6", "b0")
    r = compare(t, [0.828, 0.850, 0.721], [0.888, 0.886, 0.898])
    assert r["d"] > 2 * r["se"] and r["verdict"] == "inconclusive"
    # three seeds that agree with each other decide it
    assert compare(t, [0.828, 0.830, 0.821], [0.888, 0.886, 0.898])["verdict"] == "reproduced"
    assert compare(t, [0.888, 0.886, 0.898], [0.828, 0.830, 0.821])["verdict"] == "contradicted"


def test_similar_needs_the_whole_interval_inside_or_outside_the_margin():
    t = similar("a", "b", margin=0.02)
    assert compare(t, [0.400, 0.401, 0.402], [0.405, 0.406, 0.407])["verdict"] == "reproduced"
    assert compare(t, [0.40, 0.41, 0.42], [0.50, 0.51, 0.52])["verdict"] == "contradicted"
    assert compare(t, [0.40, 0.44, 0.42], [0.43, 0.40, 0.46])["verdict"] == "inconclusive"


def test_fewer_than_three_seeds_is_not_run_yet_and_a_conjunction_falls_with_one_part():
    assert compare(better("a", "b"), [0.4, 0.4], [0.5, 0.5, 0.5])["verdict"] == "not run yet"
    assert combine(["reproduced", "reproduced"]) == "reproduced"
    assert combine(["reproduced", "inconclusive"]) == "inconclusive"
    assert combine(["reproduced", "contradicted", "not run yet"]) == "contradicted"
    assert combine(["reproduced", "not run yet"]) == "not run yet"


def test_tests_in_words_say_a_shared_side_once():
    assert rule.tests_in_words([better("a", "x"), better("a", "y"), better("b", "y", margin=0.05),
                              better("c", "y", margin=0.05), similar("a", "z")]) == (
        "final test error: a < each of x, y; final test error: each of b, c < y by more than 0.05; "
        "final test error: |a - z| < 0.02")
    assert rule.tests_in_words([better("a", "x", "mean_k"), better("a", "y")]) == \
        "mean learned k: a < x; final test error: a < y"   # another metric: said apart
