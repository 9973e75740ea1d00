// normcore: fold batch-norm parameters, generate the RTL, run jobs on a device, build the
// simulation plugins of a generated design.
#include <iostream>

#include "commands.hpp"
#include "normcore/gen/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"normcore: batch-norm inference as one per-channel multiply-add, in hardware"};
  app.set_version_flag("--version", std::string("normcore ") + normcore::gen::kGeneratorVersion);
  app.require_subcommand(1);
  const auto gen = normcore::cli::add_gen(app);
  const auto fold = normcore::cli::add_fold(app);
  const auto run = normcore::cli::add_run(app);
  const auto info = normcore::cli::add_info(app);
  const auto sim_build = normcore::cli::add_sim_build(app);
#if NORMCORE_WITH_IMPORT
  const auto import_model = normcore::cli::add_import(app);
#endif
  if (const int rc = normcore::cli::check_command(app, argc, argv, "normcore"); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return normcore::cli::report_parse_error(app, e, argc, argv, "normcore");
  }
  try {
    if (app.got_subcommand("gen")) return gen();
    if (app.got_subcommand("fold")) return fold();
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("info")) return info();
    if (app.got_subcommand("sim-build")) return sim_build();
#if NORMCORE_WITH_IMPORT
    if (app.got_subcommand("import")) return import_model();
#endif
  } catch (const std::exception& e) {
    std::cerr << "normcore: error: " << e.what() << "\n";
    return normcore::cli::kExitFailure;
  }
  return normcore::cli::kExitBadInput;
}
