#!/usr/bin/env bash
# Issue 15 items 5 and 10: the README and docs say what the tools do. Build / install / PATH
# steps and the binary's place, the exit-code table with a row per command, LICENSE and
# CHANGELOG, the eps default, fail_job=N counting, R = shift / b = offset (and b's width named
# offset_bits everywhere but where the deprecated alias is documented), the register docs'
# ERR_CODE table and parameter table layout.
# Usage: docs_check.sh <source root>
set -uo pipefail
root=${1:?usage: docs_check.sh <source root>}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() {  # has <file> <fixed text> <what>
  grep -qF -- "$2" "$root/$1" || fail "$1: $3 (no '$2')"
}

# Item 5: build without the tests, install, PATH, where the binary is; license; changelog.
has README.md "### Build, install, PATH" "no build/install section"
has README.md "cmake --install" "no install step"
has README.md 'export PATH=' "no PATH step"
has README.md "build/cli/normcore" "does not say where the binary is"
head -n 3 "$root/LICENSE" | grep -q "Apache License" || fail "LICENSE: not the Apache License"
has README.md "Apache License 2.0 ([LICENSE](LICENSE))" "does not name the license"
has CHANGELOG.md "# Changelog" "no CHANGELOG"
has CHANGELOG.md "**Deprecated aliases**" "CHANGELOG: the shift_bits aliases are not documented"

# Item 3: one exit-code table, a row per command.
has README.md "### Exit codes" "no exit-code section"
for cmd in gen fold run info import "run --plan" sim-build; do
  grep -qE "^\| \`$cmd\` \|" "$root/README.md" || fail "README: exit-code table lacks '$cmd'"
done

# Item 10: the eps default, fail_job=N counting, R is the shift and b the offset.
has docs/contract.md "default 1e-5" "eps default not stated"
has README.md "counted from 1" "fail_job=N counting not stated"
has docs/contract.md "R is the shift, b is the per-channel offset" "naming not stated"
has docs/contract.md "offset_bits" "b's width not named offset_bits"
# "shift_bits" / "--shift-bits" (b's width under its old name) only where the alias is explained.
while IFS= read -r hit; do
  case $hit in
    CHANGELOG.md:*) ;;
    docs/contract.md:*deprecated*|docs/contract.md:*--offset-bits*) ;;
    *) fail "b's width under its old name: $hit" ;;
  esac
done < <(cd "$root" && grep -n -i -E "shift_bits|shift-bits" README.md CHANGELOG.md docs/*.md \
  docs/*.in 2> /dev/null | grep -v -i "rshift_bits")
grep -q -i "CAPS3.shift_bits\|| shift_bits |" "$root/docs/registers.md" && \
  fail "docs/registers.md: CAPS3 still says shift_bits"
has docs/registers.md "| offset_bits |" "CAPS3.offset_bits missing"
has docs/registers.md "ERR_CODE" "no ERR_CODE"
has docs/registers.md "Parameter table in memory" "no parameter table layout"

[ $fails -eq 0 ] && echo "ok: docs" || echo "$fails failure(s)"
exit $((fails > 0))
