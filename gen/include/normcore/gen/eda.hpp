// The flow files of a generated design directory, next to its Verilog: filelists for `-F` and
// for `-f` (paths under a documented environment variable), SDC and XDC clock constraints and a
// FuseSoC CAPI2 core description. All of them come from the IR (the modules, the top's clock
// port) and the config (name, clock_mhz); see docs/architecture.md ("Flow files").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "normcore/gen/config.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen {

// What the flow files describe: the modules (top last), the exact config of the file headers,
// and the other files of the directory a C/C++ program includes (register headers: they go into
// the .core file's `regs` fileset).
struct FlowDesign {
  const CoreConfig& core;
  const std::vector<Module>& modules;
  nlohmann::json config;
  std::vector<std::string> c_headers;    // plain C (file_type cSource)
  std::vector<std::string> cpp_headers;  // C++ (file_type cppSource)
};

// The environment variable the `-f` filelist (filelist_env.f) puts in front of every file:
// "<NAME>_RTL_DIR", the config's name in upper case (NORMCORE_RTL_DIR for the default).
std::string rtl_dir_variable(const CoreConfig& cfg);
// The top's clock port (kClockPort); throws std::logic_error if the top has none.
const Port& clock_port(const Module& top);
// "10.000": the clock period in ns for clock_mhz, three decimals.
std::string clock_period_ns(double clock_mhz);

// filelist.f (names relative to the file: `-F`), filelist_env.f (`$<NAME>_RTL_DIR/<file>`: `-f`
// from any directory), <top>.sdc, <top>.xdc, <top>.core (FuseSoC CAPI2: targets default, lint
// (Verilator -Wall), synth (Vivado with the XDC) and sta (the SDC)). Deterministic.
std::vector<GeneratedFile> flow_files(const FlowDesign& d);
// The manifest's "clock" and "flow_files" entries for the same design.
nlohmann::json flow_manifest(const FlowDesign& d);

}  // namespace normcore::gen
