// Private to the ONNX front end (onnx*.cpp): tensor payload decoding and attribute access.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import::onnx_detail {

using Shape = std::vector<std::int64_t>;

std::int64_t product(const Shape& s);  // -1 when a dimension is unknown

// Element type names as graph.hpp spells them ("" for types the IR has no name for).
std::string dtype_name(int t);

// A decoded tensor: the constant, or why there is none (unsupported data type, external data).
struct Decoded {
  std::optional<Constant> constant;
  std::string problem;  // non-empty: why there is no constant (for "<input> <problem>")
};

// `what` names the tensor in messages ("<source>: initializer 'w'").
Decoded decode_tensor(const onnx::TensorProto& t, const std::string& what);

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t dflt);
std::optional<Shape> attr_ints(const onnx::NodeProto& n, const std::string& name);
// Generic attribute copy for ops the recogniser does not interpret ("other:*", conv, matmul).
Attr convert_attr(const onnx::AttributeProto& a);

// Training semantics in every opset: a BatchNormalization whose batch-statistics output (1-4:
// running / saved mean and var) is consumed or a graph output is an Error, as training_mode=1
// and is_test=0 are.
void check_bn_statistics_unused(const Graph& g);

}  // namespace normcore::import::onnx_detail
