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

namespace normcore::import {

namespace {

using Shape = std::vector<std::int64_t>;
using DT = onnx::TensorProto_DataType;

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return out + "]";
}

// Element type names as graph.hpp spells them ("" for types the IR has no name for).
std::string dtype_name(int t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
      return "f32";
    case onnx::TensorProto_DataType_DOUBLE:
      return "f64";
    case onnx::TensorProto_DataType_FLOAT16:
      return "f16";
    case onnx::TensorProto_DataType_BFLOAT16:
      return "bf16";
    case onnx::TensorProto_DataType_INT8:
      return "i8";
    case onnx::TensorProto_DataType_UINT8:
      return "u8";
    case onnx::TensorProto_DataType_INT16:
      return "i16";
    case onnx::TensorProto_DataType_UINT16:
      return "u16";
    case onnx::TensorProto_DataType_INT32:
      return "i32";
    case onnx::TensorProto_DataType_UINT32:
      return "u32";
    case onnx::TensorProto_DataType_INT64:
      return "i64";
    case onnx::TensorProto_DataType_UINT64:
      return "u64";
    case onnx::TensorProto_DataType_BOOL:
      return "bool";
    case onnx::TensorProto_DataType_STRING:
      return "string";
    case onnx::TensorProto_DataType_COMPLEX64:
      return "c64";
    case onnx::TensorProto_DataType_COMPLEX128:
      return "c128";
    default:
      return "";
  }
}

std::string dtype_label(int t) {
  if (onnx::TensorProto_DataType_IsValid(t)) {
    return onnx::TensorProto_DataType_Name(static_cast<DT>(t));
  }
  return "data type " + std::to_string(t);
}

// Bytes per element in raw_data, 0 for types this front end does not decode.
std::size_t raw_size(int t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32:
      return 4;
    case onnx::TensorProto_DataType_DOUBLE:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64:
      return 8;
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_UINT16:
      return 2;
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_BOOL:
      return 1;
    default:
      return 0;
  }
}

double half_to_double(std::uint32_t bits) {
  const bool neg = (bits & 0x8000U) != 0;
  const std::uint32_t exp = (bits >> 10) & 0x1fU;
  const std::uint32_t mant = bits & 0x3ffU;
  double v = 0;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400U), static_cast<int>(exp) - 25);
  }
  return neg ? -v : v;
}

double bf16_to_double(std::uint32_t bits) {
  const std::uint32_t f32 = (bits & 0xffffU) << 16;
  float f = 0;
  std::memcpy(&f, &f32, sizeof f);
  return static_cast<double>(f);
}

double float_bits(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f = 0;
  std::memcpy(&f, &b, sizeof f);
  return static_cast<double>(f);
}

double double_bits(std::uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// One element of a decoded integer-ish payload (raw bytes or int32_data / uint64_data) as double.
double element_from_bits(int t, std::uint64_t bits) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
      return float_bits(bits);
    case onnx::TensorProto_DataType_DOUBLE:
      return double_bits(bits);
    case onnx::TensorProto_DataType_FLOAT16:
      return half_to_double(static_cast<std::uint32_t>(bits));
    case onnx::TensorProto_DataType_BFLOAT16:
      return bf16_to_double(static_cast<std::uint32_t>(bits));
    case onnx::TensorProto_DataType_INT8:
      return static_cast<double>(static_cast<std::int8_t>(static_cast<std::uint8_t>(bits)));
    case onnx::TensorProto_DataType_INT16:
      return static_cast<double>(static_cast<std::int16_t>(static_cast<std::uint16_t>(bits)));
    case onnx::TensorProto_DataType_INT32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)));
    case onnx::TensorProto_DataType_INT64:
      return static_cast<double>(static_cast<std::int64_t>(bits));
    case onnx::TensorProto_DataType_BOOL:
      return (bits & 0xffU) != 0 ? 1.0 : 0.0;
    case onnx::TensorProto_DataType_UINT8:
      return static_cast<double>(bits & 0xffU);
    case onnx::TensorProto_DataType_UINT16:
      return static_cast<double>(bits & 0xffffU);
    case onnx::TensorProto_DataType_UINT32:
      return static_cast<double>(bits & 0xffffffffU);
    default:
      return static_cast<double>(bits);  // UINT64
  }
}

// A decoded tensor: the constant, or why there is none (unsupported data type, external data).
struct Decoded {
  std::optional<Constant> constant;
  std::string problem;
};

// `what` names the tensor in messages ("<source>: initializer 'w'").
Decoded decode_tensor(const onnx::TensorProto& t, const std::string& what) {
  Decoded out;
  Constant c;
  std::size_t count = 1;
  for (const auto d : t.dims()) {
    if (d < 0) throw Error(what + ": negative dimension " + std::to_string(d));
    c.shape.push_back(d);
    count *= static_cast<std::size_t>(d);
  }
  const int type = t.data_type();
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    out.problem =
        "is stored as external data (not supported; save the model with its weights inside)";
    return out;
  }
  const std::size_t esize = raw_size(type);
  if (esize == 0) {
    out.problem = "has unsupported data type " + dtype_label(type);
    return out;
  }
  c.data.reserve(count);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != count * esize) {
      throw Error(what + ": raw_data holds " + std::to_string(raw.size()) + " bytes, expected " +
                  std::to_string(count * esize) + " for shape " + shape_str(c.shape) + " of " +
                  dtype_label(type));
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t bits = 0;
      for (std::size_t b = 0; b < esize; ++b) {  // little endian, independent of the host
        bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i * esize + b]))
                << (8 * b);
      }
      c.data.push_back(element_from_bits(type, bits));
    }
  } else {
    std::size_t have = 0;
    switch (type) {
      case onnx::TensorProto_DataType_FLOAT:
        have = static_cast<std::size_t>(t.float_data_size());
        for (const float v : t.float_data()) c.data.push_back(static_cast<double>(v));
        break;
      case onnx::TensorProto_DataType_DOUBLE:
        have = static_cast<std::size_t>(t.double_data_size());
        for (const double v : t.double_data()) c.data.push_back(v);
        break;
      case onnx::TensorProto_DataType_INT64:
        have = static_cast<std::size_t>(t.int64_data_size());
        for (const auto v : t.int64_data()) c.data.push_back(static_cast<double>(v));
        break;
      case onnx::TensorProto_DataType_UINT32:
      case onnx::TensorProto_DataType_UINT64:
        have = static_cast<std::size_t>(t.uint64_data_size());
        for (const auto v : t.uint64_data()) c.data.push_back(static_cast<double>(v));
        break;
      default:  // int32_data carries INT32/16/8, UINT16/8, BOOL and the bits of FLOAT16/BFLOAT16
        have = static_cast<std::size_t>(t.int32_data_size());
        for (const auto v : t.int32_data()) {
          c.data.push_back(
              element_from_bits(type, static_cast<std::uint64_t>(static_cast<std::uint32_t>(v))));
        }
        break;
    }
    if (have != count) {
      throw Error(what + ": holds " + std::to_string(have) + " values, expected " +
                  std::to_string(count) + " for shape " + shape_str(c.shape));
    }
  }
  out.constant = std::move(c);
  return out;
}

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

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t dflt) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : dflt;
}

std::optional<Shape> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return Shape(a->ints().begin(), a->ints().end());
}

// Generic attribute copy for ops the recogniser does not interpret ("other:*", conv, matmul).
Attr convert_attr(const onnx::AttributeProto& a) {
  Attr out;
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_INT:
      out.i = a.i();
      break;
    case onnx::AttributeProto_AttributeType_FLOAT:
      out.f = static_cast<double>(a.f());
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto_AttributeType_STRING:
      out.s = a.s();
      break;
    default:
      break;
  }
  return out;
}

std::int64_t product(const Shape& s) {
  std::int64_t p = 1;
  for (const auto d : s) {
    if (d < 0) return -1;
    p *= d;
  }
  return p;
}

class Builder {
 public:
  Builder(const onnx::ModelProto& model, const std::string& source) : g_(model.graph()) {
    graph_.source = source;
    graph_.format = "onnx";
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
    return std::move(graph_);
  }

 private:
  const onnx::GraphProto& g_;
  Graph graph_;
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<std::string, const onnx::TypeProto*> declared_;
  std::map<int, std::string> no_data_;  // value -> why it has no constant data

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

  void add_node(int k) {
    const auto& n = g_.node(k);
    const std::string loc = n.name().empty()
                                ? "node #" + std::to_string(k) + " (" + n.op_type() + ")"
                                : "node '" + n.name() + "' (" + n.op_type() + ")";
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
    auto need_inputs = [&](std::size_t count, const char* what) {
      if (ins.size() < count || ins[0] < 0) {
        fail(loc + ": needs " + what + ", got " + std::to_string(ins.size()) + " input(s)");
      }
    };

    std::optional<Shape> shape;  // propagated shape of output 0
    std::string dtype;           // propagated dtype of output 0
    if (!ins.empty() && ins[0] >= 0) dtype = graph_.values[ins[0]].dtype;

    if (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "pow" || op == "max" ||
        op == "min") {
      need_inputs(op == "max" || op == "min" ? 1 : 2,
                  op == "max" || op == "min" ? "at least 1 input" : "2 inputs");
      node.inputs = ins;
      shape = broadcast(ins, loc);
    } else if (op == "sqrt" || op == "reciprocal" || op == "neg" || op == "relu" ||
               op == "identity") {
      need_inputs(1, "1 input");
      node.inputs = {ins[0]};
      shape = known(val(ins[0]));
    } else if (op == "convert") {
      need_inputs(1, "1 input");
      node.inputs = {ins[0]};
      shape = known(val(ins[0]));
      dtype = dtype_name(static_cast<int>(attr_int(n, "to", 0)));
    } else if (op == "clamp") {
      need_inputs(1, "1 input");
      const std::string nm = node.name.empty() ? "Clip#" + std::to_string(k) : node.name;
      int lo = ins.size() > 1 ? ins[1] : -1;
      int hi = ins.size() > 2 ? ins[2] : -1;
      if (ins.size() <= 1) {  // opset < 11: bounds are attributes
        lo = bound_constant(n, "min", loc, nm);
        hi = bound_constant(n, "max", loc, nm);
      }
      node.inputs = {ins[0], lo, hi};
      shape = known(val(ins[0]));
    } else if (op == "reshape") {
      need_inputs(1, "1 input");
      node.inputs = {ins[0]};
      if (n.op_type() == "Reshape") {
        shape = reshape_shape(n, ins);
      } else if (n.op_type() == "Unsqueeze") {
        shape = unsqueeze_shape(n, ins);
      } else if (n.op_type() == "Squeeze") {
        shape = squeeze_shape(n, ins);
      } else {
        shape = flatten_shape(n, ins);
      }
    } else if (op == "bn") {
      need_inputs(5, "5 inputs (X, scale, B, input_mean, input_var)");
      for (std::size_t i = 1; i < 5; ++i) {
        if (ins[i] < 0) fail(loc + ": input " + std::to_string(i) + " is missing");
      }
      if (attr_int(n, "training_mode", 0) != 0) {
        fail(loc +
             ": training_mode=1 (training-mode batch normalisation) is not supported; "
             "export the model in inference (eval) mode");
      }
      if (attr_int(n, "spatial", 1) == 0) {
        fail(loc + ": spatial=0 (per-activation statistics) is not supported");
      }
      node.inputs = {ins[0], ins[1], ins[2], ins[3], ins[4]};
      const auto* eps = find_attr(n, "epsilon");
      node.attrs["epsilon"].f = static_cast<double>(eps ? eps->f() : 1e-5f);
      node.attrs["axis"].i = 1;
      shape = known(val(ins[0]));
    } else if (op == "conv") {
      node.inputs = ins;
      for (const auto& a : n.attribute()) node.attrs[a.name()] = convert_attr(a);
      shape = conv_shape(n, ins);
    } else if (op == "matmul") {
      node.inputs = ins;
      for (const auto& a : n.attribute()) node.attrs[a.name()] = convert_attr(a);
      shape = matmul_shape(n, ins);
    } else {
      node.inputs = ins;
      for (const auto& a : n.attribute()) node.attrs[a.name()] = convert_attr(a);
    }
    if (op == "reshape" && shape) node.attrs["shape"].ints = *shape;

    const int node_idx = static_cast<int>(graph_.nodes.size());
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) continue;
      Value v;
      v.name = n.output(o);
      v.producer = node_idx;
      v.origin = "output " + std::to_string(o) + " of " + loc;
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
