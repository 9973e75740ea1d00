// The CLI's own errors (unknown commands, unknown or misspelt options, missing or malformed
// values) in the same form as every other error: "normcore <command>: error: <what>", a
// suggestion for a near miss, exit 2.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/util/names.hpp"

namespace normcore::cli {

namespace {

// The closest of `names` to `word`, or "" if none is close (at most a third of it differs).
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  return util::closest_name(word, names, word.size() / 3 + 2);  // "gne" -> "gen", "--lanez"
}

std::vector<std::string> long_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const auto* opt : sub.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(s->get_name());
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

int check_command(const CLI::App& app, int argc, const char* const* argv, const std::string& prog) {
  const auto names = command_names(app);
  if (argc < 2) {
    std::cerr << prog << ": error: a command is required: " << joined(names) << " (see " << prog
              << " --help)\n";
    return kExitBadInput;
  }
  const std::string first = argv[1];
  if (first.starts_with("-") || std::find(names.begin(), names.end(), first) != names.end()) {
    return kExitOk;
  }
  std::cerr << prog << ": error: unknown command '" << first << "'";
  if (const auto near = closest(first, names); !near.empty()) {
    std::cerr << "; did you mean '" << near << "'?";
  }
  std::cerr << " (commands: " << joined(names) << ")\n";
  return kExitBadInput;
}

int report_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv,
                       const std::string& prog) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  const CLI::App* sub = &app;
  std::string who = prog;
  const auto chosen = app.get_subcommands();
  if (!chosen.empty()) {
    sub = chosen.front();
    who += " " + sub->get_name();
  }
  std::cerr << who << ": error: " << e.what();
  // An unknown option: the nearest one of the command.
  const auto known = long_names(*sub);
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (const auto near = closest(name, known); !near.empty()) {
      std::cerr << "; did you mean " << near << " instead of " << name << "?";
      break;
    }
  }
  std::cerr << "\nRun '" << who << " --help' for the options.\n";
  return kExitBadInput;
}

void check_max_error(bool given, double limit, long double worst, const std::string& where) {
  if (!given || worst <= static_cast<long double>(limit)) return;
  char text[160];
  std::snprintf(text, sizeof text,
                "--max-error: the worst-case error %.6Lg LSB (%s) exceeds the limit %g LSB", worst,
                where.c_str(), limit);
  throw Error(text);
}

}  // namespace normcore::cli
