// XLA HLO text front end (as printed by as_hlo_text()) -> Graph.
//
// Parses `HloModule name, ...` with its computations (`name { ... }`, `ENTRY name { ... }`),
// instructions `[ROOT] %name = f32[1,64,56,56]{3,2,1,0} opcode(operands), attr=..., ...`
// (the `%` prefixes and layouts are optional), nested computations reached through `call`
// (`to_apply=`) which are inlined into the entry graph, `parameter(N)` (graph inputs, origin
// "parameter(N) 'name'"), `constant(...)` literals (scalars and small arrays), `broadcast(x),
// dimensions={...}` (-> broadcast with attr "dims"), `reshape`, `convert`, elementwise add /
// subtract / multiply / divide / sqrt / rsqrt / power / negate / maximum / minimum / clamp,
// `batch-norm-inference(x, scale, offset, mean, variance), epsilon=..., feature_index=N` (-> bn),
// `convolution` / `dot` (-> conv / matmul), tuple/get-tuple-element; any other opcode of XLA's
// list becomes "other:<opcode>". Errors (normcore::Error) name the file and the line: unbalanced
// braces, unknown operand names, malformed shapes or literals, a missing ENTRY, an opcode XLA
// does not have (with the closest one), an elementwise result shape other than its operands'
// (scalar operands and '?' aside), a broadcast that resizes a mapped dimension not of size 1.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "normcore/import/graph.hpp"

namespace normcore::import {

Graph parse_hlo(std::string_view text, const std::string& source);
Graph load_hlo(const std::filesystem::path& path);

}  // namespace normcore::import
