"""Grading an ablation exercise (``check``, ``status``): every run intact, the asked ablation at the
asked scale, the student's own (their seed, trained after their prediction), and each answer against
the student's runs, up to the seed spread the book measured (``spread``); ``table``, the runs' table
a student sees."""
from __future__ import annotations

import json
import os
from pathlib import Path

from idmap_lib.engine.results import config_hash
from idmap_book.evidence.seeds import SEEDS
from .ablation_exercises import (ABLATIONS, OFFERED, SPREAD_FILE, book_runs, config, default_scale,
                                 final,
                                 mean_k, resolve_scale, same_text)
from .grading import fail as _fail, grader as _grader

def write_spread(result: dict) -> None:
    SPREAD_FILE.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def spread() -> dict:
    """{ablation: {"runs": {key: {metric: std over seeds}}, "answers": {answer: std over seeds}}},
    as measured."""
    return json.loads(SPREAD_FILE.read_text()) if SPREAD_FILE.exists() else {}


def spread_key(name, scale="classroom"):
    """Where the spread file keeps ablation `name` at `scale`: its name (the classroom scale, which
    the tests' quick scale is judged by too), or ``name@gpu``."""
    return f"{name}@gpu" if resolve_scale(name, scale) == "gpu" else name


def _spread_of(sk, answer):
    return spread().get(sk, {}).get("answers", {}).get(answer, 0.0)


def _diagnose_config(name, key, r, scale):
    """Why the run's config is not the asked one: the baseline, another scale, another run of the
    exercise."""
    ab = ABLATIONS[name]
    cfg, seed = r["config"], r["config"].get("seed", 0)
    want = config(name, key, seed, scale)
    if config_hash(cfg) == config_hash(want):
        return None
    for other in [name] + [n for n in ABLATIONS if n != name]:
        for s in [scale] + [x for x in ABLATIONS[other].scales if x != scale]:
            for k in ABLATIONS[other].runs:
                if config_hash(cfg) == config_hash(config(other, k, seed, s)):
                    if s != scale:
                        return (f"run {key!r} is the {s} scale ({cfg['steps']} steps); the "
                                f"exercise asks for the {scale} scale ({want['steps']} steps)",
                                f"run it with ablations.run({name!r}, prediction) and the default "
                                f"scale")
                    if k == ab.baseline and key != ab.baseline and other == name:
                        return (f"run {key!r} is the baseline ({ab.baseline}), not the ablation "
                                f"({ab.changes})",
                                "submit the run the exercise asks for: ablations.run() makes it")
                    return (f"run {key!r} is the config of {other}/{k}",
                            "pass the dict ablations.run returned")
    if cfg.get("scale") != want["scale"] or cfg.get("steps") != want["steps"]:
        return (f"run {key!r} has scale {cfg.get('scale')!r} and {cfg.get('steps')} steps; the "
                f"exercise asks for {want['scale']!r} with {want['steps']} steps",
                "do not change the recipe: run the exercise's")
    if cfg.get("model") == config(name, ab.baseline, seed, scale)["model"] and key != ab.baseline:
        return (f"run {key!r} trains the baseline net ({ab.baseline})",
                f"the ablation changes {ab.changes}")
    diff = sorted(k for k in set(cfg) | set(want) if k != "why" and cfg.get(k) != want.get(k))
    return (f"run {key!r} differs from the asked config in {', '.join(diff)}",
            "train the exercise's configs (ablations.run), unchanged")


# a student's answer is echoed in feedback at most this long: a number or a short phrase
SHOWN_CHARS = 24


def shown(v) -> str:
    """An answer value as feedback may echo it: its repr, cut to SHOWN_CHARS (a value built to carry
    a host name or a file listing out of the sandbox comes back as its first few characters)."""
    text = repr(v)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def _compare(name, key, judge, got, truth, runs, sk):
    """None if `got` agrees with `truth` (from the student's runs) under `judge`, up to the seed
    spread recorded under `sk` (``spread_key``), else (what, hint)."""
    kind = judge[0]
    sp = _spread_of(sk, key)
    if kind in ("abs", "rel"):
        if got is None and truth is None:
            return None
        if not isinstance(got, (int, float)) or isinstance(got, bool) or truth is None:
            return (f"{key} = {shown(got)}, your runs give {truth!r}",
                    "a number, read from your runs")
        tol = judge[1] * (abs(truth) if kind == "rel" else 1)
        if not abs(got - truth) <= tol:
            return (f"{key} = {got:.4g}, your runs give {truth:.4g}",
                    "read it from your own recorded runs (the table the run cell printed)")
        return None
    if kind == "exact":
        return None if got == truth else (f"{key} = {shown(got)}, your runs give {truth!r}",
                                          "read it from the table of your runs")
    if kind in ("sign", "sign_of"):
        if not isinstance(got, bool):
            return (f"{key} = {shown(got)}, expected True or False", "a judgement: True or False")
        if kind == "sign":  # the difference answer judge[1]
            diff = ABLATIONS[name].truth(runs)[judge[1]]
            sp = _spread_of(sk, judge[1])
        # metric judge[3] of run judge[1] vs metric judge[4] (default: the same) of run judge[2]
        else:
            def m(r, what):
                return mean_k(r) if what == "mean_k" else float(r[what])
            diff = m(runs[judge[2]], judge[-1]) - m(runs[judge[1]], judge[3])
            sp = _spread_of(sk, key) or max(
                spread().get(sk, {}).get("runs", {}).get(judge[i], {}).get(judge[j], 0.0)
                for i, j in ((1, 3), (2, -1)))
        if abs(diff) <= sp:  # within the seed spread: the runs cannot tell, either answer stands
            return None
        return None if got == truth else (f"{key} = {shown(got)}, but your runs say {truth} "
                                          f"(difference {diff:+.4g}, beyond the seed spread "
                                          f"{sp:.3g})",
                                          "compare your own runs")
    if kind == "argmin":
        vals = {v: final(runs[k]) for v, k in judge[1]}
        best = min(vals.values())
        sp = max((spread().get(sk, {}).get("runs", {}).get(k, {}).get("train_loss", 0.0)
                  for _, k in judge[1]),
                 default=0.0)
        ok = {v for v, x in vals.items() if x - best <= sp}
        return None if got in ok else (f"{key} = {shown(got)}; your runs' lowest loss is at "
                                       f"{truth!r} (within the seed spread {sp:.3g}: {sorted(ok)})",
                                       "read your runs' table")
    raise ValueError(kind)




def _not_yours(key, r, prediction):
    """Why run `r` is not the student's own (what, hint), or None. The book's own pages (runs
    recorded in data/classroom) are exempt: they show the book's runs."""
    path = r.get("path")
    if path and Path(path).resolve().is_relative_to(book_runs().resolve()):
        # (a submission cannot reach it: unpack.strip_links removes every link before a file is
        # read)
        return None
    ex, seed = r.get("exercise") or {}, r["config"].get("seed")
    if seed in SEEDS:
        return (f"run {key!r} has seed {seed}, one of the book's recorded seeds: a copy of the "
                f"book's runs (data/classroom) is not yours",
                "train your own runs: ablations.run(name, prediction) uses your seed")
    if not ex:
        return (f"run {key!r} was not trained by ablations.run (no prediction recorded with it)",
                "train it with ablations.run(name, prediction)")
    if prediction is not None and isinstance(prediction, str) and prediction.strip() and \
            not same_text(ex.get("prediction", ""), prediction):
        return (f"run {key!r} was trained with another prediction than this notebook's",
                "your runs are trained "
                "after your own prediction is written: write it, then run the run cell")
    when = r.get("date") or (r.get("provenance") or {}).get("date")
    # a run shared with another exercise (ablation_runs._share) was trained after that exercise's
    # prediction
    recorded = (ex.get("trained_for_prediction_recorded") if "trained_for" in ex
                else ex.get("prediction_recorded"))
    if when and recorded and str(when) < str(recorded):
        return (f"run {key!r} was trained before its prediction was recorded",
                "write the prediction, then run")
    return None


def _load(r):
    if isinstance(r, (str, os.PathLike)):
        return json.loads(Path(r).read_text())
    return r


def _as_ablation_grader(name):
    def check(runs, answers, prediction=None, scale=None):
        return _check(name, runs, answers, prediction, scale)
    check.__name__ = check.__qualname__ = f"check_{name}"
    return _grader(f"`answers` of {name} (still ...)")(check)


def submitted_scale(name, runs) -> str | None:
    """The offered scale (classroom or gpu) the submitted runs were trained at, read from the first
    recorded one; None if none is."""
    for r in runs.values():
        label = (r or {}).get("config", {}).get("scale", "") if isinstance(r, dict) else ""
        for s in OFFERED:
            if label == f"ablation-{resolve_scale(name, s)}":
                return s
    return None


def _check(name, runs, answers, prediction, scale):
    """Grade at `scale`, else the tests' IDMAP_ABLATION_SCALE, else the offered scale the runs were
    trained at (a class may train on CPUs and on GPUs: the instructor's machine grades both), else
    ``default_scale``."""
    ab, c = ABLATIONS[name], f"check_{name}"
    if not isinstance(runs, dict) or not runs:
        _fail(c, f"no runs (got {type(runs).__name__})",
              f"run the run cell: runs = ablations.run({name!r}, prediction)")
    runs = {k: _load(v) for k, v in runs.items()}
    scale = (scale or os.environ.get("IDMAP_ABLATION_SCALE") or submitted_scale(name, runs)
             or default_scale())
    for key in ab.runs:
        if key not in runs:
            _fail(c, f"the run {key!r} is missing",
                  f"ablations.run({name!r}, prediction) trains all of: "
                  f"{', '.join(ab.runs)}")
        r = runs[key]
        if r is None:
            _fail(c, f"runs missing: no recorded run {key!r} (not run yet, or not handed in)",
                  "write your prediction and run the run cell; hand in the notebook with its "
                  "idmap_runs/ folder (the export cell zips both): a grader never trains")
        if not isinstance(r, dict) or "config" not in r or "config_hash" not in r:
            _fail(c, f"run {key!r} is not a recorded run", "pass what ablations.run returned")
        if config_hash(r["config"]) != r["config_hash"]:
            _fail(c,
                  f"run {key!r}: its config no longer matches its config hash (edited after the "
                  f"run)",
                  "submit the recorded run unchanged")
        why = _diagnose_config(name, key, r, scale)
        if why:
            _fail(c, *why)
        if r.get("status") not in ("ok", "fail"):
            _fail(c, f"run {key!r} has status {r.get('status')!r}: it did not finish",
                  "let it run to the end (a failure, status 'fail', is a result too)")
        if "provenance" not in r and "versions" not in r:
            _fail(c, f"run {key!r} has no provenance", "pass what ablations.run returned")
        if ab.checkpoint and "pruned_test_err" not in r:
            _fail(c, f"run {key!r} has no pruning measurement",
                  "ablations.run measures it after training")
        copied = _not_yours(key, r, prediction)
        if copied:
            _fail(c, *copied)
    if not isinstance(answers, dict):
        _fail(c, f"answers is a {type(answers).__name__}, not a dict",
              f"answers = {{{', '.join(map(repr, ab.answers))}: ...}}")
    missing = [a for a in ab.answers if a not in answers or answers[a] is Ellipsis]
    if len(missing) == len(ab.answers) or all(answers.get(a) is Ellipsis for a in ab.answers):
        raise NotImplementedError("every entry of `answers` is still `...`: read them from your "
                                  "runs' table, then run this cell again")
    if missing:
        _fail(c, f"no answer for {', '.join(missing)}", "fill in every entry of `answers`")
    if prediction is not None and (not isinstance(prediction, str) or not prediction.strip()):
        _fail(c, "no prediction",
              "write what you expected before the run; it is collected with your answers")
    truth = ab.truth(runs)
    for a in ab.answers:
        bad = _compare(name, a, ab.judge[a], answers[a], truth[a], runs, spread_key(name, scale))
        if bad:
            _fail(c, *bad)
    return (f"{len(ab.runs)} recorded runs of {name} at the {scale} scale; {len(ab.answers)} "
            f"answers agree with them")


CHECKS = {name: _as_ablation_grader(name) for name in ABLATIONS}


def check(name, runs, answers, prediction=None, scale=None):
    """Grade ablation `name`: prints PASSED, NOT ATTEMPTED (answers left as ...), or raises
    AssertionError."""
    return CHECKS[name](runs, answers, prediction, scale)


def status(name, runs, answers, prediction=None, scale=None):
    return CHECKS[name].status(runs, answers, prediction, scale)


def table(runs):
    """One row per run (a pandas Styler; ``.data`` is the frame): status, final training loss/error,
    test error, mean k, pruned error, steps, wall time."""
    import pandas as pd
    rows = []
    for k, r in runs.items():
        if r is None:  # not run yet (no prediction), or missing from a submission
            rows.append({"run": k, "status": "not run"})
            continue
        f = r["final"]
        rows.append({"run": k, "status": r["status"], "train loss": f["train_loss"],
                     "train error": f["train_err"],
                     "test error": f.get("test_err"),
                     "mean k": mean_k(r) if f.get("gates_k") else None,
                     "pruned test error": r.get("pruned_test_err"),
                     "pruned at random, test error": r.get("pruned_random_test_err"),
                     "steps": f["steps"], "seconds": f["wall_s"]})
    # shown to 3 decimals, finer than every reading's tolerance; "-" where a run has no such value
    # (a failed run's test error, an ungated net's k)
    df = pd.DataFrame(rows).dropna(axis=1, how="all")
    whole = [c for c in ("steps", "seconds") if c in df]
    # in %, as everywhere in the book (the answers stay fractions)
    errors = [c for c in df if "error" in c]
    # a run by the name its results are read under (runs["b-6"]): code to type, not prose
    return (df.style.format(precision=3, na_rep="-").format("{:.0f}", subset=whole, na_rep="-")
            .format(lambda v: f"{100 * v:.1f} %", subset=errors, na_rep="-")
            .format(lambda k: f"<code>{k}</code>", subset=["run"]).hide(axis="index"))
