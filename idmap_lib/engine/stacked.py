"""Many of Paper B's MNIST networks trained at once, as one stacked network (Paper B Sec 4.1, Tables 1-2).

A Paper B MLP has layers of 50 units: a step is a few hundred tiny operations, so one run leaves the CPU mostly
idle between them. ``StackedMLP`` holds R networks of the same depth d -- plain, ResNet and GResNet, any seeds --
as stacked tensors: one batched matrix product per layer for all R (``torch.bmm``), one batch-norm call over R x 50
channels, one optimizer over seven tensors. Each network keeps its own weights, batch statistics, data order and
loss, so each trains exactly as it would alone (tested against ``trainer.train``): NAdam and batch norm act
elementwise or per channel, and the summed loss gives each network the gradient of its own.

One unified block covers the three kinds (d middle layers, in blocks of two):
``h <- s * h + g * F(h)`` with F = two Dot-BN-ReLU layers and, per network, s = 0, g = 1 (plain: F(h)),
s = 1, g = 1 (ResNet: h + F(h)) or s = 1, g = ReLU(k) (GResNet, Eqn (5) of Paper B) -- exact in floating point
(0 * h = 0, 1 * h = h).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data as data_mod
from .checkpoint import load_checkpoint, save_checkpoint
from .options import TrainOptions
from .outcome import Divergence, evaluates, result as outcome_result, stopped, together, window
from .recipes import lr_at
from .results import FIRST_STEPS, config_hash, run_name, save_result
from .batches import prepare_data
from .build import build_model
from .device import format_duration, pick_device

KINDS = ("plain", "resnet", "gresnet")
# training options a stack does not take (trainer.train does): it trains in float32 on one device, eagerly
NOT_STACKED = ("compile", "channels_last", "move", "checkpoint_minutes", "on_log", "cuda_graph", "deterministic",
               "threads")
SAME = ("dataset", "steps", "batch_size", "schedule", "optimizer", "preprocess", "augment", "subset", "log_every",
        "eval_every", "divergence")


def _layers(net, kind):
    """The (Linear, BatchNorm1d) pairs of a ``mlp()`` net's d middle layers, in order, and its gates k."""
    mids = list(net)[2:-1]
    if kind == "plain":
        return [(m[0], m[1]) for m in mids], []
    pairs = [(layer[0], layer[1]) for unit in mids for layer in unit.residual]
    return pairs, [u.k for u in mids] if kind == "gresnet" else []


class StackedMLP(nn.Module):
    """R Paper B MLPs (``mlp(kind, d)`` of kinds in KINDS, one d and width) as one module on (R, B, 784) input."""

    def __init__(self, nets, kinds):
        super().__init__()
        if len(nets) != len(kinds) or not nets:
            raise ValueError("StackedMLP needs one kind per network, and at least one network")
        bad = sorted({k for k in kinds if k not in KINDS})
        if bad:
            raise ValueError(f"StackedMLP stacks the kinds {', '.join(KINDS)}; got {', '.join(bad)}")
        layers = [_layers(n, k) for n, k in zip(nets, kinds)]
        d = {len(p) for p, _ in layers}
        if len(d) != 1:
            raise ValueError(f"StackedMLP stacks networks of one depth d; got d = {sorted(d)}")
        self.R, self.d = len(nets), d.pop()
        self.C = nets[0][1][0].out_features
        self.kinds = list(kinds)
        stack = lambda ts: torch.stack([t.detach().clone() for t in ts])  # noqa: E731
        first = [n[1] for n in nets]  # the input layer Dot-BN-ReLU
        bns = [[f[1] for f in first]] + [[p[i][1] for p, _ in layers] for i in range(self.d)]
        self.w_in = nn.Parameter(stack([f[0].weight.t() for f in first]))                       # (R, in, C)
        self.w = nn.Parameter(stack([stack([p[i][0].weight.t() for p, _ in layers]) for i in range(self.d)]))
        self.bn_w = nn.Parameter(stack([torch.cat([b.weight for b in row]) for row in bns]))    # (d+1, R*C)
        self.bn_b = nn.Parameter(stack([torch.cat([b.bias for b in row]) for row in bns]))
        self.register_buffer("bn_mean", stack([torch.cat([b.running_mean for b in row]) for row in bns]))
        self.register_buffer("bn_var", stack([torch.cat([b.running_var for b in row]) for row in bns]))
        self.register_buffer("bn_count", torch.zeros((), dtype=torch.long))
        self.momentum, self.eps = bns[0][0].momentum, bns[0][0].eps
        nb = self.d // 2
        self.k = nn.Parameter(torch.stack([torch.stack([k.detach().clone() for k in ks]) if ks else torch.ones(nb)
                                           for _, ks in layers]))                               # (R, d/2)
        self.w_out = nn.Parameter(stack([n[-1].weight.t() for n in nets]))                     # (R, C, 10)
        self.b_out = nn.Parameter(stack([n[-1].bias[None] for n in nets]))                     # (R, 1, 10)
        self.register_buffer("shortcut", torch.tensor([float(k != "plain") for k in kinds]).view(-1, 1, 1))
        self.register_buffer("gated", torch.tensor([k == "gresnet" for k in kinds]).view(-1, 1))

    def _layer(self, h, w, i):
        """Dot-BN-ReLU for all R networks: (R, B, in) -> (R, B, C); BN over each network's own C channels."""
        R, B = h.shape[:2]
        h = torch.bmm(h, w).transpose(0, 1).reshape(B, R * self.C)
        h = F.batch_norm(h, self.bn_mean[i], self.bn_var[i], self.bn_w[i], self.bn_b[i], self.training,
                         self.momentum, self.eps)
        return F.relu(h).view(B, R, self.C).transpose(0, 1)

    def forward(self, x):
        """x: (R, B, 784) -> logits (R, B, 10); each network sees its own batch x[r]."""
        if self.training:
            self.bn_count += 1
        w = self.w.unbind(0)
        g = torch.where(self.gated, F.relu(self.k), torch.ones_like(self.k))
        h = self._layer(x.flatten(2), self.w_in, 0)
        for j in range(self.d // 2):
            f = self._layer(self._layer(h, w[2 * j], 1 + 2 * j), w[2 * j + 1], 2 + 2 * j)
            h = self.shortcut * h + g[:, j, None, None] * f
        return torch.baddbmm(self.b_out, h, self.w_out)

    @torch.no_grad()
    def unstack(self, nets):
        """Write each network's weights, gates and batch statistics back into `nets` (as given to __init__)."""
        C = self.C
        for r, (net, kind) in enumerate(zip(nets, self.kinds)):
            pairs, ks = _layers(net, kind)
            sl = slice(r * C, (r + 1) * C)
            for i, (lin, bn) in enumerate([(net[1][0], net[1][1])] + pairs):
                lin.weight.copy_((self.w_in[r] if i == 0 else self.w[i - 1, r]).t())
                bn.weight.copy_(self.bn_w[i, sl])
                bn.bias.copy_(self.bn_b[i, sl])
                bn.running_mean.copy_(self.bn_mean[i, sl])
                bn.running_var.copy_(self.bn_var[i, sl])
                bn.num_batches_tracked.fill_(int(self.bn_count))
            for j, k in enumerate(ks):
                k.copy_(self.k[r, j])
            net[-1].weight.copy_(self.w_out[r].t())
            net[-1].bias.copy_(self.b_out[r, 0])
        return nets


def check_stackable(cfgs):
    """The configs can train as one stack: MNIST MLPs of kinds in KINDS, one depth and width, one recipe."""
    if not cfgs:
        raise ValueError("nothing to train: no configs")
    for c in cfgs:
        m = c["model"]
        if m["builder"] != "mlp" or m["kwargs"]["kind"] not in KINDS:
            raise ValueError(f"{run_name(c)}: only Paper B's MLPs ({', '.join(KINDS)}) train stacked; train it "
                             f"with trainer.train")
        if c["optimizer"]["name"] != "nadam" or c["optimizer"].get("weight_decay", 0.0):
            raise ValueError(f"{run_name(c)}: stacked training implements NAdam without weight decay (Paper B's "
                             f"MNIST recipe); train it with trainer.train")
    for key in SAME:
        if len({repr(c.get(key)) for c in cfgs}) > 1:
            raise ValueError(f"stacked runs must share their recipe; they differ in {key!r}: group them by it")
    for key in ("d", "width", "num_classes", "defaults"):
        if len({c["model"]["kwargs"].get(key) for c in cfgs}) > 1:
            raise ValueError(f"stacked runs must share the network's {key}; group them by it")
    if len({config_hash(c) for c in cfgs}) < len(cfgs):
        raise ValueError("the same run (config and seed) appears twice in one stack")


def group_hash(cfgs) -> str:
    return config_hash({"stack": sorted(config_hash(c) for c in cfgs)})


class _Stack:
    """The state of a stacked training: model, optimizer, each run's data order, sums and history."""

    def __init__(self, cfgs, D, device, checkpoint_dir, checkpoint_every, resume, progress):
        self.cfgs, self.D, self.device, self.progress = cfgs, D, device, progress
        c = cfgs[0]
        self.R, self.total, self.B = len(cfgs), c["steps"], c["batch_size"]
        self.log_every, self.eval_every = c["log_every"], c["eval_every"]
        self.nets = []
        for cfg in cfgs:  # each network initialised exactly as trainer.train initialises it
            torch.manual_seed(int(cfg["seed"]))
            self.nets.append(build_model(cfg["model"]))
        self.model = StackedMLP(self.nets, [cfg["model"]["kwargs"]["kind"] for cfg in cfgs]).to(device)
        o = c["optimizer"]
        self.opt = torch.optim.NAdam(self.model.parameters(), lr=o["lr"], betas=tuple(o["betas"]),
                                     momentum_decay=4e-3)
        self.gens = [torch.Generator().manual_seed(int(cfg["seed"])) for cfg in cfgs]
        self.N = len(D["y_train"])
        self.perm, self.pos = self._new_order(), 0
        self.acc = torch.zeros(self.R, 3, dtype=torch.float64, device=device)   # loss sum, error sum, count
        self.first_bad = torch.full((self.R,), -1, dtype=torch.long, device=device)
        self.alive = torch.ones(self.R, dtype=torch.bool, device=device)
        self.first = torch.full((self.R, FIRST_STEPS), math.nan, dtype=torch.float64, device=device)  # first losses
        self.histories = [{"train": [], "test": []} for _ in cfgs]
        self.status, self.fails = ["running"] * self.R, [None] * self.R
        self.divergence = Divergence(c, D["num_classes"])  # the rule trainer.train applies, to each run
        self.step, self.elapsed = 0, 0.0
        self.hash = group_hash(cfgs)
        self.ckpt = Path(checkpoint_dir) / f"stack__{run_name(c)}__{self.hash[:12]}.pt" if checkpoint_dir else None
        ce = checkpoint_every or self.eval_every
        self.checkpoint_every = max(self.log_every, math.ceil(ce / self.log_every) * self.log_every)
        if resume and self.ckpt is not None and self.ckpt.exists():
            self._resume()

    def _new_order(self):
        return torch.stack([torch.randperm(self.N, generator=g) for g in self.gens]).to(self.device)

    def _say(self, msg):
        if self.progress:
            print(msg, flush=True)

    def _resume(self):
        ck = load_checkpoint(self.ckpt, self.hash)
        self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        for g, s in zip(self.gens, ck["rng"]["order"]):
            g.set_state(s)
        self.perm, self.pos = ck["data"]["perm"].to(self.device), ck["data"]["pos"]
        self.acc, self.first_bad = ck["acc"].to(self.device), ck["first_bad"].to(self.device)
        self.alive, self.first = ck["alive"].to(self.device), ck["first"].to(self.device)
        self.histories, self.status, self.fails = ck["history"], ck["status"], ck["fail"]
        self.step, self.elapsed = ck["step"], ck["elapsed"]
        self._say(f"resumed {self.ckpt} at step {self.step}/{self.total}")

    def checkpoint(self):
        if self.ckpt is None:
            return
        save_checkpoint(self.ckpt, {
            "format": 1, "config_hash": self.hash, "configs": self.cfgs, "step": self.step,
            "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "rng": {"order": [g.get_state() for g in self.gens]},
            "data": {"perm": self.perm.cpu(), "pos": self.pos}, "acc": self.acc.cpu(),
            "first_bad": self.first_bad.cpu(), "alive": self.alive.cpu(), "first": self.first.cpu(),
            "history": self.histories,
            "status": self.status, "fail": self.fails, "elapsed": self.elapsed})

    def train_step(self):
        lr = lr_at(self.cfgs[0]["schedule"], self.step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        if self.pos + self.B > self.N:  # a new epoch for every run (the last partial batch is dropped)
            self.perm, self.pos = self._new_order(), 0
        idx = self.perm[:, self.pos:self.pos + self.B]                         # (R, B): each run's own batch
        self.pos += self.B
        D = self.D
        x = D["x_train"][idx].float().div_(255).sub_(D["mean"]).div_(D["std"]).flatten(2)
        y = D["y_train"][idx]
        out = self.model(x)
        loss = F.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="none").view(self.R, self.B).mean(1)
        self.opt.zero_grad(set_to_none=True)
        torch.where(self.alive, loss, torch.zeros_like(loss)).sum().backward()  # a diverged run gets no gradient
        self.opt.step()
        with torch.no_grad():
            l = loss.detach().double()
            err = (out.detach().argmax(-1) != y).sum(1).double()
            self.acc += torch.stack((l * self.B, err, torch.full_like(l, self.B)), 1)
            bad = ~torch.isfinite(l) & (self.first_bad < 0)
            self.first_bad = torch.where(bad, torch.full_like(self.first_bad, self.step), self.first_bad)
            if self.step < FIRST_STEPS:
                self.first[:, self.step] = l
        self.step += 1

    @torch.no_grad()
    def evaluate(self, batch=1000):
        """Per run: test loss and error, BN on its running statistics."""
        self.model.eval()
        D, acc = self.D, torch.zeros(self.R, 2, dtype=torch.float64, device=self.device)
        n = len(D["y_test"])
        for s in range(0, n, batch):
            x = D["x_test"][s:s + batch].float().div_(255).sub_(D["mean"]).div_(D["std"]).flatten(1)
            y = D["y_test"][s:s + batch]
            out = self.model(x.expand(self.R, *x.shape).contiguous())
            acc[:, 0] += F.cross_entropy(out.flatten(0, 1), y.repeat(self.R), reduction="none").view(self.R, -1).sum(1)
            acc[:, 1] += (out.argmax(-1) != y).sum(1)
        self.model.train()
        return (acc / n).tolist()

    def log(self, dt):
        a, bad = self.acc.tolist(), self.first_bad.tolist()
        self.acc.zero_()
        lr = lr_at(self.cfgs[0]["schedule"], self.step - 1)
        for r in range(self.R):
            if self.status[r] != "running":
                continue
            ls, es, n = a[r]
            rec = window(self.step, ls, es, n, lr, n / dt, self.elapsed)
            self.histories[r]["train"].append(rec)
            self.fails[r] = self.divergence.fail(rec, bad[r])
            if self.fails[r] is not None:
                self.status[r] = "fail"
                self.alive[r] = False
        if evaluates(self.step, self.cfgs[0]):
            for r, (tl, te) in enumerate(self.evaluate()):
                if self.status[r] == "running":
                    self.histories[r]["test"].append({"step": self.step, "test_loss": tl, "test_err": te})
        if self.step == self.total:
            self.status = ["ok" if s == "running" else s for s in self.status]


def train_stacked(cfgs: list[dict], data=None, options: TrainOptions | None = None, **changes):
    """Train Paper B MNIST configs (``recipes.paper_b_mnist``) of one depth together; returns (results, nets).

    Each result has the schema of ``trainer.train``'s (outcome.py) plus ``stacked`` (how many ran together, and
    their names); each net is the trained ``mlp()`` network. Runs in float32 (tiny matrices gain nothing from bf16).
    The options are ``trainer.train``'s, but for ``NOT_STACKED``. The recipe's divergence rule ends a run as
    "fail" (it then stops learning); the others go on. max_steps: stop early with a checkpoint (nothing recorded)."""
    o = TrainOptions.of(options, **changes)
    o.refuse("a stacked run", NOT_STACKED)
    check_stackable(cfgs)
    device = pick_device(o.device)
    d = data if isinstance(data, data_mod.Data) else data_mod.load(cfgs[0]["dataset"], data)
    st = _Stack(cfgs, prepare_data(cfgs[0], d, device), device, o.checkpoint_dir, o.checkpoint_every, o.resume,
                o.progress)
    stop = st.total if o.max_steps is None else min(st.total, o.max_steps)
    st._say(f"stacked: {st.R} runs of {run_name(cfgs[0])} ... on {device}, float32; "
            f"{st.total - st.step} steps to go")
    t0, s0 = time.perf_counter(), st.step
    while st.step < stop and "running" in st.status:
        st.train_step()
        if st.step == s0 + 20:
            per = (time.perf_counter() - t0) / 20
            st._say(f"stacked: {st.R * st.B / per:.0f} img/s in all -> the remaining {st.total - st.step} steps "
                    f"take about {format_duration(per * (st.total - st.step))}")
        if st.step % st.log_every == 0 or st.step == st.total:
            now = time.perf_counter()
            st.elapsed += now - t0
            st.log(now - t0)
            t0 = time.perf_counter()  # evaluation is kept out of img/s and wall_s
        if st.step % st.checkpoint_every == 0 or st.step == stop:
            st.checkpoint()
    st.model.unstack(st.nets)
    first = [st.first[r, :min(st.step, FIRST_STEPS)].tolist() for r in range(st.R)]
    if "running" in st.status and st.step < st.total:
        return [stopped(c, st.step, h, st.ckpt, first_steps=f) for c, h, f in zip(cfgs, st.histories, first)], st.nets
    results = []
    for r, cfg in enumerate(cfgs):
        result = outcome_result(cfg, status=st.status[r], fail=st.fails[r], history=st.histories[r], net=st.nets[r],
                                first_steps=first[r], dataset_source=d.source, precision="float32", device=device,
                                stacked=together("stacked", cfgs, "stacked"))
        if o.write_result:
            result["path"] = str(save_result(result, o.out_dir))
        results.append(result)
    return results, st.nets
