// The MLIR text front end (StableHLO, TOSA): syntax (pretty and generic forms, calls, aliases,
// locations), constants (decimal, lists, splat, hex), lowering to the graph, the recogniser on
// its graphs, and errors with file:line:column.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "normcore/import/mlir.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"
#include "test_errors.hpp"
#include "test_paths.hpp"

namespace {

using normcore::import::Graph;
using normcore::import::Node;
using normcore::import::Value;
using Shape = std::vector<std::int64_t>;

Graph mlir(const std::string& text) {
  return normcore::import::parse_mlir(text, "m.mlir");
}

using normcore::test::error_of;

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n.op);
  return out;
}

const Value& value(const Graph& g, const std::string& name) {
  const int v = g.find(name);
  if (v < 0) throw std::runtime_error("no value " + name);
  return g.values[static_cast<std::size_t>(v)];
}

// A Flax-style decomposed BN, NHWC [1,2,2,3], parameters as constants; `pre` / `post` wrap it.
std::string stablehlo_bn(const std::string& eps = "dense<1.000000e-03> : tensor<f32>") {
  return R"(#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<1x2x2x3xf32> {mhlo.layout_mode = "default"} loc("x")) -> (tensor<1x2x2x3xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<[0.5, -0.75, 1.0]> : tensor<3xf32> loc(#loc1)
    %cst_0 = stablehlo.constant dense<"0x0000803F000000400000403F"> : tensor<3xf32>
    %cst_1 = stablehlo.constant dense<[-2.500000e-01, 0.0, 1.250000e-01]> : tensor<3xf32>
    %cst_2 = stablehlo.constant dense<0.25> : tensor<3xf32>
    %0 = stablehlo.broadcast_in_dim %cst_1, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32>
    %2 = stablehlo.subtract %arg0, %1 : tensor<1x2x2x3xf32>
    %eps = stablehlo.constant )" +
         eps + R"(
    %3 = stablehlo.broadcast_in_dim %eps, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %4 = "stablehlo.add"(%cst_0, %3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %5 = stablehlo.rsqrt %4 : tensor<3xf32>
    %6 = stablehlo.multiply %5, %cst : tensor<3xf32>
    %7 = stablehlo.reshape %6 : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32>
    %9 = stablehlo.multiply %2, %8 : tensor<1x2x2x3xf32>
    %10 = stablehlo.broadcast_in_dim %cst_2, dims = [3] : (tensor<3xf32>) -> tensor<1x2x2x3xf32>
    %11 = stablehlo.add %9, %10 : tensor<1x2x2x3xf32>
    %12 = call @relu(%11) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    return %12 : tensor<1x2x2x3xf32>
  }
  func.func private @relu(%arg0: tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x2x2x3xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x2x2x3xf32>
    return %1 : tensor<1x2x2x3xf32>
  }
}
)";
}

TEST(MlirStablehlo, LowersTheFlaxChain) {
  const Graph g = mlir(stablehlo_bn());
  EXPECT_EQ(g.format, "mlir");
  ASSERT_EQ(g.inputs.size(), 1U);
  EXPECT_EQ(value(g, "arg0").shape, (Shape{1, 2, 2, 3}));
  EXPECT_EQ(value(g, "arg0").origin, "parameter(0) 'arg0'");
  EXPECT_EQ(ops(g), (std::vector<std::string>{"broadcast", "broadcast", "sub", "broadcast", "add",
                                              "rsqrt", "mul", "reshape", "broadcast", "mul",
                                              "broadcast", "add", "broadcast", "max"}));
  // Constants: a list, hex (little-endian f32 1, 2, 0.75), splat.
  EXPECT_EQ(value(g, "cst").constant->data, (std::vector<double>{0.5, -0.75, 1.0}));
  EXPECT_EQ(value(g, "cst_0").constant->data, (std::vector<double>{1.0, 2.0, 0.75}));
  EXPECT_EQ(value(g, "cst_2").constant->data, (std::vector<double>{0.25, 0.25, 0.25}));
  EXPECT_EQ(value(g, "eps").constant->shape, Shape{});
  // The call is inlined: its values are prefixed.
  EXPECT_GE(g.find("12/1"), 0);
  EXPECT_EQ(g.outputs, std::vector<int>{g.find("12/1")});
  EXPECT_EQ(g.nodes[0].attrs.at("dims").ints, Shape{3});
  EXPECT_EQ(g.nodes[0].location, "line 8");
}

TEST(MlirStablehlo, RecognisedWithAxisEpsAndRoles) {
  const auto rec = normcore::import::recognise(mlir(stablehlo_bn()));
  ASSERT_EQ(rec.layers.size(), 1U);
  const auto& m = rec.layers[0];
  EXPECT_EQ(m.channel_axis, 3);
  EXPECT_EQ(m.layout, normcore::Layout::nhwc);
  EXPECT_EQ(m.activation, "relu");
  ASSERT_TRUE(m.complete);
  EXPECT_EQ(m.eps, static_cast<double>(1e-3f));  // decimals of f32 tensors are rounded to f32
  EXPECT_EQ(m.params.gamma, (std::vector<double>{0.5, -0.75, 1.0}));
  EXPECT_EQ(m.params.var, (std::vector<double>{1.0, 2.0, 0.75}));
  EXPECT_EQ(m.params.mean, (std::vector<double>{-0.25, 0.0, 0.125}));
  EXPECT_EQ(m.params.beta, (std::vector<double>{0.25, 0.25, 0.25}));
}

TEST(MlirStablehlo, HexScalarsAndSplats) {
  // eps as a hex f32 bit pattern (0x3A83126F = 0.001f) and as a one-element hex splat.
  for (const std::string eps :
       {"dense<0x3A83126F> : tensor<f32>", "dense<\"0x6F12833A\"> : tensor<f32>"}) {
    const auto rec = normcore::import::recognise(mlir(stablehlo_bn(eps)));
    ASSERT_EQ(rec.layers.size(), 1U) << eps;
    EXPECT_EQ(rec.layers[0].eps, static_cast<double>(1e-3f)) << eps;
  }
  const Graph g = mlir(R"(func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c = stablehlo.constant dense<"0x0000C03F"> : tensor<2x2xf32>
  %h = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xbf16>
  %i = stablehlo.constant dense<"0xFF00FE00"> : tensor<2xi16>
  %b = stablehlo.constant dense<true> : tensor<2xi1>
  %0 = stablehlo.add %x, %c : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
})");
  EXPECT_EQ(value(g, "c").constant->data, (std::vector<double>(4, 1.5)));
  EXPECT_EQ(value(g, "h").constant->data, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(value(g, "i").constant->data, (std::vector<double>{255, 254}));
  EXPECT_EQ(value(g, "b").constant->data, (std::vector<double>{1, 1}));
}

TEST(MlirStablehlo, GenericBatchNormInference) {
  const Graph g = mlir(R"(module {
  func.func @main(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
    %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
    "func.return"(%0) : (tensor<2x3x4x4xf32>) -> ()
  }
})");
  ASSERT_EQ(ops(g), std::vector<std::string>{"bn"});
  EXPECT_EQ(*g.nodes[0].attrs.at("epsilon").f, static_cast<double>(1e-3f));
  EXPECT_EQ(*g.nodes[0].attrs.at("axis").i, 1);
  const auto rec = normcore::import::recognise(g);
  ASSERT_EQ(rec.layers.size(), 1U);
  EXPECT_EQ(rec.layers[0].pattern, "batchnorm");
  EXPECT_EQ(rec.layers[0].channel_axis, 1);
  EXPECT_EQ(rec.layers[0].gamma_value, g.find("s"));
  EXPECT_EQ(rec.layers[0].var_value, g.find("v"));
}

TEST(MlirStablehlo, UnknownDialectOpsAreOpaqueTrainingIsANearMiss) {
  const Graph g = mlir(
      R"(func.func @main(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = mydialect.frobnicate %x : tensor<2x3xf32>
  %1:3 = "stablehlo.batch_norm_training"(%0, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %1#0 : tensor<2x3xf32>
})");
  EXPECT_EQ(ops(g), (std::vector<std::string>{"other:mydialect.frobnicate",
                                              "other:stablehlo.batch_norm_training"}));
  EXPECT_EQ(g.nodes[1].outputs.size(), 3U);
  const auto rec = normcore::import::recognise(g);
  EXPECT_TRUE(rec.layers.empty());
  ASSERT_EQ(rec.near_misses.size(), 1U);
  EXPECT_NE(rec.near_misses[0].reason.find("training"), std::string::npos);
}

// torch-mlir TorchToTosa style: NCHW, parameters reshaped to [1,C,1,1], mul with a shift
// operand (TOSA 1.0) or a shift attribute (older TOSA).
std::string tosa_bn(const std::string& mul1, const std::string& mul2) {
  return R"(module attributes {torch.debug_module_name = "M"} {
  func.func @forward(%arg0: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %0 = "tosa.const"() <{values = dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %1 = "tosa.const"() <{values = dense<[1.000000e+00, 3.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %2 = "tosa.const"() <{values = dense<[-1.000000e+00, 1.500000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %3 = "tosa.const"() <{values = dense<[2.500000e-01, -5.000000e-01]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %eps = "tosa.const"() <{values = dense<9.99999974E-6> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %s4 = tosa.const_shape {values = dense<[1, 2, 1, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %m = tosa.reshape %0, %s4 : (tensor<2xf32>, !tosa.shape<4>) -> tensor<1x2x1x1xf32>
    %v = tosa.reshape %1, %s4 : (tensor<2xf32>, !tosa.shape<4>) -> tensor<1x2x1x1xf32>
    %g = tosa.reshape %2, %s4 : (tensor<2xf32>, !tosa.shape<4>) -> tensor<1x2x1x1xf32>
    %b = tosa.reshape %3 {new_shape = array<i64: 1, 2, 1, 1>} : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
    %4 = tosa.sub %arg0, %m : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %5 = tosa.add %v, %eps : (tensor<1x2x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x2x1x1xf32>
    %6 = tosa.rsqrt %5 : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
    %7 = )" +
         mul1 +
         R"(
    %8 = )" +
         mul2 +
         R"(
    %9 = tosa.add %8, %b : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %10 = tosa.clamp %9 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    return %10 : tensor<1x2x3x3xf32>
  }
}
)";
}

const char* kMulOperand =
    "tosa.mul %4, %6, %shift : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>, tensor<1xi8>) -> "
    "tensor<1x2x3x3xf32>";
const char* kMulAttr =
    "tosa.mul %7, %g {shift = 0 : i8} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> "
    "tensor<1x2x3x3xf32>";

TEST(MlirTosa, TorchToTosaBatchNorm) {
  const Graph g = mlir(tosa_bn(kMulOperand, kMulAttr));
  EXPECT_EQ(ops(g), (std::vector<std::string>{"reshape", "reshape", "reshape", "reshape", "sub",
                                              "add", "rsqrt", "mul", "mul", "add", "relu"}));
  EXPECT_EQ(g.nodes[7].inputs.size(), 2U);  // the shift operand is checked and dropped
  EXPECT_EQ(g.nodes[0].inputs.size(), 1U);  // the shape operand too
  const auto rec = normcore::import::recognise(g);
  ASSERT_EQ(rec.layers.size(), 1U);
  const auto& m = rec.layers[0];
  EXPECT_EQ(m.channel_axis, 1);
  EXPECT_EQ(m.layout, normcore::Layout::nchw);
  ASSERT_TRUE(m.complete);
  EXPECT_EQ(m.eps, static_cast<double>(1e-5f));
  EXPECT_EQ(m.params.mean, (std::vector<double>{0.5, 2.0}));
  EXPECT_EQ(m.params.var, (std::vector<double>{1.0, 3.0}));
  EXPECT_EQ(m.params.gamma, (std::vector<double>{-1.0, 1.5}));
  EXPECT_EQ(m.params.beta, (std::vector<double>{0.25, -0.5}));
  EXPECT_EQ(m.activation, "relu");  // tosa.clamp to [0, FLT_MAX]
}

TEST(MlirTosa, ReciprocalOfSqrtForm) {
  // rsqrt written as reciprocal(pow(v + eps, 0.5)).
  std::string t = tosa_bn(kMulOperand, kMulAttr);
  const std::string rs = "%6 = tosa.rsqrt %5 : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>";
  t.replace(t.find(rs), rs.size(),
            "%half = \"tosa.const\"() <{values = dense<5.000000e-01> : tensor<1x1x1x1xf32>}> : () "
            "-> tensor<1x1x1x1xf32>\n    %sq = tosa.pow %5, %half : (tensor<1x2x1x1xf32>, "
            "tensor<1x1x1x1xf32>) -> tensor<1x2x1x1xf32>\n    %6 = tosa.reciprocal %sq : "
            "(tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>");
  const auto rec = normcore::import::recognise(mlir(t));
  ASSERT_EQ(rec.layers.size(), 1U);
  ASSERT_TRUE(rec.layers[0].complete);
  EXPECT_EQ(rec.layers[0].params.var, (std::vector<double>{1.0, 3.0}));
}

// Errors name file:line:column.
void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  const std::string msg = error_of([&] { (void)mlir(text); });
  EXPECT_EQ(msg.rfind("m.mlir:" + where + ": ", 0), 0U) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
}

TEST(MlirErrors, LineAndColumn) {
  const std::string head = "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n";
  expect_error(head + "  %0 = stablehlo.rsqrtt %x : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}",
               "2:8", "unknown stablehlo op 'stablehlo.rsqrtt' (did you mean 'stablehlo.rsqrt'?)");
  expect_error(head +
                   "  %0 = tosa.mull %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
                   "  return %0 : tensor<3xf32>\n}",
               "2:8", "did you mean 'tosa.mul'?");
  expect_error(head + "  %0 = stablehlo.add %x, %y : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}",
               "2:8", "use of undefined value %y");
  expect_error(head + "  %0 = stablehlo.add %x, %x : tensor<4xf32>\n  return %0 : tensor<3xf32>\n}",
               "2:8", "result type tensor<4xf32> does not match the operands' shape [3]");
  expect_error(head + "  %0 = stablehlo.add %x, %x : tensor<3xf32\n  return %0 : tensor<3xf32>\n}",
               "2:37", "'<' is never closed");
  expect_error(head +
                   "  %c = stablehlo.constant dense<\"0x0000\"> : tensor<3xf32>\n  return %c : "
                   "tensor<3xf32>\n}",
               "2:27", "2 bytes of data for 3 element(s)");
  expect_error(head +
                   "  %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>\n  return %c : "
                   "tensor<3xf32>\n}",
               "2:27", "2 element(s) for type tensor<3xf32>");
  expect_error(head +
                   "  %s = \"tosa.const\"() <{values = dense<1> : tensor<1xi8>}> : () -> "
                   "tensor<1xi8>\n  %0 = tosa.mul %x, %x, %s : (tensor<3xf32>, tensor<3xf32>, "
                   "tensor<1xi8>) -> tensor<3xf32>\n  return %0 : tensor<3xf32>\n}",
               "3:8", "tosa.mul with shift 1");
  expect_error(head +
                   "  %0 = call @main(%x) : (tensor<3xf32>) -> tensor<3xf32>\n  return %0 : "
                   "tensor<3xf32>\n}",
               "2:8", "recursive call of @main");
  expect_error(head + "  %0 = stablehlo.add %x, %x : tensor<3xf32>\n}", "1:11",
               "does not end with return");
  expect_error(
      "func.func @main(%x: tensor<3x?f32>) -> tensor<3xf32> {\n  return %x : tensor<3xf32>\n}",
      "1:21", "malformed tensor type");
  expect_error(
      "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  return %x : tensor<3xf32> $\n}",
      "2:29", "unexpected character '$'");
  const std::string msg = error_of([] { (void)mlir("func.func private @f(%x: tensor<3xf32>)\n"); });
  EXPECT_NE(msg.find("no entry function"), std::string::npos) << msg;
}

TEST(MlirDetect, ByContent) {
  EXPECT_TRUE(normcore::import::looks_like_mlir("// c\nmodule @jit_f {"));
  EXPECT_TRUE(normcore::import::looks_like_mlir("#loc = loc(\"a\")\nmodule {"));
  EXPECT_TRUE(normcore::import::looks_like_mlir("func.func @main() {"));
  EXPECT_FALSE(normcore::import::looks_like_mlir("HloModule m"));
  EXPECT_FALSE(normcore::import::looks_like_mlir("modules"));
}

}  // namespace

namespace {

// Every prefix of a real fixture (cut every 37 bytes) and every single-byte corruption at those
// points parses or fails with normcore::Error: never a crash or another exception.
TEST(MlirRobustness, TruncatedAndCorruptedFixtures) {
  for (const char* f :
       {"stablehlo/multi_bn.mlir", "stablehlo/conv_bn_relu_const.mlir", "tosa/conv_bn_relu.mlir"}) {
    const auto path = std::string(normcore::test::source_dir()) + "/tests/import/fixtures/" + f;
    const auto bytes = normcore::read_file_bytes(path);
    const std::string text(bytes.begin(), bytes.end());
    int errors = 0;
    for (std::size_t n = 0; n < text.size(); n += 37) {
      for (const std::string& t : {text.substr(0, n), text.substr(0, n) + "}" + text.substr(n + 1),
                                   text.substr(0, n) + "<" + text.substr(n)}) {
        try {
          (void)normcore::import::parse_mlir(t, "m.mlir");
        } catch (const normcore::Error&) {
          ++errors;
        }
      }
    }
    EXPECT_GT(errors, 0) << f;
  }
}

}  // namespace
