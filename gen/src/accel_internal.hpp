// Pieces of the accelerator shared by its builders (accel_builder.cpp, accel_ctrl.cpp,
// accel_top.cpp); not part of the library's interface.
#pragma once

#include <algorithm>
#include <string>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/ir.hpp"
#include "normcore/gen/regs.hpp"

namespace normcore::gen::accel_detail {

struct AccelSizes {
  int tw;  // total elements
  int wb;  // word counts
  int ew;  // address arithmetic (end addresses, compares)
};

inline AccelSizes accel_sizes(const AccelConfig& c) {
  AccelSizes s{};
  s.tw = c.core.chan_bits() + c.core.inner_bits + 32;
  s.wb = s.tw + 3;
  s.ew = std::max(64, s.tw + 6) + 1;
  return s;
}

inline int rd_depth(const AccelConfig& c) {
  return std::max(2, c.outstanding * c.max_burst);
}
inline int wr_depth(const AccelConfig& c) {
  return std::max(2, 2 * c.max_burst);
}

// <n>_ctrl: job control (snapshot, sizing, validation, the job FSM, performance counters).
Module build_ctrl(const AccelConfig& c, const std::string& name);
// <n>_top: the register block, job control, DMA engines, FIFOs, gearboxes and the core.
Module build_top(const AccelConfig& c, const Module& regs);

}  // namespace normcore::gen::accel_detail
