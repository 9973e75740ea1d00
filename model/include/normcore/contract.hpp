// The arithmetic contract of normcore: the one implementation of the per-channel affine map that
// the generated RTL, the tests, the CLI and the runtime's reference device all agree on.
//
//   acc = x * s[c] + b[c]                       (exact, AW = max(XW + SW, BW) + 1 bits, signed)
//   y   = clamp(round(acc / 2^R), lo, hi)       (R in 0..AW, rounding mode per job)
//
// Contract v2 adds floating-point inputs and outputs (float_contract.hpp: x fp16 / bf16, s and b
// fp32, y fp16 / bf16 / fp32 or an integer, one rounding); the integer contract is unchanged.
//
// See docs/contract.md for the definition and worked examples.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace normcore {

inline constexpr int kContractVersion = 2;

enum class Rounding : std::uint8_t {
  floor = 0,      // toward -inf (plain arithmetic shift)
  half_up = 1,    // nearest, ties toward +inf
  half_even = 2,  // nearest, ties to even (convergent)
  half_away = 3,  // nearest, ties away from zero (TFLite, NVDLA)
};

enum class Layout : std::uint8_t { nchw = 0, nhwc = 1 };

// Element type of an input or output: an integer of the spec's width and signedness, or an IEEE
// float (float_contract.hpp). The codes are CAPS0.in_type / out_type.
enum class NumType : std::uint8_t { integer = 0, fp16 = 1, bf16 = 2, fp32 = 3 };

std::string_view to_string(Rounding r);
std::string_view to_string(Layout l);
// Parse "floor" / "half_up" / "half_even" / "half_away"; throws std::invalid_argument naming the
// text.
Rounding parse_rounding(std::string_view text);
// Parse "nchw" / "nhwc" (case-insensitive); throws std::invalid_argument.
Layout parse_layout(std::string_view text);
// "int", "fp16", "bf16", "fp32" (and back; throws std::invalid_argument naming the text).
std::string_view to_string(NumType t);
NumType parse_num_type(std::string_view text);
// Storage bits of a float type (16 or 32); 0 for integer.
int float_bits(NumType t);

// Number widths of one datapath. Limits: XW 2..32, SW 2..32, BW 2..62, YW 2..32, AW <= 64.
struct ArithSpec {
  int xw = 8;            // input element bits
  bool x_signed = true;  // input is two's complement (else unsigned)
  int sw = 16;           // scale bits (always signed)
  int bw = 32;           // offset b (bias) bits (always signed), in product units (scaled by 2^R)
  int yw = 8;            // output element bits
  bool y_signed = true;  // output is two's complement (else unsigned)
  // Contract v2: element types. integer/integer is the integer contract above; any float type
  // selects apply_float (float_contract.hpp): x fp16 | bf16 | integer, y fp16 | bf16 | fp32 |
  // integer, s and b fp32 (then xw / yw of a float type are its storage bits, sw = bw = 32).
  NumType x_type = NumType::integer;
  NumType y_type = NumType::integer;
  bool flush_subnormals = false;  // float: subnormal x, s, b and results become signed zeros

  [[nodiscard]] bool is_float() const {
    return x_type != NumType::integer || y_type != NumType::integer;
  }

  // Accumulator width: x * s needs XW + SW bits (signed or unsigned x); + b needs one more.
  [[nodiscard]] int acc_bits() const { return (xw + sw > bw ? xw + sw : bw) + 1; }
  [[nodiscard]] std::int64_t x_min() const;
  [[nodiscard]] std::int64_t x_max() const;
  [[nodiscard]] std::int64_t y_min() const;
  [[nodiscard]] std::int64_t y_max() const;
  [[nodiscard]] std::int64_t s_min() const { return -(std::int64_t{1} << (sw - 1)); }
  [[nodiscard]] std::int64_t s_max() const { return (std::int64_t{1} << (sw - 1)) - 1; }
  [[nodiscard]] std::int64_t b_min() const { return -(std::int64_t{1} << (bw - 1)); }
  [[nodiscard]] std::int64_t b_max() const { return (std::int64_t{1} << (bw - 1)) - 1; }
  // Empty if the widths are usable, else a message naming the offending field.
  [[nodiscard]] std::string check() const;
  // The float rules of check(): types allowed, widths equal to the float types' storage bits.
  [[nodiscard]] std::string check_float() const;
};

// Per-job settings (the same for every channel).
struct JobSettings {
  int shift = 0;                            // R, 0..acc_bits() (float specs: 0)
  Rounding rounding = Rounding::half_even;  // float specs: only an integer output's rounding
  // Clamp bounds, inside the output range, lo <= hi. A float output's are bit patterns of its
  // type (not NaN, lo <= hi numerically; float_job() gives -Inf..+Inf).
  std::int64_t lo = -128;
  std::int64_t hi = 127;
  // Empty if valid for `spec`, else a message naming the offending field.
  [[nodiscard]] std::string check(const ArithSpec& spec) const;
};

// round(acc / 2^shift) under `mode`, exactly, for any acc representable in 64 bits and shift 0..64.
std::int64_t round_shift(std::int64_t acc, int shift, Rounding mode);

// The whole contract for one element. Preconditions (checked by callers via check()): x in the
// input range, s and b in their ranges, settings valid.
std::int64_t apply(std::int64_t x, std::int64_t s, std::int64_t b, const JobSettings& job);

// Channel of flat element index e in a tensor [N][C][HW] (nchw) or [N][HW][C] (nhwc).
inline std::int64_t channel_of(std::int64_t e, std::int64_t channels, std::int64_t inner,
                               Layout layout) {
  return layout == Layout::nchw ? (e / inner) % channels : e % channels;
}

// Apply the contract to a whole tensor (any N: x.size() elements), in place into y.
// scale.size() == shift.size() == channels. Throws std::invalid_argument on a size mismatch.
void apply_tensor(std::span<const std::int64_t> x, std::span<std::int64_t> y,
                  std::span<const std::int64_t> scale, std::span<const std::int64_t> shift,
                  std::int64_t inner, Layout layout, const JobSettings& job);

}  // namespace normcore
