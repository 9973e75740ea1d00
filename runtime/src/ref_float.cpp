// The ref device's float kernel (ref_float.hpp).
#include "ref_float.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "detail/parallel.hpp"
#include "normcore/float_contract.hpp"
#include "normcore/util/bits.hpp"

namespace normcore::detail::ref {

namespace {

std::uint64_t dbits(double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
}
double from_bits(std::uint64_t u) {
  double v;
  std::memcpy(&v, &u, 8);
  return v;
}
float f32_of(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// fp16 -> float, exact (normal, subnormal, zero; Inf / NaN never reach it).
float half_to_float(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1F;
  const std::uint32_t m = h & 0x3FF;
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-24f;
    return sign != 0 ? -v : v;
  }
  return f32_of(sign | ((e + 112) << 23) | (m << 13));
}

struct Target {
  int man = 10, bias = 15, emin = -14, emax = 15;
  std::uint32_t sign_bit = 0x8000, exp_mask = 0x7C00;
};

Target target_of(NumType t) {
  const FloatFormat f = float_format(t);
  return {f.man_bits, f.bias(), f.emin(), f.emax(), f.sign_bit(), f.exp_mask()};
}

// A normal double h (round-to-odd at 53 bits of the exact value) rounded to nearest even into
// the target; flush: a subnormal result becomes a signed zero.
std::uint32_t round_double(double h, const Target& t, bool flush) {
  const std::uint64_t u = dbits(h);
  const std::uint32_t sign = (u >> 63) != 0 ? t.sign_bit : 0;
  const int e = static_cast<int>((u >> 52) & 0x7FF) - 1023;
  const std::uint64_t sig = (u & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  if (e > t.emax) return sign | t.exp_mask;
  int sh = 52 - t.man;
  std::uint32_t ebias = 0;
  if (e < t.emin) {
    sh += t.emin - e;
  } else {
    ebias = static_cast<std::uint32_t>(e + t.bias);
  }
  sh = std::min(sh, 63);
  const std::uint64_t q = sig >> sh;
  const std::uint64_t rem = sig & ((std::uint64_t{1} << sh) - 1);
  const std::uint64_t half = std::uint64_t{1} << (sh - 1);
  std::uint32_t mag = (ebias << t.man) + (static_cast<std::uint32_t>(q) & ((1u << t.man) - 1));
  mag += (rem > half || (rem == half && (q & 1) != 0)) ? 1 : 0;
  if (mag >= t.exp_mask) mag = t.exp_mask;    // overflow: Inf
  if (flush && mag < (1u << t.man)) mag = 0;  // subnormal result
  return sign | mag;
}

bool finite_nonsub_ok(std::uint32_t v, NumType t) {
  const FloatFormat f = float_format(t);
  return (v & f.exp_mask()) != f.exp_mask();
}

}  // namespace

bool fast_path(const ArithSpec& spec) {
  return spec.x_type != NumType::integer && spec.y_type != NumType::integer;
}

std::uint32_t fast_fma(std::uint32_t x, std::uint32_t s, std::uint32_t b, const ArithSpec& spec,
                       const JobSettings& job) {
  const NumType xt = spec.x_type;
  if (!finite_nonsub_ok(x, xt) || !finite_nonsub_ok(s, NumType::fp32) ||
      !finite_nonsub_ok(b, NumType::fp32)) {
    return static_cast<std::uint32_t>(apply_float(x, s, b, spec, job));  // NaN / Inf
  }
  const bool flush = spec.flush_subnormals;
  auto daz = [&](std::uint32_t v, NumType t) {
    const FloatFormat f = float_format(t);
    return flush && (v & f.exp_mask()) == 0 ? v & f.sign_bit() : v;
  };
  x = daz(x, xt), s = daz(s, NumType::fp32), b = daz(b, NumType::fp32);
  const float xf = xt == NumType::bf16 ? f32_of(x << 16) : half_to_float(x);
  const double p = static_cast<double>(xf) * static_cast<double>(f32_of(s));  // exact
  const double bd = f32_of(b);
  double h = p + bd;
  const Target t = target_of(spec.y_type);
  std::uint32_t y;
  if (h == 0) {
    // exact zero: IEEE's sign (+0, or -0 for -0 + -0), which the double sum has
    y = std::signbit(h) ? t.sign_bit : 0;
  } else {
    // TwoSum: p + bd = h + err exactly; jam: round to odd at the double's LSB
    const double bb = h - p;
    const double err = (p - (h - bb)) + (bd - bb);
    std::uint64_t u = dbits(h);
    if (err != 0 && (u & 1) == 0) u += ((err > 0) == (h > 0)) ? 1 : -1;
    h = from_bits(u);
    y = round_double(h, t, flush);
  }
  // clamp (numeric: -0 == +0)
  const NumType yt = spec.y_type;
  const auto lo = static_cast<std::uint32_t>(job.lo);
  const auto hi = static_cast<std::uint32_t>(job.hi);
  if (float_compare(y, lo, yt) < 0) return lo;
  if (float_compare(y, hi, yt) > 0) return hi;
  return y;
}

void compute_float(const FloatKernel& k, std::uint64_t total, bool in_place, unsigned threads) {
  const ArithSpec& sp = k.spec;
  const bool fast = fast_path(sp);
  const int xw = sp.xw, yw = sp.yw;
  JobSettings job = k.job;
  if (sp.y_type != NumType::integer) {  // patterns (the registers sign-extend them)
    job.lo = static_cast<std::int64_t>(static_cast<std::uint64_t>(job.lo) & bits::mask(yw));
    job.hi = static_cast<std::int64_t>(static_cast<std::uint64_t>(job.hi) & bits::mask(yw));
  }
  auto range = [&](std::uint64_t e0, std::uint64_t e1) {
    bits::Reader rd(k.in + e0 * static_cast<std::uint64_t>(xw) / 8);
    bits::Writer wr(k.out + e0 * static_cast<std::uint64_t>(yw) / 8);
    std::uint64_t c = (e0 / k.stride) % k.channels;
    std::uint64_t r = e0 % k.stride;
    for (std::uint64_t e = e0; e < e1; ++e) {
      const std::uint64_t raw = rd.get(xw);
      const auto s = static_cast<std::uint32_t>(k.scale[c]);
      const auto b = static_cast<std::uint32_t>(k.shift[c]);
      std::uint64_t y;
      if (fast) {
        y = fast_fma(static_cast<std::uint32_t>(raw), s, b, sp, job);
      } else {
        const std::int64_t x = sp.x_type == NumType::integer ? bits::to_int(raw, xw, sp.x_signed)
                                                             : static_cast<std::int64_t>(raw);
        y = static_cast<std::uint64_t>(apply_float(x, s, b, sp, job)) & bits::mask(yw);
      }
      wr.put(y, yw);
      if (++r == k.stride) {
        r = 0;
        if (++c == k.channels) c = 0;
      }
    }
    wr.flush();
  };
  // byte-aligned ranges: a multiple of 8 elements each
  const unsigned parts = in_place || total < (1u << 16) ? 1u : std::max(1u, threads);
  const std::uint64_t chunk = ((total + parts - 1) / parts + 7) / 8 * 8;
  normcore::detail::parallel_for(parts, parts, [&](std::uint64_t i) {
    const std::uint64_t e0 = i * chunk;
    const std::uint64_t e1 = std::min(total, e0 + chunk);
    if (e0 < e1) range(e0, e1);
  });
}

}  // namespace normcore::detail::ref
