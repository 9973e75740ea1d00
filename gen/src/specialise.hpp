// Specialisation (CoreConfig::fixed_*, lanes_divide_channels) as hardware: the job checks the
// core (cfg_error_o) and the accelerator's controller (ERR_UNSUPPORTED) share, so both reject
// exactly what CoreConfig::check_job rejects. Private to the generator library.
#pragma once

#include <cstdint>

#include "normcore/config.hpp"
#include "normcore/gen/expr.hpp"

namespace normcore::gen::spec {

// The 2-bit rounding code of a fixed rounding mode (the cfg_round_i / MODE.rounding encoding).
inline std::uint64_t rounding_code(const CoreConfig& c) {
  return static_cast<std::uint64_t>(parse_rounding(c.fixed_rounding));
}
// The 1-bit layout code of a fixed layout (0 nchw, 1 nhwc).
inline std::uint64_t layout_code(const CoreConfig& c) {
  return static_cast<std::uint64_t>(parse_layout(c.fixed_layout));
}

// The specialised core on --target ice40 (issue 14, spec18): the flow control's private register
// copies (the positions' enable, err_q's start, the loader's word counter) hold the polarity of the
// register they copy (trc_q = tready_q, rdyc_q = ready_q, ld_rdc_q = ld_ready_q), their next value
// the original's written in De Morgan form (so that synthesis does not merge the two flip-flops),
// not its complement (ntr_q, nrdy_q, ld_nrd_q: ABC can map a complement as an inverter LUT after
// the shared node).
inline bool same_copies(const CoreConfig& c) {
  return c.specialised() && c.target == "ice40";
}
// The +1 before the clamp compares (issue 14, spec16; core_shift.cpp lane_round_early): R and a
// rounding that reads sticky fixed, the shifter in three parts and the saturation stage, iCE40.
// The +1 decision is registered beside the shifter's last part (its stages are wires when R is
// fixed) and q + inc is one chain of its own, so the compares read one registered value.
inline bool early_round(const CoreConfig& c) {
  const auto r = c.has_fixed_rounding() ? rounding_code(c) : 0;
  return c.has_fixed_shift() && (r == 2 || r == 3) && c.pipe_shift3() && c.pipe_sat() &&
         c.target == "ice40";
}

// 1 when the unsigned v is a multiple of the constant k >= 1, without a divider: k = 2^a * o
// (o odd), so v's low a bits are 0 and q = v >> a (n bits) is a multiple of o, which holds
// exactly when q * o^-1 mod 2^n <= (2^n - 1) / o (o^-1 the inverse of o modulo 2^n: the
// multiples of o are the only q that map into 0 .. (2^n - 1) / o). Needs k < 2^width(v).
inline Expr multiple_of(const Expr& v, long long k) {
  int a = 0;
  while (((k >> a) & 1) == 0) ++a;
  const auto o = static_cast<std::uint64_t>(k >> a);
  const int n = v.width() - a;
  Expr ok = a > 0 ? ex::eq(ex::slice(v, 0, a), ex::lit(a, 0)) : ex::lit(1, 1);
  if (o == 1) return ok;
  const std::uint64_t mask = n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
  std::uint64_t inv = o;  // Newton: each step doubles the correct low bits (o * o = 1 mod 8)
  for (int i = 0; i < 5; ++i) inv *= 2 - o * inv;
  const Expr prod = ex::slice(v, a, n) * ex::lit(n, inv & mask);
  const std::uint64_t bound = mask / o;
  const Expr in = bound == 0 ? ex::eq(prod, ex::lit(n, 0)) : ex::le(prod, ex::lit(n, bound));
  return a > 0 ? ok & in : in;
}

}  // namespace normcore::gen::spec
