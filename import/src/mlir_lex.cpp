// MLIR text front end: the lexer, tensor types and `dense<...>` literals (see mlir_internal.hpp).
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include "mlir_internal.hpp"

namespace normcore::import::mlir_detail {

void fail_at(const std::string& source, int line, int col, const std::string& msg) {
  throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
}

namespace {

bool id_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '.';
}

class Lexer {
 public:
  Lexer(std::string_view s, const std::string& source, Resources& res)
      : s_(s), source_(source), res_(res) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skip_space();
      if (p_ >= s_.size()) break;
      if (out.size() >= kMaxTokens) fail("more than " + std::to_string(kMaxTokens) + " tokens");
      Token t;
      t.line = line_;
      t.col = col();
      lex_one(t);
      if (t.kind == Tok::id && t.text == "loc" && peek() == '(') {
        skip_balanced('(', ')');  // locations are ignored
        continue;
      }
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  std::string_view s_;
  const std::string& source_;
  Resources& res_;
  std::size_t p_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;

  [[nodiscard]] int col() const { return static_cast<int>(p_ - line_start_) + 1; }
  [[nodiscard]] char peek(std::size_t k = 0) const {
    return p_ + k < s_.size() ? s_[p_ + k] : '\0';
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(source_, line_, col(), msg); }

  void advance() {
    if (s_[p_] == '\n') {
      ++line_;
      line_start_ = p_ + 1;
    }
    ++p_;
  }

  void skip_space() {
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (std::isspace(static_cast<unsigned char>(c)) != 0) {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (p_ < s_.size() && s_[p_] != '\n') advance();
      } else if (c == '{' && peek(1) == '-' && peek(2) == '#') {  // {-# resources #-}
        const auto e = s_.find("#-}", p_);
        if (e == std::string_view::npos) fail("'{-#' is never closed by '#-}'");
        resources(s_.substr(p_, e - p_));
        while (p_ < e + 3) advance();
      } else {
        break;
      }
    }
  }

  // key: "0x..." entries of a resource block.
  void resources(std::string_view block) {
    std::size_t q = 0;
    while ((q = block.find("\"0x", q)) != std::string_view::npos) {
      const auto end = block.find('"', q + 1);
      const auto colon = block.rfind(':', q);
      if (end == std::string_view::npos || colon == std::string_view::npos) break;
      std::size_t k = colon;
      while (k > 0 && (id_char(block[k - 1]) || block[k - 1] == '-')) --k;
      res_[std::string(block.substr(k, colon - k))] = std::string(block.substr(q + 3, end - q - 3));
      q = end + 1;
    }
  }

  void skip_string() {  // at the opening quote
    advance();
    while (p_ < s_.size() && s_[p_] != '"') {
      if (s_[p_] == '\n') fail("unterminated string");
      if (s_[p_] == '\\' && p_ + 1 < s_.size()) advance();
      advance();
    }
    if (p_ >= s_.size()) fail("unterminated string");
    advance();
  }

  // From an opening bracket to its match (strings skipped; "->" is not a closing '>').
  void skip_balanced(char open, char close) {
    const int l0 = line_;
    const int c0 = col();
    std::size_t depth = 0;
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (c == '"') {
        skip_string();
        continue;
      }
      if (c == '-' && peek(1) == '>') {
        advance();
        advance();
        continue;
      }
      advance();
      if (c == open && ++depth > kMaxDepth) fail("brackets nested too deeply");
      if (c == close && --depth == 0) return;
    }
    fail_at(source_, l0, c0, std::string("'") + open + "' is never closed");
  }

  void word(bool dash = false) {  // SSA names may contain '-', bare identifiers not
    while (p_ < s_.size() && (id_char(s_[p_]) || (dash && s_[p_] == '-'))) advance();
  }

  void lex_one(Token& t) {
    const std::size_t b = p_;
    const char c = s_[p_];
    if (c == '%' || c == '@' || c == '^') {
      t.kind = c == '%' ? Tok::ssa : c == '@' ? Tok::sym : Tok::caret;
      advance();
      if (c == '@' && peek() == '"') {
        const std::size_t q = p_;
        skip_string();
        t.text = std::string(s_.substr(q + 1, p_ - q - 2));
        return;
      }
      word(c != '^');
      if (c == '%' && peek() == '#') {  // %0#1
        advance();
        word();
      }
      if (p_ == b + 1) fail(std::string("expected a name after '") + c + "'");
      t.text = std::string(s_.substr(b + 1, p_ - b - 1));
      return;
    }
    if (c == '"') {
      skip_string();
      t.kind = Tok::str;
      t.text = std::string(s_.substr(b + 1, p_ - b - 2));
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '-' && std::isdigit(static_cast<unsigned char>(peek(1))) != 0)) {
      advance();
      while (p_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[p_])) != 0 || s_[p_] == '.' ||
              ((s_[p_] == '-' || s_[p_] == '+') && (s_[p_ - 1] == 'e' || s_[p_ - 1] == 'E')))) {
        advance();
      }
      t.kind = Tok::num;
      t.text = std::string(s_.substr(b, p_ - b));
      return;
    }
    if (id_start(c) || c == '#' || c == '!') {
      t.kind = c == '#' ? Tok::hash : c == '!' ? Tok::bang : Tok::id;
      if (c == '#' || c == '!') advance();
      word();
      if (peek() == '<') skip_balanced('<', '>');  // tensor<...>, dense<...>, #d<...>
      t.text = std::string(s_.substr(b, p_ - b));
      if (t.text.size() == 1 && t.kind != Tok::id) fail(std::string("stray '") + c + "'");
      return;
    }
    if (c == '-' && peek(1) == '>') {
      advance();
      advance();
      t.text = "->";
      return;
    }
    if (std::strchr("()[]{}<>,:=?*+|", c) != nullptr) {
      advance();
      t.text = std::string(1, c);
      return;
    }
    fail(std::string("unexpected character '") + c + "'");
  }
};

std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::size_t elem_bytes(const std::string& e) {
  if (e == "f64" || e == "i64" || e == "ui64" || e == "si64") return 8;
  if (e == "f32" || e == "i32" || e == "ui32" || e == "si32") return 4;
  if (e == "f16" || e == "bf16" || e == "i16" || e == "ui16" || e == "si16") return 2;
  if (e == "i8" || e == "ui8" || e == "si8" || e == "i1") return 1;
  return 0;
}

double half_to_double(std::uint16_t h, bool bf16) {
  if (bf16) return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(m + 1024, e - 25);
}

// One element from its little-endian bytes (or a hex bit pattern).
double from_bits(std::uint64_t bits, const std::string& e) {
  if (e == "f32") return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
  if (e == "f64") return std::bit_cast<double>(bits);
  if (e == "f16" || e == "bf16")
    return half_to_double(static_cast<std::uint16_t>(bits), e == "bf16");
  const std::size_t n = elem_bytes(e);
  if (e.rfind("ui", 0) == 0 || e == "i1" || n == 8) return static_cast<double>(bits);
  const std::uint64_t sign = std::uint64_t{1} << (8 * n - 1);
  return static_cast<double>(static_cast<std::int64_t>((bits ^ sign) - sign));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::vector<Token> lex(std::string_view text, const std::string& source, Resources& resources) {
  return Lexer(text, source, resources).run();
}

Type parse_type(const Token& t, const std::string& source) {
  Type ty;
  ty.text = t.text;
  if (t.kind == Tok::id && t.text.rfind("tensor<", 0) == 0 && t.text.back() == '>') {
    std::string body = t.text.substr(7, t.text.size() - 8);
    if (const auto comma = body.find(','); comma != std::string::npos) body.resize(comma);
    std::size_t p = 0;
    if (body.rfind("*x", 0) == 0) {
      ty.elem = body.substr(2);
      return ty;
    }
    while (p < body.size() &&
           (std::isdigit(static_cast<unsigned char>(body[p])) != 0 || body[p] == '?')) {
      std::int64_t d = -1;
      if (body[p] == '?') {
        ++p;
      } else {
        const auto r = std::from_chars(body.data() + p, body.data() + body.size(), d);
        if (r.ec != std::errc() || d > kMaxDim) {
          fail_at(source, t.line, t.col, "malformed tensor type '" + t.text + "'");
        }
        p = static_cast<std::size_t>(r.ptr - body.data());
      }
      if (p >= body.size() || body[p] != 'x') {
        fail_at(source, t.line, t.col,
                "malformed tensor type '" + t.text + "': expected 'x' after a dimension");
      }
      ++p;
      ty.dims.push_back(d);
    }
    ty.elem = body.substr(p);
    if (ty.elem.empty()) {
      fail_at(source, t.line, t.col, "malformed tensor type '" + t.text + "': no element type");
    }
    ty.ranked = true;
    return ty;
  }
  if (t.kind == Tok::id && (t.text.front() == 'f' || t.text.front() == 'i' ||
                            t.text.rfind("bf16", 0) == 0 || t.text.rfind("ui", 0) == 0)) {
    ty.ranked = true;  // a scalar type
    ty.elem = t.text;
    return ty;
  }
  if (t.kind != Tok::id && t.kind != Tok::bang) {
    fail_at(source, t.line, t.col, "expected a type, found '" + t.text + "'");
  }
  return ty;
}

namespace {

struct DenseReader {
  std::string_view s;
  std::size_t p = 0;
  const Token& tok;
  const std::string& source;
  const std::string& elem;
  std::vector<double> out;
  std::size_t depth = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    fail_at(source, tok.line, tok.col, "malformed dense literal '" + tok.text + "': " + msg);
  }
  void ws() {
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p])) != 0) ++p;
  }
  void scalar(std::int64_t limit) {
    const std::size_t b = p;
    while (p < s.size() && s[p] != ',' && s[p] != ']' &&
           std::isspace(static_cast<unsigned char>(s[p])) == 0) {
      ++p;
    }
    const std::string_view w = s.substr(b, p - b);
    if (static_cast<std::int64_t>(out.size()) >= limit) fail("more elements than the type holds");
    if (w == "true" || w == "false") {
      out.push_back(w == "true" ? 1.0 : 0.0);
    } else if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
      std::uint64_t bits = 0;
      const auto r = std::from_chars(w.data() + 2, w.data() + w.size(), bits, 16);
      if (r.ec != std::errc() || r.ptr != w.data() + w.size())
        fail("bad hex '" + std::string(w) + "'");
      out.push_back(elem.front() == 'f' || elem == "bf16" ? from_bits(bits, elem)
                                                          : static_cast<double>(bits));
    } else if (auto v = parse_number(w)) {  // a decimal of an f32 tensor is that f32
      out.push_back(elem == "f32" ? static_cast<double>(static_cast<float>(*v)) : *v);
    } else {
      fail("bad element '" + std::string(w) + "'");
    }
  }
  void items(std::int64_t limit) {
    ws();
    if (p < s.size() && s[p] == '[') {
      if (++depth > kMaxDepth) fail("nested too deeply");
      ++p;
      ws();
      if (p < s.size() && s[p] == ']') {
        ++p;
        --depth;
        return;
      }
      while (true) {
        items(limit);
        ws();
        if (p < s.size() && s[p] == ']') break;
        if (p >= s.size() || s[p] != ',') fail("expected ',' or ']'");
        ++p;
      }
      ++p;
      --depth;
      return;
    }
    scalar(limit);
  }

  void hex(std::string_view h, std::int64_t count) {
    const std::size_t n = elem_bytes(elem);
    if (n == 0) fail("hex data for element type '" + elem + "' is not supported");
    if (h.size() % 2 != 0) fail("odd number of hex digits");
    const std::size_t bytes = h.size() / 2;
    if (bytes != n && bytes != n * static_cast<std::size_t>(count)) {
      fail(std::to_string(bytes) + " bytes of data for " + std::to_string(count) +
           " element(s) of " + std::to_string(n) + " byte(s)");
    }
    for (std::size_t i = 0; i < bytes / n; ++i) {
      std::uint64_t bits = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const int hi = hex_digit(h[2 * (i * n + k)]);
        const int lo = hex_digit(h[2 * (i * n + k) + 1]);
        if (hi < 0 || lo < 0) fail("bad hex digit");
        bits |= static_cast<std::uint64_t>(hi * 16 + lo) << (8 * k);
      }
      out.push_back(from_bits(bits, elem));
    }
  }
};

}  // namespace

std::optional<Constant> parse_dense(const Token& t, const Type& type, const std::string& source,
                                    const Resources& resources) {
  const bool resource = t.text.rfind("dense_resource<", 0) == 0;
  std::string blob;
  if (resource) {
    const auto it = resources.find(t.text.substr(15, t.text.size() - 16));
    if (it == resources.end()) return std::nullopt;  // elided or not in the file
    if (it->second.size() < 8) fail_at(source, t.line, t.col, "resource blob without alignment");
    blob = it->second.substr(8);  // the 4-byte alignment first
  } else if (t.text.rfind("dense<", 0) != 0 || t.text.back() != '>') {
    fail_at(source, t.line, t.col, "expected dense<...>, found '" + t.text + "'");
  }
  if (!type.ranked) fail_at(source, t.line, t.col, "a dense literal needs a ranked tensor type");
  std::int64_t count = 1;
  for (const auto d : type.dims) {
    if (d < 0) fail_at(source, t.line, t.col, "a dense literal of dynamic shape " + type.text);
    count = d == 0 ? 0 : (count > kMaxDim / d ? kMaxDim : count * d);
  }
  if (count > kMaxElements) return std::nullopt;  // kept as shape only
  const std::string_view body = std::string_view(t.text).substr(6, t.text.size() - 7);
  DenseReader r{body, 0, t, source, type.elem, {}, 0};
  r.ws();
  if (resource) {
    r.hex(blob, count);
  } else if (r.p < body.size() && body[r.p] == '"') {
    const auto e = body.find('"', r.p + 1);
    const std::string_view h = body.substr(r.p + 1, e - r.p - 1);
    if (e == std::string_view::npos || h.rfind("0x", 0) != 0) r.fail("expected \"0x...\"");
    r.hex(h.substr(2), count);
  } else {
    r.items(std::max<std::int64_t>(count, 1));
    r.ws();
    if (r.p != body.size()) r.fail("unexpected text after the elements");
  }
  if (r.out.size() == 1 && count != 1) r.out.assign(static_cast<std::size_t>(count), r.out[0]);
  if (static_cast<std::int64_t>(r.out.size()) != count) {
    r.fail(std::to_string(r.out.size()) + " element(s) for type " + type.text);
  }
  return Constant{type.dims, std::move(r.out)};
}

std::optional<std::vector<std::int64_t>> int_list(const std::vector<Token>& value) {
  std::vector<std::int64_t> out;
  auto add = [&out](std::string_view w) {
    std::int64_t v = 0;
    const auto r = std::from_chars(w.data(), w.data() + w.size(), v);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size()) return false;
    out.push_back(v);
    return true;
  };
  if (value.size() == 1 && value[0].kind == Tok::id) {  // array<i64: 1, 2> or dense<[1, 2]>
    const std::string& s = value[0].text;
    const auto open = s.find('<');
    std::string body = s.substr(open + 1, s.size() - open - 2);
    if (s.rfind("array<", 0) == 0) {
      const auto colon = body.find(':');
      body = colon == std::string::npos ? "" : body.substr(colon + 1);
    } else if (s.rfind("dense<", 0) != 0) {
      return std::nullopt;
    }
    std::string w;
    for (const char c : body + ",") {
      if (c == ',' || c == '[' || c == ']' || std::isspace(static_cast<unsigned char>(c)) != 0) {
        if (!w.empty() && !add(w)) return std::nullopt;
        w.clear();
      } else {
        w += c;
      }
    }
    return out;
  }
  for (const auto& t : value) {
    if (t.kind == Tok::punct && (t.text == "[" || t.text == "]" || t.text == ",")) continue;
    if (t.kind == Tok::punct && t.text == ":") break;  // "3 : i64"
    if (t.kind != Tok::num || !add(t.text)) return std::nullopt;
  }
  return out;
}

std::optional<double> number_of(const std::vector<Token>& value) {
  if (value.empty()) return std::nullopt;
  if (value[0].kind == Tok::num) {
    const std::string& w = value[0].text;
    if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
      std::uint64_t bits = 0;
      std::from_chars(w.data() + 2, w.data() + w.size(), bits, 16);
      const std::string elem = value.size() >= 3 ? value[2].text : "f64";
      return from_bits(bits, w.size() <= 10 && elem == "f64" ? "f32" : elem);
    }
    const auto v = parse_number(w);
    if (v && value.size() >= 3 && value[1].text == ":" && value[2].text == "f32") {
      return static_cast<double>(static_cast<float>(*v));  // `1.0e-03 : f32` is that f32
    }
    return v;
  }
  if (value[0].kind == Tok::id && value[0].text.rfind("dense<", 0) == 0) {
    const auto s = std::string_view(value[0].text).substr(6, value[0].text.size() - 7);
    return parse_number(s);
  }
  return std::nullopt;
}

}  // namespace normcore::import::mlir_detail
