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
#include <sstream>
#include <unordered_map>
#include <utility>

#include "hlo_internal.hpp"
#include "normcore/npz.hpp"  // read_file_bytes
#include "normcore/util/names.hpp"

namespace normcore::import {

namespace {

using namespace hlo_detail;

constexpr std::size_t kMaxCallDepth = 64;

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

// Every opcode of XLA's HLO (hlo_opcode.h); anything else is a misspelling.
const std::set<std::string>& known_opcodes() {
  static const std::set<std::string> k = [] {
    std::set<std::string> out;
    std::istringstream is(
        "abs add add-dependency after-all all-gather all-gather-done all-gather-start "
        "all-reduce all-reduce-done all-reduce-start all-to-all and async-done async-start "
        "async-update atan2 batch-norm-grad batch-norm-inference batch-norm-training bitcast "
        "bitcast-convert broadcast call cbrt ceil cholesky clamp collective-broadcast "
        "collective-permute collective-permute-done collective-permute-start compare complex "
        "concatenate conditional constant convert convolution copy copy-done copy-start "
        "cosine count-leading-zeros custom-call divide domain dot dynamic-reshape "
        "dynamic-slice dynamic-update-slice erf exponential exponential-minus-one fft floor "
        "fusion gather get-dimension-size get-tuple-element imag infeed iota is-finite log "
        "log-plus-one logistic map maximum minimum multiply negate not optimization-barrier "
        "or outfeed pad parameter partition-id popcnt power real recv recv-done reduce "
        "reduce-precision reduce-scatter reduce-window remainder replica-id reshape reverse "
        "rng rng-bit-generator rng-get-and-update-state round-nearest-afz round-nearest-even "
        "rsqrt scatter select select-and-scatter send send-done set-dimension-size "
        "shift-left shift-right-arithmetic shift-right-logical sign sine slice sort sqrt "
        "stochastic-convert subtract tan tanh topk transpose triangular-solve tuple while "
        "xor ");
    for (std::string w; is >> w;) out.insert(w);
    return out;
  }();
  return k;
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

  // HLO elementwise ops have no implicit broadcast: the result has the operands' shape (a
  // scalar operand is accepted); a broadcast's result keeps the operand's sizes (or expands a
  // size-1 dimension) at `dims`.
  void check_result_shape(const Inst& in, const Node& n) const {
    if (in.type.tuple) return;
    const auto& out = in.type.dims;
    const bool elementwise = arity(n.op) == 2 || n.op == "sqrt" || n.op == "rsqrt" ||
                             n.op == "neg" || n.op == "convert" || n.op == "identity";
    auto same = [&out](const Shape& s) {
      if (s.size() != out.size()) return false;
      for (std::size_t d = 0; d < s.size(); ++d) {
        if (s[d] != out[d] && s[d] >= 0 && out[d] >= 0) return false;  // '?' matches any size
      }
      return true;
    };
    for (std::size_t k = 0; elementwise && k < n.inputs.size(); ++k) {
      const Value& x = graph_.values[static_cast<std::size_t>(n.inputs[k])];
      if (!x.shape_known || x.shape.empty() || same(x.shape)) continue;
      fail(in.line, in.opcode + ": result shape " + shape_str(out) + " but operand " +
                        std::to_string(k) + " '" + x.name + "' has shape " + shape_str(x.shape));
    }
    if (n.op == "broadcast") {
      const Value& x = graph_.values[static_cast<std::size_t>(n.inputs[0])];
      const auto& dims = n.attrs.at("dims").ints;
      for (std::size_t k = 0; x.shape_known && k < dims.size(); ++k) {
        const auto o = out[static_cast<std::size_t>(dims[k])];
        if (x.shape[k] != o && x.shape[k] != 1 && x.shape[k] >= 0 && o >= 0) {
          fail(in.line, "broadcast: operand dimension " + std::to_string(k) + " (size " +
                            std::to_string(x.shape[k]) + ") maps to result dimension " +
                            std::to_string(dims[k]) + " of size " + std::to_string(o));
        }
      }
    }
  }

  Ref node(const Inst& in, const std::vector<Ref>& ops, const std::string& full) {
    Node n;
    if (known_opcodes().count(in.opcode) == 0) {
      const std::string best = util::closest_name(in.opcode, known_opcodes(), 4);
      fail(in.line, "unknown HLO opcode '" + in.opcode + "'" +
                        (best.empty() ? "" : " (did you mean '" + best + "'?)"));
    }
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
    check_result_shape(in, n);
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
