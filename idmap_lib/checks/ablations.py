"""Ablation exercises: predict, run (through the library, recorded with provenance), explain; and their graders.

Each ablation changes one thing in a recipe of ``idmap_lib.engine.recipes`` and trains it with
``idmap_lib.engine.trainer`` at a *classroom* scale (a recipe's ``cpu_step_warmup`` config at the depth, steps, warm-up and
divergence rule of :func:`cifar_scales` / :data:`MNIST_SCALES`: minutes on a laptop CPU) or, where a GPU is, at a
*gpu* scale (the papers' ResNet-110, <= 2 min an exercise on a T4). The student

1. writes a *prediction* (``run`` refuses to train without one, and stores it in the recorded run: the
   grader can tell it was written before the run);
2. runs the ablation: :func:`run` returns the recorded results, one per run of the exercise, each a result
   JSON with its config, config hash and provenance (trained only when missing, like ``results.run``);
3. answers the numeric questions from the runs (the grader compares them with the student's *own* runs);
4. explains (free text, collected for the instructor, not auto-graded).

:func:`check` grades a submission: every run exists and is intact (config hash), each run's config is the
asked ablation at the asked scale (not the baseline, not another scale), each run finished (``ok``) or
failed as a result (``fail``), and each answer agrees with the student's runs: readings to a reading
tolerance, judgements (which is larger, which is best) up to the seed spread measured by the book
(:data:`SPREAD`, from 3 seeds per run; ``python -m idmap_lib.checks spread`` measures it again).
"""
from __future__ import annotations

import copy
import datetime
import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..book import CLASSROOM_RUNS as BOOK_RUNS  # the book's recorded classroom runs (a repository checkout)
from ..book import default_runs_dir  # noqa: F401  (the reader's runs folder: ablations.default_runs_dir)
from ..engine import recipes
from ..engine.results import config_hash, find_result, save_result
from .grading import fail as _fail, grader as _grader

HERE = Path(__file__).resolve().parent
SPREAD_FILE = HERE / "spread.json"  # measured by `python -m idmap_lib.checks spread` (package data)
SEEDS = (0, 1, 2)  # the seeds the book measures the spread over


def book_runs() -> Path:
    """The folder of the book's recorded classroom runs, whose runs are the book's own (seed 0, exempt from the
    "is it yours" check): ``IDMAP_CLASSROOM`` where set -- ``assign`` sets it for Otter's check of the solutions,
    which runs a copy of the library in a temporary folder -- else the checkout's data/classroom. The trusted batch
    grader reads a submission's runs from the submission's own folder, which is never this one."""
    return Path(os.environ.get("IDMAP_CLASSROOM") or BOOK_RUNS)


def default_scale():
    """``IDMAP_ABLATION_SCALE`` if set (the tests run every exercise at ``quick`` scale), else ``gpu`` where a
    CUDA GPU is, else ``classroom``."""
    if os.environ.get("IDMAP_ABLATION_SCALE"):
        return os.environ["IDMAP_ABLATION_SCALE"]
    import torch
    return "gpu" if torch.cuda.is_available() else "classroom"


# ---- the exercises ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ablation:
    name: str
    title: str
    paper: str       # where in the papers
    chapter: str     # the book chapter the exercise goes with (file name without .ipynb)
    changes: str     # the one thing changed
    runs: dict       # key -> (experiment, recipe variant, model kwargs overrides); the runs the student trains
    baseline: str    # the key of the unchanged net (the run a wrong submission most often is)
    scales: dict     # scale -> {"steps": ..., "subset": ..., "depth": ..., ...} (what differs from `cpu_step_warmup`)
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
    """The training loss at the first third of the run (Paper A Fig 6 is about the start of training)."""
    return at_step(r, r["config"]["steps"] / 3)


def mean_k(r):
    ks = r["final"].get("gates_k") or []
    return sum(ks) / len(ks) if ks else float("nan")


def failed(r):
    """A run that failed as a result (diverged, or stuck at chance: the recipe's rule), or ended with
    test error above 50 %."""
    return r["status"] == "fail" or r["final"].get("test_err", 1.0) > 0.5


# classroom: a scale a class can run in minutes on a laptop CPU, fixed here (not the experiment chapters'
# CPU scale, which keeps the papers' depth and takes ~5 min a run): depth-20 CIFAR nets for 150 steps with a
# 10-step warm-up, the paper's MNIST nets for 400 steps, and the rule that also fails a run stuck at chance
# after a quarter of its steps. quick: the tests' end-to-end runs (a few steps of small batches: it checks that
# everything runs, not what it shows).
# gpu: the papers' networks for a GPU (Colab's T4), <= 2 min an exercise there (see gpu_time): the CIFAR
# exercises at the recipe's depth (ResNet-110), on the chapters' CPU-scale data and schedule shape (the lr ramps
# 0.01 -> 0.1 over the first quarter: a 0.01 -> 0.1 jump would be a shock the paper's 64k steps do not have,
# chapter 11), for as many steps as the T4's derived pace allows the exercise's runs (GPU_STEPS); the MNIST
# exercises are the paper's networks already, so their gpu scale *is* the classroom scale (same runs, same hash).
STUCK_AT_CHANCE = {"grace_fraction": 0.25, "chance_margin": 0.01}
QUICK = {"steps": 4, "batch_size": 16, "subset": {"train_per_class": 8, "test_per_class": 4}}
GPU_STEPS = {2: 250, 4: 125}  # runs in the exercise -> steps of each (2 x 250 x 128 images on a T4: gpu_time)


def cifar_scales(runs: int) -> dict:
    steps = GPU_STEPS[runs]
    return {"classroom": {"steps": 150, "depth": 20, "warmup_steps": 10, "divergence": STUCK_AT_CHANCE},
            "gpu": {"steps": steps, "recipe_scale": "cpu", "warmup_steps": steps // 4},
            "quick": {**QUICK, "depth": 20}}


MNIST_SCALES = {"classroom": {"steps": 400, "divergence": STUCK_AT_CHANCE}, "gpu": {"same_as": "classroom"},
                "quick": QUICK}
OFFERED = ("classroom", "gpu")  # the scales a student runs (quick is the tests')

B_G = (0, -2, -4, -6)
PLAIN_DEPTHS = (10, 20, 30, 40, 50)
K_DEPTHS = (2, 10, 20, 50)
PRUNE_FRACTION = 0.5


def _gate_runs():
    return {f"b{b}": ("a_table1_shortcuts", "exclusive_gating-b0", {"gate_bias": float(b)}) for b in B_G}


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
        answers={"direct_term": "Eqn 8: the factor prod(lambda) of the direct term from the last unit to the first",
                 "loss_gap": "final training loss of the scaled net minus that of the original net (your runs)",
                 "scaled_is_worse": "True if the scaled net ends with the higher training loss"},
        truth=lambda runs: {
            "direct_term": 0.5 ** _units(runs["constant_scaling-0.5-1"]["config"]),
            "loss_gap": final(runs["constant_scaling-0.5-1"]) - final(runs["original"]),
            "scaled_is_worse": final(runs["constant_scaling-0.5-1"]) > final(runs["original"])},
        judge={"direct_term": ("rel", 1e-6), "loss_gap": ("abs", 0.01),
               "scaled_is_worse": ("sign", "loss_gap")}),
    Ablation(
        name="exclusive_gate_bias", title="Sweep the exclusive gate's initial bias b_g", chapter="03_scaled_shortcuts",
        paper="Paper A Table 1 (exclusive gating, b_g from 0 to -7) and Fig 2(c)",
        changes="the initial gate bias b_g of the exclusive gate, in {" + ", ".join(map(str, B_G)) + "}",
        runs=_gate_runs(), baseline="b0", scales=cifar_scales(len(B_G)),
        answers={"best_b_g": "the b_g whose run ends with the lowest training loss",
                 "loss_b-6_minus_b0": "final training loss at b_g = -6 minus that at b_g = 0 (your runs)"},
        truth=lambda runs: {"best_b_g": _best_b(runs),
                            "loss_b-6_minus_b0": final(runs["b-6"]) - final(runs["b0"])},
        judge={"best_b_g": ("argmin", [(b, f"b{b}") for b in B_G]), "loss_b-6_minus_b0": ("abs", 0.01)}),
    Ablation(
        name="bn_after_addition", title="Move BN after the addition", chapter="04_relu_truncation",
        paper="Paper A Table 2 and Fig 4(b) (BN after addition), Sec 4.1 and Fig 6 (its slow start)",
        changes="the original unit with its last BN moved after the addition (Fig 4b)",
        runs={"original": ("a_table2_activations", "original-110", {}),
              "bn_after_add": ("a_table2_activations", "bn_after_add-110", {})},
        baseline="original", scales=cifar_scales(2),
        answers={"early_gap": "training loss at the first third of training (the logged step nearest "
                              "steps/3): BN-after-addition minus original (your runs)",
                 "slower_start": "True if BN after addition has the higher training loss at that step",
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
        paper="Paper B Sec 4.1 and Table 1 (plain nets fail at d = 50 and 100) and its gated plain layer "
              "u = g(k) f(x) + (1 - g(k)) x",
        changes="the depth d of a plain MLP; then the same plain layers, each gated",
        runs={**{f"plain-d{d}": ("b_mnist", "plain-d10", {"d": d}) for d in PLAIN_DEPTHS},
              **{f"gated_plain-d{d}": ("b_mnist", "plain-d10", {"kind": "gated_plain", "d": d})
                 for d in PLAIN_DEPTHS}},
        baseline="plain-d10", scales=MNIST_SCALES,
        answers={"plain_breaks_at": "the smallest d of the sweep at which the plain net fails (status fail, or "
                                    "test error above 50 %); None if none does",
                 "gated_breaks_at": "the same for the gated plain net; None if none does",
                 "test_err_plain_d50": "the plain net's final test error at d = 50 (0-1; None if it failed "
                                       "before the end and has none)"},
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
        | {"k_falls_with_depth": "True if the mean k of the deepest run is below that of the shallowest"},
        truth=lambda runs: {**{f"mean_k_d{d}": mean_k(runs[f"gresnet-d{d}"]) for d in K_DEPTHS},
                            "k_falls_with_depth": mean_k(runs[f"gresnet-d{K_DEPTHS[-1]}"])
                            < mean_k(runs[f"gresnet-d{K_DEPTHS[0]}"])},
        judge={**{f"mean_k_d{d}": ("abs", 0.01) for d in K_DEPTHS},
               "k_falls_with_depth": ("sign_of", f"gresnet-d{K_DEPTHS[0]}", f"gresnet-d{K_DEPTHS[-1]}", "mean_k")}),
    Ablation(
        name="prune_by_k", title="Prune a GResNet by its gates", chapter="05_learning_identity",
        paper="Paper B Sec 4.1 (pruning the d = 100 GResNet, smallest k first, no retraining) and Table 1",
        changes="remove half the residual blocks of a trained net (no retraining): of a GResNet, those with the "
                "smallest k, or random ones; of an ungated ResNet, the same random ones",
        runs={"gresnet-d100": ("b_mnist", "gresnet-d100", {}), "resnet-d100": ("b_mnist", "resnet-d100", {})},
        baseline="resnet-d100", scales=MNIST_SCALES, checkpoint=True,
        answers={"gresnet_pruned_err": "test error of the GResNet with half its blocks removed, smallest k first",
                 "gresnet_random_err": "test error of the GResNet with half its blocks removed at random (seeded)",
                 "resnet_pruned_err": "test error of the ResNet with half its blocks removed at random (seeded)",
                 "greedy_beats_random": "True if removing the smallest-k blocks leaves the GResNet a lower test "
                                        "error than removing random ones",
                 "gated_prunes_better": "True if the GResNet pruned by k has a lower test error than the ResNet "
                                        "pruned at random"},
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
               "gated_prunes_better": ("sign_of", "gresnet-d100", "resnet-d100", "pruned_test_err")}),
]}


# ---- configs ----------------------------------------------------------------------------------------------

def _rescale_schedule(s, steps):
    s = copy.deepcopy(s)
    old = s["total"]
    s["total"] = steps
    if s["kind"] == "step":
        s["milestones"] = [max(1, round(m * steps / old)) for m in s["milestones"]]
        if s.get("warmup_steps"):
            s["warmup_steps"] = min(s["warmup_steps"], max(1, steps // 10))
    return s


def resolve_scale(name: str, scale: str | None = None) -> str:
    """The scale whose configs ablation `name` trains at `scale` (default ``default_scale``): itself, or the
    scale it is the same as (the MNIST exercises' gpu scale is their classroom scale)."""
    ab, scale = ABLATIONS[name], scale or default_scale()
    if scale not in ab.scales:
        raise ValueError(f"unknown ablation scale {scale!r}; valid: {', '.join(ab.scales)}")
    return ab.scales[scale].get("same_as", scale)


def config(name: str, key: str, seed: int = 0, scale: str | None = None) -> dict:
    """The config of run `key` of ablation `name`: the recipe's config at the scale's ``recipe_scale`` (default
    ``cpu_step_warmup``, the CPU scale with the paper's step warm-up, which the recorded classroom runs were made
    with) with the exercise's one change and the scale's steps/subset/depth/warm-up. Its ``variant`` is `key`, its
    ``scale`` the ablation scale."""
    ab = ABLATIONS[name]
    if key not in ab.runs:
        raise ValueError(f"{name} has no run {key!r}; its runs: {', '.join(ab.runs)}")
    scale = resolve_scale(name, scale)
    experiment, variant, kwargs = ab.runs[key]
    s = ab.scales[scale]
    cfg = recipes.config(experiment, variant, s.get("recipe_scale", "cpu_step_warmup"), seed)
    cfg["model"]["kwargs"].update(kwargs)
    if "depth" in s:
        cfg["model"]["kwargs"]["depth"] = s["depth"]
    steps = s["steps"]
    cfg.update(steps=steps, schedule=_rescale_schedule(cfg["schedule"], steps),
               log_every=max(1, steps // 15), eval_every=steps, variant=key, scale=f"ablation-{scale}")
    if "subset" in s:
        cfg["subset"] = dict(s["subset"])
    if "batch_size" in s:
        cfg["batch_size"] = s["batch_size"]
    if "warmup_steps" in s and cfg["schedule"].get("warmup_steps"):
        cfg["schedule"]["warmup_steps"] = s["warmup_steps"]
    if "divergence" in s:
        cfg["divergence"] = dict(s["divergence"])
    cfg["why"] = {**cfg.get("why", {}), "ablation": f"{name}: {ab.changes}; the {scale} scale of the exercises "
                  f"({steps} steps; see cifar_scales / MNIST_SCALES)"}
    return cfg


def configs(name, seed=0, scale=None):
    return {k: config(name, k, seed, scale) for k in ABLATIONS[name].runs}


# ---- running ------------------------------------------------------------------------------------------------

def _units(cfg):
    from ..engine.build import build_model
    from ..models.introspect import residual_units
    return len(residual_units(build_model(cfg["model"])))


def _prune_eval(result, cfg, data, ckpt_dir, fraction=PRUNE_FRACTION, seed=0):
    """Test error of the trained net with `fraction` of its residual blocks removed (no retraining,
    ``idmap_lib.models.pruning``: a removed block is exactly the identity, as a gate at k <= 0 makes it): of a
    gated net, the blocks with the smallest k, and also blocks chosen at random (seeded); of an ungated one,
    random blocks. The same random blocks in both nets."""
    import torch

    from ..engine.batches import evaluate, prepare_data
    from ..engine.build import build_model
    from ..engine.distributed import context
    from ..engine.results import run_name
    from ..models import pruning
    from ..models.introspect import gates, residual_units
    model = build_model(cfg["model"])
    ck = torch.load(Path(ckpt_dir) / f"{run_name(cfg)}.pt", map_location="cpu", weights_only=False)
    model.load_state_dict(ck["model"])
    n = int(len(residual_units(model)) * fraction)
    device = torch.device("cpu")
    D = prepare_data(cfg, data, device)

    def pruned_error(blocks):
        with pruning.removed(model, blocks):
            return evaluate(model, D, None, False, device, context(device))[1]

    at_random = sorted(random.Random(seed).sample(range(len(residual_units(model))), n))
    out = {"pruned_fraction": fraction, "pruned_random_blocks": at_random}
    if gates(model):
        greedy = sorted(pruning.by_gate(model)[:n])
        out.update(pruned_test_err=pruned_error(greedy), pruned_blocks=greedy,
                   pruned_random_test_err=pruned_error(at_random))
    else:
        out.update(pruned_test_err=pruned_error(at_random), pruned_blocks=at_random)
    return out


def grading() -> bool:
    """True while a grader runs the notebook (Otter's grading mode, locally or on Gradescope; or IDMAP_GRADING=1):
    a submission is graded as handed in, so ``run`` never trains then."""
    if os.environ.get("IDMAP_GRADING", "").strip() not in ("", "0"):
        return True
    try:
        from otter.check.notebook import Notebook
    except ImportError:
        return False
    return bool(getattr(Notebook, "_grading_mode", False))


def student_seed(out_dir=None) -> int:
    """Your seed: drawn once at random for your runs folder and kept there (``seed.txt``, which the export zips with
    the runs), never one of the book's seeds -- so a run of yours is yours, and a copy of the book's recorded runs
    (data/classroom, seeds 0-2) is told apart. The book's own pages (their runs folder is data/classroom) use seed 0.
    A folder with runs but no seed.txt: the seed of its runs."""
    import secrets

    out = Path(out_dir or default_runs_dir())
    f = out / "seed.txt"
    if f.is_file():
        return int(f.read_text().strip())
    if out.resolve() == book_runs().resolve():
        return 0
    recorded = sorted(out.glob("*.json")) if out.is_dir() else []
    if recorded:
        return int(json.loads(recorded[0].read_text())["config"]["seed"])
    seed = 1000 + secrets.randbelow(10 ** 6)
    out.mkdir(parents=True, exist_ok=True)
    f.write_text(f"{seed}\n")
    return seed


def _lookup(name, seed, scale, out):
    """(configs, {key: recorded result or None}) of ablation `name` in folder `out`: at `scale`; with no scale asked,
    at ``default_scale`` unless the folder holds every run at another offered scale and not all at the default (runs
    trained on a GPU, then graded, or reopened, on a CPU: found, not trained again at the CPU's scale)."""
    first = scale or default_scale()
    order = [first] + ([] if scale else [s for s in OFFERED if s != first])
    looked = []
    for sc in order:
        cfgs = configs(name, seed, sc)
        found = {k: find_result(c, out, same_training=False) for k, c in cfgs.items()}
        if all(r is not None for r in found.values()):
            return cfgs, found
        looked.append((cfgs, found))
    return looked[0]


SET_ASIDE = "set_aside"  # a runs folder's subfolder for runs trained after an earlier prediction (kept, handed in)


def _valid_prediction(prediction) -> bool:
    return isinstance(prediction, str) and len(prediction.strip()) >= 10


def _set_aside_if_rewritten(name, found, prediction, out):
    """`found` with the runs trained after another prediction than `prediction` moved to ``out/set_aside/`` (and None
    in their place, to be trained again after the corrected prediction); says so. A typo fixed after the run then
    costs a retraining, never the exercise; the old runs stay in the folder (and in the submission), dated."""
    stale = {k: r for k, r in found.items() if r is not None and (r.get("exercise") or {}).get("name") == name
             and not _same_text((r.get("exercise") or {}).get("prediction", ""), prediction)}
    if not stale:
        return found
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    where = out / SET_ASIDE / f"{name}-{stamp}"
    where.mkdir(parents=True, exist_ok=True)
    for r in stale.values():
        Path(r["path"]).rename(where / Path(r["path"]).name)
    print(f"your prediction for {name} changed since its runs were trained: {len(stale)} runs set aside in {where} "
          f"(kept; they go with your submission) and trained again after the new prediction")
    return {k: (None if k in stale else r) for k, r in found.items()}


def _started_file(name, ckpt: Path) -> Path:
    return ckpt / f"{name}.started.json"


def _started(name, prediction, cfgs, ckpt: Path) -> str:
    """When the runs of `name` now training were first started after `prediction` (an interrupted exercise resumes
    with its first start's time); a prediction rewritten since an interruption restarts its runs from step 0 (their
    checkpoints were trained after the old one)."""
    from ..engine.results import run_name

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    f = _started_file(name, ckpt)
    before = json.loads(f.read_text()) if f.exists() else None
    if before and before.get("prediction") != prediction:
        for cfg in cfgs:
            (ckpt / f"{run_name(cfg)}.pt").unlink(missing_ok=True)
        print(f"your prediction for {name} changed since its runs were interrupted: they start again from step 0")
        before = None
    ckpt.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"prediction": prediction, "prediction_recorded": (before or {}).get(
        "prediction_recorded", now)}))
    return (before or {}).get("prediction_recorded", now)


def run(name: str, prediction: str, seed: int | None = None, scale: str | None = None, out_dir=None, data=None,
        progress=True) -> dict:
    """Train (or find, by config hash, in `out_dir`) every run of ablation `name`; returns {key: result}.

    `seed`: default ``student_seed`` (yours, kept in your runs folder). `scale`: default ``default_scale`` (gpu where
    a CUDA GPU is), or the offered scale at which `out_dir` already holds every run (``_lookup``).
    `prediction`: what you expect, written before running; it is stored with each run it starts (without one,
    nothing trains: it says so, and the runs not recorded yet come back as None). While a grader
    runs the notebook (``grading``) nothing trains: a run the submission lacks comes back as None, and the check
    grades it "runs missing"."""
    import time

    from ..engine import results, trainer
    ab = ABLATIONS[name]
    out = Path(out_dir or default_runs_dir())
    cfgs, found = _lookup(name, student_seed(out) if seed is None else seed, scale, out)
    if not grading() and _valid_prediction(prediction) and out.resolve() != book_runs().resolve():
        found = _set_aside_if_rewritten(name, found, prediction, out)
    todo = [k for k, r in found.items() if r is None]
    if todo and grading():
        print(f"runs missing: {', '.join(todo)} of {name} are not in the submission's {out}; a grader never trains")
        return found
    if todo:
        if not _valid_prediction(prediction):
            # said, not raised: a blank notebook still runs top to bottom to its export ("Run all"), its runs None
            print(f"nothing trained: write your prediction first (a sentence or two in `prediction`), then run this "
                  f"cell again -- the exercise is to predict, then run, then explain ({', '.join(todo)} not run yet)")
            return found
        ckpt = out / "checkpoints"  # an interrupted exercise resumes from them (a submission leaves them out)
        now = _started(name, prediction, [cfgs[k] for k in todo], ckpt)
        t0 = time.perf_counter()
        new = trainer.train_many([cfgs[k] for k in todo], data=data, out_dir=out, checkpoint_dir=ckpt, resume=True,
                                 checkpoint_minutes=3, progress=progress)  # (a disconnect loses at most 3 min)
        wall = time.perf_counter() - t0  # the whole exercise: its runs train interleaved, data loaded once
        _started_file(name, ckpt).unlink(missing_ok=True)  # (Ctrl-C: trainer.TrainingInterrupted, the note kept)
        for k, r in zip(todo, new):
            r["exercise"] = {"name": name, "prediction": prediction, "prediction_recorded": now,
                             "runs_trained_together": todo, "wall_s_together": wall}
            if ab.checkpoint:  # (pruning reads the trained weights from the checkpoint)
                r.update(_prune_eval(r, cfgs[k], data, ckpt))
            r.pop("path", None)
            r["path"] = str(save_result(r, out))
            found[k] = r
            if not ab.checkpoint:  # recorded: its weights are no longer needed
                (ckpt / f"{results.run_name(cfgs[k])}.pt").unlink(missing_ok=True)
    return found


# ---- grading ------------------------------------------------------------------------------------------------

def _write_spread(result: dict) -> None:
    SPREAD_FILE.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def spread() -> dict:
    """{ablation: {"runs": {key: {metric: std over seeds}}, "answers": {answer: std over seeds}}}, as measured."""
    return json.loads(SPREAD_FILE.read_text()) if SPREAD_FILE.exists() else {}


def spread_key(name, scale="classroom"):
    """Where the spread file keeps ablation `name` at `scale`: its name (the classroom scale, which the tests'
    quick scale is judged by too), or ``name@gpu``."""
    return f"{name}@gpu" if resolve_scale(name, scale) == "gpu" else name


def _spread_of(sk, answer):
    return spread().get(sk, {}).get("answers", {}).get(answer, 0.0)


def _diagnose_config(name, key, r, scale):
    """Why the run's config is not the asked one: the baseline, another scale, another run of the exercise."""
    ab = ABLATIONS[name]
    cfg, seed = r["config"], r["config"].get("seed", 0)
    want = config(name, key, seed, scale)
    if config_hash(cfg) == config_hash(want):
        return None
    for other in [name] + [n for n in ABLATIONS if n != name]:
        for s in [scale] + [x for x in ABLATIONS[other].scales if x != scale]:
            for k in ABLATIONS[other].runs:
                if config_hash(cfg) == config_hash(config(other, k, seed, s)):
                    if s != scale:
                        return (f"run {key!r} is the {s} scale ({cfg['steps']} steps); the exercise asks for the "
                                f"{scale} scale ({want['steps']} steps)",
                                f"run it with ablations.run({name!r}, prediction) and the default scale")
                    if k == ab.baseline and key != ab.baseline and other == name:
                        return (f"run {key!r} is the baseline ({ab.baseline}), not the ablation "
                                f"({ab.changes})", "submit the run the exercise asks for: ablations.run() makes it")
                    return (f"run {key!r} is the config of {other}/{k}", "pass the dict ablations.run returned")
    if cfg.get("scale") != want["scale"] or cfg.get("steps") != want["steps"]:
        return (f"run {key!r} has scale {cfg.get('scale')!r} and {cfg.get('steps')} steps; the exercise asks for "
                f"{want['scale']!r} with {want['steps']} steps", "do not change the recipe: run the exercise's")
    if cfg.get("model") == config(name, ab.baseline, seed, scale)["model"] and key != ab.baseline:
        return (f"run {key!r} trains the baseline net ({ab.baseline})", f"the ablation changes {ab.changes}")
    diff = sorted(k for k in set(cfg) | set(want) if k != "why" and cfg.get(k) != want.get(k))
    return (f"run {key!r} differs from the asked config in {', '.join(diff)}",
            "train the exercise's configs (ablations.run), unchanged")


def _compare(name, key, judge, got, truth, runs, sk):
    """None if `got` agrees with `truth` (from the student's runs) under `judge`, up to the seed spread recorded
    under `sk` (``spread_key``), else (what, hint)."""
    kind = judge[0]
    sp = _spread_of(sk, key)
    if kind in ("abs", "rel"):
        if got is None and truth is None:
            return None
        if not isinstance(got, (int, float)) or isinstance(got, bool) or truth is None:
            return (f"{key} = {got!r}, your runs give {truth!r}", "a number, read from your runs")
        tol = judge[1] * (abs(truth) if kind == "rel" else 1)
        if not abs(got - truth) <= tol:
            return (f"{key} = {got:.4g}, your runs give {truth:.4g}",
                    "read it from your own recorded runs (the table the run cell printed)")
        return None
    if kind == "exact":
        return None if got == truth else (f"{key} = {got!r}, your runs give {truth!r}",
                                          "read it from the table of your runs")
    if kind in ("sign", "sign_of"):
        if not isinstance(got, bool):
            return (f"{key} = {got!r}, expected True or False", "a judgement: True or False")
        if kind == "sign":  # the difference answer judge[1]
            diff = ABLATIONS[name].truth(runs)[judge[1]]
            sp = _spread_of(sk, judge[1])
        else:  # metric judge[3] of run judge[1] vs metric judge[4] (default: the same) of run judge[2]
            def m(r, what):
                return mean_k(r) if what == "mean_k" else float(r[what])
            diff = m(runs[judge[2]], judge[-1]) - m(runs[judge[1]], judge[3])
            sp = _spread_of(sk, key) or max(
                spread().get(sk, {}).get("runs", {}).get(judge[i], {}).get(judge[j], 0.0)
                for i, j in ((1, 3), (2, -1)))
        if abs(diff) <= sp:  # within the seed spread: the runs cannot tell, either answer stands
            return None
        return None if got == truth else (f"{key} = {got}, but your runs say {truth} (difference {diff:+.4g}, "
                                          f"beyond the seed spread {sp:.3g})", "compare your own runs")
    if kind == "argmin":
        vals = {v: final(runs[k]) for v, k in judge[1]}
        best = min(vals.values())
        sp = max((spread().get(sk, {}).get("runs", {}).get(k, {}).get("train_loss", 0.0) for _, k in judge[1]),
                 default=0.0)
        ok = {v for v, x in vals.items() if x - best <= sp}
        return None if got in ok else (f"{key} = {got!r}; your runs' lowest loss is at {truth!r} "
                                       f"(within the seed spread {sp:.3g}: {sorted(ok)})", "read your runs' table")
    raise ValueError(kind)


def _same_text(a, b):
    return " ".join(str(a).split()) == " ".join(str(b).split())


def _not_yours(key, r, prediction):
    """Why run `r` is not the student's own (what, hint), or None. The book's own pages (runs recorded in
    data/classroom) are exempt: they show the book's runs."""
    path = r.get("path")
    if path and Path(path).resolve().is_relative_to(book_runs().resolve()):
        return None
    ex, seed = r.get("exercise") or {}, r["config"].get("seed")
    if seed in SEEDS:
        return (f"run {key!r} has seed {seed}, one of the book's recorded seeds: a copy of the book's runs "
                f"(data/classroom) is not yours", "train your own runs: ablations.run(name, prediction) uses your seed")
    if not ex:
        return (f"run {key!r} was not trained by ablations.run (no prediction recorded with it)",
                "train it with ablations.run(name, prediction)")
    if prediction is not None and isinstance(prediction, str) and prediction.strip() and \
            not _same_text(ex.get("prediction", ""), prediction):
        return (f"run {key!r} was trained with another prediction than this notebook's", "your runs are trained "
                "after your own prediction is written: write it, then run the run cell")
    when = r.get("date") or (r.get("provenance") or {}).get("date")
    if when and ex.get("prediction_recorded") and str(when) < str(ex["prediction_recorded"]):
        return (f"run {key!r} was trained before its prediction was recorded", "write the prediction, then run")
    return None


def _load(r):
    if isinstance(r, (str, os.PathLike)):
        return json.loads(Path(r).read_text())
    return r


def _as_ablation_grader(name):
    def check(runs, answers, prediction=None, scale=None):
        return _check(name, runs, answers, prediction, scale)
    check.__name__ = check.__qualname__ = f"check_{name}"
    return _grader(f"`answers` of {name} (still ...)")(check)


def submitted_scale(name, runs) -> str | None:
    """The offered scale (classroom or gpu) the submitted runs were trained at, read from the first recorded one;
    None if none is."""
    for r in runs.values():
        label = (r or {}).get("config", {}).get("scale", "") if isinstance(r, dict) else ""
        for s in OFFERED:
            if label == f"ablation-{resolve_scale(name, s)}":
                return s
    return None


def _check(name, runs, answers, prediction, scale):
    """Grade at `scale`, else the tests' IDMAP_ABLATION_SCALE, else the offered scale the runs were trained at (a
    class may train on CPUs and on GPUs: the instructor's machine grades both), else ``default_scale``."""
    ab, c = ABLATIONS[name], f"check_{name}"
    if not isinstance(runs, dict) or not runs:
        _fail(c, f"no runs (got {type(runs).__name__})", f"run the run cell: runs = ablations.run({name!r}, prediction)")
    runs = {k: _load(v) for k, v in runs.items()}
    scale = scale or os.environ.get("IDMAP_ABLATION_SCALE") or submitted_scale(name, runs) or default_scale()
    for key in ab.runs:
        if key not in runs:
            _fail(c, f"the run {key!r} is missing", f"ablations.run({name!r}, prediction) trains all of: "
                  f"{', '.join(ab.runs)}")
        r = runs[key]
        if r is None:
            _fail(c, f"runs missing: no recorded run {key!r} (not run yet, or not handed in)",
                  "write your prediction and run the run cell; hand in the notebook with its idmap_runs/ folder "
                  "(the export cell zips both): a grader never trains")
        if not isinstance(r, dict) or "config" not in r or "config_hash" not in r:
            _fail(c, f"run {key!r} is not a recorded run", "pass what ablations.run returned")
        if config_hash(r["config"]) != r["config_hash"]:
            _fail(c, f"run {key!r}: its config no longer matches its config hash (edited after the run)",
                  "submit the recorded run unchanged")
        why = _diagnose_config(name, key, r, scale)
        if why:
            _fail(c, *why)
        if r.get("status") not in ("ok", "fail"):
            _fail(c, f"run {key!r} has status {r.get('status')!r}: it did not finish",
                  "let it run to the end (a failure, status 'fail', is a result too)")
        if "provenance" not in r and "versions" not in r:
            _fail(c, f"run {key!r} has no provenance", "pass what ablations.run returned")
        if ab.checkpoint and "pruned_test_err" not in r:
            _fail(c, f"run {key!r} has no pruning measurement", "ablations.run measures it after training")
        copied = _not_yours(key, r, prediction)
        if copied:
            _fail(c, *copied)
    if not isinstance(answers, dict):
        _fail(c, f"answers is a {type(answers).__name__}, not a dict", f"answers = {{{', '.join(map(repr, ab.answers))}: ...}}")
    missing = [a for a in ab.answers if a not in answers or answers[a] is Ellipsis]
    if len(missing) == len(ab.answers) or all(answers.get(a) is Ellipsis for a in ab.answers):
        raise NotImplementedError
    if missing:
        _fail(c, f"no answer for {', '.join(missing)}", "fill in every entry of `answers`")
    if prediction is not None and (not isinstance(prediction, str) or not prediction.strip()):
        _fail(c, "no prediction", "write what you expected before the run; it is collected with your answers")
    truth = ab.truth(runs)
    for a in ab.answers:
        bad = _compare(name, a, ab.judge[a], answers[a], truth[a], runs, spread_key(name, scale))
        if bad:
            _fail(c, *bad)
    return f"{len(ab.runs)} recorded runs of {name} at the {scale} scale; {len(ab.answers)} answers agree with them"


CHECKS = {name: _as_ablation_grader(name) for name in ABLATIONS}


def check(name, runs, answers, prediction=None, scale=None):
    """Grade ablation `name`: prints PASSED, NOT ATTEMPTED (answers left as ...), or raises AssertionError."""
    return CHECKS[name](runs, answers, prediction, scale)


def status(name, runs, answers, prediction=None, scale=None):
    return CHECKS[name].status(runs, answers, prediction, scale)


def table(runs):
    """One row per run (a pandas Styler; ``.data`` is the frame): status, final training loss/error, test error, mean
    k, pruned error, steps, wall time."""
    import pandas as pd
    rows = []
    for k, r in runs.items():
        if r is None:  # not run yet (no prediction), or missing from a submission
            rows.append({"run": k, "status": "not run"})
            continue
        f = r["final"]
        rows.append({"run": k, "status": r["status"], "train loss": f["train_loss"], "train error": f["train_err"],
                     "test error": f.get("test_err"), "mean k": mean_k(r) if f.get("gates_k") else None,
                     "pruned test error": r.get("pruned_test_err"),
                     "pruned at random, test error": r.get("pruned_random_test_err"), "steps": f["steps"], "seconds": f["wall_s"]})
    # shown to 3 decimals, finer than every reading's tolerance; "-" where a run has no such value (a failed run's
    # test error, an ungated net's k)
    df = pd.DataFrame(rows).dropna(axis=1, how="all")
    whole = [c for c in ("steps", "seconds") if c in df]
    errors = [c for c in df if "error" in c]  # in %, as everywhere in the book (the answers stay fractions)
    return (df.style.format(precision=3, na_rep="-").format("{:.0f}", subset=whole, na_rep="-")
            .format(lambda v: f"{100 * v:.1f} %", subset=errors, na_rep="-").hide(axis="index"))


# ---- the book's measurement of the spread ----------------------------------------------------------------------

def measure(names=None, seeds=SEEDS, out_dir=None, data=None, progress=False, scale="classroom"):
    """Run every ablation at `scale` (classroom or gpu) for each seed (recorded in `out_dir`, the book's
    data/classroom; trained only where missing) and write the seed spread (standard deviation over seeds) of every
    run's metrics and every numeric answer under ``spread_key(name, scale)``. An exercise whose gpu scale is its
    classroom scale is not written twice."""
    import statistics
    out = Path(out_dir or BOOK_RUNS)
    result = spread()
    for name in names or ABLATIONS:
        ab = ABLATIONS[name]
        if resolve_scale(name, scale) != scale:
            continue
        per_seed = [run(name, f"(the book's measurement of the seed spread, seed {s})", seed=s, scale=scale,
                        out_dir=out, data=data, progress=progress) for s in seeds]
        runs_sp = {}
        for k in ab.runs:
            ms = {"train_loss": [final(p[k]) for p in per_seed],
                  "test_err": [p[k]["final"].get("test_err", float("nan")) for p in per_seed],
                  "wall_s": [p[k]["final"]["wall_s"] for p in per_seed]}
            for m in ("pruned_test_err", "pruned_random_test_err"):
                if m in per_seed[0][k]:
                    ms[m] = [p[k][m] for p in per_seed]
            if per_seed[0][k]["final"].get("gates_k"):
                ms["mean_k"] = [mean_k(p[k]) for p in per_seed]
            runs_sp[k] = {m: statistics.stdev(v) for m, v in ms.items() if not any(map(math.isnan, v))}
            runs_sp[k]["mean"] = {m: statistics.mean(v) for m, v in ms.items() if not any(map(math.isnan, v))}
        truths = [ab.truth(p) for p in per_seed]
        answers_sp = {}
        for a in ab.answers:
            vals = [t[a] for t in truths]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                answers_sp[a] = statistics.stdev(vals)
        walls = [max(r.get("exercise", {}).get("wall_s_together") or r["final"]["wall_s"] for r in p.values())
                 for p in per_seed]
        sk = spread_key(name, scale)
        result[sk] = {**result.get(sk, {}), "seeds": list(seeds), "runs": runs_sp, "answers": answers_sp,
                      "exercise_wall_s": statistics.mean(walls), "exercise_wall_s_by_seed": walls,
                      "answers_by_seed": {a: [t[a] for t in truths] for a in ab.answers}}
    _write_spread(result)
    return result


TIMING_SEED = 999  # not a book seed, not a student's (those are >= 1000): its runs are thrown away


def time_exercises(names=None, threads=2, data=None):
    """Train each exercise once as its notebook does (classroom scale, ``torch.set_num_threads(threads)``, the
    notebook's setting; one seed; runs in a scratch folder, then deleted) and record the wall time of the whole
    exercise, with the machine, threads and date, in :data:`SPREAD_FILE` (``notebook_wall``): the guide's times."""
    import tempfile

    import torch

    result = spread()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for name in names or ABLATIONS:
            with tempfile.TemporaryDirectory() as tmp:
                got = run(name, f"(the book's timing of the exercise, {threads} threads)", seed=TIMING_SEED,
                          scale="classroom", out_dir=tmp, data=data, progress=False)
            r = next(iter(got.values()))
            hw = r.get("hardware", {})
            result.setdefault(name, {})["notebook_wall"] = {
                "s": r["exercise"]["wall_s_together"], "torch_threads": threads, "cpu": hw.get("cpu"),
                "cpu_count": hw.get("cpu_count"), "measured_threads": hw.get("torch_threads"), "date": r["date"],
                "seed": TIMING_SEED}
            print(f"{name}: {r['exercise']['wall_s_together'] / 60:.1f} min at {threads} threads", flush=True)
            _write_spread(result)  # each as it lands
    finally:
        torch.set_num_threads(before)
    return result


# ---- overview -----------------------------------------------------------------------------------------------

# Throughput assumed for a Colab T4 where no GPU has measured the network (an estimate, not a measurement: eager
# PyTorch, where a small net's step is bound by kernel launches and an MLP step by the optimizer's small kernels).
COLAB_IMG_PER_S = {"cifar_resnet": 4000.0, "mlp": 30000.0}
COLAB_OVERHEAD_S = 30.0  # data download and decoding, first CUDA kernels (assumed)
GPU_BUDGET_S = 120.0  # issue 23: an exercise at its gpu scale takes <= 2 min on a T4


def t4_pace(cfg, h200=None) -> tuple[float, str]:
    """(images per second of one run of `cfg` on a T4, how it is known): derived from a lent H200's measured pace of
    the same network (`h200`: ``run_times.h200_measured()``, read here if not given) by the ratio of their memory
    bandwidths (``book.run_times``), else the assumed :data:`COLAB_IMG_PER_S`."""
    from ..book import run_times as rt
    measured = (rt.h200_measured() if h200 is None else h200).get(rt._measured_net(cfg))
    if measured:
        return measured[0] / (rt.H200_TB_S / rt.T4_TB_S), f"derived from the H200's pace measured {measured[1][:10]}"
    return COLAB_IMG_PER_S[cfg["model"]["builder"]], "estimated: no GPU has measured this network"


def gpu_time(name) -> dict:
    """{"s": seconds of the exercise at its gpu scale on a T4, "how": "derived" or "estimated", "basis": from what,
    "net": what trains, in a few words}."""
    from ..book.run_times import h200_measured
    cfgs, h200 = configs(name, 0, "gpu"), h200_measured()
    paces = [t4_pace(c, h200) for c in cfgs.values()]
    train = sum(c["steps"] * c["batch_size"] / p for c, (p, _) in zip(cfgs.values(), paces))
    basis = "; ".join(sorted({b for _, b in paces}))
    c0 = next(iter(cfgs.values()))
    net = (f"ResNet-{c0['model']['kwargs']['depth']}, {c0['steps']} steps" if c0["model"]["builder"] == "cifar_resnet"
           else "the classroom scale (Paper B's nets)")
    return {"s": COLAB_OVERHEAD_S + train, "how": basis.split(" ")[0].rstrip(":"), "basis": basis, "net": net}


def run_times(name):
    """{"cpu_s": the classroom scale measured as the notebook runs it, "gpu": ``gpu_time``} for one exercise."""
    sp = spread().get(name, {})
    cpu = (sp.get("notebook_wall") or {}).get("s")  # measured as the notebook runs it (time_exercises)
    return {"cpu_s": cpu, "gpu": gpu_time(name), "runs": len(ABLATIONS[name].runs),
            "cpu_measured": sp.get("notebook_wall")}


def overview():
    """One row per ablation exercise: the chapter, how many runs, and their times at each scale."""
    import pandas as pd
    rows = []
    for name, ab in ABLATIONS.items():
        t = run_times(name)
        rows.append({"exercise": name, "paper": ab.paper, "chapter": int(ab.chapter.split("_")[0]), "runs": t["runs"],
                     "CPU, 2 threads, timed alone (min)": t["cpu_s"] and t["cpu_s"] / 60,
                     "gpu scale": t["gpu"]["net"], "T4 (min)": t["gpu"]["s"] / 60, "T4 time": t["gpu"]["how"]})
    return (pd.DataFrame(rows).style.format(precision=1, na_rep="not measured").hide(axis="index")
            .set_table_styles([{"selector": "", "props": "margin-left: 0; margin-right: auto;"},
                               {"selector": "td, th", "props": "text-align: left;"}]))
