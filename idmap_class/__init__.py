"""Graders for the book's exercises.

- :mod:`.implementation`: the implementation exercises of chapter 6 (write a unit, a gate, a
  product...; the two modules' graders in :mod:`.module_checks`); their graders are re-exported here
  (``checks.check_full_preact_unit``...).
- :mod:`.ablations`: the ablation exercises (predict, run, explain) and their graders; what the
  papers found and what the book's seeds show of it (:mod:`.effects`).
- :mod:`.editions`: the student edition and the autograder package (Otter-Grader, from the
  chapter read as parts by :mod:`.chapter_parts`; made lean in :mod:`.autograder`), batch grading
  to CSV (:mod:`.batch`, a submission read by :mod:`.unpack`; on Gradescope :mod:`.gradescope`,
  the same per submission), the instructor guide (:mod:`.guide`; its rubric and model answers:
  :mod:`.marking`), the published student editions (``book/student/``). ``python -m
  idmap_class --help`` lists the commands.
- :mod:`.student`: what the student edition runs on the student's side, in Jupyter and on Colab (its
  grader, otter-grader installed without upgrades; the submission zip).
"""
from .grading import WIDTH  # noqa: F401
from .implementation import (EXERCISES, check_direct_term, check_exclusive_gating,  # noqa: F401
                             check_truncation_rate, check_vanishing_depth, grade)
from .module_checks import check_full_preact_unit, check_gated_residual  # noqa: F401
from .references import TOL, measured_direct_term  # noqa: F401
