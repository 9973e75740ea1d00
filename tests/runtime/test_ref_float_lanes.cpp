// The ref device's float vector kernel (runtime/src/ref_float_lanes.{hpp,inc,cpp}) against the
// golden model: every fp16 and every bf16 input x 48 (s, b) pairs (directed: ties, subnormal
// results, overflow, signed zeros, cancellation, NaN / Inf; random over wide exponent ranges) x
// every float output type x flush on / off x three clamps (ReLU and [-2, 6] on every third
// pair), in every clone this CPU runs, through
// compute_float in both coefficient forms (channel runs: NCHW; per-position tables: NHWC and
// short runs), out of place (with misaligned outputs: streaming stores' heads), in place and
// on two threads, and under a host MXCSR with FTZ / DAZ set. NaN / Inf x and NaN / Inf s or b
// take the scalar path: covered by the same tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "normcore/float_contract.hpp"
#include "ref_float.hpp"
#include "ref_float_lanes.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using normcore::apply_float;
using normcore::ArithSpec;
using normcore::JobSettings;
using normcore::NumType;
using normcore::detail::ref::compute_float;
using normcore::detail::ref::FloatKernel;
using normcore::detail::ref::lane_int_kernel;
using normcore::detail::ref::lane_kernel;

namespace {

std::uint32_t f32(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

using Pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// A quick subset (every k-th pair) when asked, as model.float_oracle does: scripts/test.sh's
// sanitizer stage sets NORMCORE_ORACLE_PAIRS (12); all pairs otherwise.
Pairs some_of(const Pairs& p) {
  const char* n = std::getenv("NORMCORE_ORACLE_PAIRS");
  if (n == nullptr) return p;
  const std::size_t step = std::max<std::size_t>(1, p.size() / std::max(1, std::atoi(n)));
  Pairs some;
  for (std::size_t i = 0; i < p.size(); i += step) some.push_back(p[i]);
  return some;
}

// (s, b) pairs: directed cases, then random ones over wide exponent ranges.
Pairs pairs() {
  Pairs p = {
      {f32(1.0f), 0},
      {f32(1.0f), 0x80000000u},               // x + (-0): signed zeros
      {f32(-1.0f), 0},                        // -x + 0
      {f32(1.0f), f32(0x1p-11f)},             // ties in fp16
      {f32(1.0f), f32(0x1p-8f)},              // ties in bf16
      {f32(-3.0f), f32(0x1p-8f)},             //
      {f32(1.0f / 3), f32(-0.1f)},            //
      {f32(1.0f + 0x1p-23f), f32(65520.0f)},  // fp16 overflow edge
      {f32(1.0f), f32(-65504.0f)},            // cancellation to exact zeros
      {f32(0x1p100f), f32(-1e30f)},           // fp16 overflow, bf16 in range
      {0x7F7FFFFFu, 0xFF7FFFFFu},             // fp32 max: overflow everywhere
      {f32(0x1p-20f), f32(0x1p-25f)},         // fp16 subnormal results
      {f32(0x1p-24f), 0},                     // fp16 results down to 2^-48
      {f32(0x1p-120f), f32(0x1p-133f)},       // bf16 / fp32 subnormal results
      {f32(0x1p-126f), 0x80000001u},          // fp32 min subnormal b
      {0x00000001u, 0x80000000u},             // s subnormal (flush: zero)
      {0x00400000u, 0x00000003u},             //
      {0x80000000u, f32(1.0f)},               // s = -0
      {0, f32(-0.0f)},                        // s = +0, b = -0
      {f32(1.0f + 0x1p-12f), f32(-1.0f)},     // sticky bits far below
      {f32(0.999999940f), f32(0x1p-40f)},     //
      {f32(7.5f), f32(-3.0e-5f)},             //
      {f32(-0x1p-14f), f32(0x1p-24f)},        // results around fp16's smallest normal
      {f32(0x1p-126f), f32(-0x1p-126f)},      // bf16 around its smallest normal
      {0x7F800000u, f32(1.0f)},               // s = Inf (scalar path)
      {f32(2.0f), 0x7FC00000u},               // b = NaN (scalar path)
      {f32(1.0f), 0xFF800000u},               // b = -Inf (scalar path)
  };
  std::mt19937 rng(11);
  auto r = [&](std::uint32_t lo_exp, std::uint32_t span) {
    const auto e = static_cast<std::uint32_t>(lo_exp + rng() % span);
    return static_cast<std::uint32_t>((rng() & 0x80000000u) | (e << 23) | (rng() & 0x7FFFFF));
  };
  while (p.size() < 48) {
    const std::size_t k = p.size() % 3;
    if (k == 0) p.emplace_back(r(117, 21), r(117, 21));  // 2^-10 .. 2^10
    if (k == 1) p.emplace_back(r(60, 140), r(1, 253));   // wide: overflow, underflow
    if (k == 2) p.emplace_back(r(100, 30), r(90, 40));   // small results
  }
  return some_of(p);
}

// The clones this CPU and compiler run.
std::vector<std::string> clones() {
  std::vector<std::string> v;
  for (const char* isa : {"baseline", "avx2", "avx512"}) {
    if (lane_kernel(NumType::fp16, NumType::fp16, false, isa) != nullptr) v.emplace_back(isa);
  }
  return v;
}

// Clamp settings: none, ReLU (lo = +0), [-2, 6] in the output type.
std::vector<JobSettings> clamps(const ArithSpec& a) {
  JobSettings none = normcore::float_job(a), relu = none, band = none;
  relu.lo = 0;
  band.lo = normcore::double_to_float(-2.0, a.y_type);
  band.hi = normcore::double_to_float(6.0, a.y_type);
  return {none, relu, band};
}

struct Tensor {
  std::vector<std::uint8_t> in;  // every 16-bit pattern once per channel
  std::vector<std::int64_t> s, b;
  std::uint64_t channels = 0, stride = 0, total = 0;
};

bool finite32(std::uint32_t v) {
  return (v & 0x7F800000u) != 0x7F800000u;
}

// Every pattern in every channel (pair number k, k + step, ...; `finite`: only pairs of finite s
// and b): NCHW (stride 65536) or NHWC (stride 1).
Tensor every_input(bool nhwc, std::size_t step, bool finite = false) {
  Tensor t;
  auto all = pairs();
  if (finite) {
    std::erase_if(all, [](const auto& p) { return !finite32(p.first) || !finite32(p.second); });
  }
  for (std::size_t k = 0; k < all.size(); k += step) {
    t.s.push_back(all[k].first);
    t.b.push_back(all[k].second);
  }
  t.channels = t.s.size();
  t.total = t.channels << 16;
  t.stride = nhwc ? 1 : 0x10000;
  t.in.resize(2 * t.total);
  for (std::uint64_t e = 0; e < t.total; ++e) {
    const auto x = static_cast<std::uint16_t>(nhwc ? e / t.channels : e & 0xFFFF);
    std::memcpy(&t.in[2 * e], &x, 2);
  }
  return t;
}

// apply_float of every element (on two threads).
std::vector<std::uint32_t> golden(const Tensor& t, const ArithSpec& a, const JobSettings& j) {
  std::vector<std::uint32_t> y(t.total);
  const auto part = [&](std::uint64_t e0, std::uint64_t e1) {
    for (std::uint64_t e = e0; e < e1; ++e) {
      std::uint16_t x;
      std::memcpy(&x, &t.in[2 * e], 2);
      const std::uint64_t c = (e / t.stride) % t.channels;
      y[e] = static_cast<std::uint32_t>(apply_float(x, static_cast<std::uint32_t>(t.s[c]),
                                                    static_cast<std::uint32_t>(t.b[c]), a, j));
    }
  };
  std::thread other(part, t.total / 2, t.total);
  part(0, t.total / 2);
  other.join();
  return y;
}

// Mismatches of compute_float (clone isa) against want; `offset` shifts the output buffer.
long mismatches(const Tensor& t, const ArithSpec& a, const JobSettings& j, const char* isa,
                const std::vector<std::uint32_t>& want, std::size_t offset, unsigned threads,
                bool in_place, const std::string& what) {
  const std::size_t yb = static_cast<std::size_t>(a.yw / 8);
  std::vector<std::uint8_t> buf(t.total * yb + offset);
  std::uint8_t* out = buf.data() + offset;
  const std::uint8_t* in = t.in.data();
  if (in_place) {
    std::memcpy(out, t.in.data(), t.in.size());
    in = out;
  }
  FloatKernel k{in, out, a, t.channels, t.stride, t.s.data(), t.b.data(), j, isa};
  compute_float(k, t.total, in_place, threads);
  long bad = 0;
  for (std::uint64_t e = 0; e < t.total; ++e) {
    std::uint32_t got = 0;
    std::memcpy(&got, out + e * yb, yb);
    if (got != want[e] && ++bad <= 3) {
      std::uint16_t x;
      std::memcpy(&x, &t.in[2 * e], 2);
      const std::uint64_t c = (e / t.stride) % t.channels;
      ADD_FAILURE() << what << std::hex << ": x " << x << " s " << t.s[c] << " b " << t.b[c]
                    << " got " << got << " want " << want[e];
    }
  }
  return bad;
}

}  // namespace

TEST(RefFloatLanes, EveryInputEveryPairEveryCloneEqualsApplyFloat) {
  const auto isas = clones();
  ASSERT_FALSE(isas.empty());
  std::printf("clones run: %zu (", isas.size());
  for (const auto& s : isas) std::printf(" %s", s.c_str());
  std::printf(" )\n");
  const Tensor all = every_input(false, 1), third = every_input(false, 3);
  long bad = 0, checked = 0;
  for (auto xt : {NumType::fp16, NumType::bf16}) {
    for (auto yt : {NumType::fp16, NumType::bf16, NumType::fp32}) {
      for (bool flush : {false, true}) {
        const ArithSpec a = normcore::float_spec(xt, yt, flush);
        int clamp = 0;
        for (const JobSettings& j : clamps(a)) {
          const Tensor& nchw = clamp++ == 0 ? all : third;
          const auto want = golden(nchw, a, j);
          for (const auto& isa : isas) {
            const std::string what = isa + " " + std::string(normcore::to_string(xt)) + "->" +
                                     std::string(normcore::to_string(yt)) + (flush ? " flush" : "");
            bad += mismatches(nchw, a, j, isa.c_str(), want, 0, 1, false, what);
            checked += static_cast<long>(nchw.total);
          }
        }
      }
    }
  }
  std::printf("elements compared: %ld\n", checked);
  EXPECT_EQ(bad, 0);
}

TEST(RefFloatLanes, PerPositionTablesInPlaceThreadsAndMisalignedOutputs) {
  const auto isas = clones();
  // 24 channels, s = Inf and b = -Inf among them (the kernels test s, b); 23 finite ones (the
  // kernels skip that test)
  const Tensor with_inf = every_input(true, 2), finite = every_input(true, 2, true);
  long bad = 0;
  for (auto xt : {NumType::fp16, NumType::bf16}) {
    for (auto yt : {NumType::fp16, NumType::bf16, NumType::fp32}) {
      for (bool flush : {false, true}) {
        const Tensor& nhwc = flush ? with_inf : finite;
        const ArithSpec a = normcore::float_spec(xt, yt, flush);
        const JobSettings j = clamps(a)[flush ? 1 : 2];
        const auto want = golden(nhwc, a, j);
        for (const auto& isa : isas) {
          const std::string what = "nhwc " + isa + " " + std::string(normcore::to_string(xt)) +
                                   "->" + std::string(normcore::to_string(yt));
          bad += mismatches(nhwc, a, j, isa.c_str(), want, 0, 1, false, what);
          bad += mismatches(nhwc, a, j, isa.c_str(), want, 2, 2, false, what + " +2 bytes");
          if (yt != NumType::fp32) {
            bad += mismatches(nhwc, a, j, isa.c_str(), want, 0, 2, true, what + " in place");
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(RefFloatLanes, ShortChannelRunsAndRangesThatSplitVectors) {
  // NCHW with 7-element runs (per-position tables over C * 7 positions) and with 100-element
  // runs (channel by channel, every run with a partial vector), random inputs incl. NaN / Inf.
  std::mt19937 rng(5);
  long bad = 0;
  for (std::uint64_t stride : {7u, 100u}) {
    Tensor t;
    for (const auto& [s, b] : pairs()) {
      t.s.push_back(s);
      t.b.push_back(b);
    }
    t.channels = t.s.size();
    t.stride = stride;
    t.total = t.channels * stride * 53 + 9;  // a partial last image
    t.in.resize(2 * t.total);
    for (auto& v : t.in) v = static_cast<std::uint8_t>(rng());
    for (auto xt : {NumType::fp16, NumType::bf16}) {
      for (auto yt : {NumType::fp16, NumType::fp32}) {
        const ArithSpec a = normcore::float_spec(xt, yt, stride == 7);
        const JobSettings j = clamps(a)[0];
        const auto want = golden(t, a, j);
        for (const auto& isa : clones()) {
          bad += mismatches(t, a, j, isa.c_str(), want, 6, 2, false,
                            "stride " + std::to_string(stride) + " " + isa);
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(RefFloatLanes, KernelStopsAtTheFirstVectorWithANanOrInf) {
  for (const auto& isa : clones()) {
    const auto fn = lane_kernel(NumType::fp16, NumType::fp16, false, isa.c_str());
    std::vector<std::uint16_t> x(5000, 0x3C00), y(5000, 0xAAAA);
    x[4000] = 0x7E00;  // a NaN: the kernel stops at the vector holding element 4000
    const float s = 2.0f, b = 0.0f;
    const normcore::detail::ref::LaneArgs args{&s, &b, 0xFC00, 0x7C00, false};
    const std::uint64_t r = fn(x.data(), y.data(), x.size(), args);
    EXPECT_LE(r, 4000u) << isa;
    EXPECT_GT(r + normcore::detail::ref::kLaneWidth, 4000u) << isa;
    for (std::uint64_t i = 0; i < r; ++i) ASSERT_EQ(y[i], 0x4000) << isa << " " << i;
    for (std::uint64_t i = r; i < y.size(); ++i) ASSERT_EQ(y[i], 0xAAAA) << isa << " " << i;
  }
}

#if defined(__x86_64__)
TEST(RefFloatLanes, HostFlushToZeroModesDoNotChangeResults) {
  // An application running with MXCSR FTZ and DAZ set (fast-math): compute_float and every
  // clone still give the golden model's subnormal results; the caller's MXCSR is kept.
  const Tensor t = every_input(false, 4);  // the directed pairs 0, 4, ..., 24 and random ones
  const unsigned saved = _mm_getcsr();
  long bad = 0;
  for (auto yt : {NumType::fp16, NumType::bf16, NumType::fp32}) {
    const ArithSpec a = normcore::float_spec(NumType::bf16, yt, false);
    const JobSettings j = clamps(a)[0];
    const auto want = golden(t, a, j);
    for (const auto& isa : clones()) {
      _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
      bad += mismatches(t, a, j, isa.c_str(), want, 0, 1, false, "ftz/daz " + isa);
      EXPECT_EQ(_mm_getcsr(), saved | 0x8040u) << isa;
      _mm_setcsr(saved);
    }
  }
  EXPECT_EQ(bad, 0);
}
#endif

TEST(RefFloatLanes, IntegerOutputsEveryInputEveryModeEqualApplyFloat) {
  // fp16 / bf16 in, 8- and 16-bit integers out (the AVX-512 and AVX2 clones this CPU runs; the
  // portable one runs apply_float per element): every input pattern x 12 (s, b) pairs (ties at .5
  // included) x every rounding mode x signedness x width, NCHW and NHWC tables, flush on one
  // width, a ReLU clamp on one mode.
  Pairs ps = {{f32(1.0f), 0},          {f32(0.5f), 0},           {f32(-1.0f), f32(0.5f)},
              {f32(2.0f), f32(-0.5f)}, {f32(3.0f), f32(1.0f)},   {f32(0.1f), f32(-3.7f)},
              {f32(1e-3f), f32(0.5f)}, {f32(100.0f), 0},         {f32(-0.75f), f32(2.25f)},
              {f32(1.0f / 3), f32(0)}, {0x00000001u, f32(0.5f)}, {f32(1e6f), f32(-1e6f)}};
  if (std::getenv("NORMCORE_ORACLE_PAIRS") != nullptr) ps.resize(4);  // the quick subset
  long bad = 0;
  for (bool nhwc : {false, true}) {
    Tensor t;
    for (const auto& [s, b] : ps) {
      t.s.push_back(s);
      t.b.push_back(b);
    }
    t.channels = t.s.size();
    t.total = t.channels << 16;
    t.stride = nhwc ? 1 : 0x10000;
    t.in.resize(2 * t.total);
    for (std::uint64_t e = 0; e < t.total; ++e) {
      const auto x = static_cast<std::uint16_t>(nhwc ? e / t.channels : e & 0xFFFF);
      std::memcpy(&t.in[2 * e], &x, 2);
    }
    for (auto xt : {NumType::fp16, NumType::bf16}) {
      for (int yw : {8, 16}) {
        for (bool sg : {true, false}) {
          for (auto m : {normcore::Rounding::floor, normcore::Rounding::half_up,
                         normcore::Rounding::half_even, normcore::Rounding::half_away}) {
            ArithSpec a = normcore::float_spec(xt, NumType::integer, yw == 16 && !sg);
            a.yw = yw;
            a.y_signed = sg;
            JobSettings j = normcore::float_job(a);
            j.rounding = m;
            if (m == normcore::Rounding::half_even && sg) j.lo = 0;  // ReLU
            const auto want = golden(t, a, j);
            const std::string what = std::string(nhwc ? "nhwc " : "nchw ") +
                                     std::string(normcore::to_string(xt)) + " -> int" +
                                     std::to_string(yw) + (sg ? "" : "u") + " " +
                                     std::string(normcore::to_string(m));
            // golden() returns the integer as uint32: compare the low yw bits
            std::vector<std::uint32_t> w(want.size());
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = want[i] & ((1u << yw) - 1);
            for (const char* isa : {"avx2", "avx512"}) {
              if (lane_int_kernel(xt, yw, false, m, isa) == nullptr) continue;
              bad += mismatches(t, a, j, isa, w, nhwc ? 1 : 0, 2, false, what + " " + isa);
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}
