#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in a clang build dir and runs each for a bounded time.
#   bash scripts/fuzz.sh [SECONDS]        default 25 s per target (FUZZ_SECONDS also works)
#   FUZZ_RUNS=N bash scripts/fuzz.sh      N inputs per target from a fixed seed instead (and
#                                         FUZZ_RUNS_<target>=M for one target): the
#                                         same run every time, as CI needs (a finding there
#                                         is reproducible here, and a pass here passes there)
# Env: FUZZ_DIR (build dir, default build-fuzz), FUZZ_TARGETS (default: all four),
#      FUZZ_WORK (scratch corpora and crash files, default $FUZZ_DIR/fuzz-work).
# Each target starts from a copy of its seed corpus (fuzz/corpus/<target>, never written)
# plus fuzz/regressions/<target>. Prints executions and time per target. Exits 1 when any
# target found a crash; the input is kept as $FUZZ_WORK/<target>/crash-* (copy it to
# fuzz/regressions/<target>/ with a descriptive name once it is fixed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_EACH=${1:-${FUZZ_SECONDS:-25}}
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
FUZZ_WORK=${FUZZ_WORK:-$FUZZ_DIR/fuzz-work}
TARGETS=${FUZZ_TARGETS:-fuzz_trace_reader fuzz_log_reader fuzz_analyzer fuzz_flight_recorder}
CC_=${FUZZ_CC:-clang}
CXX_=${FUZZ_CXX:-clang++}

# FUZZ_CONFIGURE=0: FUZZ_DIR is already configured with RDZVSCOPE_FUZZ=ON (scripts/test.sh's
# sanitizer build): built as it is.
[ "${FUZZ_CONFIGURE:-1}" = 0 ] || cmake -S . -B "$FUZZ_DIR" -DCMAKE_C_COMPILER="$CC_" -DCMAKE_CXX_COMPILER="$CXX_" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDZVSCOPE_FUZZ=ON -DRDZVSCOPE_WERROR=ON \
      -DRDZVSCOPE_BUILD_BENCH=OFF -DRDZVSCOPE_BUILD_BPF=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$FUZZ_DIR" -j"$(nproc)" --target $TARGETS

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in $TARGETS; do
  work="$FUZZ_WORK/$t"
  rm -rf "$work/corpus"
  mkdir -p "$work/corpus"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  # Regressions named slow_* (a million-rank job: seconds per run under ASan) are replayed by
  # ctest only: as seeds they would hold the mutator to inputs that slow.
  find fuzz/regressions/"$t" -type f ! -name README.md ! -name 'slow_*' -exec cp {} "$work/corpus/" \;
  log="$work/fuzz.log"
  # FUZZ_RUNS_<target> overrides FUZZ_RUNS for one target (fuzz_analyzer runs the whole
  # diagnosis and every report per input: ten times slower than the readers).
  runs_var="FUZZ_RUNS_$t"
  runs=${!runs_var:-${FUZZ_RUNS:-}}
  if [ -n "$runs" ]; then how="$runs runs from seed 1"; else how="${SECONDS_EACH}s"; fi
  echo "fuzz: $t for $how (log $log)"
  start=$(date +%s.%N)
  rc=0
  if [ -n "$runs" ]; then bound=(-seed=1 -runs="$runs"); else bound=(-max_total_time="$SECONDS_EACH"); fi
  # FUZZ_MAX_SECONDS caps a run-bounded target's time too (whichever comes first): inputs that
  # the mutator grows towards a million-rank job cost seconds each, and CI has a budget.
  if [ -n "$runs" ] && [ -n "${FUZZ_MAX_SECONDS:-}" ]; then bound+=(-max_total_time="$FUZZ_MAX_SECONDS"); fi
  "$FUZZ_DIR/fuzz/$t" "${bound[@]}" -timeout=25 -rss_limit_mb=4096 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" >"$log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line=$(printf '%-18s %9s executions in %5.1f s  exit %d' "$t" "${execs:-?}" \
         "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$rc")
  summary+=("$line")
  if [ "$rc" != 0 ]; then
    failed+=("$t")
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -20 || true
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
  fi
done
echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FOUND PROBLEMS in: ${failed[*]} (inputs kept under $FUZZ_WORK/<target>/)"
  exit 1
fi
echo "fuzz: nothing found"
