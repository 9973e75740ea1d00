// Sub-commands of the `normcore` CLI. Each registers its options on the app and returns the
// action to run when that sub-command was chosen. Actions return the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace normcore::cli {

using Action = std::function<int()>;

// Exit codes: 0 success, 1 runtime failure, 2 bad input (options, files, configs).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

Action add_gen(CLI::App& app);
Action add_fold(CLI::App& app);
Action add_run(CLI::App& app);
Action add_info(CLI::App& app);
Action add_import(CLI::App& app);

}  // namespace normcore::cli
