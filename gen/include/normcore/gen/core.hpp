// Builds the IR of the streaming BN-inference core for a configuration, and writes it out.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "normcore/gen/config.hpp"
#include "normcore/gen/ir.hpp"
#include "normcore/util/atomic_write.hpp"

namespace normcore::gen {

// The lanes' arithmetic. `folded` is the product: y = clamp(round((x * s + b) / 2^R)).
// `decomposed` builds the PPA reference "decomposed-core" (ref_designs.hpp): the same core
// (parameter table, position tracking, flow control, output buffer, and the same round and
// clamp of a / 2^R) with the framework-style chain in front of it, four parameters per channel:
// a = sat(round((x * 2^f - mean) * inv_std / 2^k1)) * gamma + beta.
enum class LaneArith { folded, decomposed };

// The float lanes (contract v2, gen/src/core_flane.cpp) build x fp16 / bf16 with y fp16 / bf16 /
// fp32 or an 8 / 16-bit integer (signed or unsigned); render_core throws std::invalid_argument
// for other float configs.
bool float_lane_supported(const ArithSpec& a);

// All modules of the core, the top (cfg.top_name()) last. cfg must pass check().
std::vector<Module> build_core(const CoreConfig& cfg, LaneArith arith = LaneArith::folded);
// Lane stages the decomposed chain adds in front of the multiply-add (the core's latency grows by
// it).
inline constexpr int kDecomposedExtraStages = 3;

// A generated file: its name in the output directory and its content.
using GeneratedFile = normcore::DirFile;

// Comment lines at the top of every generated file: generator version, contract, exact config
// (`config: <compact JSON>`, broken after commas onto lines that continue with two spaces). Every
// line fits `// ` + 97 characters.
std::vector<std::string> generated_header(const nlohmann::json& config, const std::string& file);
// The config of a generated file's header (the text of the file, comment lead `//`). Throws
// std::invalid_argument when the file has none.
nlohmann::json config_from_header(const std::string& text);

// Verilog files (one per module), the flow files (eda.hpp: filelists, SDC, XDC, FuseSoC .core)
// and manifest.json, in a deterministic order.
std::vector<GeneratedFile> render_core(const CoreConfig& cfg);

// The manifest describing the generated core (config, top, ports, latency, files, contract).
nlohmann::json core_manifest(const CoreConfig& cfg, const std::vector<Module>& modules);

// Writes the files as the whole content of `dir`, atomically (normcore::write_dir_atomic): an
// existing `dir` is replaced only if it is empty or holds a manifest.json (an earlier output),
// and only once the new one is complete. Throws normcore::Error naming the path and the reason,
// leaving `dir` as it was. `force`: replace any existing `dir` (gen --force).
void write_files_atomically(const std::filesystem::path& dir,
                            const std::vector<GeneratedFile>& files, bool force = false);

}  // namespace normcore::gen
