// ONNX front end: ModelProto -> normcore::import::Graph (see onnx.hpp).
#include "normcore/import/onnx.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "normcore/npz.hpp"  // read_file_bytes
#include "onnx_internal.hpp"

namespace normcore::import {

namespace {

using namespace onnx_detail;

bool default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

const std::map<std::string, std::string>& op_table() {
  static const std::map<std::string, std::string> t = {
      {"Add", "add"},
      {"Sub", "sub"},
      {"Mul", "mul"},
      {"Div", "div"},
      {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"},
      {"Pow", "pow"},
      {"Neg", "neg"},
      {"Max", "max"},
      {"Min", "min"},
      {"Relu", "relu"},
      {"Clip", "clamp"},
      {"Reshape", "reshape"},
      {"Unsqueeze", "reshape"},
      {"Squeeze", "reshape"},
      {"Flatten", "reshape"},
      {"Identity", "identity"},
      {"Cast", "convert"},
      {"BatchNormalization", "bn"},
      {"Conv", "conv"},
      {"Gemm", "matmul"},
      {"MatMul", "matmul"},
  };
  return t;
}

class Builder {
 public:
  Builder(const onnx::ModelProto& model, const std::string& source) : g_(model.graph()) {
    graph_.source = source;
    graph_.format = "onnx";
    for (const auto& o : model.opset_import()) {
      if (default_domain(o.domain())) opset_ = o.version();
    }
  }

  Graph build() {
    collect_declared_types();
    add_graph_inputs_and_initializers();
    for (int k = 0; k < g_.node_size(); ++k) add_node(k);
    for (const auto& out : g_.output()) {
      const auto it = by_name_.find(out.name());
      if (it == by_name_.end()) {
        fail("graph output '" + out.name() + "' is not produced by any node, initializer or input");
      }
      graph_.outputs.push_back(it->second);
    }
    check_bn_statistics_unused(graph_);
    return std::move(graph_);
  }

 private:
  const onnx::GraphProto& g_;
  Graph graph_;
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<std::string, const onnx::TypeProto*> declared_;
  std::map<int, std::string> no_data_;  // value -> why it has no constant data
  std::int64_t opset_ = 0;              // of the default domain (0: not declared)

  [[noreturn]] void fail(const std::string& msg) const { throw Error(graph_.source + ": " + msg); }

  void collect_declared_types() {
    for (const auto& vi : g_.value_info()) declared_[vi.name()] = &vi.type();
    for (const auto& vi : g_.output()) declared_[vi.name()] = &vi.type();
    for (const auto& vi : g_.input()) declared_[vi.name()] = &vi.type();
  }

  // Shape/dtype of a declared value (graph input/output/value_info), if it has a tensor shape.
  bool apply_declared(Value& v) const {
    const auto it = declared_.find(v.name);
    if (it == declared_.end() || !it->second->has_tensor_type()) return false;
    const auto& tt = it->second->tensor_type();
    if (tt.elem_type() != 0) v.dtype = dtype_name(tt.elem_type());
    if (!tt.has_shape()) return false;
    v.shape.clear();
    for (const auto& d : tt.shape().dim())
      v.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    v.shape_known = true;
    return true;
  }

  int add(Value v) {
    if (by_name_.count(v.name)) fail("value '" + v.name + "' is defined more than once");
    const int idx = graph_.add_value(std::move(v));
    if (!graph_.values[idx].name.empty()) by_name_[graph_.values[idx].name] = idx;
    return idx;
  }

  int add_constant(std::string name, const Decoded& d, int dtype, std::string origin) {
    Value v;
    v.name = std::move(name);
    v.dtype = dtype_name(dtype);
    v.origin = std::move(origin);
    if (d.constant) {
      v.shape = d.constant->shape;
      v.shape_known = true;
      v.constant = d.constant;
    }
    const int idx = add(std::move(v));
    if (!d.problem.empty()) no_data_[idx] = d.problem;
    return idx;
  }

  void add_graph_inputs_and_initializers() {
    std::unordered_map<std::string, bool> is_init;
    for (const auto& t : g_.initializer()) is_init[t.name()] = true;
    for (const auto& sp : g_.sparse_initializer()) is_init[sp.values().name()] = true;
    for (const auto& in : g_.input()) {
      if (is_init.count(in.name())) continue;
      Value v;
      v.name = in.name();
      v.origin = "graph input '" + in.name() + "'";
      apply_declared(v);
      graph_.inputs.push_back(add(std::move(v)));
    }
    for (const auto& t : g_.initializer()) {
      const std::string what = graph_.source + ": initializer '" + t.name() + "'";
      add_constant(t.name(), decode_tensor(t, what), t.data_type(),
                   "initializer '" + t.name() + "'");
    }
    for (const auto& sp : g_.sparse_initializer()) {
      Decoded d;
      d.problem = "is a sparse initializer (not supported)";
      add_constant(sp.values().name(), d, sp.values().data_type(),
                   "sparse initializer '" + sp.values().name() + "'");
    }
  }

  // ---------------------------------------------------------------------------------------------

  const Value* val(int idx) const { return idx < 0 ? nullptr : &graph_.values[idx]; }

  const Constant* const_of(int idx) const {
    const auto* v = val(idx);
    return v && v->constant ? &*v->constant : nullptr;
  }

  void require_data(int idx, const std::string& loc) const {
    const auto it = no_data_.find(idx);
    if (it != no_data_.end()) {
      fail(loc + ": input '" + graph_.values[idx].name + "' (" + graph_.values[idx].origin + ") " +
           it->second);
    }
  }

  static std::optional<Shape> known(const Value* v) {
    if (!v || !v->shape_known) return std::nullopt;
    return v->shape;
  }

  // NumPy broadcasting of the given inputs' shapes (nullopt when one is unknown).
  std::optional<Shape> broadcast(const std::vector<int>& ins, const std::string& loc) const {
    std::vector<Shape> shapes;
    for (const int i : ins) {
      if (i < 0) continue;
      const auto s = known(val(i));
      if (!s) return std::nullopt;
      shapes.push_back(*s);
    }
    if (shapes.empty()) return std::nullopt;
    std::size_t rank = 0;
    for (const auto& s : shapes) rank = std::max(rank, s.size());
    Shape out(rank, 1);
    for (std::size_t k = 0; k < rank; ++k) {
      std::int64_t d = 1;
      for (const auto& s : shapes) {
        if (k + s.size() < rank) continue;
        const std::int64_t x = s[k + s.size() - rank];
        if (x == 1) continue;
        if (x < 0) {
          if (d == 1) d = -1;
        } else if (d == 1 || d < 0) {
          d = x;
        } else if (d != x) {
          std::string all;
          for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
          fail(loc + ": input shapes " + all + " do not broadcast");
        }
      }
      out[k] = d;
    }
    return out;
  }

  std::optional<Shape> constant_ints(int idx) const {
    const auto* c = const_of(idx);
    if (!c) return std::nullopt;
    Shape out;
    for (const double d : c->data) out.push_back(static_cast<std::int64_t>(d));
    return out;
  }

  std::optional<Shape> reshape_shape(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const auto target = ins.size() > 1 ? constant_ints(ins[1]) : attr_ints(n, "shape");
    if (!target) return std::nullopt;
    const auto in = known(val(ins[0]));
    const bool allowzero = attr_int(n, "allowzero", 0) != 0;
    Shape out = *target;
    int infer = -1;
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (out[k] == 0 && !allowzero) {
        out[k] = in && k < in->size() ? (*in)[k] : -1;
      } else if (out[k] == -1) {
        infer = static_cast<int>(k);
      }
    }
    if (infer >= 0) {
      out[static_cast<std::size_t>(infer)] = 1;
      const std::int64_t total = in ? product(*in) : -1;
      const std::int64_t rest = product(out);
      out[static_cast<std::size_t>(infer)] = total >= 0 && rest > 0 ? total / rest : -1;
    }
    return out;
  }

  std::optional<Shape> axes_of(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    if (ins.size() > 1 && ins[1] >= 0) return constant_ints(ins[1]);
    return attr_ints(n, "axes");
  }

  std::optional<Shape> unsqueeze_shape(const onnx::NodeProto& n,
                                       const std::vector<int>& ins) const {
    const auto in = known(val(ins[0]));
    const auto axes = axes_of(n, ins);
    if (!in || !axes) return std::nullopt;
    const auto rank = static_cast<std::int64_t>(in->size() + axes->size());
    std::vector<bool> unit(static_cast<std::size_t>(rank), false);
    for (auto a : *axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return std::nullopt;
      unit[static_cast<std::size_t>(a)] = true;
    }
    Shape out;
    std::size_t next = 0;
    for (std::size_t k = 0; k < unit.size(); ++k) {
      if (unit[k]) {
        out.push_back(1);
      } else if (next < in->size()) {
        out.push_back((*in)[next++]);
      } else {
        return std::nullopt;  // repeated axes
      }
    }
    return out;
  }

  // Transpose: perm (default: reversed axes) applied to the input's shape.
  std::optional<Shape> transpose_shape(const onnx::NodeProto& n,
                                       const std::vector<int>& ins) const {
    const auto in = ins.empty() || ins[0] < 0 ? std::nullopt : known(val(ins[0]));
    if (!in) return std::nullopt;
    Shape perm = attr_ints(n, "perm").value_or(Shape{});
    if (perm.empty()) {
      for (auto k = static_cast<std::int64_t>(in->size()); k > 0; --k) perm.push_back(k - 1);
    }
    Shape out;
    for (const auto p : perm) {
      if (p < 0 || p >= static_cast<std::int64_t>(in->size()) || perm.size() != in->size()) {
        return std::nullopt;
      }
      out.push_back((*in)[static_cast<std::size_t>(p)]);
    }
    return out;
  }

  std::optional<Shape> squeeze_shape(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const auto in = known(val(ins[0]));
    if (!in) return std::nullopt;
    const auto axes = axes_of(n, ins);
    const auto rank = static_cast<std::int64_t>(in->size());
    std::vector<bool> drop(in->size(), false);
    if (axes && !axes->empty()) {
      for (auto a : *axes) {
        if (a < 0) a += rank;
        if (a < 0 || a >= rank) return std::nullopt;
        drop[static_cast<std::size_t>(a)] = true;
      }
    } else {
      for (std::size_t k = 0; k < in->size(); ++k) {
        if ((*in)[k] < 0) return std::nullopt;
        drop[k] = (*in)[k] == 1;
      }
    }
    Shape out;
    for (std::size_t k = 0; k < in->size(); ++k) {
      if (!drop[k]) out.push_back((*in)[k]);
    }
    return out;
  }

  std::optional<Shape> flatten_shape(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const auto in = known(val(ins[0]));
    if (!in) return std::nullopt;
    const auto rank = static_cast<std::int64_t>(in->size());
    auto axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return std::nullopt;
    const auto mid = in->begin() + axis;
    return Shape{product(Shape(in->begin(), mid)), product(Shape(mid, in->end()))};
  }

  std::optional<Shape> conv_shape(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const auto x = known(val(ins[0]));
    const auto w = ins.size() > 1 ? known(val(ins[1])) : std::nullopt;
    if (!x || !w || x->size() < 3 || w->size() != x->size()) return std::nullopt;
    const std::size_t sp = x->size() - 2;
    const auto kernel = attr_ints(n, "kernel_shape").value_or(Shape(w->begin() + 2, w->end()));
    const auto strides = attr_ints(n, "strides").value_or(Shape(sp, 1));
    const auto dil = attr_ints(n, "dilations").value_or(Shape(sp, 1));
    const auto pads = attr_ints(n, "pads").value_or(Shape(2 * sp, 0));
    const auto* ap = find_attr(n, "auto_pad");
    const std::string auto_pad = ap ? ap->s() : "NOTSET";
    if (kernel.size() != sp || strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp) {
      return std::nullopt;
    }
    Shape out{(*x)[0], (*w)[0]};
    for (std::size_t k = 0; k < sp; ++k) {
      const std::int64_t in = (*x)[k + 2];
      const std::int64_t s = strides[k];
      const std::int64_t ext = (kernel[k] - 1) * dil[k] + 1;
      if (in < 0 || s <= 0) {
        out.push_back(-1);
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out.push_back((in + s - 1) / s);
      } else if (auto_pad == "VALID") {
        out.push_back(in >= ext ? (in - ext) / s + 1 : -1);
      } else {
        const std::int64_t padded = in + pads[k] + pads[k + sp];
        out.push_back(padded >= ext ? (padded - ext) / s + 1 : -1);
      }
    }
    return out;
  }

  std::optional<Shape> matmul_shape(const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const auto a = known(val(ins[0]));
    const auto b = ins.size() > 1 ? known(val(ins[1])) : std::nullopt;
    if (!a || !b || a->size() != 2 || b->size() != 2) return std::nullopt;
    const bool ta = n.op_type() == "Gemm" && attr_int(n, "transA", 0) != 0;
    const bool tb = n.op_type() == "Gemm" && attr_int(n, "transB", 0) != 0;
    return Shape{ta ? (*a)[1] : (*a)[0], tb ? (*b)[0] : (*b)[1]};
  }

  // Scalar constant value standing in for a Clip bound given as an attribute (opset < 11).
  int bound_constant(const onnx::NodeProto& n, const std::string& which, const std::string& loc,
                     const std::string& node_name) {
    const auto* a = find_attr(n, which);
    if (!a) return -1;
    Decoded d;
    d.constant = Constant{{}, {static_cast<double>(a->f())}};
    return add_constant(node_name + ":" + which, d, onnx::TensorProto_DataType_FLOAT,
                        "attribute '" + which + "' of " + loc);
  }

  void add_constant_node(const onnx::NodeProto& n, const std::string& loc) {
    if (n.output_size() < 1 || n.output(0).empty()) fail(loc + ": has no output");
    Decoded d;
    int dtype = onnx::TensorProto_DataType_FLOAT;
    if (const auto* a = find_attr(n, "value")) {
      d = decode_tensor(a->t(), graph_.source + ": " + loc + ": attribute 'value'");
      dtype = a->t().data_type();
    } else if (const auto* f = find_attr(n, "value_float")) {
      d.constant = Constant{{}, {static_cast<double>(f->f())}};
    } else if (const auto* fs = find_attr(n, "value_floats")) {
      Constant c{{fs->floats_size()}, {}};
      for (const float v : fs->floats()) c.data.push_back(static_cast<double>(v));
      d.constant = std::move(c);
    } else if (const auto* i = find_attr(n, "value_int")) {
      d.constant = Constant{{}, {static_cast<double>(i->i())}};
      dtype = onnx::TensorProto_DataType_INT64;
    } else if (const auto* is = find_attr(n, "value_ints")) {
      Constant c{{is->ints_size()}, {}};
      for (const auto v : is->ints()) c.data.push_back(static_cast<double>(v));
      d.constant = std::move(c);
      dtype = onnx::TensorProto_DataType_INT64;
    } else {
      d.problem = "is a Constant without numeric data (sparse or string value; not supported)";
      dtype = 0;
    }
    add_constant(n.output(0), d, dtype, "output of " + loc);
  }

  // The value indices of a node's inputs (-1: an optional input left empty).
  std::vector<int> input_indices(const onnx::NodeProto& n, const std::string& loc) const {
    std::vector<int> ins;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        ins.push_back(-1);
        continue;
      }
      const auto it = by_name_.find(name);
      if (it == by_name_.end()) {
        fail(loc + ": input '" + name +
             "' is not produced by any earlier node, initializer or graph input");
      }
      ins.push_back(it->second);
    }
    return ins;
  }

  void need_inputs(const std::vector<int>& ins, std::size_t count, const char* what,
                   const std::string& loc) const {
    if (ins.size() < count || ins[0] < 0) {
      fail(loc + ": needs " + what + ", got " + std::to_string(ins.size()) + " input(s)");
    }
  }

  // Clip: bounds as inputs (opset >= 11) or attributes (older), always inputs 1 and 2.
  void clip_inputs(Node& node, const onnx::NodeProto& n, const std::vector<int>& ins, int k) {
    const std::string nm = node.name.empty() ? "Clip#" + std::to_string(k) : node.name;
    int lo = ins.size() > 1 ? ins[1] : -1;
    int hi = ins.size() > 2 ? ins[2] : -1;
    if (ins.size() <= 1) {  // opset < 11: bounds are attributes
      lo = bound_constant(n, "min", node.location, nm);
      hi = bound_constant(n, "max", node.location, nm);
    }
    node.inputs = {ins[0], lo, hi};
  }

  std::optional<Shape> reshape_like_shape(const onnx::NodeProto& n,
                                          const std::vector<int>& ins) const {
    if (n.op_type() == "Reshape") return reshape_shape(n, ins);
    if (n.op_type() == "Unsqueeze") return unsqueeze_shape(n, ins);
    if (n.op_type() == "Squeeze") return squeeze_shape(n, ins);
    return flatten_shape(n, ins);
  }

  // BatchNormalization: inference mode, spatial statistics, all five inputs.
  void bn_inputs(Node& node, const onnx::NodeProto& n, const std::vector<int>& ins) const {
    const std::string& loc = node.location;
    need_inputs(ins, 5, "5 inputs (X, scale, B, input_mean, input_var)", loc);
    for (std::size_t i = 1; i < 5; ++i) {
      if (ins[i] < 0) fail(loc + ": input " + std::to_string(i) + " is missing");
    }
    if (attr_int(n, "training_mode", 0) != 0) {
      fail(loc +
           ": training_mode=1 (training-mode batch normalisation) is not supported; "
           "export the model in inference (eval) mode");
    }
    // Up to opset 6 is_test exists and defaults to 0: training, unless it says is_test=1.
    if (find_attr(n, "is_test") != nullptr ? attr_int(n, "is_test", 0) == 0
                                           : opset_ > 0 && opset_ <= 6) {
      fail(loc + ": is_test=0 (training-mode batch normalisation, opset <= 6" +
           (find_attr(n, "is_test") ? "" : ", where 0 is the default") +
           ") is not supported; export the model in inference (eval) mode");
    }
    if (attr_int(n, "spatial", 1) == 0) {
      fail(loc + ": spatial=0 (per-activation statistics) is not supported");
    }
    node.inputs = {ins[0], ins[1], ins[2], ins[3], ins[4]};
    const auto* eps = find_attr(n, "epsilon");
    node.attrs["epsilon"].f = static_cast<double>(eps ? eps->f() : 1e-5f);
    node.attrs["axis"].i = 1;
  }

  // The node's inputs and attributes by op, and the propagated shape of output 0 (dtype: its
  // dtype, changed by a Cast).
  std::optional<Shape> translate(Node& node, const onnx::NodeProto& n, const std::vector<int>& ins,
                                 int k, std::string& dtype) {
    const std::string& op = node.op;
    const std::string& loc = node.location;
    if (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "pow" || op == "max" ||
        op == "min") {
      const bool variadic = op == "max" || op == "min";
      need_inputs(ins, variadic ? 1 : 2, variadic ? "at least 1 input" : "2 inputs", loc);
      node.inputs = ins;
      return broadcast(ins, loc);
    }
    if (op == "sqrt" || op == "reciprocal" || op == "neg" || op == "relu" || op == "identity" ||
        op == "convert" || op == "clamp" || op == "reshape") {
      need_inputs(ins, 1, "1 input", loc);
      node.inputs = {ins[0]};
      if (op == "convert") dtype = dtype_name(static_cast<int>(attr_int(n, "to", 0)));
      if (op == "clamp") clip_inputs(node, n, ins, k);
      if (op == "reshape") return reshape_like_shape(n, ins);
      return known(val(ins[0]));
    }
    if (op == "bn") {
      bn_inputs(node, n, ins);
      return known(val(ins[0]));
    }
    node.inputs = ins;
    for (const auto& a : n.attribute()) node.attrs[a.name()] = convert_attr(a);
    if (op == "conv") return conv_shape(n, ins);
    if (op == "matmul") return matmul_shape(n, ins);
    if (op == "other:Transpose") return transpose_shape(n, ins);
    return std::nullopt;
  }

  // The node's output values: the propagated shape / dtype of output 0, the model's declared
  // shape information where it has any.
  void add_outputs(Node& node, const onnx::NodeProto& n, const std::optional<Shape>& shape,
                   const std::string& dtype) {
    const int node_idx = static_cast<int>(graph_.nodes.size());
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) continue;
      Value v;
      v.name = n.output(o);
      v.producer = node_idx;
      v.origin = "output " + std::to_string(o) + " of " + node.location;
      if (o == 0) {
        v.dtype = dtype;
        if (shape) {
          v.shape = *shape;
          v.shape_known = true;
        }
      }
      Value declared = v;
      if (apply_declared(declared)) {  // the model's own shape information wins
        v.shape = declared.shape;
        v.shape_known = true;
      }
      if (!declared.dtype.empty()) v.dtype = declared.dtype;
      node.outputs.push_back(add(std::move(v)));
    }
  }

  void add_node(int k) {
    const auto& n = g_.node(k);
    const std::string loc = n.name().empty()
                                ? "node #" + std::to_string(k) + " (" + n.op_type() + ")"
                                : "node '" + n.name() + "' (" + n.op_type() + ")";
    const std::vector<int> ins = input_indices(n, loc);
    const bool std_op = default_domain(n.domain());
    if (std_op && n.op_type() == "Constant") {
      add_constant_node(n, loc);
      return;
    }

    Node node;
    node.name = !n.name().empty() ? n.name() : (n.output_size() > 0 ? n.output(0) : std::string());
    node.location = loc;
    const auto it = std_op ? op_table().find(n.op_type()) : op_table().end();
    node.op = it != op_table().end() ? it->second : "other:" + n.op_type();
    const std::string& op = node.op;
    if (op != "conv" && op != "matmul" && op.rfind("other:", 0) != 0) {
      for (const int i : ins) {
        if (i >= 0) require_data(i, loc);
      }
    }
    std::string dtype;  // propagated dtype of output 0
    if (!ins.empty() && ins[0] >= 0) dtype = graph_.values[ins[0]].dtype;
    const std::optional<Shape> shape = translate(node, n, ins, k, dtype);
    if (op == "reshape" && shape) node.attrs["shape"].ints = *shape;
    add_outputs(node, n, shape, dtype);
    graph_.nodes.push_back(std::move(node));
  }
};

}  // namespace

Graph parse_onnx(std::span<const std::uint8_t> bytes, const std::string& source) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(source + ": not a valid ONNX model (truncated or corrupt protobuf)");
  }
  if (!model.has_graph()) {
    throw Error(source + ": not a valid ONNX model (no graph" +
                std::string(bytes.empty() ? "; the input is empty)" : ")"));
  }
  return Builder(model, source).build();
}

Graph load_onnx(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  return parse_onnx(bytes, path.string());
}

}  // namespace normcore::import
