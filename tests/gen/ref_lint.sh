#!/usr/bin/env bash
# Reference designs of the PPA harness: every design, several configurations, must be
# verilator --lint-only -Wall clean (zero warnings), pass the Yosys check (scripts/yosys_check.sh:
# no latches, `check -assert`), and compile in Icarus. decomposed-core (the core with decomposed lanes) runs
# configuration i at pipeline 3 + i (3..8). Usage: ref_lint.sh <normcore-binary>
set -euo pipefail
nc=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(
  "--lanes 4 --in-bits 8 --out-bits 8 --scale-bits 16 --shift-bits 32 --max-channels 512"
  "--lanes 4 --in-bits 8 --out-bits 8 --scale-bits 16 --shift-bits 16 --max-channels 512"
  "--lanes 1 --in-bits 8 --out-bits 8 --scale-bits 16 --shift-bits 32 --max-channels 64"
  "--lanes 3 --in-bits 4 --out-bits 8 --scale-bits 10 --shift-bits 20 --max-channels 37 --in-unsigned"
  "--lanes 2 --in-bits 16 --out-bits 16 --scale-bits 12 --shift-bits 44 --max-channels 2048 --out-unsigned"
  "--lanes 8 --in-bits 8 --out-bits 4 --scale-bits 16 --shift-bits 32 --max-channels 1"
)
fail=0
for design in bare-mac decomposed decomposed-core; do
  for i in "${!configs[@]}"; do
    d=$work/${design}_$i
    extra=()
    [ "$design" = decomposed-core ] && extra=(--pipeline $((3 + i)))
    # shellcheck disable=SC2086
    "$nc" gen --design "$design" --name r$i ${configs[$i]} "${extra[@]}" -o "$d" >/dev/null
    top=$(sed -n 's/^ *"top": "\([^"]*\)".*/\1/p' "$d/manifest.json")
    mapfile -t files < <(sed "s|^|$d/|" "$d/filelist.f")
    if ! out=$(verilator --lint-only -Wall --top-module "$top" "${files[@]}" 2>&1) || [ -n "$out" ]; then
      echo "$out"; echo "FAIL lint: $design ${configs[$i]}"; fail=1; continue
    fi
    if ! bash "$root/scripts/yosys_check.sh" "$top" "${files[@]}"; then
      echo "FAIL yosys: $design ${configs[$i]}"; fail=1; continue
    fi
    if ! out=$(iverilog -g2005 -o "$work/a.out" -s "$top" "${files[@]}" 2>&1) || [ -n "$out" ]; then
      echo "$out"; echo "FAIL icarus: $design ${configs[$i]}"; fail=1; continue
    fi
    echo "ok: $design ${configs[$i]} ${extra[*]} ($top)"
  done
done
exit $fail
