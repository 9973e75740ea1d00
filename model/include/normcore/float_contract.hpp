// The floating-point half of the arithmetic contract (contract v2; the integer contract of
// contract.hpp is unchanged). One routine, `apply_float`, is the golden model of the float lanes:
//
//   v = x * s[c] + b[c]                   exact (no intermediate rounding)
//   y = clamp(round(v), lo, hi)           ONE rounding of the exact value: RNE into the float
//                                         output type (fused multiply-add semantics), or the
//                                         job's rounding mode to an integer output
//
// x: fp16 or bf16 (or an integer, ArithSpec::xw / x_signed: dequantise + BN); s, b: fp32;
// y: fp16, bf16, fp32 or an integer (ArithSpec::yw / y_signed). See docs/contract.md, section 9.
//
// It is computed with integer significands only (no host floating point), in the stages the
// float lane RTL mirrors (FmaTrace below): unpack, significand product, alignment, add,
// leading-zero count, normalise, round, clamp.
#pragma once

#include <cstdint>

#include "normcore/contract.hpp"

namespace normcore {

// An IEEE binary format: fp16 (1.5.10), bf16 (1.8.7), fp32 (1.8.23).
struct FloatFormat {
  int bits = 16;      // storage width
  int exp_bits = 5;   // exponent field
  int man_bits = 10;  // fraction field (precision p = man_bits + 1)
  [[nodiscard]] int bias() const { return (1 << (exp_bits - 1)) - 1; }
  [[nodiscard]] int emin() const { return 1 - bias(); }  // exponent of the smallest normal
  [[nodiscard]] int emax() const { return bias(); }      // exponent of the largest finite
  [[nodiscard]] std::uint32_t sign_bit() const { return std::uint32_t{1} << (bits - 1); }
  [[nodiscard]] std::uint32_t exp_mask() const {
    return ((std::uint32_t{1} << exp_bits) - 1) << man_bits;
  }
  [[nodiscard]] std::uint32_t man_mask() const { return (std::uint32_t{1} << man_bits) - 1; }
};

// The format of a float type (throws std::invalid_argument for NumType::integer).
FloatFormat float_format(NumType t);

// The one NaN every float output produces (sign 0, quiet bit set, rest 0): fp16 0x7E00,
// bf16 0x7FC0, fp32 0x7FC00000.
std::uint32_t canonical_nan(NumType t);
// +Inf / -Inf, the largest finite value (with sign) of a float type, as bit patterns.
std::uint32_t float_inf(NumType t, bool negative = false);
std::uint32_t float_max(NumType t, bool negative = false);
bool is_nan(std::uint32_t bits, NumType t);
// Numeric order of two non-NaN patterns of type t (-0 == +0): -1, 0 or 1.
int float_compare(std::uint32_t a, std::uint32_t b, NumType t);

// Exact decode of a pattern into a double (every fp16, bf16 and fp32 value is a double).
double float_to_double(std::uint32_t bits, NumType t);
// v rounded once, to nearest even, into type t (subnormals exact, overflow to Inf, NaN to the
// canonical NaN); with `flush`, a subnormal result becomes a zero of its sign. The fold and the
// driver's float32 -> fp16/bf16 conversion use it. Integer arithmetic, like apply_float.
std::uint32_t double_to_float(double v, NumType t, bool flush = false);

// The widths a float datapath implies (the one rule; CoreConfig::apply_float_widths calls it): a
// float x or y is 16 / 32 bits wide (float_bits), s and b are fp32 (sw = bw = 32). Integer sides
// keep their widths. Nothing changes for an integer spec.
void apply_float_widths(ArithSpec& spec);
// A float spec: x and y of these types (an integer side: 8-bit signed), widths by
// apply_float_widths.
ArithSpec float_spec(NumType x, NumType y, bool flush_subnormals = false);

// The default clamp of a float output: [-Inf, +Inf] (nothing clamped).
JobSettings float_job(const ArithSpec& spec);

// Intermediate values of one apply_float, stage by stage, for the RTL to compare against.
// value(operand) = (-1)^sign * sig * 2^exp with sig an integer.
struct FmaTrace {
  // 1 unpack (flush applied): x, s, b
  bool xs = false, ss = false, bs = false;
  std::uint64_t xsig = 0, ssig = 0, bsig = 0;
  int xexp = 0, sexp = 0, bexp = 0;
  // 2 significand product p = xsig * ssig (<= 56 bits), exponent xexp + sexp
  std::uint64_t psig = 0;
  int pexp = 0;
  // 3 alignment: the operand with the higher leading bit (the anchor) is placed with its leading
  // bit at window bit kFmaAnchor, the other shifted to the same scale (right shifts jam the bits
  // shifted out into bit 0: round to odd, which keeps the one rounding exact); window LSB = 2^e0
  int e0 = 0;
  bool product_anchor = true;
  // 4 add: signed sum of the two aligned operands (two's complement, 128 bits), as magnitude
  bool sum_negative = false;
  std::uint64_t sum_hi = 0, sum_lo = 0;  // |sum|
  // 5 leading-zero count of |sum| (128 bits)
  int lzc = 0;
  // 6 normalise: exponent of the leading bit, bits dropped below the output's LSB
  int lead_exp = 0, drop = 0;
  // 7 round: significand before / after rounding (with its exponent), guard and sticky
  std::uint64_t q = 0;
  bool guard = false, sticky = false;
  int res_exp = 0;
  bool special = false;  // NaN / Inf / zero path: stages 3-7 not used
};
inline constexpr int kFmaAnchor = 124;

// The whole float contract for one element. x is a bit pattern of spec.x_type (or the integer
// value when x_type is integer); s, b are fp32 patterns; the result is a bit pattern of
// spec.y_type (zero-extended) or, for an integer output, the integer. job: for a float output
// lo / hi are bit patterns of y_type (float_job: -Inf..+Inf), shift must be 0; for an integer
// output lo / hi are integers in its range and `rounding` applies. Preconditions as apply()
// (spec.check(), job.check(spec)); `trace` is filled when given.
std::int64_t apply_float(std::int64_t x, std::uint32_t s, std::uint32_t b, const ArithSpec& spec,
                         const JobSettings& job, FmaTrace* trace = nullptr);

}  // namespace normcore
