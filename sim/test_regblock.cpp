// Verilator test of the generated AXI4-Lite register block alone (default AccelConfig), driven
// by the AXI4-Lite master in axil_master.hpp. The expected register layout comes from the
// generated C header (the same description as the RTL); the hardware-side ports are named here.
// Covers: reset values, RW bit-bash and WSTRB lanes, RO and reserved bits, RO inputs, W1C (set
// wins over a simultaneous clear), W1S_SC pulses, SLVERR for unmapped offsets, AW/W ordering,
// back-to-back throughput, VALID not waiting for READY, and random traffic against a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vcore.h"
#include "axil_master.hpp"
#include "normcore/gen/accel.hpp"  // AccelConfig{}: the configuration regs_gen generated
#include "normcore_regs.h"
#include "verilated.h"
#include "vharness.hpp"

namespace normcore::sim {
namespace {

namespace R = normcore_regs;

std::uint32_t place(std::uint64_t v, std::uint32_t shift, std::uint32_t mask) {
  return static_cast<std::uint32_t>(v << shift) & mask;
}

// Bits of the fields of r with access a.
std::uint32_t access_mask(const R::RegDesc& r, R::Access a) {
  std::uint32_t m = 0;
  for (std::uint32_t i = 0; i < r.field_count; ++i) {
    if (r.fields[i].access == a) m |= r.fields[i].mask;
  }
  return m;
}

std::uint32_t strb_mask(unsigned strb) {
  std::uint32_t m = 0;
  for (int b = 0; b < 4; ++b) {
    if ((strb >> b) & 1U) m |= 0xFFU << (8 * b);
  }
  return m;
}

class Regblock : public ::testing::Test {
 protected:
  Regblock()
      : axil_(
            *top_, [this] { tick(); }, 12345) {}

  void SetUp() override {
    for (const auto& [name, set] : ro_inputs_) set(0);
    for (const auto& [name, set] : w1c_sets_) set(0);
    axil_.idle();
    h_.reset(4);  // before_edge_ / after_edge_ are not set yet
  }

  void TearDown() override {
    for (const auto& e : axil_.errors()) ADD_FAILURE() << "protocol: " << e;
  }

  // One rising edge, with optional hooks just before and after it (given the edges so far).
  void tick() {
    h_.tick(
        [this] {
          if (before_edge_) before_edge_(h_.cycle());
        },
        [] {});
    if (after_edge_) after_edge_(h_.cycle());
  }

  void set_timing(int max_delay, double stall, bool after_valid) {
    axil_.timing().max_valid_delay = max_delay;
    axil_.timing().ready_stall = stall;
    axil_.timing().ready_after_valid = after_valid;
  }

  std::uint32_t rd(std::uint32_t addr, AxilResp expect = AxilResp::okay) {
    AxilResp resp{};
    const std::uint32_t v = axil_.read(addr, &resp);
    EXPECT_EQ(resp, expect) << "read " << std::hex << addr;
    return v;
  }
  void wr(std::uint32_t addr, std::uint32_t data, std::uint8_t strb = 0xF,
          AxilResp expect = AxilResp::okay) {
    EXPECT_EQ(axil_.write(addr, data, strb), expect) << "write " << std::hex << addr;
  }

  // The storage bits of a register (rw and w1c fields) as the hardware sees them on the *_o
  // ports, placed at their register positions. nullopt: the register has no such fields.
  std::optional<std::uint32_t> hw_view(const std::string& name) {
    auto it = hw_views_.find(name);
    if (it == hw_views_.end()) return std::nullopt;
    return it->second();
  }

  std::map<std::string, std::uint32_t> read_all() {
    std::map<std::string, std::uint32_t> v;
    for (const auto& r : R::kRegisters) v[r.name] = rd(r.offset);
    return v;
  }

  VHarness<Vcore> h_;
  Vcore* const top_ = &h_.top();  // the harness's model
  AxilMaster<Vcore> axil_;
  std::function<void(std::uint64_t)> before_edge_, after_edge_;

#define NC_F(REG, FIELD, port) place(top_->port, R::REG##_##FIELD##_SHIFT, R::REG##_##FIELD##_MASK)
#define NC_V(REG, port)                             \
  {                                                 \
#REG, [this] { return NC_F(REG, VALUE, port); } \
  }
  std::map<std::string, std::function<std::uint32_t()>> hw_views_ = {
      {"CTRL",
       [this] {
         return NC_F(CTRL, IRQ_EN_DONE, ctrl_irq_en_done_o) |
                NC_F(CTRL, IRQ_EN_ERROR, ctrl_irq_en_error_o);
       }},
      {"STATUS", [this] { return NC_F(STATUS, START_IGNORED, status_start_ignored_o); }},
      {"IRQ_STATUS",
       [this] {
         return NC_F(IRQ_STATUS, DONE, irq_status_done_o) |
                NC_F(IRQ_STATUS, ERROR, irq_status_error_o);
       }},
      NC_V(CHANNELS, channels_value_o),
      NC_V(INNER, inner_value_o),
      NC_V(OUTER, outer_value_o),
      {"MODE",
       [this] {
         return NC_F(MODE, LAYOUT, mode_layout_o) | NC_F(MODE, ROUNDING, mode_rounding_o) |
                NC_F(MODE, SHIFT, mode_shift_o);
       }},
      NC_V(CLAMP_LO, clamp_lo_value_o),
      NC_V(CLAMP_HI, clamp_hi_value_o),
      NC_V(SRC_LO, src_lo_value_o),
      NC_V(SRC_HI, src_hi_value_o),
      NC_V(DST_LO, dst_lo_value_o),
      NC_V(DST_HI, dst_hi_value_o),
      NC_V(PARAM_LO, param_lo_value_o),
      NC_V(PARAM_HI, param_hi_value_o),
      NC_V(WIN_BASE_LO, win_base_lo_value_o),
      NC_V(WIN_BASE_HI, win_base_hi_value_o),
      NC_V(WIN_LAST_LO, win_last_lo_value_o),
      NC_V(WIN_LAST_HI, win_last_hi_value_o),
  };
#undef NC_V
#undef NC_F

  // Drivers of the RO hardware inputs, from a register-positioned value.
#define NC_G(v, REG, FIELD) R::field_get(v, R::REG##_##FIELD##_MASK, R::REG##_##FIELD##_SHIFT)
#define NC_S(REG, port)                                                 \
  {                                                                     \
#REG, [this](std::uint32_t v) { top_->port = NC_G(v, REG, VALUE); } \
  }
  std::map<std::string, std::function<void(std::uint32_t)>> ro_inputs_ = {
      {"STATUS",
       [this](std::uint32_t v) {
         top_->status_busy_i = static_cast<CData>(NC_G(v, STATUS, BUSY));
         top_->status_done_i = static_cast<CData>(NC_G(v, STATUS, DONE));
         top_->status_error_i = static_cast<CData>(NC_G(v, STATUS, ERROR));
       }},
      {"ERR_CODE",
       [this](std::uint32_t v) {
         top_->err_code_code_i = static_cast<CData>(NC_G(v, ERR_CODE, CODE));
       }},
      NC_S(ERR_ADDR_LO, err_addr_lo_value_i),
      NC_S(ERR_ADDR_HI, err_addr_hi_value_i),
      NC_S(PERF_ACTIVE, perf_active_value_i),
      NC_S(PERF_RD_STALL, perf_rd_stall_value_i),
      NC_S(PERF_WR_STALL, perf_wr_stall_value_i),
      NC_S(PERF_ELEMS_LO, perf_elems_lo_value_i),
      NC_S(PERF_ELEMS_HI, perf_elems_hi_value_i),
  };
#undef NC_S
#undef NC_G

  // W1C fields: "REG.field" -> set input driver, output reader.
  std::map<std::string, std::function<void(int)>> w1c_sets_ = {
      {"STATUS.start_ignored",
       [this](int v) { top_->status_start_ignored_set_i = static_cast<CData>(v); }},
      {"IRQ_STATUS.done", [this](int v) { top_->irq_status_done_set_i = static_cast<CData>(v); }},
      {"IRQ_STATUS.error", [this](int v) { top_->irq_status_error_set_i = static_cast<CData>(v); }},
  };
  std::map<std::string, std::function<int()>> w1c_outs_ = {
      {"STATUS.start_ignored", [this] { return int{top_->status_start_ignored_o}; }},
      {"IRQ_STATUS.done", [this] { return int{top_->irq_status_done_o}; }},
      {"IRQ_STATUS.error", [this] { return int{top_->irq_status_error_o}; }},
  };
};

// ------------------------------------------------------------------------------------------------
TEST_F(Regblock, TestCoversEveryPortOfTheDescription) {
  std::set<std::string> w1c;
  for (const auto& r : R::kRegisters) {
    bool storage = false, input = false;
    for (std::uint32_t i = 0; i < r.field_count; ++i) {
      const auto& f = r.fields[i];
      storage = storage || f.access == R::Access::rw || f.access == R::Access::w1c;
      input = input || (f.access == R::Access::ro && !f.hw_const);
      if (f.access == R::Access::w1c) w1c.insert(std::string(r.name) + "." + f.name);
    }
    EXPECT_EQ(storage, hw_views_.count(r.name) == 1) << r.name;
    EXPECT_EQ(input, ro_inputs_.count(r.name) == 1) << r.name;
  }
  std::set<std::string> listed;
  for (const auto& [n, f] : w1c_sets_) listed.insert(n);
  EXPECT_EQ(w1c, listed);
}

TEST_F(Regblock, ResetValues) {
  for (const auto& r : R::kRegisters) {
    const std::uint32_t v = rd(r.offset);
    EXPECT_EQ(v, r.reset) << r.name;
    for (std::uint32_t i = 0; i < r.field_count; ++i) {
      const auto& f = r.fields[i];
      EXPECT_EQ(R::field_get(v, f.mask, f.shift), f.reset) << r.name << "." << f.name;
    }
    if (auto hw = hw_view(r.name)) {
      EXPECT_EQ(*hw, r.reset & (access_mask(r, R::Access::rw) | access_mask(r, R::Access::w1c)))
          << r.name << " outputs";
    }
  }
  EXPECT_EQ(top_->ctrl_start_o, 0);
  EXPECT_EQ(top_->ctrl_soft_reset_o, 0);
}

TEST_F(Regblock, ConstantsOfTheDefaultConfig) {
  // regs_gen generated the block for AccelConfig{}: recompute every constant from the config's
  // fields with the formulas of the specification (independently of the register description).
  const gen::AccelConfig c{};
  const auto& a = c.core.arith;
  auto bits_for = [](long long v) {
    std::uint32_t b = 1;
    while ((v >> b) != 0) ++b;
    return b;
  };
  auto log2 = [](long long v) {
    std::uint32_t b = 0;
    while ((1LL << b) < v) ++b;
    return b;
  };
  unsigned major = 0, minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(gen::kGeneratorVersion, "%u.%u.%u", &major, &minor, &patch), 3);
  auto u = [](auto v) { return static_cast<std::uint32_t>(v); };
  EXPECT_EQ(rd(R::ID_OFFSET), 0x4E43424Eu);  // "NCBN"
  EXPECT_EQ(rd(R::VERSION_OFFSET), u(kContractVersion) << 24 | major << 16 | minor << 8 | patch);
  EXPECT_EQ(rd(R::CAPS0_OFFSET), u(c.core.lanes) | u(a.xw) << 8 | u(a.x_signed) << 14 |
                                     u(a.yw) << 16 | u(a.y_signed) << 22 | 0xFu << 24);
  EXPECT_EQ(rd(R::CAPS1_OFFSET), u(c.core.max_channels));
  EXPECT_EQ(rd(R::CAPS2_OFFSET), u(c.bus_bits / 8) | u(c.addr_bits) << 8 | u(c.outstanding) << 16 |
                                     log2(c.max_burst) << 24);
  EXPECT_EQ(rd(R::CAPS3_OFFSET), u(a.sw) | u(a.bw) << 8 | u(c.core.inner_bits) << 16 |
                                     (a.sw + a.bw <= 64 ? 8u : 16u) << 24);
  EXPECT_EQ(R::kAddrBits, u(c.axil_addr_bits));
  EXPECT_EQ(R::CHANNELS_VALUE_WIDTH, bits_for(c.core.max_channels));
  EXPECT_EQ(R::INNER_VALUE_WIDTH, u(c.core.inner_bits));
  EXPECT_EQ(R::MODE_SHIFT_WIDTH, bits_for(std::max(a.xw + a.sw, a.bw) + 1));
  EXPECT_EQ(R::CLAMP_LO_VALUE_WIDTH, u(a.yw));
  const std::uint32_t ymask = (1u << a.yw) - 1u;  // yw <= 32 in any config; < 32 by default
  const std::uint32_t lo = a.y_signed ? (1u << (a.yw - 1)) : 0u;  // two's complement minimum
  const std::uint32_t hi = a.y_signed ? lo - 1u : ymask;
  EXPECT_EQ(rd(R::CLAMP_LO_OFFSET), lo);
  EXPECT_EQ(rd(R::CLAMP_HI_OFFSET), hi);
  EXPECT_EQ(top_->clamp_lo_value_o, lo);
  EXPECT_EQ(top_->clamp_hi_value_o, hi);
  EXPECT_EQ(rd(R::MODE_OFFSET), 2u << 4);  // half_even
  EXPECT_EQ(top_->mode_rounding_o, 2);
  EXPECT_EQ(top_->channels_value_o, 1);
  EXPECT_EQ(top_->inner_value_o, 1u);
  EXPECT_EQ(top_->outer_value_o, 1u);
}

TEST_F(Regblock, RwWalkingOnesAndZeros) {
  for (const auto& r : R::kRegisters) {
    const std::uint32_t rwm = access_mask(r, R::Access::rw);
    if (rwm == 0) continue;
    const std::uint32_t keep = rd(r.offset) & ~rwm;  // constants, inputs (0), w1c (0)
    for (int bit = 0; bit < 32; ++bit) {
      for (const std::uint32_t w : {1u << bit, ~(1u << bit)}) {
        wr(r.offset, w);
        const std::uint32_t expect = (w & rwm) | keep;
        EXPECT_EQ(rd(r.offset), expect) << r.name << " wrote " << std::hex << w;
        EXPECT_EQ(*hw_view(r.name) & rwm, w & rwm) << r.name << " outputs, wrote " << std::hex << w;
      }
    }
  }
}

TEST_F(Regblock, WstrbByteLanes) {
  for (const auto& r : R::kRegisters) {
    const std::uint32_t rwm = access_mask(r, R::Access::rw);
    if (rwm == 0) continue;
    const std::uint32_t keep = rd(r.offset) & ~rwm;
    for (unsigned strb = 0; strb < 16; ++strb) {
      const std::uint32_t lanes = strb_mask(strb);
      wr(r.offset, 0xFFFFFFFFu);
      wr(r.offset, 0x00000000u, static_cast<std::uint8_t>(strb));
      EXPECT_EQ(rd(r.offset), (rwm & ~lanes) | keep) << r.name << " strb " << strb;
      wr(r.offset, 0x00000000u);
      wr(r.offset, 0xA5C3F00Fu, static_cast<std::uint8_t>(strb));
      EXPECT_EQ(rd(r.offset), (0xA5C3F00Fu & lanes & rwm) | keep) << r.name << " strb " << strb;
      EXPECT_EQ(*hw_view(r.name) & rwm, 0xA5C3F00Fu & lanes & rwm) << r.name << " outputs";
    }
  }
}

TEST_F(Regblock, ReadOnlyAndReservedBitsIgnoreWrites) {
  std::mt19937 rng(7);
  // Drive every RO input with a random value, and check it reads back (reserved bits 0).
  std::map<std::string, std::uint32_t> in;
  for (const auto& [name, set] : ro_inputs_) {
    in[name] = static_cast<std::uint32_t>(rng());
    set(in[name]);
  }
  for (const auto& r : R::kRegisters) {
    const std::uint32_t ro_in = [&] {
      std::uint32_t m = 0;
      for (std::uint32_t i = 0; i < r.field_count; ++i) {
        if (r.fields[i].access == R::Access::ro && !r.fields[i].hw_const) m |= r.fields[i].mask;
      }
      return m;
    }();
    const std::uint32_t before = rd(r.offset);
    EXPECT_EQ(before & ro_in, in.count(r.name) ? in[r.name] & ro_in : 0u) << r.name;
    const std::uint32_t writable = access_mask(r, R::Access::rw);
    for (const std::uint32_t w : {0xFFFFFFFFu, 0x00000000u, 0x5A5A5A5Au}) {
      wr(r.offset, w);
      const std::uint32_t after = rd(r.offset);
      EXPECT_EQ(after & ~r.mask, 0u) << r.name << ": reserved bits";
      // ro and constant bits never change; w1s_sc bits read 0; w1c bits are 0 here.
      EXPECT_EQ(after & ~writable, before & ~writable) << r.name << " wrote " << std::hex << w;
    }
  }
  // All inputs at all ones: reserved bits still read 0.
  for (const auto& [name, set] : ro_inputs_) set(0xFFFFFFFFu);
  for (const auto& r : R::kRegisters) EXPECT_EQ(rd(r.offset) & ~r.mask, 0u) << r.name;
}

TEST_F(Regblock, W1cSetClear) {
  for (const auto& r : R::kRegisters) {
    for (std::uint32_t i = 0; i < r.field_count; ++i) {
      const auto& f = r.fields[i];
      if (f.access != R::Access::w1c) continue;
      const std::string key = std::string(r.name) + "." + f.name;
      SCOPED_TRACE(key);
      auto set = w1c_sets_.at(key);
      auto out = w1c_outs_.at(key);
      auto pulse_set = [&] {
        set(1);
        tick();
        set(0);
      };
      EXPECT_EQ(rd(r.offset) & f.mask, 0u);
      pulse_set();
      EXPECT_EQ(out(), 1);
      EXPECT_EQ(rd(r.offset) & f.mask, f.mask) << "set by hardware";
      wr(r.offset, 0);
      EXPECT_EQ(rd(r.offset) & f.mask, f.mask) << "writing 0 leaves it";
      wr(r.offset, f.mask, static_cast<std::uint8_t>(0xF & ~(1u << (f.shift / 8))));
      EXPECT_EQ(rd(r.offset) & f.mask, f.mask) << "a 1 in a disabled byte lane leaves it";
      // Other w1c bits of the register are not touched by a clear of this one.
      const std::uint32_t others = access_mask(r, R::Access::w1c) & ~f.mask;
      for (const auto& [k, s] : w1c_sets_) {
        if (k.rfind(std::string(r.name) + ".", 0) == 0) s(1);
      }
      tick();
      for (const auto& [k, s] : w1c_sets_) s(0);
      wr(r.offset, f.mask);
      EXPECT_EQ(rd(r.offset) & (f.mask | others), others) << "write 1 clears only this bit";
      EXPECT_EQ(out(), 0);
      wr(r.offset, others);  // clear the rest
      EXPECT_EQ(rd(r.offset) & access_mask(r, R::Access::w1c), 0u);

      // Set wins over a simultaneous clear. First find the edge at which a clear takes effect
      // (deterministic timing: no delays, no stalls), then raise set_i for exactly that edge.
      set_timing(0, 0.0, false);
      pulse_set();
      std::uint64_t base = h_.cycle();
      std::optional<std::uint64_t> clear_edge;
      after_edge_ = [&](std::uint64_t e) {
        if (!clear_edge && out() == 0) clear_edge = e - base;
      };
      wr(r.offset, f.mask);
      after_edge_ = nullptr;
      ASSERT_TRUE(clear_edge.has_value());
      pulse_set();
      base = h_.cycle();
      bool dropped = false;
      before_edge_ = [&](std::uint64_t e) { set(e + 1 - base == *clear_edge ? 1 : 0); };
      after_edge_ = [&](std::uint64_t) { dropped = dropped || out() == 0; };
      wr(r.offset, f.mask);
      before_edge_ = nullptr;
      after_edge_ = nullptr;
      set(0);
      EXPECT_FALSE(dropped) << "set on the clearing edge " << *clear_edge << " must win";
      EXPECT_EQ(rd(r.offset) & f.mask, f.mask);
      wr(r.offset, f.mask);  // without a set, the same write clears it
      EXPECT_EQ(rd(r.offset) & f.mask, 0u);
    }
  }
}

TEST_F(Regblock, W1sScPulsesOneCycleAndReadsZero) {
  int start_high = 0, reset_high = 0, both_high = 0;
  after_edge_ = [&](std::uint64_t) {
    start_high += top_->ctrl_start_o;
    reset_high += top_->ctrl_soft_reset_o;
    both_high += top_->ctrl_start_o & top_->ctrl_soft_reset_o;
  };
  auto idle = [&](int n) {
    for (int i = 0; i < n; ++i) tick();
  };
  for (int rep = 0; rep < 3; ++rep) {
    set_timing(rep, rep * 0.3, rep == 2);
    start_high = reset_high = both_high = 0;
    wr(R::CTRL_OFFSET, R::CTRL_START_MASK);
    idle(5);
    EXPECT_EQ(start_high, 1);
    EXPECT_EQ(reset_high, 0);
    EXPECT_EQ(rd(R::CTRL_OFFSET) & (R::CTRL_START_MASK | R::CTRL_SOFT_RESET_MASK), 0u);

    start_high = reset_high = 0;
    wr(R::CTRL_OFFSET, R::CTRL_SOFT_RESET_MASK | R::CTRL_IRQ_EN_DONE_MASK);
    idle(5);
    EXPECT_EQ(start_high, 0);
    EXPECT_EQ(reset_high, 1);
    EXPECT_EQ(top_->ctrl_irq_en_done_o, 1) << "rw bits of the same write";

    start_high = reset_high = 0;
    wr(R::CTRL_OFFSET, R::CTRL_START_MASK | R::CTRL_SOFT_RESET_MASK);
    idle(5);
    EXPECT_EQ(both_high, 1) << "both pulse in the same cycle";
    EXPECT_EQ(start_high, 1);
    EXPECT_EQ(reset_high, 1);
    EXPECT_EQ(top_->ctrl_irq_en_done_o, 0);

    start_high = reset_high = 0;
    wr(R::CTRL_OFFSET, 0);
    wr(R::CTRL_OFFSET, 0xFFFFFFFFu, 0xE);  // byte lane 0 disabled
    wr(R::CTRL_OFFSET, R::CTRL_START_MASK, 0x0);
    idle(5);
    EXPECT_EQ(start_high, 0);
    EXPECT_EQ(reset_high, 0);
    EXPECT_EQ(top_->ctrl_irq_en_done_o, 1) << "byte lane 1 was written";
    wr(R::CTRL_OFFSET, 0);
  }
  after_edge_ = nullptr;
}

TEST_F(Regblock, UnmappedOffsetsGiveSlverr) {
  std::set<std::uint32_t> mapped;
  for (const auto& r : R::kRegisters) mapped.insert(r.offset);
  set_timing(1, 0.2, false);
  const auto before = read_all();
  int n = 0;
  for (std::uint32_t a = 0; a < (1u << R::kAddrBits); a += 4) {
    if (mapped.count(a) != 0) continue;
    ++n;
    EXPECT_EQ(rd(a + (a & 3u), AxilResp::slverr), 0u) << std::hex << a;
    wr(a, 0xFFFFFFFFu, 0xF, AxilResp::slverr);
  }
  EXPECT_EQ(n, static_cast<int>((1u << R::kAddrBits) / 4 - R::kRegisterCount));
  EXPECT_EQ(read_all(), before) << "unmapped writes changed a register";
}

TEST_F(Regblock, LowAddressBitsAreIgnored) {
  for (std::uint32_t lo = 0; lo < 4; ++lo) {
    EXPECT_EQ(rd(R::ID_OFFSET + lo), 0x4E43424Eu);
    wr(R::OUTER_OFFSET + lo, 0x1000u + lo);
    EXPECT_EQ(rd(R::OUTER_OFFSET), 0x1000u + lo);
  }
}

TEST_F(Regblock, WriteChannelOrders) {
  std::mt19937 rng(3);
  for (const auto order :
       {AxilOrder::aw_first, AxilOrder::w_first, AxilOrder::same_cycle, AxilOrder::any}) {
    for (int delay : {0, 1, 4}) {
      set_timing(delay, delay * 0.1, delay == 4);
      for (int k = 0; k < 8; ++k) {
        const auto v = static_cast<std::uint32_t>(rng());
        EXPECT_EQ(axil_.write(R::DST_LO_OFFSET, v, 0xF, order), AxilResp::okay);
        EXPECT_EQ(rd(R::DST_LO_OFFSET), v);
        EXPECT_EQ(top_->dst_lo_value_o, v);
        // Several writes in flight with the same order.
        std::vector<AxilOp> ops;
        for (std::uint32_t i = 0; i < 4; ++i) {
          ops.push_back(AxilOp::wr(R::SRC_LO_OFFSET + 4 * i, v + i, 0xF, order));
        }
        axil_.run(ops);
        for (std::uint32_t i = 0; i < 4; ++i) {
          EXPECT_EQ(ops[i].resp, AxilResp::okay);
          EXPECT_EQ(rd(R::SRC_LO_OFFSET + 4 * i), v + i);
        }
      }
    }
  }
}

TEST_F(Regblock, BackToBackTransactions) {
  set_timing(0, 0.0, false);
  const std::vector<std::uint32_t> rw_regs = {
      R::OUTER_OFFSET,       R::SRC_LO_OFFSET,      R::SRC_HI_OFFSET,     R::DST_LO_OFFSET,
      R::DST_HI_OFFSET,      R::PARAM_LO_OFFSET,    R::PARAM_HI_OFFSET,   R::WIN_BASE_LO_OFFSET,
      R::WIN_BASE_HI_OFFSET, R::WIN_LAST_LO_OFFSET, R::WIN_LAST_HI_OFFSET};
  std::vector<AxilOp> writes;
  for (std::uint32_t i = 0; i < 16; ++i) {
    writes.push_back(AxilOp::wr(rw_regs[i % rw_regs.size()], 0x100u * i + 7));
  }
  axil_.run(writes);
  EXPECT_LE(axil_.last_cycles(), 2u * 16 + 3) << "a write every two cycles";
  std::vector<AxilOp> reads;
  for (std::uint32_t i = 0; i < 16; ++i) reads.push_back(AxilOp::rd(rw_regs[i % rw_regs.size()]));
  axil_.run(reads);
  EXPECT_LE(axil_.last_cycles(), 2u * 16 + 2) << "a read every two cycles";
  for (std::uint32_t i = 0; i < 16; ++i) {
    // the last write to each register wins
    std::uint32_t last = 0;
    for (std::uint32_t j = 0; j < 16; ++j) {
      if (rw_regs[j % rw_regs.size()] == reads[i].addr) last = 0x100u * j + 7;
    }
    EXPECT_EQ(reads[i].resp, AxilResp::okay);
    EXPECT_EQ(reads[i].data, last) << std::hex << reads[i].addr;
  }
  // Reads and writes at the same time (different registers): both streams keep their pace.
  std::vector<AxilOp> mixed;
  for (std::uint32_t i = 0; i < 16; ++i) {
    mixed.push_back(AxilOp::wr(R::SRC_LO_OFFSET, i));
    mixed.push_back(AxilOp::rd(R::ID_OFFSET));
  }
  axil_.run(mixed);
  EXPECT_LE(axil_.last_cycles(), 2u * 16 + 3);
  for (const auto& op : mixed) {
    EXPECT_EQ(op.resp, AxilResp::okay);
    if (!op.write) EXPECT_EQ(op.data, 0x4E43424Eu);
  }
  EXPECT_EQ(rd(R::SRC_LO_OFFSET), 15u);
}

// Random reads and writes (mapped and unmapped, random WSTRB, channel order and timing) against a
// model built from the header's tables.
TEST_F(Regblock, RandomTrafficMatchesModel) {
  std::mt19937 rng(99);
  std::map<std::uint32_t, const R::RegDesc*> by_off;
  std::map<std::uint32_t, std::uint32_t> model;  // register value as read
  for (const auto& r : R::kRegisters) {
    by_off[r.offset] = &r;
    model[r.offset] = r.reset;
  }
  for (const auto& [name, set] : ro_inputs_) {  // random, fixed RO input values
    const auto v = static_cast<std::uint32_t>(rng());
    set(v);
    for (const auto& r : R::kRegisters) {
      if (name != r.name) continue;
      std::uint32_t in_mask = 0;
      for (std::uint32_t i = 0; i < r.field_count; ++i) {
        if (r.fields[i].access == R::Access::ro && !r.fields[i].hw_const)
          in_mask |= r.fields[i].mask;
      }
      model[r.offset] = (model[r.offset] & ~in_mask) | (v & in_mask);
    }
  }
  auto random_addr = [&] {
    if (rng() % 5 == 0) return static_cast<std::uint32_t>(rng() % (1u << R::kAddrBits));
    auto it = by_off.begin();
    std::advance(it, static_cast<long>(rng() % by_off.size()));
    return it->first + static_cast<std::uint32_t>(rng() % 4);
  };
  const AxilOrder orders[] = {AxilOrder::any, AxilOrder::aw_first, AxilOrder::w_first,
                              AxilOrder::same_cycle};
  int ops_done = 0;
  for (int batch = 0; batch < 300; ++batch) {
    set_timing(static_cast<int>(rng() % 4), (rng() % 4) * 0.2, rng() % 3 == 0);
    const bool writes = batch % 2 == 0;
    std::vector<AxilOp> ops;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      if (writes) {
        ops.push_back(AxilOp::wr(random_addr(), static_cast<std::uint32_t>(rng()),
                                 static_cast<std::uint8_t>(rng() % 16), orders[rng() % 4]));
      } else {
        ops.push_back(AxilOp::rd(random_addr()));
      }
    }
    axil_.run(ops);
    for (const auto& op : ops) {
      ++ops_done;
      const std::uint32_t word = op.addr & ~3u;
      const auto it = by_off.find(word);
      const bool mapped = it != by_off.end();
      ASSERT_EQ(op.resp, mapped ? AxilResp::okay : AxilResp::slverr) << std::hex << op.addr;
      if (!op.write) {
        ASSERT_EQ(op.data, mapped ? model[word] : 0u) << std::hex << op.addr;
        continue;
      }
      if (!mapped) continue;
      const R::RegDesc& r = *it->second;
      const std::uint32_t m = access_mask(r, R::Access::rw) & strb_mask(op.strb);
      const std::uint32_t clr = access_mask(r, R::Access::w1c) & strb_mask(op.strb) & op.data;
      model[word] = (model[word] & ~m & ~clr) | (op.data & m);
    }
  }
  EXPECT_GT(ops_done, 900);
  for (const auto& r : R::kRegisters) EXPECT_EQ(rd(r.offset), model[r.offset]) << r.name;
}

TEST_F(Regblock, MasterTimesOutOnADeadSlave) {
  // Held in reset, the slave never answers: the master must give up, not hang.
  top_->rst_ni = 0;
  axil_.timing().stall_limit = 50;
  EXPECT_THROW(axil_.read(R::ID_OFFSET), std::runtime_error);
  top_->rst_ni = 1;
}

}  // namespace
}  // namespace normcore::sim
