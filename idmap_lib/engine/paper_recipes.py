"""Each paper's training recipe as a function of the network and the scale (``full``: the
paper's; ``cpu``/``cpu_step_warmup``: the CPU scale, whose two warm-ups ``cpu_paper_a`` builds).

recipes.py names the experiments and their variants from these; its ``config`` is the only
constructor of a run's configuration.
"""
from __future__ import annotations

from .data import SIZES
from .schedule import step_schedule


# The CPU scale: the papers' networks at their real depth -- the papers are about depth, and at
# depth 20 their effects are absent by construction -- smaller in width (bottleneck nets only), data
# and steps.
CPU = {
    "steps": 400, "warmup_steps": 100, "train_per_class": 2000, "test_per_class": 200,
    "log_every": 10, "eval_every": 100,
}
# bottleneck nets: every channel count x 1/4 (ResNet-110/32: paper's)
CPU_WIDTH = {164: 0.25, 1001: 0.25}
# ResNet-1001 x 1/4 (~10k small ops a step) trains at ~21 img/s here: <= 15 min a run
CPU_STEPS = {1001: 128}
CPU_WHY = ("CPU scale: the paper's depth{width}; {steps} steps of batch 128 on a stratified subset "
           "(2000 train + 200 test images per class, ~{epochs:.1f} epochs); the paper's schedule "
           "shape with the warm-up as a linear ramp: lr from 0.01 up to 0.1 over the first "
           "{warmup} steps (Goyal et al. 2017), then 0.1, /10 at 50 % and 75 %. The paper jumps "
           "from 0.01 to 0.1 in one step after 400 of 64,000 iterations, with ~60,000 left to "
           "recover; at 25 % of a 400-step run the same jump is a shock the paper's schedule does "
           "not have (the original ResNet-110's loss spikes and most seeds end at chance: the runs "
           "of the superseded step warm-up, which chapter 11 shows), so the CPU scale ramps. Only "
           "a non-finite loss stops a run early.")
CPU_STEP_WHY = ("CPU scale with the paper's abrupt warm-up (superseded by the ramp of the cpu "
                "scale): the paper's depth{width}; {steps} steps of batch 128 on a stratified "
                "subset (2000 train + 200 test images per class, ~{epochs:.1f} epochs); lr 0.01 "
                "for the first {warmup} steps (a quarter of the run, at every depth), then 0.1 in "
                "one step, /10 at 50 % and 75 %; only a non-finite loss stops a run early.")
def cpu_paper_a(depth, dataset="cifar10", warmup="linear"):
    """The CPU-scale schedule and data of a Paper A net of `depth` (see CPU): the lr ramps over the
    warm-up (warmup="linear": scale ``cpu``) or steps at its end as in the paper (warmup="step":
    ``cpu_step_warmup``). CIFAR-100 has 500 training images per class, so its subset is 400 + 40 per
    class (the same 40k + 4k images)."""
    steps = CPU_STEPS.get(depth, CPU["steps"])
    warmup_steps = CPU["warmup_steps"] * steps // CPU["steps"]
    width = CPU_WIDTH.get(depth, 1)
    why = (CPU_WHY if warmup == "linear" else CPU_STEP_WHY).format(
        width=f", every channel count x {width:g}" if width != 1 else " and width",
        steps=steps, warmup=warmup_steps, epochs=steps * 128 / (10 * CPU["train_per_class"]))
    return dict(steps=steps, log_every=CPU["log_every"],
                eval_every=min(CPU["eval_every"], steps // 2),
                schedule=step_schedule(steps, 0.1, 10, fractions=[0.5, 0.75],
                                       warmup_steps=warmup_steps,
                                       warmup_lr=0.01, warmup=warmup),
                subset={"train_per_class": CPU["train_per_class"],
                        "test_per_class": CPU["test_per_class"]}
                if dataset != "cifar100" else {"train_per_class": 400, "test_per_class": 40},
                why={"scale": why})


def _paper_a(scale, depth, dataset):
    """Paper A appendix (= ResNet v1 CIFAR recipe)."""
    if scale == "full":
        sched = step_schedule(64000, 0.1, 10, milestones=[32000, 48000], warmup_steps=400,
                              warmup_lr=0.01)
        return dict(steps=64000, schedule=sched, subset=None, log_every=100, eval_every=2000,
                    why={"schedule": "Paper A: lr 0.01 for 400 iterations, then 0.1, /10 at 32k "
                                     "and 48k, stop at 64k",
                         "eval_every": "unstated; every 2000 iterations on the full test set "
                                       "(cheap on a GPU)"})
    return cpu_paper_a(depth, dataset, warmup="linear" if scale == "cpu" else "step")


def _base(dataset, model, optimizer, preprocess, augment, batch_size=128):
    return {"dataset": dataset, "model": model, "optimizer": optimizer, "preprocess": preprocess,
            "augment": augment, "batch_size": batch_size}


AUG = {"pad": 4, "flip": True}
SGD_A = {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 1e-4}


def paper_a_cifar(depth, unit, shortcut="identity", block=None, dataset="cifar10", scale="full",
                  **options):
    """Paper A's CIFAR recipe for `unit` at `depth`; `options` are the network's other keywords (a
    shortcut's, or a swap's: recipes.SWAPS)."""
    num_classes = 100 if dataset == "cifar100" else 10
    kw = {"depth": depth, "unit": unit, "shortcut": shortcut, "num_classes": num_classes}
    if block is not None or scale != "full":
        kw["block"] = block or ("bottleneck" if depth in (164, 1001) else "basic")
    if scale != "full" and CPU_WIDTH.get(depth, 1) != 1:
        kw["width_scale"] = CPU_WIDTH[depth]
    kw.update(options)
    cfg = _base(dataset, {"builder": "cifar_resnet", "kwargs": kw}, dict(SGD_A), "per_pixel_mean",
                AUG)
    cfg.update(_paper_a(scale, depth, dataset))
    return cfg


def _cpu_paper_b(fractions, divisor, what):
    """Paper B's CIFAR recipes at the CPU scale: the data and steps of CPU, Paper B's schedule (no
    warm-up, so nothing to ramp: both CPU scales are the same training)."""
    steps = CPU["steps"]
    return dict(steps=steps, schedule=step_schedule(steps, 0.1, divisor, fractions=fractions),
                subset={"train_per_class": CPU["train_per_class"],
                        "test_per_class": CPU["test_per_class"]},
                log_every=CPU["log_every"], eval_every=CPU["eval_every"],
                why={"scale": f"CPU scale: {what}; {steps} steps of batch 128 on a stratified "
                              f"subset (2000 train + 200 test images per class); Paper B's "
                              f"schedule shape (no warm-up: it states none)"})


def paper_b_resnet(gated, k_decay, scale="full"):
    """Paper B Table 3, pre-activation ResNet-32 (n=5): SGD Nesterov 0.9, wd 1e-4, /10 at 50% and
    75%."""
    opt = {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4,
           "decay_gates": k_decay}
    kw = {"depth": 32, "unit": "full_preact", "shortcut": "identity", "num_classes": 10,
          "gated": gated}
    cfg = _base("cifar10", {"builder": "cifar_resnet", "kwargs": kw}, opt, "per_pixel_mean", AUG)
    if scale == "full":
        cfg.update(steps=64000, schedule=step_schedule(64000, 0.1, 10, fractions=[0.5, 0.75]),
                   subset=None, log_every=100, eval_every=2000,
                   why={"steps": "unstated in Paper B; 64k iterations (~164 epochs) = Paper A's "
                                 "length, whose 50%/75% milestones (32k/48k) match "
                                 "fb.resnet.torch's epochs 81/122",
                        "preprocess": "Paper B: mean subtraction (per-pixel, as Paper A)"})
    else:
        cfg.update(_cpu_paper_b(fractions=[0.5, 0.75], divisor=10, what="ResNet-32"))
    return cfg


def paper_b_wrn(gated, scale="full", k_decay=False, dataset="cifar10"):
    """Paper B Table 3-4, WRN-28-10 + dropout 0.3: SGD Nesterov 0.9, wd 5e-4, lr 0.1 /5 at
    30/60/80%."""
    opt = {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4,
           "decay_gates": k_decay}
    kw = {"depth": 28, "widen": 10, "dropout": 0.3, "gated": gated,
          "num_classes": 100 if dataset == "cifar100" else 10}
    if scale != "full":
        kw.update(widen=1)
    cfg = _base(dataset, {"builder": "wide_resnet", "kwargs": kw}, opt, "mean_std", AUG)
    if scale == "full":
        total = 200 * (SIZES[dataset][0] // 128)  # 200 epochs of CIFAR's 50,000 training images
        cfg.update(steps=total, schedule=step_schedule(total, 0.1, 5, fractions=[0.3, 0.6, 0.8]),
                   subset=None, log_every=100, eval_every=2000,
                   why={"steps": "unstated in Paper B; 200 epochs (Zagoruyko & Komodakis' WRN "
                                 "recipe, whose lr drops at epochs 60/120/160 are exactly Paper "
                                 "B's 30/60/80%)",
                        "momentum": "Nesterov 0.9 as WRN's recipe and Paper B's ResNet runs",
                        "augment": "pad 4 with zeros + crop + flip (Paper B, as Paper A); the WRN "
                                   "code pads by reflection, which Paper B does not say it used"})
    else:
        cfg.update(_cpu_paper_b(fractions=[0.3, 0.6, 0.8], divisor=5,
                                   what="WRN-28-1: the depth of WRN-28-10, a tenth of its width "
                                        "(36.5M -> 0.37M)"))
    return cfg


def paper_b_mnist(kind, d, scale="full", defaults="torch"):
    """Paper B Sec 4.1: Linear(784->50), d layers of 50 (plain / resnet / gresnet), NAdam lr 0.002
    momentum 0.9, 100 epochs, batch 128, pixels / 255. defaults="keras": Keras's initialisation and
    BN settings instead of PyTorch's (models/mnist.py; Paper B states neither)."""
    opt = {"name": "nadam", "lr": 0.002, "betas": [0.9, 0.999], "weight_decay": 0.0,
           "decay_gates": False}
    kwargs = {"kind": kind, "d": d, "width": 50, "num_classes": 10}
    if defaults != "torch":
        kwargs["defaults"] = defaults
    cfg = _base("mnist", {"builder": "mlp", "kwargs": kwargs}, opt, "scale", None)
    why = {"optimizer": "Nadam as Keras (schedule_decay 0.004 = torch NAdam momentum_decay 4e-3), "
                        "beta1 = Paper B's momentum 0.9, beta2 0.999 (Keras default; unstated)",
           "init": "unstated in Paper B; the library's: PyTorch's default for linear layers "
                   "(uniform +-1/sqrt(fan_in), as Torch7's), BN weight 1 and bias "
                   "0" if defaults == "torch"
                   else
                   "unstated in Paper B; Keras's defaults (a probe of that choice): Glorot-uniform "
                   "linear weights, BN epsilon 1e-3 and momentum 0.99 (PyTorch 0.01), BN weight 1 "
                   "and bias 0",
           "augment": "none (Paper B mentions none for MNIST)"}
    if scale == "full":
        total = 100 * (60000 // 128)
        cfg.update(steps=total, schedule={"kind": "constant", "total": total, "base": 0.002},
                   subset=None,
                   log_every=100, eval_every=468 * 5, why=why)
    else:
        cfg.update(steps=400, schedule={"kind": "constant", "total": 400, "base": 0.002},
                   subset={"train_per_class": 5000, "test_per_class": 500}, log_every=20,
                   eval_every=100,
                   why={**why,
                        "scale": "CPU scale: the paper's network (same d), 400 steps (~1 epoch of "
                                 "a 50k stratified subset), 5k test images; ~10-30 s on 2 CPU "
                                 "cores"})
    return cfg
