#!/usr/bin/env bash
# Configure and build rdzvscope (RelWithDebInfo) into ./build, or into $BUILD_DIR.
# Extra arguments are passed to the CMake configure step, e.g. -DRDZVSCOPE_WERROR=OFF.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
JOBS=${JOBS:-$(nproc)}

echo "build: cmake -S . -B $BUILD_DIR -DCMAKE_BUILD_TYPE=$BUILD_TYPE $*"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "$@"
echo "build: cmake --build $BUILD_DIR -j$JOBS"
cmake --build "$BUILD_DIR" -j"$JOBS"
