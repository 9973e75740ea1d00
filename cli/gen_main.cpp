// normcore-gen: the generator alone (`normcore-gen gen ...`), used by the build to produce the
// RTL of the tested configurations. It does not link the runtime, so editing the runtime does not
// regenerate (and re-verilate) every configuration.
#include <iostream>

#include "commands.hpp"
#include "normcore/gen/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"normcore-gen: the normcore RTL generator (build tool; users run `normcore gen`)"};
  app.set_version_flag("--version", std::string("normcore ") + normcore::gen::kGeneratorVersion);
  app.require_subcommand(1);
  const auto gen = normcore::cli::add_gen(app);
  if (const int rc = normcore::cli::check_command(app, argc, argv, "normcore-gen"); rc != 0)
    return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return normcore::cli::report_parse_error(app, e, argc, argv, "normcore-gen");
  }
  try {
    return gen();
  } catch (const std::exception& e) {
    std::cerr << "normcore-gen: error: " << e.what() << "\n";
    return normcore::cli::kExitFailure;
  }
}
