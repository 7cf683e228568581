"""Chapter 8's probes of the trained networks: chapter 4's truncation probe and chapter 2's gradient
probe (``probes.truncation_rates``, ``probes.unit_gradient_norms``) on the ResNet-110s trained with
the paper's recipe on a GPU, from their committed checkpoints (checkpoints.py), beside the same
network freshly initialised.

``measure`` runs them once; the figures and notes read its numbers. Where a checkpoint is missing,
``measure`` says which, and the rest says nothing.
"""
from __future__ import annotations

from idmap_lib.engine import recipes
from idmap_lib.engine.build import build_model
from ..evidence.checkpoints import test_images, trained_model
from ..maths import probes
from ..page import figure_style, palette
from ..page.prose import plain_number

EXPERIMENT = "a_table2_activations"
ORIGINAL, PREACT = "original-110", "full_preact-110"  # Fig 4(a) and 4(e) at depth 110
INIT, TRAINED = "at initialisation", "trained"
GRAD_ORIGINAL, GRAD_PREACT = "original (trained)", "full pre-activation (trained)"


def measure(n=256, checkpoint_dir=None, weights_dir=None) -> dict:
    """The probes on the first `n` test images: {"info": why} where the original's weights are
    missing; else also "rates" (share of y_l truncated per unit, at initialisation (seed 0) and
    trained), "x" (the images), "step" (of the original's weights) and "config", "pre_info" (full
    pre-activation's weights), and "grads" (||dE/dx_l|| per unit of both trained nets) where both
    are at the same step: both sides alike."""
    import torch

    trained, info, step = trained_model(EXPERIMENT, ORIGINAL, checkpoint_dir=checkpoint_dir,
                                        weights_dir=weights_dir)
    if trained is None:
        return {"info": info}
    x, _ = test_images(EXPERIMENT, ORIGINAL, n)
    cfg = recipes.config(EXPERIMENT, ORIGINAL, "full")
    torch.manual_seed(0)
    fresh = build_model(cfg["model"])
    out = {"info": info, "x": x, "config": cfg, "step": step,
           "rates": {INIT: probes.truncation_rates(fresh, x),
                     TRAINED: probes.truncation_rates(trained, x)}}
    pre, out["pre_info"], pre_step = trained_model(EXPERIMENT, PREACT,
                                                   checkpoint_dir=checkpoint_dir,
                                                   weights_dir=weights_dir)
    if pre is not None and pre_step == step:
        out["grads"] = {GRAD_ORIGINAL: probes.unit_gradient_norms(trained, x),
                        GRAD_PREACT: probes.unit_gradient_norms(pre, x)}
    return out


def truncation_figure(m):
    """The share of y_l that f = ReLU sets to zero, unit by unit, at initialisation and trained."""
    import plotly.graph_objects as go

    # the original unit, fresh (dotted) and trained
    fig = go.Figure([go.Scatter(y=(100 * r).tolist(), name=k, mode="lines",
                                **palette.style("original", dash="dot" if k == INIT else "solid"))
                     for k, r in m["rates"].items()])
    fig.update_layout(figure_style.LAYOUT_LEGEND_ABOVE,
                      title_text="Share of yₗ set to zero by f = ReLU,<br>unit by unit",
                      xaxis_title="unit l", yaxis_title="% of elements truncated", height=460,
                      meta={"alt": "The original unit truncates " + " and ".join(
                          f"{v:.1f} %" + f" of yₗ {k}" for k, v in zip(m["rates"], _means(m)))
                          + ", averaged over its units."})
    # the checkpoint's step and hardware: not the title's
    return figure_style.caption(fig, m["info"])


def _means(m):
    return tuple(float(100 * r.mean()) for r in m["rates"].values())


def truncation_note(m) -> str:
    """The truncation averaged over the units, before and after training (Markdown)."""
    m0, m1 = _means(m)
    return (f"Averaged over the units, f truncates {m0:.1f} % of the elements at initialisation "
            f"and {m1:.1f} % after training ({m['info']}). This is one network"
            f"{'' if m['step'] == m['config']['steps'] else ', partly trained'}: a measurement of "
            f"what training did here, not a test of the paper's argument about 1000 layers.")


def stages(m) -> tuple[int, dict]:
    """(units per stage, {INIT | TRAINED: the mean truncation % of each of the three stages})."""
    third = len(m["rates"][TRAINED]) // 3
    return third, {k: [float(100 * r[i * third:(i + 1) * third].mean()) for i in range(3)]
                   for k, r in m["rates"].items()}


def stages_note(m) -> str:
    """Stage by stage, measured, beside what Paper A argues (Sec 4.2) and whether this network
    matches it."""
    third, by_stage = stages(m)
    up = _means(m)[1] > _means(m)[0]
    steps, drop = m["config"]["steps"], m["config"]["schedule"]["milestones"][0]
    return (
        f"**Measured, stage by stage** (three stages of {third} units): at initialisation "
        f"{', '.join(f'{v:.1f}' for v in by_stage[INIT])} %, trained "
        f"{', '.join(f'{v:.1f}' for v in by_stage[TRAINED])} %.\n\n"
        f"**What Paper A argues** (Sec 4.2; [chapter 4](04_relu_truncation.ipynb) measured the "
        f"same probe at initialisation): with moderate depth, training adjusts the weights so that "
        f"$\\mathbf{{y}}_l$ is more often above zero and $f$ truncates *less*; only at 1000 layers "
        f"does truncation stay frequent. "
        + "Here training " + "; ".join(
            f"{'raised' if b > a else 'lowered'} it in stage {n + 1}"
            for n, (a, b) in enumerate(zip(by_stage[INIT], by_stage[TRAINED])))
        + (f" (on average over the units it {'rose' if up else 'fell'}). ")
        + f"This is one network and one seed, {_when(m['step'], steps, drop)}: a "
        f"measurement that {'does not match' if up else 'matches'} the paper's account at this "
        f"point of training, not a test of it (the paper gives no numbers for it). What the "
        f"truncation costs the gradient is the next measurement.")


def _when(step, steps, drop) -> str:
    """Where in the recipe a network's weights are: its end, before the first lr drop, or
    between."""
    if step == steps:
        return f"at the end of the recipe ({steps:,} steps)"
    return f"at step {step:,} of {steps:,}, " + (f"before the lr drops at {drop:,}" if step < drop
                                                 else
                                               f"after the lr dropped at {drop:,}")


def gradient_figure(m):
    """The gradient reaching each unit of both trained nets, relative to the last unit's output (log
    axis)."""
    import plotly.graph_objects as go

    unit = {GRAD_ORIGINAL: "original", GRAD_PREACT: "full_preact"}
    fig = go.Figure([go.Scatter(y=(g / g[-1]).tolist(), name=k, mode="lines",
                                **palette.style(unit[k]))
                                for k, g in m["grads"].items()])
    fig.update_layout(figure_style.LAYOUT_LEGEND_ABOVE,
                      title_text="Gradient reaching unit l,<br>relative to the last unit's output",
                      xaxis_title="unit l", yaxis_title="‖∂E/∂xₗ‖ / ‖∂E/∂x_L‖",
                      yaxis_type="log", height=480, meta={"alt": (
                          "The gradient at the first unit is " + " and ".join(
                              f"{plain_number(float(g[0] / g[-1]))} times the last unit's in the "
                              f"{k} net" for k, g in m["grads"].items()) + ".")})
    return figure_style.caption(fig, f"{m['info']}<br>{m['pre_info']}; {len(m['x'])} test images")


def gradient_note(m) -> str:
    """What the gradient figure measured (the first unit's ratio, full pre-activation's lowest) and,
    apart, a reading of it that is not measured (Markdown); where full pre-activation's net is not
    at the original's step, that the comparison waits for it."""
    if "grads" not in m:
        return (f"**Not measured yet:** the two trained networks are compared at one step of the "
                f"recipe, and they are not there yet (the original: {m['info']}; {m['pre_info']}).")
    ratio = {k: float(g[0] / g[-1]) for k, g in m["grads"].items()}
    rel = m["grads"][GRAD_PREACT] / m["grads"][GRAD_PREACT][-1]
    at = int(rel.argmin())
    return ("**Measured:** the gradient at the first unit is " + " and ".join(
        f"{v:.2g} times the last unit's ({k})" for k, v in ratio.items())
        + "; along the way full pre-activation's "
        f"dips to {float(rel[at]):.2g} of it (unit {at}). **A reading, not measured:** in the "
        f"original network the "
        "ratio passes through every truncation and every BN after an addition on the way; in full "
        "pre-activation the shortcut path carries the last unit's gradient to every unit unchanged "
        "(the 1 of Eqn 5), and the residual branches add to it a term of either sign: where that "
        "term opposes it, the ratio falls below 1.")
