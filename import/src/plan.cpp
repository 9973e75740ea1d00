// The import plan: fold every recognised BN, write the plan directory, read it back and check
// a device against the float reference (see plan.hpp).
#include "normcore/import/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "normcore/fold_float.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"
#include "normcore/util/atomic_write.hpp"

namespace normcore::import {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string g6(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string activation_text(const BnMatch& m) {
  if (m.activation != "clamp") return m.activation;
  const double lowest = std::numeric_limits<double>::lowest();
  const double highest = std::numeric_limits<double>::max();
  return "clamp{min " + (m.act_min == lowest ? std::string("-inf") : g6(m.act_min)) + ", max " +
         (m.act_max == highest ? std::string("+inf") : g6(m.act_max)) + "}";
}

json spec_json(const ArithSpec& s) {
  json j{{"xw", s.xw}, {"x_signed", s.x_signed}, {"sw", s.sw}, {"bw", s.bw},
         {"yw", s.yw}, {"y_signed", s.y_signed}};
  if (s.is_float()) {  // contract v2 (absent: integer)
    j["x_type"] = to_string(s.x_type);
    j["y_type"] = to_string(s.y_type);
    j["flush_subnormals"] = s.flush_subnormals;
  }
  return j;
}

// A float device (contract v2): fold_float's result in the plan's FoldResult (patterns, job,
// worst error in output ULPs, warnings) and its report.
void fold_float_layer(PlanLayer& l, const PlanOptions& options) {
  const FloatFoldResult f =
      fold_float(l.bn, options.spec, options.rounding.value_or(Rounding::half_even));
  l.fold.scale = f.scale;
  l.fold.shift = f.shift;
  l.fold.job = f.job;
  l.fold.worst_err = f.worst_err;
  l.fold.worst_channel = f.worst_channel;
  l.fold.warnings = f.warnings;
  l.fold.shift_choice = "float datapath: R 0";
  l.float_report = format_float_report(f, options.spec);
}

json bn_json(const PlanLayer& l) {
  const BnParams& p = l.bn;
  json j;
  j["name"] = l.match.name;
  j["eps"] = p.eps;
  j["gamma"] = p.gamma;
  j["beta"] = p.beta;
  j["mean"] = p.mean;
  j["var"] = p.var;
  if (p.integer_io) {
    j["quant"] = "integer";
  } else {
    j["input"] = json{{"scale", p.in.scale}, {"zero_point", p.in.zero_point}};
    j["output"] = json{{"scale", p.out.scale}, {"zero_point", p.out.zero_point}};
  }
  if (p.activation == "clamp") {
    j["activation"] = json{{"min", p.act_min}, {"max", p.act_max}};
  } else {
    j["activation"] = p.activation;
  }
  j["rounding"] = std::string(to_string(l.fold.job.rounding));
  return j;
}

}  // namespace

namespace {

void require_complete(const BnMatch& m, const std::string& where) {
  if (m.complete) return;
  std::string miss;
  for (const auto& s : m.missing) miss += (miss.empty() ? "" : ", ") + s;
  if (!miss.empty()) {
    throw Error(where + ": parameters without data: " + miss +
                " (give a parameter bundle with --params)");
  }
  throw Error(where + ": parameters could not be evaluated");
}

// The concrete input shape (unknown dimensions -> 1, with warnings) and the job.
void plan_shape(PlanLayer& l, const BnMatch& m, const std::string& where) {
  std::vector<std::int64_t> shape = m.shape;
  const int axis = m.channel_axis;
  if (shape.empty()) {
    shape.assign(static_cast<std::size_t>(std::max(axis + 1, 2)), 1);
    l.warnings.push_back("input shape unknown: planned as " + shape_str(shape) +
                         " with the channels on axis " + std::to_string(axis));
  }
  if (axis < 0 || axis >= static_cast<int>(shape.size())) {
    throw Error(where + ": channel axis " + std::to_string(axis) + " outside the input shape " +
                shape_str(shape));
  }
  shape[static_cast<std::size_t>(axis)] = m.channels;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      l.warnings.push_back("dimension " + std::to_string(i) + " of the input " +
                           shape_str(m.shape) + " is unknown: planned as 1");
      shape[i] = 1;
    }
  }
  l.shape = shape;
  auto prod = [&](std::size_t from, std::size_t to) {
    std::uint64_t p = 1;
    for (std::size_t i = from; i < to; ++i) p *= static_cast<std::uint64_t>(shape[i]);
    return p;
  };
  const auto r = shape.size();
  const auto a = static_cast<std::size_t>(axis);
  if (m.layout == Layout::nhwc && r >= 3 && a == r - 1) {
    l.job = PlanJob{static_cast<std::uint64_t>(shape[0]), static_cast<std::uint64_t>(m.channels),
                    prod(1, r - 1), Layout::nhwc};
  } else {
    l.job =
        PlanJob{prod(0, a), static_cast<std::uint64_t>(m.channels), prod(a + 1, r), Layout::nchw};
  }
}

void fold_layer(PlanLayer& l, const BnMatch& m, const PlanOptions& options) {
  FoldOptions fo;
  fo.rounding = options.rounding;
  try {
    if (options.spec.is_float()) {
      fold_float_layer(l, options);
    } else {
      l.fold = fold(l.bn, options.spec, fo);
    }
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + m.pattern + " at " + m.location + ")");
  }
  for (const auto& w : l.fold.warnings) l.warnings.push_back(w);
  if (options.max_channels > 0 && m.channels > options.max_channels) {
    l.warnings.push_back(std::to_string(m.channels) + " channels exceed the core's max_channels " +
                         std::to_string(options.max_channels) +
                         ": the runtime runs the layer in channel groups");
  }
}

std::string layer_report(const Graph& g, const PlanLayer& l, const PlanOptions& options) {
  const BnMatch& m = l.match;
  std::ostringstream rep;
  rep << "layer " << m.name << ": " << m.pattern << " (" << m.ops << ") at " << m.location
      << "\n  input " << describe_value(g, m.input) << " shape " << shape_str(l.shape) << ", "
      << to_string(l.job.layout) << ", channel axis " << m.channel_axis << ", " << m.channels
      << " channels\n  eps " << g6(m.eps) << ", activation " << activation_text(m)
      << "\n  job n=" << l.job.n << " c=" << l.job.c << " hw=" << l.job.hw << "\n";
  rep << (l.float_report.empty() ? format_report(l.fold, options.spec, l.bn) : l.float_report);
  for (const auto& w : m.warnings) rep << "warning: " << w << "\n";
  for (std::size_t i = m.warnings.size() + l.fold.warnings.size(); i < l.warnings.size(); ++i) {
    rep << "warning: " << l.warnings[i] << "\n";
  }
  return rep.str();
}

}  // namespace

Plan make_plan(const Graph& g, const Recognition& rec, const PlanOptions& options) {
  Plan plan;
  plan.model = g.source;
  plan.format = g.format;
  plan.options = options;
  plan.near_misses = rec.near_misses;
  if (const auto err = options.spec.check(); !err.empty()) throw Error("config: " + err);
  for (const auto& m : rec.layers) {
    const std::string where = (g.source.empty() ? std::string() : g.source + ": ") +
                              "batch norm '" + m.name + "' at " + m.location;
    require_complete(m, where);
    PlanLayer l;
    l.match = m;
    l.warnings = m.warnings;
    l.bn = m.params;
    l.bn.integer_io = options.integer_io;
    l.bn.in = options.in;
    l.bn.out = options.out;
    l.bn.source = where;
    plan_shape(l, m, where);
    fold_layer(l, m, options);
    l.params_file = m.name + ".params.bin";
    l.bn_file = m.name + ".bn.json";
    l.report_file = m.name + ".report.txt";
    l.report = layer_report(g, l, options);
    plan.layers.push_back(std::move(l));
  }
  return plan;
}

std::string plan_json(const Plan& plan) {
  json j;
  j["normcore_plan"] = 1;
  j["model"] = plan.model;
  j["format"] = plan.format;
  if (!plan.options.bundle.empty()) j["bundle"] = plan.options.bundle;
  json cfg;
  try {
    cfg = json::parse(plan.options.config_json);
  } catch (const json::exception&) {
    cfg = json::object();
  }
  j["config"] = cfg;
  j["config_source"] = plan.options.config_source;
  j["arith"] = spec_json(plan.options.spec);
  if (plan.options.integer_io) {
    j["quant"] = json{{"integer_io", true}};
  } else {
    j["quant"] = json{
        {"integer_io", false},
        {"input", {{"scale", plan.options.in.scale}, {"zero_point", plan.options.in.zero_point}}},
        {"output",
         {{"scale", plan.options.out.scale}, {"zero_point", plan.options.out.zero_point}}}};
  }
  json layers = json::array();
  for (const auto& l : plan.layers) {
    const BnMatch& m = l.match;
    json e;
    e["name"] = m.name;
    e["pattern"] = m.pattern;
    e["ops"] = m.ops;
    e["location"] = m.location;
    e["nodes"] = m.locations;
    e["params_file"] = l.params_file;
    e["bn_file"] = l.bn_file;
    e["report_file"] = l.report_file;
    e["model_shape"] = m.shape;
    e["shape"] = l.shape;
    e["layout"] = std::string(to_string(l.job.layout));
    e["channel_axis"] = m.channel_axis;
    e["channels"] = m.channels;
    e["job"] = json{{"n", l.job.n}, {"c", l.job.c}, {"hw", l.job.hw}};
    e["eps"] = m.eps;
    e["activation"] = m.activation;
    if (m.activation == "clamp") {
      e["act_min"] = m.act_min;
      e["act_max"] = m.act_max;
    }
    e["shift"] = l.fold.job.shift;
    e["rounding"] = std::string(to_string(l.fold.job.rounding));
    e["lo"] = l.fold.job.lo;
    e["hi"] = l.fold.job.hi;
    e["worst_error_lsb"] = static_cast<double>(l.fold.worst_err);
    e["worst_channel"] = l.fold.worst_channel;
    bool exhaustive = true;
    for (const auto& c : l.fold.channels) exhaustive = exhaustive && c.exhaustive;
    e["error_exhaustive"] = exhaustive;
    e["warnings"] = l.warnings;
    layers.push_back(std::move(e));
  }
  j["layers"] = std::move(layers);
  json near = json::array();
  for (const auto& n : plan.near_misses) {
    near.push_back(json{{"reason", n.reason}, {"location", n.location}, {"nodes", n.nodes}});
  }
  j["near_misses"] = std::move(near);
  return j.dump(2) + "\n";
}

void write_plan(const Plan& plan, const fs::path& dir) {
  std::vector<DirFile> files;
  for (const auto& l : plan.layers) {
    const auto image =
        encode_params(ParamImage{plan.options.spec, l.fold.job, l.fold.scale, l.fold.shift});
    files.push_back({l.params_file, std::string(image.begin(), image.end())});
    files.push_back({l.bn_file, bn_json(l).dump(2) + "\n"});
    files.push_back({l.report_file, l.report});
  }
  files.push_back({"plan.json", plan_json(plan)});
  // An existing directory is only replaced when it is a plan (or empty).
  write_dir_atomic(dir, files, [](const fs::path& d) -> std::string {
    std::error_code ec;
    if (fs::is_regular_file(d / "plan.json", ec)) return {};
    return "it is not a normcore plan (no plan.json)";
  });
}

LoadedPlan read_plan(const fs::path& dir) {
  const fs::path file = dir / "plan.json";
  const auto bytes = read_file_bytes(file);
  json j;
  try {
    j = json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {
    throw Error(file.string() + ": malformed JSON: " + e.what());
  }
  LoadedPlan p;
  p.dir = dir;
  auto need = [&](const json& o, const char* key, const std::string& where) -> const json& {
    if (!o.is_object() || !o.contains(key))
      throw Error(file.string() + ": " + where + "missing \"" + key + "\"");
    return o.at(key);
  };
  try {
    const json& a = need(j, "arith", "");
    p.spec =
        ArithSpec{need(a, "xw", "arith: ").get<int>(), need(a, "x_signed", "arith: ").get<bool>(),
                  need(a, "sw", "arith: ").get<int>(), need(a, "bw", "arith: ").get<int>(),
                  need(a, "yw", "arith: ").get<int>(), need(a, "y_signed", "arith: ").get<bool>()};
    try {
      if (a.contains("x_type")) p.spec.x_type = parse_num_type(a.at("x_type").get<std::string>());
      if (a.contains("y_type")) p.spec.y_type = parse_num_type(a.at("y_type").get<std::string>());
    } catch (const std::invalid_argument& ex) {
      throw Error(file.string() + ": arith: " + ex.what());
    }
    if (a.contains("flush_subnormals"))
      p.spec.flush_subnormals = a.at("flush_subnormals").get<bool>();
    if (const auto err = p.spec.check(); !err.empty())
      throw Error(file.string() + ": arith: " + err);
    const json& layers = need(j, "layers", "");
    if (!layers.is_array()) throw Error(file.string() + ": \"layers\" is not an array");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const json& e = layers[i];
      const std::string where = "layers[" + std::to_string(i) + "]: ";
      PlannedLayer l;
      l.name = need(e, "name", where).get<std::string>();
      l.params_file = dir / need(e, "params_file", where).get<std::string>();
      l.bn_file = dir / need(e, "bn_file", where).get<std::string>();
      l.shape = need(e, "shape", where).get<std::vector<std::int64_t>>();
      const json& job = need(e, "job", where);
      l.job.n = need(job, "n", where + "job: ").get<std::uint64_t>();
      l.job.c = need(job, "c", where + "job: ").get<std::uint64_t>();
      l.job.hw = need(job, "hw", where + "job: ").get<std::uint64_t>();
      try {
        l.job.layout = parse_layout(need(e, "layout", where).get<std::string>());
      } catch (const std::invalid_argument& ex) {
        throw Error(file.string() + ": " + where + "layout: " + ex.what());
      }
      if (l.job.elements() == 0) throw Error(file.string() + ": " + where + "empty job shape");
      l.worst_err = need(e, "worst_error_lsb", where).get<double>();
      if (e.contains("pattern")) l.pattern = e["pattern"].get<std::string>();
      if (e.contains("location")) l.location = e["location"].get<std::string>();
      p.layers.push_back(std::move(l));
    }
  } catch (const json::exception& ex) {
    throw Error(file.string() + ": " + ex.what());
  }
  return p;
}

}  // namespace normcore::import
