#!/usr/bin/env bash
# scripts/prove.sh with PROVE_LEMMA_CACHE: a product lemma proven once is not solved again (its
# row says "cached" and passes), a cache entry that does not say unsat is not trusted (the
# lemma is solved again and the entry rewritten), and without the variable nothing is cached.
# On the small integer row x4s4b8y4_p3_cut (one lemma, a few seconds). Skips (77) when the
# solver's venv cannot be made.
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
[ $bad = 0 ] && echo "lemma_cache: ok"
exit $bad
