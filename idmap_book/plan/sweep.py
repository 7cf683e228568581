"""What to train next, and training it: the CPU sweep's runs (every run the claims need, in the
order that settles them soonest: ``runs_needed``), where it stands and what the rest costs
(``sweep_status``, ``sweep_in_words``; ``python -m idmap_book sweep``), and ``train_missing``, the
RUN = True cell of chapters 7-10 (the pages themselves never train: they read recorded runs).
"""
from __future__ import annotations

from idmap_lib.engine import recipes, results
from idmap_lib.engine.trainer import run
from ..evidence.claims import CLAIMS, CLAIMS_BY_KEY
from ..evidence.judge import evaluate
from ..evidence.seeds import MORE_SEEDS, SEEDS
from . import mnist_grid
from .cpu_scale import PROBE

# the order the sweep trains them in (each claim's ``sweep`` place, claims.py): the claims each CPU
# hour settles soonest first
SWEEP_ORDER = tuple(c.key for c in sorted((c for c in CLAIMS if c.sweep is not None),
                                          key=lambda c: c.sweep))
assert sorted(SWEEP_ORDER) == sorted(c.key for c in CLAIMS if c.scale != "full")


def runs_needed(claims=None, seeds=None, out_dir=None):
    """(experiment, variant, seed, scale) of every run the claims need (default: the scale probe's
    runs, then the CPU sweep's claims in SWEEP_ORDER), claim by claim, each training once: a run of
    the same training under other labels (Table 1's "original" is Table 2's "original-110") is not
    listed again. Unless `seeds` is given, a comparison that its claim's seeds leave inconclusive
    asks for MORE_SEEDS of both its sides, right after its claim's runs (a claim is settled before
    the next one's runs start)."""
    todo = [(*PROBE, s, "cpu") for s in SEEDS] if claims is None else []
    chosen = [CLAIMS_BY_KEY[k] for k in SWEEP_ORDER] if claims is None else claims
    for c in chosen:  # claim by claim: its seeds, then the seeds its open comparisons ask for
        todo += [(c.experiment, v, s, c.scale) for s in (seeds or c.seeds) for v in c.variants]
        if seeds is None:
            open_parts = [t for t, r in evaluate(c, out_dir=out_dir, seeds=c.seeds).parts
                          if r["verdict"] == "inconclusive"]
            more = [s for s in MORE_SEEDS if s not in c.seeds]
            todo += [(c.experiment, v, s, c.scale) for s in more for t in open_parts
                     for v in (t.a, t.b)]
    out, seen = [], set()
    for r in todo:
        h = results.training_hash(recipes.config(r[0], r[1], r[3], r[2]))
        if h not in seen:
            seen.add(h)
            out.append(r)
    return out


def sweep_status(claims=None, seeds=None, out_dir=None) -> dict:
    """Where the CPU sweep stands: every run the claims need (`runs_needed`) with its recorded
    result or None, the core-hours the recorded ones took (training wall time x threads;
    ``today_h``: those trained at today's CPU scale, recorded under its label) and the core-hours
    the missing ones will take at the pace of every recorded run of the same network and steps, with
    how many of them run a network not timed yet."""
    runs = runs_needed(claims, seeds, out_dir)
    cfgs = {r: recipes.config(r[0], r[1], r[3], r[2]) for r in runs}
    found = {r: results.find_result(cfgs[r], out_dir) for r in runs}
    done = [f for f in found.values() if f]
    left, untimed = results.pace([cfgs[r] for r in runs if found[r] is None],
                                 results.load_results(out_dir))
    # trained at today's CPU scale (the ramp)
    today = [f for f in done if f["config"].get("scale") == "cpu"]
    return {"found": found, "spent_h": sum(results.core_seconds(f) or 0 for f in done) / 3600,
            "left_h": left,
            "untimed": untimed, "today_h": sum(results.core_seconds(f) or 0 for f in today) / 3600}


def sweep_in_words(status: dict) -> str:
    """`sweep_status` in one sentence."""
    n, done = len(status["found"]), sum(f is not None for f in status["found"].values())
    words = (f"{done} of {n} runs recorded ({status['spent_h']:.1f} CPU core-hours: training wall "
             f"time x threads")
    if "today_h" in status and status["spent_h"] - status["today_h"] > 0.05:
        words += (f"; {status['today_h']:.1f} of them trained at today's CPU scale, the rest "
                  f"recorded before it and read again: the step warm-up's runs, and trainings the "
                  f"change left as they were")
    words += ")"
    if done < n:
        words += (f"; the missing ones take about {status['left_h']:.1f} CPU core-hours at the "
                  f"recorded pace")
        if status["untimed"]:
            words += f", plus {status['untimed']} of a network not timed yet"
    return words


def train_missing(experiment, variants=None, scale="cpu", seeds=SEEDS, out_dir=None,
                  **train_kwargs):
    """Train the missing seeds of `variants` into `out_dir` (what a reader asks for with RUN = True;
    a page never trains on its own). Runs one after another with a progress bar; returns their
    results. Paper B's MNIST nets (default: the whole grid and the probe) train at their full
    recipe, each depth's together."""
    if experiment == mnist_grid.EXPERIMENT:
        return mnist_grid.train_variants(variants or mnist_grid.grid_variants(), seeds, out_dir)
    return [run(experiment, v, scale, s, out_dir=out_dir, **train_kwargs)
            for v in variants for s in seeds
            if results.find_result(recipes.config(experiment, v, scale, s), out_dir) is None]
