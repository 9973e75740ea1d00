// Pieces of the PPA reference designs that the core builder also emits (for the
// "decomposed-core" reference: the core with LaneArith::decomposed).
#pragma once

#include "normcore/gen/config.hpp"
#include "normcore/gen/ir.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::gen {

// Into a lane with inputs x_i, mean_i, istd_i, gamma_i, beta_i, k1_i: the decomposed chain up to
// and including the wire acc_d = t * gamma + beta (DecomposedWidths::aw bits), which it returns
// and the caller registers as acc_q. Three registered stages (d, p, t) in front, plus input
// registers when `input_regs`.
Expr decomposed_front(Module& m, const CoreConfig& c, bool input_regs);

// The top of a hard-mac design (ref_hard.cpp): LANES instances of the family's DSP primitive.
Module build_hard_mac(const CoreConfig& c, RefDesign d);

}  // namespace normcore::gen
