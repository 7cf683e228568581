"""The stepper of N runs of one architecture trained as one network: the models side by side (HFTA,
MLSys 2021). The N models as one network, and the optimizer over their stacked leaves:
fused_models.py.

What stays per model, so that each trains exactly as it would alone (tests/test_engine_fused.py:
every logged loss equal to its solo run's to 1e-9 over 20 steps in float64; in float32 to 1e-5 for
the first windows, after which training amplifies the rounding of a grouped conv against a plain
one):
- its weights and batch statistics (BN in training mode updates each model's running statistics in
  place through vmap); its initialisation (built after ``torch.manual_seed(seed)``, as
  ``solo.Solo``); its data order and augmentation stream (the loop's, per run);
- its loss: the sum over models of each model's mean cross-entropy, so each gradient is its own; the
  recipe's optimizer acts elementwise on the stacked leaves, the same update as on each model's
  tensors;
- its status: a model whose loss turns non-finite is recorded "fail" and masked out of the sum from
  then on; the others go on (every fused op keeps the models apart: a NaN in one slice stays there).

Checkpoints are the solo runs' own (loop.py): a fused run resumes solo and a solo one fused.
Precision: fp32 or bf16 autocast; fp16 is refused (one GradScaler for N models would skip every
model's step when one overflows). ``cuda_graph``: the whole fused step as one CUDA graph. The
entry: ``trainer.train(cfgs, stepper=Fused)``; the command line: ``train ... --seed 0,1,2
--fused``. Not here: ``NOT_FUSED`` (each with its reason), DDP (one process trains the N runs).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .build import build_model, seeded_models
from .device import amp_dtype, precision_name
from .fused_models import (FusedModels, check_one_architecture, fuse_optimizer_state,
                           fused_optimizer,
                           unfuse_optimizer_state)
from .loop import share_recipe
from .outcome import together

# the training options a fused run does not take, and why (every other one it takes as a solo run)
NOT_FUSED = {
    "compile": "torch.compile of a vmapped network is not supported",
    "channels_last": "the grouped convolutions of N models keep the default layout",
}


def check_fusable(cfgs):
    """One recipe, each run once, one architecture (built on the meta device: no memory)."""
    share_recipe(cfgs, "fused")
    with torch.device("meta"):
        check_one_architecture([build_model(c["model"]) for c in cfgs])


class Fused:
    """N runs' networks as one ``FusedModels`` and one optimizer over its leaves."""

    ddp, cl = False, False

    @staticmethod
    def check(cfgs, opts):
        opts.refuse("a fused run", NOT_FUSED)
        check_fusable(cfgs)

    def __init__(self, cfgs, D, device, o, ctx):
        self.cfgs, self.n, self.device = cfgs, len(cfgs), device
        self.dtype = amp_dtype(device, cfgs[0].get("amp", o.amp))
        if self.dtype == torch.float16:
            raise ValueError("fused runs do not train in fp16: one GradScaler for N models would "
                             "skip every model's step when one overflows; use amp='bf16' or 'fp32'")
        self.models, self.torch_rng = seeded_models(cfgs)
        self.fused = FusedModels(self.models, device)
        self.graph_on = bool(o.cuda_graph) and device.type == "cuda"
        self.note = ("" if self.graph_on or not o.cuda_graph
                     else " (no CUDA graph: CUDA graphs need a CUDA device)")
        self.opt = fused_optimizer(self.fused, self.models[0], cfgs[0]["optimizer"], device,
                                   capturable=self.graph_on)

    def describe(self) -> str:
        return (f"{self.n} runs fused on {self.device}, {precision_name(self.dtype)}"
                + (", CUDA graph" if self.graph_on else self.note))

    def train(self):
        self.fused.train()

    def batch(self, xs, ys):
        return torch.stack(xs), torch.stack(ys)

    def step(self, x, y, alive):
        """Every run's forward, backward and update; each run's loss (N,) and wrong answers (N,)."""
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None,
                            cache_enabled=not self.graph_on):
            out = self.fused(x)
            loss = torch.vmap(F.cross_entropy)(out.to(torch.get_default_dtype()), y)
        # an ended run learns no more
        torch.where(alive, loss, torch.zeros_like(loss)).sum().backward()
        self.opt.step()
        return loss.detach(), (out.detach().argmax(-1) != y).sum(1)

    def eval(self):
        self.fused.eval()

    def test_sums(self, x, y):
        """One test batch's loss sums (N,) and wrong answers (N,): every model on the same
        images."""
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
            out = self.fused(x, shared=True)
        ce = lambda o: F.cross_entropy(o.to(torch.get_default_dtype()), y,
                                       reduction="sum")  # noqa: E731
        return torch.vmap(ce)(out), (out.argmax(-1) != y).sum(1)

    def states(self):
        opt = self.opt.state_dict()
        return [(self.fused.unfuse_one(r), unfuse_optimizer_state(opt, r), None)
                for r in range(self.n)]

    def load(self, cks, live):
        self.fused.load([ck["model"] for ck in cks])
        opts = [ck["optimizer"] for ck in cks]
        if live and all(opts[i]["state"] for i in live):  # an ended run's slot: a live run's state
            ref = opts[live[0]]
            self.opt.load_state_dict(fuse_optimizer_state(
                [opts[i] if i in live else ref for i in range(self.n)]))

    def trained(self):
        """The N trained networks, each a model of its config with its fused weights and
        statistics."""
        import copy

        return self.fused.solo_models([copy.deepcopy(m) for m in self.models])

    def extra(self, cfgs) -> dict:
        return {"fused": together("fused", cfgs, "fused")}
