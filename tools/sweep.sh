#!/usr/bin/env bash
# The CPU-scale sweep the claims need (idmap_lib/book/claims.py), run in the background across sessions:
# resumable (a recorded run is skipped; a run cut off mid-way resumes from its checkpoint) and every finished
# result committed on its own. It trains from a clean checkout of main's latest commit (a worktree of its own),
# so each result's provenance names exactly the code that made it, and writes the results into this checkout.
# Several workers may run at once (one a core): each claims a run with a lock before training it, and a lock
# whose worker is gone is taken over.
#
#   nohup bash tools/sweep.sh > sweep.log 2>&1 &                    (from the repository root)
#   SWEEP_WORKER=2 nohup bash tools/sweep.sh > sweep2.log 2>&1 &    (a second worker, on the other core)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORKER=${SWEEP_WORKER:-1}
TREE=${SWEEP_TREE:-$REPO/../idmap-sweep$([[ $WORKER == 1 ]] || echo "-$WORKER")}
CKPT=${SWEEP_CHECKPOINTS:-$REPO/../idmap-sweep-checkpoints}
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/data/results
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
mkdir -p "$CKPT/locks"

claim() {  # claim RUN-NAME: 0 when this worker now holds it (a lock holds its worker's pid)
  local lock=$CKPT/locks/$1
  if mkdir "$lock" 2>/dev/null; then echo $$ > "$lock/pid"; return 0; fi
  local pid; pid=$(cat "$lock/pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && return 1
  echo $$ > "$lock/pid"; echo "sweep: took over $1 from a stopped worker"; return 0
}

while true; do
  git -C "$TREE" checkout -q --detach main || exit 1  # main's latest commit, clean
  todo=$(cd "$TREE" && PYTHONPATH=$TREE "$PY" -m idmap_lib sweep --missing --out "$OUT")
  [[ -z $todo ]] && { echo "sweep: every run is recorded"; break; }
  run=
  while read -r exp variant seed scale; do
    claim "${exp}__${variant}__${scale}__s${seed}" && { run="$exp $variant $seed $scale"; break; }
  done <<<"$todo"
  [[ -z $run ]] && { echo "sweep: every missing run is being trained by another worker"; break; }
  read -r exp variant seed scale <<<"$run"
  echo "[$(date -u +%FT%TZ)] worker $WORKER: train $exp $variant seed $seed ($scale) at $(git -C "$TREE" rev-parse --short HEAD)"
  (cd "$TREE" && PYTHONPATH=$TREE nice -n 5 "$PY" -m idmap_lib train --experiment "$exp" --variant "$variant" \
     --seed "$seed" --scale "$scale" --out "$OUT" --checkpoint-dir "$CKPT" --checkpoint-every 50 --resume \
     --no-progress) || { echo "sweep: training failed; stop"; exit 1; }
  rm -rf "$CKPT/locks/${exp}__${variant}__${scale}__s${seed}"
  f=$(ls -t "$OUT"/"${exp}__${variant}__${scale}__s${seed}__"*.json 2>/dev/null | head -1)
  [[ -z $f ]] && { echo "sweep: no result file for $exp $variant $seed; stop"; exit 1; }
  for try in 1 2 3 4 5 6 7 8 9 10; do  # another worker may be committing: retry. Only this run's result is
    # committed: anything else in data/results (a test's stray output) is not the sweep's to record
    git -C "$REPO" add -- "$f" && git -C "$REPO" commit -q -m "result: $exp $variant seed $seed ($scale)" \
      -- "$f" && break
    sleep 30
  done
done
