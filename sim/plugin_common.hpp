// What the device plugins (sim_plugin.cpp: Verilator + AXI memory model; tlm_plugin.cpp: SystemC /
// TLM-2.0) share: the exported C ABI (plugin_common.cpp; runtime/src/sim_loader.cpp documents
// it), DMA buffers as host shadows of a memory model, the host's view of the job registers and
// the fault injection (fail_job=, fail=read|write, hang_job=): the jobs counted as
// runtime/src/device_options.hpp states, START jobs from CTRL writes and ring descriptors from a
// mirror of the ring's progress (RING_HEAD, RING_CTRL, soft reset) and the descriptors in memory.
//
// Each plugin defines normcore::plugin::kPlugin (its kind, the config it was built for and its
// device factory) and derives its device from PluginDevice and its memory from BufferRegion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../runtime/src/addr_alloc.hpp"
#include "../runtime/src/device_options.hpp"
#include "../runtime/src/job_rules.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"

namespace normcore::plugin {

inline constexpr int kAbi = 2;  // runtime/src/sim_loader.cpp: kPluginAbi
inline constexpr std::uint64_t kRegionBase = 0x4000'0000;

// Defined by each plugin (plugin_common.cpp exports it through the C ABI).
struct PluginInfo {
  const char* kind;         // "sim" / "tlm" (for messages)
  const char* config_json;  // the manifest "config" object the plugin was built for
  const char* manifest;     // the manifest it came from
  // Opens the device once the config matched; throws on bad options.
  std::unique_ptr<Device> (*open)(const DeviceSpec&, const Manifest&);
};
extern const PluginInfo kPlugin;

// The DMA region's size: `mem` bytes at kRegionBase, clipped to the address width.
std::uint64_t region_size(std::uint64_t mem, int addr_bits);

// The device memory side, shared with the buffers (weakly: a buffer may outlive its device):
// the region's allocator and the live buffers. The plugin's memory model derives from it.
class BufferRegion {
 public:
  BufferRegion(std::uint64_t base, std::uint64_t size, std::uint64_t bus_bytes)
      : alloc_(base, size), bus_bytes_(bus_bytes) {}
  virtual ~BufferRegion() = default;
  BufferRegion(const BufferRegion&) = delete;
  BufferRegion& operator=(const BufferRegion&) = delete;

  // Host shadow <-> memory model.
  virtual void write(std::uint64_t addr, std::span<const std::uint8_t> bytes) = 0;
  virtual void read(std::uint64_t addr, std::span<std::uint8_t> bytes) = 0;
  // False once the device is closed (its buffers then refuse to sync).
  [[nodiscard]] virtual bool is_open() const { return true; }

  [[nodiscard]] std::uint64_t round_up(std::uint64_t n) const {
    return (n + bus_bytes_ - 1) / bus_bytes_ * bus_bytes_;
  }
  [[nodiscard]] std::uint64_t bus_bytes() const { return bus_bytes_; }
  [[nodiscard]] const std::map<std::uint64_t, std::uint64_t>& live() const { return live_; }
  void release(std::uint64_t addr);

  DeviceCounters* counters = nullptr;  // the device's (valid while it lives)

 protected:
  virtual void on_buffers_changed() {}  // after a buffer came or went

 private:
  friend std::unique_ptr<DmaBuffer> alloc_buffer(const std::shared_ptr<BufferRegion>&,
                                                 const std::string&, std::size_t, std::size_t);
  detail::AddressAllocator alloc_;
  std::uint64_t bus_bytes_;
  std::map<std::uint64_t, std::uint64_t> live_;  // device address -> bytes
};

// A buffer of `bytes` bytes at a multiple of max(align, bus width) in the region; DeviceError
// (naming `device`) for a zero size, a bad alignment or no room. Counts it in region.counters.
std::unique_ptr<DmaBuffer> alloc_buffer(const std::shared_ptr<BufferRegion>& region,
                                        const std::string& device, std::size_t bytes,
                                        std::size_t align);

// A plugin device: keeps the values the host wrote to the registers and runs the fault
// injection on them. The plugin implements the register access and the memory model's faults.
class PluginDevice : public Device {
 public:
  // What a job meets: decided when its START is accepted (STATUS.busy was 0), or for a ring
  // descriptor when the mirror of the ring reaches it (a write made it runnable).
  struct JobFaults {
    bool fail = false;        // a bus error on ...
    bool fail_write = false;  // ... the write bursts to DST (else the reads from SRC)
    std::uint64_t addr = 0;   // the job's SRC or DST
    bool hang = false;        // the memory stops answering until CTRL.soft_reset ...
    std::optional<std::uint64_t> hang_read;  // ... from the first read of this address on, and
                                             // only its read side (a ring job: the jobs before
                                             // it finish)
  };

 protected:
  PluginDevice(const DeviceSpec& spec, const Manifest& manifest, detail::FaultOptions faults);

  void do_write32(std::uint32_t offset, std::uint32_t value) final;
  // The register write itself (DeviceError on a bus error answer).
  virtual void write_register(std::uint32_t offset, std::uint32_t value) = 0;
  // A register read for the fault injection (STATUS before a START, the ring's state before
  // RING_CTRL.resume / skip); nullopt when not answered OKAY.
  virtual std::optional<std::uint32_t> peek_register(std::uint32_t offset) = 0;
  virtual void end_hang() = 0;                    // CTRL.soft_reset written
  virtual void arm(const JobFaults& faults) = 0;  // clears the previous job's faults first
  // The memory model's bytes (no cycles): the ring mirror reads descriptors with it.
  virtual void read_memory(std::uint64_t addr, std::span<std::uint8_t> bytes) = 0;

 private:
  void before_ctrl_write(std::uint32_t value);
  [[nodiscard]] std::uint32_t reg(std::uint32_t offset) const { return shadow_.at(offset / 4); }
  [[nodiscard]] std::uint64_t win_base() const;
  [[nodiscard]] std::uint64_t win_last() const;
  // Counts a job that passed validation and arms its faults; true when it has one.
  bool count_job(std::uint64_t src, std::uint64_t dst, bool ring);
  void ring_control(std::uint32_t value);  // a RING_CTRL write: resume / skip
  void ring_plan();                        // counts the descriptors the ring will run

  detail::FaultOptions faults_;
  std::optional<detail::JobRules> rules_;  // when faults are configured
  std::vector<std::uint32_t> shadow_;      // register values as the host wrote them
  std::uint32_t ctrl_, status_;
  FieldDesc start_, soft_reset_, busy_;
  std::uint64_t jobs_ = 0;  // jobs counted (device_options.hpp: FaultOptions)
  bool armed_ = false;      // a fault is armed

  // The ring mirror (a --ring manifest): the next descriptor it counts and whether the ring
  // stops before it (a failing descriptor, a fault, soft reset), as ref_ring.cpp runs it.
  bool has_ring_ = false;
  std::uint32_t ring_ctrl_ = 0;
  FieldDesc ring_base_lo_, ring_base_hi_, ring_size_, ring_head_, ring_enable_, ring_resume_,
      ring_skip_;
  std::uint32_t ring_pos_ = 0;
  bool ring_stopped_ = false;
};

}  // namespace normcore::plugin
