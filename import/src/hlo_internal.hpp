// Private to the XLA HLO front end (hlo*.cpp): pass 1, text -> computations (hlo_parse.cpp), and
// what pass 2 (hlo.cpp) reads of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import::hlo_detail {

using Shape = std::vector<std::int64_t>;

std::string trim(std::string_view s);

// A parsed HLO type: an array shape or a tuple of types.
struct Type {
  bool tuple = false;
  std::string elem;  // "f32", "s32", "pred", ...
  Shape dims;        // -1 for a dynamic ("?") dimension
  std::vector<Type> elems;
};

struct Inst {
  int line = 0;
  bool root = false;
  std::string name;
  Type type;
  std::string opcode;
  std::vector<std::string> operands;  // names, '%' removed
  std::string paren;                  // raw text in the parentheses of constant / parameter
  std::vector<std::pair<std::string, std::string>> attrs;  // key, raw value text

  [[nodiscard]] const std::string* attr(const std::string& key) const {
    for (const auto& [k, v] : attrs) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

struct Comp {
  std::string name;
  int line = 0;
  bool entry = false;
  std::vector<Inst> insts;
  std::unordered_map<std::string, int> index;  // instruction name -> position
  int root = -1;
};

// A literal's values (nullopt when the literal is elided, "{...}"); errors name the line.
std::optional<Constant> parse_literal(const std::string& text, const Type& type, int line_no,
                                      const std::string& source);

class Cursor;

// Pass 1: text -> computations.
class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  void run();

  [[nodiscard]] const Comp& entry() const { return *entry_; }
  [[nodiscard]] const Comp* find(const std::string& name) const;

 private:
  std::string_view text_;
  const std::string& source_;
  std::vector<std::pair<int, std::string>> lines_;  // line number, text without comments
  std::vector<Comp> comps_;  // (deque-like use: no reallocation while `cur` points in)
  const Comp* entry_ = nullptr;
  int module_line_ = 0;
  int last_line_ = 1;

  // Splits lines, removing /* */ (possibly spanning lines) and // comments outside strings.
  void split_lines();

  // `[ENTRY] [%]name (` or `... {` (an instruction has '=' after its name).
  bool looks_like_header(const std::string& text, int no) const;

  Comp parse_header(Cursor& c, int no);

  Inst parse_inst(Cursor& c, int no);

  // Names, root, operand resolution (each operand must be defined earlier in the computation).
  void finish(Comp& comp, int close_line);
};

}  // namespace normcore::import::hlo_detail
