#!/usr/bin/env bash
# The FuseSoC CAPI2 .core of a `normcore gen` output (core and --accel), checked by FuseSoC from
# PyPI (scripts/requirements-eda.txt, installed into the project venv by scripts/venv.sh):
# `fusesoc core show` accepts it and its lint target runs Verilator -Wall through edalize with no
# warning. Skips (exit 77) only when the venv cannot be made (no network, no python3-venv).
# Usage: fusesoc.sh <normcore> <source root>
set -euo pipefail
bin=$1
root=$2
venv=${NORMCORE_VENV:-$root/.venv}
if ! log=$(bash "$root/scripts/venv.sh" "$venv" eda 2>&1); then
  echo "$log" | tail -n 5
  echo "SKIP: the project venv ($venv) with FuseSoC cannot be made; gen.fusesoc not run"
  exit 77
fi
fusesoc=$venv/bin/fusesoc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$bin" gen -o "$work/lib/core" > /dev/null
"$bin" gen --accel --name ncx -o "$work/lib/accel" > /dev/null
for top in normcore_core ncx_top; do
  vlnv=normcore:generated:$top
  "$fusesoc" --cores-root "$work/lib" core show "$vlnv" > "$work/show.log" 2>&1 \
    || { cat "$work/show.log"; fail "fusesoc core show $vlnv"; }
  grep -q "lint" "$work/show.log" || { cat "$work/show.log"; fail "$vlnv: no lint target"; }
  echo "ok: fusesoc core show $vlnv"
  "$fusesoc" --cores-root "$work/lib" run --build-root "$work/build_$top" --target lint "$vlnv" \
    > "$work/lint.log" 2>&1 || { cat "$work/lint.log"; fail "fusesoc run --target lint $vlnv"; }
  if grep -q "%Warning" "$work/lint.log"; then cat "$work/lint.log"; fail "$vlnv: lint warnings"; fi
  grep -q "verilator" "$work/lint.log" || { cat "$work/lint.log"; fail "$vlnv: Verilator did not run"; }
  grep -qx 'VERILATOR_OPTIONS := -Wall' "$work/build_$top"/*/lint-verilator/config.mk \
    || fail "$vlnv: edalize did not pass -Wall to Verilator"
  echo "ok: fusesoc run --target lint $vlnv (Verilator -Wall through edalize, no warnings)"
  # The constraint targets set up their projects (the EDA tools themselves are not installed):
  # Vivado reads the XDC, Quartus the SDC.
  for t in synth:xdc sta:sdc; do
    "$fusesoc" --cores-root "$work/lib" run --setup --build-root "$work/setup_$top" \
      --target "${t%%:*}" "$vlnv" > "$work/setup.log" 2>&1 \
      || { cat "$work/setup.log"; fail "fusesoc run --setup --target ${t%%:*} $vlnv"; }
    grep -rqs "$top.${t##*:}" "$work/setup_$top"/*/"${t%%:*}"-*/*.tcl \
      || fail "$vlnv: target ${t%%:*} does not use $top.${t##*:}"
  done
  echo "ok: targets synth (Vivado project reads $top.xdc) and sta (Quartus, $top.sdc) set up"
done
echo "PASS: FuseSoC"
