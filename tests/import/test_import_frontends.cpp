// Model import front ends (issue 7): ONNX (protobuf) and XLA HLO text -> normcore::import::Graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "import_fixtures.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/onnx.hpp"
#include "test_errors.hpp"

namespace {

using normcore::Error;
using normcore::import::Graph;
using normcore::import::Node;
using normcore::import::Value;
using namespace normcore::test;
using Shape = std::vector<std::int64_t>;

using normcore::test::error_of;

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n.op);
  return out;
}

const Value& value(const Graph& g, const std::string& name) {
  const int i = g.find(name);
  if (i < 0) throw std::runtime_error("no value '" + name + "'");
  return g.values[static_cast<std::size_t>(i)];
}

const Node& producer(const Graph& g, const std::string& name) {
  const int p = value(g, name).producer;
  if (p < 0) throw std::runtime_error("value '" + name + "' has no producer");
  return g.nodes[static_cast<std::size_t>(p)];
}

// Name of node input k (the empty string for an absent optional input).
std::string in_name(const Graph& g, const Node& n, std::size_t k) {
  const int v = n.inputs.at(k);
  return v < 0 ? std::string() : g.values[static_cast<std::size_t>(v)].name;
}

std::vector<double> data(const Graph& g, const std::string& name) {
  const auto& v = value(g, name);
  if (!v.constant) throw std::runtime_error("value '" + name + "' is not a constant");
  return v.constant->data;
}

// 1-based number of the first line of `text` containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  if (pos == std::string::npos) throw std::runtime_error("fixture lacks '" + needle + "'");
  return 1 + static_cast<int>(
                 std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

std::string at_line(const std::string& source, int line) {
  return source + ":" + std::to_string(line) + ": ";
}

Graph onnx(const OnnxFixture& f) {
  return normcore::import::parse_onnx(f.span(), "model.onnx");
}

// =============================================================================================
// ONNX

class OnnxExplicitBn : public ::testing::TestWithParam<int> {};

TEST_P(OnnxExplicitBn, OneBnNodeWithConstantsAndShapes) {
  const int opset = GetParam();
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, opset);
  const Graph g = onnx(f);
  EXPECT_EQ(g.format, "onnx");
  EXPECT_EQ(g.source, "model.onnx");
  ASSERT_EQ(ops(g), std::vector<std::string>{"bn"});
  const Node& bn = g.nodes[0];
  EXPECT_EQ(bn.name, "bn1");
  EXPECT_EQ(bn.location, "node 'bn1' (BatchNormalization)");
  ASSERT_EQ(bn.inputs.size(), 5U);
  EXPECT_EQ(in_name(g, bn, 0), "x");
  EXPECT_EQ(in_name(g, bn, 1), "bn.weight");
  EXPECT_EQ(in_name(g, bn, 2), "bn.bias");
  EXPECT_EQ(in_name(g, bn, 3), "bn.running_mean");
  EXPECT_EQ(in_name(g, bn, 4), "bn.running_var");
  ASSERT_TRUE(bn.attrs.at("epsilon").f.has_value());
  EXPECT_EQ(*bn.attrs.at("epsilon").f, f.bn.eps);
  EXPECT_EQ(bn.attrs.at("axis").i, 1);
  EXPECT_EQ(bn.attrs.count("momentum"), 0U);

  EXPECT_EQ(data(g, "bn.weight"), f.bn.gamma);
  EXPECT_EQ(data(g, "bn.bias"), f.bn.beta);
  EXPECT_EQ(data(g, "bn.running_mean"), f.bn.mean);
  EXPECT_EQ(data(g, "bn.running_var"), f.bn.var);
  EXPECT_EQ(value(g, "bn.weight").constant->shape, Shape{4});
  EXPECT_EQ(value(g, "bn.weight").shape, Shape{4});
  EXPECT_TRUE(value(g, "bn.weight").shape_known);
  EXPECT_EQ(value(g, "bn.weight").origin, "initializer 'bn.weight'");
  EXPECT_EQ(value(g, "bn.weight").producer, -1);
  EXPECT_EQ(value(g, "bn.weight").dtype, opset >= 15 ? "f64" : "f32");
  EXPECT_EQ(value(g, "bn.running_var").dtype, "f32");

  const Value& x = value(g, "x");
  EXPECT_TRUE(x.shape_known);
  EXPECT_EQ(x.shape, (Shape{-1, 4, 4, 4}));
  EXPECT_FALSE(x.constant.has_value());
  EXPECT_EQ(x.origin, "graph input 'x'");
  EXPECT_EQ(x.dtype, "f32");
  const Value& y = value(g, "y");
  EXPECT_EQ(y.producer, 0);
  EXPECT_EQ(y.shape, (Shape{-1, 4, 4, 4}));
  ASSERT_EQ(g.inputs.size(), 1U);
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.inputs[0])].name, "x");
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.outputs[0], g.find("y"));
  EXPECT_EQ(bn.outputs, std::vector<int>{g.find("y")});
  EXPECT_EQ(g.consumers(g.find("x")), std::vector<int>{0});
}

INSTANTIATE_TEST_SUITE_P(OnnxOpsets, OnnxExplicitBn, ::testing::Values(6, 7, 9, 14, 15));

TEST(OnnxExplicitBnLayout, BatchNorm1dShapes) {
  const auto f = onnx_explicit_bn(OnnxLayout::nc, 15);
  const Graph g = onnx(f);
  ASSERT_EQ(ops(g), std::vector<std::string>{"bn"});
  EXPECT_EQ(value(g, "x").shape, (Shape{2, 4}));
  EXPECT_EQ(value(g, "y").shape, (Shape{2, 4}));
  EXPECT_EQ(g.nodes[0].attrs.at("axis").i, 1);
}

TEST(OnnxExplicitBnLayout, ShapeWithoutDeclaredOutputIsPropagated) {
  auto f = onnx_explicit_bn(OnnxLayout::nchw, 14);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromArray(f.bytes.data(), static_cast<int>(f.bytes.size())));
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  f.bytes = onnx_build::serialize(m);
  const Graph g = onnx(f);
  EXPECT_TRUE(value(g, "y").shape_known);
  EXPECT_EQ(value(g, "y").shape, (Shape{-1, 4, 4, 4}));
}

TEST(OnnxErrors, TrainingModeNamesTheNode) {
  const auto f = onnx_explicit_bn(OnnxLayout::nchw, 15, /*training_mode=*/true);
  const std::string msg = error_of([&] { onnx(f); });
  EXPECT_NE(msg.find("model.onnx: node 'bn1' (BatchNormalization)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training_mode=1"), std::string::npos) << msg;
}

TEST(OnnxErrors, TruncatedModel) {
  const auto f = onnx_explicit_bn();
  const std::vector<std::uint8_t> half(
      f.bytes.begin(), f.bytes.begin() + static_cast<std::ptrdiff_t>(f.bytes.size() / 2));
  const std::string msg = error_of([&] { normcore::import::parse_onnx(half, "cut.onnx"); });
  EXPECT_EQ(msg, "cut.onnx: not a valid ONNX model (truncated or corrupt protobuf)");
  const std::vector<std::uint8_t> junk{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
  EXPECT_NE(error_of([&] {
              normcore::import::parse_onnx(junk, "junk.onnx");
            }).find("junk.onnx: not a valid ONNX model"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              normcore::import::parse_onnx({}, "empty.onnx");
            }).find("empty.onnx: not a valid ONNX model"),
            std::string::npos);
}

TEST(OnnxErrors, UnknownInputNamesNodeAndInput) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {1, 4});
  output(g, "y", {1, 4});
  initializer(g, "w", {4}, {1, 2, 3, 4});
  node(g, "Mul", {"x", "w"}, {"t"}, "mul1");
  node(g, "Add", {"t", "bias_missing"}, {"y"});  // unnamed: node #1
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("m.onnx: node #1 (Add): input 'bias_missing'"), std::string::npos) << msg;

  auto m2 = model(13);
  auto& g2 = *m2.mutable_graph();
  input(g2, "x", {1, 4});
  output(g2, "y", {1, 4});
  node(g2, "Relu", {"nope"}, {"y"}, "relu7");
  const auto bytes2 = serialize(m2);
  const std::string msg2 = error_of([&] { normcore::import::parse_onnx(bytes2, "m.onnx"); });
  EXPECT_NE(msg2.find("node 'relu7' (Relu): input 'nope'"), std::string::npos) << msg2;
}

TEST(OnnxErrors, GraphOutputNotProduced) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {1});
  output(g, "y", {1});
  node(g, "Relu", {"x"}, {"z"}, "r");
  const auto bytes = serialize(m);
  EXPECT_NE(
      error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); }).find("graph output 'y'"),
      std::string::npos);
}

TEST(OnnxErrors, UnsupportedConstantTypeUsedByArithmetic) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {1, 4});
  output(g, "y", {1, 4});
  auto* t = g.add_initializer();
  t->set_name("s");
  t->set_data_type(onnx::TensorProto_DataType_STRING);
  t->add_string_data("hello");
  node(g, "Mul", {"x", "s"}, {"y"}, "mul1");
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("node 'mul1' (Mul): input 's' (initializer 's') has unsupported data type "
                     "STRING"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, InitializerSizeMismatch) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {4});
  output(g, "y", {4});
  auto& t = initializer(g, "w", {4}, {1, 2, 3});
  (void)t;
  node(g, "Mul", {"x", "w"}, {"y"}, "mul1");
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("m.onnx: initializer 'w': raw_data holds 12 bytes, expected 16"),
            std::string::npos)
      << msg;
}

// Issue 15: an initializer whose dims claim 2^40 elements was allocated before its data was
// checked (std::bad_alloc); dims [2^32, 2^32] wrapped to 0 elements.
TEST(OnnxErrors, HugeInitializerDimsCheckedBeforeAllocating) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {4});
  output(g, "y", {4});
  initializer(g, "w", {std::int64_t{1} << 40}, {1, 2, 3});
  node(g, "Mul", {"x", "w"}, {"y"}, "mul1");
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("initializer 'w': raw_data holds 12 bytes, expected 4398046511104"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, InitializerDimsOverflowDetected) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {4});
  output(g, "y", {4});
  initializer(g, "w", {std::int64_t{1} << 32, std::int64_t{1} << 32}, {});
  node(g, "Mul", {"x", "w"}, {"y"}, "mul1");
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("initializer 'w': dims [4294967296,4294967296]: the element count "
                     "overflows 64 bits"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, ShapesThatDoNotBroadcast) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {1, 4, 2, 2});
  output(g, "y", {1, 4, 2, 2});
  initializer(g, "w", {3}, {1, 2, 3});
  node(g, "Mul", {"x", "w"}, {"y"}, "mul1");
  const auto bytes = serialize(m);
  const std::string msg = error_of([&] { normcore::import::parse_onnx(bytes, "m.onnx"); });
  EXPECT_NE(msg.find("node 'mul1' (Mul): input shapes [1,4,2,2] and [3] do not broadcast"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, MissingFile) {
  const std::string msg =
      error_of([] { normcore::import::load_onnx("/nonexistent/dir/model.onnx"); });
  EXPECT_NE(msg.find("/nonexistent/dir/model.onnx"), std::string::npos) << msg;
}

TEST(OnnxLoad, ReadsAFile) {
  const auto f = onnx_explicit_bn();
  const auto path = std::filesystem::temp_directory_path() /
                    ("normcore_onnx_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".onnx");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(f.bytes.data()),
              static_cast<std::ptrdiff_t>(f.bytes.size()));
  }
  const Graph g = normcore::import::load_onnx(path);
  std::filesystem::remove(path);
  EXPECT_EQ(g.source, path.string());
  EXPECT_EQ(ops(g), std::vector<std::string>{"bn"});
}

// ---------------------------------------------------------------------------------------------

void expect_chain(const Graph& g, const OnnxFixture& f, const std::string& mean,
                  const std::string& var, const std::string& gamma, const std::string& beta) {
  const Node& sub = producer(g, "centered");
  EXPECT_EQ(sub.op, "sub");
  EXPECT_EQ(in_name(g, sub, 0), "x");
  EXPECT_EQ(in_name(g, sub, 1), mean);
  const Node& add_eps = producer(g, "var_eps");
  EXPECT_EQ(add_eps.op, "add");
  EXPECT_EQ(in_name(g, add_eps, 0), var);
  EXPECT_EQ(in_name(g, add_eps, 1), "eps");
  EXPECT_EQ(data(g, "eps"), std::vector<double>{f.bn.eps});
  const Node& sq = producer(g, "std");
  EXPECT_EQ(sq.op, "sqrt");
  EXPECT_EQ(in_name(g, sq, 0), "var_eps");
  const Node& div = producer(g, "normed");
  EXPECT_EQ(div.op, "div");
  EXPECT_EQ(in_name(g, div, 0), "centered");
  EXPECT_EQ(in_name(g, div, 1), "std");
  const Node& mul = producer(g, "scaled");
  EXPECT_EQ(mul.op, "mul");
  EXPECT_EQ(in_name(g, mul, 1), gamma);
  const Node& add = producer(g, "y");
  EXPECT_EQ(add.op, "add");
  EXPECT_EQ(add.name, "add_beta");
  EXPECT_EQ(in_name(g, add, 0), "scaled");
  EXPECT_EQ(in_name(g, add, 1), beta);
  EXPECT_EQ(data(g, "mean"), f.bn.mean);
  EXPECT_EQ(data(g, "var"), f.bn.var);
  EXPECT_EQ(data(g, "gamma"), f.bn.gamma);
  EXPECT_EQ(data(g, "beta"), f.bn.beta);
  for (const char* name : {"centered", "normed", "scaled", "y"}) {
    EXPECT_TRUE(value(g, name).shape_known) << name;
    EXPECT_EQ(value(g, name).shape, f.x_shape) << name;
  }
  EXPECT_EQ(g.inputs, std::vector<int>{g.find("x")});
}

TEST(OnnxDecomposed, InitializersC11) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::c11);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"sub", "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean", "var", "gamma", "beta");
  EXPECT_EQ(value(g, "mean").shape, (Shape{4, 1, 1}));
  EXPECT_EQ(value(g, "var_eps").shape, (Shape{4, 1, 1}));
  EXPECT_EQ(value(g, "std").shape, (Shape{4, 1, 1}));
  EXPECT_EQ(value(g, "eps").shape, Shape{});
  EXPECT_EQ(value(g, "eps").constant->shape, Shape{});
}

TEST(OnnxDecomposed, Initializers1C11) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::one_c11);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"sub", "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean", "var", "gamma", "beta");
  EXPECT_EQ(value(g, "gamma").constant->shape, (Shape{1, 4, 1, 1}));
  EXPECT_EQ(value(g, "eps").shape, Shape{1});
  EXPECT_EQ(value(g, "std").shape, (Shape{1, 4, 1, 1}));
}

TEST(OnnxDecomposed, NhwcVectors) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::nhwc_vector);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"sub", "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean", "var", "gamma", "beta");
  EXPECT_EQ(value(g, "x").shape, (Shape{1, 4, 4, 4}));
  EXPECT_EQ(value(g, "mean").shape, Shape{4});
  EXPECT_EQ(value(g, "std").shape, Shape{4});
}

TEST(OnnxDecomposed, ReshapedVectors) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::reshape_vector);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"reshape", "reshape", "reshape", "reshape", "sub",
                                              "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean_r", "var_r", "gamma_r", "beta_r");
  for (const char* name : {"mean_r", "var_r", "gamma_r", "beta_r"}) {
    EXPECT_EQ(value(g, name).shape, (Shape{1, 4, 1, 1})) << name;  // -1 inferred
    const Node& r = producer(g, name);
    ASSERT_EQ(r.inputs.size(), 1U);  // the shape tensor is folded into attr "shape"
    EXPECT_EQ(r.attrs.at("shape").ints, (Shape{1, 4, 1, 1}));
  }
  EXPECT_EQ(in_name(g, producer(g, "gamma_r"), 0), "gamma");
  EXPECT_EQ(producer(g, "mean_r").location, "node 'reshape_mean' (Reshape)");
  EXPECT_EQ(data(g, "shape_1c11"), (std::vector<double>{1, -1, 1, 1}));
}

TEST(OnnxDecomposed, UnsqueezeAxesAttribute) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::unsqueeze_attr);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"reshape", "reshape", "reshape", "reshape", "sub",
                                              "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean_u", "var_u", "gamma_u", "beta_u");
  EXPECT_EQ(value(g, "var_u").shape, (Shape{4, 1, 1}));
  EXPECT_EQ(producer(g, "var_u").attrs.at("shape").ints, (Shape{4, 1, 1}));
}

TEST(OnnxDecomposed, UnsqueezeAxesInput) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::unsqueeze_input);
  const Graph g = onnx(f);
  expect_chain(g, f, "mean_u", "var_u", "gamma_u", "beta_u");
  EXPECT_EQ(value(g, "beta_u").shape, (Shape{1, 4, 1, 1}));
  EXPECT_EQ(producer(g, "beta_u").inputs.size(), 1U);
}

TEST(OnnxDecomposed, ConstantNodes) {
  const auto f = onnx_decomposed_bn(OnnxDecomposed::constant_nodes);
  const Graph g = onnx(f);
  // Constant nodes become constant values, not nodes.
  EXPECT_EQ(ops(g), (std::vector<std::string>{"sub", "add", "sqrt", "div", "mul", "add"}));
  expect_chain(g, f, "mean", "var", "gamma", "beta");
  EXPECT_EQ(value(g, "mean").constant->shape, (Shape{1, 4, 1, 1}));
  EXPECT_EQ(value(g, "mean").producer, -1);
  EXPECT_EQ(value(g, "mean").origin, "output of node 'mean_const' (Constant)");
  EXPECT_EQ(value(g, "eps").shape, Shape{});
}

TEST(OnnxConvBnRelu, ConvShapePropagated) {
  const auto f = onnx_conv_bn_relu();
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"conv", "bn", "relu"}));
  EXPECT_EQ(value(g, "conv_out").shape, (Shape{1, 4, 8, 8}));
  EXPECT_TRUE(value(g, "conv_out").shape_known);
  EXPECT_EQ(value(g, "bn_out").shape, (Shape{1, 4, 8, 8}));
  const Node& bn = producer(g, "bn_out");
  EXPECT_EQ(in_name(g, bn, 0), "conv_out");
  EXPECT_EQ(*bn.attrs.at("epsilon").f, f.bn.eps);
  EXPECT_EQ(data(g, "bn1.running_var"), f.bn.var);
  const Node& relu = producer(g, "y");
  EXPECT_EQ(relu.op, "relu");
  EXPECT_EQ(in_name(g, relu, 0), "bn_out");
  const Node& conv = producer(g, "conv_out");
  EXPECT_EQ(conv.inputs.size(), 3U);
  EXPECT_EQ(conv.attrs.at("pads").ints, (Shape{1, 1, 1, 1}));
  EXPECT_EQ(g.inputs.size(), 1U);
}

class OnnxClip : public ::testing::TestWithParam<int> {};

TEST_P(OnnxClip, BoundsBecomeInputsXMinMax) {
  const int opset = GetParam();
  const auto f = onnx_bn_clip(opset, -1.5f, 4.0f);
  const Graph g = onnx(f);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"bn", "clamp"}));
  const Node& clip = producer(g, "y");
  EXPECT_EQ(clip.location, "node 'clip1' (Clip)");
  ASSERT_EQ(clip.inputs.size(), 3U);
  EXPECT_EQ(in_name(g, clip, 0), "bn_out");
  const Value& lo = g.values[static_cast<std::size_t>(clip.inputs[1])];
  const Value& hi = g.values[static_cast<std::size_t>(clip.inputs[2])];
  ASSERT_TRUE(lo.constant && hi.constant);
  EXPECT_EQ(lo.constant->data, std::vector<double>{-1.5});
  EXPECT_EQ(hi.constant->data, std::vector<double>{4.0});
  EXPECT_EQ(lo.shape, Shape{});
  if (opset < 11) {
    EXPECT_EQ(lo.origin, "attribute 'min' of node 'clip1' (Clip)");
  } else {
    EXPECT_EQ(lo.name, "clip_min");
  }
  EXPECT_EQ(value(g, "y").shape, (Shape{1, 4, 2, 2}));
}

INSTANTIATE_TEST_SUITE_P(OnnxOpsets, OnnxClip, ::testing::Values(6, 11, 13));

TEST(OnnxClipBounds, MissingBoundsAreAbsent) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {4});
  output(g, "y", {4});
  output(g, "z", {4});
  initializer(g, "hi", {}, {6});
  node(g, "Clip", {"x", "", "hi"}, {"y"}, "c1");
  node(g, "Clip", {"x"}, {"z"}, "c2");
  const auto bytes = serialize(m);
  const Graph gr = normcore::import::parse_onnx(bytes, "m.onnx");
  EXPECT_EQ(gr.nodes[0].inputs, (std::vector<int>{gr.find("x"), -1, gr.find("hi")}));
  EXPECT_EQ(gr.nodes[1].inputs, (std::vector<int>{gr.find("x"), -1, -1}));
  EXPECT_EQ(gr.outputs.size(), 2U);
}

TEST(OnnxConstants, DtypesAndEncodings) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {3});
  output(g, "y", {3});
  initializer(g, "i8", {3}, {-128, 0, 127}, onnx::TensorProto_DataType_INT8, Storage::raw);
  initializer(g, "i8t", {3}, {-5, 0, 5}, onnx::TensorProto_DataType_INT8, Storage::typed);
  initializer(g, "u8", {3}, {0, 200, 255}, onnx::TensorProto_DataType_UINT8, Storage::raw);
  initializer(g, "i32", {3}, {-70000, 1, 70000}, onnx::TensorProto_DataType_INT32, Storage::raw);
  initializer(g, "i64", {3}, {-3, 0, 1LL << 40}, onnx::TensorProto_DataType_INT64, Storage::typed);
  initializer(g, "f64t", {3}, {0.1, -2.5, 1e300}, onnx::TensorProto_DataType_DOUBLE,
              Storage::typed);
  // float16: 1.0 = 0x3c00, -2.5 = 0xc100, 2^-24 (smallest subnormal) = 0x0001
  auto* h = g.add_initializer();
  h->set_name("f16");
  h->set_data_type(onnx::TensorProto_DataType_FLOAT16);
  h->add_dims(3);
  h->set_raw_data(std::string("\x00\x3c\x00\xc1\x01\x00", 6));
  auto* ht = g.add_initializer();
  ht->set_name("f16t");
  ht->set_data_type(onnx::TensorProto_DataType_FLOAT16);
  ht->add_dims(1);
  ht->add_int32_data(0x3c00);
  auto& c = node(g, "Constant", {}, {"ints"}, "k");
  attr_ints(c, "value_ints", {4, -5});
  auto& c2 = node(g, "Constant", {}, {"one"});
  attr_i(c2, "value_int", 7);
  node(g, "Identity", {"x"}, {"y"}, "id");
  const auto bytes = serialize(m);
  const Graph gr = normcore::import::parse_onnx(bytes, "m.onnx");
  EXPECT_EQ(data(gr, "i8"), (std::vector<double>{-128, 0, 127}));
  EXPECT_EQ(value(gr, "i8").dtype, "i8");
  EXPECT_EQ(data(gr, "i8t"), (std::vector<double>{-5, 0, 5}));
  EXPECT_EQ(data(gr, "u8"), (std::vector<double>{0, 200, 255}));
  EXPECT_EQ(data(gr, "i32"), (std::vector<double>{-70000, 1, 70000}));
  EXPECT_EQ(data(gr, "i64"), (std::vector<double>{-3, 0, static_cast<double>(1LL << 40)}));
  EXPECT_EQ(data(gr, "f64t"), (std::vector<double>{0.1, -2.5, 1e300}));
  EXPECT_EQ(data(gr, "f16"), (std::vector<double>{1.0, -2.5, 5.9604644775390625e-08}));
  EXPECT_EQ(value(gr, "f16").dtype, "f16");
  EXPECT_EQ(data(gr, "f16t"), std::vector<double>{1.0});
  EXPECT_EQ(data(gr, "ints"), (std::vector<double>{4, -5}));
  EXPECT_EQ(value(gr, "ints").shape, Shape{2});
  EXPECT_EQ(data(gr, "one"), std::vector<double>{7});
  EXPECT_EQ(value(gr, "one").origin, "output of node #1 (Constant)");
  EXPECT_EQ(ops(gr), std::vector<std::string>{"identity"});
}

TEST(OnnxShapes, ValueInfoDimParamAndOtherOps) {
  using namespace onnx_build;
  auto m = model(13);
  auto& g = *m.mutable_graph();
  input(g, "x", {-1, 8});
  output(g, "y", {-1, 2});
  value_info(g, "h", {-1, 2});
  initializer(g, "w", {8, 2}, std::vector<double>(16, 0.5));
  node(g, "MatMul", {"x", "w"}, {"h"}, "mm");
  auto& sm = node(g, "Softmax", {"h"}, {"s"}, "sm");
  attr_i(sm, "axis", -1);
  node(g, "Neg", {"s"}, {"y"}, "neg");
  const auto bytes = serialize(m);
  const Graph gr = normcore::import::parse_onnx(bytes, "m.onnx");
  EXPECT_EQ(ops(gr), (std::vector<std::string>{"matmul", "other:Softmax", "neg"}));
  EXPECT_EQ(value(gr, "h").shape, (Shape{-1, 2}));
  EXPECT_FALSE(value(gr, "s").shape_known);  // no rule for Softmax, no value_info
  EXPECT_EQ(gr.nodes[1].attrs.at("axis").i, -1);
  EXPECT_EQ(value(gr, "y").shape, (Shape{-1, 2}));  // declared graph output
}

TEST(OnnxShapes, InitializersListedAsInputsSqueezeFlattenCast) {
  using namespace onnx_build;
  auto m = model(11);  // IR < 4 style: initializers also appear among the graph inputs
  auto& g = *m.mutable_graph();
  input(g, "x", {2, 1, 3, 1});
  input(g, "w", {3});
  output(g, "y", {2, 3});
  output(g, "z", {2, 3});
  initializer(g, "w", {3}, {1, 2, 3});
  attr_ints(node(g, "Squeeze", {"x"}, {"sq"}, "sq"), "axes", {1, -1});
  auto& fl = node(g, "Flatten", {"x"}, {"fl"}, "fl");
  attr_i(fl, "axis", 2);
  attr_i(node(g, "Cast", {"sq"}, {"c"}, "cast"), "to", onnx::TensorProto_DataType_DOUBLE);
  node(g, "Mul", {"c", "w"}, {"y"}, "mul");
  node(g, "Squeeze", {"x"}, {"z"}, "sq_all");
  const auto bytes = serialize(m);
  const Graph gr = normcore::import::parse_onnx(bytes, "m.onnx");
  EXPECT_EQ(gr.inputs, std::vector<int>{gr.find("x")});
  EXPECT_TRUE(value(gr, "w").constant.has_value());
  EXPECT_EQ(ops(gr), (std::vector<std::string>{"reshape", "reshape", "convert", "mul", "reshape"}));
  EXPECT_EQ(value(gr, "sq").shape, (Shape{2, 3}));
  EXPECT_EQ(value(gr, "fl").shape, (Shape{2, 3}));
  EXPECT_EQ(value(gr, "c").dtype, "f64");
  EXPECT_EQ(value(gr, "c").shape, (Shape{2, 3}));
  EXPECT_EQ(producer(gr, "z").attrs.at("shape").ints, (Shape{2, 3}));
}

// =============================================================================================
// HLO

Graph hlo(const std::string& text) {
  return normcore::import::parse_hlo(text, "m.hlo");
}

TEST(HloFlax, DecomposedChain) {
  const auto f = hlo_flax_bn(3);
  const Graph g = hlo(f.text);
  EXPECT_EQ(g.format, "hlo");
  EXPECT_EQ(ops(g),
            (std::vector<std::string>{"reshape", "broadcast", "sub", "broadcast", "add", "rsqrt",
                                      "mul", "broadcast", "mul", "broadcast", "add"}));
  ASSERT_EQ(g.inputs.size(), 5U);
  for (std::size_t i = 0; i < 5; ++i) {
    const Value& p = g.values[static_cast<std::size_t>(g.inputs[i])];
    EXPECT_EQ(p.name, f.params[i]);
    EXPECT_EQ(p.origin, "parameter(" + std::to_string(i) + ") '" + f.params[i] + "'");
    EXPECT_FALSE(p.constant.has_value());
    EXPECT_EQ(p.producer, -1);
  }
  EXPECT_EQ(value(g, "Arg_0.1").shape, (Shape{2, 4, 4, 3}));
  EXPECT_EQ(value(g, "Arg_0.1").dtype, "f32");
  EXPECT_EQ(value(g, "Arg_1.2").shape, Shape{3});

  const Node& reshape = producer(g, "reshape.6");
  EXPECT_EQ(in_name(g, reshape, 0), "Arg_1.2");
  EXPECT_EQ(reshape.attrs.at("shape").ints, (Shape{1, 1, 1, 3}));
  EXPECT_EQ(reshape.location, "line " + std::to_string(line_of(f.text, "%reshape.6 =")));
  EXPECT_EQ(producer(g, "broadcast.7").attrs.at("dims").ints, (Shape{0, 1, 2, 3}));
  const Node& sub = producer(g, "subtract.8");
  EXPECT_EQ(in_name(g, sub, 0), "Arg_0.1");
  EXPECT_EQ(in_name(g, sub, 1), "broadcast.7");

  EXPECT_EQ(data(g, "constant.9"), std::vector<double>{1e-05});
  EXPECT_EQ(value(g, "constant.9").shape, Shape{});
  EXPECT_EQ(value(g, "constant.9").origin, "constant 'constant.9'");
  EXPECT_TRUE(producer(g, "broadcast.10").attrs.at("dims").ints.empty());
  const Node& add_eps = producer(g, "add.11");
  EXPECT_EQ(in_name(g, add_eps, 0), "Arg_2.3");
  EXPECT_EQ(in_name(g, add_eps, 1), "broadcast.10");
  EXPECT_EQ(in_name(g, producer(g, "rsqrt.12"), 0), "add.11");
  const Node& mul = producer(g, "multiply.13");
  EXPECT_EQ(in_name(g, mul, 0), "rsqrt.12");
  EXPECT_EQ(in_name(g, mul, 1), "Arg_3.4");
  EXPECT_EQ(producer(g, "broadcast.14").attrs.at("dims").ints, Shape{3});
  EXPECT_EQ(value(g, "broadcast.14").shape, (Shape{2, 4, 4, 3}));
  EXPECT_EQ(producer(g, "broadcast.16").attrs.at("dims").ints, Shape{3});
  EXPECT_EQ(in_name(g, producer(g, "broadcast.16"), 0), "Arg_4.5");
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.outputs[0])].name, "add.17");
  EXPECT_EQ(producer(g, "add.17").attrs.count("metadata"), 0U);
}

TEST(HloFlax, ChannelCountFollowsFixture) {
  const auto f = hlo_flax_bn(8);
  const Graph g = hlo(f.text);
  EXPECT_EQ(value(g, "Arg_4.5").shape, Shape{8});
  EXPECT_EQ(value(g, "add.17").shape, (Shape{2, 4, 4, 8}));
  EXPECT_EQ(f.bn.channels(), 8U);
}

TEST(HloNested, CallAndFusionAreInlined) {
  const auto f = hlo_nested_bn(HloTail::none);
  const Graph g = hlo(f.text);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"broadcast", "add", "rsqrt", "mul", "broadcast",
                                              "sub", "broadcast", "mul", "broadcast", "add"}));
  for (const auto& n : g.nodes) EXPECT_NE(n.op, "call");
  ASSERT_EQ(g.inputs.size(), 1U);
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.inputs[0])].name, "Arg_0.1");
  // Inlined names carry the call path; parameters of the callees map to the call operands.
  const Node& sub = producer(g, "call.6/subtract.14");
  EXPECT_EQ(in_name(g, sub, 0), "Arg_0.1");
  const Node& bmean = producer(g, "call.6/broadcast.13");
  EXPECT_EQ(in_name(g, bmean, 0), "constant.2");
  EXPECT_EQ(bmean.attrs.at("dims").ints, Shape{1});
  EXPECT_EQ(data(g, "constant.2"), f.bn.mean);
  EXPECT_EQ(data(g, "constant.3"), f.bn.var);
  EXPECT_EQ(data(g, "constant.4"), f.bn.gamma);
  EXPECT_EQ(data(g, "constant.5"), f.bn.beta);
  const Node& add_eps = producer(g, "call.6/fusion.11/add.2");
  EXPECT_EQ(in_name(g, add_eps, 0), "constant.3");
  EXPECT_EQ(in_name(g, add_eps, 1), "call.6/fusion.11/broadcast.1");
  EXPECT_EQ(in_name(g, producer(g, "call.6/fusion.11/broadcast.1"), 0), "call.6/constant.10");
  EXPECT_EQ(data(g, "call.6/constant.10"), std::vector<double>{0.001});
  EXPECT_EQ(add_eps.location, "line " + std::to_string(line_of(f.text, "%add.2 =")));
  const Node& mul = producer(g, "call.6/multiply.12");
  EXPECT_EQ(in_name(g, mul, 0), "call.6/fusion.11/rsqrt.3");
  EXPECT_EQ(in_name(g, mul, 1), "constant.4");
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.outputs[0])].name, "call.6/add.18");
  EXPECT_EQ(value(g, "call.6/add.18").shape, (Shape{1, 3, 2, 2}));
}

TEST(HloNested, ReluTailAsMaximumOfBroadcastZero) {
  const auto f = hlo_nested_bn(HloTail::relu);
  EXPECT_EQ(f.bn.activation, "relu");
  const Graph g = hlo(f.text);
  ASSERT_GE(g.nodes.size(), 2U);
  const Node& mx = g.nodes.back();
  EXPECT_EQ(mx.op, "max");
  EXPECT_EQ(in_name(g, mx, 0), "call.6/add.18");
  const Node& bz = producer(g, in_name(g, mx, 1));
  EXPECT_EQ(bz.op, "broadcast");
  EXPECT_TRUE(bz.attrs.at("dims").ints.empty());
  EXPECT_EQ(data(g, in_name(g, bz, 0)), std::vector<double>{0});
  EXPECT_EQ(g.outputs, std::vector<int>{mx.outputs[0]});
}

TEST(HloNative, BatchNormInference) {
  for (const std::int64_t fi : {1, 3}) {
    const auto f = hlo_native_bn(fi, HloTail::none);
    const Graph g = hlo(f.text);
    ASSERT_EQ(ops(g), std::vector<std::string>{"bn"});
    const Node& bn = g.nodes[0];
    EXPECT_EQ(bn.name, "bn.6");
    ASSERT_EQ(bn.inputs.size(), 5U);
    EXPECT_EQ(in_name(g, bn, 0), "x.1");
    EXPECT_EQ(data(g, in_name(g, bn, 1)), f.bn.gamma);
    EXPECT_EQ(data(g, in_name(g, bn, 2)), f.bn.beta);
    EXPECT_EQ(data(g, in_name(g, bn, 3)), f.bn.mean);
    EXPECT_EQ(data(g, in_name(g, bn, 4)), f.bn.var);
    EXPECT_EQ(*bn.attrs.at("epsilon").f, 0.001);
    EXPECT_EQ(bn.attrs.at("axis").i, fi);
    EXPECT_EQ(value(g, "scale.2").shape, Shape{3});
    EXPECT_EQ(value(g, "bn.6").shape, fi == 1 ? (Shape{1, 3, 2, 2}) : (Shape{1, 2, 2, 3}));
    EXPECT_EQ(g.outputs, std::vector<int>{bn.outputs[0]});
  }
}

TEST(HloNative, ClampTailInputsReordered) {
  const auto f = hlo_native_bn(1, HloTail::clamp);
  EXPECT_EQ(f.bn.activation, "clamp");
  const Graph g = hlo(f.text);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"bn", "clamp"}));
  const Node& cl = g.nodes[1];
  ASSERT_EQ(cl.inputs.size(), 3U);
  EXPECT_EQ(in_name(g, cl, 0), "bn.6");                           // x first
  EXPECT_EQ(data(g, in_name(g, cl, 1)), std::vector<double>{0});  // then min
  EXPECT_EQ(data(g, in_name(g, cl, 2)), std::vector<double>{6});  // then max
  EXPECT_EQ(in_name(g, cl, 1), "constant.7");
  EXPECT_EQ(in_name(g, cl, 2), "constant.8");
}

TEST(HloSyntax, OlderTypedOperandsBareNamesCommentsTuples) {
  const std::string text =
      R"hlo(HloModule m, is_scheduled=true, entry_computation_layout={(f32[2,3]{1,0})->(f32[2,3]{1,0}, s32[])}

// a line comment
region_0.1 {
  Arg_0.2 = f32[] parameter(0)
  ROOT neg.3 = f32[] negate(f32[] Arg_0.2)
}

ENTRY main.9 {
  p = f32[2,3]{1,0:T(2,128)} parameter(0), sharding={replicated}
  c = f32[2,3]{1,0} constant({ { 1, 2.5, -3 }, { 4e-1, -inf, 0 } })
  k = s32[] constant(7), metadata={op_name="a\"quoted,{odd}\"name" source_line=3}
  flags = pred[2]{0} constant({true, false})
  big = f32[1000]{0} constant({...})
  sum = f32[2,3]{1,0} add(f32[2,3]{1,0} %p, f32[2,3]{1,0} %c), metadata={op_type="add" op_name="x/y(z)"}
  t = (f32[2,3]{1,0}, s32[]) tuple(sum, /*index=1*/k)
  g0 = f32[2,3]{1,0} get-tuple-element((f32[2,3]{1,0}, s32[]) t), index=0
  tr = f32[3,2]{1,0} transpose(g0), dimensions={1,0}
  ROOT out = (f32[2,3]{1,0}, s32[]) tuple(g0, k)
}
)hlo";
  const Graph g = hlo(text);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"add", "other:transpose"}));
  EXPECT_EQ(data(g, "c"),
            (std::vector<double>{1, 2.5, -3, 0.4, -std::numeric_limits<double>::infinity(), 0}));
  EXPECT_EQ(value(g, "c").constant->shape, (Shape{2, 3}));
  EXPECT_EQ(data(g, "k"), std::vector<double>{7});
  EXPECT_EQ(value(g, "k").dtype, "s32");
  EXPECT_EQ(data(g, "flags"), (std::vector<double>{1, 0}));
  EXPECT_FALSE(value(g, "big").constant.has_value());  // elided literal
  EXPECT_EQ(value(g, "big").shape, Shape{1000});
  EXPECT_EQ(in_name(g, g.nodes[0], 0), "p");
  EXPECT_EQ(in_name(g, g.nodes[0], 1), "c");
  EXPECT_EQ(in_name(g, g.nodes[1], 0), "sum");  // get-tuple-element of a tuple resolves
  EXPECT_EQ(g.nodes[1].attrs.at("dimensions").ints, (Shape{1, 0}));
  EXPECT_EQ(g.outputs, (std::vector<int>{g.find("sum"), g.find("k")}));
  EXPECT_EQ(g.inputs, std::vector<int>{g.find("p")});
  EXPECT_EQ(value(g, "p").shape, (Shape{2, 3}));
}

TEST(HloSyntax, DynamicDimsNoSignatureNoRootAndStackFrames) {
  const std::string text =
      "HloModule m\n"
      "ENTRY %e {\n"
      "  %a = f32[?,4]{1,0} parameter(1)\n"
      "  %b = f32[<=8,4]{1,0} parameter(0)\n"
      "  %m = f32[?,4]{1,0} multiply(%a, %b)\n"
      "}\n"
      "\n"
      "FileNames\n"
      "1 \"/tmp/x.py\"\n"
      "StackFrames\n"
      "1 {file_location_id=1 parent_frame_id=1}\n";
  const Graph g = hlo(text);
  EXPECT_EQ(ops(g), std::vector<std::string>{"mul"});
  EXPECT_EQ(value(g, "a").shape, (Shape{-1, 4}));
  EXPECT_EQ(value(g, "b").shape, (Shape{8, 4}));
  EXPECT_EQ(g.inputs, (std::vector<int>{g.find("b"), g.find("a")}));  // by parameter number
  EXPECT_EQ(g.outputs, std::vector<int>{g.find("m")});
}

TEST(HloSyntax, OtherOpsKeepAttributes) {
  const std::string text = R"hlo(HloModule m
ENTRY %e (x: f32[1,8,8,3], w: f32[3,3,3,4]) -> f32[1,8,8,4] {
  %x = f32[1,8,8,3]{3,2,1,0} parameter(0)
  %w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  %conv = f32[1,8,8,4]{3,2,1,0} convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=1
  ROOT %cvt = f16[1,8,8,4]{3,2,1,0} convert(%conv)
}
)hlo";
  const Graph g = hlo(text);
  EXPECT_EQ(ops(g), (std::vector<std::string>{"conv", "convert"}));
  EXPECT_EQ(g.nodes[0].attrs.at("window").s, "{size=3x3 pad=1_1x1_1}");
  EXPECT_EQ(g.nodes[0].attrs.at("dim_labels").s, "b01f_01io->b01f");
  EXPECT_EQ(g.nodes[0].attrs.at("feature_group_count").i, 1);
  EXPECT_EQ(value(g, "cvt").dtype, "f16");
}

// ---------------------------------------------------------------------------------------------
// Malformed text: errors name the line.

void expect_hlo_error(const std::string& text, int line, const std::string& part) {
  const std::string msg = error_of([&] { hlo(text); });
  EXPECT_EQ(msg.rfind(at_line("m.hlo", line), 0), 0U) << "message: " << msg;
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg;
}

TEST(HloErrors, MissingEntry) {
  std::string text = hlo_native_bn().text;
  text.replace(text.find("ENTRY "), 6, "");
  expect_hlo_error(text, 1, "no ENTRY computation");
}

TEST(HloErrors, UnknownOperand) {
  std::string text = hlo_flax_bn().text;
  text.replace(text.find("rsqrt(%add.11)"), 14, "rsqrt(%add.99)");
  expect_hlo_error(text, line_of(text, "%rsqrt.12 ="), "unknown operand 'add.99'");
}

TEST(HloErrors, UnknownOperandInCalledComputation) {
  std::string text = hlo_nested_bn().text;
  const auto pos = text.find("subtract(%x.5");
  text.replace(pos, 13, "subtract(%x.7");
  expect_hlo_error(text, line_of(text, "%subtract.14 ="), "unknown operand 'x.7'");
}

TEST(HloErrors, OperandUsedBeforeDefinition) {
  const std::string text =
      "HloModule m\nENTRY %e {\n  %a = f32[] negate(%b)\n"
      "  ROOT %b = f32[] parameter(0)\n}\n";
  expect_hlo_error(text, 3, "operand 'b' is used before its definition (line 4)");
}

TEST(HloErrors, UnbalancedBraceInAttribute) {
  std::string text = hlo_flax_bn().text;
  text.replace(text.find("dimensions={3}"), 14, "dimensions={3");
  expect_hlo_error(text, line_of(text, "%broadcast.14 ="), "unbalanced braces");
}

TEST(HloErrors, ComputationNotClosed) {
  std::string text = hlo_nested_bn().text;
  // Drop the '}' closing %fused_inv_std: detected at the next computation's header.
  text.replace(text.find("}\n\n%bn_block.4"), 3, "");
  expect_hlo_error(text, line_of(text, "%bn_block.4 ("), "computation 'fused_inv_std' (line 3)");
  // Drop the final '}': detected at the end of the text.
  std::string t2 = hlo_native_bn().text;
  t2.erase(t2.rfind('}'));
  expect_hlo_error(t2, line_of(t2, "ROOT %bn.6"), "never closed");
}

TEST(HloErrors, StrayClosingBrace) {
  const std::string text = "HloModule m\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n}\n}\n";
  expect_hlo_error(text, 5, "'}' outside any computation");
}

TEST(HloErrors, BadShapes) {
  const std::string base = hlo_native_bn().text;
  {
    std::string t = base;
    t.replace(t.find("%x.1 = f32[1,3,2,2]"), 19, "%x.1 = f32[1,3,x,2]");
    expect_hlo_error(t, line_of(t, "%x.1 = "), "a dimension size");
  }
  {
    std::string t = base;
    t.replace(t.find("%scale.2 = f32[3]{0}"), 20, "%scale.2 = f33[3]{0}");
    expect_hlo_error(t, line_of(t, "%scale.2 ="), "unknown element type 'f33'");
  }
  {
    std::string t = base;
    t.replace(t.find("%mean.4 = f32[3]{0}"), 19, "%mean.4 = f32[3 {0}");
    expect_hlo_error(t, line_of(t, "%mean.4 ="), "malformed shape");
  }
}

TEST(HloErrors, BadLiteralsAndOperandCounts) {
  const std::string base = hlo_native_bn().text;
  {
    std::string t = base;
    t.replace(t.find("constant({0.5"), 13, "constant({0.5, 9");
    expect_hlo_error(t, line_of(t, "%scale.2 ="), "4 value(s) for shape f32[3]");
  }
  {
    std::string t = base;
    t.replace(t.find("constant({0.5"), 13, "constant({zz");
    expect_hlo_error(t, line_of(t, "%scale.2 ="), "'zz' is not a number");
  }
  {
    std::string t = base;
    t.replace(t.find(", %variance.5)"), 14, ")");
    expect_hlo_error(t, line_of(t, "%bn.6 ="), "batch-norm-inference takes 5 operand(s), got 4");
  }
  {
    std::string t = base;
    t.replace(t.find(", epsilon=0.001"), 15, "");
    expect_hlo_error(t, line_of(t, "%bn.6 ="), "needs epsilon=");
  }
}

TEST(HloErrors, BadCalls) {
  {
    std::string t = hlo_nested_bn().text;
    t.replace(t.find("to_apply=%bn_block.4"), 20, "to_apply=%bn_block.5");
    expect_hlo_error(t, line_of(t, "%call.6 ="), "unknown computation 'bn_block.5'");
  }
  {
    const std::string t =
        "HloModule m\n%f (a: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  ROOT %c = f32[] call(%a), to_apply=%f\n}\n"
        "ENTRY %e {\n  %p = f32[] parameter(0)\n"
        "  ROOT %r = f32[] call(%p), to_apply=%f\n}\n";
    expect_hlo_error(t, 4, "recursive call of computation 'f'");
  }
  {
    std::string t = hlo_nested_bn().text;
    t.replace(t.find(", %constant.5), to_apply"), 24, "), to_apply");
    expect_hlo_error(t, line_of(t, "%bias.9 = "), "parameter(4) but the call passes 4 operand(s)");
  }
}

TEST(HloErrors, ExpectedEqualsAndGarbage) {
  expect_hlo_error("HloModule m\nENTRY %e {\n  %a f32[] parameter(0)\n}\n", 3, "expected '='");
  expect_hlo_error("HloModule m\ngarbage here\n", 2, "expected a computation");
}

TEST(HloLoad, MissingFileAndRoundTrip) {
  const std::string msg = error_of([] { normcore::import::load_hlo("/nonexistent/m.hlo"); });
  EXPECT_NE(msg.find("/nonexistent/m.hlo"), std::string::npos) << msg;
  const auto path = std::filesystem::temp_directory_path() /
                    ("normcore_hlo_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".hlo");
  {
    std::ofstream out(path);
    out << hlo_native_bn(3).text;
  }
  const Graph g = normcore::import::load_hlo(path);
  std::filesystem::remove(path);
  EXPECT_EQ(g.source, path.string());
  EXPECT_EQ(ops(g), std::vector<std::string>{"bn"});
}

}  // namespace
