"""The blocks that chapters 7-10 repeat, one function each, so that a chapter calls one function per
experiment instead of a cell per piece:

- ``claims``: an experiment's claims in words, then in full (folded: the tests, d with its 95 %
  interval, each part's evidence), the forest of their effects, and the notes on runs that ended at
  chance or on a claim contradicted;
- ``full_recipe``: where the paper's whole recipe stands for the page's runs, in words and curves.

Headings and the number-free prose around them stay Markdown in the chapter.
"""
from __future__ import annotations

import html
import re

from IPython.display import HTML, Markdown, display

from ..evidence import claim_words, variants, verdicts
from ..evidence.tables import styled
from . import forest as forest_figure, full_recipe as recipe

FOLD = ("The claims in full: when each test took its rule, the tests, d with its interval, each "
        "part's evidence")
NO_STUCK = "No recorded run of this page ended at chance."


def fold(html: str, label: str = FOLD) -> str:
    """`html` folded under `label`: the book's one fold (history.folded: a details element, a native
    fold in Jupyter and Colab, where a cell's hide tags do nothing; a wide table in it scrolls
    inside the fold)."""
    return verdicts.folded(html, label)


def claims(keys, experiments=(), forest=None, contradictions=False) -> None:
    """Show claims `keys`: in words, in full (folded), their forest when `forest` (its title) is
    given, the contradiction notes when asked, and which runs of `experiments` ended at chance."""
    display(styled(claim_words.readable_table(keys)))
    table = verdicts.claims_table(keys)
    # in the fold, above the table: when each test took its rule, against its runs' dates
    rules = "<p>" + re.sub(r"\*([^*]+)\*", r"<em>\1</em>",
                           html.escape(verdicts.preregistration(keys))) + "</p>"
    display(HTML(fold(rules + styled(verdicts.titled(table)).to_html())))
    if forest:
        forest_figure.forest(keys, title=forest).show()
    if contradictions:
        notes = [verdicts.contradiction_note(keys)
                 or "No claim of this page is contradicted at the CPU scale.",
                 verdicts.opposite_note(keys)]
        display(Markdown("\n\n".join(filter(None, notes))))
    if experiments:
        stuck = [verdicts.stuck_note(e, variants.SHOWN[e]) for e in experiments]
        display(Markdown("\n\n".join(filter(None, stuck)) or NO_STUCK))


def full_recipe(experiment, shown, started_only=False):
    """Where the paper's whole recipe stands for `shown` (variants): each run's state in words
    beside the paper's number, then the curves (of only the runs finished or under way, if
    `started_only`); both from one reading of the runs."""
    runs = recipe.full_recipe_runs(experiment, shown)
    if started_only and runs:
        shown = [v for v in shown if v in runs]
    display(Markdown(recipe.full_recipe_words(experiment, shown, runs=runs)))
    recipe.full_recipe_curves(experiment, shown, runs=runs).show()
