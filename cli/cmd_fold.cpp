// normcore fold: float BN parameters + quantisation -> params.bin (s[c], b[c], R, rounding,
// clamp) for a core configuration, with the exact error report.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "normcore/config.hpp"
#include "normcore/fold.hpp"
#include "normcore/fold_float.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"

namespace normcore::cli {

namespace {
struct FoldCli {
  std::string params, npz, config, out = "params.bin", rounding, report;
  int shift = 0;
  bool progress = false, no_progress = false;
  double max_error = -1;  // --max-error LSB (negative: not given)
  CLI::Option *shift_opt = nullptr, *max_error_opt = nullptr;
};

// Reads the core config: a config object or a manifest with a "config" member.
CoreConfig read_core_config(const std::string& path) {
  std::ifstream is(path);
  if (!is) throw Error("--config: cannot open " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(is);
  } catch (const nlohmann::json::exception& e) {
    throw Error("--config " + path + ": malformed JSON: " + e.what());
  }
  if (j.contains("config") && j["config"].is_object()) j = j["config"];
  CoreConfig cfg;
  try {
    cfg = CoreConfig::from_json(j);
  } catch (const std::exception& e) {
    throw Error("--config " + path + ": " + e.what());
  }
  if (const auto err = cfg.check(FieldNames::json); !err.empty()) {
    throw Error("--config " + path + ": " + err);
  }
  return cfg;
}

// --shift (0..the accumulator width) into `fo`; --max-error must be >= 0.
void check_shift_options(const FoldCli& o, const CoreConfig& cfg, FoldOptions& fo) {
  if (o.shift_opt->count() > 0) {
    const int aw = cfg.arith.acc_bits();
    if (o.shift < 0 || o.shift > aw) {
      throw Error("--shift: " + std::to_string(o.shift) + " is out of range 0.." +
                  std::to_string(aw) + " (the accumulator width)");
    }
    fo.force_shift = o.shift;
  }
  if (o.max_error_opt->count() > 0 && !(o.max_error >= 0)) {
    throw Error("--max-error: " + o.max_error_opt->as<std::string>() +
                " must be a number >= 0 (output LSBs)");
  }
}

// "\rnormcore fold: <phase> done / total" on stderr, a line per phase.
std::function<void(const char*, std::uint64_t, std::uint64_t)> fold_progress() {
  return [](const char* phase, std::uint64_t done, std::uint64_t total) {
    std::fprintf(stderr, "\rnormcore fold: %-10s %3.0f%% (%llu / %llu)", phase,
                 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// The float datapath (contract v2): fp32 s and b, the error in output ULPs (an integer output:
// LSBs) against the float64 batch norm over every finite input.
int fold_float_cli(const FoldCli& o, const CoreConfig& cfg, const BnParams& bn,
                   const FoldOptions& fo, const std::string& tiling_note) {
  if (o.shift_opt->count() > 0) throw Error("--shift: a float datapath has no R (it is 0)");
  const Rounding r = fo.rounding.value_or(bn.rounding.value_or(Rounding::half_even));
  const FloatFoldResult res = fold_float(bn, cfg.arith, r);
  const std::string text = format_float_report(res, cfg.arith);
  check_max_error(o.max_error_opt->count() > 0, o.max_error,
                  static_cast<long double>(res.worst_err),
                  "channel " + std::to_string(res.worst_channel));
  write_params(o.out, ParamImage{cfg.arith, res.job, res.scale, res.shift});
  if (!o.report.empty()) {
    std::vector<std::uint8_t> bytes(text.begin(), text.end());
    write_file_atomic(o.report, bytes);
  }
  std::ostream& summary = o.out == "-" || o.report == "-" ? std::cerr : std::cout;
  summary << (o.report == "-" ? "" : text) << tiling_note << "wrote " << o.out << " ("
          << res.scale.size() << " channels)\n";
  return kExitOk;
}

}  // namespace

Action add_fold(CLI::App& app) {
  auto o = std::make_shared<FoldCli>();
  auto* sub = app.add_subcommand(
      "fold", "Fold float BN parameters into per-channel scale s, offset b and shift R for a core");
  sub->add_option("--params", o->params,
                  "BN parameters JSON (gamma, beta, mean, var, eps, input/output quantisation, "
                  "activation, rounding)")
      ->required();
  sub->add_option("--npz", o->npz,
                  "NumPy .npz with the per-channel arrays (gamma|weight|scale, beta|bias, "
                  "mean|running_mean, var|running_var); overrides arrays in --params");
  sub->add_option("--config", o->config, "Core config JSON or a generated manifest.json")
      ->required();
  sub->add_option("-o,--out", o->out, "Output parameter image (- for standard output)")
      ->capture_default_str();
  sub->add_option("--rounding", o->rounding,
                  "floor | half_up | half_even | half_away (default: from --params, else "
                  "half_even)");
  o->shift_opt = sub->add_option("--shift", o->shift,
                                 "Force R (0..the accumulator width) instead of searching for it");
  o->max_error_opt = sub->add_option("--max-error", o->max_error,
                                     "Fail (exit 2, nothing written) above this worst-case error");
  sub->add_option("--report", o->report, "Also write the report to this file (- for stdout)");
  sub->add_flag("--progress", o->progress,
                "Print the fold's phases to stderr (default: on a terminal, for 65536 channels and "
                "more)");
  sub->add_flag("--no-progress", o->no_progress, "No progress, even on a terminal");
  return [o]() -> int {
    try {
      const auto cfg = read_core_config(o->config);
      BnParams bn = o->npz.empty() ? load_bn_json(o->params) : load_bn(o->params, o->npz);
      validate(bn);
      std::string tiling_note;
      if (bn.channels() > static_cast<std::size_t>(cfg.max_channels)) {
        const std::size_t mc = static_cast<std::size_t>(cfg.max_channels);
        tiling_note = "note: " + std::to_string(bn.channels()) +
                      " channels exceed the core's max_channels " + std::to_string(mc) +
                      ": the runtime runs the layer as " +
                      std::to_string((bn.channels() + mc - 1) / mc) +
                      " channel groups (one device job each)\n";
      }
      FoldOptions fo;
      if (!o->rounding.empty()) {
        try {
          fo.rounding = parse_rounding(o->rounding);
        } catch (const std::invalid_argument& e) {
          throw Error(std::string("--rounding: ") + e.what());
        }
      }
      // A specialised core: its fixed R and rounding, unless given here (then `normcore run`
      // reports the mismatch).
      if (cfg.has_fixed_rounding() && o->rounding.empty()) {
        fo.rounding = parse_rounding(cfg.fixed_rounding);
      }
      if (cfg.is_float()) return fold_float_cli(*o, cfg, bn, fo, tiling_note);
      if (cfg.has_fixed_shift()) fo.force_shift = cfg.fixed_shift;
      check_shift_options(*o, cfg, fo);
      if (!o->no_progress && (o->progress || (isatty(2) != 0 && bn.channels() >= 65536))) {
        fo.progress = fold_progress();
      }
      const FoldResult res = fold(bn, cfg.arith, fo);
      const std::string text = format_report(res, cfg.arith, bn);
      check_max_error(o->max_error_opt->count() > 0, o->max_error, res.worst_err,
                      "channel " + std::to_string(res.worst_channel));
      write_params(o->out, ParamImage{cfg.arith, res.job, res.scale, res.shift});
      if (!o->report.empty()) {
        std::vector<std::uint8_t> bytes(text.begin(), text.end());
        write_file_atomic(o->report, bytes);
      }
      // -o - or --report -: the image or the report is standard output, the summary stderr.
      std::ostream& summary = o->out == "-" || o->report == "-" ? std::cerr : std::cout;
      summary << (o->report == "-" ? "" : text) << tiling_note << "wrote " << o->out << " ("
              << res.scale.size() << " channels)\n";
      return kExitOk;
    } catch (const Error& e) {
      std::cerr << "normcore fold: error: " << e.what() << "\n";
      return kExitBadInput;
    }
  };
}

}  // namespace normcore::cli
