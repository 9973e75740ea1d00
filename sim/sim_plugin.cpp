// The `sim` device backend: a Verilated accelerator top (<name>_top) with the AXI4 memory model
// (axi_mem.hpp) on its m_axi_* port and the AXI4-Lite master (axil_master.hpp) on s_axil_*, as a
// normcore::Device. Built once per generated device as a plugin,
// <devices>/<name>/libnormcore_sim.so (sim/models.cmake), and loaded by the runtime's sim backend
// (runtime/src/sim_loader.cpp), which documents the exported ABI. The build generates
// nc_sim_model.hpp: the model class and the manifest "config" object this plugin was built for.
//
// Device string: sim:<manifest>[,latency=N][,stall=P][,seed=N][,trace=<file.vcd>][,mem=<bytes>]
//                [,fail_job=N][,fail=read|write][,hang_job=N][,lib=<path>  (read by the loader)]
//   latency   memory read and write latency in cycles (default 8)
//   stall     probability of a random stall per cycle on AR, AW, W ready and on R (default 0)
//   seed      seed of the memory model's and the AXI4-Lite master's randomness (default 1)
//   trace     VCD file of every signal, each clock edge (written until the device is closed)
//   mem       bytes of the DMA region at 0x4000_0000 (default 1 GiB, clipped to the address width)
//   fail_job  the N-th START accepted while idle (counted from 1 since open) meets a bus error:
//   fail      ... SLVERR on bursts touching SRC (read, default) or DST (write)
//   hang_job  during the N-th such job the memory stops answering until CTRL.soft_reset is written
//
// DMA buffers are carved from the region with the shared AddressAllocator; each keeps a host
// shadow (map()) that sync_to_device()/sync_from_device() copy into/out of the memory model. The
// memory model's allowed regions are always exactly the live buffers (reads: whole bus words), so
// any DMA outside a buffer is an AXI violation, reported once as a DeviceError after ticking.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../runtime/src/addr_alloc.hpp"
#include "axi_mem.hpp"
#include "axil_master.hpp"
#include "nc_sim_model.hpp"  // generated: normcore::sim::model::{Top, kConfigJson, kManifest}
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "verilated.h"
#include "verilated_vcd_c.h"

#define NC_SIM_EXPORT __attribute__((visibility("default")))

namespace normcore::sim {
namespace {

using Top = model::Top;
constexpr int kAbi = 1;  // runtime/src/sim_loader.cpp: kSimPluginAbi
constexpr std::uint64_t kRegionBase = 0x4000'0000;
constexpr std::uint64_t kClockCheckCycles = 1024;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}

const std::string& built_config() {
  static const std::string canonical = nlohmann::json::parse(model::kConfigJson).dump();
  return canonical;
}

struct Options {
  unsigned latency = 8;
  double stall = 0.0;
  std::uint64_t seed = 1;
  std::string trace;
  std::uint64_t mem = std::uint64_t{1} << 30;
  std::uint64_t fail_job = 0;  // 0: never
  bool fail_write = false;
  std::uint64_t hang_job = 0;  // 0: never

  static Options read(const DeviceSpec& spec) {
    const std::string who = "device '" + spec.text + "': ";
    Options o;
    const std::uint64_t lat = spec.get_u64("latency", o.latency);
    if (lat < 1 || lat > 1'000'000) {
      throw DeviceError(who + "option latency=" + std::to_string(lat) + " must be 1..1000000");
    }
    o.latency = static_cast<unsigned>(lat);
    o.stall = spec.get_double("stall", o.stall);
    if (!(o.stall >= 0.0 && o.stall < 1.0)) {
      throw DeviceError(who + "option stall=" + spec.get("stall", "") +
                        " must be a probability in [0, 1)");
    }
    o.seed = spec.get_u64("seed", o.seed);
    o.trace = spec.get("trace", "");
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

// The memory side, shared with the buffers (weakly: a buffer may outlive its device).
struct Memory {
  Memory(AxiMemConfig cfg, std::uint64_t base, std::uint64_t size)
      : axi(std::move(cfg)), alloc(base, size), bus_bytes(axi.data_bytes()) {}

  // Allowed AXI regions = the live buffers. A zero-size range keeps the lists non-empty, so with
  // no buffer at all every access is outside (an empty list would allow everything).
  void update_regions() {
    axi.clear_regions();
    axi.allow_read(0, 0);
    axi.allow_write(0, 0);
    for (const auto& [addr, bytes] : live) {
      axi.allow_read(addr, round_up(bytes));
      axi.allow_write(addr, bytes);
    }
  }
  std::uint64_t round_up(std::uint64_t n) const {
    return (n + bus_bytes - 1) / bus_bytes * bus_bytes;
  }

  void release(std::uint64_t addr) {
    const auto it = live.find(addr);
    if (it == live.end()) return;
    if (counters != nullptr) counters->buffer_bytes -= it->second;
    live.erase(it);
    alloc.release(addr);
    update_regions();
  }

  AxiMemory axi;
  detail::AddressAllocator alloc;
  std::uint64_t bus_bytes;
  std::map<std::uint64_t, std::uint64_t> live;  // device address -> bytes
  DeviceCounters* counters = nullptr;           // the device's (valid while it lives)
};

class SimBuffer final : public DmaBuffer {
 public:
  SimBuffer(std::weak_ptr<Memory> mem, std::string device, std::uint64_t addr, std::size_t bytes)
      : mem_(std::move(mem)), device_(std::move(device)), addr_(addr), shadow_(bytes, 0) {}
  ~SimBuffer() override {
    if (auto m = mem_.lock()) m->release(addr_);
  }

  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return shadow_.size(); }
  [[nodiscard]] std::span<std::uint8_t> map() override { return shadow_; }

  void sync_to_device(std::size_t offset, std::size_t length) override {
    auto m = checked(offset, length, "sync_to_device");
    m->axi.write_bytes(addr_ + offset,
                       std::span<const std::uint8_t>(shadow_).subspan(offset, length));
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    auto m = checked(offset, length, "sync_from_device");
    m->axi.memory().read_into(addr_ + offset,
                              std::span<std::uint8_t>(shadow_).subspan(offset, length));
  }

 private:
  std::shared_ptr<Memory> checked(std::size_t offset, std::size_t length, const char* what) const {
    if (offset > shadow_.size() || length > shadow_.size() - offset) {
      throw DeviceError(device_ + ": " + what + "(" + std::to_string(offset) + ", " +
                        std::to_string(length) + ") is outside the " +
                        std::to_string(shadow_.size()) + "-byte buffer at " + hex(addr_));
    }
    auto m = mem_.lock();
    if (!m) throw DeviceError(device_ + ": " + what + " on a buffer whose device was closed");
    return m;
  }

  std::weak_ptr<Memory> mem_;
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

class SimDevice final : public Device {
 public:
  SimDevice(const DeviceSpec& spec, const Manifest& manifest, Options opt)
      : Device(spec.text, manifest),
        opt_(std::move(opt)),
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
    AxiMemConfig mc;
    mc.data_bits = c.bus_bits;
    mc.addr_bits = c.addr_bits;
    mc.read_latency = opt_.latency;
    mc.write_latency = opt_.latency;
    mc.p_arready_low = mc.p_awready_low = mc.p_wready_low = mc.p_r_idle = opt_.stall;
    mc.seed = opt_.seed;
    std::uint64_t size = opt_.mem;
    if (c.addr_bits < 64) size = std::min(size, (std::uint64_t{1} << c.addr_bits) - kRegionBase);
    mem_ = std::make_shared<Memory>(std::move(mc), kRegionBase, size);
    mem_->counters = &mutable_counters();
    mem_->update_regions();
    sig_ = mem_->axi.make_signals();

    ctx_ = std::make_unique<VerilatedContext>();
    if (!opt_.trace.empty()) ctx_->traceEverOn(true);
    top_ = std::make_unique<Top>(ctx_.get(), "TOP");
    if (!opt_.trace.empty()) {
      vcd_ = std::make_unique<VerilatedVcdC>();
      top_->trace(vcd_.get(), 99);
      vcd_->open(opt_.trace.c_str());
      if (!vcd_->isOpen()) {
        throw DeviceError(name() + ": cannot write the trace file " + opt_.trace);
      }
    }
    axil_ = std::make_unique<AxilMaster<Top>>(
        *top_, [this] { tick(); }, opt_.seed);
    top_->clk_i = 0;
    top_->rst_ni = 0;
    axil_->idle();
    reset();
  }

  ~SimDevice() override {
    if (vcd_) {
      vcd_->flush();
      vcd_->close();
    }
    top_->final();
  }

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    if (bytes == 0) throw DeviceError(name() + ": alloc of 0 bytes");
    if (align == 0 || (align & (align - 1)) != 0) {
      throw DeviceError(name() + ": alloc alignment " + std::to_string(align) +
                        " is not a power of two");
    }
    Memory& m = *mem_;
    const std::uint64_t a = std::max<std::uint64_t>(align, m.bus_bytes);
    std::optional<std::uint64_t> at;
    if (bytes <= m.alloc.size()) at = m.alloc.allocate(m.round_up(bytes), a);
    if (!at) {
      throw DeviceError(name() + ": out of device memory: " + std::to_string(bytes) +
                        " bytes (alignment " + std::to_string(a) + ") requested, " +
                        std::to_string(m.alloc.in_use()) + " of " + std::to_string(m.alloc.size()) +
                        " bytes in use (option mem=)");
    }
    auto buf = std::make_unique<SimBuffer>(mem_, name(), *at, bytes);
    m.live[*at] = bytes;
    m.update_regions();
    ++mutable_counters().buffers;
    mutable_counters().buffer_bytes += bytes;
    return buf;
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

  void do_write32(std::uint32_t offset, std::uint32_t value) override {
    if (offset == ctrl_) before_ctrl_write(value);
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
  // One clock with the memory model stepped (the AXI4-Lite master calls this too).
  void tick() {
    if (in_reset_) {
      top_->clk_i = 0;
      top_->eval();
    } else {
      mem_->axi.drive(sig_);
      to_top(sig_, *top_);
      top_->clk_i = 0;
      top_->eval();
      from_top(*top_, sig_);
      mem_->axi.sample(sig_);
    }
    dump();
    top_->clk_i = 1;
    top_->eval();
    dump();
  }

  void dump() {
    if (!vcd_) return;
    vcd_->dump(static_cast<std::uint64_t>(ctx_->time()));
    ctx_->timeInc(1);
  }

  void reset() {
    in_reset_ = true;
    top_->rst_ni = 0;
    for (int i = 0; i < 4; ++i) tick();
    top_->rst_ni = 1;
    in_reset_ = false;
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

  // Fault injection: watches CTRL writes. A soft reset ends a hang; a START accepted while idle
  // is counted, clears the faults of the previous job and arms the ones of this job.
  void before_ctrl_write(std::uint32_t value) {
    if (opt_.fail_job == 0 && opt_.hang_job == 0) return;
    if (soft_reset_.get(value) != 0) {
      mem_->axi.set_hang(false);  // soft reset wins over a START in the same write
      return;
    }
    if (start_.get(value) == 0) return;
    AxilResp resp = AxilResp::okay;
    const std::uint32_t st =
        lite([&] { return axil_->read(status_, &resp); }, "read (STATUS before START)", status_);
    if (resp != AxilResp::okay || busy_.get(st) != 0) return;  // START ignored while busy
    ++jobs_;
    mem_->axi.clear_read_errors();
    mem_->axi.clear_write_errors();
    if (jobs_ == opt_.fail_job) {
      if (opt_.fail_write) {
        mem_->axi.add_write_error({dst_, 1, AxiResp::slverr});
      } else {
        mem_->axi.add_read_error({src_, 1, AxiResp::slverr});
      }
    }
    mem_->axi.set_hang(jobs_ == opt_.hang_job);
  }

  Options opt_;
  std::uint32_t ctrl_, status_;
  FieldDesc start_, soft_reset_, busy_;
  std::optional<std::uint32_t> src_lo_, src_hi_, dst_lo_, dst_hi_;
  std::uint64_t src_ = 0, dst_ = 0;  // as written by the host
  std::uint64_t jobs_ = 0;           // STARTs accepted while idle (when faults are configured)
  bool reported_ = false;            // a violation was reported (only the first is)
  bool in_reset_ = false;

  std::shared_ptr<Memory> mem_;
  AxiSignals sig_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Top> top_;
  std::unique_ptr<VerilatedVcdC> vcd_;
  std::unique_ptr<AxilMaster<Top>> axil_;
};

}  // namespace
}  // namespace normcore::sim

extern "C" {

NC_SIM_EXPORT int normcore_sim_abi() {
  return normcore::sim::kAbi;
}

NC_SIM_EXPORT const char* normcore_sim_config() {
  try {
    return normcore::sim::built_config().c_str();
  } catch (...) {
    return nullptr;
  }
}

NC_SIM_EXPORT normcore::Device* normcore_sim_open(const normcore::DeviceSpec& spec,
                                                  const normcore::Manifest& manifest,
                                                  std::string* error) {
  using namespace normcore;
  try {
    const auto want = nlohmann::json::parse(manifest.config_json);
    if (want.dump() != sim::built_config()) {
      throw DeviceError("device '" + spec.text + "': manifest mismatch: " + manifest.source +
                        " describes config " + manifest.config_json +
                        " but the plugin was built for " + sim::built_config() + " (from " +
                        sim::model::kManifest + ")");
    }
    const sim::Options opt = sim::Options::read(spec);
    return std::make_unique<sim::SimDevice>(spec, manifest, opt).release();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = e.what();
  } catch (...) {
    if (error != nullptr) *error = "device '" + spec.text + "': unknown error in the sim plugin";
  }
  return nullptr;
}

}  // extern "C"
