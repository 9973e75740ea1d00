// The arithmetic contract (runtime/include/normcore/contract.hpp), by hand-computed cases, the
// worked examples of docs/contract.md, and a brute-force comparison of round_shift against an
// independently written reference.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "normcore/contract.hpp"

using normcore::apply;
using normcore::apply_tensor;
using normcore::ArithSpec;
using normcore::channel_of;
using normcore::JobSettings;
using normcore::Layout;
using normcore::round_shift;
using normcore::Rounding;

namespace {

constexpr Rounding kFloor = Rounding::floor;
constexpr Rounding kUp = Rounding::half_up;
constexpr Rounding kEven = Rounding::half_even;
constexpr Rounding kAway = Rounding::half_away;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t p2(int n) {
  return std::int64_t{1} << n;
}

JobSettings job(int shift, Rounding mode, std::int64_t lo = -128, std::int64_t hi = 127) {
  JobSettings j;
  j.shift = shift;
  j.rounding = mode;
  j.lo = lo;
  j.hi = hi;
  return j;
}

struct Tie {
  std::int64_t acc;
  int shift;
  std::int64_t floor, up, even, away;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// round_shift

TEST(RoundShift, TiesEveryMode) {
  const Tie cases[] = {
      {5, 1, 2, 3, 2, 3},        // +2.5
      {-5, 1, -3, -2, -2, -3},   // -2.5
      {7, 1, 3, 4, 4, 4},        // +3.5
      {-7, 1, -4, -3, -4, -4},   // -3.5
      {1, 1, 0, 1, 0, 1},        // +0.5
      {-1, 1, -1, 0, 0, -1},     // -0.5
      {6, 2, 1, 2, 2, 2},        // +1.5
      {-6, 2, -2, -1, -2, -2},   // -1.5
      {40, 4, 2, 3, 2, 3},       // +2.5 at R = 4
      {-40, 4, -3, -2, -2, -3},  // -2.5 at R = 4
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("acc " + std::to_string(c.acc) + " R " + std::to_string(c.shift));
    EXPECT_EQ(round_shift(c.acc, c.shift, kFloor), c.floor);
    EXPECT_EQ(round_shift(c.acc, c.shift, kUp), c.up);
    EXPECT_EQ(round_shift(c.acc, c.shift, kEven), c.even);
    EXPECT_EQ(round_shift(c.acc, c.shift, kAway), c.away);
  }
}

TEST(RoundShift, NonTies) {
  const Tie cases[] = {
      {11, 2, 2, 3, 3, 3},       // 2.75
      {-11, 2, -3, -3, -3, -3},  // -2.75
      {9, 2, 2, 2, 2, 2},        // 2.25
      {-9, 2, -3, -2, -2, -2},   // -2.25
      {3, 3, 0, 0, 0, 0},        // 0.375
      {-3, 3, -1, 0, 0, 0},      // -0.375
      {5, 3, 0, 1, 1, 1},        // 0.625
      {-5, 3, -1, -1, -1, -1},   // -0.625
      {16, 4, 1, 1, 1, 1},       // exactly 1
      {-16, 4, -1, -1, -1, -1},  // exactly -1
      {0, 7, 0, 0, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("acc " + std::to_string(c.acc) + " R " + std::to_string(c.shift));
    EXPECT_EQ(round_shift(c.acc, c.shift, kFloor), c.floor);
    EXPECT_EQ(round_shift(c.acc, c.shift, kUp), c.up);
    EXPECT_EQ(round_shift(c.acc, c.shift, kEven), c.even);
    EXPECT_EQ(round_shift(c.acc, c.shift, kAway), c.away);
  }
}

TEST(RoundShift, ShiftZeroIsIdentity) {
  for (const auto mode : {kFloor, kUp, kEven, kAway}) {
    for (const std::int64_t acc : {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1},
                                   std::int64_t{12345}, std::int64_t{-98765}, kMax, kMin}) {
      EXPECT_EQ(round_shift(acc, 0, mode), acc);
    }
  }
}

TEST(RoundShift, ShiftEqualToAccumulatorWidth) {
  // Default spec: AW = max(8 + 16, 32) + 1 = 33. Any acc that fits 33 bits is in [-0.5, 0.5).
  const ArithSpec spec;
  ASSERT_EQ(spec.acc_bits(), 33);
  const int r = spec.acc_bits();
  const Tie cases[] = {
      {p2(32), r, 0, 1, 0, 1},        // +0.5 (acc = 2^32 fits a signed 33-bit accumulator)
      {-p2(32), r, -1, 0, 0, -1},     // -0.5 (the most negative 33-bit value)
      {p2(32) - 1, r, 0, 0, 0, 0},    // just below +0.5
      {-p2(32) + 1, r, -1, 0, 0, 0},  // just above -0.5
      {1, r, 0, 0, 0, 0},
      {-1, r, -1, 0, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("acc " + std::to_string(c.acc));
    EXPECT_EQ(round_shift(c.acc, c.shift, kFloor), c.floor);
    EXPECT_EQ(round_shift(c.acc, c.shift, kUp), c.up);
    EXPECT_EQ(round_shift(c.acc, c.shift, kEven), c.even);
    EXPECT_EQ(round_shift(c.acc, c.shift, kAway), c.away);
  }
  // And through apply() with the largest legal R.
  // |x*s + b| < 2^22 + 2^31 < 2^32 inside the widths, so nearest modes give 0 and floor -1 / 0.
  EXPECT_EQ(apply(1, p2(15) - 1, p2(31) - 1, job(r, kAway)), 0);
  EXPECT_EQ(apply(-128, -p2(15), p2(31) - 1, job(r, kUp)), 0);
  EXPECT_EQ(apply(127, -p2(15), -p2(31), job(r, kFloor)), -1);
  EXPECT_EQ(apply(127, -p2(15), -p2(31), job(r, kAway)), 0);
}

TEST(RoundShift, LargeMagnitudes) {
  const Tie cases[] = {
      {p2(62) + p2(61), 62, 1, 2, 2, 2},                      // +1.5
      {-(p2(62) + p2(61)), 62, -2, -1, -2, -2},               // -1.5
      {p2(62), 63, 0, 1, 0, 1},                               // +0.5
      {-p2(62), 63, -1, 0, 0, -1},                            // -0.5
      {kMin, 64, -1, 0, 0, -1},                               // -2^63 / 2^64 = -0.5
      {kMax, 64, 0, 0, 0, 0},                                 // just below +0.5
      {kMax, 63, 0, 1, 1, 1},                                 // 1 - 2^-63
      {kMin, 63, -1, -1, -1, -1},                             // exactly -1
      {kMax, 1, p2(62) - 1, p2(62), p2(62), p2(62)},          // 2^62 - 0.5: tie, q odd
      {kMin, 1, -p2(62), -p2(62), -p2(62), -p2(62)},          // exact
      {kMin + 1, 1, -p2(62), -p2(62) + 1, -p2(62), -p2(62)},  // -2^62 + 0.5
      {p2(62) - 1, 2, p2(60) - 1, p2(60), p2(60), p2(60)},    // 2^60 - 0.25
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("acc " + std::to_string(c.acc) + " R " + std::to_string(c.shift));
    EXPECT_EQ(round_shift(c.acc, c.shift, kFloor), c.floor);
    EXPECT_EQ(round_shift(c.acc, c.shift, kUp), c.up);
    EXPECT_EQ(round_shift(c.acc, c.shift, kEven), c.even);
    EXPECT_EQ(round_shift(c.acc, c.shift, kAway), c.away);
  }
}

namespace {

// Independent reference: sign / magnitude with unsigned arithmetic, comparing the discarded
// remainder with one half (no 128-bit types, no arithmetic shifts of negative numbers).
std::int64_t reference_round(std::int64_t acc, int shift, Rounding mode) {
  if (shift == 0) return acc;
  const bool neg = acc < 0;
  const std::uint64_t mag =
      neg ? std::uint64_t{0} - static_cast<std::uint64_t>(acc) : static_cast<std::uint64_t>(acc);
  const std::uint64_t q = shift >= 64 ? 0 : mag >> shift;
  const std::uint64_t rem = shift >= 64 ? mag : mag & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  // |acc| / 2^R = q + rem / 2^R; round the magnitude, then restore the sign.
  std::uint64_t m = q;
  switch (mode) {
    case Rounding::floor:  // toward -inf: truncate positives, round negatives away from zero
      m = q + ((neg && rem != 0) ? 1 : 0);
      break;
    case Rounding::half_up:  // ties toward +inf: up in magnitude for positives only
      m = q + ((rem > half || (rem == half && !neg)) ? 1 : 0);
      break;
    case Rounding::half_even:
      m = q + ((rem > half || (rem == half && (q % 2 == 1))) ? 1 : 0);
      break;
    case Rounding::half_away:
      m = q + (rem >= half ? 1 : 0);
      break;
  }
  return neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
}

std::int64_t long_double_round(std::int64_t acc, int shift, Rounding mode) {
  const long double v = std::ldexp(static_cast<long double>(acc), -shift);
  switch (mode) {
    case Rounding::floor:
      return static_cast<std::int64_t>(std::floor(v));
    case Rounding::half_up:
      return static_cast<std::int64_t>(std::floor(v + 0.5L));
    case Rounding::half_even:
      return static_cast<std::int64_t>(std::nearbyint(v));
    case Rounding::half_away:
      return static_cast<std::int64_t>(std::round(v));
  }
  return 0;
}

}  // namespace

TEST(RoundShift, MatchesIndependentReferenceOnRandomInputs) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::mt19937_64 rng(20240601);
  std::uniform_int_distribution<int> bits(0, 63), shift_dist(0, 64);
  for (int i = 0; i < 400000; ++i) {
    // Mixed magnitudes: keep a random number of low bits, random sign.
    const int nb = bits(rng);
    std::int64_t acc = static_cast<std::int64_t>(rng() >> (63 - nb));  // < 2^(nb+1)
    if (rng() & 1) acc = ~acc;  // -acc - 1, defined for every value
    const int r = (i % 4 == 0) ? std::min(nb + 1, 64) : shift_dist(rng);  // bias to ties-ish
    for (const auto mode : {kFloor, kUp, kEven, kAway}) {
      ASSERT_EQ(round_shift(acc, r, mode), reference_round(acc, r, mode))
          << "acc " << acc << " R " << r << " mode " << normcore::to_string(mode);
    }
  }
  // Exact ties at every R, both signs.
  for (int r = 1; r <= 60; ++r) {
    for (const std::int64_t k : {0, 1, 2, 3, -1, -2, -3}) {
      const std::int64_t acc = k * p2(r) + p2(r - 1);
      for (const auto mode : {kFloor, kUp, kEven, kAway}) {
        ASSERT_EQ(round_shift(acc, r, mode), reference_round(acc, r, mode)) << acc << " " << r;
        ASSERT_EQ(round_shift(-acc, r, mode), reference_round(-acc, r, mode)) << acc << " " << r;
      }
    }
  }
}

TEST(RoundShift, MatchesLongDoubleWhereExact) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> acc_dist(-(p2(40)), p2(40));
  std::uniform_int_distribution<int> shift_dist(0, 24);
  for (int i = 0; i < 200000; ++i) {
    const std::int64_t acc = acc_dist(rng);
    const int r = shift_dist(rng);
    for (const auto mode : {kFloor, kUp, kEven, kAway}) {
      ASSERT_EQ(round_shift(acc, r, mode), long_double_round(acc, r, mode))
          << "acc " << acc << " R " << r << " mode " << normcore::to_string(mode);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// apply and clamps

TEST(Apply, ClampsAndActivations) {
  // Saturation at both ends of int8.
  EXPECT_EQ(apply(100, 3, 0, job(0, kEven)), 127);
  EXPECT_EQ(apply(-100, 3, 0, job(0, kEven)), -128);
  EXPECT_EQ(apply(100, -3, 0, job(0, kEven)), -128);
  // ReLU: lo = 0.
  EXPECT_EQ(apply(-50, p2(14), 0, job(14, kEven, 0, 127)), 0);
  EXPECT_EQ(apply(50, p2(14), 0, job(14, kEven, 0, 127)), 50);
  // ReLU6 at out.scale 0.1: hi = 60.
  EXPECT_EQ(apply(127, p2(14), 0, job(14, kEven, 0, 60)), 60);
  EXPECT_EQ(apply(59, p2(14), 0, job(14, kEven, 0, 60)), 59);
  // Quantised ReLU with zero point -3: lo = -3, not 0.
  EXPECT_EQ(apply(-20, p2(14), 0, job(14, kEven, -3, 127)), -3);
  EXPECT_EQ(apply(-2, p2(14), 0, job(14, kEven, -3, 127)), -2);
  // lo == hi: constant output.
  for (std::int64_t x = -128; x <= 127; ++x) EXPECT_EQ(apply(x, 7, 3, job(2, kAway, 5, 5)), 5);
}

TEST(Apply, UnsignedRanges) {
  ArithSpec spec;
  spec.x_signed = false;
  spec.y_signed = false;
  EXPECT_EQ(spec.x_min(), 0);
  EXPECT_EQ(spec.x_max(), 255);
  EXPECT_EQ(spec.y_min(), 0);
  EXPECT_EQ(spec.y_max(), 255);
  const JobSettings j = job(0, kEven, spec.y_min(), spec.y_max());
  EXPECT_TRUE(j.check(spec).empty()) << j.check(spec);
  EXPECT_EQ(apply(200, 1, 100, j), 255);  // 300 saturates high
  EXPECT_EQ(apply(200, -1, 100, j), 0);   // -100 saturates low
  EXPECT_EQ(apply(255, 1, -55, j), 200);
  // Unsigned input into a signed output: 255 * -1 = -255 -> -128.
  ArithSpec mixed;
  mixed.x_signed = false;
  EXPECT_EQ(apply(255, -1, 0, job(0, kEven, mixed.y_min(), mixed.y_max())), -128);
  // 16-bit unsigned output range.
  ArithSpec wide;
  wide.yw = 16;
  wide.y_signed = false;
  EXPECT_EQ(wide.y_max(), 65535);
  EXPECT_EQ(apply(127, 1000, 0, job(0, kEven, 0, 65535)), 65535);
}

// ---------------------------------------------------------------------------------------------
// The worked examples of docs/contract.md, row by row.

namespace {
struct Example {
  std::int64_t x, s, b;
  int r;
  Rounding mode;
  std::int64_t lo, hi, y;
};
}  // namespace

TEST(Apply, WorkedExamplesFromDocs) {
  const Example rows[] = {
      {10, 3, 0, 0, kEven, -128, 127, 30},             // 1: R = 0, plain product
      {5, 1, 0, 1, kFloor, -128, 127, 2},              // 2: +2.5
      {5, 1, 0, 1, kUp, -128, 127, 3},                 // 3
      {5, 1, 0, 1, kEven, -128, 127, 2},               // 4
      {5, 1, 0, 1, kAway, -128, 127, 3},               // 5
      {-5, 1, 0, 1, kFloor, -128, 127, -3},            // 6: -2.5
      {-5, 1, 0, 1, kUp, -128, 127, -2},               // 7
      {-5, 1, 0, 1, kEven, -128, 127, -2},             // 8
      {-5, 1, 0, 1, kAway, -128, 127, -3},             // 9
      {7, 1, 0, 1, kEven, -128, 127, 4},               // 10: +3.5 to even
      {-3, 2, 0, 2, kUp, -128, 127, -1},               // 11: -1.5 half_up
      {-3, 2, 1, 2, kFloor, -128, 127, -2},            // 12: -1.25 floor
      {100, 20000, -8192, 14, kEven, -128, 127, 122},  // 13: 121.5703125
      {100, 3, 0, 0, kEven, -128, 127, 127},           // 14: 300 saturates
      {-50, 16384, 0, 14, kEven, 0, 127, 0},           // 15: relu
      {127, 16384, 0, 14, kEven, 0, 60, 60},           // 16: relu6 (out.scale 0.1)
      {-20, 16384, 0, 14, kEven, -3, 127, -3},         // 17: quantised relu, zp -3
      {200, 1, 100, 0, kEven, 0, 255, 255},            // 18: uint8 output saturates
      {3, 21845, -10923, 16, kFloor, -128, 127, 0},    // 19: 0.8333 floor
      {3, 21845, -10923, 16, kAway, -128, 127, 1},     // 20: 0.8333 nearest
  };
  int n = 0;
  for (const auto& e : rows) {
    ++n;
    SCOPED_TRACE("docs/contract.md example " + std::to_string(n));
    EXPECT_EQ(apply(e.x, e.s, e.b, job(e.r, e.mode, e.lo, e.hi)), e.y);
  }
}

// ---------------------------------------------------------------------------------------------
// Spec / job validation

namespace {
void expect_bad_spec(ArithSpec spec, const std::string& needle) {
  const std::string msg = spec.check();
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: '" << msg << "' lacks " << needle;
}
}  // namespace

TEST(ArithSpecCheck, DefaultsAreValid) {
  const ArithSpec spec;
  EXPECT_EQ(spec.check(), "");
  EXPECT_EQ(spec.acc_bits(), 33);
  EXPECT_EQ(spec.s_min(), -32768);
  EXPECT_EQ(spec.s_max(), 32767);
  EXPECT_EQ(spec.b_min(), -p2(31));
  EXPECT_EQ(spec.b_max(), p2(31) - 1);
  EXPECT_EQ(JobSettings{}.check(spec), "");
}

TEST(ArithSpecCheck, RejectsNamingTheField) {
  ArithSpec s;
  s.xw = 1;
  expect_bad_spec(s, "xw");
  s = {};
  s.xw = 33;
  expect_bad_spec(s, "xw");
  s = {};
  s.sw = 1;
  expect_bad_spec(s, "sw");
  s = {};
  s.sw = 33;
  expect_bad_spec(s, "sw");
  s = {};
  s.bw = 63;
  expect_bad_spec(s, "bw");
  s = {};
  s.bw = 1;
  expect_bad_spec(s, "bw");
  s = {};
  s.yw = 1;
  expect_bad_spec(s, "yw");
  s = {};
  s.yw = 40;
  expect_bad_spec(s, "yw");
  s = {};
  s.xw = 32;
  s.sw = 32;
  expect_bad_spec(s, "accumulator");
  s = {};
  s.xw = 2;
  s.sw = 2;
  s.bw = 2;
  s.yw = 8;  // AW = 5 < 8
  expect_bad_spec(s, "wider than the accumulator");
  // The widest legal accumulator is 64 bits.
  s = {};
  s.xw = 32;
  s.sw = 31;
  EXPECT_EQ(s.check(), "");
  EXPECT_EQ(s.acc_bits(), 64);
}

TEST(JobSettingsCheck, RejectsNamingTheField) {
  const ArithSpec spec;
  auto msg = [&](JobSettings j) { return j.check(spec); };
  EXPECT_NE(msg(job(-1, kEven)).find("shift R"), std::string::npos);
  EXPECT_NE(msg(job(34, kEven)).find("shift R"), std::string::npos);
  EXPECT_EQ(msg(job(33, kEven)), "");
  EXPECT_NE(msg(job(0, kEven, -129, 127)).find("clamp lo"), std::string::npos);
  EXPECT_NE(msg(job(0, kEven, -128, 128)).find("clamp hi"), std::string::npos);
  EXPECT_NE(msg(job(0, kEven, 10, 9)).find("above hi"), std::string::npos);
  EXPECT_EQ(msg(job(0, kEven, 9, 9)), "");
  ArithSpec u;
  u.y_signed = false;
  EXPECT_NE(job(0, kEven, -1, 255).check(u).find("clamp lo"), std::string::npos);
}

TEST(Names, RoundTrip) {
  for (const auto mode : {kFloor, kUp, kEven, kAway}) {
    EXPECT_EQ(normcore::parse_rounding(normcore::to_string(mode)), mode);
  }
  EXPECT_THROW(normcore::parse_rounding("nearest"), std::invalid_argument);
  EXPECT_EQ(normcore::parse_layout("NHWC"), Layout::nhwc);
  EXPECT_EQ(normcore::parse_layout("nchw"), Layout::nchw);
  EXPECT_THROW(normcore::parse_layout("chw"), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Layouts and tensors

TEST(ChannelOf, NchwAndNhwc) {
  // [N=2][C=3][HW=4]
  EXPECT_EQ(channel_of(0, 3, 4, Layout::nchw), 0);
  EXPECT_EQ(channel_of(3, 3, 4, Layout::nchw), 0);
  EXPECT_EQ(channel_of(4, 3, 4, Layout::nchw), 1);
  EXPECT_EQ(channel_of(5, 3, 4, Layout::nchw), 1);
  EXPECT_EQ(channel_of(11, 3, 4, Layout::nchw), 2);
  EXPECT_EQ(channel_of(12, 3, 4, Layout::nchw), 0);  // second image
  EXPECT_EQ(channel_of(23, 3, 4, Layout::nchw), 2);
  // [N][HW][C=3]
  EXPECT_EQ(channel_of(0, 3, 4, Layout::nhwc), 0);
  EXPECT_EQ(channel_of(5, 3, 4, Layout::nhwc), 2);
  EXPECT_EQ(channel_of(13, 3, 4, Layout::nhwc), 1);
}

TEST(ApplyTensor, SmallHandWrittenTensor) {
  const std::vector<std::int64_t> scale = {2, -1};
  const std::vector<std::int64_t> shift = {1, 0};
  const JobSettings j = job(0, kEven);
  // N = 2, C = 2, HW = 3.
  const std::vector<std::int64_t> x = {1, 2, 3, 4, 5, 6, 100, -100, 0, 7, 8, 9};
  std::vector<std::int64_t> y(x.size());
  apply_tensor(x, y, scale, shift, 3, Layout::nchw, j);
  EXPECT_EQ(y, (std::vector<std::int64_t>{3, 5, 7, -4, -5, -6, 127, -128, 1, -7, -8, -9}));
  apply_tensor(x, y, scale, shift, 3, Layout::nhwc, j);
  EXPECT_EQ(y, (std::vector<std::int64_t>{3, -2, 7, -4, 11, -6, 127, 100, 1, -7, 17, -9}));
  // With a shift: (x * 3 + 1) / 2, half_away; channel 1 negated.
  const std::vector<std::int64_t> s2 = {3, -3};
  const std::vector<std::int64_t> b2 = {1, 1};
  const std::vector<std::int64_t> x2 = {1, 2, -1, -2};  // N=1, C=2, HW=2
  std::vector<std::int64_t> y2(4);
  apply_tensor(x2, y2, s2, b2, 2, Layout::nchw, job(1, kAway));
  // ch0: 4/2 = 2, 7/2 = 3.5 -> 4; ch1: 4/2 = 2, 7/2 = 3.5 -> 4.
  EXPECT_EQ(y2, (std::vector<std::int64_t>{2, 4, 2, 4}));
}

TEST(ApplyTensor, RejectsBadSizes) {
  const std::vector<std::int64_t> x = {1, 2, 3, 4};
  std::vector<std::int64_t> small(3), y(4);
  const std::vector<std::int64_t> s = {1, 1}, b = {0, 0}, b1 = {0};
  const JobSettings j;
  EXPECT_THROW(apply_tensor(x, small, s, b, 2, Layout::nchw, j), std::invalid_argument);
  EXPECT_THROW(apply_tensor(x, y, s, b1, 2, Layout::nchw, j), std::invalid_argument);
  EXPECT_THROW(apply_tensor(x, y, {}, {}, 2, Layout::nchw, j), std::invalid_argument);
  EXPECT_THROW(apply_tensor(x, y, s, b, 0, Layout::nchw, j), std::invalid_argument);
}
