// The ref device's compute kernel against the golden model, below the register interface:
// the NHWC arithmetic fast path (ref_affine.hpp) in every clone this CPU runs, every rounding
// mode, input signedness, shift, clamp, channel count (tiled too), start channel and output
// alignment, every input code; and the whole
// kernel (tables, fast path, thread split) byte-identical for every thread count.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "normcore/contract.hpp"
#include "ref_affine.hpp"
#include "ref_kernel.hpp"

namespace {

using normcore::JobSettings;
using normcore::Rounding;
using normcore::detail::ref::Affine8;
using normcore::detail::ref::Kernel;

std::int64_t pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

struct Case {
  std::vector<std::int64_t> s, b;
  JobSettings job;
  bool x_signed = true;
};

// Scales and biases up to the fast path's int32 limit (and some just past it).
Case random_case(std::mt19937_64& rng, std::uint64_t channels, int r, Rounding m, bool xs,
                 bool ys) {
  Case k;
  k.x_signed = xs;
  k.job.shift = r;
  k.job.rounding = m;
  const std::int64_t ylo = ys ? -128 : 0, yhi = ys ? 127 : 255;
  k.job.lo = pick(rng, ylo, ylo + 40);
  k.job.hi = pick(rng, yhi - 40, yhi);
  if (pick(rng, 0, 3) == 0) k.job.lo = k.job.hi = pick(rng, ylo, yhi);
  const int sbits = static_cast<int>(pick(rng, 1, 22));
  for (std::uint64_t c = 0; c < channels; ++c) {
    k.s.push_back(pick(rng, -(std::int64_t{1} << sbits), std::int64_t{1} << sbits));
    // The bias around the rounding point: ties at every scale.
    const std::int64_t span = (std::int64_t{1} << std::min(r + 8, 29));
    k.b.push_back(pick(rng, -span, span));
  }
  return k;
}

std::uint8_t golden(const Case& k, std::uint64_t c, std::uint8_t code) {
  const std::int64_t x =
      k.x_signed ? static_cast<std::int8_t>(code) : static_cast<std::int64_t>(code);
  return static_cast<std::uint8_t>(normcore::apply(x, k.s[c], k.b[c], k.job) & 0xFF);
}

// NHWC from channel `c0`, out of place (output at byte offset `off` of a 64-byte aligned
// buffer: streaming stores, their alignment head, or ordinary stores) and in place. Every code
// of every channel (n = 256 C + 37, not a multiple of any vector width) when `every_code`, else
// five pixels and a part of random codes (large C: the tiled runs).
void check_affine(const Affine8& a, const Case& k, std::uint64_t C, std::uint64_t c0,
                  std::uint64_t off, bool every_code, const std::string& what) {
  const std::uint64_t n = every_code ? 256 * C + 37 : 5 * C + 37 + 7 * (C % 9);
  std::mt19937_64 rng(C * 31 + c0);
  std::vector<std::uint8_t> x(n);
  for (std::uint64_t e = 0; e < n; ++e) {
    x[e] = every_code ? static_cast<std::uint8_t>((e / C + 7 * (e % C)) & 0xFF)
                      : static_cast<std::uint8_t>(rng());
  }
  std::vector<std::uint8_t> buf(n + 128, 0xA5);
  auto* base = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(buf.data()) + 63) &
                                               ~std::uintptr_t{63});
  std::uint8_t* y = base + off;
  a.run_nhwc(x.data(), y, n, c0);
  std::vector<std::uint8_t> z = x;
  a.run_nhwc(z.data(), z.data(), n, c0);
  for (std::uint64_t e = 0; e < n; ++e) {
    const std::uint64_t c = (c0 + e) % C;
    const std::uint8_t want = golden(k, c, x[e]);
    ASSERT_EQ(y[e], want) << what << " element " << e << " channel " << c << " x " << int(x[e]);
    ASSERT_EQ(z[e], want) << what << " (in place) element " << e;
  }
  ASSERT_EQ(y[n], 0xA5) << what << ": wrote past the end";
  if (off > 0) {
    ASSERT_EQ(y[-1], 0xA5) << what << ": wrote before the start";
  }
}

bool cpu_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

const char* const kIsas[] = {"baseline", "avx2", "avx512", "avx512-vnni"};

TEST(RefAffine8, EveryCodeEveryModeEveryCloneMatchesApply) {
  std::mt19937_64 rng(17);
  int made = 0;
  std::map<std::string, int> clones;
  for (const char* isa : kIsas) {
    for (const Rounding m :
         {Rounding::floor, Rounding::half_up, Rounding::half_even, Rounding::half_away}) {
      for (const bool xs : {true, false}) {
        for (const int r : {0, 1, 2, 3, 7, 8, 12, 16, 21, 26, 30}) {
          for (const std::uint64_t C : {1u, 2u, 3u, 6u, 16u, 64u, 1000u}) {
            const Case k = random_case(rng, C, r, m, xs, pick(rng, 0, 1) == 1);
            const auto a = Affine8::make(k.s.data(), k.b.data(), C, xs, k.job, isa);
            if (!a) continue;  // past the int32 limit: the tables serve it
            ++made;
            ++clones[a->isa()];
            const std::string what =
                std::string(a->isa()) + " " + std::string(normcore::to_string(m)) +
                " xs=" + std::to_string(xs) + " R=" + std::to_string(r) + " C=" + std::to_string(C);
            check_affine(*a, k, C, static_cast<std::uint64_t>(pick(rng, 0, int(C) - 1)),
                         static_cast<std::uint64_t>(pick(rng, 0, 63)), true, what);
          }
        }
      }
    }
  }
  EXPECT_GT(made, 500);  // most cases take the fast path (it must not decline everything)
  // On an AVX-512 machine both AVX-512 clones ran (int16 scales: VPMADDWD; wider: VPMULLD), and
  // the VNNI clone (int16 scales) where the CPU has it.
  if (clones.count("avx512") + clones.count("avx512-madd") > 0) {
    EXPECT_GT(clones["avx512"], 0);
    EXPECT_GT(clones["avx512-madd"], 0);
  }
  if (cpu_vnni()) {
    EXPECT_GT(clones["avx512-vnni"], 100);
  }
}

// Channel counts at and past the tile (4096: one tile; more: tiled runs inside each pixel),
// 4096 with every code, the rest random codes over five pixels; every mode and signedness.
TEST(RefAffine8, LargeAndTiledChannelCountsMatchApply) {
  std::mt19937_64 rng(29);
  std::map<std::string, int> clones;
  for (const char* isa : {"avx512", "avx512-vnni"}) {
    for (const Rounding m :
         {Rounding::floor, Rounding::half_up, Rounding::half_even, Rounding::half_away}) {
      for (const bool xs : {true, false}) {
        for (const std::uint64_t C : {4096u, 4097u, 8192u + 6u, 65536u}) {
          const int r = static_cast<int>(pick(rng, 1, 14));
          Case k = random_case(rng, C, r, m, xs, pick(rng, 0, 1) == 1);
          for (auto& s : k.s) s = pick(rng, -32768, 32767);  // int16: the VNNI clone
          const auto a = Affine8::make(k.s.data(), k.b.data(), C, xs, k.job, isa);
          ASSERT_TRUE(a);
          ++clones[a->isa()];
          const std::string what = std::string(a->isa()) + " " +
                                   std::string(normcore::to_string(m)) +
                                   " xs=" + std::to_string(xs) + " C=" + std::to_string(C);
          const auto c0 = static_cast<std::uint64_t>(pick(rng, 0, int(C) - 1));
          check_affine(*a, k, C, pick(rng, 0, 1) == 1 ? c0 : 0,
                       static_cast<std::uint64_t>(pick(rng, 0, 3)) * 16, C == 4096, what);
        }
      }
    }
  }
  EXPECT_EQ(clones.size(), cpu_vnni() ? 2U : 1U);
}

// The expanded table stays small: 6 (lcm(C, 4) + 64) bytes for the VNNI clone up to the tile.
TEST(RefAffine8, PeriodTableSize) {
  if (!cpu_vnni()) {
    GTEST_SKIP() << "no AVX-512 VNNI";
  }
  for (const auto& [C, bytes] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {3, 24 * (12 + 64) / 4 + 8 * 3},
           {64, 24 * (64 + 64) / 4 + 8 * 64},
           {1000, 24 * (1000 + 64) / 4 + 8 * 1000},
           {4096, 24 * (4096 + 64) / 4 + 8 * 4096},
           {65536, 24 * (65536 + 64) / 4 + 8 * 65536}}) {
    const std::vector<std::int64_t> s(C, 3), b(C, 1);
    const auto a = Affine8::make(s.data(), b.data(), C, true, JobSettings{4}, "avx512-vnni");
    ASSERT_TRUE(a);
    EXPECT_STREQ(a->isa(), "avx512-vnni");
    EXPECT_EQ(a->table_bytes(), bytes) << "C " << C;
  }
}

TEST(RefAffine8, DeclinesWhenInt32LanesCouldOverflow) {
  const JobSettings job{8, Rounding::half_even, -128, 127};
  const std::int64_t big = std::int64_t{1} << 24;  // 128 * 2^24 = 2^31
  std::vector<std::int64_t> s{1, big}, b{0, 0};
  EXPECT_FALSE(Affine8::make(s.data(), b.data(), 2, true, job));
  s[1] = big - 4;  // 128 * (2^24 - 4) + 2 * 2^7 < 2^31
  EXPECT_TRUE(Affine8::make(s.data(), b.data(), 2, true, job));
  EXPECT_FALSE(Affine8::make(s.data(), b.data(), 2, false, job));  // 255 * (2^24 - 4)
  b[0] = std::int64_t{1} << 40;
  EXPECT_FALSE(Affine8::make(s.data(), b.data(), 2, true, job));
  EXPECT_FALSE(Affine8::make(s.data(), b.data(), 2, true, JobSettings{31, Rounding::floor, 0, 0}));
}

// The whole kernel (lookup tables for NCHW, the fast path or tables for NHWC, any split)
// gives the same bytes for 1, 2, 3 and 8 threads, equal to apply.
TEST(RefCompute, ThreadCountsGiveIdenticalBytes) {
  std::mt19937_64 rng(5);
  for (const bool nhwc : {false, true}) {
    for (const std::int64_t sbits : {12, 26}) {  // fast path, and past its limit (tables)
      const std::uint64_t C = 7, HW = 50001, total = C * HW * 2;
      Case k = random_case(rng, C, 9, Rounding::half_even, true, true);
      for (auto& s : k.s) s = pick(rng, -(std::int64_t{1} << sbits), std::int64_t{1} << sbits);
      std::vector<std::uint8_t> x(total);
      for (auto& v : x) v = static_cast<std::uint8_t>(rng());
      Kernel base;
      base.in = x.data();
      base.channels = C;
      base.stride = nhwc ? 1 : HW;
      base.scale = k.s.data();
      base.shift = k.b.data();
      base.job = k.job;
      std::vector<std::uint8_t> first;
      for (const unsigned t : {1u, 2u, 3u, 8u}) {
        std::vector<std::uint8_t> y(total);
        Kernel kk = base;
        kk.out = y.data();
        normcore::detail::ref::compute(kk, total, false, t);
        if (first.empty()) {
          first = y;
          for (std::uint64_t e = 0; e < total; e += 997) {
            const std::uint64_t c = nhwc ? e % C : (e / HW) % C;
            ASSERT_EQ(y[e], golden(k, c, x[e])) << "element " << e;
          }
        }
        EXPECT_EQ(y, first) << "threads " << t << (nhwc ? " nhwc" : " nchw");
      }
    }
  }
}

}  // namespace
