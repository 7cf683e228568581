"""The autograder zip that ``otter assign`` writes (``editions.assign``), made lean and safe for
Gradescope: no browser install, a runner that grades outside the student's kernel
(:mod:`.gradescope`), and the chapter and the book's classroom runs beside the library."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

from .ablation_exercises import book_runs

# What Otter's Gradescope image does that these graders do not need: a browser (its setup.sh always
# installs Playwright's Chromium, for PDF exports; ours are off). torch comes as the CPU build
# (requirements-grading.txt): PyPI's default wheel is the CUDA one, gigabytes an autograder never
# uses.
BROWSER_LINE = "playwright install-deps && playwright install chromium"

# Gradescope runs the zip's run_otter.py. Ours grades the submission as the batch grades one
# (checks/gradescope.py: the submission cleaned unread, the notebook run in a subprocess, every mark
# computed outside it by the zip's own graders); Otter's runner, which scores in the student's
# kernel and loads Otter's log (a pickle), never runs.
RUN_OTTER = """\"\"\"Gradescope's entry point (idmap_class.autograder.RUN_OTTER):
idmap_class.gradescope.\"\"\"
import os
import sys

base = os.environ.get("IDMAP_AUTOGRADER_DIR", "/autograder")
# the zip's graders, before any other copy
sys.path.insert(0, os.path.join(base, "source", "files"))
from idmap_class import gradescope  # noqa: E402

gradescope.main(base, {chapter!r})
"""
# `otter run` (Otter's own runner) grades in the student's kernel and loads the submission's log, a
# pickle, with the grader's rights: the zip refuses it before it reads anything of the submission
# (its config's language is one Otter rejects, with this sentence in its error). Gradescope runs
# run_otter.py, which never reads the config's language.
REFUSED = ("not-otter-run: this zip grades only through its run_otter.py (Gradescope, "
           "tools/check_autograder.sh) or python -m idmap_class grade; otter run would load "
           "the submission's pickle and score in the student's kernel")
# What setup.sh adds: the environment's Python reachable by the unprivileged user the notebook runs
# as where bubblewrap cannot (/root is 0700 in Gradescope's image), and bubblewrap where it
# installs.
SETUP_LINES = """
# idmap: the notebook runs in a subprocess (checks/gradescope.py), as nobody where bubblewrap
# cannot run
chmod o+x /root
apt-get install -y bubblewrap || true
"""


def lean(zipped: Path, chapter: Path, name: str):
    """Rewrite the autograder zip of chapter `name` in place: its setup.sh without the browser
    install (BROWSER_LINE) and with SETUP_LINES, its run_otter.py grading outside the student's
    kernel (RUN_OTTER), its config refusing `otter run` (REFUSED), and beside the library the
    chapter (what its grading cells are) and the
    book's classroom runs (what a copied run is compared with)."""
    with zipfile.ZipFile(zipped) as z:
        entries = [(i, z.read(i)) for i in z.infolist()]
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in entries:
            if info.filename == "setup.sh":
                kept = [ln for ln in data.decode().splitlines() if BROWSER_LINE not in ln]
                data = ("\n".join(kept) + "\n" + SETUP_LINES).encode()
            elif info.filename == "run_otter.py":
                data = RUN_OTTER.format(chapter=name).encode()
            elif info.filename == "otter_config.json":
                data = json.dumps({**json.loads(data), "lang": REFUSED}, indent=1).encode()
            z.writestr(info, data)
        z.write(chapter, f"files/book/{chapter.name}")
        for run in sorted(Path(book_runs()).glob("*.json")):
            z.write(run, f"files/data/classroom/{run.name}")
