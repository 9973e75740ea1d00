// normcore gen: emit the streaming core's Verilog, manifest and filelist for one configuration.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::cli {

namespace {
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
  sub->add_option("--name", c.name, "Module name prefix")->capture_default_str();
  sub->add_option("--lanes", c.lanes, "Elements per beat (1..64)")->capture_default_str();
  sub->add_option("--in-bits", c.arith.xw, "Input element bits XW (2..32)")->capture_default_str();
  sub->add_flag("--in-unsigned", opt->in_unsigned, "Input elements are unsigned");
  sub->add_option("--out-bits", c.arith.yw, "Output element bits YW (2..32)")
      ->capture_default_str();
  sub->add_flag("--out-unsigned", opt->out_unsigned, "Output elements are unsigned");
  sub->add_option("--scale-bits", c.arith.sw, "Scale bits SW (2..32, signed)")
      ->capture_default_str();
  sub->add_option("--shift-bits", c.arith.bw, "Shift (bias) bits BW (2..62, signed)")
      ->capture_default_str();
  sub->add_option("--max-channels", c.max_channels, "Parameter table size (1..65536)")
      ->capture_default_str();
  sub->add_option("--inner-bits", c.inner_bits, "Width of the HW (inner size) input (1..32)")
      ->capture_default_str();
  sub->add_option("--pipeline", c.pipeline,
                  "Register stages before the output buffer (3..8): 4 adds lane input "
                  "registers, 5 registers the >>> R shift, 6 the rounded quotient, 7 splits the "
                  "shifter, 8 registers the saturated quotient (default: by --target)")
      ->capture_default_str();
  sub->add_option("--target", c.target,
                  "Mapping target: generic, ice40, xilinx, asic. Picks the default --pipeline "
                  "(3, 8, 4, 5) and target attributes (xilinx: ram_style, use_dsp)")
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
  sub->add_option("--bus-bits", a.bus_bits, "Accelerator: AXI4 data width (32..512)")
      ->capture_default_str();
  sub->add_option("--addr-bits", a.addr_bits, "Accelerator: AXI4 address width (32..64)")
      ->capture_default_str();
  sub->add_option("--id-bits", a.id_bits, "Accelerator: AXI4 ID width (1..8)")
      ->capture_default_str();
  sub->add_option("--max-burst", a.max_burst, "Accelerator: beats per burst (power of two, <= 256)")
      ->capture_default_str();
  sub->add_option("--outstanding", a.outstanding, "Accelerator: read bursts in flight (1..16)")
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
      // Command-line options override the file.
      const auto& o = opt->cfg;
      if (sub->count("--name")) cfg.name = o.name;
      if (sub->count("--lanes")) cfg.lanes = o.lanes;
      if (sub->count("--in-bits")) cfg.arith.xw = o.arith.xw;
      if (sub->count("--out-bits")) cfg.arith.yw = o.arith.yw;
      if (sub->count("--scale-bits")) cfg.arith.sw = o.arith.sw;
      if (sub->count("--shift-bits")) cfg.arith.bw = o.arith.bw;
      if (sub->count("--max-channels")) cfg.max_channels = o.max_channels;
      if (sub->count("--inner-bits")) cfg.inner_bits = o.inner_bits;
      if (sub->count("--pipeline")) cfg.pipeline = o.pipeline;
      if (sub->count("--target")) cfg.target = o.target;
      if (sub->count("--bus-bits")) acfg.bus_bits = opt->acfg.bus_bits;
      if (sub->count("--addr-bits")) acfg.addr_bits = opt->acfg.addr_bits;
      if (sub->count("--id-bits")) acfg.id_bits = opt->acfg.id_bits;
      if (sub->count("--max-burst")) acfg.max_burst = opt->acfg.max_burst;
      if (sub->count("--outstanding")) acfg.outstanding = opt->acfg.outstanding;
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
    gen::write_files_atomically(opt->out_dir, files);
    std::cout << "normcore gen: wrote " << files.size() << " files for "
              << (accel ? acfg.top_name()
                  : ref ? gen::ref_top_name(cfg, rdesign)
                        : cfg.top_name())
              << " to " << opt->out_dir << "\n";
    return kExitOk;
  };
}

}  // namespace normcore::cli
