// Splitting a run into device jobs: tiles of a host tensor (channel groups, HW pieces, images)
// staged and converted through the staging buffers, or one zero-copy job on device buffers.
#pragma once

#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "driver_core.hpp"

namespace normcore::detail {

// Images [n0, n0 + nn), channel group g, positions [p0, p0 + pw) of the HW plane.
struct Tile {
  std::uint64_t n0, nn, g, p0, pw;
};

// The tiles of shape `s` for channel groups of `group_channels`, within the device's INNER and
// OUTER limits and DriverOptions::max_tile_elements, in the order they run.
// direct: tiles run in place on the host tensors (no staging budget, only the device's limits).
std::vector<Tile> plan_tiles(const DriverCore& k, const JobShape& s, std::uint64_t group_channels,
                             bool direct = false);

// Executes run `r` (host tensors tiled, or zero-copy buffers); takes dev_mu per device job and
// reports progress. Throws DeviceError on failure.
void run_job(DriverCore& k, RunShared& r);

// Executes runs in order as one batch: on a device with a descriptor ring, every run's tiles (or
// its zero-copy job) go to the ring together, in groups of at most max_tile_elements staged
// elements (driver_ring.cpp); without a ring, run_job for each. errs[i]: run i's failure.
void run_batch(DriverCore& k, std::span<RunShared* const> runs,
               std::vector<std::exception_ptr>& errs);

}  // namespace normcore::detail
