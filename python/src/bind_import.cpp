// Bindings of model import: a model file (ONNX, XLA HLO text, StableHLO / TOSA MLIR text,
// torch.export .pt2, Relay text) -> the import plan (every batch norm found, folded). The same
// library calls as `normcore import` (import::load_model picks and parses the format).
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/load.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"

namespace normcore::py {

namespace {

namespace fs = std::filesystem;
using import::Plan;
using import::PlanLayer;

using QuantArg = std::optional<std::pair<double, std::int64_t>>;

Plan import_model(const std::string& path, const ArithSpec& spec, const std::string& format,
                  const std::string& bundle, const QuantArg& in_q, const QuantArg& out_q,
                  std::optional<std::string> rounding, const std::string& out_dir) {
  import::PlanOptions po;
  po.spec = spec;
  if (in_q || out_q) {
    po.integer_io = false;
    if (in_q) po.in = Quant{in_q->first, in_q->second};
    if (out_q) po.out = Quant{out_q->first, out_q->second};
  }
  if (rounding) po.rounding = parse_rounding(*rounding);
  po.bundle = bundle;
  pyb::gil_scoped_release nogil;
  auto g = import::load_model(path, format, "format");
  if (!bundle.empty()) import::attach_bundle(g, import::load_bundle(bundle));
  const auto rec = import::recognise(g);
  Plan plan = import::make_plan(g, rec, po);
  if (!out_dir.empty()) import::write_plan(plan, out_dir);
  return plan;
}

}  // namespace

void bind_import(pyb::module_& m) {
  pyb::class_<PlanLayer>(m, "PlanLayer", "One batch norm of an imported model")
      .def_property_readonly("name", [](const PlanLayer& l) { return l.match.name; })
      .def_property_readonly("pattern", [](const PlanLayer& l) { return l.match.pattern; })
      .def_property_readonly("location", [](const PlanLayer& l) { return l.match.location; })
      .def_property_readonly("channels", [](const PlanLayer& l) { return l.match.channels; })
      .def_property_readonly("channel_axis",
                             [](const PlanLayer& l) { return l.match.channel_axis; })
      .def_property_readonly("activation", [](const PlanLayer& l) { return l.match.activation; })
      .def_readonly("shape", &PlanLayer::shape)
      .def_property_readonly(
          "layout", [](const PlanLayer& l) { return std::string(to_string(l.job.layout)); })
      .def_property_readonly(
          "job", [](const PlanLayer& l) { return pyb::make_tuple(l.job.n, l.job.c, l.job.hw); })
      .def_readonly("bn", &PlanLayer::bn)
      .def_readonly("report", &PlanLayer::report)
      .def_readonly("warnings", &PlanLayer::warnings)
      .def_property_readonly(
          "worst_error", [](const PlanLayer& l) { return static_cast<double>(l.fold.worst_err); });
  pyb::class_<Plan>(m, "Plan", "The import plan of a model (normcore import)")
      .def_readonly("model", &Plan::model)
      .def_readonly("format", &Plan::format)
      .def_readonly("layers", &Plan::layers)
      .def("params",
           [](const Plan& p, std::size_t i) {
             if (i >= p.layers.size()) throw Error("Plan.params: no layer " + std::to_string(i));
             const auto& l = p.layers[i];
             return ParamImage{p.options.spec, l.fold.job, l.fold.scale, l.fold.shift};
           })
      .def("to_json", [](const Plan& p) { return import::plan_json(p); })
      .def_property_readonly("near_misses", [](const Plan& p) {
        std::vector<std::pair<std::string, std::string>> v;
        for (const auto& n : p.near_misses) v.emplace_back(n.location, n.reason);
        return v;
      });
  m.def("import_model", &import_model, pyb::arg("path"), pyb::arg("spec"), pyb::arg("format") = "",
        pyb::arg("bundle") = "", pyb::arg("in_quant") = pyb::none(),
        pyb::arg("out_quant") = pyb::none(), pyb::arg("rounding") = pyb::none(),
        pyb::arg("out_dir") = "");
}

}  // namespace normcore::py
