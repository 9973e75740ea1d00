// The ref device's float kernel (runtime/src/ref_float.cpp): fast_fma equals the golden model
// (apply_float) for every fp16 and every bf16 input, for directed and random (s, b) pairs, every
// float output type, with and without the flush flag; compute_float over a tensor (NCHW, NHWC,
// integer in / out through apply_float) equals apply_float element by element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "normcore/float_contract.hpp"
#include "ref_float.hpp"

using normcore::apply_float;
using normcore::ArithSpec;
using normcore::NumType;
using normcore::detail::ref::compute_float;
using normcore::detail::ref::fast_fma;
using normcore::detail::ref::FloatKernel;

namespace {

std::uint32_t f32(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs() {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> p = {{f32(1.0f), 0},
                                                            {f32(1.0f), f32(0x1p-11f)},
                                                            {f32(-3.0f), f32(0x1p-8f)},
                                                            {f32(1.0f / 3), f32(-0.1f)},
                                                            {0x00000001u, 0x80000000u},
                                                            {f32(0x1p100f), f32(-1e30f)},
                                                            {f32(0x1p-20f), f32(0x1p-25f)},
                                                            {0x7F7FFFFFu, 0xFF7FFFFFu},
                                                            {0x7F800000u, f32(1.0f)},
                                                            {f32(2.0f), 0x7FC00000u},
                                                            {0x80000000u, 0x80000000u},
                                                            {f32(1.0f + 0x1p-23f), f32(65520.0f)},
                                                            {0x00400000u, 0x00000003u}};
  std::mt19937 rng(7);
  for (int i = 0; i < 24; ++i) {
    auto r = [&] {
      const auto e = static_cast<std::uint32_t>(117 + rng() % 21);
      return static_cast<std::uint32_t>((rng() & 0x80000000u) | (e << 23) | (rng() & 0x7FFFFF));
    };
    p.emplace_back(r(), r());
  }
  return p;
}

}  // namespace

TEST(RefFloat, FastPathEqualsTheGoldenModelForEveryInput) {
  long bad = 0;
  for (auto xt : {NumType::fp16, NumType::bf16}) {
    for (auto yt : {NumType::fp16, NumType::bf16, NumType::fp32}) {
      for (bool flush : {false, true}) {
        const ArithSpec a = normcore::float_spec(xt, yt, flush);
        normcore::JobSettings j = normcore::float_job(a);
        int k = 0;
        for (const auto& [s, b] : pairs()) {
          if (++k % 3 == 0) j.lo = 0;  // relu on a third of the pairs
          for (std::uint32_t x = 0; x < 0x10000; ++x) {
            const auto want = static_cast<std::uint32_t>(apply_float(x, s, b, a, j));
            const std::uint32_t got = fast_fma(x, s, b, a, j);
            if (got != want && ++bad <= 5) {
              ADD_FAILURE() << std::hex << "x " << x << " s " << s << " b " << b << " -> "
                            << normcore::to_string(yt) << " flush " << flush << ": got " << got
                            << " want " << want;
            }
          }
          j.lo = normcore::float_job(a).lo;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(RefFloat, KernelOverATensorEqualsApplyFloat) {
  std::mt19937 rng(3);
  struct Case {
    NumType x, y;
    std::uint64_t stride;
  };
  for (const Case& c :
       {Case{NumType::fp16, NumType::fp16, 7}, Case{NumType::bf16, NumType::fp32, 1},
        Case{NumType::fp16, NumType::integer, 5}, Case{NumType::integer, NumType::bf16, 3}}) {
    const ArithSpec a = normcore::float_spec(c.x, c.y, false);
    const std::uint64_t channels = 3, total = 3 * 7 * 40 + 5;
    std::vector<std::int64_t> s, b;
    for (std::uint64_t i = 0; i < channels; ++i) {
      s.push_back(f32(0.25f + static_cast<float>(i)));
      b.push_back(f32(-1.5f * static_cast<float>(i)));
    }
    const int xb = a.xw / 8, yb = a.yw / 8;
    std::vector<std::uint8_t> in(total * static_cast<std::uint64_t>(xb));
    for (auto& v : in) v = static_cast<std::uint8_t>(rng());
    std::vector<std::uint8_t> out(total * static_cast<std::uint64_t>(yb));
    FloatKernel k{in.data(), out.data(), a,        channels,
                  c.stride,  s.data(),   b.data(), normcore::float_job(a)};
    compute_float(k, total, false, 2);
    for (std::uint64_t e = 0; e < total; ++e) {
      std::uint64_t raw = 0, got = 0;
      std::memcpy(&raw, &in[e * static_cast<std::uint64_t>(xb)], static_cast<std::size_t>(xb));
      std::memcpy(&got, &out[e * static_cast<std::uint64_t>(yb)], static_cast<std::size_t>(yb));
      const std::uint64_t ch = (e / c.stride) % channels;
      std::int64_t x = static_cast<std::int64_t>(raw);
      if (c.x == NumType::integer) x = static_cast<std::int8_t>(raw);
      const auto want = static_cast<std::uint64_t>(apply_float(
          x, static_cast<std::uint32_t>(s[ch]), static_cast<std::uint32_t>(b[ch]), a, k.job));
      const std::uint64_t mask = a.yw == 64 ? ~0ull : (1ull << a.yw) - 1;
      ASSERT_EQ(got, want & mask) << "element " << e;
    }
  }
}
