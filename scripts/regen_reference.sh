#!/usr/bin/env bash
# The reference configurations committed under hw/generated/ so FPGA users can take RTL without
# building anything. This list is the single source of those configurations.
#   regen_reference.sh <normcore>          regenerate hw/generated/*
#   regen_reference.sh --check <normcore>  fail (and show the diff) if any committed file drifted
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
bin=${1:?usage: regen_reference.sh [--check] <normcore binary>}
root=$(cd "$(dirname "$0")/.." && pwd)
refs=(
  "normcore_l8_i8   --lanes 8 --in-bits 8 --out-bits 8 --scale-bits 16 --offset-bits 32 --max-channels 1024"
  "normcore_l1_i8   --lanes 1 --in-bits 8 --out-bits 8 --scale-bits 16 --offset-bits 32 --max-channels 512 --inner-bits 16"
  "normcore_l16_i16 --lanes 16 --in-bits 16 --out-bits 8 --scale-bits 18 --offset-bits 40 --max-channels 2048 --pipeline 5"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for ref in "${refs[@]}"; do
  read -r -a words <<< "$ref"
  name=${words[0]}
  "$bin" gen --name "$name" "${words[@]:1}" -o "$work/$name" > /dev/null
  if [ $check -eq 1 ]; then
    if ! diff -r "$root/hw/generated/$name" "$work/$name" > "$work/$name.diff"; then
      echo "DRIFT: hw/generated/$name differs from the generator's output:"
      head -n 40 "$work/$name.diff"
      status=1
    else
      echo "ok: hw/generated/$name"
    fi
  else
    rm -rf "$root/hw/generated/$name"
    mkdir -p "$root/hw/generated"
    cp -r "$work/$name" "$root/hw/generated/$name"
    echo "wrote hw/generated/$name"
  fi
done
[ $status -eq 0 ] || echo "run scripts/regen_reference.sh <normcore> to update the committed RTL"
exit $status
