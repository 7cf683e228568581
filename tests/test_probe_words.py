"""The theory chapters' sentences on their probes: each number read from the measurement given."""
import numpy as np
import torch

from idmap_book.maths import probe_words
from support import Words

pw = Words(probe_words)


def test_eqn5_check_reads_the_error_and_the_ratio_and_where_it_is_largest():
    rows = [{"l": l, "‖through‖": th, "‖direct‖": 1.0, "relative error": e}
            for l, th, e in ((0, 3.0, 1e-16), (50, 2.0, 4e-16), (99, 0.5, 2e-16))]
    text = pw.eqn5_check(rows)
    assert ("at most $4.0 \\cdot 10^{-16}$" in text
            and "is $0.5$ to $3$ times the direct term" in text)
    assert "the ratio is largest for the shallowest" in text
    rows[2]["‖through‖"] = 9.0
    assert "not largest for the shallowest" in pw.eqn5_check(rows)


def test_depth_growth_says_exactly_1_only_when_it_is_and_the_growth_per_unit():
    depths = [10, 100]
    full = {10: torch.tensor([12.0, 3.0, 1.0]), 100: torch.tensor([150.0, 0.8, 1.0])}
    direct = {L: torch.ones(3) for L in depths}
    text = pw.depth_growth(full, direct, depths)
    assert "the ratio is exactly 1 at every unit" in text
    assert ("12 times the last unit's for $L = 10$ and 150 times for $L = 100$: 1.2 to 1.5 times "
            "$L$" in text)
    assert "The smallest ratio anywhere in these stacks is 0.8" in text
    direct[100] = torch.tensor([1.0, 1.0 + 3e-15, 1.0], dtype=torch.float64)
    assert ("1 to within $3.1 \\cdot 10^{-15}$ at every "
            "unit" in pw.depth_growth(full, direct, depths))


def test_scaled_gradient_reads_both_sides_of_one():
    lams, depth = [0.9, 1.0, 1.1], 1000
    rows = [{"λ": lam, "theory ∏λ, 100 units": lam ** 100, "measured, 100 units": lam ** 100 * 1.01,
             "theory ∏λ, 1000 units": lam ** 1000, "measured, 1000 units": m}
            for lam, m in ((0.9, 5.0), (1.0, 7.0), (1.1, 2 * 1.1 ** 1000))]
    text = pw.scaled_gradient(rows, lams, depth)
    assert "agree within 1%" in text and "the measurement is 2 to 2 times the theory" in text
    assert "The measured gradient is 7 times the last unit's" in text
    assert "it is $5$ to $5$ times the last unit's" in text


def test_truncation_at_init_compares_the_first_unit_with_the_rest():
    rates = {110: np.array([0.4, 0.2, 0.1]), 1001: np.array([0.45, 0.05, 0.05])}
    text = pw.truncation_at_init(rates)
    assert "a fraction 0.400 to 0.450 of its" in text and "average 0.050 to 0.150" in text


def test_the_gate_gain_is_one_minus_sigma_per_unit_over_resnet110s_54_units():
    text = pw.gate_gain()
    assert ("that is $0.5$ per unit, and over the 54 units of a ResNet-110 it is $5.6 \\cdot "
            "10^{-17}$" in text)
    assert f"With $b_g = -6$ it is ${1 - 1 / (1 + np.exp(6)):.4f}$ per unit" in text


def test_shortcut_gains_name_the_range_dropouts_zero_and_the_nearest_to_1():
    import pandas as pd
    rows = [("original", "the identity shortcut", 1.0),
            ("constant_scaling-0.5-1", "the shortcut scaled by 0.5", 1e-16),
            ("exclusive_gating-b0", "exclusive gating at b_g = 0", 1e-17),
            ("exclusive_gating-b-6", "exclusive gating at b_g = −6", 0.8),
            ("shortcut_only_gating-b-6", "shortcut-only gating at b_g = −6", 0.8),
            ("conv1x1", "the 1×1-convolution shortcut", 3.0),
            ("dropout-0.5", "the dropout shortcut", 0.0)]
    gains = pd.DataFrame([{"variant": v, "shortcut (Fig 2)": w,
                           "measured ∏h' gain over 54 units (F = 0)": x}
                          for v, w, x in rows]).set_index("variant")
    text = pw.shortcut_gains(gains)
    assert "between $10^{-17}$ and $10^{-16}$" in text and "(gain 0)" in text
    assert "keep $\\prod h'$ at 0.8" in text
    assert ("the nearest to 1 of all non-identity shortcuts: exclusive gating at b_g = −6 and "
            "shortcut-only gating at b_g = −6, tied at two digits") in text
