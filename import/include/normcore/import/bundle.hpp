// Parameter bundles: the arrays a checkpoint holds, to fill graph inputs that have no constant
// data (XLA HLO `parameter(N)` values, ONNX graph inputs that are not initializers).
//
// Formats: NumPy .npz (member names are the keys) or .npy (one array, key = the file stem),
// JSON: {"key": [numbers...]} with nested lists for multi-dimensional arrays, a number for a
// scalar, and nested objects flattened with '/' ({"params": {"bn": {"scale": [..]}}} gives
// "params/bn/scale"; keys starting with '_' are ignored in JSON),
// safetensors (PyTorch / Hugging Face: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": ...}, then the raw little-endian
// data; dtypes F32 F16 BF16 F64 and I8 U8 I16 I32 I64 BOOL; the header is at most 100 MB and
// within the file, every tensor's byte range matches its shape and dtype, and the tensors tile
// the data exactly, as safetensors itself requires), and
// Flax msgpack checkpoints (flax.serialization.to_bytes: nested maps flattened with '/' as in
// JSON, e.g. params/BatchNorm_0/scale; arrays as Flax's msgpack extension 1 (shape, dtype name,
// C-order bytes), scalars as extension 3 or msgpack numbers; read by our own strict decoder:
// every length checked against the bytes left before anything is allocated, nesting at most 64,
// no trailing bytes; Flax's chunked arrays (> 1 GiB) are refused).
//
// Checkpoint conventions understood (keys may use '/' or '.' as separator):
//   Flax     params/<layer>/scale, params/<layer>/bias, batch_stats/<layer>/mean,
//            batch_stats/<layer>/var
//   PyTorch  <layer>.weight, <layer>.bias, <layer>.running_mean, <layer>.running_var
//   also     <layer>/{gamma,beta,moving_mean,moving_variance,variance}
//
// attach_bundle(graph, bundle) fills every graph input without constant data, in this order:
//   1. by name: the value's name or the name in its origin ("parameter(3) 'bn_mean'"), exactly
//      or with '/' and '.' taken as the same separator;
//   2. by parameter number (origin "parameter(N)"): keys "paramN", "N", "parameter.N",
//      "parameterN", "param_N", "arg_N", "argN";
//   3. by role, for inputs still empty that the recogniser (recognise.hpp) identified as the
//      gamma / beta / mean / var of a batch norm: the bundle's layers (groups of keys of one of
//      the conventions above that have at least mean and var) are matched to the recognised BNs
//      by layer name where the names agree, and the remaining ones in order (graph order of the
//      BNs, natural sort order of the layer names: BatchNorm_2 before BatchNorm_10). Role
//      mapping needs the same number of remaining layers and BNs and equal channel counts;
//      anything ambiguous is an Error listing both sides rather than a guess.
// Every array is checked against the value's shape (dimensions of size 1 are ignored, so a [C]
// array fills a [1,C,1,1] value): Error naming the key, the expected and the found shape.
// Afterwards every parameter leaf of a recognised BN must have data: Error naming the parameter
// and its role and listing the closest keys.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import {

struct BundleArchive;  // bundle.cpp

struct Bundle {
  std::string source;                      // file name (prefixes messages)
  std::map<std::string, Constant> arrays;  // key -> array (an .npz's: see `archive`)
  // An .npz bundle: `arrays` lists every key with an empty placeholder, and get() decompresses
  // and decodes a member the first time it is asked for, so members never asked for are never
  // inflated (or allocated). Empty for JSON, .npy and bundles built in memory.
  std::shared_ptr<BundleArchive> archive;

  // The array of `key` (decoded on first use for an .npz); Error naming the member if it is
  // corrupt, std::out_of_range if there is no such key.
  [[nodiscard]] const Constant& get(const std::string& key) const;
};

Bundle parse_bundle_json(std::string_view text, const std::string& source);
Bundle parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& source);
Bundle parse_flax_msgpack(std::span<const std::uint8_t> bytes, const std::string& source);
// .npz, .npy, .json, .safetensors or .msgpack (by extension; otherwise by content: zip / npy
// magic, a safetensors header length followed by '{', a msgpack map, else JSON).
Bundle load_bundle(const std::filesystem::path& path);

struct Attachment {
  int value = -1;   // graph value filled
  std::string key;  // bundle key used
  std::string how;  // "name", "parameter number", "role gamma of layer 'bn1'", ...
};

struct AttachReport {
  std::vector<Attachment> attached;
  std::vector<std::string> unused_keys;
};

// Fills graph inputs from the bundle (see above). The filled values get `constant` set and
// " <- bundle 'KEY'" appended to their origin.
AttachReport attach_bundle(Graph& g, const Bundle& b);

// Splits a checkpoint key into (layer, role) with role one of gamma, beta, mean, var, following
// the conventions above; nullopt if the key names no BN role. The layer keeps the key's own
// separators ("layer1.0.bn1", "BatchNorm_0").
std::optional<std::pair<std::string, std::string>> split_layer_key(std::string_view key);

// Up to `n` keys of the bundle closest to `name` (edit distance on the lower-cased text).
std::vector<std::string> close_keys(const Bundle& b, std::string_view name, std::size_t n = 5);

}  // namespace normcore::import
