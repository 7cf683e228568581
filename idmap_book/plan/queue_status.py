"""Where the queue stands (``python -m idmap_book sweep --status``): per claim, which of its runs
are recorded, running, queued or failed (with the job id), started (a checkpoint, no job) or
missing, and what the runs left take at the measured pace: CPU core-hours at the CPU scale
(``results.pace``), GPU-hours at the full recipe (the recorded pace of each GPU kind, and the lent
H200's benchmark: run_times.py). The queue itself: queue.py.
"""
from __future__ import annotations

from idmap_lib.engine import results
from .ledger import ledger
from .queue import claims_at, config_of, started
from .run_times import _measured_net, h200_measured
from .sweep import runs_needed

# what the status lists run by run (with the job, the step)
STATES = ("running", "queued", "failed", "started")


def status(scale="cpu", keys=None, seeds=None, out_dir=None, folder=None,
           checkpoint_dir=None) -> dict:
    """Per claim, each run it needs with its state: recorded, running / queued / failed (with the
    job id), started (a checkpoint at some step, no job) or missing; and ``left``, the configs not
    recorded."""
    book = ledger(folder)
    steps = started(checkpoint_dir)
    per_claim, left, seen = [], [], set()
    for c in claims_at(scale, keys):
        rows = []
        for r in runs_needed([c], seeds, out_dir):
            cfg, h = config_of(r), results.training_hash(config_of(r))
            e = book.get(h, {})
            state = "recorded" if results.find_result(cfg,
                                                      out_dir) is not None else e.get("state") \
                if e.get("state") in ("running", "queued",
                                      "failed") else "started" if h in steps else "missing"
            if state != "recorded" and h not in seen:
                seen.add(h)
                left.append(cfg)
            rows.append({"run": r, "state": state,
                         "job_id": e.get("job_id") if state != "recorded" else None,
                         "step": steps.get(h),
                         "error": e.get("error") if state == "failed" else None})
        per_claim.append({"claim": c.key, "source": c.source, "runs": rows})
    return {"scale": scale, "claims": per_claim, "left": left}


def remaining_hours(cfgs, scale="cpu", out_dir=None, gpu_dir=None) -> str:
    """What the configs `cfgs` will take, in words: at the CPU scale the CPU core-hours at the
    recorded pace of the same network (``results.pace``); at the full recipe the GPU-hours at the
    recorded pace of each GPU kind (wall time of runs trained alone, one GPU each), and at the pace
    the lent H200's benchmark measured (run_times)."""
    done = results.load_results(out_dir)
    if scale == "cpu":
        h, untimed = results.pace(cfgs, done)
        return f"about {h:.1f} CPU core-hours at the recorded pace" + \
            (f", plus {untimed} runs of a network not timed yet" if untimed else "")
    kinds = {}
    for r in done:
        gpu = (r.get("hardware") or {}).get("gpu")
        if gpu and r["config"].get("scale") == "full" and not ("fused" in r or "stacked" in r):
            # GPU-s
            kinds.setdefault(gpu, []).append({**r, "hardware": {**r["hardware"],
                                                                "torch_threads": 1}})
    parts = []
    for gpu, rs in sorted(kinds.items()):
        h, untimed = results.pace(cfgs, rs)
        parts.append(f"{h:.1f} GPU-hours on {gpu} at its recorded pace" +
                     (f" (+ {untimed} runs of a network it has not trained)" if untimed else ""))
    bench = h200_measured(gpu_dir)
    if bench:
        known = [c for c in cfgs if _measured_net(c) in bench]
        h = sum(c["steps"] * c["batch_size"] / bench[_measured_net(c)][0] for c in known) / 3600
        day = min(w for _, w in bench.values())[:10]
        more = (f" + {len(cfgs) - len(known)} runs of a network it did not time"
                if len(known) < len(cfgs) else "")
        parts.append(f"{h:.1f} GPU-hours on an H200 at its benchmark's pace ({day}: one run alone, "
                     f"CUDA graph){more}")
    return "; ".join(parts) or f"{len(cfgs)} runs of networks no GPU has timed yet"


def status_text(st: dict, out_dir=None) -> str:
    """``status`` at a glance: a line per claim (how many runs recorded, running, queued, failed,
    started, missing), the runs under way or failed beneath it with their job ids, then what is left
    and what it costs."""
    lines = []
    for c in st["claims"]:
        count = {s: sum(r["state"] == s for r in c["runs"])
                 for s in ("recorded", *STATES, "missing")}
        lines.append(f"{c['claim']} ({c['source']}): "
                     + ", ".join(f"{n} {s}" for s, n in count.items() if n))
        for r in c["runs"]:
            if r["state"] in STATES:
                e, v, s, _ = r["run"]
                at = (f" at step {r['step']}/{config_of(r['run'])['steps']}"
                      if r["step"] is not None else "")
                job = f" (job {r['job_id']})" if r["job_id"] else ""
                err = f": {r['error'][:120]}" if r["error"] else ""
                lines.append(f"    {r['state']:<8} {e} {v} s{s}{job}{at}{err}")
    left = st["left"]
    lines.append(f"{len(left)} runs not recorded at the {st['scale']} scale"
                 + (f": {remaining_hours(left, st['scale'], out_dir)}" if left else ""))
    return "\n".join(lines)
