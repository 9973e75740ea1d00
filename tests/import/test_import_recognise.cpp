// Model import (issue 7): the batch-norm recogniser (Recognise*), parameter bundles (Bundle*)
// and import plans (Plan*). Graphs are built by hand here; the front-end fixtures
// (import_fixtures.hpp) give the ONNX / HLO end-to-end and agreement tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "import_fixtures.hpp"
#include "normcore/driver.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/onnx.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/manifest.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"
#include "run_plan.hpp"
#include "test_errors.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using normcore::BnParams;
using normcore::Error;
using normcore::import::Attr;
using normcore::import::BnMatch;
using normcore::import::Bundle;
using normcore::import::Constant;
using normcore::import::Graph;
using normcore::import::Node;
using normcore::import::recognise;
using normcore::import::Recognition;
using normcore::import::Value;
using namespace normcore::test;
using Shape = std::vector<std::int64_t>;

using normcore::test::error_of;

// ---------------------------------------------------------------------------------------------
// Hand-built graphs

Attr ga_f(double v) {
  Attr a;
  a.f = v;
  return a;
}
Attr ga_i(std::int64_t v) {
  Attr a;
  a.i = v;
  return a;
}
Attr ga_ints(std::vector<std::int64_t> v) {
  Attr a;
  a.ints = std::move(v);
  return a;
}

struct GraphBuilder {
  Graph g;
  GraphBuilder() {
    g.source = "test";
    g.format = "test";
  }
  int value(const std::string& name, const Shape& shape, const std::string& origin) {
    Value v;
    v.name = name;
    v.shape = shape;
    v.shape_known = true;
    v.dtype = "f32";
    v.origin = origin;
    return g.add_value(std::move(v));
  }
  // A data input (ONNX graph input / HLO parameter holding activations).
  int input(const std::string& name, const Shape& shape) {
    const int v = value(name, shape, "graph input '" + name + "'");
    g.inputs.push_back(v);
    return v;
  }
  // An HLO-style parameter without data.
  int param(const std::string& name, const Shape& shape, int number) {
    const int v = value(name, shape, "parameter(" + std::to_string(number) + ") '" + name + "'");
    g.inputs.push_back(v);
    return v;
  }
  int cst(const std::string& name, const Shape& shape, const std::vector<double>& data) {
    const int v = value(name, shape, "initializer '" + name + "'");
    g.values[static_cast<std::size_t>(v)].constant = Constant{shape, data};
    return v;
  }
  int scalar(const std::string& name, double x) { return cst(name, {}, {x}); }
  int op(const std::string& op, const std::vector<int>& ins, const Shape& shape,
         std::map<std::string, Attr> attrs = {}, const std::string& name = "") {
    Node n;
    n.op = op;
    n.name = name.empty() ? op + std::to_string(g.nodes.size()) : name;
    n.inputs = ins;
    n.attrs = std::move(attrs);
    n.location = "node '" + n.name + "' (" + op + ")";
    Value v;
    v.name = n.name + "_out";
    v.shape = shape;
    v.shape_known = !shape.empty();
    v.producer = static_cast<int>(g.nodes.size());
    v.origin = "output 0 of " + n.location;
    const int out = g.add_value(std::move(v));
    n.outputs.push_back(out);
    g.nodes.push_back(std::move(n));
    return out;
  }
  void output(int v) { g.outputs.push_back(v); }
};

std::vector<double> ones(std::size_t n) {
  return std::vector<double>(n, 1.0);
}

constexpr double kEps = 1e-3;
const Shape kX{2, 4, 3, 3};  // NCHW, C = 4
const Shape kC11{4, 1, 1};

// The per-channel affine map of a BN: y = a * x + d.
std::pair<std::vector<double>, std::vector<double>> affine(const BnParams& p) {
  std::vector<double> a, d;
  for (std::size_t c = 0; c < p.channels(); ++c) {
    a.push_back(p.gamma[c] / std::sqrt(p.var[c] + p.eps));
    d.push_back(p.beta[c] - p.mean[c] * a.back());
  }
  return {a, d};
}

void expect_vec_near(const std::vector<double>& got, const std::vector<double>& want,
                     const char* what, double rel = 1e-6) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i])))
        << what << "[" << i << "]";
  }
}

// The recovered parameters equal `want` (gamma, beta, mean, var, eps, activation).
void expect_params(const BnMatch& m, const BnParams& want, double rel = 1e-6) {
  ASSERT_TRUE(m.complete) << m.name;
  expect_vec_near(m.params.gamma, want.gamma, "gamma", rel);
  expect_vec_near(m.params.beta, want.beta, "beta", rel);
  expect_vec_near(m.params.mean, want.mean, "mean", rel);
  expect_vec_near(m.params.var, want.var, "var", rel);
  EXPECT_NEAR(m.params.eps, want.eps, rel * std::max(1e-3, want.eps));
  EXPECT_NEAR(m.eps, want.eps, rel * std::max(1e-3, want.eps));
  EXPECT_EQ(m.activation, want.activation);
  EXPECT_EQ(m.params.activation, want.activation);
  if (want.activation == "clamp") {
    EXPECT_EQ(m.act_min, want.act_min);
    EXPECT_EQ(m.act_max, want.act_max);
  }
}

// Only the affine map is determined (precomputed scale and shift).
void expect_same_affine(const BnMatch& m, const BnParams& want) {
  ASSERT_TRUE(m.complete);
  const auto [a1, d1] = affine(m.params);
  const auto [a2, d2] = affine(want);
  expect_vec_near(a1, a2, "scale a");
  expect_vec_near(d1, d2, "shift d");
}

struct Case {
  std::string name;
  Graph g;
  BnParams want;
  std::string pattern;
  int axis = 1;
  bool exact_params = true;  // gamma/beta/mean/var recoverable (not only the affine map)
  int input = -1;            // expected x (value index)
};

// Per-channel constant in [C,1,1] (NCHW) shape.
struct Consts {
  int mean, var, gamma, beta, eps;
};
Consts add_consts(GraphBuilder& b, const BnParams& p, const Shape& shape = kC11,
                  const std::string& prefix = "bn.") {
  return Consts{b.cst(prefix + "running_mean", shape, p.mean),
                b.cst(prefix + "running_var", shape, p.var),
                b.cst(prefix + "weight", shape, p.gamma), b.cst(prefix + "bias", shape, p.beta),
                b.scalar(prefix + "eps", p.eps)};
}

std::vector<Case> decomposed_cases() {
  std::vector<Case> cases;
  const BnParams p = sample_bn(4, kEps);
  auto start = [&](const std::string& name) {
    Case c;
    c.name = name;
    c.want = p;
    c.pattern = "decomposed";
    return c;
  };
  {  // (x - mean) * rsqrt(var + eps) * gamma + beta
    Case c = start("rsqrt_gamma_after");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int xc = b.op("sub", {x, k.mean}, kX);
    const int ve = b.op("add", {k.var, k.eps}, kC11);
    const int r = b.op("rsqrt", {ve}, kC11);
    const int n = b.op("mul", {xc, r}, kX);
    const int s = b.op("mul", {n, k.gamma}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // 1 / sqrt as reciprocal
    Case c = start("reciprocal_sqrt");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int xc = b.op("sub", {x, k.mean}, kX);
    const int r =
        b.op("reciprocal", {b.op("sqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kC11);
    const int s = b.op("mul", {b.op("mul", {xc, r}, kX), k.gamma}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // 1 / sqrt as div(1, sqrt)
    Case c = start("div_one_by_sqrt");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int one = b.scalar("one", 1.0);
    const int xc = b.op("sub", {x, k.mean}, kX);
    const int r = b.op("div", {one, b.op("sqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kC11);
    const int s = b.op("mul", {k.gamma, b.op("mul", {r, xc}, kX)}, kX);  // operands swapped
    b.output(b.op("add", {k.beta, s}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // x - mean divided by sqrt (ONNX style), gamma after
    Case c = start("div_by_sqrt");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int xc = b.op("sub", {x, k.mean}, kX);
    const int sd = b.op("sqrt", {b.op("add", {k.eps, k.var}, kC11)}, kC11);  // eps first
    const int s = b.op("mul", {b.op("div", {xc, sd}, kX), k.gamma}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // pow(var + eps, -0.5)
    Case c = start("pow_minus_half");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int e = b.scalar("exponent", -0.5);
    const int xc = b.op("sub", {x, k.mean}, kX);
    const int r = b.op("pow", {b.op("add", {k.var, k.eps}, kC11), e}, kC11);
    const int s = b.op("mul", {b.op("mul", {xc, r}, kX), k.gamma}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // gamma folded before the rsqrt: k = gamma * rsqrt(var + eps); (x - mean) * k + beta
    Case c = start("gamma_folded_before");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int kk =
        b.op("mul", {k.gamma, b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kC11);
    const int s = b.op("mul", {b.op("sub", {x, k.mean}, kX), kk}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // gamma / sqrt(var + eps) as one parameter expression
    Case c = start("gamma_div_sqrt");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int kk =
        b.op("div", {k.gamma, b.op("sqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kC11);
    const int s = b.op("mul", {b.op("sub", {x, k.mean}, kX), kk}, kX);
    b.output(b.op("add", {s, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // mean folded into the shift: x * s + (beta - mean * s), s computed in the graph
    Case c = start("folded_shift");
    c.pattern = "folded-shift";
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int s =
        b.op("mul", {b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11), k.gamma}, kC11);
    const int t = b.op("sub", {k.beta, b.op("mul", {k.mean, s}, kC11)}, kC11);
    b.output(b.op("add", {b.op("mul", {x, s}, kX), t}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // mean subtracted after scaling on the data path: (x * s - mean * s) + beta
    Case c = start("mean_after_scaling");
    c.pattern = "folded-shift";
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p);
    const int s =
        b.op("mul", {k.gamma, b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kC11);
    const int ms = b.op("mul", {k.mean, s}, kC11);
    const int y0 = b.op("sub", {b.op("mul", {x, s}, kX), ms}, kX);
    b.output(b.op("add", {y0, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // fully precomputed constants s and t
    Case c = start("precomputed_s_t");
    c.pattern = "scale-shift";
    c.exact_params = false;
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto [a, d] = affine(p);
    const int s = b.cst("s", kC11, a);
    const int t = b.cst("t", kC11, d);
    b.output(b.op("add", {b.op("mul", {x, s}, kX), t}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // no gamma
    Case c = start("no_gamma");
    c.want.gamma = ones(4);
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, c.want);
    const int n = b.op(
        "mul",
        {b.op("sub", {x, k.mean}, kX), b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)},
        kX);
    b.output(b.op("add", {n, k.beta}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // no beta
    Case c = start("no_beta");
    c.want.beta = std::vector<double>(4, 0.0);
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, c.want);
    const int n = b.op(
        "mul",
        {b.op("sub", {x, k.mean}, kX), b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)},
        kX);
    b.output(b.op("mul", {n, k.gamma}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // HLO style: [C] vectors, reshape and explicit broadcasts (dims {1}), eps broadcast {}
    Case c = start("hlo_broadcasts");
    GraphBuilder b;
    const Shape v{4};
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p, v);
    const int mr = b.op("reshape", {k.mean}, {1, 4, 1, 1});
    const int mb = b.op("broadcast", {mr}, kX, {{"dims", ga_ints({0, 1, 2, 3})}});
    const int xc = b.op("sub", {x, mb}, kX);
    const int eb = b.op("broadcast", {k.eps}, v, {{"dims", ga_ints({})}});
    const int r = b.op("rsqrt", {b.op("add", {k.var, eb}, v)}, v);
    const int kk = b.op("mul", {r, k.gamma}, v);
    const int y0 = b.op("mul", {xc, b.op("broadcast", {kk}, kX, {{"dims", ga_ints({1})}})}, kX);
    b.output(b.op("add", {y0, b.op("broadcast", {k.beta}, kX, {{"dims", ga_ints({1})}})}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // NHWC with [C] vectors (trailing-axis broadcasting)
    Case c = start("nhwc_vectors");
    c.axis = 3;
    GraphBuilder b;
    const Shape xs{2, 3, 3, 4};
    const int x = b.input("x", xs);
    const auto k = add_consts(b, p, {4});
    const int n = b.op(
        "mul",
        {b.op("sub", {x, k.mean}, xs), b.op("rsqrt", {b.op("add", {k.var, k.eps}, {4})}, {4})}, xs);
    b.output(b.op("add", {b.op("mul", {n, k.gamma}, xs), k.beta}, xs));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // eps added before a reshape of the variance; mean added as a negated vector
    Case c = start("eps_before_reshape_negated_mean");
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p, {4});
    const int ve = b.op("reshape", {b.op("add", {k.var, k.eps}, {4})}, {1, 4, 1, 1});
    const int nm = b.op("reshape", {b.op("neg", {k.mean}, {4})}, {1, 4, 1, 1});
    const int g4 = b.op("reshape", {k.gamma}, {1, 4, 1, 1});
    const int b4 = b.op("reshape", {k.beta}, {1, 4, 1, 1});
    const int n = b.op("mul", {b.op("add", {x, nm}, kX), b.op("rsqrt", {ve}, {1, 4, 1, 1})}, kX);
    b.output(b.op("add", {b.op("mul", {n, g4}, kX), b4}, kX));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // explicit BN node, NCHW
    Case c = start("explicit_nchw");
    c.pattern = "batchnorm";
    GraphBuilder b;
    const int x = b.input("x", kX);
    const auto k = add_consts(b, p, {4});
    b.output(b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, kX,
                  {{"epsilon", ga_f(kEps)}, {"axis", ga_i(1)}}, "bn1"));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  {  // explicit BN node, NHWC (feature index 3)
    Case c = start("explicit_nhwc");
    c.pattern = "batchnorm";
    c.axis = 3;
    GraphBuilder b;
    const Shape xs{1, 5, 5, 4};
    const int x = b.input("x", xs);
    const auto k = add_consts(b, p, {4});
    b.output(b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, xs,
                  {{"epsilon", ga_f(kEps)}, {"axis", ga_i(3)}}, "bn1"));
    c.g = b.g;
    c.input = x;
    cases.push_back(c);
  }
  return cases;
}

class RecogniseVariants : public ::testing::TestWithParam<std::string> {};

TEST_P(RecogniseVariants, RecoversParameters) {
  for (const auto& c : decomposed_cases()) {
    if (c.name != GetParam()) continue;
    const Recognition r = recognise(c.g);
    ASSERT_EQ(r.layers.size(), 1U) << c.name;
    EXPECT_TRUE(r.near_misses.empty()) << r.near_misses[0].reason;
    const BnMatch& m = r.layers[0];
    EXPECT_EQ(m.pattern, c.pattern);
    EXPECT_EQ(m.channels, 4);
    EXPECT_EQ(m.channel_axis, c.axis);
    EXPECT_EQ(m.layout, c.axis == 3 ? normcore::Layout::nhwc : normcore::Layout::nchw);
    EXPECT_EQ(m.input, c.input);
    EXPECT_EQ(m.output, c.g.outputs.at(0));
    EXPECT_TRUE(m.warnings.empty()) << m.warnings[0];
    if (c.exact_params) {
      expect_params(m, c.want);
    } else {
      expect_same_affine(m, c.want);
      EXPECT_EQ(m.params.mean, std::vector<double>(4, 0.0));
      EXPECT_EQ(m.params.eps, 0.0);
    }
    return;
  }
  FAIL() << "no case " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, RecogniseVariants,
                         ::testing::Values("rsqrt_gamma_after", "reciprocal_sqrt",
                                           "div_one_by_sqrt", "div_by_sqrt", "pow_minus_half",
                                           "gamma_folded_before", "gamma_div_sqrt", "folded_shift",
                                           "mean_after_scaling", "precomputed_s_t", "no_gamma",
                                           "no_beta", "hlo_broadcasts", "nhwc_vectors",
                                           "eps_before_reshape_negated_mean", "explicit_nchw",
                                           "explicit_nhwc"));

TEST(RecogniseRoles, LeavesByRoleAndLayerName) {
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k = add_consts(b, p, kC11, "block1.bn2.");
  const int n = b.op(
      "mul",
      {b.op("sub", {x, k.mean}, kX), b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kX);
  b.output(b.op("add", {b.op("mul", {n, k.gamma}, kX), k.beta}, kX));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_EQ(m.gamma_value, k.gamma);
  EXPECT_EQ(m.beta_value, k.beta);
  EXPECT_EQ(m.mean_value, k.mean);
  EXPECT_EQ(m.var_value, k.var);
  EXPECT_EQ(m.name, "block1.bn2");
  EXPECT_EQ(m.ops, "sub,mul,mul,add");
  EXPECT_EQ(m.location, "node 'sub0' (sub)");
  EXPECT_EQ(m.nodes.size(), 6U);  // sub mul mul add + add(eps) rsqrt
}

// ---------------------------------------------------------------------------------------------
// Activations

struct ActCase {
  std::string name;
  std::string activation;
  double lo = 0, hi = 0;
};

class RecogniseActivation : public ::testing::TestWithParam<ActCase> {};

TEST_P(RecogniseActivation, FusedIntoTheClamp) {
  const auto& ac = GetParam();
  BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k = add_consts(b, p, {4});
  const int y = b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, kX,
                     {{"epsilon", ga_f(kEps)}, {"axis", ga_i(1)}}, "bn1");
  int out = -1;
  if (ac.name == "relu") {
    out = b.op("relu", {y}, kX);
  } else if (ac.name == "max0") {
    out =
        b.op("max", {y, b.op("broadcast", {b.scalar("zero", 0)}, kX, {{"dims", ga_ints({})}})}, kX);
  } else if (ac.name == "max0_min6") {
    out = b.op("min", {b.op("max", {b.scalar("zero", 0), y}, kX), b.scalar("six", 6)}, kX);
  } else if (ac.name == "relu_min6") {
    out = b.op("min", {b.op("relu", {y}, kX), b.scalar("six", 6)}, kX);
  } else if (ac.name == "clamp06") {
    out = b.op("clamp", {y, b.scalar("lo", 0), b.scalar("hi", 6)}, kX);
  } else if (ac.name == "clamp_m1_4") {
    out = b.op("clamp", {y, b.scalar("lo", -1), b.scalar("hi", 4)}, kX);
  } else if (ac.name == "clamp_lo_only") {
    out = b.op("clamp", {y, b.scalar("lo", -2), -1}, kX);
  } else if (ac.name == "max_m2") {
    out = b.op("max", {y, b.scalar("m2", -2)}, kX);
  }
  b.output(out);
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_EQ(m.output, out);
  EXPECT_EQ(m.activation, ac.activation);
  if (ac.activation == "clamp") {
    EXPECT_EQ(m.act_min, ac.lo);
    EXPECT_EQ(m.act_max, ac.hi);
  }
  p.activation = ac.activation;
  p.act_min = ac.lo;
  p.act_max = ac.hi;
  expect_params(m, p);
}

const double kHuge = std::numeric_limits<double>::max();
INSTANTIATE_TEST_SUITE_P(All, RecogniseActivation,
                         ::testing::Values(ActCase{"relu", "relu"}, ActCase{"max0", "relu"},
                                           ActCase{"max0_min6", "relu6"},
                                           ActCase{"relu_min6", "relu6"},
                                           ActCase{"clamp06", "clamp", 0, 6},
                                           ActCase{"clamp_m1_4", "clamp", -1, 4},
                                           ActCase{"clamp_lo_only", "clamp", -2, kHuge},
                                           ActCase{"max_m2", "clamp", -2, kHuge}),
                         [](const auto& p) { return p.param.name; });

TEST(RecogniseActivation, PerChannelBoundsAreNotFused) {
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k = add_consts(b, p, {4});
  const int y = b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, kX, {{"epsilon", ga_f(kEps)}});
  b.output(b.op("max", {y, b.cst("lo", kC11, {0, 1, 2, 3})}, kX));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  EXPECT_EQ(r.layers[0].output, y);
  EXPECT_EQ(r.layers[0].activation, "none");
}

// ---------------------------------------------------------------------------------------------
// Context: conv, several BNs, gating

TEST(RecogniseContext, ConvBnReluLeavesTheConvAlone) {
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 3, 3});
  const int w = b.cst("conv.weight", {4, 3, 1, 1}, std::vector<double>(12, 0.5));
  const int cb = b.cst("conv.bias", {4}, {1, 2, 3, 4});
  const int conv = b.op("conv", {x, w, cb}, {1, 4, 3, 3}, {}, "conv1");
  const auto k = add_consts(b, p, {4}, "bn1.");
  const int y = b.op("bn", {conv, k.gamma, k.beta, k.mean, k.var}, {1, 4, 3, 3},
                     {{"epsilon", ga_f(kEps)}, {"axis", ga_i(1)}}, "bn1");
  b.output(b.op("relu", {y}, {1, 4, 3, 3}, {}, "relu1"));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_EQ(m.input, conv);
  EXPECT_EQ(m.name, "bn1");
  EXPECT_EQ(m.activation, "relu");
  EXPECT_EQ(m.ops, "bn,relu");
  for (int n : m.nodes) EXPECT_NE(b.g.nodes[static_cast<std::size_t>(n)].op, "conv");
}

TEST(RecogniseContext, ConvBiasAddStaysWithTheConv) {
  // HLO style: convolution, add(broadcast(bias)), then the decomposed BN: the bias add is the
  // conv's, the BN's x is the biased conv output (as with ONNX Conv(x, W, B)).
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 3, 3});
  const int w = b.param("w", {4, 3, 1, 1}, 1);
  const int conv = b.op("conv", {x, w}, kX, {}, "convolution.3");
  const int cb = b.cst("conv_bias", {4}, {1, 2, 3, 4});
  const int biased = b.op("add", {conv, b.op("broadcast", {cb}, kX, {{"dims", ga_ints({1})}})}, kX);
  const auto k = add_consts(b, p);
  const int n = b.op(
      "mul",
      {b.op("sub", {biased, k.mean}, kX), b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)},
      kX);
  b.output(b.op("add", {b.op("mul", {n, k.gamma}, kX), k.beta}, kX));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  EXPECT_EQ(r.layers[0].input, biased);
  expect_params(r.layers[0], p);
}

TEST(RecogniseContext, SeveralBatchNormsInOneModel) {
  const BnParams p1 = sample_bn(4, kEps), p2 = sample_bn(8, 1e-5);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k1 = add_consts(b, p1, {4}, "layer1.bn.");
  const int y1 =
      b.op("bn", {x, k1.gamma, k1.beta, k1.mean, k1.var}, kX, {{"epsilon", ga_f(kEps)}}, "bn_a");
  const int r1 = b.op("relu", {y1}, kX);
  const Shape x2{2, 8, 3, 3};
  const int conv = b.op("conv", {r1, b.cst("w", {8, 4, 1, 1}, std::vector<double>(32, 0.25))}, x2);
  const Shape c8{8, 1, 1};
  const auto k2 = add_consts(b, p2, c8, "layer2.bn.");
  const int n = b.op(
      "mul",
      {b.op("sub", {conv, k2.mean}, x2), b.op("rsqrt", {b.op("add", {k2.var, k2.eps}, c8)}, c8)},
      x2);
  const int y2 = b.op("add", {b.op("mul", {n, k2.gamma}, x2), k2.beta}, x2);
  // A residual-style add of two data tensors after the second BN does not join the chain.
  b.output(b.op("add", {y2, conv}, x2));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 2U);
  EXPECT_TRUE(r.near_misses.empty());
  EXPECT_EQ(r.layers[0].name, "layer1.bn");
  EXPECT_EQ(r.layers[0].activation, "relu");
  EXPECT_EQ(r.layers[0].pattern, "batchnorm");
  expect_params(r.layers[0], [&] {
    auto q = p1;
    q.activation = "relu";
    return q;
  }());
  EXPECT_EQ(r.layers[1].name, "layer2.bn");
  EXPECT_EQ(r.layers[1].channels, 8);
  EXPECT_EQ(r.layers[1].input, conv);
  EXPECT_EQ(r.layers[1].output, y2);
  expect_params(r.layers[1], p2);
}

TEST(RecogniseContext, GatingMultiplyAfterACompleteBnEndsTheChain) {
  // SE-style: bn(x) * sigmoid(...): the multiply by a data tensor is a consumer of the BN.
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const int gate = b.input("gate", kX);
  const auto k = add_consts(b, p);
  const int n = b.op(
      "mul",
      {b.op("sub", {x, k.mean}, kX), b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kX);
  const int y = b.op("add", {b.op("mul", {n, k.gamma}, kX), k.beta}, kX);
  b.output(b.op("mul", {y, gate}, kX));
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 1U);
  EXPECT_TRUE(r.near_misses.empty());
  EXPECT_EQ(r.layers[0].output, y);
  expect_params(r.layers[0], p);
}

TEST(RecogniseContext, PlainScaleOrBiasIsNotABatchNorm) {
  GraphBuilder b;
  const int x = b.input("x", kX);
  const int s = b.op("mul", {x, b.cst("s", kC11, {1, 2, 3, 4})}, kX);
  const int t = b.op("add", {b.op("relu", {s}, kX), b.cst("t", kC11, {1, 2, 3, 4})}, kX);
  b.output(b.op("mul", {t, b.scalar("two", 2)}, kX));
  const auto r = recognise(b.g);
  EXPECT_TRUE(r.layers.empty());
  EXPECT_TRUE(r.near_misses.empty());
}

TEST(RecogniseContext, ParametersWithoutDataAreIdentifiedByRole) {
  GraphBuilder b;
  const int x = b.param("x", {2, 3, 3, 4}, 0);
  const int mean = b.param("m", {4}, 1), var = b.param("v", {4}, 2);
  const int scale = b.param("s", {4}, 3), bias = b.param("o", {4}, 4);
  const Shape xs{2, 3, 3, 4};
  const int bc = b.op("broadcast", {mean}, xs, {{"dims", ga_ints({3})}});
  const int r = b.op(
      "rsqrt",
      {b.op("add", {var, b.op("broadcast", {b.scalar("eps", 1e-5)}, {4}, {{"dims", ga_ints({})}})},
            {4})},
      {4});
  const int kk = b.op("broadcast", {b.op("mul", {r, scale}, {4})}, xs, {{"dims", ga_ints({3})}});
  const int y = b.op("mul", {b.op("sub", {x, bc}, xs), kk}, xs);
  b.output(b.op("add", {y, b.op("broadcast", {bias}, xs, {{"dims", ga_ints({3})}})}, xs));
  const auto rec = recognise(b.g);
  ASSERT_EQ(rec.layers.size(), 1U);
  const auto& m = rec.layers[0];
  EXPECT_FALSE(m.complete);
  EXPECT_EQ(m.mean_value, mean);
  EXPECT_EQ(m.var_value, var);
  EXPECT_EQ(m.gamma_value, scale);
  EXPECT_EQ(m.beta_value, bias);
  EXPECT_EQ(m.channel_axis, 3);
  EXPECT_EQ(m.eps, 1e-5);
  EXPECT_EQ(m.missing.size(), 4U);
}

// ---------------------------------------------------------------------------------------------
// Near misses

Recognition near_miss_graph(const std::string& kind) {
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  auto k = add_consts(b, p);
  if (kind == "mean_1chw") {
    k.mean = b.cst("mean_map", {1, 4, 3, 3}, std::vector<double>(36, 0.5));
  } else if (kind == "mean_full") {
    k.mean = b.cst("mean_full", kX, std::vector<double>(72, 0.5));
  } else if (kind == "length") {
    k.gamma = b.cst("gamma5", {5, 1, 1}, {1, 2, 3, 4, 5});
  }
  if (kind == "training") {
    b.output(b.op("bn",
                  {x, b.cst("g", {4}, p.gamma), b.cst("b", {4}, p.beta), b.cst("m", {4}, p.mean),
                   b.cst("v", {4}, p.var)},
                  kX, {{"epsilon", ga_f(kEps)}, {"training_mode", ga_i(1)}}, "bn_train"));
    return recognise(b.g);
  }
  if (kind == "hlo_training") {
    b.output(b.op("other:batch-norm-training", {x, k.gamma, k.beta}, kX, {}, "bnt"));
    return recognise(b.g);
  }
  const int xc = b.op("sub", {x, k.mean}, kX, {}, "sub_mean");
  const int n = b.op("mul", {xc, b.op("rsqrt", {b.op("add", {k.var, k.eps}, kC11)}, kC11)}, kX);
  int s = -1;
  if (kind == "data_mul") {
    const int z = b.input("z", kX);
    s = b.op("mul", {n, z}, kX, {}, "mul_z");
  } else {
    s = b.op("mul", {n, k.gamma}, kX, {}, "mul_gamma");
  }
  b.output(b.op("add", {s, k.beta}, kX));
  return recognise(b.g);
}

struct NearCase {
  std::string kind;
  std::vector<std::string> words;  // must appear in the reason
  std::string location;
};

class RecogniseNearMiss : public ::testing::TestWithParam<NearCase> {};

TEST_P(RecogniseNearMiss, ReportedWithReasonNotFolded) {
  const auto& nc = GetParam();
  const auto r = near_miss_graph(nc.kind);
  EXPECT_TRUE(r.layers.empty()) << r.layers[0].name;
  ASSERT_EQ(r.near_misses.size(), 1U);
  const auto& nm = r.near_misses[0];
  for (const auto& w : nc.words)
    EXPECT_NE(nm.reason.find(w), std::string::npos) << nm.reason << " lacks " << w;
  EXPECT_EQ(nm.location, nc.location);
}

INSTANTIATE_TEST_SUITE_P(
    All, RecogniseNearMiss,
    ::testing::Values(NearCase{"mean_1chw",
                               {"mean 'mean_map'", "not per-channel", "[1,4,3,3]", "axes 1, 2, 3"},
                               "node 'sub_mean' (sub)"},
                      NearCase{"mean_full",
                               {"mean 'mean_full'", "not per-channel", "[2,4,3,3]"},
                               "node 'sub_mean' (sub)"},
                      NearCase{
                          "data_mul", {"'z'", "not a constant", "mul_z"}, "node 'mul_z' (mul)"},
                      NearCase{"length",
                               {"'gamma5'", "5 elements", "channel dimension (axis 1)", "has 4"},
                               "node 'mul_gamma' (mul)"},
                      NearCase{"training", {"training mode"}, "node 'bn_train' (bn)"},
                      NearCase{"hlo_training",
                               {"batch-norm-training", "training"},
                               "node 'bnt' (other:batch-norm-training)"}),
    [](const auto& p) { return p.param.kind; });

// ---------------------------------------------------------------------------------------------
// Front-end fixtures (ONNX protobuf, HLO text)

Graph onnx_graph(const OnnxFixture& f) {
  return normcore::import::parse_onnx(f.span(), "model.onnx");
}
Graph hlo_graph(const std::string& text) {
  return normcore::import::parse_hlo(text, "model.hlo");
}

class RecogniseOnnxExplicit : public ::testing::TestWithParam<int> {};

TEST_P(RecogniseOnnxExplicit, AllOpsets) {
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, GetParam());
  const auto r = recognise(onnx_graph(f));
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_EQ(m.pattern, "batchnorm");
  EXPECT_EQ(m.name, "bn");  // from the initializer names bn.weight, ...
  EXPECT_EQ(m.channel_axis, 1);
  EXPECT_EQ(m.shape, f.x_shape);
  expect_params(m, f.bn);
}

INSTANTIATE_TEST_SUITE_P(Opsets, RecogniseOnnxExplicit, ::testing::Values(6, 7, 9, 14, 15));

TEST(RecogniseOnnxExplicitLayout, BatchNorm1d) {
  const auto f = onnx_explicit_bn(OnnxLayout::nc, 15);
  const auto r = recognise(onnx_graph(f));
  ASSERT_EQ(r.layers.size(), 1U);
  EXPECT_EQ(r.layers[0].channel_axis, 1);
  EXPECT_EQ(r.layers[0].layout, normcore::Layout::nchw);
  expect_params(r.layers[0], f.bn);
}

TEST(RecogniseOnnxErrors, TrainingModeIsRejectedNamingTheNode) {
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, 15, true);
  const auto msg = error_of([&] { (void)onnx_graph(f); });
  EXPECT_NE(msg.find("bn1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training"), std::string::npos) << msg;
}

TEST(RecogniseOnnxErrors, TruncatedModel) {
  auto f = onnx_conv_bn_relu();
  f.bytes.resize(f.bytes.size() / 2);
  const auto msg = error_of([&] { (void)onnx_graph(f); });
  EXPECT_NE(msg.find("model.onnx"), std::string::npos) << msg;
}

class RecogniseOnnxDecomposed : public ::testing::TestWithParam<OnnxDecomposed> {};

TEST_P(RecogniseOnnxDecomposed, Variant) {
  const auto f = onnx_decomposed_bn(GetParam());
  const auto r = recognise(onnx_graph(f));
  ASSERT_EQ(r.layers.size(), 1U);
  EXPECT_TRUE(r.near_misses.empty());
  const auto& m = r.layers[0];
  EXPECT_EQ(m.pattern, "decomposed");
  EXPECT_EQ(m.channels, 4);
  EXPECT_EQ(m.channel_axis, GetParam() == OnnxDecomposed::nhwc_vector ? 3 : 1);
  EXPECT_EQ(m.shape, f.x_shape);
  expect_params(m, f.bn);
}

INSTANTIATE_TEST_SUITE_P(
    All, RecogniseOnnxDecomposed,
    ::testing::Values(OnnxDecomposed::c11, OnnxDecomposed::one_c11, OnnxDecomposed::nhwc_vector,
                      OnnxDecomposed::reshape_vector, OnnxDecomposed::unsqueeze_attr,
                      OnnxDecomposed::unsqueeze_input, OnnxDecomposed::constant_nodes));

TEST(RecogniseOnnx, ConvBnRelu) {
  const auto f = onnx_conv_bn_relu();
  const Graph g = onnx_graph(f);
  const auto r = recognise(g);
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_EQ(g.values[static_cast<std::size_t>(m.input)].name, "conv_out");
  EXPECT_EQ(m.name, "bn1");
  EXPECT_EQ(m.shape, (Shape{1, 4, 8, 8}));
  expect_params(m, f.bn);
}

class RecogniseOnnxClip : public ::testing::TestWithParam<int> {};

TEST_P(RecogniseOnnxClip, ClampBounds) {
  const auto f = onnx_bn_clip(GetParam(), -1.0f, 4.0f);
  const auto r = recognise(onnx_graph(f));
  ASSERT_EQ(r.layers.size(), 1U);
  expect_params(r.layers[0], f.bn);
}

INSTANTIATE_TEST_SUITE_P(Opsets, RecogniseOnnxClip, ::testing::Values(6, 11, 13));

TEST(RecogniseHlo, NestedComputations) {
  for (auto tail : {HloTail::none, HloTail::relu, HloTail::clamp}) {
    const auto f = hlo_nested_bn(tail);
    const auto r = recognise(hlo_graph(f.text));
    ASSERT_EQ(r.layers.size(), 1U);
    EXPECT_EQ(r.layers[0].channel_axis, 1);
    EXPECT_EQ(r.layers[0].pattern, "decomposed");
    expect_params(r.layers[0], f.bn);
  }
}

TEST(RecogniseHlo, NativeBatchNormInference) {
  for (std::int64_t axis : {1, 3}) {
    for (auto tail : {HloTail::none, HloTail::relu, HloTail::clamp}) {
      const auto f = hlo_native_bn(axis, tail);
      const auto r = recognise(hlo_graph(f.text));
      ASSERT_EQ(r.layers.size(), 1U);
      EXPECT_EQ(r.layers[0].channel_axis, axis);
      EXPECT_EQ(r.layers[0].pattern, "batchnorm");
      expect_params(r.layers[0], f.bn);
    }
  }
}

TEST(RecogniseHlo, FlaxWithoutBundleIsIncompleteWithRoles) {
  const auto f = hlo_flax_bn(3);
  const Graph g = hlo_graph(f.text);
  const auto r = recognise(g);
  ASSERT_EQ(r.layers.size(), 1U);
  const auto& m = r.layers[0];
  EXPECT_FALSE(m.complete);
  EXPECT_EQ(m.channel_axis, 3);
  EXPECT_EQ(m.layout, normcore::Layout::nhwc);
  EXPECT_EQ(m.eps, 1e-5);
  EXPECT_EQ(m.mean_value, g.find("Arg_1.2"));
  EXPECT_EQ(m.var_value, g.find("Arg_2.3"));
  EXPECT_EQ(m.gamma_value, g.find("Arg_3.4"));
  EXPECT_EQ(m.beta_value, g.find("Arg_4.5"));
}

TEST(RecogniseHlo, BatchNormTrainingIsANearMiss) {
  const std::string text = R"(HloModule t
ENTRY %main (x: f32[1,3,2,2]) -> f32[1,3,2,2] {
  %x = f32[1,3,2,2] parameter(0)
  %scale = f32[3] constant({1, 1, 1})
  %offset = f32[3] constant({0, 0, 0})
  %bnt = (f32[1,3,2,2], f32[3], f32[3]) batch-norm-training(%x, %scale, %offset), epsilon=0.001, feature_index=1
  ROOT %y = f32[1,3,2,2] get-tuple-element(%bnt), index=0
}
)";
  const auto r = recognise(hlo_graph(text));
  EXPECT_TRUE(r.layers.empty());
  ASSERT_EQ(r.near_misses.size(), 1U);
  EXPECT_NE(r.near_misses[0].reason.find("batch-norm-training"), std::string::npos);
  EXPECT_EQ(r.near_misses[0].location, "line 6");
}

TEST(RecogniseHloErrors, ParseErrorNamesTheLine) {
  const std::string text =
      "HloModule m\nENTRY %main {\n  %x = f32[2] parameter(0)\n  ROOT %y = f32[2] add(%x, "
      "%nope)\n}\n";
  const auto msg = error_of([&] { (void)hlo_graph(text); });
  EXPECT_NE(msg.find("model.hlo:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// The same network as ONNX and as HLO: the recogniser must agree.

std::string hlo_vec(const std::vector<double>& v) {
  return hlo_text::list(v);
}

// conv (+ bias) -> BN -> ReLU with C channels, as HLO text: NCHW, the BN decomposed the way JAX
// lowers it (mean/var/scale/bias as [C] constants or parameters), the conv bias a separate add.
std::string hlo_conv_bn_relu(const BnParams& p, bool params_as_inputs,
                             const std::vector<double>& conv_bias) {
  const auto C = std::to_string(p.channels());
  const std::string x = "f32[1,3,8,8]", y = "f32[1," + C + ",8,8]", v = "f32[" + C + "]";
  std::string t = "HloModule conv_bn_relu\n\nENTRY %main {\n";
  t += "  %x = " + x + " parameter(0)\n";
  t += "  %w = f32[" + C + ",3,3,3] parameter(1)\n";
  if (params_as_inputs) {
    t += "  %mean = " + v + " parameter(2)\n  %var = " + v + " parameter(3)\n";
    t += "  %scale = " + v + " parameter(4)\n  %bias = " + v + " parameter(5)\n";
  } else {
    t += "  %mean = " + v + " constant(" + hlo_vec(p.mean) + ")\n";
    t += "  %var = " + v + " constant(" + hlo_vec(p.var) + ")\n";
    t += "  %scale = " + v + " constant(" + hlo_vec(p.gamma) + ")\n";
    t += "  %bias = " + v + " constant(" + hlo_vec(p.beta) + ")\n";
  }
  t += "  %cb = " + v + " constant(" + hlo_vec(conv_bias) + ")\n";
  t += "  %conv = " + y +
       " convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n";
  t += "  %cbb = " + y + " broadcast(%cb), dimensions={1}\n";
  t += "  %biased = " + y + " add(%conv, %cbb)\n";
  t += "  %mb = " + y + " broadcast(%mean), dimensions={1}\n";
  t += "  %centered = " + y + " subtract(%biased, %mb)\n";
  t += "  %eps = f32[] constant(1e-05)\n";
  t += "  %epsb = " + v + " broadcast(%eps), dimensions={}\n";
  t += "  %ve = " + v + " add(%var, %epsb)\n";
  t += "  %inv = " + v + " rsqrt(%ve)\n";
  t += "  %k = " + v + " multiply(%inv, %scale)\n";
  t += "  %kb = " + y + " broadcast(%k), dimensions={1}\n";
  t += "  %scaled = " + y + " multiply(%centered, %kb)\n";
  t += "  %bb = " + y + " broadcast(%bias), dimensions={1}\n";
  t += "  %bn = " + y + " add(%scaled, %bb)\n";
  t += "  %zero = f32[] constant(0)\n";
  t += "  %zb = " + y + " broadcast(%zero), dimensions={}\n";
  t += "  ROOT %relu = " + y + " maximum(%bn, %zb)\n}\n";
  return t;
}

OnnxFixture onnx_conv_bn_relu_c(const BnParams& p, const std::vector<double>& conv_bias) {
  using namespace onnx_build;
  const auto C = static_cast<std::int64_t>(p.channels());
  OnnxFixture f;
  f.bn = p;
  f.x_shape = {1, 3, 8, 8};
  auto m = model(15);
  auto& g = *m.mutable_graph();
  input(g, "x", f.x_shape);
  output(g, "y", {1, C, 8, 8});
  std::vector<double> w(static_cast<std::size_t>(C * 27));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 5) * 0.125 - 0.25;
  initializer(g, "conv1.weight", {C, 3, 3, 3}, w);
  initializer(g, "conv1.bias", {C}, conv_bias);
  initializer(g, "bn1.weight", {C}, p.gamma);
  initializer(g, "bn1.bias", {C}, p.beta);
  initializer(g, "bn1.running_mean", {C}, p.mean);
  initializer(g, "bn1.running_var", {C}, p.var);
  auto& conv = node(g, "Conv", {"x", "conv1.weight", "conv1.bias"}, {"conv_out"}, "conv1");
  attr_ints(conv, "kernel_shape", {3, 3});
  attr_ints(conv, "pads", {1, 1, 1, 1});
  auto& bn = node(g, "BatchNormalization",
                  {"conv_out", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"},
                  {"bn_out"}, "bn1");
  attr_f(bn, "epsilon", 1e-5f);
  node(g, "Relu", {"bn_out"}, {"y"}, "relu1");
  f.bytes = serialize(m);
  return f;
}

void expect_agree(const BnMatch& a, const BnMatch& b) {
  ASSERT_TRUE(a.complete);
  ASSERT_TRUE(b.complete);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_NEAR(a.eps, b.eps, 1e-6 * std::max(a.eps, 1e-3));  // float32 vs decimal literal
  expect_vec_near(a.params.gamma, b.params.gamma, "gamma", 1e-6);
  expect_vec_near(a.params.beta, b.params.beta, "beta", 1e-6);
  expect_vec_near(a.params.mean, b.params.mean, "mean", 1e-6);
  expect_vec_near(a.params.var, b.params.var, "var", 1e-6);
}

std::vector<double> conv_bias16() {
  std::vector<double> b;
  for (int c = 0; c < 16; ++c) b.push_back(0.25 * (c % 3) - 0.25);
  return b;
}

TEST(RecogniseAgreement, ConvBnReluOnnxAndHlo) {
  const BnParams p = sample_bn(16, 1e-5);
  const auto onnx_r = recognise(onnx_graph(onnx_conv_bn_relu_c(p, conv_bias16())));
  const Graph hg = hlo_graph(hlo_conv_bn_relu(p, false, conv_bias16()));
  const auto hlo_r = recognise(hg);
  ASSERT_EQ(onnx_r.layers.size(), 1U);
  ASSERT_EQ(hlo_r.layers.size(), 1U);
  expect_agree(onnx_r.layers[0], hlo_r.layers[0]);
  EXPECT_EQ(onnx_r.layers[0].channel_axis, hlo_r.layers[0].channel_axis);
  EXPECT_EQ(onnx_r.layers[0].shape, hlo_r.layers[0].shape);
  EXPECT_EQ(hg.values[static_cast<std::size_t>(hlo_r.layers[0].input)].name, "biased");
  auto want = p;
  want.activation = "relu";
  expect_params(hlo_r.layers[0], want);
}

TEST(RecogniseAgreement, FlaxHloWithBundleAndOnnxDecomposedNhwc) {
  const auto of = onnx_decomposed_bn(OnnxDecomposed::nhwc_vector);
  const auto hf = hlo_flax_bn(4);
  Graph hg = hlo_graph(hf.text);
  Bundle b;
  b.source = "bundle";
  b.arrays["params/BatchNorm_0/scale"] = Constant{{4}, hf.bn.gamma};
  b.arrays["params/BatchNorm_0/bias"] = Constant{{4}, hf.bn.beta};
  b.arrays["batch_stats/BatchNorm_0/mean"] = Constant{{4}, hf.bn.mean};
  b.arrays["batch_stats/BatchNorm_0/var"] = Constant{{4}, hf.bn.var};
  (void)normcore::import::attach_bundle(hg, b);
  const auto hr = recognise(hg);
  const auto orr = recognise(onnx_graph(of));
  ASSERT_EQ(hr.layers.size(), 1U);
  ASSERT_EQ(orr.layers.size(), 1U);
  expect_agree(hr.layers[0], orr.layers[0]);
  EXPECT_EQ(hr.layers[0].channel_axis, 3);
  EXPECT_EQ(orr.layers[0].channel_axis, 3);
  EXPECT_EQ(hr.layers[0].name, "BatchNorm_0");
}

TEST(RecogniseAgreement, ExplicitAndNativeBnWithClamp) {
  // ONNX BatchNormalization + Clip(0, 6) and HLO batch-norm-inference + clamp(0, x, 6), C = 3.
  using namespace onnx_build;
  const auto hf = hlo_native_bn(1, HloTail::clamp);
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {1, 3, 2, 2});
  output(g, "y", {1, 3, 2, 2});
  initializer(g, "s", {3}, hf.bn.gamma);
  initializer(g, "b", {3}, hf.bn.beta);
  initializer(g, "m", {3}, hf.bn.mean);
  initializer(g, "v", {3}, hf.bn.var);
  initializer(g, "lo", {}, {0});
  initializer(g, "hi", {}, {6});
  attr_f(node(g, "BatchNormalization", {"x", "s", "b", "m", "v"}, {"t"}, "bn"), "epsilon", 1e-3f);
  node(g, "Clip", {"t", "lo", "hi"}, {"y"}, "clip");
  const auto bytes = serialize(m);
  const auto orr = recognise(normcore::import::parse_onnx(bytes, "m.onnx"));
  const auto hr = recognise(hlo_graph(hf.text));
  ASSERT_EQ(orr.layers.size(), 1U);
  ASSERT_EQ(hr.layers.size(), 1U);
  expect_agree(orr.layers[0], hr.layers[0]);
  EXPECT_EQ(orr.layers[0].activation, "clamp");
  EXPECT_EQ(orr.layers[0].act_max, 6.0);
}

// ---------------------------------------------------------------------------------------------
// Bundles

fs::path temp_dir(const std::string& tag) {
  const fs::path d =
      fs::temp_directory_path() / ("nc_import_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream os(p, std::ios::binary);
  os.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream os(p, std::ios::binary);
  os << text;
}

// A stored (uncompressed) ZIP archive, as numpy.savez writes it.
std::uint32_t crc32(const std::vector<std::uint8_t>& d) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (auto b : d) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

std::vector<std::uint8_t> make_zip(
    const std::map<std::string, std::vector<std::uint8_t>>& members) {
  std::vector<std::uint8_t> out, central;
  auto u16 = [](std::vector<std::uint8_t>& v, unsigned x) {
    v.push_back(static_cast<std::uint8_t>(x & 0xFF));
    v.push_back(static_cast<std::uint8_t>((x >> 8) & 0xFF));
  };
  auto u32 = [&](std::vector<std::uint8_t>& v, std::uint32_t x) {
    u16(v, x & 0xFFFF);
    u16(v, x >> 16);
  };
  for (const auto& [name, data] : members) {
    const auto offset = static_cast<std::uint32_t>(out.size());
    const std::uint32_t crc = crc32(data);
    const auto size = static_cast<std::uint32_t>(data.size());
    u32(out, 0x04034b50);
    u16(out, 20);
    u16(out, 0);
    u16(out, 0);
    u16(out, 0);
    u16(out, 0);
    u32(out, crc);
    u32(out, size);
    u32(out, size);
    u16(out, static_cast<unsigned>(name.size()));
    u16(out, 0);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), data.begin(), data.end());
    u32(central, 0x02014b50);
    u16(central, 20);
    u16(central, 20);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u32(central, crc);
    u32(central, size);
    u32(central, size);
    u16(central, static_cast<unsigned>(name.size()));
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u32(central, 0);
    u32(central, offset);
    central.insert(central.end(), name.begin(), name.end());
  }
  const auto cd_offset = static_cast<std::uint32_t>(out.size());
  out.insert(out.end(), central.begin(), central.end());
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, static_cast<unsigned>(members.size()));
  u16(out, static_cast<unsigned>(members.size()));
  u32(out, static_cast<std::uint32_t>(central.size()));
  u32(out, cd_offset);
  u16(out, 0);
  return out;
}

std::vector<std::uint8_t> npy_f32(const std::vector<double>& v) {
  const std::vector<std::size_t> shape{v.size()};
  return normcore::encode_npy(shape, "float32", v);
}

TEST(BundleFormats, JsonNestedFlatScalarsAndMatrices) {
  const auto b = normcore::import::parse_bundle_json(
      R"({"params": {"bn": {"scale": [1, 2], "bias": [0.5, -0.5]}}, "bn.running_mean": [3, 4],
          "eps": 0.001, "m": [[1, 2, 3], [4, 5, 6]], "_comment": "ignored"})",
      "b.json");
  ASSERT_EQ(b.arrays.size(), 5U);
  EXPECT_EQ(b.arrays.at("params/bn/scale").data, (std::vector<double>{1, 2}));
  EXPECT_EQ(b.arrays.at("params/bn/scale").shape, Shape{2});
  EXPECT_EQ(b.arrays.at("bn.running_mean").data, (std::vector<double>{3, 4}));
  EXPECT_EQ(b.arrays.at("eps").shape, Shape{});
  EXPECT_EQ(b.arrays.at("m").shape, (Shape{2, 3}));
  EXPECT_EQ(b.arrays.at("m").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(BundleFormats, JsonErrorsNameTheKey) {
  using normcore::import::parse_bundle_json;
  EXPECT_NE(
      error_of([] { (void)parse_bundle_json(R"({"a": [[1, 2], [3]]})", "b.json"); }).find("'a'"),
      std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_bundle_json(R"({"a": [1, "x"]})", "b.json"); }).find("'a'"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { (void)parse_bundle_json(R"({"a": [1, 2)", "b.json"); }).find("malformed JSON"),
      std::string::npos);
}

TEST(BundleFormats, NpzAndNpyFiles) {
  const auto dir = temp_dir("bundle_files");
  write_bytes(dir / "p.npz", make_zip({{"bn1.weight.npy", npy_f32({1, 2, 3})},
                                       {"bn1.running_var.npy", npy_f32({4, 5, 6})}}));
  const auto b = normcore::import::load_bundle(dir / "p.npz");
  ASSERT_EQ(b.arrays.size(), 2U);
  EXPECT_EQ(b.get("bn1.weight").data, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(b.get("bn1.running_var").shape, Shape{3});
  write_bytes(dir / "mean.npy", npy_f32({7, 8}));
  const auto b2 = normcore::import::load_bundle(dir / "mean.npy");
  EXPECT_EQ(b2.arrays.at("mean").data, (std::vector<double>{7, 8}));
  write_text(dir / "p.json", R"({"x": [1]})");
  EXPECT_EQ(normcore::import::load_bundle(dir / "p.json").arrays.size(), 1U);
  fs::remove_all(dir);
}

TEST(BundleKeys, LayerAndRole) {
  using normcore::import::split_layer_key;
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(split_layer_key("params/BatchNorm_0/scale"), (P{"BatchNorm_0", "gamma"}));
  EXPECT_EQ(split_layer_key("batch_stats/BatchNorm_0/var"), (P{"BatchNorm_0", "var"}));
  EXPECT_EQ(split_layer_key("params.block.BatchNorm_1.bias"), (P{"block.BatchNorm_1", "beta"}));
  EXPECT_EQ(split_layer_key("layer1.0.bn1.running_mean"), (P{"layer1.0.bn1", "mean"}));
  EXPECT_EQ(split_layer_key("bn.weight"), (P{"bn", "gamma"}));
  EXPECT_FALSE(split_layer_key("bn.num_batches_tracked").has_value());
}

// HLO with unnamed Flax parameters (the fixture) and bundles in each key style.
Graph flax_graph(std::int64_t c = 3) {
  return hlo_graph(hlo_flax_bn(c).text);
}

Bundle flax_bundle(const BnParams& p, const std::string& sep = "/") {
  Bundle b;
  b.source = "ckpt.npz";
  b.arrays["params" + sep + "BatchNorm_0" + sep + "scale"] =
      Constant{{static_cast<std::int64_t>(p.channels())}, p.gamma};
  b.arrays["params" + sep + "BatchNorm_0" + sep + "bias"] =
      Constant{{static_cast<std::int64_t>(p.channels())}, p.beta};
  b.arrays["batch_stats" + sep + "BatchNorm_0" + sep + "mean"] =
      Constant{{static_cast<std::int64_t>(p.channels())}, p.mean};
  b.arrays["batch_stats" + sep + "BatchNorm_0" + sep + "var"] =
      Constant{{static_cast<std::int64_t>(p.channels())}, p.var};
  return b;
}

TEST(BundleAttach, FlaxKeysByRole) {
  for (const std::string sep : {"/", "."}) {
    const auto f = hlo_flax_bn(3);
    Graph g = hlo_graph(f.text);
    const auto rep = normcore::import::attach_bundle(g, flax_bundle(f.bn, sep));
    EXPECT_EQ(rep.attached.size(), 4U);
    EXPECT_TRUE(rep.unused_keys.empty());
    const auto r = recognise(g);
    ASSERT_EQ(r.layers.size(), 1U);
    expect_params(r.layers[0], f.bn);
    EXPECT_EQ(r.layers[0].name, "BatchNorm_0");
  }
}

TEST(BundleAttach, PytorchKeysByRole) {
  const auto f = hlo_flax_bn(3);
  Graph g = hlo_graph(f.text);
  Bundle b;
  b.source = "sd.json";
  b.arrays["bn1.weight"] = Constant{{3}, f.bn.gamma};
  b.arrays["bn1.bias"] = Constant{{3}, f.bn.beta};
  b.arrays["bn1.running_mean"] = Constant{{3}, f.bn.mean};
  b.arrays["bn1.running_var"] = Constant{{3}, f.bn.var};
  b.arrays["bn1.num_batches_tracked"] = Constant{{}, {100}};
  const auto rep = normcore::import::attach_bundle(g, b);
  EXPECT_EQ(rep.unused_keys, std::vector<std::string>{"bn1.num_batches_tracked"});
  const auto r = recognise(g);
  ASSERT_EQ(r.layers.size(), 1U);
  expect_params(r.layers[0], f.bn);
  EXPECT_EQ(r.layers[0].name, "bn1");
}

TEST(BundleAttach, ByNameAndByParameterNumber) {
  const auto f = hlo_flax_bn(3);
  {
    Graph g = hlo_graph(f.text);
    Bundle b;
    b.source = "named.json";
    b.arrays["Arg_1.2"] = Constant{{3}, f.bn.mean};
    b.arrays["Arg_2/3"] = Constant{{3}, f.bn.var};  // '/' and '.' are the same separator
    b.arrays["param3"] = Constant{{3}, f.bn.gamma};
    b.arrays["4"] = Constant{{1, 3}, f.bn.beta};  // size-1 dimensions are ignored
    const auto rep = normcore::import::attach_bundle(g, b);
    ASSERT_EQ(rep.attached.size(), 4U);
    const auto r = recognise(g);
    ASSERT_EQ(r.layers.size(), 1U);
    expect_params(r.layers[0], f.bn);
  }
  {
    Graph g = hlo_graph(f.text);
    Bundle b;
    b.source = "numbers.json";
    b.arrays["parameter.1"] = Constant{{3}, f.bn.mean};
    b.arrays["parameter.2"] = Constant{{3}, f.bn.var};
    b.arrays["param3"] = Constant{{3}, f.bn.gamma};
    b.arrays["param4"] = Constant{{3}, f.bn.beta};
    (void)normcore::import::attach_bundle(g, b);
    expect_params(recognise(g).layers.at(0), f.bn);
  }
}

TEST(BundleAttach, TwoLayersMappedInNaturalOrder) {
  // Two Flax-style BNs with unnamed parameters; layers BatchNorm_2 and BatchNorm_10 map in
  // natural order (2 before 10), checked by their different channel counts.
  const BnParams p1 = sample_bn(3, 1e-5), p2 = sample_bn(5, 1e-5);
  GraphBuilder b;
  const Shape x1{1, 3, 2, 2}, x2{1, 5, 2, 2};
  const int x = b.param("x", x1, 0);
  int next = 1;
  auto chain = [&](int in, const Shape& xs, std::int64_t c) {
    const Shape v{c};
    const int mean = b.param("p" + std::to_string(next), v, next);
    ++next;
    const int var = b.param("p" + std::to_string(next), v, next);
    ++next;
    const int sc = b.param("p" + std::to_string(next), v, next);
    ++next;
    const int bi = b.param("p" + std::to_string(next), v, next);
    ++next;
    const int eb = b.op("broadcast", {b.scalar("eps", 1e-5)}, v, {{"dims", ga_ints({})}});
    const int k = b.op("mul", {b.op("rsqrt", {b.op("add", {var, eb}, v)}, v), sc}, v);
    const int y =
        b.op("mul",
             {b.op("sub", {in, b.op("broadcast", {mean}, xs, {{"dims", ga_ints({1})}})}, xs),
              b.op("broadcast", {k}, xs, {{"dims", ga_ints({1})}})},
             xs);
    return b.op("add", {y, b.op("broadcast", {bi}, xs, {{"dims", ga_ints({1})}})}, xs);
  };
  const int y1 = chain(x, x1, 3);
  const int conv = b.op("conv", {y1, b.param("w", {5, 3, 1, 1}, 99)}, x2);
  b.output(chain(conv, x2, 5));
  Bundle bd;
  bd.source = "two.json";
  for (const auto& [layer, p] :
       {std::pair<std::string, BnParams>{"BatchNorm_10", p2}, {"BatchNorm_2", p1}}) {
    const auto c = static_cast<std::int64_t>(p.channels());
    bd.arrays["params/" + layer + "/scale"] = Constant{{c}, p.gamma};
    bd.arrays["params/" + layer + "/bias"] = Constant{{c}, p.beta};
    bd.arrays["batch_stats/" + layer + "/mean"] = Constant{{c}, p.mean};
    bd.arrays["batch_stats/" + layer + "/var"] = Constant{{c}, p.var};
  }
  (void)normcore::import::attach_bundle(b.g, bd);
  const auto r = recognise(b.g);
  ASSERT_EQ(r.layers.size(), 2U);
  EXPECT_EQ(r.layers[0].name, "BatchNorm_2");
  EXPECT_EQ(r.layers[1].name, "BatchNorm_10");
  expect_params(r.layers[0], p1);
  expect_params(r.layers[1], p2);
}

TEST(BundleAttach, MissingKeyNamesTheParameterAndCloseKeys) {
  const auto f = hlo_flax_bn(3);
  Graph g = hlo_graph(f.text);
  Bundle b = flax_bundle(f.bn);
  b.arrays.erase("params/BatchNorm_0/bias");
  const auto msg = error_of([&] { (void)normcore::import::attach_bundle(g, b); });
  EXPECT_NE(msg.find("ckpt.npz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parameter(4) 'Arg_4.5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("beta"), std::string::npos) << msg;
  EXPECT_NE(msg.find("close keys:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("params/BatchNorm_0/scale"), std::string::npos) << msg;
}

TEST(BundleAttach, MissingNamedKey) {
  GraphBuilder b;
  const int x = b.input("x", kX);
  const int mean = b.param("bn_mean", {4}, 1), var = b.param("bn_var", {4}, 2);
  const int r = b.op("rsqrt", {b.op("add", {var, b.scalar("eps", 1e-5)}, {4})}, {4});
  const int m4 = b.op("reshape", {mean}, {4, 1, 1});
  const int r4 = b.op("reshape", {r}, {4, 1, 1});
  b.output(b.op("mul", {b.op("sub", {x, m4}, kX), r4}, kX));
  Bundle bd;
  bd.source = "stats.json";
  bd.arrays["bn_mean"] = Constant{{4}, {1, 2, 3, 4}};
  bd.arrays["bn_variance"] = Constant{{4}, {1, 2, 3, 4}};
  const auto msg = error_of([&] { (void)normcore::import::attach_bundle(b.g, bd); });
  EXPECT_NE(msg.find("parameter(2) 'bn_var'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the var of"), std::string::npos) << msg;
  EXPECT_NE(msg.find("close keys: bn_variance"), std::string::npos) << msg;
}

TEST(BundleAttach, ShapeMismatchNamesKeyExpectedAndFound) {
  const auto f = hlo_flax_bn(3);
  {
    Graph g = hlo_graph(f.text);
    Bundle b;
    b.source = "bad.json";
    b.arrays["param2"] = Constant{{5}, {1, 2, 3, 4, 5}};
    const auto msg = error_of([&] { (void)normcore::import::attach_bundle(g, b); });
    EXPECT_NE(msg.find("key 'param2'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected shape [3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("found [5]"), std::string::npos) << msg;
  }
  {
    Graph g = hlo_graph(f.text);
    Bundle b = flax_bundle(f.bn);
    b.arrays["batch_stats/BatchNorm_0/var"] = Constant{{2, 2}, {1, 2, 3, 4}};
    const auto msg = error_of([&] { (void)normcore::import::attach_bundle(g, b); });
    EXPECT_NE(msg.find("key 'batch_stats/BatchNorm_0/var'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected shape [3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("found [2,2]"), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// Plans

fs::path manifest_path(const std::string& dev) {
  return fs::path(devices_dir()) / dev / "rtl" / "manifest.json";
}

normcore::import::PlanOptions plan_options(const std::string& dev) {
  const auto man = normcore::load_manifest(manifest_path(dev));
  normcore::import::PlanOptions o;
  o.spec = man.config.arith();
  o.config_json = man.config_json;
  o.config_source = manifest_path(dev).string();
  o.max_channels = man.config.max_channels;
  return o;
}

TEST(PlanConvBnRelu, FoldWriteReadRunOnRef) {
  const BnParams p = sample_bn(16, 1e-5);
  const Graph g = onnx_graph(onnx_conv_bn_relu_c(p, conv_bias16()));
  const auto rec = recognise(g);
  for (const std::string dev : {"normcore", "nc_small"}) {
    auto opt = plan_options(dev);
    if (dev == "nc_small") {  // int16 in -> uint8 out: real quantisation
      opt.integer_io = false;
      opt.in = {0.001, 0};
      opt.out = {0.05, 3};
    }
    const auto plan = normcore::import::make_plan(g, rec, opt);
    ASSERT_EQ(plan.layers.size(), 1U);
    const auto& l = plan.layers[0];
    EXPECT_EQ(l.job.n, 1U);
    EXPECT_EQ(l.job.c, 16U);
    EXPECT_EQ(l.job.hw, 64U);
    EXPECT_EQ(l.job.layout, normcore::Layout::nchw);
    const auto dir = temp_dir("plan_" + dev) / "plan";
    normcore::import::write_plan(plan, dir);
    for (const char* f : {"plan.json", "bn1.params.bin", "bn1.bn.json", "bn1.report.txt"}) {
      EXPECT_TRUE(fs::exists(dir / f)) << f;
    }
    const auto lp = normcore::import::read_plan(dir);
    ASSERT_EQ(lp.layers.size(), 1U);
    EXPECT_EQ(lp.layers[0].job.elements(), 16U * 64U);
    auto acc = normcore::Accelerator::open("ref:" + manifest_path(dev).string());
    const auto x = normcore::import::random_input(lp.spec, lp.layers[0].job.elements(), 7);
    const auto chk = normcore::import::run_layer(acc, lp.layers[0], x);
    EXPECT_TRUE(chk.within) << dev << ": max error " << chk.max_err << " > bound " << chk.bound;
    EXPECT_LE(chk.max_err, chk.bound + 1e-6);
    EXPECT_GT(chk.max_err, 0.0);
    std::printf(
        "[plan %s] conv+BN+ReLU, 16 channels: worst-case bound %.6f LSB, measured %.6f LSB\n",
        dev.c_str(), chk.bound, chk.max_err);
    fs::remove_all(dir.parent_path());
  }
}

TEST(PlanConvBnRelu, ReferenceCatchesAWrongImage) {
  // A parameter image that does not match the recovered BN exceeds the bound.
  const BnParams p = sample_bn(16, 1e-5);
  const Graph g = onnx_graph(onnx_conv_bn_relu_c(p, conv_bias16()));
  const auto opt = plan_options("normcore");
  auto plan = normcore::import::make_plan(g, recognise(g), opt);
  plan.layers[0].fold.shift[3] += std::int64_t{1} << plan.layers[0].fold.job.shift;  // +1 LSB
  const auto dir = temp_dir("plan_wrong") / "plan";
  normcore::import::write_plan(plan, dir);
  const auto lp = normcore::import::read_plan(dir);
  auto acc = normcore::Accelerator::open("ref:" + manifest_path("normcore").string());
  const auto x = normcore::import::random_input(lp.spec, lp.layers[0].job.elements(), 1);
  const auto chk = normcore::import::run_layer(acc, lp.layers[0], x);
  EXPECT_FALSE(chk.within);
  EXPECT_EQ(chk.worst_channel, 3);
  fs::remove_all(dir.parent_path());
}

TEST(PlanJson, LayersAndNearMisses) {
  // Two BNs (NCHW explicit, NHWC decomposed) and a near miss.
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k = add_consts(b, p, {4}, "first.");
  const int y =
      b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, kX, {{"epsilon", ga_f(kEps)}}, "bn_a");
  b.output(b.op("relu", {y}, kX));
  const Shape xs{1, 2, 2, 4};
  const int x2 = b.input("x2", xs);
  const auto k2 = add_consts(b, p, {4}, "second.");
  const int n = b.op(
      "mul",
      {b.op("sub", {x2, k2.mean}, xs), b.op("rsqrt", {b.op("add", {k2.var, k2.eps}, {4})}, {4})},
      xs);
  b.output(b.op("add", {b.op("mul", {n, k2.gamma}, xs), k2.beta}, xs));
  const int x3 = b.input("x3", kX);
  const int m3 = b.cst("m3", {1, 4, 3, 3}, std::vector<double>(36, 1.0));
  const int n3 = b.op("mul",
                      {b.op("sub", {x3, m3}, kX, {}, "sub3"),
                       b.op("rsqrt", {b.op("add", {k2.var, k2.eps}, {4})}, {4})},
                      kX);
  b.output(n3);
  const auto rec = recognise(b.g);
  ASSERT_EQ(rec.layers.size(), 2U);
  ASSERT_EQ(rec.near_misses.size(), 1U);
  const auto plan = normcore::import::make_plan(b.g, rec, plan_options("normcore"));
  const auto j = nlohmann::json::parse(normcore::import::plan_json(plan));
  ASSERT_EQ(j["layers"].size(), 2U);
  EXPECT_EQ(j["layers"][0]["name"], "first");
  EXPECT_EQ(j["layers"][0]["layout"], "nchw");
  EXPECT_EQ(j["layers"][0]["activation"], "relu");
  EXPECT_EQ(j["layers"][0]["pattern"], "batchnorm");
  EXPECT_EQ(j["layers"][0]["params_file"], "first.params.bin");
  EXPECT_EQ(j["layers"][1]["layout"], "nhwc");
  EXPECT_EQ(j["layers"][1]["channel_axis"], 3);
  EXPECT_EQ(j["layers"][1]["job"]["hw"], 4);
  EXPECT_EQ(j["layers"][1]["pattern"], "decomposed");
  EXPECT_FALSE(j["layers"][1]["nodes"].empty());
  ASSERT_EQ(j["near_misses"].size(), 1U);
  EXPECT_EQ(j["near_misses"][0]["location"], "node 'sub3' (sub)");
  EXPECT_NE(j["near_misses"][0]["reason"].get<std::string>().find("not per-channel"),
            std::string::npos);
  EXPECT_EQ(j["arith"]["xw"], 8);
  EXPECT_TRUE(j["config"].contains("max_channels"));
}

TEST(PlanShapes, UnknownBatchIsPlannedAsOne) {
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, 15);  // x [N, 4, 4, 4], N a dim_param
  const Graph g = onnx_graph(f);
  const auto plan = normcore::import::make_plan(g, recognise(g), plan_options("normcore"));
  ASSERT_EQ(plan.layers.size(), 1U);
  EXPECT_EQ(plan.layers[0].shape, (Shape{1, 4, 4, 4}));
  EXPECT_EQ(plan.layers[0].job.elements(), 64U);
  ASSERT_FALSE(plan.layers[0].warnings.empty());
  EXPECT_NE(plan.layers[0].warnings.back().find("dimension 0"), std::string::npos);
}

TEST(PlanActivation, OneSidedClampFoldsAndRuns) {
  const BnParams p = sample_bn(4, kEps);
  GraphBuilder b;
  const int x = b.input("x", kX);
  const auto k = add_consts(b, p, {4});
  const int y =
      b.op("bn", {x, k.gamma, k.beta, k.mean, k.var}, kX, {{"epsilon", ga_f(kEps)}}, "bn1");
  b.output(b.op("max", {y, b.scalar("m2", -2)}, kX));
  auto opt = plan_options("normcore");
  opt.integer_io = false;
  opt.in = {0.05, 0};
  opt.out = {0.1, -10};
  const auto plan = normcore::import::make_plan(b.g, recognise(b.g), opt);
  ASSERT_EQ(plan.layers.size(), 1U);
  EXPECT_EQ(plan.layers[0].fold.job.lo, -30);  // -10 + ceil(-2 / 0.1)
  EXPECT_EQ(plan.layers[0].fold.job.hi, 127);
  const auto dir = temp_dir("plan_clamp") / "plan";
  normcore::import::write_plan(plan, dir);
  const auto lp = normcore::import::read_plan(dir);
  auto acc = normcore::Accelerator::open("ref:" + manifest_path("normcore").string());
  const auto xs = normcore::import::random_input(lp.spec, lp.layers[0].job.elements(), 5);
  const auto chk = normcore::import::run_layer(acc, lp.layers[0], xs);
  EXPECT_TRUE(chk.within) << chk.max_err << " > " << chk.bound;
  fs::remove_all(dir.parent_path());
}

TEST(PlanErrors, ParametersWithoutDataNeedABundle) {
  const Graph g = flax_graph(3);
  const auto msg = error_of(
      [&] { (void)normcore::import::make_plan(g, recognise(g), plan_options("normcore")); });
  EXPECT_NE(msg.find("--params"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parameter(1) 'Arg_1.2'"), std::string::npos) << msg;
}

TEST(PlanWrite, AtomicAndRefusesToReplaceOtherDirectories) {
  const BnParams p = sample_bn(4, kEps);
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, 15);
  const Graph g = onnx_graph(f);
  const auto plan = normcore::import::make_plan(g, recognise(g), plan_options("normcore"));
  const auto base = temp_dir("plan_atomic");
  // Not a plan: refused, untouched, no temporary left.
  fs::create_directories(base / "other");
  write_text(base / "other" / "keep.txt", "x");
  const auto msg = error_of([&] { normcore::import::write_plan(plan, base / "other"); });
  EXPECT_NE(msg.find("not a normcore plan"), std::string::npos) << msg;
  EXPECT_TRUE(fs::exists(base / "other" / "keep.txt"));
  // A previous plan is replaced as a whole (stale files disappear).
  normcore::import::write_plan(plan, base / "plan/");
  write_text(base / "plan" / "stale.txt", "x");
  normcore::import::write_plan(plan, base / "plan");
  EXPECT_FALSE(fs::exists(base / "plan" / "stale.txt"));
  EXPECT_TRUE(fs::exists(base / "plan" / "plan.json"));
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(base)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2U);  // other, plan: no temporaries
  // A failing write (the parent is a file) leaves nothing.
  write_text(base / "file", "x");
  (void)error_of([&] { normcore::import::write_plan(plan, base / "file" / "plan"); });
  fs::remove_all(base);
}

// Writes example models for tests/cli_import.sh when NORMCORE_IMPORT_EXAMPLES names a directory
// (skipped otherwise): conv_bn_relu16.onnx (+ its numbers), decomposed.onnx, truncated.onnx.
TEST(PlanExamples, WriteModelFiles) {
  const char* dir = std::getenv("NORMCORE_IMPORT_EXAMPLES");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "NORMCORE_IMPORT_EXAMPLES not set";
  fs::create_directories(dir);
  const auto f = onnx_conv_bn_relu_c(sample_bn(16, 1e-5), conv_bias16());
  write_bytes(fs::path(dir) / "conv_bn_relu16.onnx", f.bytes);
  write_bytes(fs::path(dir) / "decomposed.onnx", onnx_decomposed_bn(OnnxDecomposed::one_c11).bytes);
  auto t = f.bytes;
  t.resize(t.size() / 2);
  write_bytes(fs::path(dir) / "truncated.onnx", t);
  write_bytes(fs::path(dir) / "training.onnx", onnx_explicit_bn(OnnxLayout::nchw, 15, true).bytes);
}

}  // namespace
