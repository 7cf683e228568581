"""The sweep as one queue, submitted through submitit: the runs the claims need, at the CPU scale or
the full recipe, in the order that settles them soonest (``sweep.runs_needed``), less those recorded
(looked up by what they train: ``results.find_result``) and those under way (a job of this queue's
ledger still queued or running); runs with a checkpoint and no job first (they resume). ``submit``
sends them to an executor of [submitit](https://github.com/facebookincubator/submitit):
``executor("slurm", ...)`` submits a SLURM job array, ``executor("local", ...)`` runs the same jobs
as processes of this machine (``run_local``: a few at a time, what the tests and the CPU background
sweep use). Each job is a ``TrainJob``: it trains its runs through the library with a checkpoint
folder and resumes from it, so a job preempted or cut off by its time limit is requeued by submitit
(``TrainJob.checkpoint``) and continues from its last checkpoint, bit for bit. Its results land in
the results folder with their provenance, and the job (scheduler, id, host, the steps it resumed
from) beside the hardware.

The ledger (ledger.py) says which runs are queued, running, done or failed: written by ``submit``
and by the job itself. Where the sweep stands, claim by claim, and what is
left in hours: queue_status.py.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import time
from pathlib import Path

from idmap_lib.engine import paths, recipes, results
from idmap_lib.engine.checkpoint import load_checkpoint
from idmap_lib.engine.fused import Fused
from idmap_lib.engine.solo import Solo
from idmap_lib.engine.trainer import train
from ..evidence.claims import CLAIMS_BY_KEY
from ..evidence.judge import paper_gap
from ..evidence.power import claim_seeds
from .ledger import UNDER_WAY, claim, ledger, mark, release
from .sweep import SWEEP_ORDER, runs_needed

try:  # an optional dependency (pip install submitit): the book and its chapters never need it
    from submitit.helpers import Checkpointable, DelayedSubmission
except ImportError:  # pragma: no cover - exercised where submitit is missing
    Checkpointable, DelayedSubmission = object, None

QUEUE_DIR, CHECKPOINT_DIR = paths.QUEUE, paths.CHECKPOINTS
SCALES = recipes.CLAIM_SCALES
# host memory a SLURM job asks for per GPU (the dataset on the device, a run's checkpoints): without
# a request an array's tasks each take a whole node's memory and run one at a time
MEM_GB = 16


# -- what the claims need, and what of it is left

def claims_at(scale: str, keys=None) -> list:
    """The claims the sweep trains (SWEEP_ORDER, or `keys`), their runs at `scale`: "cpu" (each
    claim's own CPU scale) or "full" (the papers' recipes)."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: the queue trains at {' or '.join(SCALES)}")
    try:
        chosen = [CLAIMS_BY_KEY[k] for k in (keys or SWEEP_ORDER)]
    except KeyError as e:
        raise ValueError(f"unknown claim {e}; valid: {', '.join(SWEEP_ORDER)}") from None
    bad = [c.key for c in chosen if c.scale == "full"]
    if bad:
        raise ValueError(f"{', '.join(bad)} rest on Paper B's MNIST grid at the full recipe: "
                         f"python -m idmap_book mnist")
    # the book's interventions (experiment a_swaps) test early training at a CPU scale: not the full
    # recipe's queue
    return chosen if scale == "cpu" else [dataclasses.replace(c, scale="full") for c in chosen
                                          if c.experiment != "a_swaps"]


def needed(scale="cpu", keys=None, seeds=None, out_dir=None) -> list[tuple]:
    """(experiment, variant, seed, scale) of every run the claims need, in the order that settles
    them soonest; at the full recipe, after every claim's first seeds, the seeds each final-error
    claim needs for 80 % power to resolve the paper's own gap by the rule's Welch test at the Holm
    level of its parts and Paper A's batch-128 spread (power.claim_seeds), claim by claim, for the
    variants of its parts with a gap."""
    first = runs_needed(None if scale == "cpu" and keys is None else claims_at(scale, keys), seeds,
                        out_dir)
    if scale != "full" or seeds is not None:
        return first

    more, seen = [], {results.training_hash(config_of(r)) for r in first}
    for c in claims_at(scale, keys):
        n = claim_seeds(c) or 0
        sides = [v for t in c.tests if t.metric == "test_err" and paper_gap(c, t) is not None
                 for v in (t.a, t.b)]
        for s in range(len(c.seeds), n):
            for v in dict.fromkeys(sides):
                r = (c.experiment, v, s, scale)
                h = results.training_hash(config_of(r))
                if h not in seen:
                    seen.add(h)
                    more.append(r)
    return first + more


def config_of(run) -> dict:
    return recipes.config(run[0], run[1], run[3], run[2])


def _checkpoints(checkpoint_dir=None) -> list[dict]:
    import torch

    paths = sorted(Path(checkpoint_dir or CHECKPOINT_DIR).glob("*.pt"))
    return [torch.load(p, map_location="cpu", weights_only=True) for p in paths]


def in_flight(checkpoint_dir=None) -> list[tuple[str, str, int, int]]:
    """(experiment, variant, seed, step) of each checkpoint of a run under way."""
    return [(c["config"]["experiment"], c["config"]["variant"], c["config"]["seed"],
             c.get("step", 0))
            for c in _checkpoints(checkpoint_dir)]


def started(checkpoint_dir=None) -> dict:
    """{training hash: step} of every run with a checkpoint (under way, or cut off with no job
    left)."""
    return {results.training_hash(c["config"]): c.get("step", 0)
            for c in _checkpoints(checkpoint_dir)}


def queue(scale="cpu", keys=None, seeds=None, out_dir=None, folder=None,
          checkpoint_dir=None) -> list[tuple]:
    """The runs to submit next, in order: those with a checkpoint and no job first (they resume),
    then the rest of what the claims need, less the recorded runs and the runs under way (a job of
    the ledger queued or running)."""
    busy = {h for h, e in ledger(folder).items() if e["state"] in UNDER_WAY}
    todo = [r for r in needed(scale, keys, seeds, out_dir)
            if results.training_hash(config_of(r)) not in busy
            and results.find_result(config_of(r), out_dir) is None]
    steps = started(checkpoint_dir)
    # stable: order kept
    return sorted(todo, key=lambda r: results.training_hash(config_of(r)) not in steps)


def groups(runs, fuse=1, pairs=False, steps=None) -> list[list[tuple]]:
    """The runs as jobs: one run each; ``fuse`` > 1: up to that many seeds of one variant as one
    fused network (where the device's benchmark found fusion faster; a fused group resumes together,
    so only runs at one step -- `steps`, {training hash: step} of the started ones -- are fused);
    ``pairs``: two runs of one experiment and seed a job (two CUDA streams)."""
    out, at = [], lambda r: (steps or {}).get(results.training_hash(config_of(r)))
    for r in runs:
        if fuse > 1:
            mate = next((g for g in out if g[0][:2] == r[:2] and g[0][3] == r[3] and len(g) < fuse
                         and at(g[0]) == at(r)), None)
            if mate is not None:
                mate.append(r)
                continue
        elif (pairs and out and len(out[-1]) < 2 and out[-1][0][0] == r[0]
              and out[-1][0][2:] == r[2:]):
            out[-1].append(r)
            continue
        out.append([r])
    return out


# -- the job

class TrainJob(Checkpointable):
    """One job of the queue: train `cfgs` (one run, a pair, or a fused group) through the library
    into `out_dir`, checkpointing into `checkpoint_dir` and resuming from it. submitit calls
    ``checkpoint`` when the job is preempted or reaches its time limit: it resubmits this same job,
    which resumes from the last checkpoint."""

    def __init__(self, cfgs, out_dir=None, checkpoint_dir=None, folder=None, fused=False, data=None,
                 checkpoint_every=None, checkpoint_minutes=10.0, **train_kwargs):
        self.cfgs, self.out_dir, self.fused, self.data = list(cfgs), out_dir, fused, data
        self.checkpoint_dir, self.folder = str(checkpoint_dir
                                               or CHECKPOINT_DIR), str(folder or QUEUE_DIR)
        self.checkpoint_every, self.checkpoint_minutes = checkpoint_every, checkpoint_minutes
        self.train_kwargs, self.requeues = train_kwargs, 0

    def __call__(self) -> list[str]:

        job = _job_environment()
        job["requeues"] = self.requeues
        # recorded meanwhile: skip
        todo = [c for c in self.cfgs if results.find_result(c, self.out_dir) is None]
        ck = {(n := results.run_name(c)): Path(self.checkpoint_dir) / f"{n}.pt" for c in todo}
        # (the file the loop writes)
        resumed = {n: load_checkpoint(p)["step"] for n, p in ck.items() if p.is_file()}
        for c in todo:
            mark(self.folder, c, "running", **job)
        try:
            if not todo:
                done = []
            else:
                done = train(todo, data=self.data, out_dir=self.out_dir,
                             stepper=Fused if self.fused and len(todo) > 1 else Solo,
                             checkpoint_dir=self.checkpoint_dir,
                             checkpoint_every=self.checkpoint_every,
                             checkpoint_minutes=self.checkpoint_minutes,
                             resume=True, **self.train_kwargs)
        except Exception as e:  # (submitit's requeue is a SystemExit: not a failure)
            for c in todo:
                mark(self.folder, c, "failed", error=f"{type(e).__name__}: {e}", **job)
            raise
        paths = []
        for r in done:
            if r.get("path"):  # finished: the job beside the hardware, in the recorded result
                stamp(r["path"],
                      {**job, "resumed_from_step": resumed.get(results.run_name(r["config"]))})
                paths.append(r["path"])
            mark(self.folder, r["config"], "done" if r.get("path") else "stopped", **job)
        return paths

    def checkpoint(self, *args, **kwargs):
        """Preempted or timed out: resubmit this job (submitit requeues it); it resumes from its
        checkpoint."""
        self.requeues += 1
        return DelayedSubmission(self, *args, **kwargs)


def _job_environment() -> dict:
    """The submitit job this runs in: scheduler, job id (array jobs: ARRAY_TASK), host, pid."""
    job = {"hostname": socket.gethostname(), "pid": os.getpid()}
    try:
        import submitit
        env = submitit.JobEnvironment()
        job.update(executor=env.cluster, job_id=str(env.job_id))
    except (ImportError, RuntimeError):
        job.update(executor=None, job_id=None)  # called outside a submitit job (a test, by hand)
    return job


def stamp(path, job: dict) -> None:
    """Add the job (scheduler, id, host, requeues, the step it resumed from) to a recorded result,
    beside its hardware: rewritten atomically under the same name (``results.save_result``)."""
    r = json.loads(Path(path).read_text())
    r["job"] = {k: v for k, v in job.items() if k != "pid"}
    results.save_result(r, Path(path).parent)


# -- executors and submission

def minutes(limit: str) -> int:
    """'4h', '90m', '1h30m', 'H:MM[:SS]' (seconds dropped) or '45' (minutes) -> minutes."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?|(\d+):(\d\d)(?::\d\d)?|(\d+)",
                     str(limit).strip().lower())
    if not m or not any(m.groups()):
        raise ValueError(f"time limit {limit!r}: write it as 4h, 90m, 1h30m or H:MM:SS")
    h, mi, hh, mm, bare = (int(g or 0) for g in m.groups())
    return 60 * (h + hh) + mi + mm + bare


def executor(kind: str, folder=None, partition=None, gpus_per_job=1, time_limit="4h",
             cpus_per_job=None,
             array_parallelism=None, slurm_params=None, mem_gb=None):
    """A submitit executor: "slurm" (a job array, one GPU each by default, requeued on preemption or
    the time limit) or "local" (processes of this machine). `slurm_params`: further sbatch options
    (account, qos, constraint, ...); `mem_gb`: host memory a job asks for (default MEM_GB a GPU, or
    for a CPU job)."""
    try:
        import submitit
    except ImportError:
        raise RuntimeError("the queue submits through submitit: pip install submitit (or pip "
                           "install 'idmap-lib[cluster]')") from None
    folder, limit = Path(folder or QUEUE_DIR) / "jobs" / "%j", minutes(time_limit)
    if kind == "local":
        ex = submitit.AutoExecutor(folder, cluster="local")
        # the local executor shows a job only gpus_per_node GPUs (CUDA_VISIBLE_DEVICES): all of them
        import torch
        ex.update_parameters(timeout_min=limit, gpus_per_node=torch.cuda.device_count(),
                             name="idmap")
        return ex
    if kind != "slurm":
        raise ValueError(f"unknown executor {kind!r}: local or slurm")
    if not partition:
        raise ValueError("--executor slurm needs --partition P (sinfo lists them)")
    bad = [k for k, v in (slurm_params or {}).items() if v is None
           or not re.fullmatch(r"[a-z_]+", k)]
    if bad:
        raise ValueError(f"sbatch options {bad}: give each as KEY=VALUE, the key in submitit's "
                         f"spelling (account=..., qos=..., constraint=..., mail_type=...)")
    try:
        ex = submitit.AutoExecutor(folder, cluster="slurm")
    except RuntimeError as e:
        raise RuntimeError(f"{e} (submit from a login node of the cluster: sbatch and srun on the "
                           f"PATH)") from None
    # a CPU job (no GPU) asks for one core and the memory of one run, not a GPU job's four
    g = int(gpus_per_job)
    params = dict(timeout_min=limit, gpus_per_node=g, tasks_per_node=1, nodes=1,
                  cpus_per_task=int(cpus_per_job or (4 * g if g else 1)),
                  mem_gb=mem_gb or MEM_GB * max(g, 1),
                  name="idmap",
                  slurm_partition=partition, slurm_signal_delay_s=120)
    if array_parallelism:
        params["slurm_array_parallelism"] = int(array_parallelism)
    params.update({f"slurm_{k}": v for k, v in (slurm_params or {}).items()})
    try:
        ex.update_parameters(**params)
    except NameError as e:  # submitit's word for an option it does not know
        raise ValueError(str(e)) from None
    return ex


def submit(ex, jobs, out_dir=None, folder=None, checkpoint_dir=None, fuse=1, **job_kwargs):
    """Submit `jobs` (``groups``: each a list of runs -- (experiment, variant, seed, scale) -- or
    configs) as jobs of `ex`, on SLURM one job array, and mark them queued; returns the submitit
    jobs. A recorded run is never sent."""
    kind = "local" if "Local" in type(getattr(ex, "_executor", ex)).__name__ else "slurm"
    todo = [g for g in ([c for c in (r if isinstance(r, dict) else config_of(r) for r in g)
                         if results.find_result(c, out_dir) is None and claim(folder, c, kind)]
                         for g in jobs) if g]
    if not todo:
        return []
    try:
        with ex.batch():
            sent = [ex.submit(TrainJob(g, out_dir, checkpoint_dir, folder, fused=fuse > 1,
                                       **job_kwargs))
                    for g in todo]
    # the scheduler refused it (sbatch's error): no job exists, so none is in the ledger
    except Exception as e:
        for g in todo:
            for c in g:
                release(folder, c)
        raise RuntimeError(f"the scheduler refused the submission, so nothing was queued or "
                           f"recorded: {' '.join(str(e).split())[-400:]}. On a node without GPUs "
                           f"pass --gpus-per-job 0; set --cpus-per-task / --mem to what the node "
                           f"has") from e
    for job, g in zip(sent, todo):
        for c in g:
            mark(folder, c, "queued", executor=kind, job_id=str(job.job_id))
    return sent


def run_local(scale="cpu", keys=None, seeds=None, out_dir=None, folder=None, checkpoint_dir=None,
              parallel=1,
              max_jobs=None, time_limit="24h", fuse=1, pairs=False, poll_s=2.0, log=print,
              **job_kwargs) -> dict:
    """The CPU background sweep: keep `parallel` jobs of the queue running on this machine through
    submitit's local executor, reading the queue again after each ends, until it is empty (or
    `max_jobs` were sent). A run whose job failed is not sent again in this sweep. Returns {"done":
    [...], "failed": [...]} (run names) and "paths" (the results it recorded)."""
    ex = executor("local", folder, time_limit=time_limit)
    running, sent, report, tried = [], 0, {"done": [], "failed": [], "paths": []}, set()
    while True:
        for job, names in [(j, n) for j, n in running if j.done()]:
            running.remove((job, names))
            try:
                report["paths"] += job.result()
                report["done"] += names
            # the ledger has it; the sweep goes on with the others
            except Exception as e:  # noqa: BLE001
                report["failed"] += names
                log(f"sweep: job {job.job_id} ({', '.join(names)}) failed: {type(e).__name__}: "
                    f"{str(e)[-300:]}")
        free = parallel - len(running)
        if free > 0 and (max_jobs is None or sent < max_jobs):
            todo = [r for r in queue(scale, keys, seeds, out_dir, folder, checkpoint_dir)
                    if r not in tried]
            for g in groups(todo, fuse, pairs, started(checkpoint_dir)):
                # one group at a time: another worker may take a run first
                if free == 0 or max_jobs is not None and sent >= max_jobs:
                    break
                tried.update(g)
                for job in submit(ex, [g], out_dir, folder, checkpoint_dir, fuse, **job_kwargs):
                    names = [results.run_name(c) for c in job.submission().function.cfgs]
                    log(f"sweep: job {job.job_id}: {', '.join(names)}")
                    running.append((job, names))
                    sent, free = sent + 1, free - 1
        if not running:
            return report
        time.sleep(poll_s)
