// Cycle-level AXI4-Lite master for Verilated models with the standard slave ports
// (s_axil_aw*, s_axil_w*, s_axil_b*, s_axil_ar*, s_axil_r*). Header-only, templated on the model.
//
//   AxilMaster<Vtop> m(*top, [&] { my_tick(); }, seed, timing);
//   m.idle();                                  // before reset: every master output low
//   AxilResp r = m.write(0x40, 7);             // blocking; returns BRESP
//   std::uint32_t v = m.read(0x40, &r);        // blocking; RRESP into *r
//   m.run(ops);                                // several reads and writes, pipelined
//
// The tick callback must make exactly one rising clock edge (and do whatever else the bench
// needs per cycle: other bus models, monitors). The master sets its outputs, evaluates the model,
// samples the handshakes, then calls tick().
//
// Randomness (AxilTiming): VALID delays per channel (so AW and W arrive in either order), READY
// stalls on B and R, optionally READY held low until VALID is seen (a slave whose VALID waited
// for READY then times out). Every wait has a limit: run() throws std::runtime_error when no
// handshake happens for `stall_limit` cycles, so a broken slave never hangs the test.
//
// Slave protocol checks (recorded in errors(), never thrown): BVALID only after both AW and W of
// an outstanding write were accepted, RVALID only after an accepted AR, and B/R channels held
// stable (VALID high, same payload) while VALID is high and READY low.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace normcore::sim {

enum class AxilResp : std::uint8_t { okay = 0, exokay = 1, slverr = 2, decerr = 3 };

inline const char* to_string(AxilResp r) {
  switch (r) {
    case AxilResp::okay:
      return "OKAY";
    case AxilResp::exokay:
      return "EXOKAY";
    case AxilResp::slverr:
      return "SLVERR";
    case AxilResp::decerr:
      return "DECERR";
  }
  return "?";
}

// Which of a write's AW and W the master presents first.
enum class AxilOrder : std::uint8_t {
  any,         // independent random delays
  aw_first,    // W only after AW was accepted
  w_first,     // AW only after W was accepted
  same_cycle,  // AWVALID and WVALID raised in the same cycle
};

struct AxilTiming {
  int max_valid_delay = 0;           // idle cycles before each AWVALID / WVALID / ARVALID: 0..max
  double ready_stall = 0.0;          // probability that BREADY / RREADY is low in a cycle
  bool ready_after_valid = false;    // keep BREADY / RREADY low until the slave raises VALID
  std::uint64_t stall_limit = 2000;  // cycles without any handshake before run() gives up
};

struct AxilOp {
  bool write = false;
  std::uint32_t addr = 0;
  std::uint32_t data = 0;  // write: data; read: filled in by run()
  std::uint8_t strb = 0xF;
  AxilOrder order = AxilOrder::any;
  AxilResp resp = AxilResp::okay;  // filled in by run()
  bool done = false;
  std::uint64_t done_cycle = 0;  // master cycle of the B / R handshake

  static AxilOp rd(std::uint32_t a) { return AxilOp{false, a, 0, 0xF, AxilOrder::any}; }
  static AxilOp wr(std::uint32_t a, std::uint32_t d, std::uint8_t s = 0xF,
                   AxilOrder o = AxilOrder::any) {
    return AxilOp{true, a, d, s, o};
  }
};

namespace axil_detail {
// Assigns an integer to a Verilated port of up to 64 bits (CData, SData, IData, QData).
template <typename P>
void drive(P& port, std::uint64_t value) {
  port = static_cast<P>(value);
}
}  // namespace axil_detail

template <typename Model>
class AxilMaster {
 public:
  AxilMaster(Model& model, std::function<void()> tick, std::uint64_t seed = 1,
             AxilTiming timing = {})
      : m_(model), tick_(std::move(tick)), rng_(seed), timing_(timing) {}

  AxilTiming& timing() { return timing_; }
  const std::vector<std::string>& errors() const { return errors_; }
  void clear_errors() { errors_.clear(); }
  std::uint64_t cycle() const { return cycle_; }              // edges made by this master
  std::uint64_t last_cycles() const { return last_cycles_; }  // edges of the last run()

  // Every master output low (call before reset and between transactions if desired).
  void idle() {
    using axil_detail::drive;
    drive(m_.s_axil_awvalid, 0);
    drive(m_.s_axil_awaddr, 0);
    drive(m_.s_axil_awprot, 0);
    drive(m_.s_axil_wvalid, 0);
    drive(m_.s_axil_wdata, 0);
    drive(m_.s_axil_wstrb, 0);
    drive(m_.s_axil_bready, 0);
    drive(m_.s_axil_arvalid, 0);
    drive(m_.s_axil_araddr, 0);
    drive(m_.s_axil_arprot, 0);
    drive(m_.s_axil_rready, 0);
    m_.eval();
  }

  std::uint32_t read(std::uint32_t addr, AxilResp* resp = nullptr) {
    std::vector<AxilOp> ops{AxilOp::rd(addr)};
    run(ops);
    if (resp != nullptr) *resp = ops[0].resp;
    return ops[0].data;
  }

  AxilResp write(std::uint32_t addr, std::uint32_t data, std::uint8_t strb = 0xF,
                 AxilOrder order = AxilOrder::any) {
    std::vector<AxilOp> ops{AxilOp::wr(addr, data, strb, order)};
    run(ops);
    return ops[0].resp;
  }

  // Issues all ops: writes in order on AW/W/B, reads in order on AR/R, the two streams
  // concurrently. Returns when every op has its response.
  void run(std::vector<AxilOp>& ops) {
    using axil_detail::drive;
    std::vector<std::size_t> wq, rq;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      ops[i].done = false;
      (ops[i].write ? wq : rq).push_back(i);
    }
    const std::size_t nw = wq.size(), nr = rq.size();
    std::size_t aw_i = 0, w_i = 0, b_i = 0, ar_i = 0, r_i = 0;  // handshakes done per channel
    bool aw_on = false, w_on = false, ar_on = false;
    int aw_wait = -1, w_wait = -1, ar_wait = -1;  // -1: delay not drawn yet
    bool b_seen = false, r_seen = false;          // VALID seen for the current response
    bool b_hold = false, r_hold = false;          // VALID high and READY low in the last cycle
    std::uint32_t r_data_prev = 0;
    std::uint8_t b_resp_prev = 0, r_resp_prev = 0;
    const std::uint64_t start = cycle_;
    std::uint64_t last_progress = cycle_;

    auto draw_delay = [&] {
      return timing_.max_valid_delay <= 0
                 ? 0
                 : std::uniform_int_distribution<int>(0, timing_.max_valid_delay)(rng_);
    };
    auto ready = [&](bool seen) {
      if (timing_.ready_after_valid && !seen) return false;
      return !std::bernoulli_distribution(timing_.ready_stall)(rng_);
    };
    // Starts a channel's VALID once its delay has run out.
    auto arm = [&](bool& on, int& wait, bool allowed) {
      if (on || !allowed) return;
      if (wait < 0) wait = draw_delay();
      if (wait == 0) {
        on = true;
        wait = -1;
      } else {
        --wait;
      }
    };

    while (b_i < nw || r_i < nr) {
      if (cycle_ - last_progress > timing_.stall_limit) {
        idle();
        throw std::runtime_error("AXI4-Lite master: no handshake for " +
                                 std::to_string(timing_.stall_limit) + " cycles (writes: AW " +
                                 std::to_string(aw_i) + ", W " + std::to_string(w_i) + ", B " +
                                 std::to_string(b_i) + " of " + std::to_string(nw) +
                                 "; reads: AR " + std::to_string(ar_i) + ", R " +
                                 std::to_string(r_i) + " of " + std::to_string(nr) + ")");
      }
      // ---- Master outputs for this cycle.
      if (aw_i < nw && !aw_on) {
        const AxilOp& op = ops[wq[aw_i]];
        if (op.order == AxilOrder::same_cycle) {
          if (w_i == aw_i && !w_on) {  // both channels at this op: raise both together
            arm(aw_on, aw_wait, true);
            w_on = aw_on;
          }
        } else {
          arm(aw_on, aw_wait, op.order != AxilOrder::w_first || w_i > aw_i);
        }
      }
      if (w_i < nw && !w_on) {
        const AxilOp& op = ops[wq[w_i]];
        if (op.order != AxilOrder::same_cycle) {
          arm(w_on, w_wait, op.order != AxilOrder::aw_first || aw_i > w_i);
        }
      }
      if (ar_i < nr) arm(ar_on, ar_wait, true);
      drive(m_.s_axil_awvalid, aw_on ? 1 : 0);
      drive(m_.s_axil_awaddr, aw_on ? ops[wq[aw_i]].addr : 0);
      drive(m_.s_axil_wvalid, w_on ? 1 : 0);
      drive(m_.s_axil_wdata, w_on ? ops[wq[w_i]].data : 0);
      drive(m_.s_axil_wstrb, w_on ? ops[wq[w_i]].strb : 0);
      drive(m_.s_axil_arvalid, ar_on ? 1 : 0);
      drive(m_.s_axil_araddr, ar_on ? ops[rq[ar_i]].addr : 0);
      const bool bready = b_i < nw && ready(b_seen);
      const bool rready = r_i < nr && ready(r_seen);
      drive(m_.s_axil_bready, bready ? 1 : 0);
      drive(m_.s_axil_rready, rready ? 1 : 0);
      m_.eval();

      // ---- Sample (before the edge).
      const bool aw_hs = aw_on && m_.s_axil_awready;
      const bool w_hs = w_on && m_.s_axil_wready;
      const bool ar_hs = ar_on && m_.s_axil_arready;
      const bool bvalid = m_.s_axil_bvalid != 0;
      const bool rvalid = m_.s_axil_rvalid != 0;
      const auto bresp = static_cast<std::uint8_t>(m_.s_axil_bresp);
      const auto rresp = static_cast<std::uint8_t>(m_.s_axil_rresp);
      const auto rdata = static_cast<std::uint32_t>(m_.s_axil_rdata);
      if (b_hold && (!bvalid || bresp != b_resp_prev)) {
        error("B channel changed while BVALID was high and BREADY low");
      }
      if (r_hold && (!rvalid || rresp != r_resp_prev || rdata != r_data_prev)) {
        error("R channel changed while RVALID was high and RREADY low");
      }
      if (bvalid && std::min(aw_i, w_i) <= b_i) {
        error("BVALID without an outstanding write whose AW and W were both accepted");
      }
      if (rvalid && ar_i <= r_i) error("RVALID without an outstanding accepted read");
      const bool b_hs = bvalid && bready;
      const bool r_hs = rvalid && rready;
      b_seen = (b_seen || bvalid) && !b_hs;
      r_seen = (r_seen || rvalid) && !r_hs;
      b_hold = bvalid && !bready;
      r_hold = rvalid && !rready;
      b_resp_prev = bresp;
      r_resp_prev = rresp;
      r_data_prev = rdata;

      tick_();
      ++cycle_;

      // ---- State after the edge.
      if (aw_hs) {
        aw_on = false;
        ++aw_i;
      }
      if (w_hs) {
        w_on = false;
        ++w_i;
      }
      if (ar_hs) {
        ar_on = false;
        ++ar_i;
      }
      if (b_hs && b_i < nw) {
        AxilOp& op = ops[wq[b_i++]];
        op.resp = static_cast<AxilResp>(bresp & 3);
        op.done = true;
        op.done_cycle = cycle_;
      }
      if (r_hs && r_i < nr) {
        AxilOp& op = ops[rq[r_i++]];
        op.resp = static_cast<AxilResp>(rresp & 3);
        op.data = rdata;
        op.done = true;
        op.done_cycle = cycle_;
      }
      if (aw_hs || w_hs || ar_hs || b_hs || r_hs) last_progress = cycle_;
    }
    idle();
    last_cycles_ = cycle_ - start;
  }

 private:
  void error(const std::string& what) {
    errors_.push_back("cycle " + std::to_string(cycle_) + ": " + what);
  }

  Model& m_;
  std::function<void()> tick_;
  std::mt19937_64 rng_;
  AxilTiming timing_;
  std::vector<std::string> errors_;
  std::uint64_t cycle_ = 0;
  std::uint64_t last_cycles_ = 0;
};

}  // namespace normcore::sim
