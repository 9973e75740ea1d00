// Private to the fold (fold.cpp, fold_report.cpp): printf-style text.
#pragma once

#include <array>
#include <cstdio>
#include <string>

namespace normcore::fold_text {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  std::array<char, 256> buf{};
  std::snprintf(buf.data(), buf.size(), fmt, args...);
  return buf.data();
}

inline std::string g(long double v) {
  return format("%.6Lg", v);
}

}  // namespace normcore::fold_text
