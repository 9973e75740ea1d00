#!/usr/bin/env bash
# Configure and build normcore (Release, Ninja, ccache) into ${BUILD_DIR:-build}.
# Extra arguments go to the CMake configure step. Targets: ${TARGETS:-all}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
mkdir -p "$build"
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > "$build/configure.log" 2>&1 || {
  cat "$build/configure.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target ${TARGETS:-all}
