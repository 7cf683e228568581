#!/usr/bin/env bash
# The CPU-scale sweep the claims need (idmap_book/evidence/claims.py), run in the background across sessions: a loop
# around the library's queue (python -m idmap_book sweep --executor local: idmap_book/plan/queue.py), one job at a
# time through submitit's local executor -- resumable (a recorded run is skipped; a run cut off mid-way resumes from
# its checkpoint) and every finished result committed on its own. It trains from a clean checkout of main's latest
# commit (a worktree of its own, checked out again before every run), so each result's provenance names exactly the
# code that made it, and writes the results into this checkout. Several workers may run at once (one a core): the
# queue's ledger (shared by them) hands each run to one worker, and a run whose worker is gone is sent again.
#
#   nohup bash tools/sweep.sh > sweep.log 2>&1 &                    (from the repository root)
#   SWEEP_WORKER=2 nohup bash tools/sweep.sh > sweep2.log 2>&1 &    (a second worker, on the other core)
#   .venv/bin/python -m idmap_book sweep --status --folder ../idmap-sweep-checkpoints/queue   (where it stands)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORKER=${SWEEP_WORKER:-1}
TREE=${SWEEP_TREE:-$REPO/../idmap-sweep$([[ $WORKER == 1 ]] || echo "-$WORKER")}
CKPT=${SWEEP_CHECKPOINTS:-$REPO/../idmap-sweep-checkpoints}
QUEUE=${SWEEP_QUEUE:-$CKPT/queue}  # submitit's folder (jobs, logs) and the ledger, shared by the workers
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/data/results
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

while true; do
  git -C "$TREE" checkout -q --detach main || exit 1  # main's latest commit, clean
  echo "[$(date -u +%FT%TZ)] worker $WORKER at $(git -C "$TREE" rev-parse --short HEAD)"
  (cd "$TREE" && PYTHONPATH=$TREE nice -n 5 "$PY" -m idmap_book sweep --executor local --max-jobs 1 --out "$OUT" \
     --folder "$QUEUE" --checkpoint-dir "$CKPT") 2>&1 | tee "$LOG"
  [[ ${PIPESTATUS[0]} == 0 ]] || { echo "sweep: training failed (the job's log: $QUEUE/jobs); stop"; exit 1; }
  files=$(sed -n 's/^recorded: //p' "$LOG")
  [[ -z $files ]] && { echo "sweep: every run is recorded or under way with another worker"; break; }
  for f in $files; do
    for try in 1 2 3 4 5 6 7 8 9 10; do  # another worker may be committing: retry. Only this run's result is
      # committed: anything else in data/results (a test's stray output) is not the sweep's to record
      git -C "$REPO" add -- "$f" && git -C "$REPO" commit -q -m "result: $(basename "$f" .json)" -- "$f" && break
      sleep 30
    done
  done
done
