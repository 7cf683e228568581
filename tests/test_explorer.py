"""The explorer for "why" (book/figures/explorer.py): one slider step per measured row, each step
colouring that row's traces in its unit's colour and every other row faint; nothing to draw where
nothing is measured."""
import pytest

from idmap_book.figures import explorer
from idmap_book.page import figure_style, palette


def test_no_measured_row_draws_nothing(tmp_path):
    assert explorer.explorer(out_dir=tmp_path) is None
    assert "Not measured yet" in explorer.alt_caption(out_dir=tmp_path)


def test_each_step_picks_its_row_in_its_units_colour():
    found = explorer.rows_measured()
    if not found:
        pytest.skip("no row measured around the jump in data/mechanisms")
    fig = explorer.explorer()
    steps = fig.layout.sliders[0].steps
    assert len(steps) == len(found)
    rows = list(found)
    per_row = len(fig.data) // sum(len(s) for s in found.values())
    assert per_row == len(explorer.PANELS)
    owners = [r for r in rows for _ in range(len(found[r]) * per_row)]
    for step, row in zip(steps, rows):
        colours = step.args[0]["line.color"]
        assert [c for c, o in zip(colours, owners)
                if o == row] == [palette.colour(row)] * owners.count(row)
        assert {c for c, o in zip(colours, owners) if o != row} <= {explorer.FAINT}
        assert (step.method == "update"
                and step.value.endswith(explorer.claim_words.words("a_swaps", row)))
    # drawn as step 1
    assert [t.line.color for t in fig.data] == list(steps[0].args[0]["line.color"])
    assert figure_style.alt_text(fig).startswith(f"An explorer over {len(found)} rows")


def test_every_rows_title_sits_under_the_toolbar_in_lines_a_phone_holds():
    """Issue 59: plotly's toolbar (its modebar) spans a phone's width at the figure's top, so the
    title starts under it (its first line's top is pad - 16 px; the toolbar's bottom 28 px, both
    in Chromium); a slider step's title is not laid out again on a phone, so every row's title
    comes in lines that fit a phone, and the top margin holds the longest."""
    found = explorer.rows_measured()
    if not found:
        pytest.skip("no row measured around the jump in data/mechanisms")
    fig = explorer.explorer()
    assert fig.layout.title.pad.t - 16 >= 28 + 4
    titles = [s.args[1]["title.text"] for s in fig.layout.sliders[0].steps]
    assert fig.layout.title.text == titles[0]
    for t in titles:
        head, _, sub = t.partition("<br><sup>")
        assert all(len(x.strip()) <= explorer.HEAD_CHARS for x in head.split("<br>"))
        assert all(len(x.strip()) <= explorer.SUB_CHARS
                   for x in sub.removesuffix("</sup>").split("<br>"))
    lines = max(t.count("<br>") + 1 for t in titles)
    assert fig.layout.margin.t >= (fig.layout.title.pad.t + figure_style.TITLE_LINE_PX * lines
                                   + 24)  # and a subplot title's line under it
