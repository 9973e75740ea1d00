// Private to the import front ends: the closest of a set of known names, for "did you mean"
// messages (edit distance, at most 3 edits).
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace normcore::import::detail {

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The known name closest to `name` ("" when none is within 3 edits).
inline std::string closest_name(std::string_view name, const std::set<std::string>& known) {
  std::string best;
  std::size_t best_d = 4;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

}  // namespace normcore::import::detail
