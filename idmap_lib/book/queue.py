"""The sweep as one queue, submitted through submitit (issue 34): the runs the claims need, at the CPU scale or the
full recipe, in the order that settles them soonest (``sweep.runs_needed``), less those recorded (looked up by what
they train: ``results.find_result``) and those under way (a job of this queue's ledger still queued or running);
runs with a checkpoint and no job first (they resume). ``submit`` sends them to an executor of
[submitit](https://github.com/facebookincubator/submitit): ``executor("slurm", ...)`` submits a SLURM job array,
``executor("local", ...)`` runs the same jobs as processes of this machine (``run_local``: a few at a time, what the
tests and the CPU background sweep use). Each job is a ``TrainJob``: it trains its runs through the library with a
checkpoint folder and resumes from it, so a job preempted or cut off by its time limit is requeued by submitit
(``TrainJob.checkpoint``) and continues from its last checkpoint, bit for bit. Its results land in the results
folder with their provenance, and the job (scheduler, id, host, the steps it resumed from) beside the hardware.

The ledger: one small JSON file per run under ``<folder>/runs/`` (state queued, running, done or failed, the job
id), written by ``submit`` and by the job itself; ``status`` reads it (and asks SLURM, where ``sacct`` is at hand,
about jobs that may have ended unseen) and prices what is left at the measured pace (``remaining_hours``).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import time
from pathlib import Path

from ..engine import recipes, results
from ..engine.data import DEFAULT_ROOT
from .claims import CLAIMS_BY_KEY
from .sweep import SWEEP_ORDER, runs_needed

try:  # an optional dependency (pip install submitit): the book and its chapters never need it
    from submitit.helpers import Checkpointable, DelayedSubmission
except ImportError:  # pragma: no cover - exercised where submitit is missing
    Checkpointable, DelayedSubmission = object, None

QUEUE_DIR = DEFAULT_ROOT / "sweep"            # submitit's folder (its pickles and logs) and the ledger (runs/)
CHECKPOINT_DIR = DEFAULT_ROOT / "checkpoints"  # checkpoints of runs under way (a lent GPU's come back here too)
SCALES = ("cpu", "full")
UNDER_WAY = ("queued", "running")
SLURM_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
               "DEADLINE", "UNKNOWN", "DONE"}


# ----------------------------------------------------------------------------------------------
# what the claims need, and what of it is left

def claims_at(scale: str, keys=None) -> list:
    """The claims the sweep trains (SWEEP_ORDER, or `keys`), their runs at `scale`: "cpu" (each claim's own CPU
    scale) or "full" (the papers' recipes)."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: the queue trains at {' or '.join(SCALES)}")
    try:
        chosen = [CLAIMS_BY_KEY[k] for k in (keys or SWEEP_ORDER)]
    except KeyError as e:
        raise ValueError(f"unknown claim {e}; valid: {', '.join(SWEEP_ORDER)}") from None
    bad = [c.key for c in chosen if c.scale == "full"]
    if bad:
        raise ValueError(f"{', '.join(bad)} rest on Paper B's MNIST grid at the full recipe: python -m idmap_lib mnist")
    return chosen if scale == "cpu" else [dataclasses.replace(c, scale="full") for c in chosen]


def needed(scale="cpu", keys=None, seeds=None, results_dir=None) -> list[tuple]:
    """(experiment, variant, seed, scale) of every run the claims need, in the order that settles them soonest."""
    chosen = claims_at(scale, keys)
    return runs_needed(None if scale == "cpu" and keys is None else chosen, seeds, results_dir)


def config_of(run) -> dict:
    return recipes.config(run[0], run[1], run[3], run[2])


def in_flight(checkpoint_dir=None) -> list[tuple[str, str, int, int]]:
    """(experiment, variant, seed, step) of each checkpoint of a run under way."""
    import torch

    out = []
    for p in sorted(Path(checkpoint_dir or CHECKPOINT_DIR).glob("*.pt")):
        c = (ck := torch.load(p, map_location="cpu", weights_only=True))["config"]
        out.append((c["experiment"], c["variant"], c["seed"], ck.get("step", 0)))
    return out


def queue(scale="cpu", keys=None, seeds=None, results_dir=None, folder=None, checkpoint_dir=None) -> list[tuple]:
    """The runs to submit next, in order: those with a checkpoint and no job first (they resume), then the rest of
    what the claims need, less the recorded runs and the runs under way (a job of the ledger queued or running)."""
    runs = needed(scale, keys, seeds, results_dir)
    busy = {h for h, e in ledger(folder).items() if e["state"] in UNDER_WAY}
    todo = [r for r in runs if results.training_hash(config_of(r)) not in busy
            and results.find_result(config_of(r), results_dir) is None]
    started = {results.training_hash(recipes.config(e, v, scale, s)) for e, v, s, _ in in_flight(checkpoint_dir)}
    return sorted(todo, key=lambda r: results.training_hash(config_of(r)) not in started)  # stable: order kept


def groups(runs, fuse=1, pairs=False) -> list[list[tuple]]:
    """The runs as jobs: one run each; ``fuse`` > 1: up to that many seeds of one variant as one fused network (where
    the device's benchmark found fusion faster); ``pairs``: two runs of one experiment and seed on two CUDA streams."""
    out = []
    for r in runs:
        last = out[-1] if out else None
        if fuse > 1:
            mate = next((g for g in out if g[0][:2] == r[:2] and g[0][3] == r[3] and len(g) < fuse), None)
            if mate is not None:
                mate.append(r)
                continue
        elif pairs and last and len(last) < 2 and last[0][0] == r[0] and last[0][2:] == r[2:]:
            last.append(r)
            continue
        out.append([r])
    return out


# ----------------------------------------------------------------------------------------------
# the ledger: one file per run, written by the submitter and by the job

def _entry_path(folder, cfg) -> Path:
    return Path(folder or QUEUE_DIR) / "runs" / f"{results.run_name(cfg)}__{results.training_hash(cfg)[:12]}.json"


def mark(folder, cfg, state: str, **job) -> None:
    """Record a run's state (queued, running, done, failed) and its job in the ledger (atomically). A "queued" mark
    never overwrites what the job itself wrote since (a local job may start before its submitter marks it)."""
    path = _entry_path(folder, cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    if state == "queued" and path.is_file():
        old = json.loads(path.read_text())
        if old.get("job_id") == job.get("job_id") and old["state"] != "queued":
            return
    entry = {"run": [cfg["experiment"], cfg["variant"], cfg["seed"], cfg["scale"]], "state": state,
             "training_hash": results.training_hash(cfg), "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             **job}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entry, indent=1) + "\n")
    os.replace(tmp, path)


def ledger(folder=None, ask_slurm=True) -> dict:
    """{training hash: the run's latest ledger entry}. A local job whose process is gone, or a SLURM job that sacct
    says has ended, while its entry still says queued or running, reads as failed (it was killed unseen)."""
    out = {}
    for p in sorted((Path(folder or QUEUE_DIR) / "runs").glob("*.json")):
        e = json.loads(p.read_text())
        if e["state"] in UNDER_WAY and not _alive(e, Path(folder or QUEUE_DIR), ask_slurm):
            e.update(state="failed", error=e.get("error") or "the job ended without recording its run")
        out[e["training_hash"]] = e
    return out


def _alive(e, folder, ask_slurm) -> bool:
    if e.get("executor") == "local" and e.get("pid") and e.get("hostname") == socket.gethostname():
        try:
            os.kill(int(e["pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
    if e.get("executor") == "slurm" and ask_slurm and e.get("job_id"):
        import shutil
        if shutil.which("sacct"):
            import submitit
            return submitit.SlurmJob(folder, e["job_id"]).state.split()[0] not in SLURM_ENDED
    return True


# ----------------------------------------------------------------------------------------------
# the job

class TrainJob(Checkpointable):
    """One job of the queue: train `cfgs` (one run, a pair, or a fused group) through the library into `out_dir`,
    checkpointing into `checkpoint_dir` and resuming from it. submitit calls ``checkpoint`` when the job is
    preempted or reaches its time limit: it resubmits this same job, which resumes from the last checkpoint."""

    def __init__(self, cfgs, out_dir=None, checkpoint_dir=None, folder=None, fused=False, data=None,
                 checkpoint_every=None, checkpoint_minutes=10.0, **train_kwargs):
        self.cfgs, self.out_dir, self.fused, self.data = list(cfgs), out_dir, fused, data
        self.checkpoint_dir, self.folder = str(checkpoint_dir or CHECKPOINT_DIR), str(folder or QUEUE_DIR)
        self.checkpoint_every, self.checkpoint_minutes, self.train_kwargs = checkpoint_every, checkpoint_minutes, train_kwargs
        self.requeues = 0

    def __call__(self) -> list[str]:
        from ..engine.checkpoint import load_checkpoint
        from ..engine.trainer import train_many

        job = _job_environment()
        job["requeues"] = self.requeues
        todo = [c for c in self.cfgs if results.find_result(c, self.out_dir) is None]  # recorded meanwhile: skip
        ck = {results.run_name(c): Path(self.checkpoint_dir) / f"{results.run_name(c)}.pt" for c in todo}
        resumed = {n: load_checkpoint(p)["step"] for n, p in ck.items() if p.is_file()}
        for c in todo:
            mark(self.folder, c, "running", **job)
        try:
            if not todo:
                done = []
            elif self.fused and len(todo) > 1:
                from ..engine.fused import train_fused
                done = train_fused(todo, data=self.data, out_dir=self.out_dir, checkpoint_dir=self.checkpoint_dir,
                                   checkpoint_every=self.checkpoint_every, resume=True, **self.train_kwargs)
            else:
                done = train_many(todo, data=self.data, out_dir=self.out_dir, checkpoint_dir=self.checkpoint_dir,
                                  checkpoint_every=self.checkpoint_every, checkpoint_minutes=self.checkpoint_minutes,
                                  resume=True, **self.train_kwargs)
        except Exception as e:  # (submitit's requeue is a SystemExit: not a failure)
            for c in todo:
                mark(self.folder, c, "failed", error=f"{type(e).__name__}: {e}", **job)
            raise
        paths = []
        for r in done:
            if r.get("path"):  # finished: the job beside the hardware, in the recorded result
                name = results.run_name(r["config"])
                stamp(r["path"], {**job, "resumed_from_step": resumed.get(name)})
                paths.append(r["path"])
            mark(self.folder, r["config"], "done" if r.get("path") else "stopped", **job)
        return paths

    def checkpoint(self, *args, **kwargs):
        """Preempted or timed out: resubmit this job (submitit requeues it); it resumes from its checkpoint."""
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
    """Add the job (scheduler, id, host, requeues, the step it resumed from) to a recorded result, beside its
    hardware: rewritten atomically under the same name (``results.save_result``)."""
    r = json.loads(Path(path).read_text())
    r["job"] = {k: v for k, v in job.items() if k != "pid"}
    results.save_result(r, Path(path).parent)


# ----------------------------------------------------------------------------------------------
# executors and submission

def minutes(limit: str) -> int:
    """'4h', '90m', '1h30m', '2:30:00' or '45' (minutes) -> minutes."""
    s = str(limit).strip().lower()
    if m := re.fullmatch(r"(?:(\d+)h)?\s*(?:(\d+)m(?:in)?)?", s):
        if any(m.groups()):
            return int(m[1] or 0) * 60 + int(m[2] or 0)
    if re.fullmatch(r"\d+(:\d\d){1,2}", s):
        parts = [int(p) for p in s.split(":")]
        return parts[0] * 60 + parts[1] + (parts[2] > 0 if len(parts) == 3 else 0)
    if s.isdigit():
        return int(s)
    raise ValueError(f"time limit {limit!r}: write it as 4h, 90m, 1h30m or H:MM:SS")


def executor(kind: str, folder=None, partition=None, gpus_per_job=1, time_limit="4h", cpus_per_job=None,
             array_parallelism=None, slurm_params=None):
    """A submitit executor: "slurm" (a job array, one GPU each by default, requeued on preemption or the time limit)
    or "local" (processes of this machine). `slurm_params`: further sbatch options (account, qos, constraint, ...)."""
    try:
        import submitit
    except ImportError:
        raise RuntimeError("the queue submits through submitit: pip install submitit (or pip install "
                           "'idmap-lib[cluster]')") from None
    folder = Path(folder or QUEUE_DIR) / "jobs" / "%j"
    if kind == "local":
        ex = submitit.AutoExecutor(folder, cluster="local")
        ex.update_parameters(timeout_min=minutes(time_limit), gpus_per_node=0, name="idmap")
        return ex
    if kind != "slurm":
        raise ValueError(f"unknown executor {kind!r}: local or slurm")
    if not partition:
        raise ValueError("--executor slurm needs --partition P (sinfo lists them)")
    ex = submitit.AutoExecutor(folder, cluster="slurm")
    params = dict(timeout_min=minutes(time_limit), gpus_per_node=int(gpus_per_job), tasks_per_node=1, nodes=1,
                  cpus_per_task=int(cpus_per_job or 4 * max(int(gpus_per_job), 1)), name="idmap",
                  slurm_partition=partition, slurm_signal_delay_s=120)
    if array_parallelism:
        params["slurm_array_parallelism"] = int(array_parallelism)
    params.update({f"slurm_{k}": v for k, v in (slurm_params or {}).items()})
    ex.update_parameters(**params)
    return ex


def submit(ex, runs_or_cfgs, out_dir=None, folder=None, checkpoint_dir=None, fuse=1, pairs=False, **job_kwargs):
    """Submit the runs as jobs (``groups``) of `ex` -- on SLURM one job array -- and mark them queued; returns the
    submitit jobs. Items may be runs (experiment, variant, seed, scale) or configs. A recorded run is never sent."""
    cfgs = [r if isinstance(r, dict) else config_of(r) for r in runs_or_cfgs]
    cfgs = [c for c in cfgs if results.find_result(c, out_dir) is None]
    as_runs = [(c["experiment"], c["variant"], c["seed"], c["scale"], i) for i, c in enumerate(cfgs)]
    jobs_cfgs = [[cfgs[r[4]] for r in g] for g in groups(as_runs, fuse, pairs)]
    if not jobs_cfgs:
        return []
    with ex.batch():
        jobs = [ex.submit(TrainJob(g, out_dir, checkpoint_dir, folder, fused=fuse > 1, **job_kwargs))
                for g in jobs_cfgs]
    kind = "local" if "Local" in type(getattr(ex, "_executor", ex)).__name__ else "slurm"
    for job, g in zip(jobs, jobs_cfgs):
        for c in g:
            mark(folder, c, "queued", executor=kind, job_id=str(job.job_id))
    return jobs


def run_local(scale="cpu", keys=None, seeds=None, out_dir=None, folder=None, checkpoint_dir=None, parallel=1,
              max_jobs=None, time_limit="24h", poll_s=2.0, say=print, **job_kwargs) -> dict:
    """The CPU background sweep: keep `parallel` jobs of the queue running on this machine through submitit's
    local executor, reading the queue again after each ends, until it is empty (or `max_jobs` were sent). A run
    whose job failed is not sent again in this sweep. Returns {"done": [...], "failed": [...]} (run names)."""
    ex = executor("local", folder, time_limit=time_limit)
    running, sent, report, tried = [], 0, {"done": [], "failed": []}, set()
    while True:
        for job, names in [(j, n) for j, n in running if j.done()]:
            running.remove((job, names))
            try:
                job.result()
                report["done"] += names
            except Exception as e:  # noqa: BLE001 - the ledger has it; the sweep goes on with the others
                report["failed"] += names
                say(f"sweep: job {job.job_id} ({', '.join(names)}) failed: {type(e).__name__}: {str(e)[-300:]}")
        free = parallel - len(running)
        if free > 0 and (max_jobs is None or sent < max_jobs):
            todo = [r for r in queue(scale, keys, seeds, out_dir, folder, checkpoint_dir) if r not in tried]
            todo = todo[:free if max_jobs is None else min(free, max_jobs - sent)]
            if todo:
                tried.update(todo)
                for job in submit(ex, todo, out_dir, folder, checkpoint_dir, **job_kwargs):
                    names = [results.run_name(c) for c in _job_cfgs(job)]
                    say(f"sweep: job {job.job_id}: {', '.join(names)}")
                    running.append((job, names))
                    sent += 1
                continue
        if not running:
            return report
        time.sleep(poll_s)


def _job_cfgs(job) -> list[dict]:
    """The configs a submitted job trains (read back from its pickled submission)."""
    return job.submission().function.cfgs


# ----------------------------------------------------------------------------------------------
# where it stands

def status(scale="cpu", keys=None, seeds=None, results_dir=None, folder=None, checkpoint_dir=None) -> dict:
    """Per claim, each run it needs with its state: recorded, running / queued / failed (with the job id), started
    (a checkpoint at some step, no job) or missing; and ``left``, the configs not recorded."""
    book = ledger(folder)
    steps = {results.training_hash(recipes.config(e, v, scale, s)): st for e, v, s, st in in_flight(checkpoint_dir)}
    per_claim, left, seen = [], [], set()
    for c in claims_at(scale, keys):
        rows = []
        for r in runs_needed([c], seeds, results_dir):
            cfg, h = config_of(r), results.training_hash(config_of(r))
            e = book.get(h, {})
            if results.find_result(cfg, results_dir) is not None:
                state = "recorded"
            else:
                state = e.get("state") if e.get("state") in ("running", "queued", "failed") else \
                    ("started" if h in steps else "missing")
                if h not in seen:
                    seen.add(h)
                    left.append(cfg)
            rows.append({"run": r, "state": state, "job_id": e.get("job_id") if state != "recorded" else None,
                         "step": steps.get(h), "error": e.get("error") if state == "failed" else None})
        per_claim.append({"claim": c.key, "source": c.source, "runs": rows})
    return {"scale": scale, "claims": per_claim, "left": left}


def remaining_hours(cfgs, scale="cpu", results_dir=None, gpu_dir=None) -> str:
    """What the configs `cfgs` will take, in words: at the CPU scale the CPU core-hours at the recorded pace of the
    same network (``results.pace``); at the full recipe the GPU-hours at the recorded pace of each GPU kind (wall
    time of runs trained alone, one GPU each), and at the pace the lent H200's benchmark measured (run_times)."""
    done = results.load_results(results_dir)
    if scale == "cpu":
        h, untimed = results.pace(cfgs, done)
        return f"about {h:.1f} CPU core-hours at the recorded pace" + \
            (f", plus {untimed} runs of a network not timed yet" if untimed else "")
    kinds = {}
    for r in done:
        gpu = (r.get("hardware") or {}).get("gpu")
        if gpu and r["config"].get("scale") == "full" and not ("fused" in r or "stacked" in r):
            kinds.setdefault(gpu, []).append({**r, "hardware": {**r["hardware"], "torch_threads": 1}})  # GPU-s
    parts = []
    for gpu, rs in sorted(kinds.items()):
        h, untimed = results.pace(cfgs, rs)
        parts.append(f"{h:.1f} GPU-hours on {gpu} at its recorded pace" +
                     (f" (+ {untimed} runs of a network it has not trained)" if untimed else ""))
    from .run_times import _measured_net, h200_measured
    bench = h200_measured(gpu_dir)
    if bench:
        known = [c for c in cfgs if _measured_net(c) in bench]
        h = sum(c["steps"] * c["batch_size"] / bench[_measured_net(c)][0] for c in known) / 3600
        day = min(w for _, w in bench.values())[:10]
        parts.append(f"{h:.1f} GPU-hours on an H200 at its benchmark's pace ({day}: one run alone, CUDA graph)"
                     + (f" + {len(cfgs) - len(known)} runs of a network it did not time" if len(known) < len(cfgs)
                        else ""))
    return "; ".join(parts) or f"{len(cfgs)} runs of networks no GPU has timed yet"


def status_text(st: dict, results_dir=None, width=6) -> str:
    """``status`` at a glance: a line per claim (how many runs recorded, running, queued, failed, started, missing),
    the runs under way or failed beneath it with their job ids, then what is left and what it costs."""
    lines = []
    for c in st["claims"]:
        rows = c["runs"]
        count = {s: sum(r["state"] == s for r in rows) for s in
                 ("recorded", "running", "queued", "failed", "started", "missing")}
        lines.append(f"{c['claim']} ({c['source']}): " + ", ".join(f"{n} {s}" for s, n in count.items() if n))
        for r in rows:
            if r["state"] in ("running", "queued", "failed", "started"):
                e, v, s, _ = r["run"]
                at = f" at step {r['step']}" if r["step"] is not None else ""
                job = f" (job {r['job_id']})" if r["job_id"] else ""
                err = f": {r['error'][:120]}" if r["error"] else ""
                lines.append(f"    {r['state']:<8} {e} {v} s{s}{job}{at}{err}")
    left = st["left"]
    lines.append(f"{len(left)} runs not recorded at the {st['scale']} scale" +
                 (f": {remaining_hours(left, st['scale'], results_dir)}" if left else ""))
    return "\n".join(lines)
