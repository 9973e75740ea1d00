// Directed co-simulation jobs of one generated core (beside test_core.cpp's random ones), each
// aimed at logic the random jobs reach rarely or never (issue 20, item 5: the mutation
// survivors): the shifter's sticky bits and its fit test at every R, every channel count near
// the table's edges, stalled and abandoned parameter loads, a reset in the middle of a job,
// random initial register state.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core_driver.hpp"
#include "float_jobs.hpp"
#include "normcore/float_contract.hpp"
#include "spec_harness.hpp"

namespace normcore::sim {
namespace {

const ArithSpec kA = CoreShape{}.arith();

struct Job {
  CoreJob job;
  std::vector<std::int64_t> s, b, x;
};

std::string describe(const Job& j) {
  return "C=" + std::to_string(j.job.channels) + " HW=" + std::to_string(j.job.inner) + " " +
         std::string(to_string(j.job.layout)) + " R=" + std::to_string(j.job.settings.shift) + " " +
         std::string(to_string(j.job.settings.rounding)) + " elems=" + std::to_string(j.x.size());
}

// A job of C channels, HW, layout (conformed to a specialised core), random parameters and
// settings, `images` images (at most max_elems elements).
Job random_job(std::mt19937_64& rng, int c, std::int64_t hw, Layout lay, std::size_t max_elems) {
  Job j;
  j.job.channels = c;
  j.job.inner = hw;
  j.job.layout = lay;
  auto& st = j.job.settings;
  st.shift = std::uniform_int_distribution<int>(0, kA.acc_bits())(rng);
  st.rounding = static_cast<Rounding>(std::uniform_int_distribution<int>(0, 3)(rng));
  st.lo = kA.y_min();
  st.hi = kA.y_max();
  if (kA.is_float()) float_settings(rng, kA, st);
  conform_settings(j.job);
  for (int k = 0; k < c; ++k) {
    const bool f = kA.is_float();
    j.s.push_back(f ? random_fp32(rng)
                    : std::uniform_int_distribution<std::int64_t>(kA.s_min(), kA.s_max())(rng));
    j.b.push_back(f ? random_fp32(rng)
                    : std::uniform_int_distribution<std::int64_t>(kA.b_min(), kA.b_max())(rng));
  }
  const auto n = std::min<std::size_t>(max_elems, static_cast<std::size_t>(2 * c * hw));
  std::uniform_int_distribution<std::int64_t> xd(kA.x_min(), kA.x_max());
  for (std::size_t e = 0; e < n; ++e) {
    j.x.push_back(kA.is_float() ? static_cast<std::int64_t>(rng() & 0xFFFFU) : xd(rng));
  }
  return j;
}

// The streamed result against the golden model: protocol errors, every element, the beats.
void expect_result(const Job& j, const StreamResult& r) {
  for (const auto& e : r.errors) ADD_FAILURE() << describe(j) << ": " << e;
  ASSERT_EQ(r.y.size(), j.x.size()) << describe(j);
  int bad = 0;
  for (std::size_t e = 0; e < j.x.size() && bad < 5; ++e) {
    const auto c = static_cast<std::size_t>(
        channel_of(static_cast<std::int64_t>(e), j.job.channels, j.job.inner, j.job.layout));
    const std::int64_t want =
        kA.is_float() ? apply_float(j.x[e], static_cast<std::uint32_t>(j.s[c]),
                                    static_cast<std::uint32_t>(j.b[c]), kA, j.job.settings)
                      : apply(j.x[e], j.s[c], j.b[c], j.job.settings);
    if (r.y[e] != want) {
      ADD_FAILURE() << describe(j) << ": element " << e << " got " << r.y[e] << " want " << want;
      ++bad;
    }
  }
}

int g_jobs = 0;  // jobs streamed and checked (each test asserts it ran some)
std::size_t g_elems = 0;

void run(CoreDriver& drv, const Job& j, double p_prm, double p_in, double p_out) {
  ASSERT_GE(drv.configure(j.job), 0) << describe(j);
  ASSERT_TRUE(drv.load_params(j.s, j.b, p_prm)) << describe(j);
  expect_result(j, drv.stream(j.x, p_in, p_out));
  ++g_jobs;
  g_elems += j.x.size();
}

// Prints and checks the jobs a test ran (at least `min`).
void ran(const char* what, int jobs0, std::size_t elems0, int min) {
  std::printf("directed %s: %d jobs, %zu elements\n", what, g_jobs - jobs0, g_elems - elems0);
  EXPECT_GE(g_jobs - jobs0, min) << what;
}

std::vector<Layout> layouts() {
  if (kFixedLayout >= 0) return {static_cast<Layout>(kFixedLayout)};
  return {Layout::nchw, Layout::nhwc};
}

// Channel counts where the tracker, the step divider and the table change regime: 1 .. 2L + 8,
// around every power of two (2^k - 1 .. 2^k + 4: a compare of C - 1's high bits), the top.
std::vector<int> edge_channels(const CoreShape& sh) {
  std::set<int> cs;
  for (int c = 1; c <= 2 * sh.lanes + 8; ++c) cs.insert(c);
  for (int p = 2; p <= sh.max_channels; p *= 2) {
    for (int d = -1; d <= 4; ++d) cs.insert(p + d);
  }
  for (int d = 0; d <= 4; ++d) cs.insert(sh.max_channels - d);
  std::vector<int> out;
  for (int c : cs) {
    const auto k = static_cast<int>(conform_channels(c, sh.lanes, sh.max_channels));
    if (k >= 1 && k <= sh.max_channels && (out.empty() || out.back() != k)) out.push_back(k);
  }
  return out;
}

TEST(Directed, EveryChannelCountNearTheEdges) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  CoreDriver drv(NC_SEED + 20);
  drv.reset();
  const int L = drv.shape().lanes;
  const std::int64_t hw_max = (1LL << std::min(drv.shape().inner_bits, 40)) - 1;
  for (int c : edge_channels(drv.shape())) {
    for (Layout lay : layouts()) {
      for (std::int64_t hw : {1, 2, L + 1}) {
        if (HasFailure()) return;
        auto j = random_job(drv.rng(), c, std::min(hw, hw_max), lay, 1500);
        run(drv, j, 0.2, 0.2, 0.2);
      }
    }
  }
  ran("channel counts", jobs0, elems0, static_cast<int>(edge_channels(drv.shape()).size()));
}

// Every stride S = HW (nchw) near the tracker's regimes (1 .. 4L + 4: S < L, S < 2L, 2S <= 3L)
// and around every power of two 2^k +- (2L + 2) (the low / high split of rem = S - r0 and the
// chunked compares of S - L's high part), at least three channel boundaries per job.
TEST(Directed, StridesNearPowersOfTwo) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  if (kFixedLayout == static_cast<int>(Layout::nhwc)) GTEST_SKIP() << "S = 1 only (nhwc)";
  CoreDriver drv(NC_SEED + 26);
  drv.reset();
  const int L = drv.shape().lanes;
  const std::int64_t hw_max = (1LL << std::min(drv.shape().inner_bits, 40)) - 1;
  std::set<std::int64_t> strides;
  for (std::int64_t s = 1; s <= 4 * L + 4; ++s) strides.insert(s);
  for (std::int64_t p = 2; p <= std::min<std::int64_t>(hw_max + 1, 1 << 12); p *= 2) {
    for (std::int64_t d = -2 * L - 2; d <= 2 * L + 2; ++d) strides.insert(p + d);
  }
  const int cmax = drv.shape().max_channels;
  for (std::int64_t s : strides) {
    if (s < 1 || s > hw_max || HasFailure()) continue;
    const int c = static_cast<int>(
        conform_channels(std::min<std::int64_t>(2 + s % 3, cmax), L, cmax));  // 2..4 channels
    auto j = random_job(drv.rng(), c, s, Layout::nchw, static_cast<std::size_t>(3 * s + 4 * L));
    run(drv, j, 0.1, 0.1, 0.1);
  }
  ran("strides", jobs0, elems0, 1);
}

// A start taken in the same cycle as a parameter word of a stalled load (a word with a table
// copy): the new job must hold s_axis_tready low until its own C words are in, then stream
// right (the abandoned load's copy writes must not mark the new table complete).
TEST(Directed, StartTogetherWithAParameterWord) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  CoreDriver drv(NC_SEED + 27);
  drv.reset();
  auto& top = drv.top();
  const int L = drv.shape().lanes;
  const int cmax = drv.shape().max_channels;
  for (int ca : {1, 2, L + 1, cmax}) {
    for (int cut : {0, 1, 2}) {
      if (HasFailure()) return;
      const int c1 = static_cast<int>(conform_channels(std::min(ca, cmax), L, cmax));
      if (cut >= c1) continue;
      auto first = random_job(drv.rng(), c1, 2, layouts().front(), 200);
      ASSERT_GE(drv.configure(first.job), 0) << describe(first);
      ASSERT_TRUE(drv.load_params({first.s.begin(), first.s.begin() + cut},
                                  {first.b.begin(), first.b.begin() + cut}))
          << describe(first);
      // The load stalls: once the copies of the last word are written, ready_o and prm_ready_o
      // are both high (a start and a word can be taken in one cycle).
      for (int i = 0; i < 4 || (!(top.ready_o && top.prm_ready_o) && i < 4 * L + 64); ++i) {
        drv.tick();
        top.clk_i = 0;
        top.eval();
      }
      ASSERT_TRUE(top.ready_o && top.prm_ready_o) << describe(first);
      const int c2 = static_cast<int>(conform_channels(std::min(c1 == 1 ? 2 : c1, cmax), L, cmax));
      auto j = random_job(drv.rng(), c2, 3, layouts().back(), 400);
      drv.present_param(first.s[static_cast<std::size_t>(cut)],
                        first.b[static_cast<std::size_t>(cut)]);  // taken with the start
      ASSERT_GE(drv.configure(j.job), 0) << describe(j);
      top.prm_valid_i = 0;
      for (std::size_t w = 0; w < j.s.size() && !HasFailure(); ++w) {
        for (int i = 0; i < 3; ++i) {  // the table is incomplete: no beat may be taken
          top.clk_i = 0;
          top.eval();
          EXPECT_FALSE(top.s_axis_tready) << describe(j) << " after " << w << " words";
          drv.tick();
        }
        ASSERT_TRUE(drv.load_params({j.s[w]}, {j.b[w]})) << describe(j);
      }
      expect_result(j, drv.stream(j.x, 0.1, 0.1));
      ++g_jobs;
      g_elems += j.x.size();
    }
  }
  ran("start with a parameter word", jobs0, elems0, 4);
}

// The sticky bit t (a bit below R - 1 is set) decides half_even at a tie with q even and
// half_away at a tie with acc < 0: acc = base + 2^(R-1) + 2^k with exactly bit k below R - 1
// (or none), for every R and k, q = base / 2^R in {0, 1, -1, -2}. One channel per acc, made as
// x_max * s + b (s near acc / x_max, b the rest, both in their widths; else acc is skipped).
TEST(Directed, ShifterStickyBits) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  if (kA.is_float()) GTEST_SKIP() << "integer rounding";
  if (kFixedShift == 0 || kFixedRound == 0) GTEST_SKIP() << "no rounding (R = 0 or floor)";
  CoreDriver drv(NC_SEED + 21);
  drv.reset();
  const int cmax = static_cast<int>(conform_channels(std::min(drv.shape().max_channels, 36),
                                                     drv.shape().lanes, drv.shape().max_channels));
  const std::int64_t X = kA.x_max();
  for (int r = 1; r <= kA.acc_bits() && !HasFailure(); ++r) {
    if (kFixedShift >= 0 && r != kFixedShift) continue;
    std::vector<std::pair<std::int64_t, std::int64_t>> sb;  // (s, b) per channel
    const std::int64_t half = std::int64_t{1} << (r - 1);
    for (std::int64_t q : {0, 1, -1, -2}) {
      for (int k = -1; k < r - 1; ++k) {
        const std::int64_t a = q * 2 * half + half + (k >= 0 ? std::int64_t{1} << k : 0);
        const std::int64_t s = std::clamp<std::int64_t>(a / X, kA.s_min(), kA.s_max());
        const std::int64_t b = a - X * s;
        if (b >= kA.b_min() && b <= kA.b_max()) sb.emplace_back(s, b);
      }
    }
    for (int mode = 1; mode < 4; ++mode) {
      if (kFixedRound >= 0 && mode != kFixedRound) continue;
      for (std::size_t at = 0; at < sb.size() && !HasFailure(); at += cmax) {
        Job j;
        j.job.channels = cmax;
        j.job.inner = 1;
        j.job.layout = layouts().front();
        j.job.settings = {r, static_cast<Rounding>(mode), kA.y_min(), kA.y_max()};
        conform_settings(j.job);
        for (int c = 0; c < cmax; ++c) {
          const auto& v = sb[std::min(at + static_cast<std::size_t>(c), sb.size() - 1)];
          j.s.push_back(v.first);
          j.b.push_back(v.second);
          j.x.push_back(X);
        }
        run(drv, j, 0.0, 0.1, 0.1);
      }
    }
  }
  ran("sticky bits", jobs0, elems0, 1);
}

// The accumulator's extremes at every R (RoundingTiesAndExtremes takes R in 0, 1, 2, sw, aw):
// s and b at their limits, x over its range, so q = acc >> R crosses the output's range and the
// shifter's "q fits" test decides the saturation at each R (a fit term dropped at one R only).
TEST(Directed, ExtremesAtEveryShift) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  if (kA.is_float()) GTEST_SKIP() << "integer accumulator";
  CoreDriver drv(NC_SEED + 25);
  drv.reset();
  const std::int64_t span = kA.x_max() - kA.x_min() + 1;
  const std::int64_t step = std::max<std::int64_t>(1, span / 128);
  const std::int64_t sb[4][2] = {{kA.s_max(), kA.b_max()},
                                 {kA.s_min(), kA.b_max()},
                                 {kA.s_max(), kA.b_min()},
                                 {kA.s_min(), kA.b_min()}};
  const int chans = static_cast<int>(conform_channels(std::min(4, drv.shape().max_channels),
                                                      drv.shape().lanes, drv.shape().max_channels));
  for (int r = 0; r <= kA.acc_bits() && !HasFailure(); ++r) {
    if (kFixedShift >= 0 && r != kFixedShift) continue;
    Job j;
    j.job.channels = chans;
    j.job.inner = 1;
    j.job.layout = layouts().front();
    j.job.settings = {r, static_cast<Rounding>(r % 4), kA.y_min(), kA.y_max()};
    conform_settings(j.job);
    for (int c = 0; c < chans; ++c) {
      j.s.push_back(sb[c % 4][0]);
      j.b.push_back(sb[c % 4][1]);
    }
    for (std::int64_t x = kA.x_min(); x <= kA.x_max(); x += step) {
      for (int c = 0; c < chans; ++c) j.x.push_back(x);
    }
    run(drv, j, 0.0, 0.1, 0.1);
  }
  ran("extremes at every R", jobs0, elems0, 1);
}

// Parameter loads with prm_valid_i gaps at every word, and loads abandoned by a new start
// after k words (a stalled load: ready_o is high between words), then the new job's load.
TEST(Directed, StalledAndAbandonedParameterLoads) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  CoreDriver drv(NC_SEED + 22);
  drv.reset();
  const int L = drv.shape().lanes;
  for (int c : edge_channels(drv.shape())) {
    if (c > 3 * L + 8 && c != drv.shape().max_channels) continue;
    for (int cut : {0, 1, c / 2, c - 1}) {
      if (HasFailure()) return;
      auto first = random_job(drv.rng(), c, 2, layouts().back(), 600);
      ASSERT_GE(drv.configure(first.job), 0) << describe(first);
      std::vector<std::int64_t> s(first.s.begin(), first.s.begin() + std::max(cut, 0));
      std::vector<std::int64_t> b(first.b.begin(), first.b.begin() + std::max(cut, 0));
      ASSERT_TRUE(drv.load_params(s, b, 0.5)) << describe(first);
      for (int i = 0; i < 3; ++i) drv.tick();  // the load stalls
      const int c2 = static_cast<int>(conform_channels(
          std::min(c == 1 ? 2 : c - 1, drv.shape().max_channels), L, drv.shape().max_channels));
      run(drv, random_job(drv.rng(), c2, 3, layouts().front(), 600), 0.7, 0.1, 0.1);
    }
  }
  ran("abandoned loads", jobs0, elems0, 4);
}

// A reset in the middle of a job (set-up, a partial load, beats in flight with the output
// stalled), then a fresh job: nothing of the old one may come out, and nothing opens (set-up,
// load, input) and no error shows until the next start.
TEST(Directed, ResetInTheMiddleOfAJob) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  CoreDriver drv(NC_SEED + 23);
  drv.reset();
  auto& top = drv.top();
  const int L = drv.shape().lanes;
  for (int phase = 0; phase < 3; ++phase) {
    for (int len : {1, 2, 5}) {
      if (HasFailure()) return;
      const int c = static_cast<int>(
          conform_channels(std::min(L + 1, drv.shape().max_channels), L, drv.shape().max_channels));
      auto j = random_job(drv.rng(), c, 3, layouts().front(), 400);
      ASSERT_GE(drv.configure(j.job), 0);
      if (phase >= 1) {
        const std::size_t n = phase == 1 ? j.s.size() / 2 : j.s.size();
        ASSERT_TRUE(drv.load_params({j.s.begin(), j.s.begin() + static_cast<long>(n)},
                                    {j.b.begin(), j.b.begin() + static_cast<long>(n)}));
      }
      if (phase == 2) {  // beats in, none out: the FIFO fills
        top.m_axis_tready = 0;
        top.s_axis_tvalid = 1;
        top.s_axis_tlast = 0;
        set_bits(top.s_axis_tkeep, 0, L, L >= 64 ? ~0ULL : (1ULL << L) - 1);
        for (int i = 0; i < 3 * drv.shape().latency; ++i) drv.tick();
        top.s_axis_tvalid = 0;
      }
      drv.reset(len);
      top.clk_i = 0;
      top.eval();
      EXPECT_FALSE(top.m_axis_tvalid) << "phase " << phase;
      EXPECT_FALSE(top.configured_o) << "phase " << phase;
      for (int i = 0; i < drv.shape().latency + 16; ++i) {  // nothing starts without a start
        drv.tick();
        top.clk_i = 0;
        top.eval();
        ASSERT_FALSE(top.configured_o || top.cfg_error_o || top.prm_ready_o || top.s_axis_tready ||
                     top.m_axis_tvalid)
            << "phase " << phase << ", " << i + 1 << " cycles after the reset";
      }
      auto k = random_job(drv.rng(), c, 2, layouts().back(), 400);
      run(drv, k, 0.2, 0.2, 0.2);
    }
  }
  ran("resets", jobs0, elems0, 9);
}

// Every register starts at a random value (not the simulator's 0): the reset must bring the
// core to a defined state.
TEST(Directed, RandomInitialState) {
  const int jobs0 = g_jobs;
  const std::size_t elems0 = g_elems;
  for (int seed = 1; seed <= 6 && !HasFailure(); ++seed) {
    CoreDriver drv(NC_SEED + 24 + static_cast<std::uint64_t>(seed), seed);
    drv.reset(2);
    const int L = drv.shape().lanes;
    for (int c : {1, L + 1}) {
      const int k = static_cast<int>(
          conform_channels(std::min(c, drv.shape().max_channels), L, drv.shape().max_channels));
      auto j = random_job(drv.rng(), k, 2, layouts().back(), 300);
      run(drv, j, 0.2, 0.2, 0.3);
    }
  }
  ran("random initial state", jobs0, elems0, 12);
}

}  // namespace
}  // namespace normcore::sim
