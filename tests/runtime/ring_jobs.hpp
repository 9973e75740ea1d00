// Random jobs of the descriptor-ring driver tests (tests/runtime/test_driver_ring.cpp on ref:,
// sim/test_ring_driver.cpp on sim: and tlm:): one parameter image and random inputs, and the
// fault scenario both run.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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

// Tiles of one tensor and converted tensors (int16 in, uint8 and float out) on `a` and `b`
// (DriverOptions.max_tile_elements 300 on both: several staged groups): six random shapes and
// layouts, byte-identical outputs and the same tile counts; returns the tiles of `a`.
inline std::uint64_t tiles_match(Accelerator& a, Accelerator& b, std::mt19937_64& rng) {
  const ArithSpec spec = a.manifest().config.arith();
  std::uint64_t tiles = 0;
  for (int t = 0; t < 6; ++t) {
    const std::uint64_t c =
        static_cast<std::uint64_t>(std::uniform_int_distribution<int>(1, 12)(rng));
    const JobShape s{
        .n = static_cast<std::uint64_t>(std::uniform_int_distribution<int>(1, 4)(rng)),
        .c = c,
        .hw = static_cast<std::uint64_t>(std::uniform_int_distribution<int>(1, 40)(rng)),
        .layout = t % 2 ? Layout::nhwc : Layout::nchw};
    ParamImage im = ring_image(spec, c, rng);
    im.job.lo = 0;
    im.job.hi = 255;
    const Params pa = a.upload(im), pb = b.upload(im);
    const auto x = random_x<std::int16_t>(s.elements(), -30000, 30000, rng);
    std::vector<std::uint8_t> y1(x.size()), y2(x.size());
    std::vector<float> f1(x.size()), f2(x.size());
    RunOptions fo;
    fo.out_quant = Quant{0.5, 3};
    Run r1 = a.submit(pa, view(x), view(y1), s);
    Run r2 = a.submit(pa, view(x), view(f1), s, fo);
    Run q1 = b.submit(pb, view(x), view(y2), s);
    b.run(pb, view(x), view(f2), s, fo);
    r1.get();
    r2.get();
    q1.get();
    EXPECT_EQ(y1, y2) << "N=" << s.n << " C=" << c << " HW=" << s.hw;
    EXPECT_EQ(0, std::memcmp(f1.data(), f2.data(), f1.size() * sizeof(float)));
    EXPECT_EQ(r1.stats().tiles, q1.stats().tiles);
    tiles += r1.stats().tiles;
  }
  return tiles;
}

// The driver's fault scenario (`fault`: the fault options both devices were opened with): five
// 2x16x20 runs queued at once on `a` (a ring device) and on `b` (ref:, with or without a ring);
// each run ends alike on both, the completed ones with identical outputs, the failed one with an
// error naming the fault ("read", "write", or "timed out" for a hang), and the runs after it
// complete (the driver skips the failed descriptor; after the timeout it soft-resets the device).
inline void fault_runs_match(Accelerator& a, Accelerator& b, const std::string& fault,
                             std::mt19937_64& rng) {
  const ParamImage im = ring_image(a.manifest().config.arith(), 16, rng);
  const Params pa = a.upload(im), pb = b.upload(im);
  const JobShape s{.n = 2, .c = 16, .hw = 20};
  std::vector<std::vector<std::int8_t>> xs, ya, yb;
  std::vector<Run> ra, rb;
  for (int i = 0; i < 5; ++i) {
    xs.push_back(random_x<std::int8_t>(s.elements(), -128, 127, rng));
    ya.emplace_back(s.elements());
    yb.emplace_back(s.elements());
  }
  for (std::size_t i = 0; i < 5; ++i) {
    ra.push_back(a.submit(pa, view(xs[i]), view(ya[i]), s));
    rb.push_back(b.submit(pb, view(xs[i]), view(yb[i]), s));
  }
  int failed = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    (void)ra[i].wait(std::chrono::seconds(30));
    (void)rb[i].wait(std::chrono::seconds(30));
    EXPECT_EQ(ra[i].state(), rb[i].state()) << fault << " run " << i;
    if (ra[i].state() == RunState::completed) {
      EXPECT_EQ(ya[i], yb[i]) << fault << " run " << i;
      continue;
    }
    ++failed;
    const std::string want = fault.find("hang") != std::string::npos    ? "timed out"
                             : fault.find("write") != std::string::npos ? "write"
                                                                        : "read";
    EXPECT_NE(ra[i].error().find(want), std::string::npos) << ra[i].error();
    EXPECT_NE(rb[i].error().find(want), std::string::npos) << rb[i].error();
  }
  EXPECT_EQ(failed, 1) << fault;
  EXPECT_EQ(ra[4].state(), RunState::completed) << fault << ": the runs after the fault";
}

}  // namespace normcore::test
