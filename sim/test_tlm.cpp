// The SystemC/TLM-2.0 model of the accelerator (sim/tlm_bridge.hpp), two executables:
//   tlm_tests         the `tlm` backend through the public API: open_device("tlm:<manifest>"),
//                     registers, random jobs bit-exact against the golden model and byte-identical
//                     to the ref backend, the driver (Accelerator), TLM memory errors ending in the
//                     documented error state, one-model-per-process rules, the loader's kind check,
//                     and (disabled, prints only) cycles per second against the sim backend.
//   tlm_bridge_tests  (NC_TLM_BRIDGE_TESTS) TlmAccelerator<Vnormcore> itself in a bench with a
//                     TlmMemory and a HostPort: response statuses at the register socket (AXI4-Lite
//                     SLVERR -> TLM_GENERIC_ERROR_RESPONSE, burst / address / byte-enable errors),
//                     no DMI, byte enables as WSTRB, DMA bursts as TLM transactions, memory error
//                     statuses (generic and address error) as ERR_CODE, annotated latency.
// SystemC elaborates once per process: each executable elaborates one model and every test
// reuses it (ctest runs each test in its own process anyway).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "device_jobs.hpp"
#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/driver.hpp"
#include "normcore/manifest.hpp"

#ifdef NC_TLM_BRIDGE_TESTS
#include "nc_sim_model.hpp"  // normcore::sim::model::Top = Vnormcore
#include "tlm_bridge.hpp"
#endif

namespace normcore {
namespace {

using namespace std::chrono_literals;
using namespace device_jobs;

#ifndef NC_TLM_BRIDGE_TESTS
// ============================ tlm backend through the runtime ============================

// The 1 x 64 x 56*56 NCHW job (the demo's shape) with random data.
Job full_size_job(const DeviceConfig& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Job j = random_job(rng, c, 1);
  j.channels = std::min(64, c.max_channels);
  j.inner = 56 * 56;
  j.outer = 1;
  j.layout = Layout::nchw;
  const Job params = random_job(rng, c, 1);
  j.scale.clear();
  j.shift.clear();
  for (int ch = 0; ch < j.channels; ++ch) {
    j.scale.push_back(params.scale[0] + ch);
    j.shift.push_back(params.shift[0] - 3 * ch);
  }
  std::uniform_int_distribution<std::int64_t> xd(c.arith().x_min(), c.arith().x_max());
  j.x.resize(j.elements());
  for (auto& v : j.x) v = xd(rng);
  return j;
}

std::string tlm(const std::string& device, const std::string& options = "") {
  return "tlm:" + manifest_of(device) + options;
}
std::vector<std::string> tlm_devices() {
  std::vector<std::string> v;
  std::stringstream ss(NC_TLM_DEVICES);
  for (std::string d; std::getline(ss, d, ',');) {
    if (!d.empty()) v.push_back(d);
  }
  return v;
}

// Opens a tlm device; skips the test when this process already runs another configuration's
// model (running the whole binary in one process; ctest gives each test its own).
std::unique_ptr<Device> open_or_skip(const std::string& spec, bool* skipped) {
  *skipped = false;
  try {
    return open_device(spec);
  } catch (const DeviceError& e) {
    if (std::string(e.what()).find("already started") != std::string::npos) {
      *skipped = true;
      return nullptr;
    }
    throw;
  }
}
#define NC_OPEN_TLM(var, spec)                                   \
  bool var##_skipped = false;                                    \
  auto var = open_or_skip(spec, &var##_skipped);                 \
  if (var##_skipped)                                             \
  GTEST_SKIP() << "another device's SystemC model runs in this " \
                  "process; run this test alone (ctest does)"

TEST(TlmDevice, RegistersThroughTlm) {
  NC_OPEN_TLM(d, tlm("normcore"));
  const Manifest& m = d->manifest();
  EXPECT_EQ(d->name(), tlm("normcore"));
  EXPECT_TRUE(d->has_irq());
  for (const char* reg :
       {"ID", "VERSION", "CAPS0", "CAPS1", "CAPS2", "CAPS3", "CHANNELS", "INNER", "OUTER", "MODE",
        "CLAMP_LO", "CLAMP_HI", "CTRL", "STATUS", "IRQ_STATUS", "ERR_CODE"}) {
    EXPECT_EQ(d->read32(m.offset(reg)), m.reg(reg).reset) << reg;
  }
  // Read-write registers round-trip.
  d->write32(m.offset("CHANNELS"), 37);
  d->write32(m.offset("SRC_LO"), 0x12345678);
  d->write32(m.offset("DST_HI"), 0x9ABCDEF0);
  EXPECT_EQ(d->read32(m.offset("CHANNELS")), 37U);
  EXPECT_EQ(d->read32(m.offset("SRC_LO")), 0x12345678U);
  EXPECT_EQ(d->read32(m.offset("DST_HI")), 0x9ABCDEF0U);

  // Unmapped inside the window: the RTL answers SLVERR, the bridge TLM_GENERIC_ERROR_RESPONSE,
  // the device a DeviceError naming both and the offset.
  const std::uint32_t win = m.window_bytes();
  std::uint32_t unmapped = win - 4;
  while (m.find_reg(unmapped) != nullptr) unmapped -= 4;
  char off[16];
  std::snprintf(off, sizeof off, "0x%X", unmapped);
  for (const bool write : {false, true}) {
    const std::string e = error_of([&] {
      if (write) {
        d->write32(unmapped, 1);
      } else {
        (void)d->read32(unmapped);
      }
    });
    EXPECT_NE(e.find("SLVERR"), std::string::npos) << e;
    EXPECT_NE(e.find("TLM_GENERIC_ERROR_RESPONSE"), std::string::npos) << e;
    EXPECT_NE(e.find(off), std::string::npos) << e;
  }
  // Outside the window: refused before any access.
  EXPECT_NE(error_of([&] { (void)d->read32(win); }).find("outside"), std::string::npos);
  // Still works afterwards.
  EXPECT_EQ(d->read32(m.offset("ID")), m.reg("ID").reset);
}

TEST(TlmDevice, DriverOpensAndDecodesCaps) {
  bool skipped = false;
  (void)open_or_skip(tlm("normcore"), &skipped);  // probe (closed again at once)
  if (skipped) GTEST_SKIP() << "another device's SystemC model runs in this process";
  auto acc = Accelerator::open(tlm("normcore"));
  const DeviceConfig& c = acc.manifest().config;
  EXPECT_EQ(acc.info().lanes, c.lanes);
  EXPECT_EQ(acc.info().in_bits, c.in_bits);
  EXPECT_EQ(acc.info().bus_bytes, c.bus_bytes());
  EXPECT_EQ(acc.info().max_channels, c.max_channels);
}

class TlmJobs : public ::testing::TestWithParam<std::string> {};

// Random jobs (both layouts, random C, HW, N) on the device registers: bit-exact against the
// golden model and byte-identical (the whole output buffer) to the ref backend.
TEST_P(TlmJobs, BitExactAndSameBytesAsRef) {
  const std::string name = GetParam();
  for (const char* opt : {"", ",latency=0", ",latency=60"}) {
    NC_OPEN_TLM(d, tlm(name, opt));
    auto ref = open_device("ref:" + manifest_of(name));
    Runner r(*d), rr(*ref);
    std::mt19937_64 rng(std::hash<std::string>{}(name + opt));
    bool layouts[2] = {false, false};
    for (int k = 0; k < 8 && !HasFailure(); ++k) {
      Job j = random_job(rng, d->manifest().config, k == 0 ? 20000 : 3000);
      if (k < 2) j.layout = k == 0 ? Layout::nchw : Layout::nhwc;
      layouts[j.layout == Layout::nhwc ? 1 : 0] = true;
      const std::string what = name + opt + " job " + std::to_string(k) +
                               " C=" + std::to_string(j.channels) +
                               " HW=" + std::to_string(j.inner) + " N=" + std::to_string(j.outer) +
                               (j.layout == Layout::nhwc ? " nhwc" : " nchw");
      const Outcome o = r.run_good(j, what);
      const Outcome ro = rr.run_good(j, what + " (ref)");
      EXPECT_EQ(o.dst_bytes, ro.dst_bytes) << what << ": output buffer differs from ref";
      EXPECT_GT(o.perf_active,
                j.elements() / static_cast<std::uint64_t>(d->manifest().config.lanes))
          << what;
    }
    EXPECT_TRUE(layouts[0] && layouts[1]);
    EXPECT_EQ(d->counters().irq_waits, 8U);
    d.reset();  // SystemC: one open tlm device at a time
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, TlmJobs, ::testing::ValuesIn(tlm_devices()),
                         [](const auto& param_info) { return param_info.param; });

// Through the driver: random shapes (tiled), both layouts, against ref and the golden model.
TEST(TlmDriver, SameBytesAsRef) {
  bool skipped = false;
  (void)open_or_skip(tlm("normcore"), &skipped);
  if (skipped) GTEST_SKIP() << "another device's SystemC model runs in this process";
  DriverOptions o;
  o.max_tile_elements = 900;
  auto acc = Accelerator::open(tlm("normcore", ",latency=12"), o);
  auto ref = Accelerator::open("ref:" + manifest_of("normcore"), o);
  const ArithSpec a = acc.manifest().config.arith();
  std::mt19937_64 rng(77);
  auto uni = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 12; ++i) {
    ParamImage im;
    im.spec = a;
    im.job.shift = static_cast<int>(uni(0, 20));
    im.job.rounding = static_cast<Rounding>(uni(0, 3));
    im.job.lo = uni(a.y_min(), 0);
    im.job.hi = uni(0, a.y_max());
    const JobShape s{static_cast<std::uint64_t>(uni(1, 3)), static_cast<std::uint64_t>(uni(1, 40)),
                     static_cast<std::uint64_t>(uni(1, 300)),
                     uni(0, 1) != 0 ? Layout::nhwc : Layout::nchw};
    for (std::uint64_t c = 0; c < s.c; ++c) {
      im.scale.push_back(uni(a.s_min(), a.s_max()));
      im.shift.push_back(uni(-(1 << 20), 1 << 20));
    }
    std::vector<std::int8_t> x(s.elements());
    for (auto& v : x) v = static_cast<std::int8_t>(uni(a.x_min(), a.x_max()));
    std::vector<std::int8_t> y(x.size()), yr(x.size());
    acc.run(acc.upload(im), view(x), view(y), s);
    ref.run(ref.upload(im), view(x), view(yr), s);
    ASSERT_EQ(y, yr) << "job " << i;
    std::vector<std::int64_t> x64(x.begin(), x.end()), want(x.size());
    apply_tensor(x64, want, im.scale, im.shift, static_cast<std::int64_t>(s.hw), s.layout, im.job);
    ASSERT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), want) << "job " << i;
  }
  EXPECT_GT(acc.stats().tiles, 12U);
}

// The driver's worker thread runs the SystemC kernel; several threads submit.
TEST(TlmDriver, AsyncQueueAndConcurrentSubmitters) {
  bool skipped = false;
  (void)open_or_skip(tlm("normcore"), &skipped);
  if (skipped) GTEST_SKIP() << "another device's SystemC model runs in this process";
  auto acc = Accelerator::open(tlm("normcore"));
  const ArithSpec a = acc.manifest().config.arith();
  std::mt19937_64 rng(5);
  struct J {
    ParamImage im;
    JobShape s;
    std::vector<std::int8_t> x, want;
  };
  std::vector<J> jobs(9);
  for (auto& j : jobs) {
    j.im.spec = a;
    j.im.job.shift = 8;
    j.im.job.lo = a.y_min();
    j.im.job.hi = a.y_max();
    j.s = JobShape{1, 1 + rng() % 20, 1 + rng() % 100, (rng() & 1) ? Layout::nhwc : Layout::nchw};
    for (std::uint64_t c = 0; c < j.s.c; ++c) {
      j.im.scale.push_back(static_cast<std::int64_t>(rng() % 600) - 300);
      j.im.shift.push_back(static_cast<std::int64_t>(rng() % 20000) - 10000);
    }
    j.x.resize(j.s.elements());
    for (auto& v : j.x) v = static_cast<std::int8_t>(rng());
    std::vector<std::int64_t> x64(j.x.begin(), j.x.end()), y(j.x.size());
    apply_tensor(x64, y, j.im.scale, j.im.shift, static_cast<std::int64_t>(j.s.hw), j.s.layout,
                 j.im.job);
    j.want.assign(y.begin(), y.end());
  }
  std::vector<std::vector<std::int8_t>> ys(jobs.size());
  std::vector<normcore::Run> runs;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ys[i].resize(jobs[i].x.size());
    runs.push_back(acc.submit(acc.upload(jobs[i].im), view(jobs[i].x), view(ys[i]), jobs[i].s));
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(runs[i].wait(60s));
    ASSERT_EQ(runs[i].state(), RunState::completed) << runs[i].error();
    EXPECT_EQ(ys[i], jobs[i].want) << i;
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < jobs.size(); i += 3) {
        std::vector<std::int8_t> y(jobs[i].x.size());
        acc.run(acc.upload(jobs[i].im), view(jobs[i].x), view(y), jobs[i].s);
        if (y != jobs[i].want) ++bad;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// The TLM memory answers TLM_GENERIC_ERROR_RESPONSE (read of SRC, write of DST): the bridge gives
// SLVERR, the job ends in the documented error state, the next job is correct.
TEST(TlmDevice, MemoryErrorEndsInTheErrorState) {
  for (const bool write : {false, true}) {
    const std::string what = write ? "fail=write" : "fail=read";
    NC_OPEN_TLM(d, tlm("normcore", ",fail_job=2,latency=12," + what));
    const Manifest& m = d->manifest();
    Runner r(*d);
    std::mt19937_64 rng(write ? 11 : 12);
    Job j = random_job(rng, m.config, 2000);
    j.layout = Layout::nchw;
    r.run_good(j, what + " job 1");
    r.program(j);
    r.start();
    const Outcome o = r.finish(j);
    EXPECT_TRUE(o.irq) << what;
    EXPECT_EQ(m.field("STATUS", "error").get(o.status), 1U) << what;
    EXPECT_EQ(m.field("STATUS", "done").get(o.status), 0U) << what;
    EXPECT_EQ(m.field("STATUS", "busy").get(o.status), 0U) << what;
    EXPECT_EQ(m.field("IRQ_STATUS", "error").get(o.irq_status), 1U) << what;
    EXPECT_EQ(o.err_code, static_cast<std::uint32_t>(m.error_codes.at(write ? "write" : "read")));
    EXPECT_EQ(o.err_code, write ? 8U : 7U) << what;
    EXPECT_EQ(o.err_addr, write ? r.dst().device_address() : r.src().device_address()) << what;
    r.run_good(random_job(rng, m.config, 2000), what + " job 3");
    d.reset();
  }
}

TEST(TlmDriver, MemoryErrorAndHangThroughTheDriver) {
  bool skipped = false;
  (void)open_or_skip(tlm("normcore"), &skipped);
  if (skipped) GTEST_SKIP() << "another device's SystemC model runs in this process";
  DriverOptions o;
  o.job_timeout = 300ms;
  auto acc = Accelerator::open(tlm("normcore", ",fail_job=1,fail=read,hang_job=2"), o);
  const ArithSpec a = acc.manifest().config.arith();
  ParamImage im;
  im.spec = a;
  im.job.shift = 6;
  im.job.lo = a.y_min();
  im.job.hi = a.y_max();
  const JobShape s{1, 8, 64, Layout::nchw};
  for (int c = 0; c < 8; ++c) {
    im.scale.push_back(3 * c - 7);
    im.shift.push_back(100 * c);
  }
  std::vector<std::int8_t> x(s.elements());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int8_t>(i * 37);
  std::vector<std::int8_t> y(x.size());
  const auto params = acc.upload(im);
  try {
    acc.run(params, view(x), view(y), s);
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("read (ERR_CODE=7"), std::string::npos) << e.what();
  }
  try {
    acc.run(params, view(x), view(y), s);
    FAIL() << "no time-out";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("soft reset done, the device is idle again"),
              std::string::npos)
        << e.what();
  }
  acc.run(params, view(x), view(y), s);  // recovered
  std::vector<std::int64_t> x64(x.begin(), x.end()), want(x.size());
  apply_tensor(x64, want, im.scale, im.shift, 64, Layout::nchw, im.job);
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), want);
  EXPECT_EQ(acc.stats().timeouts, 1U);
}

// One elaborated model per process: a second open while one is open is refused; after closing,
// the next open reuses the model from reset.
TEST(TlmDevice, OneOpenDeviceAtATimeAndReuseAfterClose) {
  NC_OPEN_TLM(d, tlm("normcore"));
  const Manifest m = d->manifest();  // a copy: used after the device is closed
  d->write32(m.offset("CHANNELS"), 37);
  const std::string e = error_of([] { (void)open_device(tlm("normcore")); });
  EXPECT_NE(e.find("one device at a time"), std::string::npos) << e;
  EXPECT_NE(e.find("SystemC"), std::string::npos) << e;
  EXPECT_EQ(d->read32(m.offset("CHANNELS")), 37U);  // the open device is unharmed
  auto buf = d->alloc(64);
  d.reset();
  EXPECT_NE(error_of([&] { buf->sync_to_device(); }).find("closed"), std::string::npos);
  auto d2 = open_device(tlm("normcore"));
  EXPECT_EQ(d2->read32(m.offset("CHANNELS")), m.reg("CHANNELS").reset);  // reset in between
  Runner r(*d2);
  std::mt19937_64 rng(3);
  r.run_good(random_job(rng, m.config, 1000), "job after reopening");
}

TEST(TlmDevice, LoaderKindCheckAndOptionErrors) {
  const std::string dir = std::string(NC_DEVICES_DIR) + "/normcore/";
  std::string e =
      error_of([&] { (void)open_device(tlm("normcore", ",lib=" + dir + "libnormcore_sim.so")); });
  EXPECT_NE(e.find("is a sim plugin, not a tlm plugin"), std::string::npos) << e;
  e = error_of([&] {
    (void)open_device("sim:" + manifest_of("normcore") + ",lib=" + dir + "libnormcore_tlm.so");
  });
  EXPECT_NE(e.find("is a tlm plugin, not a sim plugin"), std::string::npos) << e;
  e = error_of([] { (void)open_device(tlm("normcore", ",lib=/nonexistent/libx.so")); });
  EXPECT_NE(e.find("no tlm plugin for normcore"), std::string::npos) << e;
  EXPECT_NE(e.find("tlm_normcore"), std::string::npos) << e;
  e = error_of([] { (void)open_device(tlm("normcore", ",bogus=1")); });
  EXPECT_NE(e.find("unknown option 'bogus'"), std::string::npos) << e;
  EXPECT_NE(error_of([] { (void)open_device(tlm("normcore", ",fail=both")); }).find("fail"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)open_device(tlm("normcore", ",latency=x")); }).find("latency"),
            std::string::npos);
}

// Not a check: cycles per second of the SystemC model and of the plain Verilator model (the sim
// backend) on the same 1 x 64 x 56*56 job, memory latency 8 cycles on both. Run with
//   tlm_tests --gtest_also_run_disabled_tests --gtest_filter='TlmBench.*'
TEST(TlmBench, DISABLED_CyclesPerSecond) {
  const char* env = std::getenv("NC_BENCH_REPS");
  const int reps = env != nullptr ? std::max(1, std::atoi(env)) : 5;
  for (const std::string backend : {"sim", "tlm"}) {
    auto d = open_device(backend + ":" + manifest_of("normcore") + ",latency=8");
    const Job j = full_size_job(d->manifest().config, 4);
    Runner r(*d);
    double best_wall = 0, best_cpu = 0;
    std::uint32_t cycles = 0;
    for (int k = 0; k < reps; ++k) {
      const Outcome o = r.run_good(j, backend + " 1x64x56x56");
      cycles = o.perf_active;
      best_wall = std::max(best_wall, o.perf_active / o.wait_seconds);
      best_cpu = std::max(best_cpu, o.perf_active / o.wait_cpu_seconds);
    }
    std::printf(
        "[bench] %s: 1x64x56x56 int8 NCHW, PERF_ACTIVE %u cycles; best of %d: %.0f cycles/s "
        "per CPU second, %.0f cycles/s wall\n",
        backend.c_str(), cycles, reps, best_cpu, best_wall);
  }
}

#else
// ============================ the TLM module itself ============================

using Top = sim::model::Top;
constexpr std::uint64_t kBase = 0x4000'0000;
constexpr std::uint64_t kMemBytes = 16ULL << 20;
constexpr std::uint64_t kSliceCycles = 10000;

sc_core::sc_time period() {
  return sc_core::sc_time(10, sc_core::SC_NS);
}

// A stand-in for the Verilated top with the same port names and types (64-bit bus, 32-bit
// addresses): its thread plays scripted AXI4 bursts on m_axi_* that the generated RTL never
// issues (FIXED, WRAP, narrow, unaligned, sparse WSTRB), so the bridge's AXI4 -> TLM mapping is
// checked burst by burst. Its s_axil_* side never answers.
struct FakeMaster : sc_core::sc_module {
  SC_HAS_PROCESS(FakeMaster);
#define NC_IN(T, n)     \
  sc_core::sc_in<T> n { \
#n                  \
  }
#define NC_OUT(T, n)     \
  sc_core::sc_out<T> n { \
#n                   \
  }
  NC_IN(bool, clk_i);
  NC_IN(bool, rst_ni);
  NC_OUT(bool, irq_o);
  NC_IN(std::uint32_t, s_axil_awaddr);
  NC_IN(std::uint32_t, s_axil_awprot);
  NC_IN(bool, s_axil_awvalid);
  NC_OUT(bool, s_axil_awready);
  NC_IN(std::uint32_t, s_axil_wdata);
  NC_IN(std::uint32_t, s_axil_wstrb);
  NC_IN(bool, s_axil_wvalid);
  NC_OUT(bool, s_axil_wready);
  NC_OUT(std::uint32_t, s_axil_bresp);
  NC_OUT(bool, s_axil_bvalid);
  NC_IN(bool, s_axil_bready);
  NC_IN(std::uint32_t, s_axil_araddr);
  NC_IN(std::uint32_t, s_axil_arprot);
  NC_IN(bool, s_axil_arvalid);
  NC_OUT(bool, s_axil_arready);
  NC_OUT(std::uint32_t, s_axil_rdata);
  NC_OUT(std::uint32_t, s_axil_rresp);
  NC_OUT(bool, s_axil_rvalid);
  NC_IN(bool, s_axil_rready);
  NC_OUT(std::uint32_t, m_axi_awid);
  NC_OUT(std::uint32_t, m_axi_awaddr);
  NC_OUT(std::uint32_t, m_axi_awlen);
  NC_OUT(std::uint32_t, m_axi_awsize);
  NC_OUT(std::uint32_t, m_axi_awburst);
  NC_OUT(bool, m_axi_awlock);
  NC_OUT(std::uint32_t, m_axi_awcache);
  NC_OUT(std::uint32_t, m_axi_awprot);
  NC_OUT(bool, m_axi_awvalid);
  NC_IN(bool, m_axi_awready);
  NC_OUT(std::uint64_t, m_axi_wdata);
  NC_OUT(std::uint32_t, m_axi_wstrb);
  NC_OUT(bool, m_axi_wlast);
  NC_OUT(bool, m_axi_wvalid);
  NC_IN(bool, m_axi_wready);
  NC_IN(std::uint32_t, m_axi_bid);
  NC_IN(std::uint32_t, m_axi_bresp);
  NC_IN(bool, m_axi_bvalid);
  NC_OUT(bool, m_axi_bready);
  NC_OUT(std::uint32_t, m_axi_arid);
  NC_OUT(std::uint32_t, m_axi_araddr);
  NC_OUT(std::uint32_t, m_axi_arlen);
  NC_OUT(std::uint32_t, m_axi_arsize);
  NC_OUT(std::uint32_t, m_axi_arburst);
  NC_OUT(bool, m_axi_arlock);
  NC_OUT(std::uint32_t, m_axi_arcache);
  NC_OUT(std::uint32_t, m_axi_arprot);
  NC_OUT(bool, m_axi_arvalid);
  NC_IN(bool, m_axi_arready);
  NC_IN(std::uint32_t, m_axi_rid);
  NC_IN(std::uint64_t, m_axi_rdata);
  NC_IN(std::uint32_t, m_axi_rresp);
  NC_IN(bool, m_axi_rlast);
  NC_IN(bool, m_axi_rvalid);
  NC_OUT(bool, m_axi_rready);
#undef NC_IN
#undef NC_OUT

  struct Burst {
    std::uint32_t id = 0, addr = 0, len = 0, size = 3, burst = 1;
  };
  struct ReadResult {
    std::vector<std::uint64_t> data;
    std::vector<std::uint32_t> resp;
    std::uint32_t id = 0;
    bool last_ok = true;
  };

  explicit FakeMaster(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_THREAD(run);
  }
  void final() {}

  // Runs `script` in this module's thread (the kernel runs until it is done).
  void play(std::function<void(FakeMaster&)> script) {
    script_ = std::move(script);
    done_ = false;
    kick_.notify(sc_core::SC_ZERO_TIME);
    for (int i = 0; i < 100 && !done_; ++i) sc_core::sc_start(period() * 1000.0);
    EXPECT_TRUE(done_) << "the fake master's script did not finish";
  }

  std::uint32_t write(const Burst& b, const std::vector<std::uint64_t>& data,
                      const std::vector<std::uint32_t>& strb) {
    m_axi_awid.write(b.id);
    m_axi_awaddr.write(b.addr);
    m_axi_awlen.write(b.len);
    m_axi_awsize.write(b.size);
    m_axi_awburst.write(b.burst);
    m_axi_awvalid.write(true);
    do edge();
    while (!m_axi_awready.read());
    m_axi_awvalid.write(false);
    for (std::size_t i = 0; i < data.size(); ++i) {
      m_axi_wdata.write(data[i]);
      m_axi_wstrb.write(strb[i]);
      m_axi_wlast.write(i + 1 == data.size());
      m_axi_wvalid.write(true);
      do edge();
      while (!m_axi_wready.read());
    }
    m_axi_wvalid.write(false);
    m_axi_bready.write(true);
    do edge();
    while (!m_axi_bvalid.read());
    m_axi_bready.write(false);
    EXPECT_EQ(m_axi_bid.read(), b.id);
    return m_axi_bresp.read();
  }

  ReadResult read(const Burst& b) {
    ReadResult r;
    m_axi_arid.write(b.id);
    m_axi_araddr.write(b.addr);
    m_axi_arlen.write(b.len);
    m_axi_arsize.write(b.size);
    m_axi_arburst.write(b.burst);
    m_axi_arvalid.write(true);
    do edge();
    while (!m_axi_arready.read());
    m_axi_arvalid.write(false);
    m_axi_rready.write(true);
    for (;;) {
      edge();
      if (!m_axi_rvalid.read()) continue;
      r.data.push_back(m_axi_rdata.read());
      r.resp.push_back(m_axi_rresp.read());
      r.id = m_axi_rid.read();
      const bool last = m_axi_rlast.read();
      if (last != (r.data.size() == b.len + 1U)) r.last_ok = false;
      if (last || r.data.size() > b.len + 1U) break;
    }
    m_axi_rready.write(false);
    return r;
  }

 private:
  void edge() {
    wait(clk_i.posedge_event());
  }
  void run() {
    for (;;) {
      while (!script_) wait(kick_);
      while (!rst_ni.read()) edge();
      edge();
      auto s = std::move(script_);
      script_ = nullptr;
      s(*this);
      done_ = true;
      sc_core::sc_pause();
    }
  }
  std::function<void(FakeMaster&)> script_;
  bool done_ = false;
  sc_core::sc_event kick_;
};

struct Bench : sc_core::sc_module {
  SC_HAS_PROCESS(Bench);
  vp::TlmAccelerator<Top> acc;
  vp::TlmMemory<32> mem;
  vp::HostPort cpu;
  // The bridge around the fake master, on its own memory at 0.
  vp::TlmAccelerator<FakeMaster> fake;
  vp::TlmMemory<32> fake_mem;
  vp::HostPort fake_cpu;
  bool pause_on_irq = false;

  static vp::BridgeConfig config() {
    vp::BridgeConfig c;
    c.clock_period = period();
    return c;
  }
  explicit Bench(const sc_core::sc_module_name& name)
      : sc_core::sc_module(name),
        acc("acc", config()),
        mem("mem", kBase, kMemBytes, period() * 8.0),
        cpu("cpu", period() * static_cast<double>(kSliceCycles)),
        fake("fake", config()),
        fake_mem("fake_mem", 0, 0x10000, period() * 3.0),
        fake_cpu("fake_cpu", period()) {
    cpu.socket.bind(acc.regs);
    acc.dma.bind(mem.socket);
    fake_cpu.socket.bind(fake.regs);
    fake.dma.bind(fake_mem.socket);
    SC_METHOD(on_irq);
    sensitive << acc.irq;
    dont_initialize();
  }
  void on_irq() {
    if (pause_on_irq && acc.irq.read()) sc_core::sc_pause();
  }
  void settle_reset() {
    for (int i = 0; i < 100 && acc.in_reset(); ++i) sc_core::sc_start(period() * 10.0);
  }
};

// Elaborated on first use, reset (and the memory cleared) for every test.
Bench& bench() {
  static Bench* b = [] {
    auto* p = new Bench("bench");
    p->settle_reset();
    return p;
  }();
  return *b;
}
Bench& fresh_bench() {
  Bench& b = bench();
  b.acc.reset();
  b.settle_reset();
  b.mem.clear();
  b.mem.set_fault(std::nullopt);
  b.mem.set_latency(period() * 8.0);
  b.acc.clear_violations();
  return b;
}

struct Access {
  tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
  std::uint32_t data = 0;
  std::uint64_t cycles = 0;
};
Access reg_access(tlm::tlm_command cmd, std::uint64_t addr, std::uint32_t data = 0,
                  unsigned len = 4, std::vector<std::uint8_t> be = {}) {
  Bench& b = bench();
  Access a;
  std::vector<std::uint8_t> buf(std::max(len, 4U), 0);
  std::memcpy(buf.data(), &data, 4);
  const std::uint64_t c0 = b.acc.cycles();
  const bool done =
      b.cpu.access(cmd, addr, buf.data(), len, &a.status, be.empty() ? nullptr : be.data(),
                   static_cast<unsigned>(be.size()));
  EXPECT_TRUE(done);
  a.cycles = b.acc.cycles() - c0;
  std::memcpy(&a.data, buf.data(), 4);
  return a;
}
Access rd(std::uint64_t addr) {
  return reg_access(tlm::TLM_READ_COMMAND, addr);
}
Access wr(std::uint64_t addr, std::uint32_t v) {
  return reg_access(tlm::TLM_WRITE_COMMAND, addr, v);
}

// A normcore::Device over the bench, so jobs reuse the Runner: registers through the HostPort,
// buffers carved from the TlmMemory (back door), wait_irq runs the kernel in slices.
class BenchDevice final : public Device {
 public:
  explicit BenchDevice(Bench& b)
      : Device("bench", load_manifest(manifest_of("normcore"))), b_(b), next_(kBase) {}
  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    const std::uint64_t a = std::max<std::uint64_t>(align, 64);
    next_ = (next_ + a - 1) / a * a;
    auto buf = std::make_unique<Buffer>(b_, next_, bytes);
    next_ += bytes;
    if (next_ > kBase + kMemBytes) throw DeviceError("bench memory full");
    return buf;
  }
  bool wait_irq(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    b_.pause_on_irq = true;
    while (!b_.acc.irq.read() && std::chrono::steady_clock::now() < deadline) {
      sc_core::sc_start(period() * static_cast<double>(kSliceCycles));
    }
    b_.pause_on_irq = false;
    return b_.acc.irq.read();
  }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override {
    const Access a = rd(offset);
    if (a.status != tlm::TLM_OK_RESPONSE) throw DeviceError("read error");
    return a.data;
  }
  void do_write32(std::uint32_t offset, std::uint32_t value) override {
    if (wr(offset, value).status != tlm::TLM_OK_RESPONSE) throw DeviceError("write error");
  }

 private:
  class Buffer final : public DmaBuffer {
   public:
    Buffer(Bench& b, std::uint64_t addr, std::size_t n) : b_(b), addr_(addr), shadow_(n, 0) {}
    [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
    [[nodiscard]] std::size_t size() const override { return shadow_.size(); }
    [[nodiscard]] std::span<std::uint8_t> map() override { return shadow_; }
    void sync_to_device(std::size_t off, std::size_t n) override {
      b_.mem.write(addr_ + off, std::span<const std::uint8_t>(shadow_).subspan(off, n));
    }
    void sync_from_device(std::size_t off, std::size_t n) override {
      b_.mem.read(addr_ + off, std::span<std::uint8_t>(shadow_).subspan(off, n));
    }

   private:
    Bench& b_;
    std::uint64_t addr_;
    std::vector<std::uint8_t> shadow_;
  };
  Bench& b_;
  std::uint64_t next_;
};

TEST(TlmBridge, RegisterSocketStatuses) {
  Bench& b = fresh_bench();
  const Manifest m = load_manifest(manifest_of("normcore"));
  const auto before = b.acc.stats();

  Access a = rd(m.offset("ID"));
  EXPECT_EQ(a.status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(a.data, m.reg("ID").reset);
  // An AXI4-Lite access takes a few clock cycles of simulated time.
  EXPECT_GE(a.cycles, 2U);
  EXPECT_LE(a.cycles, 8U);
  EXPECT_EQ(wr(m.offset("CHANNELS"), 300).status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(rd(m.offset("CHANNELS")).data, 300U);

  // Unmapped offsets: the register block answers SLVERR -> TLM_GENERIC_ERROR_RESPONSE.
  std::uint32_t unmapped = m.window_bytes() - 4;
  while (m.find_reg(unmapped) != nullptr) unmapped -= 4;
  EXPECT_EQ(rd(unmapped).status, tlm::TLM_GENERIC_ERROR_RESPONSE);
  EXPECT_EQ(wr(unmapped, 5).status, tlm::TLM_GENERIC_ERROR_RESPONSE);
  EXPECT_EQ(b.acc.stats().reg_errors - before.reg_errors, 2U);

  // Refused by the TLM checks without an AXI4-Lite transaction.
  const auto pins = b.acc.stats().reg_reads + b.acc.stats().reg_writes;
  EXPECT_EQ(reg_access(tlm::TLM_READ_COMMAND, m.offset("CHANNELS"), 0, 2).status,
            tlm::TLM_BURST_ERROR_RESPONSE);  // 16-bit
  EXPECT_EQ(reg_access(tlm::TLM_WRITE_COMMAND, m.offset("CHANNELS"), 0, 1).status,
            tlm::TLM_BURST_ERROR_RESPONSE);  // 8-bit
  EXPECT_EQ(reg_access(tlm::TLM_READ_COMMAND, m.offset("SRC_LO"), 0, 8).status,
            tlm::TLM_BURST_ERROR_RESPONSE);                                         // 64-bit burst
  EXPECT_EQ(rd(m.offset("CHANNELS") + 2).status, tlm::TLM_ADDRESS_ERROR_RESPONSE);  // misaligned
  EXPECT_EQ(rd(m.window_bytes()).status, tlm::TLM_ADDRESS_ERROR_RESPONSE);  // outside the window
  EXPECT_EQ(
      reg_access(tlm::TLM_WRITE_COMMAND, m.offset("CHANNELS"), 1, 4, {0xFF, 0x12, 0, 0}).status,
      tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  EXPECT_EQ(b.acc.stats().reg_reads + b.acc.stats().reg_writes, pins);
  EXPECT_EQ(b.acc.stats().reg_rejected - before.reg_rejected, 6U);
  EXPECT_EQ(rd(m.offset("CHANNELS")).data, 300U);

  // Byte enables: WSTRB on writes, a masked copy on reads.
  EXPECT_EQ(wr(m.offset("SRC_LO"), 0x11223344).status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(reg_access(tlm::TLM_WRITE_COMMAND, m.offset("SRC_LO"), 0xAABBCCDD, 4,
                       {0xFF, 0x00, 0x00, 0xFF})
                .status,
            tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(rd(m.offset("SRC_LO")).data, 0xAA2233DDU);
  Access masked =
      reg_access(tlm::TLM_READ_COMMAND, m.offset("SRC_LO"), 0x55555555, 4, {0x00, 0xFF});
  EXPECT_EQ(masked.status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(masked.data, 0xAA553355U);  // the pattern repeats: bytes 1 and 3 are read

  // No DMI, no debug access, and the ignore command is a no-op.
  tlm::tlm_generic_payload gp;
  tlm::tlm_dmi dmi;
  gp.set_address(m.offset("ID"));
  gp.set_command(tlm::TLM_READ_COMMAND);
  EXPECT_FALSE(b.cpu.socket->get_direct_mem_ptr(gp, dmi));
  std::uint32_t v = 0;
  gp.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
  gp.set_data_length(4);
  EXPECT_EQ(b.cpu.socket->transport_dbg(gp), 0U);
  EXPECT_EQ(reg_access(tlm::TLM_IGNORE_COMMAND, m.offset("ID")).status, tlm::TLM_OK_RESPONSE);
  EXPECT_TRUE(b.acc.stats().violations.empty());
}

// A job through the bench: one TLM transaction per DMA burst, bit-exact, irq high at the end.
TEST(TlmBridge, JobBurstsAsTransactions) {
  Bench& b = fresh_bench();
  BenchDevice d(b);
  Runner r(d);
  std::mt19937_64 rng(9);
  const auto before = b.acc.stats();
  for (int k = 0; k < 4; ++k) {
    Job j = random_job(rng, d.manifest().config, 5000);
    j.layout = k % 2 == 0 ? Layout::nchw : Layout::nhwc;
    r.run_good(j, "bench job " + std::to_string(k));
  }
  const auto& s = b.acc.stats();
  const auto bursts =
      (s.dma_read_bursts - before.dma_read_bursts) + (s.dma_write_bursts - before.dma_write_bursts);
  EXPECT_GT(s.dma_read_bursts, before.dma_read_bursts);
  EXPECT_GT(s.dma_write_bursts, before.dma_write_bursts);
  EXPECT_EQ(s.dma_transactions - before.dma_transactions, bursts);  // aligned INCR bursts
  EXPECT_EQ(s.dma_errors, before.dma_errors);
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
}

// Error statuses of the memory: TLM_ADDRESS_ERROR_RESPONSE (DECERR) on a read and
// TLM_GENERIC_ERROR_RESPONSE (SLVERR) on a write both end in the documented error state.
TEST(TlmBridge, MemoryErrorStatusesBecomeErrCode) {
  Bench& b = fresh_bench();
  BenchDevice d(b);
  const Manifest& m = d.manifest();
  Runner r(d);
  std::mt19937_64 rng(13);
  struct Case {
    bool write;
    tlm::tlm_response_status status;
    std::uint32_t code;
  };
  for (const Case c : {Case{false, tlm::TLM_ADDRESS_ERROR_RESPONSE, 7},
                       Case{false, tlm::TLM_GENERIC_ERROR_RESPONSE, 7},
                       Case{true, tlm::TLM_GENERIC_ERROR_RESPONSE, 8},
                       Case{true, tlm::TLM_ADDRESS_ERROR_RESPONSE, 8}}) {
    const std::string what =
        std::string(c.write ? "write" : "read") + " status " + std::to_string(c.status);
    Job j = random_job(rng, m.config, 3000);
    r.stage(j);
    r.program(j);
    b.mem.set_fault(vp::TlmMemory<32>::Fault{
        c.write, c.write ? r.dst().device_address() : r.src().device_address(), c.status});
    const auto errors = b.acc.stats().dma_errors;
    r.start();
    const Outcome o = r.finish(j);
    b.mem.set_fault(std::nullopt);
    EXPECT_TRUE(o.irq) << what;
    EXPECT_EQ(m.field("STATUS", "error").get(o.status), 1U) << what;
    EXPECT_EQ(m.field("STATUS", "busy").get(o.status), 0U) << what;
    EXPECT_EQ(m.field("IRQ_STATUS", "error").get(o.irq_status), 1U) << what;
    EXPECT_EQ(o.err_code, c.code) << what;
    EXPECT_EQ(o.err_addr, c.write ? r.dst().device_address() : r.src().device_address()) << what;
    EXPECT_GT(b.acc.stats().dma_errors, errors) << what;
    EXPECT_FALSE(b.acc.irq.read()) << what << ": IRQ_STATUS was cleared";
    r.run_good(random_job(rng, m.config, 3000), what + ": the next job");
  }
  EXPECT_TRUE(b.acc.stats().violations.empty());
}

// AXI4 bursts of every kind from the fake master: addresses, lengths, byte enables and the
// number of TLM transactions; error statuses as RRESP/BRESP on every beat.
TEST(TlmBridge, AxiBurstKindsBecomeTheRightTransactions) {
  Bench& b = fresh_bench();
  b.fake_mem.clear();
  auto bytes = [&b](std::uint32_t addr, std::size_t n) {
    std::vector<std::uint8_t> v(n);
    b.fake_mem.read(addr, v);
    return v;
  };
  auto word = [&b](std::uint32_t addr) {
    std::uint64_t v = 0;
    std::uint8_t raw[8];
    b.fake_mem.read(addr, raw);
    for (int i = 7; i >= 0; --i) v = (v << 8) | raw[i];
    return v;
  };
  const std::uint64_t D[4] = {0x0706050403020100ULL, 0x1716151413121110ULL, 0x2726252423222120ULL,
                              0x3736353433323130ULL};
  std::uint64_t tx = b.fake.stats().dma_transactions;
  auto transactions = [&] {
    const std::uint64_t n = b.fake.stats().dma_transactions - tx;
    tx = b.fake.stats().dma_transactions;
    return n;
  };
  std::uint32_t resp = 9;
  FakeMaster::ReadResult rr;

  // FIXED, 4 beats of 4 bytes at 0x104 (lanes 4..7): one transaction per beat at 0x104; the
  // last beat writes only lanes 4 and 5.
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({1, 0x104, 3, 2, 0}, {D[0], D[1], D[2], D[3]}, {0xF0, 0xF0, 0xF0, 0x30});
  });
  EXPECT_EQ(resp, 0U);
  EXPECT_EQ(transactions(), 4U);
  EXPECT_EQ(bytes(0x104, 4), (std::vector<std::uint8_t>{0x34, 0x35, 0x26, 0x27}));
  EXPECT_EQ(bytes(0x100, 4), (std::vector<std::uint8_t>{0, 0, 0, 0}));

  // WRAP, 4 beats of 8 bytes from 0x210: 0x210, 0x218, 0x200, 0x208.
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({2, 0x210, 3, 3, 2}, {D[0], D[1], D[2], D[3]}, {0xFF, 0xFF, 0xFF, 0xFF});
  });
  EXPECT_EQ(resp, 0U);
  EXPECT_EQ(transactions(), 4U);
  EXPECT_EQ(word(0x210), D[0]);
  EXPECT_EQ(word(0x218), D[1]);
  EXPECT_EQ(word(0x200), D[2]);
  EXPECT_EQ(word(0x208), D[3]);
  b.fake.rtl.play([&](FakeMaster& m) { rr = m.read({3, 0x210, 3, 3, 2}); });
  EXPECT_EQ(rr.data, (std::vector<std::uint64_t>{D[0], D[1], D[2], D[3]}));
  EXPECT_EQ(rr.id, 3U);
  EXPECT_TRUE(rr.last_ok);
  EXPECT_EQ(transactions(), 4U);

  // Narrow, unaligned INCR: 3 beats of 4 bytes from 0x302: lanes 2..3, 4..7, then 0..3 of 0x308.
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({4, 0x302, 2, 2, 1}, {D[0], D[1], D[2]}, {0xFF, 0xFF, 0xFF});
  });
  EXPECT_EQ(transactions(), 3U);
  EXPECT_EQ(bytes(0x300, 12), (std::vector<std::uint8_t>{0, 0, 0x02, 0x03, 0x14, 0x15, 0x16, 0x17,
                                                         0x20, 0x21, 0x22, 0x23}));
  EXPECT_EQ(bytes(0x30C, 4), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  // FIXED narrow read: both beats carry lanes 4..7 of 0x104.
  b.fake.rtl.play([&](FakeMaster& m) { rr = m.read({5, 0x104, 1, 2, 0}); });
  ASSERT_EQ(rr.data.size(), 2U);
  EXPECT_EQ(rr.data[0] >> 32, 0x27263534U);
  EXPECT_EQ(rr.data[1] >> 32, 0x27263534U);
  EXPECT_EQ(transactions(), 2U);

  // Aligned full-width INCR with sparse WSTRB: one transaction with byte enables.
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({6, 0x400, 1, 3, 1}, {D[2], D[3]}, {0x0F, 0xC0});
  });
  EXPECT_EQ(transactions(), 1U);
  EXPECT_EQ(bytes(0x400, 16), (std::vector<std::uint8_t>{0x20, 0x21, 0x22, 0x23, 0, 0, 0, 0, 0, 0,
                                                         0, 0, 0, 0, 0x36, 0x37}));
  b.fake.rtl.play([&](FakeMaster& m) { rr = m.read({7, 0x400, 1, 3, 1}); });
  EXPECT_EQ(transactions(), 1U);
  EXPECT_EQ(rr.data, (std::vector<std::uint64_t>{0x23222120ULL, 0x3736000000000000ULL}));

  // Errors: outside the memory (TLM_ADDRESS_ERROR_RESPONSE -> DECERR on every beat and on B), a
  // generic error (SLVERR); memory untouched.
  b.fake.rtl.play([&](FakeMaster& m) { rr = m.read({8, 0xFFF0, 3, 3, 1}); });
  EXPECT_EQ(rr.resp, (std::vector<std::uint32_t>{3, 3, 3, 3}));
  EXPECT_TRUE(rr.last_ok);
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({9, 0xFFF8, 1, 3, 1}, {D[0], D[1]}, {0xFF, 0xFF});
  });
  EXPECT_EQ(resp, 3U);
  b.fake_mem.set_fault(vp::TlmMemory<32>::Fault{true, 0x508, tlm::TLM_GENERIC_ERROR_RESPONSE});
  b.fake.rtl.play([&](FakeMaster& m) {
    resp = m.write({10, 0x500, 1, 3, 1}, {D[0], D[1]}, {0xFF, 0xFF});
  });
  EXPECT_EQ(resp, 2U);
  EXPECT_EQ(bytes(0x500, 16), std::vector<std::uint8_t>(16, 0));
  b.fake_mem.set_fault(vp::TlmMemory<32>::Fault{false, 0x210, tlm::TLM_GENERIC_ERROR_RESPONSE});
  b.fake.rtl.play([&](FakeMaster& m) { rr = m.read({11, 0x200, 3, 3, 1}); });
  EXPECT_EQ(rr.resp, (std::vector<std::uint32_t>{2, 2, 2, 2}));
  b.fake_mem.set_fault(std::nullopt);
  EXPECT_TRUE(b.fake.stats().violations.empty()) << b.fake.stats().violations.front();
}

// The memory's annotated delay is the read latency the RTL sees: more latency, more cycles.
TEST(TlmBridge, AnnotatedLatencyCostsCycles) {
  Bench& b = fresh_bench();
  BenchDevice d(b);
  Runner r(d);
  std::mt19937_64 rng(21);
  Job j = random_job(rng, d.manifest().config, 1);
  j.channels = 16;
  j.inner = 500;
  j.outer = 1;
  j.layout = Layout::nchw;
  j.scale.assign(16, 3);
  j.shift.assign(16, -5);
  j.x.assign(j.elements(), 7);
  std::uint32_t cycles[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    b.mem.set_latency(period() * (k == 0 ? 1.0 : 400.0));
    cycles[k] = r.run_good(j, k == 0 ? "latency 1" : "latency 400").perf_active;
  }
  std::printf("PERF_ACTIVE: %u cycles at latency 1, %u at latency 400\n", cycles[0], cycles[1]);
  EXPECT_GT(cycles[1], cycles[0] + 400);
}

#endif

}  // namespace
}  // namespace normcore

#ifdef NC_TLM_BRIDGE_TESTS
// libsystemc.so's main() calls sc_main: run GoogleTest from it.
int sc_main(int argc, char* argv[]) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
#endif
