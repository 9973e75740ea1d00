// A specialised device (cmake/devices.cmake: nc_spec, R 10, half_even, NHWC, C a multiple of its
// 4 lanes): the manifest and CAPS say what is fixed; the driver rejects a job the device cannot
// run before touching it, naming what is wrong; the ref device rejects exactly what the RTL
// rejects (ERR_UNSUPPORTED); jobs that fit run bit-exact, channel groups included.
#include <gtest/gtest.h>

#include <random>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace {

using namespace normcore;
using normcore::test::error_of;

std::string manifest(const std::string& name) {
  return normcore::test::devices_dir() + "/" + name + "/rtl/manifest.json";
}
std::string ref(const std::string& name) {
  return "ref:" + manifest(name);
}

// Parameters for the specialised device: its R and rounding unless told otherwise.
ParamImage image(const ArithSpec& a, int channels, std::mt19937_64& rng, int shift = 10,
                 Rounding rounding = Rounding::half_even) {
  ParamImage im;
  im.spec = a;
  im.job.shift = shift;
  im.job.rounding = rounding;
  im.job.lo = a.y_min();
  im.job.hi = a.y_max();
  std::uniform_int_distribution<std::int64_t> s(a.s_min(), a.s_max()), b(-(1 << 20), 1 << 20);
  for (int c = 0; c < channels; ++c) {
    im.scale.push_back(s(rng));
    im.shift.push_back(b(rng));
  }
  return im;
}

TEST(Specialised, ManifestAndCapsSayWhatIsFixed) {
  const Manifest m = load_manifest(manifest("nc_spec"));
  const CoreConfig& c = m.config.accel.core;
  EXPECT_EQ(c.fixed_shift, 10);
  EXPECT_EQ(c.fixed_rounding, "half_even");
  EXPECT_EQ(c.fixed_layout, "nhwc");
  EXPECT_TRUE(c.lanes_divide_channels);
  EXPECT_EQ(m.error_codes.at("unsupported"), 10);
  auto acc = Accelerator::open(ref("nc_spec"));
  const DeviceInfo& i = acc.info();
  EXPECT_EQ(i.round_modes, 1u << 2);
  EXPECT_EQ(i.layouts, 2u);
  EXPECT_EQ(i.fixed_shift, 10);
  EXPECT_TRUE(i.c_multiple_of_lanes);
  const std::string d = i.describe();
  EXPECT_NE(d.find("layouts: nhwc\n"), std::string::npos) << d;
  EXPECT_NE(d.find("shift R: fixed 10\n"), std::string::npos) << d;
  EXPECT_NE(d.find("channels: a multiple of 4\n"), std::string::npos) << d;
  // A device with nothing fixed.
  auto plain = Accelerator::open(ref("normcore"));
  EXPECT_EQ(plain.info().layouts, 3u);
  EXPECT_EQ(plain.info().fixed_shift, -1);
  EXPECT_FALSE(plain.info().c_multiple_of_lanes);
}

TEST(Specialised, DriverRejectsJobsTheDeviceCannotRun) {
  auto acc = Accelerator::open(ref("nc_spec"));
  const ArithSpec a = acc.manifest().config.arith();
  std::mt19937_64 rng(3);
  const std::uint64_t bytes0 = acc.device().counters().buffer_bytes;
  EXPECT_EQ(error_of([&] { (void)acc.upload(image(a, 8, rng, 9)); }),
            "params: R: 9 differs from this core's fixed shift 10 (fixed_shift): device " +
                acc.device().name() + " cannot run it");
  EXPECT_NE(error_of([&] {
              (void)acc.upload(image(a, 8, rng, 10, Rounding::floor));
            }).find("rounding: floor differs from this core's fixed rounding half_even"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)acc.upload(image(a, 6, rng));
            }).find("channels: 6 is not a multiple of this core's 4 lanes"),
            std::string::npos);
  // Nothing reached the device: no buffer was allocated.
  EXPECT_EQ(acc.device().counters().buffer_bytes, bytes0);
  const Params p = acc.upload(image(a, 8, rng));
  std::vector<std::int8_t> x(8 * 5), y(x.size());
  const std::string err = error_of([&] {
    (void)acc.submit(p, view(x), view(y), JobShape{1, 8, 5, Layout::nchw});
  });
  EXPECT_NE(err.find("layout: nchw differs from this core's fixed layout nhwc (fixed_layout)"),
            std::string::npos)
      << err;
  EXPECT_EQ(acc.stats().runs, 0u);
}

TEST(Specialised, JobsThatFitRunBitExactInGroupsOfWholeBeats) {
  auto acc = Accelerator::open(ref("nc_spec"));
  const ArithSpec a = acc.manifest().config.arith();
  std::mt19937_64 rng(4);
  // C = 100 > MAX_CHANNELS 64: two groups, each a multiple of the 4 lanes (52 + 48).
  for (int c : {4, 12, 100}) {
    const ParamImage im = image(a, c, rng);
    const JobShape s{2, static_cast<std::uint64_t>(c), 7, Layout::nhwc};
    std::vector<std::int64_t> x(s.elements()), want(x.size());
    std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
    for (auto& v : x) v = xd(rng);
    apply_tensor(x, want, im.scale, im.shift, static_cast<std::int64_t>(s.hw), s.layout, im.job);
    std::vector<std::int8_t> xi(x.begin(), x.end()), y(x.size());
    const Params p = acc.upload(im);
    acc.run(p, view(xi), view(y), s);
    EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), want) << "C=" << c;
  }
}

// Register level: the ref device answers a job with other settings as the RTL does
// (ERR_UNSUPPORTED, no memory access), and CoreConfig::check_job is the rule.
TEST(Specialised, RefDeviceRejectsWithErrUnsupported) {
  std::unique_ptr<Device> d = open_device(ref("nc_spec"));
  const Manifest& m = d->manifest();
  auto wr = [&](const char* reg, std::uint32_t v) { d->write32(m.offset(reg), v); };
  auto field = [&](const char* reg, const char* f, std::uint64_t v) {
    return m.field(reg, f).put(0, v);
  };
  auto in = d->alloc(4096, 4096), out = d->alloc(4096, 4096), prm = d->alloc(4096, 4096);
  struct Case {
    int c, layout, rounding, shift;
    bool ok;
  };
  const Case cases[] = {{8, 1, 2, 10, true},  {8, 1, 2, 11, false}, {8, 1, 3, 10, false},
                        {8, 0, 2, 10, false}, {6, 1, 2, 10, false}, {0, 1, 2, 9, false}};
  for (const auto& k : cases) {
    wr("CHANNELS", static_cast<std::uint32_t>(k.c));
    wr("INNER", 1);
    wr("OUTER", 3);
    wr("MODE", field("MODE", "layout", static_cast<std::uint64_t>(k.layout)) |
                   field("MODE", "rounding", static_cast<std::uint64_t>(k.rounding)) |
                   field("MODE", "shift", static_cast<std::uint64_t>(k.shift)));
    for (const auto& [reg, buf] :
         {std::pair{"SRC", in.get()}, {"DST", out.get()}, {"PARAM", prm.get()}}) {
      wr((std::string(reg) + "_LO").c_str(), static_cast<std::uint32_t>(buf->device_address()));
      wr((std::string(reg) + "_HI").c_str(),
         static_cast<std::uint32_t>(buf->device_address() >> 32));
    }
    wr("CTRL", field("CTRL", "start", 1));
    const std::uint32_t code = m.field("ERR_CODE", "code").get(d->read32(m.offset("ERR_CODE")));
    const auto want_rule = m.config.accel.core.check_job(k.shift, static_cast<Rounding>(k.rounding),
                                                         static_cast<Layout>(k.layout), k.c);
    // C = 0 is bad_channels first (the RTL's priority), whatever else is wrong.
    const int want = k.c == 0 ? m.error_codes.at("bad_channels")
                     : k.ok   ? 0
                              : m.error_codes.at("unsupported");
    EXPECT_EQ(static_cast<int>(code), want) << "C=" << k.c << " R=" << k.shift;
    if (k.c != 0) {
      EXPECT_EQ(want_rule.empty(), k.ok) << want_rule;
    }
    wr("IRQ_STATUS", field("IRQ_STATUS", "done", 1) | field("IRQ_STATUS", "error", 1));
  }
}

}  // namespace
