#!/usr/bin/env bash
# The proofs can fail: a planted off-by-one in the lane's rounding (the half bit h read one
# position too high: bit R of acc instead of bit R-1), the product's sign read from the wrong bit
# of s under the product cut, in the fp16 float lane an inverted sign of an infinite b (the
# special-value case) and ties-to-odd rounding (the whole float harness's BMC), in the fp16 ->
# int8 float lane floor rounding without the sticky bit (case ABOVE, class TINY) and in the
# fp16 -> fp16 one an overflow with the wrong sign (case ABOVE, class SAT), in the fp16 -> int8
# one the alignment's jam bit dropped (case ABOVE, band pl = 3, b far below), one band left out
# of the ABOVE coverage check, the band rows' shift lemma off by one, a subnormal x's exponent
# off by one (a row of the hb(xsig) split) and one of that split's rows left out of the
# coverage check, in the fp16 -> fp16 one ties to odd on a ZEROP row and a point of ZEROB left
# out of its coverage check, in the channel
# tracker lane 1's channel offset with its two candidates swapped (bounded stream proof) and an
# off-by-one in the channel wrap (unbounded position proof), lane 0's bank address off by one
# in the parameter table (unbounded table proof) and the carry-in of the lane's fits chain
# (pipeline 3) must each make scripts/prove.sh report FAIL and exit 1 for a small configuration
# (the unmodified ones pass in ctest formal.quick). Skips (77) when the solver's venv cannot be
# made.
# Usage: planted_fault.sh <normcore> <source root>
set -uo pipefail
bin=$1
root=$2
export NORMCORE=$bin

# expect_fail <what> <config> <prove.sh mode or -> <file or -> <sed expression> <row regex>
# [<planted regex>]: plants the fault (into <file> of the generated RTL, or the lane when -),
# runs prove.sh for the one configuration and requires exit 1, a row of the configuration
# matching <row regex> that says FAIL and, when given, the "planted:" line. Exit 77 (the solver's
# venv cannot be made) skips the whole test.
expect_fail() {
  local what=$1 cfg=$2 mode=$3 file=$4 expr=$5 row=$6 planted=${7:-} out rc
  local vars=(PROVE_MUTATE="$expr") modes=()
  [ "$file" = - ] || vars+=(PROVE_MUTATE_FILE="$file")
  [ "$mode" = - ] || modes=("$mode")
  out=$(env "${vars[@]}" bash "$root/scripts/prove.sh" "${modes[@]}" --only "^$cfg\$" --no-hooks \
    2>&1)
  rc=$?
  echo "$out"
  [ $rc -ne 77 ] || exit 77
  [ $rc -eq 1 ] || { echo "FAIL: prove.sh with the planted $what exited $rc, not 1"; exit 1; }
  if [ -n "$planted" ]; then
    grep -q "planted: > *$planted" <<< "$out" || { echo "FAIL: the $what was not planted"; exit 1; }
  fi
  grep -Eq "^$cfg +$row.* FAIL" <<< "$out" \
    || { echo "FAIL: the row of $cfg for the $what does not say FAIL"; exit 1; }
  echo "ok: the planted $what fails $cfg"
}

expect_fail "rounding fault" x4s4b8y4_p3 --quick - \
  's/assign h = z\[0\];/assign h = z[1];/' 'lane == contract +BMC' 'assign h = z\[1\];'
# The product cut (the *_cut proofs of 16-bit lanes, here on a small lane): the sign of x * s
# that the lane recovers from x's and s's signs, read from the wrong bit of s, must fail the cut
# proof (the cut keeps only the product lemma, not the product: a sign bug cannot hide there).
expect_fail "product-sign fault" x4s4b8y4_p3_cut --quick - \
  's/assign psg_d = x_i\[3\] ^ s_i\[3\];/assign psg_d = x_i[3] ^ s_i[2];/' \
  'lane == contract +BMC'
# The float lane (fp16 x, fp16 y): the sign of an infinite b read inverted in the special
# values (-Inf for +Inf) must fail the proof of the special-value case, and round to nearest
# with ties to odd must fail the BMC of the whole float harness (a proof that does not finish
# unplanted: prove.sh --open; the counterexample is found in seconds).
expect_fail "float special-value fault" fp16_fp16_case_special_cut --quick - \
  's/assign inf_neg = pinf ? psign_d : b_i\[31\];/assign inf_neg = pinf ? psign_d : ~b_i[31];/' \
  'lane == contract.* +BMC'
expect_fail "float rounding fault (ties to odd)" fp16_fp16_cut --open - \
  's/assign inc = g & (st | q\[0\]);/assign inc = g \& (st | ~q[0]);/' \
  'lane == contract +BMC' 'assign inc = g & (st | ~q\[0\]);'
# The float lane with an integer y (fp16 -> int8), finite non-zero x, s, b (case ABOVE, class
# TINY: |v| < 1/2, proven against its closed form): floor without the sticky bit (a negative v
# above -1/2 whose half bit is 0 truncates to 0 instead of -1) must fail it.
expect_fail "floor-sticky fault" fp16_int8_case_above_cls_tiny - - \
  's/neg6_q & (g | st);/neg6_q \& g;/' 'lane == contract.* +BMC' 'neg6_q & g;'
# fp16 -> fp16, case ABOVE, class SAT (|v| >= 2^16: Inf, then the clamp): an overflow packed
# as the Inf of the other sign must fail it.
expect_fail "overflow-sign fault" fp16_fp16_case_above_cls_sat - - \
  "s/assign ypack = ovf ? {neg6_q, 15'd31744}/assign ypack = ovf ? {~neg6_q, 15'd31744}/" \
  'lane == contract.* +BMC' 'assign ypack = ovf ? {~neg6_q'
# fp16 -> int8, case ABOVE, the far part of the band pl = 3 (b wholly below the product's LSB,
# bl <= -41: only the alignment's jam bit carries b): the jam dropped must fail it.
expect_fail "alignment-jam fault" fp16_int8_case_above_pl3_3_blm200_m41_cut - - \
  "s/assign oal_lost = |(other & oal_out);/assign oal_lost = 1'b0;/" 'lane == contract.* +BMC' \
  "assign oal_lost = 1'b0;"
# The shift lemma of the band rows (branch fp22; assumed by the cut harness, proven in its own
# row): the product's shift stated one too low (pl - EMIN - 1 - ...) must fail the lemma's row.
# Assumed unproven it would make the band's proof vacuous (no element of the band satisfies it).
expect_fail "shift-lemma fault" fp16_int8_case_above_pl8_8_blm35_m32_cut - formal/nc_lane_fv.v \
  "s/psh_l = pl + 12'sd173 /psh_l = pl + 12'sd172 /" 'shift lemma.*BMC' ".*psh_l = pl + 12'sd172 "
# The band rows' coverage check (prove.sh's fp16_int8_above_cover): one close point (bl = -10)
# of ABOVE's band pl = 3 left out of the disjunction must fail it (every line of the point: one
# while it is a single row, 12 once it is split by x and hb(xsig), as since round 17c).
expect_fail "band-coverage fault" fp16_int8_above_cover - formal/nc_fv_cover.vh \
  '/pl >= 3 && pl <= 3 && bl >= -10 && bl <= -10/d' 'case ABOVE covered.* +BMC'
# The subnormal-x rows of ABOVE pl = 7 (branch fp23: the _xe1_1 half of a point split by
# hb(xsig), _hx<k>_<k>): a subnormal x's exponent off by one in the lane (max(e, 1) read as 2)
# must fail one of them (x normal rows do not see it), and one of the 11 rows left out of the
# coverage check must fail that.
expect_fail "subnormal-x exponent fault" fp16_int8_case_above_pl7_7_bl0_0_xe1_1_hx5_5_cut - - \
  "s/assign x_exp = {7'd0, x_e0 ? 5'd1 :/assign x_exp = {7'd0, x_e0 ? 5'd2 :/" \
  'lane == contract.* +BMC' ".*x_e0 ? 5'd2 :"
expect_fail "hb(xsig)-split coverage fault" fp16_int8_above_cover - formal/nc_fv_cover.vh \
  '/bl >= 0 && bl <= 0 && xe1 >= 1 && xe1 <= 1 && h_x >= 5 && h_x <= 5)/d' \
  'case ABOVE covered.* +BMC'
# ZEROP / ZEROB of fp16 -> fp16 (zero_rows in prove.sh): ties to odd must fail a ZEROP row
# (b's exponent field 120: y = b rounded to fp16, normal), and the point pl = 0 of ZEROB (its
# x-normal and x-subnormal rows) left out of the coverage check must fail that.
expect_fail "float rounding fault (ties to odd), ZEROP" fp16_fp16_case_zerop_be120_120_cut \
  - - 's/assign inc = g & (st | q\[0\]);/assign inc = g \& (st | ~q[0]);/' \
  'lane == contract.* +BMC' 'assign inc = g & (st | ~q\[0\]);'
expect_fail "ZEROB coverage fault" fp16_fp16_zerob_cover - formal/nc_fv_cover.vh \
  '/(pl >= 0 && pl <= 0 /d' 'case ZEROB covered.* +BMC'
# The stream proof: lane 1's channel offset with its two candidates swapped in <n>_chan.
expect_fail "tracker fault" pos_l2_c3_hw3 --quick nc_chan.v \
  's/assign d_1 = g_1_q ? dp_1_q : db_1_q;/assign d_1 = g_1_q ? db_1_q : dp_1_q;/' 'stream'
# The unbounded lane-position proof (ABC pdr): an off-by-one in the tracker's channel wrap (c0 + k +
# cy - C computed one too high: c0 wraps a channel early, to one too low) must give FAIL.
expect_fail "wrap fault" trk_l2_c3_hw3 --quick nc_chan.v 's/+ kw0_i + /+ kw0_i + 1 + /' \
  'positions.*PDR' '.*kw0_i + 1 + '
# The parameter table alone (unbounded): lane 0's bank address off by one (c0 mod 2 >= 0
# instead of > 0: every read of an even c0 one word too far) must give FAIL.
expect_fail "bank-address fault" tab_l2_c3 --quick nc_ptable.v \
  "s/(c0_lo > 1'b0)/(c0_lo >= 1'b0)/" 'table.*PDR'
# The fits test as carry chains (pipeline 3-4, R per job): the AND chain's carry-in 0 instead of
# 1 (an exempt bit then passes its own value instead of the 1) must fail the lane proof.
expect_fail "fits-chain fault" x4s4b8y4_p3 --quick - \
  "s/+ {1'b0, tq0_i\\[4:0\\]} + 6'd1;/+ {1'b0, tq0_i[4:0]} + 6'd0;/" 'lane == contract +BMC' \
  ".*tq0_i\\[4:0\\]} + 6'd0;"
# The clamp's bounds -(lo - 1) and -hi as -lo and -(hi + 1) with a 1 carried in (pipeline < 8,
# area15): the upper compare's carry-in dropped (qn < hi + 1 for qn < hi) must fail the lane proof.
expect_fail "clamp carry-in fault" x4s4b8y4_p3 --quick - \
  "s/+ {hip1_i\\[5:0\\], 1'b1};/+ {hip1_i[5:0], 1'b0};/" 'lane == contract +BMC' \
  ".*{hip1_i\\[5:0\\], 1'b0};"
