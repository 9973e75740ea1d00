#include "normcore/gen/config.hpp"

#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace normcore::gen {

int bits_for(long long v) {
  int b = 1;
  while (b < 63 && (v >> b) != 0) ++b;
  return b;
}

int clog2(long long v) {
  int b = 0;
  while ((1LL << b) < v) ++b;
  return b;
}

std::string CoreConfig::check() const {
  auto range = [](const char* opt, long long v, long long lo, long long hi) -> std::string {
    if (v >= lo && v <= hi) return {};
    return std::string(opt) + ": " + std::to_string(v) + " is out of range " +
           std::to_string(lo) + ".." + std::to_string(hi);
  };
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return "--name: '" + name + "' is not a Verilog identifier";
  }
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') {
      return "--name: '" + name + "' is not a Verilog identifier";
    }
  }
  for (const auto& msg : {range("--lanes", lanes, 1, 64), range("--in-bits", arith.xw, 2, 32),
                          range("--out-bits", arith.yw, 2, 32), range("--scale-bits", arith.sw, 2, 32),
                          range("--shift-bits", arith.bw, 2, 62),
                          range("--max-channels", max_channels, 1, 65536),
                          range("--inner-bits", inner_bits, 1, 32),
                          range("--pipeline", pipeline, 3, 8)}) {
    if (!msg.empty()) return msg;
  }
  if (default_pipeline(target) == 0) {
    return "--target: must be generic, ice40, xilinx or asic (got '" + target + "')";
  }
  if (acc_bits() > 64) {
    return "--in-bits/--scale-bits/--shift-bits: accumulator max(in+scale, shift)+1 = " +
           std::to_string(acc_bits()) + " bits exceeds 64";
  }
  if (arith.yw > acc_bits()) {
    return "--out-bits: " + std::to_string(arith.yw) + " is wider than the accumulator (" +
           std::to_string(acc_bits()) + " bits)";
  }
  return {};
}

nlohmann::json CoreConfig::to_json() const {
  return nlohmann::json{{"name", name},
                        {"lanes", lanes},
                        {"in_bits", arith.xw},
                        {"in_signed", arith.x_signed},
                        {"out_bits", arith.yw},
                        {"out_signed", arith.y_signed},
                        {"scale_bits", arith.sw},
                        {"shift_bits", arith.bw},
                        {"max_channels", max_channels},
                        {"inner_bits", inner_bits},
                        {"pipeline", pipeline},
                        {"target", target}};
}

int CoreConfig::default_pipeline(const std::string& target) {
  if (target == "generic") return 3;
  if (target == "ice40") return 8;
  if (target == "xilinx") return 4;
  if (target == "asic") return 5;
  return 0;
}

CoreConfig CoreConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("core config must be a JSON object");
  CoreConfig c;
  auto get_int = [&](const char* key, int& dst) {
    if (!j.contains(key)) return;
    if (!j[key].is_number_integer()) {
      throw std::invalid_argument(std::string("core config: '") + key + "' must be an integer");
    }
    dst = j[key].get<int>();
  };
  auto get_bool = [&](const char* key, bool& dst) {
    if (!j.contains(key)) return;
    if (!j[key].is_boolean()) {
      throw std::invalid_argument(std::string("core config: '") + key + "' must be true or false");
    }
    dst = j[key].get<bool>();
  };
  if (j.contains("name")) {
    if (!j["name"].is_string()) throw std::invalid_argument("core config: 'name' must be a string");
    c.name = j["name"].get<std::string>();
  }
  get_int("lanes", c.lanes);
  get_int("in_bits", c.arith.xw);
  get_bool("in_signed", c.arith.x_signed);
  get_int("out_bits", c.arith.yw);
  get_bool("out_signed", c.arith.y_signed);
  get_int("scale_bits", c.arith.sw);
  get_int("shift_bits", c.arith.bw);
  get_int("max_channels", c.max_channels);
  get_int("inner_bits", c.inner_bits);
  get_int("pipeline", c.pipeline);
  if (j.contains("target")) {
    if (!j["target"].is_string()) throw std::invalid_argument("core config: 'target' must be a string");
    c.target = j["target"].get<std::string>();
  }
  return c;
}

}  // namespace normcore::gen
