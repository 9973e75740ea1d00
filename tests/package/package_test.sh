#!/usr/bin/env bash
# Installs the build into a temporary prefix, then configures, builds and runs tests/package (a
# project outside the tree: find_package(normcore)) against it, as a user's project would.
# Usage: package_test.sh <build dir>
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
echo "installed: $(find "$work/prefix" -type f | wc -l) files"
test -x "$work/prefix/bin/normcore"
test -f "$work/prefix/lib/cmake/normcore/normcoreConfig.cmake"
"$work/prefix/bin/normcore" --version
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" > "$work/configure.log" 2>&1 || {
  cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/consumer/consumer" "$work/dev"
echo "PASS: find_package(normcore) consumer"
