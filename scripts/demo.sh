#!/usr/bin/env bash
# Install what is missing, build, then trace a real 2-rank PyTorch job (gloo, static
# rendezvous over TCPStore on 127.0.0.1) with `rdzvscope run` and show what was recorded.
#
# Environment: DEMO_RANKS (default 2), DEMO_OUT (default out/demo-<time>), BUILD_DIR
# (default build), RDZV_TIMEOUT_S (default 30).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

BUILD_DIR=${BUILD_DIR:-build}
RDZVSCOPE=$BUILD_DIR/bin/rdzvscope
PY=/usr/bin/python3   # Debian's python3-torch is installed for this interpreter only
RANKS=${DEMO_RANKS:-2}
OUT=${DEMO_OUT:-out/demo-$(date +%Y%m%d-%H%M%S)}
TRACES=$OUT/traces

if [[ ! -x $RDZVSCOPE ]]; then
  echo "demo: $RDZVSCOPE was not built" >&2
  exit 1
fi
mkdir -p "$OUT"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo
echo "demo: $RANKS ranks, MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT, traces in $TRACES"
pids=()
for ((r = 0; r < RANKS; r++)); do
  echo "demo: RANK=$r $RDZVSCOPE run --out $TRACES -- $PY examples/train_min.py"
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE="$RANKS" MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" \
    RDZV_TIMEOUT_S="${RDZV_TIMEOUT_S:-30}" GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}" \
    OMP_NUM_THREADS=1 \
    timeout 120 "$RDZVSCOPE" run --out "$TRACES" -- "$PY" examples/train_min.py \
    >"$OUT/rank$r.log" 2>&1 &
  pids+=($!)
done

failed=0
for ((r = 0; r < RANKS; r++)); do
  rc=0
  wait "${pids[$r]}" || rc=$?
  echo "demo: rank $r exited with status $rc; its output:"
  sed 's/^/    /' "$OUT/rank$r.log"
  ((rc == 0)) || failed=1
done

echo
echo "demo: $RDZVSCOPE dump $TRACES | $PY scripts/trace_summary.py"
"$RDZVSCOPE" dump "$TRACES" >"$OUT/dump.jsonl"
"$PY" scripts/trace_summary.py "$OUT/dump.jsonl"

echo
echo "demo: every record as JSON lines: $OUT/dump.jsonl  (or: $RDZVSCOPE dump $TRACES)"
if ((failed)); then
  echo "demo: a rank failed; its trace above shows how far it got" >&2
  exit 1
fi
