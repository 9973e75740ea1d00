// The ref device's vector kernel for float jobs (fp16 / bf16 in, fp16 / bf16 / fp32 out): the
// exact algorithm of fast_fma (ref_float.hpp) on 16 elements at a time, branch-free per element,
// compiled once per instruction set (ref_float_lanes.inc: portable GCC vector extensions; the
// AVX2 and AVX-512 clones add F16C conversions and streaming stores) and chosen at run time.
//
// Per element, with x, s, b finite (s, b fp32, flushed by the caller when asked):
//   p = x * s                    in double: exact (at most 11 x 24 significant bits)
//   h = p + b, err               TwoSum: p + b = h + err exactly
//   h jammed to odd              err != 0: h truncated toward zero, its LSB set (round to odd at
//                                53 bits, which keeps the one rounding below exact)
//   y = RNE(h) in the output     fp32: the double -> float conversion; fp16 / bf16: (h + C) - C
//                                with C = 2^(max(e_h, emin) + 52 - m) of h's sign (m fraction
//                                bits) rounds at the output's LSB (the subnormal LSB below
//                                emin), then an exact conversion (overflow: Inf)
//   flush, clamp                 a subnormal result -> signed zero (flush); clamp on the numeric
//                                order of the output patterns (-0 == +0), as fma_one does
// A vector whose x holds a NaN or Inf is left to the caller (the kernel returns its index), as
// is one whose s or b (tables) is NaN or Inf, unless LaneArgs::finite says none is; the
// constant-coefficient kernels take finite s, b.
#pragma once

#include <cstdint>

#include "normcore/contract.hpp"

namespace normcore::detail::ref {

// Arguments of one call. Table kernels read s[i], b[i] beside x[i]; the others s[0], b[0].
struct LaneArgs {
  const float* s = nullptr;
  const float* b = nullptr;
  std::uint32_t lo = 0, hi = 0;  // clamp bounds: patterns of the output type
  bool flush = false;            // flush subnormal x and subnormal results
  bool finite = false;           // tables: every s and b is finite (no NaN / Inf test needed)
  bool stream = false;  // part of a long job: streaming stores even for short calls, and no
                        // store fence at the end (the caller fences after its last call)
};

// n elements of x (16-bit patterns) into y (16- or 32-bit patterns). Returns n, or r < n when
// the up to kLaneWidth elements from r hold a NaN or Inf x (or s, b): [0, r) is written,
// nothing from r on (the caller does those elements on the scalar path and calls again after). x
// may equal y (in place, same width). Long calls into a separate y use streaming stores.
using LaneFn = std::uint64_t (*)(const void* x, void* y, std::uint64_t n, const LaneArgs& a);

inline constexpr std::uint64_t kLaneWidth = 16;

// The kernel for these types (float x and y) and coefficient form, from the clone `isa`
// ("baseline", "avx2", "avx512"; null: the best this CPU runs, capped by the environment
// variable NORMCORE_REF_ISA as for the integer kernels). Null if isa names a clone this CPU or
// compiler lacks. `chosen` receives the clone's name.
LaneFn lane_kernel(NumType x, NumType y, bool table, const char* isa = nullptr,
                   const char** chosen = nullptr);

// Integer outputs of yw = 8 or 16 bits (a float input, the job's rounding mode; LaneArgs lo / hi
// are the int32 bounds, which must lie within +-(2^22 - 1)): the AVX-512 and AVX2 clones; null
// when the clone chosen (isa as for lane_kernel) is the portable one or yw is another width.
LaneFn lane_int_kernel(NumType x, int yw, bool table, Rounding m, const char* isa = nullptr);

// The AVX-512 and AVX2 clones (ref_float_avx512.cpp, ref_float_avx2.cpp): x 0 fp16 / 1 bf16,
// y 0 fp16 / 1 bf16 / 2 fp32; null where the compiler has no x86-64 target.
LaneFn avx512_lane_kernel(int x, int y, bool table);
LaneFn avx2_lane_kernel(int x, int y, bool table);
LaneFn avx512_int_kernel(int x, int yb, bool table, Rounding m);
LaneFn avx2_int_kernel(int x, int yb, bool table, Rounding m);

}  // namespace normcore::detail::ref
