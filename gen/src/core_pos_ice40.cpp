// The position modules of a fixed nhwc layout (core_pos.cpp dispatches to them): <n>_step as
// L mod C, <n>_chan as a counter, and --target ice40's <n>_chan with C a multiple of L = 2^a
// (c0 / L as a counter modulo C / L with a registered wrap).
#include <algorithm>
#include <string>
#include <vector>

#include "core_internal.hpp"
#include "core_pos_lut.hpp"
#include "rtl_util.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

using U = std::uint64_t;

bool pos_fixed_nhwc(const CoreConfig& c) {
  return c.has_fixed_layout() && spec::layout_code(c) == 1;
}

int pos_group_bits(const CoreConfig& c) {
  const int L = c.lanes;
  if (!pos_fixed_nhwc(c) || !c.lanes_divide_channels || L < 2 || (L & (L - 1)) != 0) return 0;
  int a = 0;
  while ((1 << a) < L) ++a;
  return a;
}

// Fixed nhwc: <n>_step is L mod C (in units of 2^pos_group_bits), a function of C alone.
Module build_step_nhwc(const CoreConfig& c) {
  const int cw = c.chan_bits(), a = pos_group_bits(c), gw = cw - a;
  const long long L = c.lanes;
  Module m;
  m.name = c.name + "_step";
  m.description = {"Set-up step of a fixed nhwc layout (S = 1): c0 moves by L mod C = " +
                       std::string(a > 0 ? "(L mod C) / L" : "L mod C") + " per beat,",
                   "a function of C alone (no divider)."};
  const Expr ch = m.in("chans_i", cw, "C");
  const Expr quo = m.out("quo_o", gw, a > 0 ? "(L mod C) / L" : "L mod C");
  const long long top = (1LL << cw) - 1;                    // C <= top
  Expr e = lit(gw, L <= top ? static_cast<U>(L >> a) : 0);  // C > L: L (C > top: unreachable)
  if (c.lanes_divide_channels) {  // C is a multiple of L: L mod C = 0 only at C = L
    e = mux(ex::eq(ch, lit(cw, static_cast<U>(L))), lit(gw, 0), e);
  } else {
    for (long long k = std::min(L, top); k >= 1; --k)
      e = mux(ex::eq(ch, lit(cw, static_cast<U>(k))), lit(gw, static_cast<U>((L % k) >> a)), e);
  }
  m.assign(quo, e);
  return m;
}

namespace {

// The ports of both fixed-nhwc trackers (kc0_i / kw0_i documented by the caller).
struct NhwcPorts {
  Expr en, ld, kc, kw, c0;
};
NhwcPorts nhwc_ports(Module& m, int gw, int cw, const std::string& kc_doc,
                     const std::string& kw_doc) {
  m.in("clk_i", 1);
  NhwcPorts r;
  r.en = m.in("en_i", 1, "a beat, or the load");
  r.ld = m.in("ld_i", 1, "with en_i: load the packet start (c0 = 0) instead of a step");
  r.kc = m.in("kc0_i", gw, kc_doc);
  r.kw = m.in("kw0_i", gw + 1, kw_doc);
  r.c0 = m.out("c0_o", cw);
  return r;
}

// d_i = i of lanes 1..L-1 (constants: S = 1).
void lane_offsets(Module& m, int L, int p) {
  if (L < 2) return;
  std::vector<Expr> d;
  for (int i = L - 1; i >= 1; --i) d.push_back(lit(p, static_cast<std::uint64_t>(i)));
  m.assign(m.out("d_o", (L - 1) * p, "d_i = i of lanes 1..L-1, lane 1 in the low bits"), cat(d));
}

}  // namespace

// Fixed nhwc: d_i = i on every beat, c0 a counter (in units of 2^pos_group_bits).
Module build_chan_nhwc(const CoreConfig& c) {
  const int L = c.lanes, cw = c.chan_bits(), a = pos_group_bits(c), gw = cw - a;
  const int p = c.bank_sel_bits();
  Module m;
  m.name = c.name + "_chan";
  m.description = {
      "Positions of the lanes' elements for the next beat, fixed nhwc layout (S = 1): lane i's",
      "channel is c0 + i (d_i = i, constants), and a beat moves c0 by k = L mod C with a wrap",
      "at C: c0 + k or c0 + k - C (two adders off the register, one select)."};
  if (a > 0) {
    m.description.push_back("C is a multiple of L = 2^" + std::to_string(a) +
                            ": so is c0, whose low bits are 0 (the register holds c0 / L).");
  }
  const auto [en, ld, kc, kw, c0] =
      nhwc_ports(m, gw, cw, a > 0 ? "k / L" : "k = L mod C", a > 0 ? "(k - C) / L" : "k - C");
  const Expr c_q = m.reg("c_q", gw, a > 0 ? "c0 / L" : "c0");
  const Expr add = m.wire("c_add", gw);
  m.assign(add, c_q + kc);
  const Expr sub = m.wire("c_sub", gw + 1, "c0 + k - C: top bit set when negative");
  m.assign(sub, zext(c_q, gw + 1) + kw);
  const Expr nx = m.wire("c_nx", gw);
  m.assign(nx, mux(~bit(sub, gw), slice(sub, 0, gw), add));
  m.seq({if_(en, {assign(c_q, mux(ld, lit(gw, 0), nx))})});
  m.assign(c0, a > 0 ? cat({c_q, lit(a, 0)}) : c_q);
  lane_offsets(m, L, p);
  return m;
}

// --target ice40, fixed nhwc, C a multiple of L = 2^a: c0 / L is a counter modulo C / L whose
// wrap is a register (`w_q`: c_q is C / L - 1), so the counter's next value is its increment chain
// alone and the wrap and the packet restart clear it on the flip-flops' synchronous reset (one LUT
// of ld_i and w_q): no compare chain and no select in the loop. w_q is loaded with c_q == C/L - 2
// (an equality with ~kw0_i = C/L - 2: two LUT levels of registers) and cleared with c_q. k / L is
// 0 (C = L: c_q stays 0, w_q is not read) or 1.
Module build_chan_nhwc_wrap(const CoreConfig& c) {
  const int L = c.lanes, cw = c.chan_bits(), a = pos_group_bits(c), gw = cw - a;
  const int p = c.bank_sel_bits();
  Module m;
  m.name = c.name + "_chan";
  m.description = {
      "Positions of the lanes' elements for the next beat, fixed nhwc layout (S = 1): lane i's",
      "channel is c0 + i (d_i = i, constants). C is a multiple of L = 2^" + std::to_string(a) +
          ": the register holds c0 / L,",
      "a counter modulo C / L (step k / L = 0 or 1) whose wrap is a register (w_q: the count is",
      "C / L - 1, set a beat ahead by an equality with C / L - 2 = ~kw0_i); the wrap and the",
      "packet restart clear both (no compare or select in the counter's loop)."};
  const auto [en, ld, kc, kw, c0] = nhwc_ports(
      m, gw, cw, "k / L: 0 (C = L) or 1", "(k - C) / L: its complement is C / L - 2 when C > L");
  const Expr c_q = m.reg("c_q", gw, "c0 / L");
  const Expr w_q = m.reg("w_q", 1, "c_q is C / L - 1 (C > L): the next step wraps");
  rtl::sink(m, "unused_k",
            gw > 1 ? std::vector<Expr>{slice(kc, 1, gw - 1), bit(kw, gw)}
                   : std::vector<Expr>{bit(kw, gw)});
  const Expr clr = m.wire("c_clr", 1, "c_q and w_q restart (the flip-flops' synchronous reset)");
  m.assign(clr, ld | w_q);
  const Expr last = m.wire("c_last", 1, "c_q + 1 is C / L - 1");
  m.assign(last, ex::eq(c_q ^ slice(kw, 0, gw), ex::ones(gw)));
  m.seq({if_(en, {if_(clr, {assign(c_q, lit(gw, 0)), assign(w_q, lit(1, 0))},
                      {assign(c_q, c_q + zext(bit(kc, 0), gw)), assign(w_q, last)})})});
  m.assign(c0, cat({c_q, lit(a, 0)}));
  lane_offsets(m, L, p);
  return m;
}

// --target ice40: <n>_step's subtract reads a copy of S's low bits loaded at start_i (the core's
// stride_q, valid from start_i on, has many readers: its route to r_q was a worst path of the
// UP5K). The enable keeps synthesis from merging it with <n>_chan's copy (slo_q).
Expr step_operand(Module& m, const CoreConfig& c, const Expr& stride, const Expr& start) {
  if (c.target != "ice40") return stride;
  const Expr sl =
      m.reg("sl_q", stride.width(), "stride_i loaded at start_i (the subtract's operand)");
  m.seq({if_(start, {assign(sl, stride)})});
  return sl;
}

Expr c0_operand(Module& md, const std::string& name, int have, int want) {
  const Expr v = md.ref(name);
  if (want >= have) return v;
  rtl::sink(md, "unused_" + name, {slice(v, want, have - want)});
  return slice(v, 0, want);
}

// c0's carry: at the load S >= L and S <= L (sle_i); then cy0_nx (S < L) or the next rem <= L,
// neg_q ? nle_q : h - pb == 0 and lo <= 2L, here with lo's compare on nlo_q = ~lo.
Expr chan_cyc_copy_ice40(Module& md, int lanes, Block& upd) {
  const Expr small = md.ref("small_i"), ld = md.ref("ld_i");
  const Expr ccy = md.reg("ccy_q", 1, "cyc_q's copy for c0's adders (from nlo_q)");
  const Expr nlo = md.ref("nlo_q");
  const Expr le2 = le_bits_inv(nlo, 2ULL * static_cast<U>(lanes));  // lo <= 2L
  const Expr nn = md.wire("ccy_neg_nx", 1, "neg_nx's copy for ccy_q: lo <= 2L from nlo_q");
  md.assign(nn, mux(md.ref("neg_q"), md.ref("nle_q"), md.ref("hi_zero") & le2));
  upd.push_back(assign(
      ccy, (ld & ~small & md.ref("sle_i")) | (~ld & ((small & md.ref("cy0_nx")) | (~small & nn)))));
  return ccy;
}

}  // namespace normcore::gen::core
