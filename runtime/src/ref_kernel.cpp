// The ref device's compute kernel (ref_kernel.hpp).
#include "ref_kernel.hpp"

#include <cstring>
#include <numeric>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NORMCORE_REF_X86 1
#endif

#include "ref_memory.hpp"  // ceil_div

namespace normcore::detail::ref {
namespace {

#ifdef NORMCORE_REF_X86
// 32 bytes through a 256-entry row held as 16 PSHUFB tables of 16 entries. PSHUFB looks up
// the low nibble of each index byte, or gives 0 when bit 7 is set. For the low half (x < 128,
// high nibble h < 8), table j gets the index x +sat (0x70 - 16j): bit 7 is clear exactly when
// h <= j, so x collects tables h..7; with d[j] = T[j] ^ T[j + 1] (d[7] = T[7]) their XOR
// telescopes to T[h]. x >= 128 saturates every index (no contribution). The high half is the
// same with x ^ 0x80 and d[8..15]. (d, bias: prepared by map_run_avx2.)
__attribute__((target("avx2"))) inline __m256i map32(const __m256i* d, const __m256i* bias,
                                                     const std::uint8_t* p) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i x2 = _mm256_xor_si256(x, _mm256_set1_epi8(static_cast<char>(0x80)));
  __m256i r0 = _mm256_shuffle_epi8(d[0], _mm256_adds_epu8(x, bias[0]));
  __m256i r1 = _mm256_shuffle_epi8(d[8], _mm256_adds_epu8(x2, bias[0]));
  for (int j = 1; j < 8; ++j) {
    r0 = _mm256_xor_si256(r0, _mm256_shuffle_epi8(d[j], _mm256_adds_epu8(x, bias[j])));
    r1 = _mm256_xor_si256(r1, _mm256_shuffle_epi8(d[8 + j], _mm256_adds_epu8(x2, bias[j])));
  }
  return _mm256_or_si256(r0, r1);
}
bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") != 0;
  return yes;
}
// 32 bytes per step (map32). Returns the bytes done.
__attribute__((target("avx2"))) std::uint64_t map_run_avx2(const std::uint8_t* row,
                                                           const std::uint8_t* src,
                                                           std::uint8_t* dst, std::uint64_t n) {
  __m256i t[16], d[16], bias[8];
  for (int k = 0; k < 16; ++k) {
    t[k] = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * k)));
  }
  for (int k = 0; k < 16; ++k) d[k] = (k % 8 == 7) ? t[k] : _mm256_xor_si256(t[k], t[k + 1]);
  for (int j = 0; j < 8; ++j) bias[j] = _mm256_set1_epi8(static_cast<char>(0x70 - 16 * j));
  std::uint64_t i = 0;
  // Long runs into a separate output: streaming stores (no read for ownership of the output
  // lines, which otherwise costs a third memory stream), once dst is 32-byte aligned.
  if (n >= (std::uint64_t{1} << 20) && src != dst) {
    const std::uint64_t head = (32 - (reinterpret_cast<std::uintptr_t>(dst) & 31)) & 31;
    for (; i < head; ++i) dst[i] = row[src[i]];
    for (; i + 32 <= n; i += 32) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), map32(d, bias, src + i));
    }
    _mm_sfence();
    return i;
  }
  for (; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), map32(d, bias, src + i));
  }
  return i;
}
bool have_vbmi() {
  static const bool yes =
      __builtin_cpu_supports("avx512vbmi") != 0 && __builtin_cpu_supports("avx512bw") != 0;
  return yes;
}
// 64 bytes per step: the 256-byte row in four registers, VPERMI2B looks up 128 entries by the
// low 7 bits, the input's bit 7 picks the half. Returns the bytes done.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) std::uint64_t map_run_vbmi(
    const std::uint8_t* row, const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n) {
  const __m512i t0 = _mm512_loadu_si512(row), t1 = _mm512_loadu_si512(row + 64);
  const __m512i t2 = _mm512_loadu_si512(row + 128), t3 = _mm512_loadu_si512(row + 192);
  // Long runs into a separate output: streaming stores (map_run_avx2), once dst is aligned.
  const bool stream = n >= (std::uint64_t{1} << 20) && src != dst;
  std::uint64_t i = 0;
  if (stream) {
    const std::uint64_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
    for (; i < head; ++i) dst[i] = row[src[i]];
  }
  for (; i + 64 <= n; i += 64) {
    const __m512i x = _mm512_loadu_si512(src + i);
    const __m512i y =
        _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), _mm512_permutex2var_epi8(t0, x, t1),
                               _mm512_permutex2var_epi8(t2, x, t3));
    if (stream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), y);
    } else {
      _mm512_storeu_si512(dst + i, y);
    }
  }
  if (stream) _mm_sfence();
  return i;
}
#endif

// Byte in, byte out: one table row per channel run.
void map_run(const std::uint8_t* row, const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n) {
#ifdef NORMCORE_REF_X86
  if (n >= 64 && have_vbmi()) {
    const std::uint64_t done = map_run_vbmi(row, src, dst, n);
    src += done;
    dst += done;
    n -= done;
  } else if (n >= 64 && have_avx2()) {
    const std::uint64_t done = map_run_avx2(row, src, dst, n);
    src += done;
    dst += done;
    n -= done;
  }
#endif
  // Eight bytes per step: one load, eight table reads, one store (in place safe: the word is
  // read before it is written).
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, src, 8);
    const std::uint64_t o = static_cast<std::uint64_t>(row[w & 0xFF]) |
                            static_cast<std::uint64_t>(row[(w >> 8) & 0xFF]) << 8 |
                            static_cast<std::uint64_t>(row[(w >> 16) & 0xFF]) << 16 |
                            static_cast<std::uint64_t>(row[(w >> 24) & 0xFF]) << 24 |
                            static_cast<std::uint64_t>(row[(w >> 32) & 0xFF]) << 32 |
                            static_cast<std::uint64_t>(row[(w >> 40) & 0xFF]) << 40 |
                            static_cast<std::uint64_t>(row[(w >> 48) & 0xFF]) << 48 |
                            static_cast<std::uint64_t>(row[w >> 56]) << 56;
    std::memcpy(dst, &o, 8);
    src += 8;
    dst += 8;
    n -= 8;
  }
  for (std::uint64_t i = 0; i < n; ++i) dst[i] = row[src[i]];
}

}  // namespace

void Kernel::run(std::uint64_t e0, std::uint64_t e1) const {
  std::uint64_t c = (e0 / stride) % channels, r = e0 % stride;
  if (affine != nullptr && stride == 1) {
    affine->run_nhwc(in + e0, out + e0, e1 - e0, c);
    return;
  }
  if (lut8 != nullptr) {
    run8(e0, e1, c, r);
    return;
  }
  bits::Reader rd(in + e0 * static_cast<std::uint64_t>(xw) / 8);
  bits::Writer wr(out + e0 * static_cast<std::uint64_t>(yw) / 8);
  const std::uint64_t ymask = bits::mask(yw);
  const int xs = xw;
  for (std::uint64_t e = e0; e < e1; ++e) {
    const std::uint64_t raw = rd.get(xw);
    std::uint64_t y;
    if (lut != nullptr) {
      y = lut[(c << xs) | raw];
    } else {
      const std::int64_t x = bits::to_int(raw, xw, x_signed);
      y = static_cast<std::uint64_t>(apply(x, scale[c], shift[c], job)) & ymask;
    }
    wr.put(y, yw);
    if (++r == stride) {
      r = 0;
      if (++c == channels) c = 0;
    }
  }
  wr.flush();
}

void Kernel::run8(std::uint64_t e0, std::uint64_t e1, std::uint64_t c, std::uint64_t r) const {
  const std::uint8_t* src = in + e0;
  std::uint8_t* dst = out + e0;
  std::uint64_t n = e1 - e0;
  if (stride >= 16) {  // long runs of one channel
    while (n > 0) {
      const std::uint64_t len = std::min(stride - r, n);
      map_run(lut8 + (c << 8), src, dst, len);
      src += len;
      dst += len;
      n -= len;
      r += len;
      if (r == stride) {
        r = 0;
        if (++c == channels) c = 0;
      }
    }
    return;
  }
  if (stride == 1) {  // NHWC: the channel advances every element
    // Eight bytes per step through the rows of channels c..c+7 (mod C).
    const std::uint64_t nch = channels;  // locals: the byte stores may alias members
    const std::uint8_t* const table = lut8;
    std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(nch + 8));
    for (std::uint64_t k = 0; k < nch + 8; ++k) rows[k] = table + ((k % nch) << 8);
    const std::uint64_t step = 8 % nch;
    std::uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const std::uint8_t* const* rp = rows.data() + c;
      std::uint64_t w;
      std::memcpy(&w, src + i, 8);
      const std::uint64_t o = static_cast<std::uint64_t>(rp[0][w & 0xFF]) |
                              static_cast<std::uint64_t>(rp[1][(w >> 8) & 0xFF]) << 8 |
                              static_cast<std::uint64_t>(rp[2][(w >> 16) & 0xFF]) << 16 |
                              static_cast<std::uint64_t>(rp[3][(w >> 24) & 0xFF]) << 24 |
                              static_cast<std::uint64_t>(rp[4][(w >> 32) & 0xFF]) << 32 |
                              static_cast<std::uint64_t>(rp[5][(w >> 40) & 0xFF]) << 40 |
                              static_cast<std::uint64_t>(rp[6][(w >> 48) & 0xFF]) << 48 |
                              static_cast<std::uint64_t>(rp[7][w >> 56]) << 56;
      std::memcpy(dst + i, &o, 8);
      c += step;
      if (c >= nch) c -= nch;
    }
    for (; i < n; ++i) {
      dst[i] = table[(c << 8) | src[i]];
      if (++c == nch) c = 0;
    }
    return;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    dst[i] = lut8[(c << 8) | src[i]];
    if (++r == stride) {
      r = 0;
      if (++c == channels) c = 0;
    }
  }
}

void compute(const Kernel& base, std::uint64_t total, bool in_place, unsigned threads_max) {
  const int xw = base.xw, yw = base.yw;
  Kernel k = base;
  const std::uint64_t C = k.channels;
  // Lookup tables (one row per channel, every input code through apply) when they cost less
  // than evaluating every element: at least two elements per table entry.
  std::vector<std::uint8_t> lut8;
  std::vector<std::uint32_t> lut;
  const unsigned threads = total >= (1u << 18) ? threads_max : 1u;
  // NHWC bytes: the vectorised arithmetic (no tables) when its int32 lanes cannot overflow.
  std::optional<Affine8> affine;
  if (xw == 8 && yw == 8 && k.stride == 1 && total >= 64) {
    affine = Affine8::make(k.scale, k.shift, C, k.x_signed, k.job);
    if (affine) k.affine = &*affine;
  }
  if (xw <= 16 && k.affine == nullptr) {
    const std::uint64_t entries = C << xw;
    if (total >= 2 * entries && entries <= (std::uint64_t{1} << 24)) {
      if (xw == 8 && yw == 8) {
        lut8.resize(static_cast<std::size_t>(entries));
        parallel_for(C, threads, [&](std::uint64_t c) {
          k.fill_row(lut8.data() + static_cast<std::size_t>(c << 8), c);
        });
        k.lut8 = lut8.data();
      } else {
        lut.resize(static_cast<std::size_t>(entries));
        parallel_for(C, threads, [&](std::uint64_t c) {
          k.fill_row(lut.data() + static_cast<std::size_t>(c << xw), c);
        });
        k.lut = lut.data();
      }
    }
  }
  // Split into element ranges that start on whole bytes in both input and output. In place with
  // narrower output, a later range would overwrite input an earlier one has not read yet: one
  // range then.
  const std::uint64_t gx = 8 / std::gcd<std::uint64_t>(8, static_cast<std::uint64_t>(xw));
  const std::uint64_t gy = 8 / std::gcd<std::uint64_t>(8, static_cast<std::uint64_t>(yw));
  const std::uint64_t grain = std::lcm(gx, gy) * 4096;
  unsigned parts = (in_place && yw != xw) ? 1u : threads;
  if (total < 2 * grain) parts = 1;
  if (parts <= 1) {
    k.run(0, total);
    return;
  }
  const std::uint64_t chunk = ceil_div(ceil_div(total, parts), grain) * grain;
  const std::uint64_t n = ceil_div(total, chunk);
  parallel_for(n, parts,
               [&](std::uint64_t i) { k.run(i * chunk, std::min(total, (i + 1) * chunk)); });
}

}  // namespace normcore::detail::ref
