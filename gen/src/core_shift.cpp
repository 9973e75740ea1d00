// The lane's shifter input (and its register after the multiply-add, pipe_acc) and the >>> R
// shifter in three register-separated parts (pipe_shift3), each stage at most two LUT levels.
#include <algorithm>
#include <string>

#include "core_lane.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;

namespace {

// The patched bits T-1 .. aw-1 of the shifter's input when the select's top bit is folded (R >= T
// = 2^(rw-1): q is the sign, the select is T-1, and the window it brings out is {sign..., h}),
// high bit first. pipe_acc writes h for R = aw as rmax ? sign : (rtop ? acc[T-1] : acc[T-2]),
// two LUT levels from the DSP's output (rmax implies rtop: the same value).
std::vector<Expr> patched_bits(Module& m, const CoreConfig& c, const LaneWidths& w,
                               const LaneShape& sh, const Expr& acc) {
  const int T = sh.top, aw = w.aw;
  const Expr sg = bit(acc, aw - 1), rtop = m.ref("rtop_i");
  std::vector<Expr> p;
  for (int i = aw - 1; i >= T; --i) p.push_back(mux(rtop, sg, bit(acc, i - 1)));
  if (T != aw - 1) {
    p.push_back(mux(rtop, sg, bit(acc, T - 2)));
  } else if (c.pipe_acc()) {
    p.push_back(mux(m.ref("rmax_i"), sg, mux(rtop, bit(acc, T - 1), bit(acc, T - 2))));
  } else {
    p.push_back(mux(rtop, mux(m.ref("rmax_i"), sg, bit(acc, T - 1)), bit(acc, T - 2)));
  }
  return p;
}

// {sign, patched bits, acc[T-3:0], 0}.
Expr patched_ext(const LaneWidths& w, const LaneShape& sh, const Expr& acc, std::vector<Expr> pb) {
  std::vector<Expr> parts{bit(acc, w.aw - 1)};
  for (auto& e : pb) parts.push_back(std::move(e));
  if (sh.top >= 3) parts.push_back(slice(acc, 0, sh.top - 2));
  parts.push_back(lit(1, 0));
  return cat(std::move(parts));
}

// One term of the tests before packing: 1-bit leaves and the per-job exemption bit (or none).
struct Item {
  std::vector<Expr> leaves;
  Expr tq;
};

// Packs items into terms of at most two LUT4 levels: level 1 reduces `chunk` leaves (sticky: OR,
// fits: AND), level 2 combines chunks with their items' exemption bits while at most four
// distinct inputs: sticky OR(c & tq), fits AND(c | tq).
// The level-1 chunks are wires with Yosys's keep attribute: ABC then maps each as one LUT (left
// to itself, it restructured these cones into three levels).
std::vector<Expr> pack(Module& m, const std::string& name, const std::vector<Item>& items,
                       bool fits, int chunk) {
  struct Chunk {
    Expr e, tq;
  };
  std::vector<Chunk> cs;
  for (const auto& it : items) {
    for (std::size_t i = 0; i < it.leaves.size(); i += chunk) {
      const auto b = it.leaves.begin() + static_cast<long>(i);
      const std::vector<Expr> part(
          b, b + static_cast<long>(std::min(it.leaves.size() - i, std::size_t(chunk))));
      Expr e = fits ? ex::all_and(part) : ex::all_or(part);
      if (part.size() > 1) {
        const Expr w = m.wire(name + "_c" + std::to_string(cs.size()), 1);
        m.attr_last("keep");
        m.assign(w, e);
        e = w;
      }
      cs.push_back({e, it.tq});
    }
  }
  std::vector<Expr> out, cur;
  std::vector<std::string> tqs;
  int inputs = 0;
  const auto flush = [&] {
    if (!cur.empty()) out.push_back(fits ? ex::all_and(cur) : ex::all_or(cur));
    cur.clear(), tqs.clear(), inputs = 0;
  };
  for (const auto& ch : cs) {
    const bool new_tq =
        ch.tq.valid() && std::find(tqs.begin(), tqs.end(), ch.tq.str()) == tqs.end();
    if (inputs + 1 + (new_tq ? 1 : 0) > 4) flush();
    const bool add_tq =
        ch.tq.valid() && std::find(tqs.begin(), tqs.end(), ch.tq.str()) == tqs.end();
    if (add_tq) tqs.push_back(ch.tq.str());
    inputs += 1 + (add_tq ? 1 : 0);
    cur.push_back(!ch.tq.valid() ? ch.e : fits ? ch.e | ch.tq : ch.e & ch.tq);
  }
  flush();
  return out;
}

// The sticky / fits items of one shifter part (select bits hi..lo: it shifts `in` by u =
// sel[hi:lo] * 2^lo), as part_tests in core_lane.cpp: sticky = in[u-1:0] has a bit set; fits =
// in[j] equals the sign for every j >= c0 + u in c0..ce. `used`: the tq bits read.
void part_items(Module& m, const LaneWidths& w, const Expr& in, std::pair<int, int> hl, int c0,
                int ce, std::vector<Item>& stk, std::vector<Item>& fit) {
  const auto [hi, lo] = hl;
  const int nt = (1 << (hi - lo + 1)) - 1;
  const Expr tq = m.ref("tq" + std::to_string(lo) + "_i");
  int used = 0;
  const auto tb = [&](int i) {
    used = std::max(used, i + 1);
    return nt == 1 ? tq : bit(tq, i);
  };
  for (int i = 0; i < nt && (i << lo) < w.ew; ++i) {
    Item it{{}, tb(i)};
    for (int j = i << lo; j < std::min((i + 1) << lo, w.ew); ++j) it.leaves.push_back(bit(in, j));
    stk.push_back(std::move(it));
  }
  if (w.sat() && c0 <= ce) {
    const Expr sg = bit(in, w.aw);
    for (int j = c0; j <= ce;) {
      const int i = (j - c0) >> lo;
      const int end = i < nt ? std::min(ce, c0 + ((i + 1) << lo) - 1) : ce;
      Item it{{}, i < nt ? tb(i) : Expr{}};
      for (; j <= end; ++j) it.leaves.push_back(~(bit(in, j) ^ sg));
      fit.push_back(std::move(it));  // beyond the thermometer (i >= nt): one item, never exempt
    }
  }
  if (used < nt) {
    m.assign(m.wire("unused_tq" + std::to_string(lo), 1, "beyond the accumulator"),
             ex::red_xor(slice(tq, used, nt - used)));
  }
}

// The fixed-R tests (a specialised core): sticky = acc[R-2:0] has a bit set (an item on acc's
// fixed bits, packed into LUTs); fits = acc[aw-1:R+nw-1] all equal the sign s = acc[aw-1], as
// carry chains on the data bits acc[aw-2:R+nw-1] in pieces of at most kFitPiece bits, no LUT4 in
// front of them: a piece's chain is {0, d, s} + {0, ~s..., 1}: its first cell carries s in, every
// data bit adds ~s (nsg_q, a register beside accr_q), so the carry out is "all ones" for s = 1
// (an AND chain) and "any one" for s = 0 (an OR chain); the piece holds only sign bits iff that
// carry equals s. The carries are registered (fxp_q: the chain's last LUT and its flip-flop share
// a logic cell) and combined with the sign in the next part's stage (fixed_fits). Returns the
// piece carries (empty when nothing to test).
constexpr int kFitPiece = 6;

// The fixed-R fits test's data bits acc[aw-2:R+nw-1] (none: no test, nsg_q is not made).
int fixed_fit_bits(const CoreConfig& c, const LaneWidths& w) {
  if (!c.has_fixed_shift() || !c.pipe_shift3() || !w.sat()) return 0;
  return std::max(0, w.aw - 1 - (c.fixed_shift + w.nw - 1));
}

// --target ice40 (`top`): each piece registers s ^ carry ("the piece holds a non-sign bit"), a
// LUT on the chain's carry out that nextpnr places as the chain's next cell, with the flip-flop
// in its logic cell (a bare carry out needs a pass-through cell and a route to fxp_q); the next
// stage's fits is then the NOR of the pieces.
std::vector<Expr> fixed_items(Module& m, const LaneWidths& w, int r, const Expr& acc,
                              std::vector<Item>& stk, bool top) {
  if (r >= 2) {
    Item s;
    for (int j = 0; j <= r - 2; ++j) s.leaves.push_back(bit(acc, j));
    stk.push_back(std::move(s));
  }
  const int p = r + w.nw - 1, nd = w.aw - 1 - p;
  if (!w.sat() || nd < 1) return {};  // as fixed_fit_bits
  const int np = std::min(3, (nd + kFitPiece - 1) / kFitPiece);
  const Expr s = bit(acc, w.aw - 1), nsg = m.ref("nsg_q");
  std::vector<Expr> co;
  for (int k = 0, lo = p; k < np; ++k) {
    const int n = (nd - (lo - p) + (np - k) - 1) / (np - k);  // the rest, evenly
    const std::string name = "fit_p" + std::to_string(k);
    const Expr sum = m.wire(name + "_s", n + 2,
                            "its carry out: acc[" + std::to_string(lo + n - 1) + ":" +
                                std::to_string(lo) + "] all ones (s = 1) / any one (s = 0)");
    m.assign(sum, cat({lit(1, 0), slice(acc, lo, n), s}) +
                      cat({lit(1, 0), ex::repl(n, nsg), lit(1, 1)}));
    m.assign(m.wire("unused_" + name, 1, "only the carry is used"),
             ex::red_xor(slice(sum, 0, n + 1)));
    co.push_back(top ? bit(sum, n + 1) ^ s : bit(sum, n + 1));
    lo += n;
  }
  return co;
}

// fits from the registered piece carries and the sign: every piece's carry equals the sign
// (`top`: the registered bits are carry ^ sign, every one 0).
Expr fixed_fits(const Expr& pq, const Expr& sg, bool top) {
  const int n = pq.width();
  if (top) return n == 1 ? ~pq : ~ex::red_or(pq);
  const Expr all = n == 1 ? pq : ex::red_and(pq), any = n == 1 ? pq : ex::red_or(pq);
  return (sg & all) | (~sg & ~any);
}

// Registers the groups carried from earlier parts reduced by one LUT level (chunks of four)
// beside this part's packed terms; returns the register vector (or an empty Expr).
Expr carry_terms(Module& m, std::vector<Flop>& ff, const std::string& name, const Expr& prev,
                 std::vector<Expr> now, bool fits) {
  std::vector<Expr> bits;
  if (prev.valid()) {
    for (int i = 0; i < prev.width(); i += 4) {
      const Expr p = slice(prev, i, std::min(4, prev.width() - i));
      bits.push_back(p.width() == 1 ? p : fits ? ex::red_and(p) : ex::red_or(p));
    }
  }
  for (auto& e : now) bits.push_back(std::move(e));
  if (bits.empty()) return Expr{};
  std::reverse(bits.begin(), bits.end());
  const int n = static_cast<int>(bits.size());
  const Expr d = m.wire(name, n, fits ? "fits groups (all must be 1)" : "sticky groups (any 1)");
  m.assign(d, cat(std::move(bits)));
  const Expr q = m.reg(name + "_q", n);
  ff.push_back(Flop{q, d, {}});
  return q;
}

// spec::early_round: the +1 decision from the last shifter part's output z (h = z[0], q's low
// bit z[1], the sign) and the sticky groups carried to it, in lane_inc's form (the keep groups of
// round_i, which the top still drives from round_q: its set-up logic stays as synthesis maps it
// for the other cores; folding the fixed mode in removed round_q and ABC then mapped the top's
// start / ready logic three LUTs deep).
Expr early_inc(Module& m, const LaneWidths& w, const Expr& z, const Expr& stk) {
  const Expr t = !stk.valid() ? lit(1, 0) : stk.width() == 1 ? stk : ex::red_or(stk);
  const IncGroups g = inc_groups(m, bit(z, 0), bit(z, 1), bit(z, w.ew - 1));
  const Expr inc = m.wire("inc", 1, "the +1 decision");
  m.assign(inc, g.a | g.b | (g.c & t));
  return inc;
}

}  // namespace

ShiftIn shift_input(Module& m, const CoreConfig& c, const Variant& v, const LaneWidths& w) {
  const LaneShape sh = lane_shape(v);
  Expr acc = m.ref("acc");
  const bool fold = sh.fold_top;
  std::vector<Expr> pb;
  if (fold) pb = patched_bits(m, c, w, sh, acc);
  if (c.pipe_acc()) {
    m.section("The accumulator in the fabric, after the DSP (and the shifter's patched bits)");
    std::vector<Flop> ff;
    const Expr aq = m.reg("accr_q", w.aw, "acc, registered in the fabric", true);
    ff.push_back(Flop{aq, acc, {}});
    if (fold) {
      const int n = static_cast<int>(pb.size());
      const Expr pq = m.reg("extp_q", n,
                            "the shifter input's bits " + std::to_string(sh.top - 1) + ".." +
                                std::to_string(w.aw - 1) + " (R >= T patch)");
      ff.push_back(Flop{pq, n == 1 ? pb[0] : cat(pb), {}});
      pb.clear();
      for (int i = n - 1; i >= 0; --i) pb.push_back(n == 1 ? pq : bit(pq, i));
    }
    if (fixed_fit_bits(c, w) >= 1) {  // the fits pieces' addend (fixed_items)
      const Expr nq = m.reg("nsg_q", 1, "~acc's sign: every data bit's addend in the fits chains");
      ff.push_back(Flop{nq, ~bit(acc, w.aw - 1), {}});
    }
    m.flops(ff, "end of the multiply-add");
    acc = aq;
  }
  const Expr ext = m.wire("ext", w.ew, "", true);
  m.assign(ext, fold ? patched_ext(w, sh, acc, std::move(pb)) : cat({acc, lit(1, 0)}));
  Expr ext0 = ext;
  if (fold && !c.has_fixed_shift()) {
    ext0 = m.wire("ext0", w.ew, "{acc, 0}", true);
    m.assign(ext0, cat({acc, lit(1, 0)}));
    m.assign(m.wire("unused_ext0", 1, "the tests read only some bits"), ex::red_xor(ext0));
  }
  return {ext, ext0, acc};
}

void shift_stages(Module& m, const LaneWidths& w, const Expr& sel, const Expr& src, int hi, int lo,
                  const Expr& out) {
  Expr cur = src;
  if (hi < lo) m.assign(out, src);
  for (int k = hi; k >= lo; --k) {
    const Expr sk = bit(sel, k);
    const Expr nm = k == lo ? out : m.wire("zr" + std::to_string(k), w.ew, "", true);
    m.assign(nm, ex::sra(cur, k == 0 ? sk : cat({sk, lit(k, 0)})));
    cur = nm;
  }
}

std::vector<Expr> lane_shift3(Module& m, const CoreConfig& c, const Variant& v, const LaneWidths& w,
                              const ShiftIn& in) {
  const LaneShape sh = lane_shape(v);
  const auto parts = sh.parts(3);
  const Expr sel = m.ref(sh.fold_top ? "lsh_i" : "shift_i");
  const bool fx = c.has_fixed_shift();
  Expr cur = in.ext, tin = in.ext0, stk, fit, fxp_q, inc_q;
  bool tested = false;  // the first non-empty part's tests read ext0 (unpatched)
  const bool same = in.ext0.str() == in.ext.str();
  for (int k = 0; k < 3; ++k) {
    const auto [hi, lo] = parts[static_cast<std::size_t>(k)];
    const std::string n = std::to_string(k + 1);
    const bool last = k == 2;
    m.section("Shifter part " + n + ": select bits " + std::to_string(hi) + ".." +
              std::to_string(lo) + (hi < lo ? " (none: a register only)" : ""));
    const Expr z = m.wire(last ? "z" : "z" + n, w.ew, "", true);
    shift_stages(m, w, sel, cur, hi, lo, z);
    std::vector<Item> si, fi;
    Expr ffit;  // the fixed-R fits term (from the registered piece carries)
    std::vector<Expr> fxp;
    if (k == 0 && fx) fxp = fixed_items(m, w, c.fixed_shift, in.acc, si, c.target == "ice40");
    if (k == 1 && fxp_q.valid()) ffit = fixed_fits(fxp_q, bit(cur, w.ew - 1), c.target == "ice40");
    if (k == 0 && sh.fold_top && !fx) {
      // R >= T: the select is T-1, which shifts out acc[T-3:0]; sticky also needs acc[R-2:T-2].
      const Expr hb = bit(in.acc, sh.top - 2);
      si.push_back(
          Item{{m.ref("rtop_i") &
                (sh.top == w.aw - 1 ? hb | (m.ref("rmax_i") & bit(in.acc, sh.top - 1)) : hb)},
               {}});
    }
    if (!fx && hi >= lo) {
      const int c0 = last ? w.nw : w.nw + (1 << lo);
      const int ce = k == 0 ? w.aw - 1 : std::min(w.aw - 1, w.nw + (1 << parts[k - 1].second) - 1);
      part_items(m, w, tested ? cur : tin, parts[static_cast<std::size_t>(k)], c0, ce, si, fi);
      tested = true;
    }
    std::vector<Flop> ff;
    const Expr zq = m.reg((last ? "z" : "z" + n) + "_q", w.ew, "", true);
    ff.push_back(Flop{zq, z, {}});
    if (last && spec::early_round(c)) {
      const Expr inc = early_inc(m, w, z, stk);  // reads stk: no sticky register after it
      inc_q = m.reg("inc_q", 1, "the +1 decision (R and the rounding fixed)");
      ff.push_back(Flop{inc_q, inc, {}});
      stk = Expr{};
    } else {
      stk = carry_terms(m, ff, "stk" + n, stk, pack(m, "stk" + n, si, false, 4), false);
    }
    if (w.sat()) {
      std::vector<Expr> now = pack(m, "fit" + n, fi, true, 3);
      if (ffit.valid()) now.push_back(ffit);
      fit = carry_terms(m, ff, "fit" + n, fit, std::move(now), true);
    }
    if (!fxp.empty()) {
      const int nf = static_cast<int>(fxp.size());
      std::reverse(fxp.begin(), fxp.end());
      fxp_q = m.reg("fxp_q", nf,
                    c.target == "ice40"
                        ? "the fits pieces' carries ^ the sign (0: only sign bits)"
                        : "the fits pieces' carries (equal to the sign: only sign bits)");
      ff.push_back(Flop{fxp_q, nf == 1 ? fxp[0] : cat(std::move(fxp)), {}});
    }
    if (!tested && !same) {  // an empty first part: ext0 registered beside it
      const Expr tq = m.reg("ext0_" + n + "_q", w.ew, "", true);
      ff.push_back(Flop{tq, tin, {}});
      m.assign(m.wire("unused_ext0_" + n, 1, "the tests read only some bits"), ex::red_xor(tq));
      tin = tq;
    }
    m.flops(ff, "end of shifter part " + n);
    cur = zq;
    if (!tested && same) tin = zq;
  }
  if (inc_q.valid()) return {cur, stk, fit, inc_q};
  return {cur, stk, fit};
}

Expr lane_lo(Module& m, const CoreConfig& c) {
  return lane_nlo(c) ? ~m.ref("nlo_i") : m.ref("lo_i");
}

Expr lane_keep_mask(Module& m, const CoreConfig& c, const LaneWidths& w, const Expr& y) {
  return lane_keep(c) ? mux(m.ref("keep_i"), y, lit(w.yw, 0)) : y;
}

void lane_round_early(Module& m, const CoreConfig& c, const LaneWidths& w,
                      const std::vector<Expr>& zsf) {
  const Expr &z = zsf[0], &inc = zsf[3];
  const int aw = w.aw, nw = w.nw, yw = w.yw, sw = nw + 2;
  m.section("Round: rqx = q + inc (q: the floor quotient's low " + std::to_string(nw) +
            " bits; inc registered beside the shifter's last part), one chain");
  const Expr qf = m.wire("qf", aw, "floor(acc / 2^R)");
  m.assign(qf, slice(z, 1, aw));
  m.assign(m.wire("unused_qf", 1, "above the saturated width, and h: fits and inc decide"),
           ex::red_xor(cat({slice(qf, nw, aw - nw), bit(z, 0)})));
  const Expr rqx = m.wire("rqx", nw + 1, "q + inc: the rounded quotient when q fits");
  const Expr qn = m.wire("qn", nw, "qf's low bits: qf itself when it fits");
  m.assign(qn, slice(qf, 0, nw));
  m.assign(rqx, ex::sext(qn, nw + 1) + ex::zext(inc, nw + 1));
  const bool sat = w.sat();
  std::vector<Flop> ff;
  const Expr rqq = m.reg("rqx_q", nw + 1);
  ff.push_back(Flop{rqq, rqx, {}});
  Expr fits, neg;
  const auto reg = [&](const std::string& name, const Expr& d) {
    const Expr q = m.reg(name, 1);
    ff.push_back(Flop{q, d, {}});
    return q;
  };
  if (sat) {
    fits = reg("fits_q", zsf[2].width() == 1 ? zsf[2] : ex::red_and(zsf[2]));
    neg = reg("neg_q", bit(z, aw));
  }
  m.flops(ff, "the rounded quotient");
  m.section("Clamp decisions: rqx against lo (= min(lo, hi)) and hi + 1, each the sign of one " +
            std::to_string(sw) + "-bit add rqx + (-k) (per-job -k)");
  const auto cmp = [&](const std::string& name, const char* bound, const std::string& what) {
    const Expr sum = m.wire(name + "_s", sw, "rqx - the bound: its sign is rqx < it");
    m.assign(sum, ex::sext(rqq, sw) + m.ref(bound));
    m.assign(m.wire("unused_" + name, 1, "the sum itself"), ex::red_xor(slice(sum, 0, sw - 1)));
    const Expr e = m.wire(name, 1, what);
    m.assign(e, bit(sum, sw - 1));
    return e;
  };
  const Expr blo = cmp("lt_lo", "lox_i", "rqx < lo");
  const Expr bhi = cmp("lt_hip1", "hip1_i", "rqx < hi + 1: not above");
  ff.clear();
  const Expr rqs = m.reg("rq_q", yw);
  ff.push_back(Flop{rqs, slice(rqq, 0, yw), {}});
  const Expr bl = reg("lt_lo_q", blo), nab = reg("lt_hip1_q", bhi);
  Expr fq, nq;
  if (sat) fq = reg("fits_q_q", fits), nq = reg("neg_q_q", neg);
  m.flops(ff, "end of rounding");
  lane_clamp_out(m, c, w, {rqs, bl, nab, fq, nq}, "rqx");
}

// early_write: y_o goes to the output buffer's RAM unregistered, so below / above are registered
// (one LUT after the compares' sign) and the clamp with the keep mask is two LUT levels, not
// three (above -> the hi select -> the lo select and keep), into the RAM's write data.
void lane_clamp_early(Module& m, const CoreConfig& c, const LaneWidths& w,
                      const std::vector<Expr>& qi, const Expr& blo, const Expr& bhi,
                      const Expr& rqs, std::vector<Flop>& ff) {
  const bool sat = qi[2].valid();
  const Expr blw = m.reg("below_q", 1, "rq < lo (or q does not fit and acc < 0)");
  const Expr abv = m.reg("above_q", 1, "rq > hi (or q does not fit and acc >= 0)");
  ff.push_back(Flop{blw, sat ? mux(qi[2], blo, qi[3]) : blo, {}});
  ff.push_back(Flop{abv, sat ? mux(qi[2], ~bhi, ~qi[3]) : ~bhi, {}});
  m.flops(ff, "end of rounding");
  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  m.assign(m.ref("y_o"),
           lane_keep_mask(m, c, w, mux(blw, lane_lo(m, c), mux(abv, m.ref("hi_i"), rqs))));
}

void lane_clamp_out(Module& m, const CoreConfig& c, const LaneWidths& w, const ClampRegs& r,
                    const std::string& rq) {
  const bool sat = r.fits.valid();
  const Expr blw = m.wire("below", 1, rq + " < lo (or q does not fit and acc < 0)");
  const Expr abv = m.wire("above", 1, rq + " > hi (or q does not fit and acc >= 0)");
  m.assign(blw, sat ? mux(r.fits, r.below, r.neg) : r.below);
  m.assign(abv, sat ? mux(r.fits, ~r.not_above, ~r.neg) : ~r.not_above);
  m.section("Clamp to [lo, hi] (lo_i = min(lo, hi): hi wins if lo > hi)");
  // (early_write cores use lane_clamp_early: never the specialised core's early_round)
  const Expr y = m.reg("y_q", w.yw);
  m.seq(
      {assign(y, lane_keep_mask(m, c, w, mux(blw, lane_lo(m, c), mux(abv, m.ref("hi_i"), r.rq))))});
  m.assign(m.ref("y_o"), y);
}

IncGroups inc_groups(Module& m, const Expr& h, const Expr& q0, const Expr& neg) {
  const Expr r = m.ref("round_i");
  const Expr ia = m.wire("inc_a", 1, "half_up, or half_even with q odd");
  m.attr_last("keep");
  m.assign(ia, h & (ex::eq(r, lit(2, 1)) | (ex::eq(r, lit(2, 2)) & q0)));
  const Expr ib = m.wire("inc_b", 1, "half_away with acc >= 0");
  m.attr_last("keep");
  m.assign(ib, h & ex::eq(r, lit(2, 3)) & ~neg);
  const Expr ic = m.wire("inc_c", 1, "half_even or half_away: + 1 when above the half");
  m.attr_last("keep");
  m.assign(ic, h & bit(r, 1));
  return {ia, ib, ic};
}
}  // namespace normcore::gen::core
