// Reference designs for PPA ratios (see normcore/gen/ref_designs.hpp and docs/ppa.md).
//   <n>_mac         one lane of the bare MAC: registered a, b, c; registered a*b + c
//   <n>_bare_mac    LANES of them side by side (the DSP limit)
//   <n>_dram        one lane's parameter RAM of the decomposed design (registered read)
//   <n>_dlane       one lane of the decomposed BN: subtract, multiply, requantise, multiply, add,
//                   round + clamp, every stage registered
//   <n>_decomposed  LANES lanes, a shared channel-group counter, per-lane parameter RAMs
#include "normcore/gen/ref_designs.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "ref_internal.hpp"
#include "rtl_util.hpp"

namespace normcore::gen {
namespace {

using ex::cat;
using ex::lit;
using ex::mux;
using ex::sext;
using ex::slice;
using ex::trunc;
using ex::zext;

std::string idx(const std::string& base, int i) {
  return base + "_" + std::to_string(i);
}

std::uint64_t u64(int v) {
  return static_cast<std::uint64_t>(v);
}

// Concatenation of per-lane nets name_<L-1> .. name_0 (lane 0 in the low bits).
Expr lane_cat(const Module& m, const std::string& base, int lanes) {
  std::vector<Expr> parts;
  for (int i = lanes - 1; i >= 0; --i) parts.push_back(m.ref(idx(base, i)));
  return cat(std::move(parts));
}

// ---------------------------------------------------------------------------------------------
Module build_mac(const CoreConfig& c) {
  const auto& a = c.arith;
  const int xw = a.xw, sw = a.sw, bw = a.bw, aw = c.acc_bits();
  const int pw = xw + sw;
  Module m;
  m.name = c.name + "_mac";
  m.description = {
      "Bare MAC lane (reference): p = a * b + c with a, b, c registered and p registered.",
      "Same widths as the core's multiply-add: a " + std::to_string(xw) + " bits, b " +
          std::to_string(sw) + ", c " + std::to_string(bw) + ", p " + std::to_string(aw) +
          " (signed)."};
  m.in("clk_i", 1);
  const Expr ai = m.in("a_i", xw);
  const Expr bi = m.in("b_i", sw);
  const Expr ci = m.in("c_i", bw);
  const Expr po = m.out("p_o", aw);
  const Expr aq = m.reg("a_q", xw);
  const Expr bq = m.reg("b_q", sw);
  const Expr cq = m.reg("c_q", bw);
  m.flops({{aq, ai, {}}, {bq, bi, {}}, {cq, ci, {}}});
  const Expr ae = m.wire("a_e", pw, "", true);
  m.assign(ae, a.x_signed ? sext(aq, pw) : zext(aq, pw));
  const Expr be = m.wire("b_e", pw, "", true);
  m.assign(be, sext(bq, pw));
  const Expr prod = m.wire("prod", pw, "", true);
  m.assign(prod, ae * be);
  const Expr pq = m.reg("p_q", aw);
  m.seq({assign(pq, sext(prod, aw) + sext(cq, aw))});
  m.assign(po, pq);
  return m;
}

Module build_bare_top(const CoreConfig& c) {
  const auto& a = c.arith;
  const int L = c.lanes, xw = a.xw, sw = a.sw, bw = a.bw, aw = c.acc_bits();
  Module m;
  m.name = ref_top_name(c, RefDesign::bare_mac);
  m.description = {"Reference: " + std::to_string(L) +
                   " bare MAC lanes (the DSP limit of the core's multiply-add). Latency 2."};
  const Expr clk = m.in("clk_i", 1);
  const Expr x = m.in("x_i", L * xw, "lane 0 in the low bits");
  const Expr s = m.in("s_i", L * sw);
  const Expr b = m.in("b_i", L * bw);
  const Expr y = m.out("y_o", L * aw);
  for (int i = 0; i < L; ++i) m.wire(idx("p", i), aw);
  for (int i = 0; i < L; ++i) {
    m.instance(Instance{c.name + "_mac",
                        idx("u_mac", i),
                        {{"clk_i", clk},
                         {"a_i", slice(x, i * xw, xw)},
                         {"b_i", slice(s, i * sw, sw)},
                         {"c_i", slice(b, i * bw, bw)},
                         {"p_o", m.ref(idx("p", i))}},
                        {}});
  }
  m.assign(y, lane_cat(m, "p", L));
  return m;
}

// ---------------------------------------------------------------------------------------------
int ref_depth(const CoreConfig& c) {
  return (c.max_channels + c.lanes - 1) / c.lanes;
}
int ref_addr_bits(const CoreConfig& c) {
  return clog2(std::max(ref_depth(c), 2));
}

Module build_dram(const CoreConfig& c) {
  const auto w = decomposed_widths(c);
  const int pw = w.param_bits(c.arith.bw);
  const int ab = ref_addr_bits(c);
  Module m;
  m.name = c.name + "_dram";
  m.description = {"Decomposed reference: one lane's parameter RAM, " +
                       std::to_string(ref_depth(c)) + " words of {beta, gamma, inv_std, mean},",
                   "one write port, one read port with a registered output (block RAM)."};
  m.in("clk_i", 1);
  const Expr we = m.in("we_i", 1);
  const Expr waddr = m.in("waddr_i", ab);
  const Expr wdata = m.in("wdata_i", pw);
  const Expr raddr = m.in("raddr_i", ab);
  const Expr rdata = m.out("rdata_o", pw);
  const Expr mem = m.memory("mem_q", pw, ref_depth(c));
  const Expr rq = m.reg("rdata_q", pw);
  m.always_ff({if_(we, {assign(ex::index(mem, waddr), wdata)}), assign(rq, ex::index(mem, raddr))});
  m.assign(rdata, rq);
  return m;
}

// Round half up of the signed net `val` by a variable shift: emits half_<s>, sum_<s>, q_<s>.
Expr round_half_up(Module& m, const std::string& sfx, const Expr& val, const Expr& shift) {
  const int ew = val.width();
  const Expr half = m.wire("half_" + sfx, ew, "2^(k-1), 0 when k = 0", true);
  m.assign(half, rtl::shr_by(ex::shl(lit(ew, 1), shift), 1));
  const Expr sum = m.wire("sum_" + sfx, ew, "", true);
  m.assign(sum, val + half);
  const Expr q = m.wire("q_" + sfx, ew, "", true);
  m.assign(q, ex::sra(sum, shift));
  return q;
}

// Stage "t = saturate(round_half_up(p / 2^k1))" to w.tw bits, registered as t_q (p signed).
Expr requant_stage(Module& m, const DecomposedWidths& w, const Expr& p, const Expr& k1) {
  m.section("Stage 3: t = saturate(round(p / 2^k1)) to " + std::to_string(w.tw) + " bits");
  const int ew = p.width() + 1;
  const Expr px = m.wire("p_x", ew, "", true);
  m.assign(px, sext(p, ew));
  const Expr q1 = round_half_up(m, "t", px, k1);
  const Expr tmax = m.wire("tmax_e", ew, "", true);
  m.assign(tmax, lit(ew, (1ULL << (w.tw - 1)) - 1));
  const Expr tmin = m.wire("tmin_e", ew, "", true);
  m.assign(tmin, ~tmax);
  const Expr tq = m.reg("t_q", w.tw);
  m.seq({assign(tq, mux(ex::gt(q1, tmax), trunc(tmax, w.tw),
                        mux(ex::lt(q1, tmin), trunc(tmin, w.tw), trunc(q1, w.tw))))});
  return tq;
}

// Wires `an` and `bn` (signed a and b extended to the product width) and `out` = an * bn, exact.
Expr signed_product(Module& m, const Expr& a, const std::string& an, const Expr& b,
                    const std::string& bn, const std::string& out) {
  const int pw = a.width() + b.width();
  const Expr ae = m.wire(an, pw, "", true);
  m.assign(ae, sext(a, pw));
  const Expr be = m.wire(bn, pw, "", true);
  m.assign(be, sext(b, pw));
  const Expr o = m.wire(out, pw, "", true);
  m.assign(o, ae * be);
  return o;
}

// Stage "p = d * inv_std" (multiplier 1) from d_q and istd1_q, registered as p_q.
Expr product_stage(Module& m, const Expr& dq, const Expr& istd1q) {
  m.section("Stage 2: p = d * inv_std (multiplier 1)");
  const Expr p = signed_product(m, dq, "d_e", istd1q, "i_e", "p");
  const Expr pq = m.reg("p_q", p.width());
  m.seq({assign(pq, p)});
  return pq;
}

// Stage "d = x * 2^f - mean" from x and mean: emits x_s, x_e, mean_e and the register d_q;
// returns d_q <= x_e - mean_e.
Stmt diff_stage(Module& m, const CoreConfig& c, const DecomposedWidths& w, const Expr& x,
                const Expr& mean) {
  const Expr xs = m.wire("x_s", w.mw);
  m.assign(xs, w.f > 0 ? cat({x, lit(w.f, 0)}) : x);
  const Expr xe = m.wire("x_e", w.dw, "", true);
  m.assign(xe, c.arith.x_signed ? sext(xs, w.dw) : zext(xs, w.dw));
  const Expr me = m.wire("mean_e", w.dw, "", true);
  m.assign(me, sext(mean, w.dw));
  const Expr dq = m.reg("d_q", w.dw);
  return assign(dq, xe - me);
}

Module build_dlane(const CoreConfig& c) {
  const auto& a = c.arith;
  const auto w = decomposed_widths(c);
  const int xw = a.xw, bw = a.bw, yw = a.yw;
  Module m;
  m.name = c.name + "_dlane";
  m.description = {"Decomposed BN lane (reference), the fixed-point form of a framework lowering:",
                   "  d = x * 2^" + std::to_string(w.f) + " - mean        (" +
                       std::to_string(w.dw) + " bits, exact)",
                   "  t = sat(round(d * inv_std / 2^k1))  (" + std::to_string(w.tw) + " bits)",
                   "  a = t * gamma + beta        (" + std::to_string(w.aw) + " bits, exact)",
                   "  y = clamp(round(a / 2^R), lo, hi)   (round half up)",
                   "Six registered stages (d, d*inv_std, t, t*gamma, +beta, y); two multipliers."};
  m.in("clk_i", 1);
  const Expr x = m.in("x_i", xw);
  const Expr mean = m.in("mean_i", w.mw, "signed, units of 2^-" + std::to_string(w.f) + " of x");
  const Expr istd = m.in("istd_i", w.iw, "signed");
  const Expr gamma = m.in("gamma_i", w.gw, "signed");
  const Expr beta = m.in("beta_i", bw, "signed");
  const Expr k1 = m.in("k1_i", w.k1w, "requantisation shift after inv_std");
  const Expr shift = m.in("shift_i", w.rw, "R");
  const Expr lo = m.in("lo_i", yw);
  const Expr hi = m.in("hi_i", yw);
  const Expr yo = m.out("y_o", yw);

  m.section("Stage 1: d = x * 2^f - mean");
  const Stmt d = diff_stage(m, c, w, x, mean);
  const Expr istd1 = m.reg("istd1_q", w.iw);
  const Expr g1 = m.reg("gamma1_q", w.gw);
  const Expr g2 = m.reg("gamma2_q", w.gw);
  const Expr g3 = m.reg("gamma3_q", w.gw);
  const Expr b1 = m.reg("beta1_q", bw);
  const Expr b2 = m.reg("beta2_q", bw);
  const Expr b3 = m.reg("beta3_q", bw);
  const Expr b4 = m.reg("beta4_q", bw);
  m.seq({d, assign(istd1, istd), assign(g1, gamma), assign(g2, g1), assign(g3, g2),
         assign(b1, beta), assign(b2, b1), assign(b3, b2), assign(b4, b3)});

  const Expr pq = product_stage(m, std::get<Assign>(d.node).lhs, istd1);

  const Expr tq = requant_stage(m, w, pq, k1);

  m.section("Stage 4: g = t * gamma (multiplier 2)");
  const Expr g = signed_product(m, tq, "t_e", g3, "g_e", "g");
  const Expr gq = m.reg("g_q", g.width());
  m.seq({assign(gq, g)});

  m.section("Stage 5: a = g + beta");
  const Expr aq = m.reg("a_q", w.aw);
  m.seq({assign(aq, sext(gq, w.aw) + sext(b4, w.aw))});

  m.section("Stage 6: y = clamp(round(a / 2^R), lo, hi)");
  const int ew2 = w.aw + 1;
  const Expr ax = m.wire("a_x", ew2, "", true);
  m.assign(ax, sext(aq, ew2));
  const Expr q2 = round_half_up(m, "y", ax, shift);
  const Expr lo_e = m.wire("lo_e", ew2, "", true);
  m.assign(lo_e, a.y_signed ? sext(lo, ew2) : zext(lo, ew2));
  const Expr hi_e = m.wire("hi_e", ew2, "", true);
  m.assign(hi_e, a.y_signed ? sext(hi, ew2) : zext(hi, ew2));
  const Expr ct = m.wire("c_t", ew2, "", true);
  m.assign(ct, mux(ex::lt(q2, lo_e), lo_e, q2));
  const Expr yq = m.reg("y_q", yw);
  m.seq({assign(yq, mux(ex::gt(ct, hi_e), hi, trunc(ct, yw)))});
  m.assign(yo, yq);
  return m;
}

// The reference's ports and description.
void decomposed_top_ports(Module& m, const CoreConfig& c) {
  const auto& a = c.arith;
  const auto w = decomposed_widths(c);
  const int L = c.lanes, xw = a.xw, yw = a.yw, bw = a.bw;
  const int depth = ref_depth(c);
  const int ab = ref_addr_bits(c);
  const int db = bits_for(depth);
  const int lw = clog2(L);
  const int ns = 7;  // RAM read + six lane stages
  m.name = ref_top_name(c, RefDesign::decomposed);
  m.description = {
      "Reference: decomposed batch norm, " + std::to_string(L) +
          " lanes, (x - mean) * inv_std * gamma + beta in fixed point.",
      "Simplified channel structure (makes the reference smaller): NHWC with C a multiple of",
      "LANES, so lane i always sees channels i, i+L, ...; one shared counter of channel groups",
      "(cfg_groups_i = C / LANES) addresses every lane's own parameter RAM; the host writes a",
      "lane's word directly (prm_lane_i, prm_addr_i). No back-pressure, cfg_* held during a job.",
      "Latency " + std::to_string(ns) + " cycles."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("cfg_groups_i", db, "C / LANES, 1.." + std::to_string(depth));
  m.in("cfg_k1_i", w.k1w, "requantisation shift after inv_std");
  m.in("cfg_shift_i", w.rw, "R");
  m.in("cfg_lo_i", yw);
  m.in("cfg_hi_i", yw);
  m.in("prm_we_i", 1);
  if (L > 1) m.in("prm_lane_i", lw);
  m.in("prm_addr_i", ab, "channel group (channel = group * LANES + lane)");
  m.in("prm_mean_i", w.mw);
  m.in("prm_istd_i", w.iw);
  m.in("prm_gamma_i", w.gw);
  m.in("prm_beta_i", bw);
  m.in("s_valid_i", 1);
  m.in("s_first_i", 1, "first beat of a tensor (channel group 0)");
  m.in("s_data_i", L * xw, "lane 0 in the low bits");
  m.out("m_valid_o", 1);
  m.out("m_data_o", L * yw);
}

// The channel-group counter and one parameter RAM per lane.
void decomposed_top_tables(Module& m, const CoreConfig& c) {
  const auto& a = c.arith;
  const auto w = decomposed_widths(c);
  const int L = c.lanes, bw = a.bw;
  const int depth = ref_depth(c);
  const int ab = ref_addr_bits(c);
  const int db = bits_for(depth);
  const int lw = clog2(L);
  const int pw = w.param_bits(bw);
  m.section("Channel-group counter");
  const Expr grp = m.reg("grp_q", ab);
  const Expr rd = m.wire("rd_addr", ab);
  m.assign(rd, mux(m.ref("s_first_i"), lit(ab, 0), grp));
  const Expr nx = m.wire("grp_nx", db);
  m.assign(nx, zext(rd, db) + lit(db, 1));
  m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(grp, lit(ab, 0))},
             {if_(m.ref("s_valid_i"), {assign(grp, mux(ex::ge(nx, m.ref("cfg_groups_i")),
                                                       lit(ab, 0), trunc(nx, ab)))})})});

  m.section("Per-lane parameter RAMs");
  const Expr word = m.wire("prm_word", pw);
  m.assign(word, cat({m.ref("prm_beta_i"), m.ref("prm_gamma_i"), m.ref("prm_istd_i"),
                      m.ref("prm_mean_i")}));
  const Expr pwe = m.ref("prm_we_i");
  for (int i = 0; i < L; ++i) {
    const Expr we = m.wire(idx("we", i), 1);
    m.assign(we, L > 1 ? pwe & ex::eq(m.ref("prm_lane_i"), lit(lw, u64(i))) : pwe);
    const Expr prm = m.wire(idx("prm", i), pw);
    m.instance(Instance{c.name + "_dram",
                        idx("u_dram", i),
                        {{"clk_i", m.ref("clk_i")},
                         {"we_i", we},
                         {"waddr_i", m.ref("prm_addr_i")},
                         {"wdata_i", word},
                         {"raddr_i", rd},
                         {"rdata_o", prm}},
                        {}});
  }
}

// The input register, the valid pipeline and the lanes.
void decomposed_top_lanes(Module& m, const CoreConfig& c) {
  const auto& a = c.arith;
  const auto w = decomposed_widths(c);
  const int L = c.lanes, xw = a.xw, yw = a.yw, bw = a.bw;
  const int ns = 7;  // RAM read + six lane stages
  m.section("Input register beside the RAM read, valid pipeline");
  const Expr x1 = m.reg("x1_q", L * xw);
  m.flops({{x1, m.ref("s_data_i"), {}}});
  std::vector<Flop> vs;
  Expr prev = m.ref("s_valid_i");
  for (int k = 1; k <= ns; ++k) {
    const Expr v = m.reg(idx("v", k) + "_q", 1);
    vs.push_back({v, prev, rtl::hex_lit(1, 0)});
    prev = v;
  }
  m.flops(vs);
  m.assign(m.ref("m_valid_o"), prev);

  m.section("Lanes");
  for (int i = 0; i < L; ++i) m.wire(idx("y", i), yw);
  for (int i = 0; i < L; ++i) {
    const Expr p = m.ref(idx("prm", i));
    m.instance(Instance{c.name + "_dlane",
                        idx("u_dlane", i),
                        {{"clk_i", m.ref("clk_i")},
                         {"x_i", slice(x1, i * xw, xw)},
                         {"mean_i", slice(p, 0, w.mw)},
                         {"istd_i", slice(p, w.mw, w.iw)},
                         {"gamma_i", slice(p, w.mw + w.iw, w.gw)},
                         {"beta_i", slice(p, w.mw + w.iw + w.gw, bw)},
                         {"k1_i", m.ref("cfg_k1_i")},
                         {"shift_i", m.ref("cfg_shift_i")},
                         {"lo_i", m.ref("cfg_lo_i")},
                         {"hi_i", m.ref("cfg_hi_i")},
                         {"y_o", m.ref(idx("y", i))}},
                        {}});
  }
  m.assign(m.ref("m_data_o"), lane_cat(m, "y", L));
}

Module build_decomposed_top(const CoreConfig& c) {
  Module m;
  decomposed_top_ports(m, c);
  decomposed_top_tables(m, c);
  decomposed_top_lanes(m, c);
  return m;
}

}  // namespace

Expr decomposed_front(Module& m, const CoreConfig& c, bool input_regs) {
  const auto w = decomposed_widths(c);
  const int xw = c.arith.xw, bw = c.arith.bw;
  Expr x = m.ref("x_i"), mean = m.ref("mean_i"), istd = m.ref("istd_i"), gamma = m.ref("gamma_i"),
       beta = m.ref("beta_i");
  if (input_regs) {
    m.section("Input registers");
    const Expr xq = m.reg("x_q", xw);
    const Expr mq = m.reg("mean_q", w.mw);
    const Expr iq = m.reg("istd_q", w.iw);
    const Expr gq = m.reg("gamma_q", w.gw);
    const Expr bq = m.reg("beta_q", bw);
    m.flops({{xq, x, {}}, {mq, mean, {}}, {iq, istd, {}}, {gq, gamma, {}}, {bq, beta, {}}});
    x = xq, mean = mq, istd = iq, gamma = gq, beta = bq;
  }
  m.section("Stage 1: d = x * 2^f - mean");
  const Stmt d = diff_stage(m, c, w, x, mean);
  const Expr istd1 = m.reg("istd1_q", w.iw);
  const Expr g1 = m.reg("gamma1_q", w.gw);
  const Expr g2 = m.reg("gamma2_q", w.gw);
  const Expr g3 = m.reg("gamma3_q", w.gw);
  const Expr b1 = m.reg("beta1_q", bw);
  const Expr b2 = m.reg("beta2_q", bw);
  const Expr b3 = m.reg("beta3_q", bw);
  m.seq({d, assign(istd1, istd), assign(g1, gamma), assign(g2, g1), assign(g3, g2),
         assign(b1, beta), assign(b2, b1), assign(b3, b2)});
  const Expr pq = product_stage(m, std::get<Assign>(d.node).lhs, istd1);
  const Expr tq = requant_stage(m, w, pq, m.ref("k1_i"));
  m.section("Multiply-add (multiplier 2): acc = t * gamma + beta");
  const Expr prod = signed_product(m, tq, "t_e", g3, "g_e", "prod");
  const Expr acc_d = m.wire("acc_d", w.aw);
  m.assign(acc_d, sext(prod, w.aw) + sext(b3, w.aw));
  return acc_d;
}

std::string to_string(RefDesign d) {
  switch (d) {
    case RefDesign::bare_mac:
      return "bare-mac";
    case RefDesign::decomposed:
      return "decomposed";
    case RefDesign::hard_mac_ice40:
      return "hard-mac-ice40";
    case RefDesign::hard_mac_ecp5:
      return "hard-mac-ecp5";
    case RefDesign::hard_mac_xilinx:
      return "hard-mac-xilinx";
    case RefDesign::decomposed_core:
      break;
  }
  return "decomposed-core";
}

std::string ref_top_name(const CoreConfig& cfg, RefDesign d) {
  switch (d) {
    case RefDesign::bare_mac:
      return cfg.name + "_bare_mac";
    case RefDesign::decomposed:
      return cfg.name + "_decomposed";
    case RefDesign::decomposed_core:
      return cfg.top_name();
    case RefDesign::hard_mac_ice40:
    case RefDesign::hard_mac_ecp5:
    case RefDesign::hard_mac_xilinx:
      break;
  }
  return cfg.name + "_hard_mac";
}

DecomposedWidths decomposed_widths(const CoreConfig& cfg) {
  const auto& a = cfg.arith;
  DecomposedWidths w{};
  w.mw = std::max(a.sw - 1, a.xw);
  w.f = w.mw - a.xw;
  w.dw = w.mw + (a.x_signed ? 1 : 2);
  w.iw = a.sw;
  w.tw = a.sw;
  w.gw = a.sw;
  w.aw = std::max(w.tw + w.gw, a.bw) + 1;
  w.k1w = bits_for(w.dw + w.iw - 1);
  w.rw = bits_for(w.aw);
  return w;
}

std::vector<Module> build_ref(const CoreConfig& cfg, RefDesign d) {
  if (auto err = cfg.check(); !err.empty()) throw std::invalid_argument(err);
  std::vector<Module> mods;
  if (d == RefDesign::bare_mac) {
    mods = {build_mac(cfg), build_bare_top(cfg)};
  } else if (d == RefDesign::decomposed_core) {
    mods = build_core(cfg, LaneArith::decomposed);
  } else if (is_hard_mac(d)) {
    mods = {build_hard_mac(cfg, d)};
  } else {
    mods = {build_dram(cfg), build_dlane(cfg), build_decomposed_top(cfg)};
  }
  for (const auto& m : mods) m.validate();
  return mods;
}

std::vector<GeneratedFile> render_ref(const CoreConfig& cfg, RefDesign d) {
  const auto modules = build_ref(cfg, d);
  nlohmann::json config = cfg.to_json();
  config["design"] = to_string(d);
  std::vector<GeneratedFile> out;
  std::string filelist;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& m : modules) {
    const std::string fname = m.name + ".v";
    out.push_back({fname, emit_module(m, generated_header(config, fname))});
    filelist += fname + "\n";
    files.push_back(fname);
  }
  const Module& top = modules.back();
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : top.ports) {
    ports.push_back({{"name", p.name},
                     {"dir", p.output ? "output" : "input"},
                     {"width", p.width},
                     {"comment", p.comment}});
  }
  nlohmann::json man{
      {"generator", "normcore-gen"},
      {"generator_version", kGeneratorVersion},
      {"kind", "reference"},
      {"design", to_string(d)},
      {"top", top.name},
      {"config", cfg.to_json()},
      {"latency", is_hard_mac(d)               ? hard_mac_spec(d).latency
                  : d == RefDesign::bare_mac   ? 2
                  : d == RefDesign::decomposed ? 7
                                               : cfg.latency() + kDecomposedExtraStages},
      {"multipliers_per_lane", d == RefDesign::bare_mac || is_hard_mac(d) ? 1 : 2},
      {"files", files},
      {"ports", ports}};
  if (is_hard_mac(d)) {
    const auto s = hard_mac_spec(d);
    man["hard_block"] = {{"family", s.family},   {"primitive", s.primitive}, {"a_bits", s.aw},
                         {"b_bits", s.bw},       {"c_bits", s.cw},           {"p_bits", s.pw},
                         {"latency", s.latency}, {"c_latency", s.c_latency}};
  } else if (d != RefDesign::bare_mac) {
    const auto w = decomposed_widths(cfg);
    man["widths"] = {{"mean", w.mw},
                     {"mean_frac", w.f},
                     {"diff", w.dw},
                     {"inv_std", w.iw},
                     {"t", w.tw},
                     {"gamma", w.gw},
                     {"acc", w.aw},
                     {"beta", cfg.arith.bw},
                     {"param_word", w.param_bits(cfg.arith.bw)}};
  }
  out.push_back({"filelist.f", filelist});
  out.push_back({"manifest.json", man.dump(2) + "\n"});
  return out;
}

}  // namespace normcore::gen
