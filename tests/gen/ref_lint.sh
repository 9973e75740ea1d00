#!/usr/bin/env bash
# Reference designs of the PPA harness: every design, several configurations, must be
# verilator --lint-only -Wall clean (zero warnings), pass the Yosys check (scripts/yosys_check.sh:
# no latches, `check -assert`), and compile in Icarus. decomposed-core (the core with decomposed lanes) runs
# configuration i at pipeline 3 + i (3..8).
# The hard-mac references (one DSP primitive per lane: SB_MAC16, MULT18X18D, DSP48E1) at LANES
# 1, 4 and 8: lint with the vendor primitive models (Yosys's ice40 / xilinx cells_sim.v; our own
# tests/gen/models/MULT18X18D.v for ECP5, where Yosys ships only a blackbox), an Icarus
# simulation against p = a * b + c (tests/gen/hard_mac_tb.v), and the family's Yosys synthesis
# checked by scripts/ppa_hard.py (registers inside the DSP, no fabric cells) -- plus a negative
# case: `synth_ice40 -dsp` rewrites the SB_MAC16 and the check must catch it.
# Usage: ref_lint.sh <normcore-binary>
set -euo pipefail
nc=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(
  "--lanes 4 --in-bits 8 --out-bits 8 --scale-bits 16 --offset-bits 32 --max-channels 512"
  "--lanes 4 --in-bits 8 --out-bits 8 --scale-bits 16 --offset-bits 16 --max-channels 512"
  "--lanes 1 --in-bits 8 --out-bits 8 --scale-bits 16 --offset-bits 32 --max-channels 64"
  "--lanes 3 --in-bits 4 --out-bits 8 --scale-bits 10 --offset-bits 20 --max-channels 37 --in-unsigned"
  "--lanes 2 --in-bits 16 --out-bits 16 --scale-bits 12 --offset-bits 44 --max-channels 2048 --out-unsigned"
  "--lanes 8 --in-bits 8 --out-bits 4 --scale-bits 16 --offset-bits 32 --max-channels 1"
)
fail=0
for design in bare-mac decomposed decomposed-core; do
  for i in "${!configs[@]}"; do
    d=$work/${design}_$i
    extra=()
    [ "$design" = decomposed-core ] && extra=(--pipeline $((3 + i)))
    # shellcheck disable=SC2086
    "$nc" gen --design "$design" --name r$i ${configs[$i]} "${extra[@]}" -o "$d" >/dev/null
    if ! bash "$root/scripts/check_top.sh" "$design ${configs[$i]}" --dir "$d"; then
      fail=1; continue
    fi
    echo "ok: $design ${configs[$i]} ${extra[*]}"
  done
done

datdir=$(yosys-config --datdir 2>/dev/null || echo /usr/share/yosys)
models=$root/tests/gen/models
hard_one() {  # family lanes
  local fam=$1 lanes=$2 d=$work/hard_$1_$2 top model synth
  "$nc" gen --design "hard-mac-$fam" --name h$lanes --lanes "$lanes" -o "$d" >/dev/null
  top=h${lanes}_hard_mac
  case $fam in
    ice40) model=$datdir/ice40/cells_sim.v; synth="synth_ice40 -top $top" ;;
    ecp5) model=$models/MULT18X18D.v; synth="synth_ecp5 -top $top" ;;
    xilinx) model=$datdir/xilinx/cells_sim.v; synth="synth_xilinx -flatten -top $top" ;;
  esac
  if ! out=$(verilator --lint-only -Wall --timescale 1ns/1ps +define+NO_ICE40_DEFAULT_ASSIGNMENTS \
      --top-module "$top" "$models/vendor_models.vlt" "$d/$top.v" "$model" 2>&1) || [ -n "$out" ]; then
    echo "$out"; echo "FAIL lint: hard-mac-$fam lanes $lanes"; return 1
  fi
  local p=() c=()
  mapfile -t p < <(python3 -c "import json,sys; h=json.load(open(sys.argv[1]))['hard_block']
for k in ('a_bits','b_bits','c_bits','p_bits'): print('-Phard_mac_tb.%s=%d' % (k[0].upper()+'W', h[k]))
print('-Phard_mac_tb.LAT=%d' % h['latency']); print('-Phard_mac_tb.CLAT=%d' % h['c_latency'])
print('-Phard_mac_tb.L=%d' % json.load(open(sys.argv[1]))['config']['lanes'])" "$d/manifest.json")
  grep -q '"c_bits": 0' "$d/manifest.json" || c=(-DHAS_C)
  if ! iverilog -g2005 -DNO_ICE40_DEFAULT_ASSIGNMENTS "-DDUT=$top" "${c[@]}" "${p[@]}" -s hard_mac_tb \
      -o "$work/hm.vvp" "$root/tests/gen/hard_mac_tb.v" "$d/$top.v" "$model" >"$work/iv.log" 2>&1; then
    cat "$work/iv.log"; echo "FAIL icarus: hard-mac-$fam lanes $lanes"; return 1
  fi
  if ! out=$(vvp -n "$work/hm.vvp") || ! grep -q "HARD_MAC PASS" <<<"$out"; then
    echo "$out" | tail -n 6; echo "FAIL simulation: hard-mac-$fam lanes $lanes"; return 1
  fi
  if ! yosys -q -p "read_verilog $d/$top.v; $synth; check -assert; write_json $d/net.json" \
      >"$work/ys.log" 2>&1; then
    tail -n 20 "$work/ys.log"; echo "FAIL yosys: hard-mac-$fam lanes $lanes"; return 1
  fi
  python3 "$root/scripts/ppa_hard.py" "$d/net.json" "$fam" "$lanes" || return 1
  echo "ok: hard-mac-$fam lanes $lanes ($(grep -o "HARD_MAC PASS.*" <<<"$out"), lint, netlist)"
}
for fam in ice40 ecp5 xilinx; do
  for lanes in 1 4 8; do
    hard_one "$fam" "$lanes" || fail=1
  done
done
# Negative: synth_ice40 -dsp rewrites an instantiated SB_MAC16 (registers off); the check must fail.
d=$work/hard_ice40_4
yosys -q -p "read_verilog $d/h4_hard_mac.v; synth_ice40 -dsp -top h4_hard_mac; write_json $d/neg.json" \
  >/dev/null 2>&1
if python3 "$root/scripts/ppa_hard.py" "$d/neg.json" ice40 4 >"$work/neg.log"; then
  echo "FAIL: the hard-block check accepted a netlist whose SB_MAC16 registers are off"; fail=1
else
  echo "ok: the hard-block check rejects synth_ice40 -dsp's rewrite ($(wc -l <"$work/neg.log") problems)"
fi
exit $fail
