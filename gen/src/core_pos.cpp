// The core's position modules: <n>_step (set-up divider) and <n>_chan (the lanes' channels).
#include <algorithm>

#include "core_internal.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {
using U = std::uint64_t;
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
  const Expr rst = m.in("rst_ni", 1);
  const Expr start = m.in("start_i", 1, "begin; the inputs below hold from the next cycle on");
  const Expr stride = m.in("stride_i", sb, hw > nb ? "S, low bits" : "S >= 1");
  const Expr s_big = hw > nb ? m.in("s_big_i", 1, "S >= 2^" + std::to_string(nb)) : Expr{};
  const Expr chm1 = m.in("chm1_i", cw, "C - 1");
  const Expr ge0 = m.in("ge0_i", 1, "L >= S: the first compare");
  const Expr done = m.out("done_o", 1, "rem_o and quo_o are final");
  const Expr rem = m.out("rem_o", sb, "L mod S (< L)");
  const Expr quo = m.out("quo_o", cw, "(L div S) mod C");
  const Expr run = m.reg("run_q", 1, "subtracting");
  const Expr r = m.reg("r_q", nb, "remainder, <= L");
  const Expr q = m.reg("q_q", nb, "quotient mod C, <= L");
  const Expr first = m.reg("first_q", 1, "first iteration: the compare is ge0_i");
  const Expr rge = m.reg("rge_q", 1, "r_q >= S, computed a cycle early as r >= 2S");
  const Expr r_ge = m.wire("r_ge", 1, "r_q >= S");
  m.assign(r_ge, mux(first, ge0, rge));
  const Expr q_wrap = m.wire("q_wrap", 1, "q_q == C - 1");
  m.assign(q_wrap, ex::eq(zext(q, qw), zext(chm1, qw)));
  const Expr ge2 = ex::ge(zext(r, nb + 1), cat({zext(stride, nb), lit(1, 0)}));
  m.seq({if_(ex::lnot(rst), {assign(run, lit(1, 0))},
             {if_(start, {assign(run, lit(1, 1))}, {if_(~r_ge, {assign(run, lit(1, 0))})})}),
         if_(start, {assign(r, lit(nb, static_cast<U>(c.lanes))), assign(q, lit(nb, 0))},
             {if_(run & r_ge, {assign(r, r - zext(stride, nb)),
                               assign(q, mux(q_wrap, lit(nb, 0), q + lit(nb, 1)))})}),
         assign(first, start), assign(rge, hw > nb ? ~s_big & ge2 : ge2)});
  m.assign(done, ~run);
  m.assign(rem, slice(r, 0, sb));
  m.assign(quo, cw >= nb ? zext(q, cw) : slice(q, 0, cw));
  return m;
}

// ---------------------------------------------------------------------------------------------
namespace {

// Widths of <n>_chan.
struct ChanWidths {
  int L, hw, cw, nb;
  int ml;  // q (offset inside a channel when S < L), k_r, S - k_r
  int p;   // d (channel offset of a lane from lane 0), < L
  int lw;  // low part of rem: holds 2L
  int W;   // rem and its steps
  int hb;  // high part of rem
  explicit ChanWidths(const CoreConfig& c)
      : L(c.lanes),
        hw(c.inner_bits),
        cw(c.chan_bits()),
        nb(c.lane_count_bits()),
        ml(c.chan_low_bits()),
        p(c.bank_sel_bits()),
        lw(nb + 1),
        W(std::max(hw, nb + 1) + 1),
        hb(W - lw) {}
};

void chan_ports(Module& md, const ChanWidths& w) {
  md.in("clk_i", 1);
  md.in("en_i", 1, "a beat, or the load");
  md.in("ld_i", 1, "with en_i: load the packet start instead of a step");
  if (w.L > 1) {
    md.in("small_i", 1, "S < L");
    md.in("sv_i", w.L - 1, "lane i (1..L-1) saves the walker's position as its start");
    md.in("wr_i", w.ml, "walker: r of element i");
    md.in("wd_i", w.p, "walker: i div S (not wrapped at C)");
    md.in("kr_i", w.ml, "k_r = L mod S (S < L)");
    md.in("sk_i", w.ml, "S - k_r (S < L)");
  }
  md.in("stride_i", w.hw, "S");
  md.in("sle_i", 1, "S <= L: the start's neg");
  md.in("t2_i", w.lw, "2L - S when S < 2L, else 0 (rem >= 1: never <= 0)");
  md.in("remw_i", w.W, "S - L: rem's step when c0 moves on");
  md.in("remw1_i", w.W - w.lw, "(S - L) high part + 1");
  md.in("kc0_i", w.cw, "c0 step without a carry");
  md.in("kc1_i", w.cw, "c0 step with a carry");
  md.in("kw0_i", w.cw + 1, "kc0 - C");
  md.in("kw1_i", w.cw + 1, "kc1 - C");
  md.out("c0_o", w.cw);
  if (w.L > 1) md.out("d_o", (w.L - 1) * w.p, "d_i of lanes 1..L-1, lane 1 in the low bits");
}

// S >= L: rem as a narrow low part and a high part with a pending borrow. Returns the update of
// lo, h, pb, neg and c (the c0 register) for one beat or the load.
Stmt chan_rem(Module& md, const ChanWidths& w, const Expr& cy0) {
  const int lw = w.lw, hb = w.hb, hw = w.hw;
  md.section("S >= L: rem, the elements left in lane 0's channel, as rem = (h - pb) * 2^" +
             std::to_string(lw) + " + lo:");
  md.section("the borrow of a step's low part waits a beat in pb (no wide carry chain into a mux)");
  const Expr lo = md.reg("lo_q", lw);
  const Expr h = md.reg("h_q", hb);
  const Expr pb = md.reg("pb_q", 1, "borrow pending: h_q is one too high");
  const Expr neg = md.reg("neg_q", 1, "rem <= L: c0 moves on with this beat");
  const Expr remw = md.ref("remw_i"), stride = md.ref("stride_i");
  const Expr lo_sub = md.wire("lo_sub", lw + 1, "lo - L: top bit the borrow");
  md.assign(lo_sub, zext(lo, lw + 1) - lit(lw + 1, static_cast<U>(w.L)));
  const Expr lo_add =
      md.wire("lo_add", lw + 1, "lo + (S - L)_low: top bit the carry (after a wrap)");
  md.assign(lo_add, zext(lo, lw + 1) + zext(slice(remw, 0, lw), lw + 1));
  const Expr h_dec = md.wire("h_dec", hb);
  md.assign(h_dec, h - zext(pb, hb));
  const Expr hi_zero = md.wire("hi_zero", 1, "h - pb == 0: rem < 2^" + std::to_string(lw));
  md.assign(hi_zero,
            hb == 1 ? ex::eq(h, pb) : mux(pb, ex::eq(h, lit(hb, 1)), ex::eq(h, lit(hb, 0))));
  // After a wrap (rem <= L, so rem = lo) the next rem is rem + S - L: <= L when rem <= 2L - S (a
  // per-job constant, so a register-to-register compare and no adder on this path). Otherwise
  // rem - L <= L when h - pb = 0 and lo <= 2L.
  const Expr neg_nx = md.wire("neg_nx", 1, "the next rem <= L");
  md.assign(neg_nx, mux(neg, ex::le(lo, md.ref("t2_i")),
                        hi_zero & ex::le(lo, lit(lw, 2ULL * static_cast<U>(w.L)))));
  const Expr s_lo = hw >= lw ? slice(stride, 0, lw) : zext(stride, lw);
  const Expr s_hi = hw > lw ? zext(slice(stride, lw, hw - lw), hb) : lit(hb, 0);
  const Expr c_q = ex::ref("c_q", w.cw);
  return if_(
      md.ref("ld_i"),
      {assign(lo, s_lo), assign(h, s_hi), assign(pb, lit(1, 0)), assign(neg, md.ref("sle_i")),
       assign(c_q, lit(w.cw, 0))},
      {if_(neg,
           {assign(lo, slice(lo_add, 0, lw)),
            assign(h, mux(bit(lo_add, lw), md.ref("remw1_i"), slice(remw, lw, hb))),
            assign(pb, lit(1, 0))},
           {assign(lo, slice(lo_sub, 0, lw)), assign(h, h_dec), assign(pb, bit(lo_sub, lw))}),
       assign(neg, neg_nx),
       assign(c_q, mux(cy0, ex::ref("c_nx_1", w.cw), ex::ref("c_nx_0", w.cw)))});
}

// S < L: per lane q_i and d_i. Adds the load-or-step statement to `upd` and the start saves to
// `save`; returns the lanes' d outputs (lane L-1 first).
std::vector<Expr> chan_small(Module& md, const ChanWidths& w, Block& upd, Block& save) {
  const int ml = w.ml, p = w.p;
  md.section("S < L: per lane q_i = (r0 + i) mod S and d_i");
  const Expr sk = md.ref("sk_i"), kr = md.ref("kr_i");
  const Expr lo = md.ref("lo_q"), neg = md.ref("neg_q");
  Block load, step;
  std::vector<Expr> dcat;
  Expr cy0;
  for (int i = 0; i < w.L; ++i) {
    const Expr q = md.reg(idx("q", i) + "_q", ml);
    const Expr cy = md.wire(idx("cy", i), 1, "q_" + std::to_string(i) + " + k_r >= S");
    md.assign(cy, ex::ge(q, sk));
    const Expr q_nx = md.wire(idx("q_nx", i), ml);
    md.assign(q_nx, mux(cy, q - sk, q + kr));
    if (i == 0) {
      cy0 = cy;
      load.push_back(assign(q, lit(ml, 0)));
      step.push_back(assign(q, q_nx));
      continue;
    }
    const Expr d = md.reg(idx("d", i) + "_q", p);
    const Expr q0 = md.reg(idx("q0", i) + "_q", ml, "start");
    const Expr d0 = md.reg(idx("d0", i) + "_q", p);
    const Expr d_nx = md.wire(idx("d_nx", i), p);
    md.assign(d_nx, d + zext(cy, p) - zext(cy0, p));
    load.push_back(assign(q, q0));
    load.push_back(assign(d, d0));
    step.push_back(assign(q, q_nx));
    step.push_back(assign(d, d_nx));
    save.push_back(
        if_(bit(md.ref("sv_i"), i - 1), {assign(q0, md.ref("wr_i")), assign(d0, md.ref("wd_i"))}));
    // Output: the small-S offset, or (S >= L) 1 for the lanes past the boundary.
    const Expr d_out = md.wire(idx("d_out", i), p);
    const Expr big = neg & ex::le(lo, lit(w.lw, static_cast<U>(i)));
    md.assign(d_out, mux(md.ref("small_i"), d, zext(big, p)));
    dcat.insert(dcat.begin(), d_out);
  }
  upd.push_back(if_(md.ref("ld_i"), std::move(load), std::move(step)));
  return dcat;
}

}  // namespace

Module build_chan(const CoreConfig& c) {
  const ChanWidths w(c);
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
  chan_ports(md, w);
  const Expr cy0w = ex::ref("cy0", 1);
  Block upd{chan_rem(md, w, cy0w)}, save;
  Expr cy0 = md.ref("neg_q");
  std::vector<Expr> dcat;
  if (w.L > 1) {
    dcat = chan_small(md, w, upd, save);
    cy0 = mux(md.ref("small_i"), md.ref("cy_0"), md.ref("neg_q"));
  }
  md.section("c0");
  const Expr c_q = md.reg("c_q", w.cw);
  md.wire("cy0", 1, "c0 takes the step with a carry");
  md.assign(cy0w, cy0);
  for (int j = 0; j < 2; ++j) {
    const Expr add = md.wire(idx("c_add", j), w.cw);
    md.assign(add, c_q + md.ref("kc" + std::to_string(j) + "_i"));
    const Expr sub = md.wire(idx("c_sub", j), w.cw + 1);
    md.assign(sub, zext(c_q, w.cw + 1) + md.ref("kw" + std::to_string(j) + "_i"));
    const Expr nx = md.wire(idx("c_nx", j), w.cw);
    md.assign(nx, mux(~bit(sub, w.cw), slice(sub, 0, w.cw), add));
  }
  Block ff{if_(md.ref("en_i"), std::move(upd))};
  for (auto& s : save) ff.push_back(std::move(s));
  md.seq(ff);
  md.assign(md.ref("c0_o"), c_q);
  if (w.L > 1) md.assign(md.ref("d_o"), cat(dcat));
  return md;
}

}  // namespace normcore::gen::core
