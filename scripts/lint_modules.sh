#!/usr/bin/env bash
# Checks standalone generated modules, one module per file (file name = module name):
# verilator --lint-only -Wall prints nothing, scripts/yosys_check.sh (no latches, no undriven
# nets, check -assert), Icarus -g2005 -Wall compiles without a message.
#   lint_modules.sh <file.v>...
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$@"; do
  m=$(basename "$f" .v)
  bad=0
  out=$(verilator --lint-only -Wall --top-module "$m" "$f" 2>&1)
  if [ $? -ne 0 ] || [ -n "$out" ]; then echo "$out"; echo "FAIL lint: $m"; bad=1; fi
  bash "$root/scripts/yosys_check.sh" "$m" "$f" || bad=1
  out=$(iverilog -g2005 -Wall -o "$work/$m.vvp" "$f" 2>&1)
  if [ $? -ne 0 ] || [ -n "$out" ]; then echo "$out"; echo "FAIL iverilog: $m"; bad=1; fi
  if [ $bad -eq 0 ]; then echo "ok: $m (lint, yosys, iverilog)"; else fail=1; fi
done
exit $fail
