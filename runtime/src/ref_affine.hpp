// The ref device's arithmetic fast path for byte elements (xw == yw == 8): the contract's
// acc = x * s + b, round, clamp evaluated in 32-bit lanes by a loop the compiler vectorises
// (AVX-512, AVX2 or baseline clones, chosen at run time). Used for NHWC, where the channel
// changes every element and a lookup table row per element cannot be vectorised.
//
// The per-channel tables are pre-expanded into one block of `block` positions (a multiple of
// the channel count, position j holding channel j % C), so a run of consecutive channels reads
// consecutive scale and bias words: one contiguous vector load per beat.
//
// Exactness (round_shift of model/src/contract.cpp, 0 < R <= 30, all in int32 without overflow):
//   floor      acc >> R
//   half_up    (acc + h) >> R                              h = 2^(R-1)
//   half_away  (acc + h - [acc < 0]) >> R
//   half_even  (acc + h - 1 + ((acc >> R) & 1)) >> R
// R = 0 is the identity (floor). `make` declines (returns nullopt) unless every channel's
// |x * s| + |b| + 2^R stays below 2^31 for every input code, so no lane can overflow; the
// caller then uses the lookup tables. tests/runtime/test_ref_kernel.cpp compares every input code
// of every mode, signedness, shift and clamp against normcore::apply.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "normcore/contract.hpp"

namespace normcore::detail::ref {

class Affine8 {
 public:
  // The fast path for these channels and settings, or nullopt when int32 lanes could overflow.
  // `isa` caps the clone ("baseline", "avx2"; null: the best this CPU runs, which the
  // environment variable NORMCORE_REF_ISA caps the same way).
  static std::optional<Affine8> make(const std::int64_t* scale, const std::int64_t* bias,
                                     std::uint64_t channels, bool x_signed, const JobSettings& job,
                                     const char* isa = nullptr);

  // n elements of an NHWC run whose first element has channel c0 (src may equal dst).
  void run_nhwc(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                std::uint64_t c0) const;

  // The instruction set of this object's clone: "avx512", "avx2" or "baseline".
  [[nodiscard]] const char* isa() const { return isa_; }

 private:
  // n elements from block position `pos`; returns the position after them.
  std::uint64_t span(const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n,
                     std::uint64_t pos) const;
  using Fn = void (*)(const std::uint8_t*, std::uint8_t*, const std::int32_t*, const std::int32_t*,
                      std::uint64_t, int, std::int32_t, std::int32_t, std::int32_t);
  std::vector<std::int32_t> s_, b_;  // `block_` positions, position j = channel j % C
  std::uint64_t block_ = 0;
  int r_ = 0;
  std::int32_t lo_ = 0, hi_ = 0, k_ = 0;  // clamp, rounding constant
  Fn fn_ = nullptr;
  const char* isa_ = "baseline";
};

}  // namespace normcore::detail::ref
