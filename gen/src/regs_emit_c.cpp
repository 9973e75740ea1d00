// The plain C register header (C99 and later; valid C++ too) of the register description: one
// #define per register and field value, function-like field macros, X-macros over the whole
// map, and static inline field and MMIO helpers. For firmware that cannot include the C++
// header (<block>.hpp, regs_emit.cpp).
#include <sstream>

#include "normcore/gen/regs.hpp"
#include "regs_internal.hpp"

namespace normcore::gen {

namespace {

using regs_detail::fields_by_lsb;
using regs_detail::hex;
using regs_detail::one_line;
using regs_detail::upper;

const char* access_macro(Access a) {
  switch (a) {
    case Access::ro:
      return "ACCESS_RO";
    case Access::rw:
      return "ACCESS_RW";
    case Access::w1c:
      return "ACCESS_W1C";
    case Access::w1s_sc:
      return "ACCESS_W1S_SC";
  }
  return "ACCESS_RO";
}

void preamble(std::ostream& os, const RegisterMap& map, const std::string& P) {
  const std::string p = map.block;
  os << "// " << p << ".h -- " << regs_detail::generated_by() << ". Do not edit.\n"
     << "// " << one_line(map.desc) << "\n"
     << "//\n"
     << "// Plain C (C99 or later; also valid C++). Offsets are byte offsets of 32-bit registers.\n"
     << "// Per register: " << P
     << "_<REG>_OFFSET, _RESET, _MASK (bits of all fields). Per field:\n"
     << "// " << P << "_<REG>_<FIELD>_SHIFT (lsb), _WIDTH, _MASK (in place), _RESET (field value\n"
     << "// after reset), _ACCESS (" << P << "_ACCESS_*), _GET(reg) and _SET(reg, value).\n"
     << "// Access: RO read-only (writes ignored), RW read-write, W1C hardware sets it and a 1\n"
     << "// written clears it, W1S_SC a 1 written gives a one-cycle pulse (reads 0).\n"
     << "// Bits outside every field are reserved: they read 0 and writes to them are ignored.\n"
     << "// Unmapped offsets answer SLVERR.\n"
     << "#ifndef " << P << "_H_\n"
     << "#define " << P << "_H_\n\n"
     << "#include <stdint.h>\n\n"
     << "#define " << P << "_DATA_BITS " << map.data_bits << "u\n"
     << "#define " << P << "_ADDR_BITS " << map.addr_bits << "u\n"
     << "#define " << P << "_REGISTER_COUNT " << map.regs.size() << "u\n\n"
     << "#define " << P << "_ACCESS_RO 0u\n"
     << "#define " << P << "_ACCESS_RW 1u\n"
     << "#define " << P << "_ACCESS_W1C 2u\n"
     << "#define " << P << "_ACCESS_W1S_SC 3u\n";
}

void defines(std::ostream& os, const RegisterMap& map, const std::string& P) {
  const std::string& p = map.block;
  for (const auto& r : map.regs) {
    const std::string R = P + "_" + upper(r.name);
    os << "\n// " << hex(r.offset, 3) << " " << r.name << ": " << one_line(r.desc) << "\n"
       << "#define " << R << "_OFFSET " << hex(r.offset, 3) << "u\n"
       << "#define " << R << "_RESET " << hex(r.reset_value(), 8) << "u\n"
       << "#define " << R << "_MASK " << hex(r.mask(), 8) << "u\n";
    for (const auto* fp : fields_by_lsb(r)) {
      const Field& f = *fp;
      const std::string F = R + "_" + upper(f.name);
      os << "//   " << f.name << " [" << f.msb() << ":" << f.lsb << "] " << to_string(f.access)
         << (f.hw_const ? " (constant)" : "") << ": " << one_line(f.desc) << "\n"
         << "#define " << F << "_SHIFT " << f.lsb << "u\n"
         << "#define " << F << "_WIDTH " << f.width << "u\n"
         << "#define " << F << "_MASK " << hex(f.mask(), 8) << "u\n"
         << "#define " << F << "_RESET " << hex(f.reset, 1) << "u\n"
         << "#define " << F << "_ACCESS " << P << "_" << access_macro(f.access) << "\n"
         << "#define " << F << "_GET(reg) \\\n"
         << "  " << p << "_field_get((reg), " << F << "_MASK, " << F << "_SHIFT)\n"
         << "#define " << F << "_SET(reg, value) \\\n"
         << "  " << p << "_field_set((reg), " << F << "_MASK, " << F << "_SHIFT, (value))\n";
    }
  }
}

// X(REG) per register and X(REG, FIELD) per field, in map order and increasing bit order: the
// caller pastes the names (<BLOCK>_##REG##_OFFSET, <BLOCK>_##REG##_##FIELD##_SHIFT, ...).
void x_macros(std::ostream& os, const RegisterMap& map, const std::string& P) {
  os << "\n// X-macros over the whole map, in offset order: X(REG) per register and X(REG, FIELD)\n"
     << "// per field (increasing bit order); paste the names, e.g. " << P << "_##REG##_OFFSET.\n"
     << "#define " << P << "_FOREACH_REG(X)";
  for (const auto& r : map.regs) os << " \\\n  X(" << upper(r.name) << ")";
  os << "\n#define " << P << "_FOREACH_FIELD(X)";
  for (const auto& r : map.regs) {
    for (const auto* fp : fields_by_lsb(r)) {
      os << " \\\n  X(" << upper(r.name) << ", " << upper(fp->name) << ")";
    }
  }
  os << "\n";
}

// Field value of a register value, and a register value with one field replaced (the _GET and
// _SET macros use them).
void field_helpers(std::ostream& os, const RegisterMap& map) {
  const std::string& p = map.block;
  os << "\nstatic inline uint32_t " << p
     << "_field_get(uint32_t reg, uint32_t mask, uint32_t shift) {\n"
     << "  return (reg & mask) >> shift;\n"
     << "}\n"
     << "static inline uint32_t " << p
     << "_field_set(uint32_t reg, uint32_t mask, uint32_t shift,\n"
     << "    uint32_t value) {\n"
     << "  return (reg & ~mask) | ((value << shift) & mask);\n"
     << "}\n";
}

void mmio_helpers(std::ostream& os, const RegisterMap& map, const std::string& P) {
  const std::string& p = map.block;
  os << "\n// 32-bit register access at `base` (the block's mapped address) + `offset` bytes.\n"
     << "static inline uint32_t " << p
     << "_read(const volatile uint32_t* base, uint32_t offset) {\n"
     << "  return base[offset / 4u];\n"
     << "}\n"
     << "static inline void " << p
     << "_write(volatile uint32_t* base, uint32_t offset, uint32_t value) {\n"
     << "  base[offset / 4u] = value;\n"
     << "}\n\n"
     << "#endif  // " << P << "_H_\n";
}

}  // namespace

std::string emit_plain_c_header(const RegisterMap& map) {
  regs_detail::require_valid(map);
  const std::string P = upper(map.block);
  std::ostringstream os;
  preamble(os, map, P);
  field_helpers(os, map);
  defines(os, map, P);
  x_macros(os, map, P);
  mmio_helpers(os, map, P);
  return os.str();
}

}  // namespace normcore::gen
