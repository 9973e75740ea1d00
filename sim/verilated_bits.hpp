// Bit-field access to Verilated ports of any width (CData .. QData, VlWide<N>), through the one
// LSB-first packing of normcore/util/bits.hpp (a VlWide is a stream of 32-bit words).
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "normcore/util/bits.hpp"
#include "verilated.h"

namespace normcore::sim {

template <typename T>
void set_bits(T& port, int lo, int width, std::uint64_t value) {
  static_assert(std::is_integral_v<T>);
  const std::uint64_t mask = bits::mask(width);
  auto cur = static_cast<std::uint64_t>(port);
  cur = (cur & ~(mask << lo)) | ((value & mask) << lo);
  port = static_cast<T>(cur);
}

template <std::size_t N>
void set_bits(VlWide<N>& port, int lo, int width, std::uint64_t value) {
  bits::put(std::span<std::uint32_t>(port.data(), N), static_cast<std::uint64_t>(lo), width, value);
}

template <typename T>
std::uint64_t get_bits(const T& port, int lo, int width) {
  static_assert(std::is_integral_v<T>);
  return (static_cast<std::uint64_t>(port) >> lo) & bits::mask(width);
}

template <std::size_t N>
std::uint64_t get_bits(const VlWide<N>& port, int lo, int width) {
  return bits::get(std::span<const std::uint32_t>(port.data(), N), static_cast<std::uint64_t>(lo),
                   width);
}

template <typename T>
bool equal_ports(const T& a, const T& b) {
  if constexpr (std::is_integral_v<T>) {
    return a == b;
  } else {
    for (std::size_t i = 0; i < sizeof(a) / sizeof(a[0]); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
}

}  // namespace normcore::sim
