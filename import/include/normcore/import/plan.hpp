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
// run_layer() checks a device against the model: it runs the layer's job and compares every
// output with the float reference computed from the recovered BN (not from the folded
// integers): y_ref = clamp(BN(in.scale * (x - in.zp)) / out.scale + out.zp, lo, hi) with
// BN(v) = gamma * (v - mean) / sqrt(var + eps) + beta and [lo, hi] the output range intersected
// with the quantised activation (activation_bounds(), fold.hpp: relu -> lo >= zp, relu6 ->
// hi <= zp + round(6 / out.scale), clamp -> ceil / floor of the quantised bounds). The largest
// |y - y_ref| in output LSBs must not exceed the fold's worst-case error bound.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
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

struct PlanLayer {
  BnMatch match;
  BnParams bn;  // recovered parameters + quantisation
  FoldResult fold;
  std::vector<std::int64_t> shape;  // concrete input shape (unknown dimensions -> 1)
  JobShape job;
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
  JobShape job;
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

// Deterministic pseudo-random integers uniform over the spec's input range.
std::vector<std::int64_t> random_input(const ArithSpec& spec, std::size_t count,
                                       std::uint64_t seed);

// The float reference (see above), output LSBs, one per element of x (layout / inner from job).
std::vector<double> reference_output(const BnParams& bn, const ArithSpec& spec,
                                     std::span<const std::int64_t> x, const JobShape& job);

struct LayerCheck {
  std::string name;
  JobShape job;
  std::uint64_t elements = 0;
  double max_err = 0;   // max |y - y_ref|, output LSBs
  double bound = 0;     // the fold's worst-case error
  bool within = false;  // max_err <= bound (+ 1e-6 for floating-point noise)
  std::uint64_t worst_index = 0;
  std::int64_t worst_x = 0, worst_y = 0;
  double worst_ref = 0;
  std::int64_t worst_channel = 0;
};

// Uploads the layer's parameter image, runs x (int values, job.elements() of them) and compares.
// Throws Error / DeviceError for bad inputs or a failing device.
LayerCheck run_layer(Accelerator& acc, const PlannedLayer& layer, std::span<const std::int64_t> x);

}  // namespace normcore::import
