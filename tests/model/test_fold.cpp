// The fold (float batch norm -> s, b, R, lo, hi) against an independently computed float
// reference, and the bn.json loader / validator error messages.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"
#include "normcore/fold.hpp"

namespace fs = std::filesystem;
using normcore::ArithSpec;
using normcore::BnParams;
using normcore::FoldOptions;
using normcore::FoldResult;
using normcore::Rounding;

namespace {

// A private temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "normcore_fold_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  fs::path path_;
};

// The real-valued chain, written out step by step (deliberately not the fold's a/d formula).
long double ideal_output(const BnParams& p, std::size_t c, long double x) {
  const long double in_scale = p.integer_io ? 1.0L : p.in.scale;
  const long double in_zp = p.integer_io ? 0.0L : static_cast<long double>(p.in.zero_point);
  const long double out_scale = p.integer_io ? 1.0L : p.out.scale;
  const long double out_zp = p.integer_io ? 0.0L : static_cast<long double>(p.out.zero_point);
  const long double xr = in_scale * (x - in_zp);
  const long double normalised =
      (xr - static_cast<long double>(p.mean[c])) /
      std::sqrt(static_cast<long double>(p.var[c]) + static_cast<long double>(p.eps));
  const long double yr = static_cast<long double>(p.gamma[c]) * normalised + p.beta[c];
  return yr / out_scale + out_zp;
}

// max over x of |apply(x) - clamp(ideal(x), lo, hi)|, computed from scratch.
long double recomputed_max_err(const BnParams& p, const ArithSpec& spec, const FoldResult& r,
                               std::size_t c) {
  long double worst = 0;
  const auto lo = static_cast<long double>(r.job.lo), hi = static_cast<long double>(r.job.hi);
  for (std::int64_t x = spec.x_min(); x <= spec.x_max(); ++x) {
    const long double ref =
        std::min(hi, std::max(lo, ideal_output(p, c, static_cast<long double>(x))));
    const auto y = normcore::apply(x, r.scale[c], r.shift[c], r.job);
    worst = std::max(worst, std::fabs(static_cast<long double>(y) - ref));
  }
  return worst;
}

bool any_warning_has(const FoldResult& r, const std::string& a, const std::string& b = "") {
  return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const std::string& w) {
    return w.find(a) != std::string::npos && w.find(b) != std::string::npos;
  });
}

BnParams simple_layer(std::size_t channels) {
  BnParams p;
  p.gamma.assign(channels, 1.0);
  p.beta.assign(channels, 0.0);
  p.mean.assign(channels, 0.0);
  p.var.assign(channels, 1.0);
  p.in = {0.05, 0};
  p.out = {0.1, -3};
  p.source = "test layer";
  return p;
}

// The offset fold adds to d before scaling b: 0.5 in floor mode with R >= 1, else 0.
long double rounding_offset(const FoldResult& r) {
  return r.job.rounding == Rounding::floor && r.job.shift >= 1 ? 0.5L : 0.0L;
}

// Every check that must hold for any fold result.
void check_fold_consistency(const BnParams& p, const ArithSpec& spec, const FoldResult& r) {
  ASSERT_EQ(r.scale.size(), p.channels());
  ASSERT_EQ(r.shift.size(), p.channels());
  ASSERT_EQ(r.channels.size(), p.channels());
  EXPECT_EQ(r.job.check(spec), "");
  long double worst = -1;
  for (std::size_t c = 0; c < p.channels(); ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    const auto& ch = r.channels[c];
    EXPECT_EQ(ch.channel, static_cast<int>(c));
    EXPECT_EQ(ch.s, r.scale[c]);
    EXPECT_EQ(ch.b, r.shift[c]);
    EXPECT_GE(ch.s, spec.s_min());
    EXPECT_LE(ch.s, spec.s_max());
    EXPECT_GE(ch.b, spec.b_min());
    EXPECT_LE(ch.b, spec.b_max());
    // s = round(a * 2^R), b = round((d + offset) * 2^R), saturated to their widths (and flagged).
    const long double s_ideal = std::round(std::ldexp(ch.a, r.job.shift));
    const long double b_ideal = std::round(std::ldexp(ch.d + rounding_offset(r), r.job.shift));
    const bool s_fits = s_ideal >= spec.s_min() && s_ideal <= spec.s_max();
    const bool b_fits = b_ideal >= spec.b_min() && b_ideal <= spec.b_max();
    EXPECT_EQ(ch.s_saturated, !s_fits);
    EXPECT_EQ(ch.b_saturated, !b_fits);
    if (s_fits) {
      EXPECT_EQ(static_cast<long double>(ch.s), s_ideal);
    }
    if (b_fits) {
      EXPECT_EQ(static_cast<long double>(ch.b), b_ideal);
    }
    if (!s_fits) {
      EXPECT_EQ(ch.s, s_ideal < 0 ? spec.s_min() : spec.s_max());
    }
    if (!b_fits) {
      EXPECT_EQ(ch.b, b_ideal < 0 ? spec.b_min() : spec.b_max());
    }
    // Every saturated channel is named in a warning that gives its max error.
    if (!s_fits || !b_fits) {
      EXPECT_TRUE(any_warning_has(r, "channel " + std::to_string(c) + ":", "saturated to"));
      EXPECT_TRUE(any_warning_has(r, "channel " + std::to_string(c) + ":", "max error"));
    }
    // a and d are the slope and intercept of the ideal map.
    const long double d_ref = ideal_output(p, c, 0);
    const long double a_ref = ideal_output(p, c, 1) - d_ref;
    EXPECT_NEAR(static_cast<double>(ch.a), static_cast<double>(a_ref),
                1e-12 * std::max(1.0, std::fabs(static_cast<double>(a_ref))));
    EXPECT_NEAR(static_cast<double>(ch.d), static_cast<double>(d_ref),
                1e-12 * std::max(1.0, std::fabs(static_cast<double>(d_ref))));
    if (ch.exhaustive) {
      EXPECT_NEAR(static_cast<double>(ch.max_err),
                  static_cast<double>(recomputed_max_err(p, spec, r, c)), 1e-9);
    }
    // The clamp is 1-Lipschitz: error <= rounding error + affine error. The rounding error is
    // 0.5 in every mode: floor mode folds the half-LSB offset into b (affine_err excludes it).
    const long double bound = 0.5L + ch.affine_err;
    EXPECT_LE(ch.max_err, bound + 1e-12L);
    worst = std::max(worst, ch.max_err);
  }
  EXPECT_EQ(r.worst_err, worst);
  EXPECT_EQ(r.channels[static_cast<std::size_t>(r.worst_channel)].max_err, worst);
}

// True if every channel's s and b still fit at shift r.
bool fits_at(const FoldResult& res, const ArithSpec& spec, int r) {
  const long double offset = res.job.rounding == Rounding::floor && r >= 1 ? 0.5L : 0.0L;
  for (const auto& ch : res.channels) {
    const long double s = std::round(std::ldexp(ch.a, r));
    const long double b = std::round(std::ldexp(ch.d + offset, r));
    if (s < spec.s_min() || s > spec.s_max() || b < spec.b_min() || b > spec.b_max()) {
      return false;
    }
  }
  return true;
}

FoldResult fold_at(const BnParams& p, const ArithSpec& spec, FoldOptions opt, int r) {
  opt.force_shift = r;
  return normcore::fold(p, spec, opt);
}

// Brute force over every R: the fold's R has the smallest worst-case error, and every larger R
// is strictly worse (ties go to the larger R). Forcing the chosen R reproduces the result.
void expect_optimal_shift(const BnParams& p, const ArithSpec& spec, const FoldOptions& opt,
                          const FoldResult& r) {
  for (int shift = 0; shift <= spec.acc_bits(); ++shift) {
    SCOPED_TRACE("R = " + std::to_string(shift) + ", chosen R = " + std::to_string(r.job.shift));
    const FoldResult forced = fold_at(p, spec, opt, shift);
    EXPECT_EQ(forced.job.shift, shift);
    EXPECT_EQ(forced.shift_choice, "forced");
    EXPECT_LE(r.worst_err, forced.worst_err);
    if (shift > r.job.shift) {
      EXPECT_LT(r.worst_err, forced.worst_err);
    }
    if (shift == r.job.shift) {
      EXPECT_EQ(forced.scale, r.scale);
      EXPECT_EQ(forced.shift, r.shift);
      EXPECT_EQ(forced.worst_err, r.worst_err);
    }
  }
}

// examples/bn_layer.json: BatchNorm2d(8), int8 in/out, relu, half_away. Channel 7 has var = 0
// (a = 263.7): at the largest R where its s fits (R = 6) channels 0, 1 and 5 exceed 1 LSB.
BnParams bn_layer_example() {
  BnParams p;
  p.eps = 1e-5;
  p.gamma = {1.02, 0.87, -0.45, 1.31, 0.0001, 2.2, 0.95, 1.10};
  p.beta = {0.10, -0.25, 0.05, 0.40, 0.00, -1.10, 0.30, 0.00};
  p.mean = {0.31, -0.12, 1.75, 0.02, 0.50, -2.40, 0.66, 0.00};
  p.var = {0.92, 0.33, 2.10, 0.05, 0.70, 4.00, 1.00, 0.00};
  p.in = {0.0235, 0};
  p.out = {0.0310, -128};
  p.activation = "relu";
  p.rounding = Rounding::half_away;
  p.source = "bn_layer.json";
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Fold against the float reference

TEST(Fold, RandomLayersMatchIndependentReference) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const char* activations[] = {"none", "relu", "relu6", "clamp"};
  const Rounding modes[] = {Rounding::half_even, Rounding::half_away, Rounding::half_up,
                            Rounding::floor};
  std::vector<ArithSpec> specs(4);
  specs[1].x_signed = false;  // uint8 in
  specs[2].sw = 12;
  specs[2].bw = 24;
  specs[3].xw = 10;  // 10-bit in, 12-bit unsigned out
  specs[3].yw = 12;
  specs[3].y_signed = false;
  for (int layer = 0; layer < 40; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    const std::size_t channels = 1 + static_cast<std::size_t>(u01(rng) * 16);
    BnParams p;
    p.source = "random layer";
    p.eps = 1e-3;
    for (std::size_t c = 0; c < channels; ++c) {
      double gamma = -2 + 4 * u01(rng);
      if (c == 0) gamma = -0.75;  // always one negative gamma
      p.gamma.push_back(gamma);
      p.beta.push_back(-1 + 2 * u01(rng));
      p.mean.push_back(-1 + 2 * u01(rng));
      p.var.push_back(c % 5 == 1 ? 0.0 : 4 * u01(rng));  // var = 0 with eps > 0
    }
    p.in = {0.01 + 0.09 * u01(rng), static_cast<std::int64_t>(u01(rng) * 20) - 10};
    p.out = {0.02 + 0.18 * u01(rng), static_cast<std::int64_t>(u01(rng) * 20) - 10};
    p.activation = activations[layer % 4];
    p.act_min = -1.0;
    p.act_max = 4.0;
    const ArithSpec spec = specs[static_cast<std::size_t>(layer / 4) % specs.size()];
    FoldOptions opt;
    opt.rounding = modes[static_cast<std::size_t>(layer) % 4];
    const FoldResult r = normcore::fold(p, spec, opt);
    EXPECT_EQ(r.job.rounding, *opt.rounding);
    for (const auto& ch : r.channels) EXPECT_TRUE(ch.exhaustive);
    check_fold_consistency(p, spec, r);
    // fit_shift is the largest R without saturation; R itself is the brute-force optimum.
    EXPECT_TRUE(fits_at(r, spec, r.fit_shift));
    if (r.fit_shift < spec.acc_bits()) {
      EXPECT_FALSE(fits_at(r, spec, r.fit_shift + 1));
    }
    expect_optimal_shift(p, spec, opt, r);
    EXPECT_LT(r.channels[0].s, 0) << "negative gamma gives a negative scale";
  }
}

TEST(Fold, DocsExample) {
  // docs/contract.md section 6.
  BnParams p;
  p.gamma = {1, -2};
  p.beta = {0, 0.5};
  p.mean = {0, 0.25};
  p.var = {1, 0.25};
  p.eps = 0;
  p.in = {0.05, 0};
  p.out = {0.1, -3};
  p.activation = "relu";
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.job.shift, 14);
  EXPECT_EQ(r.job.lo, -3);
  EXPECT_EQ(r.job.hi, 127);
  EXPECT_EQ(r.scale, (std::vector<std::int64_t>{8192, -32768}));
  EXPECT_EQ(r.shift, (std::vector<std::int64_t>{-49152, 196608}));
  // 0.05 and 0.1 are not exact in binary, so "exact" is within floating-point noise.
  EXPECT_NEAR(static_cast<double>(r.channels[0].max_err), 0.5, 1e-12);
  EXPECT_NEAR(static_cast<double>(r.channels[1].max_err), 0.0, 1e-12);
  EXPECT_EQ(r.worst_channel, 0);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Fold, WellConditionedEightBitLayerIsPrecise) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  BnParams p = simple_layer(32);
  for (std::size_t c = 0; c < 32; ++c) {
    p.gamma[c] = 0.5 + u01(rng);
    p.beta[c] = -0.5 + u01(rng);
    p.mean[c] = -0.5 + u01(rng);
    p.var[c] = 0.5 + 1.5 * u01(rng);
  }
  const ArithSpec spec;  // int8 in/out, sw = 16, bw = 32
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.job.rounding, Rounding::half_even);
  EXPECT_TRUE(r.warnings.empty());
  for (const auto& ch : r.channels) {
    EXPECT_TRUE(ch.exhaustive);
    EXPECT_LT(ch.affine_err, 0.01L);
    EXPECT_LE(ch.max_err, 0.5L + 0.01L);
  }
  EXPECT_LE(r.worst_err, 0.5L + 0.01L);
}

TEST(Fold, FitShiftIsMaximalAndUsesTheTopScaleBits) {
  // b is tiny (mean = beta = zero points = 0), so s of the largest-|a| channel limits fit_shift.
  // The chosen R need not be fit_shift (a smaller R can have a smaller exact worst case), but it
  // is never worse than fit_shift.
  BnParams p = simple_layer(3);
  p.out = {0.1, 0};
  p.gamma = {0.3, -1.7, 0.9};
  for (const int sw : {8, 12, 16, 20}) {
    ArithSpec spec;
    spec.sw = sw;
    const FoldResult r = normcore::fold(p, spec);
    SCOPED_TRACE("sw " + std::to_string(sw));
    check_fold_consistency(p, spec, r);
    const FoldResult at_fit = fold_at(p, spec, {}, r.fit_shift);
    check_fold_consistency(p, spec, at_fit);
    EXPECT_LE(r.worst_err, at_fit.worst_err);
    const auto big = std::max_element(at_fit.scale.begin(), at_fit.scale.end(),
                                      [](auto a, auto b) { return std::llabs(a) < std::llabs(b); });
    EXPECT_GE(std::llabs(*big), std::int64_t{1} << (sw - 2));
    EXPECT_EQ(*big, at_fit.scale[1]);
    EXPECT_LT(at_fit.scale[1], 0);
    EXPECT_TRUE(fits_at(r, spec, r.fit_shift));
    EXPECT_FALSE(fits_at(r, spec, r.fit_shift + 1));
    // Here one more bit would saturate the largest channel's s badly: never chosen.
    EXPECT_LE(r.job.shift, r.fit_shift);
  }
}

TEST(Fold, HugeMeanSaturatesBiasAndWarnsNamingTheChannel) {
  // The NVDLA int16 case: mean = 1e6 cannot be represented in a 16-bit bias even at R = 0.
  BnParams p = simple_layer(4);
  p.mean[2] = 1e6;
  ArithSpec spec;
  spec.bw = 16;
  FoldResult r;
  ASSERT_NO_THROW(r = normcore::fold(p, spec));
  check_fold_consistency(p, spec, r);
  EXPECT_TRUE(any_warning_has(r, "channel 2:", "b saturated")) << r.warnings.size();
  EXPECT_FALSE(r.channels[2].warnings.empty());
  EXPECT_EQ(r.shift[2], spec.b_min());  // d is hugely negative
  // The other channels still choose R by their own needs and stay precise.
  EXPECT_GT(r.job.shift, 0);
  for (const std::size_t c : {0u, 1u, 3u}) {
    EXPECT_TRUE(r.channels[c].warnings.empty()) << c;
    EXPECT_LE(r.channels[c].max_err, 0.5L + r.channels[c].affine_err + 1e-12L);
    EXPECT_LT(r.channels[c].max_err, 0.6L);
  }
  const std::string report = normcore::format_report(r, spec, p);
  EXPECT_NE(report.find("b saturated"), std::string::npos) << report;
}

TEST(Fold, ScaleUnderflowIsWarned) {
  BnParams p = simple_layer(3);
  p.gamma = {1.0, 1e-9, 1.0};
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.scale[1], 0);
  EXPECT_TRUE(any_warning_has(r, "channel 1:", "underflow")) << r.warnings.size();
  EXPECT_FALSE(any_warning_has(r, "channel 0:", "underflow"));
  EXPECT_FALSE(r.channels[1].warnings.empty());
  // gamma exactly 0 is a legitimate (pruned) channel: s = 0 without an underflow warning.
  p.gamma[1] = 0;
  const FoldResult r0 = normcore::fold(p, spec);
  EXPECT_EQ(r0.scale[1], 0);
  EXPECT_TRUE(r0.channels[1].warnings.empty());
  EXPECT_FALSE(any_warning_has(r0, "underflow"));
}

TEST(Fold, ZeroVarianceWithEpsAndNegativeGamma) {
  BnParams p = simple_layer(2);
  p.var = {0.0, 0.0};
  p.eps = 1e-3;
  p.gamma = {0.01, -0.02};
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_GT(r.scale[0], 0);
  EXPECT_LT(r.scale[1], 0);
  EXPECT_LE(r.worst_err, 0.51L);
}

TEST(Fold, CenterAndScaleAbsent) {
  const BnParams p = normcore::parse_bn_json(
      R"({"mean": [0.5, -1.0], "var": [4.0, 0.25], "eps": 0,
          "input": {"scale": 0.5, "zero_point": 0}, "output": {"scale": 0.25, "zero_point": 1}})",
      "bn.json");
  EXPECT_EQ(p.gamma, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(p.beta, (std::vector<double>{0.0, 0.0}));
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  // a = (1/sqrt(var)) * 0.5 / 0.25, d = -mean/sqrt(var)/0.25 + 1.
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[0].a), 1.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[1].a), 4.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[0].d), 0.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[1].d), 9.0);
  // Exactly representable: no error at all.
  EXPECT_EQ(r.worst_err, 0.0L);
}

TEST(Fold, ActivationBounds) {
  BnParams p = simple_layer(1);
  const ArithSpec spec;
  p.out = {0.05, -3};
  p.activation = "none";
  EXPECT_EQ(normcore::activation_bounds(p, spec),
            std::make_pair(std::int64_t{-128}, std::int64_t{127}));
  p.activation = "relu";
  EXPECT_EQ(normcore::fold(p, spec).job.lo, -3);
  EXPECT_EQ(normcore::fold(p, spec).job.hi, 127);
  p.activation = "relu6";  // 6 / 0.05 = 120 -> hi = -3 + 120
  auto r = normcore::fold(p, spec);
  EXPECT_EQ(r.job.lo, -3);
  EXPECT_EQ(r.job.hi, 117);
  check_fold_consistency(p, spec, r);
  p.out = {0.02, -3};  // 6 / 0.02 = 300: beyond the int8 range
  EXPECT_EQ(normcore::fold(p, spec).job.hi, 127);
  p.out = {0.05, 0};
  p.activation = "clamp";
  p.act_min = -1.0;
  p.act_max = 4.0;
  r = normcore::fold(p, spec);
  EXPECT_EQ(r.job.lo, -20);
  EXPECT_EQ(r.job.hi, 80);
  check_fold_consistency(p, spec, r);
  p.act_min = -1.01;  // -20.2 -> ceil -20
  p.act_max = 4.01;   // 80.2 -> floor 80
  EXPECT_EQ(normcore::fold(p, spec).job.lo, -20);
  EXPECT_EQ(normcore::fold(p, spec).job.hi, 80);
  p.act_min = -0.99;  // -19.8 -> -19
  p.act_max = 3.99;   // 79.8 -> 79
  EXPECT_EQ(normcore::fold(p, spec).job.lo, -19);
  EXPECT_EQ(normcore::fold(p, spec).job.hi, 79);
  // uint8 output, relu with zero point 128.
  ArithSpec u = spec;
  u.y_signed = false;
  p.activation = "relu";
  p.out = {0.05, 128};
  EXPECT_EQ(normcore::fold(p, u).job.lo, 128);
  EXPECT_EQ(normcore::fold(p, u).job.hi, 255);
  // Empty interval: relu with the zero point above the int8 range.
  p.out = {0.05, 200};
  try {
    normcore::fold(p, spec);
    FAIL() << "expected an error";
  } catch (const normcore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("activation relu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test layer"), std::string::npos) << e.what();
  }
}

TEST(Fold, IntegerIo) {
  const BnParams p = normcore::parse_bn_json(
      R"({"quant": "integer", "gamma": [2, -1], "beta": [0, 5], "mean": [10, 0],
          "var": [1, 4], "eps": 0, "activation": "relu6"})",
      "bn.json");
  EXPECT_TRUE(p.integer_io);
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.job.lo, 0);
  EXPECT_EQ(r.job.hi, 6);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[0].a), 2.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[0].d), -20.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[1].a), -0.5);
  EXPECT_DOUBLE_EQ(static_cast<double>(r.channels[1].d), 5.0);
  EXPECT_EQ(r.channels[0].max_err, 0.0L);  // 2x - 20 is exact
  EXPECT_EQ(r.channels[1].max_err, 0.5L);  // -x/2 + 5 at odd x
  for (std::int64_t x = -128; x <= 127; ++x) {
    EXPECT_EQ(normcore::apply(x, r.scale[0], r.shift[0], r.job),
              std::clamp<std::int64_t>(2 * x - 20, 0, 6));
  }
}

TEST(Fold, RoundingPrecedenceAndForcedShift) {
  BnParams p = simple_layer(2);
  const ArithSpec spec;
  EXPECT_EQ(normcore::fold(p, spec).job.rounding, Rounding::half_even);
  p.rounding = Rounding::floor;
  EXPECT_EQ(normcore::fold(p, spec).job.rounding, Rounding::floor);
  FoldOptions opt;
  opt.rounding = Rounding::half_away;
  EXPECT_EQ(normcore::fold(p, spec, opt).job.rounding, Rounding::half_away);
  check_fold_consistency(p, spec, normcore::fold(p, spec));  // floor: offset folded into b

  opt.force_shift = 3;
  const FoldResult r = normcore::fold(p, spec, opt);
  EXPECT_EQ(r.job.shift, 3);
  EXPECT_EQ(r.shift_choice, "forced");
  check_fold_consistency(p, spec, r);
  opt.force_shift = 34;
  EXPECT_THROW(normcore::fold(p, spec, opt), normcore::Error);
  // Forcing the widest R saturates s and says so.
  opt.force_shift = spec.acc_bits();
  const FoldResult sat = normcore::fold(p, spec, opt);
  EXPECT_TRUE(any_warning_has(sat, "channel 0:", "s saturated"));
  EXPECT_TRUE(any_warning_has(sat, "channel 0:", "precision"));
}

TEST(Fold, LargeInputRangeReportsABound) {
  BnParams p = simple_layer(2048);
  ArithSpec spec;
  spec.xw = 16;  // 65536 inputs * 2048 channels > 2^26
  const FoldResult r = normcore::fold(p, spec);
  for (const auto& ch : r.channels) {
    EXPECT_FALSE(ch.exhaustive);
    EXPECT_EQ(ch.max_err, ch.affine_err + 0.5L);
  }
  const std::string report = normcore::format_report(r, spec, p);
  EXPECT_NE(report.find("bound)"), std::string::npos);
  EXPECT_NE(report.find("8 worst of 2048"), std::string::npos);
  // Fewer channels: exhaustive again, and exact.
  BnParams small = simple_layer(3);
  small.gamma = {0.7, -1.3, 2.2};
  const FoldResult e = normcore::fold(small, spec);
  check_fold_consistency(small, spec, e);
  for (const auto& ch : e.channels) EXPECT_TRUE(ch.exhaustive);
}

TEST(Fold, ReportFormat) {
  BnParams p = simple_layer(3);
  p.gamma = {1.0, 1e-9, 1.0};
  const ArithSpec spec;
  const FoldResult r = normcore::fold(p, spec);
  const std::string report = normcore::format_report(r, spec, p);
  EXPECT_NE(report.find("R = " + std::to_string(r.job.shift)), std::string::npos) << report;
  EXPECT_NE(report.find("half_even"), std::string::npos);
  EXPECT_NE(report.find("[lo, hi] = [-128, 127]"), std::string::npos);
  EXPECT_NE(report.find("scale underflow"), std::string::npos);
  const std::string last = "worst-case error: ";
  const auto at = report.rfind(last);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(report.find("(channel " + std::to_string(r.worst_channel) + ", exhaustive)", at),
            std::string::npos)
      << report;
  // Many channels: the 8 worst and a summary.
  const BnParams many = simple_layer(40);
  const std::string big = normcore::format_report(normcore::fold(many, spec), spec, many);
  EXPECT_NE(big.find("8 worst of 40"), std::string::npos) << big;
}

// ---------------------------------------------------------------------------------------------
// Choosing R: the smallest exact worst-case error over all channels

TEST(Fold, BnLayerExampleOutlierNoLongerRuinsTheOthers) {
  const BnParams p = bn_layer_example();
  const ArithSpec spec;  // the default core: int8 in/out, 16-bit s, 32-bit b
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.job.rounding, Rounding::half_away);
  for (const auto& ch : r.channels) EXPECT_TRUE(ch.exhaustive);
  // Channel 7's s limits the largest saturation-free R to 6, where 0, 1 and 5 exceed 1 LSB.
  EXPECT_EQ(r.fit_shift, 6);
  const FoldResult old = fold_at(p, spec, {}, r.fit_shift);
  EXPECT_GT(old.worst_err, 1.0L);
  EXPECT_GT(old.channels[0].max_err, 1.0L);
  EXPECT_GT(old.channels[1].max_err, 1.0L);
  EXPECT_GT(old.channels[5].max_err, 1.0L);
  // The search saturates channel 7's s instead: still a step from lo to hi, so still exact.
  EXPECT_LE(r.worst_err, 1.0L);
  EXPECT_LT(r.worst_err, old.worst_err);
  EXPECT_GT(r.job.shift, r.fit_shift);
  EXPECT_TRUE(r.channels[7].s_saturated);
  EXPECT_EQ(r.scale[7], spec.s_max());
  EXPECT_EQ(r.channels[7].max_err, 0.0L);
  for (std::int64_t x = spec.x_min(); x <= spec.x_max(); ++x) {
    const long double ideal = ideal_output(p, 7, static_cast<long double>(x));
    const auto expected = std::clamp(static_cast<std::int64_t>(std::round(ideal)), r.job.lo,
                                     r.job.hi);  // std::round: ties away, as half_away
    EXPECT_EQ(normcore::apply(x, r.scale[7], r.shift[7], r.job), expected) << "x = " << x;
  }
  // The saturation is reported, naming the channel and its (exact) max error.
  EXPECT_TRUE(any_warning_has(r, "channel 7: scale a = 263.693", "s saturated to 32767"));
  EXPECT_TRUE(any_warning_has(r, "channel 7:", "max error 0 LSB"));
  EXPECT_FALSE(any_warning_has(r, "precision"));
  expect_optimal_shift(p, spec, {}, r);
  const std::string report = normcore::format_report(r, spec, p);
  EXPECT_NE(report.find("largest R without saturation: 6"), std::string::npos) << report;
  EXPECT_NE(report.find("s saturated"), std::string::npos) << report;
}

TEST(Fold, ChosenShiftIsTheBruteForceOptimum) {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const Rounding modes[] = {Rounding::half_even, Rounding::half_away, Rounding::half_up,
                            Rounding::floor};
  std::vector<ArithSpec> specs(3);
  specs[1].sw = 10;
  specs[1].bw = 14;  // narrow b: large d saturates it
  specs[2].xw = 6;
  specs[2].x_signed = false;
  specs[2].sw = 8;
  for (int layer = 0; layer < 24; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    BnParams p = simple_layer(4);
    p.eps = 1e-5;
    for (std::size_t c = 0; c < 4; ++c) {
      p.gamma[c] = (u01(rng) < 0.2 ? -1 : 1) * (0.1 + 2 * u01(rng));
      p.beta[c] = -1 + 2 * u01(rng);
      p.mean[c] = -1 + 2 * u01(rng);
      p.var[c] = 0.2 + 2 * u01(rng);
    }
    // An outlier: var = 0 (a in the hundreds), sometimes a step through zero like bn_layer's.
    const auto o = static_cast<std::size_t>(layer) % 4;
    p.var[o] = 0;
    if (layer % 3 == 0) p.mean[o] = p.beta[o] = 0;
    p.activation = layer % 2 == 0 ? "relu" : "none";
    const ArithSpec spec = specs[static_cast<std::size_t>(layer) % specs.size()];
    FoldOptions opt;
    opt.rounding = modes[static_cast<std::size_t>(layer / 3) % 4];
    const FoldResult r = normcore::fold(p, spec, opt);
    check_fold_consistency(p, spec, r);
    EXPECT_NE(r.shift_choice.find("exact worst-case error over R = 0.."), std::string::npos)
        << r.shift_choice;
    expect_optimal_shift(p, spec, opt, r);
  }
}

TEST(Fold, FloorModeFoldsTheHalfLsbOffsetIntoB) {
  // A well-conditioned layer whose a and d are dyadic (exact at the chosen R): the only error
  // left is the output rounding, which floor mode now keeps within 0.5 LSB like the nearest modes.
  BnParams exact = normcore::parse_bn_json(
      R"({"quant": "integer", "eps": 0, "gamma": [0.75, -1.5, 0.3125, 2.0],
          "beta": [1.25, -3.0, 0.5, 0.375], "mean": [0.5, 2.0, -4.0, 0.0],
          "var": [4.0, 1.0, 0.25, 16.0]})",
      "dyadic.json");
  const ArithSpec spec;
  FoldOptions opt;
  opt.rounding = Rounding::floor;
  const FoldResult fl = normcore::fold(exact, spec, opt);
  check_fold_consistency(exact, spec, fl);
  ASSERT_GE(fl.job.shift, 1);
  for (const auto& ch : fl.channels) EXPECT_EQ(ch.affine_err, 0.0L);
  EXPECT_LE(fl.worst_err, 0.5L + 1e-9L);
  // Without the offset (b = round(d * 2^R), a plain floor) the same layer is off by almost 1.
  long double plain = 0;
  for (std::size_t c = 0; c < exact.channels(); ++c) {
    const auto& ch = fl.channels[c];
    const auto b0 = static_cast<std::int64_t>(std::round(std::ldexp(ch.d, fl.job.shift)));
    for (std::int64_t x = spec.x_min(); x <= spec.x_max(); ++x) {
      const long double ref =
          std::clamp(ideal_output(exact, c, static_cast<long double>(x)),
                     static_cast<long double>(fl.job.lo), static_cast<long double>(fl.job.hi));
      const auto y = normcore::apply(x, ch.s, b0, fl.job);
      plain = std::max(plain, std::fabs(static_cast<long double>(y) - ref));
    }
  }
  EXPECT_GE(plain, 0.9L);

  // Random well-conditioned layers: b = round((d + 0.5) * 2^R), error <= 0.5 + affine_err, and
  // floor((x*s + b0 + 2^(R-1)) / 2^R) is round-half-up of (x*s + b0) / 2^R (b0 = round(d * 2^R)):
  // the same error as half_up mode.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  BnParams p = simple_layer(16);
  for (std::size_t c = 0; c < 16; ++c) {
    p.gamma[c] = (c % 3 == 0 ? -1 : 1) * (0.5 + u01(rng));
    p.beta[c] = -0.5 + u01(rng);
    p.mean[c] = -0.5 + u01(rng);
    p.var[c] = 0.5 + 1.5 * u01(rng);
  }
  const FoldResult rf = normcore::fold(p, spec, opt);
  check_fold_consistency(p, spec, rf);
  ASSERT_GE(rf.job.shift, 1);
  for (const auto& ch : rf.channels) {
    EXPECT_EQ(static_cast<long double>(ch.b), std::round(std::ldexp(ch.d + 0.5L, rf.job.shift)));
    EXPECT_LT(ch.affine_err, 0.01L);
    EXPECT_LE(ch.max_err, 0.5L + ch.affine_err + 1e-12L);
  }
  opt.rounding = Rounding::half_up;
  const FoldResult up = normcore::fold(p, spec, opt);
  EXPECT_EQ(up.job.shift, rf.job.shift);
  EXPECT_NEAR(static_cast<double>(rf.worst_err), static_cast<double>(up.worst_err), 1e-12);
  const std::string report = normcore::format_report(rf, spec, p);
  EXPECT_NE(report.find("rounding = floor (half-LSB offset folded into b)"), std::string::npos)
      << report;
  // R = 0 rounds nothing (y = acc), so there is no offset there.
  FoldOptions at0;
  at0.rounding = Rounding::floor;
  at0.force_shift = 0;
  const FoldResult r0 = normcore::fold(p, spec, at0);
  check_fold_consistency(p, spec, r0);
  for (const auto& ch : r0.channels) EXPECT_EQ(static_cast<long double>(ch.b), std::round(ch.d));
}

TEST(Fold, ForcedShiftSkipsTheSearch) {
  const BnParams p = bn_layer_example();
  const ArithSpec spec;
  FoldOptions opt;
  opt.force_shift = 12;
  const FoldResult r = normcore::fold(p, spec, opt);
  check_fold_consistency(p, spec, r);
  EXPECT_EQ(r.job.shift, 12);
  EXPECT_EQ(r.fit_shift, 6);
  EXPECT_EQ(r.shift_choice, "forced");
  EXPECT_TRUE(any_warning_has(r, "channel 7:", "at forced R = 12"));
  EXPECT_TRUE(any_warning_has(r, "channel 7:", "precision"));  // slope 8 instead of 263.7
}

TEST(Fold, AboveTheSearchBudgetOnlyTheWindowIsCompared) {
  // 16-bit input, 128 channels: 65536 * 128 <= kExhaustiveBudget (exact errors), but times
  // AW + 1 = 34 candidate R's it exceeds kShiftSearchBudget.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  BnParams p = simple_layer(128);
  for (std::size_t c = 0; c < 128; ++c) {
    p.gamma[c] = 0.5 + u01(rng);
    p.beta[c] = -0.5 + u01(rng);
    p.mean[c] = -0.5 + u01(rng);
    p.var[c] = 0.5 + u01(rng);
  }
  p.var[5] = p.mean[5] = p.beta[5] = 0;  // the outlier, a step function through zero
  p.eps = 1e-5;
  p.in = {0.05 / 256, 0};
  ArithSpec spec;
  spec.xw = 16;
  ASSERT_GT(65536ull * 128 * static_cast<unsigned long long>(spec.acc_bits() + 1),
            normcore::kShiftSearchBudget);
  const FoldResult r = normcore::fold(p, spec);
  check_fold_consistency(p, spec, r);
  for (const auto& ch : r.channels) EXPECT_TRUE(ch.exhaustive);
  const int top = std::min(spec.acc_bits(), r.fit_shift + normcore::kShiftSearchWindow);
  EXPECT_NE(
      r.shift_choice.find("over R = " + std::to_string(r.fit_shift) + ".." + std::to_string(top)),
      std::string::npos)
      << r.shift_choice;
  EXPECT_GE(r.job.shift, r.fit_shift);
  EXPECT_LE(r.job.shift, top);
  // Optimal within the window (ties to the larger R).
  for (int shift = r.fit_shift; shift <= top; ++shift) {
    const FoldResult forced = fold_at(p, spec, {}, shift);
    EXPECT_LE(r.worst_err, forced.worst_err) << shift;
    if (shift > r.job.shift) {
      EXPECT_LT(r.worst_err, forced.worst_err) << shift;
    }
  }
  EXPECT_LT(r.worst_err, 1.0L);
}

TEST(Fold, LargeInputRangeMinimisesTheBound) {
  // Not exhaustive: R minimises the worst bound (affine_err + 0.5) over every R.
  BnParams p = simple_layer(2048);
  for (std::size_t c = 0; c < 2048; ++c) p.gamma[c] = 0.25 + static_cast<double>(c % 7) * 0.2;
  ArithSpec spec;
  spec.xw = 16;
  const FoldResult r = normcore::fold(p, spec);
  EXPECT_FALSE(r.channels[0].exhaustive);
  EXPECT_NE(r.shift_choice.find("error bound over R = 0.."), std::string::npos) << r.shift_choice;
  for (int shift = 0; shift <= spec.acc_bits(); ++shift) {
    const FoldResult forced = fold_at(p, spec, {}, shift);
    EXPECT_LE(r.worst_err, forced.worst_err) << shift;
    if (shift > r.job.shift) {
      EXPECT_LT(r.worst_err, forced.worst_err) << shift;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// bn.json errors: each names the file, the field and the channel

namespace {

std::string load_error(const TempDir& dir, const std::string& json) {
  const fs::path path = dir.write("bn.json", json);
  try {
    normcore::load_bn_json(path);
  } catch (const normcore::Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kQuant =
    R"("input": {"scale": 0.05, "zero_point": 0}, "output": {"scale": 0.1, "zero_point": -3})";

}  // namespace

TEST(BnJson, LoadsEverything) {
  const TempDir dir;
  const auto path =
      dir.write("bn.json", R"({"eps": 1e-3, "gamma": [1, -2], "beta": [0.5, 0], "mean": [0, 1],
      "var": [1, 2], "input": {"scale": 0.05, "zero_point": 2},
      "output": {"scale": 0.1, "zero_point": -3}, "activation": {"min": -1.0, "max": 4.0},
      "rounding": "half_away", "name": "bn1", "_note": "ignored"})");
  const BnParams p = normcore::load_bn_json(path);
  EXPECT_EQ(p.channels(), 2u);
  EXPECT_EQ(p.gamma, (std::vector<double>{1, -2}));
  EXPECT_EQ(p.eps, 1e-3);
  EXPECT_EQ(p.in.zero_point, 2);
  EXPECT_EQ(p.out.scale, 0.1);
  EXPECT_EQ(p.activation, "clamp");
  EXPECT_EQ(p.act_min, -1.0);
  EXPECT_EQ(p.act_max, 4.0);
  ASSERT_TRUE(p.rounding.has_value());
  EXPECT_EQ(*p.rounding, Rounding::half_away);
  EXPECT_EQ(p.source, path.string());
  EXPECT_FALSE(p.integer_io);
  // eps default.
  const BnParams d =
      normcore::parse_bn_json(R"({"mean": [0], "var": [1], "quant": "integer"})", "x.json");
  EXPECT_EQ(d.eps, 1e-5);
  EXPECT_EQ(d.activation, "none");
}

TEST(BnJson, ErrorsNameFileFieldAndChannel) {
  const TempDir dir;
  auto expect_error = [&](const std::string& json, const std::vector<std::string>& needles) {
    const std::string msg = load_error(dir, json);
    EXPECT_NE(msg.find("bn.json"), std::string::npos) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg << " / " << n;
  };
  const std::string arrays4 = R"("mean": [0, 0, 0, 0], "var": [1, 1, 1, 1])";
  expect_error("{" + arrays4 + R"(, "gamma": [1, 1, NaN, 1], )" + kQuant + "}",
               {"gamma[2] is NaN"});
  expect_error("{" + arrays4 + R"(, "beta": [0, Infinity, 0, 0], )" + kQuant + "}",
               {"beta[1] is +Inf"});
  expect_error("{" + arrays4 + R"(, "beta": [0, 0, -Infinity, 0], )" + kQuant + "}",
               {"beta[2] is -Inf"});
  expect_error(R"({"mean": [0, 0, 0, 0], "var": [1, 1, 1, -0.1], "eps": 0, )" + kQuant + "}",
               {"var[3] + eps = -0.1 must be > 0"});
  expect_error(R"({"mean": [0, 0, 0], "var": [1, 1, 1], "gamma": [1, 1, 1, 1], )" + kQuant + "}",
               {"mean has 3 channels but gamma has 4"});
  expect_error(R"({"mean": [0, 0, 0], "var": [1, 1], )" + kQuant + "}",
               {"mean has 3 channels but var has 2"});
  expect_error(R"({"mean": [], "var": [], )" + kQuant + "}", {"0 channels"});
  expect_error(R"({"eps": 1e-5, "mean": [1, 2,, 3]})",
               {"malformed JSON at byte 29 (line 1, column 29)"});
  expect_error(R"({"mean": [NaN, 2], "var": [1 1]})",
               {"malformed JSON at byte 30 (line 1, column 30)"});
  expect_error(R"({"gama": [1], "mean": [0], "var": [1], )" + kQuant + "}", {"unknown key 'gama'"});
  expect_error(R"({"mean": [0], )" + kQuant + "}", {"var is missing"});
  expect_error(R"({"mean": [0], "var": [1]})", {"no quantisation"});
  expect_error(R"({"mean": [0], "var": [1], "input": {"scale": 0.1}})",
               {"output quantisation is missing"});
  expect_error(R"({"mean": [0], "var": [1], "input": {"scale": 0.1, "zero_point": 0},
                   "output": {"scale": 0, "zero_point": 0}})",
               {"output scale = 0 must be > 0"});
  expect_error(R"({"mean": [0], "var": [1], "input": {"scale": NaN, "zero_point": 0},
                   "output": {"scale": 1, "zero_point": 0}})",
               {"input scale is NaN"});
  expect_error(R"({"mean": [0], "var": [1], "input": {"scale": 1, "zero_point": 0.5},
                   "output": {"scale": 1, "zero_point": 0}})",
               {"input.zero_point must be an integer"});
  expect_error(R"({"mean": [0, "x"], "var": [1, 1], )" + kQuant + "}",
               {"mean[1] must be a number"});
  expect_error(R"({"mean": [0], "var": [1], "activation": "gelu", )" + kQuant + "}",
               {"activation 'gelu'"});
  expect_error(R"({"mean": [0], "var": [1], "activation": {"min": 2, "max": 1}, )" + kQuant + "}",
               {"activation min = 2 is above max = 1"});
  expect_error(R"({"mean": [0], "var": [1], "rounding": "nearest", )" + kQuant + "}",
               {"rounding", "nearest"});
  expect_error(R"({"mean": [0], "var": [1], "quant": "integer", )" + kQuant + "}", {"conflicts"});
  expect_error(R"({"mean": [0], "var": [1], "eps": NaN, "quant": "integer"})", {"eps is NaN"});
  expect_error(R"([1, 2])", {"top level must be a JSON object"});
  // Byte offsets count the original text (NaN literals are rewritten internally), lines too.
  expect_error("{\"mean\": [NaN],\n \"var\": [Infinity],\n \"eps\": x}",
               {"byte 45 (line 3, column 9)"});
  // NaN inside a string is just a string.
  EXPECT_EQ(load_error(dir, R"({"mean": [0], "var": [1], "quant": "integer",
                                "comment": "NaN Infinity"})"),
            "(no error)");
}

TEST(BnJson, ValidateNamesArrayAndIndex) {
  BnParams p = simple_layer(3);
  p.mean[1] = std::nan("");
  try {
    normcore::validate(p);
    FAIL();
  } catch (const normcore::Error& e) {
    EXPECT_STREQ(e.what(), "test layer: mean[1] is NaN");
  }
  p = simple_layer(3);
  p.var[2] = -2;
  p.eps = 1;
  EXPECT_THROW(normcore::validate(p), normcore::Error);
  p.eps = 2.5;
  EXPECT_NO_THROW(normcore::validate(p));
  p = simple_layer(3);
  p.source.clear();
  p.gamma.pop_back();
  try {
    normcore::validate(p);
    FAIL();
  } catch (const normcore::Error& e) {
    EXPECT_STREQ(e.what(), "bn params: mean has 3 channels but gamma has 2");
  }
  p = simple_layer(2);
  p.out.scale = -0.5;
  EXPECT_THROW(normcore::validate(p), normcore::Error);
  p.integer_io = true;  // scales are ignored in integer mode
  EXPECT_NO_THROW(normcore::validate(p));
  // fold validates too.
  p = simple_layer(2);
  p.gamma[1] = std::numeric_limits<double>::infinity();
  try {
    normcore::fold(p, ArithSpec{});
    FAIL();
  } catch (const normcore::Error& e) {
    EXPECT_STREQ(e.what(), "test layer: gamma[1] is +Inf");
  }
  // A bad datapath is an Error too.
  ArithSpec bad;
  bad.sw = 40;
  EXPECT_THROW(normcore::fold(simple_layer(1), bad), normcore::Error);
}
