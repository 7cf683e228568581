"""The book's chapters run as a Colab student runs them, inside Colab's frozen runtime
(tools/colab_runtime.txt; tools/colab_freeze.sh builds it and calls this with that runtime's
Python). Each check executes a notebook whole, from its setup cell, in a folder of its own where
./idmap is the book's repository (as the setup cell's clone leaves it on Colab), with the kernel of
this runtime; a second kernel then runs it again (Colab's restart).

    python tools/colab_check.py SRC WORK      SRC: a copy of the repository; WORK: a scratch folder

Prints one line a check ("ok" or "FAILED" with the cell's error) and exits 1 if any failed.
"""
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

SRC, WORK = Path(sys.argv[1]), Path(sys.argv[2])

LIVE = """\
from idmap_book import live
V = ("b_resnet32", "gated")
# (a restart finds the first kernel's)
before = live.train_live(*V, scale="cpu", run=False, show=False)["stopped"]
start = before["step"] if before else 0
for n in (start + 6, start + 12):
    r = live.train_live(*V, scale="cpu", run=True, max_steps=n)
    assert r["stopped"] is not None and r["stopped"]["step"] == n, \
        (n, r["stopped"] and r["stopped"]["step"])
print(f"live: from step {start} to {start + 6}, then resumed to {start + 12}")
"""


def notebook(rel):
    return nbformat.read(SRC / rel, as_version=4)


def with_cells(rel, *sources):
    """The chapter's first cell (its setup), then `sources`: a small notebook that starts as the
    chapter does."""
    nb = notebook(rel)
    setup = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                 and c.source.startswith("# Setup."))
    nb.cells = nb.cells[:setup + 1] + [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


# name: (the notebook, its file (saved beside it, as Jupyter does), the environment it runs with)
CHECKS = {
    "theory chapter, sliders (03)": (lambda: notebook("book/03_scaled_shortcuts.ipynb"), None, {}),
    "live training, stopped and resumed (10's "
    "setup)": (lambda: with_cells("book/10_gates.ipynb", LIVE), None,
                                                         {}),
    "exercises, student edition": (lambda: notebook("book/student/exercises/exercises.ipynb"),
                                   "book/student/exercises/exercises.ipynb", {}),
    "ablations, student edition": (lambda: notebook("book/student/ablations/ablations.ipynb"),
                                   "book/student/ablations/ablations.ipynb",
                                   {"IDMAP_ABLATION_SCALE": "quick"}),
}


def execute(nb, folder):
    """The notebook whole, in `folder`; a kernel that hangs or dies (not the book's doing: a cell's
    own error is CellExecutionError) gets one more try, in a fresh kernel, and says so."""
    for attempt in (1, 2):
        try:
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": str(folder)}}).execute()
            return
        except (CellTimeoutError, DeadKernelError) as e:
            if attempt == 2:
                raise CellExecutionError(f"{type(e).__name__}: {e}", "", "") from e
            print(f"  (the kernel hung or died: {type(e).__name__}; once more in a fresh kernel)",
                  flush=True)


def run(name, make, saved, env, tries=2):
    folder = WORK / name.split(",")[0].replace(" ", "_")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # what the setup cell's clone leaves on Colab
    shutil.copytree(SRC, folder / "idmap", symlinks=True)
    if saved:  # the notebook's own file (its export cell zips it)
        shutil.copy(SRC / saved, folder)
    os.environ.update(env)
    try:
        # the second time: a fresh kernel, the same folder (a restart)
        for attempt in range(1, tries + 1):
            nb, t0 = make(), time.time()
            try:
                execute(nb, folder)
            except CellExecutionError as e:
                text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # the traceback's colours
                lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
                return f"FAILED {name} (run {attempt}): " + " | ".join(lines[-6:])[:900]
            print(f"  {name}: run {attempt} whole in {time.time() - t0:.0f} s", flush=True)
    finally:
        for k in env:
            os.environ.pop(k, None)
    return f"ok {name}"


if __name__ == "__main__":
    WORK.mkdir(parents=True, exist_ok=True)
    import importlib.metadata as md
    import platform
    print("runtime: Python " + platform.python_version() + ", " + ", ".join(
        f"{p} {md.version(p)}" for p in ("torch", "torchvision", "plotly", "ipywidgets",
                                         "ipykernel", "ipython",
                                         "numpy", "sympy")), flush=True)
    said = [run(name, make, saved, env) for name, (make, saved, env) in CHECKS.items()]
    print("\n".join(said))
    (WORK / "summary.json").write_text(json.dumps(said, indent=1))
    sys.exit(any(s.startswith("FAILED") for s in said))
