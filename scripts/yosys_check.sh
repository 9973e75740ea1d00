#!/usr/bin/env bash
# The structural RTL check every generated design passes: Yosys elaborates it (hierarchy -check),
# `proc` turns processes into cells (a latch becomes a $dlatch), `flatten`, then no latch cell
# may exist and `check -assert` fails on undriven or multiply driven nets and logic loops.
# Seconds even for a 64-lane core (a full `synth` took up to 500 s there). Vendor primitives that
# the generator instantiates under `ifdef SYNTHESIS (MULT18X18D of --target ecp5) come from
# Yosys's black-box library, so that the instantiated branch is elaborated and checked too.
# Usage: yosys_check.sh [--synth] <top-module> <verilog files...>
#   --synth  also run a full generic `synth` with the same checks (prints the cell count)
set -uo pipefail
synth=0
if [ "${1:-}" = "--synth" ]; then synth=1; shift; fi
top=${1:?usage: yosys_check.sh [--synth] <top> <files...>}
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
latches='t:$dlatch t:$adlatch t:$dlatchsr t:$_DLATCH_* t:$_DLATCHSR_*'
# DP16KD (the ECP5 table banks) is not among Yosys 0.23's ecp5/cells_bb.v black boxes; its box
# is in ecp5/cells_sim.v (read as library cells, without its includes).
if ! yosys -q -l "$work/check.log" -p "read_verilog -lib -DNO_INCLUDES +/ecp5/cells_sim.v; read_verilog -lib +/ecp5/cells_bb.v; read_verilog $*; hierarchy -check -top $top; proc; \
    flatten; select -assert-none $latches; check -assert" >/dev/null 2>&1; then
  grep -E "ERROR|Warning|Latch|latch|undriven|driver" "$work/check.log" | tail -n 20
  echo "FAIL yosys check: $top"
  exit 1
fi
if [ $synth -eq 1 ]; then
  if ! yosys -q -l "$work/synth.log" -p "read_verilog -lib -DNO_INCLUDES +/ecp5/cells_sim.v; read_verilog -lib +/ecp5/cells_bb.v; read_verilog $*; synth -top $top; \
      select -assert-none $latches; check -assert; tee -o $work/stat.txt stat" >/dev/null 2>&1; then
    tail -n 20 "$work/synth.log"
    echo "FAIL yosys synth: $top"
    exit 1
  fi
  echo "synth: $(grep -E 'Number of cells' "$work/stat.txt" | tail -n 1 | tr -s ' ')"
fi
exit 0
