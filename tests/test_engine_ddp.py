"""DDP with two CPU processes (gloo) through torchrun and the command line; only rank 0 writes."""
import json
import os
import signal
import socket
import subprocess
import sys

from support import SHARED



def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(tmp_path, *extra):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_addr=127.0.0.1",
           f"--master_port={_free_port()}",
           "-m", "idmap_lib", "train", "--experiment", "b_mnist", "--variant", "resnet-d2",
           "--scale", "cpu",
           "--data", SHARED, "--out", str(tmp_path / "results"), "--checkpoint-dir",
           str(tmp_path / "ck"),
           "--no-progress", *extra]
    # CPU processes on any machine: with a GPU visible, two processes on a one-GPU box would fall
    # back to gloo anyway, but this test is about gloo on the CPU, so hide the GPUs
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=1200)  # (only a hang: a loaded machine is slow)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # torchrun and both workers
        out, _ = p.communicate()
        raise AssertionError("torchrun timed out:\n" + out[-3000:])
    assert p.returncode == 0, out[-3000:]
    return out


def test_ddp_two_cpu_processes_gloo_stop_and_resume(tmp_path):
    _torchrun(tmp_path, "--max-steps", "100")  # stop (checkpoint by rank 0), then resume to the end
    assert not (tmp_path / "results").exists() and len(list((tmp_path / "ck").glob("*.pt"))) == 1
    _torchrun(tmp_path, "--resume")
    files = list((tmp_path / "results").glob("*.json"))
    assert len(files) == 1  # one result, written by rank 0 only
    r = json.loads(files[0].read_text())
    assert (r["status"] == "ok" and r["ddp"] == {"world_size": 2, "backend": "gloo",
                                                 "replicas_in_sync": True})
    assert r["hardware"]["world_size"] == 2
    tr = r["history"]["train"]
    assert tr[-1]["step"] == r["config"]["steps"] == 400
    assert tr[-1]["train_loss"] < tr[0]["train_loss"] and r["final"]["test_err"] < 0.2
