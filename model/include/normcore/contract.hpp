// The arithmetic contract of normcore: the one implementation of the per-channel affine map that
// the generated RTL, the tests, the CLI and the runtime's reference device all agree on.
//
//   acc = x * s[c] + b[c]                       (exact, AW = max(XW + SW, BW) + 1 bits, signed)
//   y   = clamp(round(acc / 2^R), lo, hi)       (R in 0..AW, rounding mode per job)
//
// See docs/contract.md for the definition and worked examples.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace normcore {

inline constexpr int kContractVersion = 1;

enum class Rounding : std::uint8_t {
  floor = 0,      // toward -inf (plain arithmetic shift)
  half_up = 1,    // nearest, ties toward +inf
  half_even = 2,  // nearest, ties to even (convergent)
  half_away = 3,  // nearest, ties away from zero (TFLite, NVDLA)
};

enum class Layout : std::uint8_t { nchw = 0, nhwc = 1 };

std::string_view to_string(Rounding r);
std::string_view to_string(Layout l);
// Parse "floor" / "half_up" / "half_even" / "half_away"; throws std::invalid_argument naming the
// text.
Rounding parse_rounding(std::string_view text);
// Parse "nchw" / "nhwc" (case-insensitive); throws std::invalid_argument.
Layout parse_layout(std::string_view text);

// Number widths of one datapath. Limits: XW 2..32, SW 2..32, BW 2..62, YW 2..32, AW <= 64.
struct ArithSpec {
  int xw = 8;            // input element bits
  bool x_signed = true;  // input is two's complement (else unsigned)
  int sw = 16;           // scale bits (always signed)
  int bw = 32;           // offset b (bias) bits (always signed), in product units (scaled by 2^R)
  int yw = 8;            // output element bits
  bool y_signed = true;  // output is two's complement (else unsigned)

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
};

// Per-job settings (the same for every channel).
struct JobSettings {
  int shift = 0;  // R, 0..acc_bits()
  Rounding rounding = Rounding::half_even;
  std::int64_t lo = -128;  // clamp bounds, inside the output range, lo <= hi
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
