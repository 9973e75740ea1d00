// The import plan: what `normcore import` writes for a model and `normcore run --plan` runs.
//
// plan/                      (written atomically: a temporary directory next to it, renamed)
//   plan.json                layers (files, shapes, layouts, channel axis, pattern, node
//                            locations, fold results), near misses with reasons, the config
//   <layer>.params.bin       folded parameter image (params_file.hpp)
//   <layer>.bn.json          the recovered float BN (gamma, beta, mean, var, eps, activation,
//                            quantisation) in bn.json form: `normcore fold --params` reads it
//   <layer>.report.txt       layer summary + the fold's error report
//
// Running a plan on a device (random inputs, the float reference, the per-layer check) is the
// CLI's plan runner (cli/run_plan.hpp): model import itself depends on normcore::model only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"
#include "normcore/fold.hpp"
#include "normcore/import/graph.hpp"
#include "normcore/import/recognise.hpp"

namespace normcore::import {

struct PlanOptions {
  ArithSpec spec;                    // the core's number widths
  std::string config_json = "{}";    // the core config object, recorded in plan.json
  std::string config_source;         // where it came from
  int max_channels = 0;              // the core's table size (0: unknown; only for a note)
  bool integer_io = true;            // BnParams quantisation: plain integers in and out ...
  Quant in, out;                     // ... or these (integer_io = false)
  std::optional<Rounding> rounding;  // fold rounding (default half_even)
  std::string bundle;                // parameter bundle file name, recorded
};

// A layer's input as N x C x HW elements in `layout` (nchw: [N][C][HW], nhwc: [N][HW][C]); the
// device job of the layer (JobShape, driver.hpp, has the same fields).
struct PlanJob {
  std::uint64_t n = 1, c = 1, hw = 1;
  Layout layout = Layout::nchw;
  [[nodiscard]] std::uint64_t elements() const { return n * c * hw; }
};

struct PlanLayer {
  BnMatch match;
  BnParams bn;      // recovered parameters + quantisation
  FoldResult fold;  // a float device (contract v2): scale / shift fp32 patterns, job, worst error
  std::string float_report;         // a float device: format_float_report's text
  std::vector<std::int64_t> shape;  // concrete input shape (unknown dimensions -> 1)
  PlanJob job;
  std::string params_file, bn_file, report_file;  // names inside the plan directory
  std::string report;                             // text of report_file
  std::vector<std::string> warnings;              // recogniser + fold + planning warnings
};

struct Plan {
  std::string model, format;
  PlanOptions options;
  std::vector<PlanLayer> layers;
  std::vector<NearMiss> near_misses;
};

// Folds every recognised layer. Error (naming the layer and its location) for a layer whose
// parameters have no data or do not fold (validate / activation_bounds).
Plan make_plan(const Graph& g, const Recognition& rec, const PlanOptions& options);

// plan.json text.
std::string plan_json(const Plan& plan);

// Writes the plan directory atomically: everything goes to "<dir>.tmp.<pid>" next to it, which
// is then renamed to `dir`. An existing `dir` is replaced only if it is empty or holds a
// plan.json; on any error nothing is left behind and an existing plan is kept.
void write_plan(const Plan& plan, const std::filesystem::path& dir);

// ---- reading a plan back (normcore run --plan) ----

struct PlannedLayer {
  std::string name;
  std::filesystem::path params_file, bn_file;
  std::vector<std::int64_t> shape;
  PlanJob job;
  double worst_err = 0;  // the fold's worst-case error bound, output LSBs
  std::string pattern, location;
};

struct LoadedPlan {
  std::filesystem::path dir;
  ArithSpec spec;
  std::vector<PlannedLayer> layers;
};

// Errors name plan.json and the field.
LoadedPlan read_plan(const std::filesystem::path& dir);

}  // namespace normcore::import
