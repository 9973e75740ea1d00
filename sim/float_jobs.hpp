// Random float jobs (contract v2) for the co-simulation harnesses (test_core.cpp,
// test_accel.cpp): fp32 s / b patterns and clamps of y's type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

#include "normcore/contract.hpp"
#include "normcore/float_contract.hpp"

namespace normcore::sim {

// A float job (contract v2): random fp32 s and b (mostly moderate exponents; zeros,
// subnormals, Inf and NaN too), random 16-bit x patterns, a clamp of y's type; R = 0.
inline std::uint32_t random_fp32(std::mt19937_64& rng) {
  const auto r = static_cast<std::uint32_t>(rng());
  switch (r % 16) {
    case 0:
      return r & 0x807FFFFFU;  // a zero or a subnormal
    case 1:
      return (r & 0x80000000U) | 0x7F800000U | ((r >> 4) % 3 == 0 ? 0x00400000U : 0);  // Inf / NaN
    case 2:
      return r;
    default:  // exponents 2^-20 .. 2^11
      return (r & 0x807FFFFFU) | ((107U + (r >> 8) % 32) << 23);
  }
}

inline void float_settings(std::mt19937_64& rng, const ArithSpec& a, JobSettings& st) {
  const NumType t = a.y_type;
  st.shift = 0;
  if (t == NumType::integer) return;  // integer y: the integer clamp and rounding mode drawn
  const auto f = [&](double v) { return static_cast<std::int64_t>(double_to_float(v, t)); };
  switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
    case 0:
      st.lo = float_inf(t, true), st.hi = float_inf(t);
      break;
    case 1:
      st.lo = 0, st.hi = float_inf(t);  // ReLU
      break;
    case 2:
      st.lo = f(-0.0), st.hi = f(6.0);  // ReLU6 from -0
      break;
    case 3:
      st.lo = float_max(t, true), st.hi = float_max(t);
      break;
    default: {
      const double p = std::uniform_real_distribution<double>(-100, 100)(rng);
      const double q = std::uniform_real_distribution<double>(-100, 100)(rng);
      st.lo = f(std::min(p, q)), st.hi = f(std::max(p, q));
    }
  }
}

}  // namespace normcore::sim
