// A small dataflow-graph representation that every model front end (ONNX, XLA HLO, MLIR) lowers
// into, so one batch-norm recogniser serves them all. Only what BN recognition needs: values
// with static shapes (and constant data where known), ops with normalised names and attributes,
// and a location string per node for error messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"  // normcore::Error

namespace normcore::import {

// "[1,16,?,8]": a shape in messages and reports (a negative dimension is unknown).
inline std::string shape_str(std::span<const std::int64_t> dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ",";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

// Constant tensor data (any numeric dtype, stored as double; shape as in the model).
struct Constant {
  std::vector<std::int64_t> shape;  // empty = scalar
  std::vector<double> data;         // product(shape) elements, C order
};

struct Value {
  std::string name;
  std::vector<std::int64_t> shape;  // -1 for an unknown dimension
  bool shape_known = false;
  std::string dtype;                 // "f32", "i8", ... as the model says ("" unknown)
  std::optional<Constant> constant;  // initializer / constant / parameter with bundle data
  int producer = -1;                 // index into Graph::nodes, -1 for graph inputs/constants
  std::string origin;                // "initializer 'bn.weight'", "parameter(2) 'scale'", ...
};

// Attribute values: integers, floats, integer lists, strings.
struct Attr {
  std::optional<std::int64_t> i;
  std::optional<double> f;
  std::vector<std::int64_t> ints;
  std::string s;
};

// Normalised op names (front ends map theirs onto these; anything else is "other:<original>"):
//   add sub mul div           elementwise binary with NumPy/ONNX broadcasting ("broadcast" attr
//                             absent) — HLO's explicit broadcasts appear as separate nodes
//   sqrt rsqrt reciprocal pow neg   elementwise unary (pow: second input is the exponent)
//   max min                   elementwise binary
//   clamp                     inputs (x, min, max) in that order (HLO clamp(min, x, max) and ONNX
//                             Clip(x, min, max) both normalised to this order); missing bound: -1
//   relu                      max(x, 0)
//   broadcast                 HLO broadcast: attr "dims" = output dimension of each operand dim
//   reshape, identity, convert    shape-only / no-op / dtype change
//   bn                        explicit BN inference: inputs (x, scale, bias, mean, var),
//                             attrs "epsilon" (f), "axis" (i, the channel / feature axis)
//   conv matmul               producers left alone by the recogniser
//   call                      (front ends inline calls; none remain in a finished Graph)
struct Node {
  std::string op;
  std::string name;          // node / instruction name
  std::vector<int> inputs;   // value indices (-1: optional input absent)
  std::vector<int> outputs;  // value indices
  std::map<std::string, Attr> attrs;
  std::string location;  // for messages: "node 'bn1' (BatchNormalization)", "line 12"
};

struct Graph {
  std::string source;  // file name (prefixes messages)
  std::string format;  // "onnx", "hlo", "mlir", "torch.export", "relay"
  std::vector<Value> values;
  std::vector<Node> nodes;           // topological order
  std::vector<int> inputs, outputs;  // graph inputs / outputs (value indices)

  int add_value(Value v) {
    values.push_back(std::move(v));
    return static_cast<int>(values.size()) - 1;
  }
  // Index of the value named `name`, or -1.
  [[nodiscard]] int find(const std::string& name) const {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  // Nodes reading value v.
  [[nodiscard]] std::vector<int> consumers(int v) const {
    std::vector<int> out;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      for (int in : nodes[n].inputs) {
        if (in == v) {
          out.push_back(static_cast<int>(n));
          break;
        }
      }
    }
    return out;
  }
};

}  // namespace normcore::import
