// The ref device's arithmetic fast path for byte elements (ref_affine.hpp).
#include "ref_affine.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>  // _mm_stream_si128 (SSE2: every x86-64)
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

Isa from_env() {
  static const Isa i = [] {
    const char* cap = std::getenv("NORMCORE_REF_ISA");
    return best(cap != nullptr ? cap : "");
  }();
  return i;
}

template <Rounding M, bool XS>
auto pick(Isa isa) -> void (*)(NORMCORE_AFFINE_ARGS) {
#ifdef NORMCORE_AFFINE_X86
  switch (isa) {
    case Isa::avx512:
      return &run_avx512<M, XS>;
    case Isa::avx2:
      return &run_avx2<M, XS>;
    case Isa::base:
      break;
  }
#endif
  (void)isa;
  return &run_base<M, XS>;
}

template <bool XS>
auto pick(Rounding m, Isa isa) -> void (*)(NORMCORE_AFFINE_ARGS) {
  switch (m) {
    case Rounding::floor:
      return pick<Rounding::floor, XS>(isa);
    case Rounding::half_up:
      return pick<Rounding::half_up, XS>(isa);
    case Rounding::half_even:
      return pick<Rounding::half_even, XS>(isa);
    case Rounding::half_away:
      return pick<Rounding::half_away, XS>(isa);
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
  Rounding m = r == 0 ? Rounding::floor : job.rounding;
  a.r_ = r;
  a.lo_ = static_cast<std::int32_t>(job.lo);
  a.hi_ = static_cast<std::int32_t>(job.hi);
  const bool bias_h = m == Rounding::half_up || m == Rounding::half_away;
  a.k_ = static_cast<std::int32_t>(m == Rounding::half_even ? h - 1 : h);
  // A block of at least 1024 positions (whole channel periods): runs long enough for the
  // vector loop, tables small enough for L1/L2.
  const std::uint64_t periods = std::max<std::uint64_t>(1, (1024 + channels - 1) / channels);
  a.block_ = periods * channels;
  a.s_.resize(static_cast<std::size_t>(a.block_));
  a.b_.resize(static_cast<std::size_t>(a.block_));
  for (std::uint64_t j = 0; j < a.block_; ++j) {
    const std::uint64_t c = j % channels;
    a.s_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(scale[c]);
    a.b_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(bias[c] + (bias_h ? h : 0));
  }
  const Isa use = isa != nullptr ? best(isa) : from_env();
  a.fn_ = x_signed ? pick<true>(m, use) : pick<false>(m, use);
  a.isa_ = name(use);
  return a;
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

void Affine8::run_nhwc(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                       std::uint64_t c0) const {
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
