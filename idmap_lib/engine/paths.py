"""Where the library keeps what it makes: each folder said once, under the data root
(``data.DEFAULT_ROOT``: ``$IDMAP_ROOT``, else data/ of the checkout the library runs from, never the
working directory).

- RESULTS: one JSON per finished run (tracked: runs are data);
- CHECKPOINTS: runs under way, to be resumed: the sweep's queue, a lent GPU's full-recipe runs, and
  the command line's (``train --resume``, ``mnist``) unless told otherwise;
- GPU, MECHANISMS, WEIGHTS, BENCH, QUEUE: what lent GPUs brought back, measurements of networks, the
  d = 100 MNIST nets' weights, benchmark reports, the queue's ledger;
- ``runs_folder``: a reader's own runs (chapters 7-10's "train it yourself", the exercises) keep the
  same two folders, results/ and checkpoints/, under a folder of their own
  (``book.default_runs_dir``).
"""
from __future__ import annotations

from pathlib import Path

from .data import DEFAULT_ROOT

RESULTS = DEFAULT_ROOT / "results"
CHECKPOINTS = DEFAULT_ROOT / "checkpoints"
GPU = DEFAULT_ROOT / "gpu"
MECHANISMS = DEFAULT_ROOT / "mechanisms"
WEIGHTS = DEFAULT_ROOT / "weights"
BENCH = DEFAULT_ROOT / "bench"
# submitit's folder (pickles, logs) and the ledger of the runs handed out
QUEUE = DEFAULT_ROOT / "sweep"


def runs_folder(folder) -> tuple[Path, Path]:
    """A reader's runs folder: (its results, its checkpoints)."""
    folder = Path(folder)
    return folder / "results", folder / "checkpoints"
