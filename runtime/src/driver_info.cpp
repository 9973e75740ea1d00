// Device identification: ID, VERSION and CAPS read, checked against the manifest and decoded
// into DeviceInfo (and its text for `normcore info`).
#include <algorithm>

#include "detail/driver_regs.hpp"
#include "normcore/util/hex.hpp"

namespace normcore {

std::string DeviceInfo::describe() const {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += k + ": " + v + "\n"; };
  line("ID", hex(id, 8) + (id == 0x4E43424Eu ? " (NCBN)" : " (unexpected)"));
  line("VERSION", hex(version, 8) + " (contract " + std::to_string(contract) + ", generator " +
                      generator_version + ")");
  line("datapath", std::to_string(lanes) + " lanes, " + (in_signed ? "int" : "uint") +
                       std::to_string(in_bits) + " -> " + (out_signed ? "int" : "uint") +
                       std::to_string(out_bits));
  std::string modes;
  for (int m = 0; m < 4; ++m) {
    if ((round_modes >> m) & 1U) {
      modes += (modes.empty() ? "" : ", ") + std::string(to_string(static_cast<Rounding>(m)));
    }
  }
  line("rounding", modes);
  std::string lay;
  for (int l = 0; l < 2; ++l) {
    if ((layouts >> l) & 1U) {
      lay += (lay.empty() ? "" : ", ") + std::string(to_string(static_cast<Layout>(l)));
    }
  }
  line("layouts", lay);
  line("shift R",
       fixed_shift < 0 ? std::string("per job") : "fixed " + std::to_string(fixed_shift));
  if (c_multiple_of_lanes) line("channels", "a multiple of " + std::to_string(lanes));
  line("parameters", "up to " + std::to_string(max_channels) + " channels, s " +
                         std::to_string(scale_bits) + " bits, b " + std::to_string(offset_bits) +
                         " bits, " + std::to_string(param_entry_bytes) + " bytes per entry");
  line("lengths", "INNER " + std::to_string(inner_bits) + " bits, OUTER 32 bits");
  line("memory", std::to_string(bus_bytes * 8) + "-bit AXI4, " + std::to_string(addr_bits) +
                     "-bit addresses, bursts of " + std::to_string(max_burst) + ", " +
                     std::to_string(outstanding) + " outstanding");
  line("CAPS", hex(caps[0], 8) + " " + hex(caps[1], 8) + " " + hex(caps[2], 8) + " " +
                   hex(caps[3], 8) + " " + hex(caps[4], 8));
  return s;
}

namespace detail {

namespace {

bool has_field(const RegDesc& r, std::string_view name) {
  return std::any_of(r.fields.begin(), r.fields.end(),
                     [&](const FieldDesc& f) { return f.name == name; });
}

bool has_reg(const Manifest& m, std::string_view name) {
  for (const auto& r : m.registers) {
    if (r.name == name) return true;
  }
  return false;
}

// Reads register `name`; appends to `mismatch` if it differs from the manifest's reset value.
std::uint32_t read_checked(Device& dev, const char* name, std::string& mismatch) {
  const RegDesc& r = dev.manifest().reg(name);
  const std::uint32_t v = dev.read32(r.offset);
  if (v != r.reset) {
    std::string fields;
    for (const auto& f : r.fields) {
      if (f.get(v) != f.get(r.reset)) {
        fields += (fields.empty() ? "" : ", ") + f.name + " " + std::to_string(f.get(v)) + " vs " +
                  std::to_string(f.get(r.reset));
      }
    }
    mismatch += std::string(mismatch.empty() ? "" : "; ") + name + " reads " + hex(v, 8) +
                ", the manifest says " + hex(r.reset, 8) + " (" + fields + ")";
  }
  return v;
}

// Decodes VERSION and CAPS0..3 (already read into `in`) with the manifest's fields.
void decode(const Manifest& m, DeviceInfo& in) {
  auto word = [&](std::string_view reg) -> std::uint32_t {
    if (reg == "VERSION") return in.version;
    if (reg == "ID") return in.id;
    const auto i = static_cast<std::size_t>(reg.back() - '0');  // CAPS0..CAPS4
    return i < std::size(in.caps) ? in.caps[i] : 0;
  };
  auto f = [&](const char* reg, const char* field) {
    return static_cast<int>(m.reg(reg).field(field).get(word(reg)));
  };
  in.contract = f("VERSION", "contract");
  in.generator_version = std::to_string(f("VERSION", "major")) + "." +
                         std::to_string(f("VERSION", "minor")) + "." +
                         std::to_string(f("VERSION", "patch"));
  in.lanes = f("CAPS0", "lanes");
  in.in_bits = f("CAPS0", "in_bits");
  in.in_signed = f("CAPS0", "in_signed") != 0;
  in.out_bits = f("CAPS0", "out_bits");
  in.out_signed = f("CAPS0", "out_signed") != 0;
  in.round_modes = static_cast<unsigned>(f("CAPS0", "round_modes"));
  in.max_channels = f("CAPS1", "max_channels");
  in.bus_bytes = f("CAPS2", "bus_bytes");
  in.addr_bits = f("CAPS2", "addr_bits");
  in.outstanding = f("CAPS2", "outstanding");
  in.max_burst = 1 << f("CAPS2", "max_burst_log2");
  in.scale_bits = f("CAPS3", "scale_bits");
  // CAPS3.offset_bits was called shift_bits in manifests written before the rename.
  in.offset_bits = has_field(m.reg("CAPS3"), "offset_bits") ? f("CAPS3", "offset_bits")
                                                            : f("CAPS3", "shift_bits");
  in.inner_bits = f("CAPS3", "inner_bits");
  in.param_entry_bytes = f("CAPS3", "param_entry_bytes");
  if (has_reg(m, "CAPS4")) {  // manifests before specialisation have none
    in.layouts = static_cast<unsigned>(f("CAPS4", "layouts"));
    in.c_multiple_of_lanes = f("CAPS4", "c_multiple_of_lanes") != 0;
    in.fixed_shift = f("CAPS4", "shift_fixed") != 0 ? f("CAPS4", "fixed_shift") : -1;
  }
}

}  // namespace

DeviceInfo read_info(Device& dev) {
  const Manifest& m = dev.manifest();
  DeviceInfo in;
  std::string mismatch;
  in.id = read_checked(dev, "ID", mismatch);
  in.version = read_checked(dev, "VERSION", mismatch);
  const char* caps[] = {"CAPS0", "CAPS1", "CAPS2", "CAPS3", "CAPS4"};
  for (int i = 0; i < 5; ++i) {
    if (i < 4 || has_reg(m, caps[i])) in.caps[i] = read_checked(dev, caps[i], mismatch);
  }
  if (!mismatch.empty()) {
    throw DeviceError(dev.name() + ": the device does not match its manifest " + m.source + ": " +
                      mismatch);
  }
  decode(m, in);
  if (in.contract != kContractVersion) {
    throw DeviceError(dev.name() + ": device implements arithmetic contract " +
                      std::to_string(in.contract) + ", this runtime " +
                      std::to_string(kContractVersion));
  }
  return in;
}

}  // namespace detail

}  // namespace normcore
