#!/usr/bin/env bash
# What the networks see at the lr jump (idmap_book/plan/jump_watch.py), measured in the background from a clean
# checkout of main's latest commit (a worktree of its own: each record's provenance names the committed code), one
# record at a time, each committed on its own; resumable (a recorded one is skipped). Rows to measure may be named:
#   nice -n 19 nohup bash tools/jump_watch.sh > jump.log 2>&1 &
#   ROWS="original+final_bn_relu-110 full_preact+no_final-110" nohup bash tools/jump_watch.sh > jump.log 2>&1 &
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
TREE=${JUMP_TREE:-$REPO/../idmap-jump}
PY=${PY:-$REPO/.venv/bin/python}
export IDMAP_DATA=${IDMAP_DATA:-$(cd "$REPO/.." && pwd)/shared/data} OMP_NUM_THREADS=1
[[ -d $TREE ]] || git -C "$REPO" worktree add -q --detach "$TREE" main
git -C "$TREE" checkout -q --detach main || exit 1
echo "[$(date -u +%FT%TZ)] jump_watch at $(git -C "$TREE" rev-parse --short HEAD)"
# the records go into this checkout's data/mechanisms (IDMAP_ROOT-free: the worktree's DEFAULT_ROOT is its own, so
# each record is copied across as it lands)
(cd "$TREE" && PYTHONPATH=$TREE "$PY" -m idmap_book.plan.jump_watch ${ROWS:-}) 2>&1 | while read -r line; do
  echo "$line"
  f=$(sed -n 's/^recorded: \(.*\) ([0-9]* s)$/\1/p' <<<"$line")
  [[ -z $f ]] && continue
  cp "$f" "$REPO/data/mechanisms/" && name=$(basename "$f")
  for try in 1 2 3 4 5 6 7 8 9 10; do
    git -C "$REPO" add -- "data/mechanisms/$name" && \
      git -C "$REPO" commit -q -m "measurement: ${name%.json}" -- "data/mechanisms/$name" && break
    sleep 30
  done
done
