#!/bin/bash
# Grade a folder of submissions (.zip / .ipynb) as Gradescope will: per submission, the autograder zip unpacked
# into <graded>/<student>/source, the upload into .../submission, then the zip's run_otter.py (which grades as
# `python -m idmap_class grade` grades one row: idmap_class/gradescope.py) in a venv built from nothing
# but the zip's environment.yml (its pip lines and its conda packages, from the package index). The venv is made
# afresh on every call (a temporary folder, removed at the end; or VENV, emptied first).
#   tools/check_autograder.sh dist/ablations/dist/autograder/*.zip submissions/ graded/ [venv]
# Prints one line per submission (score, and the first question that got nothing with its feedback);
# Gradescope's results.json lands in graded/<student>/results/.
set -euo pipefail
ZIP=$(realpath "$1"); SUBS=$(realpath "$2"); OUT=$(realpath -m "$3")
if [ -n "${4:-}" ]; then VENV=$(realpath -m "$4"); rm -rf "$VENV"; GONE=(); else VENV=$(mktemp -d)/venv; GONE=("$(dirname "$VENV")"); fi
trap 'rm -rf "${GONE[@]}"' EXIT
PY=${PYTHON:-python3.11}
mkdir -p "$OUT"
work=$(mktemp -d); GONE+=("$work")
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
"$VENV/bin/python" -c "import torch; print('autograder venv: torch', torch.__version__, '| CUDA build' if torch.version.cuda else '| CPU build')"
for s in "$SUBS"/*; do
  n=$(basename "${s%.*}"); base="$OUT/$n"; rm -rf "$base"; mkdir -p "$base/submission"
  unzip -q "$ZIP" -d "$base/source"
  cp "$s" "$base/submission/"
  ( env -i HOME="$HOME" PATH="$VENV/bin:/usr/bin:/bin" OMP_NUM_THREADS=1 IDMAP_AUTOGRADER_DIR="$base" \
      "$VENV/bin/python" "$base/source/run_otter.py" > "$base/log.txt" 2>&1 ) || true
  "$VENV/bin/python" - "$base" "$n" <<'PY'
import json, sys
from pathlib import Path
base, who = Path(sys.argv[1]), sys.argv[2]
try:
    out = json.loads((base / "results" / "results.json").read_text())
except (OSError, ValueError):
    last = [ln.strip() for ln in (base / "log.txt").read_text().splitlines() if ln.strip()][-1:] or ["no log"]
    print(f"{who}: not graded ({last[0][:300]})")
    sys.exit()
tests = [t for t in out["tests"] if t.get("max_score")]
failed = [t for t in out["tests"] if t["score"] < t.get("max_score", 0) or not t.get("max_score")]
why = f" | {failed[0]['name']}: {failed[0]['output'][:300]}" if failed else ""
print(f"{who}: {out['score']:g} / {sum(t['max_score'] for t in tests):g}{why}")
PY
done
