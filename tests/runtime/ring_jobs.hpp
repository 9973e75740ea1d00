// Random jobs of the descriptor-ring driver tests (tests/runtime/test_driver_ring.cpp on ref:,
// sim/test_ring_driver.cpp on sim: and tlm:): one parameter image and random inputs.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"

namespace normcore::test {

// An image of `channels` random scales and offsets, R in 2..10, a random rounding mode, full clamp.
inline ParamImage ring_image(const ArithSpec& a, std::uint64_t channels, std::mt19937_64& rng) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  ParamImage im;
  im.spec = a;
  im.job.shift = static_cast<int>(uni(2, 10));
  im.job.rounding = static_cast<Rounding>(uni(0, 3));
  im.job.lo = a.y_min();
  im.job.hi = a.y_max();
  for (std::uint64_t c = 0; c < channels; ++c) {
    im.scale.push_back(uni(a.s_min(), a.s_max()));
    im.shift.push_back(uni(-(1 << 12), 1 << 12));
  }
  return im;
}

// n values of type T, uniform in [lo, hi].
template <typename T>
std::vector<T> random_x(std::uint64_t n, std::int64_t lo, std::int64_t hi, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> d(lo, hi);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng));
  return x;
}

}  // namespace normcore::test
