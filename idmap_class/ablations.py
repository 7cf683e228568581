"""Ablation exercises: predict, run (through the library, recorded with provenance), explain; and
their graders.

Each ablation changes one thing in a recipe of ``idmap_lib.engine.recipes`` and trains it with
``idmap_lib.engine.trainer`` at a *classroom* scale (a recipe's ``cpu_step_warmup`` config at the
depth, steps, warm-up and divergence rule of :func:`cifar_scales` / :data:`MNIST_SCALES`: minutes on
a laptop CPU) or, where a GPU is, at a *gpu* scale (the papers' ResNet-110, <= 2 min an exercise on
a T4). The student

1. writes a *prediction* (``run`` refuses to train without one, and stores it in the recorded run:
   the grader can tell it was written before the run);
2. runs the ablation: :func:`run` returns the recorded results, one per run of the exercise, each a
   result JSON with its config, config hash and provenance (trained only when missing, like
   ``results.run``);
3. answers the numeric questions from the runs (the grader compares them with the student's *own*
   runs);
4. explains (free text, collected for the instructor, not auto-graded).

:func:`check` grades a submission: every run exists and is intact (config hash), each run's config
is the asked ablation at the asked scale (not the baseline, not another scale), each run finished
(``ok``) or failed as a result (``fail``), and each answer agrees with the student's runs: readings
to a reading tolerance, judgements (which is larger, which is best) up to the seed spread measured
by the book (:data:`SPREAD`, from 3 seeds per run; ``python -m idmap_class spread`` measures it
again).
"""
from __future__ import annotations

# One module a concept; this one keeps `import idmap_class.ablations as A` (the chapter, the
# student edition, the graders) whole: the exercises as data, running them, grading them, what they
# cost.
# the reader's runs folder (ablations.default_runs_dir) and the seed policy (book/evidence/seeds.py)
from idmap_book import default_runs_dir  # noqa: F401
from idmap_book.evidence.seeds import SEEDS, TIMING_SEED  # noqa: F401
from .ablation_exercises import (ABLATIONS, B_G, BOOK_RUNS, GPU_STEPS, K_DEPTHS, MNIST_SCALES,
                                 OFFERED,  # noqa: F401
                                 PLAIN_DEPTHS, PRUNE_FRACTION, QUICK, SPREAD_FILE, STUCK_AT_CHANCE,
                                 Ablation,
                                 at_step, book_runs, cifar_scales, config, configs, default_scale,
                                 failed, final,
                                 mean_k, resolve_scale, same_text, units)
from .ablation_grading import (check, spread, spread_key, status,  # noqa: F401
                               submitted_scale, table)
from .ablation_runs import SET_ASIDE, grading, lookup, run, student_seed  # noqa: F401
from .ablation_times import (COLAB_IMG_PER_S, COLAB_OVERHEAD_S, GPU_BUDGET_S,
                             gpu_time,  # noqa: F401
                             measure, overview, run_times, t4_pace, time_exercises)
