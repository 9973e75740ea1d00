// The register map as the driver programs it: field and offset look-ups, register shadowing,
// one device job started and waited for, soft reset, and the identification registers.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "driver_util.hpp"
#include "normcore/driver.hpp"

namespace normcore::detail {

// Offsets and fields of the registers the driver uses, looked up once in the manifest.
struct Regs {
  const FieldDesc *start, *soft_reset, *en_done, *en_err;
  const FieldDesc *busy, *done, *error;
  const FieldDesc *irq_done, *irq_err;
  const FieldDesc *layout, *rounding, *shift;
  std::uint32_t ctrl, status, irq_status, err_code, err_lo, err_hi;
  std::uint32_t channels, inner, outer, mode, clamp_lo, clamp_hi;
  std::uint32_t src_lo, src_hi, dst_lo, dst_hi, param_lo, param_hi;
  std::uint32_t perf_active = 0, perf_elems_lo = 0, perf_elems_hi = 0;
  bool has_perf = false, has_elems = false;
  // The descriptor ring (a --ring manifest): RING_* offsets and the fields the driver uses.
  bool has_ring = false;
  std::uint32_t ring_base_lo = 0, ring_base_hi = 0, ring_size = 0, ring_head = 0, ring_tail = 0;
  std::uint32_t ring_ctrl = 0, ring_status = 0;
  const FieldDesc *ring_enable = nullptr, *ring_skip = nullptr, *ring_resume = nullptr;
  const FieldDesc *ring_stopped = nullptr, *en_ring = nullptr, *irq_ring = nullptr;

  explicit Regs(const Manifest& m);
};

// One device job as programmed into the registers.
struct DevJob {
  std::uint64_t channels = 1, inner = 1, outer = 1;
  Layout layout = Layout::nchw;
  JobSettings settings;
  std::uint64_t src = 0, dst = 0, param = 0;
};

struct EngineCounters {
  std::uint64_t timeouts = 0, soft_resets = 0;
};

// Runs device jobs through the register map. Job registers are written only when their value
// changes (a shadow of the last value written). Not thread-safe: the caller serialises every
// call with the device (DriverCore::dev_mu).
class JobEngine {
 public:
  JobEngine(Device& dev, const DriverOptions& opt);

  // Acknowledges any pending interrupt (IRQ_STATUS done and error).
  void clear_irq();
  // Programs, starts and waits for one job; adds the wait to st.device_seconds and counts the
  // tile. DeviceError with the register values on a device error or a time-out (which
  // soft-resets the device). on_elems (if set, and the map has PERF_ELEMS): called every
  // progress interval while the job runs with the elements it has output so far.
  void execute(const DevJob& j, RunStats& st,
               const std::function<void(std::uint64_t)>& on_elems = {});
  [[nodiscard]] const EngineCounters& counters() const { return counters_; }
  // Whether the device has a descriptor ring (its manifest has the RING_* registers).
  [[nodiscard]] bool has_ring() const { return regs_.has_ring; }
  // Runs jobs in order: on the descriptor ring when the device has one (driver_ring.cpp: ring-
  // sized chunks, one RING_HEAD write each, a failed descriptor skipped), else one by one with
  // execute(). errors[i] is job i's DeviceError (null: it completed). stats[i] gets job i's tile
  // and its share of the wait. A time-out soft-resets the device and fails the jobs not done.
  void execute_all(std::span<const DevJob> jobs, std::span<RunStats* const> stats,
                   std::vector<std::exception_ptr>& errors);

 private:
  void set(std::uint32_t off, std::uint32_t v);
  std::uint32_t status();
  std::string status_text(std::uint32_t st);
  [[nodiscard]] std::string describe(const DevJob& j) const;
  bool soft_reset();  // true if the engine is idle afterwards
  void ensure_idle();
  void program(const DevJob& j);
  bool start();  // true if the job signals its end by interrupt
  // Waits for the job until `deadline`; true if it finished. stv: the last STATUS read.
  bool wait_finished(bool irq, Clock::time_point deadline, std::uint32_t& stv);
  [[noreturn]] void fail_timeout(const DevJob& j, std::uint32_t stv);
  void check_result(const DevJob& j, std::uint32_t stv);

  Device& dev_;
  Regs regs_;
  std::chrono::milliseconds job_timeout_, reset_timeout_, progress_interval_;
  bool use_irq_;
  const std::function<void(std::uint64_t)>* on_elems_ = nullptr;  // during execute()
  void report_elems();
  std::map<std::uint32_t, std::uint32_t> shadow_;  // last value written to each job register
  bool check_idle_ = true;                         // verify !busy before the next job
  EngineCounters counters_;

  // The descriptor ring (driver_ring.cpp).
  static constexpr unsigned kRingLog2 = 8;  // 256 descriptors of 64 bytes
  std::unique_ptr<DmaBuffer> ring_;
  std::uint32_t head_ = 0;  // RING_HEAD as last written (free-running, 16 bits)
  void ring_setup();
  void write_descriptor(std::uint32_t index, const DevJob& j);
  std::uint32_t ring_ctrl_value() const;
  // Runs jobs[from, from + n) (n <= ring slots) on the ring; fills errors.
  void ring_chunk(std::span<const DevJob> jobs, std::size_t from, std::size_t n,
                  std::span<RunStats* const> stats, std::vector<std::exception_ptr>& errors);
  [[nodiscard]] std::string descriptor_error(const DevJob& j, std::uint32_t index);
  void ring_recover();  // after a time-out: soft reset, HEAD = 0, resume
};

// Reads ID, VERSION and CAPS0..3 and decodes them with the manifest's fields. DeviceError naming
// the register, both values and the differing fields if they are not the manifest's, or if the
// device implements another arithmetic contract.
DeviceInfo read_info(Device& dev);

}  // namespace normcore::detail
