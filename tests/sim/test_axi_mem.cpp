// The AXI4 slave memory model (sim/axi_mem.hpp) driven by a small AXI4 master written here on
// AxiSignals: data round trips with partial strobes, exact latencies, outstanding limits, random
// stalls on both sides, error injection, and one test per protocol violation the master commits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../sim/axi_mem.hpp"

using normcore::sim::AxiCheck;
using normcore::sim::AxiErrorRange;
using normcore::sim::AxiMemConfig;
using normcore::sim::AxiMemory;
using normcore::sim::AxiResp;
using normcore::sim::AxiSignals;
using normcore::sim::SparseMemory;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint8_t kOkay = 0, kSlverr = 2, kDecerr = 3;

unsigned log2_of(std::size_t n) {
  unsigned k = 0;
  while ((std::size_t{1} << k) < n) ++k;
  return k;
}

struct WriteJob {
  std::uint64_t addr = 0;
  unsigned len = 0;  // beats - 1
  int size = -1;     // -1: the bus width
  std::uint8_t burst = 1;
  std::uint32_t id = 0;
  std::vector<Bytes> data;          // per beat, bus bytes (empty: a counting pattern)
  std::vector<std::uint64_t> strb;  // per beat (empty: the lanes of the transfer)
  std::vector<bool> wlast;          // per beat (empty: on the last beat only)
};

struct ReadJob {
  std::uint64_t addr = 0;
  unsigned len = 0;
  int size = -1;
  std::uint8_t burst = 1;
  std::uint32_t id = 0;
};

struct ReadResult {
  std::uint32_t id = 0;  // ARID
  std::vector<std::uint32_t> rid;
  std::vector<Bytes> data;
  std::vector<std::uint8_t> resp;
  std::vector<bool> last;
  std::vector<std::uint64_t> cycle;
};

struct BResult {
  std::uint32_t id;
  std::uint8_t resp;
  std::uint64_t cycle;
};

// Lanes of beat i of a full-width INCR burst starting at addr: all, except below the start
// address on the first beat.
std::uint64_t transfer_lanes(std::uint64_t addr, unsigned beat, std::size_t bytes) {
  const std::uint64_t all = bytes >= 64 ? ~0ULL : (1ULL << bytes) - 1;
  if (beat != 0) return all;
  return all & ~((1ULL << (addr % bytes)) - 1);
}

enum class WOrder { free, aw_first, w_first };

// A well-behaved AXI4 master with random gaps on AW/W/AR and random RREADY/BREADY stalls. It
// holds VALID and the payload until the handshake. Bursts on each channel go in job order.
class Master {
 public:
  Master(std::size_t bytes, std::uint64_t seed) : bytes_(bytes), rng_(seed) {}

  double p_gap = 0.0;  // probability of not presenting the next AW/W/AR in a cycle
  double p_rready_low = 0.0;
  double p_bready_low = 0.0;
  WOrder order = WOrder::free;  // aw_first: W of burst k after AW k; w_first: AW k after W k

  void write(WriteJob j) {
    if (j.size < 0) j.size = static_cast<int>(log2_of(bytes_));
    for (unsigned i = static_cast<unsigned>(j.data.size()); i <= j.len; ++i) {
      Bytes d(bytes_);
      for (std::size_t k = 0; k < bytes_; ++k) {
        d[k] = static_cast<std::uint8_t>(j.addr + i * bytes_ + k + 1);
      }
      j.data.push_back(d);
    }
    for (unsigned i = static_cast<unsigned>(j.strb.size()); i <= j.len; ++i) {
      j.strb.push_back(transfer_lanes(j.addr, i, bytes_));
    }
    for (unsigned i = static_cast<unsigned>(j.wlast.size()); i <= j.len; ++i) {
      j.wlast.push_back(i == j.len);
    }
    writes.push_back(j);
  }
  void read(ReadJob j) {
    if (j.size < 0) j.size = static_cast<int>(log2_of(bytes_));
    reads.push_back(j);
  }

  // Master outputs for this cycle (after the slave's drive(); independent of READY).
  void present(AxiSignals& s) {
    if (!aw_hold_ && aw_next_ < writes.size() &&
        (order != WOrder::w_first || w_burst_ > aw_next_) && !chance(p_gap)) {
      const WriteJob& j = writes[aw_next_];
      aw_hold_ = true;
      s.awid = j.id;
      s.awaddr = j.addr;
      s.awlen = static_cast<std::uint8_t>(j.len);
      s.awsize = static_cast<std::uint8_t>(j.size);
      s.awburst = j.burst;
    }
    s.awvalid = aw_hold_;
    if (!w_hold_ && w_burst_ < writes.size() &&
        (order != WOrder::aw_first || aw_next_ > w_burst_) && !chance(p_gap)) {
      const WriteJob& j = writes[w_burst_];
      w_hold_ = true;
      s.wdata = j.data[w_beat_];
      s.wstrb = j.strb[w_beat_];
      s.wlast = j.wlast[w_beat_];
    }
    s.wvalid = w_hold_;
    if (!ar_hold_ && ar_next_ < reads.size() && !chance(p_gap)) {
      const ReadJob& j = reads[ar_next_];
      ar_hold_ = true;
      s.arid = j.id;
      s.araddr = j.addr;
      s.arlen = static_cast<std::uint8_t>(j.len);
      s.arsize = static_cast<std::uint8_t>(j.size);
      s.arburst = j.burst;
    }
    s.arvalid = ar_hold_;
    s.rready = !chance(p_rready_low);
    s.bready = !chance(p_bready_low);
  }

  // Handshakes of this cycle (all signals settled).
  void observe(const AxiSignals& s, std::uint64_t cycle) {
    if (s.awvalid && s.awready) {
      aw_hold_ = false;
      aw_cycles.push_back(cycle);
      ++aw_next_;
    }
    if (s.wvalid && s.wready) {
      w_hold_ = false;
      if (w_beat_++ == writes[w_burst_].len) {
        w_beat_ = 0;
        ++w_burst_;
        w_last_cycles.push_back(cycle);
      }
    }
    if (s.arvalid && s.arready) {
      ar_hold_ = false;
      ar_cycles.push_back(cycle);
      results.push_back(ReadResult{reads[ar_next_].id, {}, {}, {}, {}, {}});
      ++ar_next_;
    }
    if (s.rvalid && s.rready) {
      if (r_cur_ >= results.size()) {
        ++unexpected_r;
      } else {
        ReadResult& r = results[r_cur_];
        r.rid.push_back(s.rid);
        r.data.push_back(s.rdata);
        r.resp.push_back(s.rresp);
        r.last.push_back(s.rlast);
        r.cycle.push_back(cycle);
        if (r.data.size() == reads[r_cur_].len + 1) ++r_cur_;
      }
    }
    if (s.bvalid && s.bready) {
      if (bresps.size() >= aw_next_) ++unexpected_b;
      bresps.push_back(BResult{s.bid, s.bresp, cycle});
    }
    // Bursts in flight, as the master sees them.
    max_reads_in_flight = std::max(max_reads_in_flight, results.size() - r_cur_);
  }

  bool done() const {
    return aw_next_ == writes.size() && w_burst_ == writes.size() &&
           bresps.size() >= writes.size() && ar_next_ == reads.size() && r_cur_ == reads.size();
  }

  std::vector<WriteJob> writes;
  std::vector<ReadJob> reads;
  std::vector<ReadResult> results;
  std::vector<BResult> bresps;
  std::vector<std::uint64_t> aw_cycles, w_last_cycles, ar_cycles;
  std::size_t unexpected_r = 0, unexpected_b = 0, max_reads_in_flight = 0;

 private:
  bool chance(double p) {
    return p > 0.0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }

  std::size_t bytes_;
  std::mt19937_64 rng_;
  bool aw_hold_ = false, w_hold_ = false, ar_hold_ = false;
  std::size_t aw_next_ = 0, w_burst_ = 0, ar_next_ = 0, r_cur_ = 0;
  unsigned w_beat_ = 0;
};

struct Bench {
  explicit Bench(const AxiMemConfig& cfg, std::uint64_t seed = 7)
      : mem(cfg), m(mem.data_bytes(), seed), s(mem.make_signals()) {}

  void step() {
    const std::uint64_t c = mem.cycle();
    mem.drive(s);
    m.present(s);
    mem.sample(s);
    m.observe(s, c);
  }
  bool run(std::uint64_t limit = 1000000) {
    for (std::uint64_t i = 0; i < limit && !m.done(); ++i) step();
    return m.done();
  }
  // One cycle with the master's outputs set by hand.
  template <class F>
  void step_with(F&& set_master) {
    mem.drive(s);
    set_master(s);
    mem.sample(s);
  }

  AxiMemory mem;
  Master m;
  AxiSignals s;
};

std::string all_violations(const AxiMemory& mem) {
  std::string out;
  for (const auto& v : mem.violations()) out += v + "\n";
  return out;
}

// Reference memory: what the master wrote, on top of the fill pattern.
class RefMem {
 public:
  RefMem(std::size_t bytes, SparseMemory::FillFn fill) : bytes_(bytes), fill_(std::move(fill)) {}
  void apply(const WriteJob& j) {
    const std::uint64_t base = j.addr & ~static_cast<std::uint64_t>(bytes_ - 1);
    for (unsigned i = 0; i <= j.len; ++i) {
      for (std::size_t k = 0; k < bytes_; ++k) {
        if ((j.strb[i] >> k) & 1U) bytes_map_[base + i * bytes_ + k] = j.data[i][k];
      }
    }
  }
  std::uint8_t at(std::uint64_t a) const {
    const auto it = bytes_map_.find(a);
    return it == bytes_map_.end() ? fill_(a) : it->second;
  }
  // Expected RDATA of beat i of a full-width read burst at addr (the whole bus word).
  Bytes beat(std::uint64_t addr, unsigned i) const {
    const std::uint64_t base = (addr & ~static_cast<std::uint64_t>(bytes_ - 1)) + i * bytes_;
    Bytes d(bytes_);
    for (std::size_t k = 0; k < bytes_; ++k) d[k] = at(base + k);
    return d;
  }

 private:
  std::size_t bytes_;
  SparseMemory::FillFn fill_;
  std::map<std::uint64_t, std::uint8_t> bytes_map_;
};

std::uint8_t fill_pattern(std::uint64_t a) {
  return static_cast<std::uint8_t>((a * 37) ^ 0x5A);
}

// A random full-width INCR write burst in [lo, hi) that stays inside its 4 KiB page, with a
// random (often partial) strobe over the lanes of the transfer.
WriteJob random_write(std::mt19937_64& rng, std::size_t bytes, std::uint64_t lo, std::uint64_t hi,
                      unsigned max_len = 15) {
  WriteJob j;
  j.addr = lo + rng() % (hi - lo);
  if (rng() % 3 != 0) j.addr &= ~static_cast<std::uint64_t>(bytes - 1);
  const std::uint64_t base = j.addr & ~static_cast<std::uint64_t>(bytes - 1);
  const std::uint64_t max_beats = (4096 - base % 4096) / bytes;
  j.len = static_cast<unsigned>(rng() % std::min<std::uint64_t>(max_len + 1, max_beats));
  j.id = static_cast<std::uint32_t>(rng() % 256);
  for (unsigned i = 0; i <= j.len; ++i) {
    Bytes d(bytes);
    for (auto& b : d) b = static_cast<std::uint8_t>(rng());
    j.data.push_back(d);
    const std::uint64_t lanes = transfer_lanes(j.addr, i, bytes);
    const auto kind = rng() % 4;
    j.strb.push_back(kind == 0 ? lanes : kind == 1 ? 0 : (rng() & lanes));
  }
  return j;
}

ReadJob read_of(const WriteJob& w) {
  return ReadJob{w.addr, w.len, -1, 1, w.id};
}

// Checks every read result against the reference, beat by beat.
void expect_reads(const Master& m, const RefMem& ref, std::uint8_t resp = kOkay) {
  ASSERT_EQ(m.results.size(), m.reads.size());
  EXPECT_EQ(m.unexpected_r, 0U);
  for (std::size_t b = 0; b < m.reads.size(); ++b) {
    const ReadJob& j = m.reads[b];
    const ReadResult& r = m.results[b];
    ASSERT_EQ(r.data.size(), j.len + 1) << "burst " << b;
    for (unsigned i = 0; i <= j.len; ++i) {
      EXPECT_EQ(r.data[i], ref.beat(j.addr, i)) << "burst " << b << " beat " << i;
      EXPECT_EQ(r.last[i], i == j.len) << "burst " << b << " beat " << i;
      EXPECT_EQ(r.rid[i], j.id) << "burst " << b << " beat " << i;
      EXPECT_EQ(r.resp[i], resp) << "burst " << b << " beat " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sparse memory

TEST(SparseMemory, FillPatternPagesAndRoundTrip) {
  SparseMemory mem(0xA5);
  EXPECT_EQ(mem.read_byte(0x1234), 0xA5);
  EXPECT_EQ(mem.page_count(), 0U);  // reading allocates nothing
  Bytes data(10000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  mem.write_bytes(0x0FFF0, data);  // spans four pages
  EXPECT_EQ(mem.page_count(), 4U);
  EXPECT_EQ(mem.read_bytes(0x0FFF0, data.size()), data);
  EXPECT_EQ(mem.read_byte(0x0FFEF), 0xA5);                // same page, not written
  EXPECT_EQ(mem.read_byte(0x0FFF0 + data.size()), 0xA5);  // just after
  EXPECT_TRUE(mem.touched(0x10000));
  EXPECT_FALSE(mem.touched(0x20000));

  // Top of the address space: no overflow trouble.
  const Bytes top{1, 2, 3, 4};
  mem.write_bytes(~0ULL - 3, top);
  EXPECT_EQ(mem.read_bytes(~0ULL - 3, 4), top);

  SparseMemory f(0, fill_pattern);
  EXPECT_EQ(f.read_byte(77), fill_pattern(77));
  f.write_byte(100, 9);
  EXPECT_EQ(f.read_byte(101), fill_pattern(101));  // rest of a touched page keeps the pattern
  EXPECT_EQ(f.read_byte(100), 9);
}

TEST(AxiMem, RejectsBadConfigurationAndSizes) {
  AxiMemConfig cfg;
  cfg.data_bits = 24;
  EXPECT_THROW(AxiMemory{cfg}, std::invalid_argument);
  cfg.data_bits = 1024;
  EXPECT_THROW(AxiMemory{cfg}, std::invalid_argument);
  cfg.data_bits = 64;
  cfg.addr_bits = 0;
  EXPECT_THROW(AxiMemory{cfg}, std::invalid_argument);
  cfg.addr_bits = 32;
  AxiMemory mem(cfg);
  AxiSignals wrong(128);
  EXPECT_THROW(mem.drive(wrong), std::invalid_argument);
  EXPECT_THROW(mem.sample(wrong), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Data

// Write then read back random bursts (aligned and unaligned starts, partial strobes) for several
// bus widths and each AW/W ordering, with no stalls and with stalls.
TEST(AxiMem, RoundTripPartialStrobes) {
  for (int bus : {32, 64, 256}) {
    for (int variant = 0; variant < 6; ++variant) {
      SCOPED_TRACE("bus " + std::to_string(bus) + " variant " + std::to_string(variant));
      const bool stalls = variant >= 3;
      AxiMemConfig cfg;
      cfg.data_bits = bus;
      cfg.addr_bits = 32;
      cfg.read_latency = 3;
      cfg.write_latency = 2;
      cfg.fill_fn = fill_pattern;
      cfg.seed = static_cast<std::uint64_t>(bus * 10 + variant);
      if (stalls) {
        cfg.p_arready_low = cfg.p_awready_low = cfg.p_wready_low = 0.3;
        cfg.p_r_idle = 0.3;
      }
      Bench t(cfg, cfg.seed + 100);
      t.m.order = static_cast<WOrder>(variant % 3);
      if (stalls) t.m.p_gap = t.m.p_rready_low = t.m.p_bready_low = 0.3;
      const std::size_t bytes = t.mem.data_bytes();
      std::mt19937_64 rng(cfg.seed);
      RefMem ref(bytes, fill_pattern);
      for (int k = 0; k < 40; ++k) {
        WriteJob j = random_write(rng, bytes, 0x10000, 0x14000);
        t.m.write(j);
        ref.apply(t.m.writes.back());
      }
      ASSERT_TRUE(t.run());
      ASSERT_EQ(t.m.bresps.size(), t.m.writes.size());
      for (std::size_t b = 0; b < t.m.bresps.size(); ++b) {
        EXPECT_EQ(t.m.bresps[b].resp, kOkay);
        EXPECT_EQ(t.m.bresps[b].id, t.m.writes[b].id);
      }
      for (const auto& w : t.m.writes) t.m.read(read_of(w));
      t.m.read(ReadJob{0x20000, 7, -1, 1, 3});  // untouched: the fill pattern
      ASSERT_TRUE(t.run());
      expect_reads(t.m, ref);
      // Backdoor agrees too.
      for (std::uint64_t a = 0x10000; a < 0x14000 + 64 * 16; a += 13) {
        ASSERT_EQ(t.mem.read_bytes(a, 1)[0], ref.at(a)) << AxiMemory::hex(a);
      }
      t.mem.finish();
      EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
      EXPECT_TRUE(t.mem.idle());
    }
  }
}

// W beats entirely before their AW (AWVALID low meanwhile) are buffered and applied later.
TEST(AxiMem, WriteDataBeforeAddress) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  for (unsigned i = 0; i < 4; ++i) {
    t.step_with([&](AxiSignals& s) {
      s.awvalid = false;
      s.wvalid = true;
      s.wdata = Bytes(8, static_cast<std::uint8_t>(0x10 + i));
      s.wstrb = 0xFF;
      s.wlast = i == 3;
    });
  }
  EXPECT_FALSE(t.mem.idle());
  EXPECT_EQ(t.mem.read_bytes(0x3000, 1)[0], 0);  // nothing written yet
  t.step_with([&](AxiSignals& s) {
    s.wvalid = false;
    s.awvalid = true;
    s.awaddr = 0x3000;
    s.awlen = 3;
    s.awsize = 3;
    s.awburst = 1;
    s.awid = 5;
  });
  for (unsigned i = 0; i < 4; ++i)
    EXPECT_EQ(t.mem.read_bytes(0x3000 + 8 * i, 8), Bytes(8, static_cast<std::uint8_t>(0x10 + i)));
  bool got_b = false;
  for (int c = 0; c < 5 && !got_b; ++c) {
    t.step_with([&](AxiSignals& s) {
      s.awvalid = false;
      s.bready = true;
      if (s.bvalid) {
        got_b = true;
        EXPECT_EQ(s.bid, 5U);
        EXPECT_EQ(s.bresp, kOkay);
      }
    });
  }
  EXPECT_TRUE(got_b);
  EXPECT_TRUE(t.mem.idle());
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

// With heavy random stalls on both sides and reads and writes running at the same time (disjoint
// areas), every beat arrives exactly once, in order, with the right data, and the counters agree.
TEST(AxiMem, RandomStallsNeverLoseOrDuplicateBeats) {
  std::uint64_t seed = 1;
  for (int bus : {32, 64, 512}) {
    for (int order = 0; order < 3; ++order) {
      SCOPED_TRACE("bus " + std::to_string(bus) + " order " + std::to_string(order));
      ++seed;
      AxiMemConfig cfg;
      cfg.data_bits = bus;
      cfg.seed = seed;
      cfg.read_latency = static_cast<unsigned>(1 + seed % 7);
      cfg.write_latency = static_cast<unsigned>(1 + seed % 5);
      cfg.p_arready_low = 0.5;
      cfg.p_awready_low = 0.5;
      cfg.p_wready_low = 0.5;
      cfg.p_r_idle = 0.4;
      cfg.max_outstanding_reads = 3;
      cfg.max_outstanding_writes = 2;
      cfg.fill_byte = 0xEE;
      Bench t(cfg, seed * 31);
      t.m.order = static_cast<WOrder>(order);
      t.m.p_gap = 0.3;
      t.m.p_rready_low = 0.5;
      t.m.p_bready_low = 0.4;
      const std::size_t bytes = t.mem.data_bytes();
      std::mt19937_64 rng(seed);
      // Preloaded read area.
      Bytes pre(0x4000);
      for (auto& b : pre) b = static_cast<std::uint8_t>(rng());
      t.mem.write_bytes(0x80000, pre);
      RefMem ref(bytes, [](std::uint64_t) -> std::uint8_t { return 0xEE; });
      WriteJob preload;
      preload.addr = 0x80000;
      preload.len = static_cast<unsigned>(pre.size() / bytes - 1);
      for (std::size_t i = 0; i < pre.size() / bytes; ++i) {
        preload.data.emplace_back(pre.begin() + static_cast<std::ptrdiff_t>(i * bytes),
                                  pre.begin() + static_cast<std::ptrdiff_t>((i + 1) * bytes));
        preload.strb.push_back(bytes >= 64 ? ~0ULL : (1ULL << bytes) - 1);
      }
      ref.apply(preload);
      std::uint64_t w_beats = 0, r_beats = 0, r_bytes = 0;
      for (int k = 0; k < 60; ++k) {
        t.m.write(random_write(rng, bytes, 0x40000, 0x44000));
        w_beats += t.m.writes.back().len + 1;
        ReadJob r = read_of(random_write(rng, bytes, 0x80000, 0x84000));
        t.m.read(r);
        r_beats += r.len + 1;
        r_bytes += (r.len + 1) * bytes - r.addr % bytes;
      }
      ASSERT_TRUE(t.run());
      for (const auto& w : t.m.writes) ref.apply(w);
      expect_reads(t.m, ref);
      EXPECT_EQ(t.m.unexpected_b, 0U);
      ASSERT_EQ(t.m.bresps.size(), t.m.writes.size());
      for (std::size_t b = 0; b < t.m.writes.size(); ++b) {
        EXPECT_EQ(t.m.bresps[b].id, t.m.writes[b].id);
        const WriteJob& w = t.m.writes[b];
        for (unsigned i = 0; i <= w.len; ++i) {
          const std::uint64_t base = (w.addr & ~static_cast<std::uint64_t>(bytes - 1)) + i * bytes;
          EXPECT_EQ(t.mem.read_bytes(base, bytes), ref.beat(base, 0)) << "burst " << b;
        }
      }
      // A few cycles more: nothing further comes.
      for (int c = 0; c < 50; ++c) t.step();
      EXPECT_EQ(t.m.unexpected_r, 0U);
      EXPECT_EQ(t.m.unexpected_b, 0U);
      const auto& st = t.mem.stats();
      EXPECT_EQ(st.read_bursts, 60U);
      EXPECT_EQ(st.write_bursts, 60U);
      EXPECT_EQ(st.read_beats, r_beats);
      EXPECT_EQ(st.write_beats, w_beats);
      EXPECT_EQ(st.read_bytes, r_bytes);
      EXPECT_LE(st.max_outstanding_reads, 3U);
      EXPECT_LE(st.max_outstanding_writes, 2U);
      EXPECT_GT(st.r_stall_cycles, 0U);
      EXPECT_GT(st.b_stall_cycles, 0U);
      EXPECT_GT(st.ar_wait_cycles + st.aw_wait_cycles + st.w_wait_cycles, 0U);
      EXPECT_EQ(st.r_valid_cycles, st.read_beats + st.r_stall_cycles);
      t.mem.finish();
      EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Timing

// The first R beat comes exactly read_latency cycles after the AR handshake; the beats of a
// burst and the next burst follow back to back.
TEST(AxiMem, ReadLatencyHonoured) {
  for (unsigned lat : {1U, 2U, 3U, 17U, 64U, 200U}) {
    SCOPED_TRACE("latency " + std::to_string(lat));
    AxiMemConfig cfg;
    cfg.data_bits = 128;
    cfg.read_latency = lat;
    Bench t(cfg);
    for (int c = 0; c < 5; ++c) t.step();  // start at a non-zero cycle
    t.m.read(ReadJob{0x1000, 3, -1, 1, 1});
    t.m.read(ReadJob{0x2000, 1, -1, 1, 2});
    ASSERT_TRUE(t.run());
    ASSERT_EQ(t.m.ar_cycles.size(), 2U);
    EXPECT_EQ(t.m.ar_cycles[0], 5U);
    EXPECT_EQ(t.m.ar_cycles[1], 6U);
    const auto& r0 = t.m.results[0];
    const auto& r1 = t.m.results[1];
    EXPECT_EQ(r0.cycle[0], t.m.ar_cycles[0] + lat);
    for (std::size_t i = 1; i < r0.cycle.size(); ++i) EXPECT_EQ(r0.cycle[i], r0.cycle[i - 1] + 1);
    EXPECT_EQ(r1.cycle[0], std::max(t.m.ar_cycles[1] + lat, r0.cycle.back() + 1));
    EXPECT_EQ(r1.cycle[1], r1.cycle[0] + 1);
    EXPECT_EQ(t.mem.stats().r_stall_cycles, 0U);
  }
  // Latency 0 is taken as 1.
  AxiMemConfig cfg;
  cfg.read_latency = 0;
  Bench t(cfg);
  t.m.read(ReadJob{0x100, 0, -1, 1, 0});
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.m.results[0].cycle[0], t.m.ar_cycles[0] + 1);
}

// BVALID comes exactly write_latency cycles after the later of the AW and the last W handshake.
TEST(AxiMem, WriteResponseLatencyHonoured) {
  for (unsigned lat : {1U, 4U, 50U}) {
    for (int order = 0; order < 3; ++order) {
      SCOPED_TRACE("latency " + std::to_string(lat) + " order " + std::to_string(order));
      AxiMemConfig cfg;
      cfg.data_bits = 32;
      cfg.write_latency = lat;
      Bench t(cfg);
      t.m.order = static_cast<WOrder>(order);
      t.m.write(WriteJob{0x400, 3, -1, 1, 9, {}, {}, {}});
      ASSERT_TRUE(t.run());
      ASSERT_EQ(t.m.bresps.size(), 1U);
      EXPECT_EQ(t.m.bresps[0].cycle, std::max(t.m.aw_cycles[0], t.m.w_last_cycles[0]) + lat);
      EXPECT_EQ(t.m.bresps[0].id, 9U);
    }
  }
}

// No more than max_outstanding_reads AR bursts are accepted before their data is returned; the
// next AR is accepted the cycle after the oldest burst's last beat.
TEST(AxiMem, OutstandingReadLimit) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.read_latency = 30;
  cfg.max_outstanding_reads = 2;
  Bench t(cfg);
  for (unsigned k = 0; k < 6; ++k) t.m.read(ReadJob{0x1000 + 0x100 * k, 1, -1, 1, k});
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.m.max_reads_in_flight, 2U);
  EXPECT_EQ(t.mem.stats().max_outstanding_reads, 2U);
  EXPECT_GT(t.mem.stats().ar_wait_cycles, 0U);
  EXPECT_EQ(t.m.ar_cycles[1], t.m.ar_cycles[0] + 1);
  for (std::size_t k = 2; k < 6; ++k) {
    EXPECT_EQ(t.m.ar_cycles[k], t.m.results[k - 2].cycle.back() + 1) << "burst " << k;
  }
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

// Writes: AW is held off while max_outstanding_writes bursts wait for their B handshake.
TEST(AxiMem, OutstandingWriteLimit) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.write_latency = 10;
  cfg.max_outstanding_writes = 1;
  Bench t(cfg);
  t.m.order = WOrder::aw_first;
  for (unsigned k = 0; k < 4; ++k) t.m.write(WriteJob{0x1000 + 0x100 * k, 1, -1, 1, k, {}, {}, {}});
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.stats().max_outstanding_writes, 1U);
  for (std::size_t k = 1; k < 4; ++k) {
    EXPECT_EQ(t.m.aw_cycles[k], t.m.bresps[k - 1].cycle + 1) << "burst " << k;
  }
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

// The slave's outputs are decided once per cycle: a second drive() repeats them.
TEST(AxiMem, DriveTwiceInACycleRepeats) {
  AxiMemConfig cfg;
  cfg.p_arready_low = cfg.p_awready_low = cfg.p_wready_low = 0.5;
  AxiMemory mem(cfg);
  AxiSignals a = mem.make_signals(), b = mem.make_signals();
  for (int c = 0; c < 100; ++c) {
    mem.drive(a);
    mem.drive(b);
    EXPECT_EQ(a.arready, b.arready);
    EXPECT_EQ(a.awready, b.awready);
    EXPECT_EQ(a.wready, b.wready);
    mem.sample(a);
  }
}

// RVALID cycles without RREADY are counted (throughput analysis).
TEST(AxiMem, CountsReadStallCycles) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  t.step_with([](AxiSignals& s) {
    s.arvalid = true;
    s.araddr = 0x100;
    s.arlen = 0;
    s.arsize = 3;
    s.arburst = 1;
  });
  for (int c = 0; c < 7; ++c)
    t.step_with([](AxiSignals& s) {
      s.arvalid = false;
      s.rready = false;
    });
  t.step_with([](AxiSignals& s) { s.rready = true; });
  EXPECT_EQ(t.mem.stats().r_stall_cycles, 7U);
  EXPECT_EQ(t.mem.stats().r_valid_cycles, 8U);
  EXPECT_EQ(t.mem.stats().read_beats, 1U);
  EXPECT_TRUE(t.mem.idle());
}

// ---------------------------------------------------------------------------------------------
// Error injection

TEST(AxiMem, ReadErrorInjectionOnEveryBeat) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.read_errors.push_back(AxiErrorRange{0x3040, 0x10, AxiResp::decerr});
  cfg.read_errors.push_back(AxiErrorRange{0x5000, 0x1000, AxiResp::slverr});
  Bench t(cfg);
  t.m.read(ReadJob{0x3000, 15, -1, 1, 1});  // touches 0x3040..0x304F: all 16 beats DECERR
  t.m.read(ReadJob{0x3100, 3, -1, 1, 2});   // clear: OKAY
  t.m.read(ReadJob{0x3000, 7, -1, 1, 3});   // ends at 0x303F: OKAY
  t.m.read(ReadJob{0x5FF8, 0, -1, 1, 4});   // SLVERR
  ASSERT_TRUE(t.run());
  const auto resps = [&](std::size_t b) { return t.m.results[b].resp; };
  EXPECT_EQ(resps(0), std::vector<std::uint8_t>(16, kDecerr));
  EXPECT_EQ(resps(1), std::vector<std::uint8_t>(4, kOkay));
  EXPECT_EQ(resps(2), std::vector<std::uint8_t>(8, kOkay));
  EXPECT_EQ(resps(3), std::vector<std::uint8_t>(1, kSlverr));
  EXPECT_EQ(t.m.results[0].last.back(), true);
  EXPECT_EQ(t.mem.stats().read_error_bursts, 2U);
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

TEST(AxiMem, WriteErrorInjectionAnswersOnBAndDoesNotWrite) {
  AxiMemConfig cfg;
  cfg.data_bits = 32;
  cfg.fill_byte = 0x77;
  cfg.write_errors.push_back(AxiErrorRange{0x4008, 4, AxiResp::slverr});
  Bench t(cfg);
  t.mem.add_write_error(AxiErrorRange{0x6000, 0x100, AxiResp::decerr});
  t.m.write(WriteJob{0x4000, 3, -1, 1, 1, {}, {}, {}});  // touches 0x4008: SLVERR
  t.m.write(WriteJob{0x5100, 3, -1, 1, 2, {}, {}, {}});  // OKAY
  t.m.write(WriteJob{0x60FC, 0, -1, 1, 3, {}, {}, {}});  // DECERR
  ASSERT_TRUE(t.run());
  ASSERT_EQ(t.m.bresps.size(), 3U);
  EXPECT_EQ(t.m.bresps[0].resp, kSlverr);
  EXPECT_EQ(t.m.bresps[1].resp, kOkay);
  EXPECT_EQ(t.m.bresps[2].resp, kDecerr);
  EXPECT_EQ(t.mem.read_bytes(0x4000, 16), Bytes(16, 0x77));
  EXPECT_EQ(t.mem.read_bytes(0x60FC, 4), Bytes(4, 0x77));
  EXPECT_FALSE(t.mem.memory().touched(0x4000));
  Bytes expect(16);
  for (std::size_t i = 0; i < 16; ++i) expect[i] = static_cast<std::uint8_t>(0x5100 + i + 1);
  EXPECT_EQ(t.mem.read_bytes(0x5100, 16), expect);
  EXPECT_EQ(t.mem.stats().write_error_bursts, 2U);
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

// ---------------------------------------------------------------------------------------------
// Protocol violations

TEST(AxiMem, Detects4KiBCrossing) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  t.m.read(ReadJob{0x1FF0, 1, -1, 1, 0});                // ends at 0x1FFF: fine
  t.m.read(ReadJob{0x1FF8, 1, -1, 1, 0});                // 0x1FF8..0x2007: crosses
  t.m.write(WriteJob{0x2FF0, 1, -1, 1, 0, {}, {}, {}});  // fine
  t.m.write(WriteJob{0x2FFC, 1, -1, 1, 0, {}, {}, {}});  // unaligned, 0x2FF8..0x3007: crosses
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::boundary_4k), 2U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 2U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("AR burst at 0x1ff8"), std::string::npos) << v;
  EXPECT_NE(v.find("AW burst at 0x2ffc"), std::string::npos) << v;
  EXPECT_NE(v.find("4 KiB"), std::string::npos) << v;
}

TEST(AxiMem, DetectsBurstTypeAndSize) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  t.m.read(ReadJob{0x100, 1, -1, 0, 0});                // FIXED
  t.m.write(WriteJob{0x200, 3, -1, 2, 0, {}, {}, {}});  // WRAP
  t.m.read(ReadJob{0x300, 1, 2, 1, 0});                 // 4-byte beats on a 64-bit bus
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::burst_type), 2U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(AxiCheck::burst_size), 1U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 3U) << all_violations(t.mem);
  // The narrow read still returns the right beats (lanes 0..3 then 4..7 of the same word).
  EXPECT_EQ(t.m.results[1].data.size(), 2U);
}

TEST(AxiMem, DetectsWlastEarlyAndLate) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  t.m.write(WriteJob{0x1000, 3, -1, 1, 0, {}, {}, {false, true, false, true}});    // early
  t.m.write(WriteJob{0x2000, 3, -1, 1, 0, {}, {}, {false, false, false, false}});  // missing
  t.m.write(WriteJob{0x3000, 3, -1, 1, 0, {}, {}, {}});                            // fine
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::wlast), 2U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 2U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("WLAST early on beat 2 of 4"), std::string::npos) << v;
  EXPECT_NE(v.find("WLAST missing"), std::string::npos) << v;
  // Framing follows AWLEN: all three bursts were answered.
  EXPECT_EQ(t.m.bresps.size(), 3U);
}

TEST(AxiMem, DetectsDroppedValid) {
  AxiMemConfig cfg;
  cfg.data_bits = 32;
  cfg.p_arready_low = cfg.p_awready_low = cfg.p_wready_low = 1.0;  // never ready
  Bench t(cfg);
  t.step_with([](AxiSignals& s) {
    s.arvalid = s.awvalid = s.wvalid = true;
    s.awburst = s.arburst = 1;
    s.awsize = s.arsize = 2;
  });
  t.step_with([](AxiSignals&) {});  // still valid: fine
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
  t.step_with([](AxiSignals& s) { s.arvalid = false; });
  t.step_with([](AxiSignals& s) { s.awvalid = false; });
  t.step_with([](AxiSignals& s) { s.wvalid = false; });
  EXPECT_EQ(t.mem.violation_count(AxiCheck::valid_dropped), 3U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("ARVALID dropped"), std::string::npos) << v;
  EXPECT_NE(v.find("AWVALID dropped"), std::string::npos) << v;
  EXPECT_NE(v.find("WVALID dropped"), std::string::npos) << v;

  // Dropping VALID after a handshake is fine.
  AxiMemConfig ok;
  ok.data_bits = 32;
  Bench u(ok);
  u.step_with([](AxiSignals& s) {
    s.arvalid = true;
    s.arsize = 2;
    s.arburst = 1;
  });
  u.step_with([](AxiSignals& s) { s.arvalid = false; });
  EXPECT_EQ(u.mem.violation_count(), 0U) << all_violations(u.mem);
}

TEST(AxiMem, DetectsPayloadChangeWhileStalled) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.p_arready_low = cfg.p_awready_low = cfg.p_wready_low = 1.0;
  Bench t(cfg);
  t.step_with([](AxiSignals& s) {
    s.arvalid = s.awvalid = s.wvalid = true;
    s.araddr = 0x100;
    s.awaddr = 0x200;
    s.awburst = s.arburst = 1;
    s.awsize = s.arsize = 3;
    s.wdata = Bytes(8, 1);
    s.wstrb = 0xFF;
  });
  t.step_with([](AxiSignals& s) { s.araddr = 0x140; });
  t.step_with([](AxiSignals& s) { s.awlen = 3; });
  t.step_with([](AxiSignals& s) { s.wdata[5] = 9; });
  t.step_with([](AxiSignals& s) { s.wstrb = 0x0F; });
  t.step_with([](AxiSignals& s) { s.arprot = 2; });
  t.step_with([](AxiSignals&) {});  // unchanged: fine
  EXPECT_EQ(t.mem.violation_count(AxiCheck::payload_changed), 5U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 5U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("AR payload changed"), std::string::npos) << v;
  EXPECT_NE(v.find("AW payload changed"), std::string::npos) << v;
  EXPECT_NE(v.find("W payload changed"), std::string::npos) << v;
}

TEST(AxiMem, DetectsWriteOutsideRegionAndDoesNotStoreIt) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.fill_byte = 0xCC;
  Bench t(cfg);
  t.mem.allow_write(0x1000, 0x100);
  t.m.write(WriteJob{0x1000, 7, -1, 1, 0, {}, {}, {}});  // inside
  t.m.write(WriteJob{0x10F8, 1, -1, 1, 0, {}, {}, {}});  // second beat 0x1100..0x1107 outside
  // Extends past the region but strobes nothing there: fine.
  t.m.write(WriteJob{0x10F0, 2, -1, 1, 0, {}, {0xFF, 0xFF, 0x00}, {}});
  t.m.write(WriteJob{0x0FFC, 0, -1, 1, 0, {}, {}, {}});  // unaligned start below: outside
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::write_region), 2U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 2U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("byte 0x1100"), std::string::npos) << v;
  EXPECT_NE(v.find("byte 0xffc"), std::string::npos) << v;
  EXPECT_EQ(t.mem.read_bytes(0x1100, 8), Bytes(8, 0xCC));
  EXPECT_EQ(t.mem.read_bytes(0x0FFC, 4), Bytes(4, 0xCC));
  EXPECT_EQ(t.mem.read_bytes(0x10F8, 1)[0], static_cast<std::uint8_t>(0x10F0 + 8 + 1));
}

TEST(AxiMem, DetectsReadOutsideRegions) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  Bench t(cfg);
  t.mem.allow_read(0x1000, 0x100);
  t.mem.allow_read(0x1100, 0x100);  // adjacent: the union covers 0x1000..0x11FF
  t.mem.allow_read(0x8000, 0x10);
  t.m.read(ReadJob{0x10F0, 3, -1, 1, 0});  // across the two regions: fine
  t.m.read(ReadJob{0x11F8, 1, -1, 1, 0});  // 0x1200.. outside
  t.m.read(ReadJob{0x8000, 1, -1, 1, 0});  // exactly the region: fine
  t.m.read(ReadJob{0x7FF8, 0, -1, 1, 0});  // below
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::read_region), 2U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.violation_count(), 2U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("first byte 0x1200"), std::string::npos) << v;
  EXPECT_NE(v.find("first byte 0x7ff8"), std::string::npos) << v;
}

TEST(AxiMem, DetectsStrobeOutsideTheTransfer) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.fill_byte = 0x11;
  Bench t(cfg);
  // Unaligned start 0x1003: lanes 0..2 of the first beat are not part of the transfer.
  t.m.write(WriteJob{0x1003, 1, -1, 1, 0, {}, {0xFF, 0xFF}, {}});
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::wstrb), 1U) << all_violations(t.mem);
  EXPECT_EQ(t.mem.read_bytes(0x1000, 3), Bytes(3, 0x11));
  EXPECT_EQ(t.mem.read_bytes(0x1003, 1)[0], static_cast<std::uint8_t>(0x1003 + 3 + 1));
}

TEST(AxiMem, DetectsReadyNeverGiven) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.ready_timeout = 50;
  Bench t(cfg);
  t.m.p_rready_low = 1.0;
  t.m.p_bready_low = 1.0;
  t.m.read(ReadJob{0x100, 0, -1, 1, 0});
  t.m.write(WriteJob{0x200, 0, -1, 1, 0, {}, {}, {}});
  for (int c = 0; c < 200; ++c) t.step();
  EXPECT_EQ(t.mem.violation_count(AxiCheck::ready_timeout), 2U) << all_violations(t.mem);
  const std::string v = all_violations(t.mem);
  EXPECT_NE(v.find("RVALID waited more than 50"), std::string::npos) << v;
  EXPECT_NE(v.find("BVALID waited more than 50"), std::string::npos) << v;
  t.m.p_rready_low = 0.0;
  t.m.p_bready_low = 0.0;
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(), 2U) << all_violations(t.mem);
}

TEST(AxiMem, FinishReportsTransactionsInFlight) {
  AxiMemConfig cfg;
  cfg.data_bits = 32;
  cfg.read_latency = 100;
  Bench t(cfg);
  t.step_with([](AxiSignals& s) {
    s.arvalid = true;
    s.arsize = 2;
    s.arburst = 1;
    s.wvalid = true;  // W without AW
    s.wstrb = 0xF;
    s.wlast = true;
  });
  t.step_with([](AxiSignals& s) { s.arvalid = s.wvalid = false; });
  EXPECT_FALSE(t.mem.idle());
  EXPECT_EQ(t.mem.violation_count(), 0U);
  t.mem.finish();
  EXPECT_EQ(t.mem.violation_count(AxiCheck::incomplete), 2U) << all_violations(t.mem);
  t.mem.reset();
  EXPECT_TRUE(t.mem.idle());
}

// Only the first max_messages strings are kept; the counts stay exact.
TEST(AxiMem, ViolationMessagesAreCapped) {
  AxiMemConfig cfg;
  cfg.data_bits = 32;
  cfg.max_messages = 3;
  Bench t(cfg);
  for (unsigned k = 0; k < 10; ++k) t.m.read(ReadJob{0x100 * k, 0, -1, 0, 0});  // FIXED
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.mem.violation_count(AxiCheck::burst_type), 10U);
  EXPECT_EQ(t.mem.violations().size(), 3U);
  EXPECT_EQ(t.mem.violations()[0].rfind("cycle ", 0), 0U);
}

// Hang: no handshake and no response while on (a beat already presented stays valid); turned
// off, every accepted burst completes with the right data and no violation is recorded.
TEST(AxiMem, HangStopsAnsweringUntilReleased) {
  AxiMemConfig cfg;
  cfg.data_bits = 64;
  cfg.read_latency = 3;
  Bench t(cfg);
  t.m.read(ReadJob{0x1000, 3, -1, 1, 1});
  for (int c = 0; c < 4; ++c) t.step();  // AR accepted, first R beat presented
  ASSERT_EQ(t.m.ar_cycles.size(), 1U);
  t.mem.set_hang(true);
  EXPECT_TRUE(t.mem.hung());
  t.m.read(ReadJob{0x2000, 0, -1, 1, 2});
  t.m.write(WriteJob{0x3000, 1, -1, 1, 3, {}, {}, {}});
  const auto beats = t.mem.stats().read_beats;
  for (int c = 0; c < 200; ++c) {
    t.step();
    EXPECT_FALSE(t.s.arready || t.s.awready || t.s.wready) << "cycle " << c;
    EXPECT_FALSE(t.s.bvalid) << "cycle " << c;
  }
  EXPECT_LE(t.mem.stats().read_beats, beats + 1);  // at most the beat already on R
  EXPECT_EQ(t.m.ar_cycles.size(), 1U);
  EXPECT_TRUE(t.m.aw_cycles.empty());
  t.mem.set_hang(false);
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.m.results.size(), 2U);
  EXPECT_EQ(t.m.bresps.size(), 1U);
  EXPECT_EQ(t.mem.read_bytes(0x3000, 1)[0], static_cast<std::uint8_t>(0x3000 + 1));
  EXPECT_EQ(t.mem.violation_count(), 0U) << all_violations(t.mem);
}

}  // namespace
