// The device-string option reader of the accelerator backends (device_options.hpp).
#include "device_options.hpp"

namespace normcore::detail {

OptionReader::OptionReader(const DeviceSpec& spec) : spec_(spec) {}

void OptionReader::bad(const std::string& key, const std::string& value,
                       const std::string& why) const {
  throw DeviceError("device '" + spec_.text + "': option " + key + "=" + value + " " + why);
}

std::uint64_t OptionReader::u64(const std::string& key, std::uint64_t fallback, std::uint64_t lo,
                                std::uint64_t hi) const {
  const std::uint64_t v = spec_.get_u64(key, fallback);
  if (v < lo || v > hi) {
    bad(key, std::to_string(v), "must be " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

std::uint64_t OptionReader::at_least(const std::string& key, std::uint64_t fallback,
                                     std::uint64_t min) const {
  const std::uint64_t v = spec_.get_u64(key, fallback);
  if (v < min) bad(key, std::to_string(v), "must be at least " + std::to_string(min));
  return v;
}

double OptionReader::probability(const std::string& key, double fallback) const {
  const double p = spec_.get_double(key, fallback);
  if (!(p >= 0.0 && p < 1.0)) bad(key, spec_.get(key, ""), "must be a probability in [0, 1)");
  return p;
}

std::string OptionReader::text(const std::string& key, const std::string& fallback) const {
  return spec_.get(key, fallback);
}

FaultOptions OptionReader::faults() const {
  FaultOptions f;
  f.fail_job = spec_.get_u64("fail_job", 0);
  const std::string fail = spec_.get("fail", "read");
  if (fail != "read" && fail != "write") bad("fail", fail, "must be read or write");
  f.fail_write = fail == "write";
  f.hang_job = spec_.get_u64("hang_job", 0);
  return f;
}

}  // namespace normcore::detail
