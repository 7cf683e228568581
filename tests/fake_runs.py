"""Recorded runs made up for the book's tests (nothing trains): a result of today's recipe with the
numbers a test asks for, saved like a real one (engine/results.py)."""
import math

from idmap_lib.engine import recipes, results


def result(experiment, variant, seed, test_err=0.5, losses=(2.3, 1.5, 1.2, 1.0), status="ok",
           scale="cpu"):
    """A recorded run of today's recipe with the given numbers (nothing trained): a window whose
    loss is at chance (>= 0.97 ln 10) has a training error at chance (0.9), any other 0.5."""
    cfg = recipes.config(experiment, variant, scale, seed)
    n = cfg["steps"]
    train = [{"step": round((i + 1) * n / len(losses)), "train_loss": l,
              "train_err": 0.9 if l >= 0.97 * math.log(10) else 0.5,
              "lr": 0.1,
              "img_per_s": 100.0, "wall_s": 1.0} for i, l in enumerate(losses)]
    final = {"train_loss": losses[-1], "train_err": 0.5, "steps": n}
    if status == "ok":
        final.update(test_err=test_err, test_loss=1.0)
    return {"config": cfg, "config_hash": results.config_hash(cfg), "status": status,
            "fail": {"step": 3, "reason": "non-finite training loss"} if status == "fail" else None,
            "final": final, "history": {"train": train, "test": []}, "seed": seed}


def save(tmp_path, experiment, variant, errs, **kw):
    for seed, e in enumerate(errs):
        results.save_result(result(experiment, variant, seed, test_err=e, **kw), tmp_path)


def history(losses, errs, every=10):
    return [{"step": every * (i + 1), "train_loss": l, "train_err": e, "lr": 0.1, "img_per_s": 1.0,
             "wall_s": 1.0}
            for i, (l, e) in enumerate(zip(losses, errs))]


def mnist_run(variant, seed, test_err=0.015, ks=None, pruning=None, status="ok"):
    r = result("b_mnist", variant, seed, test_err=test_err, status=status, scale="full")
    if ks is not None:
        r["final"]["gates_k"] = ks
    if pruning is not None:
        r["analysis"] = {"pruning": pruning}
    return r
