// The driver on a device with a descriptor ring (nc_ring, nc_small_ring: `--ring` manifests on
// the ref backend) against the same device without one (normcore, nc_small): queued runs, tiles
// of one tensor and staged (converted) tensors byte-identical, the register accesses per job of
// a batch (<= 1 on average), a failing job failing only its run, a hung one timing out while the
// runs after it complete.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "ring_jobs.hpp"
#include "test_paths.hpp"

namespace {

using namespace normcore;
using namespace std::chrono_literals;

std::string ref(const std::string& name, const std::string& opts = "") {
  return "ref:" + normcore::test::devices_dir() + "/" + name + "/rtl/manifest.json" + opts;
}

ParamImage image(const ArithSpec& a, std::uint64_t channels, std::mt19937_64& rng) {
  return test::ring_image(a, channels, rng);
}
using test::random_x;

// One big run first (the queue fills behind it), then `n` small 1x64x7x7 int8 runs sharing one
// table, zero-copy or host tensors; returns their outputs and adds their register accesses.
std::vector<std::vector<std::int8_t>> small_runs(Accelerator& acc, const Params& p, int n,
                                                 bool zero_copy, std::uint64_t& accesses) {
  const JobShape big{.n = 1, .c = 64, .hw = 256 * 256};
  const JobShape small{.n = 1, .c = 64, .hw = 7 * 7};
  std::mt19937_64 rng(5);
  const auto bx = random_x<std::int8_t>(big.elements(), -128, 127, rng);
  std::vector<std::int8_t> by(bx.size());
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
  normcore::Run first = acc.submit(p, view(bx), view(by), big);
  std::vector<normcore::Run> runs;
  for (int i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    runs.push_back(zero_copy ? acc.submit(p, ins[k], outs[k], small)
                             : acc.submit(p, view(xs[k]), view(ys[k]), small));
  }
  first.get();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].get();
    accesses += runs[i].stats().mmio_reads + runs[i].stats().mmio_writes;
    if (zero_copy) std::memcpy(ys[i].data(), outs[i].map().data(), ys[i].size());
  }
  ys.push_back(by);
  return ys;
}

TEST(DriverRing, ManySmallJobsSharingParametersIdenticalWithAtMostOneAccessPerJob) {
  std::mt19937_64 rng(19);
  auto ring = Accelerator::open(ref("nc_ring"));
  auto plain = Accelerator::open(ref("normcore"));
  const ParamImage im = image(ring.manifest().config.arith(), 64, rng);
  const Params pr = ring.upload(im), pp = plain.upload(im);
  for (const bool zero_copy : {true, false}) {
    std::uint64_t ring_acc = 0, plain_acc = 0;
    const auto a = small_runs(ring, pr, 1000, zero_copy, ring_acc);
    const auto b = small_runs(plain, pp, 1000, zero_copy, plain_acc);
    EXPECT_EQ(a, b) << (zero_copy ? "zero-copy" : "host tensors");
    const double per_job = static_cast<double>(ring_acc) / 1000.0;
    std::printf("register accesses per job (%s): ring %.3f, START %.3f\n",
                zero_copy ? "zero-copy" : "host tensors", per_job,
                static_cast<double>(plain_acc) / 1000.0);
    EXPECT_LE(per_job, 1.0);
    EXPECT_GE(plain_acc, 1000u * 3) << "the START path: at least CTRL, STATUS, IRQ_STATUS a job";
  }
}

TEST(DriverRing, TilesAndConvertedTensorsIdenticalToTheDeviceWithoutARing) {
  std::mt19937_64 rng(7);
  DriverOptions opt;
  opt.max_tile_elements = 300;  // several staged groups
  auto ring = Accelerator::open(ref("nc_small_ring"), opt);
  auto plain = Accelerator::open(ref("nc_small"), opt);
  EXPECT_GT(test::tiles_match(ring, plain, rng), 12u) << "tensors split into tiles";
}

TEST(DriverRing, FailingJobFailsOnlyItsRunAndAHungOneTimesOut) {
  std::mt19937_64 rng(3);
  for (const std::string fault : {",fail_job=3", ",fail_job=3,fail=write", ",hang_job=2"}) {
    DriverOptions opt;
    opt.job_timeout = 200ms;
    auto ring = Accelerator::open(ref("nc_ring", fault), opt);
    auto plain = Accelerator::open(ref("normcore", fault), opt);
    test::fault_runs_match(ring, plain, fault, rng);
  }
}

}  // namespace
