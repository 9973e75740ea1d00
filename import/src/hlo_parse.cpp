// XLA HLO text front end, pass 1: the text is split into computations and instructions (syntax,
// shapes, literals, attribute values with balanced brackets and quoted strings, name resolution
// inside each computation). Pass 2 is in hlo.cpp.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include "hlo_internal.hpp"

namespace normcore::import::hlo_detail {

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return std::string(s.substr(b, e - b));
}

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Pass 1: text -> computations.

void Parser::run() {
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
    c.fail("unbalanced braces: computation '" + cur->name + "' (line " + std::to_string(cur->line) +
           ") is never closed (missing '}')");
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

const Comp* Parser::find(const std::string& name) const {
  for (const auto& c : comps_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Splits lines, removing /* */ (possibly spanning lines) and // comments outside strings.
void Parser::split_lines() {
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
bool Parser::looks_like_header(const std::string& text, int no) const {
  Cursor c(text, no, source_);
  if (c.keyword("ENTRY")) return true;
  c.eat('%');
  if (c.word().empty()) return false;
  c.ws();
  return c.peek() == '(' || c.peek() == '{';
}

Comp Parser::parse_header(Cursor& c, int no) {
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

Inst Parser::parse_inst(Cursor& c, int no) {
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
void Parser::finish(Comp& comp, int close_line) {
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

}  // namespace normcore::import::hlo_detail
