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
  if (v.dec) {
    stages += "[x*2^f-mean] [*inv_std] [round >>> k1, saturate] [t*gamma+beta] ";
    if (c.pipe_prod()) stages += "[acc] ";
  } else {
    stages += c.pipe_prod() ? "[x*s] [+b] " : "[x*s+b in the DSP] ";
  }
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
  m.in("smask_i", w.aw - 1, "2^(R-1) - 1 (0 when R = 0): the bits below the half bit");
  if (w.sat()) {
    m.in("omask_i", w.aw - 1,
         "bits >= R + " + std::to_string(w.nw - 1) + ": all the sign iff q fits " +
             std::to_string(w.nw) + " bits");
  }
  m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("lo_i", w.yw, "min(lo, hi)");
  m.in("hi_i", w.yw);
  const std::string k = std::to_string(w.yw + 3) + "-bit two's complement";
  m.in("lox_i", w.yw + 3, "-lo, " + k);
  m.in("lom1_i", w.yw + 3, "-(lo - 1), the same");
  m.in("hix_i", w.yw + 3, "-hi, the same");
  m.in("hip1_i", w.yw + 3, "-(hi + 1), the same");
  m.out("y_o", w.yw);
}

// The folded multiply-add, all of it inside the DSP: lo = x * s + b modulo 2^W, W = AW - 1 (the
// width of the wider operand), written as a signed product at its own width (ex::smul) plus b, so
// that Yosys maps the add into SB_MAC16's 32-bit adder (DSP48's post-adder) with the DSP's input
// and output registers. acc's top bit is not computed by the DSP: both operands fit W signed bits,
// so acc[W] = MAJ(sign of the product, sign of b, lo[W-1]) (equal signs: that sign; else no
// overflow: lo's sign), one LUT3 after the DSP. The product's sign is taken as sign(x) ^ sign(s),
// wrong only when the product is 0, where lo = b and the majority is b's sign either way.
// The wires: lo_d (into the DSP's output register) and the two sign bits.
void lane_mac(Module& m, const CoreConfig& c, const LaneWidths& w) {
  Expr x = m.ref("x_i"), s = m.ref("s_i"), b = m.ref("b_i");
  if (c.pipe_xbar()) {
    m.section("Input registers (DSP A/B/C registers)");
    const Expr xq = m.reg("x_q", w.xw), sq = m.reg("s_q", w.sw), bq = m.reg("b_q", w.bw);
    m.flops({{xq, x, {}}, {sq, s, {}}, {bq, b, {}}});
    x = xq, s = sq, b = bq;
  }
  const int W = w.aw - 1, xsw = c.arith.x_signed ? w.xw : w.xw + 1;
  m.section("Multiply-add in the DSP: lo = (x * s + b) mod 2^" + std::to_string(W));
  const Expr x_s = m.wire("x_s", xsw, c.arith.x_signed ? "" : "x, zero-extended", true);
  m.assign(x_s, c.arith.x_signed ? x : zext(x, xsw));
  const Expr s_s = m.wire("s_s", w.sw, "", true);
  m.assign(s_s, s);
  const Expr b_s = m.wire("b_s", W, "", true);
  const Expr lo_d = m.wire("lo_d", W, "", true);
  const Expr bsg_d = m.wire("bsg_d", 1, "sign of b");
  const Expr psg_d = m.wire("psg_d", 1, "sign of x * s (either value when it is 0)");
  // The product at its own width pw (a natively narrow multiplier), then the add of the
  // sign-extended product: Yosys reduces the add's redundant sign bits itself and packs both into
  // SB_MAC16 (with the 32-bit add written as one `x * s + b`, whether the add was packed depended
  // on the order in which Yosys's wreduce visited the two cells).
  const int pw = w.xw + w.sw;  // |x * s| < 2^(pw - 1)
  const Expr prod = m.wire("prod", pw, "exact", true);
  m.assign(prod, ex::smul(x_s, s_s, pw));
  Expr p = prod;
  if (c.pipe_prod()) {
    // The product registered before the add (MULT18X18D's pipeline register; Yosys 0.23 keeps
    // it in the fabric on ECP5), b delayed beside it; the add is then a W-bit carry chain.
    const Expr pq = m.reg("prod_q", pw, "", true),
               bq = m.reg("bp_q", w.bw, "b, beside the product");
    m.flops({{pq, prod, {}}, {bq, b, {}}}, "the multiplier's output register");
    p = pq, b = bq;
    m.assign(psg_d, bit(pq, pw - 1));
  } else {
    m.assign(psg_d, c.arith.x_signed ? bit(x, w.xw - 1) ^ bit(s, w.sw - 1) : bit(s, w.sw - 1));
  }
  m.assign(b_s, w.bw == W ? b : ex::sext(b, W));
  m.assign(lo_d, (pw == W ? p : ex::as_signed(ex::sext(p, W))) + b_s);
  m.assign(bsg_d, bit(b, w.bw - 1));
}

// The folded lane's accumulator: the DSP's output register lo_q and the sign bits beside it;
// acc = {MAJ(psg, bsg, lo[W-1]), lo}.
void lane_acc(Module& m, const CoreConfig& c, const LaneWidths& w) {
  const int W = w.aw - 1;
  const Expr lo = m.reg("lo_q", W, "the DSP's output register", true);
  if (c.xilinx_attrs()) m.attr_last("use_dsp = \"yes\"");
  const Expr bsg = m.reg("bsg_q", 1), psg = m.reg("psg_q", 1);
  m.flops({{lo, m.ref("lo_d"), {}}, {bsg, m.ref("bsg_d"), {}}, {psg, m.ref("psg_d"), {}}});
  const Expr top = bit(lo, W - 1);
  const Expr sg = m.wire("acc_sg", 1, "acc < 0: the majority of the two signs and lo's");
  m.assign(sg, (psg & bsg) | (psg & top) | (bsg & top));
  m.assign(m.wire("acc", w.aw), cat({sg, lo}));
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
  const Expr e = slice(m.ref("acc"), lo, n) & slice(m.ref("smask_i"), lo, n);
  return n == 1 ? e : ex::red_or(e);
}
Expr fit_term(const Module& m, int lo, int n) {
  return ex::red_nor(slice(m.ref("omask_i"), lo, n) &
                     (slice(m.ref("acc"), lo, n) ^ slice(m.ref("fref"), lo, n)));
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
  m.assign(ext, cat({m.ref("acc"), lit(1, 0)}));
  const auto stk = [&](int lo, int n) { return stk_term(m, lo, n); };
  const auto fit = [&](int lo, int n) { return fit_term(m, lo, n); };
  if (w.sat()) {
    // "Every bit from R + nw - 1 up equals the sign" as "equals the bit above it": bit aw-2 is
    // compared with the sign, the bits below with bit aw-2 (the folded lane's sign is a LUT
    // after the DSP; this keeps it off all but one of the compares).
    const Expr acc = m.ref("acc");
    m.assign(m.wire("fref", w.aw - 1, "the bit each bit of acc must equal for q to fit"),
             cat({bit(acc, w.aw - 1), ex::repl(w.aw - 2, bit(acc, w.aw - 2))}));
  }
  Expr z, sticky, fits;
  if (c.pipe_shift2()) {
    std::vector<Flop> ff;
    const Expr z1 = m.wire("z1", w.ew, "", true);
    shift_stages(m, w, ext, w.rw - 1, w.rl, z1);
    const Expr z1s = stage(m, ff, z1, true);
    const Expr stk1 = stage(m, ff, groups(m, w, "stk1", w.aw - 1, stk), true);
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
    m.assign(sticky, stk(0, w.aw - 1));  // one group: the accumulator below its sign
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
  m.section("qn < k is the sign of the " + std::to_string(nw + 2) +
            "-bit sum qn + (-k): one carry chain, no LUT in front of it");
  const Expr rq = m.wire("rq", yw, "qn + inc, low bits: the result when inside [lo, hi]");
  m.assign(rq, slice(qn, 0, yw) + zext(inc, yw));
  // The four compares, each a carry chain straight from the stage's registers; the +1 chooses
  // between them after the register (a mux in front of one shared chain was 15 ns on UP5K).
  const auto cmp = [&](const std::string& name, const char* bound, const std::string& what) {
    const Expr sum = m.wire(name + "_s", nw + 2, "qn - the bound: its sign is qn < the bound");
    m.assign(sum, ex::sext(qn, nw + 2) + m.ref(bound));
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, nw + 1)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, nw + 1));
    return e;
  };
  const Expr bl1 = cmp("lt_lom1", "lom1_i", "qn < lo - 1: below if + 1");
  const Expr bl0 = cmp("lt_lo", "lox_i", "qn < lo: below if + 0");
  const Expr ab1 = cmp("lt_hi", "hix_i", "qn < hi: not above if + 1");
  const Expr ab0 = cmp("lt_hip1", "hip1_i", "qn < hi + 1: not above if + 0");
  std::vector<Flop> ff;
  const Expr rqs = stage(m, ff, rq, c.pipe_round());
  const Expr incs = stage(m, ff, inc, c.pipe_round());
  const Expr b1 = stage(m, ff, bl1, c.pipe_round()), b0 = stage(m, ff, bl0, c.pipe_round());
  const Expr a1 = stage(m, ff, ab1, c.pipe_round()), a0 = stage(m, ff, ab0, c.pipe_round());
  if (!ff.empty()) m.flops(ff, "end of rounding");
  const Expr blw = m.wire("below", 1, "qn + inc < lo");
  m.assign(blw, mux(incs, b1, b0));
  const Expr abv = m.wire("above", 1, "qn + inc > hi");
  m.assign(abv, ~mux(incs, a1, a0));

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
    lane_mac(m, c, w);
    lane_acc(m, c, w);
  }
  const auto zsf = lane_shift(m, c, w);
  const auto qi = lane_round(m, c, w, zsf);
  lane_clamp(m, c, w, qi[0], qi[1]);
  return m;
}

}  // namespace normcore::gen::core
