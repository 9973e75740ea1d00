// The core top's per-job lane constants (<n>_core): set-up register stages from the latched
// clamp bounds (and the lanes' shift constants, core_lane.cpp's lane_job_consts).
#include "core_internal.hpp"
#include "core_pos_lut.hpp"
#include "normcore/gen/ref_designs.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

// split_consts: lo > hi over two stages, each a carry chain of half the bits: lgl_q the low
// half's carry, then the high half's with lgl_q carried in (the chain from registers, half as
// long; one set-up cycle more).
void split_lgt(Module& m, int yw, const Expr& lgt) {
  const int h = yw / 2;
  const Expr a = m.ref("cmpa_q"), b = m.ref("cmpb_q");
  const Expr lgl =
      m.reg("lgl_q", 1,
            "the carry of cmpa_q + cmpb_q's low " + std::to_string(h) + " bits (set-up stage 1a)");
  const Expr lsum = m.wire("lgl_sum", h + 1, "low halves' sum: bit h is the carry");
  m.assign(lsum, zext(slice(a, 0, h), h + 1) + zext(slice(b, 0, h), h + 1));
  const Expr hsum =
      m.wire("lgt_sum", yw - h + 1, "high halves' sum + lgl_q: the top bit is lo > hi");
  m.assign(hsum, zext(slice(a, h, yw - h), yw - h + 1) + zext(slice(b, h, yw - h), yw - h + 1) +
                     zext(lgl, yw - h + 1));
  m.assign(m.wire("unused_lgt_sum", 1),
           ex::red_xor(cat({slice(lsum, 0, h), slice(hsum, 0, yw - h)})), "only the carries");
  m.seq({assign(lgl, bit(lsum, h)), assign(lgt, bit(hsum, yw - h))});
}

}  // namespace

// The checks that must all hold (C != 0 and HW != 0 apart: chunked, see config_latch).
std::vector<Expr> config_checks(const Module& m, const CoreConfig& c, const Variant& v) {
  const int cw = c.chan_bits(), rw = v.rw;
  // early_write (--target ice40): the bounds as and / or terms (le_bits: 6 LUT4 at 512 channels
  // and R <= 33, where Yosys makes 11 and 4 carries of the two compares)
  const auto le = [&](const Expr& x, int w, std::uint64_t k) {
    return early_write(c) ? le_bits(x, k) : ex::le(x, lit(w, k));
  };
  std::vector<Expr> ok;
  if (c.max_channels != (1LL << cw) - 1)
    ok.push_back(le(m.ref("cfg_channels_i"), cw, static_cast<std::uint64_t>(c.max_channels)));
  if (v.dec) {
    const auto w = decomposed_widths(c);
    const int k1max = w.dw + w.iw - 1;
    if (k1max != (1 << v.k1w) - 1)
      ok.push_back(ex::le(m.ref("cfg_k1_i"), lit(v.k1w, static_cast<std::uint64_t>(k1max))));
  }
  if (c.has_fixed_shift()) {
    ok.push_back(ex::eq(m.ref("cfg_shift_i"), lit(rw, static_cast<std::uint64_t>(c.fixed_shift))));
  } else if (v.aw != (1 << rw) - 1) {
    ok.push_back(le(m.ref("cfg_shift_i"), rw, static_cast<std::uint64_t>(v.aw)));
  }
  if (c.has_fixed_rounding())
    ok.push_back(ex::eq(m.ref("cfg_round_i"), lit(2, spec::rounding_code(c))));
  if (c.has_fixed_layout())
    ok.push_back(ex::eq(m.ref("cfg_layout_i"), lit(1, spec::layout_code(c))));
  // C % L == 0: for a power of two the low bits (one LUT) here, otherwise from ch_q (ok_q).
  if (c.lanes_divide_channels && c.lanes > 1 && (c.lanes & (c.lanes - 1)) == 0)
    ok.push_back(spec::multiple_of(m.ref("cfg_channels_i"), c.lanes));
  return ok;
}

// Per-job lane constants in set-up register stages from the latched lo_q / hi_q, so that no
// set-up path is longer than a beat path: lgt_q (one compare carry chain), then loe_q (one LUT per
// bit), then the negated bounds the lanes' clamp compares add (one carry chain each from a
// register, or inverters; two of them at pipeline >= 8, four below). The job's set-up and table
// load take many more cycles than these stages (docs/architecture.md, "Per-job constants").
void top_lane_consts(Module& m, const CoreConfig& c, const Variant& v) {
  const auto& a = c.arith;
  const int yw = a.yw;
  m.section("Per-job lane constants, in set-up register stages from the latched configuration");
  m.section("(valid long before the first beat)");
  if (a.is_float()) {  // lo / hi as latched, compared in the lanes; R unused (and the mode: float
                       // y)
    if (a.y_type == NumType::integer) {
      m.assign(m.wire("unused_job", 1), ex::red_xor(m.ref("shift_q")), "float lanes: no R");
    } else {
      m.assign(m.wire("unused_job", 1), ex::red_xor(cat({m.ref("shift_q"), m.ref("round_q")})),
               "float lanes: no R, no integer rounding mode");
    }
    return;
  }
  const Expr lo = m.ref("lo_q"), hi = m.ref("hi_q");
  // lo > hi: the carry out of lo' + ~hi' (split_consts: cmpa + cmpb, latched at start; else
  // lo_q + hip1_q, a stage later), one carry chain.
  const Expr lgt = m.reg("lgt_q", 1, "lo > hi (set-up stage 1, or 2 from hip1_q)");
  // lane_nlo: only nloe_q (the lanes invert it in their clamp select)
  const Expr loe = lane_nlo(c) ? Expr{}
                               : m.reg("loe_q", yw,
                                       "min(lo, hi): the clamp's lower bound (hi wins if lo > hi; "
                                       "stage 2)");
  if (split_consts(c) && yw >= 4) {
    split_lgt(m, yw, lgt);
    const Expr nloe =
        m.reg("nloe_q", yw,
              lane_nlo(c) ? "~min(lo, hi): the lanes' clamp lower bound, inverted (stage 2)"
                          : "~loe_q (the negation's chain without inverters)");
    if (lane_nlo(c))
      m.seq({assign(nloe, mux(lgt, ~hi, ~lo))});
    else
      m.seq({assign(loe, mux(lgt, hi, lo)), assign(nloe, mux(lgt, ~hi, ~lo))});
  } else {
    // lo' + (~hi)' from lo_q and hip1_q's low bits (= ~hi; a stage after hi_q), ' = the sign
    // bit flipped if signed
    const Expr hip1 = m.reg("hip1_q", yw + 3, std::to_string(yw + 3) + "-bit: -(hi + 1) = ~hi");
    const Expr gsum = m.wire("lgt_sum", yw + 1, "lo' + (~hi)': bit yw is lo > hi");
    m.assign(gsum,
             zext(sign_flipped(c, lo), yw + 1) + zext(sign_flipped(c, slice(hip1, 0, yw)), yw + 1));
    m.assign(m.wire("unused_lgt_sum", 1), ex::red_xor(slice(gsum, 0, yw)),
             "only the carry is used");
    m.seq({assign(lgt, bit(gsum, yw)), assign(loe, mux(lgt, hi, lo))});
  }
  lane_job_consts(m, c, v);
  const int xw2 = yw + 2;
  const auto ext = [&](const Expr& n) {
    return a.y_signed ? ex::sext(n, xw2 + 1) : zext(n, xw2 + 1);
  };
  // The lanes compare their signed quotient q with k by one add each: the sign of the
  // (xw2 + 1)-bit sum q + (-k) is q < k. So the constants are -k, (xw2 + 1)-bit two's complement,
  // each one subtraction from a register (-(hi + 1) = ~hi: no adder). Only -lo and -(hi + 1):
  // the lanes carry a 1 in for -(lo - 1) and -hi, or compare q + inc itself (pipeline >= 8).
  const std::string cw = std::to_string(xw2 + 1) + "-bit: -";
  // lane_nlo: -lo in yw + 1 bits (it fits; the lanes' port sign-extends it): a shorter chain
  const int lw = lane_nlo(c) ? yw + 1 : xw2 + 1;
  const Expr lox = m.reg("lox_q", lw, std::to_string(lw) + "-bit: -lo (lo = min(lo, hi); stage 3)");
  // -lo = ~ext(lo) + 1: with nloe_q the chain adds a constant to a register (no inverters).
  const bool sp = split_consts(c) && yw >= 4;
  const Expr hip1 = sp ? m.reg("hip1_q", xw2 + 1, cw + "(hi + 1) = ~hi") : m.ref("hip1_q");
  const Expr nlx = !sp          ? Expr{}
                   : a.y_signed ? ex::sext(m.ref("nloe_q"), lw)
                                : cat({ex::ones(lw - yw), m.ref("nloe_q")});
  // -(lo - 1) and -hi are these plus 1: the lanes carry the 1 in (core_lane.cpp lane_clamp).
  // split_consts (not the specialised core): ~ext(hi) from cmpb_q (~hi, its sign bit flipped if
  // signed; latched with hi_q): the low bits are its bits (no inverter a bit), the sign one LUT.
  Expr nhi = ~ext(hi);
  if (sp && !c.specialised()) {
    const Expr cb = m.ref("cmpb_q");
    nhi = a.y_signed ? cat({ex::repl(xw2 + 2 - yw, ~bit(cb, yw - 1)), slice(cb, 0, yw - 1)})
                     : cat({ex::ones(xw2 + 1 - yw), cb});
  }
  m.seq({assign(lox, sp ? nlx + lit(lw, 1) : lit(xw2 + 1, 0) - ext(loe)), assign(hip1, nhi)});
}

}  // namespace normcore::gen::core
