"""The training engine: one recipe config in, one result (with provenance) out.

Its parts: device.py (device, precision, process-wide switches), build.py (the recipe's model and optimizer),
batches.py (the data on the device, batches, evaluation), graphs.py (the step as one CUDA graph), options.py (how to
train: ``TrainOptions``), outcome.py (the divergence rule and the result); here one ``Run``, and ``train``,
``train_many``, ``run``.

- best device (CUDA, then CPU); the whole uint8 dataset on that device; batches gathered by index from a
  seeded permutation, normalised and augmented there (augment.py) -- no DataLoader, no PIL;
- autocast: bf16 where the hardware has it (GPUs of compute capability >= 8; CPUs with AVX512-BF16/AMX),
  fp16 + GradScaler on older GPUs (e.g. Colab's T4), else fp32; channels_last for conv nets; fused SGD and
  cudnn.benchmark on CUDA; optional torch.compile;
- ``cuda_graph``: on CUDA, the whole step replayed as one CUDA graph (graphs.py); with fp16 (a T4) too: fused SGD
  takes GradScaler's scale and found_inf as tensors and skips an overflowing step on the device;
- no host-device sync per step: loss/error sums, the first non-finite step and the losses of the first
  ``FIRST_STEPS`` steps (the result's ``first_steps``, which the batch grader's spot check compares) live on the
  device and are read every ``log_every`` steps (the first steps at the end);
- live reporting: a tqdm.auto bar (loss, error, img/s), the device and precision up front, the projected
  time of the whole run after its first steps, and ``on_log(history)`` for the book's curves;
- divergence is a result (outcome.Divergence): a non-finite loss ends the run with status "fail" and the step
  (recipes may also ask for the older "training error at chance after a grace period" rule);
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

from . import data as data_mod
from . import distributed as dist_mod
from . import runlock
from .batches import evaluate, prepare_data, to_device, train_batch
from .build import build_model, build_optimizer, has_conv
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .device import EngineSettings, amp_dtype, format_duration, pick_device, precision_name
from .graphs import GRAPH_WARMUP, GraphedStep
from .interrupt import DeferredInterrupt, TrainingInterrupted  # noqa: F401  (trainer.TrainingInterrupted)
from .options import TrainOptions
from .outcome import Divergence, evaluates, result as outcome_result, stopped, window
from .recipes import lr_at
from .results import FIRST_STEPS, config_hash, find_result, provenance, run_name, save_result


# ----------------------------------------------------------------------------------------------
# one run

class Run(GraphedStep):
    """One training run, advanced a step at a time (``advance``) until ``done``; ``train`` drives one,
    ``train_many`` several. All its device work goes to its own CUDA stream."""

    def __init__(self, cfg, data=None, options: TrainOptions | None = None, **changes):
        self.opts = o = TrainOptions.of(options, **changes)
        self.ctx = ctx = dist_mod.context(o.device)
        self.checkpoint_minutes = o.checkpoint_minutes
        self.move, self.moves = bool(o.move), []
        self.device = device = ctx.device if ctx.world > 1 else pick_device(o.device)
        self.cfg, self.out_dir, self.on_log, self.write_result = cfg, o.out_dir, o.on_log, o.write_result
        self.compile, self.deterministic = bool(o.compile), bool(o.deterministic)
        self.show = o.progress and ctx.rank == 0
        self.chash = config_hash(cfg)
        self.seed = int(cfg["seed"])
        self.total, self.B = cfg["steps"], cfg["batch_size"]
        self.log_every, self.eval_every = cfg["log_every"], cfg["eval_every"]
        if self.B % ctx.world:
            raise ValueError(f"batch size {self.B} is not divisible by the number of processes {ctx.world}")
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        with self._on_stream():
            self._build(data, o.amp, o.channels_last, o.compile, o.cuda_graph)
            self._fresh_state(o.checkpoint_dir, o.checkpoint_every, o.resume)
        self._start(o.max_steps, o.cuda_graph)

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
        self.dtype = amp_dtype(device, cfg.get("amp", amp))  # a recipe that names its precision trains in it
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
        self.divergence = Divergence(cfg, self.D["num_classes"])
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
        rec = window(step, loss_sum, err_sum, n, lr_at(cfg["schedule"], step - 1), self.imgs_window / dt, self.elapsed)
        self.history["train"].append(rec)
        self.t_window, self.imgs_window = now, 0
        self.fail = self.divergence.fail(rec, bad)
        if self.fail is not None:
            self.status = "fail"
        if self.status == "running" and evaluates(step, cfg):
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
        precision = precision_name(self.dtype)
        if self.status == "running":
            return stopped(self.cfg, self.step, self.history, self.ckpt_path, first_steps=self._first_steps(),
                           precision=precision, **provenance(self.device, self.ctx.world))
        extra = {}
        if self.moves:  # resumed on another kind of device or precision (move=True): not one bit-exact run
            extra["moves"] = self.moves
        if self.ctx.world > 1:
            extra["ddp"] = {"world_size": self.ctx.world, "backend": self.ctx.backend,
                            "replicas_in_sync": self.ctx.params_in_sync(self.raw)}
        result = outcome_result(self.cfg, status=self.status, fail=self.fail, history=self.history, net=self.raw,
                                first_steps=self._first_steps(), dataset_source=self.D["source"], precision=precision,
                                device=self.device, world=self.ctx.world, channels_last=self.cl,
                                compiled=self.compile, cuda_graph=self.graph_on, deterministic=self.deterministic,
                                **extra)
        if self.write_result and self.ctx.rank == 0:
            result["path"] = str(save_result(result, self.out_dir))
        return result


# ----------------------------------------------------------------------------------------------
# entry points

def train(cfg: dict, data=None, options: TrainOptions | None = None, **changes) -> dict:
    """Train one recipe config; returns the result dict (also written under the options' out_dir when finished).

    data: a data.Data, a path (like --data), or None ($IDMAP_DATA, then torchvision's download).
    options / keyword arguments: how to train (``options.TrainOptions``: device, out_dir, checkpoint_dir, resume,
    max_steps, amp, ...; a keyword changes that one of `options`).
    Ctrl-C (a notebook's stop button) stops at the end of the step under way, writes the checkpoint and raises
    ``TrainingInterrupted`` (a KeyboardInterrupt of one line); a second Ctrl-C interrupts at once, without one.
    """
    return train_many([cfg], data, options, **changes)[0]


def train_many(cfgs: list[dict], data=None, options: TrainOptions | None = None, **changes) -> list[dict]:
    """Several runs interleaved step by step in one process (the options of ``train``).

    On CUDA each run issues its work on its own stream, so the small kernels of one network overlap those of
    another: several seeds or variants share one GPU at a higher total throughput than one after another. Every
    run is exactly the run ``train`` would make (its own model, optimizer, generators and data order)."""
    opts = TrainOptions.of(options, **changes)
    ck_dir = opts.checkpoint_dir
    held = [Path(ck_dir) / f"{run_name(c)}.pt" for c in cfgs] if ck_dir and dist_mod.int_env("RANK", 0) == 0 else []
    with runlock.hold(held):  # one process at a time trains a run into a checkpoint folder (RunInUse otherwise)
        return _train_many(cfgs, data, opts)


def _train_many(cfgs, data, opts):
    if not isinstance(data, data_mod.Data):  # load each dataset once for all runs
        data = {name: data_mod.load(name, data) for name in sorted({c["dataset"] for c in cfgs})}
    with EngineSettings(opts.deterministic, opts.device, opts.threads, cfgs):
        runs = [Run(cfg, data if isinstance(data, data_mod.Data) else data[cfg["dataset"]], opts) for cfg in cfgs]
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

    train_kwargs go to ``train`` (data=, and the options: device=, on_log=, progress=, checkpoint_dir=, ...).
    """
    from .recipes import config

    cfg = config(experiment, variant, scale, seed)
    if not retrain:
        hit = find_result(cfg, out_dir)
        if hit is not None:
            return hit
    return train(cfg, out_dir=out_dir, **train_kwargs)
