"""N runs of one architecture trained as one network: the models side by side (HFTA, MLSys 2021): the run.

The N models as one network (``FusedModels``, which architectures fuse, the optimizer over the stacked leaves):
fused_models.py. Here the training run that drives them, each run exactly as it would train alone.

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
import torch.nn.functional as F

from . import data as data_mod
from .batches import normalise, prepare_data, to_device, train_batch
from .build import build_model
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .device import EngineSettings, amp_dtype, format_duration, pick_device, precision_name
from .fused_models import (FusedModels, check_one_architecture, fuse_optimizer_state, fused_optimizer,
                           unfuse_optimizer_state)
from .graphs import GraphedStep
from .options import TrainOptions
from .outcome import Divergence, evaluates, result as outcome_result, stopped, together, window
from .recipes import lr_at
from .results import FIRST_STEPS, config_hash, run_name, save_result

# recipe keys that fused runs share (the model may differ only as FusedModels allows; the seed is free)
SAME = ("dataset", "steps", "batch_size", "schedule", "optimizer", "preprocess", "augment", "subset", "log_every",
        "eval_every", "divergence")
# training options a fused run does not take (trainer.train does): one compiled or channels_last network of N models,
# a move between devices, wall-clock checkpoints and live curves are not built for it
NOT_FUSED = ("compile", "channels_last", "move", "checkpoint_minutes", "on_log")


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

    def __init__(self, cfgs, data=None, options: TrainOptions | None = None, **changes):
        o = TrainOptions.of(options, **changes)
        o.refuse("a fused run", NOT_FUSED)
        check_fusable(cfgs)
        self.cfgs, self.n = list(cfgs), len(cfgs)
        self.device = device = pick_device(o.device)
        self.out_dir, self.write_result, self.progress = o.out_dir, o.write_result, o.progress
        self.deterministic, cuda_graph = bool(o.deterministic), o.cuda_graph
        self.dtype = amp_dtype(device, cfgs[0].get("amp", o.amp))  # (fuse() takes runs of one recipe only)
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
        # per run: the training loss of each of the first FIRST_STEPS steps (its fingerprint, as Run's)
        self.first = torch.full((self.n, FIRST_STEPS), math.nan, device=device, dtype=torch.float64)
        self._first_index = torch.arange(FIRST_STEPS, device=device, dtype=torch.float64)
        self.alive = torch.ones(self.n, dtype=torch.bool, device=device)
        self.histories = [{"train": [], "test": []} for _ in self.cfgs]
        self.status, self.fails = ["running"] * self.n, [None] * self.n
        self.step, self.elapsed = 0, [0.0] * self.n
        self.step_t = torch.zeros((), device=device, dtype=torch.float64)  # the step, as the device sees it
        self.ckpt_paths = [Path(o.checkpoint_dir) / f"{run_name(cfg)}.pt" for cfg in self.cfgs] \
            if o.checkpoint_dir else None
        ce = self.eval_every if o.checkpoint_every is None else o.checkpoint_every
        self.checkpoint_every = max(self.log_every, math.ceil(ce / self.log_every) * self.log_every)
        if o.resume and self.ckpt_paths is not None:
            self._resume()
        self.stop = self.total if o.max_steps is None else min(self.total, o.max_steps)
        self.step_t.fill_(self.step)
        self.eager_since = self.step  # graph capture waits graphs.GRAPH_WARMUP eager steps after every (re)start
        self.divergence = Divergence(c, self.D["num_classes"])
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
        if all("first" in ck for ck in cks):
            self.first = torch.stack([ck["first"] for ck in cks]).to(self.device)
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
                "acc": self.acc[r].cpu().clone(), "first": self.first[r].cpu().clone(),
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
            self.first.copy_(torch.where(self._first_index == self.step_t, l[:, None], self.first))
            self.step_t += 1

    def _train_step(self):
        lr = lr_at(self.cfgs[0]["schedule"], self.step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        x, y = self._batches()
        self._step_on(x, y, lr)  # eager, or replayed as one CUDA graph (graphs.GraphedStep)
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
        evaluate = evaluates(step, self.cfgs[0])
        for r in range(self.n):
            if self.status[r] != "running":
                continue
            self.elapsed[r] += dt
            loss_sum, err_sum, n, bad = a[r]
            rec = window(step, loss_sum, err_sum, n, lr_at(sched, step - 1), self.steps_window * self.B / dt,
                         self.elapsed[r])
            self.histories[r]["train"].append(rec)
            self.fails[r] = self.divergence.fail(rec, bad)
            if self.fails[r] is not None:
                self.status[r] = "fail"
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

    def _first_steps(self, r) -> list[float]:
        return self.first[r, :min(self.step, FIRST_STEPS)].tolist()

    def finish(self) -> list[dict]:
        models = self.solo_models()
        out = []
        for r, cfg in enumerate(self.cfgs):
            if self.status[r] == "running":
                out.append(stopped(cfg, self.step, self.histories[r], self.ckpt_paths[r] if self.ckpt_paths else None,
                                   first_steps=self._first_steps(r)))
                continue
            result = outcome_result(cfg, status=self.status[r], fail=self.fails[r], history=self.histories[r],
                                    net=models[r], first_steps=self._first_steps(r), dataset_source=self.D["source"],
                                    precision=precision_name(self.dtype), device=self.device,
                                    cuda_graph=self.graph_on, deterministic=self.deterministic,
                                    fused=together("fused", self.cfgs, "fused"))
            if self.write_result:
                result["path"] = str(save_result(result, self.out_dir))
            out.append(result)
        return out


def train_fused(cfgs: list[dict], data=None, options: TrainOptions | None = None, **changes) -> list[dict]:
    """Train N configs of one recipe and one architecture (seeds; scalar variants) as one fused network;
    returns one result per config, ``trainer.train``'s result plus ``fused`` (how many ran together).

    The options mean what they mean for ``trainer.train`` (not ``NOT_FUSED``); checkpoints are the solo runs' (one
    file per run, where ``train`` would write it), so a run can go on fused or alone. A run whose loss turns
    non-finite is recorded "fail" at that step; the others go on."""
    opts = TrainOptions.of(options, **changes)
    opts.refuse("a fused run", NOT_FUSED)
    check_fusable(cfgs)  # (before the data is loaded: a refusal costs nothing)
    d = data if isinstance(data, data_mod.Data) else data_mod.load(cfgs[0]["dataset"], data)
    with EngineSettings(opts.deterministic, opts.device, opts.threads, cfgs):
        run = FusedRun(cfgs, d, opts)
        t0, s0 = time.perf_counter(), run.step
        while not run.done:
            run.advance()
            if run.step == s0 + 10 and not run.done:
                per = (time.perf_counter() - t0) / 10
                run._say(f"fused: {run.n * run.B / per:.0f} img/s in all -> the remaining {run.total - run.step} "
                         f"steps take about {format_duration(per * (run.total - run.step))}")
        return run.finish()
