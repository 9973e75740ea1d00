// Bindings of model import: a model file (ONNX, XLA HLO text or StableHLO / TOSA MLIR text) ->
// the import plan (every batch norm found, folded). The same library calls as `normcore import`
// (cli/cmd_import.cpp).
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/mlir.hpp"
#include "normcore/import/onnx.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"

namespace normcore::py {

namespace {

namespace fs = std::filesystem;
using import::Plan;
using import::PlanLayer;

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// True if the text starts (after blank lines and // or # comments) with "HloModule".
bool looks_like_hlo(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i])) != 0) {
      ++i;
    } else if (text[i] == '#' || text.substr(i, 2) == "//") {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return text.substr(i, 9) == "HloModule";
}

// The format as `normcore import` picks it (cli/cmd_import.cpp load_model): the given one, else
// .onnx -> onnx, .hlo or HloModule text -> hlo, .mlir or MLIR text -> mlir, other .txt an error,
// anything else onnx. The parsers are the C++ importer's.
import::Graph load_graph(const std::string& path,
                         const std::string& format){const auto bytes = read_file_bytes(path);
const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
std::string fmt = lower(format);
if (fmt.empty()) {
  const std::string ext = lower(fs::path(path).extension().string());
  if (ext == ".onnx") {
    fmt = "onnx";
  } else if (ext == ".hlo" || looks_like_hlo(text)) {
    fmt = "hlo";
  } else if (ext == ".mlir" || import::looks_like_mlir(text)) {
    fmt = "mlir";
  } else if (ext == ".txt") {
    throw Error(path +
                ": a .txt model must be XLA HLO text starting with 'HloModule' or MLIR "
                "text (or give format=)");
  } else {
    fmt = "onnx";
  }
}
if (fmt == "onnx") return import::parse_onnx(bytes, path);
if (fmt == "hlo") return import::parse_hlo(text, path);
if (fmt == "mlir") return import::parse_mlir(text, path);
throw Error("format: '" + format + "' is not onnx, hlo or mlir");
}  // namespace

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
  auto g = load_graph(path, format);
  if (!bundle.empty()) import::attach_bundle(g, import::load_bundle(bundle));
  const auto rec = import::recognise(g);
  Plan plan = import::make_plan(g, rec, po);
  if (!out_dir.empty()) import::write_plan(plan, out_dir);
  return plan;
}

}  // namespace normcore::py

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
