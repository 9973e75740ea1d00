// ONNX front end: a ModelProto (Debian's libonnx protobuf classes) -> Graph.
//
// Initializers and Constant nodes become Values with `constant` set; graph inputs that are not
// initializers are inputs (a parameter bundle may fill them later, see bundle.hpp). Shapes come
// from graph inputs/outputs, value_info and initializers, then are propagated through the ops the
// recogniser cares about. Op mapping (ONNX -> graph.hpp): Add Sub Mul Div Sqrt Reciprocal Pow Neg
// Max Min Relu Clip(->clamp) Reshape Unsqueeze/Squeeze/Flatten(->reshape) Identity Cast(->convert)
// BatchNormalization(opsets 6-15; training_mode 0 / is_test absent or 1 -> bn, axis 1) Conv
// Gemm/MatMul(->matmul); anything else -> "other:<OpType>" (Transpose's output shape is
// propagated through perm).
// Errors (normcore::Error) name the file and the node: truncated/undecodable protobuf, a node
// input that no node produces, BatchNormalization with training_mode=1 or is_test=0, unsupported
// dtype of a constant the recogniser needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "normcore/import/graph.hpp"

namespace normcore::import {

Graph parse_onnx(std::span<const std::uint8_t> bytes, const std::string& source);
Graph load_onnx(const std::filesystem::path& path);

}  // namespace normcore::import
