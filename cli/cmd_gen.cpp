// normcore gen: emit the streaming core's Verilog, manifest and filelist for one configuration.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/config.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::cli {

namespace {
// An option's help from the one config schema (its range included), with an optional tail.
std::string schema_help(const char* key, const char* tail = "") {
  return config_field(key).help_text() + tail;
}

struct GenOptions {
  gen::AccelConfig acfg;
  gen::CoreConfig& cfg = acfg.core;
  bool accel = false;
  std::string config_file;
  std::string out_dir = "normcore_rtl";
  bool in_unsigned = false;
  bool out_unsigned = false;
  bool dry_run = false;
  std::string design = "core";
};
}  // namespace

Action add_gen(CLI::App& app) {
  auto opt = std::make_shared<GenOptions>();
  auto* sub = app.add_subcommand("gen", "Generate the streaming BN-inference core (Verilog)");
  auto& c = opt->cfg;
  sub->add_option("--config", opt->config_file,
                  "Core config JSON (keys as in manifest.json \"config\"); options given on the "
                  "command line override it");
  sub->add_option("--name", c.name, schema_help("name"))->capture_default_str();
  sub->add_option("--lanes", c.lanes, schema_help("lanes"))->capture_default_str();
  sub->add_option("--in-bits", c.arith.xw, schema_help("in_bits"))->capture_default_str();
  sub->add_flag("--in-unsigned", opt->in_unsigned, "Input elements are unsigned");
  sub->add_option("--out-bits", c.arith.yw, schema_help("out_bits"))
      ->capture_default_str();
  sub->add_flag("--out-unsigned", opt->out_unsigned, "Output elements are unsigned");
  sub->add_option("--scale-bits", c.arith.sw, schema_help("scale_bits"))
      ->capture_default_str();
  sub->add_option("--shift-bits", c.arith.bw, schema_help("shift_bits"))
      ->capture_default_str();
  sub->add_option("--max-channels", c.max_channels, schema_help("max_channels"))
      ->capture_default_str();
  sub->add_option("--inner-bits", c.inner_bits, schema_help("inner_bits"))
      ->capture_default_str();
  sub->add_option("--pipeline", c.pipeline,
                  schema_help("pipeline",
                              ": 4 adds lane input registers, 5 registers the >>> R shift, 6 the "
                              "rounded quotient, 7 splits the shifter, 8 registers the saturated "
                              "quotient (default: by --target)"))
      ->capture_default_str();
  sub->add_option("--target", c.target,
                  schema_help("target",
                              ": picks the default --pipeline (3, 8, 4, 5) and target attributes "
                              "(xilinx: ram_style, use_dsp)"))
      ->capture_default_str();
  sub->add_option("-o,--out-dir", opt->out_dir, "Output directory (replaced atomically)")
      ->capture_default_str();
  sub->add_flag("--dry-run", opt->dry_run, "Validate and print the manifest; write nothing");
  sub->add_flag("--accel", opt->accel,
                "Generate the memory-mapped accelerator (<name>_top: AXI4-Lite registers, AXI4 "
                "DMA) around the core");
  sub->add_option("--design", opt->design,
                  "What to generate: core (the product), or a PPA reference design sized like "
                  "the core: bare-mac (one registered a*b+c per lane), decomposed (framework-style "
                  "(x-mean)*inv_std*gamma+beta stages), decomposed-core (those stages inside the "
                  "whole core: "
                  "same table, tracking, flow control, round and clamp); see docs/ppa.md")
      ->check(CLI::IsMember({"core", "bare-mac", "decomposed", "decomposed-core"}))
      ->capture_default_str();
  auto& a = opt->acfg;
  sub->add_option("--bus-bits", a.bus_bits, schema_help("bus_bits"))
      ->capture_default_str();
  sub->add_option("--addr-bits", a.addr_bits, schema_help("addr_bits"))
      ->capture_default_str();
  sub->add_option("--id-bits", a.id_bits, schema_help("id_bits"))
      ->capture_default_str();
  sub->add_option("--max-burst", a.max_burst, schema_help("max_burst"))
      ->capture_default_str();
  sub->add_option("--outstanding", a.outstanding, schema_help("outstanding"))
      ->capture_default_str();

  return [opt, sub]() -> int {
    gen::AccelConfig acfg = opt->acfg;
    gen::CoreConfig& cfg = acfg.core;
    bool accel = opt->accel;
    if (!opt->config_file.empty()) {
      std::ifstream is(opt->config_file);
      if (!is) {
        std::cerr << "normcore gen: error: --config: cannot open " << opt->config_file << "\n";
        return kExitBadInput;
      }
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(is);
        if (j.contains("kind") && j["kind"] == "accelerator") accel = true;
        if (j.contains("config") && j["config"].is_object()) j = j["config"];  // a manifest
        acfg = gen::AccelConfig::from_json(j);
        if (j.contains("bus_bits")) accel = true;
      } catch (const std::exception& e) {
        std::cerr << "normcore gen: error: --config " << opt->config_file << ": " << e.what()
                  << "\n";
        return kExitBadInput;
      }
      // Command-line options override the file (the flags --in-unsigned/--out-unsigned below).
      AccelConfig given = opt->acfg;
      for (const auto& f : config_schema()) {
        if (sub->count(f.option) == 0) continue;
        if (f.int_ref != nullptr) *f.int_ref(acfg) = *f.int_ref(given);
        if (f.str_ref != nullptr) *f.str_ref(acfg) = *f.str_ref(given);
      }
    }
    if (sub->count("--target") && !sub->count("--pipeline")) {
      if (const int p = gen::CoreConfig::default_pipeline(cfg.target); p != 0) cfg.pipeline = p;
    }
    if (opt->in_unsigned) cfg.arith.x_signed = false;
    if (opt->out_unsigned) cfg.arith.y_signed = false;
    if (const auto err = accel ? acfg.check() : cfg.check(); !err.empty()) {
      std::cerr << "normcore gen: error: " << err << "\n";
      return kExitBadInput;
    }
    const bool ref = opt->design != "core";
    if (ref && accel) {
      std::cerr << "normcore gen: error: --design: " << opt->design
                << " cannot be combined with --accel\n";
      return kExitBadInput;
    }
    const auto rdesign = opt->design == "bare-mac"     ? gen::RefDesign::bare_mac
                         : opt->design == "decomposed" ? gen::RefDesign::decomposed
                                                       : gen::RefDesign::decomposed_core;
    const auto files = accel ? gen::render_accel(acfg)
                       : ref ? gen::render_ref(cfg, rdesign)
                             : gen::render_core(cfg);
    if (opt->dry_run) {
      for (const auto& f : files) {
        if (f.name == "manifest.json") std::cout << f.content;
      }
      return kExitOk;
    }
    try {
      gen::write_files_atomically(opt->out_dir, files);
    } catch (const Error& e) {
      std::cerr << "normcore gen: error: -o: " << e.what() << "\n";
      return kExitBadInput;
    }
    std::cout << "normcore gen: wrote " << files.size() << " files for "
              << (accel ? acfg.top_name()
                  : ref ? gen::ref_top_name(cfg, rdesign)
                        : cfg.top_name())
              << " to " << opt->out_dir << "\n";
    return kExitOk;
  };
}

}  // namespace normcore::cli
