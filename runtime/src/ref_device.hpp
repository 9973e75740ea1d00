// The ref device (ref_device.cpp describes it): options, register-file fields, DMA buffers and
// the device class. Its parts: ref_device.cpp (registers, buffers, open), ref_job.cpp (a job:
// snapshot, validation, DMA, kernel), ref_kernel.cpp (arithmetic), ref_memory.hpp (memory).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device_options.hpp"
#include "job_rules.hpp"
#include "normcore/device.hpp"
#include "normcore/util/hex.hpp"
#include "ref_kernel.hpp"
#include "ref_memory.hpp"

namespace normcore::detail::ref {

struct Options {
  std::uint64_t mem = std::uint64_t{1} << 30;
  FaultOptions faults;
  unsigned threads = 1;
  bool direct = true;  // import_host supported (direct=0: the driver stages every tile)
};

// A field of the register file: its register's slot (offset / 4) and description.
struct Field {
  std::size_t slot = 0;
  const FieldDesc* desc = nullptr;
  explicit operator bool() const { return desc != nullptr; }
};

class RefBuffer final : public DmaBuffer {
 public:
  RefBuffer(std::shared_ptr<Memory> mem, std::uint64_t addr, std::size_t size,
            std::unique_ptr<std::uint8_t[]> data)
      : mem_(std::move(mem)), addr_(addr), size_(size), data_(std::move(data)), ptr_(data_.get()) {}
  // Imported host memory (RefDevice::import_host): borrowed, not counted as device memory.
  RefBuffer(std::shared_ptr<Memory> mem, std::uint64_t addr, std::size_t size, std::uint8_t* host)
      : mem_(std::move(mem)), addr_(addr), size_(size), ptr_(host) {}
  ~RefBuffer() override;

  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] std::span<std::uint8_t> map() override { return {ptr_, size_}; }
  // Coherent memory: only the bounds are checked.
  void sync_to_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_to_device");
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_from_device");
  }

 private:
  void check(std::size_t offset, std::size_t length, const char* what) const {
    if (offset > size_ || length > size_ - offset) {
      throw DeviceError("ref: " + std::string(what) + "(offset " + std::to_string(offset) +
                        ", length " + std::to_string(length) + ") is outside the " +
                        std::to_string(size_) + "-byte DMA buffer at " + hex(addr_));
    }
  }
  std::shared_ptr<Memory> mem_;
  std::uint64_t addr_;
  std::size_t size_;
  std::unique_ptr<std::uint8_t[]> data_;  // null for imported host memory
  std::uint8_t* ptr_ = nullptr;
};

class RefDevice final : public Device {
 public:
  RefDevice(const DeviceSpec& spec, Manifest manifest, const Options& opt);
  ~RefDevice() override {
    std::lock_guard lock(mem_->mu);
    mem_->owner = nullptr;
  }

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override;
  std::unique_ptr<DmaBuffer> import_host(const void* data, std::size_t bytes,
                                         bool writable) override;
  bool wait_irq(std::chrono::milliseconds timeout) override;

  // Called by a buffer's destructor with the memory lock held.
  void on_release(std::uint64_t bytes) { mutable_counters().buffer_bytes -= bytes; }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override;
  void do_write32(std::uint32_t offset, std::uint32_t value) override;

 private:
  struct Slot {
    const RegDesc* reg = nullptr;
    std::uint32_t value = 0;
    std::uint32_t readable = 0;  // every field bit except w1s_sc
    std::uint32_t rw = 0, w1c = 0, w1s = 0;
  };

  void build_register_file();
  void resolve_fields();
  Field field(const char* reg, const char* name, bool required = true) const;
  int code(const char* name) const;
  [[nodiscard]] std::uint64_t get(Field f) const {
    return f ? f.desc->get(slots_[f.slot].value) : 0;
  }
  void set(Field f, std::uint64_t v) {
    if (f) slots_[f.slot].value = f.desc->put(slots_[f.slot].value, v);
  }
  [[nodiscard]] std::uint64_t get64(Field lo, Field hi) const { return get(lo) | get(hi) << 32; }
  // A register's value by offset, as JobRules reads the job registers.
  [[nodiscard]] std::function<std::uint32_t(std::uint32_t)> reg_value() const {
    return [this](std::uint32_t offset) { return slots_.at(offset / 4).value; };
  }
  void set64(Field lo, Field hi, std::uint64_t v) {
    set(lo, v & 0xFFFFFFFFu);
    set(hi, v >> 32);
  }
  [[nodiscard]] bool irq_line() const {
    return (get(irq_done_) != 0 && get(en_done_) != 0) ||
           (get(irq_error_) != 0 && get(en_error_) != 0) ||
           (get(irq_ring_) != 0 && get(en_ring_) != 0);
  }
  [[nodiscard]] bool busy() const { return get(busy_) != 0; }

  // The job registers as START took them (or a descriptor held them) and the sizes they give:
  // job_rules.hpp, shared with the sim: / tlm: plugins' fault injection.
  using JobRegs = detail::JobRegs;
  using RawJob = detail::RawJob;
  // How a validated (or failed) job ended.
  struct Outcome {
    bool ok = false;
    int code = 0;
    std::uint64_t addr = 0, elems = 0;
    bool hang = false;  // the hang_job fault: busy until CTRL.soft_reset
  };

  void start_job();
  [[nodiscard]] JobRegs snapshot() const;
  [[nodiscard]] JobRegs sized(const RawJob& r) const;
  Outcome run_checked(const JobRegs& j);
  [[nodiscard]] std::uint64_t ideal_cycles(const JobRegs& j) const;
  void read_params(const JobRegs& j, std::vector<std::int64_t>& scale,
                   std::vector<std::int64_t>& shift) const;
  Outcome run_job(const JobRegs& j);  // memory lock held
  void clear_for_start();
  void soft_reset();
  void finish(bool ok, int err_code, std::uint64_t err_addr);
  void set_perf(std::uint64_t active, std::uint64_t elements);

  // The descriptor ring (ref_ring.cpp; only when the manifest has the RING_* registers).
  void resolve_ring_fields();
  void ring_control(std::uint32_t pulses);  // a write of RING_CTRL's pulse fields
  void ring_soft_reset();
  void ring_run();   // runs descriptors while enabled, not stopped, idle and TAIL != HEAD
  void ring_step();  // the descriptor at TAIL
  void ring_stop(int code, std::uint64_t addr);
  bool has_ring_ = false;
  std::uint64_t ring_done_ = 0;  // completed descriptors since the last IRQ_STATUS.ring by count
  Field ring_base_lo_, ring_base_hi_, ring_size_, ring_head_, ring_tail_;
  Field ring_enable_, ring_resume_, ring_skip_, ring_coalesce_, ring_active_, ring_stopped_;
  Field en_ring_, irq_ring_;

  Options opt_;
  std::optional<JobRules> rules_;  // set by resolve_fields
  std::shared_ptr<Memory> mem_;
  std::vector<Slot> slots_;
  std::uint64_t jobs_ = 0;  // jobs that passed validation

  // Fields, resolved by name from the manifest.
  Field start_, soft_reset_, en_done_, en_error_;
  Field busy_, done_, error_, start_ignored_, irq_done_, irq_error_;
  Field err_code_, err_lo_, err_hi_;
  Field perf_active_, perf_rd_stall_, perf_wr_stall_, perf_elems_lo_, perf_elems_hi_;
  int code_read_ = 0, code_write_ = 0;  // the job's own checks and codes: rules_
};

}  // namespace normcore::detail::ref
