// normcore sim-build DIR: the sim: and tlm: plugins of any `normcore gen --accel -o DIR` output,
// built beside DIR/manifest.json so that `normcore run --device sim:DIR/manifest.json` (and
// tlm:) runs on the user's own design. It configures and builds sim/user/CMakeLists.txt of the
// normcore source tree (the same CMake functions and Verilator flags the project's devices use)
// into DIR/sim-build (or --build-dir) with cmake.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/manifest.hpp"

#ifndef NORMCORE_SOURCE_DIR
#define NORMCORE_SOURCE_DIR ""
#endif
#ifndef NORMCORE_CMAKE_COMMAND
#define NORMCORE_CMAKE_COMMAND "cmake"
#endif

namespace normcore::cli {

namespace {
namespace fs = std::filesystem;

struct SimBuildCli {
  std::string dir, build_dir, source_dir, cmake = NORMCORE_CMAKE_COMMAND;
  bool fst = false, no_sim = false, no_tlm = false;
  int jobs = 2;
};

fs::path absolute_dir(const std::string& p) {
  fs::path a = fs::absolute(fs::path(p)).lexically_normal();
  if (a.filename().empty()) a = a.parent_path();  // "dir/" -> "dir"
  return a;
}

// The source tree: --source-dir, else $NORMCORE_SOURCE_DIR, else the tree this binary was built
// from. It must hold sim/user/CMakeLists.txt.
fs::path source_tree(const SimBuildCli& o) {
  std::string src = o.source_dir;
  const char* from = "--source-dir";
  if (src.empty()) {
    const char* env = std::getenv("NORMCORE_SOURCE_DIR");
    src = env != nullptr ? env : "";
    from = "NORMCORE_SOURCE_DIR";
  }
  if (src.empty()) {
    src = NORMCORE_SOURCE_DIR;
    from = "the source tree normcore was built from";
  }
  const fs::path p = absolute_dir(src);
  std::error_code ec;
  if (src.empty() || !fs::is_regular_file(p / "sim" / "user" / "CMakeLists.txt", ec)) {
    throw Error(std::string(from) + ": '" + src +
                "' is not a normcore source tree (no sim/user/CMakeLists.txt); give "
                "--source-dir <normcore checkout>");
  }
  return p;
}

// DIR must be a gen --accel output: a manifest the runtime accepts and the filelist.
Manifest check_design(const fs::path& dir, const std::string& given) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("DIR: '" + given + "' is not a directory");
  if (!fs::is_regular_file(dir / "manifest.json", ec)) {
    throw Error("DIR: '" + given +
                "' has no manifest.json (make one with normcore gen --accel -o " + given + ")");
  }
  Manifest m = load_manifest(dir / "manifest.json");  // Error naming the key
  if (!fs::is_regular_file(dir / "filelist.f", ec)) {
    throw Error("DIR: '" + given + "' has no filelist.f (not a complete normcore gen output)");
  }
  return m;
}

// Runs argv; returns its exit status (127 when it could not start).
int run_command(const std::vector<std::string>& args) {
  std::cout << "+";
  for (const auto& a : args) std::cout << " " << a;
  std::cout << std::endl;
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

bool on_path(const std::string& prog) {
  const char* path = std::getenv("PATH");
  std::string rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string d = rest.substr(0, colon);
    std::error_code ec;
    if (!d.empty() && fs::exists(fs::path(d) / prog, ec)) return true;
    if (colon == std::string::npos) break;
    rest = rest.substr(colon + 1);
  }
  return false;
}

int sim_build(const SimBuildCli& o) {
  if (o.jobs < 1) throw Error("--jobs: " + std::to_string(o.jobs) + " must be >= 1");
  if (o.no_sim && o.no_tlm && !o.fst) throw Error("--no-sim --no-tlm: nothing to build");
  const fs::path dir = absolute_dir(o.dir);
  const Manifest m = check_design(dir, o.dir);
  const fs::path src = source_tree(o);
  const fs::path build = o.build_dir.empty() ? dir / "sim-build" : absolute_dir(o.build_dir);
  const auto onoff = [](bool b) { return std::string(b ? "ON" : "OFF"); };
  std::vector<std::string> configure{o.cmake,
                                     "-S",
                                     (src / "sim" / "user").string(),
                                     "-B",
                                     build.string(),
                                     "-DCMAKE_BUILD_TYPE=Release",
                                     "-DNORMCORE_DESIGN_DIR=" + dir.string(),
                                     "-DNORMCORE_DESIGN_NAME=" + m.config.name,
                                     "-DNORMCORE_USER_SIM=" + onoff(!o.no_sim),
                                     "-DNORMCORE_USER_FST=" + onoff(o.fst),
                                     "-DNORMCORE_USER_TLM=" + onoff(!o.no_tlm)};
  std::error_code ec;
  if (!fs::exists(build / "CMakeCache.txt", ec) && on_path("ninja")) {
    configure.insert(configure.begin() + 1, {"-G", "Ninja"});
  }
  if (const int rc = run_command(configure); rc != 0) {
    std::cerr << "normcore sim-build: error: cmake configure failed (exit " << rc << ")\n";
    return kExitFailure;
  }
  if (const int rc =
          run_command({o.cmake, "--build", build.string(), "-j", std::to_string(o.jobs)});
      rc != 0) {
    std::cerr << "normcore sim-build: error: the build failed (exit " << rc << ")\n";
    return kExitFailure;
  }
  const std::string man = (dir / "manifest.json").string();
  std::cout << "normcore sim-build: " << m.config.name << " in " << dir.string() << ":";
  if (!o.no_sim) std::cout << " libnormcore_sim.so";
  if (o.fst) std::cout << " libnormcore_sim_fst.so";
  if (!o.no_tlm) std::cout << " libnormcore_tlm.so";
  std::cout << "\n  normcore run --device " << (o.no_sim ? "tlm:" : "sim:") << man << " ...\n";
  return kExitOk;
}

}  // namespace

Action add_sim_build(CLI::App& app) {
  auto o = std::make_shared<SimBuildCli>();
  auto* sub = app.add_subcommand(
      "sim-build",
      "Build the sim: and tlm: plugins of a `normcore gen --accel -o DIR` output beside its "
      "manifest (then: normcore run --device sim:DIR/manifest.json)");
  sub->add_option("DIR", o->dir, "Directory of the generated accelerator (manifest.json)")
      ->required();
  sub->add_option("--build-dir", o->build_dir, "CMake build tree (default DIR/sim-build)");
  sub->add_option("--source-dir", o->source_dir,
                  "normcore source tree (default $NORMCORE_SOURCE_DIR, else the one this binary "
                  "was built from)");
  sub->add_flag("--fst", o->fst, "Also build libnormcore_sim_fst.so (trace=<file>.fst)");
  sub->add_flag("--no-sim", o->no_sim, "Skip the sim: plugin (Verilator, VCD traces)");
  sub->add_flag("--no-tlm", o->no_tlm, "Skip the tlm: plugin (SystemC/TLM-2.0)");
  sub->add_option("-j,--jobs", o->jobs, "Parallel build jobs")->capture_default_str();
  sub->add_option("--cmake", o->cmake, "The cmake program")->capture_default_str();
  return [o]() -> int {
    try {
      return sim_build(*o);
    } catch (const Error& e) {
      std::cerr << "normcore sim-build: error: " << e.what() << "\n";
      return kExitBadInput;
    }
  };
}

}  // namespace normcore::cli
