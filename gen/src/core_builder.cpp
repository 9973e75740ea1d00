// Builds the streaming core. Module overview (see docs/architecture.md):
//   <n>_core    top: AXI4-Stream in/out, job configuration and set-up, occupancy-based flow control
//   <n>_chan    one per lane: the channel (and position inside the channel) of that lane's element
//   <n>_step    set-up divider: how far a lane's channel moves per beat (L div S, mod C)
//   <n>_ptable  banked parameter table with its loader and the lane crossbar
//   <n>_bank    one bank of the table (a simple dual-port RAM, registered read)
//   <n>_lane    one per lane: multiply-add, rounding, clamp
//   <n>_fifo    output buffer that absorbs the beats in flight when m_axis stalls
#include <stdexcept>

#include "normcore/gen/core.hpp"
#include "vexpr.hpp"

namespace normcore::gen {
namespace {

using v::bit;
using v::fit;
using v::lit;
using v::part;
using v::sext;
using v::zext;

std::string idx(const std::string& base, int i) { return base + "_" + std::to_string(i); }

// ---------------------------------------------------------------------------------------------
Module build_bank(const CoreConfig& c) {
  const int pw = c.param_bits();
  const int ab = c.bank_addr_bits();
  Module m;
  m.name = c.name + "_bank";
  m.description = {"One bank of the parameter table: " + std::to_string(c.bank_depth()) +
                       " words of {shift, scale}, one write port,",
                   "one read port with a registered output (maps to block RAM)."};
  m.in("clk_i", 1);
  m.in("we_i", 1, "write enable");
  m.in("waddr_i", ab);
  m.in("wdata_i", pw);
  m.in("raddr_i", ab);
  m.out("rdata_o", pw, "word at raddr_i of the previous cycle");
  m.memory("mem_q", pw, c.bank_depth());
  m.reg("rdata_q", pw);
  m.always_ff({if_("we_i", {assign("mem_q[waddr_i]", "wdata_i")}),
               assign("rdata_q", "mem_q[raddr_i]")});
  m.assign("rdata_o", "rdata_q");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_step(const CoreConfig& c) {
  const int nb = c.lane_count_bits();
  const int hw = c.inner_bits;
  const int cw = c.chan_bits();
  const int rw = std::max(nb, hw);
  const int qw = std::max(nb, cw);
  Module m;
  m.name = c.name + "_step";
  m.description = {
      "Set-up divider. With S the element stride of a channel (HW for nchw, 1 for nhwc) and",
      "L = " + std::to_string(c.lanes) + " lanes, computes rem = L mod S and quo = (L div S) mod C",
      "by repeated subtraction (at most " + std::to_string(2 * c.lanes + 2) +
          " cycles). A beat moves every lane by",
      "quo channels and rem positions (plus a carry)."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "begin; stride_i and chans_i hold from the next cycle on");
  m.in("stride_i", hw, "S >= 1");
  m.in("chans_i", cw, "C >= 1");
  m.out("done_o", 1);
  m.out("rem_o", hw, "L mod S");
  m.out("quo_o", cw, "(L div S) mod C");
  m.reg("ph_q", 2, "0: L div S, 1: quotient mod C, 2: done");
  m.reg("ph_d", 2);
  m.reg("r_q", nb, "remainder, <= L");
  m.reg("r_d", nb);
  m.reg("q_q", nb, "quotient, <= L");
  m.reg("q_d", nb);
  m.wire("r_ge", 1, "r_q >= S");
  m.assign("r_ge", zext("r_q", nb, rw) + " >= " + zext("stride_i", hw, rw));
  m.wire("q_ge", 1, "q_q >= C");
  m.assign("q_ge", zext("q_q", nb, qw) + " >= " + zext("chans_i", cw, qw));
  // Subtrahends narrowed to the register width: only used when they are <= the register value.
  const std::string s_n = hw >= nb ? part("stride_i", hw, 0, nb) : zext("stride_i", hw, nb);
  const std::string c_n = cw >= nb ? part("chans_i", cw, 0, nb) : zext("chans_i", cw, nb);
  m.always_comb({
      assign("ph_d", "ph_q"),
      assign("r_d", "r_q"),
      assign("q_d", "q_q"),
      if_("start_i", {assign("ph_d", "2'd0"), assign("r_d", lit(nb, c.lanes)),
                      assign("q_d", lit(nb, 0))},
          {if_("ph_q == 2'd0",
               {if_("r_ge", {assign("r_d", "r_q - " + s_n), assign("q_d", "q_q + " + lit(nb, 1))},
                    {assign("ph_d", "2'd1")})},
               {if_("ph_q == 2'd1",
                    {if_("q_ge", {assign("q_d", "q_q - " + c_n)}, {assign("ph_d", "2'd2")})})})}),
  });
  m.always_ff({if_("!rst_ni", {assign("ph_q", "2'd2")}, {assign("ph_q", "ph_d")}),
               assign("r_q", "r_d"), assign("q_q", "q_d")});
  m.assign("done_o", "ph_q == 2'd2");
  m.assign("rem_o", hw >= nb ? zext("r_q", nb, hw) : part("r_q", nb, 0, hw));
  m.assign("quo_o", cw >= nb ? zext("q_q", nb, cw) : part("q_q", nb, 0, cw));
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_chan(const CoreConfig& c) {
  const int hw = c.inner_bits;
  const int cw = c.chan_bits();
  Module m;
  m.name = c.name + "_chan";
  m.description = {
      "Position of one lane's element: channel c (< C) and offset r inside the channel (< S).",
      "During set-up (init_i) it takes the previous lane's position advanced by one element;",
      "each accepted beat advances it by L elements; the beat with tlast restores the start."};
  m.in("clk_i", 1);
  m.in("init_i", 1, "set-up: position = prev + 1 element");
  m.in("step_i", 1, "advance by one beat (L elements)");
  m.in("restart_i", 1, "back to the position of the first beat");
  m.in("prev_c_i", cw);
  m.in("prev_r_i", hw);
  m.in("stride_i", hw, "S");
  m.in("chans_i", cw, "C");
  m.in("lstep_c_i", cw, "channels per beat, mod C");
  m.in("lstep_r_i", hw, "positions per beat, mod S");
  m.in("ostep_c_i", cw, "channels per element, mod C");
  m.in("ostep_r_i", hw, "positions per element, mod S");
  m.out("c_o", cw);
  m.out("r_o", hw);
  m.reg("c_q", cw);
  m.reg("r_q", hw);
  m.reg("c0_q", cw, "position at the first beat of a packet");
  m.reg("r0_q", hw);
  m.wire("base_c", cw);
  m.wire("base_r", hw);
  m.wire("k_c", cw);
  m.wire("k_r", hw);
  m.assign("base_c", "init_i ? prev_c_i : c_q");
  m.assign("base_r", "init_i ? prev_r_i : r_q");
  m.assign("k_c", "init_i ? ostep_c_i : lstep_c_i");
  m.assign("k_r", "init_i ? ostep_r_i : lstep_r_i");
  m.wire("r_sum", hw + 1, "< 2S");
  m.assign("r_sum", zext("base_r", hw, hw + 1) + " + " + zext("k_r", hw, hw + 1));
  m.wire("carry", 1);
  m.assign("carry", "r_sum >= " + zext("stride_i", hw, hw + 1));
  m.wire("r_nx", hw);
  m.assign("r_nx", "carry ? " + part("r_sum", hw + 1, 0, hw) + " - stride_i : " +
                       part("r_sum", hw + 1, 0, hw));
  m.wire("c_sum", cw + 1, "< 2C");
  m.assign("c_sum", zext("base_c", cw, cw + 1) + " + " + zext("k_c", cw, cw + 1) + " + " +
                        zext("carry", 1, cw + 1));
  m.wire("c_wrap", 1);
  m.assign("c_wrap", "c_sum >= " + zext("chans_i", cw, cw + 1));
  m.wire("c_nx", cw);
  m.assign("c_nx", "c_wrap ? " + part("c_sum", cw + 1, 0, cw) + " - chans_i : " +
                       part("c_sum", cw + 1, 0, cw));
  m.always_ff({if_("init_i",
                   {assign("c_q", "c_nx"), assign("r_q", "r_nx"), assign("c0_q", "c_nx"),
                    assign("r0_q", "r_nx")},
                   {if_("restart_i", {assign("c_q", "c0_q"), assign("r_q", "r0_q")},
                        {if_("step_i", {assign("c_q", "c_nx"), assign("r_q", "r_nx")})})})});
  m.assign("c_o", "c_q");
  m.assign("r_o", "r_q");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_ptable(const CoreConfig& c) {
  const int L = c.lanes;
  const int P = c.banks();
  const int p = c.bank_sel_bits();
  const int cw = c.chan_bits();
  const int sw = c.arith.sw;
  const int bw = c.arith.bw;
  const int pw = c.param_bits();
  const int ab = c.bank_addr_bits();
  const int uw = bits_for(2LL * c.max_channels + L);
  Module m;
  m.name = c.name + "_ptable";
  m.description = {
      "Parameter table, banked so that every beat reads each lane's channel in one cycle.",
      "Virtual table T[u] = param[u mod C] for u < C + L - 1 (the first channels kept again",
      "after C for the wrap-around); bank j = u mod " + std::to_string(P) + " holds T[u] at u / " +
          std::to_string(P) + ".",
      "The channels of one beat are a window u = c0 .. c0+L-1, which hits every bank once."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("en_i", 1, "loading allowed (core configured)");
  m.in("chans_i", cw, "C");
  m.in("lane_c_i", L * cw, "channel of each lane for the next beat");
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1);
  m.in("prm_chan_i", cw, "channel index (< C; others are ignored)");
  m.in("prm_scale_i", sw, "s[c], signed");
  m.in("prm_shift_i", bw, "b[c], signed");
  m.out("busy_o", 1, "loader writing copies");
  m.out("scale_o", L * sw, "per lane, one cycle after lane_c_i");
  m.out("shift_o", L * bw);

  // Loader: writes T[c], T[c+C], T[c+2C], ... (u < C + L - 1), one bank word per cycle.
  m.section("Loader");
  m.reg("ld_busy_q", 1);
  m.reg("ld_u_q", uw);
  m.reg("ld_data_q", pw, "{shift, scale}");
  m.wire("ld_accept", 1);
  m.wire("ld_u_next", uw);
  m.wire("ld_last", 1);
  m.assign("prm_ready_o", "en_i & ~ld_busy_q");
  m.assign("ld_accept", "prm_valid_i & en_i & ~ld_busy_q & (prm_chan_i < chans_i)");
  m.assign("ld_u_next", "ld_u_q + " + zext("chans_i", cw, uw));
  m.assign("ld_last", "ld_u_next >= " + zext("chans_i", cw, uw) + " + " + lit(uw, L - 1),
           "next copy beyond C + L - 2");
  m.always_ff({if_("!rst_ni", {assign("ld_busy_q", "1'b0")},
                   {if_("ld_accept", {assign("ld_busy_q", "1'b1")},
                        {if_("ld_last", {assign("ld_busy_q", "1'b0")})})}),
               if_("ld_accept",
                   {assign("ld_u_q", zext("prm_chan_i", cw, uw)),
                    assign("ld_data_q", "{prm_shift_i, prm_scale_i}")},
                   {if_("ld_busy_q", {assign("ld_u_q", "ld_u_next")})})});
  m.assign("busy_o", "ld_busy_q");
  m.wire("ld_addr", ab);
  m.assign("ld_addr", p + ab <= uw ? part("ld_u_q", uw, p, ab)
                                    : zext(part("ld_u_q", uw, p, uw - p), uw - p, ab));

  // Read addressing from the window start c0 = channel of lane 0.
  m.section("Read side: bank j serves the u = j (mod " + std::to_string(P) + ") of the window");
  m.wire("c0", cw);
  m.assign("c0", part("lane_c_i", L * cw, 0, cw));
  std::string c0_lo;
  if (p > 0) {
    m.wire("c0_lo", p);
    m.assign("c0_lo", cw >= p ? part("c0", cw, 0, p) : zext("c0", cw, p));
    c0_lo = "c0_lo";
  }
  std::string c0_hi = lit(ab, 0);
  if (cw > p) {
    m.wire("c0_hi", ab, "c0 / " + std::to_string(P));
    if (cw - p <= ab) {
      m.assign("c0_hi", zext(part("c0", cw, p, cw - p), cw - p, ab));
    } else {
      // c0 < MAX_CHANNELS, so c0 / P < bank depth: the top bits of c0 are always zero here.
      m.assign("c0_hi", part("c0", cw, p, ab));
      m.wire("unused_c0_top", 1);
      m.assign("unused_c0_top", "^" + part("c0", cw, p + ab, cw - p - ab));
    }
    c0_hi = "c0_hi";
  }
  for (int j = P - 1; j >= 0; --j) {
    m.wire(idx("raddr", j), ab);
    std::string a = c0_hi;
    if (p > 0 && j < P - 1) a += " + " + zext("(" + c0_lo + " > " + lit(p, j) + ")", 1, ab);
    m.assign(idx("raddr", j), a);
    m.wire(idx("we", j), 1);
    m.assign(idx("we", j),
             p > 0 ? "ld_busy_q & (" + part("ld_u_q", uw, 0, p) + " == " + lit(p, j) + ")"
                   : "ld_busy_q");
    m.wire(idx("rdata", j), pw);
  }
  for (int j = 0; j < P; ++j) {
    m.instance(Instance{c.name + "_bank",
                        idx("u_bank", j),
                        {{"clk_i", "clk_i"},
                         {"we_i", idx("we", j)},
                         {"waddr_i", "ld_addr"},
                         {"wdata_i", "ld_data_q"},
                         {"raddr_i", idx("raddr", j)},
                         {"rdata_o", idx("rdata", j)}},
                        {}});
  }
  // Lane crossbar.
  m.section("Crossbar: lane i takes the bank holding its u (registered select)");
  if (p > 0) {
    m.wire("c_lo_add", p, "C mod " + std::to_string(P));
    m.assign("c_lo_add", cw >= p ? part("chans_i", cw, 0, p) : zext("chans_i", cw, p));
    Block ff;
    for (int i = 0; i < L; ++i) {
      m.wire(idx("sel", i), p);
      if (i == 0) {
        m.assign(idx("sel", i), "c0_lo");
      } else {
        const std::string ci = idx("lane_c", i);
        m.wire(ci, cw);
        m.assign(ci, part("lane_c_i", L * cw, i * cw, cw));
        const std::string lo = cw >= p ? part(ci, cw, 0, p) : zext(ci, cw, p);
        m.assign(idx("sel", i), "(" + ci + " >= c0) ? " + lo + " : " + lo + " + c_lo_add",
                 "u = c, or c + C when the window wrapped");
      }
      m.reg(idx("sel_q", i), p);
      ff.push_back(assign(idx("sel_q", i), idx("sel", i)));
    }
    m.always_ff(std::move(ff));
    // One P:1 multiplexer per lane (a case on the registered select: maps to $pmux / LUTs).
    for (int i = 0; i < L; ++i) {
      m.reg(idx("word", i), pw);
      std::vector<std::pair<std::string, Block>> arms;
      for (int j = 0; j < P; ++j) {
        arms.push_back({lit(p, static_cast<unsigned long long>(j)),
                        {assign(idx("word", i), idx("rdata", j))}});
      }
      m.always_comb({case_(idx("sel_q", i), std::move(arms))});
    }
  } else {
    m.wire(idx("word", 0), pw);
    m.assign(idx("word", 0), idx("rdata", 0));
  }
  std::string sc, sh;
  for (int i = L - 1; i >= 0; --i) {
    sc += (sc.empty() ? "" : ", ") + part(idx("word", i), pw, 0, sw);
    sh += (sh.empty() ? "" : ", ") + part(idx("word", i), pw, sw, bw);
  }
  m.assign("scale_o", L == 1 ? sc : "{" + sc + "}");
  m.assign("shift_o", L == 1 ? sh : "{" + sh + "}");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_lane(const CoreConfig& c) {
  const auto& a = c.arith;
  const int xw = a.xw, sw = a.sw, bw = a.bw, yw = a.yw;
  const int pw = xw + sw;
  const int aw = c.acc_bits();
  const int rw = c.rshift_bits();
  Module m;
  m.name = c.name + "_lane";
  m.description = {
      "One lane: y = clamp(round((x * s + b) / 2^R), lo, hi), the normcore contract v" +
          std::to_string(kContractVersion) + ".",
      std::string("x: ") + std::to_string(xw) + "-bit " + (a.x_signed ? "signed" : "unsigned") +
          ", s: " + std::to_string(sw) + "-bit, b: " + std::to_string(bw) + "-bit, acc: " +
          std::to_string(aw) + "-bit, y: " + std::to_string(yw) + "-bit " +
          (a.y_signed ? "signed" : "unsigned") + ".",
      "Stages: " + std::string(c.pipe_xbar() ? "[input regs] " : "") +
          (c.pipe_mul() ? "[x*s] [+b] " : "[x*s+b] ") +
          (c.pipe_round() ? "[round] [clamp]" : "[round+clamp]") + "; latency " +
          std::to_string(c.pipeline - 1) + " cycles. No reset (pure datapath)."};
  m.in("clk_i", 1);
  m.in("x_i", xw);
  m.in("s_i", sw);
  m.in("b_i", bw);
  m.in("shift_i", rw, "R, 0.." + std::to_string(aw));
  m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("lo_i", yw);
  m.in("hi_i", yw);
  m.out("y_o", yw);

  std::string x = "x_i", s = "s_i", b = "b_i";
  if (c.pipe_xbar()) {
    m.section("Input registers (DSP A/B/C registers)");
    m.reg("x_q", xw);
    m.reg("s_q", sw);
    m.reg("b_q", bw);
    m.always_ff({assign("x_q", "x_i"), assign("s_q", "s_i"), assign("b_q", "b_i")});
    x = "x_q", s = "s_q", b = "b_q";
  }
  m.section("Multiply-add (one multiplier)");
  m.wire("x_e", pw, "", true);
  m.assign("x_e", a.x_signed ? sext(x, xw, pw) : zext(x, xw, pw));
  m.wire("s_e", pw, "", true);
  m.assign("s_e", sext(s, sw, pw));
  m.wire("prod", pw, "exact: |x * s| < 2^" + std::to_string(pw - 1), true);
  m.assign("prod", "x_e * s_e");
  std::string pr = "prod", bb = b;
  if (c.pipe_mul()) {
    m.reg("prod_q", pw);
    m.reg("b2_q", bw);
    m.always_ff({assign("prod_q", "prod"), assign("b2_q", b)});
    pr = "prod_q", bb = "b2_q";
  }
  m.wire("acc_d", aw);
  m.assign("acc_d", sext(pr, pw, aw) + " + " + sext(bb, bw, aw));
  m.reg("acc_q", aw);
  m.always_ff({assign("acc_q", "acc_d")});

  m.section("Rounding: (acc + inc) >>> R with inc chosen by the mode");
  const int ew = aw + 1;
  m.wire("acc_x", ew);
  m.assign("acc_x", sext("acc_q", aw, ew));
  m.wire("half", ew, "2^(R-1), 0 when R = 0");
  m.assign("half", "(" + lit(ew, 1) + " << shift_i) >> 1");
  m.wire("half0", 1);
  m.assign("half0", "shift_i == " + lit(rw, 0));
  m.wire("par", 1, "bit R of acc: parity of floor(acc / 2^R)");
  m.assign("par", "acc_x[shift_i]");
  m.wire("neg", 1);
  m.assign("neg", bit("acc_q", aw, aw - 1));
  m.reg("inc", ew);
  m.always_comb({case_("round_i",
                       {{"2'd0", {assign("inc", lit(ew, 0))}},
                        {"2'd1", {assign("inc", "half")}},
                        {"2'd2", {assign("inc", "half0 ? " + lit(ew, 0) + " : half - " +
                                                    zext("~par", 1, ew))}},
                        {"default", {assign("inc", "half0 ? " + lit(ew, 0) + " : half - " +
                                                       zext("neg", 1, ew))}}})});
  m.wire("sum", ew, "", true);
  m.assign("sum", "acc_x + inc");
  m.wire("q", ew, "", true);
  m.assign("q", "sum >>> shift_i");
  std::string q = "q";
  if (c.pipe_round()) {
    m.reg("q_q", ew, "", true);
    m.always_ff({assign("q_q", "q")});
    q = "q_q";
  }
  m.section("Clamp to [lo, hi] (lo first, then hi: hi wins if lo > hi)");
  m.wire("lo_e", ew, "", true);
  m.assign("lo_e", a.y_signed ? sext("lo_i", yw, ew) : zext("lo_i", yw, ew));
  m.wire("hi_e", ew, "", true);
  m.assign("hi_e", a.y_signed ? sext("hi_i", yw, ew) : zext("hi_i", yw, ew));
  m.wire("t", ew, "", true);
  m.assign("t", "(" + q + " < lo_e) ? lo_e : " + q);
  m.reg("y_q", yw);
  m.always_ff({assign("y_q", "(t > hi_e) ? hi_i : " + part("t", ew, 0, yw))});
  m.assign("y_o", "y_q");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_fifo(const CoreConfig& c) {
  const int d = c.fifo_depth();
  const int w = c.lanes * c.arith.yw + c.lanes + 1;
  const int pt = std::max(1, clog2(d));
  const int cn = bits_for(d);
  Module m;
  m.name = c.name + "_fifo";
  m.description = {"Output buffer of " + std::to_string(d) +
                       " beats. The core admits a beat only when it has room here for",
                   "every beat in flight, so writes never find it full."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("wr_i", 1);
  m.in("wdata_i", w);
  m.in("rd_i", 1, "only while valid_o");
  m.out("rdata_o", w);
  m.out("valid_o", 1);
  m.memory("mem_q", w, d);
  m.reg("wptr_q", pt);
  m.reg("rptr_q", pt);
  m.reg("cnt_q", cn);
  const std::string last = lit(pt, static_cast<unsigned long long>(d - 1));
  m.always_ff({if_("!rst_ni",
                   {assign("wptr_q", lit(pt, 0)), assign("rptr_q", lit(pt, 0)),
                    assign("cnt_q", lit(cn, 0))},
                   {if_("wr_i", {assign("wptr_q", "(wptr_q == " + last + ") ? " + lit(pt, 0) +
                                                      " : wptr_q + " + lit(pt, 1))}),
                    if_("rd_i", {assign("rptr_q", "(rptr_q == " + last + ") ? " + lit(pt, 0) +
                                                      " : rptr_q + " + lit(pt, 1))}),
                    assign("cnt_q", "cnt_q + " + zext("wr_i", 1, cn) + " - " + zext("rd_i", 1, cn))}),
               if_("wr_i", {assign("mem_q[wptr_q]", "wdata_i")})});
  m.assign("rdata_o", "mem_q[rptr_q]");
  m.assign("valid_o", "cnt_q != " + lit(cn, 0));
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_top(const CoreConfig& c) {
  const auto& a = c.arith;
  const int L = c.lanes;
  const int xw = a.xw, yw = a.yw, sw = a.sw, bw = a.bw;
  const int cw = c.chan_bits();
  const int hw = c.inner_bits;
  const int rw = c.rshift_bits();
  const int aw = c.acc_bits();
  const int ns = c.pipeline;
  const int d = c.fifo_depth();
  const int on = bits_for(d);
  const int nb = c.lane_count_bits();
  const int fw = L * yw + L + 1;
  Module m;
  m.name = c.top_name();
  m.description = {
      "normcore streaming batch-norm inference core: " + std::to_string(L) +
          " lanes, per element y = clamp(round((x*s[c] + b[c]) / 2^R), lo, hi).",
      "Job: hold cfg_* and pulse start_i while ready_o; load parameters on prm_*; then",
      "stream N*C*HW elements on s_axis (lane 0 in the low bits, tlast on the final beat,",
      "tkeep one bit per element/lane, only the final beat may be partial).",
      "Latency " + std::to_string(c.latency()) + " cycles; one beat per cycle under any back-pressure."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("cfg_channels_i", cw, "C, 1.." + std::to_string(c.max_channels));
  m.in("cfg_inner_i", hw, "HW >= 1");
  m.in("cfg_layout_i", 1, "0 nchw, 1 nhwc");
  m.in("cfg_shift_i", rw, "R, 0.." + std::to_string(aw));
  m.in("cfg_round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("cfg_lo_i", yw, "clamp low");
  m.in("cfg_hi_i", yw, "clamp high");
  m.in("start_i", 1, "latch cfg_* (taken when ready_o)");
  m.out("ready_o", 1, "idle: no set-up, load or beat in flight");
  m.out("configured_o", 1, "set-up done: prm_* and s_axis open");
  m.out("cfg_error_o", 1, "last start had an invalid configuration");
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1);
  m.in("prm_chan_i", cw);
  m.in("prm_scale_i", sw);
  m.in("prm_shift_i", bw);
  m.in("s_axis_tvalid", 1);
  m.out("s_axis_tready", 1);
  m.in("s_axis_tdata", L * xw);
  m.in("s_axis_tkeep", L);
  m.in("s_axis_tlast", 1);
  m.out("m_axis_tvalid", 1);
  m.in("m_axis_tready", 1);
  m.out("m_axis_tdata", L * yw);
  m.out("m_axis_tkeep", L);
  m.out("m_axis_tlast", 1);

  m.section("Job configuration and set-up");
  m.reg("st_q", 2, "0 unconfigured, 1 set-up, 2 run");
  m.reg("st_d", 2);
  m.reg("err_q", 1);
  m.reg("err_d", 1);
  m.reg("cnt_q", nb, "set-up cycles done (lane init chain)");
  m.reg("cnt_d", nb);
  m.reg("ch_q", cw);
  m.reg("inner_q", hw);
  m.reg("layout_q", 1);
  m.reg("shift_q", rw);
  m.reg("round_q", 2);
  m.reg("lo_q", yw);
  m.reg("hi_q", yw);
  m.wire("start_fire", 1);
  m.wire("cfg_ok", 1);
  m.wire("ld_busy", 1);
  m.wire("step_done", 1);
  m.reg("occ_q", on, "beats accepted and not yet delivered");
  m.wire("occ_d", on);
  m.assign("ready_o", "(st_q != 2'd1) & (occ_q == " + lit(on, 0) + ") & ~ld_busy");
  m.assign("start_fire", "start_i & ready_o");
  std::string ok = "(cfg_channels_i != " + lit(cw, 0) + ") & (cfg_inner_i != " + lit(hw, 0) + ")";
  if (c.max_channels != (1LL << cw) - 1) ok += " & (cfg_channels_i <= " + lit(cw, c.max_channels) + ")";
  if (aw != (1 << rw) - 1) ok += " & (cfg_shift_i <= " + lit(rw, aw) + ")";
  m.assign("cfg_ok", ok);
  m.always_comb({
      assign("st_d", "st_q"),
      assign("err_d", "err_q"),
      assign("cnt_d", "cnt_q"),
      if_("start_fire",
          {assign("st_d", "cfg_ok ? 2'd1 : 2'd0"), assign("err_d", "~cfg_ok"),
           assign("cnt_d", lit(nb, 0))},
          {if_("st_q == 2'd1",
               {if_("cnt_q != " + lit(nb, L), {assign("cnt_d", "cnt_q + " + lit(nb, 1))},
                    {if_("step_done", {assign("st_d", "2'd2")})})})}),
  });
  m.always_ff({if_("!rst_ni",
                   {assign("st_q", "2'd0"), assign("err_q", "1'b0"), assign("cnt_q", lit(nb, 0))},
                   {assign("st_q", "st_d"), assign("err_q", "err_d"), assign("cnt_q", "cnt_d")}),
               if_("start_fire",
                   {assign("ch_q", "cfg_channels_i"), assign("inner_q", "cfg_inner_i"),
                    assign("layout_q", "cfg_layout_i"), assign("shift_q", "cfg_shift_i"),
                    assign("round_q", "cfg_round_i"), assign("lo_q", "cfg_lo_i"),
                    assign("hi_q", "cfg_hi_i")})});
  m.assign("configured_o", "st_q == 2'd2");
  m.assign("cfg_error_o", "err_q");

  m.section("Lane positions: S = HW (nchw) or 1 (nhwc)");
  m.wire("stride", hw);
  m.assign("stride", "layout_q ? " + lit(hw, 1) + " : inner_q");
  m.wire("s_one", 1, "S == 1");
  m.assign("s_one", "stride == " + lit(hw, 1));
  m.wire("ostep_r", hw);
  m.assign("ostep_r", zext("~s_one", 1, hw));
  m.wire("ostep_c", cw);
  m.assign("ostep_c", zext("(s_one & (ch_q != " + lit(cw, 1) + "))", 1, cw));
  m.wire("lstep_r", hw);
  m.wire("lstep_c", cw);
  m.wire("prev0_c", cw, "position before element 0: (C-1, S-1)");
  m.assign("prev0_c", "ch_q - " + lit(cw, 1));
  m.wire("prev0_r", hw);
  m.assign("prev0_r", "stride - " + lit(hw, 1));
  m.instance(Instance{c.name + "_step",
                      "u_step",
                      {{"clk_i", "clk_i"},
                       {"rst_ni", "rst_ni"},
                       {"start_i", "start_fire & cfg_ok"},
                       {"stride_i", "stride"},
                       {"chans_i", "ch_q"},
                       {"done_o", "step_done"},
                       {"rem_o", "lstep_r"},
                       {"quo_o", "lstep_c"}},
                      {}});
  m.wire("in_fire", 1);
  m.wire("lane_init", 1);
  m.assign("lane_init", "st_q == 2'd1");
  m.wire("lane_c", L * cw);
  std::string lane_c_cat;
  for (int i = 0; i < L; ++i) {
    m.wire(idx("pos_c", i), cw);
    m.wire(idx("pos_r", i), hw);
    lane_c_cat = idx("pos_c", i) + (lane_c_cat.empty() ? "" : ", ") + lane_c_cat;
  }
  for (int i = 0; i < L; ++i) {
    m.instance(Instance{c.name + "_chan",
                        idx("u_chan", i),
                        {{"clk_i", "clk_i"},
                         {"init_i", "lane_init"},
                         {"step_i", "in_fire & ~s_axis_tlast"},
                         {"restart_i", "in_fire & s_axis_tlast"},
                         {"prev_c_i", i == 0 ? "prev0_c" : idx("pos_c", i - 1)},
                         {"prev_r_i", i == 0 ? "prev0_r" : idx("pos_r", i - 1)},
                         {"stride_i", "stride"},
                         {"chans_i", "ch_q"},
                         {"lstep_c_i", "lstep_c"},
                         {"lstep_r_i", "lstep_r"},
                         {"ostep_c_i", "ostep_c"},
                         {"ostep_r_i", "ostep_r"},
                         {"c_o", idx("pos_c", i)},
                         {"r_o", idx("pos_r", i)}},
                        {}});
  }
  m.assign("lane_c", L == 1 ? lane_c_cat : "{" + lane_c_cat + "}");
  m.wire("unused_pos_r", 1, "the last lane's offset feeds no next lane");
  m.assign("unused_pos_r", "^" + idx("pos_r", L - 1));

  m.section("Parameter table");
  m.wire("lane_s", L * sw);
  m.wire("lane_b", L * bw);
  m.instance(Instance{c.name + "_ptable",
                      "u_ptable",
                      {{"clk_i", "clk_i"},
                       {"rst_ni", "rst_ni"},
                       {"en_i", "st_q == 2'd2"},
                       {"chans_i", "ch_q"},
                       {"lane_c_i", "lane_c"},
                       {"prm_valid_i", "prm_valid_i"},
                       {"prm_ready_o", "prm_ready_o"},
                       {"prm_chan_i", "prm_chan_i"},
                       {"prm_scale_i", "prm_scale_i"},
                       {"prm_shift_i", "prm_shift_i"},
                       {"busy_o", "ld_busy"},
                       {"scale_o", "lane_s"},
                       {"shift_o", "lane_b"}},
                      {}});

  m.section("Flow control: admit a beat only if the output buffer can hold all beats in flight");
  m.reg("tready_q", 1);
  m.wire("out_fire", 1);
  m.assign("in_fire", "s_axis_tvalid & tready_q");
  m.assign("out_fire", "m_axis_tvalid & m_axis_tready");
  m.assign("occ_d", "occ_q + " + zext("in_fire", 1, on) + " - " + zext("out_fire", 1, on));
  m.always_ff({if_("!rst_ni", {assign("occ_q", lit(on, 0)), assign("tready_q", "1'b0")},
                   {assign("occ_q", "occ_d"),
                    assign("tready_q", "(st_d == 2'd2) & (occ_d < " + lit(on, d) + ")")})});
  m.assign("s_axis_tready", "tready_q");

  m.section("Stage 1: input beat registered alongside the table read");
  m.reg("x1_q", L * xw);
  m.always_ff({assign("x1_q", "s_axis_tdata")});
  // Valid / keep / last travel beside the lanes for stages 1..ns.
  Block vff_reset, vff_run, side;
  for (int k = 1; k <= ns; ++k) {
    m.reg(idx("v", k) + "_q", 1);
    m.reg(idx("keep", k) + "_q", L);
    m.reg(idx("last", k) + "_q", 1);
    vff_reset.push_back(assign(idx("v", k) + "_q", "1'b0"));
    vff_run.push_back(assign(idx("v", k) + "_q", k == 1 ? "in_fire" : idx("v", k - 1) + "_q"));
    side.push_back(assign(idx("keep", k) + "_q", k == 1 ? "s_axis_tkeep" : idx("keep", k - 1) + "_q"));
    side.push_back(assign(idx("last", k) + "_q", k == 1 ? "s_axis_tlast" : idx("last", k - 1) + "_q"));
  }
  Block vff{if_("!rst_ni", std::move(vff_reset), std::move(vff_run))};
  for (auto& s : side) vff.push_back(std::move(s));
  m.always_ff(std::move(vff));

  m.section("Lanes");
  std::string ycat;
  for (int i = 0; i < L; ++i) {
    m.wire(idx("y", i), yw);
    m.instance(Instance{c.name + "_lane",
                        idx("u_lane", i),
                        {{"clk_i", "clk_i"},
                         {"x_i", part("x1_q", L * xw, i * xw, xw)},
                         {"s_i", part("lane_s", L * sw, i * sw, sw)},
                         {"b_i", part("lane_b", L * bw, i * bw, bw)},
                         {"shift_i", "shift_q"},
                         {"round_i", "round_q"},
                         {"lo_i", "lo_q"},
                         {"hi_i", "hi_q"},
                         {"y_o", idx("y", i)}},
                        {}});
    const std::string kb = bit(idx("keep", ns) + "_q", L, i);
    const std::string masked = idx("y", i) + " & {" + std::to_string(yw) + "{" + kb + "}}";
    ycat = masked + (ycat.empty() ? "" : ", ") + ycat;
  }
  m.section("Output buffer (lanes with tkeep = 0 output 0)");
  m.wire("fifo_wdata", fw);
  m.assign("fifo_wdata", "{" + idx("last", ns) + "_q, " + idx("keep", ns) + "_q, " + ycat + "}");
  m.wire("fifo_rdata", fw);
  m.instance(Instance{c.name + "_fifo",
                      "u_fifo",
                      {{"clk_i", "clk_i"},
                       {"rst_ni", "rst_ni"},
                       {"wr_i", idx("v", ns) + "_q"},
                       {"wdata_i", "fifo_wdata"},
                       {"rd_i", "out_fire"},
                       {"rdata_o", "fifo_rdata"},
                       {"valid_o", "m_axis_tvalid"}},
                      {}});
  m.assign("m_axis_tdata", part("fifo_rdata", fw, 0, L * yw));
  m.assign("m_axis_tkeep", part("fifo_rdata", fw, L * yw, L));
  m.assign("m_axis_tlast", bit("fifo_rdata", fw, fw - 1));
  return m;
}

}  // namespace

std::vector<Module> build_core(const CoreConfig& cfg) {
  if (auto err = cfg.check(); !err.empty()) throw std::invalid_argument(err);
  return {build_bank(cfg), build_step(cfg), build_chan(cfg), build_ptable(cfg),
          build_lane(cfg), build_fifo(cfg), build_top(cfg)};
}

}  // namespace normcore::gen
