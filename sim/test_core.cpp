// Co-simulation of one generated core configuration against the golden model (normcore
// contract): random jobs with random shapes, layouts, modes, clamps and stalls on both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>

#include "core_driver.hpp"
#include "float_jobs.hpp"
#include "normcore/float_contract.hpp"
#include "spec_harness.hpp"

namespace normcore::sim {
namespace {

#define NC_STR2(x) #x
#define NC_STR(x) NC_STR2(x)

std::uint64_t g_cycles = 0, g_elements = 0, g_jobs = 0, g_mismatches = 0;

// C rounded up to a multiple of the lanes when the core needs one (within the table).
std::int64_t conform_channels(std::int64_t c, const CoreShape& s) {
  return normcore::sim::conform_channels(c, s.lanes, s.max_channels);
}

struct JobData {
  CoreJob job;
  std::vector<std::int64_t> scale, shift, x;
};

std::int64_t rand_signed(std::mt19937_64& rng, int bits) {
  // Random magnitude class so small and large values both occur.
  const int b = std::uniform_int_distribution<int>(1, bits)(rng);
  const std::int64_t lo = -(std::int64_t{1} << (b - 1));
  const std::int64_t hi = (std::int64_t{1} << (b - 1)) - 1;
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

JobData random_job(std::mt19937_64& rng, const CoreShape& s, std::size_t max_elems) {
  const ArithSpec a = s.arith();
  JobData d;
  auto pick = [&](std::initializer_list<std::int64_t> opts) {
    std::vector<std::int64_t> v(opts);
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
  };
  const std::int64_t L = s.lanes;
  std::int64_t c = pick({1, 2, L - 1, L, L + 1, 2 * L + 3, 0, 0});
  if (c == 0) c = std::uniform_int_distribution<std::int64_t>(1, 3 * L + 7)(rng);
  if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) c = s.max_channels;
  c = conform_channels(std::clamp<std::int64_t>(c, 1, s.max_channels), s);
  // HW = S for nchw: S < L, S = L, S > L, S near 2L and, for <n>_chan's split of rem (low part
  // of bits_for(L) + 1 bits, a high part with zero flags), near multiples of that low part's
  // range and large enough for a high part of several bits.
  std::int64_t hw = pick({1, 2, 3, L - 1, L, L + 1, 2 * L, 2 * L + 1, 0, 0, -1, -2, -3});
  const std::int64_t lo_range = std::int64_t{2} << std::bit_width(static_cast<std::uint64_t>(L));
  if (hw == 0) hw = std::uniform_int_distribution<std::int64_t>(1, 60)(rng);
  if (hw == -1) hw = std::uniform_int_distribution<std::int64_t>(61, 1100)(rng);
  if (hw == -2) {  // near a multiple of the low part's range, some where h_0 (6 bits) wraps
    hw = lo_range * pick({1, 2, 3, 5, 8, 9, 63, 64, 65, 128}) +
         std::uniform_int_distribution<std::int64_t>(-1, 1)(rng);
  }
  if (hw == -3) {  // a high part of several segments (only part of the image is streamed)
    hw = lo_range * 64 * std::uniform_int_distribution<std::int64_t>(1, 4096)(rng) +
         std::uniform_int_distribution<std::int64_t>(-3, 3)(rng);
  }
  const std::int64_t hw_max = (s.inner_bits >= 40) ? (1LL << 40) : ((1LL << s.inner_bits) - 1);
  hw = std::clamp<std::int64_t>(hw, 1, hw_max);
  d.job.channels = static_cast<int>(c);
  d.job.inner = hw;
  d.job.layout = std::uniform_int_distribution<int>(0, 1)(rng) ? Layout::nhwc : Layout::nchw;
  const auto per_image = static_cast<std::size_t>(c * hw);
  std::size_t n = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
  while (n > 1 && n * per_image > max_elems) --n;
  std::size_t total = n * per_image;
  if (total > max_elems) {  // a huge image (C = MAX_CHANNELS): stream part of it
    total = max_elems;
  }
  const int aw = a.acc_bits();
  auto& st = d.job.settings;
  st.shift =
      std::uniform_int_distribution<int>(0, 1)(rng)
          ? std::uniform_int_distribution<int>(0, aw)(rng)
          : std::uniform_int_distribution<int>(std::clamp(a.sw + a.xw - a.yw - 4, 0, aw),
                                               std::clamp(a.sw + a.xw - a.yw + 2, 0, aw))(rng);
  st.rounding = static_cast<Rounding>(std::uniform_int_distribution<int>(0, 3)(rng));
  switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
    case 0:
      st.lo = a.y_min();
      st.hi = a.y_max();
      break;
    case 1:
      st.lo = std::max<std::int64_t>(0, a.y_min());
      st.hi = a.y_max();
      break;   // ReLU
    case 2: {  // quantised ReLU6-like window at a zero point
      const std::int64_t zp =
          std::uniform_int_distribution<std::int64_t>(a.y_min(), a.y_max())(rng);
      st.lo = zp;
      st.hi = std::uniform_int_distribution<std::int64_t>(zp, a.y_max())(rng);
      break;
    }
    case 3: {
      std::int64_t p = std::uniform_int_distribution<std::int64_t>(a.y_min(), a.y_max())(rng);
      std::int64_t q = std::uniform_int_distribution<std::int64_t>(a.y_min(), a.y_max())(rng);
      st.lo = std::min(p, q);
      st.hi = std::max(p, q);
      break;
    }
    default: {  // lo > hi is defined too: hi wins
      st.lo = std::uniform_int_distribution<std::int64_t>(a.y_min(), a.y_max())(rng);
      st.hi = std::uniform_int_distribution<std::int64_t>(a.y_min(), a.y_max())(rng);
      break;
    }
  }
  if (a.is_float()) float_settings(rng, a, st);
  conform_settings(d.job);
  d.scale.resize(static_cast<std::size_t>(c));
  d.shift.resize(static_cast<std::size_t>(c));
  for (std::size_t i = 0; i < d.scale.size(); ++i) {
    d.scale[i] = rand_signed(rng, a.sw);
    d.shift[i] = rand_signed(rng, a.bw);
  }
  std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
  d.x.resize(total);
  for (auto& v : d.x) v = xd(rng);
  if (a.is_float()) {  // patterns: s, b fp32; x any 16-bit pattern
    for (std::size_t i = 0; i < d.scale.size(); ++i) {
      d.scale[i] = random_fp32(rng);
      d.shift[i] = random_fp32(rng);
    }
    for (auto& v : d.x) v = static_cast<std::int64_t>(rng() & 0xFFFFU);
  }
  return d;
}

const ArithSpec kSpec = CoreShape{}.arith();

std::vector<std::int64_t> golden(const JobData& d) {
  std::vector<std::int64_t> y(d.x.size());
  for (std::size_t e = 0; e < d.x.size(); ++e) {
    const auto c = static_cast<std::size_t>(
        channel_of(static_cast<std::int64_t>(e), d.job.channels, d.job.inner, d.job.layout));
    y[e] = kSpec.is_float()
               ? apply_float(d.x[e], static_cast<std::uint32_t>(d.scale[c]),
                             static_cast<std::uint32_t>(d.shift[c]), kSpec, d.job.settings)
               : apply(d.x[e], d.scale[c], d.shift[c], d.job.settings);
  }
  return y;
}

std::string describe(const JobData& d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "C=%d HW=%lld %s R=%d %s lo=%lld hi=%lld elems=%zu",
                d.job.channels, static_cast<long long>(d.job.inner),
                std::string(to_string(d.job.layout)).c_str(), d.job.settings.shift,
                std::string(to_string(d.job.settings.rounding)).c_str(),
                static_cast<long long>(d.job.settings.lo),
                static_cast<long long>(d.job.settings.hi), d.x.size());
  return buf;
}

// Checks one streamed result against the golden model; returns the number of mismatches.
std::size_t check_result(const JobData& d, const StreamResult& r, int lanes) {
  for (const auto& e : r.errors) ADD_FAILURE() << describe(d) << ": " << e;
  const auto want = golden(d);
  EXPECT_EQ(r.y.size(), want.size()) << describe(d);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < std::min(want.size(), r.y.size()); ++i) {
    if (want[i] != r.y[i]) {
      if (bad < 5) {
        ADD_FAILURE() << describe(d) << ": element " << i << " got " << r.y[i] << " want "
                      << want[i];
      }
      ++bad;
    }
  }
  const std::size_t beats =
      (d.x.size() + static_cast<std::size_t>(lanes) - 1) / static_cast<std::size_t>(lanes);
  EXPECT_EQ(r.out_beats, beats) << describe(d);
  EXPECT_EQ(r.in_beats, beats) << describe(d);
  for (std::size_t b = 0; b < r.lasts.size(); ++b) {
    EXPECT_EQ(r.lasts[b], b + 1 == beats) << "tlast on beat " << b << " " << describe(d);
    const std::size_t first = b * static_cast<std::size_t>(lanes);
    const std::size_t n =
        std::min<std::size_t>(static_cast<std::size_t>(lanes), d.x.size() - first);
    const std::uint64_t want_keep = n >= 64 ? ~0ULL : ((1ULL << n) - 1);
    EXPECT_EQ(r.keeps[b], want_keep) << "tkeep on beat " << b << " " << describe(d);
  }
  g_mismatches += bad;
  return bad;
}

void run_job(CoreDriver& drv, const JobData& d, double p_in, double p_out) {
  const int setup = drv.configure(d.job);
  ASSERT_GE(setup, 0) << "configure failed (" << setup << ") " << describe(d);
  EXPECT_LE(setup, 2 * drv.shape().lanes + 5) << "set-up cycles " << describe(d);
  ASSERT_TRUE(drv.load_params(d.scale, d.shift, p_in)) << describe(d);
  const auto r = drv.stream(d.x, p_in, p_out);
  check_result(d, r, drv.shape().lanes);
  ++g_jobs;
  g_elements += d.x.size();
}

constexpr double kStalls[] = {0.0, 0.1, 0.5, 0.9};

TEST(Cosim, RandomJobsMatchGoldenModel) {
  CoreDriver drv(NC_SEED);
  drv.reset();
  const int jobs = NC_JOBS;
  for (int j = 0; j < jobs; ++j) {
    auto d = random_job(drv.rng(), drv.shape(), 4000);
    const double p_in = kStalls[j % 4];
    const double p_out = kStalls[(j / 4 + j) % 4];
    run_job(drv, d, p_in, p_out);
    if (HasFailure()) break;
  }
  g_cycles += drv.cycle();
}

TEST(Cosim, BackToBackPacketsWithoutReconfiguring) {
  CoreDriver drv(NC_SEED + 1);
  drv.reset();
  for (int j = 0; j < 4 && !HasFailure(); ++j) {
    auto d = random_job(drv.rng(), drv.shape(), 800);
    run_job(drv, d, 0.2, 0.2);
    // The same configuration again: packets of other lengths restart at element 0.
    for (std::size_t len : {d.x.size() / 2 + 1, std::size_t{1}, d.x.size()}) {
      JobData e = d;
      e.x.resize(len);
      const auto r = drv.stream(e.x, 0.3, 0.3);
      check_result(e, r, drv.shape().lanes);
      g_elements += len;
    }
  }
  g_cycles += drv.cycle();
}

TEST(Cosim, OneBeatPerCycleWhenUnstalled) {
  CoreDriver drv(NC_SEED + 2);
  drv.reset();
  for (int j = 0; j < 3; ++j) {
    auto d = random_job(drv.rng(), drv.shape(), 4000);
    ASSERT_GE(drv.configure(d.job), 0);
    ASSERT_TRUE(drv.load_params(d.scale, d.shift));
    const auto r = drv.stream(d.x, 0.0, 0.0);
    check_result(d, r, drv.shape().lanes);
    // Exact cycle count: B beats leave the core B - 1 + latency cycles after the first enters.
    EXPECT_EQ(r.last_out_cycle - r.first_in_cycle,
              r.in_beats - 1 + static_cast<std::uint64_t>(drv.shape().latency))
        << describe(d);
    g_elements += d.x.size();
  }
  g_cycles += drv.cycle();
}

// The parameter protocol: exactly C words in channel order, one per cycle; s_axis_tready stays low
// (beats offered from configured_o on are not taken) until the table is complete, which is exactly
// C + L cycles after configured_o when prm_valid_i is high throughout (C + L - 1 table writes:
// C words and L - 1 wrap-around copies; the direct table: C + 1, no copies; the per-lane copies:
// max(C, L - 1) + 1, copies only at C .. L - 2), or with gaps: no beat before the C-th word.
TEST(Cosim, ParameterLoadCyclesAndNoEarlyBeats) {
  CoreDriver drv(NC_SEED + 5);
  drv.reset();
  auto& top = drv.top();
  const int L = drv.shape().lanes;
  std::vector<std::int64_t> cs = {1, 2,     L - 2,     L - 1,
                                  L, L + 1, 2 * L + 1, drv.shape().max_channels};
  for (int k = 0; k < 4; ++k)
    cs.push_back(std::uniform_int_distribution<std::int64_t>(1, 3 * L + 7)(drv.rng()));
  // A core that needs C to be a multiple of L gets the nearest such C (and four at least).
  for (auto& c : cs)
    c = conform_channels(std::clamp<std::int64_t>(c, 1, drv.shape().max_channels), drv.shape());
  if (kLanesDivideChannels) {
    for (int k = 1; k <= 4; ++k) cs.push_back(conform_channels(k * L, drv.shape()));
  }
  std::sort(cs.begin(), cs.end());
  cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
  int n = 0;
  for (std::int64_t c : cs) {
    if (c < 1 || c > drv.shape().max_channels || HasFailure()) continue;
    for (const double p_idle : {0.0, 0.4}) {
      auto d = random_job(drv.rng(), drv.shape(), 2000);
      d.job.channels = static_cast<int>(c);
      const ArithSpec a = drv.shape().arith();  // fill values inside the widths
      d.scale.resize(static_cast<std::size_t>(c), std::min<std::int64_t>(3, a.s_max()));
      d.shift.resize(static_cast<std::size_t>(c), std::max<std::int64_t>(-5, a.b_min()));
      d.x.resize(std::min<std::size_t>(d.x.size(), static_cast<std::size_t>(c * d.job.inner)));
      ASSERT_GE(drv.configure(d.job), 0) << describe(d);
      const std::uint64_t t0 = drv.cycle();  // the first cycle with configured_o high
      std::bernoulli_distribution idle(p_idle);
      top.s_axis_tvalid = 1;  // a beat offered from the first cycle on
      top.s_axis_tlast = 0;
      std::size_t taken = 0;
      std::uint64_t last_word = 0, ready_ones = 0;
      while (true) {
        const bool offer = taken < d.scale.size() && !idle(drv.rng());
        if (offer) drv.present_param(d.scale[taken], d.shift[taken]);
        top.prm_valid_i = offer ? 1 : 0;
        top.clk_i = 0;
        top.eval();
        if (top.s_axis_tready) break;
        ASSERT_LT(drv.cycle() - t0, 3 * static_cast<std::uint64_t>(c) + 10 * L + 100)
            << "s_axis_tready never rose " << describe(d);
        if (top.prm_ready_o) ++ready_ones;
        if (offer && top.prm_ready_o) {
          ++taken;
          last_word = drv.cycle();
        }
        drv.tick();
      }
      top.prm_valid_i = 0;
      top.s_axis_tvalid = 0;
      EXPECT_EQ(taken, d.scale.size()) << "s_axis_tready before the C-th word " << describe(d);
      EXPECT_LE(drv.cycle() - last_word, static_cast<std::uint64_t>(L) + 1) << describe(d);
      if (p_idle == 0.0) {
        EXPECT_EQ(ready_ones, static_cast<std::uint64_t>(c))
            << "prm_ready_o cycles " << describe(d);
        // The per-lane copies write T[u] = param[u mod C] at C <= u < L - 1 too.
        const std::int64_t writes = table_direct(L)   ? c
                                    : table_copies(L) ? std::max<std::int64_t>(c, L - 1)
                                                      : c + L - 1;
        EXPECT_EQ(drv.cycle() - t0, static_cast<std::uint64_t>(writes + 1))
            << "load cycles, configured_o to s_axis_tready " << describe(d);
        EXPECT_LE(drv.cycle() - t0, static_cast<std::uint64_t>(c + 2 * L + 8)) << describe(d);
      }
      // Nothing was taken early: the whole stream comes out right.
      check_result(d, drv.stream(d.x, 0.1, 0.1), L);
      g_elements += d.x.size();
      ++n;
    }
  }
  EXPECT_GT(n, 6);
  g_cycles += drv.cycle();
}

TEST(Cosim, InvalidConfigurationIsFlaggedThenRecovers) {
  CoreDriver drv(NC_SEED + 3);
  drv.reset();
  auto good = random_job(drv.rng(), drv.shape(), 500);
  std::vector<CoreJob> bad;
  CoreJob b = good.job;
  b.channels = 0;
  bad.push_back(b);
  b = good.job;
  b.inner = 0;
  bad.push_back(b);
  const int cw = [&] {
    int w = 1;
    while ((drv.shape().max_channels >> w) != 0) ++w;
    return w;
  }();
  if (drv.shape().max_channels < (1 << cw) - 1) {
    b = good.job;
    b.channels = drv.shape().max_channels + 1;
    bad.push_back(b);
  }
  // Above the maximum by whole beats (C a multiple of L on a --lanes-divide-channels core, which
  // rejects max + 1 by that test alone): the C <= max check itself.
  if (drv.shape().max_channels + drv.shape().lanes <= (1 << cw) - 1) {
    b = good.job;
    b.channels = drv.shape().max_channels + drv.shape().lanes;
    bad.push_back(b);
  }
  const int aw = drv.shape().arith().acc_bits();
  const int rw = [&] {
    int w = 1;
    while ((aw >> w) != 0) ++w;
    return w;
  }();
  if (aw < (1 << rw) - 1) {
    b = good.job;
    b.settings.shift = aw + 1;
    bad.push_back(b);
  }
  for (const auto& job : bad) {
    EXPECT_EQ(drv.configure(job), -1)
        << "C=" << job.channels << " HW=" << job.inner << " R=" << job.settings.shift;
    EXPECT_TRUE(drv.top().cfg_error_o);
    // The stream stays closed and nothing comes out.
    drv.top().s_axis_tvalid = 1;
    for (int i = 0; i < 20; ++i) {
      drv.top().clk_i = 0;
      drv.top().eval();
      EXPECT_FALSE(drv.top().s_axis_tready);
      EXPECT_FALSE(drv.top().m_axis_tvalid);
      drv.tick();
    }
    drv.top().s_axis_tvalid = 0;
  }
  run_job(drv, good, 0.1, 0.1);
  EXPECT_FALSE(drv.top().cfg_error_o);
  g_cycles += drv.cycle();
}

// Directed: every rounding mode at R = 0, 1, 2, sw and the accumulator width, with extreme scales
// and shifts, over every input value (up to 4096 of them): ties, negative values, saturation.
TEST(Cosim, RoundingTiesAndExtremes) {
  if (kSpec.is_float()) GTEST_SKIP() << "integer rounding: not a float core's (flane.cosim)";
  CoreDriver drv(NC_SEED + 4);
  drv.reset();
  const ArithSpec a = drv.shape().arith();
  const std::int64_t span = a.x_max() - a.x_min() + 1;
  const std::int64_t step = std::max<std::int64_t>(1, span / 4096);
  std::vector<std::int64_t> xs;
  for (std::int64_t x = a.x_min(); x <= a.x_max(); x += step) xs.push_back(x);
  xs.push_back(a.x_max());
  // Every constant inside the configured widths (a 2-bit scale holds -2..1: 3 would be a
  // value the core cannot hold, not a test of it).
  const std::int64_t scales[] = {1, -1, std::min<std::int64_t>(3, a.s_max()), a.s_max(), a.s_min()};
  const std::int64_t shifts[] = {0, 1, -1, a.b_max(), a.b_min()};
  // C = 5 (a multiple of the lanes on a core that needs one: the five repeat).
  const auto chans = static_cast<int>(conform_channels(5, drv.shape()));
  for (int mode = 0; mode < 4 && !HasFailure(); ++mode) {
    if (kFixedRound >= 0 && mode != kFixedRound) continue;  // a specialised core: its one mode
    for (int r : {0, 1, 2, a.sw, a.acc_bits()}) {
      if (kFixedShift >= 0) r = kFixedShift;
      JobData d;
      d.job.channels = chans;
      d.job.inner = 1;  // nchw and nhwc are the same order at HW = 1
      d.job.layout = kFixedLayout >= 0 ? static_cast<Layout>(kFixedLayout) : Layout::nhwc;
      d.job.settings.shift = r;
      d.job.settings.rounding = static_cast<Rounding>(mode);
      d.job.settings.lo = a.y_min();
      d.job.settings.hi = a.y_max();
      for (int c = 0; c < chans; ++c) {
        d.scale.push_back(scales[c % 5]);
        d.shift.push_back(shifts[c % 5]);
      }
      // Every x meets every channel: repeat each input once per channel.
      for (std::int64_t x : xs) {
        for (int c = 0; c < chans; ++c) d.x.push_back(x);
      }
      run_job(drv, d, 0.1, 0.1);
      if (HasFailure() || kFixedShift >= 0) break;
    }
  }
  g_cycles += drv.cycle();
}

// A specialised core rejects (cfg_error_o, stream closed) every job that differs from a fixed
// setting, as CoreConfig::check_job, ERR_UNSUPPORTED and the ref device do; then runs a good one.
TEST(Cosim, UnsupportedJobsAreRejected) {
  CoreDriver drv(NC_SEED + 5);
  drv.reset();
  const auto good = random_job(drv.rng(), drv.shape(), 500);
  std::vector<CoreJob> bad;
  if (kFixedShift >= 0) {
    for (int r : {kFixedShift - 1, kFixedShift + 1}) {
      if (r < 0 || r > drv.shape().arith().acc_bits()) continue;
      CoreJob b = good.job;
      b.settings.shift = r;
      bad.push_back(b);
    }
  }
  if (kFixedRound >= 0) {
    for (int m = 0; m < 4; ++m) {
      if (m == kFixedRound) continue;
      CoreJob b = good.job;
      b.settings.rounding = static_cast<Rounding>(m);
      bad.push_back(b);
    }
  }
  if (kFixedLayout >= 0) {
    CoreJob b = good.job;
    b.layout = static_cast<Layout>(1 - kFixedLayout);
    bad.push_back(b);
  }
  if (kLanesDivideChannels && drv.shape().lanes > 1) {
    const int L = drv.shape().lanes;
    for (int c : {1, L - 1, L + 1, 2 * L - 1, drv.shape().max_channels}) {
      if (c < 1 || c > drv.shape().max_channels || c % L == 0) continue;
      CoreJob b = good.job;
      b.channels = c;
      bad.push_back(b);
    }
  }
  if (kFixedShift < 0 && kFixedRound < 0 && kFixedLayout < 0 && !kLanesDivideChannels) {
    GTEST_SKIP() << "not a specialised core";
  }
  EXPECT_FALSE(bad.empty());
  for (const auto& job : bad) {
    EXPECT_EQ(drv.configure(job), -1)
        << "C=" << job.channels << " " << to_string(job.layout) << " R=" << job.settings.shift
        << " " << to_string(job.settings.rounding);
    EXPECT_TRUE(drv.top().cfg_error_o);
    EXPECT_FALSE(drv.top().s_axis_tready);
  }
  run_job(drv, good, 0.1, 0.1);
  EXPECT_FALSE(drv.top().cfg_error_o);
  g_cycles += drv.cycle();
}

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("cosim summary [%s]: %llu jobs, %llu elements, %llu cycles, %llu mismatches\n",
                NC_STR(NC_NAME), static_cast<unsigned long long>(g_jobs),
                static_cast<unsigned long long>(g_elements),
                static_cast<unsigned long long>(g_cycles),
                static_cast<unsigned long long>(g_mismatches));
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new Summary);  // gtest owns it

}  // namespace
}  // namespace normcore::sim
