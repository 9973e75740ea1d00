// Little-endian raw tensor elements -> double, shared by the torch.export archive reader
// (torch_export.cpp) and the safetensors / Flax msgpack bundles (bundle_formats.cpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"  // normcore::Error

namespace normcore::import::detail {

enum class RawType { f16, bf16, f32, f64, i8, u8, i16, i32, i64, boolean };

inline std::size_t raw_size(RawType t) {
  switch (t) {
    case RawType::i8:
    case RawType::u8:
    case RawType::boolean:
      return 1;
    case RawType::f16:
    case RawType::bf16:
    case RawType::i16:
      return 2;
    case RawType::f32:
    case RawType::i32:
      return 4;
    case RawType::f64:
    case RawType::i64:
      return 8;
  }
  return 1;
}

// IEEE binary16 -> double (subnormals, infinities and NaN included).
inline double half_to_double(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int man = h & 0x3ff;
  const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(man), -24);
  if (exp == 31) return man == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(static_cast<double>(man + 1024), exp - 25);
}

inline std::uint64_t load_le(const std::uint8_t* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(p[k]) << (8 * k);
  return v;
}

// Element i of a little-endian array of type t starting at p.
inline double raw_element(RawType t, const std::uint8_t* p) {
  switch (t) {
    case RawType::f16:
      return half_to_double(static_cast<std::uint16_t>(load_le(p, 2)));
    case RawType::bf16:
      return static_cast<double>(
          std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 2) << 16)));
    case RawType::f32:
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 4))));
    case RawType::f64:
      return std::bit_cast<double>(load_le(p, 8));
    case RawType::i8:
      return static_cast<double>(static_cast<std::int8_t>(*p));
    case RawType::u8:
    case RawType::boolean:
      return static_cast<double>(*p);
    case RawType::i16:
      return static_cast<double>(static_cast<std::int16_t>(load_le(p, 2)));
    case RawType::i32:
      return static_cast<double>(static_cast<std::int32_t>(load_le(p, 4)));
    case RawType::i64:
      return static_cast<double>(static_cast<std::int64_t>(load_le(p, 8)));
  }
  return 0;
}

// The element count of `shape` (every dimension >= 0), or nullopt on overflow / a negative size.
inline std::optional<std::size_t> element_count(std::span<const std::int64_t> shape) {
  std::size_t n = 1;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    const auto u = static_cast<std::size_t>(d);
    if (u != 0 && n > SIZE_MAX / 16 / u) return std::nullopt;
    n *= u;
  }
  return n;
}

}  // namespace normcore::import::detail
