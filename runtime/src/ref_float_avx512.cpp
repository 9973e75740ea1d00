// The AVX-512 clone of the float vector kernel (ref_float_lanes.hpp): 16 elements a step in fp32
// lanes. The exact value x * s + b is rounded once by the fused multiply-add:
//   fp32 out          FMA, round to nearest even (IEEE: one rounding of the exact value)
//   fp16 / bf16 out   FMA rounded down and up (embedded rounding, per instruction): equal when
//                     exact, else the neighbours around the exact value; the one nearer zero
//                     (the smaller pattern) with its LSB set is the exact value rounded to odd
//                     at 24 bits, which RNE then rounds exactly into fp16 (VCVTPS2PH) or bf16
//                     (integer RNE of the pattern): 24 >= 11 + 2 and >= 8 + 2 bits, also for
//                     subnormal results (fp32's LSB 2^-149 lies 16 bits below bf16's)
// The same contract as the portable double / TwoSum clones (one rounding, flush, clamp on the
// pattern order), exhaustively checked against apply_float in tests/runtime. Integer outputs of
// 8 and 16 bits (the job's rounding mode, clamp) have kernels here only (avx512_int_kernel).
#include "ref_float_lanes.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace normcore::detail::ref {
namespace {

// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* source operand of the
// unmasked forms) when these are inlined: a false positive, as in ref_affine.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")

// The output lanes: 16 x 16-bit (ymm) or 16 x 32-bit (zmm) patterns.
template <NumType Y>
struct Lanes16 {
  using V = __m256i;
  static constexpr std::uint32_t sign = 0x8000u;
  static constexpr std::uint32_t exp = Y == NumType::bf16 ? 0x7F80u : 0x7C00u;
  static V set1(std::uint32_t v) { return _mm256_set1_epi16(static_cast<short>(v)); }
  static __mmask16 eq(V a, V b) { return _mm256_cmpeq_epi16_mask(a, b); }
  static __mmask16 lt(V a, V b) { return _mm256_cmplt_epi16_mask(a, b); }
  static __mmask16 gt(V a, V b) { return _mm256_cmpgt_epi16_mask(a, b); }
  static V band(V a, V b) { return _mm256_and_si256(a, b); }
  static V blend(__mmask16 k, V a, V b) { return _mm256_mask_blend_epi16(k, a, b); }
  static V neg(__mmask16 k, V a) { return _mm256_mask_sub_epi16(a, k, _mm256_setzero_si256(), a); }
  static V load(__mmask16 k, const void* p) { return _mm256_maskz_loadu_epi16(k, p); }
  static void store(__mmask16 k, void* p, V v) { _mm256_mask_storeu_epi16(p, k, v); }
  static void stream(void* p, V v) { _mm256_stream_si256(static_cast<__m256i*>(p), v); }
};
template <>
struct Lanes16<NumType::fp32> {
  using V = __m512i;
  static constexpr std::uint32_t sign = 0x80000000u;
  static constexpr std::uint32_t exp = 0x7F800000u;
  static V set1(std::uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }
  static __mmask16 eq(V a, V b) { return _mm512_cmpeq_epi32_mask(a, b); }
  static __mmask16 lt(V a, V b) { return _mm512_cmplt_epi32_mask(a, b); }
  static __mmask16 gt(V a, V b) { return _mm512_cmpgt_epi32_mask(a, b); }
  static V band(V a, V b) { return _mm512_and_si512(a, b); }
  static V blend(__mmask16 k, V a, V b) { return _mm512_mask_blend_epi32(k, a, b); }
  static V neg(__mmask16 k, V a) { return _mm512_mask_sub_epi32(a, k, _mm512_setzero_si512(), a); }
  static V load(__mmask16 k, const void* p) { return _mm512_maskz_loadu_epi32(k, p); }
  static void store(__mmask16 k, void* p, V v) { _mm512_mask_storeu_epi32(p, k, v); }
  static void stream(void* p, V v) { _mm512_stream_si512(static_cast<__m512i*>(p), v); }
};

// Per-call constants.
template <NumType Y>
struct Consts {
  using L = Lanes16<Y>;
  typename L::V lo, hi, lo_key, hi_key, sign, mag, exp;
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
  }
};

// x patterns (16 x 16 bits) -> float, flushed when asked.
template <NumType X, bool Flush>
inline __m512 to_float(__m256i xh) {
  const __m256i e = _mm256_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
  if constexpr (Flush) {  // a subnormal x -> zero of its sign
    const __mmask16 sub = _mm256_cmpeq_epi16_mask(_mm256_and_si256(xh, e), _mm256_setzero_si256());
    xh = _mm256_mask_blend_epi16(sub, xh, _mm256_and_si256(xh, _mm256_set1_epi16(-32768)));
  }
  if constexpr (X == NumType::bf16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(xh), 16));
  } else {
    return _mm512_cvtph_ps(xh);
  }
}

// x * s + b rounded to odd at 24 bits: rounded down and up; -0 and +0 compare equal, so an exact
// zero keeps +0 (the smaller pattern), as RNE gives.
inline __m512 round_odd(__m512 x, __m512 s, __m512 b) {
  const __m512 dn = _mm512_fmadd_round_ps(x, s, b, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 up = _mm512_fmadd_round_ps(x, s, b, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  const __mmask16 inexact = _mm512_cmp_ps_mask(dn, up, _CMP_NEQ_OQ);
  const __m512i odd = _mm512_min_epu32(_mm512_castps_si512(dn), _mm512_castps_si512(up));
  return _mm512_castsi512_ps(_mm512_mask_or_epi32(odd, inexact, odd, _mm512_set1_epi32(1)));
}

// The rounded, flushed and clamped outputs of 16 elements.
template <NumType Y, bool Flush, bool Clamp>
inline typename Lanes16<Y>::V lanes(__m512 x, __m512 s, __m512 b, const Consts<Y>& c) {
  using L = Lanes16<Y>;
  typename L::V y;
  if constexpr (Y == NumType::fp32) {
    y = _mm512_castps_si512(_mm512_fmadd_ps(x, s, b));
  } else {
    const __m512i odd = _mm512_castps_si512(round_odd(x, s, b));
    if constexpr (Y == NumType::fp16) {
      y = _mm512_cvtps_ph(_mm512_castsi512_ps(odd), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {  // RNE of the pattern's top half (carries into the exponent: Inf on overflow)
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(odd, 16), _mm512_set1_epi32(1));
      const __m512i r = _mm512_add_epi32(odd, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
      y = _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
    }
  }
  if constexpr (Flush) {  // a subnormal result -> zero of its sign
    const __mmask16 sub = L::eq(L::band(y, c.exp), L::set1(0));
    y = L::blend(sub, y, L::band(y, c.sign));
  }
  if constexpr (Clamp) {  // on the numeric order of the patterns (-0 == +0)
    const __mmask16 neg = L::eq(L::band(y, c.sign), c.sign);
    const typename L::V key = L::neg(neg, L::band(y, c.mag));
    y = L::blend(L::lt(key, c.lo_key), y, c.lo);
    y = L::blend(L::gt(key, c.hi_key), y, c.hi);
  }
  return y;
}

// Steps of 16 elements from i: masked loads and stores for a head or tail of m < 16.
template <NumType X, NumType Y, bool Table, bool Flush, bool Clamp>
[[gnu::noinline]] std::uint64_t run(const std::uint8_t* x, std::uint8_t* y, std::uint64_t n,
                                    const LaneArgs& a) {
  using L = Lanes16<Y>;
  constexpr std::size_t yb = Y == NumType::fp32 ? 4 : 2;
  const Consts<Y> c(a);
  const __m256i xe = _mm256_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
  const __m512i fe = _mm512_set1_epi32(0x7F800000);
  __m512 s = _mm512_set1_ps(a.s[0]), b = _mm512_set1_ps(a.b[0]);
  // one step of m elements (mask k) at i; false if x, s or b holds a NaN or Inf
  const auto step = [&](std::uint64_t i, __mmask16 k, bool stream) {
    const __m256i xh = _mm256_maskz_loadu_epi16(k, x + 2 * i);
    __mmask16 bad = _mm256_cmpeq_epi16_mask(_mm256_and_si256(xh, xe), xe);
    if constexpr (Table) {
      s = _mm512_maskz_loadu_ps(k, a.s + i);
      b = _mm512_maskz_loadu_ps(k, a.b + i);
      if (!a.finite) {
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(s), fe), fe);
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(b), fe), fe);
      }
    }
    if (bad != 0) return false;
    const auto v = lanes<Y, Flush, Clamp>(to_float<X, Flush>(xh), s, b, c);
    if (stream) {
      L::stream(y + yb * i, v);
    } else {
      L::store(k, y + yb * i, v);
    }
    return true;
  };
  std::uint64_t i = 0;
  const auto addr = reinterpret_cast<std::uintptr_t>(y);
  const bool stream = (n >= 4096 || a.stream) && static_cast<const void*>(x) != y && addr % yb == 0;
  if (stream) {  // the head up to the first 64-byte boundary of y (or n)
    const std::uint64_t head = std::min<std::uint64_t>(n, ((64 - addr % 64) % 64) / yb);
    for (; i < head; i += 16) {
      const std::uint64_t m = std::min<std::uint64_t>(16, head - i);
      if (!step(i, static_cast<__mmask16>((1u << m) - 1), false)) return i;
    }
    i = head;
  }
  for (; i + 16 <= n; i += 16) {
    if (!step(i, 0xFFFF, stream)) {
      if (stream && !a.stream) _mm_sfence();
      return i;
    }
  }
  if (stream && !a.stream) _mm_sfence();
  if (i < n && !step(i, static_cast<__mmask16>((1u << (n - i)) - 1), false)) return i;
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
  // The embedded roundings override MXCSR's rounding control, not FTZ / DAZ: MXCSR as the
  // contract needs it (no FTZ / DAZ, the FMADD of fp32 outputs to nearest), restored after.
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(0x1F80);
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

// Integer outputs of 8 or 16 bits: the value rounded to odd at 24 bits, clamped to [lo, hi]
// (integers, |lo|, |hi| < 2^22, which the caller checks: the clamp commutes with the rounding,
// and below 2^22 the odd LSB is at most 2^-2, under the half-integers, so rounding the odd value
// to an integer rounds the exact one), then the job's rounding mode.
template <Rounding M>
inline __m512i to_int(__m512 odd, __m512 lo, __m512 hi) {
  const __m512 v = _mm512_min_ps(_mm512_max_ps(odd, lo), hi);
  if constexpr (M == Rounding::half_even) {
    return _mm512_cvtps_epi32(
        _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m512 f = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512i n = _mm512_cvtps_epi32(f);
  if constexpr (M == Rounding::floor) return n;
  // f + 1/2 is exact (|f| < 2^22); v - f would not be (v's LSB may lie below that of v - f)
  const __m512 mid = _mm512_add_ps(f, _mm512_set1_ps(0.5f));
  __mmask16 up = _mm512_cmp_ps_mask(v, mid, _CMP_GT_OQ);
  const __mmask16 tie = _mm512_cmp_ps_mask(v, mid, _CMP_EQ_OQ);
  if constexpr (M == Rounding::half_up) {
    up = _kor_mask16(up, tie);  // ties toward +Inf
  } else {                      // half_away: ties away from zero
    up = _kor_mask16(up, _kand_mask16(tie, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ)));
  }
  return _mm512_mask_add_epi32(n, up, n, _mm512_set1_epi32(1));
}

template <NumType X, bool Table, bool Flush, Rounding M, int YB>
[[gnu::noinline]] std::uint64_t run_int(const std::uint8_t* x, std::uint8_t* y, std::uint64_t n,
                                        const LaneArgs& a) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(static_cast<std::int32_t>(a.lo)));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(static_cast<std::int32_t>(a.hi)));
  const __m256i xe = _mm256_set1_epi16(X == NumType::bf16 ? 0x7F80 : 0x7C00);
  const __m512i fe = _mm512_set1_epi32(0x7F800000);
  __m512 s = _mm512_set1_ps(a.s[0]), b = _mm512_set1_ps(a.b[0]);
  const auto step = [&](std::uint64_t i, __mmask16 k, bool stream) {
    const __m256i xh = _mm256_maskz_loadu_epi16(k, x + 2 * i);
    __mmask16 bad = _mm256_cmpeq_epi16_mask(_mm256_and_si256(xh, xe), xe);
    if constexpr (Table) {
      s = _mm512_maskz_loadu_ps(k, a.s + i);
      b = _mm512_maskz_loadu_ps(k, a.b + i);
      if (!a.finite) {
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(s), fe), fe);
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(b), fe), fe);
      }
    }
    if (bad != 0) return false;
    const __m512i q = to_int<M>(round_odd(to_float<X, Flush>(xh), s, b), lo, hi);
    if constexpr (YB == 1) {
      const __m128i v = _mm512_cvtepi32_epi8(q);
      if (stream) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(y + i), v);
      } else {
        _mm_mask_storeu_epi8(y + i, k, v);
      }
    } else {
      const __m256i v = _mm512_cvtepi32_epi16(q);
      if (stream) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(y + 2 * i), v);
      } else {
        _mm256_mask_storeu_epi16(y + 2 * i, k, v);
      }
    }
    return true;
  };
  std::uint64_t i = 0;
  const auto addr = reinterpret_cast<std::uintptr_t>(y);
  const bool stream = (n >= 4096 || a.stream) && static_cast<const void*>(x) != y && addr % YB == 0;
  if (stream) {  // the head up to the first 64-byte boundary of y (or n)
    const std::uint64_t head = std::min<std::uint64_t>(n, ((64 - addr % 64) % 64) / YB);
    for (; i < head; i += 16) {
      const std::uint64_t m = std::min<std::uint64_t>(16, head - i);
      if (!step(i, static_cast<__mmask16>((1u << m) - 1), false)) return i;
    }
    i = head;
  }
  for (; i + 16 <= n; i += 16) {
    if (!step(i, 0xFFFF, stream)) {
      if (stream && !a.stream) _mm_sfence();
      return i;
    }
  }
  if (stream && !a.stream) _mm_sfence();
  if (i < n && !step(i, static_cast<__mmask16>((1u << (n - i)) - 1), false)) return i;
  return n;
}

template <NumType X, bool Table, Rounding M, int YB>
std::uint64_t kernel_int(const void* x, void* y, std::uint64_t n, const LaneArgs& a) {
  const auto* xp = static_cast<const std::uint8_t*>(x);
  auto* yp = static_cast<std::uint8_t*>(y);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(0x1F80);
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
#pragma GCC diagnostic pop

}  // namespace

// [x fp16 / bf16][y fp16 / bf16 / fp32][constant / table]
LaneFn avx512_lane_kernel(int x, int y, bool table) {
  static constexpr LaneFn fn[2][3][2] = {
      {{kernel<NumType::fp16, NumType::fp16, false>, kernel<NumType::fp16, NumType::fp16, true>},
       {kernel<NumType::fp16, NumType::bf16, false>, kernel<NumType::fp16, NumType::bf16, true>},
       {kernel<NumType::fp16, NumType::fp32, false>, kernel<NumType::fp16, NumType::fp32, true>}},
      {{kernel<NumType::bf16, NumType::fp16, false>, kernel<NumType::bf16, NumType::fp16, true>},
       {kernel<NumType::bf16, NumType::bf16, false>, kernel<NumType::bf16, NumType::bf16, true>},
       {kernel<NumType::bf16, NumType::fp32, false>, kernel<NumType::bf16, NumType::fp32, true>}}};
  return fn[x][y][table ? 1 : 0];
}

LaneFn avx512_int_kernel(int x, int yb, bool table, Rounding m) {
  if (yb != 1 && yb != 2) return nullptr;
  if (x == 0) {
    return table ? int_kernel<NumType::fp16, true>(yb, m) : int_kernel<NumType::fp16, false>(yb, m);
  }
  return table ? int_kernel<NumType::bf16, true>(yb, m) : int_kernel<NumType::bf16, false>(yb, m);
}

}  // namespace normcore::detail::ref

#else

namespace normcore::detail::ref {
LaneFn avx512_lane_kernel(int, int, bool) {
  return nullptr;
}
LaneFn avx512_int_kernel(int, int, bool, Rounding) {
  return nullptr;
}
}  // namespace normcore::detail::ref

#endif
