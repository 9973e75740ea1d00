// Private to the file formats (npz.cpp, zip.cpp): little-endian byte access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace normcore::byte_order {

inline std::uint64_t load_le(std::span<const std::uint8_t> b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
  return v;
}
inline std::uint16_t le16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(load_le(b, at, 2));
}
inline std::uint32_t le32(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint32_t>(load_le(b, at, 4));
}
inline void store_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

}  // namespace normcore::byte_order
