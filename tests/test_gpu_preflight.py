"""The tree that travels to a lent GPU, and the files that come back, fit the device tool's limits
(issue 20)."""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_preflight", ROOT / "tools" / "gpu_preflight.py")
pf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pf)

needs_git = pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None,
                               reason="needs git")


@needs_git
def test_the_tracked_tree_stays_under_its_target():
    """40 MiB tracked leaves room, under the 64 MiB that may travel, for the CIFAR-10 tarball (19
    MiB)."""
    size = pf.tracked_bytes(ROOT)
    assert (size <= pf.TRACKED_TARGET), (f"tracked files weigh {size / pf.MiB:.1f} MiB: move "
                                         f"finished runs' "
                                       f"checkpoints and unread weights out of git")


def _repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "a.txt").write_text("x")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


@needs_git
def test_untracked_and_carried_bytes_count_and_ignored_ones_do_not(tmp_path):
    repo = _repo(tmp_path)
    for name, size in (("big.bin", 30 * pf.MiB), ("ignored/huge.bin", 100 * pf.MiB),
                       ("ignored/c.tgz", 40 * pf.MiB)):
        (repo / name).parent.mkdir(exist_ok=True)
        with open(repo / name, "wb") as f:  # sparse: the size without the disk
            f.truncate(size)
    t = pf.travelling_bytes(repo, carry=["ignored/c.tgz"])  # (carry names ignored paths)
    assert (t["untracked"], t["carried"]) == (30 * pf.MiB, 40 * pf.MiB)
    assert pf.problems(repo) == []
    assert "would travel" in pf.problems(repo, carry=["ignored/c.tgz"])[0]
    (repo / "big.bin").unlink()
    assert pf.problems(repo, carry=["ignored/c.tgz"]) == []


@needs_git
def test_too_many_or_too_large_files_back_are_caught_before_the_device_is_asked(tmp_path):
    repo = _repo(tmp_path)
    est = pf.checkpoint_bytes("a_table2_activations", "original-110")
    assert 13 * pf.MiB < est < 15 * pf.MiB  # ResNet-110: measured 14.0 MiB at step 29,000
    # 3 + 5 files
    assert pf.problems(repo, runs=[("a_table2_activations", "original-110")] * 5) == []
    many = pf.problems(repo, runs=[("a_table2_activations", "original-110")] * 6)
    assert any("9 files would come back" in p for p in many)
    big = pf.problems(repo, runs=[("a_table3_preact", "c10-1001-full_preact")])
    assert any("cannot come back" in p for p in big)  # ResNet-1001: ~80 MiB of checkpoint


spec_q = importlib.util.spec_from_file_location("gpu_queue", ROOT / "tools" / "gpu_queue.py")
gq = importlib.util.module_from_spec(spec_q)
spec_q.loader.exec_module(gq)


def test_the_queue_resumes_runs_under_way_first_then_fuses_a_variants_seeds_or_pairs_a_seed_of_every_row(tmp_path):
    """The library's queue at the full recipe (book/plan/queue.py: SWEEP_ORDER's claims first to
    last), cut into the window's processes."""
    import torch
    from fake_runs import result
    from idmap_lib.engine import recipes, results
    out, ck = tmp_path / "results", tmp_path / "ck"
    ck.mkdir()
    T2, B32 = "a_table2_activations", "b_resnet32"
    assert gq.next_runs(2, out, ck) == [(B32, ["gated", "original"], [0]),
                                        (B32, ["gated", "original"], [1])]
    assert gq.next_runs(2, out, ck, fuse=3) == [(B32, ["gated"], [0, 1, 2]),
                                                (B32, ["original"], [0, 1, 2])]
    flying = recipes.config("a_table1_shortcuts", "exclusive_gating-b-6", "full", 1)
    torch.save({"config": flying, "step": 400}, ck / "x.pt")
    # Table 1's original is Table 2's original-110: one recorded result settles both
    assert (T2, ["original-110"], [0, 1, 2]) in gq.next_runs(99, out, ck, fuse=3)
    results.save_result(result("a_table1_shortcuts", "original", 0, scale="full",
                               losses=tuple(2.3 - i / 200 for i in range(200))), out)
    assert gq.next_runs(2, out, ck) == [("a_table1_shortcuts", ["exclusive_gating-b-6"], [1]),
                                        (B32, ["gated", "original"], [0])]
    assert gq.next_runs(2, out, ck, fuse=3) == [("a_table1_shortcuts", ["exclusive_gating-b-6"],
                                                 [1]),
                                                (B32, ["gated"], [0, 1, 2])]
    assert (T2, ["original-110"], [1, 2, 3]) in gq.next_runs(99, out, ck, fuse=3)  # seed 0 recorded
    # a fused run cut off by the deadline: its seeds at one step resume together, fused
    for s in (0, 2):
        torch.save({"config": recipes.config(T2, "full_preact-110", "full", s), "step": 800},
                   ck / f"f{s}.pt")
    assert gq.next_runs(2, out, ck, fuse=3) == [(T2, ["full_preact-110"], [0, 2]),
                                                ("a_table1_shortcuts", ["exclusive_gating-b-6"],
                                                 [1])]
    # its fresh seeds, later
    assert (T2, ["full_preact-110"], [1, 3, 4]) in gq.next_runs(99, out, ck, fuse=3)


@needs_git
@pytest.mark.skipif(not (ROOT.parent / "shared" / "data" / "cifar10-jpeg.tar.gz").exists(),
                    reason="needs CIFAR-10")
def test_the_window_script_dry_runs_on_the_cpu_and_brings_back_what_the_preflight_counted(tmp_path):
    """The prepared GPU window, on the CPU with tiny steps: the queue's first pair trains, and what
    comes back fits the device tool's limits, each checkpoint within 3 % of the preflight's estimate
    (issue 20)."""
    import os
    import sys
    env = {**os.environ, "GPU_SESSION_ALLOW_CPU": "1", "OUT": str(tmp_path / "out"),
           "PY": sys.executable}
    # a budget that only catches a hang: on a loaded machine a 400 s budget skipped the training
    # step (issue 41.6)
    p = subprocess.run(["bash", "tools/gpu_session.sh", str(ROOT.parent / "shared" / "data"),
                        "3000", "1"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, p.stdout + p.stderr
    files = {f.name: f.stat().st_size for f in (tmp_path / "out").iterdir()}
    assert len(files) <= pf.BACK_FILES and max(files.values()) <= pf.BACK_FILE_LIMIT, files
    # the CPU's benchmark finds fusion slower: the first pair
    (exp, variants, seeds), = gq.next_runs(1)
    for v in variants:
        size = files[f"checkpoint-{exp}__{v}__full__s{seeds[0]}.pt"]
        assert abs(size - pf.checkpoint_bytes(exp, v)) < 0.03 * size, (v, size)
    assert {"log.txt", "bench.json", "results.tgz"} <= set(files)
    assert "fuse 1 seeds per group" in (tmp_path / "out" / "log.txt").read_text()
    assert "start train_" in (tmp_path / "out" / "log.txt").read_text()
