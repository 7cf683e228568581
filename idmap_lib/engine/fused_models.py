"""N runs of one architecture trained as one network: the models side by side (HFTA, MLSys 2021).

A CIFAR ResNet step on a big GPU is a thousand small kernels that leave it mostly idle; N seeds (or
N scalar variants) of one architecture can run as *one* network whose convolutions are grouped
convolutions over the N models' channels, whose batch norm is over N x C channels, and whose
optimizer updates N-fold tensors. ``FusedModels`` builds that network without rewriting a layer:
``torch.func.stack_module_state`` holds every parameter and buffer as one stacked leaf tensor [N,
...], and ``torch.func.functional_call`` under ``torch.vmap`` runs the model's own ``forward`` on
all N at once -- vmap lowers a conv with stacked weights on a stacked batch to one grouped
convolution, a batch norm to one over N x C channels, a linear layer to a batched matrix product:
HFTA's fused array, derived instead of hand-written.

"One architecture": the same module tree, the same parameter and buffer names, shapes and dtypes,
and the same module settings, with three exceptions that make *scalar variants* of one architecture
fuse:
- the seed (it only changes tensor values);
- init-only values (a gate's ``init_bias``: Paper A Table 1's b_g = 0, -6, -7 live in the bias
  tensor);
- constant-scaling factors (``ConstantScaling.shortcut_scale`` / ``residual_scale``, Table 1 rows
  2-4): Python floats read in ``forward``; where they differ between the models they become
  per-model scalar buffers of the fused network (``FusedModels.scalars``, not part of any model's
  state_dict).
Anything else that differs is refused with one error naming the module and what differs. Models that
draw random numbers in training (dropout, the dropout shortcut) are refused: each solo run draws its
masks from its own global RNG stream, which one vmapped call cannot reproduce.

``fuse(models)`` / ``unfuse(fused)``: the stacked state and back to one state_dict per model, bit
for bit; ``fused_optimizer`` and the optimizer state per model. The training run over them:
fused.py.
"""
from __future__ import annotations

import copy

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state

from ..models.shortcuts import ConstantScaling, DropoutShortcut
from .build import build_optimizer

# float attributes read in forward that may differ between fused models: per-model scalar buffers
SCALARS = {ConstantScaling: ("shortcut_scale", "residual_scale")}
# attributes that do not change what forward computes: labels for drawings, init-only values
IGNORED = ("on_shortcut", "on_residual", "init_bias")
# optimizer state of one value per parameter element (stacked per model); the rest (step counts,
# NAdam's mu_product) is one value per tensor, the same for every model of a lockstep run
PER_ELEMENT_STATE = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")


# ----------------------------------------------------------------------------------------------
# N models as one

def _settings(m):
    """A module's own settings: its plain attributes, without torch's bookkeeping (``_*``,
    ``training``)."""
    return {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"}


def _scalar_names(m):
    return next((names for cls, names in SCALARS.items() if isinstance(m, cls)), ())


def architecture_differences(models) -> tuple[list[str], dict]:
    """What keeps `models` from being one architecture (empty if nothing), and the scalar fields
    that differ between them: {(module path, attribute): [value of each model]}."""
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
                out.append(f"{name} is a {type(b).__name__} in model 0, a {type(a).__name__} in "
                           f"model {i}")
                continue
            for kind, ta, tb in (("parameter", a._parameters, b._parameters),
                                 ("buffer", a._buffers, b._buffers)):
                sa = {k: None if t is None else (tuple(t.shape), t.dtype) for k, t in ta.items()}
                sb = {k: None if t is None else (tuple(t.shape), t.dtype) for k, t in tb.items()}
                if sa != sb:
                    out.append(f"{name}: {kind}s (names, shapes, dtypes) differ: {sb} in model 0, "
                               f"{sa} in model {i}")
            sa, sb = _settings(a), _settings(b)
            for k in sorted(set(sa) | set(sb)):
                if k in IGNORED or (k in sa and k in sb and sa[k] == sb[k]):
                    continue
                if k in _scalar_names(a):
                    scalars[(path, k)] = None
                    continue
                out.append(f"{name}.{k} is {sb.get(k, '(absent)')!r} in model 0, "
                           f"{sa.get(k, '(absent)')!r} in model {i}")
    for path, k in scalars:
        scalars[(path, k)] = [float(getattr(m.get_submodule(path), k)) for m in models]
    return out, scalars


def _random_in_training(model):
    return [n or "(the model)" for n, m in model.named_modules()
            if (isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0)
            or isinstance(m, DropoutShortcut)]


def check_one_architecture(models) -> dict:
    """Raise one clear error if `models` cannot be fused (see the module's docstring); else return
    the scalar fields that differ between them (``architecture_differences``)."""
    problems, scalars = architecture_differences(models)
    if problems:
        raise ValueError("these models are not one architecture, so they cannot be fused: "
                         + "; ".join(problems[:6]) + (f" (and {len(problems) - 6} more)"
                                                      if len(problems) > 6 else ""))
    rnd = _random_in_training(models[0])
    if rnd:
        raise ValueError(f"models that draw random numbers in training cannot be fused (each solo "
                         f"run draws its masks from its own RNG stream): {', '.join(rnd[:4])}; "
                         f"train them alone (trainer.train's default stepper)")
    return scalars


class FusedModels:
    """N models of one architecture (see the module's docstring) as stacked tensors, run as one
    network.

    ``params`` and ``buffers``: {name: tensor [N, ...]} in each model's naming (the parameters are
    leaves that require grad: give them to an optimizer); ``scalars``: {name: tensor [N]}, the
    scalar fields that differ. Call it on a batch per model, x [N, B, ...] -> [N, B, classes], or
    with ``shared=True`` on one batch for all, x [B, ...] (evaluation). ``train()`` / ``eval()``
    switch batch norm as on a module."""

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
        # a float read in forward -> a per-model scalar buffer
        for (path, attr), values in scalars.items():
            m = template.get_submodule(path)
            delattr(m, attr)
            m.register_buffer(attr, torch.zeros(()), persistent=False)
            self.scalars[f"{path}.{attr}"] = torch.tensor(values, dtype=torch.get_default_dtype(),
                                                          device=device)
        # its tensors are never read: functional_call supplies them all
        self.template = template.to("meta")

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
        """Model r's state_dict (a copy, in the model's own key order): exactly its slice of the
        fused tensors."""
        return {k: (self.params[k] if k in self.params else self.buffers[k])[r].detach().clone()
                for k in self.keys}

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
        """Write each model's fused state into `models` (fresh copies of the architecture); returns
        them."""
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

def fused_optimizer(fused: FusedModels, model: nn.Module, opt_cfg: dict, device=None,
                    capturable=False):
    """The recipe's optimizer (``build.build_optimizer`` of one model: its groups, weight decay
    rules, kind) over the stacked leaves, parameter for parameter in the solo optimizer's order --
    so its state_dict has the solo optimizer's layout, each tensor of per-element state stacked [N,
    ...]."""
    solo = build_optimizer(model, opt_cfg, device, capturable=capturable)
    names = {id(p): n for n, p in model.named_parameters()}
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [fused.params[names[id(p)]] for p in g["params"]]}
               for g in solo.param_groups]
    return type(solo)(groups, **solo.defaults)


def unfuse_optimizer_state(state_dict, r):
    """Model r's solo optimizer state_dict from the fused optimizer's."""
    state = {i: {k: (v[r].clone() if k in PER_ELEMENT_STATE else v.clone()) if torch.is_tensor(v)
                 else v
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
                    raise ValueError(f"optimizer state {k!r} differs between the models: not one "
                                     f"lockstep run")
                state[i][k] = v.clone()
            else:
                state[i][k] = v
    return {"state": state, "param_groups": copy.deepcopy(first["param_groups"])}
