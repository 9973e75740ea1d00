// Relay text front end -> Graph (see relay.hpp): the parsed module (relay_parse.cpp) lowered
// onto the graph ops, shapes from the type annotations or inferred.
#include "normcore/import/relay.hpp"

#include <algorithm>
#include <cctype>

#include "normcore/npz.hpp"  // read_file_bytes
#include "relay_internal.hpp"
#include "text_start.hpp"

namespace normcore::import {

namespace {

using namespace relay_detail;

const std::map<std::string, std::string>& op_table() {
  static const std::map<std::string, std::string> k = {{"add", "add"},
                                                       {"subtract", "sub"},
                                                       {"multiply", "mul"},
                                                       {"divide", "div"},
                                                       {"sqrt", "sqrt"},
                                                       {"rsqrt", "rsqrt"},
                                                       {"negative", "neg"},
                                                       {"power", "pow"},
                                                       {"maximum", "max"},
                                                       {"minimum", "min"},
                                                       {"nn.relu", "relu"},
                                                       {"clip", "clamp"},
                                                       {"expand_dims", "reshape"},
                                                       {"reshape", "reshape"},
                                                       {"squeeze", "reshape"},
                                                       {"nn.batch_flatten", "reshape"},
                                                       {"cast", "convert"},
                                                       {"copy", "identity"},
                                                       {"nn.dropout", "identity"},
                                                       {"nn.batch_norm", "bn"},
                                                       {"nn.conv1d", "conv"},
                                                       {"nn.conv2d", "conv"},
                                                       {"nn.conv3d", "conv"},
                                                       {"nn.dense", "matmul"},
                                                       {"nn.matmul", "matmul"},
                                                       {"nn.batch_matmul", "matmul"}};
  return k;
}

// Relay ops whose (one) operand is a tuple of tensors.
bool takes_tuple(const std::string& name) {
  return name == "concatenate" || name == "stack";
}

bool elementwise(const std::string& op) {
  return op == "add" || op == "sub" || op == "mul" || op == "div" || op == "pow" || op == "max" ||
         op == "min";
}

std::vector<std::int64_t> broadcast(std::vector<std::int64_t> a, std::vector<std::int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  const std::size_t off = a.size() - b.size();
  for (std::size_t i = 0; i < b.size(); ++i) {
    auto& d = a[off + i];
    if (d == 1 || d < 0) d = b[i] == 1 && d < 0 ? d : b[i];
  }
  return a;
}

class Lowering {
 public:
  Lowering(const RModule& m, const std::string& source) : m_(m), source_(source) {
    g_.source = source;
    g_.format = "relay";
  }

  Graph build() {
    const RFunc* entry = nullptr;
    for (const auto& f : m_.funcs) {
      if (f.name == "main") entry = &f;
    }
    if (entry == nullptr && m_.funcs.size() == 1) entry = &m_.funcs[0];
    if (entry == nullptr) throw Error(source_ + ": no @main among several functions");
    for (std::size_t i = 0; i < entry->params.size(); ++i) {
      const auto& [name, ty] = entry->params[i];
      Value v = value_of(name, ty);
      v.origin = "parameter(" + std::to_string(i) + ") '" + name + "'";
      const int id = g_.add_value(std::move(v));
      g_.inputs.push_back(id);
      bind(name, {id}, entry->pos);
    }
    for (const auto& b : entry->body) bind(b.name, eval(*b.expr), b.pos);
    g_.outputs = eval(*entry->result);
    return std::move(g_);
  }

 private:
  const RModule& m_;
  const std::string& source_;
  Graph g_;
  std::map<std::string, std::vector<int>> vars_;

  [[noreturn]] void fail(const Pos& p, const std::string& m) const {
    throw Error(source_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.col) + ": " + m);
  }
  static std::string dtype_of(const std::string& d) {
    if (d.rfind("float", 0) == 0) return "f" + d.substr(5);
    if (d.rfind("int", 0) == 0) return "i" + d.substr(3);
    if (d.rfind("uint", 0) == 0) return "u" + d.substr(4);
    return d;
  }
  static Value value_of(const std::string& name, const RType& ty) {
    Value v;
    v.name = name;
    if (ty.given && !ty.tuple) {
      v.shape = ty.shape;
      v.shape_known = ty.shape_known;
      v.dtype = dtype_of(ty.dtype);
    }
    return v;
  }
  void bind(const std::string& name, std::vector<int> vals, const Pos& p) {
    if (vars_.contains(name)) fail(p, "%" + name + " is bound twice");
    vars_[name] = std::move(vals);
  }

  // %name, or %name.N (a tuple get-item the lexer read as part of the name).
  std::vector<int> lookup(const std::string& name, const Pos& p) const {
    if (auto it = vars_.find(name); it != vars_.end()) return it->second;
    const auto dot = name.rfind('.');
    if (dot != std::string::npos && dot + 1 < name.size() &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot) + 1, name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      const auto t = lookup(name.substr(0, dot), p);
      const auto k = std::stoul(name.substr(dot + 1));
      if (k >= t.size())
        fail(p, "%" + name + ": the tuple has " + std::to_string(t.size()) + " fields");
      return {t[k]};
    }
    fail(p, "%" + name + " is not defined");
  }

  int scalar(double v, const std::string& dtype, const Pos& p) {
    Value c;
    c.name = "const_" + std::to_string(p.line) + "_" + std::to_string(p.col);
    c.shape_known = true;
    c.dtype = dtype;
    c.constant = Constant{{}, {v}};
    c.origin = "constant at line " + std::to_string(p.line);
    return g_.add_value(std::move(c));
  }

  int one(const RExpr& e) {
    const auto v = eval(e);
    if (v.size() != 1) fail(e.pos, "a tuple where a tensor is expected");
    return v[0];
  }

  std::vector<int> eval(const RExpr& e) {
    switch (e.kind) {
      case RExpr::Kind::var:
        return lookup(e.name, e.pos);
      case RExpr::Kind::scalar:
        return {scalar(e.value, e.dtype, e.pos)};
      case RExpr::Kind::get: {
        const auto t = eval(*e.args[0]);
        if (e.index < 0 || static_cast<std::size_t>(e.index) >= t.size()) {
          fail(e.pos, "get-item " + std::to_string(e.index) + " of a tuple of " +
                          std::to_string(t.size()));
        }
        return {t[static_cast<std::size_t>(e.index)]};
      }
      case RExpr::Kind::tuple: {
        std::vector<int> out;
        for (const auto& a : e.args) out.push_back(one(*a));
        return out;
      }
      case RExpr::Kind::call:
        return call(e);
    }
    return {};
  }

  std::vector<int> call(const RExpr& e);
  std::vector<std::int64_t> infer(const RExpr& e, const Node& n) const;
  std::vector<std::int64_t> concat_shape(const RExpr& e, const Node& n) const;
  void bn_node(const RExpr& e, Node& n);
};

void Lowering::bn_node(const RExpr& e, Node& n) {
  if (n.inputs.size() != 5) fail(e.pos, "nn.batch_norm needs (data, gamma, beta, mean, var)");
  auto attr_i = [&](const char* k, std::int64_t d) {
    auto it = e.attrs.find(k);
    return it != e.attrs.end() && it->second.i ? *it->second.i : d;
  };
  if (attr_i("scale", 1) == 0) n.inputs[1] = -1;
  if (attr_i("center", 1) == 0) n.inputs[2] = -1;
  auto eps = e.attrs.find("epsilon");
  n.attrs["epsilon"].f = eps != e.attrs.end() && eps->second.f ? *eps->second.f : 1e-5;
  n.attrs["axis"].i = attr_i("axis", 1);
}

std::vector<std::int64_t> Lowering::infer(const RExpr& e, const Node& n) const {
  auto shape = [&](int k) -> const std::vector<std::int64_t>* {
    if (k >= static_cast<int>(n.inputs.size()) || n.inputs[static_cast<std::size_t>(k)] < 0)
      return nullptr;
    const Value& v = g_.values[static_cast<std::size_t>(n.inputs[static_cast<std::size_t>(k)])];
    return v.shape_known ? &v.shape : nullptr;
  };
  const auto* x = shape(0);
  if (x == nullptr) return {-2};
  if (elementwise(n.op)) {
    const auto* y = shape(1);
    return y == nullptr ? std::vector<std::int64_t>{-2} : broadcast(*x, *y);
  }
  if (e.name == "expand_dims") {
    auto out = *x;
    const auto ax = e.attrs.contains("axis") && e.attrs.at("axis").i ? *e.attrs.at("axis").i : 0;
    const auto k = e.attrs.contains("num_newaxis") && e.attrs.at("num_newaxis").i
                       ? *e.attrs.at("num_newaxis").i
                       : 1;
    const auto pos = ax < 0 ? ax + static_cast<std::int64_t>(out.size()) + 1 : ax;
    if (pos < 0 || pos > static_cast<std::int64_t>(out.size()) || k < 0 || k > 16) {
      fail(e.pos, "expand_dims axis " + std::to_string(ax) + " is out of range");
    }
    out.insert(out.begin() + pos, static_cast<std::size_t>(k), 1);
    return out;
  }
  if (e.name == "concatenate") return concat_shape(e, n);
  if (n.op == "bn" || n.op == "relu" || n.op == "clamp" || n.op == "convert" ||
      n.op == "identity" || n.op == "sqrt" || n.op == "rsqrt" || n.op == "neg" ||
      e.name == "nn.bias_add") {
    return *x;
  }
  return {-2};  // unknown
}

// concatenate: the fields' shapes summed along `axis` (default 0); unknown (-2) when a field's
// shape is; fields that disagree elsewhere, or an axis out of range, are errors.
std::vector<std::int64_t> Lowering::concat_shape(const RExpr& e, const Node& n) const {
  std::vector<std::int64_t> out;
  if (n.inputs.empty()) return {-2};
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& x = g_.values[static_cast<std::size_t>(n.inputs[k])];
    if (!x.shape_known) return {-2};
    if (k == 0) {
      out = x.shape;
      continue;
    }
    auto ax = e.attrs.contains("axis") && e.attrs.at("axis").i ? *e.attrs.at("axis").i : 0;
    if (ax < 0) ax += static_cast<std::int64_t>(out.size());
    if (ax < 0 || ax >= static_cast<std::int64_t>(out.size())) {
      fail(e.pos, "concatenate axis is out of range for " + shape_str(out));
    }
    const auto a = static_cast<std::size_t>(ax);
    auto want = out;
    if (x.shape.size() == out.size()) want[a] = x.shape[a];
    if (x.shape != want) {
      fail(e.pos, "concatenate: " + shape_str(x.shape) + " does not fit " + shape_str(out));
    }
    out[a] += x.shape[a];
  }
  return out;
}

std::vector<int> Lowering::call(const RExpr& e) {
  Node n;
  n.name = e.name + "_" + std::to_string(e.pos.line);
  n.location = "line " + std::to_string(e.pos.line) + " (" + e.name + ")";
  for (const auto& a : e.args) {
    if (takes_tuple(e.name)) {  // concatenate((%a, %b), axis=1): the fields are the inputs
      for (int v : eval(*a)) n.inputs.push_back(v);
    } else {
      n.inputs.push_back(one(*a));
    }
  }
  auto it = op_table().find(e.name);
  n.op = it == op_table().end() ? "other:" + e.name : it->second;
  if (n.op == "bn") bn_node(e, n);
  if (n.op == "clamp") {  // clip(x, a_min=, a_max=)
    auto bound = [&](const char* k) {
      auto a = e.attrs.find(k);
      return a != e.attrs.end() && a->second.f ? scalar(*a->second.f, "f32", e.pos) : -1;
    };
    n.inputs = {n.inputs.at(0), bound("a_min"), bound("a_max")};
  }
  if (e.name == "nn.bias_add") {  // bias [C] along `axis`: reshaped to [C,1,...] for NumPy
    if (n.inputs.size() != 2) fail(e.pos, "nn.bias_add needs (data, bias)");
    const Value& x = g_.values[static_cast<std::size_t>(n.inputs[0])];
    const Value& b = g_.values[static_cast<std::size_t>(n.inputs[1])];
    if (x.shape_known && b.shape_known && b.shape.size() == 1) {
      auto ax = e.attrs.contains("axis") && e.attrs.at("axis").i ? *e.attrs.at("axis").i : 1;
      if (ax < 0) ax += static_cast<std::int64_t>(x.shape.size());
      Value r;
      r.name = n.name + ".bias";
      r.shape = b.shape;
      r.shape.resize(x.shape.size() - static_cast<std::size_t>(ax), 1);
      r.shape_known = true;
      r.dtype = b.dtype;
      r.producer = static_cast<int>(g_.nodes.size());
      const int rv = g_.add_value(std::move(r));
      g_.nodes.push_back(Node{"reshape", n.name + ".reshape", {n.inputs[1]}, {rv}, {}, n.location});
      n.inputs[1] = rv;
      n.op = "add";
    }
  }
  const std::size_t outs = n.op == "bn" ? 3 : e.ty.tuple ? e.ty.fields.size() : 1;
  const auto inferred = e.ty.given ? std::vector<std::int64_t>{-2} : infer(e, n);
  const int id = static_cast<int>(g_.nodes.size());
  for (std::size_t k = 0; k < outs; ++k) {
    Value v;
    v.name = n.name + (outs > 1 ? "." + std::to_string(k) : "");
    if (e.ty.given) {
      v = value_of(v.name, e.ty.tuple ? e.ty.fields.at(k) : e.ty);
    } else if (k == 0 && (inferred.empty() || inferred[0] != -2)) {
      v.shape = inferred;
      v.shape_known = true;
    } else if (n.op == "bn" && k > 0 && n.inputs[3] >= 0) {
      const Value& m = g_.values[static_cast<std::size_t>(n.inputs[3])];
      v.shape = m.shape;
      v.shape_known = m.shape_known;
    }
    v.producer = id;
    n.outputs.push_back(g_.add_value(std::move(v)));
  }
  // Elementwise result types must be the broadcast of the operands', concatenate's their sum.
  if (e.ty.given && !e.ty.tuple && (elementwise(n.op) || e.name == "concatenate")) {
    const auto want = infer(e, n);
    const Value& out = g_.values[static_cast<std::size_t>(n.outputs[0])];
    if (!(want.size() == 1 && want[0] == -2) && out.shape_known && want != out.shape) {
      fail(e.pos, e.name + ": result type " + shape_str(out.shape) + " is not the " +
                      (elementwise(n.op) ? "broadcast" : "concatenation") + " of its operands " +
                      shape_str(want));
    }
  }
  g_.nodes.push_back(std::move(n));
  return g_.nodes.back().outputs;
}

}  // namespace

Graph parse_relay(std::string_view text, const std::string& source) {
  const RModule m = parse_relay_module(text, source);
  return Lowering(m, source).build();
}

Graph load_relay(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  return parse_relay(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                     path.string());
}

bool looks_like_relay(std::string_view text) {
  const auto rest = detail::after_comments(text, false);
  return rest.starts_with("#[version = \"0.0.") || rest.starts_with("def @");
}

}  // namespace normcore::import
