// The driver's batches on the descriptor ring (issue 19) on sim: and tlm: against ref: (the same
// tests as tests/runtime/test_driver_ring.cpp, smaller): many small jobs sharing one table or
// each with its own, zero-copy and host tensors, byte-identical with at most one register access
// per job on average; tiles of one tensor and converted tensors on nc_small_ring identical to
// ref:; the fault injection (fail_job, hang_job) on ring jobs as on ref:.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "ring_jobs.hpp"

namespace {

using namespace normcore;

std::string dev(const std::string& backend, const std::string& name) {
  const std::string m = std::string(NC_DEVICES_DIR) + "/" + name + "/rtl/manifest.json";
  if (backend == "sim") {
    const char* trace = std::getenv("NC_RING_TRACE");  // debugging: a VCD of the sim device
    return "sim:" + m + ",latency=16,stall=0.05" + (trace ? std::string(",trace=") + trace : "");
  }
  return backend + ":" + m;
}

ParamImage image(const ArithSpec& a, std::uint64_t channels, std::mt19937_64& rng) {
  return test::ring_image(a, channels, rng);
}
using test::random_x;

// `n` 1x64x7x7 int8 runs queued at once (one table, or `tables` of them in turn); returns
// their outputs and adds their register accesses.
std::vector<std::vector<std::int8_t>> small_runs(Accelerator& acc, const std::vector<Params>& ps,
                                                 int n, bool zero_copy, std::uint64_t& accesses) {
  const JobShape small{.n = 1, .c = 64, .hw = 7 * 7};
  std::mt19937_64 rng(5);
  std::vector<std::vector<std::int8_t>> xs, ys;
  std::vector<Buffer> ins, outs;
  for (int i = 0; i < n; ++i) {
    xs.push_back(random_x<std::int8_t>(small.elements(), -128, 127, rng));
    ys.emplace_back(small.elements());
    if (zero_copy) {
      ins.push_back(acc.alloc(small.elements()));
      outs.push_back(acc.alloc(small.elements()));
      std::memcpy(ins.back().map().data(), xs.back().data(), xs.back().size());
    }
  }
  std::vector<normcore::Run> runs;
  for (int i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const Params& p = ps[k % ps.size()];
    runs.push_back(zero_copy ? acc.submit(p, ins[k], outs[k], small)
                             : acc.submit(p, view(xs[k]), view(ys[k]), small));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].get();
    accesses += runs[i].stats().mmio_reads + runs[i].stats().mmio_writes;
    if (zero_copy) std::memcpy(ys[i].data(), outs[i].map().data(), ys[i].size());
  }
  return ys;
}

struct RingDriver : ::testing::TestWithParam<std::string> {
  void SetUp() override {
    if (GetParam() == "tlm" && NC_RING_TLM == 0) GTEST_SKIP() << "tlm: not built";
  }
};

TEST_P(RingDriver, SmallJobsSharedAndOwnTablesIdenticalToRef) {
  std::mt19937_64 rng(19);
  auto ring = Accelerator::open(dev(GetParam(), "nc_ring"));
  auto ref = Accelerator::open(dev("ref", "nc_ring"));
  const ArithSpec a = ring.manifest().config.arith();
  std::vector<ParamImage> ims;
  for (int t = 0; t < 3; ++t) ims.push_back(image(a, 64, rng));
  for (const std::size_t tables : {std::size_t{1}, std::size_t{3}}) {
    std::vector<Params> pr, pf;
    for (std::size_t t = 0; t < tables; ++t) {
      pr.push_back(ring.upload(ims[t]));
      pf.push_back(ref.upload(ims[t]));
    }
    for (const bool zero_copy : {true, false}) {
      std::uint64_t ring_acc = 0, ref_acc = 0;
      const int n = 150;
      const auto y1 = small_runs(ring, pr, n, zero_copy, ring_acc);
      const auto y2 = small_runs(ref, pf, n, zero_copy, ref_acc);
      EXPECT_EQ(y1, y2) << tables << " tables, " << (zero_copy ? "zero-copy" : "host tensors");
      EXPECT_LE(static_cast<double>(ring_acc) / n, 1.0);
    }
  }
}

TEST_P(RingDriver, TilesAndConvertedTensorsIdenticalToRef) {
  std::mt19937_64 rng(7);
  DriverOptions opt;
  opt.max_tile_elements = 300;  // several staged groups
  auto ring = Accelerator::open(dev(GetParam(), "nc_small_ring"), opt);
  auto ref = Accelerator::open(dev("ref", "nc_small_ring"), opt);
  EXPECT_GT(test::tiles_match(ring, ref, rng), 12u) << "tensors split into tiles";
}

// The fault injection reaches ring jobs as on ref: (device_options.hpp: the count): the same
// run fails with the same error and the runs after it complete, on sim: / tlm: as on ref:.
TEST_P(RingDriver, FailingJobFailsOnlyItsRunAndAHungOneTimesOutAsOnRef) {
  std::mt19937_64 rng(3);
  for (const std::string fault : {",fail_job=3", ",fail_job=3,fail=write", ",hang_job=2"}) {
    DriverOptions opt;
    opt.job_timeout = std::chrono::seconds(1);  // a loaded machine: no false time-outs
    auto ring = Accelerator::open(dev(GetParam(), "nc_ring") + fault, opt);
    auto ref = Accelerator::open(dev("ref", "nc_ring") + fault, opt);
    test::fault_runs_match(ring, ref, fault, rng);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RingDriver, ::testing::Values("sim", "tlm"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
