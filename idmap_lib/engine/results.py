"""Results with provenance: one JSON file per finished run under ``data/results/``.

Each file holds the full config and the sha256 of its canonical JSON (the ``why`` notes left out),
the final metrics, the history, the status (``ok`` or ``fail``, with the step), hardware,
Python/torch/CUDA versions, the git commit, the seed, the dataset source and the date.
``find_result`` looks a result up by config hash, and failing that by its *training* hash: the
config without the labels that name where a run is shown (experiment, variant, scale), so one
training serves every table that names it (Paper A's Table 1 "original" and Table 2 "original-110"
are one ResNet-110) and is never trained twice (``trainer.run`` trains only when both lookups miss).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

from .paths import RESULTS as RESULTS_DIR

PACKAGE = Path(__file__).resolve().parents[1]  # idmap_lib/: the whole library, every layer


# a result's "first_steps": the training loss of each of its first steps (checks/spotcheck.py)
FIRST_STEPS = 8

def canonical(cfg: dict) -> str:
    return json.dumps({k: v for k, v in cfg.items() if k != "why"}, sort_keys=True,
                      separators=(",", ":"))


def config_hash(cfg: dict) -> str:
    """sha256 of the canonical JSON of the config (keys sorted, no whitespace, ``why`` notes
    excluded)."""
    return hashlib.sha256(canonical(cfg).encode()).hexdigest()


LABELS = ("experiment", "variant", "scale")  # where a run is shown, not what trains


def training_hash(cfg: dict) -> str:
    """sha256 of what trains: the config without its labels (LABELS) and ``why`` notes."""
    return config_hash({k: v for k, v in cfg.items() if k not in LABELS})


def run_name(cfg: dict) -> str:
    return f"{cfg['experiment']}__{cfg['variant']}__{cfg['scale']}__s{cfg['seed']}"


def library_sha256() -> str:
    """sha256 over the library's source files (names and contents): names the code that ran even
    where no git checkout is at hand (a copy of the tree on a remote GPU, an installed wheel)."""
    h = hashlib.sha256()
    for p in sorted(PACKAGE.rglob("*.py")):
        h.update(str(p.relative_to(PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _git_commit():
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE, capture_output=True,
                                text=True,
                                timeout=10).stdout.strip() or None
        # the library as run differs from that commit if any of its files are modified or untracked
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "."],
                               cwd=PACKAGE, capture_output=True, text=True,
                               timeout=10).stdout.split("\n")
        changed = sorted(line[3:] for line in dirty if line.strip() and line[3:].endswith(".py"))
        if commit:
            return {"commit": commit, "library_modified": bool(changed), "modified_files": changed}
    except (OSError, subprocess.SubprocessError):
        pass
    # no checkout where it ran (a copy of the tree on a lent GPU): the commit the copy was made
    # from, as the launcher states it; library_sha256 (in the provenance) lets anyone check the
    # claim against that commit
    stated = os.environ.get("IDMAP_SOURCE_COMMIT")
    return {"commit": stated, "library_modified": None,
            "commit_source": "IDMAP_SOURCE_COMMIT" if stated else None}


def _cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance(device, world_size: int = 1) -> dict:
    import torch
    import torchvision

    hw = {"device": str(device), "cpu": _cpu_name(), "cpu_count": os.cpu_count(),
          "torch_threads": torch.get_num_threads(), "world_size": world_size,
          "platform": platform.platform()}
    if torch.device(device).type == "cuda":
        hw["gpu"] = torch.cuda.get_device_name(device)
        hw["gpu_count"] = torch.cuda.device_count()
    return {"hardware": hw,
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "torchvision": torchvision.__version__, "cuda": torch.version.cuda,
                         "cudnn": torch.backends.cudnn.version()
                         if torch.backends.cudnn.is_available() else None},
            "git": _git_commit(), "library_sha256": library_sha256(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def segment_start(device, step: int) -> dict:
    """The segment of a run that starts (or resumes) here at `step`: the commit and library hash the
    code ran from, the hardware, the date; ``segment_at`` closes it at a step. A run trained in one
    go has one segment; a run resumed from checkpoints has one a process, each checkpoint carrying
    those so far (``segments`` in the checkpoint and the result)."""
    import torch

    git = _git_commit()
    hw = str(device)
    if torch.device(device).type == "cuda":
        hw = torch.cuda.get_device_name(device)
    else:
        hw = f"{_cpu_name()} ({hw})"
    return {"steps": [int(step), int(step)], "commit": git.get("commit"),
            "library_modified": git.get("library_modified"), "library_sha256": library_sha256(),
            "hardware": hw,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "ended": None}


def segment_at(seg: dict, step: int) -> dict:
    """`seg` (``segment_start``) as it stands at `step`: its steps from-to and the date now."""
    return {**seg, "steps": [seg["steps"][0], int(step)],
            "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def segments_before(ck: dict) -> list[dict]:
    """The segments a checkpoint carries; one written before checkpoints carried them gets one
    segment up to its step, its provenance not recorded (None)."""
    if ck.get("segments"):
        return [dict(s) for s in ck["segments"]]
    if not ck.get("step"):
        return []
    return [{"steps": [0, int(ck["step"])], "commit": None, "library_modified": None,
             "library_sha256": None, "hardware": f"{ck.get('device_type')} "
             f"{ck.get('precision')}", "started": None, "ended": None,
             "note": "written before checkpoints carried their segments: not recorded"}]


def save_result(result: dict, out_dir=None, indent: int | None = 1) -> Path:
    """Write atomically as <out_dir>/<experiment>__<variant>__<scale>__s<seed>__<hash12>.json
    (`indent` None: one line, for a measurement's long per-layer lists: the tracked tree has a size
    target, gpu_preflight)."""
    path = result_path(result["config"], out_dir, result["config_hash"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=indent, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def load_results(out_dir=None, experiment=None, variant=None, scale=None, seed=None) -> list[dict]:
    """All results in `out_dir`, filtered by any of experiment/variant/scale/seed, sorted by file
    name."""
    out = Path(out_dir or RESULTS_DIR)
    found = []
    for p in sorted(out.glob("*.json")):
        r = json.loads(p.read_text())
        c = r.get("config", {})
        if all(want is None or c.get(k) == want for k, want in
               (("experiment", experiment), ("variant", variant), ("scale", scale),
                ("seed", seed))):
            r["path"] = str(p)
            found.append(r)
    return found


def result_path(cfg: dict, out_dir=None, chash: str | None = None) -> Path:
    """Where ``save_result`` writes the result of this config: the run's name and its config
    hash."""
    return Path(out_dir
                or RESULTS_DIR) / f"{run_name(cfg)}__{(chash or config_hash(cfg))[:12]}.json"


# results folder -> (its mtime, {training hash: path of the first result with it})
_INDEX: dict = {}


def _training_index(out: Path) -> dict:
    """training hash -> result file, for every result in `out` (read again only when the folder
    changed)."""
    if not out.is_dir():
        return {}
    stamp = out.stat().st_mtime_ns
    if _INDEX.get(out, (None,))[0] != stamp:
        index = {}
        for p in sorted(out.glob("*.json")):
            index.setdefault(training_hash(json.loads(p.read_text())["config"]), p)
        _INDEX[out] = (stamp, index)
    return _INDEX[out][1]


def find_result(cfg: dict, out_dir=None, same_training: bool = True) -> dict | None:
    """The stored result of this config, or None: the file whose config hash equals this config's
    (one file read, by its name), else (unless `same_training` is False: an exercise's runs must be
    the student's own, each under its own name) a result of the same training under other labels
    (``training_hash``; its ``config`` keeps the labels it was recorded under, ``shown_as`` names
    the ones asked for)."""
    path = result_path(cfg, out_dir)
    if path.is_file():
        r = json.loads(path.read_text())
        if r.get("config_hash") == config_hash(cfg):
            r["path"] = str(path)
            return r
    path = (_training_index(Path(out_dir or RESULTS_DIR)).get(training_hash(cfg)) if same_training
            else None)
    if path is None:
        return None
    r = json.loads(path.read_text())
    r.update(path=str(path), shown_as={k: cfg[k] for k in LABELS if k in cfg})
    return r


def _work(cfg: dict) -> str:
    """What sets a run's cost: the network, the steps and the batch (not the seed, not the
    shortcut's options)."""
    m = cfg["model"]["kwargs"]
    return canonical({k: m.get(k) for k in ("depth", "block", "width_scale", "widen", "d", "width")}
                     | {"builder": cfg["model"]["builder"], "steps": cfg["steps"],
                        "batch": cfg["batch_size"]})


def core_seconds(result: dict) -> float | None:
    """What a recorded run cost: its training wall time x the torch threads it used (None if not
    recorded)."""
    wall, threads = result["final"].get("wall_s"), (result.get("hardware")
                                                    or {}).get("torch_threads")
    return wall * threads if wall and threads else None


def pace(todo: list[dict], done: list[dict]) -> tuple[float, int]:
    """Core-hours the configs `todo` will take at the pace of the recorded results `done` of the
    same network, steps and batch (median of `core_seconds`), and how many of `todo` have no such
    record."""
    import statistics

    cost = {}
    for r in done:
        if cost_s := core_seconds(r):
            cost.setdefault(_work(r["config"]), []).append(cost_s)
    known = [statistics.median(cost[_work(c)]) for c in todo if _work(c) in cost]
    return sum(known) / 3600, len(todo) - len(known)
