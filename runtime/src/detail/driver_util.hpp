// Small arithmetic and timing helpers shared by the driver's translation units.
#pragma once

#include <chrono>
#include <cstdint>

namespace normcore::detail {

using Clock = std::chrono::steady_clock;

inline std::uint64_t mask_bits(int w) {
  return w >= 64 ? ~0ULL : ((1ULL << w) - 1);
}
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}
inline std::uint64_t round_up(std::uint64_t a, std::uint64_t b) {
  return ceil_div(a, b) * b;
}
inline double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace normcore::detail
