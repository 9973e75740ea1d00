// The driver's host-tensor path (driver_tiling.cpp) on the ref backend: tiles run in place on
// the host tensors (import_host) or staged give the same bytes, equal to the golden model; the
// staging threads (DriverOptions::threads) never change a result or an error message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace {

using namespace normcore;

std::string ref(const std::string& name, const std::string& opts = "") {
  return "ref:" + normcore::test::devices_dir() + "/" + name + "/rtl/manifest.json" + opts;
}

ParamImage image(const ArithSpec& a, std::uint64_t channels, std::mt19937_64& rng) {
  ParamImage im;
  im.spec = a;
  im.job = JobSettings{7, Rounding::half_even, a.y_min() + 3, a.y_max() - 2};
  for (std::uint64_t c = 0; c < channels; ++c) {
    im.scale.push_back(static_cast<std::int64_t>(rng() % 401) - 200);
    im.shift.push_back(static_cast<std::int64_t>(rng() % 20001) - 10000);
  }
  return im;
}

std::vector<std::int8_t> golden(const ParamImage& im, const std::vector<std::int8_t>& x,
                                const JobShape& s) {
  const std::vector<std::int64_t> xi(x.begin(), x.end());
  std::vector<std::int64_t> y(x.size());
  apply_tensor(xi, y, im.scale, im.shift, static_cast<std::int64_t>(s.hw), s.layout, im.job);
  return {y.begin(), y.end()};
}

// int8 host tensors of many shapes, with a small staging budget: in place (direct, fewer device
// jobs: the budget does not apply) and staged (direct=0) agree with the golden model.
TEST(DriverHost, InPlaceAndStagedTilesAgree) {
  DriverOptions o;
  o.max_tile_elements = 4096;
  auto direct = Accelerator::open(ref("normcore"), o);
  auto staged = Accelerator::open(ref("normcore", ",direct=0"), o);
  std::mt19937_64 rng(21);
  const ArithSpec a = direct.manifest().config.arith();
  std::uint64_t tiles_direct = 0, tiles_staged = 0;
  for (int i = 0; i < 30; ++i) {
    const JobShape s{rng() % 3 + 1, rng() % 40 + 1, rng() % 700 + 1,
                     rng() % 2 ? Layout::nhwc : Layout::nchw};
    const ParamImage im = image(a, s.c, rng);
    std::vector<std::int8_t> x(s.elements()), y1(x.size()), y2(x.size());
    for (auto& v : x) v = static_cast<std::int8_t>(rng());
    normcore::Run r1 = direct.submit(direct.upload(im), view(x), view(y1), s);
    normcore::Run r2 = staged.submit(staged.upload(im), view(x), view(y2), s);
    r1.get();
    r2.get();
    tiles_direct += r1.stats().tiles;
    tiles_staged += r2.stats().tiles;
    const auto want = golden(im, x, s);
    ASSERT_EQ(y1, want) << "direct, job " << i;
    ASSERT_EQ(y2, want) << "staged, job " << i;
  }
  EXPECT_LT(tiles_direct, tiles_staged);  // the in-place path was taken
}

// A large float32 run (quantise, run, dequantise in the staging pass) is byte-identical for 1, 2
// and 3 staging threads; a NaN is reported at the first bad element whatever the thread count.
TEST(DriverHost, StagingThreadCountsGiveIdenticalResults) {
  std::mt19937_64 rng(22);
  const JobShape s{2, 16, 40000, Layout::nhwc};
  std::vector<float> x(s.elements());
  std::normal_distribution<float> nd(0.f, 2.f);
  for (auto& v : x) v = nd(rng);
  RunOptions ro;
  ro.in_quant = Quant{0.05, 1};
  ro.out_quant = Quant{0.1, -2};
  ParamImage im;
  std::vector<float> first;
  std::string first_error;
  for (const unsigned t : {1u, 2u, 3u}) {
    DriverOptions o;
    o.threads = t;
    auto acc = Accelerator::open(ref("normcore"), o);
    if (im.scale.empty()) im = image(acc.manifest().config.arith(), s.c, rng);
    const auto p = acc.upload(im);
    std::vector<float> y(x.size());
    acc.run(p, view(x), view(y), s, ro);
    if (first.empty()) first = y;
    EXPECT_EQ(0, std::memcmp(y.data(), first.data(), y.size() * sizeof(float))) << t;
    std::vector<float> bad = x;
    bad[x.size() - 5] = std::nanf("");
    bad[x.size() / 2 + 3] = std::nanf("");
    const std::string e = normcore::test::error_of([&] { acc.run(p, view(bad), view(y), s, ro); });
    if (first_error.empty()) first_error = e;
    EXPECT_EQ(e, first_error) << t;
    EXPECT_NE(e.find("input element " + std::to_string(x.size() / 2 + 3) + " is NaN"),
              std::string::npos)
        << e;
  }
}

}  // namespace
