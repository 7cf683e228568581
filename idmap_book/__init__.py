"""The book's evidence engine: what the chapters call. It builds on the library that trains
(``idmap_lib``: the models and the engine, which never import it); only the classroom
(``idmap_class``, the exercises' graders) builds on it (tests/test_layers.py).
Five rooms, each importing only the rooms before it:

- page/: a chapter's setup (``setup``: the device, the build's plotly renderer, the reader's runs
  folder), its prose helpers (``say``, ``sci``, ``live_widget``), figure style, palette, log axes,
  the repository URL;
- maths/: the papers' symbols and the sympy derivations of Eqns 1-8, probes on real networks;
- evidence/: the claims and the rule that decides them, the metrics read from a run, the runs, the
  papers' numbers, the verdicts, the mechanisms and the synthesis ("why pre-activation helps");
- plan/: what to train next (the sweep, its queue and where it stands), how long runs take, the
  MNIST grid, the measurements around the lr jump;
- figures/: curves, the full recipe's runs, the mechanisms', gates' and sliders' figures, drawings
  of the units, "train it yourself".

This file only re-exports: the page's setup, prose and table helpers by name (``say``, ``styled``,
...), and every module by its short name (``from idmap_book import claims`` is
``idmap_book.evidence.claims``), imported when first asked for.
"""

from __future__ import annotations

import importlib

from .evidence.tables import styled
from .page.prose import LIVE_ONLY_NOTE, live_widget, plain_number, say, sci
from .page.setup import (BUILD_ENV, CLASSROOM_RUNS, DRIVE_RUNS, RENDERER, default_runs_dir,
                         describe_device,
                         in_book_build, setup, use_book_renderer, use_drive, whereabouts)

ROOMS = {
    "page": "figure_style log_axes palette prose repository setup",
    "maths": "derivation gate_theory notation probe_words probes theory",
    "evidence": "checkpoints claim_words claims history judge mechanisms metrics paper_numbers "
                "pointers power precision reports robustness rule runs seeds synthesis tables "
                "variants verdicts",
    "plan": "commands cpu_scale jump_watch ledger mnist_grid queue queue_status run_times sweep",
    "figures": "blocks curves diagrams explorer forest full_recipe gate_figures gate_words "
               "keras_probe live mechanism_figures mechanism_words slider_figures swap_figure "
               "trained_probes yourself init_probes",
}
ROOM_OF = {m: room for room, names in ROOMS.items() for m in names.split()}


def __getattr__(name: str):
    """A module by its short name (``book.claims``), imported from its room on first use."""
    if name in ROOM_OF:
        return importlib.import_module(f"{__name__}.{ROOM_OF[name]}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
