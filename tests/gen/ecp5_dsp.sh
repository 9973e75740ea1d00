#!/usr/bin/env bash
# The instantiated MULT18X18D of a --target ecp5 core (gen/src/core_mac.cpp), which simulators
# never see (it sits under `ifdef SYNTHESIS):
#   1. the lane really instantiates it (else the test fails: nothing would be proven);
#   2. Icarus compiles the core with -DSYNTHESIS and a MULT18X18D model (Yosys's own when the
#      installed Yosys has one in ecp5/cells_sim.v, else hw/tb/ecp5/MULT18X18D.v) and runs the
#      golden-model smoke vectors: the instantiated path is bit-exact, at the core's latency;
#   3. Yosys `synth_ecp5` of the lane keeps one MULT18X18D with its input and output registers
#      on (the registers are inside the DSP in the netlist, not only in the source);
#   4. likewise the table's RAM (<n>_bank, gen/src/core_table.cpp build_table_ram): DP16KD blocks
#      instantiated with REGMODE OUTREG, simulated in step 2 with hw/tb/ecp5/DP16KD.v, and kept
#      with their output registers by `synth_ecp5`.
# Usage: ecp5_dsp.sh <rtl-dir> <core-top> <smoke_vectors-binary>
set -euo pipefail
dir=$1
top=$2
vectors=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
lane=${top%_core}_lane
bank=${top%_core}_bank
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t files < <(sed "s|^|$dir/|" "$dir/filelist.f")

if ! grep -q '^`ifdef SYNTHESIS' "$dir/$lane.v" || ! grep -q '^  MULT18X18D' "$dir/$lane.v"; then
  echo "FAIL: $dir/$lane.v instantiates no MULT18X18D under \`ifdef SYNTHESIS"
  exit 1
fi

if ! grep -q '^`ifdef SYNTHESIS' "$dir/$bank.v" || ! grep -q '^  DP16KD' "$dir/$bank.v"; then
  echo "FAIL: $dir/$bank.v instantiates no DP16KD under \`ifdef SYNTHESIS"
  exit 1
fi

model=$root/hw/tb/ecp5/MULT18X18D.v
# Yosys's data directory (yosys-config may be absent; then the one beside the yosys binary).
datdir=$(yosys-config --datdir 2>/dev/null || true)
[ -n "$datdir" ] || datdir=$(dirname "$(command -v yosys)")/../share/yosys
ysim=$datdir/ecp5/cells_sim.v
if [ -f "$ysim" ] && grep -q '^module MULT18X18D' "$ysim"; then
  model=$ysim
fi
echo "== icarus smoke with -DSYNTHESIS (MULT18X18D model: $model)"
"$vectors" "$dir/manifest.json" "$work" >/dev/null
read -r -a params < "$work/iverilog_params.txt"
iverilog -g2005 -Wall -DSYNTHESIS -DDUT="$top" -s normcore_smoke_tb "${params[@]}" \
  -o "$work/tb.vvp" "$root/hw/tb/normcore_smoke_tb.v" "$model" "$root/hw/tb/ecp5/DP16KD.v" \
  "${files[@]}" \
  2> "$work/iverilog.log" || { cat "$work/iverilog.log"; echo "FAIL: iverilog"; exit 1; }
if grep -v "timescale" "$work/iverilog.log" | grep -q .; then
  cat "$work/iverilog.log"
  echo "FAIL: iverilog warnings"
  exit 1
fi
result=$(cd "$work" && vvp -n tb.vvp | grep -E "SMOKE|MULT18X18D|DP16KD" || true)
echo "$result"
case "$result" in
  "SMOKE PASS"*) ;;
  *) echo "FAIL: icarus smoke through the instantiated MULT18X18D"; exit 1 ;;
esac

echo "== yosys synth_ecp5 of $lane: the MULT18X18D's registers in the netlist"
yosys -q -l "$work/yosys.log" -p "read_verilog ${files[*]}; synth_ecp5 -top $lane; \
  write_json $work/lane.json" >/dev/null 2>&1 || { tail -n 20 "$work/yosys.log"; echo "FAIL: yosys"; exit 1; }
python3 "$root/scripts/ppa_hard.py" "$work/lane.json" ecp5-core 1
echo "== yosys synth_ecp5 of $bank: DP16KD with its output register in the netlist"
yosys -q -l "$work/yosys_bank.log" -p "read_verilog ${files[*]}; synth_ecp5 -top $bank; \
  write_json $work/bank.json" >/dev/null 2>&1 || { tail -n 20 "$work/yosys_bank.log"; echo "FAIL: yosys"; exit 1; }
python3 - "$work/bank.json" "$bank" <<'PY'
import json, sys
mod = json.load(open(sys.argv[1]))["modules"][sys.argv[2]]
types = [c["type"] for c in mod["cells"].values()]
rams = [c for c in mod["cells"].values() if c["type"] == "DP16KD"]
bad = [c for c in rams if c["parameters"].get("REGMODE_B") != "OUTREG"]
ffs = [t for t in types if t.startswith("TRELLIS_FF")]
print(f"DP16KD: {len(rams)}, REGMODE_B not OUTREG: {len(bad)}, fabric flip-flops: {len(ffs)}")
sys.exit(0 if rams and not bad and not ffs else 1)
PY
echo "PASS: $top (MULT18X18D and DP16KD instantiated, bit-exact in Icarus, registers inside)"
