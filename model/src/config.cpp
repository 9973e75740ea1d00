#include "normcore/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "normcore/float_contract.hpp"

namespace normcore {

int bits_for(long long v) {
  int b = 1;
  while (b < 63 && (v >> b) != 0) ++b;
  return b;
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, r.ptr};
}

int clog2(long long v) {
  int b = 0;
  while ((1LL << b) < v) ++b;
  return b;
}

namespace {

using K = ConfigField::Kind;
using G = ConfigField::Group;

constexpr ConfigField int_field(const char* key, const char* option, G group, long long lo,
                                long long hi, bool pow2, const char* help,
                                int* (*ref)(AccelConfig&)) {
  return ConfigField{key, option, K::integer, group, lo, hi, pow2, "", help, ref, nullptr, nullptr};
}

// A number field: any finite value in lo..hi, fractions included.
constexpr ConfigField num_field(const char* key, const char* option, G group, long long lo,
                                long long hi, const char* help, double* (*ref)(AccelConfig&)) {
  ConfigField f{key, option, K::number, group, lo, hi, false, "", help};
  f.num_ref = ref;
  return f;
}

// A specialisation field: optional in manifests (older ones read as "not fixed").
constexpr ConfigField spec_field(ConfigField f) {
  f.optional_in_manifest = true;
  f.may_be_empty = f.kind == K::string;
  return f;
}

// A field added after manifests were first written: optional in them (read as the default).
constexpr ConfigField late_field(ConfigField f) {
  f.optional_in_manifest = true;
  return f;
}

// A renamed field: `key` / `option` are the new spelling, the old one is a deprecated alias.
constexpr ConfigField renamed(ConfigField f, const char* old_key, const char* old_option) {
  f.old_key = old_key;
  f.old_option = old_option;
  return f;
}

// The descriptor ring flag: optional in manifests, written only when set.
constexpr ConfigField ring_field() {
  ConfigField f{"ring",
                "--ring",
                K::boolean,
                G::accel,
                0,
                0,
                false,
                "",
                "Accelerator: the descriptor ring (RING_* registers and the descriptor fetcher "
                "in <n>_ctrl)",
                nullptr,
                [](AccelConfig& a) { return &a.ring; },
                nullptr};
  f.optional_in_manifest = true;
  f.omit_when_false = true;
  return f;
}

// The one table. Ranges are the generator's: the RTL is only built (and tested) inside them.
const ConfigField kSchema[] = {
    {"name", "--name", K::string, G::core, 0, 0, false, "",
     "Module name prefix (a Verilog identifier)", nullptr, nullptr,
     [](AccelConfig& a) { return &a.core.name; }},
    int_field("lanes", "--lanes", G::core, 1, 64, false, "Elements per beat",
              [](AccelConfig& a) { return &a.core.lanes; }),
    int_field("in_bits", "--in-bits", G::core, 2, 32, false, "Input element bits XW",
              [](AccelConfig& a) { return &a.core.arith.xw; }),
    {"in_signed", "--in-unsigned", K::boolean, G::core, 0, 0, false, "",
     "Input elements are unsigned (JSON: in_signed false)", nullptr,
     [](AccelConfig& a) { return &a.core.arith.x_signed; }, nullptr},
    int_field("out_bits", "--out-bits", G::core, 2, 32, false, "Output element bits YW",
              [](AccelConfig& a) { return &a.core.arith.yw; }),
    {"out_signed", "--out-unsigned", K::boolean, G::core, 0, 0, false, "",
     "Output elements are unsigned (JSON: out_signed false)", nullptr,
     [](AccelConfig& a) { return &a.core.arith.y_signed; }, nullptr},
    int_field("scale_bits", "--scale-bits", G::core, 2, 32, false, "Signed scale bits SW",
              [](AccelConfig& a) { return &a.core.arith.sw; }),
    renamed(int_field("offset_bits", "--offset-bits", G::core, 2, 62, false,
                      "Signed offset b[c] (bias) bits BW",
                      [](AccelConfig& a) { return &a.core.arith.bw; }),
            "shift_bits", "--shift-bits"),
    int_field("max_channels", "--max-channels", G::core, 1, 65536, false, "Parameter table size",
              [](AccelConfig& a) { return &a.core.max_channels; }),
    int_field("inner_bits", "--inner-bits", G::core, 1, 32, false,
              "Width of the HW (inner size) input",
              [](AccelConfig& a) { return &a.core.inner_bits; }),
    int_field("pipeline", "--pipeline", G::core, 3, 11, false,
              "Register stages before the output buffer (default: --target's, generic 3, ice40 "
              "10, ecp5 11, xilinx 4, asic 5)",
              [](AccelConfig& a) { return &a.core.pipeline; }),
    {"target", "--target", K::string, G::core, 0, 0, false, "generic|ice40|ecp5|xilinx|asic",
     "Mapping target", nullptr, nullptr, [](AccelConfig& a) { return &a.core.target; }},
    late_field(num_field("clock_mhz", "--clock-mhz", G::core, 1, 1000,
                         "Clock frequency in MHz (fractions allowed: 62.5) of the SDC/XDC clock "
                         "constraints and the sim:/tlm: traces (the RTL does not depend on it)",
                         [](AccelConfig& a) { return &a.core.clock_mhz; })),
    spec_field(int_field("fixed_shift", "--fixed-shift", G::core, -1, 64, false,
                         "Specialise: every job's R is this (at most the accumulator width); "
                         "-1 = R set per job",
                         [](AccelConfig& a) { return &a.core.fixed_shift; })),
    spec_field({"fixed_rounding", "--fixed-rounding", K::string, G::core, 0, 0, false,
                "floor|half_up|half_even|half_away",
                "Specialise: the one rounding mode every job uses (empty = set per job)", nullptr,
                nullptr, [](AccelConfig& a) { return &a.core.fixed_rounding; }}),
    spec_field({"fixed_layout", "--fixed-layout", K::string, G::core, 0, 0, false, "nchw|nhwc",
                "Specialise: the one layout every job uses (empty = set per job)", nullptr, nullptr,
                [](AccelConfig& a) { return &a.core.fixed_layout; }}),
    spec_field({"lanes_divide_channels", "--lanes-divide-channels", K::boolean, G::core, 0, 0,
                false, "", "Specialise: every job's channel count C is a multiple of --lanes",
                nullptr, [](AccelConfig& a) { return &a.core.lanes_divide_channels; }, nullptr}),
    late_field({"table", "--table", K::string, G::core, 0, 0, false, "banked|copies",
                "Parameter table: banked (one C-word table in power-of-two banks, a lane "
                "crossbar) or copies (one C-word copy per lane, no crossbar: L times the RAM); "
                "--target picks it when not given (ecp5: copies; others: banked)",
                nullptr, nullptr, [](AccelConfig& a) { return &a.core.table; }}),
    late_field({"in_type", "--in-type", K::string, G::core, 0, 0, false, "int|fp16|bf16",
                "Input element type: int (in_bits / in_signed) or a float (contract v2: fp32 s "
                "and b; in_bits 16)",
                nullptr, nullptr, nullptr, false, false, nullptr, nullptr, nullptr,
                [](AccelConfig& a) { return &a.core.arith.x_type; }}),
    late_field({"out_type", "--out-type", K::string, G::core, 0, 0, false, "int|fp16|bf16|fp32",
                "Output element type: int (out_bits / out_signed; with a float input: round "
                "with the job's mode and clamp) or a float (out_bits 16 / 32)",
                nullptr, nullptr, nullptr, false, false, nullptr, nullptr, nullptr,
                [](AccelConfig& a) { return &a.core.arith.y_type; }}),
    late_field({"flush_subnormals", "--flush-subnormals", K::boolean, G::core, 0, 0, false, "",
                "Float datapath: subnormal inputs and results become signed zeros", nullptr,
                [](AccelConfig& a) { return &a.core.arith.flush_subnormals; }, nullptr}),
    int_field("bus_bits", "--bus-bits", G::accel, 32, 512, true, "Accelerator: AXI4 data width",
              [](AccelConfig& a) { return &a.bus_bits; }),
    int_field("addr_bits", "--addr-bits", G::accel, 32, 64, false,
              "Accelerator: AXI4 address width", [](AccelConfig& a) { return &a.addr_bits; }),
    int_field("id_bits", "--id-bits", G::accel, 1, 8, false, "Accelerator: AXI4 ID width",
              [](AccelConfig& a) { return &a.id_bits; }),
    int_field("max_burst", "--max-burst", G::accel, 1, 256, true, "Accelerator: beats per burst",
              [](AccelConfig& a) { return &a.max_burst; }),
    int_field("outstanding", "--outstanding", G::accel, 1, 16, false,
              "Accelerator: read bursts in flight", [](AccelConfig& a) { return &a.outstanding; }),
    ring_field(),
};

bool is_pow2(long long v) {
  return v > 0 && (v & (v - 1)) == 0;
}

std::string field_name(const char* key, FieldNames names) {
  return config_field(key).name(names);
}

// The prefix of every module, register block, C++ namespace and macro the generator derives
// (<n>_core, <n>_regs, ...): a letter first, then letters, digits and single underscores, not
// ending in one (a leading '_' or a "__" is reserved in C and C++; RDL names start with a letter).
std::string check_name(const std::string& name, FieldNames names) {
  const auto alpha = [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)) != 0; };
  const auto alnum = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  std::string why;
  if (name.empty()) {
    why = "is empty";
  } else if (!alpha(name[0])) {
    why = "must start with a letter";
  } else if (!std::all_of(name.begin(), name.end(),
                          [&](char ch) { return alnum(ch) || ch == '_'; })) {
    why = "may hold only letters, digits and '_'";
  } else if (name.find("__") != std::string::npos || name.back() == '_') {
    why =
        "may not hold \"__\" or end in '_' (the derived names <name>_core, <name>_regs, ... "
        "would hold \"__\")";
  } else if (name.size() > 64) {
    why = "is longer than 64 characters";
  }
  return why.empty() ? std::string{}
                     : field_name("name", names) + ": '" + name + "' " + why +
                           " (a Verilog, C and SystemRDL identifier)";
}

// Checks the fields of one group that have a range or choices, in table order.
std::string check_group(AccelConfig c, G group, FieldNames names) {  // a copy: non-const refs
  for (const auto& f : kSchema) {
    if (f.group != group) continue;
    std::string msg;
    if (f.kind == K::integer) msg = f.check(*f.int_ref(c), names);
    if (f.type_ref != nullptr) {
      msg = f.check(std::string(to_string(*f.type_ref(c))), names);
    } else if (f.kind == K::string && *f.choices != 0) {
      msg = f.check(*f.str_ref(c), names);
    }
    if (f.kind == K::number) msg = f.check_number(*f.num_ref(c), names);
    if (!msg.empty()) return msg;
  }
  return {};
}

// The key j holds field f under: its own, or its deprecated old key (with a warning on stderr;
// both at once is an error).
std::string resolve_alias(const nlohmann::json& j, const ConfigField& f) {
  if (f.old_key == nullptr || !j.contains(f.old_key)) return f.key;
  if (j.contains(f.key)) {
    throw std::invalid_argument("config: '" + std::string(f.old_key) +
                                "' is the deprecated name of '" + f.key + "': give only '" + f.key +
                                "'");
  }
  std::cerr << "normcore: warning: config: '" << f.old_key << "' is deprecated, use '" << f.key
            << "'\n";
  return f.old_key;
}

// Reads the fields of the schema from j (core fields, plus the accelerator's when `accel`).
void read_fields(const nlohmann::json& j, AccelConfig& a, bool accel, bool require_all) {
  if (!j.is_object()) throw std::invalid_argument("config must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const auto& f : kSchema) known = known || key == f.key || (f.old_key && key == f.old_key);
    if (!known) throw std::invalid_argument("config: unknown key '" + key + "'");
  }
  for (const auto& f : kSchema) {
    if (f.group == G::accel && !accel) continue;
    const std::string key = resolve_alias(j, f);
    if (!j.contains(key)) {
      if (require_all && key != "target" && !f.optional_in_manifest) {
        throw std::invalid_argument("config: '" + key + "' is missing");
      }
      continue;
    }
    const auto& v = j.at(key);
    if (f.kind == K::integer) {
      if (!v.is_number_integer())
        throw std::invalid_argument("config: '" + key + "' must be an integer");
      const auto n = v.get<long long>();
      if (n < -(1LL << 31) || n > (1LL << 31) - 1) {
        throw std::invalid_argument(f.check(n, FieldNames::json));
      }
      *f.int_ref(a) = static_cast<int>(n);
    } else if (f.kind == K::number) {
      if (!v.is_number()) throw std::invalid_argument("config: '" + key + "' must be a number");
      *f.num_ref(a) = v.get<double>();
    } else if (f.kind == K::boolean) {
      if (!v.is_boolean())
        throw std::invalid_argument("config: '" + key + "' must be true or false");
      *f.bool_ref(a) = v.get<bool>();
    } else {
      if (!v.is_string()) throw std::invalid_argument("config: '" + key + "' must be a string");
      if (f.type_ref != nullptr) {
        if (const auto msg = f.check(v.get<std::string>(), FieldNames::json); !msg.empty())
          throw std::invalid_argument("config: " + msg);
        *f.type_ref(a) = parse_num_type(v.get<std::string>());
      } else {
        *f.str_ref(a) = v.get<std::string>();
      }
    }
  }
}

// A whole number as a JSON integer (100, not 100.0: manifests of whole MHz stay as they were).
nlohmann::json number_json(double v) {
  const double r = std::nearbyint(v);
  if (r == v && std::fabs(v) < 9.0e15) return static_cast<long long>(r);
  return v;
}

void write_fields(AccelConfig a, nlohmann::json& j, G group) {  // a copy, as in check_group
  for (const auto& f : kSchema) {
    if (f.group != group) continue;
    if (f.kind == K::integer) j[f.key] = *f.int_ref(a);
    if (f.kind == K::boolean && (*f.bool_ref(a) || !f.omit_when_false)) j[f.key] = *f.bool_ref(a);
    if (f.kind == K::string && f.type_ref != nullptr) j[f.key] = to_string(*f.type_ref(a));
    if (f.kind == K::string && f.type_ref == nullptr) j[f.key] = *f.str_ref(a);
    if (f.kind == K::number) j[f.key] = number_json(*f.num_ref(a));
  }
}

}  // namespace

std::string ConfigField::help_text() const {
  std::string s = help;
  if (kind == K::number) {
    s += " (" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
  } else if (kind == K::integer) {
    s += " (";
    if (pow2) s += "power of two, ";
    s += std::to_string(lo) + ".." + std::to_string(hi) + ")";
  } else if (*choices != 0) {
    s += " (" + std::string(choices) + ")";
  }
  return s;
}

std::string ConfigField::name(FieldNames names) const {
  return names == FieldNames::cli ? std::string(option) : "'" + std::string(key) + "'";
}

std::string ConfigField::check(long long v, FieldNames names) const {
  if (kind != K::integer) return {};
  if (v < lo || v > hi) {
    return name(names) + ": " + std::to_string(v) + " is out of range " + std::to_string(lo) +
           ".." + std::to_string(hi);
  }
  if (pow2 && !is_pow2(v)) {
    std::vector<long long> allowed;
    for (long long p = 1; p <= hi; p *= 2) {
      if (p >= lo) allowed.push_back(p);
    }
    std::string list;
    for (std::size_t i = 0; i < allowed.size() && allowed.size() <= 6; ++i) {
      list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::to_string(allowed[i]);
    }
    return name(names) + ": " + std::to_string(v) + " must be " +
           (list.empty() ? "a power of two in " + std::to_string(lo) + ".." + std::to_string(hi)
                         : list);
  }
  return {};
}

std::string ConfigField::check_number(double v, FieldNames names) const {
  if (kind != K::number) return {};
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi))) {  // NaN fails too
    return name(names) + ": " + format_number(v) + " is out of range " + std::to_string(lo) + ".." +
           std::to_string(hi) + " (a number: fractions allowed)";
  }
  return {};
}

std::string ConfigField::check(const std::string& v, FieldNames names) const {
  if (kind != K::string || *choices == 0 || (may_be_empty && v.empty())) return {};
  std::vector<std::string> allowed;
  std::string_view rest = choices;
  for (std::size_t bar; (bar = rest.find('|')) != std::string_view::npos;
       rest.remove_prefix(bar + 1))
    allowed.emplace_back(rest.substr(0, bar));
  allowed.emplace_back(rest);
  for (const auto& a : allowed) {
    if (v == a) return {};
  }
  std::string list = may_be_empty ? "empty, " : "";
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  }
  return name(names) + ": must be " + list + " (got '" + v + "')";
}

std::span<const ConfigField> config_schema() {
  return kSchema;
}

const ConfigField& config_field(std::string_view key) {
  for (const auto& f : kSchema) {
    if (key == f.key) return f;
  }
  throw std::logic_error("no config field '" + std::string(key) + "'");
}

int CoreConfig::default_pipeline(const std::string& target) {
  if (target == "generic") return 3;
  if (target == "ice40") return 10;
  if (target == "ecp5") return 11;
  if (target == "xilinx") return 4;
  if (target == "asic") return 5;
  return 0;
}

std::uint64_t CoreConfig::clock_period_ps() const {
  const double mhz = clock_mhz > 0 && std::isfinite(clock_mhz) ? clock_mhz : 100;
  return std::max<std::uint64_t>(2, static_cast<std::uint64_t>(std::llround(1e6 / mhz)));
}

std::string CoreConfig::default_table(const std::string& target) {
  return target == "ecp5" ? "copies" : "banked";
}

void CoreConfig::apply_float_widths() {
  normcore::apply_float_widths(arith);
}

std::string CoreConfig::check(FieldNames names) const {
  if (auto msg = check_name(name, names); !msg.empty()) return msg;
  AccelConfig a;
  a.core = *this;
  if (auto msg = check_group(a, G::core, names); !msg.empty()) return msg;
  if (arith.is_float()) {  // contract v2: the widths follow the types
    if (auto msg = arith.check(); !msg.empty()) {
      return field_name("in_type", names) + "/" + field_name("out_type", names) + ": " + msg;
    }
    return check_specialisation(names);
  }
  if (arith.flush_subnormals) {
    return field_name("flush_subnormals", names) + ": needs a float " +
           field_name("in_type", names) + " or " + field_name("out_type", names);
  }
  if (acc_bits() > 64) {
    return field_name("in_bits", names) + "/" + field_name("scale_bits", names) + "/" +
           field_name("offset_bits", names) +
           ": accumulator max(in+scale, offset)+1 = " + std::to_string(acc_bits()) +
           " bits exceeds 64";
  }
  if (arith.yw > acc_bits()) {
    return field_name("out_bits", names) + ": " + std::to_string(arith.yw) +
           " is wider than the accumulator (" + std::to_string(acc_bits()) + " bits)";
  }
  return check_specialisation(names);
}

std::string CoreConfig::check_specialisation(FieldNames names) const {
  if (arith.is_float() && fixed_shift > 0) {
    return field_name("fixed_shift", names) + ": " + std::to_string(fixed_shift) +
           " must be -1 or 0 for a float datapath (R is 0)";
  }
  if (fixed_shift > acc_bits()) {
    return field_name("fixed_shift", names) + ": " + std::to_string(fixed_shift) +
           " exceeds the accumulator width (" + std::to_string(acc_bits()) + " bits)";
  }
  if (lanes_divide_channels && max_channels < lanes) {
    return field_name("lanes_divide_channels", names) + ": " + field_name("max_channels", names) +
           " " + std::to_string(max_channels) + " is below " + field_name("lanes", names) + " " +
           std::to_string(lanes) + ", so no channel count is a multiple of the lanes";
  }
  return {};
}

std::string CoreConfig::check_job(int shift, Rounding rounding, Layout layout,
                                  long long channels) const {
  if (has_fixed_shift() && shift != fixed_shift) {
    return "R: " + std::to_string(shift) + " differs from this core's fixed shift " +
           std::to_string(fixed_shift) + " (fixed_shift)";
  }
  if (has_fixed_rounding() && to_string(rounding) != fixed_rounding) {
    return "rounding: " + std::string(to_string(rounding)) +
           " differs from this core's fixed rounding " + fixed_rounding + " (fixed_rounding)";
  }
  if (has_fixed_layout() && to_string(layout) != fixed_layout) {
    return "layout: " + std::string(to_string(layout)) + " differs from this core's fixed layout " +
           fixed_layout + " (fixed_layout)";
  }
  if (lanes_divide_channels && channels % lanes != 0) {
    return "channels: " + std::to_string(channels) + " is not a multiple of this core's " +
           std::to_string(lanes) + " lanes (lanes_divide_channels)";
  }
  return {};
}

nlohmann::json CoreConfig::to_json() const {
  AccelConfig a;
  a.core = *this;
  nlohmann::json j = nlohmann::json::object();
  write_fields(a, j, G::core);
  return j;
}

CoreConfig CoreConfig::from_json(const nlohmann::json& j) {
  AccelConfig a;
  read_fields(j, a, false, false);
  return a.core;
}

std::string AccelConfig::check(FieldNames names) const {
  if (auto err = core.check(names); !err.empty()) return err;
  if (auto msg = check_group(*this, G::accel, names); !msg.empty()) return msg;
  if (max_burst * bus_bytes() > 4096) {
    return field_name("max_burst", names) + ": " + std::to_string(max_burst) + " beats of " +
           std::to_string(bus_bytes()) + " bytes exceed 4 KiB";
  }
  return {};
}

nlohmann::json AccelConfig::to_json() const {
  nlohmann::json j = core.to_json();
  write_fields(*this, j, G::accel);
  return j;
}

AccelConfig AccelConfig::from_json(const nlohmann::json& j, bool require_all) {
  AccelConfig a;
  read_fields(j, a, true, require_all);
  return a;
}

}  // namespace normcore
