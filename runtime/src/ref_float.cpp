// The ref device's float kernel (ref_float.hpp).
#include "ref_float.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "detail/parallel.hpp"
#include "normcore/float_contract.hpp"
#include "normcore/util/bits.hpp"
#include "ref_float_lanes.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

// What one job's fast path needs, computed once: the target format, the decoded clamp bounds.
struct FastCtx {
  Target t;
  NumType xt = NumType::fp16, yt = NumType::fp16;
  bool flush = false;
  std::uint32_t x_exp = 0x7C00;  // the input's exponent mask
  std::uint32_t lo = 0, hi = 0;
  std::int64_t lo_key = 0, hi_key = 0;
  std::int64_t key(std::uint32_t v) const {  // numeric order of a non-NaN pattern (-0 == +0)
    const auto mag = static_cast<std::int64_t>(v & (t.sign_bit - 1));
    return (v & t.sign_bit) != 0 ? -mag : mag;
  }
  FastCtx(const ArithSpec& spec, const JobSettings& job)
      : t(spec.y_type == NumType::integer ? Target{} : target_of(spec.y_type)),
        xt(spec.x_type),
        yt(spec.y_type),
        flush(spec.flush_subnormals),
        x_exp(float_format(spec.x_type).exp_mask()),
        lo(static_cast<std::uint32_t>(job.lo)),
        hi(static_cast<std::uint32_t>(job.hi)) {
    lo_key = key(lo);
    hi_key = key(hi);
  }
};

// Every fp16 pattern as a float (exact), built once.
const float* half_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(0x10000);
    for (std::uint32_t h = 0; h < 0x10000; ++h) t[h] = half_to_float(h);
    return t;
  }();
  return table.data();
}

// One element on the fast path (x, s, b finite, s and b already flushed when asked).
inline std::uint32_t fma_one(std::uint32_t x, double sd, double bd, const FastCtx& c,
                             const float* halves) {
  if (c.flush && (x & c.x_exp) == 0) x &= 0x8000u;
  const float xf = c.xt == NumType::bf16 ? f32_of(x << 16) : halves[x];
  const double p = static_cast<double>(xf) * sd;  // exact: <= 11 x 24 bits
  double h = p + bd;
  std::uint32_t y;
  if (h == 0) {
    y = std::signbit(h) ? c.t.sign_bit : 0;  // IEEE's sign of an exact zero, as the double's
  } else {
    // TwoSum: p + bd = h + err exactly; jam: round to odd at the double's LSB
    const double bb = h - p;
    const double err = (p - (h - bb)) + (bd - bb);
    std::uint64_t u = dbits(h);
    if (err != 0 && (u & 1) == 0) u += ((err > 0) == (h > 0)) ? 1 : ~std::uint64_t{0};
    h = from_bits(u);
    y = round_double(h, c.t, c.flush);
  }
  const std::int64_t k = c.key(y);
  return k < c.lo_key ? c.lo : k > c.hi_key ? c.hi : y;
}

bool special(std::uint32_t v, std::uint32_t exp_mask) {
  return (v & exp_mask) == exp_mask;
}

std::uint32_t daz32(std::uint32_t v, bool flush) {
  return flush && (v & 0x7F800000u) == 0 ? v & 0x80000000u : v;
}

}  // namespace

bool fast_path(const ArithSpec& spec) {
  return spec.x_type != NumType::integer && spec.y_type != NumType::integer;
}

std::uint32_t fast_fma(std::uint32_t x, std::uint32_t s, std::uint32_t b, const ArithSpec& spec,
                       const JobSettings& job) {
  const FastCtx c(spec, job);
  if (special(x, c.x_exp) || special(s, 0x7F800000u) || special(b, 0x7F800000u)) {
    return static_cast<std::uint32_t>(apply_float(x, s, b, spec, job));  // NaN / Inf
  }
  const double sd = f32_of(daz32(s, c.flush));
  const double bd = f32_of(daz32(b, c.flush));
  return fma_one(x, sd, bd, c, half_table());
}

namespace {

// The host floating-point environment the fast path needs, on this thread while it lives: round
// to nearest, subnormals neither flushed nor read as zero (an application may run with FTZ /
// DAZ set); the caller's MXCSR, status flags included, is restored afterwards.
struct FpEnv {
#if defined(__x86_64__)
  unsigned saved = _mm_getcsr();
  FpEnv() {
    _mm_setcsr(0x1F80);
  }  // every exception masked, RN, no FTZ / DAZ
  ~FpEnv() {
    _mm_setcsr(saved);
  }
#endif
  FpEnv(const FpEnv&) = delete;
  FpEnv& operator=(const FpEnv&) = delete;
};

// Channel runs shorter than this (NHWC: 1) take the kernel with coefficients per position.
constexpr std::uint64_t kMinRun = 64;
// The per-position tables: a block of whole periods (C * stride positions), at least kMinBlock
// positions, for periods up to kMaxPeriod; longer periods run channel by channel.
constexpr std::uint64_t kMinBlock = 1024;
constexpr std::uint64_t kMaxPeriod = std::uint64_t{1} << 20;

// What a float job's fast path shares between its threads: the kernels of the clone in use and,
// for short channel runs, s and b (flushed when asked; flushing again in apply_float changes
// nothing) per position of one block.
struct FastPlan {
  LaneFn run = nullptr;    // s, b constant (one channel run)
  LaneFn table = nullptr;  // s, b per position
  std::vector<float> s, b;
  std::uint64_t block = 0;  // positions of the tables; 0: channel by channel
  bool finite = true;       // no NaN / Inf among the tables' s, b
};

float coeff(std::int64_t v, bool flush) {
  return f32_of(daz32(static_cast<std::uint32_t>(v), flush));
}

FastPlan plan_fast(const FloatKernel& k) {
  FastPlan p;
  const ArithSpec& a = k.spec;
  if (a.y_type == NumType::integer) {
    p.run = lane_int_kernel(a.x_type, a.yw, false, k.job.rounding, k.isa);
    p.table = lane_int_kernel(a.x_type, a.yw, true, k.job.rounding, k.isa);
  } else {
    p.run = lane_kernel(a.x_type, a.y_type, false, k.isa);
    p.table = lane_kernel(a.x_type, a.y_type, true, k.isa);
  }
  const std::uint64_t period = k.channels * k.stride;
  if (p.table == nullptr || k.stride >= kMinRun || period > kMaxPeriod) return p;
  p.block = period * ((kMinBlock + period - 1) / period);
  p.s.resize(static_cast<std::size_t>(p.block));
  p.b.resize(static_cast<std::size_t>(p.block));
  for (std::uint64_t j = 0; j < p.block; ++j) {
    const std::uint64_t c = (j / k.stride) % k.channels;
    p.s[static_cast<std::size_t>(j)] = coeff(k.scale[c], a.flush_subnormals);
    p.b[static_cast<std::size_t>(j)] = coeff(k.shift[c], a.flush_subnormals);
  }
  for (std::uint64_t c = 0; c < k.channels; ++c) {
    p.finite = p.finite && !special(static_cast<std::uint32_t>(k.scale[c]), 0x7F800000u) &&
               !special(static_cast<std::uint32_t>(k.shift[c]), 0x7F800000u);
  }
  return p;
}

// Float in over [e0, e1) (16-bit inputs; 16- or 32-bit float, or 8- / 16-bit integer outputs):
// the vector kernel, and the scalar path for NaN / Inf inputs and coefficients (fast_fma;
// apply_float for integer outputs).
void run_fast(const FloatKernel& k, const FastPlan& plan, const JobSettings& job, std::uint64_t e0,
              std::uint64_t e1) {
  const FastCtx c(k.spec, job);
  const float* halves = half_table();
  const auto yb = static_cast<std::uint64_t>(k.spec.yw / 8);
  const bool int_out = k.spec.y_type == NumType::integer;
  const bool long_job = e1 - e0 >= (std::uint64_t{1} << 16);  // table calls are one block each
  const auto put = [&](std::uint64_t e, std::uint32_t y) {    // the low yb bytes (little endian)
    const std::uint8_t b[4] = {static_cast<std::uint8_t>(y), static_cast<std::uint8_t>(y >> 8),
                               static_cast<std::uint8_t>(y >> 16),
                               static_cast<std::uint8_t>(y >> 24)};
    std::memcpy(k.out + yb * e, b, static_cast<std::size_t>(yb));
  };
  const auto one = [&](std::uint64_t e, float s, float b) {  // s, b flushed when asked
    std::uint16_t x;
    std::uint32_t sb, bb;
    std::memcpy(&x, k.in + 2 * e, 2);
    std::memcpy(&sb, &s, 4);
    std::memcpy(&bb, &b, 4);
    if (int_out || special(x, c.x_exp) || special(sb, 0x7F800000u) || special(bb, 0x7F800000u)) {
      return put(e, static_cast<std::uint32_t>(apply_float(x, sb, bb, k.spec, job)));
    }
    put(e, fma_one(x, s, b, c, halves));
  };
  // n elements from e through fn (s, b per position or s[0], b[0]); NaN / Inf x on the side
  const auto span = [&](LaneFn fn, std::uint64_t e, std::uint64_t n, const float* s, const float* b,
                        bool table) {
    std::uint64_t i = 0;
    while (i < n) {
      const LaneArgs a{table ? s + i : s,    table ? b + i : b, c.lo, c.hi, c.flush,
                       table && plan.finite, table && long_job};
      i += fn != nullptr ? fn(k.in + 2 * (e + i), k.out + yb * (e + i), n - i, a) : 0;
      for (const std::uint64_t end = std::min(n, i + kLaneWidth); i < end; ++i) {
        one(e + i, table ? s[i] : *s, table ? b[i] : *b);
      }
    }
  };
  if (plan.block != 0) {
    for (std::uint64_t e = e0, pos = e0 % plan.block; e < e1; pos = 0) {
      const std::uint64_t len = std::min(plan.block - pos, e1 - e);
      span(plan.table, e, len, plan.s.data() + pos, plan.b.data() + pos, true);
      e += len;
    }
#if defined(__x86_64__)
    if (long_job) _mm_sfence();  // the kernels' streaming stores (LaneArgs::stream)
#endif
    return;
  }
  std::uint64_t ch = (e0 / k.stride) % k.channels;
  for (std::uint64_t e = e0; e < e1;) {
    const std::uint64_t end = std::min(e1, e + k.stride - e % k.stride);  // one channel run
    const auto s = static_cast<std::uint32_t>(k.scale[ch]);
    const auto b = static_cast<std::uint32_t>(k.shift[ch]);
    if (special(s, 0x7F800000u) || special(b, 0x7F800000u)) {
      for (; e < end; ++e) {
        std::uint16_t x;
        std::memcpy(&x, k.in + 2 * e, 2);
        put(e, static_cast<std::uint32_t>(apply_float(x, s, b, k.spec, job)));
      }
    } else {
      const float sf = coeff(s, c.flush), bf = coeff(b, c.flush);
      span(plan.run, e, end - e, &sf, &bf, false);
      e = end;
    }
    if (++ch == k.channels) ch = 0;
  }
}

}  // namespace

void compute_float(const FloatKernel& k, std::uint64_t total, bool in_place, unsigned threads) {
  const ArithSpec& sp = k.spec;
  // float in, float out; or float in, 8- / 16-bit integers out within +-(2^22 - 1) when the
  // clone in use has kernels for them (ref_float_lanes.hpp)
  constexpr std::int64_t kIntLimit = (std::int64_t{1} << 22) - 1;
  const bool fast =
      fast_path(sp) ||
      (sp.x_type != NumType::integer && sp.y_type == NumType::integer && k.job.lo >= -kIntLimit &&
       k.job.hi <= kIntLimit && lane_int_kernel(sp.x_type, sp.yw, false, k.job.rounding, k.isa));
  const int xw = sp.xw, yw = sp.yw;
  JobSettings job = k.job;
  if (sp.y_type != NumType::integer) {  // patterns (the registers sign-extend them)
    job.lo = static_cast<std::int64_t>(static_cast<std::uint64_t>(job.lo) & bits::mask(yw));
    job.hi = static_cast<std::int64_t>(static_cast<std::uint64_t>(job.hi) & bits::mask(yw));
  }
  const FastPlan plan = fast ? plan_fast(k) : FastPlan{};
  auto range = [&](std::uint64_t e0, std::uint64_t e1) {
    if (fast) {
      const FpEnv env;
      run_fast(k, plan, job, e0, e1);
      return;
    }
    bits::Reader rd(k.in + e0 * static_cast<std::uint64_t>(xw) / 8);
    bits::Writer wr(k.out + e0 * static_cast<std::uint64_t>(yw) / 8);
    std::uint64_t c = (e0 / k.stride) % k.channels;
    std::uint64_t r = e0 % k.stride;
    for (std::uint64_t e = e0; e < e1; ++e) {
      const std::uint64_t raw = rd.get(xw);
      const auto s = static_cast<std::uint32_t>(k.scale[c]);
      const auto b = static_cast<std::uint32_t>(k.shift[c]);
      const std::int64_t x = sp.x_type == NumType::integer ? bits::to_int(raw, xw, sp.x_signed)
                                                           : static_cast<std::int64_t>(raw);
      const auto y = static_cast<std::uint64_t>(apply_float(x, s, b, sp, job)) & bits::mask(yw);
      wr.put(y, yw);
      if (++r == k.stride) {
        r = 0;
        if (++c == k.channels) c = 0;
      }
    }
    wr.flush();
  };
  // Ranges of whole 4096-element grains (byte-aligned at any width). In place, a range reads
  // its elements before writing them: equal widths split as out of place; a narrower output
  // would overwrite input a later range has not read yet: one range then.
  constexpr std::uint64_t kGrain = 4096;
  const unsigned parts = (in_place && xw != yw) || total < 4 * kGrain ? 1u : std::max(1u, threads);
  const std::uint64_t chunk = ((total + parts - 1) / parts + kGrain - 1) / kGrain * kGrain;
  normcore::detail::parallel_for(parts, parts, [&](std::uint64_t i) {
    const std::uint64_t e0 = i * chunk;
    const std::uint64_t e1 = std::min(total, e0 + chunk);
    if (e0 < e1) range(e0, e1);
  });
}

}  // namespace normcore::detail::ref
