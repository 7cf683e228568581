"""The cluster path on a real SLURM (Debian's slurm-wlm: slurmctld and slurmd on this machine, one
node, no GPU), started by the test: the queue submits a tiny run as a job array; one job runs
through, the other is requeued by `scontrol requeue` mid-way and resumes from its checkpoint; both
results are bit for bit the same, carry their job ids, and the ledger says done. Skipped, with the
reason, where SLURM cannot run here (not root, slurm-wlm or munge missing: `make test` installs
them, like chromium and bubblewrap)."""
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("submitit")

from idmap_book.plan import ledger, queue as q  # noqa: E402
from idmap_lib.engine import results  # noqa: E402
from support import SHARED, checkpoint_step, tiny_mnist, untimed  # noqa: E402

pytestmark = pytest.mark.slow
DAEMONS = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _munge():
    """munged running (its socket), started as the munge user where it is not."""
    if Path("/run/munge/munge.socket.2").exists():
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    for d in ("/run/munge", "/var/log/munge", "/var/lib/munge", "/etc/munge"):
        shutil.chown(d, "munge", "munge") if Path(d).exists() else None
    subprocess.run(["runuser", "-u", "munge", "--", DAEMONS[2], "--force"], check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    why = ("not root" if os.geteuid() != 0 else
           next((f"{d} missing (apt-get install slurm-wlm)" for d in DAEMONS
                 if not Path(d).exists()), None))
    if why:
        pytest.skip(f"no SLURM here: {why}")
    d = tmp_path_factory.mktemp("slurm")
    host = socket.gethostname().split(".")[0]
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 - 1024
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=idmap-test", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}", "AuthType=auth/munge",
        f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/ctld.pid",
        f"SlurmdPidFile={d}/d.pid", f"SlurmctldLogFile={d}/ctld.log", f"SlurmdLogFile={d}/d.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "MpiDefault=none", "ReturnToService=2",
        "KillWait=5",
        # a requeued job waits cred_expire before it starts again (slurm.conf(5); 120 s by default)
        "AuthInfo=cred_expire=10",
        f"NodeName={host} CPUs={os.cpu_count()} RealMemory={mem} State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    (d / "state").mkdir()
    (d / "spool").mkdir()
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        _munge()
        for daemon in DAEMONS[:2]:
            subprocess.run([daemon, "-f", str(conf)], env=env, check=True, capture_output=True)
        t = time.time()
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], env=env,
                                           capture_output=True,
                                           text=True).stdout:
            if time.time() - t > 60:
                pytest.skip(f"SLURM did not come up: {(d / 'ctld.log').read_text()[-500:]}")
            time.sleep(1)
    except (subprocess.CalledProcessError, OSError) as e:
        pytest.skip(f"SLURM could not start here: {e}")
    yield env
    subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)


def test_a_slurm_job_requeued_mid_way_resumes_bit_for_bit(slurm, tmp_path, monkeypatch):
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    # ~10 s of training: time to requeue it mid-way
    cfg = tiny_mnist(steps=1500, log=50, eval_every=750)
    kw = dict(data=SHARED, deterministic=True, checkpoint_every=50, checkpoint_minutes=None,
              progress=True)
    jobs = {}
    for name in ("a", "b"):
        ex = q.executor("slurm", tmp_path / f"q{name}", "debug", gpus_per_job=0, time_limit="15m",
                        mem_gb=1)
        jobs[name], = q.submit(ex, [[cfg]], tmp_path / f"r{name}", tmp_path / f"q{name}",
                               tmp_path / f"ck{name}",
                               **kw)
    ck_b = tmp_path / "ckb" / f"{results.run_name(cfg)}.pt"
    t = time.time()
    while checkpoint_step(ck_b) < 50:
        assert time.time() - t < 600, f"job b never checkpointed: {jobs['b'].stderr()}"
        time.sleep(0.05)
    assert checkpoint_step(ck_b) < cfg["steps"]  # still running: requeued mid-way
    subprocess.run(["scontrol", "requeue", str(jobs["b"].job_id)], check=True, capture_output=True)
    paths = {n: j.result() for n, j in jobs.items()}
    a, b = (json.loads(Path(paths[n][0]).read_text()) for n in ("a", "b"))
    assert a["job"]["executor"] == b["job"]["executor"] == "slurm"
    assert str(jobs["b"].job_id).split("_")[0] in b["job"]["job_id"]
    assert (b["job"]["resumed_from_step"] is not None
            and 50 <= b["job"]["resumed_from_step"] < cfg["steps"])
    assert a["job"]["resumed_from_step"] is None
    assert a["status"] == b["status"] == "ok" and a["first_steps"] == b["first_steps"]
    assert untimed(a["history"]) == untimed(b["history"])
    wa, wb = (torch.load(tmp_path / f"ck{n}" / ck_b.name, weights_only=True)["model"]
              for n in ("a", "b"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    for name in ("a", "b"):
        entry, = ledger.ledger(tmp_path / f"q{name}").values()
        assert entry["state"] == "done" and entry["executor"] == "slurm"
