// MLIR text front end (StableHLO and TOSA, as jax.jit(f).lower(x).as_text() and torch-mlir
// print them) -> Graph.
//
// Reads `module [@name] [attributes {...}] { ... }` (or bare functions), `func.func [public |
// private] @name(%arg: type {attrs}, ...) -> (types) { ops; return ... }`, ops in the generic
// form (`%0 = "stablehlo.add"(%a, %b) <{props}> {attrs} : (T, T) -> T`) and the pretty form
// (`%0 = stablehlo.add %a, %b : T`, `%0 = stablehlo.broadcast_in_dim %x, dims = [3] : (T) -> R`),
// `%0:2 = ...` multi-results (`%0#1`), `call @f(%x)` / `func.call` (inlined, recursion refused),
// attribute aliases `#a = ...`; `loc(...)`, `// comments` and `{-# resources #-}` are ignored.
// The entry is @main (or the only public function); its arguments are graph inputs with origin
// "parameter(N) 'argN'" so bundles attach by number, name or role (bundle.hpp).
//
// Lowered (-> graph.hpp ops): stablehlo add subtract multiply divide sqrt rsqrt power negate
// maximum minimum clamp(min, x, max) broadcast_in_dim(dims) reshape convert constant
// batch_norm_inference(epsilon, feature_index) convolution dot/dot_general; tosa add sub mul
// (shift operand or attribute: must be 0) rsqrt reciprocal pow negate maximum minimum
// clamp(min_val/max_val) reshape cast identity const const_shape conv2d depthwise_conv2d matmul
// fully_connected. Constants: `dense<...>` decimal, nested lists, splat, hex "0x..." (the element
// type's little-endian bytes; one element = splat), dense_resource (shape only).
// Any other op of these dialects, and every op of other dialects, is kept as "other:<name>"; a
// name that is not an op of stablehlo / tosa / func (e.g. `stablehlo.rsqrtt`) is an error.
// Errors (normcore::Error, "file:line:col: ...") also for: malformed syntax or types, a use of an
// undefined value, operand/result counts, a result type that does not match the operands' shape
// (elementwise ops), a nonzero tosa.mul shift on floats, a missing entry function.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "normcore/import/graph.hpp"

namespace normcore::import {

Graph parse_mlir(std::string_view text, const std::string& source);
Graph load_mlir(const std::filesystem::path& path);

// True when the text looks like MLIR: after comments, it starts with `module`, `func.func`,
// `#alias =` or `"builtin.module"`.
bool looks_like_mlir(std::string_view text);

}  // namespace normcore::import
