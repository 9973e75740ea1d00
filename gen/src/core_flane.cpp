// The floating-point lane (core_flane.hpp): a pipelined fused multiply-add with one RNE rounding.
//
// Exactness with a narrow window. The product (PW = px + 24 bits, px = x's precision) and b
// (24 bits) are normalised (leading bit at the top of their fields); the one with the higher
// leading exponent (the anchor) is placed with its leading bit at window bit A = PW of a PW + 2
// bit window, the other shifted right to its scale with every bit shifted out ORed into bit 0
// (round to odd). The anchor's LSB is at window bit >= 1, so the anchor is a multiple of 2 LSBs
// and anchor + round_to_odd(other) = round_to_odd(anchor + other). The other loses bits only when
// its leading bit is at window bit <= A - 2, so then the sum's leading bit is at >= A - 1 and the
// output's LSB (at most 24 bits of precision, or higher for a subnormal result) at >= PW - 24 >= 8:
// the final rounding of the round-to-odd sum equals the rounding of the exact sum (the argument
// of docs/contract.md section 9, with A = PW instead of 124).
#include "core_flane.hpp"

#include <bit>
#include <cstdint>
#include <stdexcept>

#include "normcore/float_contract.hpp"
#include "normcore/gen/core.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

constexpr int kEw = 12;  // exponents: two's complement, 12 bits (|e| < 400 everywhere)
// Integer y: |sum| >= 2^kSat saturates (beyond every 8 / 16-bit range); the value before the
// clamp is kIw bits, two's complement (+-2^kSat fits).
constexpr int kSat = 17;
constexpr int kIw = kSat + 2;

Expr elit(int v) {  // a kEw-bit two's complement constant
  return lit(kEw, static_cast<std::uint64_t>(v) & ((1U << kEw) - 1));
}
Expr slt(const Expr& a, const Expr& b) {
  return ex::lt(ex::as_signed(a), ex::as_signed(b));
}

// The pipeline's builder: wires <name>_d and their registers <name>_q.
struct Pipe {
  Module& m;
  std::vector<Flop> ff;
  bool iy = false;  // integer y: an Inf flag instead of the NaN flag (NaN -> 0 in spv)
  Expr d(const std::string& name, const Expr& e, const std::string& comment = {}) {
    const Expr w = m.wire(name + "_d", e.width(), comment);
    m.assign(w, e);
    return w;
  }
  Expr w(const std::string& name, const Expr& e, const std::string& comment = {}) {
    const Expr x = m.wire(name, e.width(), comment);
    m.assign(x, e);
    return x;
  }
  // Registers d as <name>_q (d: a wire <name>_d, or any expression).
  Expr q(const std::string& name, const Expr& e) {
    const Expr r = m.reg(name + "_q", e.width());
    ff.push_back(Flop{r, e, {}});
    return r;
  }
  void end(const std::string& comment) {
    m.flops(ff, comment);
    ff.clear();
  }
};

// The special-value flags of stage k - 1 registered for stage k.
void carry(Pipe& p, int k) {
  const std::string a = std::to_string(k - 1), b = std::to_string(k);
  p.q("spec" + b, p.m.ref("spec" + a + "_q"));
  const std::string f = p.iy ? "inf" : "nan";
  p.q(f + b, p.m.ref(f + a + "_q"));
  p.q("spv" + b, p.m.ref("spv" + a + "_q"));
}

struct Unpacked {
  Expr sign, sig, exp, zero, inf, nan;
};

// Sign, significand with the hidden bit (0 for a zero), exponent of its LSB, class.
Unpacked unpack(Pipe& p, const std::string& n, const Expr& in, const FloatFormat& f, bool flush) {
  Unpacked u;
  const Expr e = slice(in, f.man_bits, f.exp_bits), man = slice(in, 0, f.man_bits);
  const Expr e0 = p.w(n + "_e0", ex::red_nor(e), "exponent field 0");
  const Expr e1 = p.w(n + "_e1", ex::red_and(e), "exponent field all ones");
  const Expr mz = p.w(n + "_mz", ex::red_nor(man), "fraction 0");
  u.sign = bit(in, f.bits - 1);
  u.zero = p.w(n + "_zero", flush ? e0 : e0 & mz, flush ? "zero or subnormal (flushed)" : "");
  u.inf = p.w(n + "_inf", e1 & mz);
  u.nan = p.w(n + "_nan", e1 & ~mz);
  const Expr sig = cat({~e0, man});
  u.sig = p.w(n + "_sig", flush ? mux(e0, lit(f.man_bits + 1, 0), sig) : sig,
              "significand with the hidden bit");
  const int off = f.bias() + f.man_bits;
  u.exp = p.w(n + "_exp", zext(mux(e0, lit(f.exp_bits, 1), e), kEw) + elit(-off),
              "exponent of the significand's LSB");
  return u;
}

// Shifts v left until its top bit is set (v != 0), one stage per count bit, the largest first:
// returns {the shifted value, the leading-zero count}.
std::pair<Expr, Expr> normalise(Pipe& p, const std::string& n, const Expr& v) {
  const int w = v.width();
  const int k = std::bit_width(static_cast<unsigned>(w - 1));
  Expr cur = v;
  std::vector<Expr> cnt;
  for (int i = k - 1; i >= 0; --i) {
    const int s = 1 << i;
    const std::string si = std::to_string(i);
    const Expr z = p.w(n + "_z" + si, ex::red_nor(slice(cur, w - s, s)),
                       "the top " + std::to_string(s) + " bits are 0");
    cnt.push_back(z);
    cur = p.w(n + "_n" + si, mux(z, cat({slice(cur, 0, w - s), lit(s, 0)}), cur));
  }
  return {cur, p.w(n + "_lz", cat(cnt), "leading zeros")};
}

// v >> amount (6 bits, >= v's width gives 0) with every bit shifted out ORed into bit 0.
Expr shr_jam(Pipe& p, const std::string& n, const Expr& v, const Expr& amount) {
  const int w = v.width();
  const Expr sh = p.w(n + "_sh", ex::shr(v, amount));
  // Beside the shifter, not after it: bit j is shifted out when j < amount.
  std::vector<Expr> below;
  for (int j = w - 1; j >= 0; --j)
    below.push_back(ex::lt(lit(6, static_cast<unsigned>(j)), amount));
  const Expr mask = p.w(n + "_out", cat(below), "bit j: j < the amount (shifted out)");
  const Expr lost = p.w(n + "_lost", ex::red_or(v & mask), "a 1 was shifted out");
  return sh | zext(lost, w);
}

// A kEw-bit non-negative amount saturated to 6 bits (63 >= every window).
Expr sat6(Pipe& p, const std::string& n, const Expr& amount) {
  const Expr d = amount.op() == Op::ref ? amount : p.w(n + "_full", amount);
  return p.w(n, mux(ex::red_or(slice(d, 6, kEw - 6)), lit(6, 63), slice(d, 0, 6)));
}

std::vector<std::string> description(const FlaneSpec& s, int ww) {
  const auto t = [](NumType x) { return std::string(to_string(x)); };
  if (s.y == NumType::integer) {
    return {
        "Float lane, integer y (contract v2): y = clamp(round(x * s + b), lo, hi), one rounding",
        "of the exact value with the job's mode (round_i); x " + t(s.x) + ", s and b fp32, y " +
            (s.y_signed ? "int" : "uint") + std::to_string(s.yw) +
            (s.flush ? ", subnormals flushed to signed zeros." : ", subnormals exact."),
        "NaN and zero sums -> 0, Inf and |sum| >= 2^" + std::to_string(kSat) +
            " saturate (then clamp).",
        "Exact sum in a " + std::to_string(ww) +
            "-bit window, the smaller operand jammed (round to odd).",
        "Stages (each ends in a register), latency " + std::to_string(kFlaneLatency) + ":",
        "  [unpack, product] [normalise p, b] [align] [add] [lzc, normalise] [shift to units]",
        "  [round, saturate] [clamp]",
        "No reset (pure datapath)."};
  }
  return {"Float lane (contract v2): y = clamp(RNE(x * s + b), lo, hi), one rounding of the exact",
          "value (fused multiply-add); x " + t(s.x) + ", s and b fp32, y " + t(s.y) +
              (s.flush ? ", subnormals flushed to signed zeros." : ", subnormals exact."),
          "NaN -> canonical quiet NaN (not clamped), Inf per IEEE, overflow -> Inf (then clamp).",
          "Exact sum in a " + std::to_string(ww) +
              "-bit window, the smaller operand jammed (round to odd).",
          "Stages (each ends in a register), latency " + std::to_string(kFlaneLatency) + ":",
          "  [unpack, product] [normalise p, b] [align] [add] [lzc, normalise] [denormalise]",
          "  [round, pack] [clamp]",
          "No reset (pure datapath)."};
}

// The special result: float y NaN / Inf / signed zero; integer y 0 (NaN, zeros) or +-2^kSat
// (Inf: saturates to lo / hi in the clamp).
Expr special_value(const FlaneSpec& s, const Expr& nan, const Expr& inf, const Expr& infn,
                   const Expr& zneg) {
  if (s.y == NumType::integer) {
    const Expr sat = mux(infn, lit(kIw, (1U << kIw) - (1U << kSat)), lit(kIw, 1U << kSat));
    return mux(inf, sat, lit(kIw, 0));
  }
  const FloatFormat fy = float_format(s.y);
  const int yw = fy.bits;
  const Expr ynan = lit(yw, canonical_nan(s.y));
  const Expr yinf = cat({infn, lit(yw - 1, fy.exp_mask())});
  const Expr yzero = cat({zneg, lit(yw - 1, 0)});
  return mux(nan, ynan, mux(inf, yinf, yzero));
}

// Stage 1: unpack, special values, the significand product.
void stage_unpack(Pipe& p, const FlaneSpec& s, int pw) {
  Module& m = p.m;
  const FloatFormat fx = float_format(s.x), f32 = float_format(NumType::fp32);
  m.section("Stage 1: unpack; special values; significand product");
  const Unpacked x = unpack(p, "x", m.ref("x_i"), fx, s.flush);
  const Unpacked sc = unpack(p, "s", m.ref("s_i"), f32, s.flush);
  const Unpacked b = unpack(p, "b", m.ref("b_i"), f32, s.flush);
  const Expr psign = p.d("psign", x.sign ^ sc.sign, "the product's sign");
  const Expr pinf = p.w("pinf", x.inf | sc.inf), pzero = p.d("pzero", x.zero | sc.zero);
  const Expr nan =
      p.d("nan", ex::all_or({x.nan, sc.nan, b.nan, pinf & pzero, pinf & b.inf & (psign ^ b.sign)}),
          "NaN in, 0 * Inf or Inf - Inf");
  const Expr inf = p.w("inf", ~nan & (pinf | b.inf));
  const Expr infn = p.w("inf_neg", mux(pinf, psign, b.sign));
  const Expr zero = p.w("zero", ~nan & ~inf & pzero & b.zero, "0 * s + 0, x * 0 + 0");
  const Expr spv =
      p.d("spv", special_value(s, nan, inf, infn, psign & b.sign), "the special result");
  const Expr spec = p.d("spec", nan | inf | zero, "special: NaN, Inf or a zero sum of zeros");
  const Expr psig = p.d("psig", zext(x.sig, pw) * zext(sc.sig, pw), "x.sig * s.sig, exact");
  const Expr pexp = p.d("pexp", x.exp + sc.exp);
  const Expr pbd = p.d("pbd", pexp - b.exp + elit(pw - 24),
                       "pexp - bexp + PW - 24: the leading bits' distance before normalising");
  for (const auto& [n, e] : std::vector<std::pair<std::string, Expr>>{{"psig", psig},
                                                                      {"pbd", pbd},
                                                                      {"pexp", pexp},
                                                                      {"psign", psign},
                                                                      {"pzero", pzero},
                                                                      {"bsig", b.sig},
                                                                      {"bexp", b.exp},
                                                                      {"bsign", b.sign},
                                                                      {"bzero", b.zero}}) {
    p.q(n, e);
  }
  p.q("spec1", spec);
  p.iy ? p.q("inf1", inf) : p.q("nan1", nan);
  p.q("spv1", spv);
  p.end("end of stage 1");
}

// Stage 2: the product and b normalised, the exponents of their leading bits.
void stage_norm(Pipe& p, int pw) {
  Module& m = p.m;
  m.section("Stage 2: normalise the product and b (leading bit at the top); anchor and shift");
  const auto [pn, plz] = normalise(p, "pn", m.ref("psig_q"));
  const auto [bn, blz] = normalise(p, "bn", m.ref("bsig_q"));
  const Expr ptop = p.d("ptop", m.ref("pexp_q") + elit(pw - 1) - zext(plz, kEw),
                        "exponent of the product's leading bit");
  const Expr btop = p.d("btop", m.ref("bexp_q") + elit(23) - zext(blz, kEw));
  const Expr ptb = p.d("ptb", m.ref("pbd_q") - zext(plz, kEw) + zext(blz, kEw), "ptop - btop");
  const Expr pa = p.d("pa", m.ref("bzero_q") | (~m.ref("pzero_q") & ~bit(ptb, kEw - 1)),
                      "the product is the anchor (ptop >= btop)");
  const Expr amt = p.d("amt", sat6(p, "dsat", mux(pa, ptb, elit(0) - ptb)),
                       "the other's right shift: |ptop - btop|, saturated");
  p.q("pn", pn), p.q("bn", bn), p.q("ptop", ptop), p.q("btop", btop);
  p.q("pa", pa), p.q("amt", amt);
  for (const char* n : {"psign", "bsign"}) p.q(std::string(n) + "2", m.ref(std::string(n) + "_q"));
  carry(p, 2);
  p.end("end of stage 2");
}

// Stage 3: alignment (the anchor at window bit pw, the other shifted with jamming).
void stage_align(Pipe& p, int pw) {
  Module& m = p.m;
  m.section("Stage 3: align: the anchor's leading bit at window bit " + std::to_string(pw) +
            ", the other shifted to its scale, bits shifted out jammed into bit 0");
  const Expr ptop = m.ref("ptop_q"), btop = m.ref("btop_q"), pa = m.ref("pa_q");
  const Expr pwin = p.w("pwin", cat({lit(1, 0), m.ref("pn_q"), lit(1, 0)}));
  const Expr bwin = p.w("bwin", cat({lit(1, 0), m.ref("bn_q"), lit(pw - 23, 0)}));
  const Expr other = p.w("other", mux(pa, bwin, pwin));
  const Expr oal = p.d("oal", shr_jam(p, "oal", other, m.ref("amt_q")));
  const Expr anc = p.d("anc", mux(pa, pwin, bwin));
  const Expr asign = p.d("asign", mux(pa, m.ref("psign2_q"), m.ref("bsign2_q")));
  const Expr sub = p.d("sub", m.ref("psign2_q") ^ m.ref("bsign2_q"), "signs differ: subtract");
  const Expr top = p.d("top", mux(pa, ptop, btop), "exponent of window bit " + std::to_string(pw));
  p.q("anc", anc), p.q("oal", oal), p.q("asign", asign), p.q("sub", sub), p.q("top", top);
  carry(p, 3);
  p.end("end of stage 3");
}

// Stage 4: sign-magnitude add.
void stage_add(Pipe& p) {
  Module& m = p.m;
  m.section("Stage 4: add or subtract the magnitudes");
  const Expr a = m.ref("anc_q"), o = m.ref("oal_q"), sub = m.ref("sub_q");
  const Expr ge = p.w("age", ex::ge(a, o), "anchor >= other");
  const Expr mag = p.d("mag", mux(sub, mux(ge, a - o, o - a), a + o), "|sum| (< 2^window)");
  const Expr neg = p.d("neg", m.ref("asign_q") ^ (sub & ~ge));
  p.q("mag", mag), p.q("neg", neg), p.q("top4", m.ref("top_q"));
  carry(p, 4);
  p.end("end of stage 4");
}

// Stage 5: leading-zero count and normalisation of the sum.
void stage_lzc(Pipe& p) {
  Module& m = p.m;
  m.section("Stage 5: leading-zero count, normalise the sum");
  const auto [nrm, lz] = normalise(p, "sn", m.ref("mag_q"));
  const Expr zs = p.d("zs", ex::red_nor(m.ref("mag_q")), "exact cancellation: +0");
  const Expr lead =
      p.d("lead", m.ref("top4_q") + elit(1) - zext(lz, kEw), "exponent of the sum's leading bit");
  p.q("nrm", nrm), p.q("lead", lead), p.q("zs", zs), p.q("neg5", m.ref("neg_q"));
  carry(p, 5);
  p.end("end of stage 5");
}

// Stage 6: a result below the smallest normal is shifted right (jammed) to the subnormal grid.
void stage_denorm(Pipe& p, const FloatFormat& fy) {
  Module& m = p.m;
  m.section("Stage 6: denormalise a result below the smallest normal exponent");
  const Expr lead = m.ref("lead_q");
  const Expr tiny = p.w("tiny", slt(lead, elit(fy.emin())), "below the smallest normal");
  const Expr dn = sat6(p, "dn", elit(fy.emin()) - lead);
  const Expr t = p.d("t", shr_jam(p, "t", m.ref("nrm_q"), mux(tiny, dn, lit(6, 0))));
  const Expr e = p.d("e", mux(tiny, elit(fy.emin()), lead), "the result's exponent");
  p.q("t", t), p.q("e", e), p.q("zs6", m.ref("zs_q")), p.q("neg6", m.ref("neg5_q"));
  carry(p, 6);
  p.end("end of stage 6");
}

// Stage 7: RNE, carry into the exponent, overflow to Inf, pack (flush a subnormal result).
void stage_round(Pipe& p, const FlaneSpec& s, int ww) {
  Module& m = p.m;
  const FloatFormat fy = float_format(s.y);
  const int pr = fy.man_bits + 1, yw = fy.bits;
  m.section("Stage 7: round to nearest even, pack");
  const Expr t = m.ref("t_q"), neg = m.ref("neg6_q");
  const Expr q = p.w("q", slice(t, ww - pr, pr), "the significand before rounding");
  const Expr g = p.w("g", bit(t, ww - pr - 1), "guard");
  const Expr st = p.w("st", ex::red_or(slice(t, 0, ww - pr - 1)), "sticky");
  const Expr inc = p.w("inc", g & (st | bit(q, 0)));
  const Expr qr = p.w("qr", zext(q, pr + 1) + zext(inc, pr + 1));
  const Expr cy = p.w("cy", bit(qr, pr), "rounded up to the next power of two");
  const Expr qf = p.w("qf", mux(cy, slice(qr, 1, pr), slice(qr, 0, pr)));
  const Expr re = p.w("re", m.ref("e_q") + zext(cy, kEw));
  const Expr ovf = p.w("ovf", slt(elit(fy.emax()), re), "overflow: Inf");
  const Expr bexp = p.w("bexp_y", re + elit(fy.bias()), "biased exponent");
  m.assign(m.wire("unused_bexp_y", 1, "above the exponent field"),
           ex::red_xor(slice(bexp, fy.exp_bits, kEw - fy.exp_bits)));
  const Expr subn = p.w("subn", ~bit(qf, pr - 1), "a subnormal result");
  const Expr frac = slice(qf, 0, fy.man_bits);
  const Expr norm = cat({neg, slice(bexp, 0, fy.exp_bits), frac});
  const Expr sub = s.flush ? cat({neg, lit(yw - 1, 0)}) : cat({neg, lit(fy.exp_bits, 0), frac});
  const Expr inf = cat({neg, lit(yw - 1, fy.exp_mask())});
  const Expr packed = p.w("ypack", mux(ovf, inf, mux(subn, sub, norm)));
  const Expr yr =
      p.d("yr", mux(m.ref("spec6_q"), m.ref("spv6_q"), mux(m.ref("zs6_q"), lit(yw, 0), packed)));
  p.q("yr", yr), p.q("nan7", m.ref("nan6_q"));
  p.end("end of stage 7");
}

// Integer y, stage 6: the sum shifted right (jammed) to put its units bit at window bit
// ww - kSat (|sum| < 2^kSat), or marked for saturation.
void stage_ishift(Pipe& p) {
  Module& m = p.m;
  m.section("Stage 6: integer y: units bit of the sum to a fixed position (jammed), or saturate");
  const Expr lead = m.ref("lead_q");
  const Expr big = p.d("big", ~slt(lead, elit(kSat)), "|sum| >= 2^" + std::to_string(kSat));
  const Expr sh = sat6(p, "ish", elit(kSat - 1) - lead);
  const Expr t = p.d("t", shr_jam(p, "t", m.ref("nrm_q"), sh));
  p.q("t", t), p.q("big", big), p.q("zs6", m.ref("zs_q")), p.q("neg6", m.ref("neg5_q"));
  carry(p, 6);
  p.end("end of stage 6");
}

// Integer y, stage 7: round to an integer with the job's mode (round_i), saturate, sign.
void stage_iround(Pipe& p, int ww) {
  Module& m = p.m;
  m.section("Stage 7: integer y: round (round_i), saturate, two's complement");
  const Expr t = m.ref("t_q"), neg = m.ref("neg6_q"), r = m.ref("round_i");
  const Expr q = p.w("q", slice(t, ww - kSat, kSat), "|sum| truncated");
  const Expr g = p.w("g", bit(t, ww - kSat - 1), "the half bit");
  const Expr st = p.w("st", ex::red_or(slice(t, 0, ww - kSat - 1)), "sticky");
  const Expr up = p.w("up",
                      mux(bit(r, 1), mux(bit(r, 0), g, g & (st | bit(q, 0))),
                          mux(bit(r, 0), g & (st | ~neg), neg & (g | st))),
                      "|sum| rounds up: 0 floor, 1 half_up, 2 half_even, 3 half_away");
  const Expr qa = p.w("qa", zext(q, kIw) + zext(up, kIw));
  const Expr sat = mux(neg, lit(kIw, (1U << kIw) - (1U << kSat)), lit(kIw, 1U << kSat));
  const Expr v = p.d(
      "v",
      mux(m.ref("spec6_q"), m.ref("spv6_q"),
          mux(m.ref("zs6_q"), lit(kIw, 0), mux(m.ref("big_q"), sat, mux(neg, ex::neg(qa), qa)))),
      "y before the clamp, two's complement");
  p.q("v", v), p.q("inf7", m.ref("inf6_q"));
  p.end("end of stage 7");
}

// Integer y, stage 8: min(max(v, lo), hi), lo / hi signed or unsigned per y.
void stage_iclamp(Pipe& p, const FlaneSpec& s) {
  Module& m = p.m;
  m.section(std::string("Stage 8: clamp to [lo, hi] (") + (s.y_signed ? "signed" : "unsigned") +
            "); lo > hi gives hi, except -Inf: lo");
  const Expr v = m.ref("v_q"), lo_i = m.ref("lo_i"), hi_i = m.ref("hi_i");
  auto ext = [&](const Expr& e) { return s.y_signed ? ex::sext(e, kIw) : zext(e, kIw); };
  const Expr lo = p.w("lo_x", ext(lo_i)), hi = p.w("hi_x", ext(hi_i));
  const Expr above = p.w("above", slt(hi, v) | slt(hi, lo), "v > hi, or lo > hi");
  const Expr y = p.d("y",
                     mux(m.ref("inf7_q"), mux(bit(v, kIw - 1), lo_i, hi_i),
                         mux(above, hi_i, mux(slt(v, lo), lo_i, slice(v, 0, s.yw)))),
                     "Inf: lo / hi as they are (apply_float), else min(max(v, lo), hi)");
  m.assign(m.ref("y_o"), p.q("y", y));
  p.end("end of stage 8");
}

// A sign-magnitude pattern as a two's complement key (-0 and +0 equal).
Expr key(Pipe& p, const std::string& n, const Expr& v) {
  const int w = v.width();
  const Expr mag = zext(slice(v, 0, w - 1), w);
  return p.w(n, mux(bit(v, w - 1), ex::neg(mag), mag));
}

// Stage 8: clamp (numeric compares), NaN passes unclamped.
void stage_clamp(Pipe& p, const FlaneSpec& s) {
  Module& m = p.m;
  m.section("Stage 8: clamp to [lo, hi] (numeric: -0 = +0); NaN is not clamped");
  const Expr yr = m.ref("yr_q");
  const Expr ky = key(p, "key_y", yr), kl = key(p, "key_lo", m.ref("lo_i"));
  const Expr kh = key(p, "key_hi", m.ref("hi_i"));
  const Expr yw = lit(yr.width(), canonical_nan(s.y));
  const Expr y =
      p.d("y", mux(m.ref("nan7_q"), yw,
                   mux(slt(ky, kl), m.ref("lo_i"), mux(slt(kh, ky), m.ref("hi_i"), yr))));
  m.assign(m.ref("y_o"), p.q("y", y));
  p.end("end of stage 8");
}

}  // namespace

bool flane_supports(const ArithSpec& a) {
  return (a.x_type == NumType::fp16 || a.x_type == NumType::bf16) &&
         (a.y_type != NumType::integer || a.yw == 8 || a.yw == 16);
}

Module build_flane(const FlaneSpec& s) {
  const bool iy = s.y == NumType::integer;
  const bool xok = s.x == NumType::fp16 || s.x == NumType::bf16;
  if (!xok || (iy && s.yw != 8 && s.yw != 16)) {
    throw std::invalid_argument(
        "build_flane: x must be fp16 or bf16 and y a float type or an "
        "8 / 16-bit integer");
  }
  const FloatFormat fx = float_format(s.x);
  const int yw = iy ? s.yw : float_bits(s.y);
  const int pw = fx.man_bits + 1 + 24, ww = pw + 2;
  Module m;
  m.name = s.name;
  m.description = description(s, ww);
  m.in("clk_i", 1);
  m.in("x_i", 16, std::string(to_string(s.x)));
  m.in("s_i", 32, "fp32");
  m.in("b_i", 32, "fp32");
  if (iy) m.in("round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away (job constant)");
  m.in("lo_i", yw,
       iy ? "clamp bounds (job constants)"
          : "clamp bounds: patterns of y, not NaN, lo <= hi (job constants)");
  m.in("hi_i", yw);
  m.out("y_o", yw);
  Pipe p{m, {}, iy};
  stage_unpack(p, s, pw);
  stage_norm(p, pw);
  stage_align(p, pw);
  stage_add(p);
  stage_lzc(p);
  if (iy) {
    stage_ishift(p);
    stage_iround(p, ww);
    stage_iclamp(p, s);
  } else {
    stage_denorm(p, float_format(s.y));
    stage_round(p, s, ww);
    stage_clamp(p, s);
  }
  return m;
}

}  // namespace normcore::gen::core

namespace normcore::gen {
bool float_lane_supported(const ArithSpec& a) {
  return core::flane_supports(a);
}
}  // namespace normcore::gen
