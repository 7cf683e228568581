#!/bin/bash
# Grade a folder of submissions (.zip / .ipynb) with `otter run` against an autograder zip, in a clean venv built
# from nothing but the zip's own environment.yml (its pip lines and its conda packages, from the package index):
# what Gradescope's image installs, without Docker. The library comes from the zip's files/ alone. The venv is made
# afresh on every call (a fresh temporary folder, removed at the end; or VENV, emptied first), so it is clean each time.
#   tools/check_autograder.sh dist/ablations/dist/autograder/*.zip submissions/ graded/ [venv]
# Each submission is graded from a copy without Otter's log, pickles, weights or links (see below).
# Prints one line per submission (score, and the first failing question's message); otter's results.json and log
# land in graded/<student>/.
set -euo pipefail
ZIP=$(realpath "$1"); SUBS=$(realpath "$2"); OUT=$(realpath -m "$3")
CLEAN=$(mktemp -d); GONE=("$CLEAN")  # temporary folders, removed at the end
if [ -n "${4:-}" ]; then VENV=$(realpath -m "$4"); rm -rf "$VENV"; else VENV=$(mktemp -d)/venv; GONE+=("$(dirname "$VENV")"); fi
trap 'rm -rf "${GONE[@]}"' EXIT
PY=${PYTHON:-python3.11}
mkdir -p "$OUT"
{
  work=$(mktemp -d)
  unzip -q -o "$ZIP" environment.yml -d "$work"
  "$PY" - "$work/environment.yml" > "$work/requirements.txt" <<'PY'
import sys, yaml
deps = yaml.safe_load(open(sys.argv[1]))["dependencies"]
pip = [d for d in deps if isinstance(d, dict)][0]["pip"]
conda = [d for d in deps if isinstance(d, str) and not d.startswith(("python", "pip"))]
print("\n".join(pip + conda))
PY
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --retries 1 --timeout 20 -r "$work/requirements.txt"
  rm -rf "$work"
}
"$VENV/bin/python" -c "import torch; print('autograder venv: torch', torch.__version__, '| CUDA build' if torch.version.cuda else '| CPU build')"
for s in "$SUBS"/*; do
  n=$(basename "${s%.*}"); rm -rf "$OUT/$n"; mkdir -p "$OUT/$n"
  # `otter run` here loads a submission's .OTTER_LOG (a pickle: code run on this machine), as Gradescope's runner
  # would without the zip's run_otter.py: grade a copy without it, without any pickle or weights file and without
  # links (the zip's own RUN_OTTER does the same on Gradescope)
  c="$CLEAN/$(basename "$s")"
  "$VENV/bin/python" - "$s" "$c" <<'PY'
import shutil, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
NEVER = (".otter_log", ".pkl", ".pickle", ".dill", ".pt", ".pth", ".npy", ".npz")  # idmap_lib.checks.batch.NEVER
if not zipfile.is_zipfile(src):
    shutil.copyfile(src, dst)
    sys.exit()
with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as out:
    for i in z.infolist():
        link = (i.external_attr >> 16) & 0o170000 == 0o120000
        if not (i.is_dir() or link or i.filename.lower().endswith(NEVER)):
            out.writestr(i, z.read(i))
PY
  ( cd "$OUT/$n" && env -i HOME="$HOME" PATH="$VENV/bin:/usr/bin:/bin" OMP_NUM_THREADS=1 \
      "$VENV/bin/otter" run -a "$ZIP" -o . "$c" > log.txt 2>&1 ) || true
  "$VENV/bin/python" - "$OUT/$n" "$n" <<'PY'
import json, sys
from pathlib import Path
out, who = Path(sys.argv[1]), sys.argv[2]
try:
    tests = json.loads((out / "results.json").read_text())["tests"]
except (OSError, ValueError, KeyError):
    last = [ln.strip() for ln in (out / "log.txt").read_text().splitlines() if ln.strip()][-1:] or ["no log"]
    print(f"{who}: not graded by otter run ({last[0][:300]}); the batch grader makes it a row with its reason")
    sys.exit()
graded = [t for t in tests if t.get("max_score")]
failed = [t for t in graded if t["score"] < t["max_score"]]
why = ""
if failed:
    lines = [ln.strip() for ln in failed[0]["output"].splitlines() if "AssertionError" in ln or "Hint:" in ln]
    why = f" | {failed[0]['name']}: " + " ".join(lines)[:300]
print(f"{who}: {sum(t['score'] for t in graded):g} / {sum(t['max_score'] for t in graded):g}{why}")
PY
done
