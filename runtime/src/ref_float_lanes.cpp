// The float vector kernel's portable clone and the choice of a clone at run time
// (ref_float_lanes.hpp; the AVX2 and AVX-512 clones are ref_float_avx2.cpp, ref_float_avx512.cpp).
// The portable clone is the algorithm of fast_fma (ref_float.cpp) element by element: the exact
// product, TwoSum, the round-to-odd jam, one rounding into the output, in double arithmetic and
// integer operations on the patterns (no tables, no branches but the NaN / Inf test).
#include "ref_float_lanes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#if defined(__x86_64__)
#define NORMCORE_LANES_X86 1
#endif

namespace normcore::detail::ref {
namespace {

template <typename T, typename F>
T bit_cast_to(F v) {
  static_assert(sizeof(T) == sizeof(F));
  T t;
  std::memcpy(&t, &v, sizeof t);
  return t;
}

// An x pattern (flush applied) as a float, exactly.
template <NumType X>
inline float to_float(std::uint32_t x) {
  if constexpr (X == NumType::bf16) {
    return bit_cast_to<float>(x << 16);
  } else {
    const std::uint32_t mag = x & 0x7FFFu;
    const float sub = static_cast<float>(mag) * 0x1p-24f;  // exact when mag < 2^10
    const std::uint32_t bits =
        mag < 0x400u ? bit_cast_to<std::uint32_t>(sub) : (mag << 13) + (112u << 23);
    return bit_cast_to<float>(bits | (x & 0x8000u) << 16);
  }
}

// A double on the fp16 grid (or beyond its range) -> its fp16 pattern (overflow: Inf).
inline std::uint32_t to_half(double r) {
  const auto f = static_cast<float>(r);  // exact, or Inf beyond fp32
  const std::uint32_t fb = bit_cast_to<std::uint32_t>(f);
  const std::uint32_t a = fb & 0x7FFFFFFFu;
  const std::uint32_t normal = std::min((a >> 13) - (112u << 10), 0x7C00u);  // |f| >= 2^-14
  // |f| < 2^-14 is k * 2^-24: |f| + 2^-14 holds k in its top fraction bits
  const std::uint32_t sub =
      (bit_cast_to<std::uint32_t>(bit_cast_to<float>(a) + 0x1p-14f) >> 13) & 0x3FFu;
  return (a < 0x38800000u ? sub : normal) | ((fb >> 16) & 0x8000u);
}

// x * s + b rounded once into Y, flushed and clamped (the header's algorithm).
template <NumType X, NumType Y>
inline std::uint32_t one(std::uint32_t x, double sd, double bd, const LaneArgs& a) {
  constexpr std::uint32_t xexp = X == NumType::bf16 ? 0x7F80u : 0x7C00u;
  if (a.flush && (x & xexp) == 0) x &= 0x8000u;               // a subnormal x -> zero of its sign
  const double p = static_cast<double>(to_float<X>(x)) * sd;  // exact
  const double h = p + bd;
  const double bb = h - p;
  const double err = (p - (h - bb)) + (bd - bb);  // TwoSum: p + b = h + err
  auto hb = bit_cast_to<std::int64_t>(h);
  const std::int64_t inexact = err != 0 ? 1 : 0;
  const std::int64_t away = (hb ^ bit_cast_to<std::int64_t>(err)) < 0 ? inexact : 0;
  hb = (hb - away) | inexact;  // truncated toward zero, LSB = sticky: round to odd
  std::uint32_t y;
  if constexpr (Y == NumType::fp32) {
    y = bit_cast_to<std::uint32_t>(static_cast<float>(bit_cast_to<double>(hb)));
  } else {
    constexpr int man = Y == NumType::bf16 ? 7 : 10;
    constexpr std::int64_t emin = std::int64_t{Y == NumType::bf16 ? -126 + 1023 : -14 + 1023} << 52;
    const std::int64_t sign = hb & std::numeric_limits<std::int64_t>::min();
    const std::int64_t ex = std::max(hb & 0x7FF0000000000000, emin);
    const double c = bit_cast_to<double>((ex + (std::int64_t{52 - man} << 52)) | sign);
    const double r = bit_cast_to<double>(
        bit_cast_to<std::int64_t>((bit_cast_to<double>(hb) + c) - c) | sign);  // RNE at the LSB
    y = Y == NumType::bf16 ? bit_cast_to<std::uint32_t>(static_cast<float>(r)) >> 16 : to_half(r);
  }
  constexpr std::uint32_t sbit = Y == NumType::fp32 ? 0x80000000u : 0x8000u;
  constexpr std::uint32_t yexp = Y == NumType::fp32   ? 0x7F800000u
                                 : Y == NumType::bf16 ? 0x7F80u
                                                      : 0x7C00u;
  if (a.flush && (y & yexp) == 0) y &= sbit;  // a subnormal result -> zero of its sign
  const auto key = [](std::uint32_t v) {      // numeric order of the patterns (-0 == +0)
    const auto m = static_cast<std::int64_t>(v & (sbit - 1));
    return (v & sbit) != 0 ? -m : m;
  };
  const std::int64_t k = key(y);
  return k < key(a.lo) ? a.lo : k > key(a.hi) ? a.hi : y;
}

// The kernel (LaneFn): element by element, stopping at the first NaN / Inf x, s or b.
template <NumType X, NumType Y, bool Table>
std::uint64_t kernel(const void* xp, void* y, std::uint64_t n, const LaneArgs& a) {
  using T = std::conditional_t<Y == NumType::fp32, std::uint32_t, std::uint16_t>;
  const auto* x = static_cast<const std::uint8_t*>(xp);
  auto* out = static_cast<std::uint8_t*>(y);
  constexpr std::uint32_t xexp = X == NumType::bf16 ? 0x7F80u : 0x7C00u;
  const auto special32 = [](float v) {
    return (bit_cast_to<std::uint32_t>(v) & 0x7F800000u) == 0x7F800000u;
  };
  double sd = a.s[0], bd = a.b[0];
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint16_t xv;
    std::memcpy(&xv, x + 2 * i, 2);
    if constexpr (Table) {
      if (!a.finite && (special32(a.s[i]) || special32(a.b[i]))) return i;
      sd = a.s[i];
      bd = a.b[i];
    }
    if ((xv & xexp) == xexp) return i;
    const auto v = static_cast<T>(one<X, Y>(xv, sd, bd, a));
    std::memcpy(out + sizeof(T) * i, &v, sizeof v);
  }
  return n;
}

enum class Isa { base, avx2, avx512 };

bool runs(Isa i) {
#ifdef NORMCORE_LANES_X86
  switch (i) {
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("fma");
    case Isa::base:
      return true;
  }
  return false;
#else
  return i == Isa::base;
#endif
}

int type_index(NumType t) {
  return t == NumType::fp16 ? 0 : t == NumType::bf16 ? 1 : 2;
}

}  // namespace

namespace {

// The clone for `isa` (null: the best this CPU runs, capped by NORMCORE_REF_ISA); false if isa
// names one this CPU or compiler lacks.
bool choose(const char* isa, Isa& use) {
  use = Isa::base;
  if (isa != nullptr) {
    const std::string want = isa;
    if (want == "avx512") {
      use = Isa::avx512;
    } else if (want == "avx2") {
      use = Isa::avx2;
    } else if (want != "baseline") {
      return false;
    }
    return runs(use);
  }
  const char* env = std::getenv("NORMCORE_REF_ISA");
  const std::string cap = env != nullptr ? env : "";
  if (cap != "baseline" && cap != "avx2" && runs(Isa::avx512)) {
    use = Isa::avx512;
  } else if (cap != "baseline" && runs(Isa::avx2)) {
    use = Isa::avx2;
  }
  return true;
}

}  // namespace

LaneFn lane_int_kernel(NumType x, int yw, bool table, Rounding m, const char* isa) {
  Isa use = Isa::base;
  if (x != NumType::fp16 && x != NumType::bf16) return nullptr;
  if (!choose(isa, use) || (yw != 8 && yw != 16)) return nullptr;
  if (use == Isa::avx512) return avx512_int_kernel(type_index(x), yw / 8, table, m);
  if (use == Isa::avx2) return avx2_int_kernel(type_index(x), yw / 8, table, m);
  return nullptr;
}

LaneFn lane_kernel(NumType x, NumType y, bool table, const char* isa, const char** chosen) {
  if (x == NumType::integer || x == NumType::fp32 || y == NumType::integer) return nullptr;
  Isa use = Isa::base;
  if (!choose(isa, use)) return nullptr;
  if (chosen != nullptr) {
    *chosen = use == Isa::avx512 ? "avx512" : use == Isa::avx2 ? "avx2" : "baseline";
  }
  const int xi = type_index(x), yi = type_index(y);
  if (use == Isa::avx512) return avx512_lane_kernel(xi, yi, table);
  if (use == Isa::avx2) return avx2_lane_kernel(xi, yi, table);
  static constexpr LaneFn portable[2][3][2] = {
      {{kernel<NumType::fp16, NumType::fp16, false>, kernel<NumType::fp16, NumType::fp16, true>},
       {kernel<NumType::fp16, NumType::bf16, false>, kernel<NumType::fp16, NumType::bf16, true>},
       {kernel<NumType::fp16, NumType::fp32, false>, kernel<NumType::fp16, NumType::fp32, true>}},
      {{kernel<NumType::bf16, NumType::fp16, false>, kernel<NumType::bf16, NumType::fp16, true>},
       {kernel<NumType::bf16, NumType::bf16, false>, kernel<NumType::bf16, NumType::bf16, true>},
       {kernel<NumType::bf16, NumType::fp32, false>, kernel<NumType::bf16, NumType::fp32, true>}}};
  return portable[xi][yi][table ? 1 : 0];
}

}  // namespace normcore::detail::ref
