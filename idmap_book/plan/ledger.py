"""The queue's ledger: one small JSON file per run under ``<folder>/runs/`` (state queued, running,
done or failed, the job id), written by the submitter (each run taken under a lock: several
submitters never send one run twice, ``claim``) and by the job itself (``mark``); ``ledger`` reads
it, and asks SLURM, where ``sacct`` is at hand, about jobs that may have ended unseen."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from idmap_lib.engine import paths, results

UNDER_WAY = ("queued", "running")
SLURM_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
               "BOOT_FAIL", "DEADLINE"}


def _entry_path(folder, cfg) -> Path:
    """The run's ledger file, named by what it trains (one file whatever labels the run is asked for
    under)."""
    return Path(folder or paths.QUEUE) / "runs" / f"{results.training_hash(cfg)[:20]}.json"


def mark(folder, cfg, state: str, **job) -> None:
    """Record a run's state (queued, running, done, failed) and its job in the ledger (atomically).
    A "queued" mark never overwrites what the job itself wrote since (a local job may start before
    its submitter marks it)."""
    path = _entry_path(folder, cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    if state == "queued" and path.is_file():
        old = json.loads(path.read_text())
        if old.get("job_id") == job.get("job_id") and old["state"] != "queued":
            return
    entry = {"run": [cfg["experiment"], cfg["variant"], cfg["seed"], cfg["scale"]], "state": state,
             "training_hash": results.training_hash(cfg),
             "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             **job}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entry, indent=1) + "\n")
    os.replace(tmp, path)


def ledger(folder=None, ask_slurm=True) -> dict:
    """{training hash: the run's latest ledger entry}. A local job whose process is gone, or a SLURM
    job that sacct says has ended, while its entry still says queued or running, reads as failed (it
    was killed unseen)."""
    out = {}
    for p in sorted((Path(folder or paths.QUEUE) / "runs").glob("*.json")):
        e = json.loads(p.read_text())
        if e["state"] in UNDER_WAY and not _alive(e, Path(folder or paths.QUEUE), ask_slurm):
            e.update(state="failed",
                     error=e.get("error") or "the job ended without recording its run")
        out[e["training_hash"]] = e
    return out


def claim(folder, cfg, executor_kind) -> bool:
    """Take a run for this submitter, atomically (one submitter at a time holds the run's lock file
    while it checks the ledger and marks the run queued, with its own pid until the job has an id):
    False if it is under way."""
    path = _entry_path(folder, cfg)
    lock = path.with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    if lock.exists() and time.time() - lock.stat().st_mtime > 60:
        lock.unlink(missing_ok=True)  # left by a submitter that died holding it
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    try:
        if ledger(folder).get(results.training_hash(cfg), {}).get("state") in UNDER_WAY:
            return False
        mark(folder, cfg, "queued", executor=executor_kind, job_id=None, pid=os.getpid(),
             hostname=socket.gethostname())
        return True
    finally:
        lock.unlink(missing_ok=True)


def release(folder, cfg) -> None:
    """Forget a run this submitter claimed but could not send (``claim`` took it only if it was not
    under way)."""
    _entry_path(folder, cfg).unlink(missing_ok=True)


def _alive(e, folder, ask_slurm) -> bool:
    if e.get("pid") and e.get("hostname") == socket.gethostname() and (e.get("executor") == "local"
                                                                        or not e.get("job_id")):
        try:
            os.kill(int(e["pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive (another user's)
            pass
    if e.get("executor") == "slurm" and ask_slurm and e.get("job_id"):
        if shutil.which("sacct"):
            try:
                import submitit
                return submitit.SlurmJob(folder, e["job_id"]).state.split()[0] not in SLURM_ENDED
            except ImportError:  # --status needs no submitit: squeue below still answers
                pass
        # (sacct off, or no submitit) a job squeue no longer lists has ended
        if shutil.which("squeue"):
            got = subprocess.run(["squeue", "-h", "-j", str(e["job_id"]).split("_")[0], "-o", "%i"],
                                 capture_output=True, text=True, timeout=60)
            if got.returncode == 0:
                return bool(got.stdout.strip())
    return True
