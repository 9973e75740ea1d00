#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds (Release), runs every ctest test (unit,
# CLI, reference drift, co-simulation of the swept configs, RTL lint/Yosys/Icarus, the installed
# package), checks formatting and size limits, builds the CLI without model import, then builds
# the C++ unit tests with ASan+UBSan and runs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
# Local state must never be committed: a tracked .venv (a worktree's symlink to a shared venv)
# makes git replace the ignored venv directory of every checkout it is merged into.
if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
  tracked=$(git -C "$root" ls-files -- .venv build 'build-*')
  [ -z "$tracked" ] || { echo "test.sh: local state is tracked by git: $tracked" >&2; exit 1; }
fi
# FuseSoC + edalize for ctest gen.fusesoc (pinned, scripts/requirements-eda.txt) and the Yices
# solver for ctest -L formal (scripts/requirements-formal.txt); a few seconds once, then a no-op.
# If the venv cannot be made those tests skip with a message.
bash "$root/scripts/venv.sh" "" eda formal \
  || echo "test.sh: the eda / formal venv could not be made: gen.fusesoc and formal.* will skip"
build=${BUILD_DIR:-$root/build}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

stamp "== format: clang-format --dry-run --Werror (the checked-in .clang-format)"
bash "$root/scripts/check_format.sh"
stamp "== sizes: files <= 600 lines, functions <= 80 (scripts/check_sizes.py)"
python3 "$root/scripts/check_sizes.py"

stamp "== build (Release)"
BUILD_DIR=$build bash "$root/scripts/build.sh"
stamp "== ctest"
(cd "$build" && ctest -j "$(nproc)" --output-on-failure --timeout 1200)

stamp "== Python package: pip install . into the venv, pytest python/tests (scripts/test_python.sh)"
BUILD_DIR=$build bash "$root/scripts/test_python.sh"

stamp "== the CLI without model import (NORMCORE_IMPORT=OFF: no ONNX, no protobuf)"
BUILD_DIR=$build-minimal TARGETS="normcore" bash "$root/scripts/build.sh" \
  -DNORMCORE_IMPORT=OFF -DNORMCORE_TESTS=OFF -DNORMCORE_SIM_BACKEND=OFF -DNORMCORE_TLM=OFF
bash "$root/tests/cli/cli_minimal.sh" "$build-minimal/cli/normcore" "$root"

stamp "== sanitizer build (ASan + UBSan) of the unit tests"
BUILD_DIR=$build-asan TARGETS="unit_tests runtime_tests import_tests float_oracle_tests normcore device_normcore device_nc_small device_nc_ring device_nc_small_ring" bash "$root/scripts/build.sh" \
  -DNORMCORE_SANITIZE=ON -DNORMCORE_COSIM=OFF -DNORMCORE_SIM_BACKEND=OFF -DNORMCORE_TLM=OFF \
  -DNORMCORE_INSTALL=OFF
# The float oracle on a subset of its (s, b) pairs under the sanitizers (every pair in the Release run).
(cd "$build-asan" && NORMCORE_ORACLE_PAIRS=12 ctest -j "$(nproc)" --output-on-failure -L "unit|cli")
stamp "test.sh: total"
