// Builds the streaming core. Module overview (see docs/architecture.md):
//   <n>_core    top: AXI4-Stream in/out, job configuration and set-up, occupancy-based flow control
//   <n>_chan    the lanes' positions: lane 0's channel and every lane's channel offset from it
//   <n>_step    set-up divider: how far a lane's channel moves per beat (L div S, mod C)
//   <n>_ptable  banked parameter table with its loader and the lane crossbar
//   <n>_bank    one bank of the table (a simple dual-port RAM, registered read)
//   <n>_lane    one per lane: multiply-add, rounding, clamp
//   <n>_fifo    output buffer that absorbs the beats in flight when m_axis stalls
#include <algorithm>
#include <stdexcept>

#include "normcore/gen/core.hpp"
#include "normcore/gen/ref_designs.hpp"
#include "ref_internal.hpp"
#include "vexpr.hpp"

namespace normcore::gen {
namespace {

using v::bit;
using v::fit;
using v::lit;
using v::part;
using v::sext;
using v::zext;

std::string idx(const std::string& base, int i) {
  return base + "_" + std::to_string(i);
}

// One per-channel parameter: prm_<prm>_i on the top and the table, <prm>_o out of the table
// (every lane's value), <lane>_i into a lane, <wire> the top's net between them.
struct Field {
  std::string prm;
  int width;
  std::string lane;
  std::string wire;
  std::string comment;
};

// What the folded lanes (the product) and the decomposed reference lanes differ in.
struct Variant {
  bool dec = false;
  std::vector<Field> fields;  // the parameter word, low bits first
  int pw = 0;                 // its width
  int aw = 0;                 // the accumulator the output stage rounds (R is 0..aw)
  int rw = 0;                 // width of R
  int extra = 0;              // lane stages in front of the multiply-add
  int k1w = 0;                // decomposed: width of the requantisation shift k1
  [[nodiscard]] int ns(const CoreConfig& c) const { return c.pipeline + extra; }
  [[nodiscard]] int fifo_depth(const CoreConfig& c) const { return c.fifo_depth() + extra; }
  [[nodiscard]] int latency(const CoreConfig& c) const { return c.latency() + extra; }
  // The fields high to low, as a Verilog concatenation of pre + name + post: "{shift, scale}".
  [[nodiscard]] std::string word(const std::string& pre = "", const std::string& post = "") const {
    std::string w;
    for (const auto& f : fields) w = pre + f.prm + post + (w.empty() ? "" : ", ") + w;
    return "{" + w + "}";
  }
};

Variant variant(const CoreConfig& c, LaneArith arith) {
  Variant v;
  if (arith == LaneArith::folded) {
    v.fields = {{"scale", c.arith.sw, "s", "lane_s", "s[c], signed"},
                {"shift", c.arith.bw, "b", "lane_b", "b[c], signed"}};
    v.aw = c.acc_bits();
    v.rw = c.rshift_bits();
  } else {
    const auto w = decomposed_widths(c);
    v.dec = true;
    v.fields = {{"mean", w.mw, "mean", "lane_mean",
                 "mean[c], signed, units of 2^-" + std::to_string(w.f) + " of x"},
                {"istd", w.iw, "istd", "lane_istd", "inv_std[c], signed"},
                {"gamma", w.gw, "gamma", "lane_gamma", "gamma[c], signed"},
                {"beta", c.arith.bw, "beta", "lane_beta", "beta[c], signed"}};
    v.aw = w.aw;
    v.rw = w.rw;
    v.extra = kDecomposedExtraStages;
    v.k1w = w.k1w;
  }
  for (const auto& f : v.fields) v.pw += f.width;
  return v;
}

// ---------------------------------------------------------------------------------------------
Module build_bank(const CoreConfig& c, const Variant& v) {
  const int pw = v.pw;
  const int ab = c.bank_addr_bits();
  Module m;
  m.name = c.name + "_bank";
  m.description = {"One bank of the parameter table: " + std::to_string(c.bank_depth()) +
                       " words of " + v.word() + ", one write port,",
                   "one read port with a registered output (maps to block RAM). No read while",
                   "writing (the core takes no beat then): no read-during-write logic."};
  m.in("clk_i", 1);
  m.in("we_i", 1, "write enable");
  m.in("waddr_i", ab);
  m.in("wdata_i", pw);
  m.in("raddr_i", ab);
  m.out("rdata_o", pw, "word at raddr_i of the previous cycle (held while writing)");
  m.memory("mem_q", pw, c.bank_depth());
  if (c.xilinx_attrs()) m.attr_last("ram_style = \"block\"");
  m.reg("rdata_q", pw);
  m.always_ff({if_("we_i", {assign("mem_q[waddr_i]", "wdata_i")}),
               if_("!we_i", {assign("rdata_q", "mem_q[raddr_i]")})});
  m.assign("rdata_o", "rdata_q");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_step(const CoreConfig& c) {
  const int nb = c.lane_count_bits();
  const int hw = c.inner_bits;
  const int cw = c.chan_bits();
  const int sb = std::min(hw, nb);  // S only matters below 2^nb (r <= L < 2^nb)
  const int qw = std::max(nb, cw);
  Module m;
  m.name = c.name + "_step";
  m.description = {
      "Set-up divider. With S the element stride of a channel (HW for nchw, 1 for nhwc) and",
      "L = " + std::to_string(c.lanes) + " lanes, computes rem = L mod S and quo = (L div S) mod C",
      "by repeated subtraction, the quotient counted modulo C (at most " +
          std::to_string(c.lanes + 1) + " cycles). A beat moves",
      "every lane by quo channels and rem positions (plus a carry). r <= L: only the low " +
          std::to_string(sb) + " bits of S",
      "are compared (a larger S, flagged by the core, is never subtracted). The compare is",
      "registered one iteration ahead (r >= 2S: the next r >= S); the first one comes from the "
      "core."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "begin; the inputs below hold from the next cycle on");
  m.in("stride_i", sb, hw > nb ? "S, low bits" : "S >= 1");
  if (hw > nb) m.in("s_big_i", 1, "S >= 2^" + std::to_string(nb));
  m.in("chm1_i", cw, "C - 1");
  m.in("ge0_i", 1, "L >= S: the first compare");
  m.out("done_o", 1, "rem_o and quo_o are final");
  m.out("rem_o", sb, "L mod S (< L)");
  m.out("quo_o", cw, "(L div S) mod C");
  m.reg("run_q", 1, "subtracting");
  m.reg("r_q", nb, "remainder, <= L");
  m.reg("q_q", nb, "quotient mod C, <= L");
  m.reg("first_q", 1, "first iteration: the compare is ge0_i");
  m.reg("rge_q", 1, "r_q >= S, computed a cycle early as r >= 2S");
  m.wire("r_ge", 1, "r_q >= S");
  m.assign("r_ge", "first_q ? ge0_i : rge_q");
  m.wire("q_wrap", 1, "q_q == C - 1");
  m.assign("q_wrap", zext("q_q", nb, qw) + " == " + zext("chm1_i", cw, qw));
  m.always_ff(
      {if_("!rst_ni", {assign("run_q", "1'b0")},
           {if_("start_i", {assign("run_q", "1'b1")}, {if_("~r_ge", {assign("run_q", "1'b0")})})}),
       if_("start_i", {assign("r_q", lit(nb, c.lanes)), assign("q_q", lit(nb, 0))},
           {if_("run_q & r_ge",
                {assign("r_q", "r_q - " + zext("stride_i", sb, nb)),
                 assign("q_q", "q_wrap ? " + lit(nb, 0) + " : q_q + " + lit(nb, 1))})}),
       assign("first_q", "start_i"),
       assign("rge_q", (hw > nb ? "~s_big_i & " : "") + std::string("(") + zext("r_q", nb, nb + 1) +
                           " >= {" + zext("stride_i", sb, nb) + ", 1'b0})")});
  m.assign("done_o", "~run_q");
  m.assign("rem_o", part("r_q", nb, 0, sb));
  m.assign("quo_o", cw >= nb ? zext("q_q", nb, cw) : part("q_q", nb, 0, cw));
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_chan(const CoreConfig& c) {
  const int L = c.lanes;
  const int hw = c.inner_bits;
  const int cw = c.chan_bits();
  const int nb = c.lane_count_bits();
  const int ml = c.chan_low_bits();    // q (offset inside a channel when S < L), k_r, S - k_r
  const int p = c.bank_sel_bits();     // d (channel offset of a lane from lane 0), < L
  const int lw = nb + 1;               // low part of rem: holds 2L
  const int W = std::max(hw, lw) + 1;  // rem and its steps
  Module md;
  md.name = c.name + "_chan";
  md.description = {
      "Positions of the lanes' elements for the next beat: lane 0's channel c0 (< C) and each",
      "lane's channel offset d_i = u_i - c0 (< L; the table window u = c0 .. c0 + L - 1).",
      "With S the stride of a channel (HW for nchw, 1 for nhwc) and r0 lane 0's offset in c0:",
      "  S >= L: rem = S - r0 (elements left in c0, 1..S) is one wide counter; a beat crosses at",
      "          most one channel boundary: d_i = (rem <= i), and c0 moves on when rem <= L",
      "          (neg, a register computed a beat ahead with narrow compares).",
      "  S <  L: every lane keeps q_i = (r0 + i) mod S and d_i (both narrow); a beat adds",
      "          k_r = L mod S to q_i with carry cy_i = (q_i >= S - k_r), d_i += cy_i - cy_0,",
      "          and c0 += (L div S) + cy_0.",
      "c0: four adders off the register (c0 + k_c + {0,1}, the same less C), two selects.",
      "A packet starts at element 0 (c0 = 0, rem = S, q_i and d_i saved from the core's walker)."};
  md.in("clk_i", 1);
  md.in("en_i", 1, "a beat, or the load");
  md.in("ld_i", 1, "with en_i: load the packet start instead of a step");
  if (L > 1) {
    md.in("small_i", 1, "S < L");
    md.in("sv_i", L - 1, "lane i (1..L-1) saves the walker's position as its start");
    md.in("wr_i", ml, "walker: r of element i");
    md.in("wd_i", p, "walker: i div S (not wrapped at C)");
    md.in("kr_i", ml, "k_r = L mod S (S < L)");
    md.in("sk_i", ml, "S - k_r (S < L)");
  }
  md.in("stride_i", hw, "S");
  md.in("sle_i", 1, "S <= L: the start's neg");
  md.in("t2_i", lw, "2L - S when S < 2L, else 0 (rem >= 1: never <= 0)");
  md.in("remw_i", W, "S - L: rem's step when c0 moves on");
  md.in("remw1_i", W - lw, "(S - L) high part + 1");
  md.in("kc0_i", cw, "c0 step without a carry");
  md.in("kc1_i", cw, "c0 step with a carry");
  md.in("kw0_i", cw + 1, "kc0 - C");
  md.in("kw1_i", cw + 1, "kc1 - C");
  md.out("c0_o", cw);
  if (L > 1) md.out("d_o", (L - 1) * p, "d_i of lanes 1..L-1, lane 1 in the low bits");

  md.section("S >= L: rem, the elements left in lane 0's channel, as rem = (h - pb) * 2^" +
             std::to_string(lw) + " + lo:");
  md.section("the borrow of a step's low part waits a beat in pb (no wide carry chain into a mux)");
  const int hb = W - lw;
  md.reg("lo_q", lw);
  md.reg("h_q", hb);
  md.reg("pb_q", 1, "borrow pending: h_q is one too high");
  md.reg("neg_q", 1, "rem <= L: c0 moves on with this beat");
  md.wire("lo_sub", lw + 1, "lo - L: top bit the borrow");
  md.assign("lo_sub",
            zext("lo_q", lw, lw + 1) + " - " + lit(lw + 1, static_cast<unsigned long long>(L)));
  md.wire("lo_add", lw + 1, "lo + (S - L)_low: top bit the carry (after a wrap)");
  md.assign("lo_add",
            zext("lo_q", lw, lw + 1) + " + " + zext(part("remw_i", W, 0, lw), lw, lw + 1));
  md.wire("h_dec", hb);
  md.assign("h_dec", "h_q - " + zext("pb_q", 1, hb));
  md.wire("hi_zero", 1, "h - pb == 0: rem < 2^" + std::to_string(lw));
  md.assign("hi_zero", hb == 1
                           ? std::string("h_q == pb_q")
                           : "pb_q ? (h_q == " + lit(hb, 1) + ") : (h_q == " + lit(hb, 0) + ")");
  // After a wrap (rem <= L, so rem = lo) the next rem is rem + S - L: <= L when rem <= 2L - S (a
  // per-job constant, so a register-to-register compare and no adder on this path). Otherwise
  // rem - L <= L when h - pb = 0 and lo <= 2L.
  md.wire("neg_nx", 1, "the next rem <= L");
  md.assign("neg_nx", "neg_q ? (lo_q <= t2_i) : (hi_zero & (lo_q <= " + lit(lw, 2ULL * L) + "))");
  const std::string s_lo = hw >= lw ? part("stride_i", hw, 0, lw) : zext("stride_i", hw, lw);
  const std::string s_hi =
      hw > lw ? zext(part("stride_i", hw, lw, hw - lw), hw - lw, hb) : lit(hb, 0);

  std::string cy0 = "neg_q";
  Block upd, load, step, save;
  upd.push_back(if_(
      "ld_i",
      {assign("lo_q", s_lo), assign("h_q", s_hi), assign("pb_q", "1'b0"), assign("neg_q", "sle_i"),
       assign("c_q", lit(cw, 0))},
      {if_("neg_q",
           {assign("lo_q", part("lo_add", lw + 1, 0, lw)),
            assign("h_q", bit("lo_add", lw + 1, lw) + " ? remw1_i : " + part("remw_i", W, lw, hb)),
            assign("pb_q", "1'b0")},
           {assign("lo_q", part("lo_sub", lw + 1, 0, lw)), assign("h_q", "h_dec"),
            assign("pb_q", bit("lo_sub", lw + 1, lw))}),
       assign("neg_q", "neg_nx"), assign("c_q", "cy0 ? c_nx_1 : c_nx_0")}));
  std::string dcat;
  if (L > 1) {
    md.section("S < L: per lane q_i = (r0 + i) mod S and d_i");
    for (int i = 0; i < L; ++i) {
      const std::string q = idx("q", i) + "_q", cy = idx("cy", i);
      md.reg(q, ml);
      md.wire(cy, 1, "q_" + std::to_string(i) + " + k_r >= S");
      md.assign(cy, q + " >= sk_i");
      md.wire(idx("q_nx", i), ml);
      md.assign(idx("q_nx", i), cy + " ? " + q + " - sk_i : " + q + " + kr_i");
      if (i == 0) {
        load.push_back(assign(q, lit(ml, 0)));
        step.push_back(assign(q, idx("q_nx", i)));
        continue;
      }
      const std::string d = idx("d", i) + "_q";
      md.reg(d, p);
      md.reg(idx("q0", i) + "_q", ml, "start");
      md.reg(idx("d0", i) + "_q", p);
      md.wire(idx("d_nx", i), p);
      md.assign(idx("d_nx", i), d + " + " + zext(cy, 1, p) + " - " + zext("cy_0", 1, p));
      load.push_back(assign(q, idx("q0", i) + "_q"));
      load.push_back(assign(d, idx("d0", i) + "_q"));
      step.push_back(assign(q, idx("q_nx", i)));
      step.push_back(assign(d, idx("d_nx", i)));
      save.push_back(if_(bit("sv_i", L - 1, i - 1), {assign(idx("q0", i) + "_q", "wr_i"),
                                                     assign(idx("d0", i) + "_q", "wd_i")}));
      // Output: the small-S offset, or (S >= L) 1 for the lanes past the boundary.
      md.wire(idx("d_out", i), p);
      const std::string big =
          "neg_q & (lo_q <= " + lit(lw, static_cast<unsigned long long>(i)) + ")";
      md.assign(idx("d_out", i), "small_i ? " + d + " : " + zext("(" + big + ")", 1, p));
      dcat = idx("d_out", i) + (dcat.empty() ? "" : ", ") + dcat;
    }
    cy0 = "small_i ? cy_0 : neg_q";
    upd.push_back(if_("ld_i", std::move(load), std::move(step)));
  }
  md.section("c0");
  md.reg("c_q", cw);
  md.wire("cy0", 1, "c0 takes the step with a carry");
  md.assign("cy0", cy0);
  for (int j = 0; j < 2; ++j) {
    const std::string add = idx("c_add", j), sub = idx("c_sub", j), nx = idx("c_nx", j);
    md.wire(add, cw);
    md.assign(add, "c_q + kc" + std::to_string(j) + "_i");
    md.wire(sub, cw + 1);
    md.assign(sub, zext("c_q", cw, cw + 1) + " + kw" + std::to_string(j) + "_i");
    md.wire(nx, cw);
    md.assign(nx, "~" + bit(sub, cw + 1, cw) + " ? " + part(sub, cw + 1, 0, cw) + " : " + add);
  }
  Block ff{if_("en_i", std::move(upd))};
  for (auto& s : save) ff.push_back(std::move(s));
  md.always_ff(std::move(ff));
  md.assign("c0_o", "c_q");
  if (L > 1) md.assign("d_o", L == 2 ? dcat : "{" + dcat + "}");
  return md;
}

// ---------------------------------------------------------------------------------------------
Module build_ptable(const CoreConfig& c, const Variant& v) {
  const int L = c.lanes;
  const int P = c.banks();
  const int p = c.bank_sel_bits();
  const int cw = c.chan_bits();
  const int pw = v.pw;
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
  m.in("c0_i", cw, "channel of lane 0 for the next beat");
  if (L > 1) m.in("lane_d_i", (L - 1) * p, "lanes 1..L-1: channel offset from lane 0 (< L)");
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1);
  m.in("prm_chan_i", cw, "channel index (< C; others are ignored)");
  for (const auto& f : v.fields) m.in("prm_" + f.prm + "_i", f.width, f.comment);
  m.out("busy_o", 1, "loader writing copies");
  for (const auto& f : v.fields) {
    m.out(f.prm + "_o", L * f.width,
          &f == &v.fields.front() ? "per lane, one cycle after c0_i" : "");
  }

  // Loader: writes T[c], T[c+C], T[c+2C], ... (u < C + L - 1), one bank word per cycle.
  m.section("Loader");
  m.reg("ld_busy_q", 1);
  m.reg("ld_first_q", 1, "first copy: u = the channel received");
  m.reg("ld_in_q", 1, "prm_chan_i < C, registered every cycle (read in the first copy's cycle)");
  m.reg("ld_u_q", uw);
  m.reg("ld_data_q", pw, v.word());
  m.wire("ld_accept", 1);
  m.wire("ld_ok", 1, "write this copy (a channel >= C is dropped)");
  m.assign("prm_ready_o", "en_i & ~ld_busy_q");
  m.assign("ld_accept", "prm_valid_i & en_i & ~ld_busy_q");
  m.assign("ld_ok", "~ld_first_q | ld_in_q");
  // Copy u is the last exactly when u >= L - 1 (the next one, u + C, would be beyond C + L - 2):
  // the copy's own u against a constant, narrow (u >= 2^nb, or its low nb bits >= L - 1).
  std::string last = "1'b1";
  if (L > 1) {
    const int nb = c.lane_count_bits();
    m.wire("ld_last", 1, "this copy is the last: u >= L - 1");
    const std::string lo_ge = "(" +
                              (uw <= nb ? zext("ld_u_q", uw, nb) : part("ld_u_q", uw, 0, nb)) +
                              " >= " + lit(nb, L - 1) + ")";
    m.assign("ld_last", uw <= nb ? lo_ge
                                 : "(" + part("ld_u_q", uw, nb, uw - nb) +
                                       " != " + lit(uw - nb, 0) + ") | " + lo_ge);
    last = "ld_last";
  }
  m.always_ff({if_("!rst_ni", {assign("ld_busy_q", "1'b0")},
                   {if_("ld_accept", {assign("ld_busy_q", "1'b1")},
                        {if_(last + " | ~ld_ok", {assign("ld_busy_q", "1'b0")})})}),
               assign("ld_first_q", "ld_accept"), assign("ld_in_q", "prm_chan_i < chans_i"),
               if_("ld_accept",
                   {assign("ld_u_q", zext("prm_chan_i", cw, uw)),
                    assign("ld_data_q", v.word("prm_", "_i"))},
                   {if_("ld_busy_q", {assign("ld_u_q", "ld_u_q + " + zext("chans_i", cw, uw))})})});
  m.assign("busy_o", "ld_busy_q");
  m.wire("ld_addr", ab);
  m.assign("ld_addr", p + ab <= uw ? part("ld_u_q", uw, p, ab)
                                   : zext(part("ld_u_q", uw, p, uw - p), uw - p, ab));

  // Read addressing from the window start c0 = channel of lane 0.
  m.section("Read side: bank j serves the u = j (mod " + std::to_string(P) + ") of the window");
  m.wire("c0", cw);
  m.assign("c0", "c0_i");
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
             p > 0 ? "ld_busy_q & ld_ok & (" + part("ld_u_q", uw, 0, p) + " == " + lit(p, j) + ")"
                   : "ld_busy_q & ld_ok");
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
    Block ff;
    for (int i = 0; i < L; ++i) {
      m.wire(idx("sel", i), p);
      if (i == 0) {
        m.assign(idx("sel", i), "c0_lo");
      } else {
        m.assign(idx("sel", i), "c0_lo + " + part("lane_d_i", (L - 1) * p, (i - 1) * p, p),
                 "u = c0 + d_i, mod " + std::to_string(P));
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
  int off = 0;
  for (const auto& f : v.fields) {
    std::string cat;
    for (int i = L - 1; i >= 0; --i)
      cat += (cat.empty() ? "" : ", ") + part(idx("word", i), pw, off, f.width);
    m.assign(f.prm + "_o", L == 1 ? cat : "{" + cat + "}");
    off += f.width;
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Adds the register `<name>_q` (same width and signedness) when `on`; returns the name the
// next stage reads.
std::string stage_reg(Module& m, Block& ff, const std::string& name, int width, bool on,
                      bool is_signed = false) {
  if (!on) return name;
  m.reg(name + "_q", width, "", is_signed);
  ff.push_back(assign(name + "_q", name));
  return name + "_q";
}

Module build_lane(const CoreConfig& c, const Variant& v) {
  const auto& a = c.arith;
  const int xw = a.xw, sw = a.sw, bw = a.bw, yw = a.yw;
  const int aw = v.aw;
  const int rw = v.rw;
  const int ew = aw + 1;        // {acc, 0}: the shifter also brings out bit R-1
  const int nw = yw + 1;        // the floor quotient saturated to nw signed bits
  const int rl = (rw + 1) / 2;  // low R bits: the second shifter half (when split)
  const int gs = 8;             // sticky / fits OR trees: bits per group of the first half
  std::string stages;
  if (c.pipe_xbar()) stages += "[input regs] ";
  stages += v.dec ? "[x*2^f-mean] [*inv_std] [round >>> k1, saturate] [t*gamma+beta] " : "[x*s+b] ";
  if (c.pipe_shift2()) {
    stages += "[>>> R[" + std::to_string(rw - 1) + ":" + std::to_string(rl) + "]] [>>> R[" +
              std::to_string(rl - 1) + ":0]] ";
  } else {
    stages += c.pipe_shift() ? "[>>> R] " : "[>>> R ";
  }
  if (!c.pipe_shift())
    stages += "round clamp]";
  else if (!c.pipe_round())
    stages += "[round clamp]";
  else
    stages += c.pipe_sat() ? "[saturate +1?] [compare] [clamp]" : "[round compare] [clamp]";
  Module m;
  m.name = c.name + "_lane";
  m.description = {
      v.dec
          ? "PPA reference lane (decomposed BN, not the normcore contract): acc = t * gamma + beta,"
          : "One lane: y = clamp(round((x * s + b) / 2^R), lo, hi), the normcore contract v" +
                std::to_string(kContractVersion) + ".",
      v.dec ? "t = sat(round_half_up((x * 2^f - mean) * inv_std / 2^k1)); y = clamp(round(acc / "
              "2^R), lo, hi)."
            : std::string("x: ") + std::to_string(xw) + "-bit " +
                  (a.x_signed ? "signed" : "unsigned") + ", s: " + std::to_string(sw) +
                  "-bit, b: " + std::to_string(bw) + "-bit, acc: " + std::to_string(aw) +
                  "-bit, y: " + std::to_string(yw) + "-bit " +
                  (a.y_signed ? "signed" : "unsigned") + ".",
      "Rounding without a wide adder: q = acc >>> R (floor), h = bit R-1 of acc, t = any bit",
      "below R-1; q + 1 when h and (half_up: always; half_even: t or q odd; half_away: t or",
      "acc >= 0). q is saturated to " + std::to_string(nw) +
          " bits first, so the +1 and the clamp are narrow.",
      "Stages (each [] ends in a register): " + stages + "; latency " +
          std::to_string(v.ns(c) - 1) + " cycles.",
      "No reset (pure datapath)."};
  m.in("clk_i", 1);
  m.in("x_i", xw);
  for (const auto& f : v.fields) m.in(f.lane + "_i", f.width);
  if (v.dec) m.in("k1_i", v.k1w, "requantisation shift after inv_std (job constant)");
  m.in("shift_i", rw, "R, 0.." + std::to_string(aw) + " (job constant)");
  m.in("smask_i", aw, "2^(R-1) - 1 (0 when R = 0): the bits below the half bit");
  if (nw < aw) {
    m.in("omask_i", aw - 1,
         "bits >= R + " + std::to_string(nw - 1) +
             ": must equal the sign for the quotient to fit " + std::to_string(nw) + " bits");
  }
  m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("lo_i", yw, "min(lo, hi)");
  m.in("hi_i", yw);
  m.in("lox_i", yw + 2, "lo, " + std::to_string(yw + 2) + "-bit signed, top bit flipped");
  m.in("lom1_i", yw + 2, "lo - 1, the same");
  m.in("hix_i", yw + 2, "hi, the same");
  m.in("hip1_i", yw + 2, "hi + 1, the same");
  m.out("y_o", yw);

  if (v.dec) {
    // The multiply-add below is t * gamma + beta; the chain in front of it makes t.
    decomposed_front(m, c, c.pipe_xbar());
  } else {
    std::string x = "x_i", s = "s_i", b = "b_i";
    if (c.pipe_xbar()) {
      m.section("Input registers (DSP A/B/C registers)");
      m.reg("x_q", xw);
      m.reg("s_q", sw);
      m.reg("b_q", bw);
      m.always_ff({assign("x_q", "x_i"), assign("s_q", "s_i"), assign("b_q", "b_i")});
      x = "x_q", s = "s_q", b = "b_q";
    }
    const int pw = xw + sw;
    m.section("Multiply-add (one multiplier)");
    m.wire("x_e", pw, "", true);
    m.assign("x_e", a.x_signed ? sext(x, xw, pw) : zext(x, xw, pw));
    m.wire("s_e", pw, "", true);
    m.assign("s_e", sext(s, sw, pw));
    m.wire("prod", pw, "exact: |x * s| < 2^" + std::to_string(pw - 1), true);
    m.assign("prod", "x_e * s_e");
    m.wire("acc_d", aw);
    m.assign("acc_d", sext("prod", pw, aw) + " + " + sext(b, bw, aw));
  }
  m.reg("acc_q", aw);
  if (c.xilinx_attrs()) m.attr_last("use_dsp = \"yes\"");
  m.always_ff({assign("acc_q", "acc_d")});

  m.section("Shift: z = {acc, 0} >>> R, so z[" + std::to_string(aw) +
            ":1] = floor(acc / 2^R) and z[0] = bit R-1 of acc (0 when R = 0)");
  m.wire("ext", ew, "", true);
  m.assign("ext", "{acc_q, 1'b0}");
  // Beside the shifter, from acc: sticky = any bit below R-1 (smask_i), fits = every bit of
  // omask_i equal to the sign (the quotient fits nw bits). Both are OR trees over groups of gs
  // bits; with the shifter split, the group results are registered in the middle.
  const bool sat = nw < aw;
  auto groups = [&](const std::string& name, int width, bool first_half, auto term) {
    std::string cat;
    const int n_g = (width + gs - 1) / gs;
    for (int g = n_g - 1; g >= 0; --g) {
      const int lo = g * gs, n = std::min(gs, width - lo);
      cat += (cat.empty() ? "" : ", ") + term(lo, n);
    }
    m.wire(name, n_g, first_half ? "per group of " + std::to_string(gs) + " bits" : "");
    m.assign(name, n_g == 1 ? cat : "{" + cat + "}");
    return n_g;
  };
  auto stk_term = [&](int lo, int n) {
    const std::string e = "(" + part("acc_q", aw, lo, n) + " & " + part("smask_i", aw, lo, n) + ")";
    return n == 1 ? e : "|" + e;
  };
  const std::string sgn = bit("acc_q", aw, aw - 1);
  auto fit_term = [&](int lo, int n) {
    const std::string sx = n == 1 ? sgn : "{" + std::to_string(n) + "{" + sgn + "}}";
    return "~|(" + part("omask_i", aw - 1, lo, n) + " & (" + part("acc_q", aw, lo, n) + " ^ " + sx +
           "))";
  };
  // The shifter: one stage per bit of R, the largest shift first. Every later stage then only
  // has to produce a window of nw + 1 + (its remaining shift) bits (synthesis trims the rest),
  // which on iCE40 takes about a quarter fewer LUTs per lane than the smallest shift first.
  const auto shift_stages = [&](const std::string& src, int hi, int lo, const std::string& out) {
    std::string cur = src;
    for (int k = hi; k >= lo; --k) {
      const std::string nm = k == lo ? out : "zr" + std::to_string(k);
      if (k != lo) m.wire(nm, ew, "", true);
      m.assign(nm, cur + " >>> " +
                       (k == 0 ? bit("shift_i", rw, 0)
                               : "{" + bit("shift_i", rw, k) + ", " + lit(k, 0) + "}"));
      cur = nm;
    }
  };
  std::string z, sticky, fits;
  if (c.pipe_shift2()) {
    Block ff;
    m.wire("z1", ew, "", true);
    shift_stages("ext", rw - 1, rl, "z1");
    const std::string z1 = stage_reg(m, ff, "z1", ew, true, true);
    const int ns_g = groups("stk1", aw, true, stk_term);
    const std::string stk1 = stage_reg(m, ff, "stk1", ns_g, true);
    int nf_g = 0;
    std::string fit1;
    if (sat) {
      nf_g = groups("fit1", aw - 1, true, fit_term);
      fit1 = stage_reg(m, ff, "fit1", nf_g, true);
    }
    m.always_ff(std::move(ff), "end of the first shifter half");
    m.wire("z", ew, "", true);
    shift_stages(z1, rl - 1, 0, "z");
    m.wire("sticky", 1, "a bit below R-1 is set");
    m.assign("sticky", ns_g == 1 ? stk1 : "|" + stk1);
    if (sat) {
      m.wire("fits", 1, "the quotient fits " + std::to_string(nw) + " signed bits");
      m.assign("fits", nf_g == 1 ? fit1 : "&" + fit1);
    }
  } else {
    m.wire("z", ew, "", true);
    shift_stages("ext", rw - 1, 0, "z");
    m.wire("sticky", 1, "a bit below R-1 is set");
    m.assign("sticky", stk_term(0, aw));  // one group: the whole accumulator
    if (sat) {
      m.wire("fits", 1, "the quotient fits " + std::to_string(nw) + " signed bits");
      m.assign("fits", fit_term(0, aw - 1));
    }
  }
  {
    Block ff;
    z = stage_reg(m, ff, "z", ew, c.pipe_shift(), true);
    sticky = stage_reg(m, ff, "sticky", 1, c.pipe_shift());
    if (sat) fits = stage_reg(m, ff, "fits", 1, c.pipe_shift());
    if (!ff.empty()) m.always_ff(std::move(ff), "end of the shifter");
  }

  m.section("Round: q = floor quotient saturated to " + std::to_string(nw) +
            " bits, + 1 by the mode (half bit h, sticky t)");
  m.wire("qf", aw, "floor(acc / 2^R)");
  m.assign("qf", part(z, ew, 1, aw));
  m.wire("h", 1, "bit R-1 of acc");
  m.assign("h", bit(z, ew, 0));
  m.wire("neg", 1, "acc < 0");
  m.assign("neg", bit(z, ew, aw));
  m.wire("qn", nw, "qf, saturated: the clamp result is the same");
  if (sat) {
    m.wire("unused_qf", 1, "above the saturated width: fits decides");
    m.assign("unused_qf", "^" + part("qf", aw, nw, aw - nw));
    m.assign("qn", fits + " ? " + part("qf", aw, 0, nw) + " : {neg, {" + std::to_string(nw - 1) +
                       "{~neg}}}");
  } else {
    m.assign("qn", nw == aw ? "qf" : sext("qf", aw, nw));
  }
  m.wire("t_or_odd", 1, "half_even: above the half, or a tie with q odd");
  m.assign("t_or_odd", sticky + " | " + bit("qf", aw, 0));
  m.wire("t_or_pos", 1, "half_away: above the half, or a tie with acc >= 0");
  m.assign("t_or_pos", sticky + " | ~neg");
  m.reg("inc", 1);
  m.always_comb({case_("round_i", {{"2'd0", {assign("inc", "1'b0")}},
                                   {"2'd1", {assign("inc", "h")}},
                                   {"2'd2", {assign("inc", "h & t_or_odd")}},
                                   {"default", {assign("inc", "h & t_or_pos")}}})});
  std::string qn = "qn", inc = "inc";
  {
    Block ff;
    qn = stage_reg(m, ff, "qn", nw, c.pipe_sat());
    inc = stage_reg(m, ff, "inc", 1, c.pipe_sat());
    if (!ff.empty()) m.always_ff(std::move(ff), "saturated quotient and the +1 decision");
  }
  m.section("Clamp decisions beside the +1: rq = qn + inc against lo (= min(lo, hi)) and hi by");
  m.section("comparing qn with lo or lo - 1 and hi or hi + 1 (per-job constants), chosen by inc;");
  m.section("signed " + std::to_string(nw + 1) +
            "-bit values compared unsigned with the top bit flipped");
  m.wire("qn_u", nw + 1, "qn, sign-extended, top bit flipped");
  m.assign("qn_u", "{~" + bit(qn, nw, nw - 1) + ", " + qn + "}");
  m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign("rq", part(qn, nw, 0, yw) + " + " + zext(inc, 1, yw));
  m.wire("below", 1, "qn + inc < lo");
  m.assign("below", inc + " ? (qn_u < lom1_i) : (qn_u < lox_i)");
  m.wire("above", 1, "qn + inc > hi");
  m.assign("above", inc + " ? ~(qn_u < hix_i) : ~(qn_u < hip1_i)");
  std::string rqs = "rq", blw = "below", abv = "above";
  {
    Block ff;
    rqs = stage_reg(m, ff, "rq", yw, c.pipe_round());
    blw = stage_reg(m, ff, "below", 1, c.pipe_round());
    abv = stage_reg(m, ff, "above", 1, c.pipe_round());
    if (!ff.empty()) m.always_ff(std::move(ff), "end of rounding");
  }

  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  m.reg("y_q", yw);
  m.always_ff({assign("y_q", blw + " ? lo_i : " + abv + " ? hi_i : " + rqs)});
  m.assign("y_o", "y_q");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_fifo(const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
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
  m.always_ff(
      {if_("!rst_ni",
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
Module build_top(const CoreConfig& c, const Variant& v) {
  const auto& a = c.arith;
  const int L = c.lanes;
  const int xw = a.xw, yw = a.yw;
  const int cw = c.chan_bits();
  const int hw = c.inner_bits;
  const int rw = v.rw;
  const int aw = v.aw;
  const int ns = v.ns(c);
  const int d = v.fifo_depth(c);
  const int on = bits_for(d);
  const int nb = c.lane_count_bits();
  const int fw = L * yw + L + 1;
  Module m;
  m.name = c.top_name();
  m.description = {
      v.dec ? "PPA reference (decomposed-core): the normcore core with " + std::to_string(L) +
                  " decomposed-BN lanes, per element y = clamp(round(a / 2^R), lo, hi),"
            : "normcore streaming batch-norm inference core: " + std::to_string(L) +
                  " lanes, per element y = clamp(round((x*s[c] + b[c]) / 2^R), lo, hi).",
      "Job: hold cfg_* and pulse start_i while ready_o; load parameters on prm_*; then",
      "stream N*C*HW elements on s_axis (lane 0 in the low bits, tlast on the final beat,",
      "tkeep one bit per element/lane, only the final beat may be partial).",
      "Latency " + std::to_string(v.latency(c)) +
          " cycles; one beat per cycle under any back-pressure."};
  if (v.dec) {
    m.description.insert(
        m.description.begin() + 1,
        "a = sat(round((x*2^f - mean[c]) * inv_std[c] / 2^k1)) * gamma[c] + beta[c]. Not bit-exact "
        "with anything: measured only.");
  }
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("cfg_channels_i", cw, "C, 1.." + std::to_string(c.max_channels));
  m.in("cfg_inner_i", hw, "HW >= 1");
  m.in("cfg_layout_i", 1, "0 nchw, 1 nhwc");
  m.in("cfg_shift_i", rw, "R, 0.." + std::to_string(aw));
  if (v.dec) m.in("cfg_k1_i", v.k1w, "requantisation shift after inv_std");
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
  for (const auto& f : v.fields) m.in("prm_" + f.prm + "_i", f.width);
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
  m.reg("st_q", 2, "0 unconfigured, 3 check, 1 set-up, 2 run");
  m.reg("st_d", 2);
  m.reg("err_q", 1);
  m.reg("err_d", 1);
  m.reg("ch_q", cw);
  m.reg("stride_q", hw, "S: HW (nchw) or 1 (nhwc)");
  m.reg("shift_q", rw);
  if (v.dec) m.reg("k1_q", v.k1w);
  m.reg("round_q", 2);
  m.reg("lo_q", yw);
  m.reg("hi_q", yw);
  m.wire("start_fire", 1);
  m.wire("cfg_ok", 1);
  m.wire("ld_busy", 1);
  m.wire("step_done", 1, "u_step's result is final");
  m.reg("wait_q", 1, "set-up: waiting for the walker and u_step");
  m.reg("sdone_q", 1, "every lane has saved its start position (as r)");
  m.reg("wsave_q", L, "lane i saves the walker's position (one-hot, shifts)");
  m.reg("rbk_q", 1, "arm + 1: the beat constants (k*_q) have settled");
  m.reg("reb_q", 1, "arm + 2: the lanes load their start; the last set-up cycle");
  m.wire("arm", 1, "walker and u_step done");
  m.reg("occ_q", on, "beats accepted and not yet delivered");
  m.wire("occ_d", on);
  // ready_o is a register: idle now and nothing starting now (no start, beat or parameter
  // taken), so idle in the next cycle too (it may lag the idle state by one cycle).
  m.reg("ready_q", 1);
  m.assign("ready_o", "ready_q");
  m.assign("start_fire", "start_i & ready_q");
  std::string ok = "(cfg_channels_i != " + lit(cw, 0) + ") & (cfg_inner_i != " + lit(hw, 0) + ")";
  if (c.max_channels != (1LL << cw) - 1)
    ok += " & (cfg_channels_i <= " + lit(cw, c.max_channels) + ")";
  if (v.dec) {
    const auto w = decomposed_widths(c);
    const int k1max = w.dw + w.iw - 1;
    if (k1max != (1 << v.k1w) - 1) ok += " & (cfg_k1_i <= " + lit(v.k1w, k1max) + ")";
  }
  if (aw != (1 << rw) - 1) ok += " & (cfg_shift_i <= " + lit(rw, aw) + ")";
  m.assign("cfg_ok", ok);
  m.reg("ok_q", 1, "cfg_ok, latched with the configuration and acted on in the check cycle");
  // start -> check (one cycle: the checks are registered, off the start path) -> set-up or
  // unconfigured with cfg_error_o. u_step and the walker start in the check cycle (and are
  // simply restarted by the next start if the configuration was invalid). Set-up:
  //   check + 1 + i   the walker is at element i: lane i saves it as its start (r, c)
  //   arm             every lane saved, u_step done (its result is final)
  //   arm + 1         the lanes convert their start to v = r + k_r - S (k registers now valid)
  //   arm + 2         the lanes load their start (reb_q); then run.
  m.assign("arm", "(st_q == 2'd1) & wait_q & sdone_q & step_done");
  m.always_comb({
      assign("st_d", "st_q"),
      assign("err_d", "err_q"),
      if_("start_fire", {assign("st_d", "2'd3"), assign("err_d", "1'b0")},
          {if_("st_q == 2'd3", {assign("st_d", "ok_q ? 2'd1 : 2'd0"), assign("err_d", "~ok_q")},
               {if_("reb_q", {assign("st_d", "2'd2")})})}),
  });
  Block latch{assign("ok_q", "cfg_ok"),
              assign("ch_q", "cfg_channels_i"),
              assign("stride_q", "cfg_layout_i ? " + lit(hw, 1) + " : cfg_inner_i"),
              assign("shift_q", "cfg_shift_i"),
              assign("round_q", "cfg_round_i"),
              assign("lo_q", "cfg_lo_i"),
              assign("hi_q", "cfg_hi_i")};
  if (v.dec) latch.push_back(assign("k1_q", "cfg_k1_i"));
  if (hw > nb) {
    m.reg("s_big_q", 1, "S >= 2^" + std::to_string(nb) + " (u_step compares only the low bits)");
    latch.push_back(assign("s_big_q", "~cfg_layout_i & (" + part("cfg_inner_i", hw, nb, hw - nb) +
                                          " != " + lit(hw - nb, 0) + ")"));
  }
  m.reg("chm1_q", cw, "C - 1");
  latch.push_back(assign("chm1_q", "cfg_channels_i - " + lit(cw, 1)));
  const int ml0 = c.chan_low_bits();
  m.reg("sm1_q", ml0, "S - 1, low bits (the walker's r < L)");
  latch.push_back(assign("sm1_q", "cfg_layout_i ? " + lit(ml0, 0) + " : " +
                                      part("cfg_inner_i", hw, 0, ml0) + " - " + lit(ml0, 1)));
  m.reg("ge0_q", 1, "L >= S: u_step's first compare");
  // L >= S without a wide compare: S < 2^nb (its high bits 0) and the low bits <= L.
  std::string ge0;
  if (hw <= nb) {
    ge0 = L >= (1LL << hw) - 1 ? std::string("1'b1")
                               : "cfg_layout_i | (cfg_inner_i <= " + lit(hw, L) + ")";
  } else {
    const std::string lo_le =
        L == (1LL << nb) - 1 ? std::string("1'b1")
                             : "(" + part("cfg_inner_i", hw, 0, nb) + " <= " + lit(nb, L) + ")";
    ge0 = "cfg_layout_i | ((" + part("cfg_inner_i", hw, nb, hw - nb) + " == " + lit(hw - nb, 0) +
          ") & " + lo_le + ")";
  }
  latch.push_back(assign("ge0_q", ge0));
  m.always_ff({if_("!rst_ni",
                   {assign("st_q", "2'd0"), assign("err_q", "1'b0"), assign("wait_q", "1'b0"),
                    assign("sdone_q", "1'b0"), assign("rbk_q", "1'b0"), assign("reb_q", "1'b0")},
                   {assign("st_q", "st_d"), assign("err_q", "err_d"),
                    if_("st_q == 2'd3", {assign("wait_q", "1'b1"), assign("sdone_q", "1'b0")},
                        {if_("arm", {assign("wait_q", "1'b0")}),
                         if_(bit("wsave_q", L, L - 1), {assign("sdone_q", "1'b1")})}),
                    assign("rbk_q", "arm"), assign("reb_q", "rbk_q")}),
               if_("start_fire", std::move(latch))});
  m.assign("configured_o", "st_q == 2'd2");
  m.assign("cfg_error_o", "err_q");

  m.section(
      "Per-job lane constants, registered from the latched configuration (valid long before the "
      "first beat)");
  m.reg("smask_n_q", rw + 1, std::to_string(aw + 1) + " - R");
  m.reg("smask_q", aw, "2^(R-1) - 1, 0 when R = 0: the bits below the half bit");
  const int nw = yw + 1;
  Block omask;
  if (nw < aw) {
    const int onw = bits_for(aw + nw - 1);
    m.reg("omask_n_q", onw, "R + " + std::to_string(nw - 1));
    m.reg("omask_q", aw - 1,
          "bits >= R + " + std::to_string(nw - 1) + ": the lanes' saturation test");
    omask.push_back(assign("omask_n_q", zext("shift_q", rw, onw) + " + " + lit(onw, nw - 1)));
    omask.push_back(assign("omask_q", "{" + std::to_string(aw - 1) + "{1'b1}} << omask_n_q"));
  }
  m.reg("loe_q", yw, "min(lo, hi): the clamp's lower bound (hi wins if lo > hi)");
  m.wire("lo_cmp", yw, "", a.y_signed);
  m.assign("lo_cmp", "lo_q");
  m.wire("hi_cmp", yw, "", a.y_signed);
  m.assign("hi_cmp", "hi_q");
  // All ones >> (aw + 1 - R), in two register steps (R = 0 shifts everything out).
  const int xw2 = yw + 2;
  const auto ext = [&](const std::string& n) {
    return a.y_signed ? sext(n, yw, xw2) : zext(n, yw, xw2);
  };
  m.reg("lox_q", xw2,
        "lo (min(lo, hi)), " + std::to_string(xw2) + "-bit signed: the lanes' compares");
  m.reg("lom1_q", xw2, "lo - 1");
  m.reg("hix_q", xw2, "hi");
  m.reg("hip1_q", xw2, "hi + 1");
  // Offset binary (top bit flipped): the lanes compare signed values with unsigned compares.
  const std::string flip = " ^ {1'b1, " + lit(xw2 - 1, 0) + "}";
  m.always_ff({assign("lox_q", ext("loe_q") + flip),
               assign("lom1_q", "(" + ext("loe_q") + " - " + lit(xw2, 1) + ")" + flip),
               assign("hix_q", ext("hi_q") + flip),
               assign("hip1_q", "(" + ext("hi_q") + " + " + lit(xw2, 1) + ")" + flip)});
  m.always_ff({assign("smask_n_q", lit(rw + 1, aw + 1) + " - " + zext("shift_q", rw, rw + 1)),
               assign("smask_q", "{" + std::to_string(aw) + "{1'b1}} >> smask_n_q"),
               assign("loe_q", "(lo_cmp > hi_cmp) ? hi_q : lo_q")});
  if (!omask.empty()) m.always_ff(std::move(omask));

  m.section("Lane positions: S = HW (nchw) or 1 (nhwc)");
  const int ml = c.chan_low_bits();
  const int p = c.bank_sel_bits();
  const int W = std::max(hw, nb + 1) + 1;
  m.wire("lstep_r", ml, "L mod S");
  m.wire("lstep_c", cw, "(L div S) mod C");
  std::vector<std::pair<std::string, std::string>> step_conns = {
      {"clk_i", "clk_i"},
      {"rst_ni", "rst_ni"},
      {"start_i", "st_q == 2'd3"},
      {"stride_i", part("stride_q", hw, 0, std::min(hw, nb))}};
  if (hw > nb) step_conns.push_back({"s_big_i", "s_big_q"});
  for (const auto& pc : std::vector<std::pair<std::string, std::string>>{{"chm1_i", "chm1_q"},
                                                                         {"ge0_i", "ge0_q"},
                                                                         {"done_o", "step_done"},
                                                                         {"rem_o", "lstep_r"},
                                                                         {"quo_o", "lstep_c"}}) {
    step_conns.push_back(pc);
  }
  m.instance(Instance{c.name + "_step", "u_step", std::move(step_conns), {}});
  // S <= K for a constant K < 2^(nb+1), from the latched configuration's registers (narrow).
  const auto s_le = [&](long long k) -> std::string {
    if (k <= 0) return "1'b0";
    const int kb = bits_for(k);
    std::string nchw;
    if (hw <= kb) {
      nchw = k >= (1LL << hw) - 1 ? std::string("1'b1") : "(stride_q <= " + lit(hw, k) + ")";
    } else {
      nchw = "(" + part("stride_q", hw, kb, hw - kb) + " == " + lit(hw - kb, 0) + ")";
      if (k != (1LL << kb) - 1)
        nchw += " & (" + part("stride_q", hw, 0, kb) + " <= " + lit(kb, k) + ")";
    }
    return nchw;  // stride_q is already 1 for nhwc
  };
  m.reg("remw_q", W, "S - L");
  m.reg("t2_q", nb + 1, "2L - S when S < 2L, else 0");
  m.reg("remw1_q", W - nb - 1, "(S - L) high part + 1");
  Block pos_consts{
      assign("remw_q", zext("stride_q", hw, W) + " - " + lit(W, L)),
      assign("t2_q", "(" + s_le(2LL * L - 1) + ") ? " + lit(nb + 1, 2ULL * L) + " - " +
                         fit("stride_q", hw, nb + 1) + " : " + lit(nb + 1, 0)),
      assign("remw1_q", part("remw_q", W, nb + 1, W - nb - 1) + " + " + lit(W - nb - 1, 1))};
  if (L > 1) {
    m.reg("small_q", 1, "S < L: every lane tracks its offset");
    pos_consts.push_back(assign("small_q", s_le(L - 1)));
  }
  m.always_ff(std::move(pos_consts));
  // Walker: the position (r, i div S) of element 0, 1, 2, ... (one per cycle from the check
  // cycle on); lane i saves it when wsave_q[i] (one-hot, a shift register).
  m.reg("wr_q", ml, "walker: r (< L: the walker stops at element L - 1)");
  m.wire("w_end", 1, "r == S - 1");
  m.assign("w_end", (hw > nb ? "~s_big_q & " : "") + std::string("(wr_q == sm1_q)"));
  Block walk_reset{assign("wr_q", lit(ml, 0))};
  Block walk_step{assign("wr_q", "w_end ? " + lit(ml, 0) + " : wr_q + " + lit(ml, 1))};
  if (L > 1) {
    m.reg("wd_q", p, "walker: i div S (not wrapped at C; only read for i < L)");
    walk_reset.push_back(assign("wd_q", lit(p, 0)));
    walk_step.push_back(if_("w_end", {assign("wd_q", "wd_q + " + lit(p, 1))}));
  }
  m.always_ff({if_("st_q == 2'd3", std::move(walk_reset), std::move(walk_step)),
               assign("wsave_q", L == 1 ? std::string("st_q == 2'd3")
                                        : "(st_q == 2'd3) ? " + lit(L, 1) + " : {" +
                                              part("wsave_q", L, 0, L - 1) + ", 1'b0}")});
  // Beat constants, registers (valid the cycle after u_step is done). S >= L: c0 moves by 0 or 1
  // channel (rem decides); S < L: by k_c = (L div S) mod C plus the carry of lane 0.
  m.reg("kc0_q", cw, "c0 step without a carry");
  m.reg("kc1_q", cw, "c0 step with a carry");
  m.reg("kw0_q", cw + 1, "kc0 - C");
  m.reg("kw1_q", cw + 1, "kc1 - C");
  m.wire("kcs", cw, "k_c when S < L, else 0");
  Block kff;
  if (L > 1) {
    m.assign("kcs", "small_q ? lstep_c : " + lit(cw, 0));
    m.reg("kr_q", ml, "k_r = L mod S");
    m.reg("sk_q", ml, "S - k_r");
    kff.push_back(assign("kr_q", "lstep_r"));
    kff.push_back(assign("sk_q", part("stride_q", hw, 0, ml) + " - lstep_r"));
  } else {
    m.assign("kcs", lit(cw, 0));
    m.wire("unused_lstep", 1, "one lane: S >= L always, the step is 0 or 1 channel");
    m.assign("unused_lstep", "^{lstep_r, lstep_c}");
  }
  kff.push_back(assign("kc0_q", "kcs"));
  kff.push_back(assign("kc1_q", "kcs + " + lit(cw, 1)));
  kff.push_back(assign("kw0_q", zext("kcs", cw, cw + 1) + " - " + zext("ch_q", cw, cw + 1)));
  kff.push_back(assign("kw1_q", zext("kcs", cw, cw + 1) + " - " + zext("chm1_q", cw, cw + 1)));
  m.always_ff(std::move(kff));
  m.wire("in_fire", 1);
  m.wire("pos_restart", 1,
         "a beat taken now restores the packet start (no in_fire: fewer loads on it)");
  m.assign("pos_restart", "s_axis_tlast & (st_q == 2'd2)");
  m.wire("pos_c0", cw);
  std::vector<std::pair<std::string, std::string>> cc = {
      {"clk_i", "clk_i"}, {"en_i", "in_fire | reb_q"}, {"ld_i", "pos_restart | reb_q"}};
  if (L > 1) {
    m.wire("pos_d", (L - 1) * p);
    for (const auto& pc :
         std::vector<std::pair<std::string, std::string>>{{"small_i", "small_q"},
                                                          {"sv_i", part("wsave_q", L, 1, L - 1)},
                                                          {"wr_i", "wr_q"},
                                                          {"wd_i", "wd_q"},
                                                          {"kr_i", "kr_q"},
                                                          {"sk_i", "sk_q"}}) {
      cc.push_back(pc);
    }
  }
  for (const auto& pc : std::vector<std::pair<std::string, std::string>>{{"stride_i", "stride_q"},
                                                                         {"sle_i", "ge0_q"},
                                                                         {"t2_i", "t2_q"},
                                                                         {"remw_i", "remw_q"},
                                                                         {"remw1_i", "remw1_q"},
                                                                         {"kc0_i", "kc0_q"},
                                                                         {"kc1_i", "kc1_q"},
                                                                         {"kw0_i", "kw0_q"},
                                                                         {"kw1_i", "kw1_q"},
                                                                         {"c0_o", "pos_c0"}}) {
    cc.push_back(pc);
  }
  if (L > 1) cc.push_back({"d_o", "pos_d"});
  m.instance(Instance{c.name + "_chan", "u_chan", std::move(cc), {}});

  m.section("Parameter table");
  for (const auto& f : v.fields) m.wire(f.wire, L * f.width);
  std::vector<std::pair<std::string, std::string>> tc = {{"clk_i", "clk_i"},
                                                         {"rst_ni", "rst_ni"},
                                                         {"en_i", "st_q == 2'd2"},
                                                         {"chans_i", "ch_q"},
                                                         {"c0_i", "pos_c0"}};
  if (L > 1) tc.push_back({"lane_d_i", "pos_d"});
  tc.push_back({"prm_valid_i", "prm_valid_i"});
  tc.push_back({"prm_ready_o", "prm_ready_o"});
  tc.push_back({"prm_chan_i", "prm_chan_i"});
  for (const auto& f : v.fields) tc.push_back({"prm_" + f.prm + "_i", "prm_" + f.prm + "_i"});
  tc.push_back({"busy_o", "ld_busy"});
  for (const auto& f : v.fields) tc.push_back({f.prm + "_o", f.wire});
  m.instance(Instance{c.name + "_ptable", "u_ptable", std::move(tc), {}});

  m.section("Flow control: admit a beat only if the output buffer can hold all beats in flight");
  m.section("(and not while the parameter loader may write: table reads never meet writes)");
  m.reg("tready_q", 1);
  m.wire("out_fire", 1);
  m.assign("in_fire", "s_axis_tvalid & tready_q");
  m.assign("out_fire", "m_axis_tvalid & m_axis_tready");
  m.assign("occ_d", "occ_q + " + zext("in_fire", 1, on) + " - " + zext("out_fire", 1, on));
  // occ_d < d without waiting for occ_d: a beat is only taken while occ_q < d, so a delivered
  // beat always leaves room, and otherwise it is occ_q + in_fire < d.
  m.wire("room", 1, "occ_d < " + std::to_string(d));
  m.assign("room", "out_fire | (in_fire ? (occ_q < " + lit(on, d - 1) + ") : (occ_q < " +
                       lit(on, d) + "))");
  m.always_ff(
      {if_("!rst_ni",
           {assign("occ_q", lit(on, 0)), assign("tready_q", "1'b0"), assign("ready_q", "1'b0")},
           {assign("occ_q", "occ_d"),
            assign("tready_q", "(st_d == 2'd2) & room & ~ld_busy & ~(prm_valid_i & prm_ready_o)"),
            assign("ready_q",
                   "~st_q[0] & (occ_q == " + lit(on, 0) +
                       ") & ~ld_busy & ~in_fire & ~(prm_valid_i & prm_ready_o) & ~start_fire")})});
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
    side.push_back(
        assign(idx("keep", k) + "_q", k == 1 ? "s_axis_tkeep" : idx("keep", k - 1) + "_q"));
    side.push_back(
        assign(idx("last", k) + "_q", k == 1 ? "s_axis_tlast" : idx("last", k - 1) + "_q"));
  }
  Block vff{if_("!rst_ni", std::move(vff_reset), std::move(vff_run))};
  for (auto& s : side) vff.push_back(std::move(s));
  m.always_ff(std::move(vff));

  m.section("Lanes");
  std::string ycat;
  for (int i = 0; i < L; ++i) {
    m.wire(idx("y", i), yw);
    std::vector<std::pair<std::string, std::string>> lc = {
        {"clk_i", "clk_i"}, {"x_i", part("x1_q", L * xw, i * xw, xw)}};
    for (const auto& f : v.fields)
      lc.push_back({f.lane + "_i", part(f.wire, L * f.width, i * f.width, f.width)});
    if (v.dec) lc.push_back({"k1_i", "k1_q"});
    lc.push_back({"shift_i", "shift_q"});
    lc.push_back({"smask_i", "smask_q"});
    if (nw < aw) lc.push_back({"omask_i", "omask_q"});  // else no saturation test in the lane
    for (const auto& pc : std::vector<std::pair<std::string, std::string>>{{"round_i", "round_q"},
                                                                           {"lo_i", "loe_q"},
                                                                           {"hi_i", "hi_q"},
                                                                           {"lox_i", "lox_q"},
                                                                           {"lom1_i", "lom1_q"},
                                                                           {"hix_i", "hix_q"},
                                                                           {"hip1_i", "hip1_q"},
                                                                           {"y_o", idx("y", i)}}) {
      lc.push_back(pc);
    }
    m.instance(Instance{c.name + "_lane", idx("u_lane", i), std::move(lc), {}});
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

std::vector<Module> build_core(const CoreConfig& cfg, LaneArith arith) {
  if (auto err = cfg.check(); !err.empty()) throw std::invalid_argument(err);
  const Variant v = variant(cfg, arith);
  return {build_bank(cfg, v), build_step(cfg),    build_chan(cfg),  build_ptable(cfg, v),
          build_lane(cfg, v), build_fifo(cfg, v), build_top(cfg, v)};
}

}  // namespace normcore::gen
