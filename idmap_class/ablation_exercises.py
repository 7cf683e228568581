"""The ablation exercises as data (chapter 06_ablations): each one's runs, scales, answers and how
each answer is judged (:class:`Ablation`, :data:`ABLATIONS`), the readings of a run the answers use
(``final``, ``at_step``, ``mean_k``, ``failed``), and the config of each run at each scale
(``config``). ablations.py says how the exercises work; ablation_runs.py trains them,
ablation_grading.py grades them, ablation_times.py measures them."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# the book's recorded classroom runs (a repository checkout)
from idmap_book import CLASSROOM_RUNS as BOOK_RUNS
from idmap_book.evidence import metrics
from idmap_lib.engine import recipes
from idmap_lib.engine.build import build_model
from idmap_lib.models.introspect import residual_units

HERE = Path(__file__).resolve().parent
SPREAD_FILE = HERE / "spread.json"  # measured by `python -m idmap_class spread` (package data)


def book_runs() -> Path:
    """The folder of the book's recorded classroom runs, whose runs are the book's own (seed 0,
    exempt from the "is it yours" check): ``IDMAP_CLASSROOM`` where set -- ``assign`` sets it for
    Otter's check of the solutions, which runs a copy of the library in a temporary folder -- else
    the checkout's data/classroom. The trusted batch grader reads a submission's runs from the
    submission's own folder, which is never this one."""
    return Path(os.environ.get("IDMAP_CLASSROOM") or BOOK_RUNS)


def default_scale():
    """``IDMAP_ABLATION_SCALE`` if set (the tests run every exercise at ``quick`` scale), else
    ``gpu`` where a CUDA GPU is, else ``classroom``."""
    if os.environ.get("IDMAP_ABLATION_SCALE"):
        return os.environ["IDMAP_ABLATION_SCALE"]
    import torch
    return "gpu" if torch.cuda.is_available() else "classroom"


# ---- the exercises -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ablation:
    name: str
    title: str
    paper: str       # where in the papers
    chapter: str     # the book chapter the exercise goes with (file name without .ipynb)
    changes: str     # the one thing changed
    # key -> (experiment, recipe variant, model kwargs overrides); the runs the student trains
    runs: dict
    baseline: str    # the key of the unchanged net (the run a wrong submission most often is)
    # scale -> {"steps": ..., "subset": ..., "depth": ..., ...} (what differs from
    # `cpu_step_warmup`)
    scales: dict
    answers: dict    # answer name -> what it asks
    truth: Callable  # runs -> {answer: value from the student's runs}
    judge: dict = field(default_factory=dict)  # answer -> how it is compared (see _compare)
    checkpoint: bool = False  # keep the trained weights (exercises that probe the trained net)


def final(r, what="train_loss"):
    return float(r["final"][what])


def at_step(r, step, what="train_loss"):
    """The logged training loss (or error) of the window that ends nearest `step`."""
    rows = r["history"]["train"]
    return float(min(rows, key=lambda row: abs(row["step"] - step))[what])


def _early(r):
    """The training loss at the first third of the run (Paper A Fig 6 is about the start of
    training)."""
    return at_step(r, r["config"]["steps"] / 3)


def mean_k(r):
    """``metrics.mean_k`` of a gated run; NaN for a run without gates (a submission's, which the
    judge then fails)."""
    return metrics.mean_k(r) if r["final"].get("gates_k") else float("nan")


failed = metrics.broke  # "this depth breaks": the one definition, in the book's metrics


# the exercises' scales: data in the recipes (recipes.exercise_cifar_scales, EXERCISE_MNIST_SCALES)
STUCK_AT_CHANCE, QUICK, GPU_STEPS = (recipes.STUCK_AT_CHANCE, recipes.EXERCISE_QUICK,
                                     recipes.EXERCISE_GPU_STEPS)
cifar_scales, MNIST_SCALES = recipes.exercise_cifar_scales, recipes.EXERCISE_MNIST_SCALES
OFFERED = ("classroom", "gpu")  # the scales a student runs (quick is the tests')

B_G = (0, -2, -4, -6)
PLAIN_DEPTHS = (10, 20, 30, 40, 50)
K_DEPTHS = (2, 10, 20, 50)
PRUNE_FRACTION = 0.5


def _gate_runs():
    return {f"b{b}": ("a_table1_shortcuts", "exclusive_gating-b0", {"gate_bias": float(b)})
            for b in B_G}


def _best_b(runs):
    return min(B_G, key=lambda b: final(runs[f"b{b}"]))


def _breaking_depth(runs, kind):
    broken = [d for d in PLAIN_DEPTHS if failed(runs[f"{kind}-d{d}"])]
    return min(broken) if broken else None


ABLATIONS = {a.name: a for a in [
    Ablation(
        name="constant_scaling", title="Scale the shortcut by 1/2", chapter="03_scaled_shortcuts",
        paper="Paper A Table 1 (constant scaling, 0.5 on the shortcut, 1 on F) and Eqn 8",
        changes="h(x) = 0.5 x instead of x in every unit of the original ResNet",
        runs={"original": ("a_table1_shortcuts", "original", {}),
              "constant_scaling-0.5-1": ("a_table1_shortcuts", "constant_scaling-0.5-1", {})},
        baseline="original", scales=cifar_scales(2),
        answers={"direct_term": "Eqn 8: the factor prod(lambda) of the direct term from the last "
                                "unit to the first",
                 "loss_gap": "final training loss of the scaled net minus that of the original net "
                             "(your runs)",
                 "scaled_is_worse": "True if the scaled net ends with the higher training loss"},
        truth=lambda runs: {
            "direct_term": 0.5 ** units(runs["constant_scaling-0.5-1"]["config"]),
            "loss_gap": final(runs["constant_scaling-0.5-1"]) - final(runs["original"]),
            "scaled_is_worse": final(runs["constant_scaling-0.5-1"]) > final(runs["original"])},
        judge={"direct_term": ("rel", 1e-6), "loss_gap": ("abs", 0.01),
               "scaled_is_worse": ("sign", "loss_gap")}),
    Ablation(
        name="exclusive_gate_bias", title="Sweep the exclusive gate's initial bias b_g",
        chapter="03_scaled_shortcuts",
        paper="Paper A Table 1 (exclusive gating, b_g from 0 to -7) and Fig 2(c)",
        changes="the initial gate bias b_g of the exclusive gate, in {" + ", ".join(map(str, B_G))
        + "}",
        runs=_gate_runs(), baseline="b0", scales=cifar_scales(len(B_G)),
        answers={"best_b_g": "the b_g whose run ends with the lowest training loss",
                 "loss_b-6_minus_b0": "final training loss at b_g = -6 minus that at b_g = 0 (your "
                                      "runs)"},
        truth=lambda runs: {"best_b_g": _best_b(runs),
                            "loss_b-6_minus_b0": final(runs["b-6"]) - final(runs["b0"])},
        judge={"best_b_g": ("argmin", [(b, f"b{b}") for b in B_G]),
               "loss_b-6_minus_b0": ("abs", 0.01)}),
    Ablation(
        name="bn_after_addition", title="Move BN after the addition", chapter="04_relu_truncation",
        paper="Paper A Table 2 and Fig 4(b) (BN after addition), Sec 4.1 and Fig 6 (its slow "
              "start)",
        changes="the original unit with its last BN moved after the addition (Fig 4b)",
        runs={"original": ("a_table2_activations", "original-110", {}),
              "bn_after_add": ("a_table2_activations", "bn_after_add-110", {})},
        baseline="original", scales=cifar_scales(2),
        answers={"early_gap": "training loss at the first third of training (the logged step "
                              "nearest steps/3): BN-after-addition minus original (your runs)",
                 "slower_start": "True if BN after addition has the higher training loss at that "
                                 "step",
                 "final_gap": "final training loss, BN-after-addition minus original (your runs)",
                 "ends_worse": "True if BN after addition ends with the higher training loss"},
        truth=lambda runs: {
            "early_gap": _early(runs["bn_after_add"]) - _early(runs["original"]),
            "slower_start": _early(runs["bn_after_add"]) > _early(runs["original"]),
            "final_gap": final(runs["bn_after_add"]) - final(runs["original"]),
            "ends_worse": final(runs["bn_after_add"]) > final(runs["original"])},
        judge={"early_gap": ("abs", 0.01), "slower_start": ("sign", "early_gap"),
               "final_gap": ("abs", 0.01), "ends_worse": ("sign", "final_gap")}),
    Ablation(
        name="plain_depth", title="Where does a plain net break, and does Paper B's gate save it?",
        chapter="05_learning_identity",
        paper="Paper B Sec 4.1 and Table 1 (plain nets fail at d = 50 and 100) and its gated plain "
              "layer u = g(k) f(x) + (1 - g(k)) x",
        changes="the depth d of a plain MLP; then the same plain layers, each gated",
        runs={**{f"plain-d{d}": ("b_mnist", "plain-d10", {"d": d}) for d in PLAIN_DEPTHS},
              **{f"gated_plain-d{d}": ("b_mnist", "plain-d10", {"kind": "gated_plain", "d": d})
                 for d in PLAIN_DEPTHS}},
        baseline="plain-d10", scales=MNIST_SCALES,
        answers={"plain_breaks_at": "the smallest d of the sweep at which the plain net fails "
                                    "(status fail, or test error above 50 %); None if none does",
                 "gated_breaks_at": "the same for the gated plain net; None if none does",
                 "test_err_plain_d50": "the plain net's final test error at d = 50 (0-1; None if "
                                       "it failed before the end and has none)"},
        truth=lambda runs: {"plain_breaks_at": _breaking_depth(runs, "plain"),
                            "gated_breaks_at": _breaking_depth(runs, "gated_plain"),
                            "test_err_plain_d50": runs["plain-d50"]["final"].get("test_err")},
        judge={"plain_breaks_at": ("exact",), "gated_breaks_at": ("exact",),
               "test_err_plain_d50": ("abs", 0.005)}),
    Ablation(
        name="gate_depth", title="How far does k move with depth?", chapter="05_learning_identity",
        paper="Paper B Table 2 (mean learned k falls from 5.58 at d = 2 to 0.67 at d = 100)",
        changes="the depth d of a gated ResNet MLP (GResNet)",
        runs={f"gresnet-d{d}": ("b_mnist", "gresnet-d10", {"d": d}) for d in K_DEPTHS},
        baseline="gresnet-d10", scales=MNIST_SCALES,
        answers={f"mean_k_d{d}": f"the mean learned k of the d = {d} run" for d in K_DEPTHS}
        | {"k_falls_with_depth": "True if the mean k of the deepest run is below that of the "
                                 "shallowest"},
        truth=lambda runs: {**{f"mean_k_d{d}": mean_k(runs[f"gresnet-d{d}"]) for d in K_DEPTHS},
                            "k_falls_with_depth": mean_k(runs[f"gresnet-d{K_DEPTHS[-1]}"])
                            < mean_k(runs[f"gresnet-d{K_DEPTHS[0]}"])},
        judge={**{f"mean_k_d{d}": ("abs", 0.01) for d in K_DEPTHS},
               "k_falls_with_depth": ("sign_of", f"gresnet-d{K_DEPTHS[0]}",
                                      f"gresnet-d{K_DEPTHS[-1]}", "mean_k")}),
    Ablation(
        name="prune_by_k", title="Prune a GResNet by its gates", chapter="05_learning_identity",
        paper="Paper B Sec 4.1 (pruning the d = 100 GResNet, smallest k first, no retraining) and "
              "Table 1",
        changes="remove half the residual blocks of a trained net (no retraining): of a GResNet, "
                "those with the smallest k, or random ones; of an ungated ResNet, the same random "
                "ones",
        runs={"gresnet-d100": ("b_mnist", "gresnet-d100", {}),
              "resnet-d100": ("b_mnist", "resnet-d100", {})},
        baseline="resnet-d100", scales=MNIST_SCALES, checkpoint=True,
        answers={"gresnet_pruned_err": "test error of the GResNet with half its blocks removed, "
                                       "smallest k first",
                 "gresnet_random_err": "test error of the GResNet with half its blocks removed at "
                                       "random (seeded)",
                 "resnet_pruned_err": "test error of the ResNet with half its blocks removed at "
                                      "random (seeded)",
                 "greedy_beats_random": "True if removing the smallest-k blocks leaves the GResNet "
                                        "a lower test error than removing random ones",
                 "gated_prunes_better": "True if the GResNet pruned by k has a lower test error "
                                        "than the ResNet pruned at random"},
        truth=lambda runs: {"gresnet_pruned_err": runs["gresnet-d100"]["pruned_test_err"],
                            "gresnet_random_err": runs["gresnet-d100"]["pruned_random_test_err"],
                            "resnet_pruned_err": runs["resnet-d100"]["pruned_test_err"],
                            "greedy_beats_random": runs["gresnet-d100"]["pruned_test_err"]
                            < runs["gresnet-d100"]["pruned_random_test_err"],
                            "gated_prunes_better": runs["gresnet-d100"]["pruned_test_err"]
                            < runs["resnet-d100"]["pruned_test_err"]},
        judge={"gresnet_pruned_err": ("abs", 0.002), "gresnet_random_err": ("abs", 0.002),
               "resnet_pruned_err": ("abs", 0.002),
               "greedy_beats_random": ("sign_of", "gresnet-d100", "gresnet-d100", "pruned_test_err",
                                       "pruned_random_test_err"),
               "gated_prunes_better": ("sign_of", "gresnet-d100", "resnet-d100",
                                       "pruned_test_err")}),
]}


# ---- configs -------------------------------------------------------------------------------------

def resolve_scale(name: str, scale: str | None = None) -> str:
    """The scale whose configs ablation `name` trains at `scale` (default ``default_scale``):
    itself, or the scale it is the same as (the MNIST exercises' gpu scale is their classroom
    scale)."""
    ab, scale = ABLATIONS[name], scale or default_scale()
    if scale not in ab.scales:
        raise ValueError(f"unknown ablation scale {scale!r}; valid: {', '.join(ab.scales)}")
    return ab.scales[scale].get("same_as", scale)


def config(name: str, key: str, seed: int = 0, scale: str | None = None) -> dict:
    """The config of run `key` of ablation `name`: the recipe's config at the scale's
    ``recipe_scale`` (default ``cpu_step_warmup``, the CPU scale with the paper's step warm-up,
    which the recorded classroom runs were made with) with the exercise's one change and the scale's
    steps/subset/depth/warm-up. Its ``variant`` is `key`, its ``scale`` the ablation scale."""
    ab = ABLATIONS[name]
    if key not in ab.runs:
        raise ValueError(f"{name} has no run {key!r}; its runs: {', '.join(ab.runs)}")
    scale = resolve_scale(name, scale)
    experiment, variant, kwargs = ab.runs[key]
    s = ab.scales[scale]
    why = (f"{name}: {ab.changes}; the {scale} scale of the exercises ({s['steps']} steps: "
           f"recipes' exercise scales)")
    return recipes.config(experiment, variant, s.get("recipe_scale", recipes.JUMP_PROBE), seed,
                          overrides={
        **{k: v for k, v in s.items() if k not in ("recipe_scale", "same_as")}, "model": kwargs,
        "variant": key,
        "scale": f"ablation-{scale}", "why": {"ablation": why}})


def configs(name, seed=0, scale=None):
    return {k: config(name, k, seed, scale) for k in ABLATIONS[name].runs}

def units(cfg):
    return len(residual_units(build_model(cfg["model"])))


def same_text(a, b):
    return " ".join(str(a).split()) == " ".join(str(b).split())
