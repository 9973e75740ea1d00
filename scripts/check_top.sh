#!/usr/bin/env bash
# The RTL standard for one generated design: `verilator --lint-only -Wall` prints nothing,
# scripts/yosys_check.sh passes (hierarchy, no latches, no undriven nets, check -assert), and
# Icarus (-g2005 -Wall) compiles it without a message. On failure prints the tool's output and
# "FAIL <step>: <label>" and exits 1; prints nothing on success (callers say "ok").
#   check_top.sh <label> <top-module> <file.v>...
#   check_top.sh <label> --dir <generated-dir>   (top from manifest.json, files from filelist.f)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
label=$1
shift
if [ "${1:-}" = --dir ]; then
  d=$2
  top=$(sed -n 's/^ *"top": "\([^"]*\)".*/\1/p' "$d/manifest.json")
  mapfile -t files < <(sed "s|^|$d/|" "$d/filelist.f")
else
  top=$1
  shift
  files=("$@")
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$(verilator --lint-only -Wall --top-module "$top" "${files[@]}" 2>&1)
if [ $? -ne 0 ] || [ -n "$out" ]; then echo "$out"; echo "FAIL lint: $label"; exit 1; fi
if ! out=$(bash "$root/scripts/yosys_check.sh" "$top" "${files[@]}" 2>&1); then
  echo "$out"; echo "FAIL yosys: $label"; exit 1
fi
out=$(iverilog -g2005 -Wall -o "$work/a.out" -s "$top" "${files[@]}" 2>&1)
if [ $? -ne 0 ] || [ -n "$out" ]; then echo "$out"; echo "FAIL icarus: $label"; exit 1; fi
