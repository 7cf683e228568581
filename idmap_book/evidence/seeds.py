"""The seed policy, in one place: which seeds the book records, which a reader's and a student's
runs use.

- ``SEEDS`` (0, 1, 2): every recorded run the book compares (a claim's three seeds, the classroom
  runs of the exercises in data/classroom);
- ``MORE_SEEDS`` (3, 4): trained only where three seeds leave a comparison inconclusive (``rule.py``
  says why and what that costs); ``ALL_SEEDS`` is both;
- ``READER_SEED`` (100): a reader's live run in a chapter (``live.train_live``), none of the book's,
  so that a run of yours is never shown as a recorded one under another name;
- a student's exercise runs: a seed drawn once per runs folder from ``STUDENT_SEEDS`` and kept there
  (``checks.ablation_runs.student_seed``), so that a copy of the book's runs (seeds 0-2) or of a
  classmate's is told apart by the grader;
- ``TIMING_SEED`` (999): runs that only time an exercise (``checks.ablation_times``), thrown away.
"""
from __future__ import annotations

import secrets

SEEDS = (0, 1, 2)
# trained where 3 seeds leave a comparison inconclusive (a rule fixed before they are read)
MORE_SEEDS = (3, 4)
# shown wherever recorded: the claim's 3 seeds, and 5 where 3 left it open
ALL_SEEDS = SEEDS + MORE_SEEDS
READER_SEED = 100
TIMING_SEED = 999
STUDENT_SEEDS = range(1000, 1000 + 10 ** 6)


def draw_student_seed() -> int:
    """A new student's seed: one of ``STUDENT_SEEDS`` at random (never a book's, a reader's or a
    timing seed)."""
    return STUDENT_SEEDS[secrets.randbelow(len(STUDENT_SEEDS))]
