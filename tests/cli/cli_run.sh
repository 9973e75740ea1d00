#!/usr/bin/env bash
# `normcore run` / `normcore info`: the same tensors through the ref and sim backends give
# identical .npy bytes (and the ref output matches an independent evaluation through
# `normcore run` with tiny tiles); every error path exits non-zero with a clear message and
# writes no output file. The sim part runs when the plugins exist (co-simulation build).
# Usage: cli_run.sh <normcore binary> <devices dir>
set -uo pipefail
bin=${1:?usage: cli_run.sh <normcore> <devices dir>}
devs=${2:?usage: cli_run.sh <normcore> <devices dir>}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
m_def=$devs/normcore/rtl/manifest.json
m_small=$devs/nc_small/rtl/manifest.json
have_sim=0
[ -f "$devs/normcore/libnormcore_sim.so" ] && [ -f "$devs/nc_small/libnormcore_sim.so" ] && have_sim=1
have_tlm=0
[ -f "$devs/normcore/libnormcore_tlm.so" ] && have_tlm=1

# npy <path> <descr> <struct fmt> <shape csv> <count> <lo> <hi> <seed>: random .npy (no numpy).
npy() {
  python3 - "$@" <<'PY'
import random, struct, sys
path, descr, fmt, shape, count, lo, hi, seed = sys.argv[1:9]
shape = [int(s) for s in shape.split(",")]
count, lo, hi = int(count), float(lo), float(hi)
random.seed(int(seed))
if fmt == "f":
    data = [random.uniform(lo, hi) for _ in range(count)]
else:
    data = [random.randint(int(lo), int(hi)) for _ in range(count)]
hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s,), }" % (descr, ", ".join(map(str, shape)))
pad = (64 - (10 + len(hdr) + 1) % 64) % 64
hdr = hdr + " " * pad + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%d%s" % (count, fmt), *data))
PY
}

# params <manifest> <channels> <out>: a bn.json with random statistics, folded for the device.
params() {
  python3 - "$2" "$work/bn_$2.json" <<'PY'
import json, random, sys
c = int(sys.argv[1]); random.seed(c)
json.dump({"eps": 1e-3, "gamma": [random.uniform(0.2, 2) for _ in range(c)],
           "beta": [random.uniform(-1, 1) for _ in range(c)],
           "mean": [random.uniform(-2, 2) for _ in range(c)],
           "var": [random.uniform(0.1, 3) for _ in range(c)],
           "input": {"scale": 0.02, "zero_point": 0}, "output": {"scale": 0.03, "zero_point": 5}},
          open(sys.argv[2], "w"))
PY
  "$bin" fold --params "$work/bn_$2.json" --config "$1" -o "$3" > /dev/null || bad "fold for $1"
}

# expect_error <name> <exit code> <text> <path that must not exist> -- cmd...
expect_error() {
  local name=$1 code=$2 text=$3 absent=$4
  shift 5
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, want $code"; cat "$work/err.txt"; return; fi
  if ! grep -qF -- "$text" "$work/err.txt"; then bad "$name: stderr lacks '$text':"; cat "$work/err.txt"; return; fi
  if [ -n "$absent" ] && [ -e "$absent" ]; then bad "$name: $absent was written"; return; fi
  ok
}

run() { "$bin" run -q "$@"; }

# --- default device: int8 -> int8, both layouts --------------------------------------------
params "$m_def" 24 "$work/p24.bin"
npy "$work/x_nchw.npy" "|i1" b "3,24,9,11" $((3 * 24 * 99)) -128 127 1
npy "$work/x_nhwc.npy" "|i1" b "3,9,11,24" $((3 * 24 * 99)) -128 127 2
for lay in nchw nhwc; do
  run --device "ref:$m_def" --params "$work/p24.bin" --input "$work/x_$lay.npy" --layout $lay \
      --output "$work/y_ref_$lay.npy" || bad "ref run $lay"
  # Tiny tiles: the same result through many device jobs.
  run --device "ref:$m_def" --params "$work/p24.bin" --input "$work/x_$lay.npy" --layout $lay \
      --tile 50 --output "$work/y_tile_$lay.npy" || bad "ref tiled run $lay"
  cmp -s "$work/y_ref_$lay.npy" "$work/y_tile_$lay.npy" && ok || bad "tiled != untiled ($lay)"
  if [ $have_sim -eq 1 ]; then
    run --device "sim:$m_def,latency=20,stall=0.2" --params "$work/p24.bin" \
        --input "$work/x_$lay.npy" --layout $lay --output "$work/y_sim_$lay.npy" || bad "sim run $lay"
    cmp -s "$work/y_ref_$lay.npy" "$work/y_sim_$lay.npy" && ok || bad "sim != ref ($lay)"
  fi
  if [ $have_tlm -eq 1 ]; then
    run --device "tlm:$m_def,latency=5" --params "$work/p24.bin" \
        --input "$work/x_$lay.npy" --layout $lay --output "$work/y_tlm_$lay.npy" || bad "tlm run $lay"
    cmp -s "$work/y_ref_$lay.npy" "$work/y_tlm_$lay.npy" && ok || bad "tlm != ref ($lay)"
  fi
done

# --- small device: int16 -> uint8, tiled over channels (13 > 5) and HW (40 > 15) -----------
params "$m_small" 13 "$work/p13.bin"
npy "$work/x16.npy" "<i2" h "2,13,5,8" $((2 * 13 * 40)) -32768 32767 3
run --device "ref:$m_small" --params "$work/p13.bin" --input "$work/x16.npy" \
    --output "$work/y16_ref.npy" || bad "small ref run"
if [ $have_sim -eq 1 ]; then
  run --device "sim:$m_small" --params "$work/p13.bin" --input "$work/x16.npy" \
      --output "$work/y16_sim.npy" || bad "small sim run"
  cmp -s "$work/y16_ref.npy" "$work/y16_sim.npy" && ok || bad "small: sim != ref"
fi
head -c 10 "$work/y16_ref.npy" | grep -q NUMPY && grep -q "'<u1'\|'|u1'" "$work/y16_ref.npy" && ok ||
  bad "small output is not a uint8 .npy"

# --- float tensors --------------------------------------------------------------------------
npy "$work/xf.npy" "<f4" f "2,24,3,3" $((2 * 24 * 9)) -3 3 4
run --device "ref:$m_def" --params "$work/p24.bin" --input "$work/xf.npy" --in-scale 0.02 \
    --out-scale 0.03 --out-zero-point 5 --output "$work/yf.npy" || bad "float run"
grep -q "'<f4'" "$work/yf.npy" && ok || bad "float output is not float32"

# --- info -----------------------------------------------------------------------------------
"$bin" info --device "ref:$m_small" > "$work/info.txt" || bad "info"
grep -q "3 lanes, int16 -> uint8" "$work/info.txt" && ok || { bad "info text"; cat "$work/info.txt"; }

# --- errors: exit 2 for bad input, 1 for device failures; never an output file --------------
P=(--params "$work/p24.bin")
expect_error "shape mismatch" 2 "--shape: 2x24x10 = 480 elements" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" "${P[@]}" --input "$work/x_nchw.npy" --shape 2,24,2,5 --output "$work/e1.npy"
expect_error "bad shape text" 2 "'x' is not a positive integer" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" "${P[@]}" --input "$work/x_nchw.npy" --shape 3,x,9,11 --output "$work/e1.npy"
expect_error "channel mismatch" 2 "C = 24 but" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" --params "$work/p13.bin" --input "$work/x_nchw.npy" --output "$work/e1.npy"
expect_error "params for another device" 2 "in_bits is 16 but device" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" --params "$work/p13.bin" --input "$work/x16.npy" --output "$work/e1.npy"
expect_error "missing input" 2 "nope.npy" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" "${P[@]}" --input "$work/nope.npy" --output "$work/e1.npy"
expect_error "missing manifest" 2 "/nonexistent/manifest.json" "$work/e1.npy" -- \
  "$bin" run --device "ref:/nonexistent/manifest.json" "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
expect_error "unknown backend" 2 "unknown backend 'fpga'" "$work/e1.npy" -- \
  "$bin" run --device "fpga:$m_def" "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
expect_error "unknown option" 2 "unknown option 'latncy'" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def,latncy=3" "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
expect_error "float without scale" 2 "give --in-scale" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" "${P[@]}" --input "$work/xf.npy" --output "$work/e1.npy"
npy "$work/x16c.npy" "<i2" h "1,24,2,2" 96 200 300 5
# An input value the device cannot take is bad input (exit 2; README "Exit codes").
expect_error "input out of range" 2 "is outside the device's input range" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def" "${P[@]}" --input "$work/x16c.npy" --output "$work/e1.npy"
expect_error "device read error" 1 "device job failed: read (ERR_CODE=7" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def,fail_job=1" "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
expect_error "device timeout" 1 "timed out after 200 ms" "$work/e1.npy" -- \
  "$bin" run --device "ref:$m_def,hang_job=1" --timeout 200 "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
# An existing output survives a failed run untouched.
cp "$work/y_ref_nchw.npy" "$work/keep.npy"
"$bin" run --device "ref:$m_def,fail_job=1,fail=write" "${P[@]}" --input "$work/x_nchw.npy" \
  --output "$work/keep.npy" > /dev/null 2>&1
[ $? -eq 1 ] && cmp -s "$work/keep.npy" "$work/y_ref_nchw.npy" && ok || bad "failed run touched the output"
ls "$work"/*.tmp.* > /dev/null 2>&1 && bad "temporary files left" || ok
if [ $have_sim -eq 1 ]; then
  expect_error "sim write error" 1 "device job failed: write (ERR_CODE=8" "$work/e1.npy" -- \
    "$bin" run --device "sim:$m_def,fail_job=1,fail=write" "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
  expect_error "sim hang" 1 "soft reset done" "$work/e1.npy" -- \
    "$bin" run --device "sim:$m_def,hang_job=1" --timeout 300 "${P[@]}" --input "$work/x_nchw.npy" --output "$work/e1.npy"
  mkdir -p "$work/edited/rtl"
  sed 's/"lanes": 8/"lanes": 4/' "$m_def" > "$work/edited/rtl/manifest.json"
  expect_error "sim manifest mismatch" 2 "manifest mismatch" "$work/e1.npy" -- \
    "$bin" run --device "sim:$work/edited/rtl/manifest.json,lib=$devs/normcore/libnormcore_sim.so" "${P[@]}" \
    --input "$work/x_nchw.npy" --output "$work/e1.npy"
else
  echo "note: sim plugins not built; sim comparisons skipped"
fi

# --- specialised device (R 10, half_even, NHWC, C a multiple of 4): fold picks its R and
# rounding; a job it cannot run exits 2 naming the setting, before any output is written.
m_spec=$devs/nc_spec/rtl/manifest.json
params "$m_spec" 24 "$work/ps.bin"
run --device "ref:$m_spec" --params "$work/ps.bin" --input "$work/x_nhwc.npy" --layout nhwc \
    --output "$work/ys.npy" || bad "spec: ref run"
[ -f "$work/ys.npy" ] && ok || bad "spec: no output"
expect_error "spec: layout" 2 "layout: nchw differs from this core's fixed layout nhwc" \
  "$work/e2.npy" -- "$bin" run --device "ref:$m_spec" --params "$work/ps.bin" \
  --input "$work/x_nchw.npy" --layout nchw --output "$work/e2.npy"
"$bin" fold --params "$work/bn_24.json" --config "$m_spec" --shift 9 -o "$work/ps9.bin" > /dev/null
expect_error "spec: R" 2 "R: 9 differs from this core's fixed shift 10 (fixed_shift)" \
  "$work/e2.npy" -- "$bin" run --device "ref:$m_spec" --params "$work/ps9.bin" \
  --input "$work/x_nhwc.npy" --layout nhwc --output "$work/e2.npy"
"$bin" fold --params "$work/bn_24.json" --config "$m_spec" --rounding floor -o "$work/psf.bin" \
  > /dev/null
expect_error "spec: rounding" 2 "rounding: floor differs from this core's fixed rounding" \
  "$work/e2.npy" -- "$bin" run --device "ref:$m_spec" --params "$work/psf.bin" \
  --input "$work/x_nhwc.npy" --layout nhwc --output "$work/e2.npy"
params "$m_spec" 6 "$work/ps6.bin"
npy "$work/x6.npy" "|i1" b "2,5,6" 60 -128 127 3
expect_error "spec: C % lanes" 2 "channels: 6 is not a multiple of this core's 4 lanes" \
  "$work/e2.npy" -- "$bin" run --device "ref:$m_spec" --params "$work/ps6.bin" \
  --input "$work/x6.npy" --layout nhwc --output "$work/e2.npy"

# --- progress (issue 15 item 9): --progress prints, --no-progress and a non-terminal do not ---
"$bin" fold --params "$work/bn_24.json" --config "$m_def" -o "$work/pp.bin" --progress \
  > /dev/null 2> "$work/fold_err.txt" || bad "fold --progress"
for ph in candidates search report; do
  grep -q "normcore fold: $ph .*100% " "$work/fold_err.txt" && ok || bad "fold --progress: no $ph"
done
grep -q "report .*100% (24 / 24)" "$work/fold_err.txt" && ok || bad "fold --progress: report count"
"$bin" fold --params "$work/bn_24.json" --config "$m_def" -o "$work/pp.bin" --progress \
  --no-progress > /dev/null 2> "$work/fold_err.txt" || bad "fold --no-progress"
[ ! -s "$work/fold_err.txt" ] && ok || bad "fold --no-progress printed: $(cat "$work/fold_err.txt")"
"$bin" fold --params "$work/bn_24.json" --config "$m_def" -o "$work/pp.bin" \
  > /dev/null 2> "$work/fold_err.txt" || bad "fold"
[ ! -s "$work/fold_err.txt" ] && ok || bad "fold without a terminal printed progress"
"$bin" run --device "ref:$m_def" --params "$work/p24.bin" --input "$work/x_nchw.npy" \
  --output "$work/pr.npy" --progress > /dev/null 2> "$work/run_err.txt" || bad "run --progress"
grep -q "normcore run: 100% (7128 / 7128 elements)" "$work/run_err.txt" && ok ||
  bad "run --progress: $(cat "$work/run_err.txt")"
"$bin" run --device "ref:$m_def" --params "$work/p24.bin" --input "$work/x_nchw.npy" \
  --output "$work/pr.npy" --progress --no-progress > /dev/null 2> "$work/run_err.txt" ||
  bad "run --no-progress"
grep -q "%" "$work/run_err.txt" && bad "run --no-progress printed progress" || ok

echo "cli_run: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
