// Pieces of the PPA reference designs that the core builder also emits (for the
// "decomposed-core" reference: the core with LaneArith::decomposed).
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/config.hpp"
#include "normcore/gen/ir.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::gen {

// Into a lane with inputs x_i, mean_i, istd_i, gamma_i, beta_i, k1_i: the decomposed chain up to
// and including the wire acc_d = t * gamma + beta (DecomposedWidths::aw bits), which it returns
// and the caller registers as acc_q. Three registered stages (d, p, t) in front, plus input
// registers when `input_regs`.
Expr decomposed_front(Module& m, const CoreConfig& c, bool input_regs);

// One ECP5 MULT18X18D, P = A * B, 18 x 18 signed: A = bits a_lo..a_lo+17 of a, B likewise, P into
// bits p_lo..p_lo+35 of p; `regs` the REG_*_CLK parameters set to CLK0 (CE0 high, RST0 low);
// the unused outputs into wires unused_<port><suffix> (declared here).
struct Mult18 {
  std::string name, suffix;
  Expr clk, a;
  int a_lo;
  Expr b;
  int b_lo;
  Expr p;
  int p_lo;
  std::vector<std::string> regs;
};
void mult18x18d(Module& m, const Mult18& d, std::string comment);

// The top of a hard-mac design (ref_hard.cpp): LANES instances of the family's DSP primitive.
Module build_hard_mac(const CoreConfig& c, RefDesign d);

}  // namespace normcore::gen
