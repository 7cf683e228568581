"""The stepper of one network (``loop.Loop``'s default): the recipe's model and optimizer, its
precision (bf16 autocast where the hardware has it, fp16 + GradScaler on older GPUs, else fp32),
channels_last for conv nets, torch.compile, DDP under torchrun (distributed.py) and the whole step
as one CUDA graph."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .batches import model_sums
from .build import build_optimizer, has_conv, seeded_models
from .device import amp_dtype, precision_name


class Solo:
    """One run's network and optimizer; ``step`` trains it on one batch."""

    ddp = True  # the one stepper that trains under torchrun

    @staticmethod
    def check(cfgs, opts):
        if len(cfgs) != 1:
            raise ValueError("a solo stepper trains one run: trainer.train gives each its own")

    def __init__(self, cfgs, D, device, o, ctx):
        cfg = cfgs[0]
        seed, cuda = int(cfg["seed"]), device.type == "cuda"
        self.device, self.ctx, self.cfg = device, ctx, cfg
        (model,), self.torch_rng = seeded_models(cfgs)
        model = model.to(device)
        self.cl = has_conv(model) if o.channels_last == "auto" else bool(o.channels_last)
        if self.cl:
            model = model.to(memory_format=torch.channels_last)
        self.raw = model
        self.dtype = amp_dtype(device, cfg.get("amp", o.amp))  # a recipe that names its precision
        self.scaler = torch.amp.GradScaler("cuda") if self.dtype == torch.float16 and cuda else None
        self.compile = bool(o.compile)
        self.graph_note = self._graph_blocker(o.cuda_graph, cuda)
        self.graph_on = bool(o.cuda_graph) and self.graph_note is None
        self.want_graph = bool(o.cuda_graph)
        self.opt = build_optimizer(model, cfg["optimizer"], device, capturable=self.graph_on)
        # a test batch's loss sum, wrong answers
        self.test_sums = model_sums(model, self.dtype, self.cl, device)
        self.model = ctx.wrap(model) if ctx.world > 1 else model
        self.fwd = torch.compile(self.model) if o.compile else self.model
        if ctx.world > 1:  # the same init everywhere (above), each rank its own dropout masks
            torch.manual_seed(seed * 1000 + 17 + ctx.rank)

    def _graph_blocker(self, want, cuda):
        if not want:
            return None
        if not cuda:
            return "CUDA graphs need a CUDA device"
        if self.scaler is not None and self.cfg["optimizer"]["name"] != "sgd":
            # fused SGD skips an overflowing step on the device (GradScaler hands it found_inf); any
            # other optimizer's GradScaler.step reads found_inf on the host: a sync a graph cannot
            # hold
            return ("fp16 + GradScaler needs a host sync per step with this optimizer (fused SGD "
                    "has none)")
        if self.ctx.world > 1:
            return "DDP steps are kept eager"
        if self.compile:
            return "torch.compile has its own (mode='reduce-overhead')"
        return None

    def describe(self) -> str:
        cuda = self.device.type == "cuda"
        return (f"{self.device}" + (f" ({torch.cuda.get_device_name(self.device)})" if cuda else "")
                + f", {precision_name(self.dtype)}" + (" + GradScaler" if self.scaler else "")
                + (", channels_last" if self.cl else "") + (", CUDA graph" if self.graph_on else "")
                + (f" (no CUDA graph: {self.graph_note})" if self.want_graph and not self.graph_on
                   else "")
                + (", compiled" if self.compile else ""))

    def train(self):
        self.model.train()

    def batch(self, xs, ys):
        return xs[0], ys[0]

    def step(self, x, y, alive):
        """Forward, backward and update; the loss (1,) and the wrong answers (1,)."""
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None,
                            cache_enabled=not self.graph_on):
            out = self.fwd(x)
            # float32 unless a test asks
            loss = F.cross_entropy(out.to(torch.get_default_dtype()), y)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        return loss.detach().reshape(1), (out.detach().argmax(1) != y).sum().reshape(1)

    def eval(self):
        self.model.eval()


    def states(self):
        """(model, optimizer, GradScaler) state, for the checkpoint."""
        scaler = self.scaler.state_dict() if self.scaler is not None else None
        return [(self.raw.state_dict(), self.opt.state_dict(), scaler)]

    def load(self, cks, live):
        ck = cks[0]
        self.raw.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])  # (its state follows the parameters' device)
        if self.scaler is not None and ck.get("scaler"):
            self.scaler.load_state_dict(ck["scaler"])

    def trained(self):
        return [self.raw]

    def extra(self, cfgs) -> dict:
        if self.ctx.world == 1:
            return {}
        return {"ddp": {"world_size": self.ctx.world, "backend": self.ctx.backend,
                        "replicas_in_sync": self.ctx.params_in_sync(self.raw)}}
