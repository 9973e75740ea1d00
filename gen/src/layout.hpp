// Line layout for the emitter: a document of texts and break points, printed within a column
// limit. A Fill breaks only where the next item would not fit; a Group breaks everywhere or
// nowhere. Deterministic: the same document and limit always give the same text.
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/expr.hpp"

namespace normcore::gen::detail {

struct Doc {
  enum Kind { text, cat, fill, nest } kind = text;
  std::string s;                  // text; fill: unused
  std::vector<Doc> kids;          // cat / fill items / nest body (one)
  std::vector<std::string> seps;  // fill: seps[i] follows kids[i], then a space or a line break
  int indent = 0;                 // nest: added to the indentation of the lines it breaks
};

Doc text(std::string s);
Doc cat(std::vector<Doc> kids);
Doc nest(int indent, Doc d);
Doc fill(std::vector<Doc> items, std::vector<std::string> seps);

// Operator text and classes (expr.cpp).
const char* op_text(Op op);
bool is_binary(Op op);
bool is_unary(Op op);

// The expression as a document (parentheses from precedence, breaks at operators and commas).
Doc to_doc(const Expr& e);

// Prints `d` starting at column `col` of a line whose breaks indent by `indent`; lines stay
// within `limit` columns where the breaks allow.
std::string layout(const Doc& d, int indent, int col, int limit);

// `text` broken between words into lines of at most `width` characters (a longer word stays
// whole on its own line); an empty text is one empty line.
std::vector<std::string> wrap_words(const std::string& text, int width);

}  // namespace normcore::gen::detail
