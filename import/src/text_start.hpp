// The first token of a text model: what the format sniffers (looks_like_hlo / _mlir / _relay)
// look at, after blank space and comment lines.
#pragma once

#include <cctype>
#include <string_view>

namespace normcore::import::detail {

// text without its leading white space and `//` comment lines (and `#` comment lines when
// `hash_comments`: HLO text; in MLIR and Relay a leading `#` is syntax).
inline std::string_view after_comments(std::string_view text, bool hash_comments) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i])) != 0) {
      ++i;
    } else if (text.substr(i, 2) == "//" || (hash_comments && text[i] == '#')) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return text.substr(i);
}

}  // namespace normcore::import::detail
