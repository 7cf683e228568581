"""The training loop: the lifecycle of N >= 1 runs trained together, whatever trains them.

A *stepper* (``Stepper`` below) holds the network(s) and the optimizer and takes one step on a
batch; everything else about a run is here, once: its data order and augmentation stream, the
learning rate, the step (eager or replayed as one CUDA graph), the log windows and the divergence
rule, evaluation and checkpoint cadence, resume, progress and the result. The steppers, each in its
own module and each importing this one (never the entry above it):

- ``solo.Solo``: one network (DDP, CUDA graph, GradScaler, channels_last, torch.compile);
- ``fused.Fused``: N runs of one architecture as one network through vmap (HFTA);
- ``stacked.Stacked``: Paper B's MNIST MLPs of one depth as one stacked network.

Every run keeps its own generators and state, so it trains as it would alone. A checkpoint is one
file per run in one format (checkpoint_dir/<run name>.pt), whichever stepper wrote it: what it
holds and how a run resumes from it are checkpoint.py's ``write`` and ``resume``.
trainer.py's ``train`` is the one entry: the per-run lock, the thread policy, several loops
interleaved a step at a time, Ctrl-C keeping a checkpoint.

The CUDA graph: a ResNet-110 step is ~1,200 small kernels, so eager PyTorch on a big GPU is bound by
their launches; the whole step (forward, backward, optimizer, the device-side sums) captured once
and replayed runs them without the host. It is captured again when the learning rate changes (fused
SGD bakes it into its kernel; 4 times in Paper A's schedule), after ``GRAPH_WARMUP`` eager steps at
every (re)start.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any, ClassVar, Protocol

import torch

from .batches import evaluate_sums, prepare_data, to_device, train_batch
from .checkpoint import path_of, resume, write
from .device import Single, format_duration, pick_device, precision_name
from .options import TrainOptions
from .outcome import Divergence, evaluates, result as outcome_result, stopped, window
from .schedule import lr_at
from .results import (FIRST_STEPS, config_hash, provenance, run_name, save_result, segment_at,
                      segment_start)

# eager steps before the first capture (lazy init of cuDNN/cuBLAS handles, optimizer state)
GRAPH_WARMUP = 3


class Stepper(Protocol):
    """What the loop asks of a stepper, all of it: built as ``kind(cfgs, D, device, opts, ctx)``
    once ``kind.check(cfgs, opts)`` has accepted the runs (a ValueError saying why not)."""

    ddp: ClassVar[bool]  # trains under torchrun (DDP)
    cl: bool  # batches in channels_last
    dtype: torch.dtype | None  # autocast precision (None: float32)
    opt: torch.optim.Optimizer  # over every run's parameters: the loop sets its lr
    graph_on: bool  # the step is replayed as one CUDA graph
    torch_rng: list  # each run's global RNG state when it was built (its checkpoint's)

    @staticmethod
    def check(cfgs: list[dict], opts: TrainOptions) -> None: ...
    def describe(self) -> str: ...  # the first line: device, precision, how
    def train(self) -> None: ...  # training mode
    def eval(self) -> None: ...  # evaluation mode
    def batch(self, xs: list, ys: list) -> tuple: ...  # each run's batch -> the step's input
    def step(self, x, y, alive) -> tuple: ...  # forward, backward, update: loss (N,), wrong (N,)
    def test_sums(self, x, y) -> tuple: ...  # a test batch's loss sums (N,), wrong answers (N,)
    def states(self) -> list[tuple]: ...  # per run: (model, optimizer, GradScaler) state
    def load(self, cks: list[dict], live: list[int]) -> None: ...  # those states back
    def trained(self) -> list: ...  # per run: its trained network
    def extra(self, cfgs: list[dict]) -> dict[str, Any]: ...  # what its results add


# recipe keys that runs trained together share (the seed is free; the model as the stepper allows)
SAME = ("dataset", "steps", "batch_size", "schedule", "optimizer", "preprocess", "augment",
        "subset", "log_every", "eval_every", "divergence")


def share_recipe(cfgs, what):
    """The configs share their recipe (SAME) and are each one run: else a ValueError saying
    which."""
    if not cfgs:
        raise ValueError("nothing to train: no configs")
    for key in SAME:
        if len({repr(c.get(key)) for c in cfgs}) > 1:
            raise ValueError(f"{what} runs must share their recipe; they differ in {key!r}: group "
                             f"them by it")
    if len({config_hash(c) for c in cfgs}) < len(cfgs):
        raise ValueError(f"the same run (config and seed) appears twice in one {what} group")


class Loop:
    """N runs of one recipe, trained by one `stepper` (a ``Stepper`` class: ``solo.Solo`` and the
    like) a step at a time: ``advance`` until ``done``, then ``finish`` -> one result per run."""

    def __init__(self, cfgs, data, o: TrainOptions, kind: type[Stepper]):
        # (trainer.train had ``kind.check`` accept the runs)
        self.opts = o
        self.cfgs, self.n = list(cfgs), len(cfgs)
        if kind.ddp and int(os.environ.get("WORLD_SIZE", 1)) > 1:  # torchrun's processes (DDP)
            from .distributed import context  # (only there: one process never needs it)

            self.ctx = ctx = context(o.device)
        else:
            self.ctx = ctx = Single()
        self.device = ctx.device if ctx.world > 1 else pick_device(o.device)
        c = self.cfgs[0]  # (N > 1: the stepper checked that they share the recipe)
        self.total, self.B, self.sched = c["steps"], c["batch_size"], c["schedule"]
        self.log_every, self.eval_every = c["log_every"], c["eval_every"]
        if self.B % ctx.world:
            raise ValueError(f"batch size {self.B} is not divisible by the number of processes "
                             f"{ctx.world}")
        self.show = o.progress and ctx.rank == 0
        self.hashes = [config_hash(cfg) for cfg in self.cfgs]
        self.seeds = [int(cfg["seed"]) for cfg in self.cfgs]
        cuda = self.device.type == "cuda"
        self.stream = torch.cuda.Stream(self.device) if cuda else None
        with self._on_stream():
            self.D = prepare_data(c, data, self.device)
            self.stepper = kind(self.cfgs, self.D, self.device, o, ctx)  # each net seeded
            self._fresh_state()
            if o.resume and self.paths is not None and (said := resume(self)):
                self._say(said)  # (checkpoint.resume: the runs' state back from their files)
        self._start()

    # ------------------------------------------------------------------ state
    def _fresh_state(self):
        """Each run's generators and data order, the device-side sums, histories."""
        o, s, dev, n = self.opts, self.stepper, self.device, self.n
        self.opt, self.graph_on = s.opt, s.graph_on
        rank = self.ctx.rank
        self.gen_order = [torch.Generator().manual_seed(x) for x in self.seeds]
        self.gen_aug = [torch.Generator(device=dev).manual_seed(x * 1000 + 1 + rank)
                        for x in self.seeds]
        self.N = len(self.D["y_train"])
        self.perm, self.pos = [self._order(g) for g in self.gen_order], 0
        # per run: loss sum, error sum, count, first non-finite step (-1: none)
        self.acc = torch.tensor([[0.0, 0.0, 0.0, -1.0]] * n, device=dev,
                                dtype=torch.float64)
        # per run: the loss of each of the first FIRST_STEPS steps (checks/spotcheck.py)
        self.first = torch.full((n, FIRST_STEPS), math.nan, device=dev,
                                dtype=torch.float64)
        self._first_index = torch.arange(FIRST_STEPS, device=dev, dtype=torch.float64)
        self.step_t = torch.zeros((), device=dev, dtype=torch.float64)
        self.alive = torch.ones(n, dtype=torch.bool, device=dev)
        self.histories = [{"train": [], "test": []} for _ in range(n)]
        self.status, self.fails = ["running"] * n, [None] * n
        self.step, self.elapsed, self.moves = 0, [0.0] * n, []
        self.segments = [[] for _ in range(n)]  # each run's segments before this process's
        d = o.checkpoint_dir
        self.paths = [path_of(d, c) for c in self.cfgs] if d else None
        ce = self.eval_every if o.checkpoint_every is None else o.checkpoint_every
        self.checkpoint_every = max(self.log_every,
                                    math.ceil(ce / self.log_every) * self.log_every)

    def _order(self, gen):
        return to_device(torch.randperm(self.N, generator=gen), self.device)

    def _start(self):
        """The stop, the fail rule, the bar and the first line."""
        o, c = self.opts, self.cfgs[0]
        self.step_t.fill_(self.step)
        self.stop = self.total if o.max_steps is None else min(self.total, o.max_steps)
        self.divergence = Divergence(c, self.D["num_classes"])
        self.eager_since = self.step  # a CUDA graph waits GRAPH_WARMUP eager steps
        self.graph, self.graph_lr, self.static = None, None, None
        self.stepper.train()
        self.t_window = self.t_checkpoint = time.perf_counter()
        self.segment = segment_start(self.device, self.step)  # this process's part of the run
        self.steps_window = 0
        at = min(self.step + GRAPH_WARMUP + 2, self.stop)  # timed after the first steps
        self._probe = {"at": at, "until": min(at + 10, self.stop)}
        # this loop's global RNG (dropout): swapped in by trainer.train
        self.rng = self.rng_state()
        # (here: `import idmap_lib` works before a chapter's setup installs it)
        from tqdm.auto import tqdm

        name = run_name(c) + (f" and {self.n - 1} more" if self.n > 1 else "")
        self.bar = tqdm(total=self.total, initial=self.step, disable=not self.show,
                        dynamic_ncols=True, desc=f"{c['experiment']}/{c['variant']}/{c['scale']}")
        self._say(f"{name}: {self.stepper.describe()}; {self.total - self.step} steps to go")
        if o.on_step is not None:
            o.on_step(self)

    # ------------------------------------------------------------------ small helpers
    def _on_stream(self):
        if self.stream is None:
            return contextlib.nullcontext()
        return torch.cuda.stream(self.stream)

    def _say(self, msg):
        if self.show:
            from tqdm.auto import tqdm

            tqdm.write(msg)

    def rng_state(self):
        """This loop's global RNG streams (dropout): trainer.train swaps them in and out."""
        cuda = self.device.type == "cuda"
        return torch.get_rng_state(), torch.cuda.get_rng_state(self.device) if cuda else None

    def set_rng_state(self, state):
        torch.set_rng_state(state[0])
        if state[1] is not None:
            torch.cuda.set_rng_state(state[1], self.device)

    @property
    def done(self):
        return "running" not in self.status or self.step >= self.stop

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_due(self):
        """``checkpoint_minutes``: a checkpoint every so many minutes of wall time too (a Colab
        disconnect loses at most that much). Not under DDP: the ranks' clocks would disagree about a
        collective."""
        m = self.opts.checkpoint_minutes
        return bool(m) and self.ctx.world == 1 and time.perf_counter() - self.t_checkpoint >= 60 * m

    def checkpoint(self, runs=None):
        """Runs `runs`' checkpoints (default: all), one file each (checkpoint.write)."""
        self.t_checkpoint = time.perf_counter()
        write(self, runs)

    # ------------------------------------------------------------------ the step
    def _forward_backward(self, x, y):
        """The stepper's step, then each run's device-side sums: what a CUDA graph captures."""
        loss, wrong = self.stepper.step(x, y, self.alive)
        with torch.no_grad():
            l = loss.detach().double()
            n = torch.full_like(l, y.shape[-1])
            self.acc[:, :3] += torch.stack((l * n, wrong.double(), n), 1)
            bad = torch.isfinite(l).logical_not() & (self.acc[:, 3] < 0)
            self.acc[:, 3] = torch.where(bad, self.step_t.expand_as(l), self.acc[:, 3])
            at = self._first_index == self.step_t
            self.first.copy_(torch.where(at, l[:, None], self.first))
            self.step_t += 1

    def _capture(self, x, y, lr):
        """Capture the step in a CUDA graph for this learning rate."""
        self.graph = None  # frees the previous graph's memory pool
        if self.static is None:
            self.static = (torch.empty_like(x), torch.empty_like(y))
        # the captured backward then writes (not adds) the gradients
        self.opt.zero_grad(set_to_none=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.stream):
            self._forward_backward(*self.static)
        self.graph, self.graph_lr = g, lr

    def _step_on(self, x, y, lr):
        """One step on the batch (x, y): replayed from the graph (captured again when the lr
        changes) once GRAPH_WARMUP eager steps have run since the (re)start, else eager."""
        if self.graph_on and self.step - self.eager_since >= GRAPH_WARMUP:
            if self.graph is None or lr != self.graph_lr:
                self._capture(x, y, lr)
            self.static[0].copy_(x)
            self.static[1].copy_(y)
            self.graph.replay()
        else:
            self.opt.zero_grad(set_to_none=True)
            self._forward_backward(x, y)

    def advance(self):
        """One step of every run, then the log, evaluation and checkpoints that fall on it."""
        with self._on_stream():
            was = [s == "running" for s in self.status]
            # the learning rate of this step
            lr = lr_at(self.sched, self.step)
            for g in self.opt.param_groups:
                g["lr"] = lr
            # each run's batch, from its own order and augmentation stream
            if self.pos + self.B > self.N:  # a new epoch (the last partial batch is dropped)
                self.perm, self.pos = [self._order(g) for g in self.gen_order], 0
            ctx, aug = self.ctx, self.cfgs[0].get("augment") or None
            idx = [p[self.pos:self.pos + self.B][ctx.rank::ctx.world] for p in self.perm]
            self.pos += self.B
            xs = [train_batch(self.D, i, aug, g, self.stepper.cl)
                  for i, g in zip(idx, self.gen_aug)]
            x, y = self.stepper.batch(xs, [self.D["y_train"][i] for i in idx])
            # forward, backward, update: eager or replayed as one CUDA graph
            self._step_on(x, y, lr)
            self.step += 1
            self.steps_window += 1
            # the pace, once, after the first steps
            if self.step in (self._probe["at"], self._probe["until"]):
                self._project()
            # a log window's end: its records, the fail rule, an evaluation
            if self.step % self.log_every == 0 or self.step == self.total:
                self._log()
            # checkpoints: on the cadence and at the stop; a run that just ended, at once
            ended = [r for r in range(self.n) if was[r] and self.status[r] != "running"]
            if self.step % self.checkpoint_every == 0 or self.step == self.stop or \
                    self._checkpoint_due():
                self.checkpoint([r for r in range(self.n) if was[r]])
            elif ended:
                self.checkpoint(ended)
            # the caller's look at the runs between two steps (``on_step``)
            if self.opts.on_step is not None:
                self.opts.on_step(self)

    def _project(self):
        """The measured pace and the projected time to the stop, on the bar and in one line."""
        if self.stream is not None:
            self.stream.synchronize()
        now = time.perf_counter()
        if self.step == self._probe["at"]:
            self._probe["t"] = now
            return
        if "t" not in self._probe:
            return
        dt = (now - self._probe["t"]) / max(self._probe["until"] - self._probe["at"], 1)
        left = self.stop - self.step
        self.projected_s = dt * left
        loss_sum, _, n, _ = self.acc[0].tolist()  # the window so far
        loss = f", training loss {loss_sum / n:.3f}" if n else ""
        stop = "" if self.stop == self.total else f" (stopping at step {self.stop} of {self.total})"
        rate = self.n * self.B / dt
        self.bar.update(self.step - self.bar.n)
        self.bar.set_postfix(loss=f"{loss_sum / n:.3f}" if n else "-", img_s=f"{rate:.0f}")
        self._say(f"{run_name(self.cfgs[0])}: step {self.step}{loss}, {rate:.0f} img/s"
                  + (" in all" if self.n > 1 else "")
                  + f" -> the remaining {left} steps{stop} take "
                  f"about {format_duration(self.projected_s)} on this {self.device.type} "
                  f"(plus evaluations)")

    def _log(self):
        ctx, step = self.ctx, self.step
        a = self.acc.clone()
        ctx.all_reduce(a[:, :3])
        ctx.all_reduce_max(a[:, 3:])
        a = a.tolist()
        self.acc[:, :3] = 0.0
        self.acc[:, 3] = -1.0
        now = time.perf_counter()
        dt = max(now - self.t_window, 1e-9)
        lr, rate = lr_at(self.sched, step - 1), self.steps_window * self.B / dt
        for r in range(self.n):
            if self.status[r] != "running":
                continue
            self.elapsed[r] += dt
            loss_sum, err_sum, n, bad = a[r]
            rec = window(step, loss_sum, err_sum, n, lr, rate, self.elapsed[r])
            self.histories[r]["train"].append(rec)
            self.fails[r] = self.divergence.fail(rec, bad)
            if self.fails[r] is not None:
                self.status[r], self.alive[r] = "fail", False
        if evaluates(step, self.cfgs[0]) and "running" in self.status:
            for r, (tl, te) in enumerate(self.evaluate()):
                if self.status[r] == "running":
                    self.histories[r]["test"].append({"step": step, "test_loss": tl,
                                                      "test_err": te})
        self.t_window, self.steps_window = time.perf_counter(), 0  # evaluation kept out of img/s
        last = self.histories[0]["train"][-1] if self.histories[0]["train"] else None
        self.bar.update(step - self.bar.n)
        if last is not None:
            self.bar.set_postfix(loss=f"{last['train_loss']:.3f}", err=f"{last['train_err']:.3f}",
                                 img_s=f"{last['img_per_s']:.0f}")
        if self.opts.on_log is not None and ctx.rank == 0:
            self.opts.on_log(self.histories[0])
        if step == self.total:
            self.status = ["ok" if s == "running" else s for s in self.status]

    def evaluate(self, batch=1000) -> list[tuple[float, float]]:
        """Every run's test loss and error, BN on its running statistics (sharded over DDP
        ranks)."""
        self.stepper.eval()
        out = evaluate_sums(self.stepper.test_sums, self.n, self.D, self.device, self.ctx, batch)
        self.stepper.train()
        return out

    # ------------------------------------------------------------------ the end
    def finish(self) -> list[dict]:
        """One result per run: a finished run's (written under out_dir), or a stopped one's."""
        self.bar.close()
        o, prec = self.opts, precision_name(self.stepper.dtype)
        self.nets = nets = self.stepper.trained()
        out = []
        for r, cfg in enumerate(self.cfgs):
            first = self.first[r, :min(self.step, FIRST_STEPS)].tolist()
            if self.status[r] == "running":
                out.append(stopped(cfg, self.step, self.histories[r],
                                   self.paths[r] if self.paths else None, first_steps=first,
                                   precision=prec, **provenance(self.device, self.ctx.world)))
                continue
            extra = self.stepper.extra(self.cfgs)
            if self.moves:  # resumed on another kind of device or precision: not one bit-exact run
                extra["moves"] = self.moves
            # every segment it trained in (one process each): commit, library hash, steps, hardware
            extra["segments"] = self.segments[r] + [segment_at(self.segment, self.step)]
            result = outcome_result(
                cfg, status=self.status[r], fail=self.fails[r], history=self.histories[r],
                net=nets[r], first_steps=first, dataset_source=self.D["source"], precision=prec,
                device=self.device, world=self.ctx.world, channels_last=self.stepper.cl,
                compiled=bool(o.compile), cuda_graph=self.graph_on,
                deterministic=bool(o.deterministic), **extra)
            if o.write_result and self.ctx.rank == 0:
                result["path"] = str(save_result(result, o.out_dir))
            out.append(result)
        self.results = out
        return out
