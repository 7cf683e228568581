#!/usr/bin/env bash
# One call on a lent GPU: check the engine there, measure it briefly, then train full recipes until the deadline:
# the runs under way first (data/checkpoints/*.pt, resumed), then tools/gpu_queue.py's queue -- a variant's seeds
# as one fused network (engine/fused.py) when the benchmark finds fusion faster, else two runs on two streams.
#
#   bash tools/gpu_session.sh DATA_DIR BUDGET_S [GROUPS]
#
# DATA_DIR holds cifar10-jpeg.tar.gz (as ../shared/data); BUDGET_S is the wall time this script may use (leave
# the device call ~25 s more); GROUPS (default 2): how many groups of the queue (one process each: up to FUSE_MAX
# fused seeds of a variant, or a pair of variants) to train, one after another. Writes to $OUT (default
# /tmp/gpu_out), at most 8 files:
#   log.txt (environment, tests, benchmark, training log), bench.json (grouped vs separate convolutions at
#   ResNet-110's shapes; one run vs N fused at N = 1, 2, 4, 8: the N this window fuses),
#   results.tgz (finished runs' JSON, for data/results/), weights-*.pt (finished runs: model weights),
#   checkpoint-*.pt (unfinished runs: the whole checkpoint, for data/checkpoints/, to resume on the next GPU).
# Before the device call, here: python tools/gpu_preflight.py --fuse 3 --carry <data dir> counts the bytes that
# travel and the files that come back, and says stop if the window would be refused or lose its work.
# Steps that fail are logged and the script goes on; each step has its own timeout inside the budget.
# Dry run on a CPU: GPU_SESSION_ALLOW_CPU=1 bash tools/gpu_session.sh ../shared/data 300 (tiny steps; the tests
# run it). SOLO=1: one run a process (a window too short for a pair to finish can finish one run); RUN_BENCH=0
# skips the benchmark (no fusion: its time goes to training). FULL_CHECK=1 adds the engine's wider tests and the DataLoader benchmark (minutes: not for a window
# that should finish runs).
set -u
DATA=$(cd "$1" && pwd); BUDGET=${2:-540}; NGROUPS=${3:-2}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
WORK=$(mktemp -d); START=$(date +%s)
PY=${PY:-python3}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 IDMAP_DATA=$DATA
LOG=$OUT/log.txt
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
step() {  # step NAME CAP_S CMD...: run with a timeout of min(CAP, what is left - 30 s)
  local name=$1 cap=$2; shift 2
  local t=$(( $(left) - 30 )); (( t > cap )) && t=$cap
  if (( t < 10 )); then say "skip $name (no time left)"; return 1; fi
  say "start $name (timeout ${t}s)"
  timeout --signal=INT --kill-after=10 "$t" "$@" >>"$LOG" 2>&1; local rc=$?
  say "end $name rc=$rc"; return $rc
}

FUSE_MAX=${FUSE_MAX:-3}  # a variant's three seeds (the rule's); the benchmark may choose fewer
say "gpu_session: repo $PWD, data $DATA, budget ${BUDGET}s"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv 2>&1; nproc
  "$PY" -c "import torch, torchvision, sys; print('python', sys.version.split()[0], 'torch', torch.__version__,
'torchvision', torchvision.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version());
print('cuda available', torch.cuda.is_available());
torch.cuda.is_available() and print('capability', torch.cuda.get_device_capability(),
'is_bf16_supported', torch.cuda.is_bf16_supported())"; } >>"$LOG" 2>&1
CUDA=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
if [[ $CUDA == 0 && ${GPU_SESSION_ALLOW_CPU:-0} != 1 ]]; then say "no CUDA device; stop"; exit 3; fi
DRY=$(( 1 - CUDA ))

step data_cache 120 "$PY" -c "from idmap_lib.engine import data; print(data.load('cifar10', '$DATA').source)"

# the engine's CUDA-graph tests on this device (pick_device() -> CUDA): they decide whether runs use the graph
step graph_tests 90 "$PY" -m pytest -q -p no:cacheprovider tests/test_engine_gpu_path.py tests/test_engine_fused.py -k "graph"; RC=$?
GRAPH=--cuda-graph; (( RC != 0 )) && { GRAPH=; say "CUDA-graph tests failed: full runs without --cuda-graph"; }
if [[ ${FULL_CHECK:-0} == 1 ]]; then
  step tests 120 "$PY" -m pytest -q -p no:cacheprovider tests/test_engine_gpu_path.py tests/test_engine_trainer.py \
    tests/test_engine_augment.py -k "not graph"
  step bench 120 "$PY" -m idmap_lib bench --steps $(( DRY ? 5 : 40 )) --workers 4 ${GRAPH}
fi
# <= 45 s: grouped vs separate convolutions, then ResNet-110 at the full recipe's batch alone and N = 1, 2, 4, 8
# fused (aggregate img/s, the same steps each): the N with the most images per second, if fusion beats one run
BENCH="depth=110, ns=(1, 2, 4, 8), steps=20, scale='full'" BENCH_CAP=45
(( DRY )) && BENCH="depth=8, ns=(1, 2), steps=3, warmup=1" BENCH_CAP=200
(( ${RUN_BENCH:-1} )) && step bench $BENCH_CAP "$PY" -c "import sys; sys.path.insert(0, 'tools'); import bench, json
r = {'grouped_conv': bench.grouped_conv(n=4, reps=$(( DRY ? 2 : 20 ))),
     'fused': bench.fused($BENCH, cuda_graph=bool('$GRAPH'))}
json.dump(r, open('$OUT/bench.json', 'w'), indent=1)"
FUSE=$("$PY" -c "import json; f = json.load(open('$OUT/bench.json'))['fused']['fused']
best = max(f, key=lambda n: f[n]['img_per_s_total']); print(min(int(best), $FUSE_MAX) if f[best]['ratio'] > 1 else 1)" \
  2>/dev/null || echo 1)
SOLO_ARG=(); (( ${SOLO:-0} )) && SOLO_ARG=(--solo)
QUEUE=$("$PY" tools/gpu_queue.py --groups "$NGROUPS" --fuse "$FUSE" "${SOLO_ARG[@]}")
say "fuse $FUSE seeds per group; queue: $(echo "$QUEUE" | tr '\n' ';')"

# full recipes until the deadline, group by group (a pair: one process, a CUDA stream each); the group the deadline
# cuts off stops with a checkpoint, which comes back to resume on the next GPU
mkdir -p "$WORK/ck" "$WORK/results"
TRAIN=(-m idmap_lib train --scale full --data "$DATA" --out "$WORK/results" --checkpoint-dir "$WORK/ck"
       --checkpoint-every 2000 --no-progress $GRAPH)
if (( DRY )); then TRAIN+=(--max-steps 3)   # (a CUDA checkpoint cannot resume on the CPU)
else cp data/checkpoints/*.pt "$WORK/ck/" 2>/dev/null && say "in flight: $(ls "$WORK/ck" | tr '\n' ' ')"; TRAIN+=(--resume); fi
while read -r exp variants seeds; do
  [[ -z $exp ]] && continue
  FUSED=(); [[ $seeds == *,* ]] && FUSED=(--fused)  # several seeds of one variant: one fused network
  step "train_${exp}_${variants}_s$seeds" 100000 "$PY" "${TRAIN[@]}" --experiment "$exp" --variant "$variants" \
    --seed "$seeds" "${FUSED[@]}"
done <<<"$QUEUE"

# what comes back: finished results (one tarball), weights of finished runs, checkpoints of unfinished ones
tar -czf "$OUT/results.tgz" -C "$WORK/results" . && say "results: $(ls "$WORK/results" | tr '\n' ' ')"
"$PY" - "$WORK" "$OUT" <<'EOF' >>"$LOG" 2>&1
import glob, json, os, sys, torch
work, out = sys.argv[1:]
done = {(json.load(open(f))["config"]["variant"], json.load(open(f))["config"]["seed"])
        for f in glob.glob(f"{work}/results/*.json")}
for ck in sorted(glob.glob(f"{work}/ck/*.pt")):
    c = torch.load(ck, weights_only=True)
    name = os.path.basename(ck)[:-3]
    if (c["config"]["variant"], c["config"]["seed"]) in done:
        torch.save({"config": c["config"], "config_hash": c["config_hash"], "model": c["model"]},
                   f"{out}/weights-{name}.pt")
        print("weights of finished run", name, "step", c["step"])
    else:
        os.replace(ck, f"{out}/checkpoint-{name}.pt")
        print("checkpoint of unfinished run", name, "at step", c["step"], "of", c["config"]["steps"])
EOF
say "done; files: $(ls "$OUT" | tr '\n' ' ')"
rm -rf "$WORK"
