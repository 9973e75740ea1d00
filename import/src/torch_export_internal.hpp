// Internals of the torch.export front end shared by torch_export.cpp (archive, weights) and
// torch_export_lower.cpp (the serialized graph -> Graph).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import::torch_export_detail {

struct TensorMeta {
  int dtype = 0;                    // torch._export.serde.schema.ScalarType
  std::vector<std::int64_t> sizes;  // -1: symbolic
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
};

// A weight or lifted constant of the archive: its metadata and data (absent if pickled).
struct Stored {
  TensorMeta meta;
  std::optional<Constant> data;
  std::string note;  // why there is no data
};

struct Inputs {
  std::map<std::string, Stored> weights;    // fqn -> weight
  std::map<std::string, Stored> constants;  // fqn -> lifted tensor constant
};

std::string dtype_name(std::int64_t code);
TensorMeta tensor_meta(const nlohmann::json& j, const std::string& what);
Constant decode_storage(const TensorMeta& m, std::span<const std::uint8_t> bytes,
                        const std::string& what);

// graph_module (graph + signature) -> Graph.
Graph lower_program(const nlohmann::json& gm, const Inputs& in, const std::string& source);

}  // namespace normcore::import::torch_export_detail
