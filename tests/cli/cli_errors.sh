#!/usr/bin/env bash
# CLI behaviour on good and bad input: exit codes, messages naming what is wrong, and no
# half-written output. Usage: cli_errors.sh <normcore binary>
set -uo pipefail
bin=${1:?usage: cli_errors.sh <normcore>}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error <name> <exit code> <text that stderr must contain> <path that must not exist> -- cmd...
expect_error() {
  local name=$1 code=$2 text=$3 absent=$4
  shift 5
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, want $code"; cat "$work/err.txt"; return; fi
  if ! grep -qF -- "$text" "$work/err.txt"; then
    bad "$name: stderr lacks '$text':"; cat "$work/err.txt"; return
  fi
  if [ -n "$absent" ] && [ -e "$absent" ]; then bad "$name: $absent was written"; return; fi
  ok
}

# --- gen -------------------------------------------------------------------------------------
expect_error "gen lanes 0" 2 "--lanes: 0 is out of range" "$work/g1" -- "$bin" gen --lanes 0 -o "$work/g1"
expect_error "gen lanes 65" 2 "--lanes" "$work/g1" -- "$bin" gen --lanes 65 -o "$work/g1"
expect_error "gen in-bits 40" 2 "--in-bits: 40 is out of range" "$work/g1" -- "$bin" gen --in-bits 40 -o "$work/g1"
expect_error "gen out wider than acc" 2 "--out-bits: 32 is wider than the accumulator" "$work/g1" -- \
  "$bin" gen --in-bits 2 --scale-bits 2 --offset-bits 2 --out-bits 32 -o "$work/g1"
expect_error "gen max-channels 0" 2 "--max-channels: 0 is out of range" "$work/g1" -- "$bin" gen --max-channels 0 -o "$work/g1"
expect_error "gen pipeline 12" 2 "--pipeline: 12 is out of range 3..11" "$work/g1" -- "$bin" gen --pipeline 12 -o "$work/g1"
expect_error "gen target" 2 "--target: must be generic, ice40, ecp5, xilinx or asic (got 'gowin')" "$work/g1" -- \
  "$bin" gen --target gowin -o "$work/g1"
# --target picks the pipeline unless --pipeline is given; a config file's target is kept.
if "$bin" gen --target ice40 -o "$work/t1" > /dev/null &&
   grep -q '"pipeline": 10' "$work/t1/manifest.json" && grep -q '"target": "ice40"' "$work/t1/manifest.json" &&
   "$bin" gen --target xilinx --pipeline 6 -o "$work/t2" > /dev/null &&
   grep -q '"pipeline": 6' "$work/t2/manifest.json" && grep -q 'use_dsp' "$work/t2/normcore_lane.v" &&
   "$bin" gen --config "$work/t2/manifest.json" -o "$work/t3" > /dev/null &&
   diff -r "$work/t2" "$work/t3" > /dev/null; then ok; else bad "gen --target"; fi
expect_error "gen fixed-shift over acc" 2 "--fixed-shift: 34 exceeds the accumulator width (33 bits)" \
  "$work/g1" -- "$bin" gen --fixed-shift 34 -o "$work/g1"
expect_error "gen fixed-rounding" 2 "--fixed-rounding: must be empty, floor, half_up, half_even or half_away" \
  "$work/g1" -- "$bin" gen --fixed-rounding nearest -o "$work/g1"
expect_error "gen fixed-layout" 2 "--fixed-layout: must be empty, nchw or nhwc (got 'chw')" \
  "$work/g1" -- "$bin" gen --fixed-layout chw -o "$work/g1"
expect_error "gen lanes-divide-channels" 2 "--lanes-divide-channels: --max-channels 3 is below --lanes 8" \
  "$work/g1" -- "$bin" gen --lanes-divide-channels --max-channels 3 -o "$work/g1"
expect_error "gen unknown option" 2 "--bogus" "$work/g1" -- "$bin" gen --bogus 1 -o "$work/g1"
echo '{"lanes": 8,' > "$work/broken.json"
expect_error "gen malformed config" 2 "broken.json" "$work/g1" -- "$bin" gen --config "$work/broken.json" -o "$work/g1"
echo '{"lanes": "eight"}' > "$work/typed.json"
expect_error "gen config type" 2 "'lanes' must be an integer" "$work/g1" -- "$bin" gen --config "$work/typed.json" -o "$work/g1"

expect_error "accel bus-bits 48" 2 "--bus-bits: 48 must be 32, 64, 128, 256 or 512" "$work/g1" -- \
  "$bin" gen --accel --bus-bits 48 -o "$work/g1"
expect_error "accel addr-bits 16" 2 "--addr-bits: 16 is out of range" "$work/g1" -- \
  "$bin" gen --accel --addr-bits 16 -o "$work/g1"
expect_error "accel max-burst 3" 2 "--max-burst: 3 must be a power of two" "$work/g1" -- \
  "$bin" gen --accel --max-burst 3 -o "$work/g1"
expect_error "accel burst over 4k" 2 "exceed 4 KiB" "$work/g1" -- \
  "$bin" gen --accel --bus-bits 512 --max-burst 128 -o "$work/g1"
expect_error "accel outstanding 0" 2 "--outstanding: 0 is out of range" "$work/g1" -- \
  "$bin" gen --accel --outstanding 0 -o "$work/g1"
expect_error "ring without accel" 2 "--ring: the descriptor ring needs --accel" "$work/g1" -- \
  "$bin" gen --ring -o "$work/g1"
# --ring: the register files, the manifest and the Verilog with the descriptor fetcher in
# <n>_ctrl; a manifest reads back with the ring set.
if "$bin" gen --accel --ring -o "$work/r1" > /dev/null &&
   grep -q '"ring": true' "$work/r1/manifest.json" && grep -q 'RING_HEAD' "$work/r1/normcore_regs.h" &&
   grep -q 'Descriptor ring' "$work/r1/normcore_registers.md" &&
   [ -f "$work/r1/normcore_regs.rdl" ] && grep -q 'desc_q' "$work/r1/normcore_ctrl.v"; then ok
else bad "gen --accel --ring"; fi
"$bin" gen --config "$work/r1/manifest.json" -o "$work/r2" > /dev/null
if diff -r "$work/r1" "$work/r2" > /dev/null; then ok; else bad "gen --config ring manifest differs"; fi
if "$bin" gen --accel --bus-bits 128 -o "$work/a1" > /dev/null &&
   grep -q '"kind": "accelerator"' "$work/a1/manifest.json" &&
   [ -f "$work/a1/normcore_regs.hpp" ] && [ -f "$work/a1/normcore_regs.rdl" ] &&
   [ -f "$work/a1/normcore_registers.md" ] && [ -f "$work/a1/normcore_top.v" ]; then ok
else bad "gen --accel good run"; fi
"$bin" gen --config "$work/a1/manifest.json" -o "$work/a2" > /dev/null
if diff -r "$work/a1" "$work/a2" > /dev/null; then ok; else bad "gen --config accel manifest differs"; fi

# A good run, then a bad run into the same directory leaves the good output untouched.
if "$bin" gen --lanes 4 -o "$work/g2" > /dev/null && [ -f "$work/g2/manifest.json" ] &&
   grep -q '"top": "normcore_core"' "$work/g2/manifest.json"; then ok; else bad "gen good run"; fi
cp -r "$work/g2" "$work/g2.copy"
expect_error "gen bad over good" 2 "--lanes" "" -- "$bin" gen --lanes 0 -o "$work/g2"
if diff -r "$work/g2" "$work/g2.copy" > /dev/null; then ok; else bad "bad run changed existing output"; fi
# Deterministic output; config from a manifest reproduces it.
"$bin" gen --lanes 4 -o "$work/g3" > /dev/null
if diff -r "$work/g2" "$work/g3" > /dev/null; then ok; else bad "gen output differs between runs"; fi
"$bin" gen --config "$work/g2/manifest.json" -o "$work/g4" > /dev/null
if diff -r "$work/g2" "$work/g4" > /dev/null; then ok; else bad "gen --config manifest differs"; fi
if ls -a "$work" | grep -q '\.tmp\.'; then bad "temporary directory left behind"; else ok; fi

# --- fold ------------------------------------------------------------------------------------
cfg="$work/g2/manifest.json"
good='"eps": 1e-5, "input": {"scale": 0.02, "zero_point": 0}, "output": {"scale": 0.03, "zero_point": 0}'
echo "{$good, \"gamma\": [1, NaN], \"beta\": [0, 0], \"mean\": [0, 0], \"var\": [1, 1]}" > "$work/nan.json"
expect_error "fold NaN" 2 "gamma[1]" "$work/p.bin" -- "$bin" fold --params "$work/nan.json" --config "$cfg" -o "$work/p.bin"
echo "{$good, \"gamma\": [1, 1], \"beta\": [0, Infinity], \"mean\": [0, 0], \"var\": [1, 1]}" > "$work/inf.json"
expect_error "fold Inf" 2 "beta[1]" "$work/p.bin" -- "$bin" fold --params "$work/inf.json" --config "$cfg" -o "$work/p.bin"
echo "{\"eps\": 0, \"input\": {\"scale\": 0.02, \"zero_point\": 0}, \"output\": {\"scale\": 0.03, \"zero_point\": 0}, \"mean\": [0, 0], \"var\": [1, 0]}" > "$work/var.json"
expect_error "fold var+eps<=0" 2 "var[1]" "$work/p.bin" -- "$bin" fold --params "$work/var.json" --config "$cfg" -o "$work/p.bin"
echo "{$good, \"gamma\": [1, 1, 1], \"mean\": [0, 0], \"var\": [1, 1]}" > "$work/count.json"
expect_error "fold channel count" 2 "gamma has 3" "$work/p.bin" -- "$bin" fold --params "$work/count.json" --config "$cfg" -o "$work/p.bin"
echo "{$good, \"mean\": [0, 0], \"var\": [1," > "$work/trunc.json"
expect_error "fold malformed" 2 "malformed JSON" "$work/p.bin" -- "$bin" fold --params "$work/trunc.json" --config "$cfg" -o "$work/p.bin"
expect_error "fold missing file" 2 "nope.json" "$work/p.bin" -- "$bin" fold --params "$work/nope.json" --config "$cfg" -o "$work/p.bin"
echo "{$good, \"mean\": [0, 0], \"var\": [1, 1]}" > "$work/ok.json"
expect_error "fold bad rounding" 2 "--rounding" "$work/p.bin" -- "$bin" fold --params "$work/ok.json" --config "$cfg" --rounding nearest -o "$work/p.bin"
"$bin" gen --lanes 4 --max-channels 1 -o "$work/g5" > /dev/null
# More channels than the table holds: folded anyway (the runtime tiles by channel groups).
if "$bin" fold --params "$work/ok.json" --config "$work/g5/manifest.json" -o "$work/p5.bin" > "$work/rep5.txt" &&
   grep -q "runs the layer as 2 channel groups" "$work/rep5.txt" && [ -s "$work/p5.bin" ]; then ok; else
  bad "fold with channels > max_channels"; cat "$work/rep5.txt"; fi
if "$bin" fold --params "$work/ok.json" --config "$cfg" -o "$work/p.bin" > "$work/rep.txt" &&
   [ -s "$work/p.bin" ] && grep -q "worst-case error" "$work/rep.txt"; then ok; else bad "fold good run"; fi
cp "$work/p.bin" "$work/p.copy"
expect_error "fold bad keeps old output" 2 "gamma[1]" "" -- "$bin" fold --params "$work/nan.json" --config "$cfg" -o "$work/p.bin"
if cmp -s "$work/p.bin" "$work/p.copy"; then ok; else bad "failed fold changed existing params.bin"; fi
if ls "$work" | grep -q '\.tmp\.'; then bad "temporary file left behind"; else ok; fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
