// XLA HLO text front end -> normcore::import::Graph (see hlo.hpp).
//
// Two passes: the text is split into computations and instructions (syntax, shapes, literals,
// attribute values with balanced brackets and quoted strings, name resolution inside each
// computation), then the ENTRY computation is instantiated into the Graph, inlining the
// computations reached through `call` (to_apply=) and `fusion` (calls=).
#include "normcore/import/hlo.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "normcore/npz.hpp"  // read_file_bytes

namespace normcore::import {

namespace {

using Shape = std::vector<std::int64_t>;

constexpr std::size_t kMaxCallDepth = 64;

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return out + "]";
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
}

bool is_elem_type(std::string_view t) {
  static const std::set<std::string_view> known = {
      "pred", "s1",  "s2",  "s4",  "s8",  "s16", "s32",  "s64", "u1",   "u2",   "u4",    "u8",
      "u16",  "u32", "u64", "f16", "f32", "f64", "bf16", "c64", "c128", "tf32", "token", "opaque"};
  if (known.count(t)) return true;
  // The 8/6/4-bit float families: f8e5m2, f8e4m3fn, f8e4m3b11fnuz, f6e2m3fn, f4e2m1fn, ...
  return t.size() > 3 &&
         (t.substr(0, 3) == "f8e" || t.substr(0, 3) == "f6e" || t.substr(0, 3) == "f4e");
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return std::string(s.substr(b, e - b));
}

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

// ---------------------------------------------------------------------------------------------
// Cursor over one line of text.

class Cursor {
 public:
  Cursor(std::string_view text, int line_no, const std::string& source)
      : s_(text), line_(line_no), source_(source) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(source_ + ":" + std::to_string(line_) + ": " + msg);
  }

  void ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_])) != 0) ++p_;
  }
  [[nodiscard]] bool eof() const { return p_ >= s_.size(); }
  [[nodiscard]] char peek() const { return eof() ? '\0' : s_[p_]; }
  [[nodiscard]] std::size_t pos() const { return p_; }
  void seek(std::size_t p) { p_ = p; }
  [[nodiscard]] std::string_view rest() const { return s_.substr(std::min(p_, s_.size())); }

  bool eat(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  void expect(char c, const std::string& context) {
    if (!eat(c)) {
      fail("expected '" + std::string(1, c) + "' " + context + ", found " + found());
    }
  }
  // Consumes `word` when it is followed by whitespace or the end.
  bool keyword(std::string_view word) {
    if (rest().substr(0, word.size()) != word) return false;
    const std::size_t after = p_ + word.size();
    if (after < s_.size() && std::isspace(static_cast<unsigned char>(s_[after])) == 0) return false;
    p_ = after;
    return true;
  }

  [[nodiscard]] std::string found() const {
    if (eof()) return "end of line";
    std::string tok(rest().substr(0, 24));
    return "'" + tok + (rest().size() > 24 ? "...'" : "'");
  }

  std::string word() {  // [A-Za-z0-9_.-]*
    const std::size_t b = p_;
    while (p_ < s_.size() && is_name_char(s_[p_])) ++p_;
    return std::string(s_.substr(b, p_ - b));
  }

  // An instruction / computation name, optionally '%'-prefixed.
  std::string name(const std::string& what) {
    eat('%');
    std::string n = word();
    if (n.empty()) fail("expected " + what + ", found " + found());
    return n;
  }

  // Text up to (not including) the first `stop` at bracket depth 0 (or the end when
  // `stop_at_end`), with (), [], {} balanced and "quoted strings" (backslash escapes) skipped.
  std::string balanced(char stop, bool stop_at_end) {
    const std::size_t b = p_;
    std::vector<char> open;
    while (true) {
      if (eof()) {
        if (!open.empty()) {
          fail(std::string("unbalanced braces: '") + open.back() + "' is never closed");
        }
        if (!stop_at_end)
          fail(std::string("unbalanced brackets: missing '") + stop +
               "' before the end of the line");
        break;
      }
      const char c = s_[p_];
      if (open.empty() && c == stop) break;
      if (c == '"') {
        ++p_;
        while (!eof() && s_[p_] != '"') p_ += s_[p_] == '\\' ? 2 : 1;
        if (eof()) fail("unterminated string");
      } else if (c == '(' || c == '[' || c == '{') {
        open.push_back(c);
      } else if (c == ')' || c == ']' || c == '}') {
        const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty() || open.back() != want) {
          fail(std::string("unbalanced braces: unexpected '") + c + "'");
        }
        open.pop_back();
      }
      ++p_;
    }
    return std::string(s_.substr(b, p_ - b));
  }

  std::int64_t integer(const std::string& what) {
    const std::size_t b = p_;
    if (peek() == '-') ++p_;
    while (!eof() && std::isdigit(static_cast<unsigned char>(s_[p_])) != 0) ++p_;
    std::int64_t v = 0;
    const auto* first = s_.data() + b;
    const auto* last = s_.data() + p_;
    const auto r = std::from_chars(first, last, v);
    if (b == p_ || r.ec != std::errc() || r.ptr != last) {
      p_ = b;
      fail("expected " + what + ", found " + found());
    }
    return v;
  }

 private:
  std::string_view s_;
  std::size_t p_ = 0;
  int line_;
  const std::string& source_;
};

Type parse_type(Cursor& c) {
  Type t;
  if (c.eat('(')) {
    t.tuple = true;
    c.ws();
    if (c.eat(')')) return t;
    while (true) {
      c.ws();
      t.elems.push_back(parse_type(c));
      c.ws();
      if (c.eat(')')) break;
      c.expect(',', "between tuple element types");
    }
    return t;
  }
  const std::size_t start = c.pos();
  t.elem = c.word();
  if (t.elem.empty()) c.fail("malformed shape: expected a type like f32[1,64], found " + c.found());
  if (!is_elem_type(t.elem)) {
    c.seek(start);
    c.fail("malformed shape: unknown element type '" + t.elem + "'");
  }
  if (!c.eat('['))
    c.fail("malformed shape: expected '[' after '" + t.elem + "', found " + c.found());
  if (!c.eat(']')) {
    while (true) {
      if (c.eat('?')) {
        t.dims.push_back(-1);
      } else {
        if (c.eat('<')) c.expect('=', "in a bounded dynamic dimension '<=N'");
        const auto d = c.integer("a dimension size in shape '" + t.elem + "[...]'");
        if (d < 0) c.fail("malformed shape: negative dimension " + std::to_string(d));
        t.dims.push_back(d);
      }
      if (c.eat(']')) break;
      if (!c.eat(','))
        c.fail("malformed shape: expected ',' or ']' in dimensions, found " + c.found());
    }
  }
  if (c.peek() == '{') {  // layout, e.g. {3,2,1,0} or {1,0:T(8,128)}
    c.expect('{', "");
    c.balanced('}', false);
    c.expect('}', "closing the layout");
  }
  return t;
}

// True when the cursor is at a type (an element type followed by '[', or a '(' tuple).
bool at_type(Cursor& c) {
  if (c.peek() == '(') return true;
  const std::size_t p = c.pos();
  const std::string w = c.word();
  const bool yes = !w.empty() && c.peek() == '[' && is_elem_type(w);
  c.seek(p);
  return yes;
}

std::int64_t product(const Shape& s) {
  std::int64_t p = 1;
  for (const auto d : s) p *= d < 0 ? 0 : d;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Literals: 1e-05, -inf, true, {1, 2, 3}, { { 1, 2 }, { 3, 4 } }, {...} (elided; no data).

void parse_literal_items(Cursor& c, std::vector<double>& out, bool& elided) {
  c.ws();
  if (c.eat('{')) {
    c.ws();
    if (c.eat('}')) return;
    while (true) {
      c.ws();
      if (c.rest().substr(0, 3) == "...") {
        c.seek(c.pos() + 3);
        elided = true;
      } else {
        parse_literal_items(c, out, elided);
      }
      c.ws();
      if (c.eat('}')) return;
      if (!c.eat(',')) c.fail("malformed literal: expected ',' or '}', found " + c.found());
    }
  }
  const std::size_t b = c.pos();
  std::string tok;
  while (!c.eof() && c.peek() != ',' && c.peek() != '}' &&
         std::isspace(static_cast<unsigned char>(c.peek())) == 0) {
    tok += c.peek();
    c.seek(c.pos() + 1);
  }
  if (tok.empty()) c.fail("malformed literal: expected a number, found " + c.found());
  if (tok == "true" || tok == "false") {
    out.push_back(tok == "true" ? 1.0 : 0.0);
    return;
  }
  std::string_view num(tok);
  if (num.front() == '+') num.remove_prefix(1);
  double v = 0;
  const auto r = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || r.ec != std::errc() || r.ptr != num.data() + num.size()) {
    c.seek(b);
    c.fail("malformed literal: '" + tok + "' is not a number");
  }
  out.push_back(v);
}

std::optional<Constant> parse_literal(const std::string& text, const Type& type, int line_no,
                                      const std::string& source) {
  Cursor c(text, line_no, source);
  c.ws();
  if (at_type(c)) {  // older text repeats the type inside: constant(f32[3] {1, 2, 3})
    parse_type(c);
    c.ws();
  }
  if (type.tuple || c.peek() == '(') return std::nullopt;  // tuple literal: no data kept
  if (c.eof()) c.fail("malformed literal: constant() has no value");
  std::vector<double> data;
  bool elided = false;
  if (c.rest().substr(0, 3) == "...") {
    c.seek(c.pos() + 3);
    elided = true;
  } else {
    parse_literal_items(c, data, elided);
  }
  c.ws();
  if (!c.eof()) c.fail("malformed literal: unexpected " + c.found() + " after the value");
  if (elided) return std::nullopt;
  const auto want = static_cast<std::size_t>(product(type.dims));
  if (data.size() != want) {
    c.fail("malformed literal: " + std::to_string(data.size()) + " value(s) for shape " +
           type.elem + shape_str(type.dims) + " (needs " + std::to_string(want) + ")");
  }
  return Constant{type.dims, std::move(data)};
}

// {1, 2, 3} -> ints; nullopt when the text is not such a list.
std::optional<Shape> int_list(const std::string& raw) {
  std::string s = trim(raw);
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return std::nullopt;
  Shape out;
  std::string_view body(s);
  body = body.substr(1, body.size() - 2);
  std::size_t p = 0;
  while (p < body.size()) {
    while (p < body.size() && (body[p] == ' ' || body[p] == ',')) ++p;
    if (p >= body.size()) break;
    std::int64_t v = 0;
    const auto r = std::from_chars(body.data() + p, body.data() + body.size(), v);
    if (r.ec != std::errc()) return std::nullopt;
    out.push_back(v);
    p = static_cast<std::size_t>(r.ptr - body.data());
    if (p < body.size() && body[p] != ' ' && body[p] != ',') return std::nullopt;
  }
  return out;
}

std::optional<double> number(const std::string& raw) {
  const std::string s = trim(raw);
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> integer(const std::string& raw) {
  const std::string s = trim(raw);
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

Attr generic_attr(const std::string& raw) {
  Attr a;
  if (auto l = int_list(raw)) {
    a.ints = std::move(*l);
  } else if (auto i = integer(raw)) {
    a.i = *i;
  } else if (auto f = number(raw)) {
    a.f = *f;
  } else {
    std::string s = trim(raw);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    a.s = std::move(s);
  }
  return a;
}

const std::map<std::string, std::string>& op_table() {
  static const std::map<std::string, std::string> t = {
      {"add", "add"},          {"subtract", "sub"},
      {"multiply", "mul"},     {"divide", "div"},
      {"sqrt", "sqrt"},        {"rsqrt", "rsqrt"},
      {"power", "pow"},        {"negate", "neg"},
      {"maximum", "max"},      {"minimum", "min"},
      {"clamp", "clamp"},      {"broadcast", "broadcast"},
      {"reshape", "reshape"},  {"convert", "convert"},
      {"copy", "identity"},    {"batch-norm-inference", "bn"},
      {"convolution", "conv"}, {"dot", "matmul"},
  };
  return t;
}

std::size_t arity(const std::string& op) {
  if (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "pow" || op == "max" ||
      op == "min") {
    return 2;
  }
  if (op == "sqrt" || op == "rsqrt" || op == "neg" || op == "broadcast" || op == "reshape" ||
      op == "convert" || op == "identity") {
    return 1;
  }
  if (op == "clamp") return 3;
  if (op == "bn") return 5;
  return 0;  // unchecked
}

// ---------------------------------------------------------------------------------------------
// Pass 1: text -> computations.

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  void run() {
    split_lines();
    Comp* cur = nullptr;
    bool skipping_section = false;
    for (const auto& [no, text] : lines_) {
      if (text.empty()) continue;
      last_line_ = no;
      if (skipping_section) {
        if (std::isdigit(static_cast<unsigned char>(text[0])) != 0) continue;
        skipping_section = false;
      }
      Cursor c(text, no, source_);
      if (!cur) {
        if (c.keyword("HloModule")) {
          if (module_line_ == 0) module_line_ = no;
          continue;
        }
        if (text == "}") c.fail("unbalanced braces: '}' outside any computation");
        if (text == "FileNames" || text == "FunctionNames" || text == "FileLocations" ||
            text == "StackFrames") {
          skipping_section = true;
          continue;
        }
        if (text.back() != '{') {
          c.fail("expected a computation ('[ENTRY] %name (...) -> type {'), found " + c.found());
        }
        comps_.push_back(parse_header(c, no));
        cur = &comps_.back();
        continue;
      }
      if (text == "}") {
        finish(*cur, no);
        cur = nullptr;
        continue;
      }
      if (looks_like_header(text, no)) {
        c.fail("unbalanced braces: computation '" + cur->name + "' (line " +
               std::to_string(cur->line) + ") is not closed before this line");
      }
      cur->insts.push_back(parse_inst(c, no));
    }
    if (cur) {
      Cursor c("", last_line_, source_);
      c.fail("unbalanced braces: computation '" + cur->name + "' (line " +
             std::to_string(cur->line) + ") is never closed (missing '}')");
    }
    int entries = 0;
    for (const auto& comp : comps_) {
      if (!comp.entry) continue;
      if (++entries > 1) Cursor("", comp.line, source_).fail("second ENTRY computation");
      entry_ = &comp;
    }
    if (!entry_) {
      Cursor("", module_line_ > 0 ? module_line_ : 1, source_)
          .fail("no ENTRY computation (the module must mark its entry computation 'ENTRY')");
    }
  }

  [[nodiscard]] const Comp& entry() const { return *entry_; }
  [[nodiscard]] const Comp* find(const std::string& name) const {
    for (const auto& c : comps_) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }

 private:
  std::string_view text_;
  const std::string& source_;
  std::vector<std::pair<int, std::string>> lines_;  // line number, text without comments
  std::vector<Comp> comps_;  // (deque-like use: no reallocation while `cur` points in)
  const Comp* entry_ = nullptr;
  int module_line_ = 0;
  int last_line_ = 1;

  // Splits lines, removing /* */ (possibly spanning lines) and // comments outside strings.
  void split_lines() {
    bool in_block = false;
    int no = 0;
    std::size_t start = 0;
    while (start <= text_.size()) {
      std::size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      const std::string_view raw = text_.substr(start, end - start);
      ++no;
      std::string out;
      bool in_str = false;
      for (std::size_t i = 0; i < raw.size(); ++i) {
        const char ch = raw[i];
        if (in_block) {
          if (ch == '*' && i + 1 < raw.size() && raw[i + 1] == '/') {
            in_block = false;
            ++i;
          }
          continue;
        }
        if (in_str) {
          out += ch;
          if (ch == '\\' && i + 1 < raw.size()) {
            out += raw[++i];
          } else if (ch == '"') {
            in_str = false;
          }
          continue;
        }
        if (ch == '"') {
          in_str = true;
        } else if (ch == '/' && i + 1 < raw.size() && raw[i + 1] == '*') {
          in_block = true;
          ++i;
          continue;
        } else if (ch == '/' && i + 1 < raw.size() && raw[i + 1] == '/') {
          break;
        }
        out += ch;
      }
      lines_.emplace_back(no, trim(out));
      if (end == text_.size()) break;
      start = end + 1;
    }
    comps_.reserve(lines_.size());
  }

  // `[ENTRY] [%]name (` or `... {` (an instruction has '=' after its name).
  bool looks_like_header(const std::string& text, int no) const {
    Cursor c(text, no, source_);
    if (c.keyword("ENTRY")) return true;
    c.eat('%');
    if (c.word().empty()) return false;
    c.ws();
    return c.peek() == '(' || c.peek() == '{';
  }

  Comp parse_header(Cursor& c, int no) {
    Comp comp;
    comp.line = no;
    comp.entry = c.keyword("ENTRY");
    c.ws();
    comp.name = c.name("a computation name");
    if (find(comp.name)) c.fail("computation '" + comp.name + "' is defined twice");
    c.ws();
    // The signature `(p: f32[2], ...) -> f32[2]` and any attributes are not needed; only the
    // brackets must balance up to the final '{'.
    const std::string rest(c.rest().substr(0, c.rest().size() - 1));
    Cursor sig(rest, no, source_);
    sig.balanced('\0', true);
    return comp;
  }

  Inst parse_inst(Cursor& c, int no) {
    Inst in;
    in.line = no;
    in.root = c.keyword("ROOT");
    c.ws();
    in.name = c.name("an instruction name");
    c.ws();
    c.expect('=', "after the instruction name '" + in.name + "'");
    c.ws();
    in.type = parse_type(c);
    c.ws();
    in.opcode = c.word();
    if (in.opcode.empty()) c.fail("expected an opcode, found " + c.found());
    c.ws();
    c.expect('(', "after the opcode '" + in.opcode + "'");
    if (in.opcode == "constant" || in.opcode == "parameter") {
      in.paren = c.balanced(')', false);
      c.expect(')', "");
    } else {
      c.ws();
      if (!c.eat(')')) {
        while (true) {
          c.ws();
          if (at_type(c)) {  // older text: f32[64]{0} %name
            parse_type(c);
            c.ws();
          }
          in.operands.push_back(c.name("an operand name"));
          c.ws();
          if (c.eat(')')) break;
          c.expect(',', "or ')' between operands");
        }
      }
    }
    while (true) {
      c.ws();
      if (c.eof()) break;
      c.expect(',', "before the next attribute");
      c.ws();
      std::string key = c.word();
      if (key.empty()) c.fail("expected an attribute name, found " + c.found());
      c.ws();
      c.expect('=', "after the attribute name '" + key + "'");
      c.ws();
      std::string value = trim(c.balanced(',', true));
      in.attrs.emplace_back(std::move(key), std::move(value));
    }
    return in;
  }

  // Names, root, operand resolution (each operand must be defined earlier in the computation).
  void finish(Comp& comp, int close_line) {
    if (comp.insts.empty()) {
      Cursor("", close_line, source_).fail("computation '" + comp.name + "' has no instructions");
    }
    for (std::size_t i = 0; i < comp.insts.size(); ++i) {
      const auto& in = comp.insts[i];
      if (!comp.index.emplace(in.name, static_cast<int>(i)).second) {
        Cursor("", in.line, source_).fail("instruction '" + in.name + "' is defined twice");
      }
      if (in.root) {
        if (comp.root >= 0) Cursor("", in.line, source_).fail("second ROOT instruction");
        comp.root = static_cast<int>(i);
      }
    }
    if (comp.root < 0) comp.root = static_cast<int>(comp.insts.size()) - 1;
    for (std::size_t i = 0; i < comp.insts.size(); ++i) {
      const auto& in = comp.insts[i];
      for (const auto& op : in.operands) {
        const auto it = comp.index.find(op);
        if (it == comp.index.end()) {
          Cursor("", in.line, source_).fail("unknown operand '" + op + "'");
        }
        if (it->second >= static_cast<int>(i)) {
          Cursor("", in.line, source_)
              .fail("operand '" + op + "' is used before its definition (line " +
                    std::to_string(comp.insts[static_cast<std::size_t>(it->second)].line) + ")");
        }
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Pass 2: instantiate the ENTRY computation into a Graph.

// What an HLO name stands for: one graph value, or a tuple of them.
struct Ref {
  int value = -1;
  bool tuple = false;
  std::vector<Ref> elems;
};

void flatten(const Ref& r, std::vector<int>& out) {
  if (!r.tuple) {
    out.push_back(r.value);
    return;
  }
  for (const auto& e : r.elems) flatten(e, out);
}

class Builder {
 public:
  Builder(const Parser& p, const std::string& source) : p_(p), source_(source) {
    graph_.source = source;
    graph_.format = "hlo";
  }

  Graph build() {
    std::vector<std::string> stack;
    const Ref root = instantiate(p_.entry(), nullptr, "", stack);
    for (const auto& [n, v] : entry_params_) graph_.inputs.push_back(v);
    flatten(root, graph_.outputs);
    return std::move(graph_);
  }

 private:
  const Parser& p_;
  const std::string& source_;
  Graph graph_;
  std::map<std::int64_t, int> entry_params_;  // parameter number -> value

  [[noreturn]] void fail(int line_no, const std::string& msg) const {
    throw Error(source_ + ":" + std::to_string(line_no) + ": " + msg);
  }

  static Value value_of(const std::string& name, const Type& t) {
    Value v;
    v.name = name;
    if (t.tuple) {
      v.dtype = "tuple";
    } else {
      v.dtype = t.elem;
      v.shape = t.dims;
      v.shape_known = true;
    }
    return v;
  }

  Ref instantiate(const Comp& comp, const std::vector<Ref>* args, const std::string& prefix,
                  std::vector<std::string>& stack) {
    stack.push_back(comp.name);
    std::vector<Ref> env(comp.insts.size());
    for (std::size_t i = 0; i < comp.insts.size(); ++i) {
      const Inst& in = comp.insts[i];
      std::vector<Ref> ops;
      for (const auto& o : in.operands) {
        ops.push_back(env[static_cast<std::size_t>(comp.index.at(o))]);
      }
      env[i] = instruction(in, ops, args, prefix, stack);
    }
    stack.pop_back();
    return env[static_cast<std::size_t>(comp.root)];
  }

  Ref instruction(const Inst& in, const std::vector<Ref>& ops, const std::vector<Ref>* args,
                  const std::string& prefix, std::vector<std::string>& stack) {
    const std::string full = prefix + in.name;
    if (in.opcode == "parameter") {
      const auto n = integer(in.paren);
      if (!n || *n < 0) fail(in.line, "malformed parameter number '" + in.paren + "'");
      if (args) {
        if (static_cast<std::size_t>(*n) >= args->size()) {
          fail(in.line, "parameter(" + std::to_string(*n) + ") but the call passes " +
                            std::to_string(args->size()) + " operand(s)");
        }
        return (*args)[static_cast<std::size_t>(*n)];
      }
      Value v = value_of(full, in.type);
      v.origin = "parameter(" + std::to_string(*n) + ") '" + in.name + "'";
      const int idx = graph_.add_value(std::move(v));
      if (!entry_params_.emplace(*n, idx).second) {
        fail(in.line, "parameter(" + std::to_string(*n) + ") is declared twice");
      }
      return Ref{idx, false, {}};
    }
    if (in.opcode == "constant") {
      Value v = value_of(full, in.type);
      v.constant = parse_literal(in.paren, in.type, in.line, source_);
      v.origin = "constant '" + full + "'" + (v.constant ? "" : " (literal not printed)");
      return Ref{graph_.add_value(std::move(v)), false, {}};
    }
    if (in.opcode == "tuple") return Ref{-1, true, ops};
    if (in.opcode == "get-tuple-element") {
      const auto* idx_text = in.attr("index");
      const auto idx = idx_text ? integer(*idx_text) : std::nullopt;
      if (!idx || *idx < 0) fail(in.line, "get-tuple-element needs index=N");
      if (ops.size() != 1) fail(in.line, "get-tuple-element takes 1 operand");
      if (ops[0].tuple) {
        if (static_cast<std::size_t>(*idx) >= ops[0].elems.size()) {
          fail(in.line, "get-tuple-element index " + std::to_string(*idx) +
                            " out of range (tuple of " + std::to_string(ops[0].elems.size()) + ")");
        }
        return ops[0].elems[static_cast<std::size_t>(*idx)];
      }
    }
    if (in.opcode == "call" || in.opcode == "fusion") {
      const char* key = in.opcode == "call" ? "to_apply" : "calls";
      const auto* target = in.attr(key);
      if (!target) fail(in.line, in.opcode + " needs " + key + "=%computation");
      std::string name = trim(*target);
      if (!name.empty() && name.front() == '%') name.erase(0, 1);
      const Comp* callee = p_.find(name);
      if (!callee) fail(in.line, "unknown computation '" + name + "'");
      if (std::find(stack.begin(), stack.end(), name) != stack.end()) {
        fail(in.line, "recursive call of computation '" + name + "'");
      }
      if (stack.size() >= kMaxCallDepth) fail(in.line, "calls nested too deeply");
      return instantiate(*callee, &ops, full + "/", stack);
    }
    return node(in, ops, full);
  }

  Ref node(const Inst& in, const std::vector<Ref>& ops, const std::string& full) {
    Node n;
    const auto it = op_table().find(in.opcode);
    n.op = it != op_table().end() ? it->second : "other:" + in.opcode;
    n.name = full;
    n.location = "line " + std::to_string(in.line);
    for (const auto& r : ops) flatten(r, n.inputs);
    const std::size_t want = arity(n.op);
    if (want != 0 && n.inputs.size() != want) {
      fail(in.line, in.opcode + " takes " + std::to_string(want) + " operand(s), got " +
                        std::to_string(n.inputs.size()));
    }
    if (n.op == "clamp") {  // HLO clamp(min, x, max) -> (x, min, max)
      n.inputs = {n.inputs[1], n.inputs[0], n.inputs[2]};
    } else if (n.op == "broadcast") {
      Shape dims;
      if (const auto* d = in.attr("dimensions")) {
        auto l = int_list(*d);
        if (!l) fail(in.line, "broadcast: malformed dimensions=" + *d);
        dims = std::move(*l);
      }
      const Value& x = graph_.values[static_cast<std::size_t>(n.inputs[0])];
      if (x.shape_known && dims.size() != x.shape.size()) {
        fail(in.line, "broadcast: dimensions=" + shape_str(dims) + " for an operand of rank " +
                          std::to_string(x.shape.size()));
      }
      for (const auto d : dims) {
        if (!in.type.tuple && (d < 0 || d >= static_cast<std::int64_t>(in.type.dims.size()))) {
          fail(in.line, "broadcast: dimension " + std::to_string(d) + " outside the result rank " +
                            std::to_string(in.type.dims.size()));
        }
      }
      n.attrs["dims"].ints = std::move(dims);
    } else if (n.op == "bn") {
      const auto* eps = in.attr("epsilon");
      const auto* fi = in.attr("feature_index");
      const auto e = eps ? number(*eps) : std::nullopt;
      const auto f = fi ? integer(*fi) : std::nullopt;
      if (!e) fail(in.line, "batch-norm-inference needs epsilon=<number>");
      if (!f || *f < 0) fail(in.line, "batch-norm-inference needs feature_index=<dimension>");
      n.attrs["epsilon"].f = *e;
      n.attrs["axis"].i = *f;
    } else if (n.op == "reshape") {
      if (!in.type.tuple) n.attrs["shape"].ints = in.type.dims;
    } else if (n.op != "convert" && arity(n.op) == 0) {  // conv, matmul, other:*
      for (const auto& [k, v] : in.attrs) {
        if (k != "metadata") n.attrs[k] = generic_attr(v);
      }
    }
    const int node_idx = static_cast<int>(graph_.nodes.size());
    Value v = value_of(full, in.type);
    v.producer = node_idx;
    v.origin = in.opcode + " '" + full + "' (line " + std::to_string(in.line) + ")";
    const int out = graph_.add_value(std::move(v));
    n.outputs.push_back(out);
    graph_.nodes.push_back(std::move(n));
    return Ref{out, false, {}};
  }
};

}  // namespace

Graph parse_hlo(std::string_view text, const std::string& source) {
  Parser p(text, source);
  p.run();
  return Builder(p, source).build();
}

Graph load_hlo(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  return parse_hlo(text, path.string());
}

}  // namespace normcore::import
