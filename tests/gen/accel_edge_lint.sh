#!/usr/bin/env bash
# Accelerators at the edges of the configuration space (1 channel, 1-bit INNER, 1 lane, 2-bit
# widths, bursts of 1, the ring): the whole `<n>_top` passes scripts/check_top.sh (Verilator
# -Wall, the Yosys check, Icarus without a message). (A 1-bit
# element count once made the parameter gearbox's last-group compare constant: a lint warning.)
# With 1 channel and a 1-bit INNER the core's set-up stage computes only constants (S <= K for
# every K): the emitter prints such blocks as continuous assignments, since Icarus never
# evaluates an always @* block that reads no net ("@* found no sensitivities"); a warning from
# Icarus fails the test.
# Usage: accel_edge_lint.sh <normcore-binary>
set -euo pipefail
nc=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(
  "--max-channels 1 --inner-bits 1"
  "--lanes 1 --in-bits 2 --out-bits 2 --scale-bits 2 --offset-bits 2 --in-unsigned --out-unsigned --max-channels 1 --inner-bits 1 --bus-bits 32 --max-burst 1 --outstanding 1"
  "--lanes 3 --max-channels 2 --inner-bits 2 --bus-bits 32 --ring"
)
fail=0
for i in "${!configs[@]}"; do
  d=$work/a$i
  # shellcheck disable=SC2086
  "$nc" gen --accel --name e$i ${configs[$i]} -o "$d" >/dev/null
  if bash "$root/scripts/check_top.sh" "${configs[$i]}" --dir "$d"; then
    echo "ok: ${configs[$i]}"
  else
    fail=1
  fi
done
exit $fail
