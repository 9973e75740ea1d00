// The lane's multiply-add stage (core_mac.cpp): from the lane's x_i, s_i, b_i to the wire
// `acc` (Variant::aw bits) that the shifter reads, and the stage's description.
#pragma once

#include <string>

#include "core_internal.hpp"

namespace normcore::gen::core {

// Builds the folded lane's multiply-add and its registers, ending in the wire `acc`.
void lane_mac_acc(Module& m, const CoreConfig& c, const Variant& v);
// --target ecp5, pipeline >= 9, x and s of at most 18 signed bits: the product is instantiated
// as MULT18X18D with its registers (under `ifdef SYNTHESIS; behavioural registers otherwise).
bool mac_in_mult18(const CoreConfig& c);
// The stages of lane_mac_acc for the lane's description: "[x*s] [+b] " or "[x*s+b in the DSP] ".
std::string mac_stages(const CoreConfig& c);

}  // namespace normcore::gen::core
