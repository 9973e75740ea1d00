// Relay text -> RModule (relay_internal.hpp): a lexer (comments dropped, `/* ty=... */` kept as
// annotations) and a recursive-descent parser of the grammar relay.hpp describes. Bounded:
// nesting depth and token count are limited; errors name file:line:col.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "normcore/util/names.hpp"
#include "relay_internal.hpp"

namespace normcore::import::relay_detail {

namespace {

constexpr int kMaxDepth = 200;

struct Tok {
  enum class K { ident, local, global, num, str, punct, ty, end } k = K::end;
  std::string s;
  Pos pos;
};

class Lexer {
 public:
  Lexer(std::string_view t, const std::string& src, Pos origin = {})
      : t_(t), src_(src), line_(origin.line), col_(origin.col) {}

  std::vector<Tok> run() {
    std::vector<Tok> out;
    for (;;) {
      skip();
      Tok k;
      k.pos = {line_, col_};
      if (i_ >= t_.size()) {
        out.push_back(k);
        return out;
      }
      k = next(k.pos);
      out.push_back(std::move(k));
    }
  }

 private:
  std::string_view t_;
  const std::string& src_;
  std::size_t i_ = 0;
  int line_, col_;
  std::string pending_ty_;
  Pos ty_pos_;

  [[noreturn]] void fail(const std::string& m) const {
    throw Error(src_ + ":" + std::to_string(line_) + ":" + std::to_string(col_) + ": " + m);
  }
  char at(std::size_t k = 0) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }
  void adv(std::size_t n = 1) {
    for (std::size_t k = 0; k < n && i_ < t_.size(); ++k, ++i_) {
      if (t_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  void skip() {
    for (;;) {
      if (!pending_ty_.empty()) return;
      if (std::isspace(static_cast<unsigned char>(at())) != 0) {
        adv();
      } else if (at() == '/' && at(1) == '/') {
        while (i_ < t_.size() && at() != '\n') adv();
      } else if (at() == '/' && at(1) == '*') {
        const auto e = t_.find("*/", i_ + 2);
        if (e == std::string_view::npos) fail("unterminated /* comment");
        const auto body = t_.substr(i_ + 2, e - i_ - 2);
        const auto b = body.find_first_not_of(" \t\n");
        if (b != std::string_view::npos && body.substr(b, 3) == "ty=") {
          pending_ty_ = std::string(body.substr(b + 3));
          ty_pos_ = {line_, col_};
        }
        adv(e + 2 - i_);
      } else {
        return;
      }
    }
  }

  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
  }

  Tok next(Pos p) {
    Tok k;
    k.pos = p;
    if (!pending_ty_.empty()) {
      k = {Tok::K::ty, std::move(pending_ty_), ty_pos_};
      pending_ty_.clear();
      return k;
    }
    const char c = at();
    if (c == '%' || c == '@') {
      adv();
      const std::size_t s = i_;
      while (name_char(at())) adv();
      if (s == i_) fail(std::string("a name after '") + c + "'");
      k.k = c == '%' ? Tok::K::local : Tok::K::global;
      k.s = std::string(t_.substr(s, i_ - s));
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               (c == '-' && std::isdigit(static_cast<unsigned char>(at(1))) != 0)) {
      const std::size_t s = i_;
      adv();
      while (std::isalnum(static_cast<unsigned char>(at())) != 0 || at() == '.' ||
             ((at() == '-' || at() == '+') && (t_[i_ - 1] == 'e' || t_[i_ - 1] == 'E'))) {
        adv();
      }
      k.k = Tok::K::num;
      k.s = std::string(t_.substr(s, i_ - s));
    } else if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_') {
      const std::size_t s = i_;
      while (name_char(at())) adv();
      k.k = Tok::K::ident;
      k.s = std::string(t_.substr(s, i_ - s));
    } else if (c == '"') {
      adv();
      const std::size_t s = i_;
      while (i_ < t_.size() && at() != '"' && at() != '\n') adv();
      if (at() != '"') fail("unterminated string");
      k.k = Tok::K::str;
      k.s = std::string(t_.substr(s, i_ - s));
      adv();
    } else if (c == '-' && at(1) == '>') {
      k.k = Tok::K::punct;
      k.s = "->";
      adv(2);
    } else if (std::string_view("()[]{},=:;#.?").find(c) != std::string_view::npos) {
      k.k = Tok::K::punct;
      k.s = std::string(1, c);
      adv();
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return k;
  }
};

// A number token: value and dtype from its suffix (1e-05f -> f32, 2i64 -> i64, 3 -> i32).
std::pair<double, std::string> number(const Tok& t, const std::string& src) {
  std::string s = t.s, dtype;
  static const std::vector<std::pair<std::string, std::string>> kSuffix = {
      {"f16", "f16"}, {"f32", "f32"}, {"f64", "f64"}, {"i64", "i64"}, {"i32", "i32"},
      {"i16", "i16"}, {"i8", "i8"},   {"u8", "u8"},   {"f", "f32"}};
  for (const auto& [suf, dt] : kSuffix) {
    if (s.size() > suf.size() && s.ends_with(suf)) {
      s.resize(s.size() - suf.size());
      dtype = dt;
      break;
    }
  }
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty()) {
    throw Error(src + ":" + std::to_string(t.pos.line) + ":" + std::to_string(t.pos.col) +
                ": malformed number '" + t.s + "'");
  }
  if (dtype.empty()) {
    dtype = s.find_first_of(".eE") == std::string::npos ? "i32" : "f32";
  }
  return {v, dtype};
}

class Parser {
 public:
  Parser(std::vector<Tok> toks, const std::string& src) : t_(std::move(toks)), src_(src) {}

  RModule module() {
    RModule m;
    if (is("#")) {  // #[version = "0.0.5"]
      take();
      expect("[");
      if (!(peek().k == Tok::K::ident && peek().s == "version")) fail("expected 'version'");
      take();
      expect("=");
      if (peek().k != Tok::K::str) fail("expected the version string");
      if (take().s.rfind("0.0.", 0) != 0) fail("only Relay text version 0.0.x is supported");
      expect("]");
    }
    while (peek().k != Tok::K::end) {
      if (peek().k == Tok::K::ident && peek().s == "def") {
        m.funcs.push_back(func());
      } else if (peek().k == Tok::K::ident && (peek().s == "type" || peek().s == "extern")) {
        fail("type definitions and extern functions are not supported");
      } else {
        fail("expected 'def @name(...)'");
      }
    }
    if (m.funcs.empty()) fail("no function (def @main(...) { ... })");
    return m;
  }

 private:
  std::vector<Tok> t_;
  const std::string& src_;
  std::size_t p_ = 0;
  int depth_ = 0;

  const Tok& peek(std::size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  Tok take() {
    Tok k = peek();
    if (p_ < t_.size() - 1) ++p_;
    return k;
  }
  bool is(const char* s) const { return peek().k == Tok::K::punct && peek().s == s; }
  [[noreturn]] void fail(const std::string& m) const {
    const Tok& k = peek();
    throw Error(src_ + ":" + std::to_string(k.pos.line) + ":" + std::to_string(k.pos.col) + ": " +
                m + (k.k == Tok::K::end ? " (at the end of the text)" : ", found '" + k.s + "'"));
  }
  void expect(const char* s) {
    if (!is(s)) fail(std::string("expected '") + s + "'");
    take();
  }
  void ty_annotation(RExpr& e) {
    if (peek().k != Tok::K::ty) return;
    const Tok a = take();
    auto toks = Lexer(a.s, src_, a.pos).run();
    Parser sub(std::move(toks), src_);
    e.ty = sub.type();  // anything after the type (", span=...") is ignored
  }

  RFunc func() {
    RFunc f;
    f.pos = peek().pos;
    take();  // def
    if (peek().k != Tok::K::global) fail("expected the function name @name");
    f.name = take().s;
    expect("(");
    while (!is(")")) {
      if (peek().k != Tok::K::local) fail("expected a parameter %name");
      std::string name = take().s;
      RType ty;
      if (is(":")) {
        take();
        ty = type();
      }
      f.params.emplace_back(std::move(name), std::move(ty));
      if (!is(")")) expect(",");
    }
    take();
    if (is("->")) {
      take();
      (void)type();
    }
    while (peek().k == Tok::K::ty) take();
    expect("{");
    body(f);
    expect("}");
    return f;
  }

  void body(RFunc& f) {
    for (;;) {
      const bool let = peek().k == Tok::K::ident && peek().s == "let";
      if (let) take();
      if (peek().k == Tok::K::local && peek(1).k == Tok::K::punct &&
          (peek(1).s == "=" || (let && peek(1).s == ":"))) {
        RBinding b;
        b.pos = peek().pos;
        b.name = take().s;
        if (is(":")) {
          take();
          (void)type();
        }
        expect("=");
        b.expr = expr();
        expect(";");
        f.body.push_back(std::move(b));
        continue;
      }
      if (let) fail("expected '%name =' after let");
      f.result = expr();
      return;
    }
  }

  RType type() {
    RType ty;
    ty.given = true;
    if (is("(")) {  // a tuple type
      take();
      ty.tuple = true;
      while (!is(")")) {
        ty.fields.push_back(type());
        if (!is(")")) expect(",");
      }
      take();
      return ty;
    }
    if (peek().k != Tok::K::ident) fail("expected a type");
    const std::string name = take().s;
    if (name != "Tensor") {  // a scalar dtype
      ty.shape_known = true;
      ty.dtype = name;
      return ty;
    }
    expect("[");
    expect("(");
    ty.shape_known = true;
    while (!is(")")) {
      if (peek().k == Tok::K::num) {
        const auto [v, dt] = number(take(), src_);
        if (v < 0 || v != std::floor(v)) fail("a dimension must be a non-negative integer");
        ty.shape.push_back(static_cast<std::int64_t>(v));
      } else if (is("?") || (peek().k == Tok::K::ident && peek().s == "Any")) {
        take();
        ty.shape.push_back(-1);
      } else {
        fail("expected a dimension");
      }
      if (!is(")")) expect(",");
    }
    take();
    expect(",");
    if (peek().k != Tok::K::ident) fail("expected the element type");
    ty.dtype = take().s;
    expect("]");
    return ty;
  }

  RExprP expr() {
    if (++depth_ > kMaxDepth) fail("expression nested too deeply");
    RExprP e = primary();
    while (is(".") && peek(1).k == Tok::K::num) {  // tuple get: (...).0
      take();
      auto g = std::make_shared<RExpr>();
      g->kind = RExpr::Kind::get;
      g->pos = peek().pos;
      g->index = static_cast<int>(number(take(), src_).first);
      g->args.push_back(e);
      e = g;
    }
    ty_annotation(*e);
    --depth_;
    return e;
  }

  RExprP primary() {
    auto e = std::make_shared<RExpr>();
    e->pos = peek().pos;
    const Tok& k = peek();
    if (k.k == Tok::K::local) {
      e->kind = RExpr::Kind::var;
      e->name = take().s;
      return e;
    }
    if (k.k == Tok::K::num) {
      e->kind = RExpr::Kind::scalar;
      std::tie(e->value, e->dtype) = number(take(), src_);
      return e;
    }
    if (k.k == Tok::K::ident && (k.s == "True" || k.s == "False")) {
      e->kind = RExpr::Kind::scalar;
      e->value = take().s == "True" ? 1 : 0;
      e->dtype = "i1";
      return e;
    }
    if (k.k == Tok::K::ident && k.s == "meta") {
      fail(
          "meta[...] constants are not supported: bind the constants as parameters "
          "(function arguments filled from --params)");
    }
    if (is("(")) {
      take();
      std::vector<RExprP> items;
      bool comma = false;
      while (!is(")")) {
        items.push_back(expr());
        if (!is(")")) {
          expect(",");
          comma = true;
        }
      }
      take();
      if (items.size() == 1 && !comma) return items[0];
      e->kind = RExpr::Kind::tuple;
      e->args = std::move(items);
      return e;
    }
    if (k.k == Tok::K::global) fail("calls of other functions are not supported");
    if (k.k != Tok::K::ident) fail("expected an expression");
    e->kind = RExpr::Kind::call;
    e->name = take().s;
    if (!is_relay_op(e->name)) {
      const auto best = closest_relay_op(e->name);
      throw Error(src_ + ":" + std::to_string(e->pos.line) + ":" + std::to_string(e->pos.col) +
                  ": '" + e->name + "' is not a Relay operator" +
                  (best.empty() ? "" : " (did you mean '" + best + "'?)"));
    }
    call_args(*e);
    return e;
  }

  void call_args(RExpr& e) {
    expect("(");
    while (!is(")")) {
      if (peek().k == Tok::K::ident && peek(1).k == Tok::K::punct && peek(1).s == "=") {
        const std::string key = take().s;
        take();
        e.attrs[key] = attr_value();
      } else {
        e.args.push_back(expr());
      }
      if (!is(")")) expect(",");
    }
    take();
  }

  void attr_list(Attr& a) {
    take();
    while (!is("]")) {
      if (is("[")) {
        attr_list(a);  // nested lists flatten
      } else {
        if (peek().k != Tok::K::num) fail("expected a number in the list");
        a.ints.push_back(static_cast<std::int64_t>(number(take(), src_).first));
      }
      if (!is("]")) expect(",");
    }
    take();
  }

  Attr attr_value() {
    Attr a;
    if (peek().k == Tok::K::num) {
      const auto [v, dt] = number(take(), src_);
      a.f = v;
      if (dt[0] == 'i' && v == std::floor(v)) a.i = static_cast<std::int64_t>(v);
    } else if (peek().k == Tok::K::str) {
      a.s = take().s;
    } else if (is("[")) {
      attr_list(a);
    } else if (peek().k == Tok::K::ident) {
      a.s = take().s;  // True / False / None / a dtype
      if (a.s == "True" || a.s == "False") a.i = a.s == "True" ? 1 : 0;
    } else {
      fail("expected an attribute value");
    }
    return a;
  }
};

}  // namespace

RModule parse_relay_module(std::string_view text, const std::string& source) {
  return Parser(Lexer(text, source).run(), source).module();
}

const std::set<std::string>& relay_ops() {
  static const std::set<std::string> k = {"abs",
                                          "add",
                                          "argmax",
                                          "argmin",
                                          "broadcast_to",
                                          "cast",
                                          "cast_like",
                                          "ceil",
                                          "clip",
                                          "concatenate",
                                          "copy",
                                          "cos",
                                          "divide",
                                          "equal",
                                          "erf",
                                          "exp",
                                          "expand_dims",
                                          "floor",
                                          "floor_divide",
                                          "full",
                                          "full_like",
                                          "greater",
                                          "greater_equal",
                                          "layout_transform",
                                          "less",
                                          "less_equal",
                                          "log",
                                          "max",
                                          "maximum",
                                          "mean",
                                          "min",
                                          "minimum",
                                          "mod",
                                          "multiply",
                                          "negative",
                                          "not_equal",
                                          "ones",
                                          "ones_like",
                                          "power",
                                          "prod",
                                          "repeat",
                                          "reshape",
                                          "reshape_like",
                                          "reverse",
                                          "round",
                                          "rsqrt",
                                          "sigmoid",
                                          "sign",
                                          "sin",
                                          "split",
                                          "sqrt",
                                          "squeeze",
                                          "stack",
                                          "strided_slice",
                                          "subtract",
                                          "sum",
                                          "take",
                                          "tanh",
                                          "tile",
                                          "transpose",
                                          "variance",
                                          "where",
                                          "zeros",
                                          "zeros_like",
                                          "image.resize2d",
                                          "nn.adaptive_avg_pool2d",
                                          "nn.avg_pool2d",
                                          "nn.batch_flatten",
                                          "nn.batch_matmul",
                                          "nn.batch_norm",
                                          "nn.bias_add",
                                          "nn.conv1d",
                                          "nn.conv2d",
                                          "nn.conv2d_transpose",
                                          "nn.conv3d",
                                          "nn.dense",
                                          "nn.dropout",
                                          "nn.global_avg_pool2d",
                                          "nn.global_max_pool2d",
                                          "nn.group_norm",
                                          "nn.instance_norm",
                                          "nn.layer_norm",
                                          "nn.leaky_relu",
                                          "nn.log_softmax",
                                          "nn.matmul",
                                          "nn.max_pool2d",
                                          "nn.pad",
                                          "nn.prelu",
                                          "nn.relu",
                                          "nn.softmax",
                                          "nn.upsampling",
                                          "qnn.quantize",
                                          "qnn.dequantize",
                                          "qnn.requantize",
                                          "qnn.conv2d",
                                          "qnn.dense",
                                          "qnn.add",
                                          "qnn.mul",
                                          "fixed_point_multiply",
                                          "annotation.stop_fusion"};
  return k;
}

bool is_relay_op(const std::string& name) {
  return relay_ops().contains(name);
}

std::string closest_relay_op(const std::string& name) {
  return util::closest_name(name, relay_ops(), 4);
}

}  // namespace normcore::import::relay_detail
