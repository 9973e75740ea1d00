// The plugin backends: the accelerator's models as in-process devices. The `normcore` CLI
// generates the RTL, so the runtime cannot link the models built from it; each generated device
// instead gets plugins beside its RTL, which this loader finds beside the manifest, dlopen()s and
// checks before opening the device through them. Two kinds share one ABI:
//   sim  <devices>/<name>/libnormcore_sim.so  the Verilated RTL + an AXI memory model
//        (sim/models.cmake, sim/sim_plugin.cpp)
//   tlm  <devices>/<name>/libnormcore_tlm.so  the Verilated RTL as a SystemC/TLM-2.0 module + a
//        TLM memory (sim/tlm.cmake, sim/tlm_plugin.cpp)
//
//   sim:<manifest>[,lib=<plugin path>][,<options the plugin reads: latency, stall, seed, ...>]
//   tlm:<manifest>[,lib=<plugin path>][,<options the plugin reads: latency, mem, fail_job, ...>]
//
// Plugin ABI (both plugins export these with C linkage; keep them in step):
//   int         normcore_sim_abi();     // kPluginAbi
//   const char* normcore_sim_config();  // the manifest "config" it was built for, canonical JSON
//   Device*     normcore_sim_open(const DeviceSpec&, const Manifest&, std::string* error);
//   const char* normcore_sim_kind();    // "tlm"; optional: a plugin without it is a sim plugin
// A plugin of the other kind is refused ("is a tlm plugin, not a sim plugin"). The plugins carry
// private copies of the runtime and of Verilator's library (linked with --exclude-libs), so the
// types above must have the same layout on both sides: bump kPluginAbi whenever DeviceSpec,
// Manifest, Device or DmaBuffer change shape.
#include <dlfcn.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "backends.hpp"

namespace normcore::detail {

namespace {

namespace fs = std::filesystem;

constexpr int kPluginAbi = 2;  // 2: Device::import_host (a virtual added)

// What differs between the plugin kinds: file name and how to build it.
struct PluginKind {
  const char* kind;     // "sim" / "tlm": the backend name and normcore_sim_kind()
  const char* file;     // beside the manifest's rtl/ directory
  const char* missing;  // how to get one, after "no <kind> plugin for <name> (tried ...); "
};

const PluginKind kSimKind{"sim", "libnormcore_sim.so",
                          "build them with `normcore sim-build <manifest's directory>` (any "
                          "gen --accel output), or for the project's devices configure with "
                          "-DNORMCORE_SIM_BACKEND=ON and build the target sim_"};
const PluginKind kSimFstKind{"sim", "libnormcore_sim_fst.so",
                             "trace=*.fst needs the FST build: `normcore sim-build <manifest's "
                             "directory> --fst`, or for the project's devices list it in "
                             "NORMCORE_FST_DEVICES and build the target sim_fst_"};
const PluginKind kTlmKind{"tlm", "libnormcore_tlm.so",
                          "build them with `normcore sim-build <manifest's directory>` (SystemC: "
                          "pkg-config systemc), or for the project's devices configure with "
                          "-DNORMCORE_TLM=ON and build the target tlm_"};

// sim: with trace=<name>.fst uses the FST build of the plugin.
const PluginKind& sim_kind_for(const DeviceSpec& spec) {
  const std::string trace = spec.get("trace", "");
  const bool fst = trace.size() >= 4 && trace.compare(trace.size() - 4, 4, ".fst") == 0;
  return fst ? kSimFstKind : kSimKind;
}

using AbiFn = int (*)();
using ConfigFn = const char* (*)();
using KindFn = const char* (*)();
using OpenFn = Device* (*)(const DeviceSpec&, const Manifest&, std::string*);

std::string display(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}

// Keys whose values differ between two config objects: "lanes 4 vs 3, ...".
std::string config_diff(const nlohmann::json& want, const nlohmann::json& have) {
  std::string out;
  auto add = [&out](const std::string& k, const std::string& a, const std::string& b) {
    out += (out.empty() ? "" : ", ") + k + " " + a + " vs " + b;
  };
  if (!want.is_object() || !have.is_object()) return out;
  for (const auto& [k, v] : want.items()) {
    if (!have.contains(k)) {
      add(k, v.dump(), "(absent)");
    } else if (have.at(k) != v) {
      add(k, v.dump(), have.at(k).dump());
    }
  }
  for (const auto& [k, v] : have.items()) {
    if (!want.contains(k)) add(k, "(absent)", v.dump());
  }
  return out;
}

Manifest load_plugin_manifest(const DeviceSpec& spec, const std::string& who) {
  try {
    return load_manifest(spec.target);
  } catch (const DeviceError&) {
    throw;
  } catch (const Error& e) {
    throw DeviceError(who + ": " + e.what());
  }
}

// Where the plugin is: lib=<path>, else beside the rtl/ directory of the manifest, else in it.
fs::path find_plugin(const DeviceSpec& spec, const PluginKind& kind, const Manifest& manifest,
                     const std::string& who) {
  std::vector<fs::path> tried;
  const std::string lib = spec.get("lib", "");
  if (!lib.empty()) {
    tried.emplace_back(lib);
  } else {
    fs::path dir = fs::path(spec.target).parent_path();
    if (dir.empty()) dir = ".";
    tried.push_back(dir / ".." / kind.file);
    tried.push_back(dir / kind.file);
  }
  for (const auto& p : tried) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::absolute(p, ec).lexically_normal();
  }
  std::string list;
  for (const auto& p : tried) list += (list.empty() ? "" : ", ") + display(p);
  throw DeviceError(who + ": no " + kind.kind + " plugin for " + manifest.config.name + " (tried " +
                    list + "); " + kind.missing + manifest.config.name + ", or give lib=<path>");
}

// The plugin's entry points, its kind checked.
struct PluginApi {
  AbiFn abi = nullptr;
  ConfigFn config = nullptr;
  OpenFn open = nullptr;
};

PluginApi load_plugin(const std::string& where, const PluginKind& kind, const std::string& who) {
  // Never dlclose()d: devices, buffers and their code may outlive anything here.
  void* handle = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    throw DeviceError(who + ": cannot load " + kind.kind + " plugin " + where + ": " +
                      (e != nullptr ? e : "unknown dlopen error"));
  }
  auto sym = [&](const char* name) {
    dlerror();
    void* p = dlsym(handle, name);
    if (p == nullptr) {
      throw DeviceError(who + ": " + where + " is not a normcore " + kind.kind +
                        " plugin (no symbol " + name + ")");
    }
    return p;
  };
  // dlsym returns data pointers; POSIX guarantees they convert to function pointers.
  PluginApi api;
  api.abi = reinterpret_cast<AbiFn>(sym("normcore_sim_abi"));
  api.config = reinterpret_cast<ConfigFn>(sym("normcore_sim_config"));
  api.open = reinterpret_cast<OpenFn>(sym("normcore_sim_open"));
  dlerror();
  const auto kind_fn = reinterpret_cast<KindFn>(dlsym(handle, "normcore_sim_kind"));
  const char* kind_text = kind_fn != nullptr ? kind_fn() : "sim";
  const std::string have_kind = kind_text != nullptr ? kind_text : "(none)";
  if (have_kind != kind.kind) {
    throw DeviceError(who + ": " + where + " is a " + have_kind + " plugin, not a " + kind.kind +
                      " plugin: use " + have_kind + ":<manifest> or give lib=<path> of a " +
                      kind.kind + " plugin (" + kind.file + ")");
  }
  return api;
}

// The plugin's ABI version and the config it was built for against the manifest's.
void check_plugin(const PluginApi& api, const std::string& where, const PluginKind& kind,
                  const Manifest& manifest, const std::string& who) {
  if (const int v = api.abi(); v != kPluginAbi) {
    throw DeviceError(who + ": " + kind.kind + " plugin " + where + " has ABI version " +
                      std::to_string(v) + ", this runtime needs version " +
                      std::to_string(kPluginAbi) + ": rebuild it with this runtime (target " +
                      kind.kind + "_" + manifest.config.name + ")");
  }
  const char* built_text = api.config();
  const std::string built = built_text != nullptr ? built_text : "";
  const auto have = nlohmann::json::parse(built, nullptr, /*allow_exceptions=*/false);
  const auto want = nlohmann::json::parse(manifest.config_json, nullptr, false);
  if (have.is_discarded() || have != want) {
    const std::string diff = config_diff(want, have);
    throw DeviceError(who + ": manifest mismatch: " + manifest.source + " describes config " +
                      manifest.config_json + " but the plugin " + where + " was built for " +
                      (built.empty() ? std::string("(nothing)") : built) +
                      (diff.empty() ? "" : " (differs in: " + diff + ")"));
  }
}

std::unique_ptr<Device> open_plugin_device(const DeviceSpec& spec, const PluginKind& kind) {
  const std::string who = "device '" + spec.text + "'";
  const Manifest manifest = load_plugin_manifest(spec, who);
  const std::string where = find_plugin(spec, kind, manifest, who).string();
  const PluginApi api = load_plugin(where, kind, who);
  check_plugin(api, where, kind, manifest, who);
  std::string error;
  Device* dev = api.open(spec, manifest, &error);
  if (dev == nullptr) {
    throw DeviceError(error.empty() ? who + ": " + kind.kind + " plugin " + where +
                                          " failed to open the device"
                                    : error);
  }
  return std::unique_ptr<Device>(dev);
}

}  // namespace

std::unique_ptr<Device> open_sim_device(const DeviceSpec& spec) {
  return open_plugin_device(spec, sim_kind_for(spec));
}

std::unique_ptr<Device> open_tlm_device(const DeviceSpec& spec) {
  return open_plugin_device(spec, kTlmKind);
}

}  // namespace normcore::detail
