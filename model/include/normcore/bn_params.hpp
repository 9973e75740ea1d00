// Float batch-norm parameters as a framework exports them, plus the quantisation of the layer's
// input and output. Loaded from bn.json (optionally with the arrays in a NumPy .npz) and checked
// by validate() before the fold turns them into the contract's integers (see fold.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/contract.hpp"

namespace normcore {

// Every user-facing error of the model library (bad files, bad parameters, unfoldable layers).
// Messages name the file, the field and, where it applies, the channel that is wrong.
struct Error : std::runtime_error {
  using runtime_error::runtime_error;
};

// Affine quantisation of a tensor: real = scale * (q - zero_point).
struct Quant {
  double scale = 1;
  std::int64_t zero_point = 0;
};

struct BnParams {
  std::vector<double> gamma, beta, mean, var;  // one entry per channel
  double eps = 1e-5;
  bool integer_io = false;  // "quant": "integer": in and out are plain integers (scale 1, zp 0)
  Quant in, out;
  std::string activation = "none";   // none | relu | relu6 | clamp
  double act_min = 0, act_max = 0;   // real-valued bounds, only for activation == "clamp"
  std::optional<Rounding> rounding;  // the layer's preferred rounding, if bn.json names one
  std::string source;                // where the parameters came from (prefixes error messages)

  [[nodiscard]] std::size_t channels() const { return mean.size(); }
};

// Whether load_bn_json insists on the mean/var arrays (they may come from an .npz instead).
enum class Arrays { required, optional };

// Parses bn.json text. `source` names the document in error messages. With Arrays::required the
// result is complete (absent gamma = 1, absent beta = 0) and validated; with Arrays::optional the
// arrays may be missing, nothing is defaulted and validation is left to load_bn_npz.
//
//   {"eps": 1e-5, "gamma": [..], "beta": [..], "mean": [..], "var": [..],
//    "input": {"scale": 0.05, "zero_point": 0}, "output": {"scale": 0.1, "zero_point": -3},
//    (or "quant": "integer" instead of input/output)
//    "activation": "none" | "relu" | "relu6" | {"min": -1.0, "max": 4.0},
//    "rounding": "floor" | "half_up" | "half_even" | "half_away"}
//
// NaN / Infinity / -Infinity literals (as Python's json module writes them) are accepted so that
// validate() can name the element; keys starting with '_' and "name"/"comment" are ignored;
// any other unknown key is an error (a misspelt "gamma" must not silently become gamma = 1).
BnParams parse_bn_json(std::string_view text, const std::string& source,
                       Arrays arrays = Arrays::required);
BnParams load_bn_json(const std::filesystem::path& path, Arrays arrays = Arrays::required);

// Fills the arrays from a NumPy .npz. Keys per role (an optional "prefix/" or "prefix." before
// the name is allowed, exactly one key per role): gamma|weight|scale, beta|bias,
// mean|running_mean|moving_mean, var|running_var|moving_variance. Arrays found override those
// already in `p`; gamma/beta still missing become 1/0. Unrelated keys are ignored. Validates.
void load_bn_npz(const std::filesystem::path& path, BnParams& p);

// bn.json (arrays optional) + .npz, validated.
BnParams load_bn(const std::filesystem::path& json, const std::filesystem::path& npz);

// Throws Error naming the first problem: zero channels, mismatched channel counts, NaN/Inf in
// any array (array and index) or scalar, var[c] + eps <= 0, quant scale <= 0 / NaN / Inf,
// unknown activation, bad clamp bounds.
void validate(const BnParams& p);

}  // namespace normcore
