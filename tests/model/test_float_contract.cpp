// The float contract (float_contract.hpp) by hand-computed cases: the worked examples of
// docs/contract.md section 9 (ties, subnormals, overflow, signed zeros, NaN / Inf, the clamp, the
// flush flag, integer outputs and inputs), the checks, and the host-side conversions. The
// exhaustive comparison with MPFR is model.float_oracle (test_float_oracle.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "normcore/float_contract.hpp"

using normcore::apply_float;
using normcore::ArithSpec;
using normcore::JobSettings;
using normcore::NumType;
using normcore::Rounding;

namespace {

std::uint32_t f32(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

std::int64_t run(NumType x, NumType y, std::int64_t xb, float s, float b, bool flush = false) {
  const ArithSpec a = normcore::float_spec(x, y, flush);
  return apply_float(xb, f32(s), f32(b), a, normcore::float_job(a));
}

constexpr auto H = NumType::fp16;
constexpr auto B = NumType::bf16;
constexpr auto F = NumType::fp32;
constexpr auto I = NumType::integer;

}  // namespace

TEST(FloatContract, WorkedExamplesFromDocs) {
  // 1: 1.5 * 2 + 0.25 = 3.25 (fp16 0x4280)
  EXPECT_EQ(run(H, H, 0x3E00, 2.0f, 0.25f), 0x4280);
  // 2: tie: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1.0)
  EXPECT_EQ(run(H, H, 0x3C00, 1.0f, 0x1p-11f), 0x3C00);
  // 3: tie to even upward: (1 + 2^-10) + 2^-11 -> 1 + 2^-9 (0x3C02)
  EXPECT_EQ(run(H, H, 0x3C01, 1.0f, 0x1p-11f), 0x3C02);
  // 4: one rounding: 1 + 2^-11 + 2^-40 is above the tie (a second rounding would give 1.0)
  EXPECT_EQ(run(H, H, 0x3C00, 1.0f + 0x1p-23f, 0x1p-11f), 0x3C01);
  // 5: overflow: 65504 + 16 is the tie between max and 2^16: Inf
  EXPECT_EQ(run(H, H, 0x7BFF, 1.0f, 16.0f), 0x7C00);
  // 6: just below the tie stays at max
  EXPECT_EQ(run(H, H, 0x7BFF, 1.0f, 15.0f), 0x7BFF);
  // 7: subnormal output, exact: 2^-24 (fp16 0x0001) from 2^-14 * 2^-10
  EXPECT_EQ(run(H, H, 0x0400, 0x1p-10f, 0.0f), 0x0001);
  // 8: the same with the flush flag: +0
  EXPECT_EQ(run(H, H, 0x0400, 0x1p-10f, 0.0f, true), 0x0000);
  // 9: half the smallest subnormal ties to even: +0; a bit more rounds up to 2^-24
  EXPECT_EQ(run(H, H, 0x0400, 0x1p-11f, 0.0f), 0x0000);
  EXPECT_EQ(run(H, H, 0x0401, 0x1p-11f, 0.0f), 0x0001);
  // 10: signed zeros: -0 * 1 + -0 = -0; 1 * 1 + -1 = +0; -0 * 1 + +0 = +0
  EXPECT_EQ(run(H, H, 0x8000, 1.0f, -0.0f), 0x8000);
  EXPECT_EQ(run(H, H, 0x3C00, 1.0f, -1.0f), 0x0000);
  EXPECT_EQ(run(H, H, 0x8000, 1.0f, 0.0f), 0x0000);
  // 11: NaN in -> canonical quiet NaN (fp16 0x7E00, bf16 0x7FC0, fp32 0x7FC00000)
  EXPECT_EQ(run(H, H, 0xFD01, 1.0f, 0.0f), 0x7E00);
  EXPECT_EQ(run(H, B, 0x3C00, 1.0f, NAN), 0x7FC0);
  EXPECT_EQ(run(B, F, 0x3F80, INFINITY, -INFINITY), 0x7FC00000);  // Inf - Inf
  EXPECT_EQ(run(H, H, 0x0000, INFINITY, 1.0f), 0x7E00);           // 0 * Inf
  // 12: Inf follows IEEE: -Inf * 2 + 1e30 = -Inf
  EXPECT_EQ(run(H, F, 0xFC00, 2.0f, 1e30f), 0xFF800000);
  // 13: bf16 in, fp32 out: 1.5 * 3 - 0.5 = 4 (exact)
  EXPECT_EQ(run(B, F, 0x3FC0, 3.0f, -0.5f), f32(4.0f));
  // 14: fp32 out is one rounding of the exact value (like fmaf)
  EXPECT_EQ(run(H, F, 0x3555, 1.0f / 3, 1e-8f), f32(std::fmaf(0.333251953125f, 1.0f / 3, 1e-8f)));
  // 15: integer out: 1.5 * 1 + 1 = 2.5 -> half_even 2
  {
    ArithSpec a = normcore::float_spec(H, I);
    JobSettings j = normcore::float_job(a);
    EXPECT_EQ(apply_float(0x3E00, f32(1.0f), f32(1.0f), a, j), 2);
    j.rounding = Rounding::half_away;
    EXPECT_EQ(apply_float(0x3E00, f32(1.0f), f32(1.0f), a, j), 3);
    j.rounding = Rounding::floor;
    EXPECT_EQ(apply_float(0xBE00, f32(1.0f), f32(0.0f), a, j), -2);  // floor(-1.5)
    j.rounding = Rounding::half_up;
    EXPECT_EQ(apply_float(0xBE00, f32(1.0f), f32(-1.0f), a, j), -2);  // -2.5 -> -2
    // saturation and Inf / NaN: clamp to lo..hi, NaN -> 0
    EXPECT_EQ(apply_float(0x7BFF, f32(1.0f), 0, a, j), 127);
    EXPECT_EQ(apply_float(0xFC00, f32(1.0f), 0, a, j), -128);
    EXPECT_EQ(apply_float(0x7E00, f32(1.0f), 0, a, j), 0);
  }
  // 16: integer in (int8), fp16 out: -3 * 0.1 + 0 = -0.30004883 (0xB4CD)
  EXPECT_EQ(run(I, H, -3, 0.1f, 0.0f), 0xB4CD);
}

TEST(FloatContract, ClampBoundsAreNumeric) {
  ArithSpec a = normcore::float_spec(H, H);
  JobSettings j = normcore::float_job(a);
  j.lo = 0x0000;                                                        // relu: lo = +0
  j.hi = 0x4600;                                                        // relu6: hi = 6
  EXPECT_EQ(apply_float(0xC000, f32(1.0f), 0, a, j), 0x0000);           // -2 -> 0
  EXPECT_EQ(apply_float(0x4800, f32(1.0f), 0, a, j), 0x4600);           // 8 -> 6
  EXPECT_EQ(apply_float(0x8000, f32(1.0f), f32(-0.0f), a, j), 0x8000);  // -0 == +0: kept
  EXPECT_EQ(apply_float(0x7C00, f32(1.0f), 0, a, j), 0x4600);           // Inf -> hi
  EXPECT_EQ(apply_float(0x7E00, f32(1.0f), 0, a, j), 0x7E00);           // NaN is not clamped
  j.lo = 0x4600;
  j.hi = 0x0000;
  EXPECT_NE(j.check(a), "");
  j.hi = 0x7E00;  // NaN bound
  EXPECT_NE(j.check(a), "");
}

TEST(FloatContract, SpecChecks) {
  EXPECT_EQ(normcore::float_spec(H, H).check(), "");
  EXPECT_EQ(normcore::float_spec(I, B).check(), "");
  ArithSpec a = normcore::float_spec(H, F);
  a.yw = 16;
  EXPECT_NE(a.check().find("output bits (yw) = 16 must be 32"), std::string::npos);
  a = normcore::float_spec(F, H);
  EXPECT_NE(a.check().find("fp32 is not supported"), std::string::npos);
  a = normcore::float_spec(H, H);
  a.sw = 16;
  EXPECT_NE(a.check().find("scale bits (sw)"), std::string::npos);
  ArithSpec ints;
  ints.flush_subnormals = true;
  EXPECT_NE(ints.check().find("flush_subnormals"), std::string::npos);
  JobSettings j = normcore::float_job(normcore::float_spec(H, H));
  j.shift = 3;
  EXPECT_NE(j.check(normcore::float_spec(H, H)).find("must be 0"), std::string::npos);
  EXPECT_EQ(normcore::parse_num_type("bf16"), B);
  EXPECT_THROW(normcore::parse_num_type("fp8"), std::invalid_argument);
}

TEST(FloatContract, DoubleConversionsRoundOnce) {
  EXPECT_EQ(normcore::double_to_float(1.0 + 0x1p-11, H), 0x3C00u);            // tie to even
  EXPECT_EQ(normcore::double_to_float(1.0 + 0x1p-11 + 0x1p-40, H), 0x3C01u);  // above the tie
  EXPECT_EQ(normcore::double_to_float(65520.0, H), 0x7C00u);                  // overflow
  EXPECT_EQ(normcore::double_to_float(0x1p-24, H), 0x0001u);                  // subnormal
  EXPECT_EQ(normcore::double_to_float(0x1p-24, H, true), 0x0000u);            // flushed
  EXPECT_EQ(normcore::double_to_float(-0x1p-140, F), 0x80000200u);
  EXPECT_EQ(normcore::double_to_float(NAN, B), 0x7FC0u);
  EXPECT_EQ(normcore::double_to_float(1.0 / 3, F), f32(1.0f / 3));
  for (std::uint32_t v = 0; v < 0x10000; ++v) {  // every fp16 / bf16 pattern round-trips
    for (auto t : {H, B}) {
      if (normcore::is_nan(v, t)) continue;
      EXPECT_EQ(normcore::double_to_float(normcore::float_to_double(v, t), t), v);
    }
  }
}

TEST(FloatContract, TraceFollowsTheStages) {
  const ArithSpec a = normcore::float_spec(H, H);
  normcore::FmaTrace t;
  // 1.5 * 2 + 0.25: product 0x600 * 0x800000 at 2^(-10-22); anchor = the product
  (void)apply_float(0x3E00, f32(2.0f), f32(0.25f), a, normcore::float_job(a), &t);
  EXPECT_FALSE(t.special);
  EXPECT_EQ(t.xsig, 0x600u);
  EXPECT_EQ(t.psig, 0x600ull * 0x800000ull);
  EXPECT_TRUE(t.product_anchor);
  EXPECT_EQ(t.lead_exp, 1);  // 3.25 = 1.625 * 2^1
  EXPECT_EQ(t.q, 0x680u);    // 1.625 * 2^10
  EXPECT_FALSE(t.guard);
  EXPECT_FALSE(t.sticky);
}
