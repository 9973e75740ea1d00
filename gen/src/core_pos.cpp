// The core's position modules: <n>_step (set-up divider) and <n>_chan (the lanes' channels).
#include <algorithm>

#include "core_internal.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {
using U = std::uint64_t;

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
  m.in("clk_i", 1);
  const Expr en = m.in("en_i", 1, "a beat, or the load");
  const Expr ld = m.in("ld_i", 1, "with en_i: load the packet start (c0 = 0) instead of a step");
  const Expr kc = m.in("kc0_i", gw, a > 0 ? "k / L" : "k = L mod C");
  const Expr kw = m.in("kw0_i", gw + 1, a > 0 ? "(k - C) / L" : "k - C");
  const Expr c0 = m.out("c0_o", cw);
  const Expr c_q = m.reg("c_q", gw, a > 0 ? "c0 / L" : "c0");
  const Expr add = m.wire("c_add", gw);
  m.assign(add, c_q + kc);
  const Expr sub = m.wire("c_sub", gw + 1, "c0 + k - C: top bit set when negative");
  m.assign(sub, zext(c_q, gw + 1) + kw);
  const Expr nx = m.wire("c_nx", gw);
  m.assign(nx, mux(~bit(sub, gw), slice(sub, 0, gw), add));
  m.seq({if_(en, {assign(c_q, mux(ld, lit(gw, 0), nx))})});
  m.assign(c0, a > 0 ? cat({c_q, lit(a, 0)}) : c_q);
  if (L > 1) {
    std::vector<Expr> d;
    for (int i = L - 1; i >= 1; --i) d.push_back(lit(p, static_cast<U>(i)));
    m.assign(m.out("d_o", (L - 1) * p, "d_i = i of lanes 1..L-1, lane 1 in the low bits"), cat(d));
  }
  return m;
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------
Module build_step(const CoreConfig& c) {
  if (pos_fixed_nhwc(c)) return build_step_nhwc(c);
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
    md.in("sk2_i", w.ml + 1, "2(S - k_r)");
    md.in("skr_i", w.ml + 1, "max(0, S - 2k_r)");
  }
  md.in("stride_i", w.hw, "S");
  md.in("sle_i", 1, "S <= L: the start's neg");
  md.in("t2l_i", w.lw + 1, "3L - S when S < 2L, else L");
  md.in("t4_i", w.lw + 1, "3L - 2S when 2S <= 3L, else 0 (lo >= 1 at a wrap: never <= 0)");
  md.in("remw_i", w.W, "S - L: rem's step when c0 moves on");
  md.in("remw1_i", w.W - w.lw, "(S - L) high part + 1");
  if (w.hb > 2) {
    md.in("t3_i", w.lw + 1, "2^lw + L - (S - L)_low: a wrap after lo >= t3 carries into h");
    md.in("sz_i", 1, "S's high part is 0");
    md.in("s1_i", 1, "S's high part is 1");
    md.in("rz0_i", 1, "(S - L) high part is 0");
    md.in("ro0_i", 1, "(S - L) high part is 1");
    md.in("rz1_i", 1, "(S - L) high part + 1 is 0");
  }
  md.in("kc0_i", w.cw, "k_c: c0's step before the carry");
  md.in("kw0_i", w.cw + 1, "k_c - C");
  md.out("c0_o", w.cw);
  if (w.L > 1) md.out("d_o", (w.L - 1) * w.p, "d_i of lanes 1..L-1, lane 1 in the low bits");
}

// rem's high part h in segments of at most kSeg bits (hb > 2): short carry chains only.
constexpr int kSeg = 6;
int hsegs(const ChanWidths& w) {
  return w.hb > 2 ? (w.hb + kSeg - 1) / kSeg : 1;
}
// Segment k of the high part of a value v (a name) whose high part starts at bit `base`;
// bits at or above v's width are 0.
Expr hseg(const Expr& v, int base, const ChanWidths& w, int k) {
  const int lo = base + k * kSeg, n = std::min(kSeg, w.hb - k * kSeg);
  const int have = std::min(n, v.width() - lo);
  if (have <= 0) return lit(n, 0);
  return have == n ? slice(v, lo, n) : zext(slice(v, lo, have), n);
}

// S >= L, hb > 2: h's segments and the flags of h. Segment k decrements when pb and segments 0..k-1
// are 0: dz<k>_q, registered every cycle from the segments (so a cycle late), is fresh when pb is
// set, since h changes at most every other beat (a borrow leaves lo >= 2^lw - L > L, so the next
// beat borrows nothing, and a reload clears pb): the beat that set pb left h unchanged, so h_q a
// cycle ago is h_q now. The same holds for h2_q (h == 2). The flags the beats read are exact
// registers: hiz_q = (h - pb == 0) and hone_q = (h == 1, exact while pb = 0), reloaded with
// per-job constants, and on a decrement beat: pb -> hone_q = h2_q; a borrow -> hiz_q = hone_q.
// Adds the updates to ld / wrap / dec / always; returns hiz_q.
Expr chan_hsegs(Module& md, const ChanWidths& w, Block& ld, Block& wrap, Block& dec,
                Block& always) {
  const int n = hsegs(w), lw = w.lw;
  const Expr stride = md.ref("stride_i"), wc = md.ref("wc_q"), pb = md.ref("pb_q");
  const Expr remw = md.ref("remw_i"), r1 = md.ref("remw1_i");
  std::vector<Expr> segz;  // segment k == 0 (of the registers)
  for (int k = 0; k < n; ++k) {
    const int sw = std::min(kSeg, w.hb - k * kSeg);
    const Expr sg = md.reg(idx("h", k) + "_q", sw,
                           "rem's high part, bits " + std::to_string(k * kSeg) + ".." +
                               std::to_string(k * kSeg + sw - 1));
    ld.push_back(assign(sg, hseg(stride, lw, w, k)));
    wrap.push_back(assign(sg, mux(wc, hseg(r1, 0, w, k), hseg(remw, lw, w, k))));
    Expr en = pb;
    if (k > 0) {
      const std::string below = k == 1 ? "h_0" : "h_0 .. h_" + std::to_string(k - 1);
      const Expr dz = md.reg(idx("dz", k) + "_q", 1, below + " == 0, a cycle late");
      Expr all = segz[0];
      for (int j = 1; j < k; ++j) all = all & segz[static_cast<std::size_t>(j)];
      always.push_back(assign(dz, all));
      en = pb & dz;
    }
    // sg - en as an add of en's copies: no hold branch, so the flops' enable stays en_i alone
    // (a hold would make synthesis fold pb and dz into the enable, deep behind ld_i).
    dec.push_back(assign(sg, sg + ex::repl(sw, en)));
    segz.push_back(ex::eq(sg, lit(sw, 0)));
  }
  const int w0 = std::min(kSeg, w.hb);
  Expr two = ex::eq(md.ref("h_0_q"), lit(w0, 2));
  for (int j = 1; j < n; ++j) two = two & segz[static_cast<std::size_t>(j)];
  const Expr h2 = md.reg("h2_q", 1, "h == 2, a cycle late");
  always.push_back(assign(h2, two));
  const Expr hone = md.reg("hone_q", 1, "h == 1 (exact while pb_q = 0)");
  const Expr hiz = md.reg("hiz_q", 1, "h - pb == 0 (exact)");
  ld.push_back(assign(hone, md.ref("s1_i")));
  ld.push_back(assign(hiz, md.ref("sz_i")));
  wrap.push_back(assign(hone, mux(wc, md.ref("rz0_i"), md.ref("ro0_i"))));
  wrap.push_back(assign(hiz, mux(wc, md.ref("rz1_i"), md.ref("rz0_i"))));
  dec.push_back(if_(pb, {assign(hone, h2)}));
  dec.push_back(if_(bit(md.ref("lo_sub"), lw), {assign(hiz, hone)}));
  return hiz;
}

// S >= L: rem as a narrow low part and a high part with a pending borrow. Returns the update of
// lo, h, pb, neg and c (the c0 register) for one beat or the load; per-cycle updates to `always`.
Stmt chan_rem(Module& md, const ChanWidths& w, Block& always) {
  const int lw = w.lw, hb = w.hb, hw = w.hw;
  md.section("S >= L: rem, the elements left in lane 0's channel, as rem = (h - pb) * 2^" +
             std::to_string(lw) + " + lo:");
  md.section("the borrow of a step's low part waits a beat in pb (no wide carry chain into a mux)");
  const Expr lo = md.reg("lo_q", lw);
  const Expr pb = md.reg("pb_q", 1, "borrow pending: h is one too high");
  const Expr neg = md.reg("neg_q", 1, "rem <= L: c0 moves on with this beat");
  const Expr remw = md.ref("remw_i"), stride = md.ref("stride_i");
  const Expr lo_sub = md.wire("lo_sub", lw + 1, "lo - L: top bit the borrow");
  md.assign(lo_sub, zext(lo, lw + 1) - lit(lw + 1, static_cast<U>(w.L)));
  const int aw = hb > 2 ? lw : lw + 1;  // hb > 2: the carry comes from wc_q
  const Expr lo_add = md.wire("lo_add", aw, "lo + (S - L)_low (after a wrap)");
  md.assign(lo_add, zext(lo, aw) + zext(slice(remw, 0, lw), aw));
  const Expr s_lo = hw >= lw ? slice(stride, 0, lw) : zext(stride, lw);
  const Expr c_q = ex::ref("c_q", w.cw);
  Block ld{assign(lo, s_lo), assign(pb, lit(1, 0)), assign(neg, md.ref("sle_i")),
           assign(c_q, lit(w.cw, 0))};
  Block wrap{assign(lo, slice(lo_add, 0, lw)), assign(pb, lit(1, 0))};
  Block dec{assign(lo, slice(lo_sub, 0, lw)), assign(pb, bit(lo_sub, lw))};
  const Expr hi_zero = md.wire("hi_zero", 1, "h - pb == 0: rem < 2^" + std::to_string(lw));
  if (hb <= 2) {
    const Expr wrap_cy = bit(lo_add, lw);
    const Expr h = md.reg("h_q", hb);
    md.assign(hi_zero,
              hb == 1 ? ex::eq(h, pb) : mux(pb, ex::eq(h, lit(hb, 1)), ex::eq(h, lit(hb, 0))));
    const Expr h_dec = md.wire("h_dec", hb);
    md.assign(h_dec, h - zext(pb, hb));
    ld.push_back(assign(h, hw > lw ? zext(slice(stride, lw, hw - lw), hb) : lit(hb, 0)));
    wrap.push_back(assign(h, mux(wrap_cy, md.ref("remw1_i"), slice(remw, lw, hb))));
    dec.push_back(assign(h, h_dec));
  } else {
    // The wrap's carry into h, a beat ahead: the beat before a wrap has no wrap itself (else
    // S < 2L and the wrap's lo + S - L < 2^lw: no carry) and lo - L there without a borrow, so
    // the carry is lo >= t3 = 2^lw + L - (S - L)_low.
    const Expr wc = md.reg("wc_q", 1, "the next wrap carries into h");
    ld.push_back(assign(wc, lit(1, 0)));
    wrap.push_back(assign(wc, lit(1, 0)));
    dec.push_back(assign(wc, ex::ge(zext(lo, lw + 1), md.ref("t3_i"))));
    md.assign(hi_zero, chan_hsegs(md, w, ld, wrap, dec, always));
  }
  // After a wrap (rem <= L, so rem = lo) the next rem is rem + S - L: <= L when rem <= 2L - S.
  // That compare is a register too (nle_q), made a beat ahead on the new lo: after the load lo =
  // S (read only when S <= L: sle), after a wrap lo + S - L <= 2L - S is lo <= 3L - 2S (t4; no
  // overflow: lo <= L, S - L < L), after a step lo - L <= 2L - S is lo <= 3L - S (t2l; S >= 2L:
  // 0 and L, never true at a wrap, where lo = rem >= 1). Otherwise rem - L <= L when h - pb = 0
  // and lo <= 2L.
  const Expr nle = md.reg("nle_q", 1, "lo <= 2L - S (read at a wrap)");
  ld.push_back(assign(nle, md.ref("sle_i")));
  wrap.push_back(assign(nle, ex::le(zext(lo, lw + 1), md.ref("t4_i"))));
  dec.push_back(assign(nle, ex::le(zext(lo, lw + 1), md.ref("t2l_i"))));
  const Expr neg_nx = md.wire("neg_nx", 1, "the next rem <= L");
  md.assign(neg_nx, mux(neg, nle, hi_zero & ex::le(lo, lit(lw, 2ULL * static_cast<U>(w.L)))));
  return if_(md.ref("ld_i"), std::move(ld),
             {if_(neg, std::move(wrap), std::move(dec)), assign(neg, neg_nx),
              assign(c_q, ex::ref("c_nx", w.cw))});
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
    const Expr q_nx = md.wire(idx("q_nx", i), ml);
    if (i == 0) {  // lane 0's carry (c0's too) is a register, computed a beat ahead
      cy0 = md.reg("cy_0_q", 1, "q_0 + k_r >= S (0 at the start: q_0 = 0 < S - k_r)");
      md.assign(q_nx, mux(cy0, q - sk, q + kr));
      // q_nx >= S - k_r without q_nx: q >= 2(S - k_r) after a carry, q >= S - 2k_r without.
      const Expr qx = zext(q, ml + 1);
      const Expr cy_nx = md.wire("cy0_nx", 1, "lane 0's next carry");
      md.assign(cy_nx, mux(cy0, ex::ge(qx, md.ref("sk2_i")), ex::ge(qx, md.ref("skr_i"))));
      load.insert(load.end(), {assign(q, lit(ml, 0)), assign(cy0, lit(1, 0))});
      step.insert(step.end(), {assign(q, q_nx), assign(cy0, cy_nx)});
      continue;
    }
    const Expr cy = md.wire(idx("cy", i), 1, "q_" + std::to_string(i) + " + k_r >= S");
    md.assign(cy, ex::ge(q, sk));
    md.assign(q_nx, mux(cy, q - sk, q + kr));
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
  if (pos_fixed_nhwc(c)) return build_chan_nhwc(c);
  const ChanWidths w(c);
  Module md;
  md.name = c.name + "_chan";
  md.description = {
      "Positions of the lanes' elements for the next beat: lane 0's channel c0 (< C) and each",
      "lane's channel offset d_i = u_i - c0 (< L; the table window u = c0 .. c0 + L - 1).",
      "With S the stride of a channel (HW for nchw, 1 for nhwc) and r0 lane 0's offset in c0:",
      "  S >= L: rem = S - r0 (elements left in c0, 1..S): a narrow low part and a high part",
      "          (in short segments with registered zero flags, its borrow a beat late); a beat",
      "          crosses at most one channel boundary: d_i = (rem <= i), and c0 moves on when",
      "          rem <= L (neg, a register computed a beat ahead with narrow compares).",
      "  S <  L: every lane keeps q_i = (r0 + i) mod S and d_i (both narrow); a beat adds",
      "          k_r = L mod S to q_i with carry cy_i = (q_i >= S - k_r), d_i += cy_i - cy_0,",
      "          and c0 += (L div S) + cy_0.",
      "c0: two adders off the register (c0 + k_c + cy, the same less C; cy a register), a select.",
      "A packet starts at element 0 (c0 = 0, rem = S, q_i and d_i saved from the core's walker)."};
  chan_ports(md, w);
  const Expr cy0w = ex::ref("cy0", 1);
  Block save;
  Block upd{chan_rem(md, w, save)};
  Expr cy0 = md.ref("neg_q");
  std::vector<Expr> dcat;
  if (w.L > 1) {
    dcat = chan_small(md, w, upd, save);
    // c0's carry as a register of its own (no select in front of c0's adders): cy_0 or neg.
    const Expr small = md.ref("small_i");
    const Expr cyc = md.reg("cyc_q", 1, "c0's carry: cy_0_q when S < L, else neg_q");
    upd.push_back(if_(md.ref("ld_i"), {assign(cyc, ~small & md.ref("sle_i"))},
                      {assign(cyc, mux(small, md.ref("cy0_nx"), md.ref("neg_nx")))}));
    cy0 = cyc;
  }
  md.section("c0");
  const Expr c_q = md.reg("c_q", w.cw);
  md.wire("cy0", 1, "c0 takes the step with a carry (a register either way)");
  md.assign(cy0w, cy0);
  const Expr add = md.wire("c_add", w.cw, "c0 + k_c + cy");
  md.assign(add, c_q + md.ref("kc0_i") + zext(cy0w, w.cw));
  const Expr sub = md.wire("c_sub", w.cw + 1, "c0 + k_c + cy - C: top bit set when negative");
  md.assign(sub, zext(c_q, w.cw + 1) + md.ref("kw0_i") + zext(cy0w, w.cw + 1));
  md.assign(md.wire("c_nx", w.cw), mux(~bit(sub, w.cw), slice(sub, 0, w.cw), add));
  Block ff{if_(md.ref("en_i"), std::move(upd))};
  for (auto& s : save) ff.push_back(std::move(s));
  md.seq(ff);
  md.assign(md.ref("c0_o"), c_q);
  if (w.L > 1) md.assign(md.ref("d_o"), cat(dcat));
  return md;
}

}  // namespace normcore::gen::core
