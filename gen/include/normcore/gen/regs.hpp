// The register description of the accelerator: one data model from which the generator produces
// the AXI4-Lite register block (RTL), a C++ header, a Markdown reference, SystemRDL and JSON.
// Everything about the registers (offsets, fields, widths, access, reset values) lives in
// accel_register_map(); every output is derived from the RegisterMap it returns.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen {

// Software access of a field (the hardware side follows from it, see the regblock ports below).
enum class Access : std::uint8_t {
  ro,      // read-only: a hardware input (<reg>_<field>_i), or a built-in constant (hw_const)
  rw,      // read-write storage, value on <reg>_<field>_o
  w1c,     // sticky status: hw sets it (<reg>_<field>_set_i, wins over a clear), sw writes 1 to
           // clear, value on <reg>_<field>_o
  w1s_sc,  // write 1 -> one-cycle pulse on <reg>_<field>_o the cycle after the write; reads 0
};

// "ro", "rw", "w1c", "w1s_sc".
std::string_view to_string(Access a);

// A named value of a field (ERR_CODE.code's error codes; RegisterMap::values): the Markdown lists
// them in a table after the field's register.
struct FieldValue {
  std::uint64_t value = 0;
  std::string name;  // identifier
  std::string desc;
};

struct Field {
  std::string name;  // lower case identifier, unique in its register
  int lsb = 0;       // bit position, 0..31
  int width = 1;     // bits, lsb + width <= 32
  Access access = Access::rw;
  std::uint64_t reset = 0;  // value after reset (fits `width`); for a hw_const field the constant
  std::string desc;
  bool hw_const = false;  // RO constant built into the block (ID, VERSION, CAPS*): no port

  [[nodiscard]] int msb() const { return lsb + width - 1; }
  // The field's bits in place in the 32-bit register.
  [[nodiscard]] std::uint32_t mask() const;
};

struct Register {
  std::string name;          // upper case identifier, unique in the map
  std::uint32_t offset = 0;  // byte offset, a multiple of 4
  std::string desc;
  std::vector<Field> fields;  // any order; bits covered by no field are reserved (read 0)

  // Union of the field masks; value read right after reset (RO inputs assumed 0).
  [[nodiscard]] std::uint32_t mask() const;
  [[nodiscard]] std::uint32_t reset_value() const;
  // Bits that a software write can change (rw fields only).
  [[nodiscard]] std::uint32_t rw_mask() const;
  // nullptr if there is no such field.
  [[nodiscard]] const Field* field(std::string_view fname) const;
};

struct RegisterMap {
  std::string block;           // identifier: C++ namespace, SystemRDL addrmap name
  std::string desc;            // one line describing the block and its configuration
  int data_bits = 32;          // only 32 is supported
  int addr_bits = 12;          // AXI4-Lite address width; the map occupies 2^addr_bits bytes
  std::vector<Register> regs;  // in offset order
  // Sections the Markdown appends after the registers (title, Markdown text): what the map
  // refers to but does not hold, like the parameter table's layout in memory.
  std::vector<std::pair<std::string, std::string>> notes;
  // Named values of fields, by "REG.field" (documentation only).
  std::vector<std::pair<std::string, std::vector<FieldValue>>> values;

  // Empty if the map is consistent, else a message naming the register and field: alignment,
  // offsets inside 2^addr_bits, duplicate offsets or names, fields inside bits 0..31 without
  // overlaps, reset values that fit, access rules (hw_const only for ro, w1s_sc resets to 0),
  // identifiers, and names that collide once combined in the outputs.
  [[nodiscard]] std::string check() const;
  // nullptr if there is no such register.
  [[nodiscard]] const Register* reg(std::string_view rname) const;
};

// THE register description of the accelerator for a configuration (cfg must pass check()).
RegisterMap accel_register_map(const AccelConfig& cfg);

// The magic number in ID.magic: "NCBN" in ASCII.
inline constexpr std::uint32_t kRegsMagic = 0x4E43424E;

// ------------------------------------------------------------------------------------------------
// Outputs. Each throws std::invalid_argument if map.check() fails.

// The AXI4-Lite slave register block (clk_i, rst_ni synchronous active low, s_axil_* ports, and
// per field: rw -> <r>_<f>_o; ro -> <r>_<f>_i (no port for hw_const); w1c -> <r>_<f>_set_i and
// <r>_<f>_o; w1s_sc -> <r>_<f>_o pulse), <r> and <f> in lower case.
Module build_regblock(const RegisterMap& map, const std::string& module_name);
// The register block as a Verilog file (with a generated-file header).
std::string emit_regblock(const RegisterMap& map, const std::string& module_name);

// A standalone C++17 header: namespace <block>, offsets, per-field _SHIFT/_WIDTH/_MASK/_RESET,
// and a constexpr table of all registers and fields.
std::string emit_c_header(const RegisterMap& map);
// A plain C header (C99 and later, valid C++ too): <BLOCK>_<REG>_OFFSET/_RESET/_MASK, per field
// _SHIFT/_WIDTH/_MASK/_RESET/_ACCESS and _GET(reg)/_SET(reg, v) macros, X-macros over the map
// (<BLOCK>_FOREACH_REG, <BLOCK>_FOREACH_FIELD), static inline field and MMIO helpers.
std::string emit_plain_c_header(const RegisterMap& map);
// Markdown reference: a summary table and one table of fields per register.
std::string emit_markdown(const RegisterMap& map);
// SystemRDL 2.0: one addrmap with a reg/field per register/field.
std::string emit_systemrdl(const RegisterMap& map);
// JSON for the manifest: block, widths, registers with their fields.
nlohmann::json regs_json(const RegisterMap& map);

}  // namespace normcore::gen
