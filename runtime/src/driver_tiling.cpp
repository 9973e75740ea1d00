// Splitting runs into device jobs: host tensors in tiles that fit the device (channel groups,
// pieces of HW within INNER, images within OUTER and the staging budget) gathered into and
// scattered out of the staging buffers; zero-copy runs as one job on the caller's buffers.
#include "detail/driver_tiling.hpp"

#include <algorithm>

#include "detail/driver_convert.hpp"
#include "detail/driver_util.hpp"
#include "detail/parallel.hpp"

namespace normcore::detail {

std::vector<Tile> plan_tiles(const DriverCore& k, const JobShape& s, std::uint64_t group_channels,
                             bool direct) {
  const DeviceConfig& c = k.cfg();
  // Staged tiles fit the staging budget; direct ones (run_tile_direct) only the device's limits.
  const std::uint64_t budget =
      direct ? std::max(k.opt.max_tile_elements, s.elements()) : k.opt.max_tile_elements;
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

// The tile's runs: the device buffer's order is nchw [nn][cg][pw], nhwc [nn][pw][cg], so run i
// (of `count`, each `len` elements) is device elements [i * len, (i + 1) * len) and starts at
// host element host(i).
struct Runs {
  const JobShape& s;
  const Tile& t;
  std::uint64_t cg, c0, count, len;
  Runs(const JobShape& shape, const Tile& tile, const ParamGroup& g)
      : s(shape), t(tile), cg(g.channels), c0(g.c0) {
    count = t.nn * (s.layout == Layout::nchw ? cg : t.pw);
    len = s.layout == Layout::nchw ? t.pw : cg;
  }
  [[nodiscard]] std::uint64_t host(std::uint64_t i) const {
    if (s.layout == Layout::nchw) return ((t.n0 + i / cg) * s.c + c0 + i % cg) * s.hw + t.p0;
    return ((t.n0 + i / t.pw) * s.hw + t.p0 + i % t.pw) * s.c + c0;
  }
  // Every run continues the one before in host memory (the strides inside an image and from
  // one image to the next are constant, so two boundaries decide it).
  [[nodiscard]] bool contiguous() const {
    const std::uint64_t per_image = count / t.nn;
    if (per_image > 1 && host(1) != host(0) + len) return false;
    return t.nn == 1 || host(per_image) == host(per_image - 1) + len;
  }
};

// Calls f(device index, host index, length) for every contiguous piece of the tile's elements,
// runs that continue each other in host memory merged (a tile of whole images is one piece),
// split over up to `threads` threads in element ranges that start on multiples of 8 elements
// (whole bytes of any packed width): each thread writes its own bytes, so the result does not
// depend on the thread count.
template <typename F>
void for_each_run(const JobShape& s, const Tile& t, const ParamGroup& g, unsigned threads, F&& f) {
  const Runs r(s, t, g);
  const std::uint64_t total = r.count * r.len;
  if (total == 0) return;
  const std::uint64_t parts =
      total >= (std::uint64_t{1} << 18) ? std::max(1u, threads) : std::uint64_t{1};
  const std::uint64_t chunk = round_up(ceil_div(total, parts), 8);
  parallel_for(ceil_div(total, chunk), static_cast<unsigned>(parts), [&](std::uint64_t k) {
    const std::uint64_t e0 = k * chunk, e1 = std::min(total, e0 + chunk);
    std::uint64_t e = e0;
    while (e < e1) {
      std::uint64_t i = e / r.len;
      const std::uint64_t h = r.host(i) + e % r.len;
      std::uint64_t end = std::min(e1, (i + 1) * r.len);
      while (end < e1 && r.host(i + 1) == r.host(i) + r.len) {  // the next run continues it
        ++i;
        end = std::min(e1, (i + 1) * r.len);
      }
      f(e, h, end - e);
      e = end;
    }
  });
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

// Bytes per element when the host elements are the device's as they are (8-bit integers of the
// same signedness; float16 / bfloat16 / float32 on a float side of that type), else 0.
std::uint64_t same_format(DType t, int w, bool sgn, NumType ft) {
  if (ft != NumType::integer) {
    const bool same = (t == DType::float16 && ft == NumType::fp16) ||
                      (t == DType::bfloat16 && ft == NumType::bf16) ||
                      (t == DType::float32 && ft == NumType::fp32);
    return same ? dtype_bytes(t) : 0;
  }
  return w == 8 && ((t == DType::int8 && sgn) || (t == DType::uint8 && !sgn)) ? 1 : 0;
}

// The element bytes of input and output when both host tensors are in the device's format.
struct DirectBytes {
  std::uint64_t in = 0, out = 0;
  explicit DirectBytes(const RunShared& r, const ArithSpec& a)
      : in(same_format(r.in.dtype, a.xw, a.x_signed, a.x_type)),
        out(same_format(r.out.dtype, a.yw, a.y_signed, a.y_type)) {}
  [[nodiscard]] bool ok() const { return in != 0 && out != 0; }
};

// Runs a tile in place on the host tensors when it is one contiguous piece of each, both are in
// the device's format, and the device can address host memory (import_host: ref). Returns false
// (nothing done) otherwise; then the tile is staged. Caller holds dev_mu.
bool run_tile_direct(DriverCore& k, RunShared& r, const Tile& t, const ParamGroup& g,
                     std::uint64_t done, std::uint64_t elems) {
  const DirectBytes w(r, k.spec);
  if (!w.ok()) return false;
  const Runs runs(r.shape, t, g);
  if (!runs.contiguous()) return false;
  const std::uint64_t h = runs.host(0);
  const auto* in = static_cast<const std::uint8_t*>(r.in.data) + h * w.in;
  auto* out = static_cast<std::uint8_t*>(r.out.data) + h * w.out;
  const std::uint64_t in_n = elems * w.in, out_n = elems * w.out;
  if (in != out && in < out + out_n && out < in + in_n) return false;  // partial overlap
  auto bi = k.dev->import_host(in, static_cast<std::size_t>(in_n), false);
  auto bo = bi ? k.dev->import_host(out, static_cast<std::size_t>(out_n), true) : nullptr;
  if (!bo) return false;
  DevJob j = tile_job(r.shape, t, g, r.params->image.job);
  j.src = bi->device_address();
  j.dst = bo->device_address();
  k.engine.execute(j, r.stats, job_progress(k, done, elems, r.shape.elements()));
  return true;
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
  if (run_tile_direct(k, r, t, g, done, elems)) {
    r.stats.mmio_reads += k.dev->counters().reads - reads0;
    r.stats.mmio_writes += k.dev->counters().writes - writes0;
    return elems;
  }
  DmaBuffer& bi = staging(*k.dev, k.stage_in, in_bytes);
  DmaBuffer& bo = staging(*k.dev, k.stage_out, out_bytes);
  std::uint8_t* ip = bi.map().data();
  const unsigned threads = k.opt.threads != 0 ? k.opt.threads : default_threads();
  for_each_run(s, t, g, threads, [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
    gather(r.in, r.opt, a, ip, d, h, len);
  });
  bi.sync_to_device(0, static_cast<std::size_t>(in_bytes));
  DevJob j = tile_job(s, t, g, r.params->image.job);
  j.src = bi.device_address();
  j.dst = bo.device_address();
  k.engine.execute(j, r.stats, job_progress(k, done, elems, s.elements()));
  bo.sync_from_device(0, static_cast<std::size_t>(out_bytes));
  const std::uint8_t* op = bo.map().data();
  for_each_run(s, t, g, threads, [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
    scatter(r.out, r.opt, a, op, d, h, len);
  });
  r.stats.mmio_reads += k.dev->counters().reads - reads0;
  r.stats.mmio_writes += k.dev->counters().writes - writes0;
  return elems;
}

// Whether the tiles may be planned for run_tile_direct: both tensors in the device's format and
// the device can address all of both (imports of the whole tensors, dropped again).
bool direct_possible(DriverCore& k, const RunShared& r) {
  const DirectBytes w(r, k.spec);
  if (!w.ok()) return false;
  const std::uint64_t n = r.shape.elements();
  std::lock_guard lk(k.dev_mu);
  auto bi = k.dev->import_host(r.in.data, static_cast<std::size_t>(n * w.in), false);
  return bi && k.dev->import_host(r.out.data, static_cast<std::size_t>(n * w.out), true) != nullptr;
}

void run_host(DriverCore& k, RunShared& r) {
  const bool direct = direct_possible(k, r);
  auto tiles = plan_tiles(k, r.shape, r.params->group_channels, direct);
  // Direct tiles are unbounded by the staging budget: if any of them is not one contiguous piece
  // (it would be staged whole), plan staged tiles instead.
  const auto contiguous = [&](const Tile& t) {
    return Runs(r.shape, t, r.params->groups[static_cast<std::size_t>(t.g)]).contiguous();
  };
  if (direct && !std::all_of(tiles.begin(), tiles.end(), contiguous)) {
    tiles = plan_tiles(k, r.shape, r.params->group_channels, false);
  }
  std::uint64_t done = 0;
  for (const Tile& t : tiles) {
    done += run_tile(k, r, t, done);
    if (k.opt.progress) k.opt.progress(done, r.shape.elements());
  }
}

// The one device job of a zero-copy run.
DevJob zero_copy_job(const RunShared& r) {
  const JobShape& s = r.shape;
  DevJob j;
  j.channels = s.c;
  j.layout = s.layout;
  j.inner = s.layout == Layout::nchw ? s.hw : 1;
  j.outer = s.layout == Layout::nchw ? s.n : s.n * s.hw;
  j.settings = r.params->image.job;
  j.src = r.bin->buf->device_address();
  j.dst = r.bout->buf->device_address();
  j.param = r.params->groups[0].buf->device_address();
  return j;
}

void run_zero_copy(DriverCore& k, RunShared& r) {
  const JobShape& s = r.shape;
  const ArithSpec& a = k.spec;
  const std::uint64_t n = s.elements();
  std::lock_guard lk(k.dev_mu);
  const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
  r.bin->buf->sync_to_device(
      0, static_cast<std::size_t>(ceil_div(n * static_cast<std::uint64_t>(a.xw), 8)));
  k.engine.execute(zero_copy_job(r), r.stats, job_progress(k, 0, n, n));
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

namespace normcore::detail {

namespace {

// One device job of a batch: a tile of a host run (in place or staged) or a zero-copy run.
struct Item {
  std::size_t run = 0;  // index into the batch's runs
  Tile t{};
  bool direct = false, zero_copy = false;
  std::uint64_t elems = 0;
};

// The items of the runs, in order (each run's tiles planned as run_host plans them).
std::vector<Item> batch_items(DriverCore& k, std::span<RunShared* const> runs) {
  std::vector<Item> items;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    RunShared& r = *runs[i];
    if (r.bin != nullptr) {
      items.push_back({i, {}, false, true, r.shape.elements()});
      continue;
    }
    const bool direct = direct_possible(k, r);
    auto tiles = plan_tiles(k, r.shape, r.params->group_channels, direct);
    const auto contiguous = [&](const Tile& t) {
      return Runs(r.shape, t, r.params->groups[static_cast<std::size_t>(t.g)]).contiguous();
    };
    const bool in_place = direct && std::all_of(tiles.begin(), tiles.end(), contiguous);
    if (direct && !in_place) tiles = plan_tiles(k, r.shape, r.params->group_channels, false);
    for (const Tile& t : tiles) {
      const auto& g = r.params->groups[static_cast<std::size_t>(t.g)];
      items.push_back({i, t, in_place, false, t.nn * g.channels * t.pw});
    }
  }
  return items;
}

// Bytes of `elems` elements of `bits` bits, rounded up to a 64-byte slot of a staging buffer.
std::uint64_t slot_bytes(std::uint64_t elems, int bits) {
  return round_up(ceil_div(elems * static_cast<std::uint64_t>(bits), 8), 64);
}

// Runs items [b, e) as one execute_all (caller holds dev_mu): imports, gathers, the jobs, the
// scatters; errs[run] gets a run's first error.
void run_group(DriverCore& k, std::span<RunShared* const> runs, std::span<const Item> items,
               std::vector<std::exception_ptr>& errs) {
  const ArithSpec& a = k.spec;
  std::vector<DevJob> jobs(items.size());
  std::vector<RunStats*> stats(items.size());
  std::vector<std::unique_ptr<DmaBuffer>> imports;
  std::vector<std::uint64_t> in_at(items.size(), 0), out_at(items.size(), 0);
  std::vector<bool> staged(items.size(), false);
  std::uint64_t in_bytes = 0, out_bytes = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    RunShared& r = *runs[it.run];
    stats[i] = &r.stats;
    if (it.zero_copy) {
      r.bin->buf->sync_to_device(0, static_cast<std::size_t>(ceil_div(it.elems * a.xw, 8)));
      jobs[i] = zero_copy_job(r);
      continue;
    }
    const ParamGroup& g = r.params->groups[static_cast<std::size_t>(it.t.g)];
    jobs[i] = tile_job(r.shape, it.t, g, r.params->image.job);
    if (it.direct) {
      const DirectBytes w(r, a);
      const std::uint64_t h = Runs(r.shape, it.t, g).host(0);
      const auto* in = static_cast<const std::uint8_t*>(r.in.data) + h * w.in;
      auto* out = static_cast<std::uint8_t*>(r.out.data) + h * w.out;
      auto bi = k.dev->import_host(in, static_cast<std::size_t>(it.elems * w.in), false);
      auto bo =
          bi ? k.dev->import_host(out, static_cast<std::size_t>(it.elems * w.out), true) : nullptr;
      if (bo) {
        jobs[i].src = bi->device_address();
        jobs[i].dst = bo->device_address();
        imports.push_back(std::move(bi));
        imports.push_back(std::move(bo));
        continue;
      }
    }
    staged[i] = true;
    in_at[i] = in_bytes;
    out_at[i] = out_bytes;
    in_bytes += slot_bytes(it.elems, a.xw);
    out_bytes += slot_bytes(it.elems, a.yw);
  }
  DmaBuffer* bi = in_bytes > 0 ? &staging(*k.dev, k.stage_in, in_bytes) : nullptr;
  DmaBuffer* bo = out_bytes > 0 ? &staging(*k.dev, k.stage_out, out_bytes) : nullptr;
  const unsigned threads = k.opt.threads != 0 ? k.opt.threads : default_threads();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!staged[i]) continue;
    RunShared& r = *runs[items[i].run];
    const ParamGroup& g = r.params->groups[static_cast<std::size_t>(items[i].t.g)];
    std::uint8_t* ip = bi->map().data() + in_at[i];
    for_each_run(r.shape, items[i].t, g, threads,
                 [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
                   gather(r.in, r.opt, a, ip, d, h, len);
                 });
    jobs[i].src = bi->device_address() + in_at[i];
    jobs[i].dst = bo->device_address() + out_at[i];
  }
  if (bi != nullptr) bi->sync_to_device(0, static_cast<std::size_t>(in_bytes));
  std::vector<std::exception_ptr> e;
  k.engine.execute_all(jobs, stats, e);
  if (bo != nullptr) bo->sync_from_device(0, static_cast<std::size_t>(out_bytes));
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    RunShared& r = *runs[it.run];
    if (e[i] && !errs[it.run]) errs[it.run] = e[i];
    if (e[i] || errs[it.run]) continue;
    if (it.zero_copy) {
      r.bout->buf->sync_from_device(0, static_cast<std::size_t>(ceil_div(it.elems * a.yw, 8)));
    } else if (staged[i]) {
      const ParamGroup& g = r.params->groups[static_cast<std::size_t>(it.t.g)];
      const std::uint8_t* op = bo->map().data() + out_at[i];
      for_each_run(r.shape, it.t, g, threads,
                   [&](std::uint64_t d, std::uint64_t h, std::uint64_t len) {
                     scatter(r.out, r.opt, a, op, d, h, len);
                   });
    }
  }
}

}  // namespace

void run_batch(DriverCore& k, std::span<RunShared* const> runs,
               std::vector<std::exception_ptr>& errs) {
  errs.assign(runs.size(), nullptr);
  if (!k.engine.has_ring()) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      try {
        run_job(k, *runs[i]);
      } catch (...) {
        errs[i] = std::current_exception();
      }
    }
    return;
  }
  std::vector<Item> items;
  try {
    items = batch_items(k, runs);
  } catch (...) {
    for (auto& e : errs) e = std::current_exception();
    return;
  }
  std::vector<std::uint64_t> done(runs.size(), 0);
  std::size_t b = 0;
  while (b < items.size()) {
    // A group: staged items within the staging budget (at least one), any in-place items.
    std::size_t e = b;
    std::uint64_t staged = 0;
    while (e < items.size() && e - b < 4096) {
      const bool st = !items[e].direct && !items[e].zero_copy;
      if (st && staged > 0 && staged + items[e].elems > k.opt.max_tile_elements) break;
      if (st) staged += items[e].elems;
      ++e;
    }
    std::vector<Item> group;
    for (std::size_t i = b; i < e; ++i) {
      if (!errs[items[i].run]) group.push_back(items[i]);  // a failed run runs nothing more
    }
    try {
      std::lock_guard lk(k.dev_mu);
      const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
      run_group(k, runs, group, errs);
      // The group's register accesses, shared out over its items' runs.
      const std::uint64_t dr = k.dev->counters().reads - reads0;
      const std::uint64_t dw = k.dev->counters().writes - writes0;
      for (std::size_t i = 0; i < group.size(); ++i) {
        RunStats& st = runs[group[i].run]->stats;
        st.mmio_reads += dr / group.size() + (i < dr % group.size() ? 1 : 0);
        st.mmio_writes += dw / group.size() + (i < dw % group.size() ? 1 : 0);
      }
    } catch (...) {
      for (const Item& it : group) {
        if (!errs[it.run]) errs[it.run] = std::current_exception();
      }
    }
    for (const Item& it : group) {
      done[it.run] += it.elems;
      if (k.opt.progress && !errs[it.run])
        k.opt.progress(done[it.run], runs[it.run]->shape.elements());
    }
    b = e;
  }
}

}  // namespace normcore::detail
