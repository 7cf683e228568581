"""Running an ablation exercise (``run``): the student's seed, the runs looked up by what they train
(``lookup``), a rewritten prediction's runs set aside, an interrupted exercise resumed, the pruning
evaluation of a trained GResNet; nothing trains while a grader runs the notebook (``grading``)."""
from __future__ import annotations

import datetime
import json
import os
import random
from pathlib import Path

from idmap_book import default_runs_dir
from idmap_book.evidence.seeds import draw_student_seed
from idmap_lib.engine import paths, trainer
from idmap_lib.engine.batches import evaluate, prepare_data
from idmap_lib.engine.build import build_model
from idmap_lib.engine.checkpoint import path_of
from idmap_lib.engine.distributed import context
from idmap_lib.engine.results import config_hash, find_result, save_result
from idmap_lib.models import pruning
from idmap_lib.models.introspect import gates, residual_units
from .ablation_exercises import (ABLATIONS, OFFERED, PRUNE_FRACTION, book_runs, configs,
                                 default_scale, same_text)

def _prune_eval(result, cfg, data, ckpt_dir, fraction=PRUNE_FRACTION, seed=0):
    """Test error of the trained net with `fraction` of its residual blocks removed (no retraining,
    ``idmap_lib.models.pruning``: a removed block is exactly the identity, as a gate at k <= 0 makes
    it): of a gated net, the blocks with the smallest k, and also blocks chosen at random (seeded);
    of an ungated one, random blocks. The same random blocks in both nets."""
    import torch

    model = build_model(cfg["model"])
    ck = torch.load(path_of(ckpt_dir, cfg), map_location="cpu", weights_only=False)
    model.load_state_dict(ck["model"])
    n = int(len(residual_units(model)) * fraction)
    device = torch.device("cpu")
    D = prepare_data(cfg, data, device)

    def pruned_error(blocks):
        with pruning.removed(model, blocks):
            return evaluate(model, D, None, False, device, context(device))[1]

    at_random = sorted(random.Random(seed).sample(range(len(residual_units(model))), n))
    out = {"pruned_fraction": fraction, "pruned_random_blocks": at_random}
    if gates(model):
        greedy = sorted(pruning.by_gate(model)[:n])
        out.update(pruned_test_err=pruned_error(greedy), pruned_blocks=greedy,
                   pruned_random_test_err=pruned_error(at_random))
    else:
        out.update(pruned_test_err=pruned_error(at_random), pruned_blocks=at_random)
    return out


def grading() -> bool:
    """True while a grader runs the notebook (Otter's grading mode, locally or on Gradescope; or
    IDMAP_GRADING=1): a submission is graded as handed in, so ``run`` never trains then."""
    if os.environ.get("IDMAP_GRADING", "").strip() not in ("", "0"):
        return True
    try:
        from otter.check.notebook import Notebook
    except ImportError:
        return False
    return bool(getattr(Notebook, "_grading_mode", False))


def student_seed(out_dir=None) -> int:
    """Your seed: drawn once at random for your runs folder and kept there (``seed.txt``, which the
    export zips with the runs), never one of the book's seeds -- so a run of yours is yours, and a
    copy of the book's recorded runs (data/classroom, seeds 0-2) is told apart. The book's own pages
    (their runs folder is data/classroom) use seed 0. A folder with runs but no seed.txt: the seed
    of its runs."""
    out = Path(out_dir or default_runs_dir())
    f = out / "seed.txt"
    if f.is_file():
        return int(f.read_text().strip())
    if out.resolve() == book_runs().resolve():
        return 0
    recorded = sorted(out.glob("*.json")) if out.is_dir() else []
    if recorded:
        return int(json.loads(recorded[0].read_text())["config"]["seed"])
    seed = draw_student_seed()
    out.mkdir(parents=True, exist_ok=True)
    f.write_text(f"{seed}\n")
    return seed


def lookup(name, seed, scale, out):
    """(configs, {key: recorded result or None}) of ablation `name` in folder `out`: at `scale`;
    with no scale asked, at ``default_scale`` unless the folder holds every run at another offered
    scale and not all at the default (runs trained on a GPU, then graded, or reopened, on a CPU:
    found, not trained again at the CPU's scale)."""
    first = scale or default_scale()
    order = [first] + ([] if scale else [s for s in OFFERED if s != first])
    looked = []
    for sc in order:
        cfgs = configs(name, seed, sc)
        found = {k: find_result(c, out, same_training=False) for k, c in cfgs.items()}
        if all(r is not None for r in found.values()):
            return cfgs, found
        looked.append((cfgs, found))
    return looked[0]


# a runs folder's subfolder for runs trained after an earlier prediction (kept, handed in)
SET_ASIDE = "set_aside"


def _valid_prediction(prediction) -> bool:
    return isinstance(prediction, str) and len(prediction.strip()) >= 10


def _set_aside_if_rewritten(name, found, prediction, out):
    """`found` with the runs trained after another prediction than `prediction` moved to
    ``out/set_aside/`` (and None in their place, to be trained again after the corrected
    prediction); says so. A typo fixed after the run then costs a retraining, never the exercise;
    the old runs stay in the folder (and in the submission), dated."""
    stale = {k: r for k, r in found.items() if r is not None
             and (r.get("exercise") or {}).get("name") == name
             and not same_text((r.get("exercise") or {}).get("prediction", ""), prediction)}
    if not stale:
        return found
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    where = out / SET_ASIDE / f"{name}-{stamp}"
    where.mkdir(parents=True, exist_ok=True)
    for r in stale.values():
        Path(r["path"]).rename(where / Path(r["path"]).name)
    print(f"your prediction for {name} changed since its runs were trained: {len(stale)} runs set "
          f"aside in {where} (kept; they go with your submission) and trained again after the new "
          f"prediction")
    return {k: (None if k in stale else r) for k, r in found.items()}


def _trained_for_another(name, cfgs, keys, out) -> dict:
    """{key: the result} of each run of `keys` that another exercise of this folder has already
    trained: the same training (``results.training_hash``: model, data, schedule, seed) under that
    exercise's labels, e.g. constant scaling's and BN after addition's "original". A run is trained
    once."""
    twins = {k: find_result(cfgs[k], out) for k in keys}
    return {k: r for k, r in twins.items() if r is not None and _trained_for(r) not in (None, name)}


def _trained_for(r):
    """The exercise a recorded run was trained for (a shared run's is the one it was trained for,
    not its own): a run this exercise trained once and then set aside is never taken back through
    another exercise's copy."""
    ex = r.get("exercise") or {}
    return ex.get("trained_for", ex.get("name"))


def _share(twin, cfg, name, prediction, out) -> dict:
    """`twin` (trained for another exercise) recorded as run `cfg` of exercise `name`: its training
    as it was, this exercise's labels and prediction, and which exercise it was trained for (the
    grader then reads that one's prediction time: a shared run was trained after the prediction of
    the exercise it was trained for)."""
    was = twin["exercise"]
    r = {k: v for k, v in twin.items() if k not in ("path", "shown_as", "exercise")}
    r.update(
        config=cfg,
        config_hash=config_hash(cfg),
        exercise={
            "name": name,
            "prediction": prediction,
            "prediction_recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            "trained_for": _trained_for(twin),
            "trained_for_prediction_recorded": was.get(
                "trained_for_prediction_recorded", was.get("prediction_recorded")
            ),
            "runs_trained_together": [cfg["variant"]],
            "wall_s_together": 0.0,
        },
    )
    r["path"] = str(save_result(r, out))
    print(f"{cfg['variant']}: the same training as {_trained_for(twin)}'s "
          f"{twin['config']['variant']!r}, which you ran already: recorded for {name} too, not "
          f"trained again")
    return r


def _started_file(name, ckpt: Path) -> Path:
    return ckpt / f"{name}.started.json"


def _started(name, prediction, cfgs, ckpt: Path) -> str:
    """When the runs of `name` now training were first started after `prediction` (an interrupted
    exercise resumes with its first start's time); a prediction rewritten since an interruption
    restarts its runs from step 0 (their checkpoints were trained after the old one)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    f = _started_file(name, ckpt)
    before = json.loads(f.read_text()) if f.exists() else None
    if before and before.get("prediction") != prediction:
        for cfg in cfgs:
            path_of(ckpt, cfg).unlink(missing_ok=True)
        print(f"your prediction for {name} changed since its runs were interrupted: they start "
              f"again from step 0")
        before = None
    ckpt.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"prediction": prediction, "prediction_recorded": (before or {}).get(
        "prediction_recorded", now)}))
    return (before or {}).get("prediction_recorded", now)


def run(name: str, prediction: str, seed: int | None = None, scale: str | None = None, out_dir=None,
        data=None,
        progress=True) -> dict:
    """Train (or find, by config hash, in `out_dir`) every run of ablation `name`; returns {key:
    result}.

    `seed`: default ``student_seed`` (yours, kept in your runs folder). `scale`: default
    ``default_scale`` (gpu where a CUDA GPU is), or the offered scale at which `out_dir` already
    holds every run (``lookup``). `prediction`: what you expect, written before running; it is
    stored with each run it starts (without one, nothing trains: it says so, and the runs not
    recorded yet come back as None). While a grader runs the notebook (``grading``) nothing trains:
    a run the submission lacks comes back as None, and the check grades it "runs missing"."""
    import time

    ab = ABLATIONS[name]
    out = Path(out_dir or default_runs_dir())
    cfgs, found = lookup(name, student_seed(out) if seed is None else seed, scale, out)
    if not grading() and _valid_prediction(prediction) and out.resolve() != book_runs().resolve():
        found = _set_aside_if_rewritten(name, found, prediction, out)
    todo = [k for k, r in found.items() if r is None]
    if todo and grading():
        print(f"runs missing: {', '.join(todo)} of {name} are not in the submission's {out}; a "
              f"grader never trains")
        return found
    if todo:
        if not _valid_prediction(prediction):
            # said, not raised: a blank notebook still runs top to bottom to its export ("Run all"),
            # its runs None
            print(f"nothing trained: write your prediction first (a sentence or two in "
                  f"`prediction`), then run this cell again -- the exercise is to predict, then "
                  f"run, then explain ({', '.join(todo)} not run yet)")
            return found
        # (pruning needs the weights)
        shared = {} if ab.checkpoint else _trained_for_another(name, cfgs, todo, out)
        for k, twin in shared.items():
            found[k] = _share(twin, cfgs[k], name, prediction, out)
        todo = [k for k in todo if k not in shared]
    if todo:
        # an interrupted exercise resumes from them (a submission leaves them out)
        ckpt = paths.runs_folder(out)[1]
        now = _started(name, prediction, [cfgs[k] for k in todo], ckpt)
        t0 = time.perf_counter()
        new = trainer.train([cfgs[k] for k in todo], data=data, out_dir=out,
                            checkpoint_dir=ckpt, resume=True,
                            # (a disconnect loses at most 3 min)
                            checkpoint_minutes=3, progress=progress,
                            # on a CPU: 1 for the MNIST MLPs, else the physical cores
                            threads="auto")
        # the whole exercise: its runs train interleaved, data loaded once
        wall = time.perf_counter() - t0
        # (Ctrl-C: trainer.TrainingInterrupted, the note kept)
        _started_file(name, ckpt).unlink(missing_ok=True)
        for k, r in zip(todo, new):
            r["exercise"] = {"name": name, "prediction": prediction, "prediction_recorded": now,
                             "runs_trained_together": todo, "wall_s_together": wall}
            if ab.checkpoint:  # (pruning reads the trained weights from the checkpoint)
                r.update(_prune_eval(r, cfgs[k], data, ckpt))
            r.pop("path", None)
            r["path"] = str(save_result(r, out))
            found[k] = r
            if not ab.checkpoint:  # recorded: its weights are no longer needed
                path_of(ckpt, cfgs[k]).unlink(missing_ok=True)
    return found
