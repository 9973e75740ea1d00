// Cycle-level harness for a Verilated normcore accelerator (class Vtop, built per config with the
// NC_* defines): the AXI4 memory model on m_axi_*, an AXI4-Lite master on s_axil_*, and helpers
// to lay out tensors and parameters in memory, program a job through the generated register
// header (accel_regs.hpp) and read the result back.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Vcore.h"
#include "accel_regs.hpp"
#include "axi_mem.hpp"
#include "axil_master.hpp"
#include "normcore/contract.hpp"
#include "normcore/util/bits.hpp"
#include "spec_harness.hpp"
#include "verilated.h"
#include "vharness.hpp"

namespace normcore::sim {

namespace R = accel_regs;
using Vtop = Vcore;  // the Verilated top (normcore_verilate_program names every model Vcore)

struct AccelShape {
  int lanes = NC_LANES;
  int xw = NC_XW;
  bool x_signed = NC_XS != 0;
  int yw = NC_YW;
  bool y_signed = NC_YS != 0;
  int sw = NC_SW;
  int bw = NC_BW;
  int max_channels = NC_MAXC;
  int inner_bits = NC_HWW;
  int bus_bits = NC_BUS;
  int addr_bits = NC_ADDR;
  ArithSpec arith() const { return design_arith(xw, x_signed, sw, bw, yw, y_signed); }
  int bus_bytes() const { return bus_bits / 8; }
  int entry_bytes() const { return sw + bw <= 64 ? 8 : 16; }
};

struct AccelJob {
  int channels = 1;
  std::uint64_t inner = 1, outer = 1;
  Layout layout = Layout::nchw;
  JobSettings settings;
  std::uint64_t src = 0x10000, dst = 0x200000, param = 0x1000;
  std::vector<std::int64_t> scale, shift, x;
  std::uint64_t elements() const { return static_cast<std::uint64_t>(channels) * inner * outer; }
};

inline std::uint64_t bytes_for_bits(std::uint64_t n) {
  return bits::bytes_for(n);
}

class AccelDriver {
 public:
  explicit AccelDriver(AxiMemConfig mc, std::uint64_t seed = 1)
      : mem_(std::make_unique<AxiMemory>(with_bus(std::move(mc)))),
        sig_(mem_->make_signals()),
        axil_(std::make_unique<AxilMaster<Vtop>>(
            *top_, [this] { tick(); }, seed)),
        rng_(seed) {
    axil_->idle();
  }
  AccelDriver(const AccelDriver&) = delete;
  AccelDriver& operator=(const AccelDriver&) = delete;

  Vtop& top() { return *top_; }
  AxiMemory& mem() { return *mem_; }
  AxilMaster<Vtop>& axil() { return *axil_; }
  const AccelShape& shape() const { return shape_; }
  std::uint64_t cycle() const { return h_.cycle(); }
  std::mt19937_64& rng() { return rng_; }

  // One clock with the memory model stepped (the AXI4-Lite master calls this too).
  void tick() {
    h_.tick(
        [this] {
          mem_->drive(sig_);
          to_top(sig_, *top_);
        },
        [this] {
          from_top(*top_, sig_);
          mem_->sample(sig_);
        });
  }

  // Four clocks in reset (the memory model not stepped), then the memory model's reset.
  void reset() {
    h_.reset(4);
    mem_->reset();
  }

  std::uint32_t rd(std::uint32_t off, AxilResp* resp = nullptr) { return axil_->read(off, resp); }
  AxilResp wr(std::uint32_t off, std::uint32_t v) { return axil_->write(off, v); }
  void wr64(std::uint32_t lo_off, std::uint64_t v) {
    wr(lo_off, static_cast<std::uint32_t>(v));
    wr(lo_off + 4, static_cast<std::uint32_t>(v >> 32));
  }

  // Lays out the parameters and the packed input tensor in memory and opens the regions the job
  // may touch (reads: whole bus words; writes: exactly the output bytes).
  void stage(const AccelJob& j) {
    mem_->clear_regions();
    stage_data(j);
  }
  // The same, adding to the open regions (several jobs staged at once: the descriptor ring).
  void stage_data(const AccelJob& j) {
    const ArithSpec a = shape_.arith();
    const int eb = shape_.entry_bytes();
    std::vector<std::uint8_t> pb(static_cast<std::size_t>(j.channels * eb), 0);
    for (int c = 0; c < j.channels; ++c) {
      // {b, s}: s in the low sw bits, b above it.
      const std::uint64_t at = static_cast<std::uint64_t>(c * eb) * 8;
      const auto i = static_cast<std::size_t>(c);
      bits::put(pb, at, a.sw, bits::truncate(j.scale[i], a.sw));
      bits::put(pb, at + static_cast<std::uint64_t>(a.sw), a.bw, bits::truncate(j.shift[i], a.bw));
    }
    mem_->write_bytes(j.param, pb);
    mem_->write_bytes(j.src, bits::pack(j.x, a.xw));
    const std::uint64_t bb = static_cast<std::uint64_t>(shape_.bus_bytes());
    auto up = [&](std::uint64_t n) { return (n + bb - 1) / bb * bb; };
    mem_->allow_read(j.param, up(pb.size()));
    mem_->allow_read(j.src, up(bytes_for_bits(j.elements() * static_cast<std::uint64_t>(a.xw))));
    mem_->allow_write(j.dst, bytes_for_bits(j.elements() * static_cast<std::uint64_t>(a.yw)));
  }

  // Programs the job registers (not START).
  void program(const AccelJob& j) {
    const auto& st = j.settings;
    wr(R::CHANNELS_OFFSET, static_cast<std::uint32_t>(j.channels));
    wr(R::INNER_OFFSET, static_cast<std::uint32_t>(j.inner));
    wr(R::OUTER_OFFSET, static_cast<std::uint32_t>(j.outer));
    std::uint32_t mode = 0;
    mode = R::field_set(mode, R::MODE_LAYOUT_MASK, R::MODE_LAYOUT_SHIFT, j.layout == Layout::nhwc);
    mode = R::field_set(mode, R::MODE_ROUNDING_MASK, R::MODE_ROUNDING_SHIFT,
                        static_cast<std::uint32_t>(st.rounding));
    mode = R::field_set(mode, R::MODE_SHIFT_MASK, R::MODE_SHIFT_SHIFT,
                        static_cast<std::uint32_t>(st.shift));
    wr(R::MODE_OFFSET, mode);
    wr(R::CLAMP_LO_OFFSET, static_cast<std::uint32_t>(bits::truncate(st.lo, shape_.yw)));
    wr(R::CLAMP_HI_OFFSET, static_cast<std::uint32_t>(bits::truncate(st.hi, shape_.yw)));
    wr64(R::SRC_LO_OFFSET, j.src);
    wr64(R::DST_LO_OFFSET, j.dst);
    wr64(R::PARAM_LO_OFFSET, j.param);
  }

  void start(bool irq = true) {
    std::uint32_t ctrl = R::CTRL_START_MASK;
    if (irq) ctrl |= R::CTRL_IRQ_EN_DONE_MASK | R::CTRL_IRQ_EN_ERROR_MASK;
    wr(R::CTRL_OFFSET, ctrl);
  }

  // Waits for irq_o (polls no registers meanwhile). False on a time-out.
  bool wait_irq(std::uint64_t limit) {
    for (std::uint64_t i = 0; i < limit; ++i) {
      if (top_->irq_o) return true;
      tick();
    }
    return top_->irq_o != 0;
  }

  std::vector<std::int64_t> read_output(const AccelJob& j) {
    const ArithSpec a = shape_.arith();
    const auto n = j.elements();
    const auto bytes =
        mem_->read_bytes(j.dst, bytes_for_bits(n * static_cast<std::uint64_t>(a.yw)));
    return bits::unpack(bytes, n, a.yw, a.y_signed);
  }

 private:
  static AxiMemConfig with_bus(AxiMemConfig mc) {
    mc.data_bits = NC_BUS;
    mc.addr_bits = NC_ADDR;
    return mc;
  }
  AccelShape shape_;
  VHarness<Vtop> h_;
  Vtop* const top_ = &h_.top();  // the harness's model
  std::unique_ptr<AxiMemory> mem_;
  AxiSignals sig_;
  std::unique_ptr<AxilMaster<Vtop>> axil_;
  std::mt19937_64 rng_;
};

}  // namespace normcore::sim
