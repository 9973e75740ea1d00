// normcore gen: emit the streaming core's (or the accelerator's, or a PPA reference design's)
// Verilog, manifest and filelist for one configuration. The options come from the one config
// schema (normcore/config.hpp): names, ranges and help.
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/config.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/formal.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::cli {

namespace {

struct GenOptions {
  AccelConfig acfg;
  bool accel = false;
  std::string config_file;
  std::string out_dir = "normcore_rtl";
  std::map<std::string, bool> flags;         // boolean schema fields: flag given (by JSON key)
  std::map<std::string, std::string> types;  // element-type fields (in_type, out_type) as given
  bool dry_run = false, force = false, manifest_only = false, formal = false;
  std::string design = "core";
};

// Extra help after the schema's line for the options that need it.
const char* help_tail(std::string_view key) {
  if (key == "pipeline") {
    return ": 4 adds lane input registers, 5 registers the >>> R shift, 6 the rounded quotient, "
           "7 splits the shifter, 8 registers the saturated quotient, 9 the product before the add "
           "(default: by --target)";
  }
  if (key == "target") {
    return ": picks the default --pipeline (3, 8, 9, 4, 5) and target attributes (xilinx: "
           "ram_style, use_dsp)";
  }
  return "";
}

// One option per schema field; a boolean field is a flag that flips its default (--in-unsigned
// clears in_signed, --lanes-divide-channels sets lanes_divide_channels).
void add_schema_options(CLI::App* sub, GenOptions& o) {
  for (const auto& f : config_schema()) {
    const std::string help = f.help_text() + help_tail(f.key);
    if (f.int_ref != nullptr) {
      sub->add_option(f.option, *f.int_ref(o.acfg), help)->capture_default_str();
      // The deprecated spelling: hidden from --help, same value, a warning (check_aliases).
      if (f.old_option != nullptr) sub->add_option(f.old_option, *f.int_ref(o.acfg))->group("");
    }
    if (f.str_ref != nullptr)
      sub->add_option(f.option, *f.str_ref(o.acfg), help)->capture_default_str();
    if (f.num_ref != nullptr) {
      sub->add_option(f.option, *f.num_ref(o.acfg), help)
          ->default_str(format_number(*f.num_ref(o.acfg)));
    }
    if (f.bool_ref != nullptr) sub->add_flag(f.option, o.flags[f.key], help);
    if (f.type_ref != nullptr) {
      o.types[f.key] = "int";
      sub->add_option(f.option, o.types[f.key], help)->capture_default_str();
    }
  }
}

// The element-type options given (checked against their choices), then the widths a float type
// fixes unless given; "" or the error.
std::string apply_types(const CLI::App* sub, const GenOptions& o, AccelConfig& acfg) {
  for (const auto& f : config_schema()) {
    if (f.type_ref == nullptr || sub->count(f.option) == 0) continue;
    const std::string& v = o.types.at(f.key);
    if (auto msg = f.check(v, FieldNames::cli); !msg.empty()) return msg;
    *f.type_ref(acfg) = parse_num_type(v);
  }
  CoreConfig widths = acfg.core;
  widths.apply_float_widths();
  ArithSpec& a = acfg.core.arith;
  if (sub->count("--in-bits") == 0) a.xw = widths.arith.xw;
  if (sub->count("--out-bits") == 0) a.yw = widths.arith.yw;
  if (sub->count("--scale-bits") == 0) a.sw = widths.arith.sw;
  if (sub->count("--offset-bits") == 0) a.bw = widths.arith.bw;
  return {};
}

// Float lanes (issue 18): the streaming core and the accelerator are generated for x fp16 / bf16
// and y fp16 / bf16 / fp32 or an 8 / 16-bit integer (gen/src/core_flane.cpp);
// other float configs are refused, except
// that --accel --manifest-only writes the accelerator's manifest.json (registers, CAPS types)
// alone for the ref: device. "" or the error.
std::string check_float_gen(const GenOptions& o, const CoreConfig& cfg, bool accel) {
  if (!cfg.is_float()) {
    return o.manifest_only ? "--manifest-only: only for a float config (in_type / out_type)"
                           : std::string{};
  }
  if (o.manifest_only && accel && o.design == "core") return {};
  const auto& a = cfg.arith;
  if (!o.manifest_only && o.design == "core" && gen::float_lane_supported(a)) {
    return {};
  }
  return "--in-type/--out-type: float lanes are generated for the core and the accelerator "
         "(not --design), x fp16 / bf16 and y fp16 / bf16 / fp32 or an 8 / 16-bit integer: "
         "issue 18 (in_type " +
         std::string(to_string(a.x_type)) + ", out_type " + std::string(to_string(a.y_type)) +
         "); --accel --manifest-only writes the manifest for the ref: device";
}

// Whether field f's option was given (its deprecated spelling too, with a warning on stderr;
// both at once is an error, "" = fine).
bool option_given(const CLI::App* sub, const ConfigField& f) {
  return sub->count(f.option) > 0 || (f.old_option != nullptr && sub->count(f.old_option) > 0);
}

std::string check_aliases(const CLI::App* sub) {
  for (const auto& f : config_schema()) {
    if (f.old_option == nullptr || sub->count(f.old_option) == 0) continue;
    if (sub->count(f.option) > 0) {
      return std::string(f.old_option) + " is the deprecated spelling of " + f.option +
             ": give only " + f.option;
    }
    std::cerr << "normcore gen: warning: " << f.old_option << " is deprecated, use " << f.option
              << "\n";
  }
  return {};
}

// Sets each boolean field whose flag was given to the opposite of its default.
void apply_flags(const GenOptions& o, AccelConfig& acfg) {
  AccelConfig defaults;
  for (const auto& f : config_schema()) {
    if (f.bool_ref != nullptr && o.flags.at(f.key)) *f.bool_ref(acfg) = !*f.bool_ref(defaults);
  }
}

void add_other_options(CLI::App* sub, GenOptions& o) {
  sub->add_option("--config", o.config_file,
                  "Core config JSON (keys as in manifest.json \"config\"); options given on the "
                  "command line override it");
  sub->add_option("-o,--out-dir", o.out_dir,
                  "Output directory (replaced atomically; an existing directory only if it is "
                  "empty or an earlier output, with a manifest.json, or with --force)")
      ->capture_default_str();
  sub->add_flag("--force", o.force,
                "Replace the output directory even if it is not empty and not an earlier output");
  sub->add_flag("--dry-run", o.dry_run, "Validate and print the manifest; write nothing");
  sub->add_flag("--manifest-only", o.manifest_only,
                "With --accel and a float config (--in-type / --out-type): write manifest.json "
                "alone (no RTL), for the ref: device");
  sub->add_flag("--formal", o.formal,
                "Also write formal/: the lane's behavioural reference of the contract and its "
                "proof harness (verification only, not in the filelists; scripts/prove.sh)");
  sub->add_flag("--accel", o.accel,
                "Generate the memory-mapped accelerator (<name>_top: AXI4-Lite registers, AXI4 "
                "DMA) around the core");
  sub->add_option("--design", o.design,
                  "What to generate: core (the product), or a PPA reference design sized like "
                  "the core: bare-mac (one registered a*b+c per lane), decomposed (framework-style "
                  "(x-mean)*inv_std*gamma+beta stages), decomposed-core (those stages inside the "
                  "whole core: same table, tracking, flow control, round and clamp), "
                  "hard-mac-ice40 / hard-mac-ecp5 / hard-mac-xilinx (one DSP primitive per lane "
                  "with its own registers: SB_MAC16, MULT18X18D, DSP48E1); see docs/ppa.md")
      ->check(CLI::IsMember({"core", "bare-mac", "decomposed", "decomposed-core", "hard-mac-ice40",
                             "hard-mac-ecp5", "hard-mac-xilinx"}))
      ->capture_default_str();
}

// --config FILE (a config object or a manifest), then the options given on the command line on
// top. Returns "" or the error.
std::string read_config(const CLI::App* sub, const GenOptions& o, AccelConfig& acfg, bool& accel) {
  std::ifstream is(o.config_file);
  if (!is) return "--config: cannot open " + o.config_file;
  try {
    nlohmann::json j = nlohmann::json::parse(is);
    if (j.contains("kind") && j["kind"] == "accelerator") accel = true;
    if (j.contains("config") && j["config"].is_object()) j = j["config"];  // a manifest
    acfg = AccelConfig::from_json(j);
    if (j.contains("bus_bits")) accel = true;
  } catch (const std::exception& e) {
    return "--config " + o.config_file + ": " + e.what();
  }
  AccelConfig given = o.acfg;
  for (const auto& f : config_schema()) {
    if (!option_given(sub, f)) continue;
    if (f.int_ref != nullptr) *f.int_ref(acfg) = *f.int_ref(given);
    if (f.str_ref != nullptr) *f.str_ref(acfg) = *f.str_ref(given);
    if (f.num_ref != nullptr) *f.num_ref(acfg) = *f.num_ref(given);
  }
  return {};
}

// --formal: the formal/ files and the manifest's "formal" entry (the core only).
std::string add_formal(const CoreConfig& cfg, bool not_core,
                       std::vector<gen::GeneratedFile>& files) {
  if (not_core) return "--formal: only for the core (not --accel or --design)";
  for (auto& f : gen::render_formal(cfg)) files.push_back(std::move(f));
  for (auto& f : files) {
    if (f.name != "manifest.json") continue;
    auto man = nlohmann::json::parse(f.content);
    man["formal"] = gen::formal_manifest(cfg);
    f.content = man.dump(2) + "\n";
  }
  return {};
}

int generate(const CLI::App* sub, const GenOptions& o) {
  AccelConfig acfg = o.acfg;
  CoreConfig& cfg = acfg.core;
  bool accel = o.accel;
  if (auto err = check_aliases(sub); !err.empty()) {
    std::cerr << "normcore gen: error: " << err << "\n";
    return kExitBadInput;
  }
  if (!o.config_file.empty()) {
    if (auto err = read_config(sub, o, acfg, accel); !err.empty()) {
      std::cerr << "normcore gen: error: " << err << "\n";
      return kExitBadInput;
    }
  }
  if (sub->count("--target") && !sub->count("--pipeline")) {
    if (const int p = CoreConfig::default_pipeline(cfg.target); p != 0) cfg.pipeline = p;
  }
  if (sub->count("--target") && !sub->count("--table"))
    cfg.table = CoreConfig::default_table(cfg.target);
  apply_flags(o, acfg);
  if (acfg.ring && !accel) {
    std::cerr << "normcore gen: error: --ring: the descriptor ring needs --accel\n";
    return kExitBadInput;
  }
  if (auto err = apply_types(sub, o, acfg); !err.empty()) {
    std::cerr << "normcore gen: error: " << err << "\n";
    return kExitBadInput;
  }
  if (const auto err = accel ? acfg.check() : cfg.check(); !err.empty()) {
    std::cerr << "normcore gen: error: " << err << "\n";
    return kExitBadInput;
  }
  if (auto err = check_float_gen(o, cfg, accel); !err.empty()) {
    std::cerr << "normcore gen: error: " << err << "\n";
    return kExitBadInput;
  }
  const bool ref = o.design != "core";
  if (ref && accel) {
    std::cerr << "normcore gen: error: --design: " << o.design
              << " cannot be combined with --accel\n";
    return kExitBadInput;
  }
  const auto rdesign = o.design == "bare-mac"          ? gen::RefDesign::bare_mac
                       : o.design == "decomposed"      ? gen::RefDesign::decomposed
                       : o.design == "hard-mac-ice40"  ? gen::RefDesign::hard_mac_ice40
                       : o.design == "hard-mac-ecp5"   ? gen::RefDesign::hard_mac_ecp5
                       : o.design == "hard-mac-xilinx" ? gen::RefDesign::hard_mac_xilinx
                                                       : gen::RefDesign::decomposed_core;
  auto files = accel ? gen::render_accel(acfg)
               : ref ? gen::render_ref(cfg, rdesign)
                     : gen::render_core(cfg);
  if (auto err = o.formal ? add_formal(cfg, accel || ref, files) : std::string{}; !err.empty()) {
    std::cerr << "normcore gen: error: " << err << "\n";
    return kExitBadInput;
  }
  if (o.manifest_only) {
    std::erase_if(files, [](const auto& f) { return f.name != "manifest.json"; });
  }
  if (o.dry_run) {
    for (const auto& f : files) {
      if (f.name == "manifest.json") std::cout << f.content;
    }
    return kExitOk;
  }
  try {
    gen::write_files_atomically(o.out_dir, files, o.force);
  } catch (const Error& e) {
    std::cerr << "normcore gen: error: -o: " << e.what() << "\n";
    return kExitBadInput;
  }
  const std::string top = accel ? acfg.top_name()
                          : ref ? gen::ref_top_name(cfg, rdesign)
                                : cfg.top_name();
  std::cout << "normcore gen: wrote " << files.size() << " files for " << top << " to " << o.out_dir
            << "\n";
  return kExitOk;
}

}  // namespace

Action add_gen(CLI::App& app) {
  auto opt = std::make_shared<GenOptions>();
  auto* sub = app.add_subcommand("gen", "Generate the streaming BN-inference core (Verilog)");
  add_other_options(sub, *opt);
  add_schema_options(sub, *opt);
  return [opt, sub]() -> int { return generate(sub, *opt); };
}

}  // namespace normcore::cli
