// Verilator test of the float lane (gen/src/core_flane.cpp), all 24 variants at once (flane_all:
// x fp16 / bf16, y fp16 / bf16 / fp32 / int8 / uint8 / int16, flush off / on): every 16-bit x
// pattern x a set of (s, b) pairs (directed: ties, subnormals, overflow, signed zeros, NaN / Inf;
// and random), a clamp rotating with the pair (float: none, ReLU, [-0, 6], [-max, max]; integer:
// iclamp), the rounding mode (integer y) with every 4th pair, one element per cycle (II = 1),
// each output NC_FLANE_LATENCY cycles later compared with apply_float bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "Vcore.h"
#include "flane_shape.h"
#include "normcore/float_contract.hpp"
#include "verilated.h"

namespace normcore::sim {
namespace {

std::uint32_t f32(float v) {
  return std::bit_cast<std::uint32_t>(v);
}

// The (s, b) pairs: a cross product of directed values, then random ones.
std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs() {
  const std::vector<std::uint32_t> ss = {
      f32(1.0F),  f32(-1.0F),    0x3F800001, f32(0x1p-10F), f32(0x1p-11F), f32(0.1F),  f32(-3.7F),
      f32(1e5F),  f32(0x1p100F), 0x00800000, 0x00000001,    0x007FFFFF,    0x00000000, 0x80000000,
      0x7F800000, 0xFF800000,    0x7FC00000, 0x7F800001,    f32(3.0F),     0x7F7FFFFF};
  const std::vector<std::uint32_t> bs = {
      0x00000000,    0x80000000,     f32(0x1p-11F),  f32(-0x1p-11F),  f32(0.25F),    f32(16.0F),
      f32(15.0F),    f32(-1.0F),     f32(1.0F),      f32(1e30F),      f32(-1e30F),   0x7F800000,
      0xFF800000,    0xFFC00001,     0x00000001,     f32(0x1p-24F),   f32(0x1p-25F), f32(0x3p-25F),
      f32(65520.0F), f32(-65504.0F), f32(0x1p-133F), f32(-0x1.8p-14F)};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (auto s : ss) {
    for (auto b : bs) out.emplace_back(s, b);
  }
  std::mt19937 rng(18);
  std::uniform_int_distribution<std::uint32_t> man(0, (1U << 23) - 1), sgn(0, 1);
  std::uniform_int_distribution<std::uint32_t> near(100, 160), any(0, 255);
  const int n =
      std::getenv("NC_FLANE_RANDOM") != nullptr ? std::atoi(std::getenv("NC_FLANE_RANDOM")) : 40;
  for (int i = 0; i < n; ++i) {
    auto r = [&](bool wide) {
      return sgn(rng) << 31 | (wide ? any(rng) : near(rng)) << 23 | man(rng);
    };
    out.emplace_back(r(i % 4 == 3), r(i % 4 == 2));
  }
  return out;
}

struct Lane {
  const char* name;
  NumType x, y;
  bool flush;
  int yw = 0;  // integer y: 8 / 16 bits
  bool y_signed = true;
};
// clang-format off
#define NC_LANES(X) \
  X(h_h_0, fp16, fp16, false, 0, true) \
  X(h_b_0, fp16, bf16, false, 0, true) \
  X(h_f_0, fp16, fp32, false, 0, true) \
  X(h_i_0, fp16, integer, false, 8, true) \
  X(h_u_0, fp16, integer, false, 8, false) \
  X(h_w_0, fp16, integer, false, 16, true) \
  X(h_h_1, fp16, fp16, true, 0, true) \
  X(h_b_1, fp16, bf16, true, 0, true) \
  X(h_f_1, fp16, fp32, true, 0, true) \
  X(h_i_1, fp16, integer, true, 8, true) \
  X(h_u_1, fp16, integer, true, 8, false) \
  X(h_w_1, fp16, integer, true, 16, true) \
  X(b_h_0, bf16, fp16, false, 0, true) \
  X(b_b_0, bf16, bf16, false, 0, true) \
  X(b_f_0, bf16, fp32, false, 0, true) \
  X(b_i_0, bf16, integer, false, 8, true) \
  X(b_u_0, bf16, integer, false, 8, false) \
  X(b_w_0, bf16, integer, false, 16, true) \
  X(b_h_1, bf16, fp16, true, 0, true) \
  X(b_b_1, bf16, bf16, true, 0, true) \
  X(b_f_1, bf16, fp32, true, 0, true) \
  X(b_i_1, bf16, integer, true, 8, true) \
  X(b_u_1, bf16, integer, true, 8, false) \
  X(b_w_1, bf16, integer, true, 16, true)
// clang-format on
#define NC_LANE(n, x, y, f, w, sg) Lane{#n, NumType::x, NumType::y, f, w, sg},
constexpr Lane kLanes[] = {NC_LANES(NC_LANE)};
#undef NC_LANE
constexpr int kN = static_cast<int>(std::size(kLanes));
// drive_consts takes the integer clamps of lanes 3, 4, 5 (int8, uint8, int16).
static_assert(kLanes[3].yw == 8 && kLanes[3].y_signed && kLanes[4].yw == 8 && !kLanes[4].y_signed &&
              kLanes[5].yw == 16 && kLanes[5].y_signed);

// The clamp k of a float output type: none, ReLU (+0..Inf), [-0, 6], [-max, max].
std::pair<std::uint32_t, std::uint32_t> clamp(int k, NumType t) {
  switch (k) {
    case 1:
      return {0, float_inf(t)};
    case 2:
      return {double_to_float(-0.0, t), double_to_float(6.0, t)};
    case 3:
      return {float_max(t, true), float_max(t)};
    default:
      return {float_inf(t, true), float_inf(t)};
  }
}

// The clamp k of an integer output: full range, ReLU, [-3, 6] ([2, 6] unsigned), [min + 1,
// max - 1] ([7, 3] unsigned: lo > hi gives hi).
std::pair<std::int64_t, std::int64_t> iclamp(int k, const Lane& l) {
  const std::int64_t mx = l.y_signed ? (std::int64_t{1} << (l.yw - 1)) - 1 : (1 << l.yw) - 1;
  const std::int64_t mn = l.y_signed ? -mx - 1 : 0;
  switch (k) {
    case 1:
      return {0, mx};
    case 2:
      return {l.y_signed ? -3 : 2, 6};
    case 3:
      return l.y_signed ? std::pair{mn + 1, mx - 1} : std::pair<std::int64_t, std::int64_t>{7, 3};
    default:
      return {mn, mx};
  }
}

std::uint32_t output(const Vcore& t, int lane) {
  int i = 0;
#define NC_OUT(n, x, y, f, w, sg) \
  if (lane == i++) return t.y_##n##_o;
  NC_LANES(NC_OUT)
#undef NC_OUT
  return 0;
}

struct In {
  std::uint32_t x = 0, s = 0, b = 0;
  int clamp = 0, round = 0;
};

// The clamps of the element in stage 8 (c), the rounding mode of the one in stage 7 (r).
void drive_consts(Vcore& t, const In& c, const In& r) {
  const auto ch = clamp(c.clamp, NumType::fp16), cb = clamp(c.clamp, NumType::bf16);
  const auto cf = clamp(c.clamp, NumType::fp32);
  t.lo_h_i = ch.first, t.hi_h_i = ch.second;
  t.lo_b_i = cb.first, t.hi_b_i = cb.second;
  t.lo_f_i = cf.first, t.hi_f_i = cf.second;
  t.round_i = r.round;
  const auto ci = iclamp(c.clamp, kLanes[3]), cu = iclamp(c.clamp, kLanes[4]);
  const auto cw = iclamp(c.clamp, kLanes[5]);
  t.lo_i_i = static_cast<std::uint8_t>(ci.first), t.hi_i_i = static_cast<std::uint8_t>(ci.second);
  t.lo_u_i = static_cast<std::uint8_t>(cu.first), t.hi_u_i = static_cast<std::uint8_t>(cu.second);
  t.lo_w_i = static_cast<std::uint16_t>(cw.first);
  t.hi_w_i = static_cast<std::uint16_t>(cw.second);
}

TEST(Flane, EveryInputAgainstApplyFloat) {
  auto ctx = std::make_unique<VerilatedContext>();
  auto top = std::make_unique<Vcore>(ctx.get(), "TOP");
  const auto ps = pairs();
  std::array<ArithSpec, kN> specs;
  for (int l = 0; l < kN; ++l) {
    specs[l] = float_spec(kLanes[l].x, kLanes[l].y, kLanes[l].flush);
    if (kLanes[l].y == NumType::integer) specs[l].yw = kLanes[l].yw;
    specs[l].y_signed = kLanes[l].y_signed;
  }
  constexpr int kLat = NC_FLANE_LATENCY;
  std::array<In, kLat + 1> ring{};
  std::array<std::uint64_t, kN> bad{};
  std::uint64_t cycles = 0, checked = 0;
  int printed = 0;
  const std::uint64_t total = ps.size() * 65536ULL;
  for (std::uint64_t i = 0; i < total + kLat; ++i) {
    In in;
    if (i < total) {
      const auto& [s, b] = ps[i >> 16];
      in = {static_cast<std::uint32_t>(i & 0xFFFF), s, b, static_cast<int>((i >> 16) % 4),
            static_cast<int>((i >> 18) % 4)};
    }
    ring[i % ring.size()] = in;
    top->clk_i = 0;
    top->x_i = in.x;
    top->s_i = in.s;
    top->b_i = in.b;
    // Job constants as the lanes use them: round_i in stage 7, lo / hi in stage 8 (the element
    // driven latency - 2 and latency - 1 cycles ago).
    const In none{};
    drive_consts(*top, i + 1 >= kLat ? ring[(i + 1 - kLat) % ring.size()] : none,
                 i + 2 >= kLat ? ring[(i + 2 - kLat) % ring.size()] : none);
    top->eval();
    top->clk_i = 1;
    top->eval();
    ++cycles;
    // After edge i, y_o holds the element driven before edge i - (latency - 1).
    if (i + 1 < kLat) continue;
    const std::uint64_t j = i + 1 - kLat;
    if (j >= total) continue;
    const In& e = ring[j % ring.size()];
    for (int l = 0; l < kN; ++l) {
      const bool iy = kLanes[l].y == NumType::integer;
      JobSettings job;
      job.shift = 0;
      if (iy) {
        std::tie(job.lo, job.hi) = iclamp(e.clamp, kLanes[l]);
      } else {
        std::tie(job.lo, job.hi) = clamp(e.clamp, kLanes[l].y);
      }
      job.rounding = static_cast<Rounding>(e.round);
      const std::int64_t y = apply_float(e.x, e.s, e.b, specs[l], job);
      const auto want = static_cast<std::uint32_t>(iy ? y & ((1 << kLanes[l].yw) - 1) : y);
      const std::uint32_t got = output(*top, l);
      ++checked;
      if (got != want) {
        ++bad[l];
        if (printed++ < 20) {
          std::printf("lane %s x %04X s %08X b %08X clamp %d round %d: rtl %08X model %08X\n",
                      kLanes[l].name, e.x, e.s, e.b, e.clamp, e.round, got, want);
        }
      }
    }
  }
  top->final();
  std::uint64_t sum = 0;
  for (int l = 0; l < kN; ++l) {
    std::printf("lane %s: %llu mismatches\n", kLanes[l].name,
                static_cast<unsigned long long>(bad[l]));
    sum += bad[l];
  }
  std::printf("%zu (s, b) pairs x 65536 x, %llu cycles, %llu outputs checked\n", ps.size(),
              static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(checked));
  EXPECT_EQ(sum, 0U);
  EXPECT_EQ(checked, total * kN);
}

}  // namespace
}  // namespace normcore::sim
