// Sub-commands of the `normcore` CLI. Each registers its options on the app and returns the
// action to run when that sub-command was chosen. Actions return the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace normcore::cli {

using Action = std::function<int()>;

// Exit codes (README "Exit codes"): 0 success, 2 any bad input (options, values, files and the
// values inside them, output paths), 1 a device or tool failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

Action add_gen(CLI::App& app);
Action add_fold(CLI::App& app);
Action add_run(CLI::App& app);
Action add_info(CLI::App& app);
Action add_import(CLI::App& app);
Action add_sim_build(CLI::App& app);

// --max-error LSB of fold and import: throws normcore::Error (exit 2) when `given` and the
// fold's worst-case error `worst` (at `where`) exceeds `limit` output LSBs.
void check_max_error(bool given, double limit, long double worst, const std::string& where);

// argv[1] must name a command of `app`: else prints "<prog>: error: unknown command 'x'; did you
// mean 'y'?" (or that a command is required) and returns 2; returns 0 when it does.
int check_command(const CLI::App& app, int argc, const char* const* argv, const std::string& prog);
// Prints a CLI11 parse error as "<prog> <command>: error: ..." with the nearest option for a
// misspelt one; returns the exit code (0 for --help / --version, else 2).
int report_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv,
                       const std::string& prog);

}  // namespace normcore::cli
