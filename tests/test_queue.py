"""The sweep as one queue through submitit (book/plan/queue.py, issue 34): jobs on this machine
train a tiny recipe end to end and one killed mid-way resumes exactly; a recorded run is never sent
again; the SLURM job array's sbatch parameters, checked without a cluster (submitit's own mocked
sbatch)."""
import json
import os
import signal
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("submitit")

from fake_runs import result  # noqa: E402
from idmap_book.plan import ledger, queue as q  # noqa: E402
from idmap_book.plan.queue_status import status, status_text  # noqa: E402
from idmap_lib.engine import recipes, results  # noqa: E402
from support import SHARED, checkpoint_step, tiny_mnist, untimed  # noqa: E402

T2 = "a_table2_activations"


def _wait(cond, timeout=1200, poll=0.05):
    t = time.time()
    while not cond():
        assert time.time() - t < timeout, "timed out"
        time.sleep(poll)


def test_two_local_jobs_train_end_to_end_one_killed_mid_way_resumes_bit_for_bit(tmp_path):
    """Two jobs of one tiny recipe through submitit's local executor, each into its own results
    folder: one runs through; the other gets submitit's preemption signal mid-way, is requeued by it
    (TrainJob.checkpoint) and resumes from its last checkpoint. Same weights, same history, same
    first steps, bit for bit."""
    cfg = tiny_mnist(steps=30, log=5, eval_every=15)
    kw = dict(data=SHARED, deterministic=True, checkpoint_every=5, checkpoint_minutes=None,
              progress=True)
    t0 = time.time()
    jobs = {}
    for name in ("a", "b"):
        ex = q.executor("local", tmp_path / f"q{name}", time_limit="10m")
        jobs[name], = q.submit(ex, [[cfg]], tmp_path / f"r{name}", tmp_path / f"q{name}",
                               tmp_path / f"ck{name}",
                               **kw)
    ck_b = tmp_path / "ckb" / f"{results.run_name(cfg)}.pt"
    _wait(lambda: checkpoint_step(ck_b) >= 10)
    killed_at = checkpoint_step(ck_b)
    entry, = ledger.ledger(tmp_path / "qb").values()  # the job wrote its pid when it started
    # what SLURM sends a job before preempting it (--signal=USR2@120)
    os.kill(entry["pid"], signal.SIGUSR2)
    paths = {n: j.result() for n, j in jobs.items()}
    took = time.time() - t0
    a, b = (json.loads(Path(paths[n][0]).read_text()) for n in ("a", "b"))
    print(f"two local jobs, one killed at step {killed_at} and requeued: {took:.1f} s")
    # b really was cut off and resubmitted
    assert b["job"]["requeues"] == 1 and a["job"]["requeues"] == 0
    assert (killed_at <= b["job"]["resumed_from_step"] < cfg["steps"]
            and a["job"]["resumed_from_step"] is None)
    # and the trainer did resume there (its own words in the job's log), not start afresh
    assert (f"resumed {ck_b} at step "
            f"{b['job']['resumed_from_step']}/{cfg['steps']}" in jobs["b"].stdout())
    assert "resumed" not in jobs["a"].stdout()
    assert a["status"] == b["status"] == "ok" and a["config_hash"] == b["config_hash"]
    assert untimed(a["history"]) == untimed(b["history"]) and a["first_steps"] == b["first_steps"]
    assert {k: v for k, v in a["final"].items() if k not in ("wall_s", "img_per_s")} == \
        {k: v for k, v in b["final"].items() if k not in ("wall_s", "img_per_s")}
    wa, wb = (torch.load(tmp_path / f"ck{n}" / ck_b.name, weights_only=True)["model"]
              for n in ("a", "b"))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    # provenance: the job beside the hardware, and the ledger says done
    assert (b["job"]["executor"] == "local" and b["job"]["job_id"] == str(jobs["b"].job_id)
            and "hardware" in b)
    entry, = ledger.ledger(tmp_path / "qb").values()
    assert entry["state"] == "done" and entry["job_id"] == str(jobs["b"].job_id)


def test_the_background_sweep_runs_the_queue_through_local_jobs_until_it_is_empty(tmp_path, monkeypatch, capsys):
    """sweep --executor local (what tools/sweep.sh loops over): the queue's runs as local jobs, each
    result printed for the script to commit; then nothing is left. (The queue here is one tiny run
    standing for a real one.)"""
    from idmap_lib.cli import main
    run, tiny = ("b_mnist", "gresnet-d10", 0, "full"), tiny_mnist(steps=6, log=3, eval_every=6)
    out, folder = tmp_path / "r", tmp_path / "q"
    monkeypatch.setattr(q, "config_of",
                        lambda r: tiny if r == run else recipes.config(r[0], r[1], r[3], r[2]))
    monkeypatch.setattr(q, "queue",
                        lambda *a, **k: [run] if results.find_result(tiny, out) is None else [])
    argv = ["sweep", "--executor", "local", "--out", str(out), "--folder", str(folder),
            "--checkpoint-dir",
            str(tmp_path / "ck"), "--data", SHARED]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    path = results.find_result(tiny, out)["path"]
    assert f"recorded: {path}" in printed and "sweep: 1 runs trained, 0 failed" in printed
    assert json.loads(Path(path).read_text())["job"]["executor"] == "local"
    assert main(argv) == 0 and "sweep: 0 runs trained, 0 failed" in capsys.readouterr().out


def test_a_worker_whose_next_run_another_worker_took_sends_the_one_after(tmp_path, monkeypatch):
    """Two workers start together: the first run in the queue is taken by the other, so this one
    trains the next rather than stop, saying every run is under way)."""
    taken, run = ("b_mnist", "gresnet-d10", 1, "full"), ("b_mnist", "gresnet-d10", 0, "full")
    tiny = {r: tiny_mnist(seed=r[2], steps=6, log=3, eval_every=6) for r in (taken, run)}
    out, folder = tmp_path / "r", tmp_path / "q"
    monkeypatch.setattr(q, "config_of", lambda r: tiny[r])
    monkeypatch.setattr(q, "queue", lambda *a, **k: [r for r in (taken, run)
                                                     if results.find_result(tiny[r], out) is None])
    assert ledger.claim(folder, tiny[taken], "local")  # the other worker (alive: this process) holds it
    report = q.run_local(out_dir=out, folder=folder, checkpoint_dir=tmp_path / "ck", max_jobs=1,
                         log=lambda s: None)
    assert (report["done"] == [results.run_name(tiny[run])]
            and results.find_result(tiny[taken], out) is None)


class NoSubmit:
    """An executor that must not be asked: a test of what is never sent."""
    def batch(self):
        raise AssertionError("a recorded run was submitted")

    submit = batch


def test_a_recorded_run_is_never_submitted_again_and_runs_under_way_wait(tmp_path):
    out, folder, ck = tmp_path / "r", tmp_path / "q", tmp_path / "ck"
    first = q.queue("full", out_dir=out, folder=folder, checkpoint_dir=ck)
    assert first == q.needed("full", out_dir=out)[:len(first)] and len(first) == len(set(first))
    # Table 1's original is Table 2's original-110 at the same recipe: recorded under one, skipped
    # under both windows through the warm-up: every claim's metric reads it
    losses = tuple(2.3 - i / 200 for i in range(200))
    r = result(T2, "original-110", 0, scale="full", losses=losses)
    # half an hour on one GPU
    r["final"]["wall_s"], r["hardware"] = 1800.0, {"gpu": "NVIDIA H200", "torch_threads": 8}
    results.save_result(r, out)
    left = [recipes.config(T2, "full_preact-110", "full", 1),
            recipes.config(T2, "bn_after_add-110", "full", 2),
            recipes.config("b_resnet32", "gated", "full", 0)]
    from idmap_book.plan.queue_status import remaining_hours
    assert remaining_hours(left, "full", out, gpu_dir=tmp_path) == \
        "1.0 GPU-hours on NVIDIA H200 at its recorded pace (+ 1 runs of a network it has not trained)"
    again = q.queue("full", out_dir=out, folder=folder, checkpoint_dir=ck)
    assert (T2, "original-110", 0, "full") in first and (T2, "original-110", 0, "full") not in again
    assert ("a_table1_shortcuts", "original", 0, "full") not in again
    assert q.submit(NoSubmit(), [[(T2, "original-110", 0, "full")], [("a_table1_shortcuts",
                                                                      "original", 0, "full")]],
                    out, folder, ck) == []
    # a job that finds its run recorded meanwhile trains nothing
    assert q.TrainJob([recipes.config(T2, "original-110", "full", 0)], out, ck, folder)() == []
    # a run under way (its job queued or running) waits; a failed one is listed again; a started one
    # goes first
    run, other, started = again[0], again[1], again[5]
    ledger.mark(folder, q.config_of(run), "running", executor="slurm", job_id="7_0")
    ledger.mark(folder, q.config_of(other), "failed", executor="slurm", job_id="7_1",
           error="CUDA out of memory")
    ck.mkdir()
    torch.save({"config": q.config_of(started), "step": 400}, ck / "x.pt")
    now = q.queue("full", out_dir=out, folder=folder, checkpoint_dir=ck)
    assert run not in now and other in now and now[0] == started
    st = status("full", out_dir=out, folder=folder, checkpoint_dir=ck)
    states = {r["run"]: (r["state"], r["job_id"]) for c in st["claims"] for r in c["runs"]}
    assert states[(T2, "original-110", 0, "full")] == ("recorded", None)
    assert (states[run] == ("running", "7_0") and states[other] == ("failed", "7_1")
            and states[started][0] == "started")
    text = status_text(st, out)
    assert "running  " in text and "(job 7_0)" in text and "CUDA out of memory" in text
    assert f"{len(st['left'])} runs not recorded at the full scale: " in text.splitlines()[-1]


def test_jobs_fuse_a_variants_seeds_at_one_step_pair_a_seed_and_two_submitters_never_send_one_run_twice(tmp_path):
    runs = [(T2, "original-110", s, "full") for s in (0, 1, 2)] + [(T2, "full_preact-110", 0,
                                                                    "full")]
    assert q.groups(runs) == [[r] for r in runs]
    assert q.groups(runs, fuse=3) == [runs[:3], runs[3:]]
    assert q.groups(runs, fuse=2) == [runs[:2], runs[2:3], runs[3:]]
    # a fused group resumes together: a started seed is not fused with fresh ones
    steps = {results.training_hash(q.config_of(runs[1])): 800}
    assert q.groups(runs, fuse=3, steps=steps) == [[runs[0], runs[2]], [runs[1]], runs[3:]]
    pr = [(T2, v, s, "full") for v, s in (("original-110", 0), ("full_preact-110", 0),
                                          ("bn_after_add-110", 0),
                                          ("relu_preact-110", 1))]
    # two runs of one experiment and seed
    assert q.groups(pr, pairs=True) == [pr[:2], pr[2:3], pr[3:]]
    cfg = q.config_of(runs[0])
    # this submitter holds it
    assert ledger.claim(tmp_path, cfg, "local") and not ledger.claim(tmp_path, cfg, "local")
    entry, = ledger.ledger(tmp_path).values()
    assert entry["state"] == "queued" and entry["job_id"] is None
    ledger.mark(tmp_path, cfg, "queued", executor="local", job_id="1", pid=2 ** 22 + 12345,
           hostname=entry["hostname"])
    # its job's process is gone
    assert ledger.ledger(tmp_path)[entry["training_hash"]]["state"] == "failed"
    assert ledger.claim(tmp_path, cfg, "local")  # so it may be sent again
    # one training, whatever its label: Table 1's original is the ResNet-110 just taken
    assert not ledger.claim(tmp_path, q.config_of(("a_table1_shortcuts", "original", 0, "full")),
                       "local")


def test_the_slurm_path_submits_one_job_array_with_the_asked_parameters(tmp_path, capsys):
    """Without a cluster: submitit's own mocked sbatch (its test helper) takes the job array; the
    sbatch script it was handed has the partition, one GPU per job, the time limit, the array and
    the signal before the limit."""
    from submitit.core.test_core import MockedSubprocess
    from submitit.slurm import slurm
    from idmap_lib.cli import main

    out, folder, ck = tmp_path / "r", tmp_path / "q", tmp_path / "ck"
    try:
        with MockedSubprocess(known_cmds=["srun"]).context():
            assert main(["sweep", "--scale", "full", "--executor", "slurm", "--partition",
                         "gpu-h100",
                         "--gpus-per-job", "1", "--time", "4h", "--max-jobs", "3", "--slurm",
                         "account=idmap",
                         "--out", str(out), "--folder", str(folder), "--checkpoint-dir",
                         str(ck)]) == 0
            printed = capsys.readouterr().out
            with pytest.raises(ValueError, match="--partition"):
                q.executor("slurm", folder)
    finally:
        slurm.SlurmJob.watcher.clear()
    assert "submitted 3 jobs (array 12)" in printed
    script, = folder.glob("jobs/*/*_submission.sh")
    lines = set(script.read_text().splitlines())
    assert {"#SBATCH --partition=gpu-h100", "#SBATCH --gpus-per-node=1", "#SBATCH --time=240",
            "#SBATCH --array=0-2%3", "#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=4",
            "#SBATCH --signal=USR2@120", "#SBATCH --account=idmap",
            f"#SBATCH --mem={q.MEM_GB}GB"} <= lines
    first3 = q.needed("full", out_dir=out)[:3]
    book = ledger.ledger(folder, ask_slurm=False)
    assert sorted(e["job_id"] for e in book.values()) == ["12_0", "12_1", "12_2"]
    assert sorted(tuple(e["run"]) for e in book.values()) == sorted(first3)
    assert all(e["state"] == "queued" for e in book.values())
    # each array task is a checkpointable TrainJob of its run: preempted, it resubmits itself (and
    # resumes)
    pkl, = folder.glob("jobs/12_0/*_submitted.pkl")
    import submitit
    job = submitit.helpers.DelayedSubmission.load(pkl).function
    assert isinstance(job, q.TrainJob) and [c["variant"] for c in job.cfgs] == [first3[0][1]]
    assert job.checkpoint_dir == str(ck) and str(job.out_dir) == str(out)
    again = job.checkpoint()
    assert again.function is job and job.requeues == 1
    # what is under way is not sent twice
    assert not set(first3) & set(q.queue("full", out_dir=out, folder=folder, checkpoint_dir=ck))


def test_time_limits_read_as_minutes_and_bad_ones_say_how():
    assert [q.minutes(t) for t in ("4h", "90m", "1h30m", "2:30:00", "45")] == [240, 90, 90, 150, 45]
    with pytest.raises(ValueError, match="4h, 90m"):
        q.minutes("four hours")
    with pytest.raises(ValueError, match="unknown scale"):
        q.claims_at("cpu_step_warmup")


def test_a_refused_submission_records_nothing_and_a_cpu_job_asks_for_one_core(tmp_path, monkeypatch):
    """Issue 43.5: sbatch refused the README's command on a node without GPU GRES, and every run
    then read 'failed: the job ended without recording its run' though no job existed; a CPU job
    asked for four cores."""
    import submitit

    class Refusing:
        def batch(self):
            raise RuntimeError("sbatch: error: Invalid generic resource (gres) specification")

    folder, out = tmp_path / "q", tmp_path / "r"
    first = q.needed("full", out_dir=out)[:2]
    with pytest.raises(RuntimeError,
                       match="refused the submission.*nothing was queued.*--gpus-per-job 0"):
        q.submit(Refusing(), [[r] for r in first], out, folder)
    assert ledger.ledger(folder, ask_slurm=False) == {}
    seen = {}
    monkeypatch.setattr(submitit.AutoExecutor, "__init__", lambda self, folder, cluster=None: None)
    monkeypatch.setattr(submitit.AutoExecutor, "update_parameters",
                        lambda self, **p: seen.update(p))
    q.executor("slurm", folder, partition="cpu", gpus_per_job=0)
    assert seen["cpus_per_task"] == 1 and seen["gpus_per_node"] == 0 and seen["mem_gb"] == q.MEM_GB


def test_status_reads_slurm_without_submitit_through_squeue(tmp_path, monkeypatch):
    """Issue 43.5: without submitit, --status crashed in _alive; a cancelled job (gone from squeue)
    now reads as ended, one squeue still lists as alive."""
    import builtins
    import shutil
    import subprocess

    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__",
                        lambda n, *a, **k: (_ for _ in ()).throw(ImportError(n))
                        if n == "submitit" else real_import(n, *a, **k))
    monkeypatch.setattr(shutil, "which", lambda c: f"/usr/bin/{c}")
    listed = {"7": "7\n", "8": ""}
    monkeypatch.setattr(subprocess, "run",
                        lambda cmd, **k: subprocess.CompletedProcess(cmd, 0, listed[cmd[3]], ""))
    entry = {"executor": "slurm", "job_id": "7_0"}
    assert ledger._alive(entry, tmp_path, ask_slurm=True)
    assert not ledger._alive({**entry, "job_id": "8_1"}, tmp_path, ask_slurm=True)


def test_the_full_queue_asks_for_the_seeds_that_resolve_the_papers_gap_after_every_claims_first_three():
    """Issue 40.6, corrected by issue 57.6: with Paper A's own spread (Table 4, ± 0.14) Table 2's
    0.24-point gap needs 7 seeds a side for 80 % power by the rule's Welch test at 5 % (3 find it
    about 28 % of the time), 10 at the Holm level of its claim's 4 parts; the queue asks for the
    Holm level's once every claim has its first 3."""
    from idmap_book.evidence import claims, power

    assert power.seeds_for(0.24, 0.14) == 7 and 0.25 < power.power(3, 0.24, 0.14) < 0.35
    assert power.claim_seeds(claims.CLAIMS_BY_KEY["t2_full_preact_best"]) == 10
    # no paper gap: ours
    assert power.claim_seeds(claims.CLAIMS_BY_KEY["lr_jump_preact_tolerates"]) is None
    runs = q.needed("full")
    t2 = [r for r in runs if r[0] == "a_table2_activations" and r[1] == "full_preact-110"]
    assert sorted(r[2] for r in t2) == list(range(10))
    first_more = next(i for i, r in enumerate(runs) if r[2] >= 3)
    assert all(r[2] < 3 for r in runs[:first_more]) and all(r[2] >= 3 for r in runs[first_more:])
