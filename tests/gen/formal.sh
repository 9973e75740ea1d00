#!/usr/bin/env bash
# The fast subset of the protocol proofs (scripts/prove_props.py --quick: BMC with yices from the
# pinned scripts/requirements-formal.txt and ABC pdr, per module of a small core and a small
# accelerator), then one planted protocol bug that the proofs must find. Without the venv (no
# network) the BMC half is skipped; ABC pdr (Debian's yosys-abc) still runs.
# Usage: formal.sh <normcore> <source root>
set -euo pipefail
bin=$1
root=$2
venv=${NORMCORE_VENV:-$root/.venv}
if ! log=$(bash "$root/scripts/venv.sh" "$venv" formal 2>&1); then
  echo "$log" | tail -n 5
  echo "note: the project venv with yices cannot be made: BMC skipped, pdr only"
fi
export NORMCORE_VENV=$venv
python3 "$root/scripts/prove_props.py" --normcore "$bin" --quick
python3 "$root/scripts/prove_props.py" --normcore "$bin" --plant wlast_early --methods pdr
# --target ecp5 with a wide word (core_e5_w): the head in parts and the occupancy's enable (BMC
# only: the buffer's pdr takes more than 10 minutes).
if [ -x "$venv/bin/yices-smt2" ] || command -v yices-smt2 > /dev/null; then
  python3 "$root/scripts/prove_props.py" --normcore "$bin" --plant head_part --methods bmc
  python3 "$root/scripts/prove_props.py" --normcore "$bin" --plant occ_move --methods bmc
fi
