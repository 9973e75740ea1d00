#!/usr/bin/env bash
# Accelerator throughput benchmark (a cycle count, not a timed test): elements per cycle of a
# 1x64x56x56 int8 job, including parameter load and job start, at read latency 16, 64 and 128
# cycles, divided by the bound min(LANES, bus_bits / XW, bus_bits / YW). Builds what it needs.
# Usage: scripts/bench_accel.sh [config ...]   (default: b64_l8, the default accelerator config)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(b64_l8)
targets=""
for c in "${configs[@]}"; do targets="$targets cosim_accel_$c"; done
TARGETS="$targets" BUILD_DIR=$build bash "$root/scripts/build.sh" > /dev/null
for c in "${configs[@]}"; do
  "$build/sim/accel_$c/obj/cosim_accel_$c" --bench
  echo
done
