#include "normcore/params_file.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "normcore/bn_params.hpp"
#include "normcore/npz.hpp"
#include "normcore/util/bits.hpp"

namespace normcore {

namespace {

constexpr std::string_view kMagic = "NCPB";

void put(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t v, int bytes) {
  bits::store_le(out, at, v, bytes);
}

std::uint64_t get(std::span<const std::uint8_t> in, std::size_t at, int bytes) {
  return bits::load_le(in, at, bytes);
}

std::int64_t get_i64(std::span<const std::uint8_t> in, std::size_t at) {
  return static_cast<std::int64_t>(get(in, at, 8));
}

std::int32_t get_i32(std::span<const std::uint8_t> in, std::size_t at) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(get(in, at, 4)));
}

std::string bits_text(int bits) {
  return std::to_string(bits) + "-bit signed";
}

}  // namespace

void check_image(const ParamImage& image, std::string_view name) {
  const std::string who(name);
  if (const auto e = image.spec.check(); !e.empty()) throw Error(who + ": " + e);
  if (const auto e = image.job.check(image.spec); !e.empty()) throw Error(who + ": " + e);
  if (image.scale.empty()) throw Error(who + ": no channels");
  if (image.scale.size() != image.shift.size()) {
    throw Error(who + ": " + std::to_string(image.scale.size()) + " scales but " +
                std::to_string(image.shift.size()) + " shifts");
  }
  if (image.scale.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw Error(who + ": too many channels (" + std::to_string(image.scale.size()) + ")");
  }
  const ArithSpec& sp = image.spec;
  for (std::size_t c = 0; c < image.scale.size() && sp.is_float(); ++c) {
    for (auto [what, v] :
         {std::pair{"scale", image.scale[c]}, std::pair{"offset", image.shift[c]}}) {
      if (v < 0 || v > 0xFFFFFFFFLL) {
        throw Error(who + ": " + what + "[" + std::to_string(c) + "] = " + std::to_string(v) +
                    " is not an fp32 bit pattern (0..0xFFFFFFFF)");
      }
    }
  }
  for (std::size_t c = 0; c < image.scale.size() && !sp.is_float(); ++c) {
    const auto s = image.scale[c], b = image.shift[c];
    if (s < sp.s_min() || s > sp.s_max()) {
      throw Error(who + ": scale[" + std::to_string(c) + "] = " + std::to_string(s) +
                  " is outside the " + bits_text(sp.sw) + " range (sw)");
    }
    if (b < sp.b_min() || b > sp.b_max()) {
      throw Error(who + ": offset[" + std::to_string(c) + "] = " + std::to_string(b) +
                  " is outside the " + bits_text(sp.bw) + " range (bw)");
    }
  }
}

std::vector<std::uint8_t> encode_params(const ParamImage& image) {
  check_image(image, "params");
  const std::size_t c = image.scale.size();
  std::vector<std::uint8_t> out(kParamsHeaderBytes + 16 * c, 0);
  std::copy(kMagic.begin(), kMagic.end(), out.begin());
  // version 2 only for a float image (types at 46..48), so integer images stay as they were
  put(out, 4, image.spec.is_float() ? kParamsVersionFloat : kParamsVersion, 4);
  put(out, 8, c, 4);
  out[12] = static_cast<std::uint8_t>(image.job.rounding);
  out[13] = 0;  // layout hint
  put(out, 16, static_cast<std::uint32_t>(image.job.shift), 4);
  put(out, 24, static_cast<std::uint64_t>(image.job.lo), 8);
  put(out, 32, static_cast<std::uint64_t>(image.job.hi), 8);
  const ArithSpec& sp = image.spec;
  out[40] = static_cast<std::uint8_t>(sp.xw);
  out[41] = sp.x_signed ? 1 : 0;
  out[42] = static_cast<std::uint8_t>(sp.sw);
  out[43] = static_cast<std::uint8_t>(sp.bw);
  out[44] = static_cast<std::uint8_t>(sp.yw);
  out[45] = sp.y_signed ? 1 : 0;
  out[46] = static_cast<std::uint8_t>(sp.x_type);
  out[47] = static_cast<std::uint8_t>(sp.y_type);
  out[48] = sp.flush_subnormals ? 1 : 0;
  for (std::size_t i = 0; i < c; ++i) {
    put(out, kParamsHeaderBytes + 8 * i, static_cast<std::uint64_t>(image.scale[i]), 8);
    put(out, kParamsHeaderBytes + 8 * (c + i), static_cast<std::uint64_t>(image.shift[i]), 8);
  }
  return out;
}

ParamImage decode_params(std::span<const std::uint8_t> bytes, std::string_view name) {
  const std::string who(name);
  if (bytes.size() < kParamsHeaderBytes) {
    throw Error(who + ": truncated: expected at least " + std::to_string(kParamsHeaderBytes) +
                " bytes (header), found " + std::to_string(bytes.size()));
  }
  if (!std::equal(kMagic.begin(), kMagic.end(), bytes.begin(),
                  [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
    std::string seen;
    for (std::size_t i = 0; i < 4; ++i) {
      const auto ch = static_cast<char>(bytes[i]);
      seen += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    }
    throw Error(who + ": bad magic '" + seen + "' (expected 'NCPB'; not a normcore params file)");
  }
  const auto version = get(bytes, 4, 4);
  if (version != kParamsVersion && version != kParamsVersionFloat) {
    throw Error(who + ": unsupported version " + std::to_string(version) + " (expected " +
                std::to_string(kParamsVersion) + " or " + std::to_string(kParamsVersionFloat) +
                ")");
  }
  if (version == kParamsVersionFloat && (bytes[46] > 3 || bytes[47] > 3 || bytes[48] > 1)) {
    throw Error(who + ": unknown element type code (x_type / y_type 0..3, flush 0..1)");
  }
  const auto c = static_cast<std::size_t>(get(bytes, 8, 4));
  if (c == 0) throw Error(who + ": channel count is 0");
  const std::size_t expected = kParamsHeaderBytes + 16 * c;
  if (bytes.size() < expected) {
    throw Error(who + ": truncated: expected " + std::to_string(expected) + " bytes, found " +
                std::to_string(bytes.size()));
  }
  if (bytes.size() > expected) {
    throw Error(who + ": corrupt: expected " + std::to_string(expected) + " bytes for " +
                std::to_string(c) + " channels, found " + std::to_string(bytes.size()));
  }
  if (bytes[12] > static_cast<std::uint8_t>(Rounding::half_away)) {
    throw Error(who + ": unknown rounding code " + std::to_string(bytes[12]));
  }
  if (bytes[41] > 1 || bytes[45] > 1) {
    throw Error(who + ": x_signed / y_signed must be 0 or 1");
  }
  ParamImage img;
  img.job.rounding = static_cast<Rounding>(bytes[12]);
  img.job.shift = get_i32(bytes, 16);
  img.job.lo = get_i64(bytes, 24);
  img.job.hi = get_i64(bytes, 32);
  img.spec.xw = bytes[40];
  img.spec.x_signed = bytes[41] != 0;
  img.spec.sw = bytes[42];
  img.spec.bw = bytes[43];
  img.spec.yw = bytes[44];
  img.spec.y_signed = bytes[45] != 0;
  if (version == kParamsVersionFloat) {
    img.spec.x_type = static_cast<NumType>(bytes[46]);
    img.spec.y_type = static_cast<NumType>(bytes[47]);
    img.spec.flush_subnormals = bytes[48] != 0;
    if (!img.spec.is_float()) {
      throw Error(who + ": version 2 (a float image) with integer in and out types");
    }
  }
  img.scale.resize(c);
  img.shift.resize(c);
  for (std::size_t i = 0; i < c; ++i) {
    img.scale[i] = get_i64(bytes, kParamsHeaderBytes + 8 * i);
    img.shift[i] = get_i64(bytes, kParamsHeaderBytes + 8 * (c + i));
  }
  check_image(img, name);
  return img;
}

void write_params(const std::filesystem::path& path, const ParamImage& image) {
  check_image(image, path.string());
  write_file_atomic(path, encode_params(image));
}

ParamImage read_params(const std::filesystem::path& path) {
  return decode_params(read_file_bytes(path), path.string());
}

}  // namespace normcore
