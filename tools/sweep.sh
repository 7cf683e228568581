#!/usr/bin/env bash
# The CPU-scale sweep the claims need (idmap_lib/book/claims.py), run in the background across sessions:
# resumable (a recorded run is skipped; a run cut off mid-way resumes from its checkpoint) and every finished
# result committed on its own. It trains from a clean checkout of main's latest commit (a second worktree),
# so each result's provenance names exactly the code that made it, and writes the results into this checkout.
#
#   nohup bash tools/sweep.sh > sweep.log 2>&1 &         (from the repository root)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
TREE=${SWEEP_TREE:-$REPO/../idmap-sweep}
CKPT=${SWEEP_CHECKPOINTS:-$REPO/../idmap-sweep-checkpoints}
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/data/results
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data}
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
while true; do
  git -C "$TREE" checkout -q --detach main || exit 1  # main's latest commit, clean
  next=$(cd "$TREE" && PYTHONPATH=$TREE "$PY" -m idmap_lib sweep --next --out "$OUT")
  [[ -z $next ]] && { echo "sweep: every run is recorded"; break; }
  read -r exp variant seed <<<"$next"
  echo "[$(date -u +%FT%TZ)] train $exp $variant seed $seed at $(git -C "$TREE" rev-parse --short HEAD)"
  (cd "$TREE" && PYTHONPATH=$TREE nice -n 5 "$PY" -m idmap_lib train --experiment "$exp" --variant "$variant" \
     --seed "$seed" --scale shrunk --out "$OUT" --checkpoint-dir "$CKPT" --checkpoint-every 50 --resume \
     --no-progress) || { echo "sweep: training failed; stop"; exit 1; }
  f=$(ls -t "$OUT"/"${exp}__${variant}__shrunk__s${seed}__"*.json 2>/dev/null | head -1)
  [[ -z $f ]] && { echo "sweep: no result file for $exp $variant $seed; stop"; exit 1; }
  for try in 1 2 3 4 5 6 7 8 9 10; do  # a commit or merge may be in progress: retry; a result left uncommitted
    # by an earlier failure goes with this one (the whole results folder is committed, nothing else)
    git -C "$REPO" add -- data/results && git -C "$REPO" commit -q -m "result: $exp $variant seed $seed (CPU scale)" \
      -- data/results && break
    sleep 30
  done
done
