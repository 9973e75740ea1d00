// The accelerator manifest (manifest.json, written by `normcore gen --accel`) as the runtime sees
// it: the hardware configuration, the register map (the generator's one register description) and
// the error codes. The driver and every backend take register offsets and field positions from
// here, never from hand-typed constants, so one runtime drives every generated configuration.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/config.hpp"
#include "normcore/contract.hpp"

namespace normcore {

struct FieldDesc {
  std::string name;
  int lsb = 0;
  int width = 1;
  std::string access;  // ro | rw | w1c | w1s_sc
  std::uint64_t reset = 0;
  bool hw_const = false;  // ro constant built into the block (ID, VERSION, CAPS*)
  [[nodiscard]] std::uint32_t mask() const {
    return width >= 32 ? 0xFFFFFFFFu : (((1u << width) - 1u) << lsb);
  }
  [[nodiscard]] std::uint32_t get(std::uint32_t reg) const { return (reg & mask()) >> lsb; }
  [[nodiscard]] std::uint32_t put(std::uint32_t reg, std::uint64_t v) const {
    return (reg & ~mask()) | ((static_cast<std::uint32_t>(v) << lsb) & mask());
  }
};

struct RegDesc {
  std::string name;
  std::uint32_t offset = 0;
  std::uint32_t reset = 0;
  std::vector<FieldDesc> fields;
  // Throws Error naming the register and the field.
  [[nodiscard]] const FieldDesc& field(std::string_view name) const;
};

// The generator configuration recorded in the manifest ("config"). `accel` is the whole
// configuration as the schema reads it (specialisation included: accel.core.check_job); the
// flat fields below are copies of it kept for existing callers.
struct DeviceConfig {
  AccelConfig accel;
  std::string name;
  int lanes = 8;
  int in_bits = 8;
  bool in_signed = true;
  int out_bits = 8;
  bool out_signed = true;
  int scale_bits = 16;
  int offset_bits = 32;
  int max_channels = 1024;
  int inner_bits = 24;
  int pipeline = 3;
  int bus_bits = 64;
  int addr_bits = 32;
  int id_bits = 4;
  int max_burst = 32;
  int outstanding = 8;

  // The widths, signedness and (contract v2) element types and flush flag.
  [[nodiscard]] ArithSpec arith() const {
    ArithSpec a = accel.core.arith;  // the types and the flush flag
    a.xw = in_bits, a.x_signed = in_signed, a.sw = scale_bits, a.bw = offset_bits;
    a.yw = out_bits, a.y_signed = out_signed;
    return a;
  }
  [[nodiscard]] int bus_bytes() const { return bus_bits / 8; }
  // {b, s} per channel, s in the low bits: 8 bytes, or 16 when SW + BW > 64.
  [[nodiscard]] int param_entry_bytes() const { return scale_bits + offset_bits <= 64 ? 8 : 16; }
  [[nodiscard]] std::uint64_t max_inner() const { return (std::uint64_t{1} << inner_bits) - 1; }
  [[nodiscard]] std::uint64_t max_outer() const { return 0xFFFFFFFFull; }
};

struct Manifest {
  std::filesystem::path path;     // where it was read from (empty if parsed from text)
  std::string source;             // prefixes error messages (the path, or a given name)
  std::string top;                // top module name
  std::string generator_version;  // "0.1.0"
  int contract_version = 0;
  DeviceConfig config;
  std::string config_json;         // the "config" object, dumped canonically (sorted keys)
  int reg_addr_bits = 12;          // AXI4-Lite address bits: the register window is 2^this bytes
  std::vector<RegDesc> registers;  // ascending offsets
  std::map<std::string, int> error_codes;  // "read" -> 7, ...

  [[nodiscard]] std::uint32_t window_bytes() const { return 1u << reg_addr_bits; }
  // Throws Error("<source>: no register NAME") if absent.
  [[nodiscard]] const RegDesc& reg(std::string_view name) const;
  [[nodiscard]] const RegDesc* find_reg(std::uint32_t offset) const;  // nullptr if unmapped
  [[nodiscard]] std::uint32_t offset(std::string_view name) const { return reg(name).offset; }
  [[nodiscard]] const FieldDesc& field(std::string_view reg_name, std::string_view field) const {
    return reg(reg_name).field(field);
  }
  // Name of an ERR_CODE value ("read"), or "code N" if unknown.
  [[nodiscard]] std::string error_name(int code) const;
};

// Parses and checks a manifest of kind "accelerator": required keys, register offsets aligned,
// unique, inside the window, fields inside 32 bits, the registers the driver needs present.
// Errors (normcore::Error) name the source and the key.
Manifest parse_manifest(std::string_view text, const std::string& source);
Manifest load_manifest(const std::filesystem::path& path);

}  // namespace normcore
