#!/usr/bin/env bash
# `normcore import` and `normcore run --plan`: XLA HLO text models (written here) with JSON
# parameter bundles, and ONNX models when the import_tests binary is given (it writes them with
# NORMCORE_IMPORT_EXAMPLES=<dir> --gtest_filter=PlanExamples.*). Plans are imported for both
# device configurations, run on the ref backend (and sim when the plugins exist) against the
# float reference; every error path exits non-zero with a clear message and leaves no plan.
# Usage: cli_import.sh <normcore binary> <devices dir> [import_tests binary]
set -uo pipefail
bin=${1:?usage: cli_import.sh <normcore> <devices dir> [import_tests]}
devs=${2:?usage: cli_import.sh <normcore> <devices dir> [import_tests]}
tests_bin=${3:-}
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

# expect_error <name> <exit code> <text> <path that must not exist> -- cmd...
expect_error() {
  local name=$1 code=$2 text=$3 absent=$4
  shift 5
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, want $code"; cat "$work/out.txt" "$work/err.txt"; return; fi
  if ! grep -qF -- "$text" "$work/err.txt" "$work/out.txt"; then
    bad "$name: output lacks '$text':"; cat "$work/out.txt" "$work/err.txt"; return
  fi
  if [ -n "$absent" ] && [ -e "$absent" ]; then bad "$name: $absent was written"; return; fi
  ok
}

# expect_ok <name> <text that stdout must contain> -- cmd...
expect_ok() {
  local name=$1 text=$2
  shift 3
  if ! "$@" > "$work/out.txt" 2> "$work/err.txt"; then
    bad "$name: failed"; cat "$work/out.txt" "$work/err.txt"; return
  fi
  if [ -n "$text" ] && ! grep -qF -- "$text" "$work/out.txt"; then
    bad "$name: stdout lacks '$text':"; cat "$work/out.txt"; return
  fi
  ok
}

# json_get <file> <python expression on j>: prints the value.
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# --- HLO fixtures ------------------------------------------------------------------------------
# Flax-style conv + BN + ReLU, NCHW [1,16,4,4]: the BN parameters are unnamed parameter(2..5)
# that a Flax checkpoint bundle fills by role; the conv bias is a separate add.
C=16
python3 - "$work" "$C" <<'PY'
import json, sys
work, C = sys.argv[1], int(sys.argv[2])
g = [(0.5 + 0.25 * c) * (1 if c % 2 == 0 else -1) for c in range(C)]
b = [-1 + 0.5 * c for c in range(C)]
m = [0.125 * c - 0.25 for c in range(C)]
v = [1 + 0.5 * c for c in range(C)]
y = "f32[1,%d,4,4]" % C
vec = "f32[%d]" % C
lst = lambda a: "{" + ", ".join(repr(float(x)) for x in a) + "}"
hlo = f"""HloModule jit_conv_bn_relu, entry_computation_layout={{(f32[1,3,4,4]{{3,2,1,0}})->{y}{{3,2,1,0}}}}

ENTRY %main.30 (Arg_0.1: f32[1,3,4,4], Arg_1.2: f32[{C},3,3,3], Arg_2.3: {vec}, Arg_3.4: {vec}, Arg_4.5: {vec}, Arg_5.6: {vec}) -> {y} {{
  %Arg_0.1 = f32[1,3,4,4]{{3,2,1,0}} parameter(0)
  %Arg_1.2 = f32[{C},3,3,3]{{3,2,1,0}} parameter(1)
  %Arg_2.3 = {vec}{{0}} parameter(2)
  %Arg_3.4 = {vec}{{0}} parameter(3)
  %Arg_4.5 = {vec}{{0}} parameter(4)
  %Arg_5.6 = {vec}{{0}} parameter(5)
  %convolution.7 = {y}{{3,2,1,0}} convolution(%Arg_0.1, %Arg_1.2), window={{size=3x3 pad=1_1x1_1}}, dim_labels=bf01_oi01->bf01
  %constant.8 = {vec}{{0}} constant({lst([0.25 * (c % 3) - 0.25 for c in range(C)])})
  %broadcast.9 = {y}{{3,2,1,0}} broadcast(%constant.8), dimensions={{1}}
  %add.10 = {y}{{3,2,1,0}} add(%convolution.7, %broadcast.9)
  %broadcast.11 = {y}{{3,2,1,0}} broadcast(%Arg_2.3), dimensions={{1}}
  %subtract.12 = {y}{{3,2,1,0}} subtract(%add.10, %broadcast.11)
  %constant.13 = f32[] constant(1e-05)
  %broadcast.14 = {vec}{{0}} broadcast(%constant.13), dimensions={{}}
  %add.15 = {vec}{{0}} add(%Arg_3.4, %broadcast.14)
  %rsqrt.16 = {vec}{{0}} rsqrt(%add.15)
  %multiply.17 = {vec}{{0}} multiply(%rsqrt.16, %Arg_4.5)
  %broadcast.18 = {y}{{3,2,1,0}} broadcast(%multiply.17), dimensions={{1}}
  %multiply.19 = {y}{{3,2,1,0}} multiply(%subtract.12, %broadcast.18)
  %broadcast.20 = {y}{{3,2,1,0}} broadcast(%Arg_5.6), dimensions={{1}}
  %add.21 = {y}{{3,2,1,0}} add(%multiply.19, %broadcast.20)
  %constant.22 = f32[] constant(0)
  %broadcast.23 = {y}{{3,2,1,0}} broadcast(%constant.22), dimensions={{}}
  ROOT %maximum.24 = {y}{{3,2,1,0}} maximum(%add.21, %broadcast.23)
}}
"""
open(f"{work}/conv_bn_relu.hlo", "w").write(hlo)
open(f"{work}/conv_bn_relu.txt", "w").write("// exported by jax\n" + hlo)
flax = {"params": {"Conv_0": {"kernel": [0.0] * (C * 27)}, "BatchNorm_0": {"scale": g, "bias": b}},
        "batch_stats": {"BatchNorm_0": {"mean": m, "var": v}}}
json.dump(flax, open(f"{work}/flax.json", "w"))
# The same bundle with a missing key and with a wrong shape.
miss = json.loads(json.dumps(flax)); del miss["params"]["BatchNorm_0"]["bias"]
json.dump(miss, open(f"{work}/missing.json", "w"))
wrong = json.loads(json.dumps(flax)); wrong["batch_stats"]["BatchNorm_0"]["var"] = v[:8]
json.dump(wrong, open(f"{work}/wrong_shape.json", "w"))
# By parameter number instead of by role.
json.dump({"param2": m, "3": v, "parameter.4": g, "param5": b}, open(f"{work}/numbers.json", "w"))

# Two BNs (native batch-norm-inference + NHWC decomposed with constants) and a near miss
# (a "mean" of shape [1,3,2,2]).
def c3(a): return "{" + ", ".join(repr(float(x)) for x in a[:3]) + "}"
two = f"""HloModule two_bns

ENTRY %main (x: f32[1,3,2,2], z: f32[1,2,2,3], w: f32[1,3,2,2]) -> (f32[1,3,2,2], f32[1,2,2,3], f32[1,3,2,2]) {{
  %x = f32[1,3,2,2] parameter(0)
  %z = f32[1,2,2,3] parameter(1)
  %w = f32[1,3,2,2] parameter(2)
  %scale = f32[3] constant({c3(g)})
  %offset = f32[3] constant({c3(b)})
  %mean = f32[3] constant({c3(m)})
  %var = f32[3] constant({c3(v)})
  %bn = f32[1,3,2,2] batch-norm-inference(%x, %scale, %offset, %mean, %var), epsilon=0.001, feature_index=1
  %mb = f32[1,2,2,3] broadcast(%mean), dimensions={{3}}
  %zc = f32[1,2,2,3] subtract(%z, %mb)
  %eps = f32[] constant(0.001)
  %epsb = f32[3] broadcast(%eps), dimensions={{}}
  %ve = f32[3] add(%var, %epsb)
  %inv = f32[3] rsqrt(%ve)
  %k = f32[3] multiply(%inv, %scale)
  %kb = f32[1,2,2,3] broadcast(%k), dimensions={{3}}
  %zs = f32[1,2,2,3] multiply(%zc, %kb)
  %ob = f32[1,2,2,3] broadcast(%offset), dimensions={{3}}
  %zy = f32[1,2,2,3] add(%zs, %ob)
  %mmap = f32[1,3,2,2] constant({{{{{{0.5, 0.5}}, {{0.5, 0.5}}}}, {{{{0.5, 0.5}}, {{0.5, 0.5}}}}, {{{{0.5, 0.5}}, {{0.5, 0.5}}}}}})
  %wc = f32[1,3,2,2] subtract(%w, %mmap)
  %kb2 = f32[1,3,2,2] broadcast(%inv), dimensions={{1}}
  %wn = f32[1,3,2,2] multiply(%wc, %kb2)
  ROOT %t = (f32[1,3,2,2], f32[1,2,2,3], f32[1,3,2,2]) tuple(%bn, %zy, %wn)
}}
"""
open(f"{work}/two.hlo", "w").write(two)
PY

# --- import + run: HLO with a Flax bundle, default device (int8, integer I/O) ----------------------
plan=$work/plan
expect_ok "import hlo" "layer BatchNorm_0: decomposed" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/flax.json" --config "$m_def" -o "$plan"
for f in plan.json BatchNorm_0.params.bin BatchNorm_0.bn.json BatchNorm_0.report.txt; do
  [ -f "$plan/$f" ] && ok || bad "plan lacks $f"
done
if [ "$(json_get "$plan/plan.json" "j['layers'][0]['channels'], j['layers'][0]['channel_axis'], j['layers'][0]['layout'], j['layers'][0]['activation'], j['layers'][0]['job']")" = \
     "16 1 nchw relu {'c': 16, 'hw': 16, 'n': 1}" ]; then ok; else bad "plan.json layer fields"; json_get "$plan/plan.json" "j['layers'][0]"; fi
[ "$(json_get "$plan/plan.json" "j['layers'][0]['eps']")" = "1e-05" ] && ok || bad "plan.json eps"
expect_ok "run plan ref" "max error" -- "$bin" run --plan "$plan" --device "ref:$m_def"
grep -q " ok$" "$work/out.txt" && ok || bad "run plan ref: not ok"
bound=$(json_get "$plan/plan.json" "j['layers'][0]['worst_error_lsb']")
echo "conv+BN+ReLU (HLO, 16 channels) on ref:normcore: $(grep -o 'max error.*' "$work/out.txt")"
# The folded parameters reproduce the recovered BN: `normcore fold` on the plan's bn.json gives
# the same image.
"$bin" fold --params "$plan/BatchNorm_0.bn.json" --config "$m_def" -o "$work/refold.bin" > /dev/null &&
  cmp -s "$work/refold.bin" "$plan/BatchNorm_0.params.bin" && ok || bad "fold of bn.json differs from the plan's image"

# A float device (contract v2) plans the same float model without quantisation options: fp32 s, b
# and the error in output ULPs; the plan's bn.json refolds to the same image; --plan runs it.
"$bin" gen --accel --manifest-only --in-type fp16 --out-type fp16 -o "$work/dev_fp16" > /dev/null
fplan=$work/fplan
expect_ok "import hlo fp16 device" "layer BatchNorm_0: decomposed" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/flax.json" \
  --config "$work/dev_fp16/manifest.json" -o "$fplan"
grep -q "worst-case error: .* ULP vs float64 batch norm" "$fplan/BatchNorm_0.report.txt" && ok ||
  bad "float plan report lacks the ULP error"
[ "$(json_get "$fplan/plan.json" "j['arith']['x_type'], j['arith']['y_type']")" = "fp16 fp16" ] &&
  ok || bad "float plan.json arith types"
"$bin" fold --params "$fplan/BatchNorm_0.bn.json" --config "$work/dev_fp16/manifest.json" \
  -o "$work/frefold.bin" > /dev/null &&
  cmp -s "$work/frefold.bin" "$fplan/BatchNorm_0.params.bin" && ok ||
  bad "fold of the float plan's bn.json differs from its image"
# --plan runs the float plan: the float64 batch norm as reference, the error in output ULPs
# within the fold's bound (random inputs around each channel's mean; a float16 .npy in place; a
# float32 .npy rounded once into fp16; an integer .npy refused, exit 2).
expect_ok "run float plan" " ULP (bound " -- \
  "$bin" run --plan "$fplan" --device "ref:$work/dev_fp16/manifest.json"
grep -q " ok$" "$work/out.txt" && ok || bad "run float plan: not ok"
fbound=$(json_get "$fplan/plan.json" "j['layers'][0]['worst_error_lsb']")
python3 - "$work/out.txt" "$fbound" <<'PY' && ok || bad "run float plan: max error not in (0, bound]"
import re, sys
m = re.search(r"max error ([0-9.]+) ULP \(bound ([0-9.]+) ULP\)", open(sys.argv[1]).read())
err, bound = float(m.group(1)), float(m.group(2))
assert 0 < err <= bound and abs(bound - float(sys.argv[2])) < 1e-5, (err, bound)
PY
echo "conv+BN+ReLU (HLO) fp16 plan on ref: $(grep -o 'max error.*' "$work/out.txt")"
python3 - "$work" <<'PY'
import random, struct, sys
random.seed(5)
n = 16 * 16
# values of fp16 (so that the float32 file holds the same ones)
vals = [struct.unpack("<e", struct.pack("<e", random.gauss(0, 3)))[0] for _ in range(n)]
for name, descr, fmt in (("f2", "<f2", "e"), ("f4", "<f4", "f"), ("i1", "|i1", "b")):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (1, 16, 4, 4), }" % descr
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(f"{sys.argv[1]}/xf_{name}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        data = [float("inf")] + vals[1:] if fmt != "b" else [3] * n  # element 0: +Inf
        f.write(struct.pack("<%d%s" % (n, fmt), *data))
PY
expect_ok "run float plan f2 input" "1 NaN / Inf inputs" -- \
  "$bin" run --plan "$fplan" --device "ref:$work/dev_fp16/manifest.json" \
  --input "BatchNorm_0=$work/xf_f2.npy"
grep -q " ok$" "$work/out.txt" && ok || bad "run float plan f2 input: not ok"
cp "$work/out.txt" "$work/out_f2.txt"
expect_ok "run float plan f4 input" " ok" -- \
  "$bin" run --plan "$fplan" --device "ref:$work/dev_fp16/manifest.json" \
  --input "BatchNorm_0=$work/xf_f4.npy"
# the float32 values rounded once into fp16 are the float16 file's: the same error
[ "$(grep -o 'max error [0-9.]*' "$work/out.txt")" = "$(grep -o 'max error [0-9.]*' "$work/out_f2.txt")" ] &&
  ok || bad "float32 input rounded into fp16 differs from the float16 input"
expect_error "run float plan integer input" 2 "is not a float type" "" -- \
  "$bin" run --plan "$fplan" --device "ref:$work/dev_fp16/manifest.json" \
  --input "BatchNorm_0=$work/xf_i1.npy"
# bf16 -> fp32 device: the same model planned and run (error in fp32 ULPs).
"$bin" gen --accel --manifest-only --in-type bf16 --out-type fp32 -o "$work/dev_bf16" > /dev/null
expect_ok "import hlo bf16 device" "layer BatchNorm_0" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/flax.json" \
  --config "$work/dev_bf16/manifest.json" -o "$work/fplan_bf16"
expect_ok "run bf16 -> fp32 plan" " ULP (bound " -- \
  "$bin" run --plan "$work/fplan_bf16" --device "ref:$work/dev_bf16/manifest.json"
grep -q " ok$" "$work/out.txt" && ok || bad "run bf16 plan: not ok"
echo "conv+BN+ReLU (HLO) bf16 -> fp32 plan on ref: $(grep -o 'max error.*' "$work/out.txt")"

# A given input per layer (LAYER=FILE), int8 .npy written without numpy.
python3 - "$work/x16.npy" <<'PY'
import random, struct, sys
random.seed(3)
n = 16 * 16
hdr = "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 16, 4, 4), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%db" % n, *[random.randint(-128, 127) for _ in range(n)]))
PY
expect_ok "run plan given input" "input $work/x16.npy" -- \
  "$bin" run --plan "$plan" --device "ref:$m_def" --input "BatchNorm_0=$work/x16.npy"
# An int16 .npy for the int8 layer: decoded into the layer's type (in range: runs; 300: exit 2).
for v in 100 300; do
python3 - "$work/x16_i2_$v.npy" "$v" <<'PY'
import struct, sys
n = 16 * 16
hdr = "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 16, 4, 4), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%dh" % n, *([-7, int(sys.argv[2])] * (n // 2))))
PY
done
expect_ok "run plan int16 input decoded" " ok" -- \
  "$bin" run --plan "$plan" --device "ref:$m_def" --input "BatchNorm_0=$work/x16_i2_100.npy"
expect_error "run plan input out of range" 2 "input element 1 = 300 is outside the input range" \
  "" -- "$bin" run --plan "$plan" --device "ref:$m_def" --input "BatchNorm_0=$work/x16_i2_300.npy"
if [ $have_sim -eq 1 ]; then
  expect_ok "run plan sim" " ok" -- "$bin" run --plan "$plan" --device "sim:$m_def"
fi

# Parameters by number; HLO detected by content in a .txt file.
expect_ok "import by number" "by parameter number" -- \
  "$bin" import "$work/conv_bn_relu.txt" --params "$work/numbers.json" --config "$m_def" -o "$work/plan_n"
cmp -s "$work/plan_n/"*.params.bin "$plan/BatchNorm_0.params.bin" && ok || bad "by-number plan differs"

# --- nc_small (int16 in, uint8 out, 5 channels per group): real quantisation -----------------------
expect_ok "import nc_small" "layer BatchNorm_0" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/flax.json" --config "$m_small" -o "$work/plan_s" \
  --in-scale 0.001 --out-scale 0.05 --out-zero-point 3
grep -q "channel groups" "$work/out.txt" && ok || bad "nc_small: no channel-group note"
[ "$(json_get "$work/plan_s/plan.json" "j['quant']['output']['zero_point']")" = "3" ] && ok || bad "plan quant"
expect_ok "run nc_small ref" " ok" -- "$bin" run --plan "$work/plan_s" --device "ref:$m_small"
echo "conv+BN+ReLU (HLO, 16 channels) on ref:nc_small: $(grep -o 'max error.*' "$work/out.txt")"
if [ $have_sim -eq 1 ]; then
  expect_ok "run nc_small sim" " ok" -- "$bin" run --plan "$work/plan_s" --device "sim:$m_small"
fi
expect_error "plan for another device" 2 "normcore run: error:" "" -- \
  "$bin" run --plan "$work/plan_s" --device "ref:$m_def"

# --- several BNs and a near miss -------------------------------------------------------------------
expect_ok "import two" "near miss at line 24: not a BN" -- \
  "$bin" import "$work/two.hlo" --config "$m_def" -o "$work/plan2"
[ "$(json_get "$work/plan2/plan.json" "len(j['layers']), len(j['near_misses'])")" = "2 1" ] && ok || bad "two: counts"
[ "$(json_get "$work/plan2/plan.json" "[l['layout'] for l in j['layers']]")" = "['nchw', 'nhwc']" ] && ok || bad "two: layouts"
json_get "$work/plan2/plan.json" "j['near_misses'][0]['reason']" | grep -q "not per-channel" && ok || bad "two: reason"
expect_ok "run two" "" -- "$bin" run --plan "$work/plan2" --device "ref:$m_def"
[ "$(grep -c ' ok$' "$work/out.txt")" = "2" ] && ok || bad "run two: 2 ok lines"
# The same two layers on the ring version of the device (one batch on the descriptor ring): the
# same errors, layer by layer.
if [ -f "$devs/nc_ring/rtl/manifest.json" ]; then
  sed 's/ on ref:[^ ]*//' "$work/out.txt" > "$work/two_start.txt"
  expect_ok "run two ring" "" -- "$bin" run --plan "$work/plan2" --device "ref:$devs/nc_ring/rtl/manifest.json"
  sed 's/ on ref:[^ ]*//' "$work/out.txt" > "$work/two_ring.txt"
  diff "$work/two_start.txt" "$work/two_ring.txt" > /dev/null && ok || bad "run two ring: differs from START"
fi
python3 - "$work/x12.npy" <<'PY'
import struct, sys
hdr = "{'descr': '<i2', 'fortran_order': False, 'shape': (12,), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<12h", *[-128, 127, 0, 1, -1, 64, -64, 100, -100, 5, 7, -9]))
PY
expect_ok "run two given inputs" "input $work/x12.npy" -- \
  "$bin" run --plan "$work/plan2" --device "ref:$m_def" --input "bn=$work/x12.npy" --input "zc=$work/x12.npy"
[ "$(grep -c "input $work/x12.npy.* ok$" "$work/out.txt")" = "2" ] && ok || bad "run two given inputs: 2 ok lines"

# --- a wrong parameter image exceeds the bound: exit 1 ---------------------------------------------
cp -r "$plan" "$work/tampered"
python3 - "$work/tampered/BatchNorm_0.bn.json" "$work/bad_bn.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["beta"][5] += 0.75; json.dump(j, open(sys.argv[2], "w"))
PY
"$bin" fold --params "$work/bad_bn.json" --config "$m_def" -o "$work/tampered/BatchNorm_0.params.bin" > /dev/null
expect_error "tampered image" 1 "exceeds its fold bound" "" -- "$bin" run --plan "$work/tampered" --device "ref:$m_def"
grep -q "channel 5" "$work/out.txt" && ok || bad "tampered: worst channel not named"

# --- errors: nothing written, an existing plan kept ------------------------------------------------
printf 'HloModule bad\nENTRY %%main {\n  %%x = f32[2] parameter(0)\n  ROOT %%y = f32[2] add(%%x, %%nope)\n}\n' > "$work/bad.hlo"
expect_error "hlo parse error" 2 "bad.hlo:4" "$work/p_bad" -- "$bin" import "$work/bad.hlo" --config "$m_def" -o "$work/p_bad"
expect_error "missing key" 2 "parameter(5) 'Arg_5.6'" "$work/p_bad" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/missing.json" --config "$m_def" -o "$work/p_bad"
grep -qF "close keys:" "$work/err.txt" && ok || bad "missing key: no close keys"
expect_error "shape mismatch" 2 "expected shape [16], found [8]" "$work/p_bad" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/wrong_shape.json" --config "$m_def" -o "$work/p_bad"
grep -qF "batch_stats/BatchNorm_0/var" "$work/err.txt" && ok || bad "shape mismatch: key not named"
expect_error "no bundle" 2 "--params" "$work/p_bad" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --config "$m_def" -o "$work/p_bad"
expect_error "bad bundle json" 2 "malformed JSON" "$work/p_bad" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/bad.hlo" --config "$m_def" -o "$work/p_bad"
echo "not hlo" > "$work/notes.txt"
expect_error "txt not hlo" 2 "HloModule" "$work/p_bad" -- "$bin" import "$work/notes.txt" --config "$m_def" -o "$work/p_bad"
expect_error "missing model" 2 "nope.onnx" "$work/p_bad" -- "$bin" import "$work/nope.onnx" --config "$m_def" -o "$work/p_bad"
expect_error "bad config" 2 "--config" "$work/p_bad" -- "$bin" import "$work/two.hlo" --config "$work/bad.hlo" -o "$work/p_bad"
expect_error "bad in-scale" 2 "--in-scale" "$work/p_bad" -- "$bin" import "$work/two.hlo" --config "$m_def" --in-scale 0 -o "$work/p_bad"
# A failing import into an existing plan keeps it; a directory that is not a plan is not replaced.
before=$(cat "$plan/plan.json")
expect_error "bad import keeps plan" 2 "expected shape" "" -- \
  "$bin" import "$work/conv_bn_relu.hlo" --params "$work/wrong_shape.json" --config "$m_def" -o "$plan"
[ "$before" = "$(cat "$plan/plan.json")" ] && ok || bad "existing plan changed"
mkdir -p "$work/notaplan" && echo keep > "$work/notaplan/keep.txt"
expect_error "not a plan dir" 2 "not a normcore plan" "" -- "$bin" import "$work/two.hlo" --config "$m_def" -o "$work/notaplan"
[ -f "$work/notaplan/keep.txt" ] && ok || bad "notaplan: contents lost"
leftovers=$(find "$work" -maxdepth 1 -name '.*tmp*' | wc -l)
[ "$leftovers" = "0" ] && ok || bad "temporary directories left: $leftovers"
# run --plan errors.
expect_error "run no plan" 2 "plan.json" "" -- "$bin" run --plan "$work/none" --device "ref:$m_def"
expect_error "run plan + params" 2 "excludes" "" -- "$bin" run --plan "$plan" --params x.bin --device "ref:$m_def"
expect_error "run plan unknown layer" 2 "no layer 'bn9'" "" -- "$bin" run --plan "$plan" --device "ref:$m_def" --input "bn9=$work/x16.npy"
expect_error "run plan wrong size" 2 "layer 'bn' needs 12" "" -- "$bin" run --plan "$work/plan2" --device "ref:$m_def" --input "bn=$work/x16.npy"
expect_error "run without params" 2 "--params is required" "" -- "$bin" run --device "ref:$m_def" --input "$work/x16.npy" --output "$work/y.npy"

# --- ONNX (models written by import_tests) ---------------------------------------------------------
if [ -n "$tests_bin" ]; then
  NORMCORE_IMPORT_EXAMPLES="$work/onnx" "$tests_bin" --gtest_filter='PlanExamples.*' > /dev/null || bad "writing ONNX examples"
  expect_ok "import onnx" "layer bn1: batchnorm (bn,relu)" -- \
    "$bin" import "$work/onnx/conv_bn_relu16.onnx" --config "$m_def" -o "$work/plan_o"
  expect_ok "run onnx ref" " ok" -- "$bin" run --plan "$work/plan_o" --device "ref:$m_def"
  echo "conv+BN+ReLU (ONNX, 16 channels) on ref:normcore: $(grep -o 'max error.*' "$work/out.txt")"
  # The ONNX and HLO versions of the network fold to the same image.
  cmp -s "$work/plan_o/bn1.params.bin" "$plan/BatchNorm_0.params.bin" && ok || bad "ONNX and HLO images differ"
  if [ $have_sim -eq 1 ]; then
    expect_ok "run onnx sim" " ok" -- "$bin" run --plan "$work/plan_o" --device "sim:$m_def"
  fi
  expect_ok "import onnx decomposed" "decomposed (sub,div,mul,add)" -- \
    "$bin" import "$work/onnx/decomposed.onnx" --config "$m_small" -o "$work/plan_d"
  expect_ok "run onnx decomposed" " ok" -- "$bin" run --plan "$work/plan_d" --device "ref:$m_small"
  expect_error "truncated onnx" 2 "truncated.onnx" "$work/p_bad" -- \
    "$bin" import "$work/onnx/truncated.onnx" --config "$m_def" -o "$work/p_bad"
  expect_error "training onnx" 2 "training" "$work/p_bad" -- \
    "$bin" import "$work/onnx/training.onnx" --config "$m_def" -o "$work/p_bad"
fi

# --- MLIR (StableHLO from Flax, TOSA from torch-mlir): the committed fixtures -----------------
fx=$(cd "$(dirname "$0")/../import/fixtures" && pwd)
expect_ok "import stablehlo" "layer BatchNorm_2: decomposed" -- \
  "$bin" import "$fx/stablehlo/multi_bn.mlir" --params "$fx/stablehlo/multi_bn.npz" \
  --config "$m_def" -o "$work/plan_m" --in-scale 0.0625 --out-scale 0.05
grep -q "wrote $work/plan_m (3 batch norm(s), 0 near miss(es))" "$work/out.txt" && ok ||
  bad "stablehlo: not 3 batch norms"
expect_ok "run stablehlo plan" " ok" -- "$bin" run --plan "$work/plan_m" --device "ref:$m_def"
expect_ok "import tosa (by content)" "axis 1 (nchw), shape [2,8,4,4]" -- \
  "$bin" import "$fx/tosa/conv_bn_relu.mlir" --format mlir --config "$m_def" -o "$work/plan_t"
grep -q "activation relu" "$work/out.txt" && ok || bad "tosa: relu not fused"
expect_ok "run tosa plan" " ok" -- "$bin" run --plan "$work/plan_t" --device "ref:$m_def"
sed 's/stablehlo.rsqrt /stablehlo.rsqrtt /' "$fx/stablehlo/standalone_bn.mlir" > "$work/typo.mlir"
expect_error "misspelt mlir op" 2 "typo.mlir:10:10: unknown stablehlo op 'stablehlo.rsqrtt'" \
  "$work/p_bad" -- "$bin" import "$work/typo.mlir" --config "$m_def" -o "$work/p_bad"
sed 's/rsqrt(/rsqrtt(/' "$work/conv_bn_relu.hlo" > "$work/typo.hlo"
expect_error "misspelt hlo opcode" 2 "unknown HLO opcode 'rsqrtt'" "$work/p_bad" -- \
  "$bin" import "$work/typo.hlo" --config "$m_def" -o "$work/p_bad"

# torch.export archives, Relay text with a safetensors / Flax msgpack bundle (issue 16).
expect_ok "import torch.export" "layer bn1: batchnorm (bn,relu) at node 'batch_norm'" -- \
  "$bin" import "$fx/torch_export/multi_bn.pt2" --config "$m_def" -o "$work/plan_pt2"
expect_ok "run torch.export plan" " ok" -- "$bin" run --plan "$work/plan_pt2" --device "ref:$m_def"
expect_ok "import torch.export aten chain" "layer bn: decomposed (sub,mul,mul,add,relu)" -- \
  "$bin" import "$fx/torch_export/conv_bn_relu.aten.pt2" --config "$m_def" -o "$work/plan_pt2a"
expect_error "torch.export training mode" 2 "training=True" "$work/p_bad" -- \
  "$bin" import "$fx/torch_export/train_bn.pt2" --config "$m_def" -o "$work/p_bad"
expect_ok "import relay + safetensors" "3 batch norm(s), 0 near miss(es)" -- \
  "$bin" import "$fx/relay/multi_bn.simplified.relay" \
  --params "$fx/torch_export/multi_bn.safetensors" --config "$m_def" -o "$work/plan_relay"
expect_ok "run relay plan" " ok" -- "$bin" run --plan "$work/plan_relay" --device "ref:$m_def"
expect_ok "import relay nhwc + msgpack" "axis 3 (nhwc)" -- \
  "$bin" import "$fx/relay/nhwc_conv_bn_relu.relay" \
  --params "$fx/stablehlo/conv_bn_relu.msgpack" --config "$m_def" -o "$work/plan_relay2"
sed 's/nn.batch_norm(/nn.batch_nrom(/' "$fx/relay/standalone_bn.relay" > "$work/typo.relay"
expect_error "misspelt relay op" 2 "'nn.batch_nrom' is not a Relay operator (did you mean" \
  "$work/p_bad" -- "$bin" import "$work/typo.relay" --config "$m_def" -o "$work/p_bad"
head -c 300 "$fx/torch_export/multi_bn.safetensors" > "$work/cut.safetensors"
expect_error "truncated safetensors" 2 "cut.safetensors" "$work/p_bad" -- \
  "$bin" import "$fx/relay/multi_bn.relay" --params "$work/cut.safetensors" --config "$m_def" \
  -o "$work/p_bad"

# torch.export with pickled weights (a tensor subclass: use_pickle): refused without a bundle,
# naming the buffer; the model's safetensors fills them.
expect_error "torch.export pickled weights, no bundle" 2 \
  "'b_bn1_running_mean' (buffer 'bn1.running_mean' (pickled by torch" "$work/p_bad" -- \
  "$bin" import "$fx/torch_export/preact_bn.pickled.pt2" --config "$m_def" -o "$work/p_bad"
expect_ok "torch.export pickled weights + safetensors" "2 batch norm(s), 0 near miss(es)" -- \
  "$bin" import "$fx/torch_export/preact_bn.pickled.pt2" \
  --params "$fx/torch_export/preact_bn.safetensors" --config "$m_def" -o "$work/plan_pk"
expect_ok "run pickled plan" " ok" -- "$bin" run --plan "$work/plan_pk" --device "ref:$m_def"
# A torch ONNX export whose BN torch folded into the conv: the note says where it went.
expect_ok "onnx with the BN folded by torch" "may already include it" -- \
  "$bin" import "$fx/onnx/conv_bn_relu.onnx" --config "$m_def" -o "$work/plan_fold"

# Every committed framework fixture (StableHLO, HLO, TOSA, torch.export, Relay, ONNX): imported,
# each layer run on ref: with the framework's quantised BN input, within the fold bound of the
# framework's own float output (scripts/import_table.py, the table of docs/import.md).
if python3 "$(dirname "$0")/../../scripts/import_table.py" --normcore "$bin" --manifest "$m_def" \
  --check > "$work/table.md" 2> "$work/table.err"; then
  ok
else
  bad "import_table.py --check: $(cat "$work/table.err")"
fi

echo "cli_import: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
