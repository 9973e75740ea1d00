// The register description's types and its consistency check. The accelerator's description is
// in regs_map.cpp (accel_register_map), the AXI4-Lite register block built from a description in
// regs_block.cpp (build_regblock), the other outputs (C header, Markdown, SystemRDL, JSON) in
// regs_emit.cpp.
#include "normcore/gen/regs.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <stdexcept>

#include "regs_internal.hpp"

namespace normcore::gen {

std::string_view to_string(Access a) {
  switch (a) {
    case Access::ro:
      return "ro";
    case Access::rw:
      return "rw";
    case Access::w1c:
      return "w1c";
    case Access::w1s_sc:
      return "w1s_sc";
  }
  return "?";
}

std::uint32_t Field::mask() const {
  if (width <= 0 || lsb < 0 || lsb + width > 32) return 0;
  return static_cast<std::uint32_t>(regs_detail::ones(width) << lsb);
}

std::uint32_t Register::mask() const {
  std::uint32_t m = 0;
  for (const auto& f : fields) m |= f.mask();
  return m;
}

std::uint32_t Register::reset_value() const {
  std::uint32_t v = 0;
  for (const auto& f : fields) {
    v |= static_cast<std::uint32_t>((f.reset << f.lsb) & f.mask());
  }
  return v;
}

std::uint32_t Register::rw_mask() const {
  std::uint32_t m = 0;
  for (const auto& f : fields) {
    if (f.access == Access::rw) m |= f.mask();
  }
  return m;
}

const Field* Register::field(std::string_view fname) const {
  for (const auto& f : fields) {
    if (f.name == fname) return &f;
  }
  return nullptr;
}

const Register* RegisterMap::reg(std::string_view rname) const {
  for (const auto& r : regs) {
    if (r.name == rname) return &r;
  }
  return nullptr;
}

namespace regs_detail {

std::uint64_t ones(int width) {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

std::string hex(std::uint64_t v, int digits) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xF]);
    v >>= 4;
  } while (v != 0);
  while (static_cast<int>(s.size()) < digits) s.insert(s.begin(), '0');
  return "0x" + s;
}

std::string base_name(const Register& r, const Field& f) {
  return lower(r.name + "_" + f.name);
}

std::vector<const Field*> fields_by_lsb(const Register& r) {
  std::vector<const Field*> out;
  for (const auto& f : r.fields) out.push_back(&f);
  std::sort(out.begin(), out.end(), [](const Field* a, const Field* b) { return a->lsb < b->lsb; });
  return out;
}

}  // namespace regs_detail

namespace {

using regs_detail::base_name;
using regs_detail::hex;
using regs_detail::lower;
using regs_detail::ones;
using regs_detail::upper;

// SystemRDL 2.0 keywords (a field or block with such a name would not parse).
const std::set<std::string>& rdl_keywords() {
  static const std::set<std::string> k = {"abstract",   "accesstype",  "addressingtype",
                                          "addrmap",    "alias",       "all",
                                          "bit",        "boolean",     "bothedge",
                                          "compact",    "component",   "componentwidth",
                                          "constraint", "default",     "encode",
                                          "enum",       "external",    "false",
                                          "field",      "fullalign",   "hw",
                                          "inside",     "internal",    "level",
                                          "longint",    "mem",         "na",
                                          "negedge",    "nonsticky",   "number",
                                          "onreadtype", "onwritetype", "posedge",
                                          "property",   "r",           "rclr",
                                          "ref",        "reg",         "regalign",
                                          "regfile",    "rset",        "ruser",
                                          "rw",         "rw1",         "signal",
                                          "string",     "sticky",      "struct",
                                          "this",       "true",        "type",
                                          "unsigned",   "w",           "w1",
                                          "wclr",       "woclr",       "woset",
                                          "wot",        "wr",          "wset",
                                          "wuser",      "wzc",         "wzs",
                                          "wzt"};
  return k;
}

bool is_ident(const std::string& s, bool allow_lower, bool allow_upper) {
  if (s.empty()) return false;
  auto ok = [&](char ch, bool first) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::islower(u)) return allow_lower;
    if (std::isupper(u)) return allow_upper;
    if (std::isdigit(u)) return !first;
    return ch == '_' && !first;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!ok(s[i], i == 0)) return false;
  }
  return true;
}

}  // namespace

std::string RegisterMap::check() const {
  if (!is_ident(block, true, true) || rdl_keywords().count(block) != 0) {
    return "block name '" + block + "' is not an identifier";
  }
  if (data_bits != 32) return "data_bits: " + std::to_string(data_bits) + " (only 32 is supported)";
  if (addr_bits < 3 || addr_bits > 32) {
    return "addr_bits: " + std::to_string(addr_bits) + " is out of range 3..32";
  }
  if (regs.empty()) return "the map has no registers";
  const std::uint64_t span = std::uint64_t{1} << addr_bits;
  std::set<std::string> reg_names;
  std::set<std::uint32_t> offsets;
  for (const auto& r : regs) {
    const std::string rn = "register " + (r.name.empty() ? std::string("<unnamed>") : r.name);
    if (!is_ident(r.name, false, true)) {
      return rn + ": name must be an upper-case identifier ([A-Z][A-Z0-9_]*)";
    }
    if (!reg_names.insert(r.name).second) return rn + ": duplicate register name";
    if (r.offset % 4 != 0) return rn + ": offset " + hex(r.offset, 3) + " is not 4-byte aligned";
    if (std::uint64_t{r.offset} + 4 > span) {
      return rn + ": offset " + hex(r.offset, 3) + " is outside the " + std::to_string(addr_bits) +
             "-bit address space";
    }
    if (!offsets.insert(r.offset).second) {
      return rn + ": offset " + hex(r.offset, 3) + " overlaps another register";
    }
    if (r.fields.empty()) return rn + ": has no fields";
    std::set<std::string> field_names;
    std::uint32_t used = 0;
    for (const auto& f : r.fields) {
      const std::string fn = rn + " field " + (f.name.empty() ? std::string("<unnamed>") : f.name);
      if (!is_ident(f.name, true, false) || rdl_keywords().count(f.name) != 0) {
        return fn +
               ": name must be a lower-case identifier ([a-z][a-z0-9_]*, no SystemRDL "
               "keyword)";
      }
      if (!field_names.insert(f.name).second) return fn + ": duplicate field name";
      if (f.width < 1 || f.width > 32)
        return fn + ": width " + std::to_string(f.width) + " is not 1..32";
      if (f.lsb < 0 || f.lsb + f.width > 32) {
        return fn + ": bits [" + std::to_string(f.lsb + f.width - 1) + ":" + std::to_string(f.lsb) +
               "] are outside 31..0";
      }
      if ((used & f.mask()) != 0) return fn + ": overlaps another field";
      used |= f.mask();
      if ((f.reset & ~ones(f.width)) != 0) {
        return fn + ": reset " + hex(f.reset, 1) + " does not fit " + std::to_string(f.width) +
               " bits";
      }
      if (f.hw_const && f.access != Access::ro) return fn + ": a constant must be ro";
      if (f.access == Access::w1s_sc && f.reset != 0) return fn + ": a w1s_sc field resets to 0";
    }
  }
  // Generated identifiers: the C header uses <REG>_... and <REG>_<FIELD>_..., so no register name
  // may equal another register's <REG>_<FIELD>, and no two <REG>_<FIELD> may be equal.
  std::set<std::string> c_names;
  for (const auto& r : regs) c_names.insert(upper(r.name));
  for (const auto& r : regs) {
    for (const auto& f : r.fields) {
      if (!c_names.insert(upper(r.name + "_" + f.name)).second) {
        return "register " + r.name + " field " + f.name + ": the name " +
               upper(r.name + "_" + f.name) + " collides with another register or field";
      }
    }
  }
  // Verilog names (ports, nets) of the register block.
  try {
    regs_detail::build_regblock_unchecked(*this, block).validate();
  } catch (const std::logic_error& e) {
    return std::string("register block: ") + e.what();
  }
  return {};
}

}  // namespace normcore::gen
