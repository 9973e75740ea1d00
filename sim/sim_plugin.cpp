// The `sim` device backend: a Verilated accelerator top (<name>_top) with the AXI4 memory model
// (axi_mem.hpp) on its m_axi_* port and the AXI4-Lite master (axil_master.hpp) on s_axil_*, as a
// normcore::Device. Built once per generated device as a plugin,
// <devices>/<name>/libnormcore_sim.so (sim/models.cmake), and loaded by the runtime's sim backend
// (runtime/src/sim_loader.cpp), which documents the exported ABI. The build generates
// nc_sim_model.hpp: the model class and the manifest "config" object this plugin was built for.
//
// Device string: sim:<manifest>[,latency=N][,stall=P][,seed=N][,trace=<file.vcd|file.fst>]
//                [,trace_from=N][,trace_to=N][,mem=<bytes>][,fail_job=N][,fail=read|write]
//                [,hang_job=N][,lib=<path>  (read by the loader)]
//   latency   memory read and write latency in cycles (default 8)
//   stall     probability of a random stall per cycle on AR, AW, W ready and on R (default 0)
//   seed      seed of the memory model's and the AXI4-Lite master's randomness (default 1)
//   trace     trace file of every signal, both clock edges (written until the device is closed):
//             VCD from libnormcore_sim.so (verilator --trace); a name ending in .fst needs the
//             FST build libnormcore_sim_fst.so (--trace-fst; the loader picks it), each refuses
//             the other format. Timescale 1 ps; one clock = the manifest's clock_mhz period
//             (P = round(10^6 / clock_mhz) ps, 10000 at the default 100 MHz): clock k (rising
//             edges counted from 0 since open, the 4 reset clocks included) is dumped at k*P
//             (clk_i low, inputs settled) and k*P + P/2 (after the rising edge)
//   trace_from, trace_to  dump only clocks trace_from..trace_to (defaults: all)
//   mem       bytes of the DMA region at 0x4000_0000 (default 1 GiB, clipped to the address width)
//   fail_job  the N-th job (START jobs and ring descriptors that pass validation, counted from 1
//             since open: runtime/src/device_options.hpp states the rule) meets a bus error:
//   fail      ... SLVERR on bursts touching SRC (read, default) or DST (write)
//   hang_job  during the N-th job the memory stops answering until CTRL.soft_reset is written
//             (a ring job: its read side, from the job's input read on)
//
// DMA buffers are carved from the region with the shared AddressAllocator; each keeps a host
// shadow (map()) that sync_to_device()/sync_from_device() copy into/out of the memory model. The
// memory model's allowed regions are always exactly the live buffers (reads: whole bus words), so
// any DMA outside a buffer is an AXI violation, reported once as a DeviceError after ticking.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "axi_mem.hpp"
#include "axil_master.hpp"
#include "nc_sim_model.hpp"  // generated: normcore::sim::model::{Top, kConfigJson, kManifest}
#include "normcore/util/hex.hpp"
#include "plugin_common.hpp"
#include "verilated.h"
#include "vharness.hpp"

namespace normcore::sim {
namespace {

using Top = model::Top;
constexpr std::uint64_t kClockCheckCycles = 1024;

// trace=<file>: .fst only from the FST build, anything else only from the VCD build.
void check_trace_format(const DeviceSpec& spec, const std::string& path) {
  const bool fst = path.size() >= 4 && path.compare(path.size() - 4, 4, ".fst") == 0;
  const bool have_fst = std::string(kTraceFormat) == "fst";
  if (fst == have_fst) return;
  throw DeviceError("device '" + spec.text + "': option trace=" + path +
                    (fst ? ": FST needs the FST build of the plugin (libnormcore_sim_fst.so: "
                           "`normcore sim-build DIR --fst`, or NORMCORE_FST_DEVICES); this one "
                           "writes VCD"
                         : ": this plugin (libnormcore_sim_fst.so) writes FST: name the file "
                           "*.fst, or use libnormcore_sim.so for VCD"));
}

// Clock period of the trace in ps (the model's time precision).
std::uint64_t trace_period_ps(const Manifest& manifest) {
  return manifest.config.accel.core.clock_period_ps();
}

struct Options {
  unsigned latency = 8;
  double stall = 0.0;
  std::uint64_t seed = 1;
  std::string trace;
  TraceOptions window;
  std::uint64_t mem = std::uint64_t{1} << 30;
  detail::FaultOptions faults;

  static Options read(const DeviceSpec& spec) {
    const detail::OptionReader r(spec);
    Options o;
    o.latency = static_cast<unsigned>(r.u64("latency", o.latency, 1, 1'000'000));
    o.stall = r.probability("stall", o.stall);
    o.seed = spec.get_u64("seed", o.seed);
    o.trace = r.text("trace", "");
    o.window.from = r.u64("trace_from", 0, 0, UINT64_MAX);
    o.window.to = r.u64("trace_to", UINT64_MAX, 0, UINT64_MAX);
    if (o.window.to < o.window.from) {
      throw DeviceError("device '" + spec.text +
                        "': option trace_to=" + std::to_string(o.window.to) +
                        " is before trace_from=" + std::to_string(o.window.from));
    }
    if (!o.trace.empty()) check_trace_format(spec, o.trace);
    o.mem = r.at_least("mem", o.mem, 4096);
    o.faults = r.faults();
    return o;
  }
};

// The AXI4 memory model as the plugin's buffer region.
struct Memory final : plugin::BufferRegion {
  Memory(AxiMemConfig cfg, std::uint64_t base, std::uint64_t size)
      : plugin::BufferRegion(base, size, static_cast<std::uint64_t>(cfg.data_bits / 8)),
        axi(std::move(cfg)) {
    on_buffers_changed();
  }

  void write(std::uint64_t addr, std::span<const std::uint8_t> bytes) override {
    axi.write_bytes(addr, bytes);
  }
  void read(std::uint64_t addr, std::span<std::uint8_t> bytes) override {
    axi.memory().read_into(addr, bytes);
  }

  AxiMemory axi;

 protected:
  // Allowed AXI regions = the live buffers. A zero-size range keeps the lists non-empty, so with
  // no buffer at all every access is outside (an empty list would allow everything).
  void on_buffers_changed() override {
    axi.clear_regions();
    axi.allow_read(0, 0);
    axi.allow_write(0, 0);
    for (const auto& [addr, bytes] : live()) {
      axi.allow_read(addr, round_up(bytes));
      axi.allow_write(addr, bytes);
    }
  }
};

class SimDevice final : public plugin::PluginDevice {
 public:
  SimDevice(const DeviceSpec& spec, const Manifest& manifest, Options opt)
      : plugin::PluginDevice(spec, manifest, opt.faults), opt_(std::move(opt)) {
    const DeviceConfig& c = manifest.config;
    AxiMemConfig mc;
    mc.data_bits = c.bus_bits;
    mc.addr_bits = c.addr_bits;
    mc.read_latency = opt_.latency;
    mc.write_latency = opt_.latency;
    mc.p_arready_low = mc.p_awready_low = mc.p_wready_low = mc.p_r_idle = opt_.stall;
    mc.seed = opt_.seed;
    mem_ = std::make_shared<Memory>(std::move(mc), plugin::kRegionBase,
                                    plugin::region_size(opt_.mem, c.addr_bits));
    mem_->counters = &mutable_counters();
    sig_ = mem_->axi.make_signals();

    h_ = std::make_unique<VHarness<Top>>(!opt_.trace.empty());
    top_ = &h_->top();
    if (!opt_.trace.empty()) {
      try {
        TraceOptions t = opt_.window;
        t.period = trace_period_ps(manifest);
        h_->open_trace(opt_.trace, t);
      } catch (const std::runtime_error& e) {
        throw DeviceError(name() + ": " + e.what());
      }
    }
    axil_ = std::make_unique<AxilMaster<Top>>(
        *top_, [this] { tick(); }, opt_.seed);
    axil_->idle();
    reset();
  }

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    return plugin::alloc_buffer(mem_, name(), bytes, align);
  }

  bool wait_irq(std::chrono::milliseconds timeout) override {
    ++mutable_counters().irq_waits;
    if (top_->irq_o != 0) return true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool irq = false;
    while (!irq) {
      for (std::uint64_t i = 0; i < kClockCheckCycles && !irq; ++i) {
        tick();
        irq = top_->irq_o != 0;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
    }
    check_violations();
    return irq;
  }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override {
    AxilResp resp = AxilResp::okay;
    const std::uint32_t v = lite([&] { return axil_->read(offset, &resp); }, "read", offset);
    if (resp != AxilResp::okay) {
      throw DeviceError(name() + ": register read at offset " + hex(offset) + " answered " +
                        to_string(resp));
    }
    return v;
  }

  void write_register(std::uint32_t offset, std::uint32_t value) override {
    AxilResp resp = AxilResp::okay;
    lite(
        [&] {
          resp = axil_->write(offset, value);
          return 0U;
        },
        "write", offset);
    if (resp != AxilResp::okay) {
      throw DeviceError(name() + ": register write of " + hex(value) + " at offset " + hex(offset) +
                        " answered " + to_string(resp));
    }
  }

  std::optional<std::uint32_t> peek_register(std::uint32_t offset) override {
    AxilResp resp = AxilResp::okay;
    const std::uint32_t st =
        lite([&] { return axil_->read(offset, &resp); }, "read (fault injection)", offset);
    if (resp != AxilResp::okay) return std::nullopt;
    return st;
  }

  void end_hang() override { mem_->axi.set_hang(false); }

  void arm(const JobFaults& f) override {
    mem_->axi.clear_read_errors();
    mem_->axi.clear_write_errors();
    if (f.fail) {
      if (f.fail_write) {
        mem_->axi.add_write_error({f.addr, 1, AxiResp::slverr});
      } else {
        mem_->axi.add_read_error({f.addr, 1, AxiResp::slverr});
      }
    }
    mem_->axi.set_hang(f.hang);
    if (f.hang_read) mem_->axi.hang_from_read(*f.hang_read);
  }

  void read_memory(std::uint64_t addr, std::span<std::uint8_t> bytes) override {
    mem_->axi.memory().read_into(addr, bytes);
  }

 private:
  // One clock with the memory model stepped (the AXI4-Lite master calls this too).
  void tick() {
    h_->tick(
        [this] {
          mem_->axi.drive(sig_);
          to_top(sig_, *top_);
        },
        [this] {
          from_top(*top_, sig_);
          mem_->axi.sample(sig_);
        });
  }

  // Four clocks in reset (the memory model not stepped), then the memory model's reset.
  void reset() {
    h_->reset(4);
    mem_->axi.reset();
  }

  // Runs one AXI4-Lite transaction; a stuck register block becomes a DeviceError. Then reports
  // protocol violations seen while the clock ran.
  template <class F>
  std::uint32_t lite(F&& f, const char* what, std::uint32_t offset) {
    std::uint32_t v = 0;
    try {
      v = f();
    } catch (const std::runtime_error& e) {
      throw DeviceError(name() + ": register " + what + " at offset " + hex(offset) + ": " +
                        e.what());
    }
    check_violations();
    return v;
  }

  void check_violations() {
    if (reported_) return;
    const auto& axi = mem_->axi;
    if (axi.violation_count() > 0) {
      reported_ = true;
      const std::string first = axi.violations().empty() ? "?" : axi.violations().front();
      throw DeviceError(name() + ": sim: AXI protocol violation: " + first +
                        (axi.violation_count() > 1
                             ? " (" + std::to_string(axi.violation_count()) + " in total)"
                             : ""));
    }
    if (!axil_->errors().empty()) {
      reported_ = true;
      throw DeviceError(name() + ": sim: AXI4-Lite protocol violation: " + axil_->errors().front());
    }
  }

  Options opt_;
  bool reported_ = false;  // a violation was reported (only the first is)

  std::shared_ptr<Memory> mem_;
  AxiSignals sig_;
  std::unique_ptr<VHarness<Top>> h_;  // clock, reset, trace; owns the model
  Top* top_ = nullptr;                // h_'s model
  std::unique_ptr<AxilMaster<Top>> axil_;
};

}  // namespace
}  // namespace normcore::sim

namespace normcore::plugin {
const PluginInfo kPlugin{"sim", sim::model::kConfigJson, sim::model::kManifest,
                         [](const DeviceSpec& spec, const Manifest& manifest) {
                           return std::unique_ptr<Device>(std::make_unique<sim::SimDevice>(
                               spec, manifest, sim::Options::read(spec)));
                         }};
}  // namespace normcore::plugin
