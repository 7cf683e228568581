"""Inside the grading sandbox: a notebook's code, then the grader's observers on what it defined.

``python -I -S box.py NOTEBOOK SITE_DIR...`` is started by :mod:`.batch` inside :mod:`.sandbox`
from a folder of the grader's holding this file and :mod:`.observers` only (copied there, read-only
in the sandbox): no notebook kernel, and no idmap_lib -- ``-S`` skips the site's ``.pth`` files, so
an editable install of the library is not on the path, and bubblewrap does not mount the checkout.
The grader's Python's site folders (SITE_DIR: torch...) are added to the path by hand.

1. the observers are imported first; then every code cell of NOTEBOOK runs, in order, in one
   namespace (a cell that raises is noted by its exception's type and the next one runs), except
   the edition's own cells (setup, grader, ``grader.check``, submission), which need the library;
   what the cells print goes nowhere;
2. one line on stdout says the code has loaded; only then does the grader send, on stdin, the seed
   it drew for this submission and the calls to observe (``[check, expression], ...``);
3. one line on stdout holds each call's observation (:func:`.observers.observe`).

Everything here runs beside the student's code and may be tampered with: it only carries data. The
marks are the grader's (:func:`.batch.score`), on inputs it rebuilds from its own seed.
"""
import json
import os
import sys

TYPES = {"SyntaxError", "NameError", "ImportError", "ModuleNotFoundError", "AttributeError",
         "TypeError", "ValueError", "NotImplementedError", "RuntimeError", "ZeroDivisionError",
         "IndexError", "KeyError", "AssertionError"}
# the edition's own cells (checks/editions.py, checks/student.py): they need the library
EDITION = ("# Setup.", "# Grading: this notebook's grader", "from idmap_class.student import")


def cells(notebook):
    nb = json.load(open(notebook, encoding="utf-8"))
    for c in nb.get("cells", []):
        if isinstance(c, dict) and c.get("cell_type") == "code":
            src = c.get("source", "")
            src = "".join(src) if isinstance(src, list) else str(src)
            if not src.lstrip().startswith(EDITION):
                # a grader.check line, a shell or magic line: the kernel's, not Python
                yield "\n".join(ln for ln in src.splitlines()
                                if not ln.lstrip().startswith(("grader.check", "%", "!")))


def main(notebook, *site_dirs):
    # (-I leaves this file's folder off the path: the observers beside it, then the packages)
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]
    sys.path += list(site_dirs)
    import torch

    import observers
    torch.set_num_threads(1)
    out = os.fdopen(os.dup(1), "w")
    given = os.fdopen(os.dup(0))
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    ns, errors, n = {"__name__": "__notebook__"}, [], 0
    for i, source in enumerate(cells(notebook)):
        n += 1
        try:
            exec(compile(source, f"<cell {i}>", "exec"), ns)
        except BaseException as e:  # noqa: BLE001 - the notebook's own error; the next cell runs
            errors.append(type(e).__name__ if type(e).__name__ in TYPES else "another error")
    out.write(json.dumps({"loaded": n, "cell_errors": errors}) + "\n")
    out.flush()
    asked = json.loads(given.readline())
    got = []
    for check, expression in asked["calls"]:
        try:
            student = eval(expression, ns)
        except Exception:  # noqa: BLE001
            got.append({"check": check, "error": "undefined"})
            continue
        got.append({"check": check, "observation": observers.observe(check, student,
                                                                     asked["seed"])})
    out.write(json.dumps({"calls": got}) + "\n")
    out.flush()
    os._exit(0)  # nothing of the notebook's (atexit, threads) runs after


if __name__ == "__main__":
    main(*sys.argv[1:])
