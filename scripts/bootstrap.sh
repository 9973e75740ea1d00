#!/usr/bin/env bash
# Installs everything normcore needs to build and test on Debian 12. Idempotent: packages already
# present are skipped, so a second run does no network traffic.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  verilator yosys iverilog
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libmpfr-dev
  libsystemc-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  nextpnr-ice40 fpga-icestorm gnuplot-nox
  clang-format python3 python3-dev python3-venv
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done"
