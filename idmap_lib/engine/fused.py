"""N runs of one architecture trained as one network: the models side by side (issue 20; HFTA, MLSys 2021).

A CIFAR ResNet step on a big GPU is a thousand small kernels that leave it mostly idle; N seeds (or N scalar
variants) of one architecture can run as *one* network whose convolutions are grouped convolutions over the
N models' channels, whose batch norm is over N x C channels, and whose optimizer updates N-fold tensors.
``FusedModels`` builds that network without rewriting a layer: ``torch.func.stack_module_state`` holds every
parameter and buffer as one stacked leaf tensor [N, ...], and ``torch.func.functional_call`` under
``torch.vmap`` runs the model's own ``forward`` on all N at once -- vmap lowers a conv with stacked weights on
a stacked batch to one grouped convolution, a batch norm to one over N x C channels, a linear layer to a
batched matrix product: HFTA's fused array, derived instead of hand-written.

What stays per model, so that each trains exactly as it would alone (``trainer.train``; tests/test_engine_fused.py:
every logged loss equal to its solo run's to 1e-9 over 20 steps in float64; in float32 to 1e-5 for the first
logged windows, after which training amplifies the rounding of a grouped conv against a plain one):
- its weights and batch statistics (batch norm in training mode updates each model's running statistics
  in place through vmap: the stacked buffers are batched along with the input);
- its initialisation (each model is built after ``torch.manual_seed(seed)``, as ``Run`` builds it), data order
  (a ``torch.Generator`` seeded with the seed, ``randperm`` per epoch) and augmentation stream (seeded
  ``seed * 1000 + 1``) -- the generators of ``Run``, one per model;
- its loss: the sum over models of each model's mean cross-entropy, so each model's gradient is its own; the
  optimizer (the recipe's, from ``build.build_optimizer``) acts elementwise on the stacked leaves, the same
  update as on each model's tensors;
- its metrics, history, status: a model whose loss turns non-finite is recorded "fail" at that step (and its
  loss is masked out of the sum from then on); the others go on, unaffected (every fused op keeps the models
  apart: a NaN in one model's slice stays there).

"One architecture": the same module tree, the same parameter and buffer names, shapes and dtypes, and the
same module settings, with three exceptions that make *scalar variants* of one architecture fuse:
- the seed (it only changes tensor values);
- init-only values (a gate's ``init_bias``: Paper A Table 1's b_g = 0, -6, -7 live in the bias tensor);
- constant-scaling factors (``ConstantScaling.shortcut_scale`` / ``residual_scale``, Table 1 rows 2-4): Python
  floats read in ``forward``; where they differ between the models they become per-model scalar buffers of
  the fused network (``FusedModels.scalars``, not part of any model's state_dict).
Anything else that differs is refused with one error naming the module and what differs. Models that draw
random numbers in training (dropout, the dropout shortcut) are refused: each solo run draws its masks from its
own global RNG stream, which one vmapped call cannot reproduce.

``fuse(models)`` / ``unfuse(fused)``: the stacked state and back to one state_dict per model, bit for bit.
``FusedRun`` / ``train_fused(cfgs, ...)``: N recipe configs that share their recipe (everything but the
seed and such scalar variants) trained in lockstep. Checkpoints are the solo runs' own: every model's state is
written, in ``Run.checkpoint``'s format, to the file ``Run`` would use (checkpoint_dir/<run name>.pt), so a
fused run resumes solo and a solo (or fused) run resumes fused. Precision: fp32 or bf16 autocast (``amp``, as
``train``); fp16 is refused (one GradScaler for N models would skip every model's step when one overflows).
``cuda_graph``: on CUDA the whole fused step is captured once per learning rate and replayed, as ``Run`` does.
The command line: ``train ... --seed 0,1,2 --fused``. Not here: channels_last, torch.compile, DDP.
"""
from __future__ import annotations

import copy
import math
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state

from ..models.introspect import gates
from ..models.shortcuts import ConstantScaling, DropoutShortcut
from . import data as data_mod
from .batches import normalise, prepare_data, to_device, train_batch
from .build import build_model, build_optimizer
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .device import EngineSettings, amp_dtype, format_duration, pick_device, precision_name
from .recipes import lr_at
from .results import config_hash, provenance, run_name, save_result, training_hash
from .trainer import GraphedStep

# recipe keys that fused runs share (the model may differ only as FusedModels allows; the seed is free)
SAME = ("dataset", "steps", "batch_size", "schedule", "optimizer", "preprocess", "augment", "subset", "log_every",
        "eval_every", "divergence")
# float attributes read in forward that may differ between fused models: per-model scalar buffers
SCALARS = {ConstantScaling: ("shortcut_scale", "residual_scale")}
# attributes that do not change what forward computes: labels for drawings, init-only values
IGNORED = ("on_shortcut", "on_residual", "init_bias")
# optimizer state of one value per parameter element (stacked per model); the rest (step counts, NAdam's
# mu_product) is one value per tensor, the same for every model of a lockstep run
PER_ELEMENT_STATE = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")


# ----------------------------------------------------------------------------------------------
# N models as one

def _settings(m):
    """A module's own settings: its plain attributes, without torch's bookkeeping (``_*``, ``training``)."""
    return {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"}


def _scalar_names(m):
    return next((names for cls, names in SCALARS.items() if isinstance(m, cls)), ())


def architecture_differences(models) -> tuple[list[str], dict]:
    """What keeps `models` from being one architecture (empty if nothing), and the scalar fields that differ
    between them: {(module path, attribute): [value of each model]}."""
    if not models:
        return ["no models"], {}
    ref, out, scalars = models[0], [], {}
    ref_mods = dict(ref.named_modules())
    for i, m in enumerate(models[1:], 1):
        mods = dict(m.named_modules())
        if list(mods) != list(ref_mods):
            extra = sorted(set(mods) ^ set(ref_mods)) or ["(their order)"]
            out.append(f"model {i} has other modules than model 0: {', '.join(extra[:4])}")
            continue
        for path, a in mods.items():
            b, name = ref_mods[path], path or "(the model)"
            if type(a) is not type(b):
                out.append(f"{name} is a {type(b).__name__} in model 0, a {type(a).__name__} in model {i}")
                continue
            for kind, ta, tb in (("parameter", a._parameters, b._parameters), ("buffer", a._buffers, b._buffers)):
                sa = {k: None if t is None else (tuple(t.shape), t.dtype) for k, t in ta.items()}
                sb = {k: None if t is None else (tuple(t.shape), t.dtype) for k, t in tb.items()}
                if sa != sb:
                    out.append(f"{name}: {kind}s (names, shapes, dtypes) differ: {sb} in model 0, {sa} in model {i}")
            sa, sb = _settings(a), _settings(b)
            for k in sorted(set(sa) | set(sb)):
                if k in IGNORED or (k in sa and k in sb and sa[k] == sb[k]):
                    continue
                if k in _scalar_names(a):
                    scalars[(path, k)] = None
                    continue
                out.append(f"{name}.{k} is {sb.get(k, '(absent)')!r} in model 0, {sa.get(k, '(absent)')!r} "
                           f"in model {i}")
    for path, k in scalars:
        scalars[(path, k)] = [float(getattr(m.get_submodule(path), k)) for m in models]
    return out, scalars


def _random_in_training(model):
    return [n or "(the model)" for n, m in model.named_modules()
            if (isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0) or isinstance(m, DropoutShortcut)]


def check_one_architecture(models) -> dict:
    """Raise one clear error if `models` cannot be fused (see the module's docstring); else return the scalar
    fields that differ between them (``architecture_differences``)."""
    problems, scalars = architecture_differences(models)
    if problems:
        raise ValueError("these models are not one architecture, so they cannot be fused: "
                         + "; ".join(problems[:6]) + (f" (and {len(problems) - 6} more)" if len(problems) > 6 else ""))
    rnd = _random_in_training(models[0])
    if rnd:
        raise ValueError(f"models that draw random numbers in training cannot be fused (each solo run draws "
                         f"its masks from its own RNG stream): {', '.join(rnd[:4])}; train them with "
                         f"trainer.train or train_many")
    return scalars


class FusedModels:
    """N models of one architecture (see the module's docstring) as stacked tensors, run as one network.

    ``params`` and ``buffers``: {name: tensor [N, ...]} in each model's naming (the parameters are leaves that
    require grad: give them to an optimizer); ``scalars``: {name: tensor [N]}, the scalar fields that differ.
    Call it on a batch per model, x [N, B, ...] -> [N, B, classes], or with ``shared=True`` on one batch for
    all, x [B, ...] (evaluation). ``train()`` / ``eval()`` switch batch norm as on a module."""

    def __init__(self, models, device=None):
        models = list(models)
        scalars = check_one_architecture(models)
        self.n = len(models)
        self.keys = list(models[0].state_dict())  # one model's state_dict order
        device = torch.device(device) if device is not None else next(models[0].parameters()).device
        params, buffers = stack_module_state(models)
        self.params = {k: v.detach().to(device).requires_grad_() for k, v in params.items()}
        self.buffers = {k: v.to(device) for k, v in buffers.items()}
        template = copy.deepcopy(models[0])
        self.scalars = {}
        for (path, attr), values in scalars.items():  # a float read in forward -> a per-model scalar buffer
            m = template.get_submodule(path)
            delattr(m, attr)
            m.register_buffer(attr, torch.zeros(()), persistent=False)
            self.scalars[f"{path}.{attr}"] = torch.tensor(values, dtype=torch.get_default_dtype(), device=device)
        self.template = template.to("meta")  # its tensors are never read: functional_call supplies them all

    @property
    def training(self):
        return self.template.training

    def train(self, mode=True):
        self.template.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def _one(self, p, b, s, x):
        return functional_call(self.template, (p, b, s), (x,))

    def __call__(self, x, shared=False):
        return torch.vmap(self._one, in_dims=(0, 0, 0, None if shared else 0))(
            self.params, self.buffers, self.scalars, x)

    def parameters(self):
        return list(self.params.values())

    @torch.no_grad()
    def unfuse_one(self, r) -> dict:
        """Model r's state_dict (a copy, in the model's own key order): exactly its slice of the fused tensors."""
        return {k: (self.params[k] if k in self.params else self.buffers[k])[r].detach().clone() for k in self.keys}

    def unfuse(self) -> list[dict]:
        """One state_dict per model: exactly the fused tensors."""
        return [self.unfuse_one(r) for r in range(self.n)]

    @torch.no_grad()
    def load(self, state_dicts):
        """Set every model's parameters and buffers from its state_dict (as given by ``unfuse``)."""
        if len(state_dicts) != self.n:
            raise ValueError(f"{len(state_dicts)} state_dicts for {self.n} fused models")
        for r, sd in enumerate(state_dicts):
            if list(sd) != self.keys:
                raise ValueError(f"state_dict {r} does not fit the fused models: its keys differ")
            for k, v in sd.items():
                (self.params if k in self.params else self.buffers)[k][r].copy_(v)

    def solo_models(self, models):
        """Write each model's fused state into `models` (fresh copies of the architecture); returns them."""
        for m, sd in zip(models, self.unfuse()):
            m.load_state_dict(sd)
        return models


def fuse(models, device=None) -> FusedModels:
    """N models of one architecture as one ``FusedModels`` (their tensors copied, stacked)."""
    return FusedModels(models, device)


def unfuse(fused: FusedModels) -> list[dict]:
    """The N models' state_dicts, bit for bit the fused state."""
    return fused.unfuse()


# ----------------------------------------------------------------------------------------------
# the optimizer over the stacked leaves, and its state per model

def fused_optimizer(fused: FusedModels, model: nn.Module, opt_cfg: dict, device=None, capturable=False):
    """The recipe's optimizer (``build.build_optimizer`` of one model: its groups, weight decay rules, kind)
    over the stacked leaves, parameter for parameter in the solo optimizer's order -- so its state_dict has the
    solo optimizer's layout, each tensor of per-element state stacked [N, ...]."""
    solo = build_optimizer(model, opt_cfg, device, capturable=capturable)
    names = {id(p): n for n, p in model.named_parameters()}
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [fused.params[names[id(p)]] for p in g["params"]]} for g in solo.param_groups]
    return type(solo)(groups, **solo.defaults)


def unfuse_optimizer_state(state_dict, r):
    """Model r's solo optimizer state_dict from the fused optimizer's."""
    state = {i: {k: (v[r].clone() if k in PER_ELEMENT_STATE else v.clone()) if torch.is_tensor(v) else v
                 for k, v in s.items()} for i, s in state_dict["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(state_dict["param_groups"])}


def fuse_optimizer_state(state_dicts):
    """The fused optimizer's state_dict from N solo ones (of models at one step)."""
    first = state_dicts[0]
    state = {}
    for i, s in first["state"].items():
        state[i] = {}
        for k, v in s.items():
            vs = [sd["state"][i][k] for sd in state_dicts]
            if k in PER_ELEMENT_STATE:
                state[i][k] = torch.stack(vs)
            elif torch.is_tensor(v):
                if any(not torch.equal(v, w) for w in vs):
                    raise ValueError(f"optimizer state {k!r} differs between the models: not one lockstep run")
                state[i][k] = v.clone()
            else:
                state[i][k] = v
    return {"state": state, "param_groups": copy.deepcopy(first["param_groups"])}


# ----------------------------------------------------------------------------------------------
# a fused training run

def check_fusable(cfgs):
    """The configs can train fused: one recipe (SAME), each run once, one architecture (their networks built on
    the meta device, which costs no memory: ``check_one_architecture``)."""
    if not cfgs:
        raise ValueError("nothing to train: no configs")
    for key in SAME:
        if len({repr(c.get(key)) for c in cfgs}) > 1:
            raise ValueError(f"fused runs must share their recipe; they differ in {key!r}: group them by it")
    if len({config_hash(c) for c in cfgs}) < len(cfgs):
        raise ValueError("the same run (config and seed) appears twice in one fused group")
    with torch.device("meta"):
        check_one_architecture([build_model(c["model"]) for c in cfgs])


class FusedRun(GraphedStep):
    """N runs (configs that ``check_fusable``) advanced in lockstep as one fused network; ``advance`` until
    ``done``, then ``finish`` -> one result per run. Each run's state is its solo run's (``trainer.Run``)."""

    def __init__(self, cfgs, data=None, device=None, out_dir=None, checkpoint_dir=None, checkpoint_every=None,
                 resume=False, max_steps=None, progress=True, deterministic=False, amp="auto", write_result=True,
                 cuda_graph=False):
        check_fusable(cfgs)
        self.cfgs, self.n = list(cfgs), len(cfgs)
        self.device = device = pick_device(device)
        self.out_dir, self.write_result, self.progress = out_dir, write_result, progress
        self.deterministic = bool(deterministic)
        self.dtype = amp_dtype(device, amp)
        if self.dtype == torch.float16:
            raise ValueError("fused runs do not train in fp16: one GradScaler for N models would skip every "
                             "model's step when one overflows; use amp='bf16' or 'fp32'")
        c = self.cfgs[0]
        self.total, self.B = c["steps"], c["batch_size"]
        self.log_every, self.eval_every = c["log_every"], c["eval_every"]
        self.hashes = [config_hash(cfg) for cfg in self.cfgs]
        self.seeds = [int(cfg["seed"]) for cfg in self.cfgs]
        self.D = prepare_data(c, data, device)
        self.models, self.torch_rng = [], []
        for seed, cfg in zip(self.seeds, self.cfgs):  # each initialised exactly as Run initialises it
            torch.manual_seed(seed)
            self.models.append(build_model(cfg["model"]))
            self.torch_rng.append(torch.get_rng_state())  # that run's global RNG after its build (for its checkpoint)
        self.fused = FusedModels(self.models, device)
        self.graph_on = bool(cuda_graph) and device.type == "cuda"
        self.graph_note = "CUDA graphs need a CUDA device" if cuda_graph and not self.graph_on else None
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.graph, self.graph_lr, self.static = None, None, None
        self.opt = fused_optimizer(self.fused, self.models[0], c["optimizer"], device, capturable=self.graph_on)
        self.gen_order = [torch.Generator().manual_seed(s) for s in self.seeds]
        self.gen_aug = [torch.Generator(device=device).manual_seed(s * 1000 + 1) for s in self.seeds]
        self.N = len(self.D["y_train"])
        self.perm, self.pos = [to_device(torch.randperm(self.N, generator=g), device) for g in self.gen_order], 0
        # per run: loss sum, error sum, count, first non-finite step (-1: none) -- on the device
        self.acc = torch.tensor([[0.0, 0.0, 0.0, -1.0]] * self.n, device=device, dtype=torch.float64)
        self.alive = torch.ones(self.n, dtype=torch.bool, device=device)
        self.histories = [{"train": [], "test": []} for _ in self.cfgs]
        self.status, self.fails = ["running"] * self.n, [None] * self.n
        self.step, self.elapsed = 0, [0.0] * self.n
        self.step_t = torch.zeros((), device=device, dtype=torch.float64)  # the step, as the device sees it
        self.ckpt_paths = [Path(checkpoint_dir) / f"{run_name(cfg)}.pt" for cfg in self.cfgs] \
            if checkpoint_dir else None
        ce = self.eval_every if checkpoint_every is None else checkpoint_every
        self.checkpoint_every = max(self.log_every, math.ceil(ce / self.log_every) * self.log_every)
        if resume and self.ckpt_paths is not None:
            self._resume()
        self.stop = self.total if max_steps is None else min(self.total, max_steps)
        self.step_t.fill_(self.step)
        self.eager_since = self.step  # graph capture waits trainer.GRAPH_WARMUP eager steps after every (re)start
        div = c["divergence"]
        self.grace = None if div.get("grace_fraction") is None else \
            max(int(div["grace_fraction"] * self.total), 2 * self.log_every)
        self.chance_margin = div.get("chance_margin", 0.01)
        self.chance_err = 1.0 - 1.0 / self.D["num_classes"]
        self.fused.train()
        self.t_window, self.steps_window = time.perf_counter(), 0
        self._say(f"fused: {self.n} runs of {run_name(c)} ... on {device}, {precision_name(self.dtype)}"
                  + (", CUDA graph" if self.graph_on else f" (no CUDA graph: {self.graph_note})" if cuda_graph else "")
                  + f"; {self.total - self.step} steps to go")

    def _say(self, msg):
        if self.progress:
            print(msg, flush=True)

    @property
    def done(self):
        return "running" not in self.status or self.step >= self.stop

    # -- checkpoints: each run's own, in Run's format and place
    def _resume(self):
        there = [p.exists() for p in self.ckpt_paths]
        if not any(there):
            return
        if not all(there):
            missing = [p.name for p, t in zip(self.ckpt_paths, there) if not t]
            raise CheckpointError(f"a fused run resumes all its runs or none; no checkpoint for {', '.join(missing)} "
                                  f"in {self.ckpt_paths[0].parent}: delete the others to start afresh, or train the "
                                  f"runs apart (trainer.train)")
        cks = [load_checkpoint(p, h, 1) for p, h in zip(self.ckpt_paths, self.hashes)]
        prec = precision_name(self.dtype)
        for p, ck in zip(self.ckpt_paths, cks):
            kind = (ck.get("device_type"), ck.get("precision"))
            if kind[0] is not None and kind != (self.device.type, prec):
                raise CheckpointError(f"checkpoint {p} was written on {kind[0]} in {kind[1]}; this fused run is on "
                                      f"{self.device.type} in {prec}: resume it there (pass device/amp to match)")
            if ck.get("moves"):
                raise CheckpointError(f"checkpoint {p} has moved between devices or precisions; resume it alone "
                                      f"(trainer.train)")
        live = [i for i, ck in enumerate(cks) if ck.get("status", "running") == "running"]
        steps = {cks[i]["step"] for i in live}
        if len(steps) > 1:
            raise CheckpointError(f"the checkpoints of a fused run must be at one step; they are at {sorted(steps)}: "
                                  f"resume them apart (trainer.train) or bring them to one step first")
        self.step = steps.pop() if steps else max(ck["step"] for ck in cks)
        try:
            self.fused.load([ck["model"] for ck in cks])
            opt_states = [ck["optimizer"] for ck in cks]
            if live and all(opt_states[i]["state"] for i in live):
                ref = [opt_states[i] for i in live]
                fill = [opt_states[i] if i in live and opt_states[i]["state"] else ref[0] for i in range(self.n)]
                self.opt.load_state_dict(fuse_optimizer_state(fill))
            for r, ck in enumerate(cks):
                rng = ck["rng"]
                self.torch_rng[r] = rng["torch"][0]
                self.gen_order[r].set_state(rng["order"])
                self.gen_aug[r].set_state(rng["augment"][0])
        except (RuntimeError, ValueError, KeyError, IndexError) as e:
            raise CheckpointError(f"the checkpoints in {self.ckpt_paths[0].parent} do not fit these fused models "
                                  f"({e}); delete them or run without resume") from e
        pos = {cks[i]["data"]["pos"] for i in live}
        self.pos = pos.pop() if pos else 0
        self.perm = [ck["data"]["perm"].to(self.device, torch.int64) for ck in cks]
        self.acc = torch.stack([ck["acc"] for ck in cks]).to(self.device)
        self.histories = [ck["history"] for ck in cks]
        self.elapsed = [ck["elapsed"] for ck in cks]
        self.status = [ck.get("status", "running") for ck in cks]
        self.fails = [ck.get("fail") for ck in cks]
        self.alive = torch.tensor([s == "running" for s in self.status], device=self.device)
        self._say(f"fused: resumed {self.n} checkpoints from {self.ckpt_paths[0].parent} at step {self.step}/"
                  f"{self.total}")

    def solo_checkpoint(self, r) -> dict:
        """Run r's checkpoint, exactly as its solo ``Run.checkpoint`` writes it."""
        cfg = self.cfgs[r]
        return {"format": 1, "config": cfg, "config_hash": self.hashes[r], "world_size": 1,
                "device_type": self.device.type, "precision": precision_name(self.dtype), "step": self.step,
                "model": self.fused.unfuse_one(r),
                "optimizer": unfuse_optimizer_state(self.opt.state_dict(), r),
                "scheduler": {"kind": "pure function of the step (recipes.lr_at)", "step": self.step},
                "scaler": None,
                "rng": {"torch": [self.torch_rng[r]], "cuda": None, "order": self.gen_order[r].get_state(),
                        "augment": [self.gen_aug[r].get_state()]},
                "data": {"perm": self.perm[r].to(torch.int32).cpu(), "pos": self.pos},
                "acc": self.acc[r].cpu().clone(),
                "history": self.histories[r], "elapsed": self.elapsed[r], "status": self.status[r],
                "fail": self.fails[r], "moves": []}

    def checkpoint(self, runs=None):
        if self.ckpt_paths is None:
            return
        for r in range(self.n) if runs is None else runs:
            save_checkpoint(self.ckpt_paths[r], self.solo_checkpoint(r))

    # -- the step
    def _on_stream(self):
        import contextlib
        return torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()

    def advance(self):
        """One training step of every run, then the log / evaluation / checkpoints that fall on it."""
        with self._on_stream():
            self._advance()

    def _advance(self):
        was = list(self.status)
        self._train_step()
        if self.step % self.log_every == 0 or self.step == self.total:
            self._log()
        ended = [r for r in range(self.n) if was[r] == "running" and self.status[r] != "running"]
        if self.step % self.checkpoint_every == 0 or self.step == self.stop:
            self.checkpoint([r for r in range(self.n) if was[r] == "running"])
        elif ended:
            self.checkpoint(ended)  # as a solo run does when it ends

    def _batches(self):
        if self.pos + self.B > self.N:  # a new epoch for every run (the last partial batch is dropped)
            self.perm = [to_device(torch.randperm(self.N, generator=g), self.device) for g in self.gen_order]
            self.pos = 0
        idx = [p[self.pos:self.pos + self.B] for p in self.perm]
        self.pos += self.B
        aug = self.cfgs[0].get("augment") or None
        x = torch.stack([train_batch(self.D, i, aug, g, False) for i, g in zip(idx, self.gen_aug)])
        return x, torch.stack([self.D["y_train"][i] for i in idx])

    def _forward_backward(self, x, y):
        """Forward, backward, optimizer step and the device-side sums of every run: what a CUDA graph captures."""
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None,
                            cache_enabled=not self.graph_on):
            out = self.fused(x)
            loss = torch.vmap(F.cross_entropy)(out.to(torch.get_default_dtype()), y)  # (N,): each run's mean loss
        torch.where(self.alive, loss, torch.zeros_like(loss)).sum().backward()  # an ended run learns no more
        self.opt.step()
        with torch.no_grad():
            l = loss.detach().double()
            n = torch.full_like(l, self.B)
            self.acc[:, :3] += torch.stack((l * n, (out.detach().argmax(-1) != y).sum(1).double(), n), 1)
            first_bad = torch.isfinite(l).logical_not() & (self.acc[:, 3] < 0)
            self.acc[:, 3] = torch.where(first_bad, self.step_t.expand_as(l), self.acc[:, 3])
            self.step_t += 1

    def _train_step(self):
        lr = lr_at(self.cfgs[0]["schedule"], self.step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        x, y = self._batches()
        self._step_on(x, y, lr)  # eager, or replayed as one CUDA graph (trainer.GraphedStep)
        self.step += 1
        self.steps_window += 1

    @torch.no_grad()
    def evaluate(self, batch=1000):
        """Every run's test loss and error (BN on its running statistics), as ``batches.evaluate``."""
        self.fused.eval()
        D, acc = self.D, torch.zeros(self.n, 2, dtype=torch.float64, device=self.device)
        n = len(D["y_test"])
        for s in range(0, n, batch):
            x = normalise(D, D["x_test"][s:s + batch])
            y = D["y_test"][s:s + batch]
            with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
                out = self.fused(x, shared=True)
            acc[:, 0] += torch.vmap(lambda o: F.cross_entropy(o.to(torch.get_default_dtype()), y, reduction="sum"))(out)
            acc[:, 1] += (out.argmax(-1) != y).sum(1)
        self.fused.train()
        return (acc / n).tolist()

    def _log(self):
        step, sched = self.step, self.cfgs[0]["schedule"]
        a = self.acc.tolist()
        self.acc[:, :3] = 0.0
        self.acc[:, 3] = -1.0
        now = time.perf_counter()
        dt = max(now - self.t_window, 1e-9)
        evaluate = step % self.eval_every == 0 or step == self.total
        for r in range(self.n):
            if self.status[r] != "running":
                continue
            self.elapsed[r] += dt
            loss_sum, err_sum, n, bad = a[r]
            rec = {"step": step, "train_loss": loss_sum / max(n, 1), "train_err": err_sum / max(n, 1),
                   "lr": lr_at(sched, step - 1), "img_per_s": self.steps_window * self.B / dt,
                   "wall_s": self.elapsed[r]}
            self.histories[r]["train"].append(rec)
            if bad >= 0:
                self.status[r], self.fails[r] = "fail", {"step": int(bad), "reason": "non-finite training loss"}
            elif self.grace is not None and step > self.grace and \
                    rec["train_err"] >= self.chance_err - self.chance_margin:
                self.status[r], self.fails[r] = "fail", {
                    "step": step, "reason": f"training error {rec['train_err']:.3f} still at chance "
                                            f"({self.chance_err:.3f}) after {step} steps"}
            if self.status[r] != "running":
                self.alive[r] = False
        if evaluate and "running" in self.status:
            for r, (tl, te) in enumerate(self.evaluate()):
                if self.status[r] == "running":
                    self.histories[r]["test"].append({"step": step, "test_loss": tl, "test_err": te})
        if step == self.total:
            self.status = ["ok" if s == "running" else s for s in self.status]
        self.t_window, self.steps_window = time.perf_counter(), 0  # evaluation is kept out of img/s and wall_s

    # -- the end
    def solo_models(self):
        """The N trained networks, each a model of its config with its fused weights and statistics."""
        return self.fused.solo_models([copy.deepcopy(m) for m in self.models])

    def finish(self) -> list[dict]:
        models = self.solo_models()
        out = []
        for r, cfg in enumerate(self.cfgs):
            if self.status[r] == "running":
                out.append({"status": "stopped", "step": self.step, "config": cfg, "config_hash": self.hashes[r],
                            "history": self.histories[r],
                            "checkpoint": str(self.ckpt_paths[r]) if self.ckpt_paths else None})
                continue
            h = self.histories[r]
            tr = h["train"]
            final = {"train_loss": tr[-1]["train_loss"], "train_err": tr[-1]["train_err"], "steps": tr[-1]["step"],
                     "wall_s": self.elapsed[r],
                     "img_per_s": sum(x["img_per_s"] for x in tr[1:]) / max(len(tr) - 1, 1)}
            if h["test"] and h["test"][-1]["step"] == tr[-1]["step"]:  # a test error from before a failure is no final
                final.update(test_err=h["test"][-1]["test_err"], test_loss=h["test"][-1]["test_loss"])
            ks = gates(models[r])
            if ks:
                final["gates_k"] = [float(k.detach()) for k in ks]
            result = {"config": cfg, "config_hash": self.hashes[r], "training_hash": training_hash(cfg),
                      "status": self.status[r], "fail": self.fails[r], "final": final, "history": h,
                      "seed": self.seeds[r], "dataset_source": self.D["source"],
                      "precision": precision_name(self.dtype), "channels_last": False, "compiled": False,
                      "cuda_graph": self.graph_on, "deterministic": self.deterministic,
                      "fused": {"runs": self.n, "with": [run_name(c) for c in self.cfgs],
                                "note": "trained together as one fused network (idmap_lib.engine.fused); each "
                                        "run's img_per_s is its own images per second"},
                      **provenance(self.device)}
            if self.write_result:
                result["path"] = str(save_result(result, self.out_dir))
            out.append(result)
        return out


def train_fused(cfgs: list[dict], data=None, device=None, out_dir=None, checkpoint_dir=None, checkpoint_every=None,
                resume=False, max_steps=None, progress=True, deterministic=False, amp="auto",
                write_result=True, cuda_graph=False) -> list[dict]:
    """Train N configs of one recipe and one architecture (seeds; scalar variants) as one fused network;
    returns one result per config, ``trainer.train``'s result plus ``fused`` (how many ran together).

    The keyword arguments mean what they mean for ``trainer.train``; checkpoints are the solo runs' (one file
    per run, where ``train`` would write it), so a run can go on fused or alone. A run whose loss turns
    non-finite is recorded "fail" at that step; the others go on."""
    check_fusable(cfgs)  # (before the data is loaded: a refusal costs nothing)
    d = data if isinstance(data, data_mod.Data) else data_mod.load(cfgs[0]["dataset"], data)
    with EngineSettings(deterministic, device):
        run = FusedRun(cfgs, data=d, device=device, out_dir=out_dir, checkpoint_dir=checkpoint_dir,
                       checkpoint_every=checkpoint_every, resume=resume, max_steps=max_steps, progress=progress,
                       deterministic=deterministic, amp=amp, write_result=write_result, cuda_graph=cuda_graph)
        t0, s0 = time.perf_counter(), run.step
        while not run.done:
            run.advance()
            if run.step == s0 + 10 and not run.done:
                per = (time.perf_counter() - t0) / 10
                run._say(f"fused: {run.n * run.B / per:.0f} img/s in all -> the remaining {run.total - run.step} "
                         f"steps take about {format_duration(per * (run.total - run.step))}")
        return run.finish()
