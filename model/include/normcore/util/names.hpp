// "Did you mean" help shared by the CLI and the import front ends: the edit (Levenshtein)
// distance and the closest of a set of known names.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace normcore::util {

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

// The first of `known` (any range of strings) nearest to `name` with fewer than `limit` edits;
// "" when none is that close.
template <class Names>
std::string closest_name(std::string_view name, const Names& known, std::size_t limit) {
  std::string best;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (d < limit) {
      limit = d;
      best = k;
    }
  }
  return best;
}

}  // namespace normcore::util
