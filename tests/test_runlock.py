"""Issue 33.5: a run trains in one process at a time (engine/runlock.py). A second process training
the same run into the same checkpoint folder is refused in one line naming the first; a holder that
dies (a crashed or killed kernel) leaves no stale lock; other runs, and runs without a checkpoint
folder, are not held up."""
import subprocess
import sys
import time

import pytest

from idmap_lib.engine import runlock, trainer
from idmap_lib.engine.results import run_name
from support import tiny_mnist

HOLDER = ("import sys, time\nfrom idmap_lib.engine import runlock\n"
          "with runlock.hold([sys.argv[1]]):\n    print('held', flush=True)\n    time.sleep(60)\n")


def _holding(path):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_process_training_the_same_run_is_told_and_a_dead_holder_leaves_no_lock(mnist, tmp_path):
    cfg = tiny_mnist("resnet", 0, steps=6)
    other = tiny_mnist("resnet", 1, steps=6)
    first = _holding(tmp_path / f"{run_name(cfg)}.pt")
    try:
        with pytest.raises(runlock.RunInUse,
                           match=rf"being trained now by process {first.pid} .*wait for it"):
            trainer.train(cfg, data=mnist, checkpoint_dir=tmp_path, resume=True, write_result=False,
                          progress=False)
        assert trainer.train(other, data=mnist, checkpoint_dir=tmp_path, write_result=False,
                             progress=False)["status"] == "ok"  # another run: not held up
        # no folder
        assert trainer.train(cfg, data=mnist, write_result=False, progress=False)["status"] == "ok"
    finally:
        first.kill()  # the holder dies without letting go itself
        first.wait()
    r = trainer.train(cfg, data=mnist, checkpoint_dir=tmp_path, resume=True, write_result=False,
                      progress=False)
    # released by its end, and removed by ours
    assert r["status"] == "ok" and not list(tmp_path.glob("*.lock"))


def test_the_lock_is_let_go_when_training_ends_or_fails(tmp_path):
    ck = tmp_path / "run.pt"
    with pytest.raises(ValueError):
        with runlock.hold([ck]):
            raise ValueError("training failed")
    with runlock.hold([ck, None]):  # taken again at once: nothing left behind
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", HOLDER.replace("time.sleep(60)", "pass"),
                            str(ck)],
                           capture_output=True, text=True)
        assert p.returncode == 1 and "RunInUse" in p.stderr and time.perf_counter() - t0 < 120  # refused, not waited
