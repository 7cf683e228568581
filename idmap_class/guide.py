"""The instructor guide page: goals, expected outcomes (the book's measured seed spread), run times,
commands.

``python -m idmap_class guide --out instructor_guide.md`` writes it; the book's page
``book/06_instructor_guide.ipynb`` shows the same text. Every number comes from the library (the
recorded runs' spread file, the configs); nothing is typed.
"""
from __future__ import annotations

from idmap_book.page.prose import plain_number
from idmap_book.plan.run_times import timed_alone
from idmap_lib.engine import recipes
from idmap_lib.engine.data import SIZES as DATASET_SIZES  # (train, test) images
from . import ablations as ab
from .effects import SHOWS_PAPER_EFFECT, effect_in_words
from .implementation import EXERCISES
from .marking import marking

IMPLEMENTATION_GOALS = {
    "1 full pre-activation unit": ("01_residual_units", "PreActUnit(channels)",
                                   "order BN, ReLU, conv inside F and nothing after the addition "
                                   "(Paper A Fig 4e)"),
    "2 exclusive gating": ("01_residual_units", "exclusive_gating(x, Fx, W_g, b_g)",
                           "read Fig 2(c) as a formula: which factor goes on which path, what the "
                           "gate reads"),
    "3a direct term": ("03_scaled_shortcuts", "direct_term(lams)",
                       "Eqn 8's direct term is a product of the lambdas"),
    "3b vanishing depth": ("03_scaled_shortcuts", "vanishing_depth(lam, eps)",
                           "how fast lambda^L vanishes"),
    "4 gated residual": ("05_learning_identity", "GatedResidual(F)",
                         "Paper B's gate: one scalar k, ReLU(k), exactly the identity for k <= 0"),
    "5 truncation rate": ("04_relu_truncation", "truncation_rate(unit, x)",
                          "measure what the ReLU after the addition cuts (Paper A Sec 4.2)"),
}

ABLATION_GOALS = {
    "constant_scaling": "see Eqn 8's product of lambdas in a real run: a shortcut scale below 1 "
                        "removes the direct path of the gradient",
    "exclusive_gate_bias": "see the gate's trade-off (the initial b_g sets both how close the "
                           "shortcut is to the identity and how much of F passes), and explain why "
                           "Paper A's choice of b_g, found at depth 110 after 64k steps, does not "
                           "carry over to the classroom's much shallower net, "
                           f"nor to the gpu scale's {ab.GPU_STEPS[len(ab.B_G)]} steps at depth 110 "
                           f"(an honest "
                           "question: the book's classroom runs favour the gate that starts half "
                           "open; at the gpu scale every gate is still near chance)",
    "bn_after_addition": "see that anything on the path after the addition (here a BN) breaks the "
                         "identity, and explain why Paper A's slow start, found in its ResNet-110, "
                         "does not show reliably in a net "
                         f"much shallower, nor in {ab.GPU_STEPS[2]} steps of ResNet-110 (an honest "
                         f"question: the "
                         "book's runs end worse but do not reliably start slower)",
    "plain_depth": "find the depth at which a plain net stops training, and explain why Paper B's "
                   "gate, started at k = 1 where the gated layer is the plain layer, does not "
                   "rescue it in a short training (an honest question: in the book's runs the "
                   "gated net breaks at the same depth)",
    "gate_depth": "read Paper B's Table 2 trend in their own runs: deeper gated nets keep k "
                  "smaller",
    "prune_by_k": "test the learned gates as a measure of each block's importance (prune without "
                  "retraining, by k and at random), and explain why k is no such measure yet after "
                  "a short training (an honest question: in the book's runs smallest-k pruning is "
                  "worse than random)",
}

def scales_in_words(name, scale="classroom") -> dict:
    """A scale of ablation `name` (default classroom) and the paper's recipe, in words, read from
    the configs of its first run: {"net", "length", "paper_net", "paper_length"} -- the net (a CIFAR
    ResNet with its residual units; Paper B's MNIST nets at the exercise's depths), and the steps
    with about how many epochs they are."""
    key, cfg = next(iter(ab.configs(name, 0, scale).items()))
    experiment, variant, _ = ab.ABLATIONS[name].runs[key]
    full = recipes.config(experiment, variant, "full")

    def net(c):
        if c["model"]["builder"] == "cifar_resnet":
            return f"ResNet-{c['model']['kwargs']['depth']} ({ab.units(c)} residual units)"
        return "Paper B's MNIST nets at the exercise's depths"

    def length(c):

        sub, whole = c.get("subset"), DATASET_SIZES[c["dataset"]][0]
        n_train = 10 * sub["train_per_class"] if sub else whole
        e = c["steps"] * c["batch_size"] / n_train
        epochs = f"{e:.1f} epoch{'' if round(e, 1) == 1 else 's'}" if e < 10 else f"{e:.0f} epochs"
        of = (f"{n_train:,} of its {whole:,} training images" if sub
              else f"its {whole:,} training images")
        return f"{c['steps']:,} steps of batch {c['batch_size']} (about {epochs} of {of})"
    return {"net": net(cfg), "length": length(cfg), "paper_net": net(full),
            "paper_length": length(full)}


def _fmt(x, digits=3):
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, (int, float)):
        return plain_number(x, digits)  # never e-notation
    return str(x)


def _own_scales(name):
    """The offered scales that train their own runs (the MNIST exercises' gpu scale is their
    classroom one)."""
    return [sc for sc in ab.OFFERED if ab.resolve_scale(name, sc) == sc]


def _at_scale(name, scale) -> str:
    """The guide's line on one scale of an exercise: what trains, and what the book's runs show
    there."""
    w = scales_in_words(name, scale)
    honest = "" if SHOWS_PAPER_EFFECT[name][scale] else (" The statement says so before the "
                                                         "prediction and asks why "
                                                          "the scale changes it (an honest "
                                                          "question).")
    return (f"- **At the {scale} scale** ({w['net']}, {w['length']}): "
            f"{effect_in_words(name, scale)}{honest}")


def scales_note(name) -> str:
    """The paragraph an exercise's statement shows about its two scales: what each trains, where,
    for how long, and what the book's recorded seeds show of the paper's effect at each (computed;
    Markdown)."""
    t = ab.run_times(name)
    words = {sc: scales_in_words(name, sc) for sc in ab.OFFERED}
    return allow(t) + " " + _scales(name, t, words)


# a laptop CPU, or this 2-core machine on a busy day, takes up to twice the idle timing
LAPTOP_FACTOR = 2


def allow(t) -> str:
    """The one time a student plans by: 'Allow about N min on a laptop CPU and M min on a Colab
    GPU', from the exercise's dedicated idle timing (times LAPTOP_FACTOR, whole minutes up) and the
    T4's derived time."""
    import math

    when = str((t.get("cpu_measured") or {}).get("date", ""))[:10]
    cpu = (f"about {math.ceil(LAPTOP_FACTOR * t['cpu_s'] / 60)} min on a laptop CPU (twice its "
           f"time alone on an idle 2-core machine, "
           f"{when})" if t["cpu_s"] else "a CPU time not measured yet")
    return (f"**Time.** Allow {cpu} and about {math.ceil(t['gpu']['s'] / 60)} min on a Colab GPU "
            f"(the times under the book's tables are its own runs, several trained at once: not "
            f"what one student waits).")


def _scales(name, t, words) -> str:

    # not the runs of the table below: says so
    cpu = f", {timed_alone(t['cpu_measured'])}" if t["cpu_s"] else ""
    gpu = f", ~{t['gpu']['s'] / 60:.1f} min on a T4 ({t['gpu']['basis']})"
    if _own_scales(name) == ["classroom"]:
        # why one scale, said at the first such exercise only
        first = next(n for n in ab.ABLATIONS if _own_scales(n) == ["classroom"]) == name
        why = " (Paper B's own networks, so there is no larger scale)" if first else ""
        return (f"**Scale.** On a CPU and on a GPU alike this trains {words['classroom']['net']} "
                f"for {words['classroom']['length']}{cpu}{gpu}{why}. At this scale "
                + effect_in_words(name))
    return " ".join([f"**Two scales.** `ablations.run` trains the *classroom* scale on a CPU "
                     f"({words['classroom']['net']}, {words['classroom']['length']}{cpu}) and the "
                     f"*gpu* scale where a GPU is ({words['gpu']['net']}, the papers' depth, "
                     f"{words['gpu']['length']}{gpu})."]
                    + [f"At the {sc} scale {effect_in_words(name, sc)}" for sc in ab.OFFERED])


def _expected(name, scale="classroom"):
    sp = ab.spread().get(ab.spread_key(name, scale))
    if not sp:
        return f"not measured yet (`python -m idmap_class spread --scale {scale}`)"
    parts = []
    for a, vals in sp["answers_by_seed"].items():
        if a in sp["answers"]:
            mean = sum(vals) / len(vals)
            parts.append(f"`{a}` {_fmt(mean)} ± {_fmt(sp['answers'][a], 2)}")
        else:
            parts.append(f"`{a}` " + " / ".join(_fmt(v) for v in vals))
    return (f"over seeds {', '.join(map(str, sp['seeds']))} (mean ± std, or each seed's): "
            f"") + "; ".join(parts)


def _chapter_link(chap: str) -> str:
    """A short link to a chapter, "01_residual_units" -> [chapter 1](01_residual_units.ipynb)."""
    return f"[chapter {int(chap.split('_')[0])}]({chap}.ipynb)"


def instructor_guide(title=True) -> str:
    lines = (["# Instructor guide", ""] if title else []) + [
             "Two kinds of exercises: **implementation** exercises (write a unit, a gate, a "
             "product; graded on random inputs against the library, in seconds) and **ablation** "
             "exercises (change one thing, train through the library, compare: predict, run, "
             "explain). The book's pages are the instructor edition; the student edition and the "
             "autograder package are written by Otter-Grader from them.", "",
             
             "## Implementation exercises ([chapter](06_exercises.ipynb))", "",
             "| exercise | goes with | the student writes | goal | grader (in `idmap_class`) "
             "|",
             "|---|---|---|---|---|"]
    for ex, (name, check) in EXERCISES.items():
        chap, writes, goal = IMPLEMENTATION_GOALS[ex]
        lines.append(f"| {ex} | {_chapter_link(chap)} | `{writes}` | {goal} | `{check.__name__}` |")
    lines += ["",
              "Each grader compares with the library's own module in float64 and names the common "
              "mistakes in its hint (the post-activation order, a missing (1 - g) factor, a sum "
              "instead of a product, k initialised to 0, a sigmoid gate, eval-mode BN...).", "",
              "## Ablation exercises ([chapter](06_ablations.ipynb))", "",
              "| exercise | goes with | changes | runs | classroom scale: CPU, the notebook's 2 "
              "threads (measured) | gpu scale | gpu scale: Colab T4 |",
              "|---|---|---|---|---|---|---|"]
    times = {name: ab.run_times(name) for name in ab.ABLATIONS}
    for name, a in ab.ABLATIONS.items():
        t = times[name]
        cpu = (f"{t['cpu_s'] / 60:.1f} min" if t["cpu_s"]
               else "not measured: `python -m idmap_class time`")
        gpu = t["gpu"]
        lines.append(f"| {name} | {_chapter_link(a.chapter)} | {a.changes} | {t['runs']} | {cpu} | "
                     f"{gpu['net']} | {gpu['s'] / 60:.1f} min ({gpu['how']}) |")
    when = sorted({(m["cpu"], m.get("cpu_count"), m["date"][:10])
                   for m in (t["cpu_measured"] for t in times.values())
                   if m})
    lines += ["",
              "**Two scales.** The *classroom* scale is for a laptop CPU: depth-20 CIFAR nets, 150 "
              "steps, and Paper B's MNIST nets for 400 steps. The *gpu* scale, which "
              "`ablations.run` takes where a CUDA GPU is (Colab's T4), trains the papers' own "
              "network, ResNet-110, for as many steps as keep an "
              f"exercise within {ab.GPU_BUDGET_S / 60:.0f} min on a T4; the MNIST exercises are "
              f"the paper's nets "
              "already, so their gpu scale is the classroom one. The grader grades each submission "
              "at the scale its runs were trained at, so one class can mix both.", "",
              "CPU times: each exercise trained once as its notebook runs it (all its runs "
              "together, at the threads `ablations.run` picks: one for the MNIST MLPs, which gain "
              "little from a second and lose much beside other work, every physical core for the "
              "CIFAR nets), by `python -m idmap_class time` on an idle "
              "machine" + (f": {', '.join(f'a {n}-core {c} ({d})' for c, n, d in when)}"
                                if when else "")
              + ". They are training times (loading the data comes on top, once per session); a "
                "machine busy with other "
              "work is slower, several times over when every core is taken, and the same machine "
              "varies from day to day. T4 times are not measured: for ResNet-110 they are derived "
              "from the pace a lent H200 measured, divided by the ratio of the two GPUs' memory "
              "bandwidths (these nets are bound by memory traffic); for the MLPs they are "
              "estimated from an assumed throughput (`ablations.COLAB_IMG_PER_S`); "
              f"both add {ab.COLAB_OVERHEAD_S:.0f} s for loading the data.", ""]
    for name, a in ab.ABLATIONS.items():
        lines += [f"### {name}: {a.title}", "", f"- **Paper**: {a.paper}.",
                  f"- **Goal**: {ABLATION_GOALS[name]}.",
                  *[_at_scale(name, sc) for sc in _own_scales(name)],
                  f"- **Runs**: {', '.join(f'`{k}`' for k in a.runs)}; the baseline is "
                  f"`{a.baseline}`.",
                  "- **Answers**: " + "; ".join(f"`{k}`: {v}" for k, v in a.answers.items()) + ".",
                  *[f"- **Expected at the {sc} scale** (the book's runs) {_expected(name, sc)}."
                    for sc in _own_scales(name)], ""]
    lines += marking()
    lines += ["**How an ablation is graded.** `ablations.check(name, runs, answers, prediction)`: "
              "every run of the exercise is present and intact (its config hash), its config is "
              "the exercise's at the scale the runs were trained at (classroom or gpu; a baseline, "
              "or runs of two scales mixed, are named as such), it finished (`ok`) or failed as a "
              "result (`fail`), and every answer agrees with the student's own runs: readings to a "
              "small tolerance, judgements (which is larger, which b_g is best) up to the seed "
              "spread above, within which either answer is accepted. Predictions and explanations "
              "are collected, not graded.", "",
              "**Runs that are the student's own.** Every student's runs train with their own "
              "seed, drawn once at random and kept in their runs folder (`idmap_runs/seed.txt`, "
              "exported with the runs); the book's recorded runs (`data/classroom`, in every "
              "clone) have seeds 0-2. A submitted run with one of the book's seeds, one trained "
              "after another prediction than the notebook's, or one recorded before its prediction "
              "is rejected, with that reason. The public site keeps the solutions (readers learn "
              "from them): the *answers* of an exercise can be copied from it, but they must agree "
              "with the student's own runs, and the runs cannot be copied. What the grader cannot "
              "see is who wrote the prediction and the explanation: read those (the CSV has them) "
              "when they count.", "",
              "## The student edition and the autograder", "",
              "```bash",
              "python -m idmap_class assign --out dist        # both chapters; --chapter "
              "ablations for one",
              "```", "",
              "writes, per chapter, `dist/<chapter>/dist/student/<chapter>.ipynb` (no solutions, "
              "no instructor notes; the grading cells still run and give hints) and "
              "`dist/<chapter>/dist/autograder/*.zip`, the package Gradescope takes (Canvas and "
              "other LMSs through Gradescope). It uses `otter assign` (Otter-Grader, pinned in "
              "requirements.txt); each graded cell of the book becomes an Otter test whose body is "
              "the grader of `idmap_class`. The zip carries the library, so the graders are "
              "the book's. Its environment is Python 3.11 with the CPU build of torch (pinned in "
              "`requirements-grading.txt`; grading trains nothing), and its setup installs no "
              "browser.", "",
              "The student editions are also in the repository, `book/student/<chapter>/` (the "
              "notebook and its `tests/`; `python -m idmap_class publish` writes them, and a "
              "test fails when a chapter changes without it): the Colab button of each exercise "
              "page opens that edition, not the page. Hand out either the Colab link or the "
              "student folder; both run as they are, in Jupyter and on Colab (the setup cell "
              "installs what is missing, otter-grader included, and upgrades nothing).",
              "",
              "Students submit the zip that the notebook's last cell makes: the notebook plus "
              "their recorded runs (`idmap_runs/`), so the autograder reads the runs instead of "
              "training again. In Jupyter it is Otter's export; on Colab, where Otter cannot "
              "export, the cell makes the same zip from the notebook as it is open and downloads "
              "it.",
              "", "## Grading a class", "", "```bash",
              "python -m idmap_class grade submissions/ --autograder "
              "dist/ablations/dist/autograder/*.zip --csv grades.csv", "```", "",
              "grades every `.ipynb` or `.zip` in the folder and writes one row per student, row "
              "by row as they are graded: each question's score and its feedback (the grader's "
              "hint where it failed), the total, a reason where a submission could not be graded "
              "(corrupt, empty, over its time limit: a row with 0, never a stop for the others), "
              "the spot check of its runs, a flag where two submissions share a seed or a run's "
              "history (\"same runs as ...\"), and every prediction and explanation as text for "
              "you to read. Nothing trains while grading: a submission without its runs is graded "
              "\"runs missing\".", "",
              "**Each submission runs in its own sandbox** "
              "([bubblewrap](https://github.com/containers/bubblewrap), Debian's and Ubuntu's "
              "package `bubblewrap`; `idmap_class/sandbox.py`): its notebook is executed in a "
              "fresh process with nothing writable but a scratch copy of that one submission, no "
              "network, no view of the other submissions, of the CSV or of your home, as an "
              "unprivileged user, under a time limit (`--time-limit`, 600 s), a memory limit "
              "(`--memory`, 6144 MB a process) and a limit of 512 processes and threads at once (a "
              "fork bomb stops there: a pids cgroup of its own where one can be made, else "
              "RLIMIT_NPROC; graded as root with neither, `grade` says so before it starts); "
              "everything it started is killed when it ends. Pickles in a submission (Otter's "
              "`.OTTER_LOG`) and checkpoints are never unpacked.", "",
              "**The marks are computed by the grader, not in the student's kernel.** The sandbox "
              "only hands back values: each ablation's answers and prediction, and for the "
              "implementation exercises the outputs of the student's code on inputs drawn from a "
              "fresh seed per submission. That code runs without the notebook's kernel and "
              "without `idmap_lib`, in a process started from the grader's own files; the seed is "
              "sent only once the code has loaded. This checkout's graders then judge the values, "
              "with the runs read from the submission's own files. Monkeypatching the graders or "
              "Otter inside the notebook changes nothing; an answer that is, calls or imports the "
              "library's references scores 0 and is flagged (the student edition says what may "
              "be imported); feedback is the grader's sentences and numbers only. **A spot "
              "check** trains the first steps of two of "
              "each submission's runs again from their recorded config and seed (a few seconds "
              "each) and compares them with what the run recorded: where a run does not reproduce "
              "(a seed edited, a classmate's run relabelled) every exercise graded from the "
              "submission's runs gets 0, with that reason (its runs share one seed). It compares "
              "the training loss of each of the run's first 8 steps: on the machine kind the run "
              "was trained on (CPU model, torch version, precision, threads) they must agree bit "
              "for bit, which no other seed does; on another machine kind bf16 rounds differently, "
              "so they are compared loosely and the CSV says \"weak test\" (`checks/spotcheck.py` "
              "gives the measured spread): for the strong test, grade on the machine kind the "
              "class trained on. Runs trained on a GPU are not compared on a CPU (the CSV says "
              "so).", "",
              "**Where it runs.** Linux with bubblewrap: as above. Where bubblewrap cannot run "
              "(macOS, a container without user namespaces) `grade` refuses, and `--no-sandbox` "
              "runs the students' code with your rights (time and memory limits, marks still "
              "computed by the grader): only on a machine you can throw away. On Gradescope each "
              "submission runs in its own container, and the zip's `run_otter.py` grades it as "
              "`grade` grades one row: Otter's log (a pickle), every pickle or weights file and "
              "every link removed unread, the notebook run in a subprocess (as the user `nobody` "
              "where bubblewrap cannot run), every mark computed outside it with the zip's "
              "graders. **Which command is safe where:** locally `grade`; on Gradescope the "
              "zip's `run_otter.py`; to try the zip, `tools/check_autograder.sh`. `otter run` "
              "would score in the student's kernel and load the submission's pickle with your "
              "rights: the zip refuses it before it reads the submission.", "",
              "**What still cannot be stopped.** A fact only the student's process "
              "sees (whether their unit changed its input in place) can be misreported by a "
              "notebook that patches torch; a student who trains runs for a classmate, with the "
              "classmate's notebook, hands in runs that are really trained; a prediction rewritten "
              "after a first run is allowed, and the old runs go with the submission "
              "(`idmap_runs/set_aside/`, named in the CSV's reason): read the predictions and "
              "explanations when they count.", "",
              "To try the autograder zip before uploading it to Gradescope, "
              "`tools/check_autograder.sh <zip> submissions/ graded/` builds a fresh venv each "
              "time from nothing but the zip's `environment.yml` and runs the zip's `run_otter.py` "
              "on each submission, laid out as Gradescope lays it out.", ""]
    return "\n".join(lines)
