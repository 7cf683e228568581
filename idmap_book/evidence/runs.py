"""The runs a page reads: the book's recorded runs of a variant, seed by seed (data/results/,
``seed_runs``), the command that trains the seeds still missing (``seeds_command``), and the
reader's own finished runs in their runs folder (``your_results``: what chapters 7-10's "train it
yourself" records, live.py).

Only a run whose config is today's recipe counts (``results.find_result``: same config hash);
nothing here trains.
"""
from __future__ import annotations

from pathlib import Path

from idmap_lib.engine import paths, recipes, results
from ..page.setup import default_runs_dir
from .seeds import SEEDS


def seed_runs(experiment, variant, scale="cpu", seeds=SEEDS, out_dir=None):
    """The recorded runs of one variant whose config is today's recipe, one per seed found, and the
    seeds still missing."""
    found, missing = [], []
    for s in seeds:
        r = results.find_result(recipes.config(experiment, variant, scale, s), out_dir)
        if r is None:
            missing.append(s)
        else:
            found.append(r)
    return found, missing


def seeds_command(experiment, variants, seeds, scale="cpu") -> str:
    """One command that trains these variants and seeds (together, in one process)."""
    v = ",".join(variants) if not isinstance(variants, str) else variants
    return (f"python -m idmap_lib train --experiment {experiment} --variant {v} --scale {scale} "
            f"--seed {','.join(map(str, seeds))}")


def runs_dir(folder=None) -> Path:
    """The reader's runs folder: `folder`, else ``book.default_runs_dir`` (IDMAP_RUNS, else
    idmap_runs/)."""
    return Path(folder) if folder else default_runs_dir()


def your_results(experiment, variant, scale="cpu", folder=None) -> list[dict]:
    """The reader's finished runs of this variant at this scale, any seed, whose config is today's
    recipe."""
    found = results.load_results(paths.runs_folder(runs_dir(folder))[0], experiment, variant, scale)
    return [
        r
        for r in found
        if r.get("config_hash")
        == results.config_hash(recipes.config(experiment, variant, scale, r["config"]["seed"]))
    ]
