// The AVX2 clone of the float vector kernel (ref_float_lanes.hpp): 8 elements a step in fp32
// lanes, the same formulation as the AVX-512 clone (ref_float_avx512.cpp): the FMA rounds the
// exact x * s + b once; for fp16 / bf16 outputs rounded down and up, the neighbour nearer zero
// with its LSB set being the value rounded to odd at 24 bits, then RNE into the output. AVX2 has
// no per-instruction rounding: the step runs with MXCSR rounding down (set here around a
// non-inlined loop, restored after), and RU(v) = -RD(-v) is the negated FNMSUB. This file is
// compiled with -frounding-math, so that the compiler does not assume round-to-nearest (it
// could otherwise fold -FNMSUB(x, s, b) into FMADD(x, s, b)).
#include "ref_float_lanes.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace normcore::detail::ref {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")

constexpr unsigned kMxcsrNearest = 0x1F80;  // every exception masked, RN, no FTZ / DAZ
constexpr unsigned kMxcsrDown = 0x3F80;     // the same, rounding toward -Inf

// 8 output patterns of 16 bits (xmm) or 32 bits (ymm), with signed compares for the clamp keys.
template <NumType Y>
struct Out8 {
  using V = __m128i;
  static constexpr std::uint32_t sign = 0x8000u;
  static constexpr std::uint32_t exp = Y == NumType::bf16 ? 0x7F80u : 0x7C00u;
  static V set1(std::uint32_t v) { return _mm_set1_epi16(static_cast<short>(v)); }
  static V eq(V a, V b) { return _mm_cmpeq_epi16(a, b); }
  static V gt(V a, V b) { return _mm_cmpgt_epi16(a, b); }
  static V band(V a, V b) { return _mm_and_si128(a, b); }
  static V bxor(V a, V b) { return _mm_xor_si128(a, b); }
  static V sub(V a, V b) { return _mm_sub_epi16(a, b); }
  static V sra(V a) { return _mm_srai_epi16(a, 15); }
  static V blend(V m, V a, V b) { return _mm_blendv_epi8(a, b, m); }
  static V load(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
  static void store(void* p, V v) { _mm_storeu_si128(static_cast<__m128i*>(p), v); }
  static void stream(void* p, V v) { _mm_stream_si128(static_cast<__m128i*>(p), v); }
};
template <>
struct Out8<NumType::fp32> {
  using V = __m256i;
  static constexpr std::uint32_t sign = 0x80000000u;
  static constexpr std::uint32_t exp = 0x7F800000u;
  static V set1(std::uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
  static V eq(V a, V b) { return _mm256_cmpeq_epi32(a, b); }
  static V gt(V a, V b) { return _mm256_cmpgt_epi32(a, b); }
  static V band(V a, V b) { return _mm256_and_si256(a, b); }
  static V bxor(V a, V b) { return _mm256_xor_si256(a, b); }
  static V sub(V a, V b) { return _mm256_sub_epi32(a, b); }
  static V sra(V a) { return _mm256_srai_epi32(a, 31); }
  static V blend(V m, V a, V b) { return _mm256_blendv_epi8(a, b, m); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, V v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static void stream(void* p, V v) { _mm256_stream_si256(static_cast<__m256i*>(p), v); }
};

template <NumType Y>
struct Consts {
  using L = Out8<Y>;
  typename L::V lo, hi, lo_key, hi_key, sign, mag, exp, zero;
  explicit Consts(const LaneArgs& a) {
    const auto key = [](std::uint32_t v) {
      const auto m = static_cast<std::int32_t>(v & (L::sign - 1));
      return static_cast<std::uint32_t>((v & L::sign) != 0 ? -m : m);
    };
    lo = L::set1(a.lo);
    hi = L::set1(a.hi);
    lo_key = L::set1(key(a.lo));
    hi_key = L::set1(key(a.hi));
    sign = L::set1(L::sign);
    mag = L::set1(L::sign - 1);
    exp = L::set1(L::exp);
    zero = L::set1(0);
  }
};

// x patterns (8 x 16 bits) -> float, flushed when asked.
template <NumType X, bool Flush>
inline __m256 to_float(__m128i xh) {
  if constexpr (Flush) {  // a subnormal x -> zero of its sign
    const __m128i e = _mm_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
    const __m128i sub = _mm_cmpeq_epi16(_mm_and_si128(xh, e), _mm_setzero_si128());
    xh = _mm_andnot_si128(_mm_and_si128(sub, _mm_set1_epi16(0x7FFF)), xh);
  }
  if constexpr (X == NumType::bf16) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(xh), 16));
  } else {
    return _mm256_cvtph_ps(xh);
  }
}

// The rounded, flushed and clamped outputs of 8 elements (MXCSR: down for 16-bit outputs,
// nearest for fp32).
template <NumType Y, bool Flush, bool Clamp>
inline typename Out8<Y>::V lanes(__m256 x, __m256 s, __m256 b, const Consts<Y>& c) {
  using L = Out8<Y>;
  typename L::V y;
  if constexpr (Y == NumType::fp32) {
    y = _mm256_castps_si256(_mm256_fmadd_ps(x, s, b));
  } else {
    const __m256 neg0 = _mm256_set1_ps(-0.0f);
    const __m256 dn = _mm256_fmadd_ps(x, s, b);                        // RD(v)
    const __m256 up = _mm256_xor_ps(_mm256_fnmsub_ps(x, s, b), neg0);  // -RD(-v) = RU(v)
    // -0 and +0 compare equal: an exact zero keeps +0 (the smaller pattern), as RNE gives
    const __m256i inexact = _mm256_castps_si256(_mm256_cmp_ps(dn, up, _CMP_NEQ_OQ));
    __m256i odd = _mm256_min_epu32(_mm256_castps_si256(dn), _mm256_castps_si256(up));
    odd = _mm256_or_si256(odd, _mm256_and_si256(inexact, _mm256_set1_epi32(1)));
    if constexpr (Y == NumType::fp16) {
      y = _mm256_cvtps_ph(_mm256_castsi256_ps(odd), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {  // RNE of the pattern's top half (carries into the exponent: Inf on overflow)
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(odd, 16), _mm256_set1_epi32(1));
      const __m256i r = _mm256_srli_epi32(
          _mm256_add_epi32(odd, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
      y = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    }
  }
  if constexpr (Flush) {  // a subnormal result -> zero of its sign
    const typename L::V sub = L::eq(L::band(y, c.exp), c.zero);
    y = L::blend(sub, y, L::band(y, c.sign));
  }
  if constexpr (Clamp) {  // on the numeric order of the patterns (-0 == +0)
    const typename L::V neg = L::sra(y);
    const typename L::V key = L::sub(L::bxor(L::band(y, c.mag), neg), neg);
    y = L::blend(L::gt(c.lo_key, key), y, c.lo);
    y = L::blend(L::gt(key, c.hi_key), y, c.hi);
  }
  return y;
}

bool any(__m128i m) {
  return _mm_movemask_epi8(m) != 0;
}

template <NumType X, NumType Y, bool Table, bool Flush, bool Clamp>
[[gnu::noinline]] std::uint64_t run(const std::uint8_t* x, std::uint8_t* y, std::uint64_t n,
                                    const LaneArgs& a) {
  using L = Out8<Y>;
  constexpr std::size_t yb = Y == NumType::fp32 ? 4 : 2;
  const Consts<Y> c(a);
  const __m128i xe = _mm_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
  const __m256i fe = _mm256_set1_epi32(0x7F800000);
  __m256 s = _mm256_set1_ps(a.s[0]), b = _mm256_set1_ps(a.b[0]);
  // one step at i from xp (s, b: sp, bp); false if x, s or b holds a NaN or Inf
  const auto step = [&](const std::uint8_t* xp, const float* sp, const float* bp, void* out,
                        bool stream) {
    const __m128i xh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(xp));
    bool bad = any(_mm_cmpeq_epi16(_mm_and_si128(xh, xe), xe));
    if constexpr (Table) {
      s = _mm256_loadu_ps(sp);
      b = _mm256_loadu_ps(bp);
      if (!a.finite) {
        const __m256i e =
            _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(s), fe), fe),
                            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(b), fe), fe));
        bad = bad || _mm256_movemask_epi8(e) != 0;
      }
    }
    if (bad) return false;
    const auto v = lanes<Y, Flush, Clamp>(to_float<X, Flush>(xh), s, b, c);
    if (stream) {
      L::stream(out, v);
    } else {
      L::store(out, v);
    }
    return true;
  };
  // m < 8 elements at i through zero-padded buffers
  const auto partial = [&](std::uint64_t i, std::uint64_t m) {
    alignas(32) std::uint8_t xb[16] = {}, yo[32];
    alignas(32) float sb[8] = {}, bb[8] = {};
    std::memcpy(xb, x + 2 * i, 2 * m);
    if constexpr (Table) {
      std::memcpy(sb, a.s + i, 4 * m);
      std::memcpy(bb, a.b + i, 4 * m);
    }
    if (!step(xb, sb, bb, yo, false)) return false;
    std::memcpy(y + yb * i, yo, yb * m);
    return true;
  };
  std::uint64_t i = 0;
  const auto addr = reinterpret_cast<std::uintptr_t>(y);
  const bool stream = (n >= 4096 || a.stream) && static_cast<const void*>(x) != y && addr % yb == 0;
  if (stream) {  // the head up to the first 64-byte boundary of y (or n)
    const std::uint64_t head = std::min<std::uint64_t>(n, ((64 - addr % 64) % 64) / yb);
    for (; i < head; i += 8) {
      if (!partial(i, std::min<std::uint64_t>(8, head - i))) return i;
    }
    i = head;
  }
  for (; i + 8 <= n; i += 8) {
    if (!step(x + 2 * i, Table ? a.s + i : a.s, Table ? a.b + i : a.b, y + yb * i, stream)) {
      if (stream && !a.stream) _mm_sfence();
      return i;
    }
  }
  if (stream && !a.stream) _mm_sfence();
  if (i < n && !partial(i, n - i)) return i;
  return n;
}

template <NumType X, NumType Y, bool Table>
std::uint64_t kernel(const void* x, void* y, std::uint64_t n, const LaneArgs& a) {
  const auto* xp = static_cast<const std::uint8_t*>(x);
  auto* yp = static_cast<std::uint8_t*>(y);
  const std::uint32_t inf = Y == NumType::fp32   ? 0x7F800000u
                            : Y == NumType::bf16 ? 0x7F80u
                                                 : 0x7C00u;
  const std::uint32_t sign = Y == NumType::fp32 ? 0x80000000u : 0x8000u;
  const bool clamp = a.lo != (sign | inf) || a.hi != inf;  // not [-Inf, +Inf]
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(Y == NumType::fp32 ? kMxcsrNearest : kMxcsrDown);
  std::uint64_t r;
  if (a.flush) {
    r = clamp ? run<X, Y, Table, true, true>(xp, yp, n, a)
              : run<X, Y, Table, true, false>(xp, yp, n, a);
  } else {
    r = clamp ? run<X, Y, Table, false, true>(xp, yp, n, a)
              : run<X, Y, Table, false, false>(xp, yp, n, a);
  }
  _mm_setcsr(saved);
  return r;
}

// Integer outputs of 8 or 16 bits (see ref_float_avx512.cpp's to_int): the value rounded to odd
// (MXCSR down), clamped to the integer bounds, then floor / the exact midpoint decide the mode
// (_mm256_round_ps takes its rounding from the immediate; the conversions are of integers).
template <Rounding M>
inline __m256i to_int(__m256 odd, __m256 lo, __m256 hi) {
  const __m256 v = _mm256_min_ps(_mm256_max_ps(odd, lo), hi);
  if constexpr (M == Rounding::half_even) {
    return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m256 f = _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m256i n = _mm256_cvtps_epi32(f);
  if constexpr (M == Rounding::floor) return n;
  const __m256 mid = _mm256_add_ps(f, _mm256_set1_ps(0.5f));  // exact: |f| < 2^22
  __m256 up = _mm256_cmp_ps(v, mid, _CMP_GT_OQ);
  const __m256 tie = _mm256_cmp_ps(v, mid, _CMP_EQ_OQ);
  if constexpr (M == Rounding::half_up) {
    up = _mm256_or_ps(up, tie);  // ties toward +Inf
  } else {                       // half_away: ties away from zero
    up = _mm256_or_ps(up, _mm256_and_ps(tie, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ)));
  }
  return _mm256_sub_epi32(n, _mm256_castps_si256(up));  // the mask is -1 where rounding up
}

// 8 integers (in range: the saturating packs only narrow) stored as YB-byte elements.
template <int YB>
inline void store_int(std::uint8_t* yp, __m256i q, bool sgn, bool stream) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  const __m128i w = sgn ? _mm_packs_epi32(lo, hi) : _mm_packus_epi32(lo, hi);
  if constexpr (YB == 2) {
    if (stream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(yp), w);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yp), w);
    }
  } else {
    const __m128i v8 = sgn ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    if (stream) {
      _mm_stream_si64(reinterpret_cast<long long*>(yp), _mm_cvtsi128_si64(v8));
    } else {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(yp), v8);
    }
  }
}

template <NumType X, bool Table, bool Flush, Rounding M, int YB>
[[gnu::noinline]] std::uint64_t run_int(const std::uint8_t* x, std::uint8_t* y, std::uint64_t n,
                                        const LaneArgs& a) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(static_cast<std::int32_t>(a.lo)));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(static_cast<std::int32_t>(a.hi)));
  const bool sgn = static_cast<std::int32_t>(a.lo) < 0;
  const __m128i xe = _mm_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
  const __m256i fe = _mm256_set1_epi32(0x7F800000);
  const __m256 neg0 = _mm256_set1_ps(-0.0f);
  __m256 s = _mm256_set1_ps(a.s[0]), b = _mm256_set1_ps(a.b[0]);
  // 8 elements from xp (s, b: sp, bp) into yp; false if x, s or b holds a NaN or Inf
  const auto step = [&](const std::uint8_t* xp, const float* sp, const float* bp, std::uint8_t* yp,
                        bool stream) {
    const __m128i xh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(xp));
    bool bad = any(_mm_cmpeq_epi16(_mm_and_si128(xh, xe), xe));
    if constexpr (Table) {
      s = _mm256_loadu_ps(sp);
      b = _mm256_loadu_ps(bp);
      if (!a.finite) {
        const __m256i e =
            _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(s), fe), fe),
                            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(b), fe), fe));
        bad = bad || _mm256_movemask_epi8(e) != 0;
      }
    }
    if (bad) return false;
    const __m256 xf = to_float<X, Flush>(xh);
    const __m256 dn = _mm256_fmadd_ps(xf, s, b);                        // RD(v)
    const __m256 up = _mm256_xor_ps(_mm256_fnmsub_ps(xf, s, b), neg0);  // RU(v)
    const __m256i inexact = _mm256_castps_si256(_mm256_cmp_ps(dn, up, _CMP_NEQ_OQ));
    __m256i odd = _mm256_min_epu32(_mm256_castps_si256(dn), _mm256_castps_si256(up));
    odd = _mm256_or_si256(odd, _mm256_and_si256(inexact, _mm256_set1_epi32(1)));
    store_int<YB>(yp, to_int<M>(_mm256_castsi256_ps(odd), lo, hi), sgn, stream);
    return true;
  };
  const auto partial = [&](std::uint64_t i, std::uint64_t m) {
    alignas(32) std::uint8_t xb[16] = {}, yo[16];
    alignas(32) float sb[8] = {}, bb[8] = {};
    std::memcpy(xb, x + 2 * i, 2 * m);
    if constexpr (Table) {
      std::memcpy(sb, a.s + i, 4 * m);
      std::memcpy(bb, a.b + i, 4 * m);
    }
    if (!step(xb, sb, bb, yo, false)) return false;
    std::memcpy(y + YB * i, yo, YB * m);
    return true;
  };
  std::uint64_t i = 0;
  const auto addr = reinterpret_cast<std::uintptr_t>(y);
  const bool stream = (n >= 4096 || a.stream) && static_cast<const void*>(x) != y && addr % YB == 0;
  if (stream) {  // the head up to the first 64-byte boundary of y (or n)
    const std::uint64_t head = std::min<std::uint64_t>(n, ((64 - addr % 64) % 64) / YB);
    for (; i < head; i += 8) {
      if (!partial(i, std::min<std::uint64_t>(8, head - i))) return i;
    }
    i = head;
  }
  for (; i + 8 <= n; i += 8) {
    if (!step(x + 2 * i, Table ? a.s + i : a.s, Table ? a.b + i : a.b, y + YB * i, stream)) {
      if (stream && !a.stream) _mm_sfence();
      return i;
    }
  }
  if (stream && !a.stream) _mm_sfence();
  if (i < n && !partial(i, n - i)) return i;
  return n;
}

template <NumType X, bool Table, Rounding M, int YB>
std::uint64_t kernel_int(const void* x, void* y, std::uint64_t n, const LaneArgs& a) {
  const auto* xp = static_cast<const std::uint8_t*>(x);
  auto* yp = static_cast<std::uint8_t*>(y);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(kMxcsrDown);
  const std::uint64_t r = a.flush ? run_int<X, Table, true, M, YB>(xp, yp, n, a)
                                  : run_int<X, Table, false, M, YB>(xp, yp, n, a);
  _mm_setcsr(saved);
  return r;
}

template <NumType X, bool Table>
LaneFn int_kernel(int yb, Rounding m) {
  switch (m) {
    case Rounding::floor:
      return yb == 1 ? kernel_int<X, Table, Rounding::floor, 1>
                     : kernel_int<X, Table, Rounding::floor, 2>;
    case Rounding::half_up:
      return yb == 1 ? kernel_int<X, Table, Rounding::half_up, 1>
                     : kernel_int<X, Table, Rounding::half_up, 2>;
    case Rounding::half_even:
      return yb == 1 ? kernel_int<X, Table, Rounding::half_even, 1>
                     : kernel_int<X, Table, Rounding::half_even, 2>;
    case Rounding::half_away:
      return yb == 1 ? kernel_int<X, Table, Rounding::half_away, 1>
                     : kernel_int<X, Table, Rounding::half_away, 2>;
  }
  return nullptr;
}

#pragma GCC pop_options

}  // namespace

LaneFn avx2_lane_kernel(int x, int y, bool table) {
  static constexpr LaneFn fn[2][3][2] = {
      {{kernel<NumType::fp16, NumType::fp16, false>, kernel<NumType::fp16, NumType::fp16, true>},
       {kernel<NumType::fp16, NumType::bf16, false>, kernel<NumType::fp16, NumType::bf16, true>},
       {kernel<NumType::fp16, NumType::fp32, false>, kernel<NumType::fp16, NumType::fp32, true>}},
      {{kernel<NumType::bf16, NumType::fp16, false>, kernel<NumType::bf16, NumType::fp16, true>},
       {kernel<NumType::bf16, NumType::bf16, false>, kernel<NumType::bf16, NumType::bf16, true>},
       {kernel<NumType::bf16, NumType::fp32, false>, kernel<NumType::bf16, NumType::fp32, true>}}};
  return fn[x][y][table ? 1 : 0];
}

LaneFn avx2_int_kernel(int x, int yb, bool table, Rounding m) {
  if (yb != 1 && yb != 2) return nullptr;
  if (x == 0) {
    return table ? int_kernel<NumType::fp16, true>(yb, m) : int_kernel<NumType::fp16, false>(yb, m);
  }
  return table ? int_kernel<NumType::bf16, true>(yb, m) : int_kernel<NumType::bf16, false>(yb, m);
}

}  // namespace normcore::detail::ref

#else

namespace normcore::detail::ref {
LaneFn avx2_lane_kernel(int, int, bool) {
  return nullptr;
}
LaneFn avx2_int_kernel(int, int, bool, Rounding) {
  return nullptr;
}
}  // namespace normcore::detail::ref

#endif
