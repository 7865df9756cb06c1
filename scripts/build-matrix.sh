#!/usr/bin/env bash
# The builds a user may do, each with warnings as errors (CI's setting; users' builds have it
# off): GCC Release, GCC RelWithDebInfo (the main build, scripts/build.sh) and clang. The
# Release build is then installed into a scratch prefix and the installed tool is run once,
# so that `cmake --install` is known to give a working tree (bin/ finds lib/'s shim).
# The Release build is what a user builds and installs: the product without tests and
# benchmarks (RelWithDebInfo already compiles those with GCC at -O2). The clang build compiles
# everything, tests included, at -O0: clang's warnings do not depend on the optimizer, and
# on CI's two cores the optimizer was most of this script's time.
#   bash scripts/build-matrix.sh             both extra builds (build-release, build-clang)
# Env: MATRIX_BUILDS (default "gcc-release clang"), JOBS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

JOBS=${JOBS:-$(nproc)}
for b in ${MATRIX_BUILDS:-gcc-release clang}; do
  case "$b" in
    gcc-release) dir=build-release
                 args=(-DCMAKE_BUILD_TYPE=Release -DRDZVSCOPE_BUILD_TESTS=OFF -DRDZVSCOPE_BUILD_BENCH=OFF) ;;
    # The product with clang; the tests' code is compiled by clang in the fuzz build's
    # libraries only (CI's time budget: the test programs took most of this build's time).
    clang) dir=build-clang
           args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                 -DRDZVSCOPE_BUILD_TESTS=${RDZVSCOPE_CLANG_TESTS:-OFF} -DRDZVSCOPE_BUILD_BENCH=OFF) ;;
    *) echo "build-matrix: unknown build '$b' (known: gcc-release clang)" >&2; exit 2 ;;
  esac
  echo "build-matrix: $b in $dir"
  cmake -S . -B "$dir" -DRDZVSCOPE_WERROR=ON "${args[@]}" >/dev/null
  cmake --build "$dir" -j"$JOBS"
done

case " ${MATRIX_BUILDS:-gcc-release clang} " in
  *" gcc-release "*)
    prefix=$(mktemp -d)
    trap 'rm -rf "$prefix"' EXIT
    cmake --install build-release --prefix "$prefix" >/dev/null
    for f in bin/rdzvscope include/rdzvscope/trace_format.h; do
      [ -e "$prefix/$f" ] || { echo "build-matrix: cmake --install left out $f" >&2; exit 1; }
    done
    ls "$prefix"/lib*/librdzvscope.so >/dev/null 2>&1 \
      || { echo "build-matrix: cmake --install left out librdzvscope.so" >&2; exit 1; }
    ls "$prefix"/lib*/cmake/rdzvscope/rdzvscopeTargets.cmake >/dev/null 2>&1 \
      || { echo "build-matrix: cmake --install left out the CMake package files" >&2; exit 1; }
    # The installed CLI must find the installed shim and record a process with it.
    traces="$prefix/traces"
    "$prefix/bin/rdzvscope" run --out "$traces" -- \
      python3 -c "import socket; socket.getaddrinfo('localhost', 29500)" >/dev/null
    ls "$traces"/*.rzt >/dev/null 2>&1 \
      || { echo "build-matrix: the installed 'rdzvscope run' wrote no trace in $traces" >&2; exit 1; }
    "$prefix/bin/rdzvscope" dump "$traces" >/dev/null
    echo "build-matrix: cmake --install works (prefix $prefix)" ;;
esac
