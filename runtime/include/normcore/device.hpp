// The narrow device interface every backend implements: 32-bit MMIO, DMA buffers, interrupts.
//
//   auto dev = open_device("ref:build/.../manifest.json");   // or sim:..., uio:...
//   dev->write32(off, v); dev->read32(off);                   // offset-checked
//   auto buf = dev->alloc(bytes);                             // RAII, device_address(), map()
//   buf->sync_to_device(); ... dev->wait_irq(100ms); ... buf->sync_from_device();
//
// Device strings: "<backend>:<target>[,key=value]...". Backends: ref (software device with the
// golden model), sim (in-process Verilator model + AXI memory model), tlm (the Verilated model as a
// SystemC/TLM-2.0 module against a TLM memory), uio (Linux UIO + u-dma-buf).
// Backends register a factory by name; the built-in ones (ref, uio, and the sim / tlm plugin
// loaders) register themselves on first use of open_device(); others by register_backend().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/manifest.hpp"

namespace normcore {

// Errors from a device or the driver: a bad device string, an out-of-range register access, a
// failed job (with the register values in the message), a time-out.
struct DeviceError : Error {
  using Error::Error;
};

// A value of the caller's input tensor the device cannot take (NaN, outside the input range):
// bad input, not a device failure (`normcore run` exits 2 for it, 1 for other DeviceErrors).
struct InputValueError : DeviceError {
  using DeviceError::DeviceError;
};

// Parsed device string.
struct DeviceSpec {
  std::string text;     // as given
  std::string backend;  // "ref", "sim", "uio"
  std::string target;   // manifest path (ref, sim) or device (uio)
  std::map<std::string, std::string> options;

  // Throws DeviceError naming the text if malformed ("no ':'", empty backend or target,
  // "key=value" expected, duplicate key).
  static DeviceSpec parse(std::string_view text);
  // Option accessors; each throws DeviceError naming the key and the value if it does not parse.
  // Every key a backend reads is marked used; check_all_used() rejects the rest.
  [[nodiscard]] std::string get(const std::string& key, const std::string& fallback) const;
  [[nodiscard]] double get_double(const std::string& key, double fallback) const;
  [[nodiscard]] std::uint64_t get_u64(const std::string& key, std::uint64_t fallback) const;
  void check_all_used() const;  // DeviceError: "unknown option 'x' for backend 'ref'"

 private:
  mutable std::map<std::string, bool> used_;
};

// One DMA buffer: device-visible memory with a host mapping. Freed by its destructor.
// map() is the host view; after writing it, sync_to_device() makes the bytes visible to the
// device; after the device wrote, sync_from_device() before reading map(). (No-ops on coherent
// backends, copies on others.) Offsets/lengths outside the buffer throw DeviceError.
class DmaBuffer {
 public:
  virtual ~DmaBuffer() = default;
  DmaBuffer(const DmaBuffer&) = delete;
  DmaBuffer& operator=(const DmaBuffer&) = delete;

  [[nodiscard]] virtual std::uint64_t device_address() const = 0;
  [[nodiscard]] virtual std::size_t size() const = 0;
  [[nodiscard]] virtual std::span<std::uint8_t> map() = 0;
  virtual void sync_to_device(std::size_t offset, std::size_t length) = 0;
  virtual void sync_from_device(std::size_t offset, std::size_t length) = 0;
  void sync_to_device() { sync_to_device(0, size()); }
  void sync_from_device() { sync_from_device(0, size()); }

 protected:
  DmaBuffer() = default;
};

struct DeviceCounters {
  std::uint64_t reads = 0;         // read32 calls
  std::uint64_t writes = 0;        // write32 calls
  std::uint64_t irq_waits = 0;     // wait_irq calls
  std::uint64_t buffers = 0;       // buffers allocated so far
  std::uint64_t buffer_bytes = 0;  // bytes currently allocated
};

// Not thread-safe: one thread at a time (the driver serialises access with its queue).
class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Register access. The offset must be 4-byte aligned and inside the register window
  // (manifest().window_bytes()); otherwise DeviceError ("register offset 0x1000 outside the
  // 4096-byte window of <name>") and no access happens. A bus error answer (SLVERR) from the
  // device is also a DeviceError naming the offset.
  std::uint32_t read32(std::uint32_t offset);
  void write32(std::uint32_t offset, std::uint32_t value);

  // A DMA buffer of `bytes` (> 0) bytes whose device address is a multiple of `align` (a power
  // of two; at least the bus width is used). DeviceError when out of device memory.
  virtual std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align = 64) = 0;

  // Host memory as a DMA buffer without a copy (a user-pointer buffer), or nullptr when the
  // device cannot address host memory (the default: its own memory, or a bus without an
  // IOMMU). Read-only (writable false): device writes into it are DMA write errors. The memory
  // must stay valid while the buffer lives; it is not counted in counters().buffers. ref:
  // supported (the driver runs host tensors of the device's own format in place through it).
  virtual std::unique_ptr<DmaBuffer> import_host(const void* data, std::size_t bytes,
                                                 bool writable) {
    (void)data, (void)bytes, (void)writable;
    return nullptr;
  }

  // Waits until the interrupt line is high or `timeout` passes; true if it is high. Backends
  // without an interrupt poll the IRQ_STATUS/CTRL registers (has_irq() false). Does not
  // acknowledge the interrupt (the driver clears IRQ_STATUS).
  virtual bool wait_irq(std::chrono::milliseconds timeout) = 0;
  [[nodiscard]] virtual bool has_irq() const { return true; }

  [[nodiscard]] const Manifest& manifest() const { return manifest_; }
  [[nodiscard]] const std::string& name() const { return name_; }  // the device string
  [[nodiscard]] const DeviceCounters& counters() const { return counters_; }

 protected:
  Device(std::string name, Manifest manifest)
      : name_(std::move(name)), manifest_(std::move(manifest)) {}
  // Called with a checked offset. Throw DeviceError for a bus error answer.
  virtual std::uint32_t do_read32(std::uint32_t offset) = 0;
  virtual void do_write32(std::uint32_t offset, std::uint32_t value) = 0;
  DeviceCounters& mutable_counters() { return counters_; }

 private:
  void check_offset(std::uint32_t offset, const char* what) const;
  std::string name_;
  Manifest manifest_;
  DeviceCounters counters_;
};

using BackendFactory = std::function<std::unique_ptr<Device>(const DeviceSpec&)>;

// Registers (or replaces) a backend. Thread-safe.
void register_backend(const std::string& name, BackendFactory factory);
[[nodiscard]] std::vector<std::string> backend_names();

// Parses the string, finds the backend (DeviceError listing the known ones if absent) and opens
// the device; rejects options the backend did not read.
std::unique_ptr<Device> open_device(std::string_view device_string);

}  // namespace normcore
