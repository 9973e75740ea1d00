#!/usr/bin/env bash
# Checks standalone generated modules, one module per file (file name = module name):
# verilator --lint-only -Wall prints nothing, scripts/yosys_check.sh (no latches, no undriven
# nets, check -assert), Icarus -g2005 -Wall compiles without a message (scripts/check_top.sh).
#   lint_modules.sh <file.v>...
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
fail=0
for f in "$@"; do
  m=$(basename "$f" .v)
  if bash "$root/scripts/check_top.sh" "$m" "$m" "$f"; then
    echo "ok: $m (lint, yosys, iverilog)"
  else
    fail=1
  fi
done
exit $fail
