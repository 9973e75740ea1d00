#include "normcore/manifest.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "normcore/config.hpp"
#include "normcore/npz.hpp"
#include "normcore/util/hex.hpp"

namespace normcore {

using nlohmann::json;

namespace {

const json& need(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(where + ": missing key '" + key + "'");
  return j.at(key);
}

template <typename T>
T num(const json& j, const char* key, const std::string& where, T lo, T hi) {
  const json& v = need(j, key, where);
  if (!v.is_number_integer()) throw Error(where + ": '" + key + "' must be an integer");
  const auto x = v.get<long long>();
  if (x < static_cast<long long>(lo) || x > static_cast<long long>(hi)) {
    throw Error(where + ": '" + key + "' = " + std::to_string(x) + " is outside " +
                std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<T>(x);
}

std::string str(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_string()) throw Error(where + ": '" + key + "' must be a string");
  return v.get<std::string>();
}

// One field of a register (its bits not yet checked against the others).
FieldDesc parse_field(const json& fj, const std::string& where) {
  FieldDesc f;
  f.name = str(fj, "name", where);
  const std::string fw = where + "." + f.name;
  f.lsb = num<int>(fj, "lsb", fw, 0, 31);
  f.width = num<int>(fj, "width", fw, 1, 32);
  if (f.lsb + f.width > 32) throw Error(fw + ": bits beyond 31");
  f.access = str(fj, "access", fw);
  if (f.access != "ro" && f.access != "rw" && f.access != "w1c" && f.access != "w1s_sc") {
    throw Error(fw + ": unknown access '" + f.access + "'");
  }
  f.reset = num<std::uint64_t>(fj, "reset", fw, 0, 0xFFFFFFFFull);
  f.hw_const =
      fj.contains("hw_const") && fj.at("hw_const").is_boolean() && fj.at("hw_const").get<bool>();
  return f;
}

// The register map: every register with its fields, sorted by offset.
void parse_registers(const json& j, const std::string& source, Manifest& m) {
  const std::string rw = source + ": registers";
  const json& r = need(j, "registers", source);
  m.reg_addr_bits = num<int>(r, "addr_bits", rw, 4, 20);
  const json& regs = need(r, "registers", rw);
  if (!regs.is_array()) throw Error(rw + ": 'registers' must be an array");
  for (const json& rj : regs) {
    RegDesc rd;
    rd.name = str(rj, "name", rw);
    const std::string where = rw + ": " + rd.name;
    rd.offset = num<std::uint32_t>(rj, "offset", where, 0, m.window_bytes() - 4);
    if (rd.offset % 4 != 0) {
      throw Error(where + ": offset " + hex(rd.offset, 3) + " is not 4-aligned");
    }
    rd.reset = num<std::uint32_t>(rj, "reset", where, 0, 0xFFFFFFFFu);
    const json& fs = need(rj, "fields", where);
    if (!fs.is_array()) throw Error(where + ": 'fields' must be an array");
    std::uint32_t used = 0;
    for (const json& fj : fs) {
      FieldDesc f = parse_field(fj, where);
      const std::string fw = where + "." + f.name;
      if ((used & f.mask()) != 0) throw Error(fw + ": overlaps another field");
      used |= f.mask();
      rd.fields.push_back(std::move(f));
    }
    for (const auto& o : m.registers) {
      if (o.offset == rd.offset) {
        throw Error(where + ": offset " + hex(rd.offset, 3) + " also used by " + o.name);
      }
    }
    m.registers.push_back(std::move(rd));
  }
  std::sort(m.registers.begin(), m.registers.end(),
            [](const RegDesc& a, const RegDesc& b) { return a.offset < b.offset; });
  // The registers and fields the driver programs must exist.
  static const std::pair<const char*, const char*> needed[] = {
      {"ID", "magic"},           {"VERSION", "contract"},  {"CAPS0", "lanes"},
      {"CAPS1", "max_channels"}, {"CAPS2", "bus_bytes"},   {"CAPS3", "inner_bits"},
      {"CTRL", "start"},         {"CTRL", "soft_reset"},   {"CTRL", "irq_en_done"},
      {"CTRL", "irq_en_error"},  {"STATUS", "busy"},       {"STATUS", "done"},
      {"STATUS", "error"},       {"IRQ_STATUS", "done"},   {"IRQ_STATUS", "error"},
      {"ERR_CODE", "code"},      {"ERR_ADDR_LO", "value"}, {"ERR_ADDR_HI", "value"},
      {"CHANNELS", "value"},     {"INNER", "value"},       {"OUTER", "value"},
      {"MODE", "layout"},        {"MODE", "rounding"},     {"MODE", "shift"},
      {"CLAMP_LO", "value"},     {"CLAMP_HI", "value"},    {"SRC_LO", "value"},
      {"SRC_HI", "value"},       {"DST_LO", "value"},      {"DST_HI", "value"},
      {"PARAM_LO", "value"},     {"PARAM_HI", "value"},
  };
  for (const auto& [rn, fn] : needed) {
    try {
      (void)m.field(rn, fn);
    } catch (const Error& e) {
      throw Error(source + ": " + e.what());
    }
  }
}

void parse_error_codes(const json& j, const std::string& source, Manifest& m) {
  const json& ec = need(j, "error_codes", source);
  if (!ec.is_object()) throw Error(source + ": 'error_codes' must be an object");
  for (const auto& [k, v] : ec.items()) {
    if (!v.is_number_integer()) throw Error(source + ": error_codes." + k + " must be an integer");
    m.error_codes[k] = v.get<int>();
  }
}

}  // namespace

const FieldDesc& RegDesc::field(std::string_view fname) const {
  for (const auto& f : fields) {
    if (f.name == fname) return f;
  }
  throw Error("register " + name + " has no field '" + std::string(fname) + "'");
}

const RegDesc& Manifest::reg(std::string_view name) const {
  for (const auto& r : registers) {
    if (r.name == name) return r;
  }
  throw Error(source + ": no register " + std::string(name));
}

const RegDesc* Manifest::find_reg(std::uint32_t off) const {
  for (const auto& r : registers) {
    if (r.offset == off) return &r;
  }
  return nullptr;
}

std::string Manifest::error_name(int code) const {
  for (const auto& [k, v] : error_codes) {
    if (v == code) return k;
  }
  return "code " + std::to_string(code);
}

namespace {

// The "config" object through the one config schema (normcore/config.hpp): every field present,
// each in the generator's range, the whole configuration valid.
DeviceConfig device_config(const json& c, const std::string& where) {
  AccelConfig a;
  try {
    a = AccelConfig::from_json(c, /*require_all=*/true);
  } catch (const std::invalid_argument& e) {
    throw Error(where + ": " + e.what());
  }
  if (const std::string e = a.check(FieldNames::json); !e.empty()) throw Error(where + ": " + e);
  const CoreConfig& k = a.core;
  DeviceConfig d;
  d.accel = a;
  d.name = k.name;
  d.lanes = k.lanes;
  d.in_bits = k.arith.xw;
  d.in_signed = k.arith.x_signed;
  d.out_bits = k.arith.yw;
  d.out_signed = k.arith.y_signed;
  d.scale_bits = k.arith.sw;
  d.offset_bits = k.arith.bw;
  d.max_channels = k.max_channels;
  d.inner_bits = k.inner_bits;
  d.pipeline = k.pipeline;
  d.bus_bits = a.bus_bits;
  d.addr_bits = a.addr_bits;
  d.id_bits = a.id_bits;
  d.max_burst = a.max_burst;
  d.outstanding = a.outstanding;
  return d;
}

}  // namespace

Manifest parse_manifest(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": not valid JSON (" + e.what() + ")");
  }
  Manifest m;
  m.source = source;
  if (!j.is_object()) throw Error(source + ": top level must be an object");
  const std::string kind = str(j, "kind", source);
  if (kind != "accelerator") {
    throw Error(source + ": kind is '" + kind +
                "', the runtime needs an accelerator manifest (normcore gen --accel)");
  }
  m.top = str(j, "top", source);
  m.generator_version = str(j, "generator_version", source);
  m.contract_version = num<int>(j, "contract_version", source, 0, 255);
  if (m.contract_version != kContractVersion) {
    throw Error(source + ": contract_version " + std::to_string(m.contract_version) +
                ", this runtime implements version " + std::to_string(kContractVersion));
  }

  const std::string cw = source + ": config";
  const json& c = need(j, "config", source);
  m.config = device_config(c, cw);
  m.config_json = c.dump();  // nlohmann's object is a sorted map: canonical

  parse_registers(j, source, m);
  parse_error_codes(j, source, m);
  return m;
}

Manifest load_manifest(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  Manifest m = parse_manifest(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
  m.path = path;
  return m;
}

}  // namespace normcore
