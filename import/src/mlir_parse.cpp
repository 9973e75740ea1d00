// MLIR text front end, the op-level parser: module / func.func / ops (generic and pretty form)
// from the token stream, and the known op names of the checked dialects (see mlir_internal.hpp).
#include <algorithm>
#include <set>

#include "mlir_internal.hpp"
#include "normcore/util/names.hpp"

namespace normcore::import::mlir_detail {

namespace {

const std::set<std::string>& known_ops(std::string_view dialect) {
  static const std::set<std::string> stablehlo = {"abs",
                                                  "add",
                                                  "after_all",
                                                  "all_gather",
                                                  "all_reduce",
                                                  "all_to_all",
                                                  "and",
                                                  "atan2",
                                                  "batch_norm_grad",
                                                  "batch_norm_inference",
                                                  "batch_norm_training",
                                                  "bitcast_convert",
                                                  "broadcast",
                                                  "broadcast_in_dim",
                                                  "case",
                                                  "cbrt",
                                                  "ceil",
                                                  "cholesky",
                                                  "clamp",
                                                  "collective_broadcast",
                                                  "collective_permute",
                                                  "compare",
                                                  "complex",
                                                  "composite",
                                                  "concatenate",
                                                  "constant",
                                                  "convert",
                                                  "convolution",
                                                  "cosine",
                                                  "count_leading_zeros",
                                                  "create_token",
                                                  "cross-replica-sum",
                                                  "custom_call",
                                                  "divide",
                                                  "dot",
                                                  "dot_general",
                                                  "dynamic_broadcast_in_dim",
                                                  "dynamic_conv",
                                                  "dynamic_gather",
                                                  "dynamic_iota",
                                                  "dynamic_pad",
                                                  "dynamic_reshape",
                                                  "dynamic_slice",
                                                  "dynamic_update_slice",
                                                  "einsum",
                                                  "exponential",
                                                  "exponential_minus_one",
                                                  "fft",
                                                  "floor",
                                                  "gather",
                                                  "get_dimension_size",
                                                  "get_tuple_element",
                                                  "if",
                                                  "imag",
                                                  "infeed",
                                                  "iota",
                                                  "is_finite",
                                                  "log",
                                                  "log_plus_one",
                                                  "logistic",
                                                  "map",
                                                  "maximum",
                                                  "minimum",
                                                  "multiply",
                                                  "negate",
                                                  "not",
                                                  "optimization_barrier",
                                                  "or",
                                                  "outfeed",
                                                  "pad",
                                                  "partition_id",
                                                  "popcnt",
                                                  "power",
                                                  "real",
                                                  "real_dynamic_slice",
                                                  "recv",
                                                  "reduce",
                                                  "reduce_precision",
                                                  "reduce_scatter",
                                                  "reduce_window",
                                                  "remainder",
                                                  "replica_id",
                                                  "reshape",
                                                  "return",
                                                  "reverse",
                                                  "rng",
                                                  "rng_bit_generator",
                                                  "round_nearest_afz",
                                                  "round_nearest_even",
                                                  "rsqrt",
                                                  "scatter",
                                                  "select",
                                                  "select_and_scatter",
                                                  "send",
                                                  "set_dimension_size",
                                                  "shift_left",
                                                  "shift_right_arithmetic",
                                                  "shift_right_logical",
                                                  "sign",
                                                  "sine",
                                                  "slice",
                                                  "sort",
                                                  "sqrt",
                                                  "subtract",
                                                  "tan",
                                                  "tanh",
                                                  "torch_index_select",
                                                  "transpose",
                                                  "triangular_solve",
                                                  "tuple",
                                                  "unary_einsum",
                                                  "uniform_dequantize",
                                                  "uniform_quantize",
                                                  "while",
                                                  "xor"};
  static const std::set<std::string> tosa = {"abs",
                                             "add",
                                             "apply_scale",
                                             "argmax",
                                             "arithmetic_right_shift",
                                             "avg_pool2d",
                                             "bitwise_and",
                                             "bitwise_not",
                                             "bitwise_or",
                                             "bitwise_xor",
                                             "cast",
                                             "ceil",
                                             "clamp",
                                             "clz",
                                             "concat",
                                             "cond_if",
                                             "const",
                                             "const_shape",
                                             "conv2d",
                                             "conv3d",
                                             "cos",
                                             "custom",
                                             "depthwise_conv2d",
                                             "dim",
                                             "equal",
                                             "erf",
                                             "exp",
                                             "fft2d",
                                             "floor",
                                             "fully_connected",
                                             "gather",
                                             "greater",
                                             "greater_equal",
                                             "identity",
                                             "int_div",
                                             "intdiv",
                                             "log",
                                             "logical_and",
                                             "logical_left_shift",
                                             "logical_not",
                                             "logical_or",
                                             "logical_right_shift",
                                             "logical_xor",
                                             "matmul",
                                             "max_pool2d",
                                             "maximum",
                                             "minimum",
                                             "mul",
                                             "negate",
                                             "pad",
                                             "pow",
                                             "reciprocal",
                                             "reduce_all",
                                             "reduce_any",
                                             "reduce_max",
                                             "reduce_min",
                                             "reduce_prod",
                                             "reduce_sum",
                                             "rescale",
                                             "reshape",
                                             "resize",
                                             "reverse",
                                             "rfft2d",
                                             "rsqrt",
                                             "scatter",
                                             "select",
                                             "sigmoid",
                                             "sin",
                                             "slice",
                                             "sub",
                                             "table",
                                             "tanh",
                                             "tile",
                                             "transpose",
                                             "transpose_conv2d",
                                             "variable",
                                             "variable_read",
                                             "variable_write",
                                             "while_loop",
                                             "yield"};
  static const std::set<std::string> func = {"func", "call", "call_indirect", "constant", "return"};
  static const std::set<std::string> none;
  if (dialect == "stablehlo") return stablehlo;
  if (dialect == "tosa") return tosa;
  if (dialect == "func") return func;
  return none;
}

bool is_open(const Token& t) {
  return t.kind == Tok::punct && (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "<");
}
bool is_close(const Token& t) {
  return t.kind == Tok::punct && (t.text == ")" || t.text == "]" || t.text == "}" || t.text == ">");
}

class Parser {
 public:
  Parser(const std::vector<Token>& t, const std::string& source) : t_(t), source_(source) {}

  Module run() {
    Module m;
    while (!eof()) {
      if (cur().kind == Tok::id && cur().text == "module") {
        ++i_;
        if (!eof() && cur().kind == Tok::sym) ++i_;
        if (is_id("attributes")) {
          ++i_;
          skip_group();
        }
        expect("{", "to open the module body");
        while (!is_punct("}")) top_item(m);
        ++i_;
      } else {
        top_item(m);
      }
    }
    return m;
  }

 private:
  const std::vector<Token>& t_;
  const std::string& source_;
  std::size_t i_ = 0;

  [[nodiscard]] bool eof() const { return i_ >= t_.size(); }
  [[nodiscard]] const Token& cur() const {
    if (eof()) {
      const Token& last = t_.back();
      fail_at(source_, last.line, last.col + static_cast<int>(last.text.size()),
              "unexpected end of the file");
    }
    return t_[i_];
  }
  [[nodiscard]] bool is_punct(std::string_view p) const {
    return cur().kind == Tok::punct && cur().text == p;
  }
  [[nodiscard]] bool is_id(std::string_view p) const {
    return !eof() && cur().kind == Tok::id && cur().text == p;
  }
  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    fail_at(source_, t.line, t.col, msg);
  }
  void expect(std::string_view p, const std::string& what) {
    if (!is_punct(p))
      fail(cur(), "expected '" + std::string(p) + "' " + what + ", found '" + cur().text + "'");
    ++i_;
  }

  // Skips a bracketed group starting at the current token; returns the index after it.
  std::size_t skip_group() {
    if (!is_open(cur())) fail(cur(), "expected a bracket, found '" + cur().text + "'");
    std::size_t depth = 0;
    const Token& open = cur();
    while (!eof()) {
      if (is_open(cur()) && ++depth > kMaxDepth) fail(cur(), "brackets nested too deeply");
      if (is_close(cur()) && --depth == 0) return ++i_;
      ++i_;
    }
    fail(open, "'" + open.text + "' is never closed");
  }

  void top_item(Module& m) {
    if (cur().kind == Tok::hash || cur().kind == Tok::bang) {  // #alias = ..., !alias = ...
      const int line = cur().line;
      ++i_;
      expect("=", "after an alias name");
      while (!eof() && cur().line == line) {
        if (is_open(cur())) {
          skip_group();
        } else {
          ++i_;
        }
      }
      return;
    }
    if (is_id("func.func") || is_id("func")) {
      m.funcs.push_back(parse_func());
      return;
    }
    fail(cur(), "expected 'func.func' or 'module', found '" + cur().text + "'");
  }

  Type type_here() {
    const Type ty = parse_type(cur(), source_);
    ++i_;
    return ty;
  }

  // An attribute dictionary after an argument: jax.arg_info = "..." (or mhlo.name) is kept.
  std::string arg_attrs() {
    std::string info;
    if (eof() || !is_punct("{")) return info;
    const std::size_t b = i_;
    const std::size_t e = skip_group();
    for (std::size_t k = b; k + 2 < e; ++k) {
      if (t_[k].kind == Tok::id && (t_[k].text == "jax.arg_info" || t_[k].text == "mhlo.name") &&
          t_[k + 1].text == "=" && t_[k + 2].kind == Tok::str) {
        info = t_[k + 2].text;
      }
    }
    return info;
  }

  Func parse_func() {
    Func f;
    ++i_;
    if (is_id("public") || is_id("private") || is_id("nested")) {
      f.is_public = cur().text == "public";
      ++i_;
    }
    if (cur().kind != Tok::sym) fail(cur(), "expected a function name '@name'");
    f.tok = &cur();
    f.name = cur().text;
    ++i_;
    expect("(", "to open the argument list of @" + f.name);
    while (!is_punct(")")) {
      if (cur().kind != Tok::ssa) fail(cur(), "expected an argument '%name'");
      Arg a{cur().text, {}, "", &cur()};
      ++i_;
      expect(":", "after argument %" + a.name);
      a.type = type_here();
      a.info = arg_attrs();
      f.args.push_back(std::move(a));
      if (!is_punct(")")) expect(",", "between arguments");
    }
    ++i_;
    if (!eof() && is_punct("->")) {
      ++i_;
      const bool paren = is_punct("(");
      if (paren) ++i_;
      while (!paren || !is_punct(")")) {
        f.results.push_back(type_here());
        if (paren) arg_attrs();
        if (!paren || is_punct(")")) break;
        expect(",", "between result types");
      }
      if (paren) ++i_;
    }
    if (is_id("attributes")) {
      ++i_;
      skip_group();
    }
    if (eof() || !is_punct("{")) {
      f.declaration = true;
      return f;
    }
    ++i_;
    while (!is_punct("}")) {
      if (cur().kind == Tok::caret)
        fail(cur(), "blocks (^bb) in a function body are not supported");
      f.ops.push_back(parse_op());
    }
    ++i_;
    if (f.ops.empty() || (f.ops.back().name != "func.return" && f.ops.back().name != "return")) {
      fail(*f.tok, "function @" + f.name + " does not end with return");
    }
    return f;
  }

  void results(Op& op) {
    if (cur().kind != Tok::ssa) return;
    while (true) {
      if (cur().kind != Tok::ssa) fail(cur(), "expected a result name '%name'");
      std::string n = cur().text;
      ++i_;
      if (is_punct(":")) {
        ++i_;
        if (cur().kind != Tok::num) fail(cur(), "expected a result count after ':'");
        const int cnt = std::stoi(cur().text);
        if (cnt < 1 || cnt > 4096) fail(cur(), "bad result count " + cur().text);
        ++i_;
        for (int k = 0; k < cnt; ++k) op.results.push_back(n + "#" + std::to_string(k));
      } else {
        op.results.push_back(n);
      }
      if (is_punct("=")) break;
      expect(",", "between results");
    }
    ++i_;
  }

  // The op's tokens: to the end of its line at bracket depth 0 (pretty `while` continues with
  // `cond {` / `do {` lines).
  std::size_t op_end(std::size_t b) {
    std::size_t depth = 0;
    std::size_t k = b;
    while (k < t_.size()) {
      const Token& tk = t_[k];
      if (depth == 0 && k > b && tk.line > t_[k - 1].line &&
          !(tk.kind == Tok::id && (tk.text == "cond" || tk.text == "do"))) {
        break;
      }
      if (is_open(tk) && ++depth > kMaxDepth) fail(tk, "brackets nested too deeply");
      if (is_close(tk)) {
        if (depth == 0) break;
        --depth;
      }
      ++k;
    }
    if (depth != 0) fail(t_[b], "unbalanced brackets in this op");
    return k;
  }

  Op parse_op();
  void read_operands(Op& op, std::size_t b, std::size_t colon) const;
  void read_attrs(Op& op, std::size_t b, std::size_t colon) const;
  void read_types(Op& op, std::size_t colon, std::size_t e) const;
};

Op Parser::parse_op() {
  Op op;
  results(op);
  const Token& nt = cur();
  if (nt.kind != Tok::id && nt.kind != Tok::str)
    fail(nt, "expected an op name, found '" + nt.text + "'");
  op.name_tok = &nt;
  op.generic = nt.kind == Tok::str;
  op.name = nt.text == "return" || nt.text == "call" ? "func." + nt.text : nt.text;
  if (const auto msg = unknown_op_message(op.name); !msg.empty()) fail(nt, msg);
  const std::size_t b = i_ + 1;
  const std::size_t e = op_end(i_);
  std::size_t depth = 0;
  std::size_t colon = e;
  for (std::size_t k = b; k < e; ++k) {
    if (is_open(t_[k])) ++depth;
    if (is_close(t_[k])) --depth;
    if (depth == 0 && t_[k].kind == Tok::punct && t_[k].text == ":") colon = k;
  }
  if (op.name == "func.call") {
    if (b >= e || t_[b].kind != Tok::sym) fail(nt, "call needs a callee '@name'");
    op.callee = t_[b].text;
  }
  read_operands(op, b, colon);
  read_attrs(op, b, colon);
  if (colon < e) read_types(op, colon + 1, e);
  i_ = e;
  return op;
}

void Parser::read_operands(Op& op, std::size_t b, std::size_t colon) const {
  std::size_t k = b;
  if (op.name == "func.call") ++k;
  std::size_t group_end = k;
  if (k < colon && t_[k].text == "(" && t_[k].kind == Tok::punct) {  // (%a, %b)
    std::size_t depth = 0;
    for (group_end = k; group_end < colon; ++group_end) {
      if (is_open(t_[group_end])) ++depth;
      if (is_close(t_[group_end]) && --depth == 0) break;
      if (depth == 1 && t_[group_end].kind == Tok::ssa) op.operands.push_back(t_[group_end].text);
    }
  }
  if (op.generic) return;
  std::size_t depth = 0;
  for (std::size_t j = group_end; j < colon; ++j) {
    if (is_open(t_[j])) ++depth;
    if (is_close(t_[j]) && depth > 0) --depth;
    if (depth == 0 && t_[j].kind == Tok::ssa) op.operands.push_back(t_[j].text);
  }
}

// key = value at depth 0 (pretty) or inside {...} / <{...}> (attribute dictionaries).
void Parser::read_attrs(Op& op, std::size_t b, std::size_t colon) const {
  std::vector<const Token*> open;
  for (std::size_t k = b; k < colon; ++k) {
    const Token& tk = t_[k];
    if (is_open(tk)) open.push_back(&tk);
    if (is_close(tk) && !open.empty()) open.pop_back();
    const bool in_dict = open.empty() || open.back()->text == "{";
    const bool regionless = open.size() <= 2;
    if (!(tk.kind == Tok::id && in_dict && regionless && k + 1 < colon && t_[k + 1].text == "=" &&
          t_[k + 1].kind == Tok::punct)) {
      continue;
    }
    std::vector<Token> value;
    std::size_t depth = 0;
    std::size_t j = k + 2;
    for (; j < colon; ++j) {
      if (depth == 0 && (t_[j].text == "," || is_close(t_[j])) && t_[j].kind == Tok::punct) break;
      if (is_open(t_[j])) ++depth;
      if (is_close(t_[j])) --depth;
      value.push_back(t_[j]);
    }
    op.attrs.emplace_back(tk.text, std::move(value));
    k = j - 1;
  }
  if (!op.generic && b < colon && t_[b].kind == Tok::id && t_[b].text.rfind("dense", 0) == 0) {
    op.attrs.emplace_back("value", std::vector<Token>{t_[b]});  // stablehlo.constant dense<..>
  }
}

void Parser::read_types(Op& op, std::size_t k, std::size_t e) const {
  auto list = [&](std::vector<Type>& out) {
    if (k < e && t_[k].text == "(" && t_[k].kind == Tok::punct) {
      ++k;
      while (k < e && t_[k].text != ")") {
        out.push_back(parse_type(t_[k++], source_));
        if (k < e && t_[k].text == ",") ++k;
      }
      if (k >= e) fail(t_[e - 1], "unclosed type list");
      ++k;
      return;
    }
    while (k < e) {
      out.push_back(parse_type(t_[k++], source_));
      if (k < e && t_[k].text == ",") {
        ++k;
      } else {
        break;
      }
    }
  };
  std::vector<Type> first;
  list(first);
  if (k < e && t_[k].text == "->") {
    ++k;
    op.operand_types = std::move(first);
    list(op.result_types);
  } else {
    op.result_types = std::move(first);
  }
  if (k < e) fail(t_[k], "unexpected '" + t_[k].text + "' after the op's type");
}

}  // namespace

Module parse_module(const std::vector<Token>& toks, const std::string& source) {
  if (toks.empty()) throw Error(source + ": empty MLIR file");
  return Parser(toks, source).run();
}

std::string unknown_op_message(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return "";
  const std::string dialect = name.substr(0, dot);
  const std::string op = name.substr(dot + 1);
  const auto& known = known_ops(dialect);
  if (known.empty() || known.count(op) != 0) return "";
  const std::string best = util::closest_name(op, known, 4);
  return "unknown " + dialect + " op '" + name + "'" +
         (best.empty() ? "" : " (did you mean '" + dialect + "." + best + "'?)");
}

}  // namespace normcore::import::mlir_detail
