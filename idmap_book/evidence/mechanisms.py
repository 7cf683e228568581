"""Three cheap mechanism experiments: *why* pre-activation helps, measured on the papers' networks
at their real depth, each tested by a claim fixed before its numbers were read (MECHANISM_CLAIMS,
rule.compare).

- ``forward_signal`` (chapter 3, Paper A Eqns 6-8): chapter 3's stack of 1000 λ-scaled full
  pre-activation units at initialisation; per unit the rms of x_l, the share of x_L that its direct
  term λ^(L-l) x_l carries (‖λ^(L-l) x_l‖ / ‖x_L‖), the size of the residual branch beside the
  scaled shortcut (‖F(x_l)‖ / ‖λ x_l‖) and the gradient ratio ‖∂E/∂x_l‖ / ‖∂E/∂x_L‖
  (probes.unit_gradient_norms).
- ``training_forwards`` (chapters 4, 8, 9; Paper A Sec 4.2): the forwards of the first steps of a
  CPU-scale training (the lr-jump probe's recipe, ``cpu_step_warmup``, so these are the very runs
  that later meet the jump); per unit the std of every weight layer's input ("the inputs to all
  weight layers have been normalized") and, for units with f = ReLU, the fraction of negative
  entries of y_l = h(x_l) + F(x_l) (what f truncates); also the std of the classifier's input and of
  the logits.

Every measurement is recorded like a run, one JSON under data/mechanisms/ (results.save_result:
config, its hash, hardware, versions, git commit, seed, date), looked up by what it measures and
computed only when missing (``measured``).
"""
from __future__ import annotations

import math
import statistics
import time
from functools import partial

import torch

from idmap_lib.engine import data as data_mod, paper_recipes, paths, recipes, schedule
from idmap_lib.engine.device import threads
from idmap_lib.engine.results import config_hash, find_result, provenance, save_result
from idmap_lib.engine.trainer import train
from idmap_lib.models.introspect import post_relu, residual_units, weight_layers
from idmap_lib.models.shortcuts import ConstantScaling, Shortcut
from ..maths import probes
from .claims import Claim
from .rule import better, combine, compare, holm
from .seeds import SEEDS

MECH_DIR = paths.MECHANISMS
LAMS = (0.5, 0.9, 1.0, 1.1)
# chapter 3's stack (probes.gradient_decay)
STACK = {"depth": 1000, "channels": 4, "size": 8, "batch": 4}
UNITS = ("original", "relu_preact", "full_preact")
DEPTHS = (110, 1001)
# the forwards recorded: the number of updates made before each (0 = initialisation); ResNet-1001 x
# 1/4 costs ~6 s a step on the 2 shared cores here, so it gets fewer (the whole set: ~15 CPU
# minutes)
AT = {110: (0, 1, 2, 5, 10, 19), 1001: (0, 1, 2, 5)}
# the lr-jump probe's recipe: lr 0.01 up to the jump (step 100; 32 for ResNet-1001)
SCALE = recipes.JUMP_PROBE


# ----------------------------------------------------------------------------------------------
# measuring

def tensor_std(x) -> float:
    """std of every entry of `x` (batch, channels and positions together; population form, no
    n-1)."""
    return float(x.detach().float().std(correction=0))
# the two kinds of record: a stack at init (chapter 3), the forwards of training runs
FORWARD, TRAINING = "mech_forward_signal", "mech_training_forwards"


def negative_fraction(x) -> float:
    """Fraction of the entries of `x` below zero: what a ReLU applied to `x` sets to zero."""
    return float((x.detach() < 0).float().mean())


def _direct_scales(units):
    """λ_i of each unit's shortcut h(x) = λ_i x, for Eqn 7's direct term; an error where h is not a
    scalar."""
    lams = []
    for k, u in enumerate(units):
        sc = u.shortcut
        if type(sc) not in (Shortcut,
                            ConstantScaling) or not isinstance(sc.h, torch.nn.Identity) or \
                not isinstance(u.post,
                               torch.nn.Identity) or not isinstance(u.preact, torch.nn.Identity):
            raise ValueError(f"Eqn 7's direct term needs h(x) = λx and f identity, but unit {k} "
                             f"has shortcut {type(sc).__name__}: use a same-shape stack "
                             f"(probes.lambda_stack)")
        lam = getattr(sc, "shortcut_scale", 1.0)
        if lam <= 0:
            raise ValueError(f"unit {k} has λ = {lam}: the direct term's share needs λ > 0")
        lams.append(lam)
    return lams


def signal_along(model, x, seed=0) -> dict:
    """Forward signal and gradient of a same-shape stack of units x_{l+1} = λ_l x_l + F(x_l) (Eqn
    6), BN on batch statistics: per l = 0..L, rms(x_l) and log10 ‖(∏_{i=l}^{L-1} λ_i) x_l‖ / ‖x_L‖
    (the share of x_L its direct term carries, Eqn 7); per unit l < L, ‖F(x_l)‖ / ‖λ_l x_l‖; per l,
    log10 ‖∂E/∂x_l‖ / ‖∂E/∂x_L‖ (Eqn 8; E = <v, x_L>, v ~ N(0, 1) seeded). Logs, so that λ^1000
    neither over- nor underflows."""
    units = probes._units(model)
    lams = _direct_scales(units)
    xs, fs = [], []
    hooks = [u.register_forward_pre_hook(lambda m, a: xs.append(a[0].detach())) for u in units]
    hooks += [u.residual.register_forward_hook(lambda m, a, o: fs.append(o.detach()))
              for u in units]
    hooks.append(units[-1].register_forward_hook(lambda m, a, o: xs.append(o.detach())))
    probes._forward_once(model, x, hooks)
    norm = [float(t.double().norm()) for t in xs]
    log_lam = [math.log10(v) for v in lams]
    after = [sum(log_lam[l:]) for l in range(len(units) + 1)]  # log10 ∏_{i>=l} λ_i
    grads = probes.unit_gradient_norms(model, x, seed=seed)
    return {"rms": [n / math.sqrt(xs[0].numel()) for n in norm],
            "log10_share": [after[l] + math.log10(norm[l]) - math.log10(norm[-1])
                            for l in range(len(norm))],
            "branch_ratio": [float(f.double().norm()) / (lams[l] * norm[l])
                             for l, f in enumerate(fs)],
            "log10_grad_ratio": [math.log10(float(g / grads[-1])) for g in grads]}


def forward_signal(lam, seed, depth=STACK["depth"], channels=STACK["channels"], size=STACK["size"],
                   batch=STACK["batch"]) -> dict:
    """``signal_along`` in chapter 3's network: `depth` full pre-activation units with h(x) = λx
    (float64, probes.lambda_stack), on probes.probe_input, both of `seed`."""
    model = probes.lambda_stack(depth, lam, channels=channels, seed=seed)
    return signal_along(model, probes.probe_input(channels, size, batch, seed=seed), seed=seed)


class Watch:
    """Forward pre-hooks on every weight layer of `model`'s residual units, on each unit's f = ReLU
    and on the classifier: while ``on``, a forward records per unit the std of each weight layer's
    input (``stds``: a list per unit, residual branch first, then the shortcut's projection), the
    fraction of negative entries of y_l = h(x_l) + F(x_l) (``negative``: None where f has no ReLU),
    and the std of the classifier's input and output (``fc_in``, ``logits``). ``remove`` takes the
    hooks off."""

    def __init__(self, model):
        units = residual_units(model)
        if not units:
            raise ValueError("the model has no residual units to watch (idmap_lib.residual_units "
                             "found none)")
        self.on, self.hooks = False, []
        self.stds = [[None] * len(weight_layers(u)) for u in units]
        self.negative = [None] * len(units)
        for k, u in enumerate(units):
            for j, layer in enumerate(weight_layers(u)):
                self.hooks.append(layer.register_forward_pre_hook(partial(self._std, k, j)))
            relu = post_relu(u)
            if relu is not None:
                self.hooks.append(relu.register_forward_pre_hook(partial(self._neg, k)))
        fc = getattr(model, "fc", None)
        if fc is not None:
            self.hooks.append(fc.register_forward_hook(self._fc))

    def _std(self, k, j, module, args):
        if self.on:
            self.stds[k][j] = tensor_std(args[0])

    def _neg(self, k, module, args):
        if self.on:
            self.negative[k] = negative_fraction(args[0])

    def _fc(self, module, args, out):
        if self.on:  # the classifier ends the forward: one forward recorded each time ``on`` is set
            self.fc_in, self.logits, self.on = tensor_std(args[0]), tensor_std(out), False

    def snapshot(self) -> dict:
        return {"weight_input_std": [list(s) for s in self.stds],
                "negative_fraction": list(self.negative),
                "fc_input_std": getattr(self, "fc_in", None),
                "logits_std": getattr(self, "logits", None)}

    def remove(self):
        for h in self.hooks:
            h.remove()


def variant_of(depth, unit):
    """(experiment, variant) of the recipe that trains `unit` at `depth`: Paper A Table 2 (110) or
    Table 3 (1001)."""
    return ("a_table2_activations",
            f"{unit}-110") if depth == 110 else ("a_table3_preact", f"c10-{depth}-{unit}")


def training_forwards(recipe, at, data=None, watch=None) -> dict:
    """Train `recipe` (``trainer.train``: its data, bf16 autocast, schedule and seed) for max(at) +
    1 steps and record, in the forward of each step whose number of updates so far is in `at`, what
    `watch` (a Watch class, default ``Watch``; its ``snapshot`` is taken after that step's backward)
    sees."""
    if not at or min(at) < 0 or list(at) != sorted(set(at)):
        raise ValueError(f"at must be increasing step numbers >= 0, got {at!r}")
    seen, out = {}, []

    def look(loop):  # once the loop is built, then after every step
        if "watch" not in seen:
            seen["watch"] = (watch or Watch)(loop.stepper.raw)
            seen["precision"] = str(loop.stepper.dtype).replace("torch.", "")
        if loop.step - 1 in at:  # the step just taken was watched
            out.append({"step": loop.step - 1,
                        "lr": schedule.lr_at(recipe["schedule"], loop.step - 1),
                        **seen["watch"].snapshot()})
        seen["watch"].on = loop.step in at

    try:
        result = train(recipe, data=data or data_mod.load(recipe["dataset"]), device="cpu",
                       progress=False, write_result=False, max_steps=max(at) + 1, on_step=look)
    finally:
        if "watch" in seen:
            seen["watch"].remove()
    return {"forwards": out, "precision": seen["precision"], "history": result["history"]}


# ----------------------------------------------------------------------------------------------
# recording: one JSON a measurement, looked up by what it measures

def forward_spec(lam, seed) -> dict:
    return {"experiment": FORWARD, "variant": f"lam{lam:g}", "scale": "init",
            "seed": int(seed),
            "network": {"builder": "probes.lambda_stack", "unit": "full_preact", "lam": float(lam),
                        **STACK,
                        "dtype": "float64", "bn": "batch statistics"}}


def recipe_of(depth, unit, seed) -> dict:
    """The CPU-scale recipe (SCALE) of `unit` at `depth` (recipes.config); ReLU-only
    pre-activation has no Table 3 row at depth 1001, so its recipe is built the same way
    (paper_recipes.paper_a_cifar) under that table's labels."""
    experiment, variant = variant_of(depth, unit)
    if variant in recipes.EXPERIMENTS[experiment]["variants"]:
        return recipes.config(experiment, variant, SCALE, seed)
    cfg = paper_recipes.paper_a_cifar(depth, unit, scale=SCALE)
    cfg.update(experiment=experiment, variant=variant, scale=SCALE, seed=int(seed),
               divergence={"grace_fraction": None})
    return cfg


def training_spec(depth, unit, seed) -> dict:
    return {"experiment": TRAINING, "variant": f"{unit}-{depth}", "scale": SCALE,
            "seed": int(seed),
            "recipe": recipe_of(depth, unit, seed), "at": list(AT[depth]), "threads": 1}


def measured(spec, out_dir=None, compute=True, data=None, measure=None):
    """The record of `spec` in `out_dir` (default data/mechanisms/), or, when missing and `compute`,
    measured now (on one thread, nice'd by the caller), saved and returned; None when missing and
    not `compute`. `measure`: (spec, data) -> values, for a measurement another module defines
    (jump_watch.py)."""
    out_dir = out_dir or MECH_DIR
    found = find_result(spec, out_dir, same_training=False)
    if found is not None or not compute:
        return found
    with threads(1):
        t0 = time.perf_counter()
        if measure is not None:
            values = measure(spec, data)
        elif spec["experiment"] == FORWARD:
            n = spec["network"]
            values = forward_signal(n["lam"], spec["seed"], n["depth"], n["channels"], n["size"],
                                    n["batch"])
        elif spec["experiment"] == TRAINING:
            values = training_forwards(spec["recipe"], spec["at"], data)
        else:
            raise ValueError(f"unknown measurement {spec['experiment']!r}")
        rec = {"config": spec, "config_hash": config_hash(spec), "values": values,
               "wall_s": time.perf_counter() - t0, **provenance("cpu")}
    rec["path"] = str(save_result(rec, out_dir, indent=None))
    return rec


def all_specs(seeds=SEEDS):
    return [forward_spec(lam, s) for lam in LAMS for s in seeds] + \
           [training_spec(d, u, s) for d in DEPTHS for u in UNITS for s in seeds]


def measure_missing(seeds=SEEDS, out_dir=None, log=print):
    """Measure every spec not yet recorded (the CIFAR-10 data loaded once); returns the records."""
    data, out = None, []
    for spec in all_specs(seeds):
        if measured(spec, out_dir,
                    compute=False) is None and spec["experiment"] == TRAINING:
            data = data or data_mod.load("cifar10")
        rec = measured(spec, out_dir, data=data)
        log(f"{spec['experiment']} {spec['variant']} s{spec['seed']}: {rec['wall_s']:.0f} s")
        out.append(rec)
    return out


# ----------------------------------------------------------------------------------------------
# the claims, fixed before any of these numbers was read; metrics read from one record each

def _spread(stds) -> float:
    """log10 (largest / smallest) std over every weight layer's input in every unit."""
    flat = [s for unit in stds for s in unit if s is not None]
    return math.log10(max(flat) / min(flat))


def _forward_at(rec, step):
    return next(f for f in rec["values"]["forwards"] if f["step"] == step)


TRUNCATION_STEP = min(AT[110][-1], AT[1001][-1])  # the last step recorded at both depths

METRICS = {
    "log10_share_x0": lambda r: r["values"]["log10_share"][0],
    "log10_branch_ratio_last": lambda r: math.log10(r["values"]["branch_ratio"][-1]),
    "log10_grad_ratio_0": lambda r: r["values"]["log10_grad_ratio"][0],
    "input_std_spread_init": lambda r: _spread(r["values"]["forwards"][0]["weight_input_std"]),
    "input_std_spread_last": lambda r: _spread(r["values"]["forwards"][-1]["weight_input_std"]),
    "truncation_mean": lambda r: statistics.fmean(
        _forward_at(r, TRUNCATION_STEP)["negative_fraction"]
    ),
}
METRIC_WORDS = {
    "log10_share_x0": "log10 of the share of x_L that x_0's direct term λ^L x_0 carries (‖λ^L x_0‖ "
                      "/ ‖x_L‖)",
    "log10_branch_ratio_last": "log10 ‖F(x_l)‖ / ‖λ x_l‖ at the deepest unit",
    "log10_grad_ratio_0": "log10 ‖∂E/∂x_0‖ / ‖∂E/∂x_L‖ over the 1000 units",
    "input_std_spread_init": "log10 (largest / smallest) std of a weight layer's input, over all "
                             "units, at init",
    "input_std_spread_last": "the same spread in the last forward recorded",
    "truncation_mean": f"mean over units of the fraction of y_l < 0, {TRUNCATION_STEP} steps in",
}
TWO = math.log10(2)


def _b(a, b, metric, margin=0.0):
    return better(a, b, metric, margin=margin, about="early")


MECHANISM_CLAIMS = (
    Claim("m_direct_term_vanishes",
          "Under λ < 1 the direct term λ^(L-l) x_l carries a vanishing share of x_L: over 1000 "
          "units more than 10 orders of magnitude below the share it keeps at λ = 1.",
          "Paper A Eqns 7-8", FORWARD,
          tuple(_b(f"lam{lam:g}", "lam1", "log10_share_x0", margin=10) for lam in (0.9, 0.5))),
    Claim("m_branches_keep_size",
          "Under λ < 1 the residual branches do not fade with depth: at the deepest unit "
          "‖F(x_l)‖ / ‖λ x_l‖ is larger than at λ = 1, where x_l grows with depth and each BN-fed "
          "branch adds a shrinking part.",
          "ours (resolving chapter 3's λ < 1 gradient)", FORWARD,
          tuple(_b("lam1", f"lam{lam:g}", "log10_branch_ratio_last") for lam in (0.9, 0.5)),
          by="ours"),
    Claim("m_gradient_through_branches",
          "With the direct path gone (λ < 1) the gradient travels through those branches and "
          "grows more over the 1000 units than at λ = 1.",
          "ours (chapter 3's measurement, at init)", FORWARD,
          tuple(_b("lam1", f"lam{lam:g}", "log10_grad_ratio_0") for lam in (0.9, 0.5)),
          by="ours"),
    Claim("m_normalised_weight_inputs",
          "Only full pre-activation feeds every weight layer a normalised input: in ResNet-110 "
          "and ResNet-1001 the ratio of the largest to the smallest std of a weight layer's "
          "input, over all units, is more than 2 times smaller than in the original unit and in "
          "ReLU-only pre-activation, at initialisation and in the last forward recorded.",
          "Paper A Sec 4.2", TRAINING,
          tuple(_b(f"full_preact-{d}", f"{u}-{d}", f"input_std_spread_{w}", margin=TWO)
                for d in DEPTHS for w in ("init", "last") for u in ("original", "relu_preact"))),
    Claim("m_truncation_grows_with_depth",
          "Ours, in the first steps of training (all this scale measures): the original unit's "
          "ReLU after the addition truncates y_l = x_l + F(x_l) more often in ResNet-1001 than in "
          "ResNet-110.",
          "ours, on Paper A Sec 4.2 (whose remark, about trained networks, is not testable at "
          "this scale)", TRAINING,
          (_b("original-110", "original-1001", "truncation_mean"),)),
)
# the chapter that shows each
CHAPTER = {"m_direct_term_vanishes": 3, "m_branches_keep_size": 3,
           "m_gradient_through_branches": 3, "m_normalised_weight_inputs": 8,
           "m_truncation_grows_with_depth": 4}


def _records(variant, experiment, seeds, out_dir):
    spec = {FORWARD: lambda s: forward_spec(float(variant[3:]), s),
            TRAINING: lambda s: training_spec(int(variant.rsplit("-", 1)[1]),
                                                              variant.rsplit("-", 1)[0],
                                                              s)}[experiment]
    return [r for r in (measured(spec(s), out_dir, compute=False) for s in seeds) if r is not None]


def _verdict(claim, values, min_seeds=None):
    kw = {} if min_seeds is None else {"min_seeds": min_seeds}
    parts = holm([(t, compare(t, xa, xb, scale="cpu", **kw))
                  for t, (xa, xb) in zip(claim.tests, values)])
    return combine([r["verdict"] for _, r in parts]), parts


def evaluate(claim, seeds=SEEDS, out_dir=None) -> dict:
    """A mechanism claim's verdict by the claims' own evaluation (judge.evaluate): each comparison
    by rule.compare on the per-seed values of its metric (the recorded measurements; a missing one
    leaves it 'not run yet'), the parts corrected for their number by Holm's step-down, combined by
    rule.combine, the smallest resolvable difference beside each, and the verdict read again without
    each single record in turn (``fragile``: the (variant, seed) whose removal changes it)."""
    recs, values = {}, []
    for t in claim.tests:
        for v in (t.a, t.b):
            recs.setdefault(v, _records(v, claim.experiment, seeds, out_dir))
        values.append(tuple([METRICS[t.metric](r) for r in recs[v]] for v in (t.a, t.b)))
    verdict, parts = _verdict(claim, values)
    fragile = []
    if verdict in ("reproduced", "contradicted", "inconclusive"):
        for v, rs in recs.items():
            for i, r in enumerate(rs):
                drop = [tuple([x for j, x in enumerate(side) if not (name == v and j == i)]
                              for side, name in zip(vals, (t.a, t.b)))
                        for t, vals in zip(claim.tests, values)]
                without = _verdict(claim, drop, min_seeds=2)[0]
                if without != verdict:
                    fragile.append((v, r["config"]["seed"], without))
    return {"key": claim.key, "verdict": verdict, "parts": parts, "fragile": fragile}
