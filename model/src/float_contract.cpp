// The float contract (float_contract.hpp): integer significand arithmetic only. The stages are
// those of the float lane RTL; docs/contract.md, section 9, explains why one 128-bit window with
// a jammed (round-to-odd) LSB gives the exactly rounded result.
#include "normcore/float_contract.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace normcore {

namespace {

__extension__ using u128 = unsigned __int128;

constexpr FloatFormat kFp16{16, 5, 10};
constexpr FloatFormat kBf16{16, 8, 7};
constexpr FloatFormat kFp32{32, 8, 23};

// One operand: (-1)^sign * sig * 2^exp when finite.
struct Operand {
  enum class Kind : std::uint8_t { zero, finite, inf, nan };
  Kind kind = Kind::zero;
  bool sign = false;
  std::uint64_t sig = 0;
  int exp = 0;
};
using Kind = Operand::Kind;

Operand unpack(std::uint32_t bits, const FloatFormat& f, bool flush) {
  Operand o;
  o.sign = (bits & f.sign_bit()) != 0;
  const std::uint32_t e = (bits & f.exp_mask()) >> f.man_bits;
  const std::uint32_t m = bits & f.man_mask();
  if (e == (std::uint32_t{1} << f.exp_bits) - 1) {
    o.kind = m != 0 ? Kind::nan : Kind::inf;
  } else if (e == 0) {
    o.kind = (m == 0 || flush) ? Kind::zero : Kind::finite;  // flush: subnormal -> signed zero
    o.sig = o.kind == Kind::finite ? m : 0;
    o.exp = f.emin() - f.man_bits;
  } else {
    o.kind = Kind::finite;
    o.sig = m | (std::uint64_t{1} << f.man_bits);
    o.exp = static_cast<int>(e) - f.bias() - f.man_bits;
  }
  return o;
}

Operand unpack_int(std::int64_t x) {
  Operand o;
  o.kind = x == 0 ? Kind::zero : Kind::finite;
  o.sign = x < 0;
  o.sig = x < 0 ? 0 - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
  return o;
}

int msb64(std::uint64_t v) {
  return 63 - std::countl_zero(v);
}

int lzc128(u128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  const auto lo = static_cast<std::uint64_t>(v);
  return hi != 0 ? std::countl_zero(hi) : 64 + std::countl_zero(lo);
}

// v >> k with every bit shifted out ORed into bit 0 (round to odd at the window's LSB).
u128 shr_jam(u128 v, int k) {
  if (k <= 0) return v;
  if (k >= 128) return v != 0 ? 1 : 0;
  const u128 out = v >> k;
  return (v & ((u128{1} << k) - 1)) != 0 ? out | 1 : out;
}

// Stage 7: round sign * mag * 2^e0 (mag != 0) to nearest even in f; overflow -> Inf.
std::uint32_t round_pack(bool neg, u128 mag, int e0, const FloatFormat& f, bool flush,
                         FmaTrace* t) {
  const int p = f.man_bits + 1;
  const int lz = lzc128(mag);
  const int lead = 127 - lz + e0;  // exponent of the leading bit
  const int e = std::max(lead, f.emin());
  const int drop = e - (p - 1) - e0;  // bits below the output's LSB
  std::uint64_t q = 0;
  bool guard = false;
  bool sticky = false;
  if (drop <= 0) {
    q = static_cast<std::uint64_t>(mag << -drop);  // exact: q < 2^p
  } else if (drop > 128) {
    sticky = true;
  } else {
    q = drop == 128 ? 0 : static_cast<std::uint64_t>(mag >> drop);
    guard = ((mag >> (drop - 1)) & 1) != 0;
    sticky = (mag & ((u128{1} << (drop - 1)) - 1)) != 0;
  }
  int re = e;
  if (t != nullptr) {
    t->lzc = lz;
    t->lead_exp = lead;
    t->drop = drop;
    t->guard = guard;
    t->sticky = sticky;
  }
  if (guard && (sticky || (q & 1) != 0)) ++q;
  if ((q >> p) != 0) {  // rounded up to the next power of two
    q >>= 1;
    ++re;
  }
  if (t != nullptr) {
    t->q = q;
    t->res_exp = re;
  }
  const std::uint32_t sign = neg ? f.sign_bit() : 0;
  if (re > f.emax()) return sign | f.exp_mask();  // overflow: Inf
  if (q < (std::uint64_t{1} << (p - 1))) return flush ? sign : sign | static_cast<std::uint32_t>(q);
  return sign | (static_cast<std::uint32_t>(re + f.bias()) << f.man_bits) |
         (static_cast<std::uint32_t>(q) & f.man_mask());
}

// Stage 7 for an integer output: sign * mag * 2^e0 rounded to an integer under `mode`,
// saturated to the int64 range (the clamp follows).
std::int64_t round_int(bool neg, u128 mag, int e0, Rounding mode) {
  constexpr std::int64_t kBig = std::int64_t{1} << 62;
  if (e0 >= 0) {
    if (127 - lzc128(mag) + e0 >= 62) return neg ? -kBig : kBig;
    const auto v = static_cast<std::int64_t>(mag << e0);
    return neg ? -v : v;
  }
  const int k = -e0;
  u128 qa = 0;
  int cmp = -1;  // remainder vs half: -1 below, 0 equal, 1 above
  bool inexact = mag != 0;
  if (k < 128) {
    qa = mag >> k;
    const u128 rem = mag & ((u128{1} << k) - 1);
    const u128 half = u128{1} << (k - 1);
    cmp = rem < half ? -1 : rem == half ? 0 : 1;
    inexact = rem != 0;
  }
  bool up = false;  // round the magnitude up
  switch (mode) {
    case Rounding::floor:
      up = neg && inexact;
      break;
    case Rounding::half_up:
      up = cmp > 0 || (cmp == 0 && !neg);
      break;
    case Rounding::half_even:
      up = cmp > 0 || (cmp == 0 && (qa & 1) != 0);
      break;
    case Rounding::half_away:
      up = cmp >= 0;
      break;
  }
  if (up) ++qa;
  if (qa >= static_cast<u128>(kBig)) return neg ? -kBig : kBig;
  const auto v = static_cast<std::int64_t>(qa);
  return neg ? -v : v;
}

std::int64_t clamp_float(std::uint32_t y, NumType t, const JobSettings& job) {
  const auto lo = static_cast<std::uint32_t>(job.lo);
  const auto hi = static_cast<std::uint32_t>(job.hi);
  if (float_compare(y, lo, t) < 0) return lo;
  if (float_compare(y, hi, t) > 0) return hi;
  return y;
}

// The exact sum of the product and b (stages 2-6); returns false for an exact zero.
struct Sum {
  bool neg = false;
  u128 mag = 0;
  int e0 = 0;
};

Sum add_aligned(const Operand& ox, const Operand& os, const Operand& ob, FmaTrace& t) {
  // 2 significand product (exact: <= 32 x 24 bits)
  const bool pzero = ox.kind == Kind::zero || os.kind == Kind::zero;
  t.psig = pzero ? 0 : ox.sig * os.sig;
  t.pexp = ox.exp + os.exp;
  const bool psign = ox.sign != os.sign;
  // 3 alignment: the anchor's leading bit at kFmaAnchor, e0 = exponent of the window's LSB
  const bool bzero = ob.kind == Kind::zero;
  const int ptop = pzero ? std::numeric_limits<int>::min() : t.pexp + msb64(t.psig);
  const int btop = bzero ? std::numeric_limits<int>::min() : ob.exp + msb64(ob.sig);
  t.product_anchor = ptop >= btop;
  const int top = t.product_anchor ? ptop : btop;
  t.e0 = top - kFmaAnchor;
  auto place = [&](std::uint64_t sig, int exp) -> u128 {
    const int sh = exp - t.e0;  // left shift of sig into the window
    return sh >= 0 ? u128{sig} << sh : shr_jam(u128{sig}, -sh);
  };
  const u128 pa = pzero ? 0 : place(t.psig, t.pexp);
  const u128 ba = bzero ? 0 : place(ob.sig, ob.exp);
  // 4 add (signed magnitudes; both < 2^125, so the sum < 2^126)
  Sum s;
  s.e0 = t.e0;
  if (psign == ob.sign) {
    s.mag = pa + ba;
    s.neg = psign;
  } else {
    s.neg = pa >= ba ? psign : ob.sign;
    s.mag = pa >= ba ? pa - ba : ba - pa;
  }
  t.sum_negative = s.neg;
  t.sum_hi = static_cast<std::uint64_t>(s.mag >> 64);
  t.sum_lo = static_cast<std::uint64_t>(s.mag);
  return s;
}

}  // namespace

FloatFormat float_format(NumType t) {
  switch (t) {
    case NumType::fp16:
      return kFp16;
    case NumType::bf16:
      return kBf16;
    case NumType::fp32:
      return kFp32;
    case NumType::integer:
      break;
  }
  throw std::invalid_argument("float_format: not a float type");
}

std::uint32_t canonical_nan(NumType t) {
  const FloatFormat f = float_format(t);
  return f.exp_mask() | (std::uint32_t{1} << (f.man_bits - 1));
}

std::uint32_t float_inf(NumType t, bool negative) {
  const FloatFormat f = float_format(t);
  return (negative ? f.sign_bit() : 0) | f.exp_mask();
}

std::uint32_t float_max(NumType t, bool negative) {
  return float_inf(t, negative) - 1;
}

bool is_nan(std::uint32_t bits, NumType t) {
  const FloatFormat f = float_format(t);
  return (bits & f.exp_mask()) == f.exp_mask() && (bits & f.man_mask()) != 0;
}

int float_compare(std::uint32_t a, std::uint32_t b, NumType t) {
  const FloatFormat f = float_format(t);
  auto key = [&](std::uint32_t v) {
    const auto mag = static_cast<std::int64_t>(v & ~f.sign_bit() & ((f.sign_bit() << 1) - 1));
    return (v & f.sign_bit()) != 0 ? -mag : mag;
  };
  const auto ka = key(a);
  const auto kb = key(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

double float_to_double(std::uint32_t bits, NumType t) {
  const Operand o = unpack(bits, float_format(t), false);
  switch (o.kind) {
    case Kind::nan:
      return std::numeric_limits<double>::quiet_NaN();
    case Kind::inf:
      return o.sign ? -HUGE_VAL : HUGE_VAL;
    case Kind::zero:
      return o.sign ? -0.0 : 0.0;
    case Kind::finite:
      break;
  }
  const double m = std::ldexp(static_cast<double>(o.sig), o.exp);
  return o.sign ? -m : m;
}

std::uint32_t double_to_float(double v, NumType t, bool flush) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  const FloatFormat f = float_format(t);
  const bool neg = (bits >> 63) != 0;
  const std::uint32_t sign = neg ? f.sign_bit() : 0;
  const auto e = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t m = bits & ((std::uint64_t{1} << 52) - 1);
  if (e == 0x7FF) return m != 0 ? canonical_nan(t) : sign | f.exp_mask();
  if (e == 0 && m == 0) return sign;
  const std::uint64_t sig = e == 0 ? m : m | (std::uint64_t{1} << 52);
  const int exp = (e == 0 ? 1 : e) - 1075;
  return round_pack(neg, u128{sig}, exp, f, flush, nullptr);
}

void apply_float_widths(ArithSpec& spec) {
  if (!spec.is_float()) return;
  if (spec.x_type != NumType::integer) spec.xw = float_bits(spec.x_type);
  if (spec.y_type != NumType::integer) spec.yw = float_bits(spec.y_type);
  spec.sw = spec.bw = 32;
}

ArithSpec float_spec(NumType x, NumType y, bool flush_subnormals) {
  ArithSpec a;
  a.x_type = x;
  a.y_type = y;
  a.flush_subnormals = flush_subnormals;
  apply_float_widths(a);
  return a;
}

JobSettings float_job(const ArithSpec& spec) {
  JobSettings j;
  j.shift = 0;
  if (spec.y_type == NumType::integer) {
    j.lo = spec.y_min();
    j.hi = spec.y_max();
  } else {
    j.lo = float_inf(spec.y_type, true);
    j.hi = float_inf(spec.y_type, false);
  }
  return j;
}

std::int64_t apply_float(std::int64_t x, std::uint32_t s, std::uint32_t b, const ArithSpec& spec,
                         const JobSettings& job, FmaTrace* trace) {
  FmaTrace local;
  FmaTrace& t = trace != nullptr ? *trace : local;
  const bool flush = spec.flush_subnormals;
  // 1 unpack
  const Operand ox = spec.x_type == NumType::integer
                         ? unpack_int(x)
                         : unpack(static_cast<std::uint32_t>(x), float_format(spec.x_type), flush);
  const Operand os = unpack(s, kFp32, flush);
  const Operand ob = unpack(b, kFp32, flush);
  t.xs = ox.sign, t.ss = os.sign, t.bs = ob.sign;
  t.xsig = ox.sig, t.ssig = os.sig, t.bsig = ob.sig;
  t.xexp = ox.exp, t.sexp = os.exp, t.bexp = ob.exp;
  // Special values (IEEE 754 fusedMultiplyAdd): NaN, Inf, exact zeros.
  const bool pinf = ox.kind == Kind::inf || os.kind == Kind::inf;
  const bool pzero = ox.kind == Kind::zero || os.kind == Kind::zero;
  const bool psign = ox.sign != os.sign;
  const bool binf = ob.kind == Kind::inf;
  const bool nan = ox.kind == Kind::nan || os.kind == Kind::nan || ob.kind == Kind::nan ||
                   (pinf && pzero) || (pinf && binf && psign != ob.sign);
  const bool inf = !nan && (pinf || binf);
  const bool inf_neg = pinf ? psign : ob.sign;
  const bool zero = !nan && !inf && pzero && ob.kind == Kind::zero;
  const bool is_int = spec.y_type == NumType::integer;
  auto clamp_int = [&](std::int64_t v) { return std::min(std::max(v, job.lo), job.hi); };
  t.special = nan || inf || zero;
  if (t.special) {
    if (is_int) return nan || zero ? clamp_int(0) : inf_neg ? job.lo : job.hi;
    const FloatFormat f = float_format(spec.y_type);
    if (nan) return canonical_nan(spec.y_type);  // NaN is not clamped
    if (inf) return clamp_float((inf_neg ? f.sign_bit() : 0) | f.exp_mask(), spec.y_type, job);
    // -0 + -0 = -0, every other sum of zeros +0 (round to nearest)
    return clamp_float(psign && ob.sign ? f.sign_bit() : 0, spec.y_type, job);
  }
  const Sum sum = add_aligned(ox, os, ob, t);
  if (sum.mag == 0) {  // exact cancellation: +0 under round to nearest
    if (is_int) return clamp_int(0);
    return clamp_float(0, spec.y_type, job);
  }
  // 5-7 leading-zero count, normalise, round; 8 clamp
  if (is_int) return clamp_int(round_int(sum.neg, sum.mag, sum.e0, job.rounding));
  const std::uint32_t y =
      round_pack(sum.neg, sum.mag, sum.e0, float_format(spec.y_type), flush, &t);
  return clamp_float(y, spec.y_type, job);
}

}  // namespace normcore
