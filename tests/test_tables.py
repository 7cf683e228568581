"""How the book prints a table."""
from idmap_book.evidence import tables


def test_styled_tables_let_long_claim_keys_break_after_an_underscore():
    """Pandas 3 gives a text index the "str" dtype: the break points must still go in (issue 21:
    keys wrapped mid-word, or not at all and pushed the evidence off the page)."""
    import pandas as pd

    for index in (pd.Index(["t1_shortcut_only_gating"], name="claim"),
                  pd.Index(["t1_shortcut_only_gating"], dtype=object, name="claim")):
        html = tables.styled(pd.DataFrame({"verdict": ["reproduced"]}, index=index)).to_html()
        assert "t1_\u200bshortcut_\u200bonly_\u200bgating" in html
        assert "background-color: #d9f2d9" in html


def test_numbers_print_without_the_sign_of_a_zero_and_seeds_as_mean_and_sd():
    assert [tables.num(x, sign=True) for x in (-0.004, 0.004, -0.3,
                                               0.3)] == ["0.00", "0.00", "-0.30", "+0.30"]
    assert tables.mean_sd([]) == "–" and tables.mean_sd([0.4123]) == "0.41"
    # a fraction shown in %
    assert tables.mean_sd([0.40, 0.41, 0.42], unit=100) == "41.00 ± 1.00"
    # no "-0.00": it reads as a direction
    assert tables.mean_sd([-0.001, -0.002]) == "0.00 ± 0.00"
    assert tables.mean_sd([120.0, 140.0], digits=0) == "130 ± 14"
