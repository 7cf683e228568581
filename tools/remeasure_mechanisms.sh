#!/usr/bin/env bash
# The mechanism records (data/mechanisms/mech_forward_signal__*, mech_training_forwards__*) measured again from a clean
# checkout of main's latest commit, so that each names a committed tree; in the background, resumable (a record
# measured already is skipped). Each new record replaces the old one only where every value but the timings is
# identical; a record whose values moved stays where it was measured, named in the log: the library changed what it
# measures.
#   nice -n 19 nohup bash tools/remeasure_mechanisms.sh > remeasure.log 2>&1 &
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
TREE=${REMEASURE_TREE:-$REPO/../idmap-remeasure}
OUT=${REMEASURE_OUT:-$REPO/../idmap-remeasure-records}
PY=${PY:-$REPO/.venv/bin/python}
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data} OMP_NUM_THREADS=1
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
git -C "$TREE" checkout -q --detach main || exit 1
mkdir -p "$OUT"
echo "[$(date -u +%FT%TZ)] remeasuring at $(git -C "$TREE" rev-parse --short HEAD) into $OUT"
(cd "$TREE" && PYTHONPATH=$TREE "$PY" -c "
from idmap_book.evidence import mechanisms
mechanisms.measure_missing(out_dir='$OUT')") || exit 1
"$PY" - "$OUT" "$REPO/data/mechanisms" <<'PY'
import json, shutil, sys
from pathlib import Path
new, old = Path(sys.argv[1]), Path(sys.argv[2])
TIMINGS = {"img_per_s", "wall_s"}  # how fast this machine was that day: not what is measured


def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(k in TIMINGS or same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


for f in sorted(new.glob("*.json")):
    mine = json.loads(f.read_text())
    if mine.get("git", {}).get("library_modified") is not False:
        continue
    if (old / f.name).is_file() and same(json.loads((old / f.name).read_text())["values"], mine["values"]):
        shutil.copy(f, old / f.name)
        print("same values:", f.name)
    else:  # left where it was measured: the library changed what it measures, a finding to read
        print("VALUES MOVED (not copied):", f)
PY
git -C "$REPO" add -- data/mechanisms && git -C "$REPO" commit -q -m "data/mechanisms: re-recorded from a committed tree" -- data/mechanisms
