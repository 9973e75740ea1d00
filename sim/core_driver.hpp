// Cycle-level driver for a Verilated normcore streaming core (class Vcore, built per config with
// the NC_* defines describing it). Drives configuration, parameter loads and AXI4-Stream traffic
// with random stalls, checks the stream protocol on the output, and never hangs: every wait has a
// cycle limit and reports a failure instead.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "Vcore.h"
#include "nc_core_shape.h"  // NC_LATENCY, NC_TABLE_*: from the generated manifest (cosim.cmake)
#include "normcore/contract.hpp"
#include "spec_harness.hpp"
#include "verilated.h"
#include "verilated_bits.hpp"
#include "vharness.hpp"

namespace normcore::sim {

// Assigns an integer to a Verilated port of up to 64 bits (CData, SData, IData, QData).
template <typename P, typename V>
void put(P& port, V value) {
  port = static_cast<P>(static_cast<std::uint64_t>(value));
}

// The parameter table's mode, as the generator built it (CoreConfig::table_direct() /
// table_copies(), read from the manifest): the direct table loads C words, the per-lane copies
// max(C, L - 1), the banked table C + L - 1.
constexpr bool table_direct(int /*lanes*/) {
  return NC_TABLE_DIRECT != 0;
}
constexpr bool table_copies(int /*lanes*/) {
  return NC_TABLE_COPIES != 0;
}

struct CoreShape {
  int lanes = NC_LANES;
  int xw = NC_XW;
  bool x_signed = NC_XS != 0;
  int yw = NC_YW;
  bool y_signed = NC_YS != 0;
  int sw = NC_SW;
  int bw = NC_BW;
  int max_channels = NC_MAXC;
  int inner_bits = NC_HWW;
  int latency = NC_LATENCY;  // CoreConfig::latency(), from the manifest
  ArithSpec arith() const { return design_arith(xw, x_signed, sw, bw, yw, y_signed); }
};

struct CoreJob {
  int channels = 1;
  std::int64_t inner = 1;
  Layout layout = Layout::nchw;
  JobSettings settings;
};

struct StreamResult {
  std::vector<std::int64_t> y;       // one per input element, in order
  std::vector<std::uint64_t> keeps;  // tkeep of each output beat
  std::vector<bool> lasts;           // tlast of each output beat
  std::uint64_t first_in_cycle = 0;  // cycle of the first accepted input beat
  std::uint64_t last_out_cycle = 0;  // cycle of the last delivered output beat
  std::uint64_t in_beats = 0, out_beats = 0;
  std::vector<std::string> errors;  // protocol violations, time-outs
};

class CoreDriver {
 public:
  // rand_init != 0: the registers start at random values (seed rand_init), not 0 (VHarness).
  explicit CoreDriver(std::uint64_t seed = 1, int rand_init = 0)
      : h_(false, rand_init), rng_(seed) {
    top_->start_i = 0;
    top_->prm_valid_i = 0;
    top_->s_axis_tvalid = 0;
    top_->m_axis_tready = 0;
    top_->eval();
  }
  CoreDriver(const CoreDriver&) = delete;
  CoreDriver& operator=(const CoreDriver&) = delete;

  Vcore& top() { return *top_; }
  std::uint64_t cycle() const { return h_.cycle(); }
  const CoreShape& shape() const { return shape_; }

  // One clock: inputs must be set before; the rising edge happens here.
  void tick() { h_.tick(); }

  void reset(int cycles = 3) { h_.reset(cycles); }

  // Presents the configuration and pulses start. Returns the cycles from start until
  // configured_o (or -1 if the core flagged cfg_error_o, -2 on a time-out).
  int configure(const CoreJob& job, std::uint64_t limit = 10000) {
    put(top_->cfg_channels_i, job.channels);
    put(top_->cfg_inner_i, job.inner);
    top_->cfg_layout_i = job.layout == Layout::nhwc ? 1 : 0;
    put(top_->cfg_shift_i, job.settings.shift);
    top_->cfg_round_i = static_cast<std::uint8_t>(job.settings.rounding);
    put(top_->cfg_lo_i, get_bits(static_cast<std::uint64_t>(job.settings.lo), 0, shape_.yw));
    put(top_->cfg_hi_i, get_bits(static_cast<std::uint64_t>(job.settings.hi), 0, shape_.yw));
    std::uint64_t waited = 0;
    top_->clk_i = 0;
    top_->eval();
    while (!top_->ready_o) {
      if (++waited > limit) return -2;
      tick();
      top_->clk_i = 0;
      top_->eval();
    }
    top_->start_i = 1;
    tick();
    top_->start_i = 0;
    int cycles = 0;
    top_->clk_i = 0;
    top_->eval();
    while (!top_->configured_o) {
      if (top_->cfg_error_o) return -1;
      if (static_cast<std::uint64_t>(++cycles) > limit) return -2;
      tick();
      top_->clk_i = 0;
      top_->eval();
    }
    return cycles;
  }

  // Loads s[c], b[c] through the parameter port in channel order, c = 0..C-1 (the core's
  // protocol: exactly C words), with random idle cycles. Returns false on a time-out. The table
  // is complete when s_axis_tready rises (stream() waits for it).
  bool load_params(const std::vector<std::int64_t>& scale, const std::vector<std::int64_t>& shift,
                   double p_idle = 0.0, std::uint64_t limit = 1000000) {
    std::bernoulli_distribution idle(p_idle);
    std::uint64_t waited = 0;
    for (std::size_t c = 0; c < scale.size(); ++c) {
      while (idle(rng_)) tick();
      present_param(scale[c], shift[c]);
      top_->clk_i = 0;
      top_->eval();
      while (!top_->prm_ready_o) {
        if (++waited > limit) return false;
        tick();
        top_->clk_i = 0;
        top_->eval();
      }
      tick();
      top_->prm_valid_i = 0;
    }
    return true;
  }

  // Drives prm_valid_i with the word {b, s} (the caller ticks).
  void present_param(std::int64_t scale, std::int64_t shift) {
    top_->prm_valid_i = 1;
    put(top_->prm_scale_i, get_bits(static_cast<std::uint64_t>(scale), 0, shape_.sw));
    put(top_->prm_offset_i, get_bits(static_cast<std::uint64_t>(shift), 0, shape_.bw));
  }

  // Streams x (any number of elements; the last beat may be partial) with tvalid idle
  // probability p_in and tready low probability p_out, collecting the output.
  StreamResult stream(const std::vector<std::int64_t>& x, double p_in, double p_out,
                      std::uint64_t limit_per_beat = 200) {
    StreamResult r;
    const int L = shape_.lanes;
    const std::size_t beats =
        (x.size() + static_cast<std::size_t>(L) - 1) / static_cast<std::size_t>(L);
    std::bernoulli_distribution in_idle(p_in), out_stall(p_out);
    std::size_t next = 0;  // next input beat
    bool presenting = false;
    bool prev_m_valid = false, prev_m_ready = true;
    std::remove_reference_t<decltype(top_->m_axis_tdata)> prev_data{};
    std::remove_reference_t<decltype(top_->m_axis_tkeep)> prev_keep{};
    std::uint8_t prev_last = 0;
    const std::uint64_t limit = (beats + 10) * limit_per_beat + 1000;
    const std::uint64_t start = h_.cycle();
    r.y.reserve(x.size());
    while (r.out_beats < beats) {
      if (h_.cycle() - start > limit) {
        r.errors.push_back("time-out: " + std::to_string(r.out_beats) + " of " +
                           std::to_string(beats) + " output beats after " +
                           std::to_string(h_.cycle() - start) + " cycles");
        break;
      }
      if (!presenting && next < beats && !in_idle(rng_)) {
        presenting = true;
        const std::size_t base = next * static_cast<std::size_t>(L);
        std::uint64_t keep = 0;
        for (int i = 0; i < L; ++i) {
          const std::size_t e = base + static_cast<std::size_t>(i);
          const std::uint64_t v = e < x.size() ? static_cast<std::uint64_t>(x[e]) : 0;
          set_bits(top_->s_axis_tdata, i * shape_.xw, shape_.xw, v);
          if (e < x.size()) keep |= 1ULL << i;
        }
        set_bits(top_->s_axis_tkeep, 0, L, keep);
        top_->s_axis_tlast = next + 1 == beats ? 1 : 0;
      }
      top_->s_axis_tvalid = presenting ? 1 : 0;
      top_->m_axis_tready = out_stall(rng_) ? 0 : 1;
      top_->clk_i = 0;
      top_->eval();
      // Output protocol: once valid, stay valid with stable payload until accepted.
      if (prev_m_valid && !prev_m_ready) {
        if (!top_->m_axis_tvalid) r.errors.push_back("m_axis_tvalid dropped before tready");
        if (!equal_ports(prev_data, top_->m_axis_tdata) || prev_keep != top_->m_axis_tkeep ||
            prev_last != top_->m_axis_tlast) {
          r.errors.push_back("m_axis payload changed while stalled at cycle " +
                             std::to_string(h_.cycle()));
        }
      }
      const bool in_fire = top_->s_axis_tvalid && top_->s_axis_tready;
      const bool out_fire = top_->m_axis_tvalid && top_->m_axis_tready;
      if (out_fire) {
        const std::uint64_t keep = get_bits(top_->m_axis_tkeep, 0, L);
        r.keeps.push_back(keep);
        r.lasts.push_back(top_->m_axis_tlast != 0);
        for (int i = 0; i < L; ++i) {
          const std::int64_t v = bits::to_int(
              get_bits(top_->m_axis_tdata, i * shape_.yw, shape_.yw), shape_.yw, shape_.y_signed);
          if ((keep >> i) & 1U) {
            r.y.push_back(v);
          } else if (v != 0) {
            r.errors.push_back("lane " + std::to_string(i) + " without tkeep is not zero");
          }
        }
        ++r.out_beats;
        r.last_out_cycle = h_.cycle();
      }
      if (in_fire) {
        if (r.in_beats == 0) r.first_in_cycle = h_.cycle();
        ++r.in_beats;
        ++next;
        presenting = false;
      }
      prev_m_valid = top_->m_axis_tvalid;
      prev_m_ready = top_->m_axis_tready;
      prev_data = top_->m_axis_tdata;
      prev_keep = top_->m_axis_tkeep;
      prev_last = top_->m_axis_tlast;
      tick();
    }
    top_->s_axis_tvalid = 0;
    // Nothing more may come out.
    top_->m_axis_tready = 1;
    for (int i = 0; i < shape_.latency + 4; ++i) {
      top_->clk_i = 0;
      top_->eval();
      if (top_->m_axis_tvalid) {
        r.errors.push_back("extra output beat after the last one");
        break;
      }
      tick();
    }
    return r;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  CoreShape shape_;
  VHarness<Vcore> h_;
  Vcore* const top_ = &h_.top();  // the harness's model
  std::mt19937_64 rng_;
};

}  // namespace normcore::sim
