// The fold for a float datapath (contract v2, docs/contract.md section 9): float batch norm ->
// per-channel fp32 s[c], b[c] and the job's clamp, with the worst-case error against the float64
// batch norm over every representable input.
//
//   a = gamma / sqrt(var + eps) * in.scale / out.scale       in double
//   d = (beta - mean * gamma / sqrt(var + eps)) / out.scale + out.zero_point - a * in.zero_point
//   s = fp32(a), b = fp32(d)                                 each rounded once (RNE)
//
// A float side takes no quantisation (bn.json "quant": "float", or scale 1 / zero point 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"

namespace normcore {

struct FloatChannelReport {
  int channel = 0;
  double a = 0, d = 0;           // the double-precision s and b before rounding
  std::uint32_t s = 0, b = 0;    // fp32 patterns
  double max_err = 0;            // worst |y - y64| over every finite input: output ULPs / LSBs
  double max_err_x = 0;          // an input where it occurs
  std::uint64_t inputs = 0;      // inputs evaluated (every finite fp16 / bf16, or integer, x)
  std::uint64_t overflowed = 0;  // inputs whose output is +-Inf while the float64 BN is finite
  std::vector<std::string> warnings;
};

struct FloatFoldResult {
  std::vector<std::int64_t> scale, shift;  // fp32 patterns of s[c], b[c] (ParamImage's fields)
  JobSettings job;                         // R 0, rounding (integer output), lo / hi
  std::vector<FloatChannelReport> channels;
  double worst_err = 0;
  int worst_channel = 0;
  bool exhaustive = true;  // every input evaluated (integer inputs above 2^20 values: sampled)
  std::vector<std::string> warnings;  // every warning, channel ones prefixed "channel N: "
};

// The real input of an integer x: in.scale * (x - in.zero_point).
double bn_input(const BnParams& bn, double x);

// ULP of the real value v in float type t: 2^(max(floor(log2 |v|), emin) - man_bits).
double ulp_of(double v, NumType t);

// Validates bn (and that a float side has no quantisation), folds every channel, and evaluates
// every finite input of a float x (65536 patterns minus NaN / Inf) or every integer x through
// apply_float against the float64 batch norm (y64 = gamma * (x - mean) / sqrt(var + eps) + beta,
// clamped by the activation; an integer output in output LSBs, unrounded). The error of a float
// output is in ULPs of y64 in the output type. `rounding`: an integer output's mode.
FloatFoldResult fold_float(const BnParams& bn, const ArithSpec& spec,
                           Rounding rounding = Rounding::half_even);

// Human-readable report: types, clamp, per-channel table (the 8 worst beyond 32 channels),
// warnings, and "worst-case error: X ULP (channel N, exhaustive)".
std::string format_float_report(const FloatFoldResult& result, const ArithSpec& spec);

}  // namespace normcore
