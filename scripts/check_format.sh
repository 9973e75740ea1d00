#!/usr/bin/env bash
# Every C++ file of the project matches the checked-in .clang-format (clang-format 14, Debian 12).
# Prints the files that differ and exits 1; `bash scripts/check_format.sh --fix` rewrites them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' | grep -v '^hw/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ (fix: bash scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
