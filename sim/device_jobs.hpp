// Jobs programmed by hand through the public device API, shared by the sim backend's tests
// (test_sim_device.cpp) and the SystemC/TLM model's (test_tlm.cpp): the manifest's bit packing,
// a random job the device accepts (bit-exact against the golden model), and a Runner that
// allocates the job's buffers on the device and drives it by register name from the manifest.
// Header-only; each test executable includes it once.
#pragma once

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "test_errors.hpp"  // tests/: the one error_of of the tests

namespace normcore::device_jobs {

using namespace std::chrono_literals;

// The manifest of a device generated for the tests (NC_DEVICES_DIR/<device>/rtl).
inline std::string manifest_of(const std::string& device) {
  return std::string(NC_DEVICES_DIR) + "/" + device + "/rtl/manifest.json";
}

// The message of the normcore::Error f() throws, "(no error)" if none (tests/test_errors.hpp).
using test::error_of;

inline std::uint64_t mask(int w) {
  return w >= 64 ? ~0ULL : (1ULL << w) - 1;
}
inline std::uint64_t bytes_for_bits(std::uint64_t bits) {
  return (bits + 7) / 8;
}

// LSB-first bit packing, as the manifest's tensor_packing and param_entry describe.
inline void put_bits(std::span<std::uint8_t> out, std::uint64_t bit, std::uint64_t v, int w) {
  for (int i = 0; i < w; ++i, ++bit) {
    if (((v >> i) & 1U) != 0) out[bit / 8] |= static_cast<std::uint8_t>(1U << (bit % 8));
  }
}
inline std::int64_t get_bits(std::span<const std::uint8_t> in, std::uint64_t bit, int w,
                             bool is_signed) {
  std::uint64_t u = 0;
  for (int i = 0; i < w; ++i, ++bit) {
    if (((in[bit / 8] >> (bit % 8)) & 1U) != 0) u |= 1ULL << i;
  }
  if (is_signed && ((u >> (w - 1)) & 1U) != 0) u |= ~0ULL << w;
  return static_cast<std::int64_t>(u);
}

// A device job in the register sense: C x INNER x OUTER elements.
struct Job {
  int channels = 1;
  std::uint64_t inner = 1, outer = 1;
  Layout layout = Layout::nchw;
  JobSettings settings;
  std::vector<std::int64_t> scale, shift, x;
  [[nodiscard]] std::uint64_t elements() const {
    return static_cast<std::uint64_t>(channels) * inner * outer;
  }
  [[nodiscard]] std::vector<std::int64_t> golden() const {
    std::vector<std::int64_t> y(x.size());
    apply_tensor(x, y, scale, shift, static_cast<std::int64_t>(inner), layout, settings);
    return y;
  }
};

// A random job of at most about max_elements elements that device `c` runs; on a specialised
// device (generation-time job constants) one that keeps its fixed settings, with C a multiple of
// LANES when the device requires it.
inline Job random_job(std::mt19937_64& rng, const DeviceConfig& c, std::uint64_t max_elements) {
  const ArithSpec a = c.arith();
  auto uni = [&rng](auto lo, auto hi) {
    return std::uniform_int_distribution<decltype(lo)>(lo, hi)(rng);
  };
  Job j;
  j.channels = uni(1, std::min(c.max_channels, 3 * c.lanes + 5));
  j.inner = uni(std::uint64_t{1}, std::min<std::uint64_t>(c.max_inner(), 60));
  j.outer = uni(std::uint64_t{1}, std::uint64_t{40});
  while (j.outer > 1 && j.elements() > max_elements) --j.outer;
  j.layout = uni(0, 1) != 0 ? Layout::nhwc : Layout::nchw;
  const int r_hi = std::clamp(a.sw + a.xw - a.yw + 2, 0, a.acc_bits());
  const int r_lo = std::clamp(a.sw + a.xw - a.yw - 4, 0, r_hi);
  j.settings.shift = uni(r_lo, r_hi);
  j.settings.rounding = static_cast<Rounding>(uni(0, 3));
  j.settings.lo = a.y_min();
  j.settings.hi = a.y_max();
  const CoreConfig& k = c.accel.core;
  if (k.has_fixed_shift()) j.settings.shift = k.fixed_shift;
  if (k.has_fixed_rounding()) j.settings.rounding = parse_rounding(k.fixed_rounding);
  if (k.has_fixed_layout()) j.layout = parse_layout(k.fixed_layout);
  if (k.lanes_divide_channels) j.channels = std::max(1, j.channels / k.lanes) * k.lanes;
  while (j.outer > 1 && j.elements() > max_elements) --j.outer;
  const int bbits = std::min(a.bw, a.sw + a.xw);
  for (int ch = 0; ch < j.channels; ++ch) {
    j.scale.push_back(uni(a.s_min(), a.s_max()));
    j.shift.push_back(uni(-(std::int64_t{1} << (bbits - 1)), (std::int64_t{1} << (bbits - 1)) - 1));
  }
  for (std::uint64_t i = 0; i < j.elements(); ++i) j.x.push_back(uni(a.x_min(), a.x_max()));
  return j;
}

struct Outcome {
  bool irq = false;
  std::uint32_t status = 0, irq_status = 0, err_code = 0, perf_active = 0;
  std::uint64_t err_addr = 0;
  std::vector<std::int64_t> y;
  std::vector<std::uint8_t> dst_bytes;  // the whole output buffer
  double wait_seconds = 0;              // in wait_irq, wall clock
  double wait_cpu_seconds = 0;          // in wait_irq, CPU time of this thread (runs the model)
};

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Programs jobs by register name from the manifest, with its buffers allocated on the device.
class Runner {
 public:
  explicit Runner(Device& d) : d_(d), m_(d.manifest()), c_(m_.config) {}

  // Allocates and fills the buffers of `j` (kept until the next stage()).
  void stage(const Job& j) {
    const ArithSpec a = c_.arith();
    const auto eb = static_cast<std::size_t>(c_.param_entry_bytes());
    prm_ = d_.alloc(static_cast<std::size_t>(j.channels) * eb);
    src_ = d_.alloc(bytes_for_bits(j.elements() * static_cast<std::uint64_t>(a.xw)));
    dst_ = d_.alloc(bytes_for_bits(j.elements() * static_cast<std::uint64_t>(a.yw)));
    auto p = prm_->map();
    std::fill(p.begin(), p.end(), std::uint8_t{0});
    for (std::size_t ch = 0; ch < j.scale.size(); ++ch) {
      const std::uint64_t bit = ch * eb * 8;
      put_bits(p, bit, static_cast<std::uint64_t>(j.scale[ch]) & mask(a.sw), a.sw);
      put_bits(p, bit + static_cast<std::uint64_t>(a.sw),
               static_cast<std::uint64_t>(j.shift[ch]) & mask(a.bw), a.bw);
    }
    auto s = src_->map();
    std::fill(s.begin(), s.end(), std::uint8_t{0});
    for (std::size_t i = 0; i < j.x.size(); ++i) {
      put_bits(s, i * static_cast<std::uint64_t>(a.xw),
               static_cast<std::uint64_t>(j.x[i]) & mask(a.xw), a.xw);
    }
    auto o = dst_->map();
    std::fill(o.begin(), o.end(), std::uint8_t{0x5A});
    prm_->sync_to_device();
    src_->sync_to_device();
    dst_->sync_to_device();
  }

  void wr(const char* reg, std::uint64_t v) {
    d_.write32(m_.offset(reg), static_cast<std::uint32_t>(v));
  }
  std::uint32_t rd(const char* reg) { return d_.read32(m_.offset(reg)); }
  std::uint32_t field(const char* reg, const char* f) { return m_.field(reg, f).get(rd(reg)); }

  void program(const Job& j) {
    wr("CHANNELS", static_cast<std::uint64_t>(j.channels));
    wr("INNER", j.inner);
    wr("OUTER", j.outer);
    std::uint32_t mode = 0;
    mode = m_.field("MODE", "layout").put(mode, j.layout == Layout::nhwc ? 1 : 0);
    mode = m_.field("MODE", "rounding").put(mode, static_cast<std::uint64_t>(j.settings.rounding));
    mode = m_.field("MODE", "shift").put(mode, static_cast<std::uint64_t>(j.settings.shift));
    wr("MODE", mode);
    wr("CLAMP_LO", static_cast<std::uint64_t>(j.settings.lo) & mask(c_.out_bits));
    wr("CLAMP_HI", static_cast<std::uint64_t>(j.settings.hi) & mask(c_.out_bits));
    wr64("SRC", src_->device_address());
    wr64("DST", dst_->device_address());
    wr64("PARAM", prm_->device_address());
  }

  void start() {
    std::uint32_t ctrl = 0;
    ctrl = m_.field("CTRL", "start").put(ctrl, 1);
    ctrl = m_.field("CTRL", "irq_en_done").put(ctrl, 1);
    ctrl = m_.field("CTRL", "irq_en_error").put(ctrl, 1);
    wr("CTRL", ctrl);
  }

  // Waits for the interrupt (at most `timeout`: only a hung device waits that long), then reads
  // the status registers (acknowledging IRQ_STATUS) and the output buffer.
  Outcome finish(const Job& j, std::chrono::milliseconds timeout = 60s) {
    Outcome o;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    o.irq = d_.wait_irq(timeout);
    o.wait_cpu_seconds = thread_cpu_seconds() - c0;
    o.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    o.status = rd("STATUS");
    o.irq_status = rd("IRQ_STATUS");
    wr("IRQ_STATUS", o.irq_status);  // W1C
    o.err_code = field("ERR_CODE", "code");
    o.err_addr = rd("ERR_ADDR_LO") | (std::uint64_t{rd("ERR_ADDR_HI")} << 32);
    o.perf_active = rd("PERF_ACTIVE");
    dst_->sync_from_device();
    const ArithSpec a = c_.arith();
    const auto out = dst_->map();
    o.dst_bytes.assign(out.begin(), out.end());
    for (std::uint64_t i = 0; i < j.elements(); ++i) {
      o.y.push_back(get_bits(out, i * static_cast<std::uint64_t>(a.yw), a.yw, a.y_signed));
    }
    return o;
  }

  Outcome run(const Job& j) {
    stage(j);
    program(j);
    start();
    return finish(j);
  }

  // A job that must complete without error, bit-exact against the golden model.
  Outcome run_good(const Job& j, const std::string& what) {
    Outcome o = run(j);
    EXPECT_TRUE(o.irq) << what;
    EXPECT_EQ(m_.field("STATUS", "done").get(o.status), 1U) << what;
    EXPECT_EQ(m_.field("STATUS", "error").get(o.status), 0U) << what;
    EXPECT_EQ(o.err_code, 0U) << what;
    const auto want = j.golden();
    EXPECT_EQ(o.y.size(), want.size()) << what;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < std::min(want.size(), o.y.size()); ++i) {
      if (o.y[i] != want[i] && bad++ < 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << o.y[i] << ", golden " << want[i];
      }
    }
    EXPECT_EQ(bad, 0U) << what;
    return o;
  }

  DmaBuffer& src() { return *src_; }
  DmaBuffer& dst() { return *dst_; }

 private:
  void wr64(const std::string& base, std::uint64_t v) {
    wr((base + "_LO").c_str(), v & 0xFFFFFFFFu);
    wr((base + "_HI").c_str(), v >> 32);
  }

  Device& d_;
  const Manifest& m_;
  const DeviceConfig& c_;
  std::unique_ptr<DmaBuffer> prm_, src_, dst_;
};

}  // namespace normcore::device_jobs
