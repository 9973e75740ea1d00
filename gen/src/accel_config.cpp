#include <stdexcept>

#include <nlohmann/json.hpp>

#include "normcore/gen/accel.hpp"

namespace normcore::gen {

std::string AccelConfig::check() const {
  if (auto err = core.check(); !err.empty()) return err;
  auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!pow2(bus_bits) || bus_bits < 32 || bus_bits > 512) {
    return "--bus-bits: " + std::to_string(bus_bits) + " must be 32, 64, 128, 256 or 512";
  }
  if (addr_bits < 32 || addr_bits > 64) {
    return "--addr-bits: " + std::to_string(addr_bits) + " is out of range 32..64";
  }
  if (id_bits < 1 || id_bits > 8) return "--id-bits: " + std::to_string(id_bits) + " is out of range 1..8";
  if (!pow2(max_burst) || max_burst > 256) {
    return "--max-burst: " + std::to_string(max_burst) + " must be a power of two in 1..256";
  }
  if (max_burst * bus_bytes() > 4096) {
    return "--max-burst: " + std::to_string(max_burst) + " beats of " +
           std::to_string(bus_bytes()) + " bytes exceed 4 KiB";
  }
  if (outstanding < 1 || outstanding > 16) {
    return "--outstanding: " + std::to_string(outstanding) + " is out of range 1..16";
  }
  return {};
}

nlohmann::json AccelConfig::to_json() const {
  auto j = core.to_json();
  j["bus_bits"] = bus_bits;
  j["addr_bits"] = addr_bits;
  j["id_bits"] = id_bits;
  j["max_burst"] = max_burst;
  j["outstanding"] = outstanding;
  return j;
}

AccelConfig AccelConfig::from_json(const nlohmann::json& j) {
  AccelConfig a;
  a.core = CoreConfig::from_json(j);
  auto get_int = [&](const char* key, int& dst) {
    if (!j.contains(key)) return;
    if (!j[key].is_number_integer()) {
      throw std::invalid_argument(std::string("accelerator config: '") + key +
                                  "' must be an integer");
    }
    dst = j[key].get<int>();
  };
  get_int("bus_bits", a.bus_bits);
  get_int("addr_bits", a.addr_bits);
  get_int("id_bits", a.id_bits);
  get_int("max_burst", a.max_burst);
  get_int("outstanding", a.outstanding);
  return a;
}

}  // namespace normcore::gen
