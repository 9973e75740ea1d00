// Reference designs for PPA ratios (see normcore/gen/ref_designs.hpp and docs/ppa.md).
//   <n>_mac         one lane of the bare MAC: registered a, b, c; registered a*b + c
//   <n>_bare_mac    LANES of them side by side (the DSP limit)
//   <n>_dram        one lane's parameter RAM of the decomposed design (registered read)
//   <n>_dlane       one lane of the decomposed BN: subtract, multiply, requantise, multiply, add,
//                   round + clamp, every stage registered
//   <n>_decomposed  LANES lanes, a shared channel-group counter, per-lane parameter RAMs
#include "normcore/gen/ref_designs.hpp"

#include <algorithm>
#include <stdexcept>

#include "ref_internal.hpp"
#include "vexpr.hpp"

namespace normcore::gen {
namespace {

using v::lit;
using v::part;
using v::sext;
using v::zext;

std::string idx(const std::string& base, int i) {
  return base + "_" + std::to_string(i);
}

// Concatenation of per-lane nets name_<L-1> .. name_0 (lane 0 in the low bits).
std::string lane_cat(const std::string& base, int lanes) {
  std::string s;
  for (int i = lanes - 1; i >= 0; --i) s += (s.empty() ? "" : ", ") + idx(base, i);
  return lanes == 1 ? s : "{" + s + "}";
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
  m.in("a_i", xw);
  m.in("b_i", sw);
  m.in("c_i", bw);
  m.out("p_o", aw);
  m.reg("a_q", xw);
  m.reg("b_q", sw);
  m.reg("c_q", bw);
  m.always_ff({assign("a_q", "a_i"), assign("b_q", "b_i"), assign("c_q", "c_i")});
  m.wire("a_e", pw, "", true);
  m.assign("a_e", a.x_signed ? sext("a_q", xw, pw) : zext("a_q", xw, pw));
  m.wire("b_e", pw, "", true);
  m.assign("b_e", sext("b_q", sw, pw));
  m.wire("prod", pw, "", true);
  m.assign("prod", "a_e * b_e");
  m.reg("p_q", aw);
  m.always_ff({assign("p_q", sext("prod", pw, aw) + " + " + sext("c_q", bw, aw))});
  m.assign("p_o", "p_q");
  return m;
}

Module build_bare_top(const CoreConfig& c) {
  const auto& a = c.arith;
  const int L = c.lanes, xw = a.xw, sw = a.sw, bw = a.bw, aw = c.acc_bits();
  Module m;
  m.name = ref_top_name(c, RefDesign::bare_mac);
  m.description = {"Reference: " + std::to_string(L) +
                   " bare MAC lanes (the DSP limit of the core's multiply-add). Latency 2."};
  m.in("clk_i", 1);
  m.in("x_i", L * xw, "lane 0 in the low bits");
  m.in("s_i", L * sw);
  m.in("b_i", L * bw);
  m.out("y_o", L * aw);
  for (int i = 0; i < L; ++i) m.wire(idx("p", i), aw);
  for (int i = 0; i < L; ++i) {
    m.instance(Instance{c.name + "_mac",
                        idx("u_mac", i),
                        {{"clk_i", "clk_i"},
                         {"a_i", part("x_i", L * xw, i * xw, xw)},
                         {"b_i", part("s_i", L * sw, i * sw, sw)},
                         {"c_i", part("b_i", L * bw, i * bw, bw)},
                         {"p_o", idx("p", i)}},
                        {}});
  }
  m.assign("y_o", lane_cat("p", L));
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
  m.in("we_i", 1);
  m.in("waddr_i", ab);
  m.in("wdata_i", pw);
  m.in("raddr_i", ab);
  m.out("rdata_o", pw);
  m.memory("mem_q", pw, ref_depth(c));
  m.reg("rdata_q", pw);
  m.always_ff(
      {if_("we_i", {assign("mem_q[waddr_i]", "wdata_i")}), assign("rdata_q", "mem_q[raddr_i]")});
  m.assign("rdata_o", "rdata_q");
  return m;
}

// Round half up of a signed `ew`-bit net by a variable shift: emits half_<s>, sum_<s>, q_<s>.
std::string round_half_up(Module& m, const std::string& sfx, const std::string& val, int ew,
                          const std::string& shift) {
  m.wire("half_" + sfx, ew, "2^(k-1), 0 when k = 0");
  m.assign("half_" + sfx, "(" + lit(ew, 1) + " << " + shift + ") >> 1");
  m.wire("sum_" + sfx, ew, "", true);
  m.assign("sum_" + sfx, val + " + half_" + sfx);
  m.wire("q_" + sfx, ew, "", true);
  m.assign("q_" + sfx, "sum_" + sfx + " >>> " + shift);
  return "q_" + sfx;
}

// Stage "t = saturate(round_half_up(p / 2^k1))" to w.tw bits, registered as t_q (p signed, pw
// bits).
void requant_stage(Module& m, const DecomposedWidths& w, const std::string& p, int pw,
                   const std::string& k1) {
  m.section("Stage 3: t = saturate(round(p / 2^k1)) to " + std::to_string(w.tw) + " bits");
  const int ew = pw + 1;
  m.wire("p_x", ew, "", true);
  m.assign("p_x", sext(p, pw, ew));
  const std::string q1 = round_half_up(m, "t", "p_x", ew, k1);
  m.wire("tmax_e", ew, "", true);
  m.assign("tmax_e", lit(ew, (1ULL << (w.tw - 1)) - 1));
  m.wire("tmin_e", ew, "", true);
  m.assign("tmin_e", "~tmax_e");
  m.reg("t_q", w.tw);
  m.always_ff({assign("t_q", "(" + q1 + " > tmax_e) ? " + part("tmax_e", ew, 0, w.tw) + " : (" +
                                 q1 + " < tmin_e) ? " + part("tmin_e", ew, 0, w.tw) + " : " +
                                 part(q1, ew, 0, w.tw))});
}

// Wires `an` and `bn` (signed a and b extended to the product width) and `out` = an * bn, exact;
// returns the product width.
int signed_product(Module& m, const std::string& a, int aw, const std::string& an,
                   const std::string& b, int bw, const std::string& bn, const std::string& out) {
  const int pw = aw + bw;
  m.wire(an, pw, "", true);
  m.assign(an, sext(a, aw, pw));
  m.wire(bn, pw, "", true);
  m.assign(bn, sext(b, bw, pw));
  m.wire(out, pw, "", true);
  m.assign(out, an + " * " + bn);
  return pw;
}

// Stage "p = d * inv_std" (multiplier 1) from d_q and istd1_q, registered as p_q; returns its
// width.
int product_stage(Module& m, const DecomposedWidths& w) {
  m.section("Stage 2: p = d * inv_std (multiplier 1)");
  const int pw = signed_product(m, "d_q", w.dw, "d_e", "istd1_q", w.iw, "i_e", "p");
  m.reg("p_q", pw);
  m.always_ff({assign("p_q", "p")});
  return pw;
}

// Stage "d = x * 2^f - mean" from x and mean: emits x_s, x_e, mean_e and the register d_q.
void diff_stage(Module& m, const CoreConfig& c, const DecomposedWidths& w, const std::string& x,
                const std::string& mean) {
  m.wire("x_s", w.mw);
  m.assign("x_s", w.f > 0 ? "{" + x + ", " + lit(w.f, 0) + "}" : x);
  m.wire("x_e", w.dw, "", true);
  m.assign("x_e", c.arith.x_signed ? sext("x_s", w.mw, w.dw) : zext("x_s", w.mw, w.dw));
  m.wire("mean_e", w.dw, "", true);
  m.assign("mean_e", sext(mean, w.mw, w.dw));
  m.reg("d_q", w.dw);
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
  m.in("x_i", xw);
  m.in("mean_i", w.mw, "signed, units of 2^-" + std::to_string(w.f) + " of x");
  m.in("istd_i", w.iw, "signed");
  m.in("gamma_i", w.gw, "signed");
  m.in("beta_i", bw, "signed");
  m.in("k1_i", w.k1w, "requantisation shift after inv_std");
  m.in("shift_i", w.rw, "R");
  m.in("lo_i", yw);
  m.in("hi_i", yw);
  m.out("y_o", yw);

  m.section("Stage 1: d = x * 2^f - mean");
  diff_stage(m, c, w, "x_i", "mean_i");
  m.reg("istd1_q", w.iw);
  m.reg("gamma1_q", w.gw);
  m.reg("gamma2_q", w.gw);
  m.reg("gamma3_q", w.gw);
  m.reg("beta1_q", bw);
  m.reg("beta2_q", bw);
  m.reg("beta3_q", bw);
  m.reg("beta4_q", bw);
  m.always_ff(
      {assign("d_q", "x_e - mean_e"), assign("istd1_q", "istd_i"), assign("gamma1_q", "gamma_i"),
       assign("gamma2_q", "gamma1_q"), assign("gamma3_q", "gamma2_q"), assign("beta1_q", "beta_i"),
       assign("beta2_q", "beta1_q"), assign("beta3_q", "beta2_q"), assign("beta4_q", "beta3_q")});

  const int pw = product_stage(m, w);

  requant_stage(m, w, "p_q", pw, "k1_i");

  m.section("Stage 4: g = t * gamma (multiplier 2)");
  const int gw2 = signed_product(m, "t_q", w.tw, "t_e", "gamma3_q", w.gw, "g_e", "g");
  m.reg("g_q", gw2);
  m.always_ff({assign("g_q", "g")});

  m.section("Stage 5: a = g + beta");
  m.reg("a_q", w.aw);
  m.always_ff({assign("a_q", sext("g_q", gw2, w.aw) + " + " + sext("beta4_q", bw, w.aw))});

  m.section("Stage 6: y = clamp(round(a / 2^R), lo, hi)");
  const int ew2 = w.aw + 1;
  m.wire("a_x", ew2, "", true);
  m.assign("a_x", sext("a_q", w.aw, ew2));
  const std::string q2 = round_half_up(m, "y", "a_x", ew2, "shift_i");
  m.wire("lo_e", ew2, "", true);
  m.assign("lo_e", a.y_signed ? sext("lo_i", yw, ew2) : zext("lo_i", yw, ew2));
  m.wire("hi_e", ew2, "", true);
  m.assign("hi_e", a.y_signed ? sext("hi_i", yw, ew2) : zext("hi_i", yw, ew2));
  m.wire("c_t", ew2, "", true);
  m.assign("c_t", "(" + q2 + " < lo_e) ? lo_e : " + q2);
  m.reg("y_q", yw);
  m.always_ff({assign("y_q", "(c_t > hi_e) ? hi_i : " + part("c_t", ew2, 0, yw))});
  m.assign("y_o", "y_q");
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
  m.reg("grp_q", ab);
  m.wire("rd_addr", ab);
  m.assign("rd_addr", "s_first_i ? " + lit(ab, 0) + " : grp_q");
  m.wire("grp_nx", db);
  m.assign("grp_nx", zext("rd_addr", ab, db) + " + " + lit(db, 1));
  m.always_ff({if_("!rst_ni", {assign("grp_q", lit(ab, 0))},
                   {if_("s_valid_i", {assign("grp_q", "(grp_nx >= cfg_groups_i) ? " + lit(ab, 0) +
                                                          " : " + part("grp_nx", db, 0, ab))})})});

  m.section("Per-lane parameter RAMs");
  m.wire("prm_word", pw);
  m.assign("prm_word", "{prm_beta_i, prm_gamma_i, prm_istd_i, prm_mean_i}");
  for (int i = 0; i < L; ++i) {
    m.wire(idx("we", i), 1);
    m.assign(idx("we", i), L > 1 ? "prm_we_i & (prm_lane_i == " + lit(lw, i) + ")" : "prm_we_i");
    m.wire(idx("prm", i), pw);
    m.instance(Instance{c.name + "_dram",
                        idx("u_dram", i),
                        {{"clk_i", "clk_i"},
                         {"we_i", idx("we", i)},
                         {"waddr_i", "prm_addr_i"},
                         {"wdata_i", "prm_word"},
                         {"raddr_i", "rd_addr"},
                         {"rdata_o", idx("prm", i)}},
                        {}});
  }
}

// The input register, the valid pipeline and the lanes.
void decomposed_top_lanes(Module& m, const CoreConfig& c) {
  const auto& a = c.arith;
  const auto w = decomposed_widths(c);
  const int L = c.lanes, xw = a.xw, yw = a.yw, bw = a.bw;
  const int pw = w.param_bits(bw);
  const int ns = 7;  // RAM read + six lane stages
  m.section("Input register beside the RAM read, valid pipeline");
  m.reg("x1_q", L * xw);
  m.always_ff({assign("x1_q", "s_data_i")});
  Block vr, vn;
  for (int k = 1; k <= ns; ++k) {
    m.reg(idx("v", k) + "_q", 1);
    vr.push_back(assign(idx("v", k) + "_q", "1'b0"));
    vn.push_back(assign(idx("v", k) + "_q", k == 1 ? "s_valid_i" : idx("v", k - 1) + "_q"));
  }
  m.always_ff({if_("!rst_ni", std::move(vr), std::move(vn))});
  m.assign("m_valid_o", idx("v", ns) + "_q");

  m.section("Lanes");
  for (int i = 0; i < L; ++i) m.wire(idx("y", i), yw);
  for (int i = 0; i < L; ++i) {
    const std::string p = idx("prm", i);
    m.instance(Instance{c.name + "_dlane",
                        idx("u_dlane", i),
                        {{"clk_i", "clk_i"},
                         {"x_i", part("x1_q", L * xw, i * xw, xw)},
                         {"mean_i", part(p, pw, 0, w.mw)},
                         {"istd_i", part(p, pw, w.mw, w.iw)},
                         {"gamma_i", part(p, pw, w.mw + w.iw, w.gw)},
                         {"beta_i", part(p, pw, w.mw + w.iw + w.gw, bw)},
                         {"k1_i", "cfg_k1_i"},
                         {"shift_i", "cfg_shift_i"},
                         {"lo_i", "cfg_lo_i"},
                         {"hi_i", "cfg_hi_i"},
                         {"y_o", idx("y", i)}},
                        {}});
  }
  m.assign("m_data_o", lane_cat("y", L));
}

Module build_decomposed_top(const CoreConfig& c) {
  Module m;
  decomposed_top_ports(m, c);
  decomposed_top_tables(m, c);
  decomposed_top_lanes(m, c);
  return m;
}

}  // namespace

void decomposed_front(Module& m, const CoreConfig& c, bool input_regs) {
  const auto w = decomposed_widths(c);
  const int xw = c.arith.xw, bw = c.arith.bw;
  std::string x = "x_i", mean = "mean_i", istd = "istd_i", gamma = "gamma_i", beta = "beta_i";
  if (input_regs) {
    m.section("Input registers");
    m.reg("x_q", xw);
    m.reg("mean_q", w.mw);
    m.reg("istd_q", w.iw);
    m.reg("gamma_q", w.gw);
    m.reg("beta_q", bw);
    m.always_ff({assign("x_q", x), assign("mean_q", mean), assign("istd_q", istd),
                 assign("gamma_q", gamma), assign("beta_q", beta)});
    x = "x_q", mean = "mean_q", istd = "istd_q", gamma = "gamma_q", beta = "beta_q";
  }
  m.section("Stage 1: d = x * 2^f - mean");
  diff_stage(m, c, w, x, mean);
  m.reg("istd1_q", w.iw);
  m.reg("gamma1_q", w.gw);
  m.reg("gamma2_q", w.gw);
  m.reg("gamma3_q", w.gw);
  m.reg("beta1_q", bw);
  m.reg("beta2_q", bw);
  m.reg("beta3_q", bw);
  m.always_ff({assign("d_q", "x_e - mean_e"), assign("istd1_q", istd), assign("gamma1_q", gamma),
               assign("gamma2_q", "gamma1_q"), assign("gamma3_q", "gamma2_q"),
               assign("beta1_q", beta), assign("beta2_q", "beta1_q"),
               assign("beta3_q", "beta2_q")});
  const int pw = product_stage(m, w);
  requant_stage(m, w, "p_q", pw, "k1_i");
  m.section("Multiply-add (multiplier 2): acc = t * gamma + beta");
  const int gw2 = signed_product(m, "t_q", w.tw, "t_e", "gamma3_q", w.gw, "g_e", "prod");
  m.wire("acc_d", w.aw);
  m.assign("acc_d", sext("prod", gw2, w.aw) + " + " + sext("beta3_q", bw, w.aw));
}

std::string to_string(RefDesign d) {
  switch (d) {
    case RefDesign::bare_mac:
      return "bare-mac";
    case RefDesign::decomposed:
      return "decomposed";
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
      break;
  }
  return cfg.top_name();
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
      {"latency", d == RefDesign::bare_mac     ? 2
                  : d == RefDesign::decomposed ? 7
                                               : cfg.latency() + kDecomposedExtraStages},
      {"multipliers_per_lane", d == RefDesign::bare_mac ? 1 : 2},
      {"files", files},
      {"ports", ports}};
  if (d != RefDesign::bare_mac) {
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
