// The `tlm` device backend: the SystemC/TLM-2.0 model of a generated accelerator (the Verilated
// RTL built with verilator --sc inside normcore::vp::TlmAccelerator, sim/tlm_bridge.hpp) with a
// TLM memory (vp::TlmMemory) on its DMA socket and a CPU-side initiator (vp::HostPort) on its
// register socket, as a normcore::Device. Built once per generated device as a plugin,
// <devices>/<name>/libnormcore_tlm.so (sim/tlm.cmake), and loaded by the runtime's plugin loader
// (runtime/src/sim_loader.cpp: same ABI as the sim plugin, plus normcore_sim_kind() = "tlm").
//
// Device string: tlm:<manifest>[,latency=N][,mem=<bytes>][,fail_job=N][,fail=read|write]
//                [,hang_job=N][,lib=<path>  (read by the loader)]
//   latency   annotated delay of every memory transaction, in clock cycles (default 8)
//   mem       bytes of the DMA region at 0x4000_0000 (default 1 GiB, clipped to the address width)
//   fail_job  the N-th START accepted while idle (counted from 1 since open) meets a bus error:
//   fail      ... the TLM memory answers TLM_GENERIC_ERROR_RESPONSE to the transaction touching
//             SRC (read, default) or DST (write); the bridge turns it into SLVERR
//   hang_job  during the N-th such job the memory's b_transport blocks until CTRL.soft_reset
//
// The clock is 100 MHz (10 ns). Simulated time only advances inside calls: a register access
// runs the kernel until the access completed; wait_irq() runs it in slices of 20000 cycles until
// irq rises (an SC_METHOD calls sc_pause()) or the wall-clock timeout passed.
//
// SystemC elaborates once per process: the first open builds the platform and it lives until the
// process ends. Later opens of the same plugin reuse it (RTL reset, memory cleared, options
// applied); only one device may be open at a time, and another device configuration's tlm
// plugin cannot elaborate in a process whose kernel has started (both are clear DeviceErrors).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../runtime/src/addr_alloc.hpp"
#include "nc_sim_model.hpp"  // generated: normcore::sim::model::{Top, kConfigJson, kManifest}
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "tlm_bridge.hpp"

#define NC_TLM_EXPORT __attribute__((visibility("default")))

namespace normcore::tlmdev {
namespace {

using Top = sim::model::Top;
constexpr int kAbi = 1;  // runtime/src/sim_loader.cpp: kPluginAbi
constexpr std::uint64_t kRegionBase = 0x4000'0000;
constexpr std::uint64_t kSliceCycles = 20000;
constexpr unsigned kAccessSlices = 50;  // a register access completes within 50 slices

sc_core::sc_time period() {
  return sc_core::sc_time(10, sc_core::SC_NS);
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}

const std::string& built_config() {
  static const std::string canonical = nlohmann::json::parse(sim::model::kConfigJson).dump();
  return canonical;
}

struct Options {
  std::uint64_t latency = 8;
  std::uint64_t mem = std::uint64_t{1} << 30;
  std::uint64_t fail_job = 0;  // 0: never
  bool fail_write = false;
  std::uint64_t hang_job = 0;  // 0: never

  static Options read(const DeviceSpec& spec) {
    const std::string who = "device '" + spec.text + "': ";
    Options o;
    o.latency = spec.get_u64("latency", o.latency);
    if (o.latency > 1'000'000) {
      throw DeviceError(who + "option latency=" + std::to_string(o.latency) +
                        " must be 0..1000000");
    }
    o.mem = spec.get_u64("mem", o.mem);
    if (o.mem < 4096) {
      throw DeviceError(who + "option mem=" + std::to_string(o.mem) + " must be at least 4096");
    }
    o.fail_job = spec.get_u64("fail_job", 0);
    const std::string fail = spec.get("fail", "read");
    if (fail != "read" && fail != "write") {
      throw DeviceError(who + "option fail=" + fail + " must be read or write");
    }
    o.fail_write = fail == "write";
    o.hang_job = spec.get_u64("hang_job", 0);
    return o;
  }
};

// The elaborated model: accelerator, memory, CPU-side initiator, and a method that pauses the
// kernel when irq rises while the host waits for it.
struct Platform : sc_core::sc_module {
  SC_HAS_PROCESS(Platform);

  vp::TlmAccelerator<Top> acc;
  vp::TlmMemory<32> mem;
  vp::HostPort host;
  bool pause_on_irq = false;

  Platform(const sc_core::sc_module_name& name, const vp::BridgeConfig& cfg)
      : sc_core::sc_module(name),
        acc("acc", cfg),
        mem("mem", kRegionBase, 4096),
        host("cpu", cfg.clock_period * static_cast<double>(kSliceCycles)) {
    host.socket.bind(acc.regs);
    acc.dma.bind(mem.socket);
    SC_METHOD(on_irq);
    sensitive << acc.irq;
    dont_initialize();
  }

  void on_irq() {
    if (pause_on_irq && acc.irq.read()) sc_core::sc_pause();
  }

  // Runs the kernel until the RTL is out of reset.
  void settle_reset() {
    const auto step =
        acc.config().clock_period * static_cast<double>(acc.config().reset_cycles + 4);
    for (int i = 0; i < 100 && acc.in_reset(); ++i) sc_core::sc_start(step);
    if (acc.in_reset()) throw DeviceError("tlm: the model did not leave reset");
  }
};

Platform* g_platform = nullptr;  // elaborated once per process, never destroyed
bool g_open = false;             // a TlmDevice is open

Platform& platform(const std::string& who, const Manifest& manifest) {
  if (g_open) {
    throw DeviceError(who + ": another tlm device of " + manifest.config.name +
                      " is open in this process; SystemC elaborates one model per process, so "
                      "the tlm backend runs one device at a time: close it first");
  }
  if (g_platform != nullptr) {
    g_platform->acc.reset();
    g_platform->settle_reset();
    return *g_platform;
  }
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    throw DeviceError(who +
                      ": the SystemC kernel of this process was already started (by another "
                      "SystemC model, e.g. the tlm plugin of another device configuration); "
                      "SystemC cannot elaborate a model after sc_start: open one tlm device "
                      "configuration per process");
  }
  vp::BridgeConfig cfg;
  cfg.clock_period = period();
  cfg.reg_window_bytes = manifest.window_bytes();
  auto* p = new Platform("nc_tlm", cfg);
  g_platform = p;
  p->settle_reset();  // ends elaboration and runs the power-on reset
  return *p;
}

// State shared with the buffers (weakly: a buffer may outlive its device).
struct Session {
  Session(std::uint64_t base, std::uint64_t size, std::uint64_t bus)
      : alloc(base, size), bus_bytes(bus) {}
  std::uint64_t round_up(std::uint64_t n) const {
    return (n + bus_bytes - 1) / bus_bytes * bus_bytes;
  }
  void release(std::uint64_t addr) {
    const auto it = live.find(addr);
    if (it == live.end()) return;
    if (counters != nullptr) counters->buffer_bytes -= it->second;
    live.erase(it);
    alloc.release(addr);
  }
  detail::AddressAllocator alloc;
  std::uint64_t bus_bytes;
  std::map<std::uint64_t, std::uint64_t> live;
  vp::TlmMemory<32>* mem = nullptr;
  DeviceCounters* counters = nullptr;
};

class TlmBuffer final : public DmaBuffer {
 public:
  TlmBuffer(std::weak_ptr<Session> s, std::string device, std::uint64_t addr, std::size_t bytes)
      : s_(std::move(s)), device_(std::move(device)), addr_(addr), shadow_(bytes, 0) {}
  ~TlmBuffer() override {
    if (auto s = s_.lock()) s->release(addr_);
  }
  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return shadow_.size(); }
  [[nodiscard]] std::span<std::uint8_t> map() override { return shadow_; }
  void sync_to_device(std::size_t offset, std::size_t length) override {
    auto s = checked(offset, length, "sync_to_device");
    s->mem->write(addr_ + offset, std::span<const std::uint8_t>(shadow_).subspan(offset, length));
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    auto s = checked(offset, length, "sync_from_device");
    s->mem->read(addr_ + offset, std::span<std::uint8_t>(shadow_).subspan(offset, length));
  }

 private:
  std::shared_ptr<Session> checked(std::size_t offset, std::size_t length, const char* what) const {
    if (offset > shadow_.size() || length > shadow_.size() - offset) {
      throw DeviceError(device_ + ": " + what + "(" + std::to_string(offset) + ", " +
                        std::to_string(length) + ") is outside the " +
                        std::to_string(shadow_.size()) + "-byte buffer at " + hex(addr_));
    }
    auto s = s_.lock();
    if (!s || s->mem == nullptr) {
      throw DeviceError(device_ + ": " + what + " on a buffer whose device was closed");
    }
    return s;
  }
  std::weak_ptr<Session> s_;
  std::string device_;
  std::uint64_t addr_;
  std::vector<std::uint8_t> shadow_;
};

std::optional<std::uint32_t> find_offset(const Manifest& m, const char* name) {
  for (const auto& r : m.registers) {
    if (r.name == name) return r.offset;
  }
  return std::nullopt;
}

class TlmDevice final : public Device {
 public:
  TlmDevice(const DeviceSpec& spec, const Manifest& manifest, Options opt)
      : Device(spec.text, manifest),
        opt_(opt),
        p_(platform(spec.text, manifest)),
        ctrl_(manifest.offset("CTRL")),
        status_(manifest.offset("STATUS")),
        start_(manifest.field("CTRL", "start")),
        soft_reset_(manifest.field("CTRL", "soft_reset")),
        busy_(manifest.field("STATUS", "busy")),
        src_lo_(find_offset(manifest, "SRC_LO")),
        src_hi_(find_offset(manifest, "SRC_HI")),
        dst_lo_(find_offset(manifest, "DST_LO")),
        dst_hi_(find_offset(manifest, "DST_HI")) {
    const DeviceConfig& c = manifest.config;
    std::uint64_t size = opt_.mem;
    if (c.addr_bits < 64) size = std::min(size, (std::uint64_t{1} << c.addr_bits) - kRegionBase);
    session_ =
        std::make_shared<Session>(kRegionBase, size, static_cast<std::uint64_t>(c.bus_bytes()));
    session_->mem = &p_.mem;
    session_->counters = &mutable_counters();
    p_.mem.clear();
    p_.mem.set_range(kRegionBase, size);
    p_.mem.set_latency(period() * static_cast<double>(opt_.latency));
    p_.mem.set_fault(std::nullopt);
    p_.mem.set_hang(false);
    p_.acc.clear_violations();
    p_.pause_on_irq = false;
    g_open = true;
  }

  ~TlmDevice() override {
    session_->mem = nullptr;
    session_->counters = nullptr;
    p_.mem.set_fault(std::nullopt);
    p_.mem.set_hang(false);
    g_open = false;
  }

  TlmDevice(const TlmDevice&) = delete;
  TlmDevice& operator=(const TlmDevice&) = delete;

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    if (bytes == 0) throw DeviceError(name() + ": alloc of 0 bytes");
    if (align == 0 || (align & (align - 1)) != 0) {
      throw DeviceError(name() + ": alloc alignment " + std::to_string(align) +
                        " is not a power of two");
    }
    Session& s = *session_;
    const std::uint64_t a = std::max<std::uint64_t>(align, s.bus_bytes);
    std::optional<std::uint64_t> at;
    if (bytes <= s.alloc.size()) at = s.alloc.allocate(s.round_up(bytes), a);
    if (!at) {
      throw DeviceError(name() + ": out of device memory: " + std::to_string(bytes) +
                        " bytes (alignment " + std::to_string(a) + ") requested, " +
                        std::to_string(s.alloc.in_use()) + " of " + std::to_string(s.alloc.size()) +
                        " bytes in use (option mem=)");
    }
    auto buf = std::make_unique<TlmBuffer>(session_, name(), *at, bytes);
    s.live[*at] = bytes;
    ++mutable_counters().buffers;
    mutable_counters().buffer_bytes += bytes;
    return buf;
  }

  bool wait_irq(std::chrono::milliseconds timeout) override {
    ++mutable_counters().irq_waits;
    if (p_.acc.irq.read()) return true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    p_.pause_on_irq = true;
    try {
      while (!p_.acc.irq.read()) {
        sc_core::sc_start(period() * static_cast<double>(kSliceCycles));
        if (std::chrono::steady_clock::now() >= deadline) break;
      }
    } catch (const std::exception& e) {
      p_.pause_on_irq = false;
      throw DeviceError(name() + ": tlm: SystemC error: " + e.what());
    }
    p_.pause_on_irq = false;
    check_violations();
    return p_.acc.irq.read();
  }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override {
    std::uint32_t v = 0;
    const auto s = access(::tlm::TLM_READ_COMMAND, offset, &v, "read");
    if (s != ::tlm::TLM_OK_RESPONSE) {
      throw DeviceError(name() + ": register read at offset " + hex(offset) + " answered " +
                        describe(s));
    }
    return v;
  }

  void do_write32(std::uint32_t offset, std::uint32_t value) override {
    if (offset == ctrl_) before_ctrl_write(value);
    const auto s = access(::tlm::TLM_WRITE_COMMAND, offset, &value, "write");
    if (s != ::tlm::TLM_OK_RESPONSE) {
      throw DeviceError(name() + ": register write of " + hex(value) + " at offset " + hex(offset) +
                        " answered " + describe(s));
    }
    auto set = [&](std::uint64_t& reg, bool high) {
      const unsigned sh = high ? 32U : 0U;
      reg = (reg & ~(std::uint64_t{0xFFFFFFFFu} << sh)) | (std::uint64_t{value} << sh);
    };
    if (offset == src_lo_) set(src_, false);
    if (offset == src_hi_) set(src_, true);
    if (offset == dst_lo_) set(dst_, false);
    if (offset == dst_hi_) set(dst_, true);
  }

 private:
  static std::string describe(::tlm::tlm_response_status s) {
    switch (s) {
      case ::tlm::TLM_GENERIC_ERROR_RESPONSE:
        return "SLVERR (TLM_GENERIC_ERROR_RESPONSE)";
      case ::tlm::TLM_ADDRESS_ERROR_RESPONSE:
        return "DECERR (TLM_ADDRESS_ERROR_RESPONSE)";
      default: {
        ::tlm::tlm_generic_payload gp;
        gp.set_response_status(s);
        return gp.get_response_string();
      }
    }
  }

  ::tlm::tlm_response_status access(::tlm::tlm_command cmd, std::uint32_t offset,
                                    std::uint32_t* data, const char* what) {
    ::tlm::tlm_response_status s = ::tlm::TLM_INCOMPLETE_RESPONSE;
    bool done = false;
    try {
      done = p_.host.access(cmd, offset, reinterpret_cast<std::uint8_t*>(data), 4, &s, nullptr, 0,
                            kAccessSlices);
    } catch (const std::exception& e) {
      throw DeviceError(name() + ": register " + what + " at offset " + hex(offset) +
                        ": tlm: SystemC error: " + e.what());
    }
    if (!done) {
      throw DeviceError(name() + ": register " + what + " at offset " + hex(offset) +
                        ": no answer within " + std::to_string(kAccessSlices * kSliceCycles) +
                        " cycles");
    }
    check_violations();
    return s;
  }

  void check_violations() {
    if (reported_) return;
    const auto& v = p_.acc.stats().violations;
    if (!v.empty()) {
      reported_ = true;
      throw DeviceError(name() + ": tlm: AXI protocol violation: " + v.front() +
                        (v.size() > 1 ? " (" + std::to_string(v.size()) + " in total)" : ""));
    }
  }

  // Fault injection (as the sim backend): a START accepted while idle is counted, clears the
  // faults of the previous job and arms the ones of this job; a soft reset ends a hang.
  void before_ctrl_write(std::uint32_t value) {
    if (opt_.fail_job == 0 && opt_.hang_job == 0) return;
    if (soft_reset_.get(value) != 0) {
      p_.mem.set_hang(false);
      return;
    }
    if (start_.get(value) == 0) return;
    std::uint32_t st = 0;
    if (access(::tlm::TLM_READ_COMMAND, status_, &st, "read (STATUS before START)") !=
            ::tlm::TLM_OK_RESPONSE ||
        busy_.get(st) != 0) {
      return;  // START ignored while busy
    }
    ++jobs_;
    p_.mem.set_fault(std::nullopt);
    if (jobs_ == opt_.fail_job) {
      p_.mem.set_fault(vp::TlmMemory<32>::Fault{opt_.fail_write, opt_.fail_write ? dst_ : src_,
                                                ::tlm::TLM_GENERIC_ERROR_RESPONSE});
    }
    p_.mem.set_hang(jobs_ == opt_.hang_job);
  }

  Options opt_;
  Platform& p_;
  std::shared_ptr<Session> session_;
  std::uint32_t ctrl_, status_;
  FieldDesc start_, soft_reset_, busy_;
  std::optional<std::uint32_t> src_lo_, src_hi_, dst_lo_, dst_hi_;
  std::uint64_t src_ = 0, dst_ = 0;
  std::uint64_t jobs_ = 0;
  bool reported_ = false;
};

}  // namespace
}  // namespace normcore::tlmdev

extern "C" {

NC_TLM_EXPORT int normcore_sim_abi() {
  return normcore::tlmdev::kAbi;
}

NC_TLM_EXPORT const char* normcore_sim_kind() {
  return "tlm";
}

NC_TLM_EXPORT const char* normcore_sim_config() {
  try {
    return normcore::tlmdev::built_config().c_str();
  } catch (...) {
    return nullptr;
  }
}

NC_TLM_EXPORT normcore::Device* normcore_sim_open(const normcore::DeviceSpec& spec,
                                                  const normcore::Manifest& manifest,
                                                  std::string* error) {
  using namespace normcore;
  try {
    const auto want = nlohmann::json::parse(manifest.config_json);
    if (want.dump() != tlmdev::built_config()) {
      throw DeviceError("device '" + spec.text + "': manifest mismatch: " + manifest.source +
                        " describes config " + manifest.config_json +
                        " but the plugin was built for " + tlmdev::built_config() + " (from " +
                        sim::model::kManifest + ")");
    }
    const tlmdev::Options opt = tlmdev::Options::read(spec);
    return std::make_unique<tlmdev::TlmDevice>(spec, manifest, opt).release();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = e.what();
  } catch (...) {
    if (error != nullptr) *error = "device '" + spec.text + "': unknown error in the tlm plugin";
  }
  return nullptr;
}

// libsystemc.so refers to sc_main (its own main() calls it); a plugin is no SystemC program.
NC_TLM_EXPORT int sc_main(int, char**) {
  std::fprintf(stderr, "libnormcore_tlm.so is a plugin of the normcore runtime, not a program\n");
  return 1;
}

}  // extern "C"
