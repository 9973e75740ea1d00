// Hexadecimal text of an integer, as every message and generated file of normcore prints it.
#pragma once

#include <cstdint>
#include <string>

namespace normcore {

// "0x" and upper-case digits, at least `digits` of them (zero-padded): hex(255) = "0xFF",
// hex(0x20, 3) = "0x020".
inline std::string hex(std::uint64_t v, int digits = 1) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xF]);
    v >>= 4;
  } while (v != 0);
  if (static_cast<int>(s.size()) < digits)
    s.insert(0, static_cast<std::size_t>(digits) - s.size(), '0');
  return "0x" + s;
}

}  // namespace normcore
