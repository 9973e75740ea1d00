#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds (Release), runs every ctest test
# (unit, CLI, reference drift, co-simulation of the swept configs, RTL lint/Yosys/Icarus), then
# builds the C++ unit tests with ASan+UBSan and runs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
build=${BUILD_DIR:-$root/build}
start=$(date +%s)
BUILD_DIR=$build bash "$root/scripts/build.sh"
echo "build: $(( $(date +%s) - start )) s"
(cd "$build" && ctest -j "$(nproc)" --output-on-failure --timeout 1200)
echo "== sanitizer build (ASan + UBSan) of the unit tests"
BUILD_DIR=$build-asan TARGETS="unit_tests runtime_tests import_tests normcore device_normcore device_nc_small" bash "$root/scripts/build.sh" \
  -DNORMCORE_SANITIZE=ON -DNORMCORE_COSIM=OFF
(cd "$build-asan" && ctest -j "$(nproc)" --output-on-failure -L "unit|cli")
echo "test.sh: total $(( $(date +%s) - start )) s"
