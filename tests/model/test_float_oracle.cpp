// The float contract (apply_float) against an independent exact oracle: MPFR (test-only
// dependency, libmpfr-dev). Every fp16 and every bf16 input x, for a few hundred (s, b) pairs
// (directed: ties, subnormals, overflow, signed zeros, NaN / Inf; and random), every output type
// (fp16, bf16, fp32, int8 / uint8 / int16 with every rounding mode), with and without the flush
// flag; integer inputs (int8, uint8, int16: every value) with float outputs. The oracle rounds the
// exact MPFR value of x * s + b once, with the target's precision and exponent range
// (mpfr_check_range + mpfr_subnormalize), and encodes the result with its own code.
#include <gmp.h>
#include <mpfr.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "normcore/float_contract.hpp"

using normcore::ArithSpec;
using normcore::JobSettings;
using normcore::NumType;
using normcore::Rounding;

namespace {

struct Fmt {
  int bits, ebits, mbits;
};
Fmt fmt(NumType t) {
  return t == NumType::fp16 ? Fmt{16, 5, 10} : t == NumType::bf16 ? Fmt{16, 8, 7} : Fmt{32, 8, 23};
}

// The test's own decoding of a pattern: class and exact double value.
bool is_sub(std::uint32_t v, Fmt f) {
  const std::uint32_t e = (v >> f.mbits) & ((1u << f.ebits) - 1);
  return e == 0 && (v & ((1u << f.mbits) - 1)) != 0;
}
double decode(std::uint32_t v, Fmt f) {
  const bool neg = (v >> (f.bits - 1)) & 1;
  const int e = static_cast<int>((v >> f.mbits) & ((1u << f.ebits) - 1));
  const double m = v & ((1u << f.mbits) - 1);
  const int bias = (1 << (f.ebits - 1)) - 1;
  double r;
  if (e == (1 << f.ebits) - 1) {
    r = m != 0 ? NAN : INFINITY;
  } else if (e == 0) {
    r = std::ldexp(m, 1 - bias - f.mbits);
  } else {
    r = std::ldexp(m + std::ldexp(1.0, f.mbits), e - bias - f.mbits);
  }
  return neg ? -r : r;
}
// Encodes a double that is exactly representable in f (or +-Inf / NaN -> canonical).
std::uint32_t encode(double d, Fmt f) {
  const std::uint32_t sign = std::signbit(d) ? 1u << (f.bits - 1) : 0;
  const std::uint32_t emask = ((1u << f.ebits) - 1) << f.mbits;
  if (std::isnan(d)) return emask | (1u << (f.mbits - 1));
  if (std::isinf(d)) return sign | emask;
  d = std::fabs(d);
  if (d == 0) return sign;
  const int bias = (1 << (f.ebits - 1)) - 1;
  const double min_normal = std::ldexp(1.0, 1 - bias);
  if (d < min_normal) return sign | static_cast<std::uint32_t>(std::ldexp(d, bias - 1 + f.mbits));
  int e = 0;
  const double m = std::frexp(d, &e);  // d = m * 2^e, 0.5 <= m < 1
  const auto man = static_cast<std::uint32_t>(std::ldexp(m * 2 - 1, f.mbits));
  return sign | (static_cast<std::uint32_t>(e - 1 + bias) << f.mbits) | man;
}
std::uint32_t flush_in(std::uint32_t v, Fmt f) {
  return is_sub(v, f) ? v & (1u << (f.bits - 1)) : v;
}

struct Oracle {
  mpfr_t x, s, b, prod, exact, r, tmp;
  Oracle() {
    mpfr_inits2(64, x, s, b, prod, static_cast<mpfr_ptr>(nullptr));
    mpfr_init2(exact, 640);
    mpfr_init2(tmp, 640);
    mpfr_init2(r, 24);
  }
  ~Oracle() { mpfr_clears(x, s, b, prod, exact, r, tmp, static_cast<mpfr_ptr>(nullptr)); }
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  // exact = x * s + b (NaN for invalid operations, as IEEE); x, s, b already set.
  void fma_exact() {
    mpfr_mul(prod, x, s, MPFR_RNDN);      // exact: <= 32 x 24 bits in 64
    mpfr_add(exact, prod, b, MPFR_RNDN);  // exact in 640 bits
  }
  // The float result pattern of `exact` rounded into t (flush: subnormal -> signed zero).
  std::uint32_t to_float(NumType t, bool flush) {
    const Fmt f = fmt(t);
    if (mpfr_nan_p(exact)) return encode(NAN, f);
    mpfr_set_prec(r, f.mbits + 1);
    int tern = mpfr_set(r, exact, MPFR_RNDN);
    const int bias = (1 << (f.ebits - 1)) - 1;
    const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(1 - bias - f.mbits + 1);
    mpfr_set_emax(bias + 1);
    tern = mpfr_check_range(r, tern, MPFR_RNDN);
    mpfr_subnormalize(r, tern, MPFR_RNDN);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    const double d = mpfr_get_d(r, MPFR_RNDN);  // exact
    const std::uint32_t y = encode(d, f);
    return flush && is_sub(y, f) ? y & (1u << (f.bits - 1)) : y;
  }
  std::int64_t to_int(Rounding mode, std::int64_t lo, std::int64_t hi) {
    if (mpfr_nan_p(exact)) return std::clamp<std::int64_t>(0, lo, hi);
    if (mpfr_inf_p(exact)) return mpfr_sgn(exact) < 0 ? lo : hi;
    switch (mode) {
      case Rounding::floor:
        mpfr_floor(tmp, exact);
        break;
      case Rounding::half_up:
        mpfr_add_d(tmp, exact, 0.5, MPFR_RNDN);  // exact in 640 bits
        mpfr_floor(tmp, tmp);
        break;
      case Rounding::half_even:
        mpfr_rint(tmp, exact, MPFR_RNDN);
        break;
      case Rounding::half_away:
        mpfr_round(tmp, exact);
        break;
    }
    if (mpfr_cmp_si(tmp, lo) < 0) return lo;
    if (mpfr_cmp_si(tmp, hi) > 0) return hi;
    return mpfr_get_si(tmp, MPFR_RNDN);
  }
};

// The fast oracle path (independent of MPFR and of the model): p = x * s is exact in a double
// (<= 40 significant bits here), TwoSum gives p + b = hi + lo exactly, and hi + lo is rounded
// once: RNE of hi with nearbyint on its scaled value, corrected only when hi is exactly a
// midpoint of the target grid (then lo decides; hi = RN(hi + lo) excludes every other case).
struct Fast {
  bool nan = false;
  double hi = 0, lo = 0;
  void set(double x, double s, double b) {
    const double p = x * s;
    hi = p + b;
    nan = std::isnan(hi);
    if (!std::isfinite(hi) || !std::isfinite(p)) {
      lo = 0;
      return;
    }
    const double bb = hi - p;
    lo = (p - (hi - bb)) + (b - bb);
  }
  std::uint32_t to_float(NumType t, bool flush) const {
    const Fmt f = fmt(t);
    if (nan) return encode(NAN, f);
    if (std::isinf(hi) || hi == 0) return encode(hi, f);  // exact zero: hi's sign is IEEE's
    const int bias = (1 << (f.ebits - 1)) - 1;
    int e = 0;
    std::frexp(hi, &e);
    const int lsb = std::max(e - 1, 1 - bias) - f.mbits;  // exponent of the target's LSB
    const double t0 = std::ldexp(std::fabs(hi), -lsb);    // exact
    double q = std::nearbyint(t0);                        // RNE (default rounding mode)
    if (t0 - std::floor(t0) == 0.5 && lo != 0) {
      q = (lo > 0) == (hi > 0) ? std::ceil(t0) : std::floor(t0);
    }
    double r = std::ldexp(q, lsb);
    const double max = std::ldexp(std::ldexp(2.0, f.mbits) - 1, bias - f.mbits);
    if (r > max) r = INFINITY;
    r = hi < 0 ? -r : r;
    const std::uint32_t y = encode(r, f);
    return flush && is_sub(y, f) ? y & (1u << (f.bits - 1)) : y;
  }
  std::int64_t to_int(Rounding mode, std::int64_t lo_b, std::int64_t hi_b) const {
    if (nan) return std::clamp<std::int64_t>(0, lo_b, hi_b);
    if (hi > 0x1p40) return hi_b;
    if (hi < -0x1p40) return lo_b;
    const double fl = std::floor(hi);
    const double frac = hi - fl;  // exact
    double r = fl;
    const double half = frac - 0.5;  // exact; the sign of (half + lo) is the sign of half or lo
    const int side = half != 0 ? (half > 0 ? 1 : -1) : (lo > 0 ? 1 : lo < 0 ? -1 : 0);
    switch (mode) {
      case Rounding::floor:
        r = (frac == 0 && lo < 0) ? fl - 1 : fl;
        break;
      case Rounding::half_up:
        r = frac == 0 ? fl : fl + (side >= 0 ? 1 : 0);
        break;
      case Rounding::half_even:
        r = side > 0 || (side == 0 && std::fmod(fl, 2) != 0) ? fl + 1 : fl;
        if (frac == 0) r = fl;
        break;
      case Rounding::half_away:
        r = side > 0 || (side == 0 && hi > 0) ? fl + 1 : fl;
        if (frac == 0) r = fl;
        break;
    }
    return std::clamp(static_cast<std::int64_t>(r), lo_b, hi_b);
  }
};

std::uint32_t f32(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

struct Pair {
  std::uint32_t s, b;
};

std::vector<Pair> make_pairs(int random_pairs) {
  const std::vector<std::uint32_t> ss = {f32(1.0f),
                                         f32(-1.0f),
                                         f32(0.5f),
                                         f32(3.0f),
                                         f32(1.0f / 3),
                                         f32(-0.1f),
                                         f32(1.0f + 0x1p-23f),
                                         f32(0x1p-20f),
                                         f32(0x1p-126f),
                                         0x00000001u /* 2^-149 */,
                                         0x807FFFFFu /* -max subnormal */,
                                         f32(0x1p100f),
                                         f32(-0x1p-100f),
                                         f32(65504.0f),
                                         0x7F7FFFFFu /* max */,
                                         0x00000000u,
                                         0x80000000u,
                                         0x7F800000u,
                                         0xFF800000u,
                                         0x7FC00001u,
                                         f32(1.5f),
                                         f32(-7.0f)};
  const std::vector<std::uint32_t> bs = {0x00000000u,
                                         0x80000000u,
                                         f32(1.0f),
                                         f32(-1.0f),
                                         f32(0x1p-11f) /* fp16 tie at [1,2) */,
                                         f32(0x1p-8f) /* bf16 tie at [1,2) */,
                                         f32(0x1p-24f),
                                         f32(0x1p-25f) /* half fp16 sub */,
                                         f32(-0x1p-14f),
                                         f32(65520.0f) /* fp16 overflow tie */,
                                         f32(-65504.0f),
                                         0x00000001u,
                                         0x80400000u /* -subnormal */,
                                         0x7F800000u,
                                         0xFF800000u,
                                         0xFFC00000u,
                                         f32(3e38f),
                                         f32(0x1p-133f) /* bf16 min subnormal */};
  std::vector<Pair> out;
  for (auto s : ss)
    for (auto b : bs) out.push_back({s, b});
  std::mt19937 gen(18);
  auto rng = [&] { return static_cast<std::uint32_t>(gen()); };
  for (int i = 0; i < random_pairs; ++i) {
    // random sign, exponent spread over the whole range, random fraction
    auto rnd = [&] {
      const std::uint32_t e = rng() % 100 < 80 ? 127 + (rng() % 41) - 20 : rng() % 256;
      return (rng() & 0x80000000u) | (std::min<std::uint32_t>(e, 254) << 23) | (rng() & 0x7FFFFF);
    };
    out.push_back({rnd(), rnd()});
  }
  return out;
}

struct OutType {
  NumType t;
  int yw;
  bool y_signed;
};

struct Case {
  OutType out;
  ArithSpec spec;
  JobSettings job;
  Rounding mode;
};

std::vector<Case> make_cases(NumType x_type, int xw, bool x_signed, bool flush, int variant) {
  const std::vector<OutType> outs = {{NumType::fp16, 16, true},    {NumType::bf16, 16, true},
                                     {NumType::fp32, 32, true},    {NumType::integer, 8, true},
                                     {NumType::integer, 8, false}, {NumType::integer, 16, true}};
  std::vector<Case> cases;
  for (const OutType& out : outs) {
    if (x_type == NumType::integer && out.t == NumType::integer) continue;  // contract v1
    Case c{out, {}, {}, static_cast<Rounding>((variant + out.yw + out.y_signed) % 4)};
    c.spec.x_type = x_type;
    c.spec.xw = xw;
    c.spec.x_signed = x_signed;
    c.spec.y_type = out.t;
    c.spec.yw = out.yw;
    c.spec.y_signed = out.y_signed;
    c.spec.sw = c.spec.bw = 32;
    c.spec.flush_subnormals = flush;
    c.job = normcore::float_job(c.spec);
    c.job.rounding = c.mode;
    const bool relu = variant % 5 == 1;
    const bool relu6 = variant % 5 == 2;
    if (out.t != NumType::integer) {
      if (relu) c.job.lo = 0;
      if (relu6) c.job.lo = 0, c.job.hi = encode(6.0, fmt(out.t));
      if (variant % 5 == 3) c.job.lo = encode(-0.0, fmt(out.t));  // lo = -0
    } else if (relu6) {
      c.job.lo = 0, c.job.hi = out.y_signed ? 60 : 200;
    }
    cases.push_back(c);
  }
  return cases;
}

std::int64_t clamp_pattern(std::uint32_t y, const Case& c) {
  const Fmt yf = fmt(c.out.t);
  const double yd = decode(y, yf);
  if (std::isnan(yd)) return y;
  if (yd < decode(static_cast<std::uint32_t>(c.job.lo), yf)) return c.job.lo;
  if (yd > decode(static_cast<std::uint32_t>(c.job.hi), yf)) return c.job.hi;
  return y;
}

// Checks every x of x_type for one pair (MPFR or the fast path); returns the mismatch count
// (prints the first few).
long check_pair(Oracle& o, const Pair& p, NumType x_type, int xw, bool x_signed, bool flush,
                int variant, bool use_mpfr, std::atomic<int>& printed) {
  const Fmt f32f = fmt(NumType::fp32);
  const std::uint32_t s = flush ? flush_in(p.s, f32f) : p.s;
  const std::uint32_t b = flush ? flush_in(p.b, f32f) : p.b;
  const double sd = decode(s, f32f);
  const double bd = decode(b, f32f);
  mpfr_set_d(o.s, sd, MPFR_RNDN);
  mpfr_set_d(o.b, bd, MPFR_RNDN);
  const bool xfloat = x_type != NumType::integer;
  const std::int64_t xlo = xfloat ? 0 : x_signed ? -(1LL << (xw - 1)) : 0;
  const std::int64_t xhi = xfloat ? 65535 : x_signed ? (1LL << (xw - 1)) - 1 : (1LL << xw) - 1;
  const auto cases = make_cases(x_type, xw, x_signed, flush, variant);
  for (const Case& c : cases) {
    const std::string err = c.spec.check() + c.job.check(c.spec);
    if (!err.empty()) {
      std::fprintf(stderr, "bad test spec: %s\n", err.c_str());
      return 1;
    }
  }
  long bad = 0;
  Fast fast;
  for (std::int64_t xv = xlo; xv <= xhi; ++xv) {
    double xd = static_cast<double>(xv);
    if (xfloat) {
      const Fmt xf = fmt(x_type);
      const auto xb = static_cast<std::uint32_t>(xv);
      xd = decode(flush ? flush_in(xb, xf) : xb, xf);
    }
    if (use_mpfr) {
      mpfr_set_d(o.x, xd, MPFR_RNDN);
      o.fma_exact();
    } else {
      fast.set(xd, sd, bd);
    }
    for (const Case& c : cases) {
      std::int64_t want;
      if (c.out.t == NumType::integer) {
        want = use_mpfr ? o.to_int(c.mode, c.job.lo, c.job.hi)
                        : fast.to_int(c.mode, c.job.lo, c.job.hi);
      } else {
        want =
            clamp_pattern(use_mpfr ? o.to_float(c.out.t, flush) : fast.to_float(c.out.t, flush), c);
      }
      const std::int64_t got = normcore::apply_float(xv, s, b, c.spec, c.job);
      if (got == want) continue;
      ++bad;
      if (printed.fetch_add(1) < 10) {
        std::fprintf(stderr,
                     "MISMATCH (%s) x=%#llx (%s) s=%#x b=%#x -> %s/%d flush=%d mode=%d lo=%#llx "
                     "hi=%#llx: got %#llx want %#llx\n",
                     use_mpfr ? "mpfr" : "fast", static_cast<long long>(xv),
                     std::string(normcore::to_string(x_type)).c_str(), s, b,
                     std::string(normcore::to_string(c.out.t)).c_str(), c.out.yw, flush,
                     static_cast<int>(c.mode), static_cast<long long>(c.job.lo),
                     static_cast<long long>(c.job.hi), static_cast<long long>(got),
                     static_cast<long long>(want));
      }
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  // argv[1]: random pairs beyond the directed ones (default 40); NORMCORE_THREADS: threads;
  // NORMCORE_ORACLE=mpfr: MPFR for every pair (minutes) instead of every 8th.
  const int random_pairs = argc > 1 ? std::atoi(argv[1]) : 40;
  auto pairs = make_pairs(random_pairs);
  if (const char* n = std::getenv("NORMCORE_ORACLE_PAIRS")) {  // a quick subset (every k-th)
    const std::size_t step = std::max<std::size_t>(1, pairs.size() / std::max(1, std::atoi(n)));
    std::vector<Pair> some;
    for (std::size_t i = 0; i < pairs.size(); i += step) some.push_back(pairs[i]);
    pairs = some;
  }
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (const char* t = std::getenv("NORMCORE_THREADS")) threads = std::max(1, std::atoi(t));
  struct Job {
    NumType x;
    int xw;
    bool xs;
    bool flush;
  };
  // float inputs: every pair, both flush settings; integer inputs: every pair
  std::vector<std::pair<std::size_t, Job>> work;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    work.push_back({i, {NumType::fp16, 16, true, false}});
    work.push_back({i, {NumType::bf16, 16, true, false}});
    if (i % 4 == 0) {  // the flush flag on a quarter of the pairs
      work.push_back({i, {NumType::fp16, 16, true, true}});
      work.push_back({i, {NumType::bf16, 16, true, true}});
    }
    work.push_back({i, {NumType::integer, i % 3 == 0 ? 16 : 8, i % 3 != 2, false}});
  }
  const char* mode = std::getenv("NORMCORE_ORACLE");
  const bool all_mpfr = mode != nullptr && std::string(mode) == "mpfr";
  std::atomic<std::size_t> next{0};
  std::atomic<long> bad{0};
  std::atomic<int> printed{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k) {
    pool.emplace_back([&] {
      Oracle o;
      for (std::size_t w; (w = next.fetch_add(1)) < work.size();) {
        const auto& [i, j] = work[w];
        // MPFR on every 32nd pair (and every pair with NORMCORE_ORACLE=mpfr), the fast path else
        const bool mpfr = all_mpfr || i % 32 == 0;
        bad +=
            check_pair(o, pairs[i], j.x, j.xw, j.xs, j.flush, static_cast<int>(i), mpfr, printed);
      }
      mpfr_free_cache();
    });
  }
  for (auto& t : pool) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "float oracle: %zu (s, b) pairs, %zu sweeps (every x; MPFR on %s), %u threads, "
      "%.1f s: %ld mismatches\n",
      pairs.size(), work.size(), all_mpfr ? "all" : "every 32nd pair", threads, secs, bad.load());
  return bad == 0 ? 0 : 1;
}
