#!/usr/bin/env bash
# Host runtime benchmark: ref backend throughput vs memcpy on a 64 MiB int8 tensor, register
# accesses per job, sim backend host overhead per job. Prints figures; asserts nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
TARGETS="bench_runtime device_normcore ${BENCH_SIM_TARGET:-sim_normcore}" BUILD_DIR=$build \
  bash "$root/scripts/build.sh" > /dev/null
"$build/runtime/bench_runtime" "$build/devices" "${MIB:-64}"
