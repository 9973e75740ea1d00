// The Relay text front end's syntax, shapes and errors, and the torch.export reader's
// strictness on damaged archives (issue 16, items 2 and 3). Framework fixtures:
// test_import_fixtures.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "normcore/import/recognise.hpp"
#include "normcore/import/relay.hpp"
#include "normcore/import/torch_export.hpp"
#include "normcore/npz.hpp"
#include "test_errors.hpp"
#include "test_paths.hpp"

namespace {

using normcore::import::Graph;
using normcore::test::error_of;

const char* kHeader = "#[version = \"0.0.5\"]\n";

std::string relay_error(const std::string& body) {
  return error_of([&] { (void)normcore::import::parse_relay(kHeader + body, "m.relay"); });
}

TEST(RelayText, BatchNormTupleGetItemWithoutTypeAnnotations) {
  // No /* ty= */ annotations: shapes are inferred from the arguments.
  const Graph g = normcore::import::parse_relay(
      std::string(kHeader) +
          "def @main(%x: Tensor[(1, 4, 2, 2), float32], %g: Tensor[(4), float32],\n"
          "          %b: Tensor[(4), float32], %m: Tensor[(4), float32],\n"
          "          %v: Tensor[(4), float32]) {\n"
          "  // a comment\n"
          "  let %t = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f, center=False);\n"
          "  %t.0\n"
          "}\n",
      "m.relay");
  ASSERT_EQ(g.nodes.size(), 1U);  // %t.0 is the bn node's first output itself
  EXPECT_EQ(g.nodes[0].op, "bn");
  EXPECT_EQ(g.nodes[0].inputs[2], -1);  // center=False: no beta
  EXPECT_EQ(*g.nodes[0].attrs.at("epsilon").f, 0.001);
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.nodes[0].outputs[0])].shape,
            (std::vector<std::int64_t>{1, 4, 2, 2}));
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.outputs[0], g.nodes[0].outputs[0]);
  const auto rec = normcore::import::recognise(g);
  ASSERT_EQ(rec.layers.size(), 1U);
  EXPECT_EQ(rec.layers[0].channel_axis, 1);
}

TEST(RelayText, ConcatenateOfATupleThenBatchNorm) {
  // TVM prints torch.cat as a tuple binding and concatenate of it; without annotations the
  // concatenated shape is inferred, and the BN after it sees all 5 channels.
  const Graph g = normcore::import::parse_relay(
      std::string(kHeader) +
          "def @main(%a: Tensor[(1, 2, 3, 3), float32], %b: Tensor[(1, 3, 3, 3), float32],\n"
          "          %g: Tensor[(5), float32], %be: Tensor[(5), float32],\n"
          "          %m: Tensor[(5), float32], %v: Tensor[(5), float32]) {\n"
          "  %0 = (%a, %b);\n"
          "  %1 = concatenate(%0, axis=-3);\n"
          "  %2 = nn.batch_norm(%1, %g, %be, %m, %v);\n"
          "  %2.0\n"
          "}\n",
      "m.relay");
  ASSERT_EQ(g.nodes.size(), 2U);
  EXPECT_EQ(g.nodes[0].op, "other:concatenate");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<int>{g.inputs[0], g.inputs[1]}));
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.nodes[0].outputs[0])].shape,
            (std::vector<std::int64_t>{1, 5, 3, 3}));
  const auto rec = normcore::import::recognise(g);
  ASSERT_EQ(rec.layers.size(), 1U);
  EXPECT_EQ(rec.layers[0].shape, (std::vector<std::int64_t>{1, 5, 3, 3}));
  EXPECT_EQ(rec.layers[0].channel_axis, 1);
  // Shapes that do not concatenate, an axis out of range, a wrong result type.
  const std::string sig =
      "def @main(%a: Tensor[(1, 2, 3), float32], %b: Tensor[(1, 3, 4), float32]) {\n";
  EXPECT_NE(relay_error(sig + "  concatenate((%a, %b), axis=1)\n}\n")
                .find("m.relay:3:3: concatenate: [1,3,4] does not fit [1,2,3]"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  concatenate((%a, %a), axis=3)\n}\n")
                .find("concatenate axis is out of range for [1,2,3]"),
            std::string::npos);
  EXPECT_NE(
      relay_error(sig + "  %0 = concatenate((%a, %a), axis=0) /* ty=Tensor[(1, 4, 3), float32] "
                        "*/;\n  %0\n}\n")
          .find("concatenate: result type [1,4,3] is not the concatenation of its "
                "operands [2,2,3]"),
      std::string::npos);
  // Other ops still take one tensor, not a tuple.
  EXPECT_NE(relay_error(sig + "  nn.relu((%a, %b))\n}\n").find("a tuple where a tensor"),
            std::string::npos);
}

TEST(RelayText, ErrorsNameLineAndColumn) {
  const std::string sig = "def @main(%x: Tensor[(1, 4), float32]) {\n";
  EXPECT_NE(relay_error(sig + "  nn.batch_nrom(%x)\n}\n")
                .find("m.relay:3:3: 'nn.batch_nrom' is not a Relay operator (did you mean "
                      "'nn.batch_norm'?)"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  nn.relu(%y)\n}\n").find("m.relay:3:11: %y is not defined"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  nn.relu(%x\n}\n").find("m.relay:4:1: expected ','"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  add(%x, meta[relay.Constant][0])\n}\n")
                .find("meta[...] constants are not supported"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  %0 = nn.relu(%x);\n  %0 = nn.relu(%x);\n  %0\n}\n")
                .find("%0 is bound twice"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  %0 = add(%x, %x) /* ty=Tensor[(1, 5), float32] */;\n  %0\n}\n")
                .find("add: result type [1,5] is not the broadcast of its operands [1,4]"),
            std::string::npos);
  EXPECT_NE(relay_error(sig + "  %0 = nn.batch_norm(%x, %x, %x, %x, %x);\n  %0.3\n}\n")
                .find("the tuple has 3 fields"),
            std::string::npos);
  EXPECT_NE(relay_error("def @main(%x: Tensor[(1, -4), float32]) { %x }")
                .find("a dimension must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)normcore::import::parse_relay("#[version = \"1.0\"]\ndef @main() { 1f }", "r");
            }).find("only Relay text version 0.0.x"),
            std::string::npos);
}

TEST(RelayText, TruncatedFixturesParseOrFailCleanly) {
  const auto path = std::string(normcore::test::source_dir()) +
                    "/tests/import/fixtures/relay/multi_bn.simplified.relay";
  const auto bytes = normcore::read_file_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  int errors = 0;
  for (std::size_t n = 0; n < text.size(); n += 13) {
    const std::string s =
        error_of([&] { (void)normcore::import::parse_relay(text.substr(0, n), "r"); });
    if (s != "(no error)") ++errors;
  }
  EXPECT_GT(errors, 0);
}

TEST(TorchExportArchive, DamagedArchivesAreErrors) {
  const auto path = std::string(normcore::test::source_dir()) +
                    "/tests/import/fixtures/torch_export/conv_bn_relu.pt2";
  const auto good = normcore::read_file_bytes(path);
  for (std::size_t n = 0; n < good.size(); n += 211) {  // truncations
    const std::vector<std::uint8_t> cut(good.begin(),
                                        good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(error_of([&] { (void)normcore::import::parse_torch_export(cut, "t.pt2"); }),
              "(no error)")
        << n;
  }
  for (std::size_t k = 0; k < good.size(); k += 97) {  // a flipped byte: parses or Error
    auto b = good;
    b[k] ^= 0x5a;
    (void)error_of([&] { (void)normcore::import::parse_torch_export(b, "t.pt2"); });
  }
  // A ZIP that is not a torch.export archive.
  const auto npz = normcore::read_file_bytes(std::string(normcore::test::source_dir()) +
                                             "/tests/import/fixtures/torch_export/bn1d.npz");
  EXPECT_NE(error_of([&] {
              (void)normcore::import::parse_torch_export(npz, "x.pt2");
            }).find("x.pt2: not a torch.export archive"),
            std::string::npos);
}

}  // namespace
