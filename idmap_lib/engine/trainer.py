"""The training engine: one recipe config in, one result (with provenance) out.

Its parts: device.py (device, precision, process-wide switches), build.py (the recipe's model and optimizer),
batches.py (the data on the device, batches, evaluation); here one ``Run``, and ``train``, ``train_many``, ``run``.

- best device (CUDA, then CPU); the whole uint8 dataset on that device; batches gathered by index from a
  seeded permutation, normalised and augmented there (augment.py) -- no DataLoader, no PIL;
- autocast: bf16 where the hardware has it (GPUs of compute capability >= 8; CPUs with AVX512-BF16/AMX),
  fp16 + GradScaler on older GPUs (e.g. Colab's T4), else fp32; channels_last for conv nets; fused SGD and
  cudnn.benchmark on CUDA; optional torch.compile;
- ``cuda_graph``: on CUDA, the whole step (forward, backward, optimizer, loss sums) is captured once in a CUDA
  graph and replayed; a ResNet-110 step is ~1,200 small kernels, so eager PyTorch is bound by their launches;
  the graph is captured again when the learning rate changes (4 times in Paper A's schedule); with fp16
  (a T4) too: fused SGD takes GradScaler's scale and found_inf as tensors and skips an overflowing step on the
  device, and GradScaler.update is device-side, so the scaled step has no host sync to break the capture;
- no host-device sync per step: loss/error sums, the first non-finite step and the losses of the first
  ``FIRST_STEPS`` steps (the result's ``first_steps``, which the batch grader's spot check compares) live on the
  device and are read every ``log_every`` steps (the first steps at the end);
- live reporting: a tqdm.auto bar (loss, error, img/s), the device and precision up front, the projected
  time of the whole run after its first steps, and ``on_log(history)`` for the book's curves;
- divergence is a result: a non-finite loss ends the run with status "fail" and the step (recipes may also
  ask for the older "training error at chance after a grace period" rule);
- atomic checkpoints (model, optimizer, schedule position, GradScaler, all RNG states, data order and
  position, accumulators, history, device type and precision) and exact resume;
- DDP under torchrun (distributed.py); only rank 0 writes;
- ``train_many``: several runs interleaved step by step in one process, each on its own CUDA stream, so that
  small networks share one GPU.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ..models.introspect import gates
from . import data as data_mod
from . import distributed as dist_mod
from . import runlock
from .batches import evaluate, prepare_data, to_device, train_batch
from .build import build_model, build_optimizer, has_conv
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .device import EngineSettings, amp_dtype, format_duration, pick_device, precision_name
from .interrupt import DeferredInterrupt, TrainingInterrupted  # noqa: F401  (trainer.TrainingInterrupted)
from .recipes import lr_at
from .results import FIRST_STEPS, config_hash, find_result, provenance, run_name, save_result, training_hash

GRAPH_WARMUP = 3  # eager steps before the first capture (lazy init of cuDNN/cuBLAS handles, optimizer state)


# ----------------------------------------------------------------------------------------------
# the step, eager or as one CUDA graph

class GraphedStep:
    """The training step, eager or replayed as one CUDA graph, for a run (``Run``, ``fused.FusedRun``) that has
    ``graph_on``, ``eager_since``, ``step``, ``opt``, ``stream``, ``graph``, ``graph_lr``, ``static`` and
    ``_forward_backward(x, y)`` (forward, backward, optimizer step and the device-side sums)."""

    def _capture(self, x, y, lr):
        """Capture the step in a CUDA graph for this learning rate (fused SGD bakes the lr into its kernel)."""
        self.graph = None  # frees the previous graph's memory pool
        if self.static is None:
            self.static = (torch.empty_like(x), torch.empty_like(y))
        self.opt.zero_grad(set_to_none=True)  # the captured backward then writes (not adds) the gradients
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.stream):
            self._forward_backward(*self.static)
        self.graph, self.graph_lr = g, lr

    def _step_on(self, x, y, lr):
        """One step on the batch (x, y): replayed from the graph (captured again when the lr changes) once
        GRAPH_WARMUP eager steps have run since the (re)start, else eager."""
        if self.graph_on and self.step - self.eager_since >= GRAPH_WARMUP:
            if self.graph is None or lr != self.graph_lr:
                self._capture(x, y, lr)
            self.static[0].copy_(x)
            self.static[1].copy_(y)
            self.graph.replay()
        else:
            self.opt.zero_grad(set_to_none=True)
            self._forward_backward(x, y)


# ----------------------------------------------------------------------------------------------
# one run

class Run(GraphedStep):
    """One training run, advanced a step at a time (``advance``) until ``done``; ``train`` drives one,
    ``train_many`` several. All its device work goes to its own CUDA stream."""

    def __init__(self, cfg, data=None, device=None, out_dir=None, checkpoint_dir=None, checkpoint_every=None,
                 resume=False, max_steps=None, compile=False, on_log=None, progress=True, deterministic=False,
                 amp="auto", channels_last="auto", write_result=True, cuda_graph=False, move=False,
                 checkpoint_minutes=None):
        self.ctx = ctx = dist_mod.context(device)
        self.checkpoint_minutes = checkpoint_minutes
        self.move, self.moves = bool(move), []
        self.device = device = ctx.device if ctx.world > 1 else pick_device(device)
        self.cfg, self.out_dir, self.on_log, self.write_result = cfg, out_dir, on_log, write_result
        self.compile, self.deterministic = bool(compile), bool(deterministic)
        self.show = progress and ctx.rank == 0
        self.chash = config_hash(cfg)
        self.seed = int(cfg["seed"])
        self.total, self.B = cfg["steps"], cfg["batch_size"]
        self.log_every, self.eval_every = cfg["log_every"], cfg["eval_every"]
        if self.B % ctx.world:
            raise ValueError(f"batch size {self.B} is not divisible by the number of processes {ctx.world}")
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        with self._on_stream():
            self._build(data, amp, channels_last, compile, cuda_graph)
            self._fresh_state(checkpoint_dir, checkpoint_every, resume)
        self._start(max_steps, cuda_graph)

    def _build(self, data, amp, channels_last, compile, cuda_graph):
        """Data on the device, model (seeded), precision, optimizer, generators."""
        cfg, ctx, device, seed = self.cfg, self.ctx, self.device, self.seed
        cuda = device.type == "cuda"
        self.D = prepare_data(cfg, data, device)
        torch.manual_seed(seed)
        model = build_model(cfg["model"]).to(device)
        self.cl = has_conv(model) if channels_last == "auto" else bool(channels_last)
        if self.cl:
            model = model.to(memory_format=torch.channels_last)
        self.raw = model
        self.dtype = amp_dtype(device, amp)
        self.scaler = torch.amp.GradScaler("cuda") if self.dtype == torch.float16 and cuda else None
        self.graph_note = self._graph_blocker(cuda_graph, cuda)
        self.graph_on = bool(cuda_graph) and self.graph_note is None
        self.opt = build_optimizer(model, cfg["optimizer"], device, capturable=self.graph_on)
        if ctx.world > 1:
            model = ctx.wrap(model)
        self.model = model
        self.fwd = torch.compile(model) if compile else model
        if ctx.world > 1:  # same init everywhere (above), but each rank its own dropout masks
            torch.manual_seed(seed * 1000 + 17 + ctx.rank)
        self.gen_order = torch.Generator().manual_seed(seed)  # data order: identical on every rank
        self.gen_aug = torch.Generator(device=device).manual_seed(seed * 1000 + 1 + ctx.rank)

    def _fresh_state(self, checkpoint_dir, checkpoint_every, resume):
        """Data order and position, device-side sums, history; then the checkpoint's, when resuming."""
        self.N = len(self.D["y_train"])
        self.perm, self.pos = to_device(torch.randperm(self.N, generator=self.gen_order), self.device), 0
        # loss sum, error sum, count, first non-finite step (-1: none) -- all on the device
        self.acc = torch.tensor([0.0, 0.0, 0.0, -1.0], device=self.device, dtype=torch.float64)
        self.step_t = torch.zeros((), device=self.device, dtype=torch.float64)  # the step, as the device sees it
        # the training loss of each of the first FIRST_STEPS steps: the run's fingerprint (checks/spotcheck.py)
        self.first = torch.full((FIRST_STEPS,), math.nan, device=self.device, dtype=torch.float64)
        self._first_index = torch.arange(FIRST_STEPS, device=self.device, dtype=torch.float64)
        self.history = {"train": [], "test": []}
        self.step, self.elapsed, self.status, self.fail = 0, 0.0, "running", None
        self.ckpt_path = Path(checkpoint_dir) / f"{run_name(self.cfg)}.pt" if checkpoint_dir else None
        ce = self.eval_every if checkpoint_every is None else checkpoint_every
        self.checkpoint_every = max(self.log_every, math.ceil(ce / self.log_every) * self.log_every)
        if resume and self.ckpt_path is not None and self.ckpt_path.exists():
            self._resume()
        self.step_t.fill_(self.step)

    def _start(self, max_steps, cuda_graph):
        """The fail rule, the stop, the progress bar and the first report."""
        from tqdm.auto import tqdm

        cfg, device = self.cfg, self.device
        self.bar = tqdm(total=self.total, initial=self.step, disable=not self.show, dynamic_ncols=True,
                        desc=f"{cfg['experiment']}/{cfg['variant']}/{cfg['scale']}")
        div = cfg["divergence"]
        self.grace = None if div.get("grace_fraction") is None else \
            max(int(div["grace_fraction"] * self.total), 2 * self.log_every)
        self.chance_margin = div.get("chance_margin", 0.01)
        self.chance_err = 1.0 - 1.0 / self.D["num_classes"]
        self.stop = self.total if max_steps is None else min(self.total, max_steps)
        self.graph, self.graph_lr, self.static = None, None, None
        self.eager_since = self.step  # graph capture waits GRAPH_WARMUP eager steps after every (re)start
        self.model.train()
        self.t_window, self.imgs_window = time.perf_counter(), 0
        self.t_checkpoint = self.t_window
        at = self.step + GRAPH_WARMUP + 2  # timed after the first steps (and a graph's capture)
        self._probe = {"at": min(at, self.stop), "until": min(at + 10, self.stop)}
        self.rng = self._rng_state()  # this run's global RNG streams (dropout), swapped in by train_many
        cuda = device.type == "cuda"
        self._say(f"{run_name(cfg)}: {device}" + (f" ({torch.cuda.get_device_name(device)})" if cuda else "")
                  + f", {precision_name(self.dtype)}" + (" + GradScaler" if self.scaler else "")
                  + (", channels_last" if self.cl else "") + (", CUDA graph" if self.graph_on else "")
                  + (f" (no CUDA graph: {self.graph_note})" if cuda_graph and not self.graph_on else "")
                  + (", compiled" if self.compile else "") + f"; {self.total - self.step} steps to go")

    # -- small helpers
    def _on_stream(self):
        import contextlib
        return torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()

    def _say(self, msg):
        if self.show:
            from tqdm.auto import tqdm
            tqdm.write(msg)

    def _graph_blocker(self, want, cuda):
        if not want:
            return None
        if not cuda:
            return "CUDA graphs need a CUDA device"
        if self.scaler is not None and self.cfg["optimizer"]["name"] != "sgd":
            # fused SGD skips an overflowing step on the device (GradScaler hands it found_inf); any other
            # optimizer's GradScaler.step reads found_inf on the host, a sync a CUDA graph cannot hold
            return "fp16 + GradScaler needs a host sync per step with this optimizer (fused SGD has none)"
        if self.ctx.world > 1:
            return "DDP steps are kept eager"
        if self.compile:
            return "torch.compile has its own (mode='reduce-overhead')"
        return None

    def _rng_state(self):
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return torch.get_rng_state(), cuda

    def _set_rng_state(self, state):
        torch.set_rng_state(state[0])
        if state[1] is not None:
            torch.cuda.set_rng_state(state[1], self.device)

    @property
    def done(self):
        return self.status != "running" or self.step >= self.stop

    # -- checkpoints
    def _resume(self):
        ck = load_checkpoint(self.ckpt_path, self.chash, self.ctx.world)
        prec = precision_name(self.dtype)
        kind = (ck.get("device_type"), ck.get("precision"))
        moved = kind[0] is not None and kind != (self.device.type, prec)
        if moved and not self.move:
            raise CheckpointError(
                f"checkpoint {self.ckpt_path} was written on {kind[0]} in {kind[1]}; this run is on "
                f"{self.device.type} in {prec}. A resumed run continues on the same kind of device in the "
                f"same precision (e.g. a T4's fp16 run on a T4), bit for bit: resume it there, pass --device/--amp "
                f"to match, pass --move to continue it here (no longer bit-exact; the result records the move), "
                f"or delete the checkpoint to start afresh.")
        self.moves = list(ck.get("moves", []))
        if moved:
            self.moves.append({"step": ck["step"], "from": f"{kind[0]} {kind[1]}", "to": f"{self.device.type} {prec}"})
        same_device = kind[0] in (None, self.device.type)
        rng, ctx = ck["rng"], self.ctx
        try:
            self.raw.load_state_dict(ck["model"])
            self.opt.load_state_dict(ck["optimizer"])  # (its state follows the parameters' device)
            if self.scaler is not None and ck.get("scaler"):
                self.scaler.load_state_dict(ck["scaler"])
            torch.set_rng_state(rng["torch"][ctx.rank])
            if self.device.type == "cuda" and rng.get("cuda") is not None and same_device:
                torch.cuda.set_rng_state(rng["cuda"][ctx.rank], self.device)
            self.gen_order.set_state(rng["order"])
            if same_device:
                self.gen_aug.set_state(rng["augment"][ctx.rank])
            else:  # a CUDA generator's state means nothing to a CPU one (and back): a new stream, seeded by the step
                self.gen_aug.manual_seed(self.seed * 1000 + 1 + ctx.rank + 7919 * ck["step"])
        except (RuntimeError, ValueError, KeyError, IndexError) as e:
            raise CheckpointError(f"checkpoint {self.ckpt_path} does not fit this model/optimizer/device ({e}); "
                                  f"it was written by a different recipe, library version or kind of device: "
                                  f"delete it or run without --resume") from e
        self.perm, self.pos = ck["data"]["perm"].to(self.device, torch.int64), ck["data"]["pos"]
        self.acc = ck["acc"].to(self.device)
        if "first" in ck:
            self.first = ck["first"].to(self.device)
        self.history, self.step, self.elapsed = ck["history"], ck["step"], ck["elapsed"]
        self.status, self.fail = ck.get("status", "running"), ck.get("fail")
        self._say(f"resumed {self.ckpt_path} at step {self.step}/{self.total}"
                  + (f", moved from {kind[0]} {kind[1]} to {self.device.type} {prec}: no longer bit-exact" if moved else ""))

    def _checkpoint_due(self):
        """``checkpoint_minutes``: a checkpoint every so many minutes of wall time as well (a disconnect on Colab
        then loses at most that much, whatever the steps between the recipe's checkpoints). Not under DDP: the ranks'
        clocks would disagree about a collective."""
        return bool(self.checkpoint_minutes) and self.ctx.world == 1 and time.perf_counter() - self.t_checkpoint >= 60 * self.checkpoint_minutes

    def checkpoint(self):
        self.t_checkpoint = time.perf_counter()
        if self.ckpt_path is None:
            return
        ctx = self.ctx
        aug_states = ctx.gather_object(self.gen_aug.get_state())
        torch_states = ctx.gather_object(torch.get_rng_state())
        cuda_states = ctx.gather_object(torch.cuda.get_rng_state(self.device)) \
            if self.device.type == "cuda" else None
        if ctx.rank == 0:
            save_checkpoint(self.ckpt_path, {
                "format": 1, "config": self.cfg, "config_hash": self.chash, "world_size": ctx.world,
                "device_type": self.device.type, "precision": precision_name(self.dtype), "step": self.step,
                "model": self.raw.state_dict(), "optimizer": self.opt.state_dict(),
                "scheduler": {"kind": "pure function of the step (recipes.lr_at)", "step": self.step},
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                "rng": {"torch": torch_states, "cuda": cuda_states, "order": self.gen_order.get_state(),
                        "augment": aug_states},
                "data": {"perm": self.perm.to(torch.int32).cpu(), "pos": self.pos},  # int32: half the bytes
                "acc": self.acc.cpu(), "first": self.first.cpu(),
                "history": self.history, "elapsed": self.elapsed, "status": self.status, "fail": self.fail,
                "moves": self.moves})

    # -- the step
    def _forward_backward(self, x, y):
        """Forward, backward, optimizer step and the device-side sums: the body that a CUDA graph captures."""
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None,
                            cache_enabled=not self.graph_on):
            out = self.fwd(x)
            loss = F.cross_entropy(out.to(torch.get_default_dtype()), y)  # (float32 unless a test asks float64)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        with torch.no_grad():
            l = loss.detach().double()
            n = torch.full_like(l, len(y))
            self.acc[:3] += torch.stack((l * n, (out.detach().argmax(1) != y).sum().double(), n))
            first_bad = torch.isfinite(l).logical_not() & (self.acc[3] < 0)
            self.acc[3] = torch.where(first_bad, self.step_t, self.acc[3])
            self.first.copy_(torch.where(self._first_index == self.step_t, l, self.first))
            self.step_t += 1

    def advance(self):
        """One training step, then the log / evaluation / checkpoint that fall on it."""
        with self._on_stream():
            self._train_step()
            if self.step == self._probe["at"] or self.step == self._probe["until"]:
                self._project()
            if self.step % self.log_every == 0 or self.step == self.total:
                self._log()
            if self.status != "running" or self.step % self.checkpoint_every == 0 or self.step == self.stop or \
                    self._checkpoint_due():
                self.checkpoint()  # a stop between logs keeps the window's device-side sums in the checkpoint

    def _train_step(self):
        cfg, ctx, B = self.cfg, self.ctx, self.B
        lr = lr_at(cfg["schedule"], self.step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        if self.pos + B > self.N:  # new epoch (the last partial batch is dropped)
            self.perm, self.pos = to_device(torch.randperm(self.N, generator=self.gen_order), self.device), 0
        idx = self.perm[self.pos:self.pos + B][ctx.rank::ctx.world]
        self.pos += B
        x = train_batch(self.D, idx, cfg.get("augment") or None, self.gen_aug, self.cl)
        y = self.D["y_train"][idx]
        self._step_on(x, y, lr)
        self.imgs_window += len(y) * ctx.world
        self.step += 1

    def _project(self):
        """After the first steps: the measured speed, the loss so far and the projected time of this run (to its
        stop: ``max_steps`` or the recipe's end), on the bar and in one line (one sync)."""
        if self.device.type == "cuda":
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
        loss_sum, _, n, _ = self.acc.tolist()  # the window so far (before the first log, the only loss there is)
        loss = f", training loss {loss_sum / n:.3f}" if n else ""
        stop = "" if self.stop == self.total else f" (stopping at step {self.stop} of {self.total})"
        self.bar.update(self.step - self.bar.n)
        self.bar.set_postfix(loss=f"{loss_sum / n:.3f}" if n else "-", img_s=f"{self.B / dt:.0f}")
        self._say(f"{run_name(self.cfg)}: step {self.step}{loss}, {self.B / dt:.0f} img/s -> the remaining {left} "
                  f"steps{stop} take about {format_duration(self.projected_s)} on this {self.device.type} "
                  f"(plus evaluations)")

    def _log(self):
        ctx, cfg, step = self.ctx, self.cfg, self.step
        a = self.acc.clone()
        ctx.all_reduce(a[:3])
        ctx.all_reduce_max(a[3:])
        loss_sum, err_sum, n, bad = a.tolist()
        self.acc.zero_()
        self.acc[3] = -1.0
        now = time.perf_counter()
        dt = max(now - self.t_window, 1e-9)
        self.elapsed += dt
        rec = {"step": step, "train_loss": loss_sum / max(n, 1), "train_err": err_sum / max(n, 1),
               "lr": lr_at(cfg["schedule"], step - 1), "img_per_s": self.imgs_window / dt, "wall_s": self.elapsed}
        self.history["train"].append(rec)
        self.t_window, self.imgs_window = now, 0
        if bad >= 0:
            self.status, self.fail = "fail", {"step": int(bad), "reason": "non-finite training loss"}
        elif self.grace is not None and step > self.grace and \
                rec["train_err"] >= self.chance_err - self.chance_margin:
            self.status, self.fail = "fail", {"step": step, "reason": f"training error {rec['train_err']:.3f} "
                                              f"still at chance ({self.chance_err:.3f}) after {step} steps"}
        if self.status == "running" and (step % self.eval_every == 0 or step == self.total):
            tl, te = evaluate(self.raw, self.D, self.dtype, self.cl, self.device, ctx)
            self.history["test"].append({"step": step, "test_loss": tl, "test_err": te})
            self.t_window = time.perf_counter()  # evaluation is kept out of img/s and wall_s
        self.bar.update(step - self.bar.n)
        self.bar.set_postfix(loss=f"{rec['train_loss']:.3f}", err=f"{rec['train_err']:.3f}",
                             img_s=f"{rec['img_per_s']:.0f}")
        if self.on_log is not None and ctx.rank == 0:
            self.on_log(self.history)
        if step == self.total and self.status == "running":
            self.status = "ok"

    # -- the end
    def _first_steps(self) -> list[float]:
        """The training loss of each of the first FIRST_STEPS steps (fewer if it stopped before)."""
        return self.first[:min(self.step, FIRST_STEPS)].tolist()

    def finish(self) -> dict:
        self.bar.close()
        cfg, history, step = self.cfg, self.history, self.step
        if self.status == "running":
            return {"status": "stopped", "step": step, "config": cfg, "config_hash": self.chash,
                    "history": history, "checkpoint": str(self.ckpt_path) if self.ckpt_path else None,
                    "first_steps": self._first_steps(), "precision": precision_name(self.dtype),
                    **provenance(self.device, self.ctx.world)}
        tr = history["train"]
        final = {"train_loss": tr[-1]["train_loss"], "train_err": tr[-1]["train_err"], "steps": step,
                 "wall_s": self.elapsed,
                 "img_per_s": sum(r["img_per_s"] for r in tr[1:]) / max(len(tr) - 1, 1)}
        if history["test"] and history["test"][-1]["step"] == step:  # a test error from before a failure is no final
            final.update(test_err=history["test"][-1]["test_err"], test_loss=history["test"][-1]["test_loss"])
        ks = gates(self.raw)
        if ks:
            final["gates_k"] = [float(k.detach()) for k in ks]
        result = {"config": cfg, "config_hash": self.chash, "training_hash": training_hash(cfg),
                  "status": self.status, "fail": self.fail,
                  "final": final, "history": history, "first_steps": self._first_steps(), "seed": self.seed,
                  "dataset_source": self.D["source"],
                  "precision": precision_name(self.dtype), "channels_last": self.cl, "compiled": self.compile,
                  "cuda_graph": self.graph_on, "deterministic": self.deterministic,
                  **provenance(self.device, self.ctx.world)}
        if self.moves:  # resumed on another kind of device or precision (move=True): not one bit-exact run
            result["moves"] = self.moves
        if self.ctx.world > 1:
            result["ddp"] = {"world_size": self.ctx.world, "backend": self.ctx.backend,
                             "replicas_in_sync": self.ctx.params_in_sync(self.raw)}
        if self.write_result and self.ctx.rank == 0:
            result["path"] = str(save_result(result, self.out_dir))
        return result


# ----------------------------------------------------------------------------------------------
# entry points

def train(cfg: dict, data=None, device=None, out_dir=None, checkpoint_dir=None, checkpoint_every=None,
          resume=False, max_steps=None, compile=False, on_log=None, progress=True, deterministic=False,
          amp="auto", channels_last="auto", write_result=True, cuda_graph=False, move=False,
          checkpoint_minutes=None) -> dict:
    """Train one recipe config; returns the result dict (also written under out_dir when finished).

    data: a data.Data, a path (like --data), or None ($IDMAP_DATA, then torchvision's download).
    checkpoint_dir: where checkpoints go (e.g. Google Drive on Colab); None = no checkpoints.
    checkpoint_every: steps between checkpoints (rounded up to a multiple of log_every); default eval_every.
    checkpoint_minutes: also a checkpoint whenever this many minutes of wall time have passed since the last
        (a student's run on Colab: a disconnect loses at most that much).
    resume: continue from the checkpoint of this run in checkpoint_dir, if there is one.
    max_steps: stop after this many steps of the recipe (schedule unchanged), save a checkpoint and return
        status "stopped" (nothing written to results): a run "killed" on purpose, to be resumed.
    Ctrl-C (a notebook's stop button) stops at the end of the step under way, writes the checkpoint and raises
    ``TrainingInterrupted`` (a KeyboardInterrupt of one line); a second Ctrl-C interrupts at once, without one.
    deterministic: torch.use_deterministic_algorithms(True) (exact resume on CPU is bit-for-bit).
    cuda_graph: on CUDA, replay the whole step as one CUDA graph (ignored, with a note, where it cannot be).
    move: resume a checkpoint written on another kind of device or in another precision (bf16 on an H200 ->
        fp16 on a T4 -> fp32 on a CPU); refused without it. The run is then no longer bit-exact (another
        precision, a new augmentation stream) and its result lists the move under "moves".
    """
    return train_many([cfg], data=data, device=device, out_dir=out_dir, checkpoint_dir=checkpoint_dir,
                      checkpoint_every=checkpoint_every, resume=resume, max_steps=max_steps, compile=compile,
                      on_log=on_log, progress=progress, deterministic=deterministic, amp=amp,
                      channels_last=channels_last, write_result=write_result, cuda_graph=cuda_graph, move=move,
                      checkpoint_minutes=checkpoint_minutes)[0]


def train_many(cfgs: list[dict], **kwargs) -> list[dict]:
    """Several runs interleaved step by step in one process (same keyword arguments as ``train``).

    On CUDA each run issues its work on its own stream, so the small kernels of one network overlap those of
    another: several seeds or variants share one GPU at a higher total throughput than one after another. Every
    run is exactly the run ``train`` would make (its own model, optimizer, generators and data order)."""
    data = kwargs.pop("data", None)
    ck_dir = kwargs.get("checkpoint_dir")
    held = [Path(ck_dir) / f"{run_name(c)}.pt" for c in cfgs] if ck_dir and dist_mod.int_env("RANK", 0) == 0 else []
    with runlock.hold(held):  # one process at a time trains a run into a checkpoint folder (RunInUse otherwise)
        return _train_many(cfgs, data, kwargs)


def _train_many(cfgs, data, kwargs):
    if not isinstance(data, data_mod.Data):  # load each dataset once for all runs
        data = {name: data_mod.load(name, data) for name in sorted({c["dataset"] for c in cfgs})}
    with EngineSettings(kwargs.get("deterministic"), kwargs.get("device")):
        runs = [Run(cfg, data=data if isinstance(data, data_mod.Data) else data[cfg["dataset"]], **kwargs)
                for cfg in cfgs]
        several = len(runs) > 1
        with DeferredInterrupt(all(r.ctx.world == 1 for r in runs)) as interrupt:
            while not all(r.done for r in runs) and not interrupt.hit:
                _step_all(runs, several)
        if interrupt.hit:  # a checkpoint of every unfinished run at the step it reached, and one line
            left = [r for r in runs if not r.done]
            for r in left:
                r.checkpoint()
                r.bar.close()
            r = left[0]
            raise TrainingInterrupted(
                f"interrupted at step {r.step} of {r.total}: " + (
                    f"checkpoint{'s' if len(left) > 1 else ''} kept ({r.ckpt_path.parent}); run the cell (or the "
                    f"command, with --resume) again to go on from there" if r.ckpt_path else
                    "no checkpoint folder, so nothing was kept"))
        return [r.finish() for r in runs]


def _step_all(runs, several):
    """One step of every unfinished run."""
    for r in runs:  # each run draws from its own global RNG streams (dropout), as if it ran alone
        if not r.done:
            if several:
                r._set_rng_state(r.rng)
            r.advance()
            if several:
                r.rng = r._rng_state()


def run(experiment: str, variant: str, scale: str = "cpu", seed: int = 0, out_dir=None, retrain=False,
        **train_kwargs) -> dict:
    """The result of one recipe run: looked up by config hash in `out_dir`, trained (and saved) if missing.

    train_kwargs go to ``train`` (data=, device=, on_log=, progress=, checkpoint_dir=, cuda_graph=, ...).
    """
    from .recipes import config

    cfg = config(experiment, variant, scale, seed)
    if not retrain:
        hit = find_result(cfg, out_dir)
        if hit is not None:
            return hit
    return train(cfg, out_dir=out_dir, **train_kwargs)
