// File formats: params.bin, .npy, .npz (hand-built stored and deflate ZIPs) and the .npz path
// of the batch-norm loader.
#include <gtest/gtest.h>
#include <stdlib.h>

#define ZLIB_CONST
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/fold.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"
#include "test_errors.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "normcore_io_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] fs::path operator/(const std::string& name) const { return path_ / name; }
  [[nodiscard]] std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

void write_bytes(const fs::path& p, const Bytes& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

Bytes read_bytes(const fs::path& p) {
  return normcore::read_file_bytes(p);
}

using normcore::test::error_of;

#define EXPECT_HAS(haystack, needle)                               \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "'" << (haystack) << "' lacks '" << (needle) << "'"

normcore::ParamImage sample_image() {
  normcore::ParamImage img;
  img.spec.bw = 24;
  img.job.shift = 14;
  img.job.rounding = normcore::Rounding::half_away;
  img.job.lo = -3;
  img.job.hi = 117;
  img.scale = {img.spec.s_min(), img.spec.s_max(), 0, -1, 12345};
  img.shift = {img.spec.b_min(), img.spec.b_max(), 0, 1, -4242};
  return img;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// params.bin

TEST(ParamsFile, RoundTripAndLayout) {
  const TempDir dir;
  const auto path = dir / "params.bin";
  const auto img = sample_image();
  normcore::write_params(path, img);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"params.bin"});  // no tmp file left
  const Bytes raw = read_bytes(path);
  ASSERT_EQ(raw.size(), 64u + 16u * 5u);
  EXPECT_EQ(std::string(raw.begin(), raw.begin() + 4), "NCPB");
  EXPECT_EQ(raw[4], 1);      // version
  EXPECT_EQ(raw[8], 5);      // channels
  EXPECT_EQ(raw[12], 3);     // half_away
  EXPECT_EQ(raw[16], 14);    // R
  EXPECT_EQ(raw[24], 0xFD);  // lo = -3 (two's complement, little endian)
  EXPECT_EQ(raw[31], 0xFF);
  EXPECT_EQ(raw[32], 117);  // hi
  EXPECT_EQ(raw[40], 8);    // xw
  EXPECT_EQ(raw[41], 1);    // x_signed
  EXPECT_EQ(raw[42], 16);   // sw
  EXPECT_EQ(raw[43], 24);   // bw
  EXPECT_EQ(raw[44], 8);    // yw
  EXPECT_EQ(raw[45], 1);    // y_signed
  for (std::size_t i = 46; i < 64; ++i) EXPECT_EQ(raw[i], 0) << i;
  EXPECT_EQ(raw[64], 0x00);  // scale[0] = -32768 = 0x...FF8000
  EXPECT_EQ(raw[65], 0x80);
  EXPECT_EQ(raw[66], 0xFF);
  EXPECT_EQ(raw[64 + 40], 0x00);  // shift[0] = -2^23
  EXPECT_EQ(raw[64 + 42], 0x80);

  const auto back = normcore::read_params(path);
  EXPECT_EQ(back.scale, img.scale);
  EXPECT_EQ(back.shift, img.shift);
  EXPECT_EQ(back.job.shift, 14);
  EXPECT_EQ(back.job.rounding, normcore::Rounding::half_away);
  EXPECT_EQ(back.job.lo, -3);
  EXPECT_EQ(back.job.hi, 117);
  EXPECT_EQ(back.spec.bw, 24);
  EXPECT_EQ(back.spec.x_signed, true);

  // Overwrite in place with an unsigned spec.
  auto img2 = img;
  img2.spec.x_signed = false;
  img2.spec.y_signed = false;
  img2.job.lo = 0;
  img2.job.hi = 255;
  normcore::write_params(path, img2);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"params.bin"});
  const auto back2 = normcore::read_params(path);
  EXPECT_FALSE(back2.spec.x_signed);
  EXPECT_FALSE(back2.spec.y_signed);
  EXPECT_EQ(back2.job.hi, 255);
}

TEST(ParamsFile, FromAFold) {
  const TempDir dir;
  normcore::BnParams p;
  p.gamma = {1.0, -0.5, 2.0};
  p.beta = {0.1, 0.2, 0.3};
  p.mean = {0.0, 1.0, -1.0};
  p.var = {1.0, 0.5, 2.0};
  p.in = {0.05, 0};
  p.out = {0.1, 0};
  const normcore::ArithSpec spec;
  const auto r = normcore::fold(p, spec);
  normcore::write_params(dir / "params.bin", {spec, r.job, r.scale, r.shift});
  const auto back = normcore::read_params(dir / "params.bin");
  EXPECT_EQ(back.scale, r.scale);
  EXPECT_EQ(back.shift, r.shift);
  EXPECT_EQ(back.job.shift, r.job.shift);
}

TEST(ParamsFile, TruncatedBadMagicVersionAndValues) {
  const TempDir dir;
  const auto path = dir / "params.bin";
  normcore::write_params(path, sample_image());
  const Bytes good = read_bytes(path);

  Bytes b = good;
  b.pop_back();
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }),
             "params.bin: truncated: expected 144 bytes, found 143");
  b.resize(10);
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "truncated");
  b = good;
  b.push_back(0);
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "expected 144 bytes");

  b = good;
  b[0] = 'X';
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "params.bin: bad magic 'XCPB'");
  b = good;
  b[4] = 3;
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "unsupported version 3");
  b[4] = 2;  // version 2 is a float image: the types must say so
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "version 2 (a float image)");
  b = good;
  b[12] = 9;
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "rounding");
  b = good;
  b[16] = 60;  // R = 60 > AW = 33
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "shift R = 60");
  b = good;
  b[42] = 40;  // sw = 40
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "(sw)");
  b = good;
  b[64 + 8 * 2 + 2] = 1;  // scale[2] = 0x10000: outside 16 bits
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "scale[2] = 65536");
  b = good;
  b[64 + 40 + 8 * 3 + 4] = 1;  // shift[3] = 2^32 + 1: outside 24 bits
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_params(path); }), "offset[3]");
  EXPECT_HAS(error_of([&] { normcore::read_params(dir / "missing.bin"); }), "missing.bin");
}

TEST(ParamsFile, WriteRejectsBadImagesAndLeavesNoTemporary) {
  const TempDir dir;
  const auto path = dir / "params.bin";
  auto img = sample_image();
  img.scale[1] = img.spec.s_max() + 1;
  EXPECT_HAS(error_of([&] { normcore::write_params(path, img); }), "scale[1]");
  img = sample_image();
  img.job.lo = 5;
  img.job.hi = 4;
  EXPECT_HAS(error_of([&] { normcore::write_params(path, img); }), "clamp lo");
  img = sample_image();
  img.shift.pop_back();
  EXPECT_HAS(error_of([&] { normcore::write_params(path, img); }), "5 scales but 4 shifts");
  img = sample_image();
  img.scale.clear();
  img.shift.clear();
  EXPECT_HAS(error_of([&] { normcore::write_params(path, img); }), "no channels");
  EXPECT_TRUE(dir.entries().empty());
  // Unwritable destination (a directory in the way): Error, and the temporary is gone.
  fs::create_directory(path);
  fs::create_directory(path / "x");
  EXPECT_THROW(normcore::write_params(path, sample_image()), normcore::Error);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"params.bin"});
  EXPECT_TRUE(fs::is_directory(path));
  // A missing parent directory.
  EXPECT_THROW(normcore::write_params(dir / "nodir" / "p.bin", sample_image()), normcore::Error);
}

// ---------------------------------------------------------------------------------------------
// .npy

TEST(Npy, RoundTripEveryDtype) {
  const TempDir dir;
  const std::vector<std::size_t> shape = {2, 3};
  struct Case {
    const char* dtype;
    const char* descr;
    std::vector<std::int64_t> data;
  };
  const std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
  const std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
  const Case cases[] = {
      {"int8", "|i1", {-128, -1, 0, 1, 100, 127}},
      {"uint8", "|u1", {0, 1, 2, 128, 254, 255}},
      {"int16", "<i2", {-32768, -300, 0, 300, 1, 32767}},
      {"uint16", "<u2", {0, 65535, 1, 256, 2, 3}},
      {"int32", "<i4", {-2147483648LL, -70000, 0, 70000, 1, 2147483647LL}},
      {"uint32", "<u4", {0, 4294967295LL, 1, 2, 3, 65536}},
      {"int64", "<i8", {i64min, -1, 0, 1, 1LL << 40, i64max}},
      {"float32", "<f4", {-16777216, -3, 0, 1, 2, 16777216}},
      {"float64", "<f8", {-(1LL << 53), -3, 0, 1, 2, 1LL << 53}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dtype);
    const auto path = dir / (std::string(c.dtype) + ".npy");
    normcore::write_npy(path, shape, c.dtype, c.data);
    const Bytes raw = read_bytes(path);
    ASSERT_GE(raw.size(), 64u);
    EXPECT_EQ(raw[6], 1);  // v1 header
    const std::size_t header = 10 + static_cast<std::size_t>(raw[8] | (raw[9] << 8));
    EXPECT_EQ(header % 64, 0u);
    EXPECT_EQ(raw[header - 1], '\n');
    const auto arr = normcore::read_npy(path);
    EXPECT_EQ(arr.dtype, c.descr);
    EXPECT_EQ(arr.shape, shape);
    ASSERT_EQ(arr.size(), 6u);
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(arr.as_double[i], static_cast<double>(c.data[i])) << i;
    }
    if (std::string(c.descr)[1] != 'f') {
      EXPECT_TRUE(arr.is_integer());
      EXPECT_EQ(arr.as_int, c.data);
    } else {
      EXPECT_FALSE(arr.is_integer());
      EXPECT_TRUE(arr.as_int.empty());
    }
  }
  EXPECT_EQ(dir.entries().size(), std::size(cases));  // no temporaries left
  // Fractional float32 data through the double overload; 0-d and 1-d shapes.
  const std::vector<double> f = {0.5, -1.25, 3.0e-3};
  const std::vector<std::size_t> one_d = {3};
  normcore::write_npy(dir / "f.npy", one_d, "<f4", f);
  const auto fa = normcore::read_npy(dir / "f.npy");
  EXPECT_EQ(fa.shape, one_d);
  EXPECT_EQ(fa.as_double[0], 0.5);
  EXPECT_EQ(fa.as_double[1], -1.25);
  EXPECT_EQ(fa.as_double[2], static_cast<double>(3.0e-3f));
  const std::vector<double> scalar = {7};
  normcore::write_npy(dir / "s.npy", std::span<const std::size_t>{}, "int16", scalar);
  const auto sa = normcore::read_npy(dir / "s.npy");
  EXPECT_TRUE(sa.shape.empty());
  EXPECT_EQ(sa.as_int, std::vector<std::int64_t>{7});
}

TEST(Npy, WriterRejects) {
  const std::vector<std::size_t> shape = {2};
  const std::vector<std::int64_t> big = {1, 128};
  EXPECT_HAS(error_of([&] { normcore::encode_npy(shape, "int8", big); }), "data[1] = 128");
  const std::vector<std::int64_t> neg = {-1, 0};
  EXPECT_HAS(error_of([&] { normcore::encode_npy(shape, "uint8", neg); }), "data[0] = -1");
  const std::vector<double> frac = {1.0, 1.5};
  EXPECT_HAS(error_of([&] { normcore::encode_npy(shape, "int32", frac); }), "data[1]");
  const std::vector<std::int64_t> three = {1, 2, 3};
  EXPECT_HAS(error_of([&] { normcore::encode_npy(shape, "int8", three); }), "holds 2 elements");
  EXPECT_HAS(error_of([&] { normcore::encode_npy(shape, "complex64", big); }), "complex64");
}

namespace {

// A .npy image with a hand-written header (any version, any header text).
Bytes handmade_npy(int version, const std::string& dict, const Bytes& data) {
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(version), 0};
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  for (std::size_t i = 0; i < prefix - 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace

TEST(Npy, ParserVersionsAndRejects) {
  const Bytes two_i2 = {0x01, 0x00, 0xFF, 0xFF};  // [1, -1] as <i2
  for (const int v : {1, 2, 3}) {
    const auto arr = normcore::parse_npy(
        handmade_npy(v, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", two_i2),
        "v.npy");
    EXPECT_EQ(arr.as_int, (std::vector<std::int64_t>{1, -1})) << v;
  }
  // Keys in any order, double quotes, 2-d shape, no trailing comma.
  const auto arr = normcore::parse_npy(
      handmade_npy(1, R"({"shape": (1, 2), "fortran_order": False, "descr": "<i2"})", two_i2),
      "q.npy");
  EXPECT_EQ(arr.shape, (std::vector<std::size_t>{1, 2}));
  // fortran_order True: refused with a clear message naming the file.
  EXPECT_HAS(
      error_of([&] {
        normcore::parse_npy(
            handmade_npy(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2,), }", two_i2),
            "f.npy");
      }),
      "f.npy: fortran_order True is not supported");
  EXPECT_HAS(
      error_of([&] {
        normcore::parse_npy(
            handmade_npy(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }", two_i2),
            "b.npy");
      }),
      "big-endian");
  EXPECT_HAS(
      error_of([&] {
        normcore::parse_npy(
            handmade_npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", two_i2),
            "c.npy");
      }),
      "unsupported dtype '<c8'");
  EXPECT_HAS(error_of([&] {
               normcore::parse_npy(handmade_npy(1,
                                                "{'descr': [('a', '<i2')], 'fortran_order': "
                                                "False, 'shape': (2,), }",
                                                two_i2),
                                   "s.npy");
             }),
             "structured");
  EXPECT_HAS(
      error_of([&] {
        normcore::parse_npy(
            handmade_npy(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", two_i2),
            "t.npy");
      }),
      "t.npy: truncated: shape (3,) of <i2 needs 6 data bytes, found 4");
  Bytes cut = handmade_npy(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", {});
  cut.resize(40);
  EXPECT_HAS(error_of([&] { normcore::parse_npy(cut, "h.npy"); }), "h.npy: truncated");
  EXPECT_HAS(error_of([&] { normcore::parse_npy(Bytes{1, 2, 3}, "x.npy"); }), "x.npy: truncated");
  Bytes bad_magic =
      handmade_npy(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", two_i2);
  bad_magic[1] = 'X';
  EXPECT_HAS(error_of([&] { normcore::parse_npy(bad_magic, "m.npy"); }), "bad magic");
}

// ---------------------------------------------------------------------------------------------
// .npz: hand-built ZIP archives

namespace {

struct Member {
  std::string name;
  Bytes data;
  bool deflate = false;
  bool numpy_zip64_local = false;  // what np.savez writes: ZIP64 extra in the local header
};

void put16(Bytes& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
}
void put32(Bytes& b, std::uint32_t v) {
  put16(b, v & 0xFFFF);
  put16(b, v >> 16);
}
void put64(Bytes& b, std::uint64_t v) {
  put32(b, static_cast<std::uint32_t>(v));
  put32(b, static_cast<std::uint32_t>(v >> 32));
}

Bytes raw_deflate(const Bytes& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  Bytes out(deflateBound(&zs, static_cast<uLong>(in.size())) + 16);
  zs.next_in = in.data();
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

Bytes make_zip(const std::vector<Member>& members) {
  Bytes zip, central;
  for (const auto& m : members) {
    const Bytes payload = m.deflate ? raw_deflate(m.data) : m.data;
    const auto crc = static_cast<std::uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), m.data.data(), static_cast<uInt>(m.data.size())));
    const auto offset = static_cast<std::uint32_t>(zip.size());
    const auto method = static_cast<std::uint32_t>(m.deflate ? 8 : 0);
    const auto csize = static_cast<std::uint32_t>(payload.size());
    const auto usize = static_cast<std::uint32_t>(m.data.size());
    const auto nlen = static_cast<std::uint32_t>(m.name.size());
    // Local header.
    put32(zip, 0x04034b50);
    put16(zip, m.numpy_zip64_local ? 45 : 20);
    put16(zip, 0);  // flags
    put16(zip, method);
    put16(zip, 0);     // time
    put16(zip, 0x21);  // date
    put32(zip, crc);
    put32(zip, m.numpy_zip64_local ? 0xFFFFFFFFu : csize);
    put32(zip, m.numpy_zip64_local ? 0xFFFFFFFFu : usize);
    put16(zip, nlen);
    put16(zip, m.numpy_zip64_local ? 20 : 0);
    zip.insert(zip.end(), m.name.begin(), m.name.end());
    if (m.numpy_zip64_local) {
      put16(zip, 0x0001);
      put16(zip, 16);
      put64(zip, usize);
      put64(zip, csize);
    }
    zip.insert(zip.end(), payload.begin(), payload.end());
    // Central directory entry.
    put32(central, 0x02014b50);
    put16(central, m.numpy_zip64_local ? 45 : 20);  // made by
    put16(central, m.numpy_zip64_local ? 45 : 20);  // needed
    put16(central, 0);
    put16(central, method);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, csize);
    put32(central, usize);
    put16(central, nlen);
    put16(central, 0);  // extra
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central.insert(central.end(), m.name.begin(), m.name.end());
  }
  const auto cd_offset = static_cast<std::uint32_t>(zip.size());
  zip.insert(zip.end(), central.begin(), central.end());
  put32(zip, 0x06054b50);
  put16(zip, 0);
  put16(zip, 0);
  put16(zip, static_cast<std::uint32_t>(members.size()));
  put16(zip, static_cast<std::uint32_t>(members.size()));
  put32(zip, static_cast<std::uint32_t>(central.size()));
  put32(zip, cd_offset);
  put16(zip, 0);
  return zip;
}

Bytes npy_f4(const std::vector<double>& v) {
  const std::vector<std::size_t> shape = {v.size()};
  return normcore::encode_npy(shape, "float32", v);
}

Bytes npy_i8(const std::vector<std::int64_t>& v) {
  const std::vector<std::size_t> shape = {v.size()};
  return normcore::encode_npy(shape, "int64", v);
}

}  // namespace

TEST(Npz, StoredAndDeflateArchives) {
  const TempDir dir;
  const std::vector<double> gamma = {1.0, -0.5, 2.0};
  std::vector<double> big(5000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i % 17) - 8;
  for (const bool deflate : {false, true}) {
    SCOPED_TRACE(deflate ? "deflate" : "stored");
    const auto path = dir / (deflate ? "d.npz" : "s.npz");
    write_bytes(path, make_zip({{"gamma.npy", npy_f4(gamma), deflate},
                                {"big.npy", npy_f4(big), deflate},
                                {"count.npy", npy_i8({42}), deflate},
                                {"notes.txt", {'h', 'i'}, deflate}}));
    const auto arrays = normcore::read_npz(path);
    ASSERT_EQ(arrays.size(), 3u);  // notes.txt skipped
    EXPECT_EQ(arrays.at("gamma").as_double, gamma);
    EXPECT_EQ(arrays.at("big").as_double, big);
    EXPECT_EQ(arrays.at("count").as_int, std::vector<std::int64_t>{42});
  }
  EXPECT_LT(fs::file_size(dir / "d.npz"), fs::file_size(dir / "s.npz"));
}

TEST(Npz, NumpyStyleZip64LocalHeadersAreFine) {
  const TempDir dir;
  const auto path = dir / "np.npz";
  write_bytes(path, make_zip({{"a.npy", npy_i8({1, 2, 3}), false, true},
                              {"b.npy", npy_i8({4}), true, true}}));
  const auto arrays = normcore::read_npz(path);
  EXPECT_EQ(arrays.at("a").as_int, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(arrays.at("b").as_int, (std::vector<std::int64_t>{4}));
}

// torch.export.save writes a ZIP64 end record + locator before a classic end record that still
// holds every value: read through the classic record. A locator with saturated classic fields
// (a real ZIP64 archive) stays refused.
TEST(Npz, RedundantZip64EndRecordIsFine) {
  const TempDir dir;
  const auto path = dir / "t.npz";
  Bytes z = make_zip({{"a.npy", npy_i8({7, 8}), false}});
  const Bytes end(z.end() - 22, z.end());
  z.erase(z.end() - 22, z.end());
  const auto cd_size = static_cast<std::uint64_t>(end[12] | (end[13] << 8));
  const auto cd_offset = static_cast<std::uint64_t>(end[16] | (end[17] << 8));
  const auto rec_at = static_cast<std::uint64_t>(z.size());
  put32(z, 0x06064b50);  // ZIP64 end of central directory record
  put64(z, 44);
  put16(z, 45);
  put16(z, 45);
  put32(z, 0);
  put32(z, 0);
  put64(z, 1);
  put64(z, 1);
  put64(z, cd_size);
  put64(z, cd_offset);
  put32(z, 0x07064b50);  // its locator
  put32(z, 0);
  put64(z, rec_at);
  put32(z, 1);
  z.insert(z.end(), end.begin(), end.end());
  write_bytes(path, z);
  EXPECT_EQ(normcore::read_npz(path).at("a").as_int, (std::vector<std::int64_t>{7, 8}));
  z[z.size() - 22 + 4] = 0xFF;  // disk number saturated: the ZIP64 values would be needed
  z[z.size() - 22 + 5] = 0xFF;
  write_bytes(path, z);
  EXPECT_NE(error_of([&] { (void)normcore::read_npz(path); }).find("ZIP64"), std::string::npos);
}

TEST(Npz, TruncatedAndCorruptArchives) {
  const TempDir dir;
  const auto path = dir / "w.npz";
  const Bytes good = make_zip(
      {{"gamma.npy", npy_f4({1, 2, 3, 4}), true}, {"mean.npy", npy_f4({0, 0, 0, 0}), false}});
  // Cut off the end (directory gone).
  Bytes b(good.begin(), good.end() - 30);
  write_bytes(path, b);
  std::string msg = error_of([&] { normcore::read_npz(path); });
  EXPECT_HAS(msg, "w.npz");
  EXPECT_HAS(msg, "truncated");
  // Tiny file.
  write_bytes(path, Bytes{'P', 'K'});
  EXPECT_HAS(error_of([&] { normcore::read_npz(path); }), "w.npz: truncated");
  // Bytes missing from the middle: the directory's offsets no longer match.
  b = good;
  b.erase(b.begin() + 40, b.begin() + 60);
  write_bytes(path, b);
  msg = error_of([&] { normcore::read_npz(path); });
  EXPECT_HAS(msg, "w.npz");
  EXPECT_NE(msg, "(no error)");
  // Flipped payload byte in the stored member: CRC mismatch names the member.
  b = good;
  b[b.size() - 22 - 2 * 46 - 9 - 8 - 3] ^= 0x40;  // inside mean.npy's data
  write_bytes(path, b);
  msg = error_of([&] { normcore::read_npz(path); });
  EXPECT_HAS(msg, "w.npz: member 'mean.npy'");
  EXPECT_HAS(msg, "CRC");
  // Corrupt deflate stream.
  b = good;
  b[30 + 9 + 2] ^= 0xFF;
  write_bytes(path, b);
  msg = error_of([&] { normcore::read_npz(path); });
  EXPECT_HAS(msg, "w.npz: member 'gamma.npy'");
  // ZIP64 end record (entry count 0xFFFF).
  b = good;
  b[b.size() - 22 + 8] = 0xFF;
  b[b.size() - 22 + 9] = 0xFF;
  b[b.size() - 22 + 10] = 0xFF;
  b[b.size() - 22 + 11] = 0xFF;
  write_bytes(path, b);
  EXPECT_HAS(error_of([&] { normcore::read_npz(path); }), "ZIP64");
  // Not a ZIP at all.
  write_bytes(path, Bytes(100, 'x'));
  EXPECT_HAS(error_of([&] { normcore::read_npz(path); }), "not a ZIP archive");
  // Bad .npy inside a good ZIP.
  write_bytes(path, make_zip({{"x.npy", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}}));
  EXPECT_HAS(error_of([&] { normcore::read_npz(path); }), "w.npz: member 'x.npy': not a .npy");
}

// ---------------------------------------------------------------------------------------------
// Batch-norm arrays from an .npz

TEST(BnNpz, PyTorchAndKerasKeys) {
  const TempDir dir;
  const auto json = dir / "bn.json";
  std::ofstream(json) << R"({"eps": 1e-3, "input": {"scale": 0.05, "zero_point": 0},
                             "output": {"scale": 0.1, "zero_point": 0}})";
  // PyTorch state_dict names, with a module prefix and the int64 batch counter.
  const auto torch = dir / "torch.npz";
  write_bytes(torch, make_zip({{"layer1.bn.weight.npy", npy_f4({1.0, 0.5}), true},
                               {"layer1.bn.bias.npy", npy_f4({0.0, 0.25}), true},
                               {"layer1.bn.running_mean.npy", npy_f4({0.5, -0.5}), false},
                               {"layer1.bn.running_var.npy", npy_f4({1.0, 4.0}), false},
                               {"layer1.bn.num_batches_tracked.npy", npy_i8({100}), false}}));
  const auto p = normcore::load_bn(json, torch);
  EXPECT_EQ(p.gamma, (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(p.beta, (std::vector<double>{0.0, 0.25}));
  EXPECT_EQ(p.mean, (std::vector<double>{0.5, -0.5}));
  EXPECT_EQ(p.var, (std::vector<double>{1.0, 4.0}));
  EXPECT_EQ(p.eps, 1e-3);
  EXPECT_EQ(p.out.scale, 0.1);
  EXPECT_HAS(p.source, "torch.npz");
  EXPECT_NO_THROW(normcore::fold(p, normcore::ArithSpec{}));

  // Keras names with "/" prefixes, (1, C) shapes, center=False (no beta).
  const auto keras = dir / "keras.npz";
  const std::vector<std::size_t> shape = {1, 2};
  const std::vector<double> g = {2.0, 3.0}, m = {0.0, 1.0}, v = {1.0, 1.0};
  write_bytes(keras, make_zip({{"bn/gamma.npy", normcore::encode_npy(shape, "<f8", g)},
                               {"bn/moving_mean.npy", normcore::encode_npy(shape, "<f8", m)},
                               {"bn/moving_variance.npy", normcore::encode_npy(shape, "<f8", v)}}));
  const auto k = normcore::load_bn(json, keras);
  EXPECT_EQ(k.gamma, g);
  EXPECT_EQ(k.beta, (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(k.var, v);

  // Arrays in the npz override those in bn.json; missing ones come from bn.json.
  normcore::BnParams j = normcore::parse_bn_json(
      R"({"mean": [9, 9], "var": [2, 2], "gamma": [7, 7], "quant": "integer"})", "bn.json");
  const auto only_mean = dir / "mean.npz";
  write_bytes(only_mean, make_zip({{"running_mean.npy", npy_f4({1, 2})}}));
  normcore::load_bn_npz(only_mean, j);
  EXPECT_EQ(j.mean, (std::vector<double>{1, 2}));
  EXPECT_EQ(j.var, (std::vector<double>{2, 2}));
  EXPECT_EQ(j.gamma, (std::vector<double>{7, 7}));
}

TEST(BnNpz, Errors) {
  const TempDir dir;
  const auto json = dir / "bn.json";
  std::ofstream(json) << R"({"quant": "integer"})";
  // Two candidates for one role.
  const auto two = dir / "two.npz";
  write_bytes(two, make_zip({{"a.weight.npy", npy_f4({1})},
                             {"b.weight.npy", npy_f4({1})},
                             {"mean.npy", npy_f4({0})},
                             {"var.npy", npy_f4({1})}}));
  std::string msg = error_of([&] { normcore::load_bn(json, two); });
  EXPECT_HAS(msg, "two.npz");
  EXPECT_HAS(msg, "'a.weight', 'b.weight'");
  EXPECT_HAS(msg, "gamma");
  // No variance anywhere.
  const auto nov = dir / "nov.npz";
  write_bytes(nov, make_zip({{"mean.npy", npy_f4({0, 1})}}));
  EXPECT_HAS(error_of([&] { normcore::load_bn(json, nov); }), "no var array");
  // Validation names the channel.
  const auto neg = dir / "neg.npz";
  write_bytes(neg, make_zip({{"mean.npy", npy_f4({0, 1, 2})}, {"var.npy", npy_f4({1, 1, -5})}}));
  msg = error_of([&] { normcore::load_bn(json, neg); });
  EXPECT_HAS(msg, "var[2] + eps");
  EXPECT_HAS(msg, "neg.npz");
  // Mismatched counts between roles.
  const auto mis = dir / "mis.npz";
  write_bytes(mis, make_zip({{"mean.npy", npy_f4({0, 1, 2})},
                             {"var.npy", npy_f4({1, 1, 1})},
                             {"gamma.npy", npy_f4({1, 1})}}));
  EXPECT_HAS(error_of([&] { normcore::load_bn(json, mis); }),
             "mean has 3 channels but gamma has 2");
  // A 2-d array is not a per-channel vector.
  const auto mat = dir / "mat.npz";
  const std::vector<std::size_t> shape = {2, 2};
  const std::vector<double> four = {1, 2, 3, 4};
  write_bytes(mat, make_zip({{"mean.npy", normcore::encode_npy(shape, "<f4", four)},
                             {"var.npy", npy_f4({1, 1})}}));
  EXPECT_HAS(error_of([&] { normcore::load_bn(json, mat); }), "'mean' has shape (2, 2)");
  // Truncated npz through the loader.
  const Bytes good = make_zip({{"mean.npy", npy_f4({0})}, {"var.npy", npy_f4({1})}});
  const auto cut = dir / "cut.npz";
  write_bytes(cut, Bytes(good.begin(), good.begin() + static_cast<long>(good.size() / 2)));
  msg = error_of([&] { normcore::load_bn(json, cut); });
  EXPECT_HAS(msg, "cut.npz");
}

// Issue 15: members that are not asked for are never decompressed (a 1 MB .npz with an unrelated
// member of 1 GiB took 32 s and 3.15 GB), and a size no deflate stream can reach is refused
// before its buffer is allocated.
TEST(Npz, MembersNotAskedForAreNeverDecompressed) {
  const TempDir dir;
  Bytes junk(4096, 0x5a);  // not deflate data: inflating it fails
  auto zip = make_zip({{"gamma.npy", npy_f4({1.0, 2.0}), true}, {"junk.npy", junk, false}});
  // Make junk.npy a "deflated" member of 1 GiB in both headers: corrupt if ever inflated.
  for (std::size_t p = 0; p + 46 < zip.size(); ++p) {
    const bool local = zip[p] == 'P' && zip[p + 1] == 'K' && zip[p + 2] == 3 && zip[p + 3] == 4;
    const bool central = zip[p] == 'P' && zip[p + 1] == 'K' && zip[p + 2] == 1 && zip[p + 3] == 2;
    const std::size_t name_at = p + (central ? 46 : 30);
    if ((!local && !central) || name_at + 8 > zip.size()) continue;
    if (std::string(zip.begin() + static_cast<std::ptrdiff_t>(name_at),
                    zip.begin() + static_cast<std::ptrdiff_t>(name_at + 8)) != "junk.npy") {
      continue;
    }
    const std::size_t method_at = p + (central ? 10 : 8), usize_at = p + (central ? 24 : 22);
    zip[method_at] = 8;
    for (int i = 0; i < 4; ++i) zip[usize_at + i] = i == 3 ? 0x40 : 0;  // 1 GiB
  }
  write_bytes(dir / "j.npz", zip);
  const auto arrays =
      normcore::read_npz(dir / "j.npz", [](const std::string& key) { return key == "gamma"; });
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays.at("gamma").as_double, (std::vector<double>{1.0, 2.0}));
  // Asked for, the member is refused by its size alone: 4096 bytes cannot inflate to 1 GiB.
  const std::string msg = [&] {
    try {
      normcore::read_npz(dir / "j.npz");
    } catch (const normcore::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(msg.find("member 'junk.npy': corrupt: 4096 compressed bytes cannot inflate to the "
                     "1073741824 bytes"),
            std::string::npos)
      << msg;
}
