// The AVX-512 VNNI clone of the ref device's NHWC byte path (ref_affine.hpp): 64 elements per
// step from the transposed period table, no gathers or element shuffles.
#include "ref_affine.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NORMCORE_VNNI_X86 1
#endif

namespace normcore::detail::ref {

#ifdef NORMCORE_VNNI_X86
namespace {

#define NORMCORE_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* source operand of the
// unmasked forms) when these are inlined: a false positive, silenced for this file's kernels.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// One accumulator: b + x * s for the 16 elements of word-masked input `xm` (one byte of each
// dword, as an int16 word with a zero neighbour) and weights `w` (two int16 scales per dword),
// rounded and shifted right by R (`cnt` in every lane).
template <Rounding M>
NORMCORE_VNNI_TARGET inline __m512i acc16(__m512i b, __m512i xm, __m512i w, __m512i cnt, __m512i k,
                                          __m512i bit_r) {
  __m512i a = _mm512_dpwssd_epi32(b, xm, w);
  if constexpr (M == Rounding::half_away) {
    // b holds + h: acc < 0 exactly when a < h (= k)
    a = _mm512_mask_sub_epi32(a, _mm512_cmplt_epi32_mask(a, k), a, _mm512_set1_epi32(1));
  } else if constexpr (M == Rounding::half_even) {
    // k = h - 1; + 1 when bit R of acc (the parity of floor(acc / 2^R)) is set
    const __mmask16 odd = _mm512_test_epi32_mask(a, bit_r);
    a = _mm512_add_epi32(a, k);
    a = _mm512_mask_add_epi32(a, odd, a, _mm512_set1_epi32(1));
  }
  return _mm512_srav_epi32(a, cnt);
}

// Element 4j + i of a 64-element vector sits in dword j of accumulator i. After the packs, byte
// 4i + l of each 128-bit lane holds element 4l + i of that lane: PSHUFB by the 4x4 transpose.
template <Rounding M, bool YS>
NORMCORE_VNNI_TARGET std::uint64_t run_vnni(const std::uint8_t* src, std::uint8_t* dst,
                                            std::uint64_t nvec, std::uint64_t q,
                                            const VnniArgs& a) {
  const __m512i xb = _mm512_set1_epi32(a.xbias);
  const __m512i lo8 = _mm512_set1_epi32(0xFF), hi8 = _mm512_set1_epi32(0xFF0000);
  const __m512i cnt = _mm512_set1_epi32(a.r), k = _mm512_set1_epi32(a.k);
  const __m512i bit_r = _mm512_set1_epi32(static_cast<std::int32_t>(1U << (a.r & 31)));
  const __m512i fix =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  const __m512i vlo = _mm512_set1_epi8(static_cast<char>(a.lo));
  const __m512i vhi = _mm512_set1_epi8(static_cast<char>(a.hi));
  // The clamp after the packs: saturation already bounds the range of the pack's type.
  const bool do_lo = YS ? a.lo > -128 : a.lo > 0, do_hi = YS ? a.hi < 127 : a.hi < 255;
  const std::int32_t* const w02 = a.t;
  const std::int32_t* const w13 = a.t + a.g;
  const std::int32_t* const b0 = a.t + 2 * a.g;
  const std::int32_t* const b1 = a.t + 3 * a.g;
  const std::int32_t* const b2 = a.t + 4 * a.g;
  const std::int32_t* const b3 = a.t + 5 * a.g;
  for (std::uint64_t v = 0; v < nvec; ++v) {
    // 2 KiB ahead: measured 0.75-0.79 -> 0.83-1.11 x memcpy (CPU time, 64 MiB, loaded machine).
    _mm_prefetch(reinterpret_cast<const char*>(src + 64 * v + 2048), _MM_HINT_T0);
    const __m512i x = _mm512_loadu_si512(src + 64 * v);
    const __m512i xs = _mm512_bsrli_epi128(x, 1);  // byte 4j + 1 (and 4j + 3) at 4j (4j + 2)
    const std::uint64_t m = q >> 2;
    const __m512i wa = _mm512_loadu_si512(w02 + m), wb = _mm512_loadu_si512(w13 + m);
    // (x ^ xbias) & mask: one byte of each dword, biased to unsigned when x is signed.
    const __m512i y0 = acc16<M>(_mm512_loadu_si512(b0 + m),
                                _mm512_ternarylogic_epi32(x, xb, lo8, 0x28), wa, cnt, k, bit_r);
    const __m512i y2 = acc16<M>(_mm512_loadu_si512(b2 + m),
                                _mm512_ternarylogic_epi32(x, xb, hi8, 0x28), wa, cnt, k, bit_r);
    const __m512i y1 = acc16<M>(_mm512_loadu_si512(b1 + m),
                                _mm512_ternarylogic_epi32(xs, xb, lo8, 0x28), wb, cnt, k, bit_r);
    const __m512i y3 = acc16<M>(_mm512_loadu_si512(b3 + m),
                                _mm512_ternarylogic_epi32(xs, xb, hi8, 0x28), wb, cnt, k, bit_r);
    const __m512i p01 = _mm512_packs_epi32(y0, y1), p23 = _mm512_packs_epi32(y2, y3);
    __m512i p = YS ? _mm512_packs_epi16(p01, p23) : _mm512_packus_epi16(p01, p23);
    p = _mm512_shuffle_epi8(p, fix);
    if (do_lo) p = YS ? _mm512_max_epi8(p, vlo) : _mm512_max_epu8(p, vlo);
    if (do_hi) p = YS ? _mm512_min_epi8(p, vhi) : _mm512_min_epu8(p, vhi);
    if (a.stream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + 64 * v), p);
    } else {
      _mm512_storeu_si512(dst + 64 * v, p);
    }
    q += a.step;
    if (q >= a.wrap) q -= a.wrap;
  }
  if (a.stream) _mm_sfence();
  return q;
}

#pragma GCC diagnostic pop

template <bool YS>
VnniFn pick(Rounding m) {
  switch (m) {
    case Rounding::floor:
      return &run_vnni<Rounding::floor, YS>;
    case Rounding::half_up:
      return &run_vnni<Rounding::half_up, YS>;  // b holds + h: a plain shift
    case Rounding::half_even:
      return &run_vnni<Rounding::half_even, YS>;
    case Rounding::half_away:
      return &run_vnni<Rounding::half_away, YS>;
  }
  return nullptr;
}

}  // namespace

VnniFn vnni_pick(Rounding m, bool y_signed) {
  return y_signed ? pick<true>(m) : pick<false>(m);
}
#else
VnniFn vnni_pick(Rounding, bool) {
  return nullptr;
}
#endif

}  // namespace normcore::detail::ref
