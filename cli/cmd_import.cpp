// normcore import: a model (ONNX, HLO, MLIR, torch.export, Relay) + optional parameter bundle -> an
// import plan (per batch norm: folded parameter image, float parameters, report; plan.json).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "normcore/config.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/load.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"

namespace normcore::cli {

namespace {

namespace fs = std::filesystem;

struct ImportCli {
  std::string model, params, config, out, format, rounding;
  double in_scale = 1, out_scale = 1;
  std::int64_t in_zp = 0, out_zp = 0;
  bool quiet = false;
  double max_error = -1;
  bool max_error_given = false;
};

std::string act_text(const import::BnMatch& m) {
  if (m.activation != "clamp") return m.activation;
  auto b = [](double v) {
    if (v == std::numeric_limits<double>::lowest()) return std::string("-inf");
    if (v == std::numeric_limits<double>::max()) return std::string("+inf");
    std::ostringstream os;
    os << v;
    return os.str();
  };
  return "clamp{" + b(m.act_min) + ", " + b(m.act_max) + "}";
}

// The core configuration (a config object or a generated manifest with "config") and the plan
// options it gives with the quantisation and rounding options.
normcore::import::PlanOptions plan_options(const ImportCli& o,
                                           const std::vector<std::string>& quant_given) {
  std::ifstream is(o.config);
  if (!is) throw Error("--config: cannot open " + o.config);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(is);
  } catch (const nlohmann::json::exception& e) {
    throw Error("--config " + o.config + ": malformed JSON: " + e.what());
  }
  if (j.contains("config") && j["config"].is_object()) j = j["config"];
  CoreConfig cfg;
  try {
    cfg = CoreConfig::from_json(j);
  } catch (const std::exception& e) {
    throw Error("--config " + o.config + ": " + e.what());
  }
  if (const auto err = cfg.check(FieldNames::json); !err.empty()) {
    throw Error("--config " + o.config + ": " + err);
  }

  normcore::import::PlanOptions po;
  po.spec = cfg.arith;
  po.config_json = j.dump();
  po.config_source = o.config;
  po.max_channels = cfg.max_channels;
  po.bundle = o.params;
  if (!quant_given.empty()) {
    po.integer_io = false;
    po.in = Quant{o.in_scale, o.in_zp};
    po.out = Quant{o.out_scale, o.out_zp};
    if (!(o.in_scale > 0 && std::isfinite(o.in_scale))) {
      throw Error("--in-scale: " + (std::ostringstream() << o.in_scale).str() +
                  " must be a finite number > 0");
    }
    if (!(o.out_scale > 0 && std::isfinite(o.out_scale))) {
      throw Error("--out-scale: " + (std::ostringstream() << o.out_scale).str() +
                  " must be a finite number > 0");
    }
  }
  if (!o.rounding.empty()) {
    try {
      po.rounding = parse_rounding(o.rounding);
    } catch (const std::invalid_argument& e) {
      throw Error(std::string("--rounding: ") + e.what());
    }
  }
  return po;
}

// --params: the bundle's arrays into the graph's inputs without data.
void attach_params(normcore::import::Graph& g, const ImportCli& o) {
  const auto b = normcore::import::load_bundle(o.params);
  const auto rep = normcore::import::attach_bundle(g, b);
  if (o.quiet) return;
  for (const auto& a : rep.attached) {
    std::cout << "bundle: " << g.values[static_cast<std::size_t>(a.value)].name << " <- '" << a.key
              << "' (" << a.how << ")\n";
  }
  if (!rep.unused_keys.empty()) {
    std::cout << "bundle: " << rep.unused_keys.size() << " key(s) not used:";
    for (std::size_t i = 0; i < rep.unused_keys.size() && i < 8; ++i) {
      std::cout << " " << rep.unused_keys[i];
    }
    std::cout << (rep.unused_keys.size() > 8 ? " ...\n" : "\n");
  }
}

void print_plan(const normcore::import::Plan& plan, const std::string& out) {
  for (const auto& l : plan.layers) {
    const auto& m = l.match;
    std::printf(
        "layer %s: %s (%s) at %s: %lld channels, axis %d (%s), shape %s, eps %g, "
        "activation %s; R = %d, %s, worst-case error %.6Lg LSB -> %s\n",
        m.name.c_str(), m.pattern.c_str(), m.ops.c_str(), m.location.c_str(),
        static_cast<long long>(m.channels), m.channel_axis,
        std::string(to_string(l.job.layout)).c_str(), normcore::import::shape_str(l.shape).c_str(),
        m.eps, act_text(m).c_str(), l.fold.job.shift,
        std::string(to_string(l.fold.job.rounding)).c_str(), l.fold.worst_err,
        l.params_file.c_str());
    for (const auto& w : l.warnings) std::printf("  warning: %s\n", w.c_str());
  }
  for (const auto& n : plan.near_misses) {
    std::printf("near miss at %s: not a BN: %s\n", n.location.c_str(), n.reason.c_str());
  }
  std::printf("wrote %s (%zu batch norm(s), %zu near miss(es))\n", out.c_str(), plan.layers.size(),
              plan.near_misses.size());
}

int do_import(const ImportCli& o, const std::vector<std::string>& quant_given) {
  try {
    const auto po = plan_options(o, quant_given);
    auto g = normcore::import::load_model(o.model, o.format, "--format");
    if (!o.params.empty()) attach_params(g, o);
    const auto rec = normcore::import::recognise(g);
    const auto plan = normcore::import::make_plan(g, rec, po);
    for (const auto& l : plan.layers) {
      check_max_error(o.max_error_given, o.max_error, l.fold.worst_err, "layer " + l.match.name);
    }
    normcore::import::write_plan(plan, o.out);
    if (!o.quiet && !rec.note.empty()) std::printf("%s\n", rec.note.c_str());
    if (!o.quiet) print_plan(plan, o.out);
    return kExitOk;
  } catch (const Error& e) {
    std::cerr << "normcore import: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "normcore import: error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace

Action add_import(CLI::App& app) {
  auto o = std::make_shared<ImportCli>();
  auto* sub = app.add_subcommand(
      "import",
      "Find the batch norms of a model (ONNX, XLA HLO, MLIR, torch.export, Relay), fold "
      "them "
      "for a core and write a plan");
  sub->add_option(
         "model", o->model,
         "Model: .onnx, XLA HLO text (.hlo, .txt), StableHLO / TOSA MLIR (.mlir), a torch.export "
         "archive (.pt2) or TVM Relay text (.relay), or by content")
      ->required();
  sub->add_option(
      "--params", o->params,
      "Parameter bundle for inputs without data: .npz, .npy, JSON, .safetensors or Flax "
      ".msgpack (Flax "
      "params/<layer>/scale..., PyTorch <layer>.weight..., parameter names or numbers)");
  sub->add_option("--config", o->config, "Core config JSON or a generated manifest.json")
      ->required();
  sub->add_option("-o,--out", o->out, "Plan directory (written atomically)")->required();
  sub->add_option(
      "--format", o->format,
      "onnx | hlo | mlir | torch.export | relay (default: from the extension / content)");
  auto* is =
      sub->add_option("--in-scale", o->in_scale, "Input quantisation scale (default: integer I/O)");
  auto* iz = sub->add_option("--in-zero-point", o->in_zp, "Input quantisation zero point");
  auto* os = sub->add_option("--out-scale", o->out_scale, "Output quantisation scale");
  auto* oz = sub->add_option("--out-zero-point", o->out_zp, "Output quantisation zero point");
  sub->add_option("--rounding", o->rounding,
                  "floor | half_up | half_even | half_away (default half_even)");
  sub->add_flag("-q,--quiet", o->quiet, "No summary");
  auto* me = sub->add_option("--max-error", o->max_error,
                             "Fail (exit 2, nothing written) when a layer's exact worst-case error "
                             "exceeds this many output LSBs");
  return [o, is, iz, os, oz, me] {
    o->max_error_given = me->count() > 0;
    if (o->max_error_given && !(o->max_error >= 0)) {
      std::cerr << "normcore import: error: --max-error: " << me->as<std::string>()
                << " must be a number >= 0 (output LSBs)\n";
      return kExitBadInput;
    }
    std::vector<std::string> given;
    for (auto* opt : {is, iz, os, oz}) {
      if (opt->count() > 0) given.push_back(opt->get_name());
    }
    return do_import(*o, given);
  };
}

}  // namespace normcore::cli
