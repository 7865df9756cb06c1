#!/usr/bin/env bash
# Install what is missing, build, then run a real 4-rank PyTorch 2.13 job under
#   rdzvscope run -- torchrun --nproc-per-node 4 --rdzv-backend c10d ...
# with a real fault: rank 2 is a straggler that sleeps past the init timeout before
# init_process_group (as a rank still loading a checkpoint would). The other ranks give up at
# the init barrier ("wait timeout after 3000ms"), torchrun stops rank 2 before it ever reached
# the store, and `rdzvscope analyze` names rank 2 as the cause.
#
# Environment: DEMO_RANKS (default 4), DEMO_LATE_RANK (default 2), DEMO_DELAY_S (default 9),
# RDZV_TIMEOUT_S (default 3), DEMO_OUT (default out/demo-<time>), BUILD_DIR (default build),
# DEMO_PYTHON (default: the PyTorch 2.13 venv that install-deps.sh makes).
# DEMO_DELAY_S=0 runs the same job without the fault (the verdict is then "healthy").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RDZVSCOPE_TORCH_VERSIONS=${RDZVSCOPE_TORCH_VERSIONS:-2.13.0} bash scripts/install-deps.sh
bash scripts/build.sh

BUILD_DIR=${BUILD_DIR:-build}
RDZVSCOPE=$BUILD_DIR/bin/rdzvscope
PY=${DEMO_PYTHON:-$(RDZVSCOPE_TORCH_VERSIONS=2.13.0 bash scripts/install-deps.sh --pythons)}
TORCHRUN=$(dirname "$PY")/torchrun
RANKS=${DEMO_RANKS:-4}
LATE=${DEMO_LATE_RANK:-2}
DELAY=${DEMO_DELAY_S:-9}
TIMEOUT=${RDZV_TIMEOUT_S:-3}
OUT=${DEMO_OUT:-out/demo-$(date +%Y%m%d-%H%M%S)}
TRACES=$OUT/traces
LOG=$OUT/logs/torchrun.log

[[ -x $RDZVSCOPE ]] || { echo "demo: $RDZVSCOPE was not built" >&2; exit 1; }
[[ -x $TORCHRUN ]] || { echo "demo: no torchrun beside $PY" >&2; exit 1; }
if [[ -e $OUT && -n $(ls -A "$OUT" 2>/dev/null) ]]; then
  echo "demo: $OUT is not empty; traces of two runs in one directory would be analyzed as one job" >&2
  exit 2
fi
mkdir -p "$OUT/logs"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo
echo "demo: PyTorch $("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))'), $RANKS workers under"
echo "demo:   $RDZVSCOPE run --out $TRACES -- torchrun --nproc-per-node $RANKS --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$PORT examples/train_min.py"
echo "demo: init timeout ${TIMEOUT}s; rank $LATE sleeps ${DELAY}s before init_process_group. Log: $LOG"
rc=0
RDZV_TIMEOUT_S="$TIMEOUT" RDZV_DELAY_S="$DELAY" RDZV_LATE_RANK="$LATE" \
  GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}" OMP_NUM_THREADS=1 \
  timeout 120 "$RDZVSCOPE" run --out "$TRACES" -- \
    "$TORCHRUN" --nnodes 1 --nproc-per-node "$RANKS" --max-restarts 0 \
      --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$PORT" --rdzv-id "demo-$PORT" \
      examples/train_min.py >"$LOG" 2>&1 || rc=$?
echo "demo: torchrun exited with status $rc; what the ranks said:"
grep -E "^train_min|Error:|error:" "$LOG" | grep -v "^  " | sort -u | sed 's/^/  | /' | head -n 12 || true

echo
echo "demo: $RDZVSCOPE analyze $TRACES --log $LOG"
echo
"$RDZVSCOPE" analyze "$TRACES" --log "$LOG"
"$RDZVSCOPE" analyze "$TRACES" --log "$LOG" --format json >"$OUT/diagnosis.json"
echo
echo "demo: the same as JSON: $OUT/diagnosis.json; every record: $RDZVSCOPE dump $TRACES"
