#!/usr/bin/env bash
# RTL checks for one generated core directory:
#   1. verilator --lint-only -Wall: zero warnings
#   2. Yosys `proc; flatten; check -assert`: no latches, no undriven or multiply driven nets
#      (with --synth: a full generic `synth` as well, for the few configurations that run it)
#   3. Icarus: compile with the smoke test bench and run one golden-model vector set
# Usage: check_rtl.sh <rtl-dir> <top-module> <smoke_vectors-binary> [--synth]
set -euo pipefail
dir=$1
top=$2
vectors=$3
synth=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t files < <(sed "s|^|$dir/|" "$dir/filelist.f")

echo "== lint: verilator --lint-only -Wall ($top)"
if ! out=$(verilator --lint-only -Wall --top-module "$top" "${files[@]}" 2>&1) || [ -n "$out" ]; then
  echo "$out"
  echo "FAIL: lint"
  exit 1
fi
echo "lint clean"

echo "== yosys: hierarchy; proc; flatten; check -assert; no latches${synth:+ (and synth)}"
bash "$root/scripts/yosys_check.sh" $synth "$top" "${files[@]}" || exit 1
echo "no latches, check -assert passed"

if grep -q '"kind": "accelerator"' "$dir/manifest.json"; then
  echo "== icarus compile (accelerator top)"
  iverilog -g2005 -Wall -s "$top" -o "$work/top.vvp" "${files[@]}" 2> "$work/iverilog.log" || {
    cat "$work/iverilog.log"; echo "FAIL: iverilog"; exit 1; }
  if grep -q . "$work/iverilog.log"; then cat "$work/iverilog.log"; echo "FAIL: iverilog warnings"; exit 1; fi
  echo "PASS: $top"
  exit 0
fi
echo "== icarus smoke"
"$vectors" "$dir/manifest.json" "$work" >/dev/null
read -r -a params < "$work/iverilog_params.txt"
iverilog -g2005 -Wall -DDUT="$top" -s normcore_smoke_tb "${params[@]}" -o "$work/tb.vvp" \
  "$root/hw/tb/normcore_smoke_tb.v" "${files[@]}" 2> "$work/iverilog.log" || {
  cat "$work/iverilog.log"; echo "FAIL: iverilog"; exit 1; }
if grep -v "timescale" "$work/iverilog.log" | grep -q .; then
  cat "$work/iverilog.log"
  echo "FAIL: iverilog warnings"
  exit 1
fi
result=$(cd "$work" && vvp -n tb.vvp | grep SMOKE || true)
echo "$result"
case "$result" in
  "SMOKE PASS"*) ;;
  *) echo "FAIL: icarus smoke"; exit 1 ;;
esac
echo "PASS: $top"
