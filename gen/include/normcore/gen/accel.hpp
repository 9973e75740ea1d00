// Configuration of the memory-mapped accelerator: the streaming core plus an AXI4-Lite register
// block and an AXI4 DMA master.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "normcore/gen/config.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen {

using normcore::AccelConfig;

// Error codes in ERR_CODE.
enum class AccelError : int {
  none = 0,
  bad_channels = 1,  // C = 0 or C > MAX_CHANNELS
  zero_length = 2,   // HW = 0 or N = 0
  bad_shift = 3,     // R > accumulator width
  misaligned = 4,    // SRC, DST or PARAM not aligned to the bus width
  window = 5,        // a region outside [WIN_BASE, WIN_LAST] or the address width
  overlap = 6,       // DST overlaps SRC (in place is allowed when DST == SRC and YW <= XW)
  read = 7,          // SLVERR/DECERR on a read (ERR_ADDR: the bus word)
  write = 8,         // SLVERR/DECERR on a write (ERR_ADDR: the burst)
  core = 9,          // the core refused its configuration (not expected after validation)
  unsupported =
      10,  // a specialised core: R, rounding, layout or C % LANES not what it is built for
};

// Every ERR_CODE value with its name (manifest "error_codes") and meaning (register docs), in
// code order.
struct AccelErrorInfo {
  const char* name;
  AccelError code;
  const char* meaning;
};
std::span<const AccelErrorInfo> accel_error_codes();

// All modules of the accelerator, the top (cfg.top_name()) last.
std::vector<Module> build_accel(const AccelConfig& cfg);
// Verilog, <name>_regs.h (C), <name>_regs.hpp (C++), <name>_regs.rdl, <name>_registers.md, the
// flow files (eda.hpp: filelists, SDC, XDC, FuseSoC .core) and manifest.json.
std::vector<GeneratedFile> render_accel(const AccelConfig& cfg);

}  // namespace normcore::gen
