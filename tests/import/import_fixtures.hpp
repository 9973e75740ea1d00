// Model fixtures for the import tests (issue 7): ONNX models built with the protobuf C++ API and
// XLA HLO text modules, each returned with the batch-norm parameter values it embeds (or that a
// parameter bundle should supply), so tests can check the numbers the recogniser extracts.
//
// Everything is header-only (inline) so several test files can include it.
//
// Numbers: all gamma/beta/mean/var values are exact binary fractions (exact in float32), so
// BnParams compare exactly. ONNX stores epsilon as a float attribute / float32 tensor, so ONNX
// fixtures report `eps` as the double of that float (static_cast<double>(1e-3f)); HLO fixtures
// report the decimal literal in the text (0.001 / 1e-05) as parsed into a double.
#pragma once

// The ONNX classes must be the ONNX_ML flavour, as in normcore_import (the onnx_proto imported
// target defines these; where it is not visible, e.g. a sibling CMake directory that did not run
// find_package(ONNX), define them here so both sides agree).
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"

namespace normcore::test {

// ---------------------------------------------------------------------------------------------
// Parameter values

// Deterministic per-channel values (exact in float32): gamma alternates sign, var > 0.
inline BnParams sample_bn(std::int64_t channels, double eps) {
  BnParams p;
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto d = static_cast<double>(c);
    p.gamma.push_back((c % 2 == 0 ? 1.0 : -1.0) * (0.5 + 0.25 * d));
    p.beta.push_back(-1.0 + 0.5 * d);
    p.mean.push_back(0.125 * d - 0.25);
    p.var.push_back(1.0 + 0.5 * d);
  }
  p.eps = eps;
  return p;
}

// ---------------------------------------------------------------------------------------------
// ONNX builders (thin helpers over the protobuf API)

namespace onnx_build {

enum class Storage { raw, typed };  // TensorProto.raw_data or the typed repeated field

// A model with one default-domain opset import and an empty graph named "g".
inline onnx::ModelProto model(std::int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(opset >= 15 ? 8 : opset >= 13 ? 7 : 4);
  m.set_producer_name("normcore-tests");
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// Fills a ValueInfoProto; a dimension of -1 becomes dim_param "N".
inline void set_value_info(onnx::ValueInfoProto* vi, const std::string& name,
                           const std::vector<std::int64_t>& dims,
                           int elem = onnx::TensorProto_DataType_FLOAT) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) {
      dim->set_dim_param("N");
    } else {
      dim->set_dim_value(d);
    }
  }
}

inline void input(onnx::GraphProto& g, const std::string& name,
                  const std::vector<std::int64_t>& dims,
                  int elem = onnx::TensorProto_DataType_FLOAT) {
  set_value_info(g.add_input(), name, dims, elem);
}

inline void output(onnx::GraphProto& g, const std::string& name,
                   const std::vector<std::int64_t>& dims,
                   int elem = onnx::TensorProto_DataType_FLOAT) {
  set_value_info(g.add_output(), name, dims, elem);
}

inline void value_info(onnx::GraphProto& g, const std::string& name,
                       const std::vector<std::int64_t>& dims,
                       int elem = onnx::TensorProto_DataType_FLOAT) {
  set_value_info(g.add_value_info(), name, dims, elem);
}

// Fills a TensorProto. Element types: FLOAT, DOUBLE, INT64, INT32, INT8, UINT8.
inline void fill_tensor(onnx::TensorProto& t, const std::string& name,
                        const std::vector<std::int64_t>& dims, const std::vector<double>& values,
                        int elem = onnx::TensorProto_DataType_FLOAT,
                        Storage storage = Storage::raw) {
  t.set_name(name);
  t.set_data_type(elem);
  for (const auto d : dims) t.add_dims(d);
  std::string raw;
  auto put_le = [&raw](std::uint64_t bits, std::size_t bytes) {
    for (std::size_t b = 0; b < bytes; ++b) raw += static_cast<char>((bits >> (8 * b)) & 0xffU);
  };
  for (const double v : values) {
    switch (elem) {
      case onnx::TensorProto_DataType_FLOAT: {
        const auto f = static_cast<float>(v);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        if (storage == Storage::raw)
          put_le(bits, 4);
        else
          t.add_float_data(f);
        break;
      }
      case onnx::TensorProto_DataType_DOUBLE: {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        if (storage == Storage::raw)
          put_le(bits, 8);
        else
          t.add_double_data(v);
        break;
      }
      case onnx::TensorProto_DataType_INT64: {
        const auto i = static_cast<std::int64_t>(v);
        if (storage == Storage::raw)
          put_le(static_cast<std::uint64_t>(i), 8);
        else
          t.add_int64_data(i);
        break;
      }
      case onnx::TensorProto_DataType_INT32:
      case onnx::TensorProto_DataType_INT8:
      case onnx::TensorProto_DataType_UINT8: {
        const auto i = static_cast<std::int32_t>(v);
        const std::size_t bytes = elem == onnx::TensorProto_DataType_INT32 ? 4 : 1;
        if (storage == Storage::raw) {
          put_le(static_cast<std::uint64_t>(static_cast<std::uint32_t>(i)), bytes);
        } else {
          t.add_int32_data(i);
        }
        break;
      }
      default:
        throw std::invalid_argument("fill_tensor: unsupported element type");
    }
  }
  if (storage == Storage::raw) t.set_raw_data(raw);
}

inline onnx::TensorProto& initializer(onnx::GraphProto& g, const std::string& name,
                                      const std::vector<std::int64_t>& dims,
                                      const std::vector<double>& values,
                                      int elem = onnx::TensorProto_DataType_FLOAT,
                                      Storage storage = Storage::raw) {
  auto* t = g.add_initializer();
  fill_tensor(*t, name, dims, values, elem, storage);
  return *t;
}

inline onnx::NodeProto& node(onnx::GraphProto& g, const std::string& op,
                             const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs,
                             const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

inline void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(v);
}

inline void attr_i(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}

inline void attr_ints(onnx::NodeProto& n, const std::string& name,
                      const std::vector<std::int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (const auto x : v) a->add_ints(x);
}

inline void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(v);
}

// A Constant node producing `output` from a tensor attribute `value`.
inline onnx::NodeProto& constant_node(onnx::GraphProto& g, const std::string& output,
                                      const std::vector<std::int64_t>& dims,
                                      const std::vector<double>& values,
                                      int elem = onnx::TensorProto_DataType_FLOAT) {
  auto& n = node(g, "Constant", {}, {output}, output + "_const");
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  fill_tensor(*a->mutable_t(), output, dims, values, elem, Storage::raw);
  return n;
}

inline std::vector<std::uint8_t> serialize(const onnx::ModelProto& m) {
  std::string s;
  if (!m.SerializeToString(&s)) throw std::runtime_error("serialize: ModelProto not serialisable");
  return {s.begin(), s.end()};
}

}  // namespace onnx_build

// ---------------------------------------------------------------------------------------------
// ONNX fixtures

struct OnnxFixture {
  std::vector<std::uint8_t> bytes;    // serialised ModelProto
  BnParams bn;                        // the values in the model (activation for a fused tail)
  std::vector<std::int64_t> x_shape;  // shape of graph input "x" (-1: dim_param)

  [[nodiscard]] std::span<const std::uint8_t> span() const { return bytes; }
};

enum class OnnxLayout {
  nchw,  // x [N=-1 (dim_param), C, 4, 4] (BatchNorm2d)
  nc,    // x [2, C] (BatchNorm1d on features)
};

// x -> BatchNormalization 'bn1' (epsilon 1e-3, momentum 0.9) -> y, C = 4. Initializers
// "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var". Encodings per opset (to exercise
// the decoders): opset 9 typed float_data; opset 14 raw_data float (and training_mode=0 written
// explicitly); opset 15 scale/bias as DOUBLE raw_data, mean/var as FLOAT typed fields.
// `training_mode` writes training_mode=1 (needs opset >= 14 to be meaningful).
inline OnnxFixture onnx_explicit_bn(OnnxLayout layout = OnnxLayout::nchw, int opset = 15,
                                    bool training_mode = false) {
  using namespace onnx_build;
  constexpr std::int64_t C = 4;
  OnnxFixture f;
  f.bn = sample_bn(C, static_cast<double>(1e-3f));
  f.x_shape = layout == OnnxLayout::nchw ? std::vector<std::int64_t>{-1, C, 4, 4}
                                         : std::vector<std::int64_t>{2, C};
  auto m = model(opset);
  auto& g = *m.mutable_graph();
  input(g, "x", f.x_shape);
  output(g, "y", f.x_shape);
  const int F = onnx::TensorProto_DataType_FLOAT;
  const int D = onnx::TensorProto_DataType_DOUBLE;
  if (opset >= 15) {
    initializer(g, "bn.weight", {C}, f.bn.gamma, D, Storage::raw);
    initializer(g, "bn.bias", {C}, f.bn.beta, D, Storage::raw);
    initializer(g, "bn.running_mean", {C}, f.bn.mean, F, Storage::typed);
    initializer(g, "bn.running_var", {C}, f.bn.var, F, Storage::typed);
  } else {
    const Storage s = opset >= 14 ? Storage::raw : Storage::typed;
    initializer(g, "bn.weight", {C}, f.bn.gamma, F, s);
    initializer(g, "bn.bias", {C}, f.bn.beta, F, s);
    initializer(g, "bn.running_mean", {C}, f.bn.mean, F, s);
    initializer(g, "bn.running_var", {C}, f.bn.var, F, s);
  }
  auto& bn = node(g, "BatchNormalization",
                  {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"y"}, "bn1");
  attr_f(bn, "epsilon", 1e-3f);
  attr_f(bn, "momentum", 0.9f);
  if (training_mode) {
    attr_i(bn, "training_mode", 1);
  } else if (opset == 14) {
    attr_i(bn, "training_mode", 0);
  } else if (opset <= 6) {
    attr_i(bn, "is_test", 1);  // its default, 0, is training mode
  }
  f.bytes = serialize(m);
  return f;
}

enum class OnnxDecomposed {
  c11,              // NCHW x, initializers shaped [C,1,1], eps a scalar initializer
  one_c11,          // NCHW x, initializers shaped [1,C,1,1], eps shaped [1]
  nhwc_vector,      // NHWC x [1,4,4,C], [C] initializers (trailing-axis broadcasting)
  reshape_vector,   // NCHW x, [C] initializers each Reshape'd by a constant [1,-1,1,1]
  unsqueeze_attr,   // opset 11: [C] initializers Unsqueeze'd with axes=[1,2] (attribute)
  unsqueeze_input,  // opset 13: [C] initializers Unsqueeze'd with axes [0,2,3] (an input)
  constant_nodes,   // like one_c11 but every constant comes from a Constant node; eps from
                    // a Constant with value_float
};

// y = (x - mean) / sqrt(var + eps) * gamma + beta as six nodes, C = 4, eps = 1e-5f:
//   Sub 'sub' (x, mean) -> Add 'add_eps' (var, eps) -> Sqrt 'sqrt' -> Div 'div' (sub, sqrt)
//   -> Mul 'mul' (div, gamma) -> Add 'add_beta' (mul, beta) -> y
// where mean/var/gamma/beta name the (possibly reshaped) per-channel tensors. Initializer names:
// "mean", "var", "gamma", "beta", "eps". No value_info: intermediate shapes must be propagated.
inline OnnxFixture onnx_decomposed_bn(OnnxDecomposed variant = OnnxDecomposed::c11) {
  using namespace onnx_build;
  constexpr std::int64_t C = 4;
  OnnxFixture f;
  f.bn = sample_bn(C, static_cast<double>(1e-5f));
  const bool nhwc = variant == OnnxDecomposed::nhwc_vector;
  f.x_shape = nhwc ? std::vector<std::int64_t>{1, 4, 4, C} : std::vector<std::int64_t>{1, C, 4, 4};
  const int opset = variant == OnnxDecomposed::unsqueeze_attr ? 11 : 13;
  auto m = model(opset);
  auto& g = *m.mutable_graph();
  input(g, "x", f.x_shape);
  output(g, "y", f.x_shape);

  std::vector<std::int64_t> dims{C};
  if (variant == OnnxDecomposed::c11) dims = {C, 1, 1};
  if (variant == OnnxDecomposed::one_c11 || variant == OnnxDecomposed::constant_nodes) {
    dims = {1, C, 1, 1};
  }
  const std::vector<std::pair<std::string, const std::vector<double>*>> params = {
      {"mean", &f.bn.mean}, {"var", &f.bn.var}, {"gamma", &f.bn.gamma}, {"beta", &f.bn.beta}};
  if (variant == OnnxDecomposed::unsqueeze_input) {
    initializer(g, "axes", {3}, {0, 2, 3}, onnx::TensorProto_DataType_INT64);
  }
  if (variant == OnnxDecomposed::reshape_vector) {
    initializer(g, "shape_1c11", {4}, {1, -1, 1, 1}, onnx::TensorProto_DataType_INT64,
                Storage::typed);
  }
  std::vector<std::string> use;  // tensor actually fed to the chain, per parameter
  for (const auto& [name, values] : params) {
    if (variant == OnnxDecomposed::constant_nodes) {
      constant_node(g, name, dims, *values);
    } else {
      initializer(g, name, dims, *values);
    }
    if (variant == OnnxDecomposed::reshape_vector) {
      node(g, "Reshape", {name, "shape_1c11"}, {name + "_r"}, "reshape_" + name);
      use.push_back(name + "_r");
    } else if (variant == OnnxDecomposed::unsqueeze_attr) {
      attr_ints(node(g, "Unsqueeze", {name}, {name + "_u"}, "unsqueeze_" + name), "axes", {1, 2});
      use.push_back(name + "_u");
    } else if (variant == OnnxDecomposed::unsqueeze_input) {
      node(g, "Unsqueeze", {name, "axes"}, {name + "_u"}, "unsqueeze_" + name);
      use.push_back(name + "_u");
    } else {
      use.push_back(name);
    }
  }
  if (variant == OnnxDecomposed::constant_nodes) {
    auto& n = node(g, "Constant", {}, {"eps"}, "eps_const");
    attr_f(n, "value_float", 1e-5f);
  } else if (variant == OnnxDecomposed::one_c11) {
    initializer(g, "eps", {1}, {1e-5});
  } else {
    initializer(g, "eps", {}, {1e-5});
  }
  node(g, "Sub", {"x", use[0]}, {"centered"}, "sub");
  node(g, "Add", {use[1], "eps"}, {"var_eps"}, "add_eps");
  node(g, "Sqrt", {"var_eps"}, {"std"}, "sqrt");
  node(g, "Div", {"centered", "std"}, {"normed"}, "div");
  node(g, "Mul", {"normed", use[2]}, {"scaled"}, "mul");
  node(g, "Add", {"scaled", use[3]}, {"y"}, "add_beta");
  f.bytes = serialize(m);
  return f;
}

// x [1,3,8,8] -> Conv 'conv1' (W [4,3,3,3], B [4], pads 1) -> BatchNormalization 'bn1'
// (eps 1e-5) -> Relu 'relu1' -> y [1,4,8,8]; opset 15, C = 4, only x and y have declared
// shapes (the Conv output shape is propagated). bn.activation = "relu".
inline OnnxFixture onnx_conv_bn_relu() {
  using namespace onnx_build;
  constexpr std::int64_t C = 4;
  OnnxFixture f;
  f.bn = sample_bn(C, static_cast<double>(1e-5f));
  f.bn.activation = "relu";
  f.x_shape = {1, 3, 8, 8};
  auto m = model(15);
  auto& g = *m.mutable_graph();
  input(g, "x", f.x_shape);
  output(g, "y", {1, C, 8, 8});
  std::vector<double> w(static_cast<std::size_t>(C * 3 * 3 * 3));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 7) * 0.125 - 0.375;
  initializer(g, "conv1.weight", {C, 3, 3, 3}, w);
  initializer(g, "conv1.bias", {C}, {0.5, -0.5, 0.25, 0});
  initializer(g, "bn1.weight", {C}, f.bn.gamma);
  initializer(g, "bn1.bias", {C}, f.bn.beta);
  initializer(g, "bn1.running_mean", {C}, f.bn.mean);
  initializer(g, "bn1.running_var", {C}, f.bn.var);
  auto& conv = node(g, "Conv", {"x", "conv1.weight", "conv1.bias"}, {"conv_out"}, "conv1");
  attr_ints(conv, "kernel_shape", {3, 3});
  attr_ints(conv, "pads", {1, 1, 1, 1});
  attr_ints(conv, "strides", {1, 1});
  auto& bn = node(g, "BatchNormalization",
                  {"conv_out", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"},
                  {"bn_out"}, "bn1");
  attr_f(bn, "epsilon", 1e-5f);
  node(g, "Relu", {"bn_out"}, {"y"}, "relu1");
  f.bytes = serialize(m);
  return f;
}

// x [1,4,2,2] -> BatchNormalization 'bn1' (eps 1e-3) -> Clip 'clip1' (lo, hi) -> y, C = 4.
// opset < 11: bounds are the attributes min/max; opset >= 11: scalar initializers "clip_min",
// "clip_max" passed as inputs 2 and 3. bn.activation = "clamp", act_min/act_max = lo/hi.
inline OnnxFixture onnx_bn_clip(int opset, float lo = 0.0f, float hi = 6.0f) {
  using namespace onnx_build;
  constexpr std::int64_t C = 4;
  OnnxFixture f;
  f.bn = sample_bn(C, static_cast<double>(1e-3f));
  f.bn.activation = "clamp";
  f.bn.act_min = static_cast<double>(lo);
  f.bn.act_max = static_cast<double>(hi);
  f.x_shape = {1, C, 2, 2};
  auto m = model(opset);
  auto& g = *m.mutable_graph();
  input(g, "x", f.x_shape);
  output(g, "y", f.x_shape);
  initializer(g, "scale", {C}, f.bn.gamma);
  initializer(g, "bias", {C}, f.bn.beta);
  initializer(g, "mean", {C}, f.bn.mean);
  initializer(g, "var", {C}, f.bn.var);
  auto& bn =
      node(g, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn_out"}, "bn1");
  attr_f(bn, "epsilon", 1e-3f);
  if (opset <= 6) attr_i(bn, "is_test", 1);  // inference (the opset-6 default, 0, trains)
  if (opset < 11) {
    auto& clip = node(g, "Clip", {"bn_out"}, {"y"}, "clip1");
    attr_f(clip, "min", lo);
    attr_f(clip, "max", hi);
  } else {
    initializer(g, "clip_min", {}, {static_cast<double>(lo)});
    initializer(g, "clip_max", {}, {static_cast<double>(hi)});
    node(g, "Clip", {"bn_out", "clip_min", "clip_max"}, {"y"}, "clip1");
  }
  f.bytes = serialize(m);
  return f;
}

// ---------------------------------------------------------------------------------------------
// HLO text fixtures

struct HloFixture {
  std::string text;
  BnParams bn;  // values: literals in the text, or what a bundle should give the parameters
  std::vector<std::string> params;  // ENTRY parameter instruction names, parameter order
  std::int64_t feature_axis = 0;    // channel dimension of x
};

enum class HloTail {
  none,
  relu,   // maximum(bn, broadcast(constant(0)))                 -> bn.activation "relu"
  clamp,  // clamp(constant(0), bn, constant(6)) (scalar bounds) -> "clamp" [0, 6]
};

namespace hlo_text {

// Exact decimal for the fixture values ("%.17g" trims to the shortest for binary fractions).
inline std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::string list(const std::vector<double>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "}";
}

// "f32[1,3,2,2]{3,2,1,0}" (row-major layout).
inline std::string shape(const std::vector<std::int64_t>& dims) {
  std::string s = "f32[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  s += "]{";
  for (std::size_t i = dims.size(); i > 0; --i) {
    s += std::to_string(i - 1) + (i > 1 ? "," : "");
  }
  return s + "}";
}

// Instructions applying `tail` (relu / clamp) to `in` (shape `dims`); the last one is ROOT.
// Names use `next` as the running instruction number. HloTail::none adds nothing (the caller
// marks its own last instruction ROOT).
inline std::string tail_lines(HloTail t, const std::string& in,
                              const std::vector<std::int64_t>& dims, int next, BnParams& bn) {
  const std::string sh = shape(dims);
  const auto id = [&next](const std::string& op) {
    return "%" + op + "." + std::to_string(next++);
  };
  std::string s;
  if (t == HloTail::none) return s;
  if (t == HloTail::relu) {
    bn.activation = "relu";
    const std::string zero = id("constant");
    const std::string bc = id("broadcast");
    s += "  " + zero + " = f32[] constant(0)\n";
    s += "  " + bc + " = " + sh + " broadcast(" + zero + "), dimensions={}\n";
    s += "  ROOT " + id("maximum") + " = " + sh + " maximum(" + in + ", " + bc + ")\n";
    return s;
  }
  bn.activation = "clamp";
  bn.act_min = 0;
  bn.act_max = 6;
  const std::string lo = id("constant");
  const std::string hi = id("constant");
  s += "  " + lo + " = f32[] constant(0)\n";
  s += "  " + hi + " = f32[] constant(6)\n";
  s += "  ROOT " + id("clamp") + " = " + sh + " clamp(" + lo + ", " + in + ", " + hi + ")\n";
  return s;
}

}  // namespace hlo_text

// Flax nn.BatchNorm(use_running_average=True) on NHWC x [2,4,4,C] as JAX lowers it: ENTRY
// parameters x, mean, var, scale, bias (parameter(0..4): Arg_0.1 .. Arg_4.5, [C] vectors; their
// values are bn), eps constant 1e-05:
//   mean: reshape [C] -> [1,1,1,C], broadcast dimensions={0,1,2,3}; subtract(x, .)
//   add(var, broadcast(constant(1e-05)), dimensions={}) -> rsqrt -> multiply(., scale)
//   -> broadcast dimensions={3} -> multiply(centered, .) -> add(., broadcast(bias), dims {3})
// Metadata with quoted strings (commas, brackets) on every instruction.
inline HloFixture hlo_flax_bn(std::int64_t channels = 3) {
  using namespace hlo_text;
  HloFixture f;
  f.bn = sample_bn(channels, 1e-05);
  f.feature_axis = 3;
  f.params = {"Arg_0.1", "Arg_1.2", "Arg_2.3", "Arg_3.4", "Arg_4.5"};
  const std::string C = std::to_string(channels);
  const std::string x = shape({2, 4, 4, channels});
  const std::string v = "f32[" + C + "]{0}";
  const std::string v4 = shape({1, 1, 1, channels});
  const auto md = [](const std::string& op, const std::string& extra = "") {
    return ", metadata={op_type=\"" + op + "\" op_name=\"jit(apply)/jit(main)/BatchNorm_0/" + op +
           extra + "\" source_file=\"/work/models/flax_bn.py\" source_line=42}";
  };
  std::string& t = f.text;
  t += "HloModule jit_apply, entry_computation_layout={(" + x + ", " + v + ", " + v + ", " + v +
       ", " + v + ")->" + x + "}\n\n";
  t += "ENTRY %main.20 (Arg_0.1: f32[2,4,4," + C + "], Arg_1.2: f32[" + C + "], Arg_2.3: f32[" + C +
       "], Arg_3.4: f32[" + C + "], Arg_4.5: f32[" + C + "]) -> f32[2,4,4," + C + "] {\n";
  t += "  %Arg_0.1 = " + x + " parameter(0), metadata={op_name=\"x\"}\n";
  t += "  %Arg_1.2 = " + v + " parameter(1), metadata={op_name=\"batch_stats[\\\"mean\\\"]\"}\n";
  t += "  %Arg_2.3 = " + v + " parameter(2), metadata={op_name=\"batch_stats[\\\"var\\\"]\"}\n";
  t += "  %Arg_3.4 = " + v + " parameter(3), metadata={op_name=\"params[\\\"scale\\\"]\"}\n";
  t += "  %Arg_4.5 = " + v + " parameter(4), metadata={op_name=\"params[\\\"bias\\\"]\"}\n";
  t += "  %reshape.6 = " + v4 + " reshape(%Arg_1.2)" +
       md("reshape", "[new_sizes=(1, 1, 1, " + C + ") dimensions=None]") + "\n";
  t += "  %broadcast.7 = " + x + " broadcast(%reshape.6), dimensions={0,1,2,3}" +
       md("sub", "{broadcast}") + "\n";
  t += "  %subtract.8 = " + x + " subtract(%Arg_0.1, %broadcast.7)" + md("sub") + "\n";
  t += "  %constant.9 = f32[] constant(1e-05)\n";
  t += "  %broadcast.10 = " + v + " broadcast(%constant.9), dimensions={}" + md("add") + "\n";
  t += "  %add.11 = " + v + " add(%Arg_2.3, %broadcast.10)" + md("add") + "\n";
  t += "  %rsqrt.12 = " + v + " rsqrt(%add.11)" + md("rsqrt") + "\n";
  t += "  %multiply.13 = " + v + " multiply(%rsqrt.12, %Arg_3.4)" + md("mul") + "\n";
  t += "  %broadcast.14 = " + x + " broadcast(%multiply.13), dimensions={3}" + md("mul") + "\n";
  t += "  %multiply.15 = " + x + " multiply(%subtract.8, %broadcast.14)" + md("mul") + "\n";
  t += "  %broadcast.16 = " + x + " broadcast(%Arg_4.5), dimensions={3}" + md("add") + "\n";
  t += "  ROOT %add.17 = " + x + " add(%multiply.15, %broadcast.16)" + md("add") + "\n";
  t += "}\n";
  return f;
}

// NCHW x [1,3,2,2] with the BN chain inside nested computations, C = 3, eps 0.001:
//   ENTRY %main.30: parameter x (Arg_0.1); the four [3] vectors are constant({...}) literals
//     (mean, var, scale, bias); %call.6 = call(x, mean, var, scale, bias), to_apply=%bn_block.4;
//     then `tail` on %call.6 (numbers from 7 up).
//   %bn_block.4: parameters x/mean/var/scale/bias, %fusion.11 = fusion(var, constant(0.001)),
//     kind=kLoop, calls=%fused_inv_std (add of broadcast eps, rsqrt), then multiply by scale,
//     subtract broadcast(mean) dims {1}, multiply by broadcast dims {1}, add broadcast(bias).
inline HloFixture hlo_nested_bn(HloTail tail = HloTail::none) {
  using namespace hlo_text;
  HloFixture f;
  f.bn = sample_bn(3, 0.001);
  f.feature_axis = 1;
  f.params = {"Arg_0.1"};
  const std::string x = shape({1, 3, 2, 2});
  const std::string v = "f32[3]{0}";
  std::string& t = f.text;
  t += "HloModule jit_block, entry_computation_layout={(" + x + ")->" + x + "}\n\n";
  t += "%fused_inv_std (param_0: f32[3], param_1: f32[]) -> f32[3] {\n";
  t += "  %param_0 = " + v + " parameter(0)\n";
  t += "  %param_1 = f32[] parameter(1)\n";
  t += "  %broadcast.1 = " + v + " broadcast(%param_1), dimensions={}\n";
  t += "  %add.2 = " + v + " add(%param_0, %broadcast.1)\n";
  t += "  ROOT %rsqrt.3 = " + v + " rsqrt(%add.2)\n";
  t += "}\n\n";
  t += "%bn_block.4 (x.5: f32[1,3,2,2], mean.6: f32[3], var.7: f32[3], scale.8: f32[3], "
       "bias.9: f32[3]) -> f32[1,3,2,2] {\n";
  t += "  %x.5 = " + x + " parameter(0)\n";
  t += "  %mean.6 = " + v + " parameter(1)\n";
  t += "  %var.7 = " + v + " parameter(2)\n";
  t += "  %scale.8 = " + v + " parameter(3)\n";
  t += "  %bias.9 = " + v + " parameter(4)\n";
  t += "  %constant.10 = f32[] constant(0.001)\n";
  t += "  %fusion.11 = " + v + " fusion(%var.7, %constant.10), kind=kLoop, calls=%fused_inv_std\n";
  t += "  %multiply.12 = " + v + " multiply(%fusion.11, %scale.8)\n";
  t += "  %broadcast.13 = " + x + " broadcast(%mean.6), dimensions={1}\n";
  t += "  %subtract.14 = " + x + " subtract(%x.5, %broadcast.13)\n";
  t += "  %broadcast.15 = " + x + " broadcast(%multiply.12), dimensions={1}\n";
  t += "  %multiply.16 = " + x + " multiply(%subtract.14, %broadcast.15)\n";
  t += "  %broadcast.17 = " + x + " broadcast(%bias.9), dimensions={1}\n";
  t += "  ROOT %add.18 = " + x + " add(%multiply.16, %broadcast.17)\n";
  t += "}\n\n";
  t += "ENTRY %main.30 (Arg_0.1: f32[1,3,2,2]) -> f32[1,3,2,2] {\n";
  t += "  %Arg_0.1 = " + x + " parameter(0)\n";
  t += "  %constant.2 = " + v + " constant(" + list(f.bn.mean) + ")\n";
  t += "  %constant.3 = " + v + " constant(" + list(f.bn.var) + ")\n";
  t += "  %constant.4 = " + v + " constant(" + list(f.bn.gamma) + ")\n";
  t += "  %constant.5 = " + v + " constant(" + list(f.bn.beta) + ")\n";
  t += std::string(tail == HloTail::none ? "  ROOT " : "  ") + "%call.6 = " + x +
       " call(%Arg_0.1, %constant.2, %constant.3, %constant.4, %constant.5), "
       "to_apply=%bn_block.4\n";
  t += hlo_text::tail_lines(tail, "%call.6", {1, 3, 2, 2}, 7, f.bn);
  t += "}\n";
  return f;
}

// A native batch-norm-inference instruction: x [1,3,2,2] (feature_index 1) or [1,2,2,3]
// (feature_index 3), C = 3, epsilon=0.001; scale/offset/mean/variance are constant({...})
// literals (%scale.2, %offset.3, %mean.4, %variance.5), the BN is %bn.6, then `tail`.
inline HloFixture hlo_native_bn(std::int64_t feature_index = 1, HloTail tail = HloTail::none) {
  using namespace hlo_text;
  HloFixture f;
  f.bn = sample_bn(3, 0.001);
  f.feature_axis = feature_index;
  f.params = {"x.1"};
  const std::vector<std::int64_t> dims = feature_index == 1 ? std::vector<std::int64_t>{1, 3, 2, 2}
                                                            : std::vector<std::int64_t>{1, 2, 2, 3};
  const std::string x = shape(dims);
  const std::string v = "f32[3]{0}";
  std::string& t = f.text;
  t += "HloModule bn_native, entry_computation_layout={(" + x + ")->" + x + "}\n\n";
  t += "ENTRY %main.9 (x.1: " + x + ") -> " + x + " {\n";
  t += "  %x.1 = " + x + " parameter(0)\n";
  t += "  %scale.2 = " + v + " constant(" + list(f.bn.gamma) + ")\n";
  t += "  %offset.3 = " + v + " constant(" + list(f.bn.beta) + ")\n";
  t += "  %mean.4 = " + v + " constant(" + list(f.bn.mean) + ")\n";
  t += "  %variance.5 = " + v + " constant(" + list(f.bn.var) + ")\n";
  t += std::string(tail == HloTail::none ? "  ROOT " : "  ") + "%bn.6 = " + x +
       " batch-norm-inference(%x.1, %scale.2, %offset.3, %mean.4, %variance.5), epsilon=0.001, "
       "feature_index=" +
       std::to_string(feature_index) + "\n";
  t += hlo_text::tail_lines(tail, "%bn.6", dims, 7, f.bn);
  t += "}\n";
  return f;
}

}  // namespace normcore::test
