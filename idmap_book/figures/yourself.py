""""Run these yourself": the one folded block at the end of chapters 7-10. It holds, for the page's
claims, the commands that list and train their missing CPU-scale runs, and the queue of the full
recipe (each run finished, under way, or its command with the time it takes:
full_recipe.full_scale_status). The page's cell adds the live-training call (live.train_live), whose
static form draws the recorded runs a reader's curve would join.
"""
from __future__ import annotations
from ..evidence.tables import styled
from ..evidence.variants import SHOWN
from ..plan import sweep
from . import full_recipe, live

INTRO = ("The page never trains: it reads recorded runs (`data/results/`). To fill in what is "
         "missing, run the commands below in a terminal, or set `RUN = True` in this cell: it "
         "trains the page's missing CPU-scale seeds one after another, on the GPU when there is "
         "one. To watch one run train, set `TRAIN = True` and pick `VARIANT` and `SCALE` "
         "(`\"cpu\"`, or `\"full\"`: the paper's recipe, a GPU): it is drawn over the band of the "
         "recorded seeds, checkpoints every few minutes into your runs folder (on Google Drive "
         "with `DRIVE = True` in the first cell) and resumes when the cell runs again; finished, "
         "it is recorded as *yours* and the variant table shows it. Without a kernel this cell "
         "shows the recorded runs your curve would be drawn over.")


def commands(claim_keys) -> str:
    """The two sweep commands for these claims (list what is missing; train it), as a Markdown code
    block."""
    keys = ",".join(claim_keys)
    return ("```bash\n"
            f"python -m idmap_book sweep --claims {keys}          # what is recorded, what is "
            f"missing\npython -m idmap_book sweep --claims {keys} --run    # train the missing "
            f"runs, in order\n"
            "```")


def cell(claim_keys, experiment, variant, scale="cpu", run=False, train=False, full=None, extra="",
         missing=None):
    """The whole cell: the block (``show``); with `run`, the page's missing CPU-scale runs trained
    (``sweep.train_missing`` of each of `missing`, {experiment: variants, None: those its page
    shows}; default `experiment`'s); then your run of `variant` of `experiment` at `scale`, trained
    live with `train`, else drawn over the recorded runs: ``live.train_live``'s answer."""
    show(claim_keys, full, extra)
    if run:
        for e, vs in (missing or {experiment: None}).items():
            sweep.train_missing(e, vs if vs is not None else SHOWN.get(e))
    return live.train_live(experiment, variant, scale=scale, run=train, max_steps=None)


def show(claim_keys, full=None, extra="") -> None:
    """Display the block: what it is (INTRO), the commands for `claim_keys` (and `extra`, Markdown:
    a page's own commands), then the full-recipe queue, one table per experiment of `full`
    ({experiment: variants})."""
    from IPython.display import Markdown, display

    display(Markdown(INTRO + "\n\n" + commands(claim_keys) + ("\n\n" + extra if extra else "")))
    if full:
        display(Markdown("**The full recipe's queue** (the paper's recipe, a GPU; seed 0 of each "
                         "row):"))
        for experiment, variants in full.items():
            display(styled(full_recipe.full_scale_status(experiment, variants)))
