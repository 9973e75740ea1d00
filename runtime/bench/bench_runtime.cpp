// Runtime benchmark (not a test): prints figures and ratios, asserts nothing.
//
//   bench_runtime <devices dir> [MiB] [ref: options, e.g. threads=1]
//
// 1. memcpy of an S MiB buffer (warm, best of 5) as the yardstick;
// 2. the ref backend on an S MiB int8 tensor: zero-copy device buffers, and host tensors through
//    the driver (staging copies, tiles of 16 Mi elements); elements/s and the ratio to memcpy;
// 3. register (MMIO) accesses per job: first job, repeated job;
// 4. the sim backend (if its plugin is built): wall time and driver-side host time per small job.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "normcore/driver.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace normcore;

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, secs(Clock::now() - t0));
  }
  return best;
}

ParamImage params_for(const ArithSpec& a, int channels) {
  ParamImage im;
  im.spec = a;
  im.job.shift = 8;
  im.job.rounding = Rounding::half_even;
  im.job.lo = a.y_min();
  im.job.hi = a.y_max();
  std::mt19937_64 rng(1);
  for (int c = 0; c < channels; ++c) {
    im.scale.push_back(static_cast<std::int64_t>(rng() % 512) - 256);
    im.shift.push_back(static_cast<std::int64_t>(rng() % 65536) - 32768);
  }
  return im;
}

// 1. memcpy of `bytes` (best of 5); returns its time.
double bench_memcpy(std::size_t mib, std::size_t bytes) {
  std::vector<std::uint8_t> a(bytes, 1), b(bytes, 2);
  const double t_memcpy = best_of(5, [&] { std::memcpy(b.data(), a.data(), bytes); });
  std::printf("memcpy %zu MiB: %.2f ms, %.2f GB/s\n", mib, t_memcpy * 1e3,
              static_cast<double>(bytes) / t_memcpy / 1e9);
  return t_memcpy;
}

// 2a. Zero-copy device buffers in both layouts.
void bench_zero_copy(Accelerator& acc, const Params& p, const JobShape& shape, std::size_t mib,
                     std::size_t bytes, double t_memcpy, std::mt19937_64& rng) {
  for (const Layout lay : {Layout::nchw, Layout::nhwc}) {
    Buffer bi = acc.alloc(bytes), bo = acc.alloc(bytes);
    for (std::size_t i = 0; i < bytes; ++i) bi.map()[i] = static_cast<std::uint8_t>(rng());
    std::memset(bo.map().data(), 0, bytes);
    JobShape ls = shape;
    ls.layout = lay;
    normcore::Run r;
    const double t = best_of(5, [&] {
      r = acc.submit(p, bi, bo, ls);
      r.get();
    });
    std::printf(
        "ref, zero-copy buffers, %zu MiB int8 (1x64x%llu %s): %.2f ms, %.3f G elements/s, %.2f x "
        "memcpy\n",
        mib, static_cast<unsigned long long>(shape.hw), std::string(to_string(lay)).c_str(),
        t * 1e3, static_cast<double>(bytes) / t / 1e9, t_memcpy / t);
  }
}

// 2b. Host tensors through the driver (staged, tiled).
void bench_host_tensors(Accelerator& acc, const Params& p, const JobShape& shape, std::size_t mib,
                        std::size_t bytes, double t_memcpy, std::mt19937_64& rng) {
  std::vector<std::int8_t> x(bytes), y(bytes);
  for (auto& v : x) v = static_cast<std::int8_t>(rng());
  normcore::Run r;
  const double t = best_of(3, [&] {
    r = acc.submit(p, view(x), view(y), shape);
    r.get();
  });
  std::printf(
      "ref, host tensors (staged, %llu device jobs), %zu MiB int8: %.2f ms, %.3f G elements/s, "
      "%.2f x memcpy\n",
      static_cast<unsigned long long>(r.stats().tiles), mib, t * 1e3,
      static_cast<double>(bytes) / t / 1e9, t_memcpy / t);
}

// 3. Register accesses of a first and a repeated job on a fresh device.
void bench_register_traffic(const std::string& man, const ArithSpec& spec) {
  auto fresh = Accelerator::open("ref:" + man);
  auto q = fresh.upload(params_for(spec, 16));
  std::vector<std::int8_t> x(16 * 64), y(16 * 64);
  normcore::Run r1 = fresh.submit(q, view(x), view(y), JobShape{1, 16, 64, Layout::nchw});
  r1.get();
  normcore::Run r2 = fresh.submit(q, view(x), view(y), JobShape{1, 16, 64, Layout::nchw});
  r2.get();
  std::printf(
      "register accesses per job: first %llu (%llu reads + %llu writes), repeated %llu (%llu + "
      "%llu)\n",
      static_cast<unsigned long long>(r1.stats().mmio_reads + r1.stats().mmio_writes),
      static_cast<unsigned long long>(r1.stats().mmio_reads),
      static_cast<unsigned long long>(r1.stats().mmio_writes),
      static_cast<unsigned long long>(r2.stats().mmio_reads + r2.stats().mmio_writes),
      static_cast<unsigned long long>(r2.stats().mmio_reads),
      static_cast<unsigned long long>(r2.stats().mmio_writes));
}

// 4. The sim backend, if its plugin is built: wall and driver host time per
// small job.
void bench_sim(const std::string& dir, const std::string& man, const ArithSpec& spec) {
  const auto plugin = std::filesystem::path(dir) / "normcore" / "libnormcore_sim.so";
  if (!std::filesystem::exists(plugin)) {
    std::printf("sim: no plugin at %s (built with the co-simulation); skipped\n", plugin.c_str());
    return;
  }
  auto sim = Accelerator::open("sim:" + man);
  auto q = sim.upload(params_for(spec, 8));
  std::vector<std::int8_t> x(8 * 256), y(8 * 256);
  const int jobs = 50;
  double host = 0, dev = 0;
  const auto t0 = Clock::now();
  for (int i = 0; i < jobs; ++i) {
    normcore::Run r = sim.submit(q, view(x), view(y), JobShape{1, 8, 256, Layout::nchw});
    r.get();
    host += r.stats().host_seconds;
    dev += r.stats().device_seconds;
  }
  const double wall = secs(Clock::now() - t0);
  std::printf(
      "sim, %d jobs of 1x8x256 int8: %.3f ms wall per job; driver host time %.1f us per job "
      "(staging, conversion, register programming incl. simulated AXI4-Lite cycles), device wait "
      "%.3f ms per job\n",
      jobs, wall / jobs * 1e3, host / jobs * 1e6, dev / jobs * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <devices dir> [MiB]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::size_t mib = argc > 2 ? std::stoul(argv[2]) : 64;
  const std::size_t bytes = mib << 20;
  const std::string man = dir + "/normcore/rtl/manifest.json";

  const double t_memcpy = bench_memcpy(mib, bytes);
  auto acc = Accelerator::open("ref:" + man + (argc > 3 ? "," + std::string(argv[3]) : ""));
  const ArithSpec spec = acc.manifest().config.arith();
  const std::uint64_t c = 64, n = 1, hw = bytes / c;
  const JobShape shape{n, c, hw, Layout::nchw};
  const Params p = acc.upload(params_for(spec, static_cast<int>(c)));
  std::mt19937_64 rng(2);
  bench_zero_copy(acc, p, shape, mib, bytes, t_memcpy, rng);
  bench_host_tensors(acc, p, shape, mib, bytes, t_memcpy, rng);
  bench_register_traffic(man, spec);
  bench_sim(dir, man, spec);
  return 0;
}
