"""A recipe's model and optimizer: the network its config names (from the model library) and SGD /
NAdam with the recipe's per-group weight decay."""
from __future__ import annotations

import torch
import torch.nn as nn

from .. import models
from ..models.units import gates


def build_model(spec: dict) -> nn.Module:
    """The model named by the config: a builder of the model library (models.cifar_resnet,
    wide_resnet, mlp)."""
    return getattr(models, spec["builder"])(**spec["kwargs"])


def seeded_models(cfgs) -> tuple[list[nn.Module], list[torch.Tensor]]:
    """Each config's model, built after ``torch.manual_seed(its seed)`` (so every run of a group
    starts as it would alone), and the global RNG state right after each build (what its checkpoint
    keeps)."""
    models, states = [], []
    for cfg in cfgs:
        torch.manual_seed(int(cfg["seed"]))
        models.append(build_model(cfg["model"]))
        states.append(torch.get_rng_state())
    return models, states


def build_optimizer(model: nn.Module, opt: dict, device=None, capturable=False):
    """SGD / NAdam per the recipe. Gates k get no weight decay unless the recipe says
    ``decay_gates`` (Paper B Table 3, 'gated with weight decay on k'). On CUDA, SGD is the fused
    kernel (fewer launches, and a GradScaler step without a host sync); ``capturable`` NAdam keeps
    its step counters on the device so that a CUDA graph can hold its update."""
    gate_ids = {id(p) for p in gates(model)}
    wd = opt.get("weight_decay", 0.0)
    rest = [p for p in model.parameters() if id(p) not in gate_ids]
    k = [p for p in model.parameters() if id(p) in gate_ids]
    groups = [{"params": rest, "weight_decay": wd}]
    if k:
        groups.append({"params": k, "weight_decay": wd if opt.get("decay_gates") else 0.0})
    cuda = device is not None and torch.device(device).type == "cuda"
    if opt["name"] == "sgd":
        return torch.optim.SGD(groups, lr=opt["lr"], momentum=opt["momentum"],
                               nesterov=opt["nesterov"],
                               **({"fused": True} if cuda else {}))
    if opt["name"] == "nadam":
        return torch.optim.NAdam(groups, lr=opt["lr"], betas=tuple(opt["betas"]),
                                 momentum_decay=4e-3,
                                 **({"capturable": True} if cuda and capturable else {}))
    raise ValueError(f"unknown optimizer {opt['name']!r}; valid: sgd, nadam")


def has_conv(model):
    return any(isinstance(m, nn.Conv2d) for m in model.modules())
