#!/usr/bin/env bash
# The proofs can fail: a planted off-by-one in the lane's rounding (the half bit h read one
# position too high: bit R of acc instead of bit R-1), the product's sign read from the wrong bit
# of s under the product cut, in the fp16 float lane an inverted sign of an infinite b (the
# special-value case) and ties-to-odd rounding (the whole float harness's BMC), in the fp16 ->
# int8 float lane floor rounding without the sticky bit (case ABOVE, class TINY) and in the
# fp16 -> fp16 one an overflow with the wrong sign (case ABOVE, class SAT), in the channel
# tracker lane 1's channel offset with its two candidates swapped (bounded stream proof) and an
# off-by-one in the channel wrap (unbounded position proof), and lane 0's bank address off by one
# in the parameter table (unbounded table proof) must each make scripts/prove.sh report FAIL and
# exit 1 for a small configuration (the unmodified ones pass in ctest formal.quick). Skips (77)
# when the solver's venv cannot be made.
# Usage: planted_fault.sh <normcore> <source root>
set -uo pipefail
bin=$1
root=$2
cfg=x4s4b8y4_p3
export NORMCORE=$bin
out=$(PROVE_MUTATE='s/assign h = z\[0\];/assign h = z[1];/' \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -ne 77 ] || exit 77
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted fault exited $rc, not 1"; exit 1; }
grep -q "planted: > *assign h = z\[1\];" <<< "$out" || { echo "FAIL: the fault was not planted"; exit 1; }
grep -Eq "^$cfg +lane == contract +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted rounding fault fails the lane proof"
# The product cut (the *_cut proofs of 16-bit lanes, here on a small lane): the sign of x * s
# that the lane recovers from x's and s's signs, read from the wrong bit of s, must fail the cut
# proof (the cut keeps only the product lemma, not the product: a sign bug cannot hide there).
cfg=x4s4b8y4_p3_cut
out=$(PROVE_MUTATE='s/assign psg_d = x_i\[3\] ^ s_i\[3\];/assign psg_d = x_i[3] ^ s_i[2];/' \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted product-sign fault exited $rc, not 1"; exit 1; }
grep -Eq "^$cfg +lane == contract +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the cut BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted product-sign fault fails the cut lane proof"
# The float lane (fp16 x, fp16 y): the sign of an infinite b read inverted in the special
# values (-Inf for +Inf) must fail the proof of the special-value case, and round to nearest
# with ties to odd must fail the BMC of the whole float harness (a proof that does not finish
# unplanted: prove.sh --open; the counterexample is found in seconds).
cfg=fp16_fp16_case_special_cut
out=$(PROVE_MUTATE='s/assign inf_neg = pinf ? psign_d : b_i\[31\];/assign inf_neg = pinf ? psign_d : ~b_i[31];/' \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted float special-value fault exited $rc, not 1"; exit 1; }
grep -Eq "^$cfg +lane == contract.* +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted float special-value fault fails the special-case proof"
cfg=fp16_fp16_cut
out=$(PROVE_MUTATE='s/assign inc = g & (st | q\[0\]);/assign inc = g \& (st | ~q[0]);/' \
  bash "$root/scripts/prove.sh" --open --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted float rounding fault exited $rc, not 1"; exit 1; }
grep -q "planted: > *assign inc = g & (st | ~q\[0\]);" <<< "$out" \
  || { echo "FAIL: the float rounding fault was not planted"; exit 1; }
grep -Eq "^$cfg +lane == contract +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted float rounding fault (ties to odd) fails the float lane's BMC"
# The float lane with an integer y (fp16 -> int8), finite non-zero x, s, b (case ABOVE, class
# TINY: |v| < 1/2, proven against its closed form): floor without the sticky bit (a negative v
# above -1/2 whose half bit is 0 truncates to 0 instead of -1) must fail it.
cfg=fp16_int8_case_above_cls_tiny
out=$(PROVE_MUTATE='s/neg6_q & (g | st);/neg6_q \& g;/' \
  bash "$root/scripts/prove.sh" --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted floor-sticky fault exited $rc, not 1"; exit 1; }
grep -q "planted: > *neg6_q & g;" <<< "$out" || { echo "FAIL: the floor-sticky fault was not planted"; exit 1; }
grep -Eq "^$cfg +lane == contract.* +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted floor-sticky fault fails the ABOVE / TINY closed-form proof"
# fp16 -> fp16, case ABOVE, class SAT (|v| >= 2^16: Inf, then the clamp): an overflow packed
# as the Inf of the other sign must fail it.
cfg=fp16_fp16_case_above_cls_sat
out=$(PROVE_MUTATE="s/assign ypack = ovf ? {neg6_q, 15'd31744}/assign ypack = ovf ? {~neg6_q, 15'd31744}/" \
  bash "$root/scripts/prove.sh" --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted overflow-sign fault exited $rc, not 1"; exit 1; }
grep -q "planted: > *assign ypack = ovf ? {~neg6_q" <<< "$out" \
  || { echo "FAIL: the overflow-sign fault was not planted"; exit 1; }
grep -Eq "^$cfg +lane == contract.* +BMC.* FAIL" <<< "$out" \
  || { echo "FAIL: the BMC row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted overflow-sign fault fails the fp16 ABOVE / SAT closed-form proof"
# The stream proof: lane 1's channel offset with its two candidates swapped in <n>_chan.
cfg=pos_l2_c3_hw3
out=$(PROVE_MUTATE_FILE=nc_chan.v \
  PROVE_MUTATE='s/assign d_1 = g_1_q ? dp_1_q : db_1_q;/assign d_1 = g_1_q ? db_1_q : dp_1_q;/' \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted tracker fault exited $rc, not 1"; exit 1; }
grep -Eq "^$cfg +stream.* FAIL" <<< "$out" || { echo "FAIL: the row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted tracker fault fails the stream proof"
# The unbounded lane-position proof (ABC pdr): an off-by-one in the tracker's channel wrap (c0 + k +
# cy - C computed one too high: c0 wraps a channel early, to one too low) must give FAIL.
cfg=trk_l2_c3_hw3
out=$(PROVE_MUTATE_FILE=nc_chan.v PROVE_MUTATE='s/+ kw0_i + /+ kw0_i + 1 + /' \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted wrap fault exited $rc, not 1"; exit 1; }
grep -q "planted: > .*kw0_i + 1 + " <<< "$out" || { echo "FAIL: the wrap fault was not planted"; exit 1; }
grep -Eq "^$cfg +positions.*PDR.* FAIL" <<< "$out" || { echo "FAIL: the row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted wrap fault fails the unbounded position proof"
# The parameter table alone (unbounded): lane 0's bank address off by one (c0 mod 2 >= 0
# instead of > 0: every read of an even c0 one word too far) must give FAIL.
cfg=tab_l2_c3
out=$(PROVE_MUTATE_FILE=nc_ptable.v PROVE_MUTATE="s/(c0_lo > 1'b0)/(c0_lo >= 1'b0)/" \
  bash "$root/scripts/prove.sh" --quick --only "^$cfg\$" --no-hooks 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted table fault exited $rc, not 1"; exit 1; }
grep -Eq "^$cfg +table.*PDR.* FAIL" <<< "$out" || { echo "FAIL: the row of $cfg does not say FAIL"; exit 1; }
echo "ok: the planted bank-address fault fails the unbounded table proof"
