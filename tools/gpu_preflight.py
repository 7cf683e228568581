"""Before a lent GPU is asked: will this window's files get there, and will what it makes come back?

The device tool copies the working tree -- tracked files, untracked files git does not ignore, and
the paths passed as ``carry`` -- at most 64 MiB in all, and brings back at most 8 files of at most
16 MiB from $OUT. A window refused at the start still costs device time, so this counts both here
and exits 1, saying what to do, before the device is asked. What comes back from
``tools/gpu_session.sh``: log.txt, bench.json, results.tgz and one file per run it trains (the
checkpoint of a run still under way, the weights of a finished one).

    python tools/gpu_preflight.py [--carry PATH ...] [--groups N] [--fuse N]
        | [--runs EXPERIMENT:VARIANT ...]

(default: the new runs of the first N groups of tools/gpu_queue.py, as ``gpu_session.sh DATA BUDGET
N`` trains; --fuse: the most seeds its benchmark may fuse, FUSE_MAX in gpu_session.sh)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MiB = 2 ** 20
TRAVEL_LIMIT = 64 * MiB     # tracked + untracked-not-ignored + carried
# the tracked tree alone: room left for the CIFAR-10 tarball (19 MiB) and the data
TRACKED_TARGET = 40 * MiB
BACK_FILES, BACK_FILE_LIMIT = 8, 16 * MiB
FIXED_BACK = ("log.txt", "bench.json", "results.tgz")
IN_FLIGHT = Path("data/checkpoints")


def _git_files(repo: Path, *args) -> list[Path]:
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", *args], check=True,
                         capture_output=True).stdout
    return [repo / p for p in out.decode().split("\0") if p]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def tracked_bytes(repo: Path) -> int:
    return sum(_size(p) for p in _git_files(repo))


def travelling_bytes(repo: Path, carry=()) -> dict:
    """Bytes that go to the device: {"tracked", "untracked" (not ignored), "carried", "total"}."""
    sizes = {"tracked": tracked_bytes(repo),
             "untracked": sum(_size(p) for p in _git_files(repo, "--others", "--exclude-standard")),
             "carried": sum(_size(repo / c) for c in carry)}
    return {**sizes, "total": sum(sizes.values())}


def checkpoint_bytes(experiment: str, variant: str) -> int:
    """What a run's checkpoint will weigh: fp32 weights and buffers, one fp32 momentum per
    parameter, the data order (int32 per training image), ~0.1 MiB of history and RNG state, and 3 %
    of pickling (ResNet-110: estimated 13.9 MiB, measured 14.0 MiB with an int64 data order)."""
    from idmap_lib.engine import recipes
    from idmap_lib.engine.build import build_model

    cfg = recipes.config(experiment, variant, scale="full")
    net = build_model(cfg["model"])
    params = sum(p.numel() for p in net.parameters())
    buffers = sum(b.numel() for b in net.buffers())
    return int(1.03 * (4 * (2 * params + buffers) + 4 * 50_000 + MiB // 10))


def back_files(repo: Path, runs=()) -> list[tuple[str, int]]:
    """(name, bytes) of each file the window brings back: the fixed three, then one per in-flight
    checkpoint (its size now) and one per new run (estimated)."""
    files = [(n, MiB // 4) for n in FIXED_BACK]
    files += [(f"checkpoint-{p.name}", p.stat().st_size)
              for p in sorted((repo / IN_FLIGHT).glob("*.pt"))]
    files += [(f"checkpoint-{exp}__{var}", checkpoint_bytes(exp, var)) for exp, var in runs]
    return files


def problems(repo: Path, carry=(), runs=()) -> list[str]:
    """Every reason the window would be refused or lose its work, each with what to do; [] when it
    can go."""
    out, t = [], travelling_bytes(repo, carry)
    if t["tracked"] > TRACKED_TARGET:
        out.append(f"tracked files weigh {t['tracked'] / MiB:.1f} MiB (target "
                   f"{TRACKED_TARGET / MiB:.0f}): move finished runs' checkpoints and unread "
                   f"weights out of git")
    if t["total"] > TRAVEL_LIMIT:
        out.append(f"{t['total'] / MiB:.1f} MiB would travel (tracked {t['tracked'] / MiB:.1f}, "
                   f"untracked {t['untracked'] / MiB:.1f}, carried {t['carried'] / MiB:.1f}; limit "
                   f"{TRAVEL_LIMIT / MiB:.0f}): ignore or delete untracked files, carry less")
    back = back_files(repo, runs)
    if len(back) > BACK_FILES:
        out.append(f"{len(back)} files would come back (limit {BACK_FILES}): queue fewer runs in "
                   f"this window")
    out += [f"{name} would weigh {b / MiB:.1f} MiB (limit {BACK_FILE_LIMIT / MiB:.0f}): it cannot "
            f"come back; train it where its checkpoint need not travel" for name, b in back
            if b > BACK_FILE_LIMIT]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--carry", nargs="*", default=[], help="paths the device call will carry")
    ap.add_argument("--groups", type=int, default=2, help="groups of the queue the window trains")
    ap.add_argument("--fuse", type=int, default=1,
                    help="seeds fused per group (as gpu_session.sh's benchmark "
                         "picks; count with the largest it may pick)")
    ap.add_argument("--runs", nargs="*", default=None,
                    help="new runs the window trains, EXPERIMENT:VARIANT")
    a = ap.parse_args(argv)
    if a.runs is None:
        from gpu_queue import in_flight, next_runs
        flying = {(e, v, s) for e, v, s, _ in in_flight()}
        runs = [(e, v) for e, vs, seeds in next_runs(a.groups, fuse=a.fuse) for v in vs
                for s in seeds
                if (e, v, s) not in flying]
    else:
        runs = [tuple(r.split(":", 1)) for r in a.runs]
    t = travelling_bytes(a.repo, a.carry)
    print(f"travels: {t['total'] / MiB:.1f} MiB (tracked {t['tracked'] / MiB:.1f}, untracked "
          f"{t['untracked'] / MiB:.1f}, carried {t['carried'] / MiB:.1f}); comes back: "
          + ", ".join(f"{n} {b / MiB:.1f} MiB" for n, b in back_files(a.repo, runs)))
    bad = problems(a.repo, a.carry, runs)
    for p in bad:
        print("preflight: " + p, file=sys.stderr)
    print("preflight: " + ("stop: do not ask for the device yet" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
