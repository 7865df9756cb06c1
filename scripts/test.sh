#!/usr/bin/env bash
# Install what is missing, build, and run every test (ctest). .ci/run calls this.
# Extra arguments go to the main ctest run, e.g. `bash scripts/test.sh -L torch` or `-LE torch`.
# Then the unit tests run again in an ASan+UBSan build (build-asan); RDZVSCOPE_SKIP_SANITIZE=1
# skips that second pass for a quick local run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
echo "test: ctest --test-dir $BUILD_DIR --output-on-failure -j2 $*"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"

if [ "${RDZVSCOPE_SKIP_SANITIZE:-0}" != 1 ]; then
  # The shim is left out of the sanitizer build on purpose (see CMakeLists.txt): it runs in
  # uninstrumented hosts. The reader, the CLI and their tests get ASan and UBSan.
  ASAN_DIR=${ASAN_DIR:-build-asan}
  echo "test: sanitizer build in $ASAN_DIR (address,undefined)"
  cmake -S . -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Debug -DRDZVSCOPE_SANITIZE=address,undefined \
        -DRDZVSCOPE_BUILD_BENCH=OFF
  cmake --build "$ASAN_DIR" -j"$(nproc)" --target rdzvscope rdzvscope_unit_tests make_test_trace \
        rdzvscope_logs_tests rdzvscope_diagnose_tests
  echo "test: ctest --test-dir $ASAN_DIR -R '^unit\\.' --output-on-failure -j2"
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$ASAN_DIR" -R '^unit\.' --output-on-failure -j2
fi
