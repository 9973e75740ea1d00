// The device-string options the accelerator backends share (ref, and the sim / tlm plugins, which
// include this private header beside addr_alloc.hpp): one reader with range checks whose messages
// all read "device '<text>': option <key>=<value> must be ...".
#pragma once

#include <cstdint>
#include <string>

#include "normcore/device.hpp"

namespace normcore::detail {

// Fault injection, read from fail_job=N, fail=read|write and hang_job=N (0: never). The one
// statement of the rule, which ref: (ref_job.cpp, ref_ring.cpp) and the sim: / tlm: plugins
// (sim/plugin_common.cpp) follow alike:
//   * Counted: every job that passes the job validation (job_rules.hpp: the RTL's checks), from
//     1 since the device was opened: a START accepted while idle (STATUS.busy 0) and each ring
//     descriptor the ring runs (a retried one again). A job that fails validation is not counted.
//   * fail_job=N: job N meets a bus error on its first read of SRC (fail=read, the default) or
//     its first write burst to DST (fail=write): ERR_CODE read / write, ERR_ADDR = SRC / DST,
//     STATUS.error, IRQ_STATUS.error; a ring descriptor also gets its status word (bit 1 and the
//     code; ELEMS 0 on a read error) and the ring stops at it (RING_CTRL.resume retries it, as
//     job N + 1; skip goes on after it).
//   * hang_job=N: job N never finishes (STATUS.busy stays 1, no interrupt, no status word; the
//     ring jobs before it complete) until CTRL.soft_reset, which aborts it (the ring: TAIL 0,
//     stopped).
// On sim: / tlm: the memory model answers the error (SLVERR / TLM_GENERIC_ERROR_RESPONSE) to the
// accesses touching that address (a hang: the read side stops from that job's input read on),
// armed when the job is counted: at its START, or for a descriptor when a register write makes
// it runnable (the plugin follows the ring from RING_HEAD, RING_CTRL and the descriptors in
// memory), so a job before it in the ring that reads the same SRC (writes the same DST) meets
// the fault too; ref: fails exactly job N.
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
