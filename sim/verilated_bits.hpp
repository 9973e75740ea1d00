// Bit-field access to Verilated ports of any width (CData .. QData, VlWide<N>).
#pragma once

#include <cstdint>
#include <type_traits>

#include "verilated.h"

namespace normcore::sim {

template <typename T>
void set_bits(T& port, int lo, int width, std::uint64_t value) {
  static_assert(std::is_integral_v<T>);
  const std::uint64_t mask = width >= 64 ? ~0ULL : ((1ULL << width) - 1);
  auto cur = static_cast<std::uint64_t>(port);
  cur = (cur & ~(mask << lo)) | ((value & mask) << lo);
  port = static_cast<T>(cur);
}

template <std::size_t N>
void set_bits(VlWide<N>& port, int lo, int width, std::uint64_t value) {
  for (int i = 0; i < width; ++i) {
    const int b = lo + i;
    const auto w = static_cast<std::size_t>(b / 32);
    const std::uint32_t m = 1U << (b % 32);
    if ((value >> i) & 1U) {
      port[w] |= m;
    } else {
      port[w] &= ~m;
    }
  }
}

template <typename T>
std::uint64_t get_bits(const T& port, int lo, int width) {
  static_assert(std::is_integral_v<T>);
  const std::uint64_t mask = width >= 64 ? ~0ULL : ((1ULL << width) - 1);
  return (static_cast<std::uint64_t>(port) >> lo) & mask;
}

template <std::size_t N>
std::uint64_t get_bits(const VlWide<N>& port, int lo, int width) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    const int b = lo + i;
    if ((port[static_cast<std::size_t>(b / 32)] >> (b % 32)) & 1U) v |= 1ULL << i;
  }
  return v;
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

// Two's complement value of a width-bit field, as signed or unsigned.
inline std::int64_t to_signed(std::uint64_t v, int width, bool is_signed) {
  if (!is_signed || width >= 64) return static_cast<std::int64_t>(v);
  if ((v >> (width - 1)) & 1U) return static_cast<std::int64_t>(v | (~0ULL << width));
  return static_cast<std::int64_t>(v);
}

}  // namespace normcore::sim
