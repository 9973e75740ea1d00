// Helpers shared by regs.cpp, regs_map.cpp, regs_block.cpp and regs_emit.cpp (not part of the
// library's interface).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normcore/gen/regs.hpp"

namespace normcore::gen::regs_detail {

// `width` low bits set (all 64 for width >= 64).
std::uint64_t ones(int width);
std::string lower(std::string s);
std::string upper(std::string s);
// "0x" + upper-case hex digits, zero-padded to at least `digits`.
std::string hex(std::uint64_t v, int digits);
// <reg>_<field> in lower case: the stem of the field's port and net names in the register block.
std::string base_name(const Register& r, const Field& f);
// The fields of r in increasing bit order.
std::vector<const Field*> fields_by_lsb(const Register& r);
// The register block of `map` without checking the map first (RegisterMap::check uses it to
// validate the Verilog names).
Module build_regblock_unchecked(const RegisterMap& map, const std::string& module_name);

}  // namespace normcore::gen::regs_detail
