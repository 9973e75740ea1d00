#!/usr/bin/env bash
# scripts/prove.sh with PROVE_LEMMA_CACHE: a product lemma proven once is not solved again (its
# row says "cached" and passes), a cache entry that does not say unsat is not trusted (the
# lemma is solved again and the entry rewritten), and without the variable nothing is cached.
# On the small integer row x4s4b8y4_p3_cut (one lemma, a few seconds); then the same for the
# shift lemma of two fp16 -> fp32 ZEROB band rows, and cut_model's memo (one Yosys run for the
# two rows' product cells). Skips (77) when the solver's venv cannot be made.
# Usage: lemma_cache.sh <normcore> <source root>
set -uo pipefail
export NORMCORE=$1
root=$2
bad=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
row=x4s4b8y4_p3_cut
run() { PROVE_LEMMA_CACHE=$dir/c bash "$root/scripts/prove.sh" --no-hooks --only "^$row\$" 2>&1; }
lemma() { grep -E "^$row +x\*s \(4 x 4 bits\)" <<< "$1"; }
out=$(run)
rc=$?
[ $rc -ne 77 ] || exit 77
l=$(lemma "$out")
n=$(find "$dir/c" -type f | wc -l)
if [ $rc -ne 0 ] || [[ $l != *"yices (QF_NIA)  "*PASS ]] || [ "$n" -ne 1 ]; then
  echo "FAIL: first run: exit $rc, $n cache entries, lemma row: $l"
  bad=1
fi
out=$(run)
rc=$?
l=$(lemma "$out")
if [ $rc -ne 0 ] || [[ $l != *"yices (QF_NIA), cached ("*") "*" 0.0 "*PASS ]]; then
  echo "FAIL: second run: exit $rc, lemma row: $l"
  bad=1
fi
f=$(find "$dir/c" -type f | head -n 1)
echo sat > "$f"
out=$(run)
rc=$?
l=$(lemma "$out")
if [ $rc -ne 0 ] || [[ $l == *cached* ]] || [ "$(cat "$f")" != unsat ]; then
  echo "FAIL: a cache entry that is not unsat was trusted: exit $rc, lemma row: $l"
  bad=1
fi
out=$(bash "$root/scripts/prove.sh" --no-hooks --only "^$row\$" 2>&1)
l=$(lemma "$out")
if [[ $l == *cached* ]]; then
  echo "FAIL: cached without PROVE_LEMMA_CACHE: $l"
  bad=1
fi
# The shift lemma of a float band row (the same for every row of a lane): cached by the hash of
# the RTL and the script; and cut_model's memo: of two rows of one lane in one call, only the
# first runs Yosys for the product cells (one .mul.log in --keep).
r1=fp16_fp32_case_zerob_plm300_m152_cut
r2=fp16_fp32_case_zerob_pl128_300_cut
shl() { grep -E "^$1 +shift lemma: " <<< "$2"; }
frun() { PROVE_LEMMA_CACHE=$dir/c bash "$root/scripts/prove.sh" --no-hooks "$@" 2>&1; }
out=$(frun --only "^$r1\$")
rc=$?
l=$(shl $r1 "$out")
f=$(find "$dir/c" -type f -name 'shl_*')
if [ $rc -ne 0 ] || [[ $l != *"combinational  "*PASS ]] || [ "$(cat "$f" 2> /dev/null)" != pass ]; then
  echo "FAIL: shift lemma, first run: exit $rc, entry ${f:-none}, row: $l"
  bad=1
fi
out=$(frun --only "^($r1|$r2)\$" --keep "$dir/k")
rc=$?
n=$(find "$dir/k" -maxdepth 1 -name '*.mul.log' | wc -l)
for r in $r1 $r2; do
  l=$(shl $r "$out")
  if [ $rc -ne 0 ] || [[ $l != *"combinational, cached ("*") "*" 0.0 "*PASS ]]; then
    echo "FAIL: shift lemma, second run: exit $rc, row: $l"
    bad=1
  fi
done
if [ "$n" -ne 1 ] || [ "$(grep -c "^$r1 .*lane == contract.*PASS\|^$r2 .*lane == contract.*PASS" \
  <<< "$out")" -ne 4 ]; then
  echo "FAIL: two rows of one lane: $n product-cell Yosys runs (not 1), or not 4 lane passes"
  bad=1
fi
echo fail > "$f"
out=$(frun --only "^$r1\$")
rc=$?
l=$(shl $r1 "$out")
if [ $rc -ne 0 ] || [[ $l == *cached* ]] || [ "$(cat "$f")" != pass ]; then
  echo "FAIL: a shift-lemma entry that is not pass was trusted: exit $rc, row: $l"
  bad=1
fi
[ $bad = 0 ] && echo "lemma_cache: ok"
exit $bad
