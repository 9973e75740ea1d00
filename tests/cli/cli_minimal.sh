#!/usr/bin/env bash
# The CLI built with NORMCORE_IMPORT=OFF (no ONNX or protobuf): gen, fold and info work; import
# and run --plan say that this build has no model import (exit 2).
# Usage: cli_minimal.sh <normcore binary> <source root>
set -uo pipefail
bin=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
"$bin" gen --accel --lanes 4 -o "$work/acc" > /dev/null && ok "gen --accel" || bad "gen --accel"
"$bin" fold --params "$root/examples/bn_layer.json" --config "$work/acc/manifest.json" \
  -o "$work/p.bin" > /dev/null && [ -s "$work/p.bin" ] && ok "fold" || bad "fold"
grep -q "lanes" <<<"$("$bin" info --device "ref:$work/acc/manifest.json")" && ok "info on ref:" ||
  bad "info on ref:"
"$bin" import x.onnx --config "$work/acc/manifest.json" -o "$work/plan" > "$work/out" 2>&1
rc=$?
[ $rc -eq 2 ] && ok "import absent (exit 2)" || { cat "$work/out"; bad "import: exit $rc"; }
"$bin" run --device "ref:$work/acc/manifest.json" --plan "$work/plan" > "$work/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "without model import" "$work/out"; then ok "run --plan refused (exit 2)"
else cat "$work/out"; bad "run --plan: exit $rc"; fi
[ $fail -eq 0 ] && echo "PASS: minimal CLI" || echo "FAIL: minimal CLI"
exit $fail
