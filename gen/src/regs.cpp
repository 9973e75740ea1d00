// The register description of the accelerator (accel_register_map), its consistency check, and
// the AXI4-Lite register block built from it (build_regblock). The other outputs of the same
// description (C header, Markdown, SystemRDL, JSON) are in regs_emit.cpp.
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <stdexcept>

#include "normcore/gen/regs.hpp"
#include "regs_internal.hpp"
#include "vexpr.hpp"

namespace normcore::gen {

std::string_view to_string(Access a) {
  switch (a) {
    case Access::ro: return "ro";
    case Access::rw: return "rw";
    case Access::w1c: return "w1c";
    case Access::w1s_sc: return "w1s_sc";
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

std::string base_name(const Register& r, const Field& f) { return lower(r.name + "_" + f.name); }

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
  static const std::set<std::string> k = {
      "abstract", "accesstype", "addressingtype", "addrmap", "alias", "all", "bit", "boolean",
      "bothedge", "compact", "component", "componentwidth", "constraint", "default", "encode",
      "enum", "external", "false", "field", "fullalign", "hw", "inside", "internal", "level",
      "longint", "mem", "na", "negedge", "nonsticky", "number", "onreadtype", "onwritetype",
      "posedge", "property", "r", "rclr", "ref", "reg", "regalign", "regfile", "rset", "ruser",
      "rw", "rw1", "signal", "string", "sticky", "struct", "this", "true", "type", "unsigned",
      "w", "w1", "wclr", "woclr", "woset", "wot", "wr", "wset", "wuser", "wzc", "wzs", "wzt"};
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

Module build_regblock_unchecked(const RegisterMap& map, const std::string& module_name);

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
      return rn + ": offset " + hex(r.offset, 3) + " is outside the " +
             std::to_string(addr_bits) + "-bit address space";
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
        return fn + ": name must be a lower-case identifier ([a-z][a-z0-9_]*, no SystemRDL "
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
    build_regblock_unchecked(*this, block).validate();
  } catch (const std::logic_error& e) {
    return std::string("register block: ") + e.what();
  }
  return {};
}

// ------------------------------------------------------------------------------------------------
// The description.

namespace {

struct Version {
  std::uint64_t major = 0, minor = 0, patch = 0;
};

Version parse_version(const std::string& text) {
  Version v;
  std::uint64_t* parts[] = {&v.major, &v.minor, &v.patch};
  std::size_t i = 0;
  for (char ch : text) {
    if (ch == '.') {
      if (++i >= 3) break;
    } else if (std::isdigit(static_cast<unsigned char>(ch))) {
      *parts[i] = *parts[i] * 10 + static_cast<std::uint64_t>(ch - '0');
    } else {
      break;  // pre-release suffix
    }
  }
  return v;
}

Field ro_const(std::string name, int lsb, int width, std::uint64_t value, std::string desc) {
  return Field{std::move(name), lsb, width, Access::ro, value, std::move(desc), true};
}
Field ro_in(std::string name, int lsb, int width, std::string desc) {
  return Field{std::move(name), lsb, width, Access::ro, 0, std::move(desc), false};
}
Field rw(std::string name, int lsb, int width, std::uint64_t reset, std::string desc) {
  return Field{std::move(name), lsb, width, Access::rw, reset, std::move(desc), false};
}
Field w1c(std::string name, int lsb, int width, std::string desc) {
  return Field{std::move(name), lsb, width, Access::w1c, 0, std::move(desc), false};
}
Field w1s_sc(std::string name, int lsb, std::string desc) {
  return Field{std::move(name), lsb, 1, Access::w1s_sc, 0, std::move(desc), false};
}

}  // namespace

RegisterMap accel_register_map(const AccelConfig& cfg) {
  const CoreConfig& c = cfg.core;
  const ArithSpec& a = c.arith;
  const Version ver = parse_version(kGeneratorVersion);
  const int yw = a.yw;
  const auto y_bits = [&](std::int64_t v) {
    return static_cast<std::uint64_t>(v) & ones(yw);  // two's complement in yw bits
  };
  const auto elem = [](int bits, bool sgn) {
    return (sgn ? "int" : "uint") + std::to_string(bits);
  };

  RegisterMap m;
  m.block = c.name + "_regs";
  m.desc = "Registers of the " + c.name + " accelerator (" + std::to_string(c.lanes) + " lanes, " +
           elem(a.xw, a.x_signed) + " -> " + elem(a.yw, a.y_signed) + ", up to " +
           std::to_string(c.max_channels) + " channels, " + std::to_string(cfg.bus_bits) +
           "-bit AXI4 master)";
  m.data_bits = 32;
  m.addr_bits = cfg.axil_addr_bits;
  auto add = [&](std::string name, std::uint32_t offset, std::string desc, std::vector<Field> f) {
    m.regs.push_back(Register{std::move(name), offset, std::move(desc), std::move(f)});
  };
  auto whole_rw = [&](std::string name, std::uint32_t offset, std::uint64_t reset, std::string desc,
                      std::string fdesc) {
    add(std::move(name), offset, std::move(desc), {rw("value", 0, 32, reset, std::move(fdesc))});
  };
  auto whole_ro = [&](std::string name, std::uint32_t offset, std::string desc) {
    add(std::move(name), offset, desc, {ro_in("value", 0, 32, desc)});
  };

  // Identification and capabilities (constants).
  add("ID", 0x000, "Identification", {ro_const("magic", 0, 32, kRegsMagic, "\"NCBN\" in ASCII")});
  add("VERSION", 0x004, "Generator and contract versions",
      {ro_const("patch", 0, 8, ver.patch, "generator version, patch"),
       ro_const("minor", 8, 8, ver.minor, "generator version, minor"),
       ro_const("major", 16, 8, ver.major, "generator version, major"),
       ro_const("contract", 24, 8, static_cast<std::uint64_t>(kContractVersion),
                "arithmetic contract version")});
  add("CAPS0", 0x008, "Capabilities: datapath",
      {ro_const("lanes", 0, 8, static_cast<std::uint64_t>(c.lanes), "elements per stream beat"),
       ro_const("in_bits", 8, 6, static_cast<std::uint64_t>(a.xw), "input element bits"),
       ro_const("in_signed", 14, 1, a.x_signed ? 1 : 0, "input is two's complement"),
       ro_const("out_bits", 16, 6, static_cast<std::uint64_t>(a.yw), "output element bits"),
       ro_const("out_signed", 22, 1, a.y_signed ? 1 : 0, "output is two's complement"),
       ro_const("round_modes", 24, 4, 0xF,
                "supported rounding modes, bit per mode (floor, half_up, half_even, half_away)")});
  add("CAPS1", 0x00C, "Capabilities: channel table",
      {ro_const("max_channels", 0, 17, static_cast<std::uint64_t>(c.max_channels),
                "largest CHANNELS value")});
  add("CAPS2", 0x010, "Capabilities: memory interface",
      {ro_const("bus_bytes", 0, 8, static_cast<std::uint64_t>(cfg.bus_bytes()),
                "AXI4 data bus width in bytes"),
       ro_const("addr_bits", 8, 7, static_cast<std::uint64_t>(cfg.addr_bits), "AXI4 address bits"),
       ro_const("outstanding", 16, 5, static_cast<std::uint64_t>(cfg.outstanding),
                "read bursts in flight"),
       ro_const("max_burst_log2", 24, 4, static_cast<std::uint64_t>(clog2(cfg.max_burst)),
                "log2 of the beats per burst")});
  add("CAPS3", 0x014, "Capabilities: parameter format",
      {ro_const("scale_bits", 0, 6, static_cast<std::uint64_t>(a.sw), "scale s[c] bits (signed)"),
       ro_const("shift_bits", 8, 6, static_cast<std::uint64_t>(a.bw), "shift b[c] bits (signed)"),
       ro_const("inner_bits", 16, 6, static_cast<std::uint64_t>(c.inner_bits), "INNER.value bits"),
       ro_const("param_entry_bytes", 24, 5, static_cast<std::uint64_t>(cfg.param_entry_bytes()),
                "bytes per parameter entry in memory ({b, s}, s in the low bits)")});

  // Control and status.
  add("CTRL", 0x020, "Control",
      {w1s_sc("start", 0, "write 1: start a job with the current settings"),
       w1s_sc("soft_reset", 1, "write 1: abort the job and reset the engine (not the registers)"),
       rw("irq_en_done", 8, 1, 0, "raise irq_o when IRQ_STATUS.done is set"),
       rw("irq_en_error", 9, 1, 0, "raise irq_o when IRQ_STATUS.error is set")});
  add("STATUS", 0x024, "Status",
      {ro_in("busy", 0, 1, "a job is running"),
       ro_in("done", 1, 1, "the last job completed"),
       ro_in("error", 2, 1, "the last job stopped with an error (see ERR_CODE)"),
       w1c("start_ignored", 3, 1, "START was written while busy (sticky; write 1 to clear)")});
  add("IRQ_STATUS", 0x028, "Interrupt status (irq_o = |(IRQ_STATUS & CTRL.irq_en_*))",
      {w1c("done", 0, 1, "a job completed (write 1 to clear)"),
       w1c("error", 1, 1, "a job stopped with an error (write 1 to clear)")});
  add("ERR_CODE", 0x02C, "Error code of the last failed job",
      {ro_in("code", 0, 8, "0: none; see the accelerator documentation for the codes")});
  whole_ro("ERR_ADDR_LO", 0x030, "Failing address, bits 31:0");
  whole_ro("ERR_ADDR_HI", 0x034, "Failing address, bits 63:32");

  // Job settings.
  add("CHANNELS", 0x040, "Channels C of the tensor",
      {rw("value", 0, c.chan_bits(), 1, "C, 1.." + std::to_string(c.max_channels))});
  add("INNER", 0x044, "Inner size HW (elements per channel and image)",
      {rw("value", 0, c.inner_bits, 1, "HW >= 1")});
  whole_rw("OUTER", 0x048, 1, "Outer size N (images)", "N >= 1");
  add("MODE", 0x04C, "Job mode",
      {rw("layout", 0, 1, 0, "0: NCHW, 1: NHWC"),
       rw("rounding", 4, 2, static_cast<std::uint64_t>(Rounding::half_even),
          "0: floor, 1: half_up, 2: half_even, 3: half_away"),
       rw("shift", 8, c.rshift_bits(), 0,
          "right shift R, 0.." + std::to_string(c.acc_bits()))});
  add("CLAMP_LO", 0x050, "Lower clamp bound",
      {rw("value", 0, yw, y_bits(a.y_min()),
          "lo, " + std::string(a.y_signed ? "two's complement" : "unsigned"))});
  add("CLAMP_HI", 0x054, "Upper clamp bound",
      {rw("value", 0, yw, y_bits(a.y_max()),
          "hi, " + std::string(a.y_signed ? "two's complement" : "unsigned"))});

  // Addresses.
  whole_rw("SRC_LO", 0x060, 0, "Input tensor address, bits 31:0", "byte address");
  whole_rw("SRC_HI", 0x064, 0, "Input tensor address, bits 63:32", "byte address");
  whole_rw("DST_LO", 0x068, 0, "Output tensor address, bits 31:0", "byte address");
  whole_rw("DST_HI", 0x06C, 0, "Output tensor address, bits 63:32", "byte address");
  whole_rw("PARAM_LO", 0x070, 0, "Parameter table address, bits 31:0", "byte address");
  whole_rw("PARAM_HI", 0x074, 0, "Parameter table address, bits 63:32", "byte address");
  whole_rw("WIN_BASE_LO", 0x078, 0, "Allowed memory window: first byte address, bits 31:0",
           "byte address");
  whole_rw("WIN_BASE_HI", 0x07C, 0, "Allowed memory window: first byte address, bits 63:32",
           "byte address");
  whole_rw("WIN_LAST_LO", 0x080, 0xFFFFFFFF,
           "Allowed memory window: last byte address (inclusive), bits 31:0", "byte address");
  whole_rw("WIN_LAST_HI", 0x084, 0xFFFFFFFF,
           "Allowed memory window: last byte address (inclusive), bits 63:32", "byte address");

  // Performance counters.
  whole_ro("PERF_ACTIVE", 0x090, "Cycles busy in the last job");
  whole_ro("PERF_RD_STALL", 0x094, "Cycles the read path waited for memory");
  whole_ro("PERF_WR_STALL", 0x098, "Cycles the write path waited for memory");
  whole_ro("PERF_ELEMS_LO", 0x09C, "Elements processed, bits 31:0");
  whole_ro("PERF_ELEMS_HI", 0x0A0, "Elements processed, bits 63:32");
  return m;
}

// ------------------------------------------------------------------------------------------------
// The register block.

namespace {

using v::part;

// A sized hex literal ("8'h4e"; "1'b1" for one bit).
std::string vhex(int width, std::uint64_t value) {
  if (width == 1) return value != 0 ? "1'b1" : "1'b0";
  std::ostringstream os;
  os << width << "'h" << std::hex << value;
  return os.str();
}

// Replicate a 1-bit expression to `width` bits.
std::string repl(int width, const std::string& bit1) {
  if (width == 1) return bit1;
  std::string s = "{";  // built with += (GCC 12 warns falsely on "literal" + temporary)
  s += std::to_string(width);
  s += "{";
  s += bit1;
  s += "}}";
  return s;
}

// {name[a:b], name[c:d], ...} for the runs of set bits in mask (a 32-bit net).
std::vector<std::string> runs(const std::string& name, std::uint32_t mask) {
  std::vector<std::string> out;
  for (int b = 31; b >= 0;) {
    if (((mask >> b) & 1U) == 0) {
      --b;
      continue;
    }
    int lo = b;
    while (lo > 0 && ((mask >> (lo - 1)) & 1U) != 0) --lo;
    out.push_back(part(name, 32, lo, b - lo + 1));
    b = lo - 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) s += sep;
    s += parts[i];
  }
  return s;
}

std::string concat(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string s = "{";
  s += join(parts, ", ");
  s += "}";
  return s;
}

bool writable(Access a) { return a != Access::ro; }

Module build_regblock_unchecked(const RegisterMap& map, const std::string& module_name) {
  const int A = map.addr_bits;
  const int WA = A - 2;  // word address bits
  Module m;
  m.name = module_name;
  m.description = {
      "AXI4-Lite register block of " + map.block + " (" + std::to_string(map.regs.size()) +
          " registers), generated from the register description.",
      "AW and W are accepted independently (either first), one write and one read at a time;",
      "WSTRB is honoured per byte; OKAY for mapped offsets, SLVERR (write ignored, read 0) for",
      "unmapped ones; the low two address bits are ignored. Reset: rst_ni, synchronous, active "
      "low."};

  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("s_axil_awaddr", A);
  m.in("s_axil_awprot", 3, "ignored");
  m.in("s_axil_awvalid", 1);
  m.out("s_axil_awready", 1);
  m.in("s_axil_wdata", 32);
  m.in("s_axil_wstrb", 4);
  m.in("s_axil_wvalid", 1);
  m.out("s_axil_wready", 1);
  m.out("s_axil_bresp", 2, "0: OKAY, 2: SLVERR (unmapped)");
  m.out("s_axil_bvalid", 1);
  m.in("s_axil_bready", 1);
  m.in("s_axil_araddr", A);
  m.in("s_axil_arprot", 3, "ignored");
  m.in("s_axil_arvalid", 1);
  m.out("s_axil_arready", 1);
  m.out("s_axil_rdata", 32);
  m.out("s_axil_rresp", 2, "0: OKAY, 2: SLVERR (unmapped)");
  m.out("s_axil_rvalid", 1);
  m.in("s_axil_rready", 1);
  for (const auto& r : map.regs) {
    for (const auto& f : r.fields) {
      const std::string b = base_name(r, f);
      const std::string what = r.name + "." + f.name + ": " + f.desc;
      switch (f.access) {
        case Access::ro:
          if (!f.hw_const) m.in(b + "_i", f.width, what);
          break;
        case Access::rw: m.out(b + "_o", f.width, what); break;
        case Access::w1c:
          m.in(b + "_set_i", f.width, r.name + "." + f.name + ": set (wins over a clear)");
          m.out(b + "_o", f.width, what);
          break;
        case Access::w1s_sc:
          m.out(b + "_o", f.width, r.name + "." + f.name + ": one-cycle pulse after a write of 1");
          break;
      }
    }
  }

  // ---- Write channel.
  m.section("Write channel: AW and W are held until both are there, then the write commits");
  m.reg("aw_full_q", 1, "write address held");
  m.reg("aw_addr_q", WA, "word address");
  m.reg("w_full_q", 1, "write data held");
  m.reg("w_data_q", 32);
  m.reg("w_strb_q", 4);
  m.reg("b_valid_q", 1);
  m.reg("b_resp_q", 2);
  m.wire("aw_take", 1);
  m.wire("w_take", 1);
  m.wire("wr_en", 1, "the held write commits this cycle");
  m.wire("wr_mask", 32, "WSTRB per bit");
  m.reg("wr_hit", 1, "the held write address is mapped");
  m.assign("aw_take", "s_axil_awvalid & ~aw_full_q");
  m.assign("w_take", "s_axil_wvalid & ~w_full_q");
  m.assign("wr_en", "aw_full_q & w_full_q & ~b_valid_q");
  m.assign("wr_mask", "{" + repl(8, "w_strb_q[3]") + ", " + repl(8, "w_strb_q[2]") + ", " +
                          repl(8, "w_strb_q[1]") + ", " + repl(8, "w_strb_q[0]") + "}");
  {
    std::string labels;
    for (const auto& r : map.regs) {
      if (!labels.empty()) labels += ", ";
      labels += vhex(WA, r.offset >> 2);
    }
    m.always_comb({assign("wr_hit", "1'b0"),
                   case_("aw_addr_q", {{labels, {assign("wr_hit", "1'b1")}},
                                       {"default", {assign("wr_hit", "1'b0")}}})});
  }
  m.always_ff(
      {if_("!rst_ni",
           {assign("aw_full_q", "1'b0"), assign("w_full_q", "1'b0"), assign("b_valid_q", "1'b0"),
            assign("b_resp_q", "2'b00")},
           {if_("aw_take", {assign("aw_full_q", "1'b1")},
                {if_("wr_en", {assign("aw_full_q", "1'b0")})}),
            if_("w_take", {assign("w_full_q", "1'b1")},
                {if_("wr_en", {assign("w_full_q", "1'b0")})}),
            if_("wr_en", {assign("b_valid_q", "1'b1"),
                          assign("b_resp_q", "wr_hit ? 2'b00 : 2'b10")},
                {if_("s_axil_bready", {assign("b_valid_q", "1'b0")})})}),
       if_("aw_take", {assign("aw_addr_q", part("s_axil_awaddr", A, 2, WA))}),
       if_("w_take", {assign("w_data_q", "s_axil_wdata"), assign("w_strb_q", "s_axil_wstrb")})});
  m.assign("s_axil_awready", "~aw_full_q");
  m.assign("s_axil_wready", "~w_full_q");
  m.assign("s_axil_bvalid", "b_valid_q");
  m.assign("s_axil_bresp", "b_resp_q");

  // ---- Registers.
  std::uint32_t wbits = 0;  // bits of w_data_q / wr_mask that some field reads
  for (const auto& r : map.regs) {
    const std::string rl = lower(r.name);
    bool any_w = false;
    for (const auto& f : r.fields) any_w = any_w || writable(f.access);
    m.section(hex(r.offset, 3) + " " + r.name + ": " + r.desc);
    const std::string wr = rl + "_wr";
    if (any_w) {
      m.wire(wr, 1);
      m.assign(wr, "wr_en & (aw_addr_q == " + vhex(WA, r.offset >> 2) + ")");
    }
    Block resets, body, rw_writes;
    for (const auto* fp : regs_detail::fields_by_lsb(r)) {
      const Field& f = *fp;
      if (!writable(f.access)) continue;
      wbits |= f.mask();
      const std::string b = base_name(r, f);
      const std::string q = b + "_q";
      const std::string d = part("w_data_q", 32, f.lsb, f.width);
      const std::string msk = part("wr_mask", 32, f.lsb, f.width);
      m.reg(q, f.width);
      resets.push_back(assign(q, vhex(f.width, f.reset)));
      switch (f.access) {
        case Access::rw:
          rw_writes.push_back(assign(q, "(" + q + " & ~" + msk + ") | (" + d + " & " + msk + ")"));
          break;
        case Access::w1c:
          m.wire(b + "_clr", f.width, "software clear");
          m.assign(b + "_clr", wr + " ? (" + d + " & " + msk + ") : " + vhex(f.width, 0));
          body.push_back(assign(q, b + "_set_i | (" + q + " & ~" + b + "_clr)"));
          break;
        case Access::w1s_sc:
          body.push_back(assign(q, wr + " ? (" + d + " & " + msk + ") : " + vhex(f.width, 0)));
          break;
        case Access::ro: break;
      }
      m.assign(b + "_o", q);
    }
    if (!rw_writes.empty()) body.push_back(if_(wr, std::move(rw_writes)));
    if (any_w) m.always_ff({if_("!rst_ni", std::move(resets), std::move(body))});

    // Read value.
    std::vector<std::string> parts;
    int next = 32;  // one above the last bit placed
    const auto sorted = regs_detail::fields_by_lsb(r);
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
      const Field& f = **it;
      if (f.msb() + 1 < next) parts.push_back(vhex(next - f.msb() - 1, 0));
      const std::string b = base_name(r, f);
      switch (f.access) {
        case Access::ro: parts.push_back(f.hw_const ? vhex(f.width, f.reset) : b + "_i"); break;
        case Access::rw:
        case Access::w1c: parts.push_back(b + "_q"); break;
        case Access::w1s_sc: parts.push_back(vhex(f.width, 0)); break;
      }
      next = f.lsb;
    }
    if (next > 0) parts.push_back(vhex(next, 0));
    m.wire(rl + "_rd", 32, "read value");
    m.assign(rl + "_rd", concat(parts));
  }

  // ---- Read channel.
  m.section("Read channel: the read value is registered when AR is accepted");
  m.reg("r_valid_q", 1);
  m.reg("r_data_q", 32);
  m.reg("r_resp_q", 2);
  m.wire("ar_take", 1);
  m.wire("ar_addr", WA, "word address");
  m.reg("rd_data", 32);
  m.reg("rd_hit", 1);
  m.assign("ar_take", "s_axil_arvalid & ~r_valid_q");
  m.assign("ar_addr", part("s_axil_araddr", A, 2, WA));
  {
    std::vector<std::pair<std::string, Block>> arms;
    for (const auto& r : map.regs) {
      arms.push_back({vhex(WA, r.offset >> 2), {assign("rd_data", lower(r.name) + "_rd")}});
    }
    arms.push_back({"default", {assign("rd_hit", "1'b0")}});
    m.always_comb({assign("rd_data", vhex(32, 0)), assign("rd_hit", "1'b1"),
                   case_("ar_addr", std::move(arms))});
  }
  m.always_ff({if_("!rst_ni",
                   {assign("r_valid_q", "1'b0"), assign("r_data_q", vhex(32, 0)),
                    assign("r_resp_q", "2'b00")},
                   {if_("ar_take",
                        {assign("r_valid_q", "1'b1"), assign("r_data_q", "rd_data"),
                         assign("r_resp_q", "rd_hit ? 2'b00 : 2'b10")},
                        {if_("s_axil_rready", {assign("r_valid_q", "1'b0")})})})});
  m.assign("s_axil_arready", "~r_valid_q");
  m.assign("s_axil_rvalid", "r_valid_q");
  m.assign("s_axil_rdata", "r_data_q");
  m.assign("s_axil_rresp", "r_resp_q");

  // ---- Inputs and bits that nothing reads.
  std::vector<std::string> unused = {part("s_axil_awaddr", A, 0, 2), "s_axil_awprot",
                                     part("s_axil_araddr", A, 0, 2), "s_axil_arprot"};
  for (const auto& s : runs("w_data_q", ~wbits)) unused.push_back(s);
  for (const auto& s : runs("wr_mask", ~wbits)) unused.push_back(s);
  m.section("Deliberately unread: protection bits, byte offsets, data bits of no writable field");
  m.wire("unused_inputs", 1);
  m.assign("unused_inputs", "^" + concat(unused));
  return m;
}

}  // namespace

Module build_regblock(const RegisterMap& map, const std::string& module_name) {
  if (auto err = map.check(); !err.empty()) throw std::invalid_argument(err);
  Module m = build_regblock_unchecked(map, module_name);
  m.validate();
  return m;
}

}  // namespace normcore::gen
