"""Log axes a reader can read: at most 12 tick labels over any range, ranges that hold every value,
and spread bands computed in log space (issue 30.5, 30.6)."""
import math

import numpy as np
import pytest

from idmap_book.page import log_axes


@pytest.mark.parametrize("lo, hi", [(1e-46, 1e41), (1e-46, 1.0), (0.03, 250), (0.02, 300), (8, 60),
                                    (0.5, 700),
                                    (10 ** -0.3, 10 ** 0.3), (1e-5, 1e5), (3e-200, 2e150)])
def test_log_ticks_never_crowd_an_axis_and_stay_inside_it(lo, hi):
    t = log_axes.log_ticks(lo, hi)
    assert 2 <= len(t["tickvals"]) <= log_axes.MAX_TICKS, t["ticktext"]
    assert all(lo <= v <= hi for v in t["tickvals"]) and len(t["ticktext"]) == len(t["tickvals"])
    assert t["tickvals"] == sorted(t["tickvals"])


def test_long_ranges_are_labelled_in_powers_of_ten_one_style_an_axis():
    t = log_axes.log_ticks(1e-46, 1e41)
    assert t["ticktext"][:2] == ["10<sup>-40</sup>", "10<sup>-30</sup>"] and "1" in t["ticktext"]
    # all readable in full: in full
    assert log_axes.log_ticks(0.02, 300)["ticktext"] == ["0.1", "1", "10", "100"]
    # not "0.001" between powers
    assert log_axes.log_ticks(1e-5, 1e5)["ticktext"][2] == "10<sup>-3</sup>"
    # short: 1, 2, 5 a decade
    assert log_axes.log_ticks(0.03, 250)["ticktext"][:3] == ["0.05", "0.1", "0.2"]
    with pytest.raises(ValueError, match="0 < lo < hi"):
        log_axes.log_ticks(0, 10)


def test_log_range_holds_every_value_and_a_flat_curve_gets_room():
    lo, hi = log_axes.log_range([1e-46, 3.0, None, float("nan"), 0.0, -1.0])
    assert lo < -46 and hi > math.log10(3.0)
    lo, hi = log_axes.log_range([1.0, 1.0])
    assert lo == pytest.approx(-0.3) and hi == pytest.approx(0.3)
    with pytest.raises(ValueError, match="positive finite"):
        log_axes.log_range([0.0, -2.0])


def test_a_band_on_a_log_axis_stays_within_the_seeds():
    """Three seeds a decade apart: mean - sd in linear space falls below zero (off a log axis, below
    every seed); the band in log space runs from 10^(mean - sd) to 10^(mean + sd) of the logs,
    inside the seeds' range."""
    seeds = np.array([[0.01, 0.1], [0.1, 1.0], [1.0, 10.0]])
    linear_low = seeds.mean(0) - seeds.std(0)
    assert (linear_low < seeds.min(0)).all()
    mid, low, high = log_axes.log_band(seeds)
    assert (np.allclose(mid, [0.1, 1.0]) and (low >= seeds.min(0)).all()
            and (high <= seeds.max(0)).all())
    assert (low > 0).all() and np.allclose(low * high, mid ** 2)  # symmetric in log space
    with pytest.raises(ValueError, match="positive finite"):
        log_axes.log_band([[1.0, 0.0]])
