// The `sim` backend through the public device API only (open_device("sim:<manifest>,...")): the
// Verilated accelerator loaded from its plugin (sim/models.cmake, sim/sim_plugin.cpp). Registers
// against the manifest, jobs programmed by hand from the manifest's register map and compared
// bit-exactly with the golden model on every generated device, DMA buffers, fault injection
// (fail_job, hang_job), the VCD trace and the loader's errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device_jobs.hpp"
#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"

namespace normcore {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace device_jobs;

std::string sim(const std::string& device, const std::string& options = "") {
  return "sim:" + manifest_of(device) + options;
}
std::vector<std::string> all_devices() {
  std::vector<std::string> v;
  std::stringstream ss(NC_SIM_DEVICES);
  for (std::string d; std::getline(ss, d, ',');) {
    if (!d.empty()) v.push_back(d);
  }
  return v;
}

// A fresh directory under the system temp directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("nc_sim_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path path;
};

TEST(SimDevice, IdentificationMatchesTheManifest) {
  for (const auto& name : all_devices()) {
    auto d = open_device(sim(name));
    const Manifest& m = d->manifest();
    EXPECT_EQ(m.config.name, name);
    EXPECT_EQ(d->name(), sim(name));
    EXPECT_TRUE(d->has_irq());
    for (const char* reg : {"ID", "VERSION", "CAPS0", "CAPS1", "CAPS2", "CAPS3"}) {
      EXPECT_EQ(d->read32(m.offset(reg)), m.reg(reg).reset) << name << " " << reg;
    }
    // Job registers start at their reset values.
    for (const char* reg : {"CHANNELS", "INNER", "OUTER", "MODE", "CLAMP_LO", "CLAMP_HI", "CTRL",
                            "STATUS", "IRQ_STATUS", "ERR_CODE"}) {
      EXPECT_EQ(d->read32(m.offset(reg)), m.reg(reg).reset) << name << " " << reg;
    }
  }
}

TEST(SimDevice, RegistersReadBackAndOffsetsAreChecked) {
  auto d = open_device(sim("normcore"));
  const Manifest& m = d->manifest();
  d->write32(m.offset("CHANNELS"), 37);
  EXPECT_EQ(d->read32(m.offset("CHANNELS")), 37U);
  d->write32(m.offset("SRC_LO"), 0x12345678);
  d->write32(m.offset("DST_HI"), 0x9ABCDEF0);
  EXPECT_EQ(d->read32(m.offset("SRC_LO")), 0x12345678U);
  EXPECT_EQ(d->read32(m.offset("DST_HI")), 0x9ABCDEF0U);
  EXPECT_EQ(d->counters().writes, 3U);
  EXPECT_EQ(d->counters().reads, 3U);

  // Outside the window or misaligned: rejected before any access.
  const std::uint32_t win = m.window_bytes();
  EXPECT_NE(error_of([&] { (void)d->read32(win); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { d->write32(win + 4, 1); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)d->read32(2); }).find("aligned"), std::string::npos);
  EXPECT_EQ(d->counters().reads, 3U);

  // Inside the window but unmapped: the register block answers SLVERR.
  std::uint32_t unmapped = win - 4;
  while (m.find_reg(unmapped) != nullptr) unmapped -= 4;
  const std::string e = error_of([&] { (void)d->read32(unmapped); });
  EXPECT_NE(e.find("SLVERR"), std::string::npos) << e;
  char off[16];
  std::snprintf(off, sizeof off, "0x%X", unmapped);
  EXPECT_NE(e.find(off), std::string::npos) << e;
  // The device still works afterwards.
  EXPECT_EQ(d->read32(m.offset("ID")), m.reg("ID").reset);
}

TEST(SimDevice, JobsBitExactOnEveryDevice) {
  const char* options[] = {"", ",latency=1", ",latency=40,stall=0.3,seed=7",
                           ",latency=100,stall=0.1,seed=3", ",latency=3,stall=0.6,seed=9"};
  for (const auto& name : all_devices()) {
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    for (const char* opt : options) {
      auto d = open_device(sim(name, opt));
      Runner r(*d);
      const int jobs = 8;
      for (int k = 0; k < jobs && !HasFailure(); ++k) {
        const Job j = random_job(rng, d->manifest().config, k == 0 ? 30000 : 4000);
        r.run_good(j, name + opt + " job " + std::to_string(k) +
                          " C=" + std::to_string(j.channels) + " HW=" + std::to_string(j.inner) +
                          " N=" + std::to_string(j.outer));
      }
      EXPECT_EQ(d->counters().irq_waits, static_cast<std::uint64_t>(jobs));
      EXPECT_EQ(d->counters().buffers, static_cast<std::uint64_t>(3 * jobs));
    }
  }
}

// The demo's shape on the default device: 1x64x56x56, NCHW, under latency and stalls.
TEST(SimDevice, FullSizeJobBitExact) {
  auto d = open_device(sim("normcore", ",latency=64,stall=0.2,seed=4"));
  const DeviceConfig& c = d->manifest().config;
  std::mt19937_64 rng(4);
  Job j = random_job(rng, c, 1);
  j.channels = std::min(64, c.max_channels);
  j.inner = 56 * 56;
  j.outer = 1;
  j.layout = Layout::nchw;
  j.scale.clear();
  j.shift.clear();
  const Job params = random_job(rng, c, 1);
  for (int ch = 0; ch < j.channels; ++ch) {
    j.scale.push_back(params.scale[0] + ch);
    j.shift.push_back(params.shift[0] - 3 * ch);
  }
  std::uniform_int_distribution<std::int64_t> xd(c.arith().x_min(), c.arith().x_max());
  j.x.resize(j.elements());
  for (auto& v : j.x) v = xd(rng);
  Runner r(*d);
  r.run_good(j, "1x64x56x56");
  EXPECT_GT(r.rd("PERF_ACTIVE"), j.elements() / static_cast<std::uint64_t>(c.lanes));
}

TEST(SimDevice, BuffersAreAlignedBoundsCheckedAndCounted) {
  auto d = open_device(sim("nc_small", ",mem=65536"));
  const auto bus = static_cast<std::uint64_t>(d->manifest().config.bus_bytes());
  auto a = d->alloc(5, 1);
  auto b = d->alloc(100, 256);
  EXPECT_GE(a->device_address(), 0x40000000U);
  EXPECT_EQ(a->device_address() % bus, 0U);
  EXPECT_EQ(b->device_address() % 256, 0U);
  EXPECT_GE(b->device_address(), a->device_address() + 5);
  EXPECT_EQ(a->size(), 5U);
  EXPECT_EQ(a->map().size(), 5U);
  EXPECT_EQ(d->counters().buffers, 2U);
  EXPECT_EQ(d->counters().buffer_bytes, 105U);

  // Round trip through the device memory.
  for (std::size_t i = 0; i < b->size(); ++i) b->map()[i] = static_cast<std::uint8_t>(i * 7);
  b->sync_to_device(10, 20);
  std::fill(b->map().begin(), b->map().end(), std::uint8_t{0});
  b->sync_from_device();
  for (std::size_t i = 0; i < b->size(); ++i) {
    EXPECT_EQ(b->map()[i], i >= 10 && i < 30 ? static_cast<std::uint8_t>(i * 7) : 0) << i;
  }

  EXPECT_THROW(b->sync_to_device(90, 11), DeviceError);
  EXPECT_THROW(b->sync_from_device(101, 0), DeviceError);
  EXPECT_NO_THROW(b->sync_from_device(100, 0));
  EXPECT_THROW((void)d->alloc(0), DeviceError);
  EXPECT_THROW((void)d->alloc(8, 24), DeviceError);
  EXPECT_NE(error_of([&] { (void)d->alloc(1 << 20); }).find("out of device memory"),
            std::string::npos);
  b.reset();
  EXPECT_EQ(d->counters().buffer_bytes, 5U);
  auto c = d->alloc(60000);  // the space of b came back
  EXPECT_EQ(d->counters().buffers, 3U);

  // A buffer may outlive its device.
  d.reset();
  EXPECT_THROW(a->sync_to_device(), DeviceError);
  a.reset();
  c.reset();
}

// DMA outside every live buffer is an AXI violation, reported once.
TEST(SimDevice, DmaOutsideTheBuffersIsAViolation) {
  auto d = open_device(sim("normcore"));
  Runner r(*d);
  std::mt19937_64 rng(5);
  const Job j = random_job(rng, d->manifest().config, 500);
  r.stage(j);
  r.program(j);
  r.wr("DST_LO", 0x70000000);  // no buffer there
  r.wr("DST_HI", 0);
  r.start();
  const std::string e = error_of([&] { (void)d->wait_irq(5s); });
  EXPECT_NE(e.find("sim: AXI protocol violation: "), std::string::npos) << e;
  EXPECT_NE(e.find("write outside the allowed regions"), std::string::npos) << e;
  EXPECT_NO_THROW((void)d->wait_irq(5s));  // once
}

TEST(SimDevice, FailJobReadAndWrite) {
  for (const bool write : {false, true}) {
    const std::string what = write ? "fail=write" : "fail=read";
    auto d = open_device(sim("normcore", ",fail_job=2,latency=12,stall=0.1," + what));
    const Manifest& m = d->manifest();
    Runner r(*d);
    std::mt19937_64 rng(write ? 11 : 12);
    Job j = random_job(rng, m.config, 2000);
    j.layout = Layout::nchw;
    r.run_good(j, what + " job 1");
    // Job 2 on the same buffers: SLVERR at SRC (DST).
    r.program(j);
    r.start();
    const Outcome o = r.finish(j);
    EXPECT_TRUE(o.irq) << what;
    EXPECT_EQ(m.field("STATUS", "error").get(o.status), 1U) << what;
    EXPECT_EQ(m.field("STATUS", "busy").get(o.status), 0U) << what;
    EXPECT_EQ(m.field("IRQ_STATUS", "error").get(o.irq_status), 1U) << what;
    EXPECT_EQ(o.err_code, static_cast<std::uint32_t>(m.error_codes.at(write ? "write" : "read")))
        << what;
    EXPECT_EQ(o.err_code, write ? 8U : 7U) << what;
    EXPECT_EQ(o.err_addr, write ? r.dst().device_address() : r.src().device_address()) << what;
    // Job 3: the fault is gone.
    r.run_good(random_job(rng, m.config, 2000), what + " job 3");
  }
}

TEST(SimDevice, HangJobRecoversWithSoftReset) {
  auto d = open_device(sim("normcore", ",hang_job=1,latency=4"));
  const Manifest& m = d->manifest();
  Runner r(*d);
  std::mt19937_64 rng(21);
  const Job j = random_job(rng, m.config, 2000);
  r.stage(j);
  r.program(j);
  r.start();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(d->wait_irq(200ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_EQ(r.field("STATUS", "busy"), 1U);
  r.wr("CTRL", m.field("CTRL", "soft_reset").put(0, 1));
  int polls = 0;
  while (r.field("STATUS", "busy") != 0 && polls < 200) ++polls;
  EXPECT_LT(polls, 200) << "still busy after the soft reset";
  const std::uint32_t st = r.rd("STATUS");
  EXPECT_EQ(m.field("STATUS", "done").get(st), 0U);
  EXPECT_EQ(m.field("STATUS", "error").get(st), 0U);
  // The next job runs normally.
  r.run_good(random_job(rng, m.config, 2000), "job after the hang");
}

TEST(SimDevice, TraceWritesAVcd) {
  TempDir tmp;
  const fs::path vcd = tmp.path / "wave.vcd";
  {
    auto d = open_device(sim("nc_small", ",trace=" + vcd.string()));
    Runner r(*d);
    std::mt19937_64 rng(3);
    r.run_good(random_job(rng, d->manifest().config, 50), "traced job");
  }
  ASSERT_TRUE(fs::exists(vcd));
  EXPECT_GT(fs::file_size(vcd), 1000U);
  std::ifstream in(vcd);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("$enddefinitions"), std::string::npos);
  EXPECT_NE(text.find("irq_o"), std::string::npos);
  // An unwritable trace path is an error.
  EXPECT_NE(error_of([&] {
              (void)open_device(sim("nc_small", ",trace=/nonexistent/dir/x.vcd"));
            }).find("trace"),
            std::string::npos);
}

// Issue 15 item 8: timescale 1 ps, one clock = the manifest's period (100 MHz: 10000 ps), clock k
// at k*P and k*P + P/2, only clocks trace_from..trace_to; a .fst name needs the FST build.
TEST(SimDevice, TraceTimescaleAndWindow) {
  TempDir tmp;
  const fs::path vcd = tmp.path / "win.vcd";
  {
    auto d = open_device(sim("nc_small", ",trace=" + vcd.string() + ",trace_from=10,trace_to=20"));
    ASSERT_EQ(d->manifest().config.accel.core.clock_mhz, 100);
    Runner r(*d);
    std::mt19937_64 rng(4);
    r.run_good(random_job(rng, d->manifest().config, 50), "traced job");
  }
  std::ifstream in(vcd);
  std::vector<std::string> times;
  bool ps = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "$timescale 1ps $end") ps = true;
    if (!line.empty() && line[0] == '#') times.push_back(line);
  }
  EXPECT_TRUE(ps) << "timescale is not 1ps";
  ASSERT_FALSE(times.empty());
  EXPECT_EQ(times.front(), "#100000");
  EXPECT_EQ(times.back(), "#205000");
  EXPECT_LE(times.size(), 22U);
  EXPECT_NE(error_of([&] {
              (void)open_device(sim("nc_small", ",trace=" + (tmp.path / "x.fst").string()));
            }).find("FST"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)open_device(sim("nc_small", ",trace=x.vcd,trace_from=5,trace_to=4"));
            }).find("trace_to=4 is before trace_from=5"),
            std::string::npos);
}

TEST(SimDevice, LoaderAndOptionErrorsAreClear) {
  // lib= naming a missing file.
  std::string e = error_of([] { (void)open_device(sim("normcore", ",lib=/nonexistent/libx.so")); });
  EXPECT_NE(e.find("/nonexistent/libx.so"), std::string::npos) << e;
  EXPECT_NE(e.find("normcore sim-build"), std::string::npos) << e;

  // lib= naming a file that is not a shared object.
  TempDir tmp;
  const fs::path junk = tmp.path / "junk.so";
  std::ofstream(junk) << "not an ELF file\n";
  e = error_of([&] { (void)open_device(sim("normcore", ",lib=" + junk.string())); });
  EXPECT_NE(e.find("cannot load sim plugin"), std::string::npos) << e;

  // A plugin of another ABI version.
  e = error_of([] { (void)open_device(sim("normcore", ",lib=" NC_FAKE_ABI_PLUGIN)); });
  EXPECT_NE(e.find("ABI version 999"), std::string::npos) << e;

  // A manifest whose config was edited (lanes), with the real plugin.
  std::ifstream in(manifest_of("normcore"));
  auto j = nlohmann::json::parse(in);
  j["config"]["lanes"] = j["config"]["lanes"].get<int>() + 1;
  fs::create_directories(tmp.path / "rtl");
  const fs::path edited = tmp.path / "rtl" / "manifest.json";
  std::ofstream(edited) << j.dump(2);
  const std::string plugin = std::string(NC_DEVICES_DIR) + "/normcore/libnormcore_sim.so";
  e = error_of([&] { (void)open_device("sim:" + edited.string() + ",lib=" + plugin); });
  EXPECT_NE(e.find("manifest mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find(edited.string()), std::string::npos) << e;
  EXPECT_NE(e.find("lanes"), std::string::npos) << e;

  // No plugin beside a manifest: both places tried are named.
  e = error_of([&] { (void)open_device("sim:" + edited.string()); });
  EXPECT_NE(e.find("no sim plugin"), std::string::npos) << e;
  EXPECT_NE(e.find((tmp.path / "libnormcore_sim.so").string()), std::string::npos) << e;
  EXPECT_NE(e.find((tmp.path / "rtl" / "libnormcore_sim.so").string()), std::string::npos) << e;

  // Options: unknown, malformed, out of range.
  e = error_of([] { (void)open_device(sim("normcore", ",bogus=1")); });
  EXPECT_NE(e.find("unknown option 'bogus'"), std::string::npos) << e;
  EXPECT_NE(error_of([] { (void)open_device(sim("normcore", ",latency=x")); }).find("latency"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)open_device(sim("normcore", ",stall=1.5")); }).find("stall"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)open_device(sim("normcore", ",fail=both")); }).find("fail"),
            std::string::npos);
  // A missing manifest.
  EXPECT_NE(
      error_of([] { (void)open_device("sim:/nonexistent/manifest.json"); }).find("/nonexistent"),
      std::string::npos);
}

}  // namespace
}  // namespace normcore
