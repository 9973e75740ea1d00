// The `tlm` device backend: the SystemC/TLM-2.0 model of a generated accelerator (the Verilated
// RTL built with verilator --sc inside normcore::vp::TlmAccelerator, sim/tlm_bridge.hpp) with a
// TLM memory (vp::TlmMemory) on its DMA socket and a CPU-side initiator (vp::HostPort) on its
// register socket, as a normcore::Device. Built once per generated device as a plugin,
// <devices>/<name>/libnormcore_tlm.so (sim/tlm.cmake), and loaded by the runtime's plugin loader
// (runtime/src/sim_loader.cpp: same ABI as the sim plugin, plus normcore_sim_kind() = "tlm").
//
// Device string: tlm:<manifest>[,latency=N][,mem=<bytes>][,trace=<file.vcd>][,trace_from=N]
//                [,trace_to=N][,fail_job=N][,fail=read|write][,hang_job=N]
//                [,lib=<path>  (read by the loader)]
//   latency   annotated delay of every memory transaction, in clock cycles (default 8)
//   mem       bytes of the DMA region at 0x4000_0000 (default 1 GiB, clipped to the address width)
//   fail_job  the N-th job (START jobs and ring descriptors that pass validation, counted from 1
//             since open: runtime/src/device_options.hpp states the rule) meets a bus error:
//   fail      ... the TLM memory answers TLM_GENERIC_ERROR_RESPONSE to the transaction touching
//             SRC (read, default) or DST (write); the bridge turns it into SLVERR
//   hang_job  during the N-th job the memory's b_transport blocks until CTRL.soft_reset (a ring
//             job: its reads, from the job's input read on)
//   trace     VCD of every signal of the RTL (verilator --sc --trace; VCD only: a .fst name is
//             refused), dumped one delta after each clock edge, time in ps of the SystemC
//             kernel (timescale 1 ps, clock period P as above); the kernel's time runs on across
//             opens in one process, so clock k (= time / P) counts since the model elaborated
//   trace_from, trace_to  dump only clocks trace_from..trace_to
//
// The clock is the manifest's clock_mhz (default 100 MHz: 10 ns). Simulated time only advances
// inside calls: a register access
// runs the kernel until the access completed; wait_irq() runs it in slices of 20000 cycles until
// irq rises (an SC_METHOD calls sc_pause()) or the wall-clock timeout passed.
//
// SystemC elaborates once per process: the first open builds the platform and it lives until the
// process ends. Later opens of the same plugin reuse it (RTL reset, memory cleared, options
// applied); only one device may be open at a time, and another device configuration's tlm
// plugin cannot elaborate in a process whose kernel has started (both are clear DeviceErrors).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "nc_sim_model.hpp"  // generated: normcore::sim::model::{Top, kConfigJson, kManifest}
#include "normcore/util/hex.hpp"
#include "plugin_common.hpp"
#include "tlm_bridge.hpp"
#include "verilated_vcd_c.h"

namespace normcore::tlmdev {
namespace {

using Top = sim::model::Top;
using plugin::kRegionBase;
constexpr std::uint64_t kSliceCycles = 20000;
constexpr unsigned kAccessSlices = 50;  // a register access completes within 50 slices

// The clock: the manifest's clock_mhz period in whole ps (10 ns at the default 100 MHz), fixed
// when the process elaborates the model (platform()).
std::uint64_t g_period_ps = 10000;
sc_core::sc_time period() {
  return sc_core::sc_time(static_cast<double>(g_period_ps), sc_core::SC_PS);
}

struct Options {
  std::uint64_t latency = 8;
  std::uint64_t mem = std::uint64_t{1} << 30;
  std::string trace;
  std::uint64_t trace_from = 0, trace_to = UINT64_MAX;
  detail::FaultOptions faults;

  static Options read(const DeviceSpec& spec) {
    const detail::OptionReader r(spec);
    Options o;
    o.latency = r.u64("latency", o.latency, 0, 1'000'000);
    o.mem = r.at_least("mem", o.mem, 4096);
    o.trace = r.text("trace", "");
    o.trace_from = r.u64("trace_from", 0, 0, UINT64_MAX);
    o.trace_to = r.u64("trace_to", UINT64_MAX, 0, UINT64_MAX);
    const std::string who = "device '" + spec.text + "': option ";
    if (o.trace_to < o.trace_from) {
      throw DeviceError(who + "trace_to=" + std::to_string(o.trace_to) +
                        " is before trace_from=" + std::to_string(o.trace_from));
    }
    const auto& t = o.trace;
    if (t.size() >= 4 && t.compare(t.size() - 4, 4, ".fst") == 0) {
      throw DeviceError(who + "trace=" + t + ": the tlm plugin writes VCD only (FST: sim:)");
    }
    o.faults = r.faults();
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
    SC_METHOD(on_clock);
    sensitive << trace_start;
    dont_initialize();
  }

  // The trace of the open device (if any) and its window in clocks.
  std::unique_ptr<VerilatedVcdC> vcd;
  std::uint64_t trace_from = 0, trace_to = UINT64_MAX;
  bool dump_next = false;
  sc_core::sc_event trace_start;  // notified when a trace opens: on_clock follows the clock

  // While a trace is open, on each clock edge: once more one delta later (the RTL has evaluated
  // the edge), then dump. Without one it waits for trace_start (no cost per clock).
  void on_clock() {
    if (!vcd) return;
    if (!dump_next) {
      dump_next = true;
      next_trigger(sc_core::SC_ZERO_TIME);
      return;
    }
    dump_next = false;
    const auto t =
        static_cast<std::uint64_t>(sc_core::sc_time_stamp() / sc_core::sc_time(1, sc_core::SC_PS));
    const std::uint64_t k =
        t / static_cast<std::uint64_t>(period() / sc_core::sc_time(1, sc_core::SC_PS));
    if (k >= trace_from && k <= trace_to) vcd->dump(t);
    next_trigger(acc.clk.value_changed_event());
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
  Verilated::traceEverOn(true);  // before the model exists: trace= on any later open
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    throw DeviceError(who +
                      ": the SystemC kernel of this process was already started (by another "
                      "SystemC model, e.g. the tlm plugin of another device configuration); "
                      "SystemC cannot elaborate a model after sc_start: open one tlm device "
                      "configuration per process");
  }
  g_period_ps = manifest.config.accel.core.clock_period_ps();
  vp::BridgeConfig cfg;
  cfg.clock_period = period();
  cfg.reg_window_bytes = manifest.window_bytes();
  auto* p = new Platform("nc_tlm", cfg);
  g_platform = p;
  p->settle_reset();  // ends elaboration and runs the power-on reset
  return *p;
}

// The TLM memory as the plugin's buffer region (mem is null once the device is closed).
struct Session final : plugin::BufferRegion {
  using plugin::BufferRegion::BufferRegion;
  void write(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    mem->write(addr, bytes);
  }
  void read(std::uint64_t addr, std::span<std::uint8_t> bytes) override { mem->read(addr, bytes); }
  [[nodiscard]] bool is_open() const override { return mem != nullptr; }
  vp::TlmMemory<32>* mem = nullptr;
};

class TlmDevice final : public plugin::PluginDevice {
 public:
  TlmDevice(const DeviceSpec& spec, const Manifest& manifest, Options opt)
      : plugin::PluginDevice(spec, manifest, opt.faults),
        opt_(opt),
        p_(platform(spec.text, manifest)) {
    const DeviceConfig& c = manifest.config;
    const std::uint64_t size = plugin::region_size(opt_.mem, c.addr_bits);
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
    if (!opt_.trace.empty()) open_trace();
    g_open = true;
  }

  ~TlmDevice() override {
    if (p_.vcd) {
      p_.vcd->flush();
      p_.vcd->close();
      p_.vcd.reset();
    }
    session_->mem = nullptr;
    session_->counters = nullptr;
    p_.mem.set_fault(std::nullopt);
    p_.mem.set_hang(false);
    g_open = false;
  }

  TlmDevice(const TlmDevice&) = delete;
  TlmDevice& operator=(const TlmDevice&) = delete;

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    return plugin::alloc_buffer(session_, name(), bytes, align);
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

  void write_register(std::uint32_t offset, std::uint32_t value) override {
    const auto s = access(::tlm::TLM_WRITE_COMMAND, offset, &value, "write");
    if (s != ::tlm::TLM_OK_RESPONSE) {
      throw DeviceError(name() + ": register write of " + hex(value) + " at offset " + hex(offset) +
                        " answered " + describe(s));
    }
  }

  std::optional<std::uint32_t> peek_register(std::uint32_t offset) override {
    std::uint32_t st = 0;
    if (access(::tlm::TLM_READ_COMMAND, offset, &st, "read (fault injection)") !=
        ::tlm::TLM_OK_RESPONSE) {
      return std::nullopt;
    }
    return st;
  }

  void end_hang() override { p_.mem.set_hang(false); }

  void arm(const JobFaults& f) override {
    p_.mem.set_fault(std::nullopt);
    if (f.fail) {
      p_.mem.set_fault(
          vp::TlmMemory<32>::Fault{f.fail_write, f.addr, ::tlm::TLM_GENERIC_ERROR_RESPONSE});
    }
    p_.mem.set_hang(f.hang);
    if (f.hang_read) p_.mem.hang_from_read(*f.hang_read);
  }

  void read_memory(std::uint64_t addr, std::span<std::uint8_t> bytes) override {
    p_.mem.read(addr, bytes);
  }

 private:
  void open_trace() {
    auto vcd = std::make_unique<VerilatedVcdC>();
    p_.acc.rtl.trace(vcd.get(), 99);
    vcd->open(opt_.trace.c_str());
    if (!vcd->isOpen()) throw DeviceError(name() + ": cannot write the trace file " + opt_.trace);
    p_.trace_from = opt_.trace_from;
    p_.trace_to = opt_.trace_to;
    p_.dump_next = false;
    p_.vcd = std::move(vcd);
    p_.trace_start.notify(sc_core::SC_ZERO_TIME);
  }

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

  Options opt_;
  Platform& p_;
  std::shared_ptr<Session> session_;
  bool reported_ = false;
};

}  // namespace
}  // namespace normcore::tlmdev

namespace normcore::plugin {
const PluginInfo kPlugin{"tlm", sim::model::kConfigJson, sim::model::kManifest,
                         [](const DeviceSpec& spec, const Manifest& manifest) {
                           return std::unique_ptr<Device>(std::make_unique<tlmdev::TlmDevice>(
                               spec, manifest, tlmdev::Options::read(spec)));
                         }};
}  // namespace normcore::plugin

extern "C" {

// The tlm kind (plugin_common.cpp exports the rest of the ABI).
__attribute__((visibility("default"))) const char* normcore_sim_kind() {
  return "tlm";
}

// libsystemc.so refers to sc_main (its own main() calls it); a plugin is no SystemC program.
__attribute__((visibility("default"))) int sc_main(int, char**) {
  std::fprintf(stderr, "libnormcore_tlm.so is a plugin of the normcore runtime, not a program\n");
  return 1;
}

}  // extern "C"
