#!/usr/bin/env bash
# Accelerator throughput benchmark (a cycle count, not a timed test): a 1x64x56x56 job (NCHW;
# 9x7x56x56 where MAX_CHANNELS is 7), cycles from START to the interrupt, parameter load and job
# start included, at read latency 16, 64 and 128 cycles; elements per cycle divided by the bound
# min(LANES, bus_bits / XW, bus_bits / YW); then the many-small-jobs case (issue 19): one
# 1x64x7x7 job through START, its fixed overhead and its rate against the large job's; on a
# `--ring` configuration (b64_l8_ring) also 1000 such jobs on the descriptor ring, sharing one
# table or each with its own: cycles and fixed overhead a job, the aggregate rate against the
# large job's, host register accesses a job. Each configuration is an accelerator co-simulation
# config of sim/accel.cmake; the script builds what it needs and ends with the lowest ratios.
# Usage: scripts/bench_accel.sh [config ...]   (default: the configurations below)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(b64_l8 b32_l3 b128_l5 b128_l6 b64_l7 b32_l4 b256_l16 b64_l8_ring)
targets=""
for c in "${configs[@]}"; do targets="$targets cosim_accel_$c"; done
TARGETS="$targets" BUILD_DIR=$build bash "$root/scripts/build.sh" > /dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
for c in "${configs[@]}"; do
  "$build/sim/accel_$c/obj/cosim_accel_$c" --bench | tee -a "$out" || rc=1
  echo
done
# Rows are "| latency | cycles | elements/cycle | bound | ratio | ..."; the lowest ratio of all.
# After "many small jobs" (until the next config) rows are "| latency | cycles a job | large-job
# rate | fixed overhead | small / large |": their lowest ratio separately.
# On the ring ("descriptor ring" until the next config) rows are "| latency | large rate | tables
# | cycles a job | fixed overhead | small / large | accesses a job |".
# The ring's breakdown ("where a shared-table job's cycles go") has no ratios: skipped.
awk -F'|' '/^config/ { small = 0 } /many small jobs, START/ { small = 1 } /descriptor ring/ { small = 2 }
  /where a shared-table job/ { small = 3 }
  $2 ~ /^ *[0-9]+ *$/ && small == 0 { r = $6 + 0; if (n == 0 || r < lo) lo = r; n++ }
  $2 ~ /^ *[0-9]+ *$/ && small == 1 { r = $6 + 0; if (m == 0 || r < slo) slo = r; m++ }
  $2 ~ /^ *[0-9]+ *$/ && small == 2 && $4 ~ /shared/ { r = $7 + 0; if (k == 0 || r < rlo) rlo = r; k++ }
  $2 ~ /^ *[0-9]+ *$/ && small == 2 && $4 !~ /shared/ { r = $7 + 0; if (q == 0 || r < dlo) dlo = r; q++ }
  END { printf "lowest ratio to the bound over %d runs: %.3f\n", n, lo
        printf "many small jobs (START per job): lowest small / large rate over %d runs: %.3f\n", m, slo
        if (k > 0) printf "many small jobs (ring, shared table): lowest small / large rate over %d runs: %.3f\n", k, rlo
        if (q > 0) printf "many small jobs (ring, a table per job): lowest small / large rate over %d runs: %.3f\n", q, dlo }' "$out"
exit $rc
