// What only the ref device's descriptor ring does (nc_ring): descriptors run inside the
// RING_HEAD write (TAIL == HEAD right after it, each status and output there at once) and a
// descriptor that cannot be read (no buffer there: a read error, no status). The scenarios every
// backend runs (failing descriptors, coalescing, soft reset, faults, the single-job registers)
// are ring_scenarios.hpp, on ref: in test_ring_scenarios.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "test_paths.hpp"

namespace {

using namespace normcore;

std::string ring_device(const std::string& opts = "") {
  return "ref:" + normcore::test::devices_dir() + "/nc_ring/rtl/manifest.json" + opts;
}

// A job in memory: input, parameter table, output buffer, and the golden result.
struct MemJob {
  std::uint64_t c = 1, hw = 1, n = 1;
  Layout layout = Layout::nchw;
  JobSettings set;
  std::vector<std::int64_t> s, b, x;
  std::unique_ptr<DmaBuffer> in, out, prm;
  [[nodiscard]] std::vector<std::int8_t> golden() const {
    std::vector<std::int64_t> y(x.size());
    apply_tensor(x, y, s, b, static_cast<std::int64_t>(hw), layout, set);
    return {y.begin(), y.end()};
  }
  [[nodiscard]] std::vector<std::int8_t> result() const {
    const auto m = out->map();
    return {m.begin(), m.begin() + static_cast<std::ptrdiff_t>(x.size())};
  }
};

struct Ring : ::testing::Test {
  std::unique_ptr<Device> d = open_device(ring_device());
  std::mt19937_64 rng{19};
  std::unique_ptr<DmaBuffer> ring;
  unsigned log2 = 2;

  const Manifest& m() const { return d->manifest(); }
  std::uint32_t rd(std::string_view r) { return d->read32(m().offset(r)); }
  void wr(std::string_view r, std::uint32_t v) { d->write32(m().offset(r), v); }
  std::uint32_t get(std::string_view r, std::string_view f) { return m().field(r, f).get(rd(r)); }
  std::uint32_t put(std::string_view r, std::string_view f, std::uint64_t v) const {
    return m().field(r, f).put(0, v);
  }
  std::int64_t uni(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }

  void setup(unsigned k, std::uint32_t coalesce = 0) {
    log2 = k;
    ring = d->alloc(64u << k, 64);
    std::memset(ring->map().data(), 0xA5, ring->size());  // stale bytes: the device must not care
    wr("RING_BASE_LO", static_cast<std::uint32_t>(ring->device_address()));
    wr("RING_BASE_HI", static_cast<std::uint32_t>(ring->device_address() >> 32));
    wr("RING_SIZE", k);
    wr("CTRL", put("CTRL", "irq_en_ring", 1) | put("CTRL", "irq_en_error", 1));
    wr("RING_CTRL", put("RING_CTRL", "enable", 1) | put("RING_CTRL", "coalesce", coalesce));
  }

  MemJob make_job(const MemJob* share = nullptr) {
    MemJob j;
    const ArithSpec a = m().config.arith();
    j.c = share ? share->c : static_cast<std::uint64_t>(uni(1, 40));
    j.hw = static_cast<std::uint64_t>(uni(1, 30));
    j.n = static_cast<std::uint64_t>(uni(1, 3));
    j.layout = uni(0, 1) ? Layout::nhwc : Layout::nchw;
    j.set.shift = static_cast<int>(uni(0, 12));
    j.set.rounding = static_cast<Rounding>(uni(0, 3));
    j.set.lo = uni(a.y_min(), 0);
    j.set.hi = uni(0, a.y_max());
    if (share != nullptr) {
      j.s = share->s;
      j.b = share->b;
    } else {
      for (std::uint64_t c = 0; c < j.c; ++c) {
        j.s.push_back(uni(a.s_min(), a.s_max()));
        j.b.push_back(uni(-(1 << 14), 1 << 14));
      }
      j.prm = d->alloc(j.c * 8, 64);
      auto p = j.prm->map();
      for (std::uint64_t c = 0; c < j.c; ++c) {
        const std::uint64_t e = (static_cast<std::uint64_t>(j.s[c]) & 0xFFFF) |
                                (static_cast<std::uint64_t>(j.b[c]) & 0xFFFFFFFF) << 16;
        for (int k = 0; k < 8; ++k)
          p[c * 8 + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(e >> (8 * k));
      }
    }
    const std::uint64_t n = j.c * j.hw * j.n;
    for (std::uint64_t i = 0; i < n; ++i) j.x.push_back(uni(a.x_min(), a.x_max()));
    j.in = d->alloc(n, 64);
    j.out = d->alloc(n, 64);
    for (std::uint64_t i = 0; i < n; ++i) j.in->map()[i] = static_cast<std::uint8_t>(j.x[i]);
    return j;
  }

  std::span<std::uint8_t> slot(std::uint32_t index) {
    return ring->map().subspan((index & ((1u << log2) - 1)) * 64, 64);
  }
  static void put_le(std::span<std::uint8_t> b, std::size_t at, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  static std::uint64_t get_le(std::span<const std::uint8_t> b, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
    return v;
  }
  // Writes job j as descriptor `index` (prm: the table it points at).
  void describe(std::uint32_t index, const MemJob& j, const DmaBuffer& prm,
                std::uint32_t flags = 0) {
    auto b = slot(index);
    put_le(b, 0, j.in->device_address(), 8);
    put_le(b, 8, j.out->device_address(), 8);
    put_le(b, 16, prm.device_address(), 8);
    put_le(b, 24, j.c, 4);
    put_le(b, 28, j.layout == Layout::nchw ? j.hw : 1, 4);
    put_le(b, 32, j.layout == Layout::nchw ? j.n : j.n * j.hw, 4);
    std::uint32_t mode = put("MODE", "layout", j.layout == Layout::nhwc ? 1 : 0) |
                         put("MODE", "rounding", static_cast<std::uint64_t>(j.set.rounding)) |
                         put("MODE", "shift", static_cast<std::uint64_t>(j.set.shift));
    put_le(b, 36, mode | flags, 4);
    put_le(b, 40, static_cast<std::uint64_t>(j.set.lo) & 0xFF, 4);
    put_le(b, 44, static_cast<std::uint64_t>(j.set.hi) & 0xFF, 4);
    put_le(b, 48, 0xFFFFFFFF, 4);  // the device overwrites the status
  }
  std::uint32_t status_of(std::uint32_t index) {
    return static_cast<std::uint32_t>(get_le(slot(index), 48, 4));
  }
};

constexpr std::uint32_t kSameParams = 1u << 17;

TEST_F(Ring, RandomStreamsWrapAndAppendBitExact) {
  setup(2);  // 4 slots: 23 descriptors wrap five times
  std::vector<MemJob> jobs;
  for (int i = 0; i < 23; ++i) {
    const bool share = !jobs.empty() && uni(0, 1) == 0;
    jobs.push_back(make_job(share ? &jobs.back() : nullptr));
    if (share) jobs.back().prm = nullptr;
  }
  std::uint32_t head = 0;
  std::size_t next = 0;
  while (next < jobs.size()) {  // appends of 1..4 descriptors (never more than the ring)
    const auto n = std::min<std::size_t>(static_cast<std::size_t>(uni(1, 4)), jobs.size() - next);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t t = next + i;
      while (jobs[t].prm == nullptr) --t;  // a shared table: the one it was made with
      describe(head + static_cast<std::uint32_t>(i), jobs[next + i], *jobs[t].prm,
               t != next + i ? kSameParams : 0);
    }
    head += static_cast<std::uint32_t>(n);
    wr("RING_HEAD", head);
    EXPECT_EQ(get("RING_TAIL", "index"), head);
    for (std::size_t i = 0; i < n; ++i) {
      const MemJob& j = jobs[next + i];
      EXPECT_EQ(status_of(head - static_cast<std::uint32_t>(n - i)), 1u)
          << "descriptor " << next + i;
      EXPECT_EQ(get_le(slot(head - static_cast<std::uint32_t>(n - i)), 52, 4), j.x.size());
      EXPECT_EQ(j.result(), j.golden()) << "descriptor " << next + i;
    }
    next += n;
  }
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 1u);
  EXPECT_EQ(get("IRQ_STATUS", "done"), 0u) << "ring jobs do not raise IRQ_STATUS.done";
  EXPECT_EQ(get("STATUS", "done"), 1u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 0u);
  EXPECT_TRUE(d->wait_irq(std::chrono::milliseconds(0)));
}

TEST_F(Ring, UnreadableDescriptorStopsWithAReadError) {
  setup(2);
  const std::uint64_t base = ring->device_address();
  ring.reset();  // the ring's memory is gone
  wr("RING_HEAD", 1);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
  EXPECT_EQ(get("RING_TAIL", "index"), 0u);
  EXPECT_EQ(get("ERR_CODE", "code"), static_cast<std::uint32_t>(m().error_codes.at("read")));
  EXPECT_EQ(rd("ERR_ADDR_LO") | static_cast<std::uint64_t>(rd("ERR_ADDR_HI")) << 32, base);
}

}  // namespace
