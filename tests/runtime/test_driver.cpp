// The host driver (normcore/driver.hpp) on the ref backend: results bit-exact against the golden
// model, tiling, float tensors, zero-copy buffers, the queue, concurrent submitters and every
// error path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace {

using namespace normcore;
using namespace std::chrono_literals;

std::string manifest(const std::string& name) {
  return normcore::test::devices_dir() + "/" + name + "/rtl/manifest.json";
}
std::string ref(const std::string& name, const std::string& opts = "") {
  return "ref:" + manifest(name) + opts;
}

using normcore::test::error_of;

// Random parameters valid for the device's widths.
ParamImage random_image(const ArithSpec& a, int channels, std::mt19937_64& rng) {
  ParamImage im;
  im.spec = a;
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const int r = static_cast<int>(uni(0, std::min(a.acc_bits(), 20)));
  im.job.shift = r;
  im.job.rounding = static_cast<Rounding>(uni(0, 3));
  const std::int64_t lo = uni(a.y_min(), (a.y_min() + a.y_max()) / 2);
  im.job.lo = lo;
  im.job.hi = uni(lo, a.y_max());
  for (int c = 0; c < channels; ++c) {
    im.scale.push_back(uni(a.s_min(), a.s_max()));
    im.shift.push_back(uni(std::max(a.b_min(), -(std::int64_t{1} << (r + 10))),
                           std::min(a.b_max(), std::int64_t{1} << (r + 10))));
  }
  return im;
}

std::vector<std::int64_t> random_x(const ArithSpec& a, std::uint64_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> d(a.x_min(), a.x_max());
  std::vector<std::int64_t> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

std::vector<std::int64_t> golden(const ParamImage& im, const std::vector<std::int64_t>& x,
                                 const JobShape& s) {
  std::vector<std::int64_t> y(x.size());
  apply_tensor(x, y, im.scale, im.shift, static_cast<std::int64_t>(s.hw), s.layout, im.job);
  return y;
}

template <typename T>
std::vector<T> cast(const std::vector<std::int64_t>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The example at the top of driver.hpp, line for line; the test's own are the device and file
// names (parameters) and the line filling x. Returns x, y, the zero-copy output and the state.
struct ExampleResult {
  std::vector<std::int8_t> x, y, zero_copy;
  RunState state = RunState::queued;
};
ExampleResult header_example(const std::string& device, const std::string& params_file) {
  auto acc = normcore::Accelerator::open(device);
  normcore::Params params = acc.upload(normcore::read_params(params_file));  // s, b, R
  const normcore::JobShape shape{.n = 1, .c = 64, .hw = 56 * 56};
  std::vector<std::int8_t> x(shape.elements()), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int8_t>(i * 37 + i / 256);
  acc.run(params, normcore::view(x), normcore::view(y), shape);                       // blocking
  normcore::Run r = acc.submit(params, normcore::view(x), normcore::view(y), shape);  // queued
  if (r.wait(std::chrono::seconds(1))) r.get();  // get() rethrows the job's DeviceError
  normcore::Buffer in = acc.alloc(x.size()), out = acc.alloc(y.size());  // zero-copy
  std::memcpy(in.map().data(), x.data(), x.size());
  acc.run(params, in, out, shape);  // out.map() holds y
  ExampleResult res{x, y, std::vector<std::int8_t>(y.size()), r.state()};
  std::memcpy(res.zero_copy.data(), out.map().data(), y.size());
  return res;
}

// README.md's snippet ("The host runtime"), line for line; the test's own are the device and
// file names (parameters), n, c, h, w (parameters) and the lines filling x and xf.
struct ReadmeResult {
  std::vector<std::int8_t> x, y, zero_copy;
  std::vector<float> yf;
};
ReadmeResult readme_example(const std::string& device, const std::string& params_file,
                            std::uint64_t n, std::uint64_t c, std::uint64_t h, std::uint64_t w) {
  auto acc = normcore::Accelerator::open(device);    // or ref:, uio:
  std::printf("%s", acc.info().describe().c_str());  // ID/CAPS, checked against the manifest
  normcore::Params params = acc.upload(normcore::read_params(params_file));  // s[c], b[c], R
  const normcore::JobShape shape{.n = n, .c = c, .hw = h * w};
  std::vector<std::int8_t> x(shape.elements()), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int8_t>(i * 11 + 3);
  acc.run(params, normcore::view(x), normcore::view(y), shape);
  normcore::Run r = acc.submit(params, normcore::view(x), normcore::view(y), shape);  // queued
  r.wait(std::chrono::seconds(1));
  r.get();  // rethrows a DeviceError if it failed
  // float tensors: quantised on the way in, dequantised on the way out
  std::vector<float> xf(x.size()), yf(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xf[i] = 0.02f * static_cast<float>(x[i]);
  acc.run(params, normcore::view(xf), normcore::view(yf), shape,
          {.in_quant = normcore::Quant{0.02, 0}, .out_quant = normcore::Quant{0.03, 5}});
  // zero-copy: device buffers, filled with packed in_bits elements
  normcore::Buffer in = acc.alloc(x.size()), out = acc.alloc(y.size());
  std::memcpy(in.map().data(), x.data(), x.size());
  acc.submit(params, in, out, shape).get();  // out.map() holds y
  ReadmeResult res{x, y, std::vector<std::int8_t>(y.size()), yf};
  std::memcpy(res.zero_copy.data(), out.map().data(), y.size());
  return res;
}

// A params.bin for the default device, removed at the end of the scope.
struct TempParams {
  ParamImage image;
  std::filesystem::path path;
  TempParams(const ArithSpec& a, int channels, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    image = random_image(a, channels, rng);
    path = std::filesystem::temp_directory_path() /
           ("normcore_driver_example_" + std::to_string(::getpid()) + "_" + std::to_string(seed) +
            ".params.bin");
    write_params(path, image);
  }
  ~TempParams() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempParams(const TempParams&) = delete;
  TempParams& operator=(const TempParams&) = delete;
};

std::vector<std::int64_t> widen(const std::vector<std::int8_t>& v) {
  return {v.begin(), v.end()};
}

TEST(Driver, HeaderExampleRuns) {
  const ArithSpec a = load_manifest(manifest("normcore")).config.arith();
  const TempParams prm(a, 64, 11);
  const ExampleResult res = header_example(ref("normcore"), prm.path.string());
  const auto want = golden(prm.image, widen(res.x), JobShape{1, 64, 56 * 56, Layout::nchw});
  EXPECT_EQ(res.state, RunState::completed);
  EXPECT_EQ(widen(res.y), want);
  EXPECT_EQ(widen(res.zero_copy), want);
}

TEST(Driver, ReadmeExampleRuns) {
  const ArithSpec a = load_manifest(manifest("normcore")).config.arith();
  const TempParams prm(a, 6, 12);
  const JobShape s{2, 6, 5 * 7, Layout::nchw};
  const ReadmeResult res = readme_example(ref("normcore"), prm.path.string(), 2, 6, 5, 7);
  const auto want = golden(prm.image, widen(res.x), s);
  EXPECT_EQ(widen(res.y), want);
  EXPECT_EQ(widen(res.zero_copy), want);
  ASSERT_EQ(res.yf.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {  // xf quantises back to x exactly
    EXPECT_FLOAT_EQ(res.yf[i], static_cast<float>(0.03 * static_cast<double>(want[i] - 5))) << i;
  }
}

TEST(Driver, HandlesAreValuesSharingOneObject) {
  auto acc = Accelerator::open(ref("normcore"));
  std::mt19937_64 rng(13);
  const ArithSpec a = acc.manifest().config.arith();
  const JobShape s{1, 3, 16, Layout::nchw};
  const auto im = random_image(a, 3, rng);
  const auto x = random_x(a, s.elements(), rng);
  const std::uint64_t buffers0 = acc.device().counters().buffer_bytes;
  Params p;
  EXPECT_FALSE(p.valid());
  EXPECT_NE(error_of([&] { (void)p.image(); }).find("empty parameter handle"), std::string::npos);
  {
    Params up = acc.upload(im);
    p = up;  // copy: same device table
  }
  ASSERT_TRUE(p.valid());
  EXPECT_EQ(p.channels(), 3u);
  Buffer empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_NE(error_of([&] { (void)empty.size(); }).find("empty buffer handle"), std::string::npos);
  normcore::Run r;
  {
    Buffer bi = acc.alloc(x.size()), bo = acc.alloc(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) bi.map()[i] = static_cast<std::uint8_t>(x[i]);
    Buffer alias = bi;  // copy: same device buffer
    EXPECT_EQ(alias.device_address(), bi.device_address());
    empty = bo;
    r = acc.submit(Params(p), alias, bo, s);  // the run keeps its handles' objects alive
  }
  r.get();
  const auto want = golden(im, x, s);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(static_cast<std::int8_t>(empty.map()[i]), want[i]) << i;
  }
  std::vector<std::int8_t> xi(s.elements()), yi(s.elements());
  EXPECT_NE(error_of([&] { (void)acc.submit(p, Buffer(), empty, s); }).find("empty buffer handle"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { (void)acc.submit(Params(), view(xi), view(yi), s); }).find("no parameters"),
      std::string::npos);
  p = Params();
  empty = Buffer();
  EXPECT_EQ(acc.device().counters().buffer_bytes, buffers0);  // every table and buffer freed
}

TEST(Driver, InfoMatchesManifest) {
  auto acc = Accelerator::open(ref("normcore"));
  const auto& i = acc.info();
  EXPECT_EQ(i.id, 0x4E43424Eu);
  EXPECT_EQ(i.lanes, 8);
  EXPECT_EQ(i.in_bits, 8);
  EXPECT_TRUE(i.in_signed);
  EXPECT_EQ(i.max_channels, 1024);
  EXPECT_EQ(i.bus_bytes, 8);
  EXPECT_EQ(i.round_modes, 0xFu);
  EXPECT_EQ(i.max_burst, 32);
  EXPECT_NE(i.describe().find("8 lanes, int8 -> int8"), std::string::npos) << i.describe();
  auto small = Accelerator::open(ref("nc_small"));
  EXPECT_EQ(small.info().lanes, 3);
  EXPECT_EQ(small.info().in_bits, 16);
  EXPECT_FALSE(small.info().out_signed);
  EXPECT_EQ(small.info().max_channels, 5);
  EXPECT_EQ(small.info().inner_bits, 4);
}

// A device whose registers are another configuration's: the driver must refuse it.
class Masquerade : public Device {
 public:
  Masquerade(std::unique_ptr<Device> inner, Manifest claimed)
      : Device("masquerade", std::move(claimed)), inner_(std::move(inner)) {}
  std::unique_ptr<DmaBuffer> alloc(std::size_t b, std::size_t a) override {
    return inner_->alloc(b, a);
  }
  bool wait_irq(std::chrono::milliseconds t) override { return inner_->wait_irq(t); }

 protected:
  std::uint32_t do_read32(std::uint32_t o) override { return inner_->read32(o); }
  void do_write32(std::uint32_t o, std::uint32_t v) override { inner_->write32(o, v); }

 private:
  std::unique_ptr<Device> inner_;
};

TEST(Driver, ManifestMismatchIsAnError) {
  auto dev = std::make_unique<Masquerade>(open_device(ref("normcore")),
                                          load_manifest(manifest("nc_small")));
  const std::string e = error_of([&] { Accelerator a(std::move(dev)); });
  EXPECT_NE(e.find("does not match its manifest"), std::string::npos) << e;
  EXPECT_NE(e.find("CAPS0 reads 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("lanes 8 vs 3"), std::string::npos) << e;
}

struct Case {
  const char* device;
  std::uint64_t max_c, max_hw, max_n;
  std::uint64_t tile;
};

void random_jobs(const Case& k, int jobs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  DriverOptions o;
  o.max_tile_elements = k.tile;
  auto acc = Accelerator::open(ref(k.device), o);
  const ArithSpec a = acc.manifest().config.arith();
  auto uni = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  std::uint64_t tiles = 0;
  for (int j = 0; j < jobs; ++j) {
    JobShape s;
    s.c = uni(1, k.max_c);
    s.hw = uni(1, k.max_hw);
    s.n = uni(1, k.max_n);
    s.layout = uni(0, 1) ? Layout::nhwc : Layout::nchw;
    const ParamImage im = random_image(a, static_cast<int>(s.c), rng);
    const auto x = random_x(a, s.elements(), rng);
    const auto want = golden(im, x, s);
    auto p = acc.upload(im);
    if (a.xw == 8) {
      const auto xi = cast<std::int8_t>(x);
      std::vector<std::int8_t> y(x.size());
      normcore::Run r = acc.submit(p, view(xi), view(y), s);
      r.get();
      tiles += r.stats().tiles;
      ASSERT_EQ(cast<std::int64_t>(std::vector<std::int64_t>(y.begin(), y.end())), want)
          << "job " << j;
    } else {
      const auto xi = cast<std::int16_t>(x);
      std::vector<std::uint8_t> y(x.size());
      normcore::Run r = acc.submit(p, view(xi), view(y), s);
      r.get();
      tiles += r.stats().tiles;
      ASSERT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), want)
          << "job " << j << " C=" << s.c << " HW=" << s.hw << " N=" << s.n;
    }
  }
  ::testing::Test::RecordProperty("tiles", static_cast<int>(tiles));
}

TEST(Driver, RandomJobsDefaultDevice) {
  random_jobs({"normcore", 40, 300, 3, 1u << 24}, 40, 1);
}

TEST(Driver, TilingAcrossChannelsLengthsAndBudget) {
  // nc_small: 5 channels, INNER <= 15, and a 64-element tile budget.
  random_jobs({"nc_small", 13, 40, 4, 64}, 60, 2);
}

TEST(Driver, TilingCountsTiles) {
  DriverOptions o;
  o.max_tile_elements = 1u << 20;
  auto acc = Accelerator::open(ref("nc_small"), o);
  std::mt19937_64 rng(3);
  const ArithSpec a = acc.manifest().config.arith();
  JobShape s{2, 12, 40, Layout::nchw};  // 3 channel groups of 4; HW 40 -> 15 + 15 + 10
  const auto im = random_image(a, 12, rng);
  const auto x = random_x(a, s.elements(), rng);
  const auto xi = cast<std::int16_t>(x);
  std::vector<std::uint8_t> y(x.size());
  normcore::Run r = acc.submit(acc.upload(im), view(xi), view(y), s);
  r.get();
  EXPECT_EQ(r.stats().tiles, 2u * 3u * 3u);
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), golden(im, x, s));
  s.layout = Layout::nhwc;  // NHWC has no INNER limit: one job per image and channel group
  normcore::Run r2 = acc.submit(acc.upload(im), view(xi), view(y), s);
  r2.get();
  EXPECT_EQ(r2.stats().tiles, 3u);
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()), golden(im, x, s));
}

TEST(Driver, FloatTensorsQuantiseAndDequantise) {
  auto acc = Accelerator::open(ref("normcore"));
  std::mt19937_64 rng(4);
  const ArithSpec a = acc.manifest().config.arith();
  JobShape s{2, 3, 10, Layout::nchw};
  const auto im = random_image(a, 3, rng);
  std::vector<float> xf(s.elements());
  std::normal_distribution<float> nd(0.f, 3.f);
  for (auto& v : xf) v = nd(rng);
  xf[0] = 1000.f;  // saturates to 127 on quantisation
  const Quant qi{0.05, -3}, qo{0.1, 7};
  std::vector<std::int64_t> xq(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) {
    const double q =
        std::nearbyint(static_cast<double>(xf[i]) / qi.scale) + static_cast<double>(qi.zero_point);
    xq[i] = static_cast<std::int64_t>(std::clamp(q, -128.0, 127.0));
  }
  const auto want = golden(im, xq, s);
  std::vector<float> yf(xf.size());
  RunOptions ro;
  ro.in_quant = qi;
  ro.out_quant = qo;
  acc.run(acc.upload(im), view(xf), view(yf), s, ro);
  for (std::size_t i = 0; i < yf.size(); ++i) {
    EXPECT_FLOAT_EQ(yf[i],
                    static_cast<float>(qo.scale * static_cast<double>(want[i] - qo.zero_point)))
        << i;
  }
  // Float needs quantisation parameters.
  EXPECT_NE(error_of([&] {
              (void)acc.submit(acc.upload(im), view(xf), view(yf), s);
            }).find("float32 input needs in_quant"),
            std::string::npos);
}

TEST(Driver, ZeroCopyBuffers) {
  auto acc = Accelerator::open(ref("normcore"));
  std::mt19937_64 rng(5);
  const ArithSpec a = acc.manifest().config.arith();
  JobShape s{3, 7, 33, Layout::nhwc};
  const auto im = random_image(a, 7, rng);
  const auto x = random_x(a, s.elements(), rng);
  Buffer bi = acc.alloc(x.size());
  Buffer bo = acc.alloc(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) bi.map()[i] = static_cast<std::uint8_t>(x[i]);
  normcore::Run r = acc.submit(acc.upload(im), bi, bo, s);
  r.get();
  const auto want = golden(im, x, s);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(static_cast<std::int8_t>(bo.map()[i]), want[i]) << i;
  }
  EXPECT_EQ(r.stats().tiles, 1u);
  Buffer tiny = acc.alloc(16);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(acc.upload(im), bi, tiny, s);
            }).find("output buffer too small"),
            std::string::npos);
}

TEST(Driver, QueueOfManyJobs) {
  auto acc = Accelerator::open(ref("normcore"));
  std::mt19937_64 rng(6);
  const ArithSpec a = acc.manifest().config.arith();
  struct J {
    JobShape s;
    Params p;
    std::vector<std::int8_t> x, y;
    std::vector<std::int64_t> want;
    normcore::Run r;
  };
  std::vector<J> js(64);
  for (auto& j : js) {
    j.s = JobShape{1 + rng() % 3, 1 + rng() % 20, 1 + rng() % 100,
                   (rng() & 1) ? Layout::nhwc : Layout::nchw};
    const auto im = random_image(a, static_cast<int>(j.s.c), rng);
    const auto x = random_x(a, j.s.elements(), rng);
    j.want = golden(im, x, j.s);
    j.x = cast<std::int8_t>(x);
    j.y.assign(x.size(), 0);
    j.p = acc.upload(im);
  }
  for (auto& j : js) j.r = acc.submit(j.p, view(j.x), view(j.y), j.s);
  for (auto& j : js) {
    ASSERT_TRUE(j.r.wait(10s));
    EXPECT_EQ(j.r.state(), RunState::completed) << j.r.error();
    EXPECT_EQ(std::vector<std::int64_t>(j.y.begin(), j.y.end()), j.want);
  }
  EXPECT_EQ(acc.stats().runs, 64u);
}

TEST(Driver, ConcurrentSubmitters) {
  auto acc = Accelerator::open(ref("nc_small"));
  const ArithSpec a = acc.manifest().config.arith();
  std::atomic<int> bad{0}, done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(100 + static_cast<std::uint64_t>(t));
      for (int i = 0; i < 15; ++i) {
        JobShape s{1 + rng() % 2, 1 + rng() % 9, 1 + rng() % 30,
                   (rng() & 1) ? Layout::nhwc : Layout::nchw};
        const auto im = random_image(a, static_cast<int>(s.c), rng);
        const auto x = random_x(a, s.elements(), rng);
        const auto xi = cast<std::int16_t>(x);
        std::vector<std::uint8_t> y(x.size());
        acc.run(acc.upload(im), view(xi), view(y), s);
        if (std::vector<std::int64_t>(y.begin(), y.end()) != golden(im, x, s)) ++bad;
        ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(done.load(), 60);
  EXPECT_EQ(bad.load(), 0);
}

TEST(Driver, BadArgumentsAreRejectedAtSubmit) {
  auto acc = Accelerator::open(ref("normcore"));
  std::mt19937_64 rng(7);
  const ArithSpec a = acc.manifest().config.arith();
  const auto im = random_image(a, 4, rng);
  auto p = acc.upload(im);
  std::vector<std::int8_t> x(40), y(40);
  std::vector<std::int8_t> y_small(39);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(p, view(x), view(y), JobShape{0, 4, 10});
            }).find("bad shape"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(p, view(x), view(y), JobShape{1, 5, 8});
            }).find("C=5 but the parameters have 4 channels"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(p, view(x), view(y_small), JobShape{1, 4, 10});
            }).find("output buffer too small"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(p, view(x), view(y), JobShape{1, 4, 11});
            }).find("input has 40 elements"),
            std::string::npos);
  // uint8 cannot hold negative results of a signed device.
  std::vector<std::uint8_t> yu(40);
  EXPECT_NE(error_of([&] {
              (void)acc.submit(p, view(x), view(yu), JobShape{1, 4, 10});
            }).find("cannot hold the results"),
            std::string::npos);
  // Parameters folded for another configuration.
  ParamImage other = im;
  other.spec.xw = 16;
  EXPECT_NE(error_of([&] { (void)acc.upload(other); }).find("in_bits is 16 but device"),
            std::string::npos);
  // A value the device cannot take fails the run, naming the element.
  std::vector<std::int16_t> wide(40, 5);
  wide[17] = 300;
  normcore::Run r = acc.submit(p, view(wide), view(y), JobShape{1, 4, 10});
  EXPECT_THROW(r.get(), DeviceError);
  EXPECT_EQ(r.state(), RunState::failed);
  EXPECT_NE(r.error().find("input element 17 = 300"), std::string::npos) << r.error();
}

TEST(Driver, DeviceErrorsCarryRegisterValues) {
  for (const char* kind : {"read", "write"}) {
    auto acc = Accelerator::open(ref("normcore", std::string(",fail_job=2,fail=") + kind));
    std::mt19937_64 rng(8);
    const ArithSpec a = acc.manifest().config.arith();
    JobShape s{1, 3, 20, Layout::nchw};
    const auto im = random_image(a, 3, rng);
    const auto x = cast<std::int8_t>(random_x(a, s.elements(), rng));
    std::vector<std::int8_t> y(x.size());
    auto p = acc.upload(im);
    EXPECT_NO_THROW(acc.run(p, view(x), view(y), s));
    const std::string e = error_of([&] { acc.run(p, view(x), view(y), s); });
    const std::string code = std::string(kind) + " (ERR_CODE=" + (kind[0] == 'r' ? "7" : "8");
    EXPECT_NE(e.find(code), std::string::npos) << e;
    EXPECT_NE(e.find("ERR_ADDR=0x"), std::string::npos) << e;
    EXPECT_NE(e.find("STATUS=0x"), std::string::npos) << e;
    EXPECT_NO_THROW(acc.run(p, view(x), view(y), s));  // the device recovers
    EXPECT_EQ(acc.stats().failed_runs, 1u);
  }
}

TEST(Driver, TimeoutSoftResetsTheDevice) {
  DriverOptions o;
  o.job_timeout = 100ms;
  auto acc = Accelerator::open(ref("normcore", ",hang_job=1"), o);
  std::mt19937_64 rng(9);
  const ArithSpec a = acc.manifest().config.arith();
  JobShape s{1, 2, 16, Layout::nchw};
  const auto im = random_image(a, 2, rng);
  const auto x = cast<std::int8_t>(random_x(a, s.elements(), rng));
  std::vector<std::int8_t> y(x.size());
  auto p = acc.upload(im);
  const std::string e = error_of([&] { acc.run(p, view(x), view(y), s); });
  EXPECT_NE(e.find("timed out after 100 ms"), std::string::npos) << e;
  EXPECT_NE(e.find("soft reset done, the device is idle again"), std::string::npos) << e;
  acc.run(p, view(x), view(y), s);
  EXPECT_EQ(std::vector<std::int64_t>(y.begin(), y.end()),
            golden(im, cast<std::int64_t>(std::vector<std::int64_t>(x.begin(), x.end())), s));
  EXPECT_EQ(acc.stats().timeouts, 1u);
  EXPECT_EQ(acc.stats().soft_resets, 1u);
}

TEST(Driver, PollingModeAndRegisterTraffic) {
  DriverOptions o;
  o.use_irq = false;
  auto acc = Accelerator::open(ref("normcore"), o);
  std::mt19937_64 rng(10);
  const ArithSpec a = acc.manifest().config.arith();
  JobShape s{1, 5, 64, Layout::nchw};
  const auto im = random_image(a, 5, rng);
  const auto x = cast<std::int8_t>(random_x(a, s.elements(), rng));
  std::vector<std::int8_t> y(x.size());
  auto p = acc.upload(im);
  normcore::Run r1 = acc.submit(p, view(x), view(y), s);
  r1.get();
  normcore::Run r2 = acc.submit(p, view(x), view(y), s);
  r2.get();
  // The first job programs every job register; an identical second one only CTRL and the
  // interrupt acknowledge, and reads STATUS.
  EXPECT_GE(r1.stats().mmio_writes, 13u);
  EXPECT_EQ(r2.stats().mmio_writes, 2u);
  EXPECT_GE(r2.stats().mmio_reads, 1u);
}

}  // namespace
