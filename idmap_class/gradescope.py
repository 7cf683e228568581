"""Gradescope's run, as safe as the batch: the autograder zip's ``run_otter.py``
(``autograder.RUN_OTTER``) calls :func:`main`, which grades the one submission exactly as
:mod:`.batch` grades one row of a class, and writes Gradescope's ``results/results.json``.

- the submission folder is cleaned first, nothing in it opened: links, special files, pickles
  (Otter's own ``.OTTER_LOG`` among them) and weights are removed unread (:func:`clean`);
- the notebook runs in a subprocess (:mod:`.sandbox`: bubblewrap where the container allows it, else
  the batch's limits and kill, as the unprivileged user ``nobody`` when the grader is root, as on
  Gradescope), which hands back only the values its grading cells would grade (:mod:`.extract`);
- every mark is computed here, in this process, with the zip's own copy of the graders
  (``files/idmap_lib``), and the runs are checked as in the batch (the book's runs,
  ``files/data/classroom``, are in the zip).

Otter's runner is never called: it scores in the kernel the student's code ran in (a notebook that
replaces the graders gets full marks there) and loads Otter's log, a pickle; the zip's config
refuses it (``autograder.REFUSED``). Where bubblewrap cannot run, the grader (root) closes
``/autograder`` to ``nobody``, so that the zip's library is out of the notebook's reach there too.
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

from . import batch, sandbox
from .unpack import NEVER, strip_links


def clean(folder) -> list[str]:
    """Remove from `folder`, unread, every link or special file (``unpack.strip_links``) and every
    pickle or weights file (``unpack.NEVER``); returns what went, relative to `folder`."""
    folder = Path(folder)
    gone = strip_links(folder)
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name.lower().endswith(NEVER):
            p.unlink()
            gone.append(str(p.relative_to(folder)))
    return sorted(gone)


def _submission(folder: Path, scratch: Path) -> Path:
    """The submission as one file the batch unpacks: the zip the student uploaded, else the folder
    zipped (what Gradescope leaves when it unpacks an upload)."""
    zips = [p for p in folder.iterdir() if p.suffix == ".zip" and p.is_file()]
    if len(zips) == 1 and len(list(folder.iterdir())) == 1:
        return zips[0]
    made = scratch / "submission.zip"
    with zipfile.ZipFile(made, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, str(p.relative_to(folder)))
    return made


def results(row: dict, questions: list[str]) -> dict:
    """A batch row as Gradescope's results.json: one test per question (its mark and feedback), the
    reason and the spot check beside them."""
    tests = [{"name": q, "score": float(row.get(q, 0.0)), "max_score": 1.0,
              "output": row.get(f"{q}: feedback", "")} for q in questions]
    said = "; ".join(x for x in (row.get("reason"), row.get("spot check")) if x)
    return {"score": float(row["total"]), "tests": tests,
            **({"output": said} if said else {}), "stdout_visibility": "hidden"}


def main(base="/autograder", chapter="ablations", limits=sandbox.Limits()) -> dict:
    """Grade ``<base>/submission`` for `chapter` into ``<base>/results/results.json``; returns what
    it wrote."""
    base = Path(base)
    gone = clean(base / "submission")
    plan = batch.plan(chapter)
    isolate = sandbox.available() is None
    if not isolate and os.geteuid() == 0:  # the zip's library out of reach of `nobody`
        os.chmod(base, 0o700)
    try:
        batch.preflight(limits, isolate)
        with tempfile.TemporaryDirectory() as tmp:
            row = batch.grade_one(_submission(base / "submission", Path(tmp)), plan, limits,
                                  isolate)
        if gone:
            row["reason"] = "; ".join(filter(None, [f"removed unread: {', '.join(gone[:5])}",
                                                    row["reason"]]))
        out = results(row, plan["questions"])
    except Exception as e:  # noqa: BLE001 - the grader's own failure: said, never a silent 0
        out = {"score": 0.0, "tests": [{"name": "Autograder error", "score": 0.0, "max_score": 0.0,
                                        "output": f"the autograder could not grade this "
                                                  f"submission: {e}"}]}
    (base / "results").mkdir(parents=True, exist_ok=True)
    (base / "results" / "results.json").write_text(json.dumps(out, indent=1))
    return out
