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

namespace normcore::sim {

inline constexpr int kFixedShift = NC_FIXED_SHIFT, kFixedRound = NC_FIXED_ROUND;
inline constexpr int kFixedLayout = NC_FIXED_LAYOUT;
inline constexpr bool kLanesDivideChannels = NC_LDC != 0;
// The direct parameter table (CoreConfig::table_direct(): NHWC, C a multiple of a power-of-two
// LANES > 1): no wrap-around copies, so a load is C table writes instead of C + L - 1.
constexpr bool table_direct(int lanes) {
  return kLanesDivideChannels && kFixedLayout == static_cast<int>(Layout::nhwc) && lanes > 1 &&
         (lanes & (lanes - 1)) == 0;
}

#ifndef NC_TABLE_COPIES
#define NC_TABLE_COPIES 0
#endif
// The per-lane table copies (CoreConfig::table_copies(): --table copies, more than one lane, not
// the direct table): a load is max(C, L - 1) table writes (copies only at C .. L - 2).
constexpr bool table_copies(int lanes) {
  return NC_TABLE_COPIES != 0 && lanes > 1 && !table_direct(lanes);
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
