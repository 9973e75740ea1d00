// The floating-point lane (contract v2, docs/contract.md section 9): y = clamp(RNE(x * s + b)),
// one rounding of the exact value, bit for bit apply_float (model/src/float_contract.cpp) for a
// float x (fp16 / bf16) and a float y (fp16 / bf16 / fp32); s and b fp32. Integer x or y is not
// built here.
#pragma once

#include <string>
#include <vector>

#include "normcore/config.hpp"
#include "normcore/contract.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen::core {

struct FlaneSpec {
  std::string name;  // the module's name
  NumType x = NumType::fp16;
  NumType y = NumType::fp16;
  bool flush = false;  // flush_subnormals: subnormal x, s, b and results become signed zeros
};

// Registers from x_i / s_i / b_i to y_o (II = 1): unpack + product, normalise the product and b,
// align, add, leading zeros + normalise, denormalise, round + pack, clamp.
inline constexpr int kFlaneLatency = 8;
static_assert(kFlaneLatency + 1 == kFloatLanePipeline, "CoreConfig::lane_stages()");

// True when build_flane builds this pair of types (x fp16 / bf16, y fp16 / bf16 / fp32).
bool flane_supports(NumType x, NumType y);

// Ports: clk_i, x_i (16), s_i (32), b_i (32), lo_i / hi_i (bit patterns of y, not NaN, lo <= hi
// numerically: a job constant), y_o. No reset (pure datapath). Throws std::invalid_argument for
// a pair flane_supports() rejects.
Module build_flane(const FlaneSpec& spec);

}  // namespace normcore::gen::core
