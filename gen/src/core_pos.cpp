// The core's position modules: <n>_step (set-up divider) and <n>_chan (the lanes' channels).
#include <algorithm>

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

// c0's width: c0 <= C - 1 needs only bits_for(MAX_CHANNELS - 1) bits where the tracker adds c0
// to c_q (--target ice40 not specialised, --target ecp5 with e5_wide); else chan_bits().
int chan_c0_width(const CoreConfig& c) {
  const bool narrow =
      (c.target == "ice40" && !c.specialised()) || (c.target == "ecp5" && e5_wide(c));
  return narrow ? std::max(1, bits_for(c.max_channels - 1)) : c.chan_bits();
}

// ---------------------------------------------------------------------------------------------
Module build_step(const CoreConfig& c) {
  if (pos_fixed_nhwc(c)) return build_step_nhwc(c);
  const int nb = c.lane_count_bits();
  const int hw = c.inner_bits;
  const int cw = c.chan_bits();
  const int sb = std::min(hw, nb);  // S only matters below 2^nb (r <= L < 2^nb)
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
  const Expr chs = m.in("ch_i", cw, "C");
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
  // q_q == C - 1 as q_q + 1 == C on nb + 1 bits (no C - 1 register in the top): C >= 2^(nb+1)
  // (cs_q = 0, a register from ch_i; valid from the first iteration, a cycle after start_i) is
  // never reached (q <= L).
  const Expr q_wrap = m.wire("q_wrap", 1, "q_q == C - 1");
  // q + 1 bit by bit (q_i ^ &q[i-1:0]): LUT logic, not an adder's carry chain (on the UP5K a
  // chain into the equality was the --target ice40 core's worst set-up path)
  std::vector<Expr> qb;
  for (int i = nb; i >= 0; --i) {
    const Expr below = i == 0 ? lit(1, 1) : ex::red_and(slice(q, 0, i));
    qb.push_back(i == nb ? below : bit(q, i) ^ below);
  }
  const Expr qp1 = cat(std::move(qb));
  if (cw > nb + 1) {
    const Expr cs = m.reg("cs_q", 1, "C < 2^" + std::to_string(nb + 1));
    m.seq({assign(cs, ex::eq(slice(chs, nb + 1, cw - nb - 1), lit(cw - nb - 1, 0)))});
    m.assign(q_wrap, cs & ex::eq(qp1, slice(chs, 0, nb + 1)));
  } else {
    m.assign(q_wrap, ex::eq(qp1, zext(chs, nb + 1)));
  }
  // r >= 2S as the carry of r + (2^(nb+1) - 2S): n2s_q, a register from stride_i (valid from
  // start_i on); S >= 2^nb (s_big_i) is masked after the carry.
  const Expr n2s = m.reg("n2s_q", nb + 2, "2^(nb+1) - 2S (S's low bits)");
  const Expr two_s = cat({zext(stride, nb + 1), lit(1, 0)});
  if (c.target == "ice40" && sb <= 6)  // a table of S's low bits: one LUT level, no chain
    m.seq({assign(
        n2s, const_table(stride, sb, nb + 2, [nb](U v) { return (U{1} << (nb + 1)) - 2 * v; }))});
  else
    m.seq({assign(n2s, lit(nb + 2, U{1} << (nb + 1)) - two_s)});
  const Expr ge2s = m.wire("ge2_s", nb + 2, "r + 2^(nb+1) - 2S: bit nb+1 r >= 2S");
  m.assign(ge2s, zext(r, nb + 2) + n2s);
  rtl::sink(m, "unused_ge2_s", {slice(ge2s, 0, nb + 1)});
  const Expr ge2 = bit(ge2s, nb + 1);
  const Expr sub_s = step_operand(m, c, stride, start);
  m.seq({if_(ex::lnot(rst), {assign(run, lit(1, 0))},
             {if_(start, {assign(run, lit(1, 1))}, {if_(~r_ge, {assign(run, lit(1, 0))})})}),
         if_(start, {assign(r, lit(nb, static_cast<U>(c.lanes))), assign(q, lit(nb, 0))},
             {if_(run & r_ge, {assign(r, r - zext(sub_s, nb)),
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
  int cn;  // c_q: c0's width (c0 <= C - 1, chan_c0_width: --target ice40, e5_wide), else cw
  int ml;  // q (offset inside a channel when S < L), k_r, S - k_r
  int p;   // d (channel offset of a lane from lane 0), < L
  int lw;  // low part of rem: holds 2L
  int W;   // rem and its steps
  int hb;  // high part of rem
  // --target ecp5 / ice40: a compare of lo (lw bits) with a constant is LUT logic, not a carry
  // chain (a short chain and its routes cost more than the LUT it folds into); g_i is two
  // registers.
  bool lut_cmp;
  bool e5;  // --target ecp5 only (costs flip-flops): c0's copy for the table
  // --target ecp5 / ice40 (costs flip-flops): h's segment decrements precomputed (hd_k_q)
  bool hd;
  // e5_wide (ecp20): ct_q's sign of its own (ct_sub), lo <= 2L a register (le2_q)
  bool w5;
  bool tl;  // w5 with hb > 2 (ecp22): lo's next values without its adder (lo_tables)
  explicit ChanWidths(const CoreConfig& c)
      : L(c.lanes),
        hw(c.inner_bits),
        cw(c.chan_bits()),
        nb(c.lane_count_bits()),
        cn(chan_c0_width(c)),
        ml(c.chan_low_bits()),
        p(c.bank_sel_bits()),
        lw(nb + 1),
        W(std::max(hw, nb + 1) + 1),
        hb(W - lw),
        lut_cmp(lut_tracker(c)),
        e5(lut_cmp && c.target == "ecp5"),
        hd(lut_cmp),
        w5(e5 && e5_wide(c)),
        tl(w5 && hb > 2) {}
};

void chan_ports(Module& md, const ChanWidths& w) {
  md.in("clk_i", 1);
  md.in("en_i", 1, "a beat, or the load");
  md.in("ld_i", 1, "with en_i: load the packet start instead of a step");
  if (w.L > 1) {
    md.in("small_i", 1, "S < L");
    md.in("sv_i", w.L - 1, "lane i (1..L-1) saves the walker's position as its start");
    md.in("wm_i", w.ml + 1, "walker: 2^(ml+1) - 1 - (S - r) of element i");
    md.in("wd_i", w.p, "walker: i div S (not wrapped at C)");
    md.in("kr_i", w.ml, "k_r = L mod S (S < L)");
    md.in("sk_i", w.ml, "S - k_r (S < L)");
    md.in("nsk_i", w.ml, "-(S - k_r) mod 2^ml");
    if (!w.lut_cmp) {  // --target ecp5: lane 0's next carry from a table made of sk_i, kr_i
      md.in("nsk2_i", w.ml + 1, "2^(ml+1) - 1 - 2(S - k_r)");
      md.in("nskr_i", w.ml + 1, "2^(ml+1) - 1 - max(0, S - 2k_r)");
    }
    md.in("s2l_i", 1, "S < 2L");
  }
  md.in("stride_i", w.hw, "S");
  md.in("sle_i", 1, "S <= L: the start's neg");
  md.in("t2lp_i", w.lw + 1, "t2l + 1; t2l = 3L - S when S < 2L, else L");
  md.in("t4p_i", w.lw + 1, "t4 + 1; t4 = 3L - 2S when 2S <= 3L, else 0 (lo >= 1 at a wrap)");
  md.in("remw_i", w.W, "S - L: rem's step when c0 moves on");
  md.in("remw1_i", w.W - w.lw, "(S - L) high part + 1");
  if (w.hb > 2) {
    md.in("nt3_i", w.lw + 1,
          "2^(lw+1) - t3, t3 = 2^lw + L - (S - L)_low: a wrap after lo >= t3 carries into h");
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
Expr chan_hsegs(Module& md, const ChanWidths& w, Block& ld, Block& wrap, Block& dec, Block& always,
                Block& beat) {
  const int n = hsegs(w), lw = w.lw;
  const Expr stride = md.ref("stride_i"), wc = md.ref("wc_q"), pb = md.ref("pb_q");
  const Expr remw = md.ref("remw_i"), r1 = md.ref("remw1_i");
  std::vector<Expr> segz;    // segment k == 0 (of the registers)
  if (w.lut_cmp && n > 1) {  // read by pbz_k (k >= 1)
    const Expr ld_i = md.ref("ld_i"), neg = md.ref("neg_q");
    md.assign(md.wire("pb_nx", 1, "pb_q after this cycle"),
              mux(md.ref("en_i"), mux(ld_i | neg, lit(1, 0), md.ref("lo_bw")), pb));
  }
  for (int k = 0; k < n; ++k) {
    const int sw = std::min(kSeg, w.hb - k * kSeg);
    const Expr sg = md.reg(idx("h", k) + "_q", sw,
                           "rem's high part, bits " + std::to_string(k * kSeg) + ".." +
                               std::to_string(k * kSeg + sw - 1));
    const int base = lw + k * kSeg, have = std::max(0, std::min(sw, stride.width() - base));
    const bool split = w.lut_cmp && have < sw;  // --target ecp5: bits loaded with 0 (load_or_zero)
    const Expr wrv = mux(wc, hseg(r1, 0, w, k), hseg(remw, lw, w, k));
    if (!split) ld.push_back(assign(sg, hseg(stride, lw, w, k)));
    if (!split) wrap.push_back(assign(sg, wrv));
    Expr en = pb;
    if (k > 0) {
      const std::string below = k == 1 ? "h_0" : "h_0 .. h_" + std::to_string(k - 1);
      Expr all = segz[0];
      for (int j = 1; j < k; ++j) all = all & segz[static_cast<std::size_t>(j)];
      if (w.lut_cmp) {
        // --target ecp5: pb_q & dz as one register, from pb_q's next value (no LUT between the
        // flops and the segment's adder).
        const Expr pbz =
            md.reg(idx("pbz", k) + "_q", 1, "pb_q & (" + below + " == 0 a cycle late)");
        always.push_back(assign(pbz, md.ref("pb_nx") & all));
        en = pbz;
      } else {
        const Expr dz = md.reg(idx("dz", k) + "_q", 1, below + " == 0, a cycle late");
        always.push_back(assign(dz, all));
        en = pb & dz;
      }
    }
    // sg - en as an add of en's copies: no hold branch, so the flops' enable stays en_i alone
    // (a hold would make synthesis fold pb and dz into the enable, deep behind ld_i).
    Expr dcv = sg + ex::repl(sw, en);
    if (w.hd) {
      // --target ecp5 / ice40: h_k - 1 registered every cycle, a select instead of a chain behind
      // en. It is fresh when en is set: the beat that set pb left h unchanged (see above), and a
      // load clears pb.
      const Expr hd = md.reg(idx("hd", k) + "_q", sw, idx("h", k) + "_q - 1, a cycle late");
      always.push_back(assign(hd, sg - lit(sw, 1)));
      dcv = mux(en, hd, sg);
    }
    const Expr ldv = have > 0 ? slice(stride, base, have) : Expr{};
    if (split)
      beat.push_back(
          load_or_zero(md, sg, idx("h", k) + "_nx", ldv, have, mux(md.ref("neg_q"), wrv, dcv)));
    else
      dec.push_back(assign(sg, dcv));
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
  dec.push_back(if_(md.ref("lo_bw"), {assign(hiz, hone)}));
  return hiz;
}

// rem's high part h (S >= L) and its flags; returns hi_zero (h - pb == 0). Updates as chan_rem's.
Expr rem_high(Module& md, const ChanWidths& w, const Expr& lo_sum, Block& ld, Block& wrap,
              Block& dec, Block& beat, Block& always) {
  const int lw = w.lw, hb = w.hb, hw = w.hw;
  const Expr pb = md.ref("pb_q"), lo = md.ref("lo_q"), neg = md.ref("neg_q");
  const Expr remw = md.ref("remw_i"), stride = md.ref("stride_i");
  const Expr hi_zero = md.wire("hi_zero", 1, "h - pb == 0: rem < 2^" + std::to_string(lw));
  if (hb <= 2) {
    const Expr wrap_cy = bit(lo_sum, lw);
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
    const Expr wc_s = md.wire("wc_s", lw + 2, "lo + 2^(lw+1) - t3: top bit lo >= t3");
    md.assign(wc_s, zext(lo, lw + 2) + zext(md.ref("nt3_i"), lw + 2));
    rtl::sink(md, "unused_wc_s", {slice(wc_s, 0, lw + 1)});
    if (w.lut_cmp) {
      beat.push_back(assign(wc, ~(md.ref("ld_i") | neg) & bit(wc_s, lw + 1)));
    } else {
      ld.push_back(assign(wc, lit(1, 0)));
      wrap.push_back(assign(wc, lit(1, 0)));
      dec.push_back(assign(wc, bit(wc_s, lw + 1)));
    }
    md.assign(hi_zero, chan_hsegs(md, w, ld, wrap, dec, always, beat));
  }
  return hi_zero;
}

// After a wrap (rem <= L, so rem = lo) the next rem is rem + S - L: <= L when rem <= 2L - S.
// That compare is a register too (nle_q), made a beat ahead on the new lo: after the load lo =
// S (read only when S <= L: sle), after a wrap lo + S - L <= 2L - S is lo <= 3L - 2S (t4; no
// overflow: lo <= L, S - L < L), after a step lo - L <= 2L - S is lo <= 3L - S (t2l; S >= 2L:
// 0 and L, never true at a wrap, where lo = rem >= 1). Otherwise rem - L <= L when h - pb = 0
// and lo <= 2L. --target ecp5: the threshold chosen a beat ahead, tp_q (returned; else empty).
Expr rem_nle(Module& md, const ChanWidths& w, Block& ld, Block& wrap, Block& dec) {
  const int lw = w.lw;
  const Expr nle = md.reg("nle_q", 1, "lo <= 2L - S (read at a wrap)");
  ld.push_back(assign(nle, md.ref("sle_i")));
  const Expr t4p = md.ref("t4p_i"), t2lp = md.ref("t2lp_i");
  if (!w.lut_cmp) {
    wrap.push_back(assign(nle, le_lo(md, lw, "le_t4", t4p)));
    dec.push_back(assign(nle, le_lo(md, lw, "le_t2l", t2lp)));
    return Expr{};
  }
  const Expr tp =
      md.reg("tp_q", lw + 1, "nle's threshold + 1 at the next beat: t4p_i if neg_q, else t2lp_i");
  ld.push_back(assign(tp, mux(md.ref("sle_i"), t4p, t2lp)));  // t4p_i, t2lp_i settled by then
  const Expr le_tp = le_lo(md, lw, "le_tp", tp);
  wrap.push_back(assign(nle, le_tp));
  dec.push_back(assign(nle, le_tp));
  return tp;
}

// S >= L: rem as a narrow low part and a high part with a pending borrow. Returns the update of
// lo, h, pb, neg and c (the c0 register) for one beat or the load; per-cycle updates to `always`.
// --target ecp5: pb, c, wc (loaded with 0) in `beat` as ANDs with ~ld_i: a select of a constant
// becomes a synchronous reset, en_i & ld_i through a LUT into the flip-flops' LSR.
Stmt chan_rem(Module& md, const ChanWidths& w, Block& always, Block& beat) {
  const int lw = w.lw, hb = w.hb, hw = w.hw;
  md.section("S >= L: rem, the elements left in lane 0's channel, as rem = (h - pb) * 2^" +
             std::to_string(lw) + " + lo:");
  md.section("the borrow of a step's low part waits a beat in pb (no wide carry chain into a mux)");
  const Expr lo = md.reg("lo_q", lw), pb = md.reg("pb_q", 1, "borrow pending: h is one too high");
  const Expr neg = md.reg("neg_q", 1, "rem <= L: c0 moves on with this beat");
  const Expr remw = md.ref("remw_i"), stride = md.ref("stride_i");
  // One adder: lo + op, op_q = (S - L)_low before a wrap, 2^lw - L before a step (a register
  // chosen a beat ahead with neg), so lo's next value is one LUT after the sum. Its carry: the
  // wrap's carry into h (hb <= 2) or, on a step, no borrow.
  // tl (--target ecp5, lo_tables): lo moves by per-job tables, no adder, no op_q.
  const bool tl = w.tl, sum_cy = !w.lut_cmp || hb <= 2;  // sum_cy: lo_sum's carry is read
  const Expr op_w = slice(remw, 0, lw), op_s = lit(lw, (1ULL << lw) - static_cast<U>(w.L));
  Expr op, op0, lo_sum, lo_nx;
  if (!tl) {
    op = md.reg("op_q", lw, "lo's addend: (S - L)_low when neg_q, else 2^lw - L");
    op0 = md.reg("op0_q", lw, "op_q at the packet start (per job)");
    always.push_back(assign(op0, mux(md.ref("sle_i"), op_w, op_s)));
    lo_sum = md.wire("lo_sum", sum_cy ? lw + 1 : lw,
                     sum_cy ? "lo + op: top bit the carry" : "lo + op (mod 2^lw)");
    md.assign(lo_sum, sum_cy ? zext(lo, lw + 1) + zext(op, lw + 1) : lo + op);
    lo_nx = slice(lo_sum, 0, lw);
  }
  // --target ecp5: a step's op_q is 2^lw - L (op_q follows neg_q): its borrow is lo < L, LUT logic
  const Expr lo_bw = md.wire("lo_bw", 1, "a step's lo - L borrows");
  md.assign(lo_bw, w.lut_cmp ? le_bits(lo, static_cast<U>(w.L) - 1) : ~bit(lo_sum, lw));
  const Expr s_lo = hw >= lw ? slice(stride, 0, lw) : zext(stride, lw);
  const Expr c_q = ex::ref("c_q", w.cn);
  const Expr nlo = md.reg("nlo_q", lw, "~lo (its compares are carries of ~lo + x)");
  Block ld{assign(lo, s_lo), assign(nlo, ~s_lo)}, wrap, dec;
  if (!tl) {
    wrap = {assign(lo, lo_nx), assign(nlo, ~lo_nx)};
    dec = {assign(lo, lo_nx), assign(nlo, ~lo_nx)};
  }
  if (w.lut_cmp) {
    beat.push_back(assign(pb, ~(md.ref("ld_i") | neg) & lo_bw));
    beat.push_back(assign(c_q, ex::ref("c_nx", w.cn) & ex::repl(w.cn, ~md.ref("ld_i"))));
    ld.push_back(assign(neg, md.ref("sle_i")));
    if (!tl) ld.push_back(assign(op, op0));
  } else {
    ld.insert(ld.end(), {assign(pb, lit(1, 0)), assign(neg, md.ref("sle_i")),
                         assign(c_q, lit(w.cn, 0)), assign(op, op0)});
    wrap.push_back(assign(pb, lit(1, 0)));
    dec.push_back(assign(pb, lo_bw));
  }
  const Expr hi_zero = rem_high(md, w, lo_sum, ld, wrap, dec, beat, always);
  const Expr tp = rem_nle(md, w, ld, wrap, dec);
  const Expr neg_nx = md.wire("neg_nx", 1, "the next rem <= L");
  const U twol = 2ULL * static_cast<U>(w.L);
  const Expr le2 = tl          ? lo_tables(md, w.L, lw, s_lo, ld, wrap, dec, always)
                   : w.w5      ? le2_reg(md, lw, twol, s_lo, lo_nx, ld, wrap, dec)
                   : w.lut_cmp ? le_bits(lo, twol)
                               : le_lo(md, lw, "le_2l", lit(lw + 1, twol + 1));
  md.assign(neg_nx, mux(neg, md.ref("nle_q"), hi_zero & le2));
  Block step{if_(neg, std::move(wrap), std::move(dec)), assign(neg, neg_nx)};
  if (!tl) step.push_back(assign(op, mux(neg_nx, op_w, op_s)));
  if (!w.lut_cmp) step.push_back(assign(c_q, ex::ref("c_nx", w.cn)));
  if (w.lut_cmp) step.push_back(assign(tp, mux(neg_nx, md.ref("t4p_i"), md.ref("t2lp_i"))));
  return if_(md.ref("ld_i"), std::move(ld), std::move(step));
}

// Lane i's per-job thresholds and d values (registers, every cycle from registers: valid before
// the first beat), chosen so that the other case's flags are constant 0 (no select by small_i).
struct LaneTh {
  Expr nta, ntb, nx, nl, db, dp;
};
LaneTh lane_thresholds(Module& md, const ChanWidths& w, int i, const Expr& wm, const Expr& d0,
                       Block& consts) {
  const int p = w.p, lw = w.lw, W = w.ml + 1;
  const Expr kr = md.ref("kr_i"), small = md.ref("small_i");
  const Expr nta = md.reg(idx("nta", i) + "_q", W, "2^(ml+1) - 1 - (t + S - k_r); S >= L: 0");
  const Expr ntb = md.reg(idx("ntb", i) + "_q", W, "2^(ml+1) - 1 - max(0, t - k_r); S >= L: 0");
  const Expr nx = md.reg(idx("nx", i) + "_q", lw, "max(0, i + L + 1 - S); S < L: 0");
  const Expr nl = md.reg(idx("nl", i) + "_q", lw, "L + i + 1; S < L: 0");
  const Expr db = md.reg(idx("db", i) + "_q", p, "d_i unless g_i: b_i (S < L) or 0");
  const Expr dp = md.reg(idx("dp", i) + "_q", p, "d_i when g_i: b_i + 1 (S < L) or 1");
  const Expr sb = md.wire(idx("ntb_s", i), W + 1, "2^(ml+1) - 1 - (t - k_r)");
  md.assign(sb, zext(wm, W + 1) + zext(kr, W + 1));
  const U kx = static_cast<U>(w.L) + 1 + static_cast<U>(i);
  const Expr s_lo = w.hw >= lw ? slice(md.ref("stride_i"), 0, lw) : zext(md.ref("stride_i"), lw);
  const Expr xs = md.wire(idx("xs", i), lw + 1, "i + L + 1 - S (S < 2L): top bit set when < 0");
  md.assign(xs, lit(lw + 1, kx) - zext(s_lo, lw + 1));
  consts.push_back(assign(nta, mux(small, wm - zext(md.ref("sk_i"), W), lit(W, 0))));
  consts.push_back(
      assign(ntb, mux(small, mux(bit(sb, W), ex::ones(W), slice(sb, 0, W)), lit(W, 0))));
  consts.push_back(
      assign(nx, mux(small | ~md.ref("s2l_i") | bit(xs, lw), lit(lw, 0), slice(xs, 0, lw))));
  consts.push_back(assign(nl, mux(small, lit(lw, 0), lit(lw, kx))));
  consts.push_back(assign(db, mux(small, d0, lit(p, 0))));
  consts.push_back(assign(dp, mux(small, d0 + lit(p, 1), lit(p, 1))));
  return {nta, ntb, nx, nl, db, dp};
}

// Lane 0's offset q_0 (S < L) and the lanes' d_i (both layouts). d_i is one select of per-job
// registers by a register g_i: with b_i = i div S and t_i = S - (i mod S) (from the walker), d_i =
// b_i + [q_0 >= t_i] when S < L, and d_i = [rem <= i] when S >= L; a beat selects db_i or dp_i
// (per-job: b_i and b_i + 1, or 0 and 1) by one flag g_i, made from compares of registers with
// per-lane negated thresholds (no inverter in front of a carry chain). Adds the load-or-step
// statement to `upd` and the start saves to `save`; returns the lanes' d outputs (lane L-1 first).
std::vector<Expr> chan_small(Module& md, const ChanWidths& w, Block& upd, Block& save) {
  const int ml = w.ml, p = w.p, lw = w.lw, W = ml + 1;
  md.section(
      "S < L: lane 0's u_0 = (r0 mod S) + 1; every lane's d_i (a select by a register g_i, both "
      "cases)");
  const Expr kr = md.ref("kr_i"), small = md.ref("small_i"), ld = md.ref("ld_i");
  const Expr nlo = md.ref("nlo_q"), cyc = md.ref("cyc_q"), hz = md.ref("hi_zero");
  Block load, step, consts;
  std::vector<Expr> dcat;
  // v >= t + 1 as the carry out of v + nt, nt = 2^vw - 1 - t a register (no inverter, no sum).
  const auto ge = [&](const std::string& name, const Expr& v, int vw, const Expr& nt) {
    const Expr sum = md.wire(name, vw + 1, "top bit: the carry, v + nt >= 2^" + std::to_string(vw));
    md.assign(sum, zext(v, vw + 1) + zext(nt, vw + 1));
    rtl::sink(md, "unused_" + name, {slice(sum, 0, vw)});
    return bit(sum, vw);
  };
  // Lane 0: u_0 = q_0 + 1 (>= 1, so "q_0 >= 0" is a carry too) and its carry cy_0 = (q_0 >= S -
  // k_r), a register computed a beat ahead.
  const Expr u = md.reg("u_0_q", ml, "q_0 + 1, q_0 = r0 mod S (1..S)");
  const Expr cy0 = md.reg("cy_0_q", 1, "q_0 + k_r >= S (0 at the start: q_0 = 0 < S - k_r)");
  const Expr u_nx = md.wire("u_nx_0", ml, "u_0 - (S - k_r) or u_0 + k_r: an add either way");
  md.assign(u_nx, mux(cy0, u + md.ref("nsk_i"), u + kr));
  // The next q_0 >= S - k_r without it: q_0 >= 2(S - k_r) after a carry, q_0 >= S - 2k_r without.
  const Expr cy_nx = md.wire("cy0_nx", 1, "lane 0's next carry");
  md.assign(cy_nx,
            mux(cy0, ge("cy0_a", u, W, md.ref("nsk2_i")), ge("cy0_b", u, W, md.ref("nskr_i"))));
  load.insert(load.end(), {assign(u, lit(ml, 1)), assign(cy0, lit(1, 0))});
  step.insert(step.end(), {assign(u, u_nx), assign(cy0, cy_nx)});
  for (int i = 1; i < w.L; ++i) {
    const std::string n = std::to_string(i);
    const Expr wm = md.reg(idx("wm", i) + "_q", W, "start: 2^(ml+1) - 1 - t_" + n);
    const Expr d0 = md.reg(idx("d0", i) + "_q", p, "start: b_" + n + " = i div S");
    save.push_back(
        if_(bit(md.ref("sv_i"), i - 1), {assign(wm, md.ref("wm_i")), assign(d0, md.ref("wd_i"))}));
    const LaneTh th = lane_thresholds(md, w, i, wm, d0, consts);
    const Expr nta = th.nta, ntb = th.ntb, nx = th.nx, nl = th.nl, db = th.db, dp = th.dp;
    // The flags for the next beat: S < L: q_0's next >= t_i (fa after a carry, fb without);
    // S >= L: the next rem <= i (fw after a wrap: lo <= i + L - S; after a step rem <= L + i),
    // each the carry of ~lo + x (x = 0 when S < L: the flag is 0; and fa, fb are 0 when S >= L).
    const Expr fa = md.wire(idx("fa", i), 1, "q_0 >= t + S - k_r");
    md.assign(fa, ge(idx("fa_s", i), u, W, nta));
    const Expr fb = md.wire(idx("fb", i), 1, "q_0 >= t - k_r");
    md.assign(fb, ge(idx("fb_s", i), u, W, ntb));
    const Expr fw = md.wire(idx("fw", i), 1, "lo <= i + L - S");
    md.assign(fw, ge(idx("fw_s", i), nlo, lw, nx));
    const Expr fl = md.wire(idx("fl", i), 1, "lo <= L + i");
    md.assign(fl, ge(idx("fl_s", i), nlo, lw, nl));
    // g_i: after a carry / wrap fa | fw, else fb | (hz & fl); 0 at the load (d_i = db_i).
    const Expr ga = md.wire(idx("ga", i), 1, "after a carry / wrap: d_i = dp_i");
    md.assign(ga, cyc & (fa | fw));
    const Expr gb = md.wire(idx("gb", i), 1, "after no carry / a step: d_i = dp_i");
    md.assign(gb, ~cyc & (fb | (hz & fl)));
    // d_i = g_i ? dp_i : db_i with g_i a register (the table registers d_i as it comes: the
    // select is the only LUT on that path; dp_i and db_i hold for the job). --target ecp5:
    // chan_small_lut (core_pos_lut.cpp).
    const Expr g = md.reg(idx("g", i) + "_q", 1, "d_i is dp_i (else db_i)");
    load.push_back(assign(g, lit(1, 0)));
    step.push_back(assign(g, ga | gb));
    md.assign(md.wire(idx("d", i), p, "g_i ? dp_i : db_i"), mux(g, dp, db));
    const Expr d = md.ref(idx("d", i));
    dcat.insert(dcat.begin(), d);
  }
  upd.push_back(if_(ld, std::move(load), std::move(step)));
  md.seq(consts);
  return dcat;
}

}  // namespace

Module build_chan(const CoreConfig& c) {
  if (pos_fixed_nhwc(c) && c.target == "ice40" && pos_group_bits(c) > 0)
    return build_chan_nhwc_wrap(c);
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
      serial_c0(c)
          ? "c0: c0 + k_c + cy - C (cy a register), its sign choosing the addend of c0 + k + cy."
          : "c0: two adders off the register (c0 + k_c + cy, the same less C; cy a register), a "
            "select.",
      "A packet starts at element 0 (c0 = 0, rem = S, q_i and d_i saved from the core's walker)."};
  chan_ports(md, w);
  const Expr cy0w = ex::ref("cy0", 1);
  Block save, beat;
  Block upd{chan_rem(md, w, save, beat)};
  Expr cy0 = md.ref("neg_q");
  std::vector<Expr> dcat;
  if (w.L > 1) {
    // c0's carry as a register of its own (no select in front of c0's adders): cy_0 or neg.
    const Expr small = md.ref("small_i");
    const Expr cyc = md.reg("cyc_q", 1, "c0's carry: cy_0_q when S < L, else neg_q");
    dcat = w.lut_cmp
               ? chan_small_lut(md, {w.L, w.ml, w.p, w.lw, w.hw, c.target == "ice40"}, upd, save)
               : chan_small(md, w, upd, save);
    upd.push_back(if_(md.ref("ld_i"), {assign(cyc, ~small & md.ref("sle_i"))},
                      {assign(cyc, mux(small, md.ref("cy0_nx"), md.ref("neg_nx")))}));
    cy0 = cyc;
    // ecp16 (ECP5), ice15 (iCE40): a copy placed beside c0's chains (cyc_q's route to their
    // carry-in was 1.4 ns on ECP5, 3.0-3.6 ns on the UP5K).
    if (w.lut_cmp)
      cy0 = c.target == "ice40" ? chan_cyc_copy_ice40(md, w.L, upd) : chan_cyc_copy(md, upd);
  }
  md.section("c0");
  const Expr c_q = md.reg("c_q", w.cn, w.cn < w.cw ? "c0 (<= C - 1)" : "");
  md.wire("cy0", 1, "c0 takes the step with a carry (a register either way)");
  md.assign(cy0w, cy0);
  Expr kc = md.ref("kc0_i"), kw = md.ref("kw0_i");
  if (w.lut_cmp) {  // --target ecp5: copies beside c0's adders, valid at arm + 3 (first beat)
    kc = md.reg("kcc_q", w.cn, "kc0_i a cycle late");
    kw = md.reg("kwc_q", w.cn + 1, "kw0_i a cycle late");
    save.push_back(assign(kc, c0_operand(md, "kc0_i", w.cw, w.cn)));
    save.push_back(assign(kw, c0_operand(md, "kw0_i", w.cw + 1, w.cn + 1)));
  }
  const auto [add, sub] = chan_c0_next(md, c, w.cn, c_q, kc, kw);
  Expr c0_out = c_q;
  if (w.e5) {
    // --target ecp5: the table reads a copy (c_q stays beside its own adders).
    c0_out = chan_c0_copy(md, w.cn, w.w5, {add, sub, kw}, beat);
  }
  for (auto& s : beat) upd.push_back(std::move(s));
  Block ff{if_(md.ref("en_i"), std::move(upd))};
  for (auto& s : save) ff.push_back(std::move(s));
  md.seq(ff);
  md.assign(md.ref("c0_o"), w.cn < w.cw ? zext(c0_out, w.cw) : c0_out);
  if (w.L > 1) md.assign(md.ref("d_o"), cat(dcat));
  return md;
}

}  // namespace normcore::gen::core
