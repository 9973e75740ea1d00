// Helpers that produce correctly sized Verilog expression text. Every helper states the widths it
// assumes, so emitted expressions never rely on implicit extension (which Verilator -Wall flags).
#pragma once

#include <string>

namespace normcore::gen::v {

inline std::string lit(int width, unsigned long long value) {
  return std::to_string(width) + "'d" + std::to_string(value);
}

// Bit i of a net of `width` bits (a 1-bit net is used whole).
inline std::string bit(const std::string& name, int width, int i) {
  return width == 1 ? name : name + "[" + std::to_string(i) + "]";
}

// Bits [lo +: n] of a net of `width` bits; the whole net when that is what is asked for.
inline std::string part(const std::string& name, int width, int lo, int n) {
  if (lo == 0 && n == width) return name;
  if (n == 1) return name + "[" + std::to_string(lo) + "]";
  return name + "[" + std::to_string(lo + n - 1) + ":" + std::to_string(lo) + "]";
}

// Zero-extend a `from`-bit expression to `to` bits (to >= from).
inline std::string zext(const std::string& e, int from, int to) {
  if (to == from) return e;
  std::string s = "{";  // built with += (GCC 12 warns falsely on "literal" + temporary)
  s += lit(to - from, 0);
  s += ", ";
  s += e;
  s += "}";
  return s;
}

// Zero-extend or truncate the net `name` (from bits) to `to` bits. Truncation is only used where
// the dropped bits are read elsewhere, so no bits go unused.
inline std::string fit(const std::string& name, int from, int to) {
  if (to >= from) return zext(name, from, to);
  return part(name, from, 0, to);
}

// Sign-extend the net `name` (from bits) to `to` bits (to >= from).
inline std::string sext(const std::string& name, int from, int to) {
  if (to == from) return name;
  return "{{" + std::to_string(to - from) + "{" + bit(name, from, from - 1) + "}}, " + name + "}";
}

}  // namespace normcore::gen::v
