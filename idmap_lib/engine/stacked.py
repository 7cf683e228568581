"""Many of Paper B's MNIST networks trained at once, as one stacked network (Paper B Sec 4.1, Tables
1-2).

A Paper B MLP has layers of 50 units: a step is a few hundred tiny operations, so one run leaves the
CPU mostly idle between them. ``StackedMLP`` holds R networks of the same depth d -- plain, ResNet
and GResNet, any seeds -- as stacked tensors: one batched matrix product per layer for all R
(``torch.bmm``), one batch-norm call over R x 50 channels, one optimizer over seven tensors. Each
network keeps its own weights, batch statistics, data order and loss, so each trains exactly as it
would alone (tested against a run trained alone): NAdam and batch norm act elementwise or per
channel, and the summed loss gives each network the gradient of its own.

One unified block covers the three kinds (d middle layers, in blocks of two): ``h <- s * h + g *
F(h)`` with F = two Dot-BN-ReLU layers and, per network, s = 0, g = 1 (plain: F(h)), s = 1, g = 1
(ResNet: h + F(h)) or s = 1, g = ReLU(k) (GResNet, Eqn (5) of Paper B) -- exact in floating point (0
* h = 0, 1 * h = h).
"""
from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from .build import build_optimizer, seeded_models
from .fused_models import PER_ELEMENT_STATE
from .loop import share_recipe
from .outcome import together
from .results import run_name

KINDS = ("plain", "resnet", "gresnet")
# the training options a stack does not take, and why (every other one it takes as a solo run)
NOT_STACKED = {
    "compile": "a few hundred tiny operations a step: nothing for torch.compile to fuse",
    "channels_last": "MLPs have no image layout",
    "cuda_graph": "its optimizer (NAdam) is built without capturable state",
}


def _layers(net, kind):
    """The (Linear, BatchNorm1d) pairs of a ``mlp()`` net's d middle layers, in order, and its gates
    k."""
    mids = list(net)[2:-1]
    if kind == "plain":
        return [(m[0], m[1]) for m in mids], []
    pairs = [(layer[0], layer[1]) for unit in mids for layer in unit.residual]
    return pairs, [u.k for u in mids] if kind == "gresnet" else []


class StackedMLP(nn.Module):
    """R Paper B MLPs (``mlp(kind, d)`` of kinds in KINDS, one d and width) as one module on (R, B,
    784) input."""

    def __init__(self, nets, kinds):
        super().__init__()
        if len(nets) != len(kinds) or not nets:
            raise ValueError("StackedMLP needs one kind per network, and at least one network")
        bad = sorted({k for k in kinds if k not in KINDS})
        if bad:
            raise ValueError(f"StackedMLP stacks the kinds {', '.join(KINDS)}; got "
                             f"{', '.join(bad)}")
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
        # (R, in, C)
        self.w_in = nn.Parameter(stack([f[0].weight.t() for f in first]))
        self.w = nn.Parameter(stack([stack([p[i][0].weight.t() for p, _ in layers])
                                     for i in range(self.d)]))
        # (d+1, R*C)
        self.bn_w = nn.Parameter(stack([torch.cat([b.weight for b in row]) for row in bns]))
        self.bn_b = nn.Parameter(stack([torch.cat([b.bias for b in row]) for row in bns]))
        self.register_buffer("bn_mean",
                             stack([torch.cat([b.running_mean for b in row]) for row in bns]))
        self.register_buffer("bn_var",
                             stack([torch.cat([b.running_var for b in row]) for row in bns]))
        self.register_buffer("bn_count", torch.zeros((), dtype=torch.long))
        self.momentum, self.eps = bns[0][0].momentum, bns[0][0].eps
        nb = self.d // 2
        self.k = nn.Parameter(torch.stack([torch.stack([k.detach().clone() for k in ks]) if ks
                                           else torch.ones(nb)
                                           # (R, d/2)
                                           for _, ks in layers]))
        # (R, C, 10)
        self.w_out = nn.Parameter(stack([n[-1].weight.t() for n in nets]))
        # (R, 1, 10)
        self.b_out = nn.Parameter(stack([n[-1].bias[None] for n in nets]))
        self.register_buffer("shortcut",
                             torch.tensor([float(k != "plain") for k in kinds]).view(-1, 1, 1))
        self.register_buffer("gated", torch.tensor([k == "gresnet" for k in kinds]).view(-1, 1))

    def _layer(self, h, w, i):
        """Dot-BN-ReLU for all R networks: (R, B, in) -> (R, B, C); BN over each network's own C
        channels."""
        R, B = h.shape[:2]
        h = torch.bmm(h, w).transpose(0, 1).reshape(B, R * self.C)
        h = F.batch_norm(h, self.bn_mean[i], self.bn_var[i], self.bn_w[i], self.bn_b[i],
                         self.training,
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
        """Write each network's weights, gates and batch statistics back into `nets` (as given to
        __init__)."""
        for r, (net, kind) in enumerate(zip(nets, self.kinds)):
            for t, name, view in _views(net, kind, r, self.C):
                t.copy_(view(getattr(self, name)))
            for m in net.modules():
                if isinstance(m, nn.BatchNorm1d):
                    m.num_batches_tracked.fill_(int(self.bn_count))
        return nets

    @torch.no_grad()
    def restack(self, nets):
        """The inverse of ``unstack``: every network's state into the stacked tensors."""
        for r, (net, kind) in enumerate(zip(nets, self.kinds)):
            for t, name, view in _views(net, kind, r, self.C):
                view(getattr(self, name)).copy_(t)
        self.bn_count.fill_(int(nets[0][1][1].num_batches_tracked))


def _views(net, kind, r, C):
    """(tensor of `net`, name of the stacked tensor, its view for network r) for every parameter and
    batch statistic of a ``mlp()`` net: how the stack lays each one out."""
    pairs, ks = _layers(net, kind)
    sl, out = slice(r * C, (r + 1) * C), []
    for i, (lin, bn) in enumerate([(net[1][0], net[1][1])] + pairs):
        out.append((lin.weight, "w_in", lambda t: t[r].t()) if i == 0 else
                   (lin.weight, "w", lambda t, i=i: t[i - 1, r].t()))
        for a, name in (("weight", "bn_w"), ("bias", "bn_b"), ("running_mean", "bn_mean"),
                        ("running_var", "bn_var")):
            out.append((getattr(bn, a), name, lambda t, i=i: t[i, sl]))
    out += [(k, "k", lambda t, j=j: t[r, j]) for j, k in enumerate(ks)]
    return out + [(net[-1].weight, "w_out", lambda t: t[r].t()),
                  (net[-1].bias, "b_out", lambda t: t[r, 0])]


def check_stackable(cfgs):
    """The configs can train as one stack: MNIST MLPs of kinds in KINDS, one depth and width, one
    recipe."""
    share_recipe(cfgs, "stacked")
    for c in cfgs:
        m = c["model"]
        if m["builder"] != "mlp" or m["kwargs"]["kind"] not in KINDS:
            raise ValueError(f"{run_name(c)}: only Paper B's MLPs ({', '.join(KINDS)}) train "
                             f"stacked; train it alone")
        if c["optimizer"]["name"] != "nadam" or c["optimizer"].get("weight_decay", 0.0):
            raise ValueError(f"{run_name(c)}: stacked training implements NAdam without weight "
                             f"decay (Paper B's MNIST recipe); train it alone")
    for key in ("d", "width", "num_classes", "defaults"):
        if len({c["model"]["kwargs"].get(key) for c in cfgs}) > 1:
            raise ValueError(f"stacked runs must share the network's {key}; group them by it")


class Stacked:
    """R MLPs as one ``StackedMLP`` and one optimizer over its tensors; float32 (tiny matrices gain
    nothing from bf16), eager."""

    ddp, cl, dtype, graph_on = False, False, None, False

    @staticmethod
    def check(cfgs, opts):
        opts.refuse("a stacked run", NOT_STACKED)
        if opts.amp not in ("auto", "fp32"):  # (a recipe's own amp is Paper A's, never an MLP's)
            raise ValueError(f"a stacked run trains in float32 (tiny matrices gain nothing from "
                             f"{opts.amp}): amp='auto' or 'fp32'")
        check_stackable(cfgs)

    def __init__(self, cfgs, D, device, o, ctx):
        self.cfgs, self.R, self.device = cfgs, len(cfgs), device
        self.nets, self.torch_rng = seeded_models(cfgs)
        self.kinds = [cfg["model"]["kwargs"]["kind"] for cfg in cfgs]
        self.model = StackedMLP(self.nets, self.kinds).to(device)
        self.opt = build_optimizer(self.model, cfgs[0]["optimizer"], device)

    def describe(self) -> str:
        return f"{self.R} runs stacked on {self.device}, float32"

    def train(self):
        self.model.train()

    def batch(self, xs, ys):
        return torch.stack(xs), torch.stack(ys)

    def step(self, x, y, alive):
        """Every network's forward, backward and update; each one's loss (R,) and wrong answers
        (R,)."""
        out = self.model(x)
        loss = F.cross_entropy(out.flatten(0, 1), y.flatten(),
                               reduction="none").view(y.shape).mean(1)
        # a diverged run gets no gradient
        torch.where(alive, loss, torch.zeros_like(loss)).sum().backward()
        self.opt.step()
        return loss.detach(), (out.detach().argmax(-1) != y).sum(1)

    def eval(self):
        self.model.eval()

    def test_sums(self, x, y):
        """One test batch's loss sums (R,) and wrong answers (R,): every network on the same
        images."""
        x = x.flatten(1)
        out = self.model(x.expand(self.R, *x.shape).contiguous())
        ce = F.cross_entropy(out.flatten(0, 1), y.repeat(self.R), reduction="none")
        return ce.view(self.R, -1).sum(1), (out.argmax(-1) != y).sum(1)

    def _slots(self, nets):
        """Per network r of `nets`: (r, its own optimizer, unstepped: the layout of its checkpoint's
        state, and [(index, stacked tensor, view of r's slice)] for its parameters in that
        optimizer's order)."""
        for r, net in enumerate(nets):
            solo = build_optimizer(net, self.cfgs[r]["optimizer"])
            views = {id(t): (getattr(self.model, name), view) for t, name, view in
                     _views(net, self.kinds[r], r, self.model.C)}
            yield r, solo, [(i, *views[id(p)]) for i, p in enumerate(p for g in solo.param_groups
                                                                    for p in g["params"])]

    def states(self):
        """Each network's model and optimizer state, as a run alone would checkpoint them."""
        nets = self.model.unstack([copy.deepcopy(n) for n in self.nets])
        lr, out = self.opt.param_groups[0]["lr"], []
        for r, solo, slots in self._slots(nets):
            sd = solo.state_dict()
            for i, big, view in slots:
                st = self.opt.state.get(big, {})
                sd["state"][i] = {k: (view(v) if k in PER_ELEMENT_STATE else v).clone()
                                  if torch.is_tensor(v) else v
                                  for k, v in st.items()}
            for g in sd["param_groups"]:
                g["lr"] = lr
            out.append((nets[r].state_dict(), sd, None))
        return out

    @torch.no_grad()
    def load(self, cks, live):
        nets = [copy.deepcopy(n) for n in self.nets]
        for net, ck in zip(nets, cks):
            net.load_state_dict(ck["model"])
        self.model.restack(nets)
        if not live:
            return
        state = {}  # stacked tensor -> its optimizer state, filled a network's slice at a time
        for r, _, slots in self._slots(nets):
            saved = cks[r]["optimizer"]["state"]
            for i, big, view in slots:
                st = state.setdefault(big, {})
                for k, v in saved.get(i, saved.get(str(i), {})).items():
                    if k in PER_ELEMENT_STATE:
                        view(st.setdefault(k, torch.zeros_like(big))).copy_(v)
                    elif k not in st or r in live:
                        st[k] = v.clone() if torch.is_tensor(v) else v
        order = [p for g in self.opt.param_groups for p in g["params"]]
        sd = self.opt.state_dict()
        sd["state"] = {i: state[p] for i, p in enumerate(order) if p in state}
        self.opt.load_state_dict(sd)

    def trained(self):
        return self.model.unstack(self.nets)

    def extra(self, cfgs) -> dict:
        return {"stacked": together("stacked", cfgs, "stacked")}
