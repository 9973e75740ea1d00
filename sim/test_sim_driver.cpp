// The host driver on the sim backend (the Verilated RTL) against the ref backend (the golden
// model in software): the same random jobs give identical bytes, through tiling, the async
// queue and concurrent submitters.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"

namespace {

using namespace normcore;
using namespace std::chrono_literals;

std::string manifest(const std::string& name) {
  return std::string(NC_DEVICES_DIR) + "/" + name + "/rtl/manifest.json";
}

ParamImage random_image(const ArithSpec& a, std::uint64_t channels, std::mt19937_64& rng) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  ParamImage im;
  im.spec = a;
  im.job.shift = static_cast<int>(uni(0, std::min(a.acc_bits(), 20)));
  im.job.rounding = static_cast<Rounding>(uni(0, 3));
  im.job.lo = uni(a.y_min(), (a.y_min() + a.y_max()) / 2);
  im.job.hi = uni(im.job.lo, a.y_max());
  const std::int64_t span = std::int64_t{1} << (im.job.shift + 10);
  for (std::uint64_t c = 0; c < channels; ++c) {
    im.scale.push_back(uni(a.s_min(), a.s_max()));
    im.shift.push_back(uni(std::max(a.b_min(), -span), std::min(a.b_max(), span)));
  }
  return im;
}

struct Job {
  JobShape s;
  ParamImage im;
  std::vector<std::int32_t> x;
  std::vector<std::int64_t> want;
};

Job random_job(const ArithSpec& a, std::mt19937_64& rng, std::uint64_t max_c,
               std::uint64_t max_hw) {
  Job j;
  j.s = JobShape{1 + rng() % 3, 1 + rng() % max_c, 1 + rng() % max_hw,
                 (rng() & 1) ? Layout::nhwc : Layout::nchw};
  j.im = random_image(a, j.s.c, rng);
  std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
  std::vector<std::int64_t> x(j.s.elements());
  for (auto& v : x) v = xd(rng);
  j.x.assign(x.begin(), x.end());
  j.want.resize(x.size());
  apply_tensor(x, j.want, j.im.scale, j.im.shift, static_cast<std::int64_t>(j.s.hw), j.s.layout,
               j.im.job);
  return j;
}

std::vector<std::int32_t> run_on(Accelerator& acc, const Job& j) {
  std::vector<std::int32_t> y(j.x.size());
  acc.run(acc.upload(j.im), view(j.x), view(y), j.s);
  return y;
}

void same_as_ref(const std::string& dev, std::uint64_t max_c, std::uint64_t max_hw, int jobs,
                 const std::string& sim_opts) {
  DriverOptions o;
  o.max_tile_elements = 700;  // several device jobs for the larger tensors
  auto sim = Accelerator::open("sim:" + manifest(dev) + sim_opts, o);
  auto ref = Accelerator::open("ref:" + manifest(dev), o);
  const ArithSpec a = sim.manifest().config.arith();
  std::mt19937_64 rng(std::hash<std::string>{}(dev));
  for (int i = 0; i < jobs; ++i) {
    const Job j = random_job(a, rng, max_c, max_hw);
    const auto ys = run_on(sim, j);
    const auto yr = run_on(ref, j);
    ASSERT_EQ(ys, yr) << dev << " job " << i << ": sim and ref differ";
    ASSERT_EQ(std::vector<std::int64_t>(ys.begin(), ys.end()), j.want) << dev << " job " << i;
  }
  EXPECT_GT(sim.stats().tiles, static_cast<std::uint64_t>(jobs));  // tiling happened
}

// Issue 15 item 9: one large device job reports progress while it runs (PERF_ELEMS), not only a
// single 100% at its end; the values rise, stay below the total until the end, and the result
// is still exact.
TEST(SimDriver, ProgressInsideOneLargeJob) {
  DriverOptions o;
  o.progress_interval = 2ms;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  o.progress = [&seen](std::uint64_t done, std::uint64_t total) { seen.emplace_back(done, total); };
  auto sim = Accelerator::open("sim:" + manifest("normcore"), o);
  std::mt19937_64 rng(15);
  Job j;
  j.s = JobShape{2, 16, 20000, Layout::nchw};  // 640000 elements: one job of ~80000 beats
  j.im = random_image(sim.manifest().config.arith(), j.s.c, rng);
  const ArithSpec a = sim.manifest().config.arith();
  std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
  std::vector<std::int64_t> x(j.s.elements());
  for (auto& v : x) v = xd(rng);
  j.x.assign(x.begin(), x.end());
  j.want.resize(x.size());
  apply_tensor(x, j.want, j.im.scale, j.im.shift, static_cast<std::int64_t>(j.s.hw), j.s.layout,
               j.im.job);
  const auto y = run_on(sim, j);
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), j.want);
  EXPECT_EQ(sim.stats().tiles, 1U);
  ASSERT_GE(seen.size(), 3U) << "no progress inside the job";
  const std::uint64_t n = j.s.elements();
  EXPECT_EQ(seen.back(), std::make_pair(n, n));
  std::uint64_t inside = 0;
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_EQ(seen[i].second, n);
    EXPECT_LE(seen[i].first, seen[i + 1].first) << "progress went back at report " << i;
    if (seen[i].first > 0 && seen[i].first < n) ++inside;
  }
  EXPECT_GE(inside, 1U) << "every report was 0 or 100%";
}

TEST(SimDriver, SameBytesAsRefDefaultDevice) {
  same_as_ref("normcore", 40, 200, 60, ",latency=12,stall=0.2");
}
TEST(SimDriver, SameBytesAsRefSmallDeviceTiled) {
  same_as_ref("nc_small", 12, 40, 60, ",latency=30,stall=0.3");
}

TEST(SimDriver, AsyncQueueAndConcurrentSubmitters) {
  auto sim = Accelerator::open("sim:" + manifest("nc_small") + ",stall=0.1");
  const ArithSpec a = sim.manifest().config.arith();
  std::mt19937_64 rng(11);
  std::vector<Job> jobs;
  for (int i = 0; i < 24; ++i) jobs.push_back(random_job(a, rng, 9, 30));
  std::vector<std::vector<std::int32_t>> ys(jobs.size());
  std::vector<normcore::Run> runs;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ys[i].resize(jobs[i].x.size());
    runs.push_back(sim.submit(sim.upload(jobs[i].im), view(jobs[i].x), view(ys[i]), jobs[i].s));
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(runs[i].wait(60s));
    ASSERT_EQ(runs[i].state(), RunState::completed) << runs[i].error();
    EXPECT_EQ(std::vector<std::int64_t>(ys[i].begin(), ys[i].end()), jobs[i].want) << i;
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < jobs.size(); i += 3) {
        if (run_on(sim, jobs[i]) !=
            std::vector<std::int32_t>(jobs[i].want.begin(), jobs[i].want.end()))
          ++bad;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(SimDriver, MemoryErrorAndHangThroughTheDriver) {
  DriverOptions o;
  o.job_timeout = 300ms;
  auto sim =
      Accelerator::open("sim:" + manifest("normcore") + ",fail_job=1,fail=read,hang_job=2", o);
  const ArithSpec a = sim.manifest().config.arith();
  std::mt19937_64 rng(12);
  const Job j = random_job(a, rng, 8, 64);
  try {
    (void)run_on(sim, j);
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("read (ERR_CODE=7"), std::string::npos) << e.what();
  }
  try {
    (void)run_on(sim, j);
    FAIL() << "no time-out";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("soft reset done, the device is idle again"),
              std::string::npos)
        << e.what();
  }
  const auto y = run_on(sim, j);  // recovered
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), j.want);
  EXPECT_EQ(sim.stats().timeouts, 1u);
}

// The specialised device (nc_spec): the RTL (sim) and the ref device give the same ERR_CODE for
// every job, those the core is not built for (ERR_UNSUPPORTED) included, and CoreConfig's
// check_job is the rule both follow.
TEST(SimDriver, SpecialisedDeviceRejectsAsRef) {
  struct Case {
    std::uint32_t c, layout, rounding, shift;
  };
  const Case cases[] = {{8, 1, 2, 10}, {8, 1, 2, 11}, {8, 1, 0, 10}, {8, 0, 2, 10},
                        {6, 1, 2, 10}, {0, 1, 2, 9},  {8, 1, 2, 9},  {4, 1, 2, 10}};
  std::vector<std::uint32_t> codes[2];
  for (int k = 0; k < 2; ++k) {
    auto d = open_device((k == 0 ? "sim:" : "ref:") + manifest("nc_spec"));
    const Manifest& m = d->manifest();
    auto wr = [&](const char* reg, std::uint64_t v) {
      d->write32(m.offset(reg), static_cast<std::uint32_t>(v));
    };
    auto put = [&](const char* reg, const char* f, std::uint64_t v) {
      return m.field(reg, f).put(0, v);
    };
    auto in = d->alloc(4096, 4096), out = d->alloc(4096, 4096), prm = d->alloc(4096, 4096);
    for (const auto& c : cases) {
      wr("CHANNELS", c.c);
      wr("INNER", 2);
      wr("OUTER", 3);
      wr("MODE", put("MODE", "layout", c.layout) | put("MODE", "rounding", c.rounding) |
                     put("MODE", "shift", c.shift));
      wr("SRC_LO", in->device_address());
      wr("DST_LO", out->device_address());
      wr("PARAM_LO", prm->device_address());
      wr("CTRL",
         put("CTRL", "start", 1) | put("CTRL", "irq_en_done", 1) | put("CTRL", "irq_en_error", 1));
      ASSERT_TRUE(d->wait_irq(5s));
      codes[k].push_back(m.field("ERR_CODE", "code").get(d->read32(m.offset("ERR_CODE"))));
      wr("IRQ_STATUS", put("IRQ_STATUS", "done", 1) | put("IRQ_STATUS", "error", 1));
      const bool fits = m.config.accel.core
                            .check_job(static_cast<int>(c.shift), static_cast<Rounding>(c.rounding),
                                       static_cast<Layout>(c.layout), c.c)
                            .empty();
      if (c.c != 0) {
        EXPECT_EQ(codes[k].back(), fits ? 0u : 10u) << "C=" << c.c << " R=" << c.shift;
      }
    }
  }
  EXPECT_EQ(codes[0], codes[1]);
}

}  // namespace
