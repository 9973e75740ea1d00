// The .npy paths without per-element decoding: MappedNpy (mapped input, elements in place),
// NpyImage (the output built in one buffer) and parse_npy_header, against encode_npy/read_npy.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "normcore/npz.hpp"

namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path;
  Dir() {
    std::string t = (fs::temp_directory_path() / "normcore_npy_XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(NpyFile, MappedDataIsTheFileBytesInPlace) {
  Dir d;
  const std::vector<std::size_t> shape{2, 3, 5};
  std::vector<std::int64_t> v(30);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i * 37 % 200) - 100;
  normcore::write_npy(d.path / "a.npy", shape, "int16", v);
  auto m = normcore::MappedNpy::open(d.path / "a.npy");
  EXPECT_EQ(m.header().shape, shape);
  EXPECT_EQ(m.header().dtype, "<i2");
  EXPECT_EQ(m.header().count, 30u);
  EXPECT_EQ(m.header().item_size, 2);
  EXPECT_EQ(m.header().data_offset % 64, 0u);
  ASSERT_EQ(m.data().size(), 60u);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::int16_t x = 0;
    std::memcpy(&x, m.data().data() + 2 * i, 2);
    EXPECT_EQ(x, v[i]) << i;
  }
  auto moved = std::move(m);
  EXPECT_EQ(moved.data().size(), 60u);
}

TEST(NpyFile, ImageWrittenInPlaceReadsBack) {
  Dir d;
  const std::vector<std::size_t> shape{4, 3};
  normcore::NpyImage img(shape, "float32");
  ASSERT_EQ(img.data().size(), 48u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(img.data().data()) % 16, 0u);
  for (int i = 0; i < 12; ++i) {
    const float f = 0.5F * static_cast<float>(i) - 2.0F;
    std::memcpy(img.data().data() + 4 * i, &f, 4);
  }
  normcore::write_file_atomic(d.path / "b.npy", img.bytes());
  const auto a = normcore::read_npy(d.path / "b.npy");
  ASSERT_EQ(a.shape, shape);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a.as_double[i], 0.5 * i - 2.0);
  // The same bytes as encode_npy writes for those values.
  std::vector<double> vals;
  for (int i = 0; i < 12; ++i) vals.push_back(0.5 * i - 2.0);
  const auto enc = normcore::encode_npy(shape, "float32", vals);
  EXPECT_TRUE(std::equal(enc.begin(), enc.end(), img.bytes().begin(), img.bytes().end()));
}

TEST(NpyFile, HeaderChecksAsParseNpy) {
  Dir d;
  const std::vector<std::size_t> shape{8};
  std::vector<std::int64_t> v(8, 1);
  auto bytes = normcore::encode_npy(shape, "int32", v);
  bytes.erase(bytes.end() - 4, bytes.end());
  {
    std::ofstream(d.path / "t.npy", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_THROW(normcore::MappedNpy::open(d.path / "t.npy"), normcore::Error);
  try {
    (void)normcore::parse_npy_header(bytes, "t.npy");
    FAIL() << "no error";
  } catch (const normcore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(normcore::MappedNpy::open(d.path / "missing.npy"), normcore::Error);
  { std::ofstream(d.path / "empty.npy"); }
  EXPECT_THROW(normcore::MappedNpy::open(d.path / "empty.npy"), normcore::Error);
}

}  // namespace
