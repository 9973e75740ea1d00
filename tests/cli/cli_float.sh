#!/usr/bin/env bash
# Float devices (contract v2) through the CLI: `normcore gen` builds float cores and float
# accelerators, refuses float lanes it does not build (exit 2) but writes an accelerator's
# manifest for them with --manifest-only; `normcore fold` folds
# for fp16 / bf16; and `normcore run` on ref: takes an fp16 (<f2), a bf16 (<V2 and |V2) and a
# float32 tensor, writing bytes equal to an exact evaluation here (Python fractions: x * s + b rounded once, RNE).
# With a devices directory whose float devices (cmake/devices.cmake: nc_fp16, nc_bf16) have
# their sim: and tlm: plugins, one fp16 and one bf16 tensor each give the same bytes on sim:,
# tlm: and ref:.
# Usage: cli_float.sh <normcore binary> [<devices dir>]
set -uo pipefail
bin=${1:?usage: cli_float.sh <normcore> [<devices dir>]}
devs=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# 1. the generator builds float cores and accelerators (fp16 / bf16 in, float out); it refuses,
# clearly, with exit 2, float lanes it does not build (an integer side, a reference design)
"$bin" gen --in-type fp16 --out-type fp16 -o "$work/core" >"$work/e1" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -e "$work/core/normcore_lane.v" ] &&
  grep -q '"in_type": "fp16"' "$work/core/manifest.json"; then ok
else bad "gen fp16 core: rc $rc: $(cat "$work/e1")"; fi
for t in fp16 bf16; do
  "$bin" gen --accel --in-type $t --out-type $t -o "$work/acc_$t" >"$work/e1" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && [ -e "$work/acc_$t/normcore_top.v" ] &&
    grep -q "fused multiply-add); x $t" "$work/acc_$t/normcore_lane.v" &&
    grep -q "\"in_type\": \"$t\"" "$work/acc_$t/manifest.json"; then ok
  else bad "gen --accel $t: rc $rc: $(cat "$work/e1")"; fi
done
# fp16 -> int8 core and accelerator (the float lane's integer back end; issue 18)
for t in "" "--accel"; do
  # shellcheck disable=SC2086
  "$bin" gen $t --in-type fp16 --out-type int -o "$work/i8$t" >"$work/e1" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "round_i" "$work/i8$t/normcore_lane.v" &&
    grep -q "y int8" "$work/i8$t/normcore_lane.v"; then ok
  else bad "gen $t fp16 -> int: rc $rc: $(cat "$work/e1")"; fi
done
for t in "--accel --in-type fp16 --out-type int --out-bits 12" \
  "--in-type bf16 --out-type int --out-bits 4" \
  "--in-type int --out-type fp32" "--design bare-mac --in-type bf16 --out-type bf16"; do
  # shellcheck disable=SC2086
  "$bin" gen $t -o "$work/r" >"$work/e1" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && grep -q "float lanes are generated for the core and the accelerator" "$work/e1" &&
    [ ! -e "$work/r" ]; then ok; else bad "gen $t: rc $rc: $(cat "$work/e1")"; fi
done
"$bin" gen --accel --in-type fp8 -o "$work/x" >"$work/e2" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--in-type: must be int, fp16 or bf16" "$work/e2"; then ok
else bad "gen --in-type fp8: rc $rc: $(cat "$work/e2")"; fi
"$bin" gen --accel --manifest-only -o "$work/x" >"$work/e3" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--manifest-only: only for a float config" "$work/e3"; then ok
else bad "gen --manifest-only on an integer config: rc $rc: $(cat "$work/e3")"; fi

# 2. manifests for the ref: device (no RTL)
for t in "fp16 fp16" "bf16 bf16" "fp16 fp32" "bf16 int"; do
  set -- $t
  d=$work/dev_$1_$2
  if "$bin" gen --accel --manifest-only --in-type "$1" --out-type "$2" --lanes 4 \
    --max-channels 16 -o "$d" >/dev/null 2>"$work/e4" &&
    [ "$(ls "$d")" = "manifest.json" ] &&
    grep -q "\"in_type\": \"$1\"" "$d/manifest.json" &&
    grep -q "\"out_type\": \"$2\"" "$d/manifest.json"; then ok
  else bad "gen --manifest-only $1 -> $2: $(cat "$work/e4")"; fi
done

# 3. fold
cat >"$work/bn.json" <<'JSON'
{"eps": 1e-5, "gamma": [1.0, 0.5, -2.0, 1.25], "beta": [0.0, 0.25, 1.0, -3.0],
 "mean": [0.5, -1.0, 0.125, 2.0], "var": [1.0, 4.0, 0.25, 0.0625], "quant": "float"}
JSON
for dev in fp16_fp16 bf16_bf16 fp16_fp32; do
  if "$bin" fold --params "$work/bn.json" --config "$work/dev_$dev/manifest.json" \
    -o "$work/p_$dev.bin" >"$work/f_$dev" 2>&1 && grep -q "worst-case error: .* ULP" "$work/f_$dev"
  then ok; else bad "fold $dev: $(cat "$work/f_$dev")"; fi
done
"$bin" fold --params "$work/bn.json" --config "$work/dev_fp16_fp16/manifest.json" --shift 3 \
  -o "$work/p.bin" >"$work/e5" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--shift: a float datapath has no R" "$work/e5"; then ok
else bad "fold --shift on float: rc $rc"; fi

# 4. run on ref: and compare with the exact evaluation
echo "$bin" >"$work/bin"
python3 - "$work" <<'PY' || bad "python check"
import fractions, math, struct, subprocess, sys, random
work = sys.argv[1]
F = fractions.Fraction
def npy(path, descr, data_bytes, shape):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s,), }" % (descr, ", ".join(map(str, shape)))
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data_bytes)
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    return b[10:10 + n].decode(), b[10 + n:]
FMT = {"fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127)}
def decode(bits, t):
    man, bias = FMT[t]
    w = {"fp16": 16, "bf16": 16, "fp32": 32}[t]
    s = -1 if bits >> (w - 1) else 1
    e = (bits >> man) & ((1 << (w - 1 - man)) - 1)
    m = bits & ((1 << man) - 1)
    if e == 0: return s * F(m) * F(2) ** (1 - bias - man)
    return s * (F(m) + 2 ** man) * F(2) ** (e - bias - man)
def rne(v, t):  # exact Fraction -> bits, one rounding to nearest even (finite results only)
    man, bias = FMT[t]
    w = {"fp16": 16, "bf16": 16, "fp32": 32}[t]
    sign = 1 << (w - 1) if v < 0 else 0
    a = abs(v)
    if a == 0: return sign
    e = max(math.floor(math.log2(a)), 1 - bias)
    while F(2) ** e > a and e > 1 - bias: e -= 1
    while F(2) ** (e + 1) <= a: e += 1
    q = round(a / F(2) ** (e - man))
    if q == 2 ** (man + 1): q, e = q // 2, e + 1
    assert e <= bias, "overflow in the test data"
    if q < 2 ** man: return sign | q
    return sign | ((e + bias) << man) | (q - 2 ** man)
def params(path):
    b = open(path, "rb").read()
    c = struct.unpack("<I", b[8:12])[0]
    s = [struct.unpack("<Q", b[64 + 8 * i:72 + 8 * i])[0] for i in range(c)]
    o = [struct.unpack("<Q", b[64 + 8 * (c + i):72 + 8 * (c + i)])[0] for i in range(c)]
    return s, o
random.seed(18)
N, C, HW = 2, 4, 9
bad = 0
def run(dev, xt, yt, descr, xbits, out_descr, extra=()):
    global bad
    npy(f"{work}/x.npy", descr, xbits, (N, C, HW))
    r = subprocess.run([sys.argv[0] if False else BIN, "run", "--device", f"ref:{work}/dev_{dev}/manifest.json",
                        "--params", f"{work}/p_{dev}.bin", "--input", f"{work}/x.npy",
                        "--output", f"{work}/y.npy", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: run", dev, descr, r.stderr); bad += 1; return
    hdr, data = load(f"{work}/y.npy")
    if out_descr not in hdr:
        print("FAIL: output descr", hdr); bad += 1
    s, b = params(f"{work}/p_{dev}.bin")
    return data, s, b
BIN = open(work + "/bin").read().strip()
for dev, xt, yt, descr, od in [("fp16_fp16", "fp16", "fp16", "<f2", "'<f2'"),
                               ("bf16_bf16", "bf16", "bf16", "<V2", "'<V2'"),
                               ("bf16_bf16", "bf16", "bf16", "|V2", "'<V2'"),
                               ("fp16_fp32", "fp16", "fp32", "<f2", "'<f4'")]:
    xs = [rne(F(random.randint(-4096, 4096), 256), xt) for _ in range(N * C * HW)]
    xs[0], xs[1] = (0x8000, 0x0001) if xt == "fp16" else (0x8000, 0x0001)  # -0, smallest subnormal
    got = run(dev, xt, yt, descr, struct.pack("<%dH" % len(xs), *xs), od)
    if got is None: continue
    data, s, b = got
    ow = 4 if yt == "fp32" else 2
    for e, xb in enumerate(xs):
        c = (e // HW) % C
        v = decode(xb, xt) * decode(s[c] & 0xFFFFFFFF, "fp32") + decode(b[c] & 0xFFFFFFFF, "fp32")
        want = rne(v, yt)
        if v == 0:  # the sign of an exact zero: only -0 + -0 is -0
            want = 0
        g = int.from_bytes(data[ow * e:ow * e + ow], "little")
        if g != want:
            print("FAIL: %s %s element %d: got %#x want %#x" % (dev, descr, e, g, want)); bad += 1; break
# float32 host input to an fp16 device: converted (RNE) in the driver, then the fp16 contract
xs32 = [random.uniform(-8, 8) for _ in range(N * C * HW)]
got = run("fp16_fp16", "fp16", "fp16", "<f4", struct.pack("<%df" % len(xs32), *xs32), "'<f2'")
if got is not None:
    data, s, b = got
    for e, xf in enumerate(xs32):
        c = (e // HW) % C
        x16 = rne(F(struct.unpack("<f", struct.pack("<f", xf))[0]), "fp16")
        v = decode(x16, "fp16") * decode(s[c], "fp32") + decode(b[c], "fp32")
        want = rne(v, "fp16") if v != 0 else 0
        g = int.from_bytes(data[2 * e:2 * e + 2], "little")
        if g != want:
            print("FAIL: float32 input element %d: got %#x want %#x" % (e, g, want)); bad += 1; break
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] && ok

# 5. an integer tensor on a float-input device: exit 2 naming the type
python3 -c "
import struct
h=\"{'descr': '|i1', 'fortran_order': False, 'shape': (8,), }\"
h+=' '*((64-(10+len(h)+1)%64)%64)+'\n'
open('$work/i8.npy','wb').write(b'\x93NUMPY\x01\x00'+struct.pack('<H',len(h))+h.encode()+bytes(8))"
"$bin" run --device "ref:$work/dev_fp16_fp16/manifest.json" --params "$work/p_fp16_fp16.bin" \
  --input "$work/i8.npy" --shape 1,4,2 --output "$work/y8.npy" >"$work/e6" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "input type int8" "$work/e6" && [ ! -e "$work/y8.npy" ]; then ok
else bad "int8 input on fp16 device: rc $rc: $(cat "$work/e6")"; fi

# 6. the driver runs float host tensors of the device's type in place (no staging): the same
# bytes as the staged path (direct=0), NCHW and NHWC, tiled (--tile), fp16 and fp32 outputs, on
# every vector clone this CPU has (NORMCORE_REF_ISA) and on 1 and 2 threads
python3 - "$work/x_big.npy" <<'PY'
import random, struct, sys
random.seed(9)
n = 3 * 4 * 2000
vals = [random.gauss(0, 4) for _ in range(n)]
vals[5] = float("nan"); vals[7777] = float("-inf")
hdr = "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4, 2000), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%de" % n, *vals))
PY
for dev in fp16_fp16 fp16_fp32; do
  for lay in nchw nhwc; do
    m=$work/dev_$dev/manifest.json
    shape=3,4,2000
    [ $lay = nhwc ] && shape=3,2000,4
    "$bin" run --device "ref:$m,direct=0" --params "$work/p_$dev.bin" --input "$work/x_big.npy"       --shape $shape --layout $lay --output "$work/y_staged.npy" -q 2>"$work/e7" || bad "staged $dev $lay"
    for isa in baseline avx2 avx512; do
      for th in 1 2; do
        NORMCORE_REF_ISA=$isa "$bin" run --device "ref:$m,threads=$th" --params "$work/p_$dev.bin"           --input "$work/x_big.npy" --shape $shape --layout $lay --tile 5000 \
          --output "$work/y_direct.npy" -q 2>"$work/e7" &&
          cmp -s "$work/y_staged.npy" "$work/y_direct.npy" && ok ||
          bad "in place != staged: $dev $lay $isa threads=$th $(cat "$work/e7")"
      done
    done
  done
done

# 7. the float accelerator's RTL (sim: and tlm: plugins) against ref: -- the same output bytes, NCHW and
# NHWC, tiled, specials (NaN, Inf, -0, subnormals) in the input
for t in fp16 bf16; do
  m=$devs/nc_$t/rtl/manifest.json
  if [ -z "$devs" ] || [ ! -f "$devs/nc_$t/libnormcore_sim.so" ]; then
    echo "cli_float: no sim: plugin of nc_$t (skipping sim: vs ref:)"
    continue
  fi
  "$bin" fold --params "$work/bn.json" --config "$m" -o "$work/p_nc_$t.bin" >/dev/null 2>&1 ||
    bad "fold nc_$t"
  python3 - "$work/x_$t.npy" $t <<'PY'
import random, struct, sys
random.seed(77)
n = 2 * 4 * 300
pats = [random.getrandbits(16) for _ in range(n)]  # every pattern: NaN, Inf, subnormals too
vals = [random.gauss(0, 4) for _ in range(n)]
descr = "<f2" if sys.argv[2] == "fp16" else "<V2"
if sys.argv[2] == "fp16":
    body = struct.pack("<%de" % n, *vals)
else:  # bf16: the top half of the float32 (truncated: any pattern will do)
    body = b"".join(struct.pack("<f", v)[2:] for v in vals)
body = bytearray(body)
for i in range(0, n, 7):  # raw patterns in every 7th element
    body[2 * i:2 * i + 2] = struct.pack("<H", pats[i])
hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (2, 4, 300), }" % descr
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + bytes(body))
PY
  for lay in nchw nhwc; do
    shape=2,4,300
    [ $lay = nhwc ] && shape=2,300,4
    "$bin" run --device "ref:$m" --params "$work/p_nc_$t.bin" --input "$work/x_$t.npy" \
      --shape $shape --layout $lay --output "$work/y_ref_$t.npy" -q 2>"$work/e8" ||
      bad "ref: nc_$t $lay: $(cat "$work/e8")"
    "$bin" run --device "sim:$m,latency=12,stall=0.1" --params "$work/p_nc_$t.bin" \
      --input "$work/x_$t.npy" --shape $shape --layout $lay --tile 700 \
      --output "$work/y_sim_$t.npy" -q 2>"$work/e8" || bad "sim: nc_$t $lay: $(cat "$work/e8")"
    if cmp -s "$work/y_ref_$t.npy" "$work/y_sim_$t.npy" && [ -s "$work/y_ref_$t.npy" ]; then ok
    else bad "sim: != ref: (nc_$t $lay)"; fi
    if [ ! -f "$devs/nc_$t/libnormcore_tlm.so" ]; then
      echo "cli_float: no tlm: plugin of nc_$t (skipping tlm: vs ref:)"
      continue
    fi
    SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$bin" run --device "tlm:$m,latency=20" \
      --params "$work/p_nc_$t.bin" --input "$work/x_$t.npy" --shape $shape --layout $lay \
      --tile 900 --output "$work/y_tlm_$t.npy" -q 2>"$work/e8" ||
      bad "tlm: nc_$t $lay: $(cat "$work/e8")"
    if cmp -s "$work/y_ref_$t.npy" "$work/y_tlm_$t.npy"; then ok
    else bad "tlm: != ref: (nc_$t $lay)"; fi
  done
done

echo "cli_float: $pass passed, $fail failed"
[ $fail -eq 0 ]
