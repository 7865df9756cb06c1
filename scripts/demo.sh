#!/usr/bin/env bash
# Install what is missing, build, then run a real 4-rank PyTorch job (gloo, static rendezvous
# over TCPStore on 127.0.0.1) under `rdzvscope run` with a real fault: rank 2 is a straggler
# that sleeps past the init timeout before init_process_group (as a rank still loading a
# checkpoint would). The other ranks give up with "Socket Timeout", and
# `rdzvscope analyze` names rank 2 as the cause, with how late it was and what it was doing.
#
# Environment: DEMO_RANKS (default 4), DEMO_LATE_RANK (default 2), DEMO_DELAY_S (default 9),
# RDZV_TIMEOUT_S (default 3), DEMO_OUT (default out/demo-<time>), BUILD_DIR (default build).
# DEMO_DELAY_S=0 runs the same job without the fault (the verdict is then "healthy").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

BUILD_DIR=${BUILD_DIR:-build}
RDZVSCOPE=$BUILD_DIR/bin/rdzvscope
PY=/usr/bin/python3   # Debian's python3-torch is installed for this interpreter only
RANKS=${DEMO_RANKS:-4}
LATE=${DEMO_LATE_RANK:-2}
DELAY=${DEMO_DELAY_S:-9}
TIMEOUT=${RDZV_TIMEOUT_S:-3}
OUT=${DEMO_OUT:-out/demo-$(date +%Y%m%d-%H%M%S)}
TRACES=$OUT/traces

[[ -x $RDZVSCOPE ]] || { echo "demo: $RDZVSCOPE was not built" >&2; exit 1; }
if [[ -e $OUT && -n $(ls -A "$OUT" 2>/dev/null) ]]; then
  echo "demo: $OUT is not empty; traces of two runs in one directory would be analyzed as one job" >&2
  exit 2
fi
mkdir -p "$OUT/logs"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo
echo "demo: $RANKS ranks, MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT, init timeout ${TIMEOUT}s;"
echo "demo: rank $LATE sleeps ${DELAY}s before init_process_group. Traces in $TRACES, logs in $OUT/logs"
pids=()
for ((r = 0; r < RANKS; r++)); do
  delay=0
  ((r == LATE)) && delay=$DELAY
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE="$RANKS" MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" \
    RDZV_TIMEOUT_S="$TIMEOUT" RDZV_DELAY_S="$delay" GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}" \
    OMP_NUM_THREADS=1 \
    timeout 120 "$RDZVSCOPE" run --out "$TRACES" -- "$PY" examples/train_min.py \
    >"$OUT/logs/rank$r.log" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < RANKS; r++)); do
  rc=0
  wait "${pids[$r]}" || rc=$?
  echo "demo: rank $r exited with status $rc; last line: $(tail -n 1 "$OUT/logs/rank$r.log")"
done

echo
echo "demo: $RDZVSCOPE analyze $TRACES --log $OUT/logs/rank*.log"
echo
"$RDZVSCOPE" analyze "$TRACES" --log "$OUT"/logs/rank*.log
"$RDZVSCOPE" analyze "$TRACES" --log "$OUT"/logs/rank*.log --format json >"$OUT/diagnosis.json"
echo
echo "demo: the same as JSON: $OUT/diagnosis.json; every record: $RDZVSCOPE dump $TRACES"
