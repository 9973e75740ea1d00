// The fold: float batch-norm + quantisation -> the contract's integers (s[c], b[c], R, lo, hi),
// with an exact error report against the real-valued result. See docs/contract.md, section 6.
//
//   real input   xr = in.scale * (x - in.zero_point)
//   batch norm   yr = A * xr + B,  A = gamma / sqrt(var + eps),  B = beta - A * mean
//   output       y  = yr / out.scale + out.zero_point
//   => y_ideal(x) = a * x + d,  a = A * in.scale / out.scale,
//                               d = B / out.scale + out.zero_point - a * in.zero_point
//   s = round(a * 2^R), b = round((d + o) * 2^R), saturated to their widths, where o = 0.5 in
//   floor mode with R >= 1 (the half-LSB rounding offset is folded into b) and o = 0 otherwise.
//   One R for all channels: the R with the smallest worst-case error over all channels (ties go
//   to the larger R), so one outlier channel cannot force a coarse R onto the others.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"

namespace normcore {

struct FoldOptions {
  std::optional<Rounding> rounding;  // unset: BnParams::rounding if set, else half_even
  std::optional<int> force_shift;    // use this R (0..acc_bits) instead of searching for it
  // Called as the fold advances: (phase, done, total) with phase "candidates" (one per R
  // searched), "search" (the exact evaluation, one per R examined first; exhaustive inputs only)
  // and "report" (channels, every 4096 and at the end). For a progress display on many
  // channels; not called when empty.
  std::function<void(const char*, std::uint64_t, std::uint64_t)> progress;
};

struct ChannelReport {
  int channel = 0;
  long double a = 0, d = 0;    // ideal y = a * x + d (output LSBs per input LSB, output LSBs)
  std::int64_t s = 0, b = 0;   // folded scale and offset b (bias) at R
  bool s_saturated = false;    // round(a * 2^R) did not fit SW bits: s is the range's end
  bool b_saturated = false;    // round((d + o) * 2^R) did not fit BW bits: b is the range's end
  long double affine_err = 0;  // max over the input range of |(x*s + b)/2^R - o - (a*x + d)|
  long double max_err = 0;     // max over x of |apply(x) - clamp(a*x + d, lo, hi)|, output LSBs
  bool exhaustive = false;     // max_err is exact (every x evaluated) rather than a bound
  std::vector<std::string> warnings;
};

struct FoldResult {
  // s[c], b[c] (`shift` holds the offsets b: a C++ name kept for existing callers; R is job.shift)
  std::vector<std::int64_t> scale, shift;
  JobSettings job;  // R, rounding, lo, hi
  std::vector<ChannelReport> channels;
  // The largest R at which no s or b saturates, ignoring channels that saturate even at R = 0
  // (the R the fold used before the search). The chosen job.shift may differ from it.
  int fit_shift = 0;
  // How job.shift was chosen: "forced", or which candidates the search compared and how.
  std::string shift_choice;
  long double worst_err = 0;
  int worst_channel = 0;
  std::vector<std::string> warnings;  // every warning, channel ones prefixed "channel N: "
};

// Exhaustive error evaluation is used while (x_max - x_min + 1) * channels <= this.
inline constexpr std::uint64_t kExhaustiveBudget = std::uint64_t{1} << 26;

// The R search compares every R in 0..AW by its exact worst-case error while
// (x_max - x_min + 1) * channels * (AW + 1) <= this; above it, only the window
// fit_shift .. fit_shift + kShiftSearchWindow plus the R's whose error bound beats the window's
// best (see fold.cpp and docs/contract.md).
inline constexpr std::uint64_t kShiftSearchBudget = std::uint64_t{1} << 28;
inline constexpr int kShiftSearchWindow = 8;

// The ideal per-channel affine map (a, d) of a validated layer, computed in long double.
std::vector<std::pair<long double, long double>> ideal_affine(const BnParams& bn);

// Output clamp [lo, hi]: the output range intersected with the activation (relu: lo >= zero
// point; relu6: hi <= zero_point + round(6 / out.scale); clamp{min,max}: ceil / floor of the
// quantised bounds). Throws Error if the interval is empty.
std::pair<std::int64_t, std::int64_t> activation_bounds(const BnParams& bn, const ArithSpec& spec);

// Validates `bn` and `spec`, chooses R (unless forced), folds every channel and computes the
// error report. Never fails for unrepresentable channels: saturates and warns (naming the channel
// and its max error) instead.
FoldResult fold(const BnParams& bn, const ArithSpec& spec, const FoldOptions& options = {});

// Human-readable report: header (widths, R, rounding, lo/hi), per-channel table (the 8 worst and
// a summary beyond 32 channels), warnings, and a final line
// "worst-case error: X LSB (channel N, exhaustive|bound)".
std::string format_report(const FoldResult& result, const ArithSpec& spec, const BnParams& bn);

}  // namespace normcore
