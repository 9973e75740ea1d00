// The descriptor ring's scenarios (issue 19), one definition run on every backend: included by
// tests/runtime/test_ring_scenarios.cpp (runtime_tests: ref:, always built) and sim/test_ring.cpp
// (ring_tests: sim: and tlm:, the Verilated RTL and its SystemC model), each of which defines
// manifest_path() and tlm_built() and instantiates the suite for its backends. nc_ring (`--ring`,
// int8 -> int8, 8 lanes, 64-bit bus) and nc_wide_ring (a 256-bit bus) against the golden model:
// random descriptor streams (mixed shapes and layouts, shared tables with the same or other job
// settings, different tables, the same_params hint right or wrong), ring wrap-around, the host
// appending while the device runs, errors injected mid-ring then skip or fix-and-resume, the
// status written back, interrupt coalescing and the irq flag, soft reset while the ring runs,
// START ignored while a descriptor runs, the single-job registers, and the fault injection
// (fail_job, hang_job) counting START jobs and descriptors alike with identical status words.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>

#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"

namespace normcore::test::ring {

// Defined by the including test file.
std::string manifest_path(const std::string& device_name);  // <devices>/<name>/rtl/manifest.json
bool tlm_built();

}  // namespace normcore::test::ring

namespace normcore::test::ring {
namespace {

using namespace normcore;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kIrqFlag = 1u << 16, kSameParams = 1u << 17;

// A test parameter: "<backend>" (nc_ring), "<backend>_wide" (nc_wide_ring, a 256-bit bus) or
// "sim_stall" (nc_ring, latency 40 and stalls on 30 % of the cycles).
std::string backend_of(const std::string& param) {
  return param.substr(0, param.find('_'));
}
std::string device(const std::string& param) {
  const std::string backend = backend_of(param);
  const std::string name = param.find("_wide") != std::string::npos ? "nc_wide_ring" : "nc_ring";
  const std::string m = manifest_path(name);
  if (param == "sim_stall") return "sim:" + m + ",latency=40,stall=0.3,seed=7";
  if (backend == "sim") return "sim:" + m + ",latency=16,stall=0.05,seed=3";
  if (backend == "tlm") return "tlm:" + m;
  return "ref:" + m;
}

// A job in device memory: input, its table (or a shared one), output, and the golden result.
struct MemJob {
  std::uint64_t c = 1, hw = 1, n = 1;
  Layout layout = Layout::nchw;
  JobSettings set;
  std::vector<std::int64_t> s, b, x;
  std::shared_ptr<DmaBuffer> prm;
  std::unique_ptr<DmaBuffer> in, out;
  [[nodiscard]] std::vector<std::int8_t> golden() const {
    std::vector<std::int64_t> y(x.size());
    apply_tensor(x, y, s, b, static_cast<std::int64_t>(hw), layout, set);
    return {y.begin(), y.end()};
  }
  [[nodiscard]] std::vector<std::int8_t> result() const {
    out->sync_from_device();
    const auto m = out->map();
    return {m.begin(), m.begin() + static_cast<std::ptrdiff_t>(x.size())};
  }
};

void put_le(std::span<std::uint8_t> b, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) {
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
  }
}
std::uint64_t get_le(std::span<const std::uint8_t> b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return v;
}

struct Ring : ::testing::TestWithParam<std::string> {
  std::unique_ptr<Device> d;
  std::mt19937_64 rng{19};
  std::unique_ptr<DmaBuffer> ring;
  unsigned log2 = 2;

  void SetUp() override {
    if (backend_of(GetParam()) == "tlm" && !tlm_built()) GTEST_SKIP() << "tlm: not built";
    d = open_device(device(GetParam()));
  }
  // Opens the device again with extra options (fault injection: ",fail_job=N", ...).
  void reopen(const std::string& opts) {
    ring.reset();
    d.reset();  // tlm: one device open at a time
    d = open_device(device(GetParam()) + opts);
  }
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
  std::uint32_t code(const char* e) const {
    return static_cast<std::uint32_t>(m().error_codes.at(e));
  }

  void setup(unsigned k, std::uint32_t coalesce = 0) {
    log2 = k;
    ring = d->alloc(64u << k, 64);
    std::memset(ring->map().data(), 0xA5, ring->size());  // stale bytes: the device must not care
    ring->sync_to_device();
    wr("RING_BASE_LO", static_cast<std::uint32_t>(ring->device_address()));
    wr("RING_BASE_HI", static_cast<std::uint32_t>(ring->device_address() >> 32));
    wr("RING_SIZE", k);
    wr("CTRL", put("CTRL", "irq_en_ring", 1) | put("CTRL", "irq_en_error", 1));
    wr("RING_CTRL", put("RING_CTRL", "enable", 1) | put("RING_CTRL", "coalesce", coalesce));
  }

  // share: the same table (keep: and the same job settings and shape, so the RTL may keep it).
  MemJob make_job(const MemJob* share = nullptr, bool keep = false) {
    MemJob j;
    const ArithSpec a = m().config.arith();
    j.c = share ? share->c : static_cast<std::uint64_t>(uni(1, 40));
    j.hw = keep ? share->hw : static_cast<std::uint64_t>(uni(1, 30));
    j.n = static_cast<std::uint64_t>(uni(1, 3));
    j.layout = keep ? share->layout : uni(0, 1) ? Layout::nhwc : Layout::nchw;
    j.set.shift = static_cast<int>(uni(0, 12));
    j.set.rounding = static_cast<Rounding>(uni(0, 3));
    j.set.lo = uni(a.y_min(), 0);
    j.set.hi = uni(0, a.y_max());
    if (keep) j.set = share->set;
    if (share != nullptr) {
      j.s = share->s;
      j.b = share->b;
      j.prm = share->prm;
    } else {
      for (std::uint64_t c = 0; c < j.c; ++c) {
        j.s.push_back(uni(a.s_min(), a.s_max()));
        j.b.push_back(uni(-(1 << 14), 1 << 14));
      }
      j.prm = d->alloc(j.c * 8, 64);
      auto p = j.prm->map();
      for (std::uint64_t c = 0; c < j.c; ++c) {
        put_le(p, c * 8,
               (static_cast<std::uint64_t>(j.s[c]) & 0xFFFF) |
                   (static_cast<std::uint64_t>(j.b[c]) & 0xFFFFFFFF) << 16,
               8);
      }
      j.prm->sync_to_device();
    }
    const std::uint64_t n = j.c * j.hw * j.n;
    for (std::uint64_t i = 0; i < n; ++i) j.x.push_back(uni(a.x_min(), a.x_max()));
    j.in = d->alloc(n, 64);
    j.out = d->alloc(n, 64);
    for (std::uint64_t i = 0; i < n; ++i) j.in->map()[i] = static_cast<std::uint8_t>(j.x[i]);
    std::memset(j.out->map().data(), 0, j.out->size());
    j.in->sync_to_device();
    j.out->sync_to_device();
    return j;
  }

  // The single-job registers of job j (START not written).
  void write_job_registers(const MemJob& j) {
    wr("CHANNELS", static_cast<std::uint32_t>(j.c));
    wr("INNER", static_cast<std::uint32_t>(j.layout == Layout::nchw ? j.hw : 1));
    wr("OUTER", static_cast<std::uint32_t>(j.layout == Layout::nchw ? j.n : j.n * j.hw));
    wr("MODE", put("MODE", "layout", j.layout == Layout::nhwc ? 1 : 0) |
                   put("MODE", "rounding", static_cast<std::uint64_t>(j.set.rounding)) |
                   put("MODE", "shift", static_cast<std::uint64_t>(j.set.shift)));
    wr("CLAMP_LO", static_cast<std::uint32_t>(j.set.lo) & 0xFF);
    wr("CLAMP_HI", static_cast<std::uint32_t>(j.set.hi) & 0xFF);
    for (const auto& [r, a] :
         {std::pair{"SRC", j.in->device_address()}, std::pair{"DST", j.out->device_address()},
          std::pair{"PARAM", j.prm->device_address()}}) {
      wr(std::string(r) + "_LO", static_cast<std::uint32_t>(a));
      wr(std::string(r) + "_HI", static_cast<std::uint32_t>(a >> 32));
    }
  }

  std::size_t at(std::uint32_t index) const { return (index & ((1u << log2) - 1)) * 64; }
  std::span<std::uint8_t> slot(std::uint32_t index) { return ring->map().subspan(at(index), 64); }
  void sync_slot(std::uint32_t index) { ring->sync_to_device(at(index), 64); }
  // Writes job j as descriptor `index` (and makes it visible to the device).
  void describe(std::uint32_t index, const MemJob& j, std::uint32_t flags = 0) {
    auto b = slot(index);
    put_le(b, 0, j.in->device_address(), 8);
    put_le(b, 8, j.out->device_address(), 8);
    put_le(b, 16, j.prm->device_address(), 8);
    put_le(b, 24, j.c, 4);
    put_le(b, 28, j.layout == Layout::nchw ? j.hw : 1, 4);
    put_le(b, 32, j.layout == Layout::nchw ? j.n : j.n * j.hw, 4);
    const std::uint32_t mode = put("MODE", "layout", j.layout == Layout::nhwc ? 1 : 0) |
                               put("MODE", "rounding", static_cast<std::uint64_t>(j.set.rounding)) |
                               put("MODE", "shift", static_cast<std::uint64_t>(j.set.shift));
    put_le(b, 36, mode | flags, 4);
    put_le(b, 40, static_cast<std::uint64_t>(j.set.lo) & 0xFF, 4);
    put_le(b, 44, static_cast<std::uint64_t>(j.set.hi) & 0xFF, 4);
    put_le(b, 48, 0xFFFFFFFF, 4);  // the device overwrites the status
    sync_slot(index);
  }
  std::uint64_t status_word(std::uint32_t index, std::size_t off, int n) {
    ring->sync_from_device(at(index) + off, static_cast<std::size_t>(n));
    return get_le(ring->map(), at(index) + off, n);
  }
  std::uint32_t status_of(std::uint32_t index) {
    return static_cast<std::uint32_t>(status_word(index, 48, 4));
  }
  // Lets the device run until TAIL == want or the ring stopped (ref: already there).
  std::uint32_t run_until(std::uint32_t want, double seconds = 30) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const std::uint32_t tail = get("RING_TAIL", "index");
      if (tail == want || get("RING_STATUS", "stopped") != 0) {
        if (get("STATUS", "busy") == 0) return tail;
      }
      if (Clock::now() > end) {
        ADD_FAILURE() << "ring stuck at TAIL " << tail << " (want " << want << ")";
        return tail;
      }
      (void)d->wait_irq(std::chrono::milliseconds(0));  // sim / tlm: some cycles pass
    }
  }
  // Lets the device run until RING_TAIL == want (busy or not); false after `seconds`.
  bool wait_tail(std::uint32_t want, double seconds = 30) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (get("RING_TAIL", "index") != want) {
      if (Clock::now() > end) return false;
      (void)d->wait_irq(std::chrono::milliseconds(0));
    }
    return true;
  }
  void pulse(std::string_view r, std::string_view f) { wr(r, rd(r) | put(r, f, 1)); }
};

// Each descriptor with its job; a bad one (err: the error code) is fixed or skipped.
struct Entry {
  MemJob job;
  std::uint32_t flags = 0;
  const char* err = nullptr;
  bool fix = false;  // after the stop: fix it and resume (else skip it)
};

std::vector<Entry> random_stream(Ring& t, int count) {
  std::vector<Entry> es;
  for (int i = 0; i < count; ++i) {
    Entry e;
    const auto kind = es.empty() ? 0 : t.uni(0, 3);  // 0 new table, 1 shared, 2 kept, 3 hint
    const MemJob* prev = es.empty() ? nullptr : &es.back().job;
    e.job = t.make_job(kind == 0 ? nullptr : prev, kind == 2);
    if (kind == 1 || kind == 2) e.flags |= kSameParams;
    if (kind == 3) e.flags |= kSameParams;  // a wrong hint: another table, same flag
    if (t.uni(0, 9) == 0) e.flags |= kIrqFlag;
    if (i > 3 && i + 1 < count && t.uni(0, 7) == 0) {  // the last one completes
      e.err = t.uni(0, 1) ? "bad_channels" : "misaligned";
      e.fix = t.uni(0, 1) == 1;
    }
    es.push_back(std::move(e));
  }
  return es;
}

void describe_entry(Ring& t, std::uint32_t index, const Entry& e) {
  t.describe(index, e.job, e.flags);
  if (e.err == nullptr) return;
  if (std::string(e.err) == "bad_channels") {
    put_le(t.slot(index), 24, 0, 4);
  } else {
    put_le(t.slot(index), 8, e.job.out->device_address() + 1, 8);
  }
  t.sync_slot(index);
}

// The status written back into descriptor i's slot (read before the slot is reused).
void check_status(Ring& t, const std::vector<Entry>& es, std::uint32_t i) {
  if (es[i].err != nullptr) return;  // skipped: its status is the error's (checked at the stop)
  EXPECT_EQ(t.status_of(i), 1u) << "descriptor " << i;
  EXPECT_EQ(t.status_word(i, 52, 4), es[i].job.x.size()) << "descriptor " << i;
  EXPECT_EQ(t.status_word(i, 56, 8), 0u) << "descriptor " << i;
}

TEST_P(Ring, RandomStreamsWrapAppendWhileRunningErrorsSkipResumeBitExact) {
  setup(3, 3);  // 8 slots: 120 descriptors wrap 15 times; IRQ_STATUS.ring every 3
  std::vector<Entry> es = random_stream(*this, 120);
  std::uint32_t head = 0, tail = 0;
  std::size_t errors = 0;
  while (tail < es.size()) {
    // Append what fits while the device runs (no wait for the drain).
    const std::uint32_t room = (1u << log2) - (head - tail);
    const auto n = std::min<std::uint32_t>(room, static_cast<std::uint32_t>(uni(1, 5)));
    for (std::uint32_t i = 0; i < n && head < es.size(); ++i, ++head) {
      if (head >= (1u << log2)) check_status(*this, es, head - (1u << log2));  // slot reused
      describe_entry(*this, head, es[head]);
    }
    wr("RING_HEAD", head);
    tail = get("RING_TAIL", "index");
    if (tail != head && backend_of(GetParam()) != "ref" && uni(0, 1) == 0)
      continue;  // append again
    tail = run_until(head);
    if (get("RING_STATUS", "stopped") == 0) continue;
    Entry& e = es[tail];
    ASSERT_NE(e.err, nullptr) << "stopped at descriptor " << tail;
    EXPECT_EQ(status_of(tail), 2u | code(e.err) << 8) << "descriptor " << tail;
    EXPECT_EQ(get("ERR_CODE", "code"), code(e.err));
    EXPECT_EQ(get("IRQ_STATUS", "error"), 1u);
    wr("IRQ_STATUS", put("IRQ_STATUS", "error", 1));
    ++errors;
    if (e.fix) {
      e.err = nullptr;
      describe_entry(*this, tail, e);
      wr("RING_CTRL", rd("RING_CTRL") | put("RING_CTRL", "resume", 1));
    } else {
      wr("RING_CTRL", rd("RING_CTRL") | put("RING_CTRL", "skip", 1));
    }
  }
  EXPECT_EQ(run_until(head), head);
  EXPECT_GT(errors, 0u) << "the stream had no error";
  for (std::uint32_t i = head - (1u << log2); i < head; ++i) check_status(*this, es, i);
  for (std::uint32_t i = 0; i < es.size(); ++i) {
    const Entry& e = es[i];
    if (e.err != nullptr) {  // skipped: nothing written
      EXPECT_EQ(e.job.result(), std::vector<std::int8_t>(e.job.x.size(), 0)) << i;
      continue;
    }
    EXPECT_EQ(e.job.result(), e.job.golden()) << "descriptor " << i;
  }
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 1u);
  EXPECT_EQ(get("IRQ_STATUS", "done"), 0u) << "ring jobs do not raise IRQ_STATUS.done";
  EXPECT_EQ(get("STATUS", "done"), 1u);
}

TEST_P(Ring, FailingDescriptorStopsTheRingThenSkipOrResume) {
  setup(3, 2);  // interrupt every 2 descriptors
  std::vector<MemJob> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(make_job());
  for (std::uint32_t i = 0; i < 5; ++i) describe(i, jobs[i]);
  put_le(slot(2), 24, 0, 4);  // descriptor 2: C = 0
  sync_slot(2);
  put_le(slot(3), 8, jobs[3].out->device_address() + 1, 8);  // descriptor 3: misaligned DST
  sync_slot(3);
  wr("RING_HEAD", 5);
  EXPECT_EQ(run_until(5), 2u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
  EXPECT_EQ(status_of(2), 2u | code("bad_channels") << 8);
  EXPECT_EQ(get("IRQ_STATUS", "error"), 1u);
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 1u) << "two descriptors completed before the failure";
  EXPECT_EQ(get("ERR_CODE", "code"), code("bad_channels"));
  EXPECT_EQ(jobs[0].result(), jobs[0].golden());
  EXPECT_EQ(jobs[1].result(), jobs[1].golden());
  EXPECT_EQ(status_of(4), 0xFFFFFFFFu) << "nothing after the failing descriptor ran";
  wr("IRQ_STATUS", put("IRQ_STATUS", "error", 1) | put("IRQ_STATUS", "ring", 1));
  wr("RING_HEAD", 5);  // HEAD alone does not restart a stopped ring
  EXPECT_EQ(run_until(5), 2u);
  wr("RING_CTRL", rd("RING_CTRL") | put("RING_CTRL", "skip", 1));
  EXPECT_EQ(run_until(5), 3u) << "skip: on to descriptor 3, which fails";
  EXPECT_EQ(status_of(3) >> 8, code("misaligned"));
  put_le(slot(3), 8, jobs[3].out->device_address(), 8);  // fix it, run it again
  sync_slot(3);
  wr("RING_CTRL", rd("RING_CTRL") | put("RING_CTRL", "resume", 1));
  EXPECT_EQ(run_until(5), 5u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 0u);
  EXPECT_EQ(status_of(3), 1u);
  EXPECT_EQ(jobs[3].result(), jobs[3].golden());
  EXPECT_EQ(jobs[4].result(), jobs[4].golden());
  EXPECT_EQ(jobs[2].result(), std::vector<std::int8_t>(jobs[2].x.size(), 0));
}

// Descriptors sharing one table, shape and settings (the RTL keeps the table and may read the
// next input early), where some read their predecessor's output (a chain of layers: the RTL
// must not read that input before the predecessor's output is written) and the others have
// their own input; one RING_HEAD write, every result against the golden model.
TEST_P(Ring, KeptTableChainsReadThePredecessorsOutput) {
  setup(4);
  std::vector<MemJob> jobs;
  std::vector<bool> chained;
  jobs.push_back(make_job());
  chained.push_back(false);
  for (int i = 1; i < 14; ++i) {
    const MemJob& prev = jobs.back();
    MemJob j = make_job(&prev, true);
    j.n = prev.n;  // the same shape: the sizes are kept too
    const bool chain = uni(0, 1) == 1;
    j.x.clear();
    if (chain) {
      for (const std::int8_t y : prev.golden()) j.x.push_back(y);
    } else {
      for (std::size_t e = 0; e < prev.x.size(); ++e) j.x.push_back(uni(-128, 127));
    }
    j.in = d->alloc(j.x.size(), 64);
    j.out = d->alloc(j.x.size(), 64);
    for (std::size_t e = 0; e < j.x.size(); ++e) j.in->map()[e] = static_cast<std::uint8_t>(j.x[e]);
    std::memset(j.out->map().data(), 0, j.out->size());
    j.in->sync_to_device();
    j.out->sync_to_device();
    jobs.push_back(std::move(j));
    chained.push_back(chain);
  }
  for (std::uint32_t i = 0; i < jobs.size(); ++i) {
    describe(i, jobs[i], i > 0 ? kSameParams : 0);
    if (chained[i]) {  // SRC: the predecessor's output
      put_le(slot(i), 0, jobs[i - 1].out->device_address(), 8);
      sync_slot(i);
    }
  }
  const auto n = static_cast<std::uint32_t>(jobs.size());
  wr("RING_HEAD", n);
  EXPECT_EQ(run_until(n), n);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 0u);
  for (std::uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(status_of(i), 1u) << "descriptor " << i;
    EXPECT_EQ(jobs[i].result(), jobs[i].golden())
        << "descriptor " << i << " chained " << chained[i];
  }
}

TEST_P(Ring, CoalescingAndTheIrqFlag) {
  setup(3, 0);
  std::vector<MemJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(make_job());
  for (std::uint32_t i = 0; i < 4; ++i) describe(i, jobs[i]);
  put_le(slot(3), 24, 0, 4);  // fails: the ring never drains
  sync_slot(3);
  wr("RING_HEAD", 4);
  EXPECT_EQ(run_until(4), 3u);
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 0u) << "coalesce 0: only when the ring drains";
  wr("CTRL", put("CTRL", "soft_reset", 1));
  wr("RING_HEAD", 0);
  wr("RING_CTRL", put("RING_CTRL", "enable", 1) | put("RING_CTRL", "resume", 1));
  wr("IRQ_STATUS", 7);
  for (std::uint32_t i = 0; i < 4; ++i) describe(i, jobs[i], i == 1 ? kIrqFlag : 0);
  put_le(slot(3), 24, 0, 4);
  sync_slot(3);
  wr("RING_HEAD", 4);
  EXPECT_EQ(run_until(4), 3u);
  EXPECT_EQ(get("IRQ_STATUS", "ring"), 1u) << "descriptor 1's irq flag";
}

TEST_P(Ring, SoftResetWhileTheRingRunsAndStartIgnored) {
  setup(2);
  std::vector<MemJob> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(make_job());
  for (std::uint32_t i = 0; i < 3; ++i) describe(i, jobs[i]);
  wr("RING_HEAD", 3);
  if (backend_of(GetParam()) != "ref") {  // the RTL is still running the ring
    wr("CTRL", put("CTRL", "start", 1));
    EXPECT_EQ(get("STATUS", "start_ignored"), 1u);
  }
  wr("CTRL", put("CTRL", "soft_reset", 1));
  EXPECT_EQ(run_until(0), 0u);
  EXPECT_EQ(get("STATUS", "busy"), 0u);
  EXPECT_EQ(get("RING_TAIL", "index"), 0u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
  EXPECT_EQ(get("RING_STATUS", "active"), 0u);
  wr("RING_HEAD", 0);
  wr("RING_CTRL", rd("RING_CTRL") | put("RING_CTRL", "resume", 1));
  MemJob j = make_job();
  describe(0, j);
  wr("RING_HEAD", 1);
  EXPECT_EQ(run_until(1), 1u);
  EXPECT_EQ(j.result(), j.golden());
  EXPECT_EQ(status_of(0), 1u);
}

TEST_P(Ring, SingleJobRegistersStillWorkBesideTheRing) {
  setup(2);
  MemJob j = make_job();
  write_job_registers(j);
  wr("CTRL", put("CTRL", "start", 1));
  (void)run_until(0);
  EXPECT_EQ(get("STATUS", "done"), 1u);
  EXPECT_EQ(get("IRQ_STATUS", "done"), 1u);
  EXPECT_EQ(get("RING_TAIL", "index"), 0u);
  EXPECT_EQ(j.result(), j.golden());
  // Then the ring with the same table: the START job's table is not kept (a fresh load).
  MemJob k = make_job(&j, true);
  describe(0, k, kSameParams);
  wr("RING_HEAD", 1);
  EXPECT_EQ(run_until(1), 1u);
  EXPECT_EQ(k.result(), k.golden());
}

// Fault injection (device_options.hpp: FaultOptions states the count): START jobs and ring
// descriptors that pass validation count alike, from 1 since open. fail_job=4: a START job with
// C = 0 (not counted), a good START job (1), descriptor 0 (2), descriptor 1 with C = 0 (not
// counted: stops the ring, skipped), descriptor 2 (3), descriptor 3 (4: the bus error on its
// input read or output write). The status words, the stop, the jobs before it and the recovery
// (read: resume, the retry counted 5 and clean; write: skip) are the same on every backend.
TEST_P(Ring, FailJobCountsStartJobsAndDescriptorsAlikeAndStopsTheRingAtIt) {
  for (const std::string kind : {"read", "write"}) {
    SCOPED_TRACE(kind);
    reopen(",fail_job=4,fail=" + kind);
    setup(3);
    MemJob s = make_job();
    write_job_registers(s);
    wr("CHANNELS", 0);
    wr("CTRL", put("CTRL", "start", 1));  // fails validation: not counted
    (void)run_until(0);
    EXPECT_EQ(get("ERR_CODE", "code"), code("bad_channels"));
    wr("CHANNELS", static_cast<std::uint32_t>(s.c));
    wr("CTRL", put("CTRL", "start", 1));  // job 1
    (void)run_until(0);
    EXPECT_EQ(get("STATUS", "error"), 0u);
    EXPECT_EQ(s.result(), s.golden());
    std::vector<MemJob> jobs;
    for (int i = 0; i < 6; ++i) jobs.push_back(make_job());
    for (std::uint32_t i = 0; i < 6; ++i) describe(i, jobs[i]);
    put_le(slot(1), 24, 0, 4);
    sync_slot(1);
    wr("RING_HEAD", 6);
    EXPECT_EQ(run_until(6), 1u);
    EXPECT_EQ(status_of(1), 2u | code("bad_channels") << 8);
    wr("IRQ_STATUS", put("IRQ_STATUS", "error", 1));
    pulse("RING_CTRL", "skip");
    EXPECT_EQ(run_until(6), 3u) << "job 4 is descriptor 3";
    const bool write = kind == "write";
    const std::uint64_t addr = write ? jobs[3].out->device_address() : jobs[3].in->device_address();
    EXPECT_EQ(status_of(3), 2u | code(kind.c_str()) << 8);
    EXPECT_EQ(status_word(3, 56, 8), addr);
    if (!write) {
      EXPECT_EQ(status_word(3, 52, 4), 0u);  // ELEMS (of a write error: see the doc)
    }
    EXPECT_EQ(get("ERR_CODE", "code"), code(kind.c_str()));
    EXPECT_EQ(rd("ERR_ADDR_LO") | static_cast<std::uint64_t>(rd("ERR_ADDR_HI")) << 32, addr);
    EXPECT_EQ(get("IRQ_STATUS", "error"), 1u);
    EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
    EXPECT_EQ(status_of(4), 0xFFFFFFFFu) << "nothing after the failing descriptor ran";
    for (const std::uint32_t i : {0u, 2u}) {
      EXPECT_EQ(status_of(i), 1u) << "descriptor " << i;
      EXPECT_EQ(jobs[i].result(), jobs[i].golden()) << "descriptor " << i;
    }
    if (!write) {
      EXPECT_EQ(jobs[3].result(), std::vector<std::int8_t>(jobs[3].x.size(), 0));
    }
    wr("IRQ_STATUS", put("IRQ_STATUS", "error", 1));
    pulse("RING_CTRL", write ? "skip" : "resume");
    EXPECT_EQ(run_until(6), 6u);
    EXPECT_EQ(get("RING_STATUS", "stopped"), 0u);
    EXPECT_EQ(get("IRQ_STATUS", "error"), 0u);
    for (std::uint32_t i = write ? 4 : 3; i < 6; ++i) {
      EXPECT_EQ(status_of(i), 1u) << "descriptor " << i;
      EXPECT_EQ(jobs[i].result(), jobs[i].golden()) << "descriptor " << i;
    }
  }
}

// hang_job=3 on descriptor 2: descriptors 0 and 1 complete (status, output), then the device
// stays busy with no status and no output for descriptor 2 and ignores START; soft reset clears
// it (TAIL 0, stopped), and the jobs put in again complete.
TEST_P(Ring, HangJobOnADescriptorUntilSoftResetThenTheNextJobsComplete) {
  reopen(",hang_job=3");
  setup(3);
  std::vector<MemJob> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(make_job());
  for (std::uint32_t i = 0; i < 4; ++i) describe(i, jobs[i]);
  wr("RING_HEAD", 4);
  ASSERT_TRUE(wait_tail(2));
  (void)d->wait_irq(std::chrono::milliseconds(100));  // sim / tlm: the device runs on, hung
  EXPECT_EQ(get("RING_TAIL", "index"), 2u);
  EXPECT_EQ(get("STATUS", "busy"), 1u);
  EXPECT_EQ(get("RING_STATUS", "active"), 1u);
  for (const std::uint32_t i : {0u, 1u}) {
    EXPECT_EQ(status_of(i), 1u) << "descriptor " << i;
    EXPECT_EQ(jobs[i].result(), jobs[i].golden()) << "descriptor " << i;
  }
  EXPECT_EQ(status_of(2), 0xFFFFFFFFu);
  EXPECT_EQ(jobs[2].result(), std::vector<std::int8_t>(jobs[2].x.size(), 0));
  wr("CTRL", put("CTRL", "start", 1));
  EXPECT_EQ(get("STATUS", "start_ignored"), 1u);
  wr("CTRL", put("CTRL", "soft_reset", 1));
  EXPECT_EQ(run_until(0), 0u);
  EXPECT_EQ(get("STATUS", "busy"), 0u);
  EXPECT_EQ(get("RING_STATUS", "stopped"), 1u);
  EXPECT_EQ(get("RING_STATUS", "active"), 0u);
  wr("RING_HEAD", 0);
  pulse("RING_CTRL", "resume");
  for (std::uint32_t i = 0; i < 3; ++i) describe(i, jobs[i + 2]);
  wr("RING_HEAD", 3);
  EXPECT_EQ(run_until(3), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(status_of(i), 1u) << "descriptor " << i;
    EXPECT_EQ(jobs[i + 2].result(), jobs[i + 2].golden()) << "job " << i + 2;
  }
}

}  // namespace
}  // namespace normcore::test::ring
