"""Inside the sandbox: run a submitted notebook of the ablations chapter, then write the answers and
predictions its grading cells would grade, as JSON.

``python -m idmap_class.extract NOTEBOOK PLAN OUT`` (started by :mod:`.collect` inside
:mod:`.sandbox`) executes the notebook top to bottom in a fresh kernel (nbclient; errors allowed,
each cell under a time limit), with ``IDMAP_GRADING=1`` (nothing trains, ``ablations.grading``) and
the runs folder ``./idmap_runs``. Then, in the same kernel, it evaluates the answers and the
prediction of every ``ablations.check(name, runs, answers, prediction)`` call the PLAN (JSON, on the
command line: the chapter's grading calls, read by the trusted grader) lists and writes them to
OUT, and its status (the cells that failed, whether the kernel died) to OUT.status. The runs are not
taken from the kernel: the trusted grader reads them from the submission's files.

Everything here runs beside the student's code and may be tampered with; it only carries the
student's own answers. The implementation exercises are never observed here (:mod:`.box`).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# The code run in the student's kernel after its last cell: the values, never a verdict.
EXTRACT = r'''
def __idmap_extract(plan, out):
    import json, math
    def value(v, depth=0):
        if v is Ellipsis:
            return {"__ellipsis__": True}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        try:
            if isinstance(v, float) or hasattr(v, "__float__") and getattr(v, "ndim", 0) == 0:
                if (type(v).__name__ in ("bool_", "bool")
                        or str(getattr(v, "dtype", "")) == "torch.bool"):
                    return bool(v)
                f = float(v)
                return f if math.isfinite(f) else {"__float__": repr(f)}
        except Exception:
            pass
        if isinstance(v, dict) and depth < 3:
            return {str(k): value(x, depth + 1) for k, x in list(v.items())[:200]}
        if isinstance(v, (list, tuple)) and depth < 3:
            return [value(x, depth + 1) for x in list(v)[:200]]
        return {"__unreadable__": type(v).__name__}
    got = []
    for call in plan["calls"]:
        item = {"question": call["question"], "check": call["check"]}
        try:
            args = [eval(a, globals()) for a in call["args"]]
        except Exception as e:
            item["error"] = f"{type(e).__name__}: {e}"[:500]
            got.append(item)
            continue
        item["answers"] = value(args[2])
        item["prediction"] = value(args[3] if len(args) > 3 else None)
        got.append(item)
    with open(out, "w") as f:
        json.dump({"calls": got}, f)
'''


def main(notebook, plan, out, cell_timeout=300):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.util import run_sync

    plan = json.loads(plan)
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(Path(notebook).parent)}})
    errors, cells, died = [], sum(c.cell_type == "code" for c in nb.cells), False

    # (the kernel manager's is_alive is a coroutine: awaited here, or it would always be true)
    def alive():
        return bool(client.kc) and bool(run_sync(client.km.is_alive)())

    with client.setup_kernel():
        for i, cell in enumerate(list(nb.cells)):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, i)
            # a cell that times out or kills its kernel: noted, the rest still runs
            except Exception as e:
                errors.append(f"cell {i}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
                if not alive():
                    break
        # the extraction runs as one more cell of the notebook (nbclient writes its outputs there)
        if alive():
            nb.cells.append(nbformat.v4.new_code_cell(EXTRACT
                                                      + f"\n__idmap_extract({plan!r}, "
                                                        f"{str(out)!r})\n"))
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        else:
            died = True
    status = {"cell_errors": errors, "cells": cells, "kernel_died": died}
    Path(str(out) + ".status").write_text(json.dumps(status))


if __name__ == "__main__":
    main(*sys.argv[1:4])
