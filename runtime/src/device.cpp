#include "normcore/device.hpp"

#include <charconv>
#include <cmath>
#include <mutex>
#include <vector>

#include "backends.hpp"
#include "normcore/util/hex.hpp"

namespace normcore {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory> factories;
  bool builtins = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

void add_builtins_locked(Registry& r) {
  if (r.builtins) return;
  r.builtins = true;
  r.factories.try_emplace("ref", detail::open_ref_device);
  r.factories.try_emplace("uio", detail::open_uio_device);
  r.factories.try_emplace("sim", detail::open_sim_device);
  r.factories.try_emplace("tlm", detail::open_tlm_device);
}

}  // namespace

DeviceSpec DeviceSpec::parse(std::string_view text) {
  DeviceSpec s;
  s.text = std::string(text);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw DeviceError("device '" + s.text +
                      "': expected <backend>:<target>[,key=value...], e.g. ref:manifest.json");
  }
  s.backend = std::string(text.substr(0, colon));
  if (s.backend.empty()) throw DeviceError("device '" + s.text + "': empty backend name");
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(colon + 1);
  for (;;) {
    const auto c = rest.find(',');
    parts.push_back(rest.substr(0, c));
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  s.target = std::string(parts[0]);
  if (s.target.empty()) throw DeviceError("device '" + s.text + "': empty target after ':'");
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view kv = parts[i];
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw DeviceError("device '" + s.text + "': option '" + std::string(kv) +
                        "' is not key=value");
    }
    const std::string key(kv.substr(0, eq));
    if (!s.options.emplace(key, std::string(kv.substr(eq + 1))).second) {
      throw DeviceError("device '" + s.text + "': option '" + key + "' given twice");
    }
  }
  return s;
}

std::string DeviceSpec::get(const std::string& key, const std::string& fallback) const {
  used_[key] = true;
  const auto it = options.find(key);
  return it == options.end() ? fallback : it->second;
}

double DeviceSpec::get_double(const std::string& key, double fallback) const {
  used_[key] = true;
  const auto it = options.find(key);
  if (it == options.end()) return fallback;
  try {
    std::size_t n = 0;
    const double v = std::stod(it->second, &n);
    if (n == it->second.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw DeviceError("device '" + text + "': option " + key + "=" + it->second + " is not a number");
}

std::uint64_t DeviceSpec::get_u64(const std::string& key, std::uint64_t fallback) const {
  used_[key] = true;
  const auto it = options.find(key);
  if (it == options.end()) return fallback;
  std::uint64_t v = 0;
  const auto& t = it->second;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || t.empty()) {
    throw DeviceError("device '" + text + "': option " + key + "=" + t +
                      " is not a non-negative integer");
  }
  return v;
}

void DeviceSpec::check_all_used() const {
  for (const auto& [k, v] : options) {
    if (!used_.count(k)) {
      throw DeviceError("device '" + text + "': unknown option '" + k + "' for backend '" +
                        backend + "'");
    }
  }
}

void Device::check_offset(std::uint32_t offset, const char* what) const {
  if (offset % 4 != 0 || offset > manifest_.window_bytes() - 4) {
    throw DeviceError(name_ + ": " + what + " at register offset " + hex(offset) +
                      (offset % 4 != 0
                           ? " is not 4-byte aligned"
                           : " is outside the " + std::to_string(manifest_.window_bytes()) +
                                 "-byte register window"));
  }
}

std::uint32_t Device::read32(std::uint32_t offset) {
  check_offset(offset, "read");
  ++counters_.reads;
  return do_read32(offset);
}

void Device::write32(std::uint32_t offset, std::uint32_t value) {
  check_offset(offset, "write");
  ++counters_.writes;
  do_write32(offset, value);
}

void register_backend(const std::string& name, BackendFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  add_builtins_locked(r);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> backend_names() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  add_builtins_locked(r);
  std::vector<std::string> v;
  for (const auto& [k, f] : r.factories) v.push_back(k);
  return v;
}

std::unique_ptr<Device> open_device(std::string_view device_string) {
  const DeviceSpec spec = DeviceSpec::parse(device_string);
  BackendFactory f;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    add_builtins_locked(r);
    const auto it = r.factories.find(spec.backend);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [k, g] : r.factories) known += (known.empty() ? "" : ", ") + k;
      throw DeviceError("device '" + spec.text + "': unknown backend '" + spec.backend +
                        "' (this build has: " + known + ")");
    }
    f = it->second;
  }
  auto dev = f(spec);
  spec.check_all_used();
  return dev;
}

}  // namespace normcore
