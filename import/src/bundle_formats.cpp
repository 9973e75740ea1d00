// Checkpoint formats of parameter bundles besides .npz / .npy / JSON (see bundle.hpp):
// safetensors (PyTorch / Hugging Face) and Flax msgpack (flax.serialization.to_bytes), read by a
// small strict MessagePack decoder of our own (no new dependency).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "normcore/import/bundle.hpp"
#include "raw_decode.hpp"

namespace normcore::import {

namespace {

using detail::RawType;
using nlohmann::json;

constexpr std::uint64_t kMaxHeader = 100ull << 20;  // safetensors' own limit (100 MB)
constexpr int kMaxDepth = 64;

Constant decode_raw(RawType t, std::span<const std::uint8_t> bytes,
                    std::vector<std::int64_t> shape) {
  Constant c;
  c.shape = std::move(shape);
  const std::size_t item = detail::raw_size(t);
  c.data.resize(bytes.size() / item);
  for (std::size_t i = 0; i < c.data.size(); ++i) {
    c.data[i] = detail::raw_element(t, bytes.data() + i * item);
  }
  return c;
}

std::optional<RawType> safetensors_dtype(const std::string& d) {
  static const std::map<std::string, RawType> k = {
      {"F16", RawType::f16},     {"BF16", RawType::bf16}, {"F32", RawType::f32},
      {"F64", RawType::f64},     {"I8", RawType::i8},     {"U8", RawType::u8},
      {"I16", RawType::i16},     {"I32", RawType::i32},   {"I64", RawType::i64},
      {"BOOL", RawType::boolean}};
  auto it = k.find(d);
  return it == k.end() ? std::nullopt : std::optional(it->second);
}

std::optional<RawType> numpy_dtype(const std::string& d) {
  static const std::map<std::string, RawType> k = {
      {"float16", RawType::f16}, {"bfloat16", RawType::bf16}, {"float32", RawType::f32},
      {"float64", RawType::f64}, {"int8", RawType::i8},       {"uint8", RawType::u8},
      {"int16", RawType::i16},   {"int32", RawType::i32},     {"int64", RawType::i64},
      {"bool", RawType::boolean}};
  auto it = k.find(d);
  return it == k.end() ? std::nullopt : std::optional(it->second);
}

// ---- safetensors

struct StEntry {
  std::string key;
  RawType type;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

StEntry st_entry(const std::string& key, const json& e, const std::string& who) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
      !e.contains("data_offsets")) {
    throw Error(who + ": needs dtype, shape and data_offsets");
  }
  StEntry s{key, RawType::f32, {}, 0, 0};
  const auto dt =
      e["dtype"].is_string() ? safetensors_dtype(e["dtype"].get<std::string>()) : std::nullopt;
  if (!dt) throw Error(who + ": dtype " + e["dtype"].dump() + " is not supported");
  s.type = *dt;
  if (!e["shape"].is_array()) throw Error(who + ": shape is not a list");
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned()) throw Error(who + ": shape " + e["shape"].dump() + " is invalid");
    s.shape.push_back(d.get<std::int64_t>());
  }
  const json& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned() || off[0].get<std::uint64_t>() > off[1].get<std::uint64_t>()) {
    throw Error(who + ": data_offsets " + off.dump() + " is not [begin, end]");
  }
  s.begin = off[0].get<std::uint64_t>();
  s.end = off[1].get<std::uint64_t>();
  const auto n = detail::element_count(s.shape);
  if (!n || *n * detail::raw_size(s.type) != s.end - s.begin) {
    throw Error(who + ": shape " + e["shape"].dump() + " of " + e["dtype"].get<std::string>() +
                " does not match its " + std::to_string(s.end - s.begin) + " bytes");
  }
  return s;
}

}  // namespace

Bundle parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8) throw Error(source + ": truncated: no safetensors header length");
  const std::uint64_t n = detail::load_le(bytes.data(), 8);
  if (n > kMaxHeader || n > bytes.size() - 8) {
    throw Error(source + ": header length " + std::to_string(n) + " exceeds the file (" +
                std::to_string(bytes.size()) + " bytes) or 100 MB");
  }
  json h;
  try {
    h = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const json::exception& e) {
    throw Error(source + ": malformed safetensors header: " + e.what());
  }
  if (!h.is_object()) throw Error(source + ": the safetensors header is not a JSON object");
  const auto data = bytes.subspan(8 + n);
  std::vector<StEntry> entries;
  for (const auto& [key, e] : h.items()) {
    if (key == "__metadata__") continue;
    entries.push_back(st_entry(key, e, source + ": tensor '" + key + "'"));
  }
  // The tensors tile the data buffer exactly (no gaps, no overlaps), as safetensors requires.
  std::sort(entries.begin(), entries.end(),
            [](const StEntry& a, const StEntry& b) { return a.begin < b.begin; });
  std::uint64_t at = 0;
  for (const auto& s : entries) {
    if (s.begin != at) {
      throw Error(source + ": tensor '" + s.key + "' starts at byte " + std::to_string(s.begin) +
                  " of the data, expected " + std::to_string(at) + " (gap or overlap)");
    }
    at = s.end;
  }
  if (at != data.size()) {
    throw Error(source + ": the tensors cover " + std::to_string(at) + " bytes but the data has " +
                std::to_string(data.size()));
  }
  Bundle b;
  b.source = source;
  for (const auto& s : entries) {
    b.arrays[s.key] = decode_raw(s.type, data.subspan(s.begin, s.end - s.begin), s.shape);
  }
  if (b.arrays.empty()) throw Error(source + ": no tensors");
  return b;
}

namespace {

// ---- MessagePack (the subset a decoder must know to walk any document; strict bounds)

struct Mp {
  enum class Kind { nil, boolean, integer, real, str, bin, array, map, ext } kind = Kind::nil;
  double num = 0;
  std::string bytes;  // str, bin, ext data
  std::int8_t ext = 0;
  std::vector<Mp> items;  // array; map: key, value, key, value, ...
};

class MpReader {
 public:
  MpReader(std::span<const std::uint8_t> b, const std::string& who) : b_(b), who_(who) {}

  Mp value(int depth = 0) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
    const std::uint8_t t = byte();
    if (t <= 0x7f) return number(t);
    if (t >= 0xe0) return number(static_cast<std::int8_t>(t));
    if (t >= 0x80 && t <= 0x8f) return container(Mp::Kind::map, t & 0x0f, depth);
    if (t >= 0x90 && t <= 0x9f) return container(Mp::Kind::array, t & 0x0f, depth);
    if (t >= 0xa0 && t <= 0xbf) return blob(Mp::Kind::str, t & 0x1f);
    switch (t) {
      case 0xc0:
        return Mp{};
      case 0xc2:
      case 0xc3: {
        Mp m;
        m.kind = Mp::Kind::boolean;
        m.num = t == 0xc3 ? 1 : 0;
        return m;
      }
      case 0xc4:
      case 0xc5:
      case 0xc6:
        return blob(Mp::Kind::bin, be(std::size_t{1} << (t - 0xc4)));
      case 0xc7:
      case 0xc8:
      case 0xc9:
        return ext(be(std::size_t{1} << (t - 0xc7)));
      case 0xca:
        return real(std::bit_cast<float>(static_cast<std::uint32_t>(be(4))));
      case 0xcb:
        return real(std::bit_cast<double>(be(8)));
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        return number(static_cast<double>(be(std::size_t{1} << (t - 0xcc))));
      case 0xd0:
        return number(static_cast<std::int8_t>(be(1)));
      case 0xd1:
        return number(static_cast<std::int16_t>(be(2)));
      case 0xd2:
        return number(static_cast<std::int32_t>(be(4)));
      case 0xd3:
        return number(static_cast<double>(static_cast<std::int64_t>(be(8))));
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return ext(std::size_t{1} << (t - 0xd4));
      case 0xd9:
      case 0xda:
      case 0xdb:
        return blob(Mp::Kind::str, be(std::size_t{1} << (t - 0xd9)));
      case 0xdc:
      case 0xdd:
        return container(Mp::Kind::array, be(std::size_t{2} << (t - 0xdc)), depth);
      case 0xde:
      case 0xdf:
        return container(Mp::Kind::map, be(std::size_t{2} << (t - 0xde)), depth);
      default:
        fail("byte 0x" + hex(t) + " is not a MessagePack type");
    }
  }

  [[nodiscard]] bool at_end() const { return p_ == b_.size(); }
  [[nodiscard]] std::size_t pos() const { return p_; }

 private:
  std::span<const std::uint8_t> b_;
  const std::string& who_;
  std::size_t p_ = 0;

  [[noreturn]] void fail(const std::string& m) const {
    throw Error(who_ + ": malformed msgpack at byte " + std::to_string(p_) + ": " + m);
  }
  static std::string hex(unsigned v) {
    const char* d = "0123456789abcdef";
    return {d[(v >> 4) & 15], d[v & 15]};
  }
  void need(std::uint64_t n) const {
    if (n > b_.size() - p_) fail("truncated (" + std::to_string(n) + " more bytes needed)");
  }
  std::uint8_t byte() {
    need(1);
    return b_[p_++];
  }
  std::uint64_t be(std::size_t n) {
    need(n);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v = (v << 8) | b_[p_++];
    return v;
  }
  static Mp number(double v) {
    Mp m;
    m.kind = Mp::Kind::integer;
    m.num = v;
    return m;
  }
  static Mp real(double v) {
    Mp m;
    m.kind = Mp::Kind::real;
    m.num = v;
    return m;
  }
  Mp blob(Mp::Kind k, std::uint64_t n) {
    need(n);
    Mp m;
    m.kind = k;
    m.bytes.assign(reinterpret_cast<const char*>(b_.data() + p_), static_cast<std::size_t>(n));
    p_ += static_cast<std::size_t>(n);
    return m;
  }
  Mp ext(std::uint64_t n) {
    const auto type = static_cast<std::int8_t>(byte());
    Mp m = blob(Mp::Kind::ext, n);
    m.ext = type;
    return m;
  }
  Mp container(Mp::Kind k, std::uint64_t n, int depth) {
    const std::uint64_t count = k == Mp::Kind::map ? 2 * n : n;
    need(count);  // every element takes at least one byte: checked before reserving
    Mp m;
    m.kind = k;
    m.items.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) m.items.push_back(value(depth + 1));
    return m;
  }
};

// Flax's ndarray / npscalar extension: msgpack (shape, dtype name, C-order little-endian bytes).
Constant flax_array(const Mp& ext, const std::string& who) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(ext.bytes.data());
  MpReader r(std::span(data, ext.bytes.size()), who);
  const Mp t = r.value();
  if (t.kind != Mp::Kind::array || t.items.size() != 3 || !r.at_end()) {
    throw Error(who + ": the array is not (shape, dtype, buffer)");
  }
  const Mp& shape = t.items[0];
  const Mp& name = t.items[1];
  const Mp& buf = t.items[2];
  std::vector<std::int64_t> dims;
  if (ext.ext == 1) {
    if (shape.kind != Mp::Kind::array) throw Error(who + ": the array's shape is not a list");
    for (const auto& d : shape.items) {
      if (d.kind != Mp::Kind::integer || d.num < 0) throw Error(who + ": bad shape entry");
      dims.push_back(static_cast<std::int64_t>(d.num));
    }
  }
  const auto dt = (name.kind == Mp::Kind::str || name.kind == Mp::Kind::bin)
                      ? numpy_dtype(name.bytes)
                      : std::nullopt;
  if (!dt) throw Error(who + ": dtype '" + name.bytes + "' is not supported");
  const auto n = detail::element_count(dims);
  if (buf.kind != Mp::Kind::bin || !n || *n * detail::raw_size(*dt) != buf.bytes.size()) {
    throw Error(who + ": shape " + shape_str(dims) + " of " + name.bytes + " does not match its " +
                std::to_string(buf.bytes.size()) + " bytes");
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(buf.bytes.data());
  return decode_raw(*dt, std::span(p, buf.bytes.size()), std::move(dims));
}

void flatten_mp(const Mp& m, const std::string& key, const std::string& source, Bundle& b) {
  const std::string who = source + ": key '" + key + "'";
  switch (m.kind) {
    case Mp::Kind::map:
      for (std::size_t i = 0; i + 1 < m.items.size(); i += 2) {
        const Mp& k = m.items[i];
        std::string name;
        if (k.kind == Mp::Kind::str) {
          name = k.bytes;
        } else if (k.kind == Mp::Kind::integer) {
          name = std::to_string(static_cast<std::int64_t>(k.num));
        } else {
          throw Error(who + ": a map key that is neither a string nor an integer");
        }
        if (name == "__msgpack_chunked_array__") {
          throw Error(who + ": chunked arrays (over 1 GiB) are not supported");
        }
        flatten_mp(m.items[i + 1], key.empty() ? name : key + "/" + name, source, b);
      }
      return;
    case Mp::Kind::ext:
      if (m.ext != 1 && m.ext != 3) {
        throw Error(who + ": msgpack extension type " + std::to_string(m.ext) + " is not an array");
      }
      b.arrays[key] = flax_array(m, who);
      return;
    case Mp::Kind::integer:
    case Mp::Kind::real:
      b.arrays[key] = Constant{{}, {m.num}};
      return;
    default:
      return;  // strings, booleans, nil, lists: not parameter arrays
  }
}

}  // namespace

Bundle parse_flax_msgpack(std::span<const std::uint8_t> bytes, const std::string& source) {
  MpReader r(bytes, source);
  const Mp root = r.value();
  if (!r.at_end()) {
    throw Error(source + ": " + std::to_string(bytes.size() - r.pos()) +
                " bytes after the msgpack document");
  }
  if (root.kind != Mp::Kind::map) throw Error(source + ": the msgpack document is not a map");
  Bundle b;
  b.source = source;
  flatten_mp(root, "", source, b);
  if (b.arrays.empty()) throw Error(source + ": no arrays");
  return b;
}

}  // namespace normcore::import
