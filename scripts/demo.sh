#!/usr/bin/env bash
# The demo with the default configuration: fold example BN parameters, generate the RTL, run a
# tensor through the Verilator model of the core, print the result and the error summary; then
# the same layer through the host runtime on the whole accelerator (registers, DMA, interrupt):
# the example application on the Verilated accelerator (sim:) and the software device (ref:),
# and `normcore run` on both with identical output files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
TARGETS="normcore demo_runner run_bn_layer device_normcore sim_normcore" bash "$root/scripts/build.sh" > /dev/null
out=$root/build/demo
mkdir -p "$out"
nc=$root/build/cli/normcore
echo "== normcore gen (default configuration) -> build/demo/rtl"
"$nc" gen -o "$out/rtl"
# The demo runner was built from the same generator output; prove they are the same RTL.
diff -r "$out/rtl" "$root/build/sim/demo/rtl" > /dev/null
echo "== normcore fold examples/bn_layer.json -> build/demo/params.bin"
"$nc" fold --params "$root/examples/bn_layer.json" --config "$out/rtl/manifest.json" \
  -o "$out/params.bin"
echo "== Verilator model of build/demo/rtl"
"$root/build/sim/demo/obj/demo_runner" --params "$out/params.bin" \
  --bn "$root/examples/bn_layer.json" --shape "${SHAPE:-2,8,7,7}" --layout "${LAYOUT:-nchw}"

dev=$root/build/devices/normcore/rtl/manifest.json
echo "== host runtime: examples/run_bn_layer on the Verilated accelerator (sim:, memory latency 32, 20% stalls)"
"$root/build/examples/run_bn_layer" "sim:$dev,latency=32,stall=0.2" "$root/examples/bn_layer.json" 2 7 7
echo "== host runtime: the same on the software reference device (ref:)"
"$root/build/examples/run_bn_layer" "ref:$dev" "$root/examples/bn_layer.json" 2 7 7 | tail -n 3
echo "== normcore run: a random 4x8x28x28 int8 tensor on sim: and ref:"
python3 - "$out/x.npy" <<'PY'
import random, struct, sys
random.seed(7)
n = 4 * 8 * 28 * 28
hdr = "{'descr': '|i1', 'fortran_order': False, 'shape': (4, 8, 28, 28), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%db" % n, *[random.randint(-128, 127) for _ in range(n)]))
PY
"$nc" run --device "sim:$dev" --params "$out/params.bin" --input "$out/x.npy" --output "$out/y_sim.npy"
"$nc" run --device "ref:$dev" --params "$out/params.bin" --input "$out/x.npy" --output "$out/y_ref.npy"
cmp "$out/y_sim.npy" "$out/y_ref.npy" && echo "sim and ref outputs are identical ($(stat -c %s "$out/y_ref.npy") bytes)"
