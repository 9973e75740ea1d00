// The core's lane <n>_lane: multiply-add, rounding, clamp.
#include <algorithm>

#include "core_internal.hpp"
#include "ref_internal.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

struct LaneWidths {
  int xw, sw, bw, yw, aw, rw;
  int ew;  // {acc, 0}: the shifter also brings out bit R-1
  int nw;  // the floor quotient saturated to nw signed bits
  int rl;  // low R bits: the second shifter half (when split)
  int gs;  // sticky / fits OR trees: bits per group of the first half
  [[nodiscard]] bool sat() const { return nw < aw; }
  LaneWidths(const CoreConfig& c, const Variant& v)
      : xw(c.arith.xw),
        sw(c.arith.sw),
        bw(c.arith.bw),
        yw(c.arith.yw),
        aw(v.aw),
        rw(v.rw),
        ew(v.aw + 1),
        nw(c.arith.yw + 1),
        rl((v.rw + 1) / 2),
        gs(8) {}
};

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
  stages += v.dec ? "[x*2^f-mean] [*inv_std] [round >>> k1, saturate] [t*gamma+beta] " : "[x*s+b] ";
  if (c.pipe_shift2()) {
    stages += "[>>> R[" + std::to_string(w.rw - 1) + ":" + std::to_string(w.rl) + "]] [>>> R[" +
              std::to_string(w.rl - 1) + ":0]] ";
  } else {
    stages += c.pipe_shift() ? "[>>> R] " : "[>>> R ";
  }
  if (!c.pipe_shift())
    stages += "round clamp]";
  else if (!c.pipe_round())
    stages += "[round clamp]";
  else
    stages += c.pipe_sat() ? "[saturate +1?] [compare] [clamp]" : "[round compare] [clamp]";
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
      "acc >= 0). q is saturated to " + std::to_string(w.nw) +
          " bits first, so the +1 and the clamp are narrow.",
      "Stages (each [] ends in a register), latency " + std::to_string(v.ns(c) - 1) + " cycles:",
      "  " + stages,
      "No reset (pure datapath)."};
}

void lane_ports(Module& m, const Variant& v, const LaneWidths& w) {
  m.in("clk_i", 1);
  m.in("x_i", w.xw);
  for (const auto& f : v.fields) m.in(f.lane + "_i", f.width);
  if (v.dec) m.in("k1_i", v.k1w, "requantisation shift after inv_std (job constant)");
  m.in("shift_i", w.rw, "R, 0.." + std::to_string(w.aw) + " (job constant)");
  m.in("smask_i", w.aw, "2^(R-1) - 1 (0 when R = 0): the bits below the half bit");
  if (w.sat()) {
    m.in("omask_i", w.aw - 1,
         "bits >= R + " + std::to_string(w.nw - 1) + ": all the sign iff q fits " +
             std::to_string(w.nw) + " bits");
  }
  m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("lo_i", w.yw, "min(lo, hi)");
  m.in("hi_i", w.yw);
  m.in("lox_i", w.yw + 2, "lo, " + std::to_string(w.yw + 2) + "-bit signed, top bit flipped");
  m.in("lom1_i", w.yw + 2, "lo - 1, the same");
  m.in("hix_i", w.yw + 2, "hi, the same");
  m.in("hip1_i", w.yw + 2, "hi + 1, the same");
  m.out("y_o", w.yw);
}

// The folded multiply-add: the wire acc_d = x * s + b.
void lane_mac(Module& m, const CoreConfig& c, const LaneWidths& w) {
  Expr x = m.ref("x_i"), s = m.ref("s_i"), b = m.ref("b_i");
  if (c.pipe_xbar()) {
    m.section("Input registers (DSP A/B/C registers)");
    const Expr xq = m.reg("x_q", w.xw), sq = m.reg("s_q", w.sw), bq = m.reg("b_q", w.bw);
    m.flops({{xq, x, {}}, {sq, s, {}}, {bq, b, {}}});
    x = xq, s = sq, b = bq;
  }
  const int pw = w.xw + w.sw;
  m.section("Multiply-add (one multiplier)");
  const Expr x_e = m.wire("x_e", pw, "", true);
  m.assign(x_e, c.arith.x_signed ? ex::sext(x, pw) : zext(x, pw));
  const Expr s_e = m.wire("s_e", pw, "", true);
  m.assign(s_e, ex::sext(s, pw));
  const Expr prod = m.wire("prod", pw, "exact: |x * s| < 2^" + std::to_string(pw - 1), true);
  m.assign(prod, x_e * s_e);
  m.assign(m.wire("acc_d", w.aw), ex::sext(prod, w.aw) + ex::sext(b, w.aw));
}

// The shifter: one stage per bit of R (bits hi..lo), the largest shift first. Every later stage
// then only has to produce a window of nw + 1 + (its remaining shift) bits (synthesis trims the
// rest), which on iCE40 takes about a quarter fewer LUTs per lane than the smallest shift first.
void shift_stages(Module& m, const LaneWidths& w, const Expr& src, int hi, int lo,
                  const Expr& out) {
  const Expr shift = m.ref("shift_i");
  Expr cur = src;
  for (int k = hi; k >= lo; --k) {
    const Expr nm = k == lo ? out : m.wire("zr" + std::to_string(k), w.ew, "", true);
    m.assign(nm, ex::sra(cur, k == 0 ? bit(shift, 0) : cat({bit(shift, k), lit(k, 0)})));
    cur = nm;
  }
}

// Beside the shifter, from acc: sticky = any bit below R-1 (smask_i), fits = every bit of
// omask_i equal to the sign (the quotient fits nw bits). Both are OR trees over groups of gs
// bits; with the shifter split, the group results are registered in the middle.
Expr stk_term(const Module& m, int lo, int n) {
  const Expr e = slice(m.ref("acc_q"), lo, n) & slice(m.ref("smask_i"), lo, n);
  return n == 1 ? e : ex::red_or(e);
}
Expr fit_term(const Module& m, const LaneWidths& w, int lo, int n) {
  const Expr sgn = bit(m.ref("acc_q"), w.aw - 1);
  return ex::red_nor(slice(m.ref("omask_i"), lo, n) &
                     (slice(m.ref("acc_q"), lo, n) ^ ex::repl(n, sgn)));
}
template <class Term>
Expr groups(Module& m, const LaneWidths& w, const std::string& name, int width, Term term) {
  std::vector<Expr> parts;
  const int n_g = (width + w.gs - 1) / w.gs;
  for (int g = n_g - 1; g >= 0; --g) {
    const int lo = g * w.gs;
    parts.push_back(term(lo, std::min(w.gs, width - lo)));
  }
  const Expr g = m.wire(name, n_g, "per group of " + std::to_string(w.gs) + " bits");
  m.assign(g, cat(std::move(parts)));
  return g;
}

// The shifter and the sticky / fits trees; returns z, sticky and fits (empty when no saturation).
std::vector<Expr> lane_shift(Module& m, const CoreConfig& c, const LaneWidths& w) {
  m.section("Shift: z = {acc, 0} >>> R, so z[" + std::to_string(w.aw) + ":1] = floor(acc / 2^R)");
  m.section("and z[0] = bit R-1 of acc (0 when R = 0)");
  const Expr ext = m.wire("ext", w.ew, "", true);
  m.assign(ext, cat({m.ref("acc_q"), lit(1, 0)}));
  const auto stk = [&](int lo, int n) { return stk_term(m, lo, n); };
  const auto fit = [&](int lo, int n) { return fit_term(m, w, lo, n); };
  Expr z, sticky, fits;
  if (c.pipe_shift2()) {
    std::vector<Flop> ff;
    const Expr z1 = m.wire("z1", w.ew, "", true);
    shift_stages(m, w, ext, w.rw - 1, w.rl, z1);
    const Expr z1s = stage(m, ff, z1, true);
    const Expr stk1 = stage(m, ff, groups(m, w, "stk1", w.aw, stk), true);
    Expr fit1;
    if (w.sat()) fit1 = stage(m, ff, groups(m, w, "fit1", w.aw - 1, fit), true);
    m.flops(ff, "end of the first shifter half");
    z = m.wire("z", w.ew, "", true);
    shift_stages(m, w, z1s, w.rl - 1, 0, z);
    sticky = m.wire("sticky", 1, "a bit below R-1 is set");
    m.assign(sticky, stk1.width() == 1 ? stk1 : ex::red_or(stk1));
    if (w.sat()) {
      fits = m.wire("fits", 1, "the quotient fits " + std::to_string(w.nw) + " signed bits");
      m.assign(fits, fit1.width() == 1 ? fit1 : ex::red_and(fit1));
    }
  } else {
    z = m.wire("z", w.ew, "", true);
    shift_stages(m, w, ext, w.rw - 1, 0, z);
    sticky = m.wire("sticky", 1, "a bit below R-1 is set");
    m.assign(sticky, stk(0, w.aw));  // one group: the whole accumulator
    if (w.sat()) {
      fits = m.wire("fits", 1, "the quotient fits " + std::to_string(w.nw) + " signed bits");
      m.assign(fits, fit(0, w.aw - 1));
    }
  }
  std::vector<Flop> ff;
  z = stage(m, ff, z, c.pipe_shift());
  sticky = stage(m, ff, sticky, c.pipe_shift());
  if (w.sat()) fits = stage(m, ff, fits, c.pipe_shift());
  if (!ff.empty()) m.flops(ff, "end of the shifter");
  return {z, sticky, fits};
}

// Round: q = floor quotient saturated to nw bits, the +1 decision; returns qn and inc.
std::vector<Expr> lane_round(Module& m, const CoreConfig& c, const LaneWidths& w,
                             const std::vector<Expr>& zsf) {
  const Expr &z = zsf[0], &sticky = zsf[1], &fits = zsf[2];
  const int aw = w.aw, nw = w.nw;
  m.section("Round: q = floor quotient saturated to " + std::to_string(nw) +
            " bits, + 1 by the mode (half bit h, sticky t)");
  const Expr qf = m.wire("qf", aw, "floor(acc / 2^R)");
  m.assign(qf, slice(z, 1, aw));
  const Expr h = m.wire("h", 1, "bit R-1 of acc");
  m.assign(h, bit(z, 0));
  const Expr neg = m.wire("neg", 1, "acc < 0");
  m.assign(neg, bit(z, aw));
  const Expr qn = m.wire("qn", nw, "qf, saturated: the clamp result is the same");
  if (w.sat()) {
    m.assign(m.wire("unused_qf", 1, "above the saturated width: fits decides"),
             ex::red_xor(slice(qf, nw, aw - nw)));
    m.assign(qn, mux(fits, slice(qf, 0, nw), cat({neg, ex::repl(nw - 1, ~neg)})));
  } else {
    m.assign(qn, ex::sext(qf, nw));
  }
  const Expr t_or_odd = m.wire("t_or_odd", 1, "half_even: above the half, or a tie with q odd");
  m.assign(t_or_odd, sticky | bit(qf, 0));
  const Expr t_or_pos = m.wire("t_or_pos", 1, "half_away: above the half, or a tie with acc >= 0");
  m.assign(t_or_pos, sticky | ~neg);
  const Expr inc = m.reg("inc", 1);
  m.always_comb({case_(m.ref("round_i"), {CaseArm{{lit(2, 0)}, {assign(inc, lit(1, 0))}},
                                          CaseArm{{lit(2, 1)}, {assign(inc, h)}},
                                          CaseArm{{lit(2, 2)}, {assign(inc, h & t_or_odd)}},
                                          CaseArm{{}, {assign(inc, h & t_or_pos)}}})});
  std::vector<Flop> ff;
  const Expr qn_s = stage(m, ff, qn, c.pipe_sat());
  const Expr inc_s = stage(m, ff, inc, c.pipe_sat());
  if (!ff.empty()) m.flops(ff, "saturated quotient and the +1 decision");
  return {qn_s, inc_s};
}

// Clamp decisions beside the +1, and the clamp.
void lane_clamp(Module& m, const CoreConfig& c, const LaneWidths& w, const Expr& qn,
                const Expr& inc) {
  const int nw = w.nw, yw = w.yw;
  m.section("Clamp decisions beside the +1: rq = qn + inc against lo (= min(lo, hi)) and hi by");
  m.section("comparing qn with lo or lo - 1 and hi or hi + 1 (per-job constants), chosen by inc;");
  m.section("signed " + std::to_string(nw + 1) +
            "-bit values compared unsigned with the top bit flipped");
  const Expr qn_u = m.wire("qn_u", nw + 1, "qn, sign-extended, top bit flipped");
  m.assign(qn_u, cat({~bit(qn, nw - 1), qn}));
  const Expr rq = m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign(rq, slice(qn, 0, yw) + zext(inc, yw));
  const Expr below = m.wire("below", 1, "qn + inc < lo");
  m.assign(below, mux(inc, ex::lt(qn_u, m.ref("lom1_i")), ex::lt(qn_u, m.ref("lox_i"))));
  const Expr above = m.wire("above", 1, "qn + inc > hi");
  m.assign(above, mux(inc, ~ex::lt(qn_u, m.ref("hix_i")), ~ex::lt(qn_u, m.ref("hip1_i"))));
  std::vector<Flop> ff;
  const Expr rqs = stage(m, ff, rq, c.pipe_round());
  const Expr blw = stage(m, ff, below, c.pipe_round());
  const Expr abv = stage(m, ff, above, c.pipe_round());
  if (!ff.empty()) m.flops(ff, "end of rounding");

  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  const Expr y = m.reg("y_q", yw);
  m.seq({assign(y, mux(blw, m.ref("lo_i"), mux(abv, m.ref("hi_i"), rqs)))});
  m.assign(m.ref("y_o"), y);
}

}  // namespace

Module build_lane(const CoreConfig& c, const Variant& v) {
  const LaneWidths w(c, v);
  Module m;
  m.name = c.name + "_lane";
  m.description = lane_description(c, v, w);
  lane_ports(m, v, w);
  Expr acc_d;
  if (v.dec) {
    // The multiply-add below is t * gamma + beta; the chain in front of it makes t.
    acc_d = decomposed_front(m, c, c.pipe_xbar());
  } else {
    lane_mac(m, c, w);
    acc_d = m.ref("acc_d");
  }
  const Expr acc = m.reg("acc_q", w.aw);
  if (c.xilinx_attrs()) m.attr_last("use_dsp = \"yes\"");
  m.flops({{acc, acc_d, {}}});
  const auto zsf = lane_shift(m, c, w);
  const auto qi = lane_round(m, c, w, zsf);
  lane_clamp(m, c, w, qi[0], qi[1]);
  return m;
}

}  // namespace normcore::gen::core
