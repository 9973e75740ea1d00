// The core's lane <n>_lane: multiply-add, rounding, clamp.
#include "core_lane.hpp"

#include <algorithm>
#include <cstdint>

#include "core_mac.hpp"
#include "ref_internal.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

// Adds the register `<e>_q` (same width and signedness) as a flop of `ff` when `on`; returns what
// the next stage reads.
Expr stage(Module& m, std::vector<Flop>& ff, const Expr& e, bool on) {
  if (!on) return e;
  const Expr q = m.reg(e.str() + "_q", e.width(), "", e.is_signed());
  ff.push_back(Flop{q, e, {}});
  return q;
}

std::vector<std::string> lane_description(const CoreConfig& c, const Variant& v,
                                          const LaneWidths& w) {
  const auto& a = c.arith;
  std::string stages;
  if (c.pipe_xbar()) stages += "[input regs] ";
  if (v.dec) {
    stages += "[x*2^f-mean] [*inv_std] [round >>> k1, saturate] [t*gamma+beta] ";
    if (c.pipe_prod()) stages += "[acc] ";
  } else {
    stages += mac_stages(c);
  }
  const auto parts = lane_shape(v).parts(c.shift_parts());
  const std::string sel = lane_shape(v).fold_top ? "sel" : "R";
  if (c.pipe_acc()) stages += "[acc] ";
  if (parts.size() >= 2) {
    for (const auto& [hi, lo] : parts) {
      stages += "[>>> " + sel + "[" + std::to_string(hi) + ":" + std::to_string(lo) + "]] ";
    }
  } else {
    stages += c.pipe_shift() ? "[>>> R] " : "[>>> R ";
  }
  if (!c.pipe_shift())
    stages += "round clamp]";
  else if (!c.pipe_round())
    stages += "[round clamp]";
  else if (spec::early_round(c))  // the +1 decision in the shifter's last part
    stages.insert(stages.size() - 2, ", +1?"), stages += "[q + inc] [compare] [clamp]";
  else
    stages += c.pipe_sat() ? "[+1?] [compare] [clamp]" : "[round compare] [clamp]";
  return {
      v.dec
          ? "PPA reference lane (decomposed BN, not the normcore contract): acc = t * gamma + beta,"
          : "One lane: y = clamp(round((x * s + b) / 2^R), lo, hi), the normcore contract v" +
                std::to_string(kContractVersion) + ".",
      v.dec ? "t = sat(round_half_up((x * 2^f - mean) * inv_std / 2^k1)); y = clamp(round(acc / "
              "2^R), lo, hi)."
            : std::string("x: ") + std::to_string(w.xw) + "-bit " +
                  (a.x_signed ? "signed" : "unsigned") + ", s: " + std::to_string(w.sw) +
                  "-bit, b: " + std::to_string(w.bw) + "-bit, acc: " + std::to_string(w.aw) +
                  "-bit, y: " + std::to_string(w.yw) + "-bit " +
                  (a.y_signed ? "signed" : "unsigned") + ".",
      "Rounding without a wide adder: q = acc >>> R (floor), h = bit R-1 of acc, t = any bit",
      "below R-1; q + 1 when h and (half_up: always; half_even: t or q odd; half_away: t or",
      "acc >= 0). Only q's low " + std::to_string(w.nw) +
          " bits are kept: a q that does not fit them is beyond lo and hi,",
      "so the clamp picks lo or hi by the sign (the +1 and the compares are narrow).",
      "Stages (each [] ends in a register), latency " +
          std::to_string(v.ns(c) - (early_write(c) ? 2 : 1)) + " cycles:",
      "  " + stages + (early_write(c) ? " (the last [] is the output buffer's RAM)" : ""),
      "No reset (pure datapath)."};
}

void lane_ports(Module& m, const CoreConfig& c, const Variant& v, const LaneWidths& w) {
  const LaneShape sh = lane_shape(v);
  m.in("clk_i", 1);
  m.in("x_i", w.xw);
  for (const auto& f : v.fields) m.in(f.lane + "_i", f.width);
  if (v.dec) m.in("k1_i", v.k1w, "requantisation shift after inv_std (job constant)");
  if (sh.fold_top) {
    m.in("lsh_i", sh.lsw,
         "the shifter's select: R, or " + std::to_string(sh.top - 1) +
             " when R >= " + std::to_string(sh.top) + " (job constant)");
    m.in("rtop_i", 1, "R >= " + std::to_string(sh.top) + ": q is the sign");
    if (sh.top == w.aw - 1) m.in("rmax_i", 1, "R = " + std::to_string(w.aw));
  } else {
    m.in("shift_i", w.rw, "R, 0.." + std::to_string(w.aw) + " (job constant)");
  }
  if (!c.has_fixed_shift()) {
    for (const auto& [hi, lo] : sh.parts(c.shift_parts())) {
      if (hi < lo) continue;  // an empty part (pipe_shift3): no select bits
      const int nt = (1 << (hi - lo + 1)) - 1;
      m.in("tq" + std::to_string(lo) + "_i", nt,
           "bit i: i < select[" + std::to_string(hi) + ":" + std::to_string(lo) +
               "] (job constant)");
    }
  }
  if (const int k = lane_ntq_bits(c, v); k > 0)
    m.in("ntq0_i", k, "~tq0_i's low bits (job constant; the fits chain)");
  m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  if (lane_nlo(c))
    m.in("nlo_i", w.yw, "~min(lo, hi)");
  else
    m.in("lo_i", w.yw, "min(lo, hi)");
  m.in("hi_i", w.yw);
  const std::string k = std::to_string(w.yw + 3) + "-bit two's complement";
  m.in("lox_i", w.yw + 3, "-lo, " + k);
  m.in("hip1_i", w.yw + 3, "-(hi + 1) = ~hi, the same");
  if (lane_keep(c))
    m.in("keep_i", 1,
         early_write(c) ? "the element's tkeep: y_o is 0 unless set"
                        : "the element's tkeep: y_o is 0 unless set (a stage early)");
  m.out("y_o", w.yw,
        early_write(c) ? "the clamp select (the output buffer's RAM registers it)" : "");
}

struct Tests {
  std::vector<Expr> stk, fit;
};

// The sticky / fits terms of one shifter part (select bits hi..lo, so it shifts its input `in`
// by u = sel[hi:lo] * 2^lo), straight from `in` (a register or the DSP's output, so they are
// as deep as the part's shifter) with the per-job thermometer tq_i[i] = (i < sel[hi:lo]):
// * sticky: what the part shifts out at the bottom, in[u-1:0]: |(in[j] & tq[j >> lo]);
// * fits: what it drops off the top of its output window (or, the last part, brings to or
//   above z[nw]): in[j] for j >= c0 + u must all equal the sign, c0 = the window's top + 1
//   (the last part: nw); exempt when tq[(j - c0) >> lo]. ce: the top of in's window.
void part_tests(Module& m, const LaneWidths& w, const Expr& in, std::pair<int, int> hl, int c0,
                int ce, Tests& t) {
  const auto [hi, lo] = hl;
  const int nt = (1 << (hi - lo + 1)) - 1;
  const Expr tq = m.ref("tq" + std::to_string(lo) + "_i");
  int used = 0;  // tq bits 0..used-1 are read (the rest: beyond in's width / window)
  const auto tb = [&](int i) {
    used = std::max(used, i + 1);
    return nt == 1 ? tq : bit(tq, i);
  };
  std::vector<Expr> st;
  for (int j = 0; j < std::min(nt << lo, w.ew); ++j) st.push_back(bit(in, j) & tb(j >> lo));
  const std::string nm = std::to_string(lo);
  const Expr s = m.wire("stk_p" + nm, 1, "shifted out at the bottom by this part");
  m.assign(s, ex::all_or(st));
  t.stk.push_back(s);
  const auto unused = [&] {
    if (used >= nt) return;
    m.assign(m.wire("unused_tq" + nm, 1, "beyond the accumulator"),
             ex::red_xor(slice(tq, used, nt - used)));
  };
  if (!w.sat() || c0 > ce) return unused();
  // Up to bit aw-1 (the DSP's top bit): each bit is compared with bit aw-1 and that one with the
  // sign (checked whenever any is: the exemption is a threshold), so that the sign's LUT after
  // the DSP feeds one compare only.
  std::vector<Expr> ft;
  const Expr sg = bit(in, w.aw), ref = ce == w.aw - 1 ? bit(in, w.aw - 1) : sg;
  for (int j = c0; j <= ce; ++j) {
    const Expr eq = ~(bit(in, j) ^ (j == w.aw - 1 ? sg : ref));
    const int i = (j - c0) >> lo;
    ft.push_back(i < nt ? eq | tb(i) : eq);
  }
  const Expr f = m.wire("fit_p" + nm, 1, "this part drops only sign bits");
  m.assign(f, ex::all_and(ft));
  t.fit.push_back(f);
  unused();
}

// lane_chain_tests: the single part's tests (select bits lsw-1..0) as carry chains straight from
// `in`, no LUT but each chain's exit: a chain cell's carry is MAJ(a, t, cin), so a cell with
// t = 1 ORs its bit a in, with t = 0 ANDs it in.
// * sticky = OR of in[j], j < sel: the bits from the top down, t = tq[j] (0 above sel, so the
//   carry stays 0 there; below, the cells OR).
// * fits: every in[j] for j = c0 + sel .. ce equals the sign in[aw]: all1 = AND of those bits
//   (the bits from the bottom up, carry-in 1, t = tq[j - c0]: the exempt bits below keep it 1)
//   and any1 = OR of them (carry-in 0, t = ntq[j - c0] = ~tq: the exempt bits keep it 0);
//   fits = sign ? all1 : ~any1.
void chain_tests(Module& m, const LaneWidths& w, int nt, const Expr& in, int c0, int ce, Tests& t) {
  const Expr tq = m.ref("tq0_i");
  const auto tb = [&](int i) { return nt == 1 ? tq : bit(tq, i); };
  const auto carry = [&](const std::string& name, const Expr& a, const Expr& b, int cin,
                         const std::string& what) {
    const int n = a.width();
    const Expr sum = m.wire(name + "_s", n + 1, "the chain: its carry out is " + what);
    const Expr ab = zext(a, n + 1) + zext(b, n + 1);
    m.assign(sum, cin != 0 ? ab + lit(n + 1, 1) : ab);
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, n)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, n));
    return e;
  };
  const int ns = std::min(nt, w.ew);
  std::vector<Expr> sa, st;  // bit j at position ns - 1 - j: the top bit enters the chain first
  for (int j = 0; j < ns; ++j) sa.push_back(bit(in, j)), st.push_back(tb(j));
  t.stk.push_back(carry("stk_p0", cat(std::move(sa)), cat(std::move(st)), 0,
                        "shifted out at the bottom (any in[j], j < sel)"));
  int used = ns;
  if (w.sat() && c0 <= ce) {
    const int nf = ce - c0 + 1, k = std::min(nt, nf);
    used = std::max(used, k);
    const Expr a = slice(in, c0, nf), tk = k == nt && nt == 1 ? tq : slice(tq, 0, k);
    const Expr ntq = m.ref("ntq0_i");
    const Expr t1 = k == nf ? tk : zext(tk, nf);
    const Expr t0 = k == nf ? ntq : cat({ex::ones(nf - k), ntq});
    const Expr all1 = carry("fit_all1", a, t1, 1, "every checked bit is 1");
    const Expr any1 = carry("fit_any1", a, t0, 0, "a checked bit is 1");
    const Expr f = m.wire("fit_p0", 1, "this part drops only sign bits");
    m.assign(f, mux(bit(in, w.aw), all1, ~any1));
    t.fit.push_back(f);
  }
  if (used < nt) {
    m.assign(m.wire("unused_tq0", 1, "beyond the accumulator"),
             ex::red_xor(slice(tq, used, nt - used)));
  }
}

// R fixed (a specialised core): the tests straight on acc's fixed bits, sticky = acc[R-2:0] has
// a bit set, fits = acc[aw-1:R+nw-1] all equal (the shifter is then only wires).
void fixed_tests(Module& m, const LaneWidths& w, int r, const Expr& acc, Tests& t) {
  const Expr st = m.wire("stk_r", 1, "acc[R-2:0] has a bit set (R fixed)");
  m.assign(st, r >= 3 ? ex::red_or(slice(acc, 0, r - 1)) : r == 2 ? bit(acc, 0) : lit(1, 0));
  t.stk.push_back(st);
  const int p = r + w.nw - 1;
  if (!w.sat() || p >= w.aw - 1) return;
  // Each bit compared with acc[aw-2] (straight from the DSP) and only that one with the sign
  // (the majority LUT), as in part_tests, in groups of three (one LUT4 each): with the shifter
  // split (pipe_shift2) the groups are registered and ANDed in the second part's stage, so each
  // stage is one or two LUT levels.
  const Expr top = bit(acc, w.aw - 2);
  const Expr sg = m.wire("fit_rs", 1, "acc's sign equals acc[aw-2] (R fixed)");
  m.assign(sg, ~(bit(acc, w.aw - 1) ^ top));
  t.fit.push_back(sg);
  for (int lo = p, k = 0; lo < w.aw - 2; lo += 3, ++k) {
    const int n = std::min(3, w.aw - 2 - lo);
    const Expr g = m.wire("fit_r" + std::to_string(k), 1,
                          "acc[" + std::to_string(lo + n - 1) + ":" + std::to_string(lo) +
                              "] all equal acc[aw-2] (R fixed)");
    m.assign(g, ex::red_nor(slice(acc, lo, n) ^ ex::repl(n, top)));
    t.fit.push_back(g);
  }
}

// The tests' terms as one vector (registered in the middle when the shifter is split).
Expr terms(Module& m, const std::string& name, std::vector<Expr> parts, const char* what) {
  if (parts.empty()) return Expr{};
  const Expr e = m.wire(name, static_cast<int>(parts.size()), what);
  m.assign(e, cat(std::move(parts)));
  return e;
}

// The shifter and the sticky / fits tests; returns z, sticky and fits (empty when no saturation).
std::vector<Expr> lane_shift(Module& m, const CoreConfig& c, const Variant& v,
                             const LaneWidths& w) {
  const LaneShape sh = lane_shape(v);
  m.section("Shift: z = {acc, 0} >>> R, so z[" + std::to_string(w.aw) + ":1] = floor(acc / 2^R)");
  m.section("and z[0] = bit R-1 of acc (0 when R = 0)");
  const ShiftIn si = shift_input(m, c, v, w);
  if (c.pipe_shift3()) return lane_shift3(m, c, v, w, si);
  const Expr ext = si.ext, ext0 = si.ext0;
  const Expr sel = m.ref(sh.fold_top ? "lsh_i" : "shift_i");
  const auto parts = sh.parts(c.shift_parts());
  Tests t1, t2;
  const bool fx = c.has_fixed_shift();
  if (fx) fixed_tests(m, w, c.fixed_shift, si.acc, t1);
  if (sh.fold_top && !fx) {
    // R >= T: the select is T-1, which shifts out acc[T-3:0]; sticky also needs acc[R-2:T-2].
    const Expr acc = si.acc, rtop = m.ref("rtop_i");
    const Expr st = m.wire("stk_top", 1,
                           "R >= " + std::to_string(sh.top) +
                               ": acc[R-2:" + std::to_string(sh.top - 2) + "] has a bit set");
    const Expr hi = bit(acc, sh.top - 2);
    m.assign(st, rtop & (sh.top == w.aw - 1 ? hi | (m.ref("rmax_i") & bit(acc, sh.top - 1)) : hi));
    t1.stk.push_back(st);
  }
  Expr z = m.wire("z", w.ew, "", true);
  if (parts.size() == 2) {
    const auto [hi, lo] = parts[0];
    std::vector<Flop> ff;
    const Expr z1 = m.wire("z1", w.ew, "", true);
    shift_stages(m, w, sel, ext, hi, lo, z1);
    if (!fx) part_tests(m, w, ext0, parts[0], w.nw + (1 << lo), w.aw - 1, t1);
    const Expr z1s = stage(m, ff, z1, true);
    for (auto* v1 : {&t1.stk, &t1.fit}) {
      const Expr e = terms(m, v1 == &t1.stk ? "stk1" : "fit1", *v1, "the first part's terms");
      *v1 = e.valid() ? std::vector<Expr>{stage(m, ff, e, true)} : std::vector<Expr>{};
    }
    m.flops(ff, "end of the first shifter part");
    shift_stages(m, w, sel, z1s, parts[1].first, 0, z);
    const int ce = std::min(w.aw - 1, w.nw + (1 << lo) - 1);
    if (!fx) part_tests(m, w, z1s, parts[1], w.nw, ce, t2);
  } else {
    shift_stages(m, w, sel, ext, parts[0].first, 0, z);
    if (lane_chain_tests(c)) {
      chain_tests(m, w, (1 << sh.lsw) - 1, ext0, w.nw, w.aw - 1, t2);
    } else if (!fx) {
      part_tests(m, w, ext0, parts[0], w.nw, w.aw - 1, t2);
    }
  }
  for (auto& e : t1.stk) t2.stk.push_back(e.width() == 1 ? e : ex::red_or(e));
  for (auto& e : t1.fit) t2.fit.push_back(e.width() == 1 ? e : ex::red_and(e));
  Expr sticky = m.wire("sticky", 1, "a bit below R-1 is set"), fits;
  m.assign(sticky, ex::all_or(t2.stk));
  if (w.sat()) {
    fits = m.wire("fits", 1, "the quotient fits " + std::to_string(w.nw) + " signed bits");
    m.assign(fits, t2.fit.empty() ? lit(1, 1) : ex::all_and(t2.fit));  // R fixed and large
  }
  std::vector<Flop> ff;
  z = stage(m, ff, z, c.pipe_shift());
  sticky = stage(m, ff, sticky, c.pipe_shift());
  if (w.sat()) fits = stage(m, ff, fits, c.pipe_shift());
  if (!ff.empty()) m.flops(ff, "end of the shifter");
  return {z, sticky, fits};
}

// The +1 decision from the half bit h, q's low bit q0, the sign and sticky (a combinational reg).
Expr lane_inc(Module& m, const CoreConfig& c, const Expr& h, const Expr& q0, const Expr& neg,
              const Expr& sticky) {
  Expr inc;
  if (c.pipe_shift3()) {
    // Two LUT levels from registers: h & (mode 1, or mode 2 and q odd), h & mode 3 & acc >= 0,
    // h & (mode 2 or 3), and sticky (one LUT of the groups) in the second level.
    const IncGroups g = inc_groups(m, h, q0, neg);
    inc = m.reg("inc", 1);
    m.always_comb({assign(inc, g.a | g.b | (g.c & sticky))});
  } else {
    const Expr t_or_odd = m.wire("t_or_odd", 1, "half_even: above the half, or a tie with q odd");
    m.assign(t_or_odd, sticky | q0);
    const Expr t_or_pos =
        m.wire("t_or_pos", 1, "half_away: above the half, or a tie with acc >= 0");
    m.assign(t_or_pos, sticky | ~neg);
    inc = m.reg("inc", 1);
    m.always_comb({case_(m.ref("round_i"), {CaseArm{{lit(2, 0)}, {assign(inc, lit(1, 0))}},
                                            CaseArm{{lit(2, 1)}, {assign(inc, h)}},
                                            CaseArm{{lit(2, 2)}, {assign(inc, h & t_or_odd)}},
                                            CaseArm{{}, {assign(inc, h & t_or_pos)}}})});
  }
  return inc;
}

// Round: q = the floor quotient's low nw bits (the quotient itself when it fits), the +1 decision;
// returns q, inc, fits and neg (fits, neg: the clamp's saturation; empty without saturation).
std::vector<Expr> lane_round(Module& m, const CoreConfig& c, const LaneWidths& w,
                             const std::vector<Expr>& zsf) {
  const Expr& z = zsf[0];
  Expr sticky = zsf[1], fits = zsf[2];
  const int aw = w.aw, nw = w.nw;
  if (c.pipe_shift3()) {  // the registered groups (at most four bits each): one LUT level
    const Expr st = m.wire("sticky", 1, "a bit below R-1 is set (any sticky group)");
    m.attr_last("keep");  // one LUT of its own: ABC merged it into three levels with inc
    m.assign(st, !sticky.valid() ? lit(1, 0) : sticky.width() == 1 ? sticky : ex::red_or(sticky));
    sticky = st;
    if (w.sat()) {
      const Expr f = m.wire("fits", 1, "the quotient fits " + std::to_string(nw) + " signed bits");
      m.assign(f, !fits.valid() ? lit(1, 1) : fits.width() == 1 ? fits : ex::red_and(fits));
      fits = f;
    }
  }
  m.section("Round: q = the floor quotient's low " + std::to_string(nw) +
            " bits, + 1 by the mode (half bit h, sticky t)");
  const Expr qf = m.wire("qf", aw, "floor(acc / 2^R)");
  m.assign(qf, slice(z, 1, aw));
  const Expr h = m.wire("h", 1, "bit R-1 of acc");
  m.assign(h, bit(z, 0));
  const Expr neg = m.wire("neg", 1, "acc < 0");
  m.assign(neg, bit(z, aw));
  const Expr qn =
      m.wire("qn", nw, "qf's low bits: qf itself when it fits (else the clamp saturates)");
  if (w.sat()) {
    m.assign(m.wire("unused_qf", 1, "above the saturated width: fits decides"),
             ex::red_xor(slice(qf, nw, aw - nw)));
    m.assign(qn, slice(qf, 0, nw));
  } else {
    m.assign(qn, ex::sext(qf, nw));
  }
  const Expr inc = lane_inc(m, c, h, bit(qf, 0), neg, sticky);
  std::vector<Flop> ff;
  const Expr qn_s = stage(m, ff, qn, c.pipe_sat());
  const Expr inc_s = stage(m, ff, inc, c.pipe_sat());
  Expr fits_s, neg_s;
  if (w.sat()) fits_s = stage(m, ff, fits, c.pipe_sat()), neg_s = stage(m, ff, neg, c.pipe_sat());
  if (!ff.empty()) m.flops(ff, "the quotient and the +1 decision");
  return {qn_s, inc_s, fits_s, neg_s};
}

// pipe_sat (qn and inc are registers): the clamp compares rq = qn + inc itself with the two
// bounds, the +1 entering each compare's carry chain as its low bit ({qn, inc} + {-k, inc}: the
// low bits carry inc), so rq < k is the sign of one (W+1)-bit add straight from registers:
// rq < lo with -lo, rq < hi + 1 with -(hi + 1) = ~hi. Two chains instead of four, two per-job
// constants, and the saturation / clamp logic after the register is narrower.

void lane_clamp_sat(Module& m, const CoreConfig& c, const LaneWidths& w,
                    const std::vector<Expr>& qi) {
  const Expr &qn = qi[0], &inc = qi[1];
  const int yw = w.yw, sw = yw + 3;  // the bounds' width: qn (nw <= yw + 1 bits) sign-extended
  m.section("Clamp decisions: rq = qn + inc against lo (= min(lo, hi)) and hi + 1, each the sign");
  m.section("of one " + std::to_string(sw + 1) +
            "-bit add {qn, inc} + {-k, inc} (per-job -k), the +1 carried in at the bottom");
  const Expr rq = m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign(rq, slice(qn, 0, yw) + zext(inc, yw));
  const auto cmp = [&](const std::string& name, const char* bound, const std::string& what) {
    const Expr sum = m.wire(name + "_s", sw + 1, "{rq - the bound, inc}: its sign is rq < it");
    m.assign(sum, cat({ex::sext(qn, sw), inc}) + cat({m.ref(bound), inc}));
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, sw)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, sw));
    return e;
  };
  const Expr blo = cmp("lt_lo", "lox_i", "rq < lo");
  const Expr bhi = cmp("lt_hip1", "hip1_i", "rq < hi + 1: not above");
  std::vector<Flop> ff;
  const Expr rqs = stage(m, ff, rq, true);
  if (early_write(c)) return lane_clamp_early(m, c, w, qi, blo, bhi, rqs, ff);
  const Expr bl = stage(m, ff, blo, true), nab = stage(m, ff, bhi, true);
  // Saturation folded into the clamp as in lane_clamp.
  const bool sat = qi[2].valid();
  Expr fits, neg;
  if (sat) fits = stage(m, ff, qi[2], true), neg = stage(m, ff, qi[3], true);
  m.flops(ff, "end of rounding");
  lane_clamp_out(m, c, w, {rqs, bl, nab, fits, neg}, "rq");
}

// Pipeline 5 (sticky and q registered after the shifter, no register between the +1 and the
// clamp; LUT4 families): as lane_clamp_sat,
// rq = qn + inc against lo and hi + 1 as the signs of two (W+1)-bit adds {qn, inc} + {-k, inc}
// (the +1 carried in at the bottom: two chains, not four, and below / above are one LUT each),
// then the clamp into y_q.
void lane_clamp_two(Module& m, const CoreConfig& c, const LaneWidths& w,
                    const std::vector<Expr>& qi) {
  const Expr &qn = qi[0], &inc = qi[1];
  const int yw = w.yw, sw = yw + 3;  // the bounds' width: qn (nw <= yw + 1 bits) sign-extended
  m.section("Clamp decisions: rq = qn + inc against lo (= min(lo, hi)) and hi + 1, each the sign");
  m.section("of one " + std::to_string(sw + 1) +
            "-bit add {qn, inc} + {-k, inc} (per-job -k), the +1 carried in at the bottom");
  const Expr rq = m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign(rq, slice(qn, 0, yw) + zext(inc, yw));
  const auto cmp = [&](const std::string& name, const char* bound, const std::string& what) {
    const Expr sum = m.wire(name + "_s", sw + 1, "{rq - the bound, inc}: its sign is rq < it");
    m.assign(sum, cat({ex::sext(qn, sw), inc}) + cat({m.ref(bound), inc}));
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, sw)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, sw));
    return e;
  };
  const Expr blo = cmp("lt_lo", "lox_i", "rq < lo");
  const Expr bhi = cmp("lt_hip1", "hip1_i", "rq < hi + 1: not above");
  const Expr blw = m.wire("below", 1, "rq < lo (or q does not fit and acc < 0)");
  const Expr abv = m.wire("above", 1, "rq > hi (or q does not fit and acc >= 0)");
  const bool sat = qi[2].valid();
  m.assign(blw, sat ? mux(qi[2], blo, qi[3]) : blo);
  m.assign(abv, sat ? mux(qi[2], ~bhi, ~qi[3]) : ~bhi);
  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  const Expr y = m.reg("y_q", yw);
  m.seq({assign(y, lane_keep_mask(m, c, w, mux(blw, lane_lo(m, c), mux(abv, m.ref("hi_i"), rq))))});
  m.assign(m.ref("y_o"), y);
}

// Clamp decisions beside the +1, and the clamp. two: lane_clamp_two where it applies (the
// normcore lane; the decomposed reference keeps the four compares, which map smaller there:
// its pipeline-3 lane 378 LUT4 with them, 391 with two). Not at pipeline 3 / 4: there the +1
// decision waits for the 31-bit sticky chain in the same stage, and carrying it through the
// compares' chains made that the core's worst path (core_l4 25.51 -> 23.88 MHz, 3 seeds).
void lane_clamp(Module& m, const CoreConfig& c, const LaneWidths& w, const std::vector<Expr>& qi,
                bool two) {
  if (c.pipe_sat()) return lane_clamp_sat(m, c, w, qi);
  if (two && c.pipe_shift() && !c.pipe_round() && !early_write(c) && !c.xilinx_attrs())
    return lane_clamp_two(m, c, w, qi);
  const Expr &qn = qi[0], &inc = qi[1];
  const int yw = w.yw;
  m.section("Clamp decisions beside the +1: rq = qn + inc against lo (= min(lo, hi)) and hi by");
  m.section("comparing qn with lo or lo - 1 and hi or hi + 1 (per-job constants), chosen by inc;");
  m.section("qn < k is the sign of the " + std::to_string(yw + 3) +
            "-bit sum qn + (-k): one carry chain, no LUT in front of it");
  const Expr rq = m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign(rq, slice(qn, 0, yw) + zext(inc, yw));
  // The four compares, each a carry chain straight from the stage's registers; the +1 chooses
  // between them after the register (a mux in front of one shared chain was 15 ns on UP5K).
  // Two per-job bounds: -(lo - 1) = -lo + 1 and -hi = -(hi + 1) + 1 carry a 1 in at the bottom.
  // |qn - k| < 2^(yw+1) (qn of nw <= yw + 1 bits, k an output value): kw = yw + 2 bits hold the
  // difference and the difference + 1 (qn = 2^(yw-1) - 1, lo = -2^(yw-1) when nw = yw), so a
  // chain with the carry-in is no longer than the four chains of kw + 1 bits were.
  const int kw = yw + 2;
  const auto cmp = [&](const std::string& name, const char* bound, bool ci,
                       const std::string& what) {
    const int sw = kw + (ci ? 1 : 0);
    const Expr k = slice(m.ref(bound), 0, kw);
    const Expr sum = m.wire(name + "_s", sw, "qn - the bound: its sign is qn < the bound");
    m.assign(sum,
             ci ? cat({ex::sext(qn, kw), lit(1, 1)}) + cat({k, lit(1, 1)}) : ex::sext(qn, kw) + k);
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, sw - 1)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, sw - 1));
    return e;
  };
  m.assign(m.wire("unused_bounds", 1, "the bounds' top bits (a sign extension)"),
           ex::red_xor(cat({slice(m.ref("lox_i"), kw, 1), slice(m.ref("hip1_i"), kw, 1)})));
  const Expr bl1 = cmp("lt_lom1", "lox_i", true, "qn < lo - 1: below if + 1");
  const Expr bl0 = cmp("lt_lo", "lox_i", false, "qn < lo: below if + 0");
  const Expr ab1 = cmp("lt_hi", "hip1_i", true, "qn < hi: not above if + 1");
  const Expr ab0 = cmp("lt_hip1", "hip1_i", false, "qn < hi + 1: not above if + 0");
  std::vector<Flop> ff;
  const bool pr = c.pipe_round();
  const Expr rqs = stage(m, ff, rq, pr), incs = stage(m, ff, inc, pr);
  const Expr b1 = stage(m, ff, bl1, pr), b0 = stage(m, ff, bl0, pr);
  const Expr a1 = stage(m, ff, ab1, pr), a0 = stage(m, ff, ab0, pr);
  Expr fits, neg;
  if (w.sat()) fits = stage(m, ff, qi[2], pr), neg = stage(m, ff, qi[3], pr);
  if (!ff.empty()) m.flops(ff, "end of rounding");
  // Saturation folded into the clamp: a quotient that does not fit nw bits is beyond both
  // bounds (q >= 2^(nw-1) > hi, or q + 1 <= -2^(nw-1) <= lo), so the result is lo or hi by its
  // sign.
  const Expr blw = m.wire("below", 1, "qn + inc < lo (or q does not fit and acc < 0)");
  const Expr abv = m.wire("above", 1, "qn + inc > hi (or q does not fit and acc >= 0)");
  if (w.sat()) {
    m.assign(blw, mux(fits, mux(incs, b1, b0), neg));
    m.assign(abv, mux(fits, ~mux(incs, a1, a0), ~neg));
  } else {
    m.assign(blw, mux(incs, b1, b0));
    m.assign(abv, ~mux(incs, a1, a0));
  }

  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  const Expr yd = lane_keep_mask(m, c, w, mux(blw, lane_lo(m, c), mux(abv, m.ref("hi_i"), rqs)));
  if (early_write(c)) {  // the output buffer's RAM registers it (written a cycle early)
    m.assign(m.ref("y_o"), yd);
    return;
  }
  const Expr y = m.reg("y_q", yw);
  m.seq({assign(y, yd)});
  m.assign(m.ref("y_o"), y);
}

}  // namespace

LaneShape lane_shape(const Variant& v) {
  LaneShape s;
  s.top = v.rw >= 2 ? 1 << (v.rw - 1) : 0;
  s.fold_top = v.rw >= 2 && s.top >= v.aw - 1;
  s.lsw = s.fold_top ? v.rw - 1 : v.rw;
  s.rl = std::min((v.rw + 1) / 2, s.lsw);
  return s;
}

std::vector<std::pair<int, int>> LaneShape::parts(int n) const {
  if (n == 3) {
    const int s3 = (lsw + 2) / 3, s2 = (lsw - s3 + 1) / 2;  // s1 = lsw - s3 - s2 <= s2 <= s3
    return {{lsw - 1, s2 + s3}, {s2 + s3 - 1, s3}, {s3 - 1, 0}};
  }
  if (n == 1 || lsw < 2) return {{lsw - 1, 0}};
  // Two non-empty parts (the split adds a register: pipe_shift2), also for a 2-bit select.
  const int r = std::min(rl, lsw - 1);
  return {{lsw - 1, r}, {r - 1, 0}};
}

bool lane_chain_tests(const CoreConfig& c) {
  return !c.pipe_shift() && !c.has_fixed_shift();
}

int lane_ntq_bits(const CoreConfig& c, const Variant& v) {
  const LaneWidths w(c, v);
  if (!lane_chain_tests(c) || !w.sat() || w.nw > w.aw - 1) return 0;
  return std::min((1 << lane_shape(v).lsw) - 1, w.aw - w.nw);
}

// In the top, from its shift_q: the lanes' shifter select (LaneShape::fold_top: R >= 2^(rw-1)
// is one case, select 2^(rw-1) - 1 with the shifter's input patched) and R = aw.
void lane_job_consts(Module& m, const CoreConfig& c, const Variant& v) {
  const LaneShape sh = lane_shape(v);
  const int rw = v.rw, aw = v.aw;
  const Expr shift = m.ref("shift_q");
  Expr sel = shift;
  if (sh.fold_top) {
    const Expr top = bit(shift, rw - 1);
    sel = mux(top, lit(sh.lsw, static_cast<std::uint64_t>(sh.top - 1)), slice(shift, 0, sh.lsw));
    Block b{assign(m.reg("lsh_q", sh.lsw, "the lanes' shifter select"), sel)};
    if (sh.top == aw - 1) {
      b.push_back(assign(m.reg("rmax_q", 1, "R = " + std::to_string(aw)),
                         ex::eq(shift, lit(rw, static_cast<std::uint64_t>(aw)))));
    }
    m.seq(b);
    sel = m.ref("lsh_q");
  }
  if (c.has_fixed_shift()) return;
  Block b;
  for (const auto& [hi, lo] : sh.parts(c.shift_parts())) {
    if (hi < lo) continue;  // an empty part (pipe_shift3)
    const int nt = (1 << (hi - lo + 1)) - 1, n = hi - lo + 1;
    std::vector<Expr> bits;
    for (int i = nt - 1; i >= 0; --i) {
      bits.push_back(n == 1 ? bit(sel, lo)
                            : ex::lt(lit(n, static_cast<std::uint64_t>(i)), slice(sel, lo, n)));
    }
    const Expr tq = m.reg(
        "tq" + std::to_string(lo) + "_q", nt,
        "bit i: i < the lanes' select[" + std::to_string(hi) + ":" + std::to_string(lo) + "]");
    if (const int k = lane_ntq_bits(c, v); k > 0) {
      std::vector<Expr> nb;  // bit i: i >= the select (bits[nt - 1 - i] is bit i)
      for (int i = k - 1; i >= 0; --i) nb.push_back(~bits[static_cast<std::size_t>(nt - 1 - i)]);
      const Expr ntq = m.reg("ntq0_q", k, "~tq0_q's low bits (the lanes' fits chains)");
      b.push_back(assign(ntq, nb.size() == 1 ? nb[0] : cat(std::move(nb))));
    }
    b.push_back(assign(tq, cat(std::move(bits))));
  }
  m.seq(b);
}

Module build_lane(const CoreConfig& c, const Variant& v) {
  const LaneWidths w(c, v);
  Module m;
  m.name = c.name + "_lane";
  m.description = lane_description(c, v, w);
  lane_ports(m, c, v, w);
  if (v.dec) {
    // The multiply-add below is t * gamma + beta; the chain in front of it makes t.
    const Expr acc_d = decomposed_front(m, c, c.pipe_xbar());
    const Expr acc = m.reg("acc_q", w.aw);
    if (c.xilinx_attrs()) m.attr_last("use_dsp = \"yes\"");
    m.flops({{acc, acc_d, {}}});
    // pipe_prod: one more register, so that every depth has the same latency as the product's.
    std::vector<Flop> ff;
    const Expr acc2 = stage(m, ff, acc, c.pipe_prod());
    if (!ff.empty()) m.flops(ff);
    m.assign(m.wire("acc", w.aw), acc2);
  } else {
    lane_mac_acc(m, c, v);
  }
  const auto zsf = lane_shift(m, c, v, w);
  spec::early_round(c) ? lane_round_early(m, c, w, zsf)
                       : lane_clamp(m, c, w, lane_round(m, c, w, zsf), !v.dec);
  return m;
}

}  // namespace normcore::gen::core
