// MLIR text front end -> normcore::import::Graph (see mlir.hpp): tokens (mlir_lex.cpp) -> module
// (mlir_parse.cpp) -> the entry function instantiated into a Graph, calls inlined.
#include "normcore/import/mlir.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <unordered_map>

#include "mlir_internal.hpp"
#include "normcore/npz.hpp"  // read_file_bytes
#include "text_start.hpp"

namespace normcore::import {

namespace {

using namespace mlir_detail;

constexpr std::size_t kMaxCallDepth = 64;

const std::map<std::string, std::string>& op_table() {
  static const std::map<std::string, std::string> t = {
      {"stablehlo.add", "add"},
      {"stablehlo.subtract", "sub"},
      {"stablehlo.multiply", "mul"},
      {"stablehlo.divide", "div"},
      {"stablehlo.sqrt", "sqrt"},
      {"stablehlo.rsqrt", "rsqrt"},
      {"stablehlo.power", "pow"},
      {"stablehlo.negate", "neg"},
      {"stablehlo.maximum", "max"},
      {"stablehlo.minimum", "min"},
      {"stablehlo.clamp", "clamp"},
      {"stablehlo.broadcast_in_dim", "broadcast"},
      {"stablehlo.reshape", "reshape"},
      {"stablehlo.convert", "convert"},
      {"stablehlo.batch_norm_inference", "bn"},
      {"stablehlo.convolution", "conv"},
      {"stablehlo.dot", "matmul"},
      {"stablehlo.dot_general", "matmul"},
      {"tosa.add", "add"},
      {"tosa.sub", "sub"},
      {"tosa.mul", "mul"},
      {"tosa.rsqrt", "rsqrt"},
      {"tosa.reciprocal", "reciprocal"},
      {"tosa.pow", "pow"},
      {"tosa.negate", "neg"},
      {"tosa.maximum", "max"},
      {"tosa.minimum", "min"},
      {"tosa.clamp", "clamp"},
      {"tosa.reshape", "reshape"},
      {"tosa.cast", "convert"},
      {"tosa.identity", "identity"},
      {"tosa.conv2d", "conv"},
      {"tosa.depthwise_conv2d", "conv"},
      {"tosa.matmul", "matmul"},
      {"tosa.fully_connected", "matmul"},
  };
  return t;
}

bool is_constant_op(const std::string& name) {
  return name == "stablehlo.constant" || name == "tosa.const" || name == "tosa.const_shape" ||
         name == "arith.constant";
}

// How many leading operands the graph op takes (the rest, e.g. tosa.mul's shift or
// tosa.reshape's shape operand, are checked or dropped); 0 = all, unchecked.
std::size_t arity(const std::string& op) {
  if (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "pow" || op == "max" ||
      op == "min") {
    return 2;
  }
  if (op == "sqrt" || op == "rsqrt" || op == "reciprocal" || op == "neg" || op == "broadcast" ||
      op == "reshape" || op == "convert" || op == "identity") {
    return 1;
  }
  if (op == "bn") return 5;
  return 0;
}

bool elementwise(const std::string& op) {
  return arity(op) == 2 || op == "sqrt" || op == "rsqrt" || op == "reciprocal" || op == "neg" ||
         op == "convert" || op == "identity";
}

class Builder {
 public:
  Builder(const Module& m, const std::string& source, const Resources& res)
      : m_(m), source_(source), res_(res) {
    graph_.source = source;
    graph_.format = "mlir";
  }

  Graph build() {
    const Func* entry = m_.find("main");
    if (entry == nullptr) {
      for (const auto& f : m_.funcs) {
        if (!f.is_public || f.declaration) continue;
        if (entry != nullptr) {
          throw Error(source_ +
                      ": several public functions and none is @main: which is the "
                      "model?");
        }
        entry = &f;
      }
    }
    if (entry == nullptr || entry->declaration) {
      throw Error(source_ + ": no entry function (@main or one public func.func with a body)");
    }
    std::vector<int> args;
    for (std::size_t i = 0; i < entry->args.size(); ++i) {
      const Arg& a = entry->args[i];
      Value v = value_of(a.name, a.type);
      v.origin = "parameter(" + std::to_string(i) + ") '" + a.name + "'" +
                 (a.info.empty() ? "" : " (" + a.info + ")");
      args.push_back(graph_.add_value(std::move(v)));
    }
    graph_.inputs = args;
    std::vector<std::string> stack;
    graph_.outputs = instantiate(*entry, args, "", stack);
    return std::move(graph_);
  }

 private:
  const Module& m_;
  const std::string& source_;
  const Resources& res_;
  Graph graph_;
  using Env = std::unordered_map<std::string, int>;

  [[noreturn]] void fail(const Token* t, const std::string& msg) const {
    if (t == nullptr) throw Error(source_ + ": " + msg);
    fail_at(source_, t->line, t->col, msg);
  }

  static Value value_of(const std::string& name, const Type& t) {
    Value v;
    v.name = name;
    v.dtype = t.elem;
    if (t.ranked) {
      v.shape = t.dims;
      v.shape_known = true;
    }
    return v;
  }

  std::vector<int> instantiate(const Func& f, const std::vector<int>& args,
                               const std::string& prefix, std::vector<std::string>& stack) {
    if (f.declaration) fail(f.tok, "function @" + f.name + " has no body");
    if (args.size() != f.args.size()) {
      fail(f.tok, "@" + f.name + " takes " + std::to_string(f.args.size()) + " argument(s), got " +
                      std::to_string(args.size()));
    }
    stack.push_back(f.name);
    Env env;
    for (std::size_t i = 0; i < args.size(); ++i) env[f.args[i].name] = args[i];
    for (const Op& op : f.ops) {
      if (op.name == "func.return") {
        stack.pop_back();
        return resolve(op, env, true);
      }
      std::vector<int> outs;
      if (op.name == "func.call") {
        outs = call(op, env, prefix, stack);
      } else {
        outs = lower(op, env, prefix);
      }
      if (outs.size() != op.results.size()) {
        fail(op.name_tok, op.name + " gives " + std::to_string(outs.size()) + " result(s), " +
                              std::to_string(op.results.size()) + " named");
      }
      for (std::size_t k = 0; k < outs.size(); ++k) env[op.results[k]] = outs[k];
    }
    fail(f.tok, "function @" + f.name + " does not end with return");
  }

  std::vector<int> resolve(const Op& op, const Env& env, bool strict) const {
    std::vector<int> out;
    for (const auto& n : op.operands) {
      std::string base = n;
      const auto it = env.find(base);
      if (it == env.end()) {
        if (strict) fail(op.name_tok, op.name + ": use of undefined value %" + n);
        continue;
      }
      out.push_back(it->second);
    }
    return out;
  }

  std::vector<int> call(const Op& op, const Env& env, const std::string& prefix,
                        std::vector<std::string>& stack) {
    const Func* callee = m_.find(op.callee);
    if (callee == nullptr) fail(op.name_tok, "call of unknown function @" + op.callee);
    if (std::find(stack.begin(), stack.end(), op.callee) != stack.end()) {
      fail(op.name_tok, "recursive call of @" + op.callee);
    }
    if (stack.size() >= kMaxCallDepth) fail(op.name_tok, "calls nested too deeply");
    const std::string sub = prefix + (op.results.empty() ? op.callee : op.results[0]) + "/";
    return instantiate(*callee, resolve(op, env, true), sub, stack);
  }

  int scalar_constant(double v, const std::string& name) {
    Value c;
    c.name = name;
    c.shape_known = true;
    c.dtype = "f32";
    c.constant = Constant{{}, {v}};
    c.origin = "constant '" + name + "'";
    return graph_.add_value(std::move(c));
  }

  std::vector<int> constant(const Op& op, const std::string& prefix) {
    if (op.results.size() != 1 || op.result_types.size() != 1) {
      fail(op.name_tok, op.name + " needs one result and its type");
    }
    const auto* val = op.attr("value");
    if (val == nullptr) val = op.attr("values");
    if (val == nullptr || val->empty()) fail(op.name_tok, op.name + " needs a value = dense<...>");
    Value v = value_of(prefix + op.results[0], op.result_types[0]);
    const Token& d = val->front();
    // The literal's own type (`dense<..> : tensor<4xindex>` of a !tosa.shape) when given.
    const Type ty = val->size() >= 3 && (*val)[1].text == ":" ? parse_type((*val)[2], source_)
                                                              : op.result_types[0];
    if (d.kind == Tok::num && ty.dims.empty()) {
      v.constant = Constant{{}, {number_of(*val).value_or(0)}};
    } else {
      v.constant = parse_dense(d, ty, source_, res_);
    }
    v.origin = "constant '" + v.name + "'" + (v.constant ? "" : " (data not kept)");
    return {graph_.add_value(std::move(v))};
  }

  void check_shape(const Op& op, const Node& n) const;
  void op_attrs(const Op& op, Node& n);
  std::vector<int> lower(const Op& op, const Env& env, const std::string& prefix);
};

// Elementwise ops: the result shape is the operands' broadcast shape.
void Builder::check_shape(const Op& op, const Node& n) const {
  if (!elementwise(n.op) || op.result_types.size() != 1 || !op.result_types[0].ranked) return;
  std::vector<std::int64_t> want;
  for (const int in : n.inputs) {
    const Value& v = graph_.values[static_cast<std::size_t>(in)];
    if (!v.shape_known) return;
    std::vector<std::int64_t> a = v.shape;
    if (a.size() < want.size()) a.insert(a.begin(), want.size() - a.size(), 1);
    if (want.size() < a.size()) want.insert(want.begin(), a.size() - want.size(), 1);
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (want[k] == 1 || want[k] < 0) {
        want[k] = a[k];
      } else if (a[k] != 1 && a[k] >= 0 && a[k] != want[k]) {
        fail(op.name_tok, op.name + ": operand shapes do not broadcast (" + shape_str(want) +
                              " and " + shape_str(v.shape) + ")");
      }
    }
  }
  const auto& got = op.result_types[0].dims;
  bool ok = got.size() == want.size();
  for (std::size_t k = 0; ok && k < got.size(); ++k) {
    ok = got[k] == want[k] || got[k] < 0 || want[k] < 0;
  }
  if (!ok) {
    fail(op.name_tok, op.name + ": result type " + op.result_types[0].text +
                          " does not match the operands' shape " + shape_str(want));
  }
}

void Builder::op_attrs(const Op& op, Node& n) {
  if (n.op == "broadcast") {
    const auto* d = op.attr("dims");
    if (d == nullptr) d = op.attr("broadcast_dimensions");
    const auto dims = d ? int_list(*d) : std::nullopt;
    if (!dims) fail(op.name_tok, op.name + " needs dims = [...]");
    const Value& x = graph_.values[static_cast<std::size_t>(n.inputs[0])];
    const auto rank =
        static_cast<std::int64_t>(op.result_types.empty() ? 0 : op.result_types[0].dims.size());
    if (x.shape_known && dims->size() != x.shape.size()) {
      fail(op.name_tok, op.name + ": dims " + shape_str(*dims) + " for an operand of rank " +
                            std::to_string(x.shape.size()));
    }
    for (const auto k : *dims) {
      if (k < 0 || k >= rank) {
        fail(op.name_tok, op.name + ": dimension " + std::to_string(k) +
                              " outside the result rank " + std::to_string(rank));
      }
    }
    n.attrs["dims"].ints = *dims;
  } else if (n.op == "bn") {
    const auto* e = op.attr("epsilon");
    const auto* f = op.attr("feature_index");
    const auto eps = e ? number_of(*e) : std::nullopt;
    const auto fi = f ? int_list(*f) : std::nullopt;
    if (!eps) fail(op.name_tok, op.name + " needs epsilon = <number>");
    if (!fi || fi->size() != 1 || (*fi)[0] < 0) fail(op.name_tok, op.name + " needs feature_index");
    n.attrs["epsilon"].f = *eps;
    n.attrs["axis"].i = (*fi)[0];
  } else if (n.op == "reshape" && !op.result_types.empty()) {
    n.attrs["shape"].ints = op.result_types[0].dims;
  }
}

std::vector<int> Builder::lower(const Op& op, const Env& env, const std::string& prefix) {
  if (is_constant_op(op.name)) return constant(op, prefix);
  const auto it = op_table().find(op.name);
  Node n;
  n.op = it != op_table().end() ? it->second : "other:" + op.name;
  n.name = prefix + (op.results.empty() ? op.name : op.results[0]);
  n.location = "line " + std::to_string(op.name_tok->line);
  n.inputs = resolve(op, env, it != op_table().end());
  const std::size_t want = arity(n.op);
  const std::size_t have = n.inputs.size();
  if (op.name == "tosa.mul") {
    const Value* shift =
        have == 3 ? &graph_.values[static_cast<std::size_t>(n.inputs[2])] : nullptr;
    const auto* sa = op.attr("shift");
    const double s = shift && shift->constant && !shift->constant->data.empty()
                         ? shift->constant->data[0]
                     : sa ? number_of(*sa).value_or(0)
                          : 0;
    if (shift && !shift->constant)
      fail(op.name_tok, "tosa.mul: the shift operand is not a constant");
    if (s != 0)
      fail(op.name_tok, "tosa.mul with shift " + std::to_string(static_cast<int>(s)) +
                            " is not a float multiply");
    if (have == 3) n.inputs.pop_back();
  }
  if (want != 0 && n.inputs.size() > want &&
      (op.name == "tosa.reshape" || op.name == "tosa.negate")) {
    n.inputs.resize(want);  // the shape operand; negate's zero points
  }
  if (want != 0 && n.inputs.size() != want) {
    fail(op.name_tok, op.name + " takes " + std::to_string(want) + " operand(s), got " +
                          std::to_string(n.inputs.size()));
  }
  if (n.op == "clamp" && op.name == "stablehlo.clamp") {
    if (n.inputs.size() != 3) fail(op.name_tok, op.name + " takes 3 operands (min, x, max)");
    n.inputs = {n.inputs[1], n.inputs[0], n.inputs[2]};
  } else if (n.op == "clamp") {  // tosa.clamp %x {min_val = .., max_val = ..}
    const auto* lo = op.attr("min_val") ? op.attr("min_val") : op.attr("min_fp");
    const auto* hi = op.attr("max_val") ? op.attr("max_val") : op.attr("max_fp");
    if (lo == nullptr || hi == nullptr || n.inputs.empty() || !number_of(*lo) || !number_of(*hi)) {
      fail(op.name_tok, "tosa.clamp needs min_val and max_val");
    }
    const double l_val = number_of(*lo).value_or(0);
    const double h_val = number_of(*hi).value_or(0);
    const double* l = &l_val;
    const double* h = &h_val;
    if (*l == 0 && *h >= static_cast<double>(std::numeric_limits<float>::max())) {
      n.op = "relu";  // torch-mlir's relu: clamp to [0, FLT_MAX]
      n.inputs.resize(1);
    } else {
      n.inputs = {n.inputs[0], scalar_constant(*l, n.name + ".min"),
                  scalar_constant(*h, n.name + ".max")};
    }
  }
  if (it != op_table().end()) op_attrs(op, n);
  if (op.results.size() != op.result_types.size() && !op.result_types.empty()) {
    fail(op.name_tok, op.name + ": " + std::to_string(op.results.size()) + " result(s) but " +
                          std::to_string(op.result_types.size()) + " result type(s)");
  }
  check_shape(op, n);
  const int node_idx = static_cast<int>(graph_.nodes.size());
  for (std::size_t k = 0; k < op.results.size(); ++k) {
    Value v =
        value_of(prefix + op.results[k], k < op.result_types.size() ? op.result_types[k] : Type{});
    v.producer = node_idx;
    v.origin = op.name + " '" + v.name + "' (" + n.location + ")";
    n.outputs.push_back(graph_.add_value(std::move(v)));
  }
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back().outputs;
}

}  // namespace

Graph parse_mlir(std::string_view text, const std::string& source) {
  Resources res;
  const auto toks = lex(text, source, res);
  const Module m = parse_module(toks, source);
  return Builder(m, source, res).build();
}

Graph load_mlir(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  return parse_mlir(text, path.string());
}

bool looks_like_mlir(std::string_view text) {
  const std::string_view r = detail::after_comments(text, false);
  auto starts = [&r](std::string_view w) {
    return r.substr(0, w.size()) == w &&
           (r.size() == w.size() || std::isalnum(static_cast<unsigned char>(r[w.size()])) == 0);
  };
  return starts("module") || starts("func.func") || starts("\"builtin.module\"") ||
         (r.size() > 1 && r[0] == '#' && r.find('=') != std::string_view::npos);
}

}  // namespace normcore::import
