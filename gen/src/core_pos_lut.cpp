// --target ecp5 / ice40 (lut_tracker) parts of <n>_chan (core_pos_lut.hpp).
#include "core_pos_lut.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "rtl_util.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;
using U = std::uint64_t;

namespace {
// v <= k from v's complemented bits (nbit(i) = ~v[i]).
template <class NotBit>
Expr le_from(int n, U k, NotBit nbit) {
  if (n < 64 && k >= (U{1} << n) - 1) return lit(1, 1);
  Expr e;  // v's bits below the current one compare <= k's (empty, or k's low bits all 1: true)
  for (int i = 0; i < n; ++i) {
    const Expr b = nbit(i);
    if (((k >> i) & 1) != 0) {
      if (e.valid()) e = b | e;
    } else {
      e = e.valid() ? b & e : b;
    }
  }
  return e.valid() ? e : lit(1, 1);
}

// le2_q (lo_q <= 2L) and its load from lo's load value s_lo (lo_q, nlo_q: chan_rem's load).
Expr le2_loaded(Module& md, int lw, U twol, const Expr& s_lo, Block& ld) {
  const Expr le2 = md.reg("le2_q", 1, "lo_q <= 2L");
  const Expr lv = md.wire("lo_ld", lw, "lo's load value");
  md.assign(lv, s_lo);
  ld.push_back(assign(le2, le_bits(lv, twol)));
  return le2;
}

}  // namespace

Expr le_bits(const Expr& v, U k) {
  return le_from(v.width(), k, [&](int i) { return ~bit(v, i); });
}

Expr le_bits_inv(const Expr& nv, U k) {
  return le_from(nv.width(), k, [&](int i) { return bit(nv, i); });
}

Expr le2_reg(Module& md, int lw, U twol, const Expr& s_lo, const Expr& lo_nx, Block& ld,
             Block& wrap, Block& dec) {
  const Expr le2 = le2_loaded(md, lw, twol, s_lo, ld), ln = md.wire("lo_nx", lw);
  md.assign(ln, lo_nx);
  wrap.push_back(assign(le2, le_bits(ln, twol)));
  dec.push_back(assign(le2, le_bits(ln, twol)));
  return le2;
}

Expr lo_tables(Module& md, int lanes, int lw, const Expr& s_lo, Block& ld, Block& wrap, Block& dec,
               Block& always) {
  const int k = u_index_bits(lanes), n = 1 << k;
  const U L = static_cast<U>(lanes), m = (U{1} << lw) - 1;
  const Expr lo = md.ref("lo_q"), rwl = slice(md.ref("remw_i"), 0, lw);
  const Expr ix = md.wire("lo_ix", k, "lo_q's low bits: the wrap tables' index (lo is 1..L there)");
  md.assign(ix, slice(lo, 0, k));
  std::vector<std::vector<Expr>> bits(static_cast<std::size_t>(lw));  // entry n - 1 first
  std::vector<Expr> le;
  for (int j = n - 1; j >= 0; --j) {
    const U v = j == 0 ? static_cast<U>(n) : static_cast<U>(j);
    const Expr s = md.wire(idx("wsum", j), lw, "(S - L)_low + " + std::to_string(v));
    md.assign(s, rwl + lit(lw, v & m));
    for (int b = 0; b < lw; ++b) bits[static_cast<std::size_t>(b)].push_back(bit(s, b));
    le.push_back(le_bits(s, 2 * L));
  }
  std::vector<Expr> wv;  // the wrap's lo, its high bit first
  for (int b = lw - 1; b >= 0; --b) {
    const Expr t =
        md.reg(idx("wl", b) + "_q", n,
               "bit j: bit " + std::to_string(b) + " of a wrap's lo from lo = j mod 2^k");
    always.push_back(assign(t, cat(bits[static_cast<std::size_t>(b)])));
    wv.push_back(pick_bit(t, ix));
  }
  const Expr wle = md.reg("wle_q", n, "bit j: a wrap's lo <= 2L from lo = j mod 2^k");
  always.push_back(assign(wle, cat(le)));
  const Expr lwr = md.wire("lo_wr", lw, "lo after a wrap (the tables)");
  md.assign(lwr, cat(wv));
  const Expr lst = md.wire("lo_st", lw, "lo after a step: lo - L (LUT logic of lo_q)");
  md.assign(lst, const_table(lo, lw, lw, [L, m](U v) { return (v - L) & m; }));
  const Expr nlo = md.ref("nlo_q"), le2 = le2_loaded(md, lw, 2 * L, s_lo, ld);
  wrap.insert(wrap.end(), {assign(lo, lwr), assign(nlo, ~lwr), assign(le2, pick_bit(wle, ix))});
  dec.insert(dec.end(), {assign(lo, lst), assign(nlo, ~lst), assign(le2, le_bits(lst, 2 * L))});
  return le2;
}

std::pair<Expr, Expr> chan_c0_next(Module& md, const CoreConfig& c, int cn, const Expr& c_q,
                                   const Expr& kc, const Expr& kw) {
  const Expr cy0w = ex::ref("cy0", 1);
  const bool one = serial_c0(c);
  const Expr add = md.wire("c_add", cn, one ? "c0 + (k_c - C or k_c) + cy" : "c0 + k_c + cy");
  if (!one) md.assign(add, c_q + kc + zext(cy0w, cn));
  const Expr sub = md.wire("c_sub", cn + 1, "c0 + k_c + cy - C: top bit set when negative");
  md.assign(sub, zext(c_q, cn + 1) + kw + zext(cy0w, cn + 1));
  if (one) {
    // The default target at pipeline 3 (its clock set by the lane, about 40 ns on the UP5K):
    // c_sub's sign chooses the addend of one adder (10 LUT4 less than two sums and a select).
    md.assign(md.wire("unused_c_sub", 1, "the sum itself"), ex::red_xor(slice(sub, 0, cn)));
    md.assign(add, c_q + mux(~bit(sub, cn), slice(kw, 0, cn), kc) + zext(cy0w, cn));
    md.assign(md.wire("c_nx", cn), add);
  } else {
    md.assign(md.wire("c_nx", cn), mux(~bit(sub, cn), slice(sub, 0, cn), add));
  }
  return {add, sub};
}

Expr chan_c0_copy(Module& md, int n, bool own_sign, const C0Sums& s, Block& beat) {
  const Expr ct = md.reg("ct_q", n, "c_q's copy for the table (c0_o)");
  Expr sgn = bit(s.sub, n);
  if (own_sign) {
    const Expr ts = md.wire("ct_sub", n + 1, "ct_q + k_c + cy - C: top bit set when negative");
    md.assign(ts, zext(ct, n + 1) + s.kw + zext(md.ref("cy0"), n + 1));
    rtl::sink(md, "unused_ct_sub", {slice(ts, 0, n)});
    sgn = bit(ts, n);
  }
  const Expr sg = ex::repl(n, sgn);
  beat.push_back(
      assign(ct, ((slice(s.sub, 0, n) & ~sg) | (s.add & sg)) & ex::repl(n, ~md.ref("ld_i"))));
  return ct;
}

Expr le_lo(Module& md, int lw, const std::string& name, const Expr& tp) {
  const Expr sum = md.wire(name, lw + 2, "top bit: lo <= the threshold");
  md.assign(sum, zext(cat({lit(1, 1), md.ref("nlo_q")}), lw + 2) + zext(tp, lw + 2));
  rtl::sink(md, "unused_" + name, {slice(sum, 0, lw + 1)});
  return bit(sum, lw + 1);
}

Stmt load_or_zero(Module& md, const Expr& r, const std::string& name, const Expr& ld_lo, int have,
                  const Expr& nx_v) {
  const int n = r.width();
  const Expr ldi = md.ref("ld_i");
  const Expr nx = md.wire(name, n, "the value after a beat (not the load)");
  md.assign(nx, nx_v);
  const Expr hi = slice(nx, have, n - have) & ex::repl(n - have, ~ldi);
  return assign(r, have > 0 ? cat({hi, mux(ldi, ld_lo, slice(nx, 0, have))}) : hi);
}

namespace {
// Bit of t[lo + n - 1:lo] selected by idx's k low bits (t, idx names; n == 2^k).
Expr pick_from(const Expr& t, int lo, int n, const Expr& idx, int k) {
  if (n == 1) return bit(t, lo);
  return mux(bit(idx, k - 1), pick_from(t, lo + n / 2, n / 2, idx, k - 1),
             pick_from(t, lo, n / 2, idx, k - 1));
}
}  // namespace

namespace {
Expr table_from(const Expr& idx, int k, U base, int width, const std::function<U(U)>& f) {
  if (k == 0) return lit(width, f(base) & ((width >= 64 ? 0 : U{1} << width) - 1));
  return mux(bit(idx, k - 1), table_from(idx, k - 1, base | (U{1} << (k - 1)), width, f),
             table_from(idx, k - 1, base, width, f));
}
}  // namespace

Expr const_table(const Expr& idx, int bits, int width, const std::function<U(U)>& f) {
  return table_from(idx, bits, 0, width, f);
}

Expr pick_bit(const Expr& t, const Expr& idx) {
  return pick_from(t, 0, t.width(), idx, idx.width());
}

int u_index_bits(int lanes) {
  return std::max(1, bits_for(static_cast<long long>(lanes) - 1));
}

Expr carry_table(Module& md, int lanes, int ml, Block& consts) {
  const int n = 1 << u_index_bits(lanes);
  const Expr sk = md.ref("sk_i"), kr = md.ref("kr_i");
  // (S - k_r) - k_r, two's complement: a carry chain of its own, registered (the table a cycle
  // later: sk_i, kr_i settle at arm + 1, this at arm + 2, cyt_q at arm + 3, the first beat).
  const Expr dk = md.reg("skr_q", ml + 1, "(S - k_r) - k_r, two's complement");
  consts.push_back(assign(dk, zext(sk, ml + 1) - zext(kr, ml + 1)));
  const Expr dlo = md.wire("skr_lo", ml, "skr_q's magnitude bits (skr_q >= 0)");
  md.assign(dlo, slice(dk, 0, ml));
  std::vector<Expr> ent;  // entry n - 1 first (the high bit)
  for (int v = n - 1; v >= 0; --v) {
    if (v == 0) {  // u_0 >= 1
      ent.push_back(lit(1, 0));
      continue;
    }
    const U q = static_cast<U>(v) - 1;  // q_0
    // This beat carries (q_0 >= S - k_r): the next q_0 is q_0 - (S - k_r), which carries when
    // q_0 >= 2(S - k_r); else it is q_0 + k_r, which carries when q_0 + k_r >= S - k_r.
    const Expr now = le_bits(sk, q), after = le_bits(sk, q >> 1);
    const Expr plain = bit(dk, ml) | le_bits(dlo, q);
    ent.push_back(mux(now, after, plain));
  }
  const Expr t = md.reg("cyt_q", n, "lane 0's next carry when u_0 = v (bit v; S < L)");
  consts.push_back(assign(t, cat(ent)));
  return t;
}

namespace {

// v >= t + 1 as the carry out of v + nt, nt = 2^vw - 1 - t a register (core_pos.cpp's ge).
Expr carry_ge(Module& md, const std::string& name, const Expr& v, int vw, const Expr& nt) {
  const Expr sum = md.wire(name, vw + 1, "top bit: the carry, v + nt >= 2^" + std::to_string(vw));
  md.assign(sum, zext(v, vw + 1) + zext(nt, vw + 1));
  rtl::sink(md, "unused_" + name, {slice(sum, 0, vw)});
  return bit(sum, vw);
}

// Lane 0 a beat ahead: with u_n lane 0's u_0 at beat n and c(u) = (u - 1 >= S - k_r) its carry,
// un_q = u_(n+1) and cyn_q = c(u_(n+1)) before beat n; a beat steps un_q by its carry and takes
// cyn_q from carry_table (bit v: c(step(v))). At the packet start u_0 = 1 (no carry): un_q =
// 1 + k_r, cyn_q = (k_r >= S - k_r). Returns the wire of un_q's index bits.
Expr lane0_ahead(Module& md, const SmallWidths& w, Block& load, Block& step, Block& consts) {
  const int ml = w.ml, tb = u_index_bits(w.L);
  const Expr kr = md.ref("kr_i");
  const Expr un = md.reg("un_q", ml, "u_0 = q_0 + 1 of the next beat (1..S when S < L)");
  const Expr cyn = md.reg("cyn_q", 1, "the next beat's carry: its q_0 >= S - k_r");
  const Expr kr1 = md.reg("kr1_q", ml, "1 + k_r: un_q at the packet start");
  consts.push_back(assign(kr1, kr + lit(ml, 1)));
  const Expr cyt = carry_table(md, w.L, ml, consts);
  const Expr skr = md.ref("skr_q");
  const Expr ix = md.wire("u_ix", tb, "un_q's bits that index the per-job tables");
  md.assign(ix, ml >= tb ? slice(un, 0, tb) : zext(un, tb));
  md.assign(md.wire("cy0_nx", 1, "lane 0's next carry (the beat ahead's, a register)"), cyn);
  load.push_back(assign(un, kr1));
  load.push_back(assign(cyn, bit(skr, ml) | ex::eq(skr, lit(ml + 1, 0))));
  step.push_back(assign(un, mux(cyn, un + md.ref("nsk_i"), un + kr)));
  step.push_back(assign(cyn, pick_bit(cyt, ix)));
  return ix;
}

// Lane i's d_i = (gs_i | gl_i) ? dp_i : db_i. gs_i (S < L): q_0 >= t_i at the next beat, bit
// un_q of the per-job table th_i_q (bit v: v - 1 >= t_i, t_i = 2^(ml+1) - 1 - wm_i; 0 when
// S >= L). gl_i (S >= L): the next rem <= i, after a wrap lo <= i + L - S, after a step h - pb
// == 0 and lo <= L + i (0 when S < L): lo < thr_i (a carry of {1, ~lo} + thr_i) and one LUT.
Expr lane_d(Module& md, const SmallWidths& w, int i, const Expr& ix, Block& load, Block& step,
            Block& beat, Block& save, Block& consts) {
  const int p = w.p, lw = w.lw, W = w.ml + 1, n = 1 << ix.width();
  const std::string s = std::to_string(i);
  const Expr small = md.ref("small_i"), cyc = md.ref("cyc_q");
  const Expr wm = md.reg(idx("wm", i) + "_q", W, "start: 2^(ml+1) - 1 - t_" + s);
  const Expr d0 = md.reg(idx("d0", i) + "_q", p, "start: b_" + s + " = i div S");
  save.push_back(
      if_(bit(md.ref("sv_i"), i - 1), {assign(wm, md.ref("wm_i")), assign(d0, md.ref("wd_i"))}));
  const Expr nx = md.reg(idx("nx", i) + "_q", lw, "max(0, i + L + 1 - S); S < L: 0");
  const Expr db = md.reg(idx("db", i) + "_q", p, "d_i unless g_i: b_i (S < L) or 0");
  const Expr dp = md.reg(idx("dp", i) + "_q", p, "d_i when g_i: b_i + 1 (S < L) or 1");
  const Expr th = md.reg(idx("th", i) + "_q", n, "bit v: S < L and v - 1 >= t_" + s);
  const U kx = static_cast<U>(w.L) + 1 + static_cast<U>(i);
  const Expr s_lo = w.hw >= lw ? slice(md.ref("stride_i"), 0, lw) : zext(md.ref("stride_i"), lw);
  // Registered (stride_i holds from the check cycle on, small_i / s2l_i settle at check + 3):
  // the chain and the select into nx_i in different cycles.
  const Expr xs =
      md.reg(idx("xs", i) + "_q", lw + 1, "i + L + 1 - S (S < 2L): top bit set when < 0");
  if (w.ice40 && lw <= 6)  // a table of S's low bits: one LUT level, no shared chains
    consts.push_back(assign(xs, const_table(md.ref("slo_q"), std::min(w.hw, lw), lw + 1,
                                            [kx](U v) { return kx - v; })));
  else
    consts.push_back(assign(xs, lit(lw + 1, kx) - zext(s_lo, lw + 1)));
  // th_i from smt_q (ice40: small_i a cycle late, valid at check + 4, th_i at check + 5; first
  // read by the beat after the load, check + L + 4 >= check + 6) or small_i.
  const Expr sth = w.ice40 ? md.ref("smt_q") : small;
  std::vector<Expr> ent;  // entry n - 1 first
  for (int v = n - 1; v >= 0; --v)
    ent.push_back(v == 0 ? lit(1, 0) : sth & ~le_bits(wm, (U{1} << W) - 1 - static_cast<U>(v)));
  consts.push_back(assign(th, cat(ent)));
  consts.push_back(
      assign(nx, mux(small | ~md.ref("s2l_i") | bit(xs, lw), lit(lw, 0), slice(xs, 0, lw))));
  consts.push_back(assign(db, mux(small, d0, lit(p, 0))));
  consts.push_back(assign(dp, mux(small, d0 + lit(p, 1), lit(p, 1))));
  // gl_i's threshold chosen a beat ahead (the next cyc_q: neg's next value when S >= L, sle_i at
  // the load): lo < nx_i after a wrap, lo < L + i + 1 (kxs_i, 0 when S < L) after a step, so
  // one chain of lo and a register, then one LUT (cyc_q | hi_zero, ~ld_i).
  const Expr kxs = md.reg(idx("kxs", i) + "_q", lw + 1, "L + i + 1; S < L: 0");
  consts.push_back(assign(kxs, mux(small, lit(lw + 1, 0), lit(lw + 1, kx))));
  const Expr thr =
      md.reg(idx("thr", i) + "_q", lw + 1, "gl_i's threshold: nx_i if cyc_q, else kxs_i");
  load.push_back(assign(thr, mux(md.ref("sle_i"), zext(nx, lw + 1), kxs)));
  step.push_back(assign(thr, mux(md.ref("neg_nx"), zext(nx, lw + 1), kxs)));
  const Expr lt = carry_ge(md, idx("lt_s", i), cat({lit(1, 1), md.ref("nlo_q")}), lw + 1, thr);
  const Expr gs = md.reg(idx("gs", i) + "_q", 1, "S < L: d_i is dp_i");
  const Expr gl = md.reg(idx("gl", i) + "_q", 1, "S >= L: d_i is dp_i");
  // 0 at the load as an AND with ~ld_i (not a select of the constant: synthesis would make the
  // load a synchronous reset, en_i & ld_i through a LUT into the flip-flops' LSR).
  const Expr nld = ~md.ref("ld_i");
  beat.insert(beat.end(), {assign(gs, nld & pick_bit(th, ix)),
                           assign(gl, nld & lt & (cyc | md.ref("hi_zero")))});
  const Expr d = md.wire(idx("d", i), p, "g_i ? dp_i : db_i");
  md.assign(d, mux(gs | gl, dp, db));
  return d;
}

}  // namespace

std::vector<Expr> chan_small_lut(Module& md, const SmallWidths& w, Block& upd, Block& save) {
  md.section(
      "S < L: lane 0's u_0 = (r0 mod S) + 1 a beat ahead; every lane's d_i (a select by "
      "registers gs_i | gl_i, both cases)");
  Block load, step, beat, consts;
  if (w.ice40) {  // placed beside the th_i LUTs (small_q's route from the top was the path)
    const Expr smt = md.reg("smt_q", 1, "small_i a cycle late, for the th_i tables");
    consts.push_back(assign(smt, md.ref("small_i")));
    // S's low bits a cycle late (valid at check + 1, xs_i at check + 2, nx_i at check + 4 as
    // before: small_i, s2l_i settle at check + 3): xs_i's tables read a register of their own,
    // so that synthesis does not share their LUTs with the top's tables of stride_q.
    const int sl = std::min(w.hw, w.lw);
    const Expr slo = md.reg("slo_q", sl, "stride_i's low bits a cycle late (xs_i's tables)");
    consts.push_back(assign(slo, slice(md.ref("stride_i"), 0, sl)));
  }
  const Expr ix = lane0_ahead(md, w, load, step, consts);
  std::vector<Expr> dcat;
  for (int i = 1; i < w.L; ++i)
    dcat.insert(dcat.begin(), lane_d(md, w, i, ix, load, step, beat, save, consts));
  upd.push_back(if_(md.ref("ld_i"), std::move(load), std::move(step)));
  for (auto& st : beat) upd.push_back(std::move(st));
  md.seq(consts);
  return dcat;
}

Expr chan_cyc_copy(Module& md, Block& upd) {
  const Expr small = md.ref("small_i"), ld = md.ref("ld_i");
  const Expr ccy = md.reg("ccy_q", 1, "cyc_q's copy for c0's adders");
  upd.push_back(
      assign(ccy, (ld & ~small & md.ref("sle_i")) |
                      (~ld & ((small & md.ref("cy0_nx")) | (~small & md.ref("neg_nx"))))));
  return ccy;
}

}  // namespace normcore::gen::core
