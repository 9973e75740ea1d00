#!/usr/bin/env bash
# Line + toggle coverage of the whole co-simulation sweep (issue 20, item 4): configures a build
# with -DNORMCORE_COVERAGE_ALL=ON (every core and accelerator co-simulation also verilated with
# coverage), builds only the coverage binaries, runs them (ctest -L coverage: coverage.run.<cfg>
# then coverage.floor) and prints the merged per-module table (also <build>/coverage.md).
# The README's test command runs the same floor on three configurations only (sweep.cmake /
# accel.cmake: COVERAGE).
# Usage: scripts/coverage.sh [BUILD_DIR (default build-cov)] [CONFIG_REGEX (default: all)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-cov}
only=${2:-.}
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNORMCORE_COVERAGE_ALL=ON \
  > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n 's/^\([A-Za-z0-9_]*_cov\): phony$/\1/p' \
  | grep -E -- "$only" || true)
[ ${#targets[@]} -gt 0 ] || { echo "coverage.sh: no coverage target matches '$only'" >&2; exit 2; }
echo "coverage.sh: ${#targets[@]} configurations"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
runs=()
for t in "${targets[@]}"; do runs+=("coverage.run.${t%_cov}"); done
regex="^($(IFS='|'; echo "${runs[*]}"))\$"
(cd "$build" && ctest -R "$regex" -j "$(nproc)" --output-on-failure)
dirs=()
for t in "${targets[@]}"; do
  n=${t%_cov}
  if [ -d "$build/sim/$n/coverage" ]; then dirs+=("$build/sim/$n/coverage"); fi
done
python3 "$root/scripts/coverage.py" --floor 90 --exclusions "$root/scripts/coverage_exclusions.txt" \
  --markdown "$build/coverage.md" --uncovered 60 "${dirs[@]}"
