#!/usr/bin/env bash
# Install what is missing, build, and run every test (ctest). .ci/run calls this.
# Extra arguments go to ctest, e.g. `bash scripts/test.sh -L torch` or `-LE torch`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
echo "test: ctest --test-dir $BUILD_DIR --output-on-failure -j2 $*"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
