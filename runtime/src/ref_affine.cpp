// The ref device's arithmetic fast path for byte elements (ref_affine.hpp).
#include "ref_affine.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace normcore::detail::ref {
namespace {

// One contiguous run: position i has scale s[i] and bias b[i] (b holds h for half_up and
// half_away). A plain loop on int32 lanes; the clones below compile it for each vector ISA.
template <Rounding M, bool XS>
[[gnu::always_inline]] inline void body(const std::uint8_t* src, std::uint8_t* dst,
                                        const std::int32_t* s, const std::int32_t* b,
                                        std::uint64_t n, int r, std::int32_t lo, std::int32_t hi,
                                        std::int32_t k) {
#pragma GCC ivdep
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::int32_t x = XS ? static_cast<std::int32_t>(static_cast<std::int8_t>(src[i]))
                              : static_cast<std::int32_t>(src[i]);
    std::int32_t a = x * s[i] + b[i];
    if constexpr (M == Rounding::half_away) {
      a -= a < k ? 1 : 0;  // a = acc + h here: acc < 0 exactly when a < h (= k)
    } else if constexpr (M == Rounding::half_even) {
      a += k + ((a >> r) & 1);  // k = h - 1; bit R of acc is the parity of floor(acc / 2^R)
    }
    std::int32_t y = a >> r;
    y = y < lo ? lo : y;
    y = y > hi ? hi : y;
    dst[i] = static_cast<std::uint8_t>(y);
  }
}

#define NORMCORE_AFFINE_ARGS                                                                \
  const std::uint8_t *src, std::uint8_t *dst, const std::int32_t *s, const std::int32_t *b, \
      std::uint64_t n, int r, std::int32_t lo, std::int32_t hi, std::int32_t k

template <Rounding M, bool XS>
void run_base(NORMCORE_AFFINE_ARGS) {
  body<M, XS>(src, dst, s, b, n, r, lo, hi, k);
}

#if defined(__x86_64__) || defined(__i386__)
#define NORMCORE_AFFINE_X86 1
template <Rounding M, bool XS>
__attribute__((target("avx2"))) void run_avx2(NORMCORE_AFFINE_ARGS) {
  body<M, XS>(src, dst, s, b, n, r, lo, hi, k);
}
template <Rounding M, bool XS>
__attribute__((target("avx512f,avx512bw,avx512vl,prefer-vector-width=512"))) void run_avx512(
    NORMCORE_AFFINE_ARGS) {
  body<M, XS>(src, dst, s, b, n, r, lo, hi, k);
}

// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* source operand of the
// unmasked forms) when these are inlined: a false positive, silenced for these two functions.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 elements of the AVX-512 step below: x (16 int32 lanes, the element in the low 16 bits, 0
// above) times s by VPMADDWD (s in int16 range: the high words multiply 0), + b, rounded, >> R.
template <Rounding M>
__attribute__((target("avx512f,avx512bw"))) inline __m512i affine16(__m512i x,
                                                                    const std::int32_t* s,
                                                                    const std::int32_t* b,
                                                                    __m128i cnt, __m512i k) {
  __m512i a = _mm512_add_epi32(_mm512_madd_epi16(x, _mm512_loadu_si512(s)), _mm512_loadu_si512(b));
  if constexpr (M == Rounding::half_away) {
    a = _mm512_mask_sub_epi32(a, _mm512_cmplt_epi32_mask(a, k), a, _mm512_set1_epi32(1));
  } else if constexpr (M == Rounding::half_even) {
    const __m512i odd = _mm512_and_si512(_mm512_sra_epi32(a, cnt), _mm512_set1_epi32(1));
    a = _mm512_add_epi32(a, _mm512_add_epi32(k, odd));
  }
  return _mm512_sra_epi32(a, cnt);
}

// The same map as body() when every |s| fits int16, written for AVX-512BW: VPMADDWD (one uop)
// instead of VPMULLD (two), and the clamp done on bytes after saturating packs (saturation is
// monotone and [lo, hi] lies inside the 8-bit range, so clamp(sat(v)) = clamp(v)).
template <Rounding M, bool XS>
__attribute__((target("avx512f,avx512bw"))) void run_avx512_madd(NORMCORE_AFFINE_ARGS) {
  const __m128i cnt = _mm_cvtsi32_si128(r);
  const __m512i kk = _mm512_set1_epi32(k);
  // packs work inside 128-bit lanes: dword 4l + q of the packed bytes holds y_q[4l .. 4l + 3].
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const bool ys = lo < 0;  // signed bytes (else lo >= 0 and hi <= 255: unsigned bytes)
  const __m512i vlo = _mm512_set1_epi8(static_cast<char>(lo));
  const __m512i vhi = _mm512_set1_epi8(static_cast<char>(hi));
  std::uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i y[4];
    for (int q = 0; q < 4; ++q) {
      const __m128i xb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16 * q));
      // Signed: sign-extend to 16 bits, then zero-extend to 32 (a 0 high word for VPMADDWD).
      const __m512i x =
          XS ? _mm512_cvtepu16_epi32(_mm256_cvtepi8_epi16(xb)) : _mm512_cvtepu8_epi32(xb);
      y[q] = affine16<M>(x, s + i + 16 * q, b + i + 16 * q, cnt, kk);
    }
    const __m512i p01 = _mm512_packs_epi32(y[0], y[1]), p23 = _mm512_packs_epi32(y[2], y[3]);
    __m512i p = ys ? _mm512_packs_epi16(p01, p23) : _mm512_packus_epi16(p01, p23);
    p = _mm512_permutexvar_epi32(order, p);
    p = ys ? _mm512_min_epi8(_mm512_max_epi8(p, vlo), vhi)
           : _mm512_min_epu8(_mm512_max_epu8(p, vlo), vhi);
    _mm512_storeu_si512(dst + i, p);
  }
  body<M, XS>(src + i, dst + i, s + i, b + i, n - i, r, lo, hi, k);
}
#pragma GCC diagnostic pop
#endif

enum class Isa { base, avx2, avx512 };

const char* name(Isa i) {
  return i == Isa::avx512 ? "avx512" : i == Isa::avx2 ? "avx2" : "baseline";
}

// The best clone this CPU runs, capped by `cap` ("baseline", "avx2"; empty: no cap).
Isa best(const std::string& cap) {
#ifdef NORMCORE_AFFINE_X86
  if (cap != "baseline" && cap != "avx2" && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return Isa::avx512;
  }
  if (cap != "baseline" && __builtin_cpu_supports("avx2")) return Isa::avx2;
#endif
  (void)cap;
  return Isa::base;
}

bool have_vnni() {
#ifdef NORMCORE_AFFINE_X86
  static const bool yes = __builtin_cpu_supports("avx512vnni") != 0;
  return yes;
#else
  return false;
#endif
}

template <Rounding M, bool XS>
auto pick(Isa isa, bool narrow) -> void (*)(NORMCORE_AFFINE_ARGS) {
#ifdef NORMCORE_AFFINE_X86
  switch (isa) {
    case Isa::avx512:
      return narrow ? &run_avx512_madd<M, XS> : &run_avx512<M, XS>;
    case Isa::avx2:
      return &run_avx2<M, XS>;
    case Isa::base:
      break;
  }
#endif
  (void)isa, (void)narrow;
  return &run_base<M, XS>;
}

template <bool XS>
auto pick(Rounding m, Isa isa, bool narrow) -> void (*)(NORMCORE_AFFINE_ARGS) {
  switch (m) {
    case Rounding::floor:
      return pick<Rounding::floor, XS>(isa, narrow);
    case Rounding::half_up:
      return pick<Rounding::half_up, XS>(isa, narrow);
    case Rounding::half_even:
      return pick<Rounding::half_even, XS>(isa, narrow);
    case Rounding::half_away:
      return pick<Rounding::half_away, XS>(isa, narrow);
  }
  return nullptr;
}

}  // namespace

std::optional<Affine8> Affine8::make(const std::int64_t* scale, const std::int64_t* bias,
                                     std::uint64_t channels, bool x_signed, const JobSettings& job,
                                     const char* isa) {
  const int r = job.shift;
  if (channels == 0 || r < 0 || r > 30) return std::nullopt;
  const std::int64_t xmax = x_signed ? 128 : 255;  // largest |x|
  const std::int64_t h = r > 0 ? std::int64_t{1} << (r - 1) : 0;
  const std::int64_t limit = std::int64_t{1} << 31;
  for (std::uint64_t c = 0; c < channels; ++c) {
    // |s| < 2^32 and |b| < 2^62 (the checked widths): no overflow in this bound.
    if (std::abs(scale[c]) > limit || std::abs(bias[c]) > limit) return std::nullopt;
    if (xmax * std::abs(scale[c]) + std::abs(bias[c]) + 2 * h >= limit) return std::nullopt;
  }
  Affine8 a;
  const Rounding m = r == 0 ? Rounding::floor : job.rounding;
  a.r_ = r;
  a.lo_ = static_cast<std::int32_t>(job.lo);
  a.hi_ = static_cast<std::int32_t>(job.hi);
  a.channels_ = channels;
  a.x_signed_ = x_signed;
  a.mode_ = m;
  const bool bias_h = m == Rounding::half_up || m == Rounding::half_away;
  const std::int64_t bh = bias_h ? h : 0;
  a.k_ = static_cast<std::int32_t>(m == Rounding::half_even ? h - 1 : h);
  const char* env = std::getenv("NORMCORE_REF_ISA");
  const std::string cap = isa != nullptr ? isa : env != nullptr ? env : "";
  const Isa use = best(cap);
  // Every scale in int16: the AVX-512 clones multiply words (VPDPWSSD / VPMADDWD).
  bool narrow = true;
  for (std::uint64_t c = 0; c < channels; ++c)
    narrow = narrow && scale[c] >= -32768 && scale[c] <= 32767;
  if (use == Isa::avx512 && narrow && cap != "avx512" && have_vnni()) {
    a.vnni_ = vnni_pick(m, a.lo_ < 0);
  }
  if (a.vnni_ != nullptr) {
    a.isa_ = "avx512-vnni";
    a.build_vnni(scale, bias, bh);
    return a;
  }
  // A block of at least 1024 positions (whole channel periods): runs long enough for the
  // vector loop, tables small enough for L1/L2.
  const std::uint64_t periods = std::max<std::uint64_t>(1, (1024 + channels - 1) / channels);
  a.block_ = periods * channels;
  a.s_.resize(static_cast<std::size_t>(a.block_));
  a.b_.resize(static_cast<std::size_t>(a.block_));
  for (std::uint64_t j = 0; j < a.block_; ++j) {
    const std::uint64_t c = j % channels;
    a.s_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(scale[c]);
    a.b_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(bias[c] + bh);
  }
  a.fn_ = x_signed ? pick<true>(m, use, narrow) : pick<false>(m, use, narrow);
  a.isa_ = use == Isa::avx512 && narrow ? "avx512-madd" : name(use);
  return a;
}

// The VNNI table: natural-order s and b per channel (the scalar ends), and the transposed period
// table of P = lcm(C, 4) positions (C above kTileChannels: C, tiled runs never wrap) plus 64.
void Affine8::build_vnni(const std::int64_t* scale, const std::int64_t* bias, std::int64_t bh) {
  const std::uint64_t C = channels_;
  s_.resize(static_cast<std::size_t>(C));
  b_.resize(static_cast<std::size_t>(C));
  for (std::uint64_t c = 0; c < C; ++c) {
    s_[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(scale[c]);
    b_[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(bias[c] + bh);
  }
  period_ = C > kTileChannels ? (C + 3) / 4 * 4 : std::lcm<std::uint64_t>(C, 4);
  const std::uint64_t g = (period_ + 64) / 4;
  t_.assign(static_cast<std::size_t>(6 * g), 0);
  const std::int64_t xoff = x_signed_ ? 128 : 0;  // x + 128 in the lanes: b - 128 s
  auto s16 = [&](std::uint64_t j) {
    return static_cast<std::uint32_t>(s_[static_cast<std::size_t>(j % C)]) & 0xFFFFu;
  };
  for (std::uint64_t mm = 0; mm < g; ++mm) {
    const std::uint64_t j = 4 * mm;
    const auto i = static_cast<std::size_t>(mm);
    t_[i] = static_cast<std::int32_t>(s16(j) | s16(j + 2) << 16);
    t_[i + g] = static_cast<std::int32_t>(s16(j + 1) | s16(j + 3) << 16);
    for (std::uint64_t q = 0; q < 4; ++q) {
      const auto c = static_cast<std::size_t>((j + q) % C);
      t_[i + (2 + q) * g] = static_cast<std::int32_t>(b_[c] - xoff * s_[c]);
    }
  }
}

std::uint8_t Affine8::one(std::uint8_t x, std::uint64_t c) const {
  const std::int32_t xv = x_signed_ ? static_cast<std::int8_t>(x) : static_cast<std::int32_t>(x);
  const auto i = static_cast<std::size_t>(c);
  std::int32_t acc = xv * s_[i] + b_[i];
  if (mode_ == Rounding::half_away) {
    acc -= acc < k_ ? 1 : 0;
  } else if (mode_ == Rounding::half_even) {
    acc += k_ + ((acc >> r_) & 1);
  }
  return static_cast<std::uint8_t>(std::clamp(acc >> r_, lo_, hi_));
}

std::uint64_t Affine8::span(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                            std::uint64_t pos) const {
  while (n > 0) {
    const std::uint64_t len = std::min(block_ - pos, n);
    const auto p = static_cast<std::size_t>(pos);
    fn_(src, dst, s_.data() + p, b_.data() + p, len, r_, lo_, hi_, k_);
    src += len;
    dst += len;
    n -= len;
    pos = pos + len == block_ ? 0 : pos + len;
  }
  return pos;
}

void Affine8::vnni_span(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                        std::uint64_t c, bool wrap) const {
  const std::uint64_t C = channels_;
  // A table position of channel c that is a multiple of 4 exists when gcd(C, 4) divides c; the
  // scalar head also aligns dst for streaming stores when that is reachable.
  const bool stream = n >= (std::uint64_t{1} << 14) && src != dst;
  auto q_ok = [&](std::uint64_t i) {
    const std::uint64_t ch = (c + i) % C;
    return wrap ? ch % std::gcd<std::uint64_t>(C, 4) == 0 : ch % 4 == 0;
  };
  auto dst_ok = [&](std::uint64_t i) {
    return (reinterpret_cast<std::uintptr_t>(dst + i) & 63) == 0;
  };
  std::uint64_t head = 0;
  while (stream && head < n && head < 256 && !(q_ok(head) && dst_ok(head))) ++head;
  if (!stream || head == 256) {  // no streaming, or dst alignment unreachable: ordinary stores
    head = 0;
    while (head < n && !q_ok(head)) ++head;
  }
  for (std::uint64_t i = 0; i < head; ++i) dst[i] = one(src[i], (c + i) % C);
  if (head == n) return;
  std::uint64_t ch = (c + head) % C, q = ch;
  while (q % 4 != 0) q += C;  // q < P: the same channel, position a multiple of 4
  VnniArgs a{t_.data(),
             (period_ + 64) / 4,
             wrap ? period_ : ~std::uint64_t{0},
             wrap ? 64 % period_ : 64,
             x_signed_ ? static_cast<std::int32_t>(0x80808080u) : 0,
             r_,
             lo_,
             hi_,
             k_,
             stream && dst_ok(head)};
  const std::uint64_t nvec = (n - head) / 64;
  q = vnni_(src + head, dst + head, nvec, q, a);
  const std::uint64_t i0 = head + 64 * nvec;
  ch = (c + i0) % C;
  for (std::uint64_t i = i0; i < n; ++i) {
    dst[i] = one(src[i], ch);
    if (++ch == C) ch = 0;
  }
}

void Affine8::run_nhwc(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                       std::uint64_t c0) const {
  if (vnni_ != nullptr) {
    const std::uint64_t C = channels_;
    if (C <= kTileChannels) {
      vnni_span(src, dst, n, c0, true);
      return;
    }
    // Tiled: the rest of the first pixel, then channel tiles over every whole pixel, then the
    // last partial pixel; every run inside one pixel.
    std::uint64_t i = std::min(n, (C - c0) % C);
    vnni_span(src, dst, i, c0, false);
    const std::uint64_t pixels = (n - i) / C;
    for (std::uint64_t t = 0; t < C; t += kTileChannels) {
      const std::uint64_t len = std::min(kTileChannels, C - t);
      for (std::uint64_t p = 0; p < pixels; ++p) {
        vnni_span(src + i + p * C + t, dst + i + p * C + t, len, t, false);
      }
    }
    i += pixels * C;
    vnni_span(src + i, dst + i, n - i, 0, false);
    return;
  }
  std::uint64_t pos = c0;  // position c0 of the block holds channel c0
#ifdef NORMCORE_AFFINE_X86
  // Long runs into a separate output: through a small L1 block, then streaming stores (no read
  // for ownership of the output lines, which otherwise costs a third memory stream).
  if (n >= (std::uint64_t{1} << 16) && src != dst) {
    const std::uint64_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
    pos = span(src, dst, head, pos);
    std::uint64_t i = head;
    alignas(64) std::uint8_t tmp[4096];
    for (; i + sizeof tmp <= n; i += sizeof tmp) {
      pos = span(src + i, tmp, sizeof tmp, pos);
      for (std::size_t j = 0; j < sizeof tmp; j += 16) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + j),
                         _mm_load_si128(reinterpret_cast<const __m128i*>(tmp + j)));
      }
    }
    _mm_sfence();
    span(src + i, dst + i, n - i, pos);
    return;
  }
#endif
  span(src, dst, n, pos);
}

}  // namespace normcore::detail::ref
