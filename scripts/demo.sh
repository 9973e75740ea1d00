#!/usr/bin/env bash
# The demo with the default configuration: fold example BN parameters, generate the RTL, run a
# tensor through the Verilator model, print the result and the error summary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
TARGETS="normcore demo_runner" bash "$root/scripts/build.sh" > /dev/null
out=$root/build/demo
mkdir -p "$out"
nc=$root/build/gen/normcore
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
