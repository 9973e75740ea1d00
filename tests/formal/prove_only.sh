#!/usr/bin/env bash
# scripts/prove.sh --only RE: an extended regular expression matched in bash (no process per
# row), as grep -E: an alternation selects the rows it names and no other (two cover rows, a
# second each), a RE that matches no row is "no configuration selected" (exit 2), and one that
# does not compile is an error naming it (exit 2), not an empty selection; a PROVE_EXTRA row is
# generated with its own lane's options, and one of no lane is an error (exit 2). Skips (77)
# when the solver's venv cannot be made.
# Usage: prove_only.sh <normcore> <source root>
set -uo pipefail
export NORMCORE=$1
root=$2
bad=0
out=$(bash "$root/scripts/prove.sh" --no-hooks --only '^fp16_fp16_zero(p|b)_cover$' 2>&1)
rc=$?
[ $rc -ne 77 ] || exit 77
echo "$out"
rows=$(grep -cE '^fp16_fp16_zero[pb]_cover +case ZERO[PB] covered by the [0-9]+ rows .* PASS$' \
  <<< "$out")
others=$(grep -cE "^[a-z0-9_]+ " <<< "$out")
if [ $rc -ne 0 ] || [ "$rows" -ne 2 ] || [ "$others" -ne 3 ]; then  # 3: the header and the rows
  echo "FAIL: --only with an alternation: exit $rc, $rows cover rows, $others table lines"
  bad=1
fi
out=$(bash "$root/scripts/prove.sh" --no-hooks --only '^no_such_row$' 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q "no configuration selected" <<< "$out"; then
  echo "FAIL: --only matching nothing: exit $rc: $out"
  bad=1
fi
out=$(bash "$root/scripts/prove.sh" --no-hooks --only '^fp16_(' 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q "prove.sh: --only '\^fp16_(' is not an extended regular expression" \
  <<< "$out"; then
  echo "FAIL: --only with a RE that does not compile: exit $rc: $out"
  bad=1
fi
# PROVE_EXTRA: a row of another lane than fp16 -> int8 gets its lane's options (here bf16 ->
# uint8: one far point of a band proven whole, seconds) and is proven as such.
keep=$(mktemp -d)
r=bf16_uint8_case_above_pl8_8_blm35_m35_cut
out=$(PROVE_EXTRA=$r bash "$root/scripts/prove.sh" --no-hooks --keep "$keep" --only "^$r\$" 2>&1)
rc=$?
lane=$(grep -cE "^$r +lane == contract, case ABOVE, PL 8..8, BL -35..-35 .* PASS$" <<< "$out")
cfg=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["config"]
print(c["in_type"], c["out_type"], c["out_bits"], c["out_signed"])' \
  "$keep/$r/rtl/manifest.json" 2>&1)
if [ $rc -ne 0 ] || [ "$lane" -ne 2 ] || [ "$cfg" != "bf16 int 8 False" ]; then
  echo "FAIL: PROVE_EXTRA=$r: exit $rc, $lane lane rows passed, config: $cfg"
  bad=1
fi
rm -rf "$keep"
# PROVE_EXTRA: a name of no float lane is an error naming it (exit 2), not fp16 -> int8's options.
r=fp16_fp8_case_zerop_cut
out=$(PROVE_EXTRA=$r bash "$root/scripts/prove.sh" --no-hooks --only "^$r\$" 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q "PROVE_EXTRA: '$r' does not start with" <<< "$out"; then
  echo "FAIL: PROVE_EXTRA with no float lane's name: exit $rc: $out"
  bad=1
fi
[ $bad = 0 ] && echo "prove_only: ok"
exit $bad
