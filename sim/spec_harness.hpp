// What the co-simulation harnesses (test_core.cpp, test_accel.cpp) know of a specialised design
// (normcore gen --fixed-shift/--fixed-rounding/--fixed-layout/--lanes-divide-channels, passed by
// sim/cosim.cmake as NC_FIXED_* / NC_LDC): -1 / 0 when the setting is per job. Random jobs are
// made to fit with conform_*; the jobs the design must reject are built apart.
#pragma once

#include <cstdint>

#include "normcore/contract.hpp"

#ifndef NC_FIXED_SHIFT
#define NC_FIXED_SHIFT -1
#endif
#ifndef NC_FIXED_ROUND
#define NC_FIXED_ROUND -1
#endif
#ifndef NC_FIXED_LAYOUT
#define NC_FIXED_LAYOUT -1
#endif
#ifndef NC_LDC
#define NC_LDC 0
#endif
// A float design (contract v2): NC_XT / NC_YT are NumType codes, NC_FLUSH the flush flag
// (IN_TYPE / OUT_TYPE / FLUSH of sim/cosim.cmake's normcore_spec_args).
#ifndef NC_XT
#define NC_XT 0
#define NC_YT 0
#define NC_FLUSH 0
#endif

namespace normcore::sim {

inline constexpr int kFixedShift = NC_FIXED_SHIFT, kFixedRound = NC_FIXED_ROUND;
inline constexpr int kFixedLayout = NC_FIXED_LAYOUT;
inline constexpr bool kLanesDivideChannels = NC_LDC != 0;
// The design's arithmetic: the widths given, the element types and flush flag built in.
inline ArithSpec design_arith(int xw, bool x_signed, int sw, int bw, int yw, bool y_signed) {
  ArithSpec a{xw, x_signed, sw, bw, yw, y_signed};
  a.x_type = static_cast<NumType>(NC_XT);
  a.y_type = static_cast<NumType>(NC_YT);
  a.flush_subnormals = NC_FLUSH != 0;
  return a;
}
// C rounded up to a multiple of the lanes when the design needs one (within the table).
inline std::int64_t conform_channels(std::int64_t c, std::int64_t lanes,
                                     std::int64_t max_channels) {
  if (!kLanesDivideChannels) return c;
  c = (c + lanes - 1) / lanes * lanes;
  return c > max_channels ? max_channels / lanes * lanes : c;
}

// A job the design can run: its fixed settings replace the random ones (CoreJob or AccelJob).
template <class Job>
void conform_settings(Job& j) {
  if (kFixedShift >= 0) j.settings.shift = kFixedShift;
  if (kFixedRound >= 0) j.settings.rounding = static_cast<Rounding>(kFixedRound);
  if (kFixedLayout >= 0) j.layout = static_cast<Layout>(kFixedLayout);
}

}  // namespace normcore::sim
