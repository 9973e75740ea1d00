#!/usr/bin/env bash
# The PPA harness's tools on tiny designs (scripts/ppa.py, scripts/ppa_depth.py):
#  * ppa_depth.py finds the two LUT levels of an 8-input XOR and none in a plain register copy;
#  * ppa.py measures the SB_MAC16 hard block and the wrapper alone end to end (synthesis, the
#    wrapped netlist made from the design's own netlist, the hard-block netlist check, nextpnr,
#    the tools' CPU seconds in the JSON).
# Usage: ppa_tools.sh <normcore binary> <source dir>
set -euo pipefail
nc=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$work/d.v" <<'V'
module d (input wire clk_i, input wire [7:0] a_i, output wire y_o, output wire z_o);
  reg [7:0] a_q;
  reg y_q, z_q;
  always @(posedge clk_i) begin
    a_q <= a_i;
    y_q <= ^a_q;
    z_q <= a_q[0];
  end
  assign y_o = y_q;
  assign z_o = z_q;
endmodule
V
yosys -q -p "read_verilog $work/d.v; synth_ice40 -top d; write_json $work/d.json"
out=$(python3 "$src/scripts/ppa_depth.py" "$work/d.json")
echo "$out"
grep -Eq '^ 2\.00  y_o +\[2 LUT\]' <<<"$out" || fail "ppa_depth: the XOR of 8 registers is not 2 LUT levels"
grep -Eq '^ 0\.00  z_o +\[0 LUT\]' <<<"$out" || fail "ppa_depth: a register copy is not 0 levels"

# ppa.py expects <build>/cli/normcore
mkdir -p "$work/build/cli"
ln -s "$(readlink -f "$nc")" "$work/build/cli/normcore"
python3 "$src/scripts/ppa.py" --build "$work/build" --work "$work/ppa" --only hard_ice40_l4,wrapper_only \
  --seeds 1 --no-sim --no-ecp5 --json-out "$work/r.json" | tail -5
python3 - "$work/r.json" "$work/ppa" <<'PY'
import json, sys
from pathlib import Path
d = json.load(open(sys.argv[1]))
r = {x["id"]: x for x in d["results"]}
h = r["hard_ice40_l4"]
assert h["ice40"]["mac16"] == 4 and h["ice40"]["lut4"] == 0, h["ice40"]
assert h.get("hard_block_checked"), "hard-block netlist check not recorded"
assert h["fmax_mhz"] and h["fmax_mhz"] > 100, h["fmax_mhz"]
assert r["wrapper_only"]["fmax_mhz"], "wrapper not placed and routed"
log = (Path(sys.argv[2]) / "hard_ice40_l4" / "yosys_wrap_ice40.log").read_text()
assert "read_json" in log and "netlist_ice40.json" in log, "wrapped design not made from the netlist"
cpu = d["cpu_seconds"]
assert cpu["synthesis"] > 0 and cpu["place and route"] > 0, cpu
print("ppa_tools: ok", h["fmax_mhz"], "MHz", cpu)
PY
