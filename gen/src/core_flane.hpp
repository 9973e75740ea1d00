// The floating-point lane (contract v2, docs/contract.md section 9): y = clamp(RNE(x * s + b)),
// one rounding of the exact value, bit for bit apply_float (model/src/float_contract.cpp) for a
// float x (fp16 / bf16) and a float y (fp16 / bf16 / fp32) or an 8 / 16-bit integer y; s and b
// fp32. Integer x is not built here.
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
  bool flush = false;    // flush_subnormals: subnormal x, s, b and results become signed zeros
  int yw = 8;            // y integer: 8 or 16 bits
  bool y_signed = true;  // y integer: two's complement (else unsigned)
};

// Registers from x_i / s_i / b_i to y_o (II = 1): unpack + product, normalise the product and b,
// align, add, leading zeros + normalise, denormalise, round + pack, clamp.
inline constexpr int kFlaneLatency = 8;
static_assert(kFlaneLatency + 1 == kFloatLanePipeline, "CoreConfig::lane_stages()");

// True when build_flane builds this datapath (x fp16 / bf16; y fp16 / bf16 / fp32, or an integer
// of yw 8 or 16 bits).
bool flane_supports(const ArithSpec& a);

// Ports: clk_i, x_i (16), s_i (32), b_i (32), lo_i / hi_i (bit patterns of y, not NaN, lo <= hi
// numerically: a job constant), y_o. No reset (pure datapath). An integer y (8 or 16 bits,
// signed or unsigned: yw, y_signed) adds round_i (2 bits, the integer contract's Rounding) and
// rounds the exact sum to an integer, then min(max(v, lo), hi) (apply_float's integer path).
// Throws std::invalid_argument for an x other than fp16 / bf16 or an integer y of another width.
Module build_flane(const FlaneSpec& spec);

}  // namespace normcore::gen::core
