#!/usr/bin/env bash
# Paper B's MNIST grid at the full recipe (idmap_book/plan/mnist_grid.py), in the background across sessions: one depth
# at a time, its missing runs trained together as one stacked network, resumable (checkpoints), each finished
# depth's results committed (the d = 100 nets' weights stay in data/weights/, not committed). Trains from a clean worktree of main's latest commit
# (its own, apart from tools/sweep.sh's) so each result's provenance names the code that made it. One thread:
# these nets are too small for a second core to help, which stays with the CIFAR sweep.
#
#   nohup bash tools/mnist_grid.sh > mnist.log 2>&1 &         (from the repository root)
#   KINDS=gresnet_keras DEPTHS="10 100" nohup bash tools/mnist_grid.sh > mnist.log 2>&1 &   (chapter 10's probe)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
TREE=${GRID_TREE:-$REPO/../idmap-mnist}
CKPT=${GRID_CHECKPOINTS:-$REPO/../idmap-mnist-checkpoints}
PY=${PY:-$REPO/.venv/bin/python}
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
for d in ${DEPTHS:-100 10 50 20 2}; do
  git -C "$TREE" checkout -q --detach main || exit 1
  echo "[$(date -u +%FT%TZ)] mnist d=$d at $(git -C "$TREE" rev-parse --short HEAD)"
  (cd "$TREE" && PYTHONPATH=$TREE nice -n 5 "$PY" -m idmap_book mnist --depths "$d" --seeds "${SEEDS:-0,1,2}" --kinds "${KINDS:-plain,resnet,gresnet}" \
     --out "$REPO/data/results" --weights-dir "$REPO/data/weights" --checkpoint-dir "$CKPT") \
     || { echo "mnist: training failed; stop"; exit 1; }
  for try in 1 2 3 4 5 6 7 8 9 10; do  # the CIFAR sweep may be committing: retry
    git -C "$REPO" add -- data/results 2>/dev/null
    git -C "$REPO" diff --cached --quiet && break
    git -C "$REPO" commit -q -m "result: b_mnist d=$d ${KINDS:-} (full recipe, stacked)" -- data/results && break
    sleep 30
  done
done
echo "mnist: every depth is recorded"
