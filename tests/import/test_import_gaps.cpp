// The import gaps of issue 16 (each failed before): the right BN field named for bad var / mean /
// eps values, unknown HLO opcodes and wrong HLO result shapes are errors, training semantics
// refused in every ONNX opset (is_test=0 of opset <= 6 too), shapes through Transpose, and a
// model without a BN says what it found.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "import_fixtures.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/onnx.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "test_errors.hpp"

namespace {

using normcore::import::Graph;
using namespace normcore::test;

int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  return at == std::string::npos
             ? -1
             : 1 + static_cast<int>(std::count(
                       text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

using normcore::test::error_of;

// The plan's error for the Flax-style HLO BN whose var / mean / eps literal is replaced.
std::string plan_error(const std::string& from, const std::string& to) {
  auto f = hlo_flax_bn(3);
  std::string t = f.text;
  // Parameters as constants: Arg_1.2 (mean), Arg_2.3 (var), Arg_3.4 (scale), Arg_4.5 (bias).
  const std::vector<std::pair<std::string, std::string>> lit = {
      {"parameter(1)", "constant({-0.25, 0, 0.125})"},
      {"parameter(2)", "constant({1, 2, 0.75})"},
      {"parameter(3)", "constant({0.5, -0.75, 1})"},
      {"parameter(4)", "constant({0.25, 0.25, 0.25})"}};
  for (const auto& [p, c] : lit) t.replace(t.find(p), p.size(), c);
  const auto at = t.find(from);
  if (at == std::string::npos) return "fixture lacks " + from;
  t.replace(at, from.size(), to);
  const Graph g = normcore::import::parse_hlo(t, "m.hlo");
  normcore::import::PlanOptions o;
  return error_of([&] { (void)normcore::import::make_plan(g, normcore::import::recognise(g), o); });
}

TEST(ImportGaps, BadVarMeanEpsNameTheirField) {
  EXPECT_NE(plan_error("constant({1, 2, 0.75})", "constant({-1, 2, 0.75})")
                .find("var[0] + eps = -0.99999 must be > 0"),
            std::string::npos);
  EXPECT_NE(plan_error("constant({1, 2, 0.75})", "constant({1, nan, 0.75})").find("var[1] is NaN"),
            std::string::npos);
  EXPECT_NE(plan_error("constant({-0.25, 0, 0.125})", "constant({-0.25, -inf, 0.125})")
                .find("mean[1] is -Inf"),
            std::string::npos);
  EXPECT_NE(plan_error("constant(1e-05)", "constant(-1e-05)").find("eps = -1e-05 must be >= 0"),
            std::string::npos);
  // Still folded when the values are fine.
  EXPECT_EQ(plan_error("constant(1e-05)", "constant(1e-05)"), "(no error)");
}

TEST(ImportGaps, UnknownHloOpcodeIsAnError) {
  auto f = hlo_flax_bn(3);
  const std::string r = " rsqrt(";
  f.text.replace(f.text.find(r), r.size(), " rsqrtt(");
  const std::string msg = error_of([&] { (void)normcore::import::parse_hlo(f.text, "m.hlo"); });
  EXPECT_EQ(msg.rfind("m.hlo:" + std::to_string(line_of(f.text, "rsqrtt")) + ": ", 0), 0U) << msg;
  EXPECT_NE(msg.find("unknown HLO opcode 'rsqrtt' (did you mean 'rsqrt'?)"), std::string::npos)
      << msg;
}

TEST(ImportGaps, WrongHloResultShapeIsAnError) {
  auto f = hlo_flax_bn(3);
  // %add.11 = f32[3]{0} add(...): declared as f32[4].
  const std::string from = "%add.11 = f32[3]{0}";
  f.text.replace(f.text.find(from), from.size(), "%add.11 = f32[4]{0}");
  std::string msg = error_of([&] { (void)normcore::import::parse_hlo(f.text, "m.hlo"); });
  EXPECT_NE(msg.find("add: result shape [4] but operand 0 'Arg_2.3' has shape [3]"),
            std::string::npos)
      << msg;
  auto g = hlo_flax_bn(3);
  const std::string b =
      "%broadcast.14 = f32[2,4,4,3]{3,2,1,0} broadcast(%multiply.13), "
      "dimensions={3}";
  const auto at = g.text.find(b);
  ASSERT_NE(at, std::string::npos);
  g.text.replace(at, b.size(),
                 "%broadcast.14 = f32[2,4,4,3]{3,2,1,0} broadcast(%multiply.13), dimensions={2}");
  msg = error_of([&] { (void)normcore::import::parse_hlo(g.text, "m.hlo"); });
  EXPECT_NE(
      msg.find("broadcast: operand dimension 0 (size 3) maps to result dimension 2 of size 4"),
      std::string::npos)
      << msg;
}

TEST(ImportGaps, OnnxIsTestZeroIsTrainingInOpset6) {
  using namespace onnx_build;
  for (const std::int64_t is_test : {0, 1, -1}) {  // -1: no is_test attribute (its default, 0)
    for (const int opset : {6, 7}) {
      SCOPED_TRACE(std::to_string(is_test) + " opset " + std::to_string(opset));
      auto f = onnx_explicit_bn(OnnxLayout::nchw, 9);
      onnx::ModelProto m;
      ASSERT_TRUE(m.ParseFromArray(f.bytes.data(), static_cast<int>(f.bytes.size())));
      m.mutable_opset_import(0)->set_version(opset);
      if (is_test >= 0) attr_i(*m.mutable_graph()->mutable_node(0), "is_test", is_test);
      const auto bytes = serialize(m);
      const std::string msg =
          error_of([&] { (void)normcore::import::parse_onnx(bytes, "m.onnx"); });
      if (is_test == 0 || (is_test < 0 && opset == 6)) {  // opset 7 has no is_test: inference
        EXPECT_NE(msg.find("node 'bn1' (BatchNormalization): is_test=0 (training-mode"),
                  std::string::npos)
            << msg;
        EXPECT_EQ(msg.find("where 0 is the default") != std::string::npos, is_test < 0) << msg;
      } else {
        EXPECT_EQ(msg, "(no error)");
      }
    }
  }
}

// Opsets 7-13 have no training_mode: a BN whose running / saved statistics outputs (1-4) are
// used computes them from the batch, i.e. trains. Used (a graph output, or consumed): refused as
// training_mode=1 and is_test=0 are; merely named and unused (some exporters list them): folded.
TEST(ImportGaps, OnnxBatchStatisticsOutputsUsedIsTraining) {
  using namespace onnx_build;
  for (const int use : {0, 1, 2}) {  // unused, a graph output, consumed by a node
    auto f = onnx_explicit_bn(OnnxLayout::nchw, 9);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromArray(f.bytes.data(), static_cast<int>(f.bytes.size())));
    auto& g = *m.mutable_graph();
    g.mutable_node(0)->add_output("rmean");
    g.mutable_node(0)->add_output("rvar");
    if (use == 1) output(g, "rvar", {4});
    if (use == 2) {
      node(g, "Neg", {"rmean"}, {"nm"}, "neg");
      output(g, "nm", {4});
    }
    const auto bytes = serialize(m);
    std::string msg = error_of([&] {
      const Graph gr = normcore::import::parse_onnx(bytes, "m.onnx");
      if (normcore::import::recognise(gr).layers.size() != 1) throw normcore::Error("not 1 BN");
    });
    if (use == 0) {
      EXPECT_EQ(msg, "(no error)");
    } else {
      EXPECT_NE(
          msg.find(std::string("m.onnx: node 'bn1' (BatchNormalization): its "
                               "batch-statistics output '") +
                   (use == 1 ? "rvar" : "rmean") + "' is used (training-mode batch normalisation)"),
          std::string::npos)
          << msg;
    }
  }
}

// A Reshape (shape from an initializer) and a Squeeze (axes as an input, opset 13+) before the
// BN keep the data's shape known, so the layer is planned with its real shape.
TEST(ImportGaps, ShapeThroughReshapeAndSqueeze) {
  using namespace onnx_build;
  for (const std::string op : {"Reshape", "Squeeze"}) {
    SCOPED_TRACE(op);
    auto f = onnx_explicit_bn(OnnxLayout::nchw, 15);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromArray(f.bytes.data(), static_cast<int>(f.bytes.size())));
    auto& g = *m.mutable_graph();
    g.mutable_input(0)->Clear();
    g.mutable_output(0)->Clear();
    set_value_info(g.mutable_output(0), "y", {2, 4, 3, 5});
    if (op == "Reshape") {
      set_value_info(g.mutable_input(0), "x_flat", {2, 60});
      initializer(g, "shape", {4}, {2, 4, 3, 5}, onnx::TensorProto_DataType_INT64, Storage::raw);
      node(g, "Reshape", {"x_flat", "shape"}, {"x"}, "unflatten");
    } else {
      set_value_info(g.mutable_input(0), "x5", {2, 4, 3, 1, 5});
      initializer(g, "axes", {1}, {3}, onnx::TensorProto_DataType_INT64, Storage::raw);
      node(g, "Squeeze", {"x5", "axes"}, {"x"}, "squeeze");
    }
    auto* nodes = g.mutable_node();
    std::rotate(nodes->begin(), nodes->end() - 1, nodes->end());
    const Graph gr = normcore::import::parse_onnx(serialize(m), "m.onnx");
    const int x = gr.find("x");  // no value_info: the shape is propagated
    ASSERT_GE(x, 0);
    EXPECT_TRUE(gr.values[static_cast<std::size_t>(x)].shape_known);
    EXPECT_EQ(gr.values[static_cast<std::size_t>(x)].shape,
              (std::vector<std::int64_t>{2, 4, 3, 5}));
    const auto rec = normcore::import::recognise(gr);
    ASSERT_EQ(rec.layers.size(), 1U);
    EXPECT_EQ(rec.layers[0].shape, (std::vector<std::int64_t>{2, 4, 3, 5}));
    EXPECT_EQ(rec.layers[0].channel_axis, 1);
  }
}

TEST(ImportGaps, ShapeThroughTranspose) {
  // x [2,4,4,4] NHWC -> Transpose(perm 0,3,1,2) -> BatchNormalization (axis 1): the BN's input
  // shape is [2,4,4,4] in NCHW, not unknown ("[1,1]").
  using namespace onnx_build;
  auto f = onnx_explicit_bn(OnnxLayout::nchw, 15);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromArray(f.bytes.data(), static_cast<int>(f.bytes.size())));
  auto& g = *m.mutable_graph();
  g.mutable_input(0)->Clear();
  set_value_info(g.mutable_input(0), "x_nhwc", {2, 3, 5, 4});
  g.mutable_output(0)->Clear();
  set_value_info(g.mutable_output(0), "y", {2, 4, 3, 5});
  auto& t = node(g, "Transpose", {"x_nhwc"}, {"x"}, "to_nchw");
  attr_ints(t, "perm", {0, 3, 1, 2});
  // The Transpose must come first (topological order).
  auto* nodes = g.mutable_node();
  std::rotate(nodes->begin(), nodes->end() - 1, nodes->end());
  const Graph gr = normcore::import::parse_onnx(serialize(m), "m.onnx");
  const auto rec = normcore::import::recognise(gr);
  ASSERT_EQ(rec.layers.size(), 1U);
  EXPECT_EQ(rec.layers[0].shape, (std::vector<std::int64_t>{2, 4, 3, 5}));
  EXPECT_EQ(rec.layers[0].channel_axis, 1);
}

TEST(ImportGaps, NoBatchNormSaysWhatItFound) {
  using namespace onnx_build;
  auto m = model(15);
  auto& g = *m.mutable_graph();
  input(g, "x", {1, 3, 4, 4});
  output(g, "y", {1, 8, 4, 4});
  initializer(g, "w", {8, 3, 1, 1}, std::vector<double>(24, 0.5), onnx::TensorProto_DataType_FLOAT,
              Storage::raw);
  node(g, "Conv", {"x", "w"}, {"y"}, "conv1");
  const Graph gr = normcore::import::parse_onnx(serialize(m), "m.onnx");
  const auto rec = normcore::import::recognise(gr);
  EXPECT_TRUE(rec.layers.empty());
  EXPECT_EQ(rec.note.rfind("no batch norm: the layer at node 'conv1' (Conv)", 0), 0U) << rec.note;
  EXPECT_NE(rec.note.find("may already include it"), std::string::npos);
  // With a BN there is no note.
  const auto f = onnx_explicit_bn();
  EXPECT_EQ(normcore::import::recognise(normcore::import::parse_onnx(f.bytes, "m.onnx")).note, "");
}

}  // namespace
