#include "normcore/npz.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>

#include "byte_order.hpp"
#include "normcore/bn_params.hpp"
#include "normcore/float_contract.hpp"

namespace normcore {

namespace fs = std::filesystem;
using byte_order::le16;
using byte_order::le32;
using byte_order::load_le;
using byte_order::store_le;

// ---------------------------------------------------------------------------------------------
// File helpers

std::vector<std::uint8_t> read_file_bytes(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open for reading");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (!bytes.empty()) {
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (in.gcount() != static_cast<std::streamsize>(bytes.size())) {
      throw Error(path.string() + ": read error (expected " + std::to_string(size) +
                  " bytes, got " + std::to_string(in.gcount()) + ")");
    }
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// dtypes

namespace {

struct DType {
  char kind = 'f';  // f, i, u, b; V: a 2-byte void, read as bfloat16 (ml_dtypes writes '<V2')
  int size = 4;     // bytes
  std::string descr;
};

// A dtype by name ("int16") or by descriptor ("<i2"; '|' for one-byte types, '<' and, on a
// little-endian host, '=' accepted for any).
std::optional<DType> lookup_dtype(std::string_view name) {
  struct Entry {
    std::string_view name, descr;
    char kind;
    int size;
  };
  static constexpr Entry kTable[] = {
      {"int8", "|i1", 'i', 1},    {"uint8", "|u1", 'u', 1},   {"bool", "|b1", 'b', 1},
      {"int16", "<i2", 'i', 2},   {"uint16", "<u2", 'u', 2},  {"int32", "<i4", 'i', 4},
      {"uint32", "<u4", 'u', 4},  {"int64", "<i8", 'i', 8},   {"float32", "<f4", 'f', 4},
      {"float64", "<f8", 'f', 8}, {"float16", "<f2", 'f', 2}, {"bfloat16", "<V2", 'V', 2},
  };
  constexpr bool kLittle = std::endian::native == std::endian::little;
  for (const auto& e : kTable) {
    if (name == e.name) return DType{e.kind, e.size, std::string(e.descr)};
    if (name.size() != 3 || name.substr(1) != e.descr.substr(1)) continue;
    const char order = name[0];
    const bool ok = order == '<' || order == '|' || (order == '=' && kLittle) ||
                    (order == '>' && (e.size == 1 || e.kind == 'V'));
    if (ok) return DType{e.kind, e.size, std::string(e.descr)};
  }
  return std::nullopt;
}

DType parse_descr(std::string_view descr, std::string_view name) {
  if (descr.size() == 3 && descr[0] == '>' && descr[2] != '1' && descr[1] != 'V') {
    throw Error(std::string(name) + ": big-endian dtype '" + std::string(descr) +
                "' is not supported (save the array as little endian)");
  }
  if (auto d = lookup_dtype(descr); d && descr.size() == 3) return *d;
  throw Error(std::string(name) + ": unsupported dtype '" + std::string(descr) +
              "' (supported: <f2 <f4 <f8 |i1 |u1 |b1 <i2 <u2 <i4 <u4 <i8, and <V2 / |V2 read as "
              "bfloat16)");
}

// ---------------------------------------------------------------------------------------------
// The .npy header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : t_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran, std::vector<std::size_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      ws();
      if (peek() == '}') break;
      const std::string key = string_lit();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') {
          fail("structured or object dtypes are not supported (descr is not a plain string)");
        }
        descr = string_lit();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      ws();
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    if (!have_descr || !have_order || !have_shape) {
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(std::string(name_) + ": bad .npy header at character " + std::to_string(pos_) +
                ": " + what);
  }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void ws() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  void expect(char ch) {
    ws();
    if (peek() != ch) fail(std::string("expected '") + ch + "'");
    ++pos_;
  }
  std::string string_lit() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++pos_;
    const auto end = t_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(t_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    if (t_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (t_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<std::size_t> tuple() {
    std::vector<std::size_t> dims;
    expect('(');
    while (true) {
      ws();
      if (peek() == ')') {
        ++pos_;
        return dims;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a dimension");
      std::size_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("dimension overflow");
        v = v * 10 + digit;
        ++pos_;
      }
      // Python 2 era files may write dimensions as longs: "3L".
      if (peek() == 'L') ++pos_;
      dims.push_back(v);
      ws();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
  }

  std::string_view t_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

constexpr std::string_view kNpyMagic = "\x93NUMPY";

std::string shape_string(std::span<const std::size_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::size_t element_count(std::span<const std::size_t> shape, std::string_view name) {
  std::size_t n = 1;
  for (const auto d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d) {
      throw Error(std::string(name) + ": shape " + shape_string(shape) + " is too large");
    }
    n *= d;
  }
  return n;
}

}  // namespace

bool NpyArray::is_integer() const {
  return dtype.size() == 3 && (dtype[1] == 'i' || dtype[1] == 'u' || dtype[1] == 'b');
}

NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, std::string_view name) {
  const std::string who(name);
  if (bytes.size() < 10) {
    throw Error(who + ": truncated: " + std::to_string(bytes.size()) +
                " bytes is too short for a .npy header");
  }
  if (!std::equal(kNpyMagic.begin(), kNpyMagic.end(), bytes.begin(),
                  [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
    throw Error(who + ": not a .npy file (bad magic)");
  }
  const int major = bytes[6];
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = le16(bytes, 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(who + ": truncated .npy header");
    header_len = le32(bytes, 8);
    header_at = 12;
  } else {
    throw Error(who + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(bytes[7]));
  }
  if (bytes.size() - header_at < header_len) {
    throw Error(who + ": truncated: header needs " + std::to_string(header_at + header_len) +
                " bytes, file has " + std::to_string(bytes.size()));
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_at),
                                header_len);
  NpyHeader h;
  bool fortran = false;
  HeaderParser(header, name).parse(h.dtype, fortran, h.shape);
  if (fortran) {
    throw Error(who +
                ": fortran_order True is not supported (save a C-order array, e.g. with "
                "np.ascontiguousarray)");
  }
  const DType dt = parse_descr(h.dtype, name);
  h.kind = dt.kind;
  h.item_size = dt.size;
  h.count = element_count(h.shape, name);
  h.data_offset = header_at + header_len;
  const std::size_t have = bytes.size() - h.data_offset;
  const auto item = static_cast<std::size_t>(dt.size);
  if (h.count > have / item) {
    throw Error(who + ": truncated: shape " + shape_string(h.shape) + " of " + h.dtype + " needs " +
                std::to_string(h.count * item) + " data bytes, found " + std::to_string(have));
  }
  if (have != h.count * item) {
    throw Error(who + ": corrupt: " + std::to_string(have - h.count * item) +
                " unexpected bytes after the array data");
  }
  return h;
}

NpyArray parse_npy(std::span<const std::uint8_t> bytes, std::string_view name) {
  const NpyHeader h = parse_npy_header(bytes, name);
  NpyArray arr;
  arr.shape = h.shape;
  arr.dtype = h.dtype;
  const DType dt{h.kind, h.item_size, h.dtype};
  const std::size_t count = h.count, data_at = h.data_offset;
  const auto item = static_cast<std::size_t>(dt.size);
  arr.as_double.resize(count);
  const bool integer = dt.kind != 'f' && dt.kind != 'V';
  if (integer) arr.as_int.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t raw = load_le(bytes, data_at + i * item, dt.size);
    if (dt.kind == 'V' || (dt.kind == 'f' && dt.size == 2)) {  // bfloat16 / float16 patterns
      arr.as_double[i] = float_to_double(static_cast<std::uint32_t>(raw),
                                         dt.kind == 'V' ? NumType::bf16 : NumType::fp16);
      continue;
    }
    if (dt.kind == 'f') {
      arr.as_double[i] =
          dt.size == 4 ? static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(raw)))
                       : std::bit_cast<double>(raw);
      continue;
    }
    std::int64_t v = 0;
    if (dt.kind == 'i') {
      // Sign-extend from dt.size bytes.
      const int unused = 64 - 8 * dt.size;
      v = unused == 0 ? static_cast<std::int64_t>(raw)
                      : static_cast<std::int64_t>(raw << unused) >> unused;
    } else {
      v = static_cast<std::int64_t>(raw);  // u1 u2 u4 b1: always fits
    }
    arr.as_int[i] = v;
    arr.as_double[i] = static_cast<double>(v);
  }
  return arr;
}

NpyArray read_npy(const fs::path& path) {
  return parse_npy(read_file_bytes(path), path.string());
}

namespace {

std::vector<std::uint8_t> npy_header(std::span<const std::size_t> shape, const DType& dt) {
  std::string dict = "{'descr': '" + dt.descr +
                     "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  std::vector<std::uint8_t> out(kNpyMagic.begin(), kNpyMagic.end());
  // v1 if the padded header fits a u16 length, else v2. Total header length is a multiple of 64.
  const std::size_t unpadded = dict.size() + 1;  // + '\n'
  auto padded_total = [&](std::size_t prefix) { return (prefix + unpadded + 63) / 64 * 64; };
  const bool v1 = padded_total(10) - 10 <= 65535;
  const std::size_t prefix = v1 ? 10 : 12;
  const std::size_t total = padded_total(prefix);
  dict.append(total - prefix - unpadded, ' ');
  dict += '\n';
  out.push_back(v1 ? 1 : 2);
  out.push_back(0);
  store_le(out, dict.size(), v1 ? 2 : 4);
  out.insert(out.end(), dict.begin(), dict.end());
  return out;
}

DType writer_dtype(std::string_view dtype) {
  auto dt = lookup_dtype(dtype);
  if (!dt || dt->kind == 'b') {
    throw Error("write_npy: unsupported dtype '" + std::string(dtype) +
                "' (int8 uint8 int16 uint16 int32 uint32 int64 float32 float64)");
  }
  return *dt;
}

}  // namespace

std::vector<std::uint8_t> encode_npy_header(std::span<const std::size_t> shape,
                                            std::string_view dtype) {
  return npy_header(shape, writer_dtype(dtype));
}

std::size_t npy_item_size(std::string_view dtype) {
  return static_cast<std::size_t>(writer_dtype(dtype).size);
}

std::size_t npy_element_count(std::span<const std::size_t> shape, std::string_view name) {
  return element_count(shape, name);
}

namespace {

void check_count(std::span<const std::size_t> shape, std::size_t n) {
  const std::size_t want = element_count(shape, "write_npy");
  if (want != n) {
    throw Error("write_npy: shape " + shape_string(shape) + " holds " + std::to_string(want) +
                " elements but " + std::to_string(n) + " were given");
  }
}

void store_int(std::vector<std::uint8_t>& out, const DType& dt, std::int64_t v, std::size_t i) {
  std::int64_t lo = 0, hi = std::numeric_limits<std::int64_t>::max();
  if (dt.size < 8) {
    const int bits = 8 * dt.size;
    lo = dt.kind == 'i' ? -(std::int64_t{1} << (bits - 1)) : 0;
    hi = dt.kind == 'i' ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
  } else {
    lo = std::numeric_limits<std::int64_t>::min();
  }
  if (v < lo || v > hi) {
    throw Error("write_npy: data[" + std::to_string(i) + "] = " + std::to_string(v) +
                " does not fit " + dt.descr);
  }
  store_le(out, static_cast<std::uint64_t>(v), dt.size);
}

void store_float(std::vector<std::uint8_t>& out, const DType& dt, double v, std::size_t i) {
  if (dt.size == 8) {
    store_le(out, std::bit_cast<std::uint64_t>(v), 8);
    return;
  }
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
    throw Error("write_npy: data[" + std::to_string(i) + "] = " + std::to_string(v) +
                " does not fit float32");
  }
  store_le(out, std::bit_cast<std::uint32_t>(static_cast<float>(v)), 4);
}

}  // namespace

std::vector<std::uint8_t> encode_npy(std::span<const std::size_t> shape, std::string_view dtype,
                                     std::span<const std::int64_t> data) {
  const DType dt = writer_dtype(dtype);
  check_count(shape, data.size());
  auto out = npy_header(shape, dt);
  out.reserve(out.size() + data.size() * static_cast<std::size_t>(dt.size));
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (dt.kind == 'f') {
      store_float(out, dt, static_cast<double>(data[i]), i);
    } else {
      store_int(out, dt, data[i], i);
    }
  }
  return out;
}

std::vector<std::uint8_t> encode_npy(std::span<const std::size_t> shape, std::string_view dtype,
                                     std::span<const double> data) {
  const DType dt = writer_dtype(dtype);
  check_count(shape, data.size());
  auto out = npy_header(shape, dt);
  out.reserve(out.size() + data.size() * static_cast<std::size_t>(dt.size));
  for (std::size_t i = 0; i < data.size(); ++i) {
    const double v = data[i];
    if (dt.kind == 'f') {
      store_float(out, dt, v, i);
      continue;
    }
    // 2^63 is the first double above the int64 range.
    if (!std::isfinite(v) || v != std::nearbyint(v) || v < -9223372036854775808.0 ||
        v >= 9223372036854775808.0) {
      throw Error("write_npy: data[" + std::to_string(i) + "] = " + std::to_string(v) +
                  " is not an integer that fits " + dt.descr);
    }
    store_int(out, dt, static_cast<std::int64_t>(v), i);
  }
  return out;
}

void write_npy(const fs::path& path, std::span<const std::size_t> shape, std::string_view dtype,
               std::span<const std::int64_t> data) {
  write_file_atomic(path, encode_npy(shape, dtype, data));
}

void write_npy(const fs::path& path, std::span<const std::size_t> shape, std::string_view dtype,
               std::span<const double> data) {
  write_file_atomic(path, encode_npy(shape, dtype, data));
}

std::map<std::string, NpyArray> read_npz(const fs::path& path, const MemberFilter& wanted_key) {
  constexpr std::string_view kExt = ".npy";
  const auto bytes = read_file_bytes(path);
  const auto members = read_zip(bytes, path.string(), [&](const std::string& member) {
    if (member.size() <= kExt.size() || !member.ends_with(kExt)) return false;
    return !wanted_key || wanted_key(member.substr(0, member.size() - kExt.size()));
  });
  std::map<std::string, NpyArray> arrays;
  for (const auto& [member, data] : members) {
    if (member.size() <= kExt.size() || !member.ends_with(kExt)) continue;
    const std::string key = member.substr(0, member.size() - kExt.size());
    arrays.emplace(key, parse_npy(data, path.string() + ": member '" + member + "'"));
  }
  return arrays;
}

}  // namespace normcore
