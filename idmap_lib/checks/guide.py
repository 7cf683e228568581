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
    "exclusive_gate_bias": "see the gate's trade-off (the initial b_g sets both how close the shortcut is to the "
                           "identity and how much of F passes), and explain why Paper A's choice of b_g, found at "
                           "depth 110, does not carry over to the classroom's much shallower net (an honest "
                           "question: the book's runs favour the gate that starts half open there)",
    "bn_after_addition": "see that anything on the path after the addition (here a BN) breaks the identity, and "
                         "explain why Paper A's slow start, found in its ResNet-110, does not show reliably in a net "
                         "much shallower (an honest question: the book's runs end worse but do not start slower)",
    "plain_depth": "find the depth at which a plain net stops training, and explain why Paper B's gate, started at "
                   "k = 1 where the gated layer is the plain layer, does not rescue it in a short training (an "
                   "honest question: in the book's runs the gated net breaks at the same depth)",
    "gate_depth": "read Paper B's Table 2 trend in their own runs: deeper gated nets keep k smaller",
    "prune_by_k": "test the learned gates as a measure of each block's importance (prune without retraining, by k "
                  "and at random), and explain why k is no such measure yet after a short training (an honest "
                  "question: in the book's runs smallest-k pruning is worse than random)",
}

# Whether an exercise shows the paper's effect at the classroom scale in every seed the book recorded (data/classroom).
# The others are honest questions: their statements say, before the prediction, what the paper found at its depth
# and length, what the book's runs show instead, and ask why the scale changes it. tests/test_ablation_effects.py
# checks both on the recorded runs.
SHOWS_PAPER_EFFECT = {"constant_scaling": True, "exclusive_gate_bias": False, "bn_after_addition": False,
                      "plain_depth": False, "gate_depth": True, "prune_by_k": False}


def recorded(name):
    """The book's recorded classroom runs of ablation `name`, seed by seed: (seeds, {answer: [its value in each
    seed]}), as the spread file has them (written from data/classroom by ``python -m idmap_lib.checks spread``;
    tests/test_ablation_effects.py checks that they agree with the runs)."""
    sp = ab.spread().get(name) or {}
    return sp.get("seeds", []), sp.get("answers_by_seed", {})


def recorded_mean(name, key, metric):
    """The mean over the book's seeds of one metric of run `key` of ablation `name` (the spread file)."""
    return ab.spread()[name]["runs"][key]["mean"][metric]


def of_seeds(flags) -> str:
    """[True, True, False] -> '2 of 3 seeds'."""
    flags = list(flags)
    return f"{sum(map(bool, flags))} of {len(flags)} seeds"


TRAIN_IMAGES = {"cifar10": 50000, "mnist": 60000}  # the training sets' sizes (a recipe without a subset trains on all)


def scales_in_words(name) -> dict:
    """The classroom scale of ablation `name` and the paper's recipe, in words, read from the configs of its first
    run: {"net", "length", "paper_net", "paper_length"} -- the net (a CIFAR ResNet with its residual units; Paper B's
    MNIST nets at the exercise's depths), and the steps with about how many epochs they are."""
    from ..engine import recipes
    key, cfg = next(iter(ab.configs(name, 0, "classroom").items()))
    experiment, variant, _ = ab.ABLATIONS[name].runs[key]
    full = recipes.config(experiment, variant, "full")

    def net(c):
        if c["model"]["builder"] == "cifar_resnet":
            return f"ResNet-{c['model']['kwargs']['depth']} ({ab._units(c)} residual units)"
        return "Paper B's MNIST nets at the exercise's depths"

    def length(c):
        sub = c.get("subset")
        n_train = 10 * sub["train_per_class"] if sub else TRAIN_IMAGES[c["dataset"]]
        e = c["steps"] * c["batch_size"] / n_train
        epochs = f"{e:.1f} epoch{'' if round(e, 1) == 1 else 's'}" if e < 10 else f"{e:.0f} epochs"
        return f"{c['steps']:,} steps of batch {c['batch_size']} (about {epochs} of {n_train:,} images)"
    return {"net": net(cfg), "length": length(cfg), "paper_net": net(full), "paper_length": length(full)}


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
              "| exercise | goes with | changes | runs | CPU, the notebook's 2 threads (measured) | Colab GPU (estimated) |",
              "|---|---|---|---|---|---|"]
    for name, a in ab.ABLATIONS.items():
        t = ab.run_times(name)
        cpu = f"{t['cpu_s'] / 60:.1f} min" if t["cpu_s"] else "not measured: `python -m idmap_lib.checks time`"
        lines.append(f"| {name} | {_chapter_link(a.chapter)} | {a.changes} | {t['runs']} | {cpu} | "
                     f"{t['colab_gpu_s'] / 60:.1f} min |")
    when = sorted({(m["cpu"], m["date"][:10]) for m in (ab.run_times(n)["cpu_measured"] for n in ab.ABLATIONS) if m})
    lines += ["", "CPU times: each exercise trained once as its notebook runs it (all its runs together, "
              "`torch.set_num_threads(2)`), by `python -m idmap_lib.checks time`"
              + (f", on {', '.join(f'a 2-core {c} ({d})' for c, d in when)}" if when else "")
              + ". They are training times (loading the data comes on top, once per session); a machine busy with other "
              "work is slower, several times over when every core is taken, and the same machine varies from day "
              "to day. GPU times are an estimate (an assumed Colab T4 throughput, "
              "`ablations.COLAB_IMG_PER_S`, plus data loading), not a measurement.", ""]
    for name, a in ab.ABLATIONS.items():
        lines += [f"### {name}: {a.title}", "", f"- **Paper**: {a.paper}.",
                  f"- **Goal**: {ABLATION_GOALS[name]}.",
                  "- **At the classroom scale**: " + (
                      "the book's runs show the paper's effect in every seed they recorded." if SHOWS_PAPER_EFFECT[name]
                      else "the book's runs do not show the paper's effect in every seed they recorded; the statement "
                           "says so before the prediction and asks why the scale changes it (an honest question)."),
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
              "The student editions are also in the repository, `book/student/<chapter>/` (the notebook and its "
              "`tests/`; `python -m idmap_lib.checks publish` writes them, and a test fails when a chapter changes "
              "without it): the Colab button of each exercise page opens that edition, not the page. Hand out "
              "either the Colab link or the student folder; both run as they are, in Jupyter and on Colab (the "
              "setup cell installs what is missing, otter-grader included, and upgrades nothing).", "",
              "Students submit the zip that the notebook's last cell makes: the notebook plus their recorded runs "
              "(`idmap_runs/`), so the autograder reads the runs instead of training again. In Jupyter it is "
              "Otter's export; on Colab, where Otter cannot export, the cell makes the same zip from the notebook "
              "as it is open and downloads it.",
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
