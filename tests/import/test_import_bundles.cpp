// Checkpoint bundles written by the real frameworks (issue 16, item 4): safetensors state_dicts
// from torch (tests/import/fixtures/torch_export/*.safetensors, F32 and the F16 / BF16 / F64
// conversions torch made) and Flax msgpack checkpoints (tests/import/fixtures/stablehlo/
// *.msgpack, flax.serialization.to_bytes), compared with the .npz of the same arrays; and the
// strictness of both readers on damaged input (every error a normcore::Error).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "normcore/import/bundle.hpp"
#include "normcore/import/mlir.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"
#include "test_errors.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using normcore::test::error_of;
using Bytes = std::vector<std::uint8_t>;

fs::path fixture(const std::string& f) {
  return fs::path(normcore::test::source_dir()) / "tests/import/fixtures" / f;
}

// The bundle holds exactly the .npz's arrays (same keys, shapes, values within `rel`).
void expect_same_arrays(const normcore::import::Bundle& b, const fs::path& npz, double rel) {
  const auto want = normcore::read_npz(npz);
  ASSERT_EQ(b.arrays.size(), want.size()) << b.source;
  for (const auto& [key, a] : want) {
    SCOPED_TRACE(b.source + " " + key);
    ASSERT_TRUE(b.arrays.contains(key));
    const auto& c = b.get(key);
    std::vector<std::int64_t> shape(a.shape.begin(), a.shape.end());
    EXPECT_EQ(c.shape, shape);
    ASSERT_EQ(c.data.size(), a.as_double.size());
    for (std::size_t i = 0; i < c.data.size(); ++i) {
      EXPECT_LE(std::fabs(c.data[i] - a.as_double[i]), rel * std::fabs(a.as_double[i])) << i;
    }
  }
}

TEST(Safetensors, TorchStateDictsEqualTheNpz) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fixture("torch_export"))) {
    if (e.path().extension() != ".safetensors" || e.path().stem().string().rfind("bn_", 0) == 0)
      continue;
    auto npz = e.path();
    npz.replace_extension(".npz");
    expect_same_arrays(normcore::import::load_bundle(e.path()), npz, 0);
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(Safetensors, F16Bf16F64AsTorchConvertedThem) {
  const auto npz = fixture("torch_export/standalone_bn.npz");
  // F64 of float32 values is exact; F16 / BF16 round to 11 / 8 significant bits.
  expect_same_arrays(normcore::import::load_bundle(fixture("torch_export/bn_f64.safetensors")), npz,
                     0);
  expect_same_arrays(normcore::import::load_bundle(fixture("torch_export/bn_f16.safetensors")), npz,
                     std::ldexp(1.0, -11));
  expect_same_arrays(normcore::import::load_bundle(fixture("torch_export/bn_bf16.safetensors")),
                     npz, std::ldexp(1.0, -8));
  // And they are not just the float32 values: the F16 file differs somewhere.
  const auto b = normcore::import::load_bundle(fixture("torch_export/bn_f16.safetensors"));
  const auto a = normcore::read_npz(npz);
  bool differs = false;
  for (const auto& [k, v] : a) differs = differs || b.get(k).data != v.as_double;
  EXPECT_TRUE(differs);
}

// A safetensors image built here: header JSON + data.
Bytes st_image(const std::string& header, const Bytes& data) {
  Bytes out;
  const std::uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<std::uint8_t>(n >> (8 * k)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string st_error(const std::string& header, const Bytes& data) {
  return error_of([&] { (void)normcore::import::parse_safetensors(st_image(header, data), "s"); });
}

TEST(Safetensors, HandMadeDtypesDecodeExactly) {
  // 1.5 and -2 in F16 (0x3e00, 0xc000) and BF16 (0x3fc0, 0xc000), little-endian.
  const std::string h =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"BF16","shape":[2,1],"data_offsets":[4,8]}})";
  const auto b = normcore::import::parse_safetensors(
      st_image(h, {0x00, 0x3e, 0x00, 0xc0, 0xc0, 0x3f, 0x00, 0xc0}), "s");
  EXPECT_EQ(b.get("a").data, (std::vector<double>{1.5, -2}));
  EXPECT_EQ(b.get("b").data, (std::vector<double>{1.5, -2}));
  EXPECT_EQ(b.get("b").shape, (std::vector<std::int64_t>{2, 1}));
}

TEST(Safetensors, StrictBounds) {
  const Bytes four(4, 0);
  auto t = [](const std::string& body) { return R"({"t":)" + body + "}"; };
  EXPECT_NE(st_error(t(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"), four)
                .find("tensor 't': shape [2] of F32 does not match its 4 bytes"),
            std::string::npos);
  EXPECT_NE(st_error(t(R"({"dtype":"Q4","shape":[1],"data_offsets":[0,4]})"), four)
                .find("dtype \"Q4\" is not supported"),
            std::string::npos);
  EXPECT_NE(st_error(t(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})"), four)
                .find("is not [begin, end]"),
            std::string::npos);
  EXPECT_NE(st_error(t(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), Bytes(8, 0))
                .find("cover 4 bytes but the data has 8"),
            std::string::npos);
  EXPECT_NE(st_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                     four)
                .find("gap or overlap"),
            std::string::npos);
  EXPECT_NE(st_error(t(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), four)
                .find("shape [-1] is invalid"),
            std::string::npos);
  EXPECT_NE(st_error("[1,2]", {}).find("not a JSON object"), std::string::npos);
  // A header length beyond the file is refused before anything is read or allocated.
  Bytes huge = st_image("{}", {});
  huge[5] = 0x10;
  EXPECT_NE(error_of([&] {
              (void)normcore::import::parse_safetensors(huge, "s");
            }).find("exceeds the file"),
            std::string::npos);
}

TEST(Safetensors, TruncatedFixtureAlwaysAnError) {
  const auto bytes = normcore::read_file_bytes(fixture("torch_export/multi_bn.safetensors"));
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(error_of([&] { (void)normcore::import::parse_safetensors(cut, "s"); }), "(no error)")
        << n;
  }
}

TEST(FlaxMsgpack, CheckpointsEqualTheNpzAndDriveTheImport) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fixture("stablehlo"))) {
    if (e.path().extension() != ".msgpack") continue;
    auto npz = e.path();
    npz.replace_extension(".npz");
    const auto b = normcore::import::load_bundle(e.path());
    expect_same_arrays(b, npz, 0);
    // The model's parameters attach from it as from the .npz.
    auto mlir = e.path();
    mlir.replace_extension(".mlir");
    auto g = normcore::import::load_mlir(mlir);
    normcore::import::attach_bundle(g, b);
    const auto rec = normcore::import::recognise(g);
    EXPECT_FALSE(rec.layers.empty()) << mlir;
    for (const auto& l : rec.layers) EXPECT_TRUE(l.complete) << l.name;
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(FlaxMsgpack, StrictDecoder) {
  const auto bytes = normcore::read_file_bytes(fixture("stablehlo/multi_bn.msgpack"));
  for (std::size_t n = 0; n < bytes.size(); n += 5) {  // every truncation is an error
    const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(error_of([&] { (void)normcore::import::parse_flax_msgpack(cut, "m"); }), "(no error)")
        << n;
  }
  auto err = [](const Bytes& b) {
    return error_of([&] { (void)normcore::import::parse_flax_msgpack(b, "m"); });
  };
  Bytes trailing = bytes;
  trailing.push_back(0xc0);
  EXPECT_NE(err(trailing).find("1 bytes after the msgpack document"), std::string::npos);
  EXPECT_NE(err({0x81, 0xa1, 'x', 0xc1}).find("byte 0xc1 is not a MessagePack type"),
            std::string::npos);
  // A map32 claiming 2^32-1 entries in 6 bytes: refused before reserving.
  EXPECT_NE(err({0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0}).find("truncated"), std::string::npos);
  Bytes deep = {0x81, 0xa1, 'x'};
  deep.resize(deep.size() + 100, 0x91);  // arrays nested 100 deep
  EXPECT_NE(err(deep).find("nested deeper than 64"), std::string::npos);
  // {"x": ext 1 ((2,), "float32", 4 bytes)}: the shape needs 8 bytes.
  const Bytes inner = {0x93, 0x91, 0x02, 0xa7, 'f', 'l', 'o',  'a', 't',
                       '3',  '2',  0xc4, 0x04, 0,   0,   0x80, 0x3f};
  Bytes ext = {0x81, 0xa1, 'x', 0xc7, static_cast<std::uint8_t>(inner.size()), 0x01};
  for (auto c : inner) ext.push_back(c);  // (insert: a GCC 12 -Warray-bounds false positive)
  EXPECT_NE(err(ext).find("key 'x': shape [2] of float32 does not match its 4 bytes"),
            std::string::npos);
  ext[ext.size() - inner.size() + 2] = 0x01;  // shape (1,): one float 1.0
  const auto b = normcore::import::parse_flax_msgpack(ext, "m");
  EXPECT_EQ(b.get("x").data, (std::vector<double>{1.0}));
}

}  // namespace
