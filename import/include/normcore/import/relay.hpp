// TVM Relay text front end (`#[version = "0.0.5"]` modules as tvm.IRModule.astext() and
// tvm.relay's pretty printer write them) -> Graph.
//
// No PyPI apache-tvm that still has Relay installs here (0.25-0.27 are Relax-only, see
// docs/architecture.md), so this follows the documented grammar: an optional version header,
// `def @name(%arg: Type, ...) -> Type { body }` (several defs; the entry is @main or the only
// one), a body of `%N = expr;` / `let %x[: T] = expr;` bindings and a result expression;
// expressions are calls `op(args, key=value, ...)`, `%v`, tuple get-item `%v.0`, tuples
// `(%a, %b)`, scalar constants `1e-05f` `1f` `2i64` `0.5f16` `True`; types `Tensor[(1, 3, 4, 4),
// float32]`, `float32`, tuple types; `/* ty=... */` annotations (TVM prints them after type
// inference) give result shapes, otherwise shapes are inferred (elementwise broadcasting,
// expand_dims, reshape, nn.batch_norm, tuples) or left unknown. `//` and `/* */` comments are
// ignored; `meta[relay.Constant][N]` is refused (bind constants as parameters instead).
//
// Function arguments are graph inputs with origin "parameter(N) '<name>'", filled from a bundle
// (bundle.hpp: by name, number or role; names like %bn1.weight match the state_dict key).
//
// Lowered (-> graph.hpp ops): nn.batch_norm(x, gamma, beta, mean, var; axis, epsilon, center,
// scale) -> bn with three outputs (%b.0 the result); the SimplifyInference form add subtract
// multiply divide sqrt rsqrt negative expand_dims; nn.relu, clip, maximum, minimum, reshape,
// squeeze, nn.batch_flatten, cast, copy, nn.bias_add (-> a reshape of the bias + add),
// nn.conv1d/2d/3d, nn.dense, nn.matmul, nn.batch_matmul (-> conv / matmul); other Relay ops ->
// "other:<name>". A name that is not a Relay op (e.g. `nn.batch_nrom`) is an error with the
// closest name; errors are normcore::Error "file:line:col: ...".
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "normcore/import/graph.hpp"

namespace normcore::import {

Graph parse_relay(std::string_view text, const std::string& source);
Graph load_relay(const std::filesystem::path& path);

// True when the text starts (after comments) with `#[version = "0.0.` or `def @`.
bool looks_like_relay(std::string_view text);

}  // namespace normcore::import
