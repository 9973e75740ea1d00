// Verilator test of the float lane (gen/src/core_flane.cpp), all 12 variants at once (flane_all:
// x fp16 / bf16, y fp16 / bf16 / fp32, flush off / on): every 16-bit x pattern x a set of (s, b)
// pairs (directed: ties, subnormals, overflow, signed zeros, NaN / Inf; and random), a clamp
// rotating with the pair (none, ReLU, [-0, 6], [-max, max]), one element per cycle (II = 1),
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
};
constexpr std::array<Lane, 12> kLanes = {{
    {"h_h_0", NumType::fp16, NumType::fp16, false},
    {"h_h_1", NumType::fp16, NumType::fp16, true},
    {"h_b_0", NumType::fp16, NumType::bf16, false},
    {"h_b_1", NumType::fp16, NumType::bf16, true},
    {"h_f_0", NumType::fp16, NumType::fp32, false},
    {"h_f_1", NumType::fp16, NumType::fp32, true},
    {"b_h_0", NumType::bf16, NumType::fp16, false},
    {"b_h_1", NumType::bf16, NumType::fp16, true},
    {"b_b_0", NumType::bf16, NumType::bf16, false},
    {"b_b_1", NumType::bf16, NumType::bf16, true},
    {"b_f_0", NumType::bf16, NumType::fp32, false},
    {"b_f_1", NumType::bf16, NumType::fp32, true},
}};

// The clamp k of an output type: none, ReLU (+0..Inf), [-0, 6], [-max, max].
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

std::uint32_t output(const Vcore& t, int lane) {
  switch (lane) {
    case 0:
      return t.y_h_h_0_o;
    case 1:
      return t.y_h_h_1_o;
    case 2:
      return t.y_h_b_0_o;
    case 3:
      return t.y_h_b_1_o;
    case 4:
      return t.y_h_f_0_o;
    case 5:
      return t.y_h_f_1_o;
    case 6:
      return t.y_b_h_0_o;
    case 7:
      return t.y_b_h_1_o;
    case 8:
      return t.y_b_b_0_o;
    case 9:
      return t.y_b_b_1_o;
    case 10:
      return t.y_b_f_0_o;
    default:
      return t.y_b_f_1_o;
  }
}

struct In {
  std::uint32_t x = 0, s = 0, b = 0;
  int clamp = 0;
};

TEST(Flane, EveryInputAgainstApplyFloat) {
  auto ctx = std::make_unique<VerilatedContext>();
  auto top = std::make_unique<Vcore>(ctx.get(), "TOP");
  const auto ps = pairs();
  std::array<ArithSpec, 12> specs;
  for (int l = 0; l < 12; ++l) specs[l] = float_spec(kLanes[l].x, kLanes[l].y, kLanes[l].flush);
  constexpr int kLat = NC_FLANE_LATENCY;
  std::array<In, kLat + 1> ring{};
  std::array<std::uint64_t, 12> bad{};
  std::uint64_t cycles = 0, checked = 0;
  int printed = 0;
  const std::uint64_t total = ps.size() * 65536ULL;
  for (std::uint64_t i = 0; i < total + kLat; ++i) {
    In in;
    if (i < total) {
      const auto& [s, b] = ps[i >> 16];
      in = {static_cast<std::uint32_t>(i & 0xFFFF), s, b, static_cast<int>((i >> 16) % 4)};
    }
    ring[i % ring.size()] = in;
    top->clk_i = 0;
    top->x_i = in.x;
    top->s_i = in.s;
    top->b_i = in.b;
    const auto ch = clamp(in.clamp, NumType::fp16), cb = clamp(in.clamp, NumType::bf16);
    const auto cf = clamp(in.clamp, NumType::fp32);
    top->lo_h_i = ch.first, top->hi_h_i = ch.second;
    top->lo_b_i = cb.first, top->hi_b_i = cb.second;
    top->lo_f_i = cf.first, top->hi_f_i = cf.second;
    top->eval();
    top->clk_i = 1;
    top->eval();
    ++cycles;
    // After edge i, y_o holds the element driven before edge i - (latency - 1).
    if (i + 1 < kLat) continue;
    const std::uint64_t j = i + 1 - kLat;
    if (j >= total) continue;
    const In& e = ring[j % ring.size()];
    for (int l = 0; l < 12; ++l) {
      const auto [lo, hi] = clamp(e.clamp, kLanes[l].y);
      JobSettings job;
      job.shift = 0;
      job.lo = lo;
      job.hi = hi;
      const auto want = static_cast<std::uint32_t>(apply_float(e.x, e.s, e.b, specs[l], job));
      const std::uint32_t got = output(*top, l);
      ++checked;
      if (got != want) {
        ++bad[l];
        if (printed++ < 20) {
          std::printf("lane %s x %04X s %08X b %08X clamp %d: rtl %08X model %08X\n",
                      kLanes[l].name, e.x, e.s, e.b, e.clamp, got, want);
        }
      }
    }
  }
  top->final();
  std::uint64_t sum = 0;
  for (int l = 0; l < 12; ++l) {
    std::printf("lane %s: %llu mismatches\n", kLanes[l].name,
                static_cast<unsigned long long>(bad[l]));
    sum += bad[l];
  }
  std::printf("%zu (s, b) pairs x 65536 x, %llu cycles, %llu outputs checked\n", ps.size(),
              static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(checked));
  EXPECT_EQ(sum, 0U);
  EXPECT_EQ(checked, total * 12);
}

}  // namespace
}  // namespace normcore::sim
