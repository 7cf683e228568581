"""One process at a time trains a run: two notebooks, two tabs or a notebook and a command that
train the same run into the same checkpoint folder would each write its checkpoint over the other's,
at half the speed.

``hold(paths)`` takes an exclusive lock on ``<checkpoint>.lock`` beside each run's checkpoint
(``fcntl.flock``: the operating system lets it go when the process ends, however it ends, so a
crashed kernel never leaves a stale lock); a run whose lock another process holds is refused with
one line naming that process and what to do. Where the platform has no ``fcntl`` (Windows) nothing
is locked.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


class RunInUse(RuntimeError):
    """Another process is training this run now."""


@contextlib.contextmanager
def hold(checkpoints):
    """Hold the lock of every checkpoint path in `checkpoints` (None entries: runs without a
    checkpoint folder, not locked) while the block runs; RunInUse if another process holds one."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: train unlocked
        yield
        return
    held = []
    try:
        for ck in checkpoints:
            if ck is not None:
                held.append(_take(Path(str(ck) + ".lock"), Path(ck).stem, fcntl))
        yield
    finally:
        for f, lock in held:
            # while still held: a process that opened it before finds it gone (_take)
            lock.unlink(missing_ok=True)
            f.close()                     # closing lets the lock go


def _take(lock: Path, run: str, fcntl):
    """(open file, path) of `lock`, locked by this process; RunInUse if another holds it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        f = open(lock, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            who = f.read().strip() or "another process"
            f.close()
            raise RunInUse(f"{run} is being trained now by {who} (the same runs folder, in another "
                           f"notebook, tab or command): wait for it to finish, or stop it, then "
                           f"run this again") from None
        try:
            same = os.fstat(f.fileno()).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        # (else the holder let it go and removed it between our open and our lock: take the new one)
        if same:
            f.seek(0)
            f.truncate()
            f.write(f"process {os.getpid()}")
            f.flush()
            return f, lock
        f.close()
