// Splitting runs into device jobs: host tensors in tiles that fit the device (channel groups,
// pieces of HW within INNER, images within OUTER and the staging budget) gathered into and
// scattered out of the staging buffers; zero-copy runs as one job on the caller's buffers.
#include "detail/driver_tiling.hpp"

#include <algorithm>

#include "detail/driver_convert.hpp"
#include "detail/driver_util.hpp"

namespace normcore::detail {

std::vector<Tile> plan_tiles(const DriverCore& k, const JobShape& s, std::uint64_t group_channels) {
  const DeviceConfig& c = k.cfg();
  const std::uint64_t budget = k.opt.max_tile_elements;
  const std::uint64_t cg = group_channels;
  const std::uint64_t groups = ceil_div(s.c, cg);
  std::uint64_t pw = s.hw;
  if (s.layout == Layout::nchw) pw = std::min(pw, c.max_inner());
  pw = std::min(pw, std::max<std::uint64_t>(1, budget / cg));
  if (s.layout == Layout::nhwc) pw = std::min(pw, c.max_outer());
  std::uint64_t nn = 1;
  if (pw == s.hw) {
    nn = std::clamp<std::uint64_t>(budget / (cg * s.hw), 1, s.n);
    if (s.layout == Layout::nchw) {
      nn = std::min(nn, c.max_outer());
    } else {
      nn = std::min(nn, std::max<std::uint64_t>(1, c.max_outer() / s.hw));
    }
  }
  std::vector<Tile> t;
  for (std::uint64_t n0 = 0; n0 < s.n; n0 += nn) {
    for (std::uint64_t g = 0; g < groups; ++g) {
      for (std::uint64_t p0 = 0; p0 < s.hw; p0 += pw) {
        t.push_back({n0, std::min(nn, s.n - n0), g, p0, std::min(pw, s.hw - p0)});
      }
    }
  }
  return t;
}

namespace {

// A grow-only staging buffer of at least `bytes` (whole pages). Caller holds dev_mu.
DmaBuffer& staging(Device& dev, std::unique_ptr<DmaBuffer>& slot, std::uint64_t bytes) {
  const std::uint64_t want = round_up(std::max<std::uint64_t>(bytes, 1), 4096);
  if (!slot || slot->size() < want) {
    slot.reset();
    slot = dev.alloc(static_cast<std::size_t>(want), 4096);
  }
  return *slot;
}

// Host element index of (image n, channel c, position p), and the device buffer's order of the
// tile: nchw [nn][cg][pw], nhwc [nn][pw][cg]. Calls f(device index, host index, length) per
// contiguous run of elements.
template <typename F>
void for_each_run(const JobShape& s, const Tile& t, const ParamGroup& g, F&& f) {
  const std::uint64_t cg = g.channels, c0 = g.c0;
  std::uint64_t d = 0;
  for (std::uint64_t n = t.n0; n < t.n0 + t.nn; ++n) {
    if (s.layout == Layout::nchw) {
      for (std::uint64_t c = c0; c < c0 + cg; ++c, d += t.pw) {
        f(d, (n * s.c + c) * s.hw + t.p0, t.pw);
      }
    } else {
      for (std::uint64_t p = t.p0; p < t.p0 + t.pw; ++p, d += cg) {
        f(d, (n * s.hw + p) * s.c + c0, cg);
      }
    }
  }
}

// The device job of one tile.
DevJob tile_job(const JobShape& s, const Tile& t, const ParamGroup& g, const JobSettings& js) {
  DevJob j;
  j.channels = g.channels;
  j.layout = s.layout;
  if (s.layout == Layout::nchw) {
    j.inner = t.pw;
    j.outer = t.nn;
  } else {
    j.inner = 1;
    j.outer = t.nn * t.pw;
  }
  j.settings = js;
  j.param = g.buf->device_address();
  return j;
}

// progress(done + the job's elements so far, total) while a job runs (none without progress).
std::function<void(std::uint64_t)> job_progress(const DriverCore& k, std::uint64_t done,
                                                std::uint64_t job, std::uint64_t total) {
  if (!k.opt.progress) return {};
  return
      [&k, done, job, total](std::uint64_t e) { k.opt.progress(done + std::min(e, job), total); };
}

// Gathers, runs and scatters one tile (after `done` elements of the run); returns its element
// count.
std::uint64_t run_tile(DriverCore& k, RunShared& r, const Tile& t, std::uint64_t done) {
  const JobShape& s = r.shape;
  const ArithSpec& a = k.spec;
  const ParamGroup& g = r.params->groups[static_cast<std::size_t>(t.g)];
  const std::uint64_t elems = t.nn * g.channels * t.pw;
  const std::uint64_t in_bytes = ceil_div(elems * static_cast<std::uint64_t>(a.xw), 8);
  const std::uint64_t out_bytes = ceil_div(elems * static_cast<std::uint64_t>(a.yw), 8);
  std::lock_guard lk(k.dev_mu);
  const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
  DmaBuffer& bi = staging(*k.dev, k.stage_in, in_bytes);
  DmaBuffer& bo = staging(*k.dev, k.stage_out, out_bytes);
  std::uint8_t* ip = bi.map().data();
  for_each_run(s, t, g, [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
    gather(r.in, r.opt, a, ip, d, h, len);
  });
  bi.sync_to_device(0, static_cast<std::size_t>(in_bytes));
  DevJob j = tile_job(s, t, g, r.params->image.job);
  j.src = bi.device_address();
  j.dst = bo.device_address();
  k.engine.execute(j, r.stats, job_progress(k, done, elems, s.elements()));
  bo.sync_from_device(0, static_cast<std::size_t>(out_bytes));
  const std::uint8_t* op = bo.map().data();
  for_each_run(s, t, g, [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
    scatter(r.out, r.opt, a, op, d, h, len);
  });
  r.stats.mmio_reads += k.dev->counters().reads - reads0;
  r.stats.mmio_writes += k.dev->counters().writes - writes0;
  return elems;
}

void run_host(DriverCore& k, RunShared& r) {
  const auto tiles = plan_tiles(k, r.shape, r.params->group_channels);
  std::uint64_t done = 0;
  for (const Tile& t : tiles) {
    done += run_tile(k, r, t, done);
    if (k.opt.progress) k.opt.progress(done, r.shape.elements());
  }
}

void run_zero_copy(DriverCore& k, RunShared& r) {
  const ParamsImpl& prm = *r.params;
  const JobShape& s = r.shape;
  const ArithSpec& a = k.spec;
  const std::uint64_t n = s.elements();
  std::lock_guard lk(k.dev_mu);
  const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
  r.bin->buf->sync_to_device(
      0, static_cast<std::size_t>(ceil_div(n * static_cast<std::uint64_t>(a.xw), 8)));
  DevJob j;
  j.channels = s.c;
  j.layout = s.layout;
  j.inner = s.layout == Layout::nchw ? s.hw : 1;
  j.outer = s.layout == Layout::nchw ? s.n : s.n * s.hw;
  j.settings = prm.image.job;
  j.src = r.bin->buf->device_address();
  j.dst = r.bout->buf->device_address();
  j.param = prm.groups[0].buf->device_address();
  k.engine.execute(j, r.stats, job_progress(k, 0, n, n));
  r.bout->buf->sync_from_device(
      0, static_cast<std::size_t>(ceil_div(n * static_cast<std::uint64_t>(a.yw), 8)));
  r.stats.mmio_reads += k.dev->counters().reads - reads0;
  r.stats.mmio_writes += k.dev->counters().writes - writes0;
  if (k.opt.progress) k.opt.progress(n, n);
}

}  // namespace

void run_job(DriverCore& k, RunShared& r) {
  if (r.bin != nullptr) {
    run_zero_copy(k, r);
  } else {
    run_host(k, r);
  }
}

}  // namespace normcore::detail
