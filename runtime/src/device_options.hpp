// The device-string options the accelerator backends share (ref, and the sim / tlm plugins, which
// include this private header beside addr_alloc.hpp): one reader with range checks whose messages
// all read "device '<text>': option <key>=<value> must be ...".
#pragma once

#include <cstdint>
#include <string>

#include "normcore/device.hpp"

namespace normcore::detail {

// Fault injection, read from fail_job=N, fail=read|write and hang_job=N (0: never).
struct FaultOptions {
  std::uint64_t fail_job = 0;  // the N-th job meets a bus error
  bool fail_write = false;     // ... on its write (DST) instead of its read (SRC)
  std::uint64_t hang_job = 0;  // the N-th job never finishes until CTRL.soft_reset
  [[nodiscard]] bool any() const { return fail_job != 0 || hang_job != 0; }
};

class OptionReader {
 public:
  explicit OptionReader(const DeviceSpec& spec);

  // An integer in [lo, hi]: "option key=V must be LO..HI".
  [[nodiscard]] std::uint64_t u64(const std::string& key, std::uint64_t fallback, std::uint64_t lo,
                                  std::uint64_t hi) const;
  // An integer of at least `min`: "option key=V must be at least MIN".
  [[nodiscard]] std::uint64_t at_least(const std::string& key, std::uint64_t fallback,
                                       std::uint64_t min) const;
  // A probability in [0, 1): "option key=V must be a probability in [0, 1)".
  [[nodiscard]] double probability(const std::string& key, double fallback) const;
  [[nodiscard]] std::string text(const std::string& key, const std::string& fallback) const;
  // fail_job, fail ("option fail=V must be read or write"), hang_job.
  [[nodiscard]] FaultOptions faults() const;

 private:
  [[noreturn]] void bad(const std::string& key, const std::string& value,
                        const std::string& why) const;
  const DeviceSpec& spec_;
};

}  // namespace normcore::detail
