// The position part of the core's top <n>_core: the set-up step divider and walker, the per-beat
// constants and the <n>_chan instance (the modules themselves: core_pos.cpp). A fixed nhwc layout
// has none of the set-up machinery: c0 moves by L mod C, a function of C.
#include <algorithm>

#include "core_internal.hpp"
#include "core_pos_lut.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

using U = std::uint64_t;
using Conns = std::vector<std::pair<std::string, Expr>>;

// e == 0 per chunk of at most 4 bits (one LUT each); e's bits [lo, e.width()).
std::vector<Expr> zero_chunks(const Expr& e, int lo, U value = 0) {
  std::vector<Expr> out;
  for (int b = lo; b < e.width(); b += 4) {
    const int n = std::min(4, e.width() - b);
    out.push_back(ex::eq(slice(e, b, n), lit(n, b == lo ? value : 0)));
  }
  return out;
}

// A register of one flag per chunk (stage 1 of a wide compare: one LUT each).
Expr chunk_reg(Module& m, Block& b, const std::string& name, const std::vector<Expr>& flags,
               const std::string& comment) {
  const Expr r = m.reg(name, static_cast<int>(flags.size()), comment);
  b.push_back(assign(r, cat(std::vector<Expr>(flags.rbegin(), flags.rend()))));
  return r;
}

// The AND of a chunk register's flags from bit `from` on (stage 2: at most two LUT levels).
Expr all_from(const Expr& r, int from) {
  if (from >= r.width()) return lit(1, 1);
  return ex::red_and(slice(r, from, r.width() - from));
}

// --target ice40: S - L in two register stages (remwl_q, remwh_q; the wire remw), when its high
// part (bits >= lw) has at least 8 bits.
bool remw_split(const CoreConfig& c) {
  const int lw = c.lane_count_bits() + 1, W = std::max(c.inner_bits, lw) + 1;
  return c.target == "ice40" && W - lw >= 8;
}

// S - L: remw_q (stage 1, one carry chain) or, remw_split: remwl_q, the low part and its borrow
// (stage 1), and remwh_q, the high part (stage 2), two chains of half the width; returns it.
Expr remw_stages(Module& m, const CoreConfig& c, Block& s1, Block& s2) {
  const int hw = c.inner_bits, L = c.lanes, lw = c.lane_count_bits() + 1;
  const int W = std::max(hw, lw) + 1, rm = std::max(lw, W / 2);  // rm: the split
  const Expr stride = m.ref("stride_q");
  if (!remw_split(c)) {
    const Expr remw = m.reg("remw_q", W, "S - L");
    s1.push_back(assign(remw, zext(stride, W) - lit(W, static_cast<U>(L))));
    return remw;
  }
  const Expr rl = m.reg("remwl_q", rm + 1, "(S - L) low part, top bit its borrow");
  s1.push_back(assign(rl, zext(slice(stride, 0, rm), rm + 1) - lit(rm + 1, static_cast<U>(L))));
  const Expr rh = m.reg("remwh_q", W - rm, "(S - L) high part (stage 2)");
  s2.push_back(assign(rh, ex::fit(slice(stride, rm, hw - rm), W - rm) - zext(bit(rl, rm), W - rm)));
  const Expr remw = m.wire("remw", W, "S - L");
  m.assign(remw, cat({rh, slice(rl, 0, rm)}));
  return remw;
}

// Per-job set-up values of the stride, in register stages of at most two LUT levels or one carry
// chain each (stride_q is latched in the latch cycle; stage 1 is valid from the check cycle, stage
// 2 a cycle later, and so on: stage 4 from check + 3, the lanes' per-job registers in <n>_chan
// a cycle later, before the lanes load their start at check + L + 3 (L >= 2) or later; L = 1:
// check + 4, stage 4 first read by a beat):
//   1: shz_q / sho_q (S's high part, bits >= lw, per 4-bit chunk: 0, or 1 in the lowest chunk),
//      *_lo_q (S's low bits <= K), remw_q = S - L (one carry chain)
//   2: shz1_q (the AND of shz_q's upper chunks); remw1_q, nt3_q (carries of remw_q) and the
//      chunk flags of remw_q's high part
//   3: S <= K (small_q, s2l_q, s3l_q), sz_q, s1_q (one LUT each); rz0_q, ro0_q, rz1_q
//   --target ice40 (W - lw >= 8): remw_q as remwl_q (stage 1) and remwh_q (stage 2); remw1_q
//      and the chunk flags in stage 3, rz0_q, ro0_q, rz1_q in stage 4 (read at a wrap only).
//   4: t2lp_q, t4p_q (a carry and a select).
void top_step_consts(Module& m, const CoreConfig& c) {
  const int hw = c.inner_bits, nb = c.lane_count_bits(), L = c.lanes, W = std::max(hw, nb + 1) + 1;
  const int lw = nb + 1, hb = W - lw, sl = std::min(hw, lw);
  const Expr stride = m.ref("stride_q");
  Block s1, s2, s3, s4;
  Expr hz = lit(1, 1);  // S's high part is 0: an AND of a stage-2 and a stage-1 register
  Expr shz, hz1;
  if (hw > lw) {
    shz = chunk_reg(m, s1, "shz_q", zero_chunks(stride, lw), "S's bits >= lw are 0, per chunk");
    hz1 = m.reg("shz1_q", 1, "S's bits >= lw + 4 are 0");
    s2.push_back(assign(hz1, all_from(shz, 1)));
    hz = hz1 & bit(shz, 0);
  }
  // S <= K (K < 2^lw) as a stage-2 register: the low bits' compare a stage-1 register.
  const auto le = [&](const std::string& name, long long k, const std::string& what) {
    const Expr r = m.reg(name, 1, "S <= " + what);
    if (k <= 0) {
      s3.push_back(assign(r, lit(1, 0)));
      return r;
    }
    Expr lo = lit(1, 1);
    if (k < (1LL << sl) - 1) {
      lo = m.reg(name.substr(0, name.size() - 2) + "_lo_q", 1, "S's low bits <= " + what);
      s1.push_back(assign(lo, ex::le(slice(stride, 0, sl), lit(sl, static_cast<U>(k)))));
    }
    s3.push_back(assign(r, hz & lo));
    return r;
  };
  const Expr s2l = le("s2l_q", 2LL * L - 1, "2L - 1");
  const Expr s3l = le("s3l_q", 3LL * L / 2, "3L/2 (2S <= 3L)");
  if (L > 1) le("small_q", L - 1, "L - 1: every lane tracks its offset");
  // --target ice40: remw_q's readers beyond its low part a stage later (remw_stages).
  Block& rs2 = remw_split(c) ? s3 : s2;
  Block& rs3 = remw_split(c) ? s4 : s3;
  const Expr remw = remw_stages(m, c, s1, s2);
  rs2.push_back(assign(m.reg("remw1_q", W - lw, "(S - L) high part + 1"),
                       slice(remw, lw, W - lw) + lit(W - lw, 1)));
  const Expr t2l = m.reg("t2lp_q", nb + 2, "1 + (3L - S when S < 2L, else L)");
  const Expr t4 = m.reg("t4p_q", nb + 2, "1 + (3L - 2S when 2S <= 3L, else 0)");
  const U l3 = 3ULL * static_cast<U>(L) + 1;
  Expr t2d = lit(nb + 2, l3) - ex::fit(stride, nb + 2);
  Expr t4d = lit(nb + 2, l3) - cat({ex::fit(stride, nb + 1), lit(1, 0)});
  if (c.target == "ice40") {  // S < 2L where read: tables of S's lw low bits (no shared chains)
    t2d = const_table(stride, sl, nb + 2, [l3](U v) { return l3 - v; });
    t4d = const_table(stride, sl, nb + 2, [l3](U v) { return l3 - 2 * v; });
  }
  s4.push_back(assign(t2l, mux(s2l, t2d, lit(nb + 2, static_cast<U>(L) + 1))));
  s4.push_back(assign(t4, mux(s3l, t4d, lit(nb + 2, 1))));
  if (hb > 2) {  // <n>_chan's reload values of rem's high part: their zero flags; t3
    s2.push_back(
        assign(m.reg("nt3_q", lw + 1, "2^(lw+1) - t3, t3 = 2^lw + L - (S - L)_low"),
               lit(lw + 1, (1ULL << lw) - static_cast<U>(L)) + zext(slice(remw, 0, lw), lw + 1)));
    const Expr sho = m.reg("sho_q", 1, "S's bits lw.. lw+3 are 1");
    s1.push_back(assign(sho, zero_chunks(stride, lw, 1).front()));
    s3.push_back(
        assign(m.reg("sz_q", 1, "S's high part (bits >= " + std::to_string(lw) + ") is 0"), hz));
    s3.push_back(assign(m.reg("s1_q", 1, "S's high part (bits >= " + std::to_string(lw) + ") is 1"),
                        sho & hz1));
    const Expr rzc = chunk_reg(m, rs2, "rzc_q", zero_chunks(remw, lw), "(S - L) high part: 0");
    const Expr roc = m.reg("roc_q", 1, "(S - L) high part, lowest chunk: 1");
    rs2.push_back(assign(roc, zero_chunks(remw, lw, 1).front()));
    std::vector<Expr> ones;
    for (int b = 0; b < hb; b += 4) {
      const int n = std::min(4, hb - b);
      ones.push_back(ex::eq(slice(remw, lw + b, n), ex::ones(n)));
    }
    const Expr rnc = chunk_reg(m, rs2, "rnc_q", ones, "(S - L) high part: all ones");
    rs3.push_back(assign(m.reg("rz0_q", 1, "(S - L) high part is 0"), all_from(rzc, 0)));
    rs3.push_back(assign(m.reg("ro0_q", 1, "(S - L) high part is 1"), roc & all_from(rzc, 1)));
    rs3.push_back(assign(m.reg("rz1_q", 1, "(S - L) high part + 1 is 0"), all_from(rnc, 0)));
  }
  m.seq(s1);
  m.seq(s2);
  m.seq(s3);
  m.seq(s4);
}

void top_step(Module& m, const CoreConfig& c, const Expr& check) {
  const int hw = c.inner_bits, nb = c.lane_count_bits();
  m.section("Lane positions: S = HW (nchw) or 1 (nhwc)");
  const Expr lstep_r = m.wire("lstep_r", c.chan_low_bits(), "L mod S");
  const Expr lstep_c = m.wire("lstep_c", c.chan_bits(), "(L div S) mod C");
  Conns conns = {{"clk_i", m.ref("clk_i")},
                 {"rst_ni", m.ref("rst_ni")},
                 {"start_i", check},
                 {"stride_i", slice(m.ref("stride_q"), 0, std::min(hw, nb))}};
  if (hw > nb) conns.emplace_back("s_big_i", m.ref("s_big_q"));
  conns.emplace_back("ch_i", m.ref("ch_q"));
  conns.emplace_back("ge0_i", m.ref("ge0_q"));
  conns.emplace_back("done_o", m.ref("step_done"));
  conns.emplace_back("rem_o", lstep_r);
  conns.emplace_back("quo_o", lstep_c);
  m.instance(Instance{c.name + "_step", "u_step", std::move(conns)});
  top_step_consts(m, c);
}

// Walker: the position (r, i div S) of element 0, 1, 2, ... (one per cycle from the check
// cycle on); lane i saves it when wsave_q[i] (one-hot, a shift register).
void top_walker(Module& m, const CoreConfig& c, const Expr& check) {
  const int L = c.lanes, ml = c.chan_low_bits();
  const int p = c.bank_sel_bits();
  const Expr wr = m.reg("wr_q", ml, "walker: r (< L: the walker stops at element L - 1)");
  Expr w_end;
  if (lut_tracker(c)) {
    // --target ecp5 / ice40: an equality with a register, LUT logic (no carry chain in the walker's
    // loop; S >= L: don't care).
    const Expr sm1 = m.reg("sm1_q", ml, "S - 1 (low bits; the walker's end)");
    m.seq({assign(sm1, slice(m.ref("stride_q"), 0, ml) - lit(ml, 1))});
    w_end = m.wire("w_end", 1, "r == S - 1");
    m.assign(w_end, ex::eq(wr, sm1));
  } else {
    // r == S - 1 as the carry of r + 2^ml + 1 - S (r <= S - 1 when S < L; S >= L: don't care).
    const Expr nsm = m.reg("nsm_q", ml + 1, "2^ml + 1 - S (low bits; the walker's end)");
    m.seq({assign(nsm,
                  lit(ml + 1, (U{1} << ml) + 1) - zext(slice(m.ref("stride_q"), 0, ml), ml + 1))});
    const Expr w_sum = m.wire("w_sum", ml + 1, "r + 2^ml + 1 - S: top bit r == S - 1");
    m.assign(w_sum, zext(wr, ml + 1) + nsm);
    rtl::sink(m, "unused_w_sum", {slice(w_sum, 0, ml)});
    w_end = m.wire("w_end", 1, "r == S - 1");
    m.assign(w_end, bit(w_sum, ml));
  }
  Block walk_reset{assign(wr, lit(ml, 0))};
  Block walk_step{assign(wr, mux(w_end, lit(ml, 0), wr + lit(ml, 1)))};
  if (L > 1) {
    const Expr wd = m.reg("wd_q", p, "walker: i div S (not wrapped at C; only read for i < L)");
    walk_reset.push_back(assign(wd, lit(p, 0)));
    walk_step.push_back(if_(w_end, {assign(wd, wd + lit(p, 1))}));
    // wm = 2^(ml+1) - 1 - (S - r): the lanes' threshold t = S - r, negated (S < L only).
    const Expr wt = m.reg("wm_q", ml + 1, "walker: 2^(ml+1) - 1 - (S - r)");
    const Expr nts = m.wire("w_nts", ml + 1, "2^(ml+1) - 1 - S (S < L)");
    m.assign(nts, ~zext(slice(m.ref("stride_q"), 0, ml), ml + 1));
    walk_reset.push_back(assign(wt, nts));
    walk_step.push_back(assign(wt, mux(w_end, nts, wt + lit(ml + 1, 1))));
  }
  const Expr wsave = m.ref("wsave_q");
  m.seq({if_(check, std::move(walk_reset), std::move(walk_step)),
         assign(wsave,
                L == 1 ? check : mux(check, lit(L, 1), cat({slice(wsave, 0, L - 1), lit(1, 0)})))});
}

// Beat constants, registers (valid the cycle after u_step is done). S >= L: c0 moves by 0 or 1
// channel (rem decides); S < L: by k_c = (L div S) mod C plus the carry of lane 0.
void top_beat_consts(Module& m, const CoreConfig& c) {
  const int cw = c.chan_bits(), ml = c.chan_low_bits(), L = c.lanes;
  const Expr kc0 = m.reg("kc0_q", cw, "c0 step without a carry");
  const Expr kw0 = m.reg("kw0_q", cw + 1, "kc0 - C");
  const Expr kcs = m.wire("kcs", cw, "k_c when S < L, else 0");
  const Expr lstep_r = m.ref("lstep_r"), lstep_c = m.ref("lstep_c");
  Block kff;
  if (L > 1) {
    m.assign(kcs, mux(m.ref("small_q"), lstep_c, lit(cw, 0)));
    const Expr kr = m.reg("kr_q", ml, "k_r = L mod S");
    const Expr sk = m.reg("sk_q", ml, "S - k_r");
    kff.push_back(assign(kr, lstep_r));
    kff.push_back(assign(sk, slice(m.ref("stride_q"), 0, ml) - lstep_r));
    // Lane 0's next carry as compares of q_0 with registers (from sk_q, kr_q a cycle later).
    // The compare thresholds as 2^(ml+1) - 1 - t, so <n>_chan's compares are carries of adds.
    const int tw = ml + 1;
    kff.push_back(assign(m.reg("nsk_q", ml, "-(S - k_r) = k_r - S"),
                         lstep_r - slice(m.ref("stride_q"), 0, ml)));
    if (!lut_tracker(c)) {  // ecp5 / ice40: <n>_chan's carry table instead
      kff.push_back(
          assign(m.reg("nsk2_q", tw, "2^(ml+1) - 1 - 2(S - k_r)"), ~cat({sk, lit(1, 0)})));
      const Expr d1 = m.reg("krsk_q", tw + 1, "k_r - (S - k_r), two's complement");
      kff.push_back(assign(d1, zext(kr, tw + 1) - zext(sk, tw + 1)));
      kff.push_back(assign(m.reg("nskr_q", tw, "2^(ml+1) - 1 - max(0, S - 2k_r) (after krsk)"),
                           mux(bit(d1, tw), slice(d1, 0, tw) - lit(tw, 1), ex::ones(tw))));
    }
  } else {
    m.assign(kcs, lit(cw, 0));
    m.assign(m.wire("unused_lstep", 1, "one lane: S >= L always, the step is 0 or 1 channel"),
             ex::red_xor(cat({lstep_r, lstep_c})));
  }
  kff.push_back(assign(kc0, kcs));
  // kw0 from the register kc0_q (the select and the subtract in different cycles: no select LUT
  // in front of the subtract's chain; kw0_q is first read by a beat, at arm + 3 or later).
  kff.push_back(assign(kw0, zext(kc0, cw + 1) - zext(m.ref("ch_q"), cw + 1)));
  m.seq(kff);
}

// <n>_chan's en_i (a beat or the set-up load) and ld_i (with en_i: load the packet start). A beat
// is taken only in S_RUN (tready_q is registered from st_d == S_RUN), so ld_i needs no state: it
// is tlast | reb_q, two registers (the set-up load reb_q never meets a beat).
Conns chan_control(Module& m, const CoreConfig& c) {
  m.wire("in_fire", 1);
  // The enable's beat from its own register ntr_q = ~tready_q (top_flow): an AND of its own, so
  // that synthesis makes en_i one LUT of s_axis_tvalid, ntr_q and reb_q rather than a LUT after
  // the in_fire LUT that the other readers share (two LUTs and two long routes on the UP5K).
  // spec::same_copies: the copy trc_q = tready_q (top_flow_lagged).
  const bool same = spec::same_copies(c);
  const Expr ntr = same ? m.reg("trc_q", 1, "tready_q (the position enable's copy)")
                        : ~m.reg("ntr_q", 1, "~tready_q (the position enable's copy)");
  const Expr pos_en = m.wire(
      "pos_en", 1,
      same ? "a beat (from trc_q), or the set-up load" : "a beat (from ntr_q), or the set-up load");
  const Expr restart = m.wire("pos_restart", 1, "with en_i: restore the packet start");
  const Expr reb = m.ref("reb_q");
  m.assign(pos_en, (m.ref("s_axis_tvalid") & ntr) | reb);
  m.assign(restart, m.ref("s_axis_tlast") | reb);
  return {{"clk_i", m.ref("clk_i")}, {"en_i", pos_en}, {"ld_i", restart}};
}

void top_chan(Module& m, const CoreConfig& c) {
  const int L = c.lanes, p = c.bank_sel_bits();
  const Expr c0 = m.wire("pos_c0", c.chan_bits());
  Conns cc = chan_control(m, c);
  Expr pos_d;
  if (L > 1) {
    pos_d = m.wire("pos_d", (L - 1) * p);
    cc.emplace_back("small_i", m.ref("small_q"));
    cc.emplace_back("sv_i", slice(m.ref("wsave_q"), 1, L - 1));
    for (const char* n : {"wm", "wd", "kr", "sk", "nsk", "nsk2", "nskr", "s2l"}) {
      if (lut_tracker(c) && std::string(n).rfind("nsk", 0) == 0 && std::string(n) != "nsk")
        continue;  // <n>_chan's carry table (core_pos_lut.cpp) replaces nsk2 / nskr
      cc.emplace_back(std::string(n) + "_i", m.ref(std::string(n) + "_q"));
    }
  }
  cc.emplace_back("stride_i", m.ref("stride_q"));
  cc.emplace_back("sle_i", m.ref("ge0_q"));
  std::vector<const char*> ks = {"t2lp", "t4p", "remw", "remw1"};
  if (std::max(c.inner_bits, c.lane_count_bits() + 1) - c.lane_count_bits() > 2)
    ks.insert(ks.end(),
              {"nt3", "sz", "s1", "rz0", "ro0", "rz1"});  // rem's high part has zero flags (hb > 2)
  ks.insert(ks.end(), {"kc0", "kw0"});
  for (const char* n : ks) {
    const std::string s(n);
    cc.emplace_back(s + "_i", m.ref(s == "remw" && remw_split(c) ? s : s + "_q"));
  }
  cc.emplace_back("c0_o", c0);
  if (L > 1) cc.emplace_back("d_o", pos_d);
  m.instance(Instance{c.name + "_chan", "u_chan", std::move(cc)});
}

// Fixed nhwc: L mod C from <n>_step (combinational, registered here), the two c0 constants and
// <n>_chan. No walker, no divider, no rem: d_i = i.
void top_nhwc(Module& m, const CoreConfig& c, const Expr& check) {
  const int L = c.lanes, cw = c.chan_bits(), a = pos_group_bits(c), gw = cw - a;
  const std::string unit = a > 0 ? " / L" : "";
  m.section("Lane positions (fixed nhwc, S = 1): d_i = i, c0 moves by k = L mod C a beat");
  const Expr kc = m.wire("lstep_c", gw, "k" + unit);
  const Expr ch = m.ref("ch_q");
  m.instance(Instance{c.name + "_step", "u_step", {{"chans_i", ch}, {"quo_o", kc}}});
  m.assign(m.ref("step_done"), lit(1, 1));
  m.seq({assign(m.ref("wsave_q"), check)});  // set-up: one cycle, nothing to walk
  const Expr kc0 = m.reg("kc0_q", gw, "k" + unit);
  const Expr kw0 = m.reg("kw0_q", gw + 1, "(k - C)" + unit);
  // kw0 from the register kc0_q: the step's compares and the subtract in different cycles.
  const Expr chg = a > 0 ? slice(ch, a, gw) : ch;
  if (split_consts(c)) {  // - C / L = ~(C / L) + 1 from a register: no inverters before the chain
    const Expr nch = m.reg("nchg_q", gw, "~(C" + unit + ")");
    m.seq({assign(kc0, kc), assign(nch, ~chg),
           assign(kw0, zext(kc0, gw + 1) + cat({lit(1, 1), nch}) + lit(gw + 1, 1))});
  } else {
    m.seq({assign(kc0, kc), assign(kw0, zext(kc0, gw + 1) - zext(chg, gw + 1))});
  }
  Conns cc = chan_control(m, c);
  cc.emplace_back("kc0_i", kc0);
  cc.emplace_back("kw0_i", kw0);
  cc.emplace_back("c0_o", m.wire("pos_c0", cw));
  if (L > 1) cc.emplace_back("d_o", m.wire("pos_d", (L - 1) * c.bank_sel_bits()));
  m.instance(Instance{c.name + "_chan", "u_chan", std::move(cc)});
}

}  // namespace

void top_positions(Module& m, const CoreConfig& c, const Expr& check) {
  if (pos_fixed_nhwc(c)) {
    top_nhwc(m, c, check);
    return;
  }
  top_step(m, c, check);
  top_walker(m, c, check);
  top_beat_consts(m, c);
  top_chan(m, c);
}

}  // namespace normcore::gen::core
