#!/bin/bash
# Grade a folder of submissions (.zip / .ipynb) with `otter run` against an autograder zip, in a clean venv built
# from nothing but the zip's own environment.yml (its pip lines and its conda packages, from the package index):
# what Gradescope's image installs, without Docker. The library comes from the zip's files/ alone. The venv is made
# afresh on every call (a fresh temporary folder, removed at the end; or VENV, emptied first), so it is clean each time.
#   tools/check_autograder.sh dist/ablations/dist/autograder/*.zip submissions/ graded/ [venv]
# Prints one line per submission (score, and the first failing question's message); otter's results.json and log
# land in graded/<student>/.
set -euo pipefail
ZIP=$(realpath "$1"); SUBS=$(realpath "$2"); OUT=$(realpath -m "$3")
if [ -n "${4:-}" ]; then VENV=$(realpath -m "$4"); rm -rf "$VENV"; else VENV=$(mktemp -d)/venv; trap 'rm -rf "$(dirname "$VENV")"' EXIT; fi
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
  ( cd "$OUT/$n" && env -i HOME="$HOME" PATH="$VENV/bin:/usr/bin:/bin" OMP_NUM_THREADS=1 \
      "$VENV/bin/otter" run -a "$ZIP" -o . "$s" > log.txt 2>&1 ) || true
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
