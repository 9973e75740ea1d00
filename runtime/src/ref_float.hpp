// The ref device's float kernel (contract v2): every element of a float job through the golden
// model's result. Float in and float out take the vector kernel (ref_float_lanes.hpp: AVX-512,
// AVX2 or portable clone, chosen at run time; channel runs of 64 elements and more with s, b
// constant, shorter runs (NHWC) with s, b per position of a table of whole periods), and the
// exact scalar fast path (fast_fma: the double product, TwoSum, a round-to-odd jam and one
// integer rounding) for NaN / Inf inputs and coefficients; both exhaustively tested against
// apply_float (tests/runtime/test_ref_float*.cpp). The other combinations (integer in or out)
// call apply_float per element. Multi-threaded in ranges of 4096 elements, in place too when
// input and output have the same width; the host's MXCSR (FTZ / DAZ, rounding) does not matter.
#pragma once

#include <cstdint>

#include "normcore/contract.hpp"

namespace normcore::detail::ref {

struct FloatKernel {
  const std::uint8_t* in = nullptr;  // packed input, element 0 at bit 0
  std::uint8_t* out = nullptr;       // packed output, element 0 at bit 0
  ArithSpec spec;                    // a float spec (spec.is_float())
  std::uint64_t channels = 1;
  std::uint64_t stride = 1;             // elements per channel run: HW (NCHW) or 1 (NHWC)
  const std::int64_t* scale = nullptr;  // fp32 patterns (sign-extended is fine)
  const std::int64_t* shift = nullptr;  // b: fp32 patterns
  JobSettings job;                      // lo / hi: patterns of the output type or integers
  const char* isa = nullptr;            // the vector kernel's clone (lane_kernel); null: best
};

// Whether fast_fma applies: float x and float y.
bool fast_path(const ArithSpec& spec);
// x (fp16 / bf16 bits), s, b (fp32 bits) -> the output bits of spec.y_type, clamped: equal to
// apply_float for every input (special values go to apply_float).
std::uint32_t fast_fma(std::uint32_t x, std::uint32_t s, std::uint32_t b, const ArithSpec& spec,
                       const JobSettings& job);

// Elements [0, total) on up to `threads` threads (in place with a narrower output: one thread,
// front to back).
void compute_float(const FloatKernel& k, std::uint64_t total, bool in_place, unsigned threads);

}  // namespace normcore::detail::ref
