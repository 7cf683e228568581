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
