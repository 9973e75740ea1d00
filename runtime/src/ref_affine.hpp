// The ref device's arithmetic fast path for byte elements (xw == yw == 8): the contract's
// acc = x * s + b, round, clamp evaluated in 32-bit lanes (AVX-512 VNNI, AVX-512, AVX2 or
// baseline clones, chosen at run time). Used for NHWC, where the channel changes every element
// and a lookup table row per element cannot be vectorised.
//
// Period table: s and b expanded once per job over one period of P = lcm(C, 4) positions
// (position j holds channel j % C) plus 64 positions of wrap-around padding, so the inner loop
// is one streaming loop over 64-element vectors whose table index advances by 64 and wraps by
// P, like the NCHW loop over one table row. The VNNI clone (every |s| in int16) stores the table
// in the order its lanes use: dword m of six arrays holds s[4m] | s[4m+2] << 16,
// s[4m+1] | s[4m+3] << 16 and b[4m+k] (k = 0..3), so a vector is four VPDPWSSD (x * s + b in one
// instruction) on byte-masked input words, four shifts, three saturating packs and one PSHUFB,
// with no gathers or element shuffles. Signed x is biased to unsigned (x + 128; b - 128 s).
// Table bytes: 6 (P + 64) for the vector loop (C = 3: 456 B, 64: 768 B, 1000: 6.4 KB, 4096:
// 24.9 KB), plus s and b per channel (8 C) for the scalar ends of a run. Channel counts above
// kTileChannels (table over 24.9 KB, 393 KB at 65536) run tiled: channels in tiles of
// kTileChannels over every pixel of the range, so the slice of the table in use stays in L1.
//
// Exactness (round_shift of model/src/contract.cpp, 0 < R <= 30, all in int32 without overflow):
//   floor      acc >> R
//   half_up    (acc + h) >> R                              h = 2^(R-1)
//   half_away  (acc + h - [acc < 0]) >> R
//   half_even  (acc + h - 1 + ((acc >> R) & 1)) >> R
// R = 0 is the identity (floor). `make` declines (returns nullopt) unless every channel's
// |x * s| + |b| + 2^R stays below 2^31 for every input code, so no lane can overflow; the
// caller then uses the lookup tables. tests/runtime/test_ref_kernel.cpp compares every input code
// of every mode, signedness, shift, clamp, channel count (C not a multiple of the vector width,
// tiled C) and start channel against normcore::apply, in every clone this CPU runs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "normcore/contract.hpp"

namespace normcore::detail::ref {

// The VNNI clone's per-call constants (ref_affine_vnni.cpp).
struct VnniArgs {
  const std::int32_t* t = nullptr;  // six arrays of g dwords: w02, w13, b0, b1, b2, b3
  std::uint64_t g = 0;              // dwords per array: (P + 64) / 4
  std::uint64_t wrap = 0;           // P (the table index wraps), or ~0 (tiled: never)
  std::uint64_t step = 64;          // 64 % wrap: the index advance per vector
  std::int32_t xbias = 0;           // 0x80808080 for signed x (x + 128 per byte), else 0
  int r = 0;
  std::int32_t lo = 0, hi = 0, k = 0;
  bool stream = false;  // non-temporal stores (dst 64-byte aligned)
};
// nvec vectors of 64 elements from table position q (q % 4 == 0); returns the position after.
using VnniFn = std::uint64_t (*)(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t nvec,
                                 std::uint64_t q, const VnniArgs& a);
// The clone for this rounding mode (R > 0 or floor) and output signedness; null without
// AVX-512 VNNI support in the compiler.
VnniFn vnni_pick(Rounding m, bool y_signed);

class Affine8 {
 public:
  // Channels above this run tiled (24.6 KB of table per tile).
  static constexpr std::uint64_t kTileChannels = 4096;

  // The fast path for these channels and settings, or nullopt when int32 lanes could overflow.
  // `isa` caps the clone ("baseline", "avx2", "avx512" (no VNNI); null: the best this CPU runs,
  // which the environment variable NORMCORE_REF_ISA caps the same way).
  static std::optional<Affine8> make(const std::int64_t* scale, const std::int64_t* bias,
                                     std::uint64_t channels, bool x_signed, const JobSettings& job,
                                     const char* isa = nullptr);

  // n elements of an NHWC run whose first element has channel c0 (src may equal dst).
  void run_nhwc(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                std::uint64_t c0) const;

  // The instruction set of this object's clone: "avx512-vnni", "avx512-madd", "avx512", "avx2"
  // or "baseline".
  [[nodiscard]] const char* isa() const { return isa_; }
  // Bytes of the expanded table.
  [[nodiscard]] std::uint64_t table_bytes() const {
    return 4 * (s_.size() + b_.size() + t_.size());
  }

 private:
  // n elements from block position `pos` (natural-order clones); returns the position after.
  std::uint64_t span(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                     std::uint64_t pos) const;
  // n elements of channels c, c+1, ... through the VNNI clone; `wrap`: the table index may
  // wrap (else the run stays inside one pixel: c + n <= C).
  void vnni_span(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n, std::uint64_t c,
                 bool wrap) const;
  // The VNNI clone's tables (t_, and s_ / b_ per channel); bh: b's rounding term.
  void build_vnni(const std::int64_t* scale, const std::int64_t* bias, std::int64_t bh);
  // One element of channel c (scalar).
  [[nodiscard]] std::uint8_t one(std::uint8_t x, std::uint64_t c) const;
  using Fn = void (*)(const std::uint8_t*, std::uint8_t*, const std::int32_t*, const std::int32_t*,
                      std::uint64_t, int, std::int32_t, std::int32_t, std::int32_t);
  std::vector<std::int32_t> s_, b_;  // natural order: `block_` positions (VNNI: C), channel j % C
  std::vector<std::int32_t> t_;      // the VNNI clone's table (VnniArgs::t)
  std::uint64_t block_ = 0, channels_ = 0, period_ = 0;
  int r_ = 0;
  std::int32_t lo_ = 0, hi_ = 0, k_ = 0;  // clamp, rounding constant
  bool x_signed_ = false;
  Rounding mode_ = Rounding::floor;
  Fn fn_ = nullptr;
  VnniFn vnni_ = nullptr;
  const char* isa_ = "baseline";
};

}  // namespace normcore::detail::ref
