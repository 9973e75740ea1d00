// torch.export front end: the `.pt2` archive `torch.export.save(ep, path)` writes -> Graph.
//
// What torch 2.15 writes (inspected, see docs/architecture.md "Model import"): a ZIP (entries
// stored) under one top directory `<archive>/`:
//   models/model.json                     the serialized ExportedProgram (JSON, schema 8.x):
//                                         graph_module.graph {inputs, outputs, nodes,
//                                         tensor_values (dtype, sizes, strides per tensor)},
//                                         graph_module.signature.input_specs (parameter /
//                                         buffer / tensor_constant / user_input ...)
//   data/weights/model_weights_config.json  fqn -> {path_name, use_pickle, tensor_meta}
//   data/weights/<path_name>              the raw little-endian storage of each weight
//   data/constants/...                    the same for lifted tensor constants
//   data/sample_inputs/model.pt           pickled sample inputs (never read)
// Only the JSON and the raw storage entries are read: no Python pickle is ever decoded. A
// weight the archive marks use_pickle (or that is absent) stays without data; a bundle
// (--params, keys = the fqn, e.g. `bn.running_mean`) can supply it.
//
// Lowered (-> graph.hpp ops; targets without "torch.ops." and the overload):
//   aten.batch_norm, aten._native_batch_norm_legit_no_training, aten._native_batch_norm_legit
//   and aten.native_batch_norm with training=False -> bn (axis 1, eps); training=True, the
//   .no_stats and _functional variants: Error (training-mode batch norm is not inference)
//   add sub mul div (.Tensor / .Scalar; scalar operands become constants; alpha must be 1)
//   sqrt rsqrt reciprocal neg pow.Tensor_Scalar relu clamp hardtanh maximum minimum
//   unsqueeze view reshape _unsafe_view squeeze flatten -> reshape; expand -> broadcast
//   _to_copy to -> convert; clone alias detach contiguous dropout lift_fresh_copy -> identity
//   conv1d conv2d conv3d convolution -> conv; linear addmm mm matmul bmm -> matmul
//   operator.getitem -> identity of the tuple element; anything else -> "other:<target>".
// Strict: member sizes are checked before allocating, shapes come from tensor_values (every
// tensor must have one), a weight's storage must hold every element its sizes / strides /
// offset address; malformed JSON, an unknown value name or dtype is an Error naming the node or
// the weight (exit 2 in the CLI).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "normcore/import/graph.hpp"

namespace normcore::import {

Graph parse_torch_export(std::span<const std::uint8_t> bytes, const std::string& source);
Graph load_torch_export(const std::filesystem::path& path);

// True when the bytes are a ZIP archive with a `<dir>/models/*.json` member (a .pt2).
bool looks_like_pt2(std::span<const std::uint8_t> bytes);

}  // namespace normcore::import
