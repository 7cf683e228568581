"""Every experiment of both papers as data, at three scales (each paper's recipe:
paper_recipes.py; their lr schedules: schedule.py).

``config(experiment, variant, scale, seed)`` returns one plain, JSON-able dict; the trainer reads
nothing else, and its sha256 (see results.py) names the result. ``EXPERIMENTS[name]["variants"]``
lists the variants; each experiment names a ``baseline``.

Scales
- ``full``: the paper's recipe (Paper A appendix; Paper B Sec 4), for a GPU.
- ``cpu``: the CPU scale. The same networks at their real depth (the papers are about depth: at
  depth 20 their effects are absent by construction), smaller in width where a CPU needs it
  (ResNet-164 and -1001: every channel count x 1/4), in data (a stratified 20k/2k subset) and in
  steps (400 of batch 128; 128 for ResNet-1001), with the paper's schedule shape and a warm-up that
  *ramps* the lr from 0.01 to 0.1 (paper_recipes.CPU, CPU_WHY). It cannot reproduce the papers'
  final errors; claims.py says what each claim can be tested for here.
- ``cpu_step_warmup``: the CPU scale as it was first recorded, with the paper's abrupt warm-up (lr
  0.01, then 0.1 in one step at 25 % of the run). At 400 steps that jump is a shock the paper's
  64,000 do not have (the original ResNet-110 spikes and 2 of 3 seeds end at chance): kept as the
  probe that chose ``cpu`` (chapter 11), as the data of our lr-jump claim, and as the base of the
  classroom exercises (checks/ablations.py).

Where the papers are silent, the choice and the reason sit next to the value (``why`` entries: they
are kept in the config for the reader but left out of the hash).
"""
from __future__ import annotations

import copy

from ..models.registry import UNIT_ROWS, UNITS
from .paper_recipes import paper_a_cifar, paper_b_mnist, paper_b_resnet, paper_b_wrn
from .results import training_hash
from .schedule import rescaled

# ----------------------------------------------------------------------------------------------
# the scales (their recipes: paper_recipes.py)

# the lr-jump probe: the CPU scale with the paper's abrupt step warm-up
JUMP_PROBE = "cpu_step_warmup"
CPU_SCALES = ("cpu", JUMP_PROBE)
# where the claims are judged: the CPU scale, the full recipe (the probe is a claim's own)
CLAIM_SCALES = ("cpu", "full")
SCALES = ("cpu", JUMP_PROBE, "full")
SCALE_WORDS = {"cpu": "CPU scale", JUMP_PROBE: "CPU scale, step warm-up (the lr-jump probe)",
               "full": "full recipe"}

MNIST_KINDS = ("plain", "resnet", "gresnet")  # Paper B Sec 4.1: the three nets of each depth
# Paper B Table 1's depths d, in the order the grid trains them (d = 100, then 10, settle the most
# claims)
MNIST_DEPTHS = (100, 10, 50, 20, 2)
# chapter 10's probe: the GResNet with Keras's initialisation and BN settings
KERAS_PROBE = ("gresnet_keras",)


# ----------------------------------------------------------------------------------------------
# the experiments

def _table1():
    v = {"original": dict(shortcut="identity"),
         "constant_scaling-0-1": dict(shortcut="constant_scaling", shortcut_scale=0.0,
                                      residual_scale=1.0),
         "constant_scaling-0.5-1": dict(shortcut="constant_scaling", shortcut_scale=0.5,
                                        residual_scale=1.0),
         "constant_scaling-0.5-0.5": dict(shortcut="constant_scaling", shortcut_scale=0.5,
                                          residual_scale=0.5),
         "exclusive_gating-b0": dict(shortcut="exclusive_gating", gate_bias=0.0),
         "exclusive_gating-b-6": dict(shortcut="exclusive_gating", gate_bias=-6.0),
         "exclusive_gating-b-7": dict(shortcut="exclusive_gating", gate_bias=-7.0),
         "shortcut_only_gating-b0": dict(shortcut="shortcut_only_gating", gate_bias=0.0),
         "shortcut_only_gating-b-6": dict(shortcut="shortcut_only_gating", gate_bias=-6.0),
         "conv1x1": dict(shortcut="conv1x1"),
         "dropout-0.5": dict(shortcut="dropout", p=0.5)}
    return {k: (lambda scale, o=o: paper_a_cifar(110, "original", scale=scale, **o))
            for k, o in v.items()}




def _table2():
    return {f"{u}-{d}": (lambda scale, u=u, d=d: paper_a_cifar(d, u, scale=scale))
            for d in (110, 164) for u in UNITS}


# The book's interventions (not in the papers): one part of a unit changed at a time, so that the
# swaps, not the units' several differences at once, say which part carries an effect (chapter "Why
# pre-activation helps").
SWAPS = {
    "final_bn_relu": {"kwargs": {"final": "bn_relu"},
                      "words": "a final BN-ReLU before the pool: the classifier reads a normalised "
                               "input"},
    "no_final": {"kwargs": {"final": "none"},
                 "words": "no final BN-ReLU: the classifier reads the un-normalised sum of every "
                          "unit"},
    "zero_gamma": {"kwargs": {"zero_gamma": True},
                   "words": "every branch's last BN starts at scale 0: F = 0 at initialisation "
                            "(Goyal et al. 2017)"},
    # zero gamma's classifier input is small as a normalised one is (std 0.21 at initialisation
    # against the original's 1.6-1.9: data/mechanisms/mech_jump_forwards__*): this swap separates
    # "branches off at init" from "a small classifier input", scaling the latter back to the
    # original's (the factor: the mean over the recorded seeds of the original's classifier-input
    # std at step 0 over zero gamma's, 2 significant digits; tests/test_models.py recomputes it)
    "zero_gamma_scaled_input": {"kwargs": {"zero_gamma": True, "classifier_scale": 8.2},
                                "words": "every branch's last BN starts at scale 0, and the "
                                         "classifier's input is multiplied by 8.2, the original "
                                         "unit's std at initialisation over zero gamma's: branches "
                                         "off at init with an un-normalised classifier input"},
}
SWAPPED = {  # (unit, swap) -> the depths it is trained at
    ("original", "final_bn_relu"): (110, 1001), ("relu_preact", "final_bn_relu"): (110,),
    ("full_preact", "no_final"): (110, 1001), ("original", "zero_gamma"): (110,),
    ("original", "zero_gamma_scaled_input"): (110,),
}


AT_FP32 = "@fp32"  # a row again in float32: ``row@fp32``
FP32 = ("original-110", "full_preact-110", "original+final_bn_relu-110", "full_preact+no_final-110",
        # the precision check: these rows again in float32, ``row@fp32``
        "original-1001", "full_preact-1001")


def _swaps():
    """The units of Table 2 at 110 layers and of Fig 1 at 1001 (the same trainings:
    results.training_hash), each swap of SWAPPED, named ``unit+swap-depth``, and the rows of FP32
    again in float32 (``amp``: the recipe names its precision; every CPU run elsewhere is bf16
    autocast, where the identity path sums in an 8-bit mantissa)."""
    v = {f"{u}-110": (lambda scale, u=u: paper_a_cifar(110, u, scale=scale))
         for u, row in UNIT_ROWS.items() if 110 in row.paper}  # Table 2's
    v.update({f"{u}-1001": (lambda scale, u=u: paper_a_cifar(1001, u, scale=scale))
              for u in ("original", "full_preact")})
    for (u, swap), depths in SWAPPED.items():
        for d in depths:
            v[f"{u}+{swap}-{d}"] = (lambda scale, u=u, d=d, swap=swap:
                                    paper_a_cifar(d, u, scale=scale, **SWAPS[swap]["kwargs"]))
    for row in FP32:
        v[row + AT_FP32] = lambda scale, f=v[row]: {**f(scale), "amp": "fp32"}
    return v


def _table3():
    out = {}
    for ds, depths in (("c10", (110, 164, 1001)), ("c100", (164, 1001))):
        dataset = "cifar10" if ds == "c10" else "cifar100"
        if ds == "c10":
            for u in ("original", "full_preact"):
                out[f"c10-110-single-{u}"] = (lambda scale, u=u:
                                              paper_a_cifar(110, u, block="single", scale=scale))
        for d in depths:
            for u in ("original", "full_preact"):
                out[f"{ds}-{d}-{u}"] = (lambda scale, d=d, u=u, dataset=dataset:
                                        paper_a_cifar(d, u, dataset=dataset, scale=scale))
    return out


EXPERIMENTS = {
    "a_table1_shortcuts": {
        "title": "Paper A Table 1: shortcut variants on the original ResNet-110 (CIFAR-10)",
        "variants": _table1(),
        "baseline": "original",
    },
    "a_table2_activations": {
        "title": "Paper A Table 2: activation variants, ResNet-110 and ResNet-164 (CIFAR-10)",
        "variants": _table2(),
        "baseline": "full_preact-110",
    },
    "a_table3_preact": {
        "title": "Paper A Table 3: original vs pre-activation units (CIFAR-10/100, incl. 1-layer "
        "skip)",
        "variants": _table3(),
        "baseline": "c10-110-full_preact",
    },
    "a_swaps": {
        "title": "The book's interventions on Paper A's units: one part swapped at a time "
        "(ResNet-110, ResNet-1001)",
        "variants": _swaps(),
        "baseline": "full_preact-110",
    },
    "b_mnist": {
        "title": "Paper B Table 1-2: plain / ResNet / gated ResNet MLPs on MNIST at depth d",
        "variants": {
            **{
                f"{k}-d{d}": (lambda scale, k=k, d=d: paper_b_mnist(k, d, scale))
                for d in sorted(MNIST_DEPTHS)
                for k in MNIST_KINDS
            },
            # our probe of Paper B's unstated settings (chapter 10): the GResNet with
            # Keras's defaults
            **{
                f"gresnet_keras-d{d}": (
                    lambda scale, d=d: paper_b_mnist("gresnet", d, scale, "keras")
                )
                for d in (2, 10, 20, 50, 100)
            },
        },
        "baseline": "gresnet-d10",
    },
    "b_resnet32": {
        "title": "Paper B Table 3: pre-activation ResNet-32, original vs gated (CIFAR-10)",
        "variants": {
            "original": lambda scale: paper_b_resnet(False, False, scale),
            "gated": lambda scale: paper_b_resnet(True, False, scale),
            "gated-k_decay": lambda scale: paper_b_resnet(True, True, scale),
        },
        "baseline": "original",
    },
    "b_wrn": {
        "title": "Paper B Tables 3-4: Wide ResNet 28-10 + dropout, plain vs gated (CIFAR-10, "
        "CIFAR-100)",
        "variants": {
            "plain": lambda scale: paper_b_wrn(False, scale),
            "gated": lambda scale: paper_b_wrn(True, scale),
            "gated-k_decay": lambda scale: paper_b_wrn(True, scale, k_decay=True),
            "c100-plain": lambda scale: paper_b_wrn(False, scale, dataset="cifar100"),
            "c100-gated": lambda scale: paper_b_wrn(True, scale, dataset="cifar100"),
        },
        "baseline": "plain",
    },
}


# The ablation exercises' scales (checks/ablation_exercises.py), as overrides of a recipe scale
# (``recipe_scale``, default the lr-jump probe's). classroom: what a class runs in minutes on a
# laptop CPU (not the chapters' CPU scale, which keeps the papers' depth): depth-20 CIFAR nets for
# 150 steps with a 10-step warm-up, the paper's MNIST nets for 400 steps, and the rule that also
# fails a run stuck at chance after a quarter of its steps. gpu: the papers' networks on Colab's T4,
# <= 2 min an exercise: the CIFAR exercises at the recipe's depth on the CPU scale's data and ramped
# schedule (a 0.01 -> 0.1 jump would be a shock the paper's 64k steps do not have, chapter 11), for
# as many steps as the T4's pace allows the exercise's runs (EXERCISE_GPU_STEPS); the MNIST
# exercises are the paper's networks already, so their gpu scale *is* their classroom scale (same
# runs, same hash). quick: the tests' end-to-end runs (a few steps of small batches: that everything
# runs).
STUCK_AT_CHANCE = {"grace_fraction": 0.25, "chance_margin": 0.01}
EXERCISE_QUICK = {"steps": 4, "batch_size": 16, "subset": {"train_per_class": 8,
                                                           "test_per_class": 4}}
# runs in an exercise -> steps of each (2 x 250 x 128 images on a T4)
EXERCISE_GPU_STEPS = {2: 250, 4: 125}
EXERCISE_MNIST_SCALES = {"classroom": {"steps": 400, "divergence": STUCK_AT_CHANCE},
                         "gpu": {"same_as": "classroom"},
                         "quick": EXERCISE_QUICK}


def exercise_cifar_scales(runs: int) -> dict:
    """The CIFAR exercises' scales for an exercise of `runs` runs (its gpu scale's steps depend on
    them)."""
    steps = EXERCISE_GPU_STEPS[runs]
    return {"classroom": {"steps": 150, "depth": 20, "warmup_steps": 10,
                          "divergence": STUCK_AT_CHANCE},
            "gpu": {"steps": steps, "recipe_scale": "cpu", "warmup_steps": steps // 4},
            "quick": {**EXERCISE_QUICK, "depth": 20}}


def config(experiment: str, variant: str, scale: str = "cpu", seed: int = 0,
           overrides: dict | None = None) -> dict:
    """The complete, JSON-able configuration of one run; `overrides` (an exercise's scale and
    change: ``_override``) change it in one place, here."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; valid: {', '.join(EXPERIMENTS)}")
    variants = EXPERIMENTS[experiment]["variants"]
    if variant not in variants:
        raise ValueError(f"unknown variant {variant!r} of {experiment}; valid: "
                         f"{', '.join(variants)}")
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    cfg = copy.deepcopy(variants[variant](scale))
    cfg.update(experiment=experiment, variant=variant, scale=scale, seed=int(seed))
    # What ends a run early as "fail": only a non-finite loss. A net stuck near chance early on is a
    # finding (Fig 1 is about the original ResNet-1001 starting slowly), judged at the end against
    # Paper A's meaning of "fail" (test error > 20 % after the full recipe) or, at the CPU scale, by
    # the claims' tests (claims.py).
    cfg.setdefault("divergence", {"grace_fraction": None})
    return _override(cfg, overrides) if overrides else cfg


def _override(cfg: dict, o: dict) -> dict:
    """`cfg` changed by `o`: ``model`` (network keyword arguments), ``depth``, ``steps`` (the
    schedule's milestones and warm-up rescaled, a log window a fifteenth of the run, one evaluation
    at its end), ``subset``, ``batch_size``, ``warmup_steps``, ``divergence``, and the labels
    ``variant``, ``scale``, ``why``."""
    cfg["model"]["kwargs"].update(o.get("model", {}))
    if "depth" in o:
        cfg["model"]["kwargs"]["depth"] = o["depth"]
    if "steps" in o:
        steps = o["steps"]
        cfg.update(steps=steps, schedule=rescaled(cfg["schedule"], steps),
                   log_every=max(1, steps // 15),
                   eval_every=steps)
    for key in ("variant", "scale", "batch_size"):
        if key in o:
            cfg[key] = o[key]
    for key in ("subset", "divergence"):
        if key in o:
            cfg[key] = dict(o[key])
    if "warmup_steps" in o and cfg["schedule"].get("warmup_steps"):
        cfg["schedule"]["warmup_steps"] = o["warmup_steps"]
    if "why" in o:
        cfg["why"] = {**cfg.get("why", {}), **o["why"]}
    return cfg


def recorded_scale(cfg: dict) -> str | None:
    """The scale of today's recipes whose run of this experiment, variant and seed trains exactly
    what `cfg` trains (its labels aside: some records name the CPU scale "shrunk"), or None if none
    does (a stale run)."""
    h = training_hash(cfg)
    return next((s for s in SCALES if training_hash(config(cfg["experiment"], cfg["variant"], s,
                                                           cfg["seed"])) == h),
                None)


def mnist_configs(d, seeds, kinds=MNIST_KINDS) -> list:
    """Paper B's MNIST runs of depth d at the full recipe (Sec 4.1, Tables 1-2), kind by kind and
    seed by seed: what trains together as one stacked network (stacked.py, mnist_grid.py) and what
    ``bench --stacked`` times."""
    return [config("b_mnist", f"{k}-d{d}", "full", int(s)) for k in kinds for s in seeds]


def listing() -> str:
    lines = []
    for name, e in EXPERIMENTS.items():
        lines.append(f"{name}: {e['title']}")
        for v in e["variants"]:
            lines.append(f"    {v}{'  (baseline)' if v == e['baseline'] else ''}")
    return "\n".join(lines)
