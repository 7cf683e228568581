"""The instructor guide page: goals, expected outcomes (the book's measured seed spread), run times, commands.

``python -m idmap_lib.checks guide --out instructor_guide.md`` writes it; the book's page
``book/06_instructor_guide.ipynb`` shows the same text. Every number comes from the library (the recorded
runs' spread file, the configs); nothing is typed.
"""
from __future__ import annotations

from . import ablations as ab
from .implementation import EXERCISES

IMPLEMENTATION_GOALS = {
    "1 full pre-activation unit": ("01_residual_units", "PreActUnit(channels)",
                                   "order BN, ReLU, conv inside F and nothing after the addition (Paper A Fig 4e)"),
    "2 exclusive gating": ("01_residual_units", "exclusive_gating(x, Fx, W_g, b_g)",
                           "read Fig 2(c) as a formula: which factor goes on which path, what the gate reads"),
    "3a direct term": ("03_scaled_shortcuts", "direct_term(lams)", "Eqn 8's direct term is a product of the lambdas"),
    "3b vanishing depth": ("03_scaled_shortcuts", "vanishing_depth(lam, eps)", "how fast lambda^L vanishes"),
    "4 gated residual": ("05_learning_identity", "GatedResidual(F)",
                         "Paper B's gate: one scalar k, ReLU(k), exactly the identity for k <= 0"),
    "5 truncation rate": ("04_relu_truncation", "truncation_rate(unit, x)",
                          "measure what the ReLU after the addition cuts (Paper A Sec 4.2)"),
}

ABLATION_GOALS = {
    "constant_scaling": "see Eqn 8's product of lambdas in a real run: a shortcut scale below 1 removes the direct "
                        "path of the gradient",
    "exclusive_gate_bias": "see the gate's trade-off: the initial b_g sets both how close the shortcut is to the "
                           "identity and how much of F passes",
    "bn_after_addition": "see that anything on the path after the addition (here a BN) breaks the identity, and test "
                         "Paper A's slow start on a net much shallower than its ResNet-110",
    "plain_depth": "find the depth at which a plain net stops training, and test whether Paper B's gate rescues it "
                   "when k has had only a short training to move",
    "gate_depth": "read Paper B's Table 2 trend in their own runs: deeper gated nets keep k smaller",
    "prune_by_k": "test the learned gates as a measure of each block's importance: prune without retraining, by k "
                  "and at random",
}


def _fmt(x, digits=3):
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, (int, float)):
        return f"{x:.{digits}g}"
    return str(x)


def _expected(name):
    sp = ab.spread().get(name)
    if not sp:
        return "not measured yet (`python -m idmap_lib.checks spread`)"
    parts = []
    for a, vals in sp["answers_by_seed"].items():
        if a in sp["answers"]:
            mean = sum(vals) / len(vals)
            parts.append(f"`{a}` {_fmt(mean)} ± {_fmt(sp['answers'][a], 2)}")
        else:
            parts.append(f"`{a}` " + " / ".join(_fmt(v) for v in vals))
    return f"over seeds {', '.join(map(str, sp['seeds']))} (mean ± std, or each seed's): " + "; ".join(parts)


def _chapter_link(chap: str) -> str:
    """A short link to a chapter, "01_residual_units" -> [chapter 1](01_residual_units.ipynb)."""
    return f"[chapter {int(chap.split('_')[0])}]({chap}.ipynb)"


def instructor_guide(title=True) -> str:
    lines = (["# Instructor guide", ""] if title else []) + [
             "Two kinds of exercises: **implementation** exercises (write a unit, a gate, a product; graded on "
             "random inputs against the library, in seconds) and **ablation** exercises (change one thing, train "
             "through the library, compare: predict, run, explain). The book's pages are the instructor edition; "
             "the student edition and the autograder package are written by Otter-Grader from them.", "",
             
             "## Implementation exercises ([chapter](06_exercises.ipynb))", "",
             "| exercise | goes with | the student writes | goal | grader (in `idmap_lib.checks`) |",
             "|---|---|---|---|---|"]
    for ex, (name, check) in EXERCISES.items():
        chap, writes, goal = IMPLEMENTATION_GOALS[ex]
        lines.append(f"| {ex} | {_chapter_link(chap)} | `{writes}` | {goal} | `{check.__name__}` |")
    lines += ["", "Each grader compares with the library's own module in float64 and names the common mistakes in "
              "its hint (the post-activation order, a missing (1 - g) factor, a sum instead of a product, k "
              "initialised to 0, a sigmoid gate, eval-mode BN...).", "",
              "## Ablation exercises ([chapter](06_ablations.ipynb))", "",
              "| exercise | goes with | changes | runs | CPU, 2 cores (measured) | Colab GPU (estimated) |",
              "|---|---|---|---|---|---|"]
    for name, a in ab.ABLATIONS.items():
        t = ab.run_times(name)
        cpu = f"{t['cpu_s'] / 60:.1f} min" if t["cpu_s"] else "not measured"
        lines.append(f"| {name} | {_chapter_link(a.chapter)} | {a.changes} | {t['runs']} | {cpu} | "
                     f"{t['colab_gpu_s'] / 60:.1f} min |")
    lines += ["", "CPU times are the book's runs of the whole exercise (all its runs trained together) on the 2-core "
              "CPU the book is built on, shared with other jobs while they ran (an idle one is faster); GPU times are an estimate (an assumed Colab T4 throughput, "
              "`ablations.COLAB_IMG_PER_S`, plus data loading), not a measurement.", ""]
    for name, a in ab.ABLATIONS.items():
        lines += [f"### {name}: {a.title}", "", f"- **Paper**: {a.paper}.",
                  f"- **Goal**: {ABLATION_GOALS[name]}.",
                  f"- **Runs** (classroom scale): {', '.join(f'`{k}`' for k in a.runs)}; the baseline is `{a.baseline}`.",
                  "- **Answers**: " + "; ".join(f"`{k}`: {v}" for k, v in a.answers.items()) + ".",
                  f"- **Expected** (the book's runs) {_expected(name)}.", ""]
    lines += ["**How an ablation is graded.** `ablations.check(name, runs, answers, prediction)`: every run of the "
              "exercise is present and intact (its config hash), its config is the exercise's at the classroom "
              "scale (a baseline or a run of another scale is named as such), it finished (`ok`) or failed as a "
              "result (`fail`), and every answer agrees with the student's own runs: readings to a small "
              "tolerance, judgements (which is larger, which b_g is best) up to the seed spread above, within "
              "which either answer is accepted. Predictions and explanations are collected, not graded.", "",
              "**Runs that are the student's own.** Every student's runs train with their own seed, drawn once at "
              "random and kept in their runs folder (`idmap_runs/seed.txt`, exported with the runs); the book's "
              "recorded runs (`data/classroom`, in every clone) have seeds 0-2. A submitted run with one of the book's "
              "seeds, one trained after another prediction than the notebook's, or one recorded before its "
              "prediction is rejected, with that reason. The public site keeps the solutions (readers learn from "
              "them): the *answers* of an exercise can be copied from it, but they must agree with the student's "
              "own runs, and the runs cannot be copied. What the grader cannot see is who wrote the prediction and "
              "the explanation: read those (the CSV has them) when they count.", "",
              "## The student edition and the autograder", "",
              "```bash",
              "python -m idmap_lib.checks assign --out dist        # both chapters; --chapter ablations for one",
              "```", "",
              "writes, per chapter, `dist/<chapter>/dist/student/<chapter>.ipynb` (no solutions, no instructor "
              "notes; the grading cells still run and give hints) and `dist/<chapter>/dist/autograder/*.zip`, the "
              "package Gradescope takes (Canvas and other LMSs through Gradescope). It uses `otter assign` "
              "(Otter-Grader, pinned in requirements.txt); each graded cell of the book becomes an Otter test "
              "whose body is the grader of `idmap_lib.checks`. The zip carries the library, so the graders are "
              "the book's.", "",
              "Students submit the zip that the notebook's last cell makes (`grader.export`): the notebook plus "
              "their recorded runs (`idmap_runs/`), so the autograder reads the runs instead of training again.",
              "", "## Grading a class", "", "```bash",
              "python -m idmap_lib.checks grade submissions/ --autograder dist/ablations/dist/autograder/*.zip "
              "--csv grades.csv", "```", "",
              "grades every `.ipynb` or `.zip` in the folder with `otter run` (no Docker; the students' code runs "
              "on your machine, so use one you trust with it) and writes one row per student: each question's "
              "score and its feedback (the grader's hint where it failed), the total, a reason where a submission "
              "could not be graded (a corrupt or empty file is a row with 0, never a stop for the others), and "
              "every prediction and explanation as text for you to read. Nothing trains while grading: a "
              "submission without its runs is graded \"runs missing\". One submission "
              "alone: `otter run -a dist/ablations/dist/autograder/*.zip submission.zip`.", ""]
    return "\n".join(lines)
