// The many-small-jobs bench on the descriptor ring (issue 19), part of test_accel.cpp for a
// `--ring` configuration (NC_RING): included inside its namespace after bench_job(),
// large_job_rate(), golden() and mem_config(), which it uses. `n` jobs of 1xCx7x7 (NCHW) written as
// descriptors into a ring of 1024 slots, one RING_HEAD write, cycles from that write to the drain
// interrupt; all jobs share one table (same_params: the loaded table is kept) or each has its own.
// Every output is checked against the golden model and every status word read back.
#pragma once

struct RingBench {
  std::uint64_t cycles = 0;    // RING_HEAD write to the drain interrupt
  std::uint64_t accesses = 0;  // host register accesses (set-up, HEAD, the interrupt's W1C)
  bool ok = true;
};

// Where a job's cycles go, from the AXI ports only (no internal signal): in the steady state
// (descriptors 100 .. 899 by their status writes) per job, the R beats of inputs and descriptors
// and the R channel's idle cycles, the gap from a job's last input beat to the next job's first
// (across the descriptor's beats); the W beats of outputs and statuses and W idle cycles; and
// the write chain from a job's last output beat to its status's address, from the status's last
// beat to its response, and from that beat to the next job's first output address (which may
// come before the response).
struct RingTrace {
  std::uint64_t ring_lo = 0, ring_hi = 0;
  std::deque<std::pair<bool, int>> rq, wq;  // bursts: (descriptor / status, beats left)
  std::deque<bool> bq;                      // responses awaited: status?
  std::uint64_t nst = 0, jobs = 0, cyc = 0, r_in = 0, r_desc = 0, w_out = 0, w_st = 0;
  std::uint64_t last_in = 0, last_out = 0, st_w = 0;
  std::uint64_t s_rgap = 0, s_towb = 0, s_resp = 0, s_next = 0;
  bool saw_desc = false, next_pending = false;

  bool ring(std::uint64_t a) const { return a >= ring_lo && a < ring_hi; }
  bool on() const { return nst >= 100 && nst < 900; }
  void observe(const Vtop& t, std::uint64_t cy) {
    const bool dbg = std::getenv("RTRACE") && nst >= 500 && nst < 504;
    if (dbg && t.m_axi_arvalid && t.m_axi_arready)
      std::printf("%lu AR %s %lx len %d\n", (unsigned long)cy, ring(t.m_axi_araddr) ? "D" : "I",
                  (unsigned long)t.m_axi_araddr, t.m_axi_arlen + 1);
    if (dbg && t.m_axi_rvalid && !rq.empty() && t.m_axi_rlast)
      std::printf("%lu Rlast %s\n", (unsigned long)cy, rq.front().first ? "D" : "I");
    if (dbg && t.m_axi_awvalid && t.m_axi_awready)
      std::printf("%lu AW %s %lx len %d\n", (unsigned long)cy, ring(t.m_axi_awaddr) ? "S" : "O",
                  (unsigned long)t.m_axi_awaddr, t.m_axi_awlen + 1);
    if (dbg && t.m_axi_wvalid && t.m_axi_wready && !wq.empty() && t.m_axi_wlast)
      std::printf("%lu Wlast %s\n", (unsigned long)cy, wq.front().first ? "S" : "O");
    if (dbg && t.m_axi_bvalid && !bq.empty())
      std::printf("%lu B %s\n", (unsigned long)cy, bq.front() ? "S" : "O");
    if (on()) ++cyc;
    if (t.m_axi_arvalid && t.m_axi_arready)
      rq.emplace_back(ring(t.m_axi_araddr), t.m_axi_arlen + 1);
    if (t.m_axi_rvalid && !rq.empty()) {
      const bool desc = rq.front().first;
      if (--rq.front().second == 0) rq.pop_front();
      if (on()) ++(desc ? r_desc : r_in);
      if (desc) saw_desc = true;
      if (!desc && saw_desc && on()) s_rgap += cy - last_in;
      if (!desc) last_in = cy, saw_desc = false;
    }
    if (t.m_axi_awvalid && t.m_axi_awready) {
      const bool st = ring(t.m_axi_awaddr);
      wq.emplace_back(st, t.m_axi_awlen + 1);
      bq.push_back(st);
      if (st) {
        if (on()) s_towb += cy - last_out, ++jobs;
        ++nst;
      } else if (next_pending) {
        if (on()) s_next += cy - st_w;
        next_pending = false;
      }
    }
    if (t.m_axi_wvalid && t.m_axi_wready && !wq.empty()) {
      const bool st = wq.front().first, end = --wq.front().second == 0;
      if (end) wq.pop_front();
      if (on()) ++(st ? w_st : w_out);
      (st ? st_w : last_out) = cy;
      if (st && end) next_pending = true;
    }
    if (t.m_axi_bvalid && !bq.empty()) {
      if (bq.front()) {
        if (on()) s_resp += cy - st_w;
      }
      bq.pop_front();
    }
  }
  void print(unsigned latency) const {
    const double n = static_cast<double>(std::max<std::uint64_t>(jobs, 1));
    auto f = [&](std::uint64_t v) { return static_cast<double>(v) / n; };
    std::printf(
        "| %u | %.1f | %.1f + %.1f + %.1f idle (input gap %.1f) | %.1f + %.1f + %.1f idle | "
        "%.1f / %.1f / %.1f |\n",
        latency, f(cyc), f(r_in), f(r_desc), f(cyc - r_in - r_desc), f(s_rgap), f(w_out), f(w_st),
        f(cyc - w_out - w_st), f(s_towb), f(s_resp), f(s_next));
  }
};

inline void put_le(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

// The descriptor of job j (its SRC, DST, PARAM) with MODE's flags.
inline std::vector<std::uint8_t> descriptor(const AccelJob& j, const AccelShape& s,
                                            std::uint32_t flags) {
  std::vector<std::uint8_t> b(64, 0);
  put_le(b, 0, j.src, 8);
  put_le(b, 8, j.dst, 8);
  put_le(b, 16, j.param, 8);
  put_le(b, 24, static_cast<std::uint64_t>(j.channels), 4);
  put_le(b, 28, j.inner, 4);
  put_le(b, 32, j.outer, 4);
  std::uint32_t mode = 0;
  mode = R::field_set(mode, R::MODE_LAYOUT_MASK, R::MODE_LAYOUT_SHIFT, j.layout == Layout::nhwc);
  mode = R::field_set(mode, R::MODE_ROUNDING_MASK, R::MODE_ROUNDING_SHIFT,
                      static_cast<std::uint32_t>(j.settings.rounding));
  mode = R::field_set(mode, R::MODE_SHIFT_MASK, R::MODE_SHIFT_SHIFT,
                      static_cast<std::uint32_t>(j.settings.shift));
  put_le(b, 36, mode | flags, 4);
  put_le(b, 40, bits::truncate(j.settings.lo, s.yw), 4);
  put_le(b, 44, bits::truncate(j.settings.hi, s.yw), 4);
  put_le(b, 48, 0xFFFFFFFFu, 4);
  return b;
}

inline RingBench bench_ring(unsigned latency, int channels, std::uint64_t hw, int n, bool same,
                            RingTrace* trace = nullptr) {
  RingBench r;
  AccelDriver d(mem_config(9, latency, 0.0), 9);
  d.reset();
  const AccelShape& s = d.shape();
  const ArithSpec a = s.arith();
  std::mt19937_64 rng(19);
  constexpr std::uint64_t kRing = 0x100000, kRingLog2 = 10;
  const std::uint64_t in_bytes = bits::bytes_for(static_cast<std::uint64_t>(channels) * hw * a.xw);
  const std::uint64_t out_bytes = bits::bytes_for(static_cast<std::uint64_t>(channels) * hw * a.yw);
  const std::uint64_t stride = (std::max(in_bytes, out_bytes) + 4095) / 4096 * 4096;
  const std::uint64_t prm_stride =
      (static_cast<std::uint64_t>(channels * s.entry_bytes()) + 63) / 64 * 64;
  std::vector<AccelJob> jobs;
  for (int i = 0; i < n; ++i) {
    AccelJob j;
    j.channels = channels;
    j.inner = hw;
    j.outer = 1;
    j.settings.shift = 8;
    j.settings.rounding = Rounding::half_even;
    j.settings.lo = a.y_min();
    j.settings.hi = a.y_max();
    j.src = 0x4000000 + static_cast<std::uint64_t>(i) * stride;
    j.dst = 0x8000000 + static_cast<std::uint64_t>(i) * stride;
    j.param = 0x2000000 + (same ? 0 : static_cast<std::uint64_t>(i) * prm_stride);
    if (same && i > 0) {
      j.scale = jobs[0].scale;
      j.shift = jobs[0].shift;
    } else {
      for (int c = 0; c < channels; ++c) {
        j.scale.push_back(std::uniform_int_distribution<std::int64_t>(-200, 200)(rng));
        j.shift.push_back(std::uniform_int_distribution<std::int64_t>(-3000, 3000)(rng));
      }
    }
    std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
    for (std::uint64_t e = 0; e < j.elements(); ++e) j.x.push_back(xd(rng));
    jobs.push_back(std::move(j));
  }
  d.mem().clear_regions();
  for (int i = 0; i < n; ++i) {
    const AccelJob& j = jobs[static_cast<std::size_t>(i)];
    d.stage_data(j);
    d.mem().write_bytes(kRing + 64 * static_cast<std::uint64_t>(i),
                        descriptor(j, s, i > 0 ? 1u << 17 : 0u));
  }
  d.mem().allow_read(kRing, 64ULL << kRingLog2);
  d.mem().allow_write(kRing, 64ULL << kRingLog2);
  auto wr = [&](std::uint32_t off, std::uint32_t v) {
    ++r.accesses;
    d.wr(off, v);
  };
  wr(R::RING_BASE_LO_OFFSET, static_cast<std::uint32_t>(kRing));
  wr(R::RING_BASE_HI_OFFSET, 0);
  wr(R::RING_SIZE_OFFSET, kRingLog2);
  wr(R::CTRL_OFFSET, R::CTRL_IRQ_EN_RING_MASK | R::CTRL_IRQ_EN_ERROR_MASK);
  wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK);
  const std::uint64_t t0 = d.cycle();
  wr(R::RING_HEAD_OFFSET, static_cast<std::uint32_t>(n));
  bool irq = false;
  if (trace != nullptr) {
    trace->ring_lo = kRing;
    trace->ring_hi = kRing + (64ULL << kRingLog2);
    for (std::uint64_t k = 0; k < 100'000'000 && !d.top().irq_o; ++k) {
      trace->observe(d.top(), d.cycle());
      d.tick();
    }
    irq = d.top().irq_o != 0;
  } else {
    irq = d.wait_irq(100'000'000);
  }
  r.cycles = d.cycle() - t0;
  ++r.accesses;
  const std::uint32_t tail = d.rd(R::RING_TAIL_OFFSET);
  wr(R::IRQ_STATUS_OFFSET, ~0U);
  r.ok = irq && tail == static_cast<std::uint32_t>(n);
  for (int i = 0; i < n && r.ok; ++i) {
    const AccelJob& j = jobs[static_cast<std::size_t>(i)];
    const auto st = d.mem().read_bytes(kRing + 64 * static_cast<std::uint64_t>(i) + 48, 8);
    std::uint64_t elems = 0;
    for (int k = 3; k >= 0; --k) elems = elems << 8 | st[4 + static_cast<std::size_t>(k)];
    r.ok =
        r.ok && st[0] == 1 && st[1] == 0 && elems == j.elements() && d.read_output(j) == golden(j);
  }
  return r;
}

// The table: per latency, the large job's rate (START), then the ring's aggregate rate with a
// shared table and with a table per job, their ratios to the large job's, the fixed cycles a
// job (cycles a job minus its elements at the large job's rate) and host accesses a job.
inline bool bench_ring_table() {
  const AccelShape s;
  const int c = std::min(64, s.max_channels);
  const std::uint64_t hw = 7 * 7;
  const int n = 1000;
  const double elems = static_cast<double>(c) * static_cast<double>(hw);
  std::printf("\nmany small jobs on the descriptor ring: %d jobs of 1x%dx7x7 (%llu elements)\n", n,
              c, static_cast<unsigned long long>(static_cast<std::uint64_t>(c) * hw));
  std::printf(
      "| read latency | large-job elements/cycle | tables | cycles a job | fixed overhead a job | "
      "small / large rate | host accesses a job |\n|---|---|---|---|---|---|---|\n");
  bool ok = true;
  RingTrace traces[3];
  int ti = 0;
  for (unsigned lat : {16U, 64U, 128U}) {
    const double rate = large_job_rate(lat, c, ok);
    for (const bool same : {true, false}) {
      const RingBench r = bench_ring(lat, c, hw, n, same, same ? &traces[ti] : nullptr);
      ok = ok && r.ok;
      const double per = static_cast<double>(r.cycles) / n;
      std::printf("| %u | %.3f | %s | %.1f | %.1f | %.3f | %.3f |\n", lat, rate,
                  same ? "shared" : "one per job", per, per - elems / rate, elems / per / rate,
                  static_cast<double>(r.accesses) / n);
    }
    ++ti;
  }
  std::printf("(ring target: shared-table small / large >= 0.8)\n");
  std::printf(
      "\nwhere a shared-table job's cycles go (AXI ports, descriptors 100..899, per job): R beats "
      "(input + descriptor + idle), W beats (output + status + idle), the write chain (last "
      "output beat -> status address / status beat -> its response / status beat -> next output "
      "address)\n| read latency | cycles a job | R | W | write chain |\n|---|---|---|---|---|\n");
  ti = 0;
  for (unsigned lat : {16U, 64U, 128U}) traces[ti++].print(lat);
  if (!ok) std::printf("ring bench failed\n");
  return ok;
}

// Jobs sharing one table, shape and settings (the RTL keeps the table and may read the next
// input early; 16x49 int8: a job's input fits the read FIFO), each reading its own input or,
// where `chained`, its predecessor's output, staged with the memory's regions opened.
struct KeptJobs {
  std::vector<AccelJob> jobs;
  std::vector<bool> chained;
};
inline KeptJobs kept_jobs(AccelDriver& d, std::mt19937_64& rng, int n, bool chains,
                          int max_channels = 16) {
  const AccelShape& s = d.shape();
  const ArithSpec a = s.arith();
  const int channels = std::min(max_channels, s.max_channels);
  KeptJobs k;
  for (int i = 0; i < n; ++i) {
    AccelJob j;
    j.channels = channels;
    j.inner = 49;
    j.outer = 1;
    j.settings.shift = 6;
    j.settings.lo = a.y_min();
    j.settings.hi = a.y_max();
    j.dst = 0x8000000 + static_cast<std::uint64_t>(i) * 0x1000;
    j.param = 0x2000000;
    const bool chain = chains && i % 2 == 1;
    j.src = chain ? k.jobs.back().dst : 0x4000000 + static_cast<std::uint64_t>(i) * 0x1000;
    for (int c = 0; i == 0 && c < channels; ++c) {
      j.scale.push_back(std::uniform_int_distribution<std::int64_t>(-300, 300)(rng));
      j.shift.push_back(std::uniform_int_distribution<std::int64_t>(-2000, 2000)(rng));
    }
    if (i > 0) {
      j.scale = k.jobs[0].scale;
      j.shift = k.jobs[0].shift;
    }
    if (chain) {
      j.x = golden(k.jobs.back());
    } else {
      std::uniform_int_distribution<std::int64_t> xd(a.x_min(), a.x_max());
      for (std::uint64_t e = 0; e < j.elements(); ++e) j.x.push_back(xd(rng));
    }
    k.jobs.push_back(std::move(j));
    k.chained.push_back(chain);
  }
  d.mem().clear_regions();
  for (std::size_t i = 0; i < k.jobs.size(); ++i) {
    const AccelJob& j = k.jobs[i];
    const std::uint64_t out = j.elements() * static_cast<std::uint64_t>(a.yw) / 8;
    if (k.chained[i]) {  // its input: the predecessor's output
      d.mem().allow_write(j.dst, out);
    } else {
      d.stage_data(j);
    }
    d.mem().allow_read(j.dst, (out + 63) / 64 * 64);  // a chained input
  }
  return k;
}

constexpr std::uint64_t kTestRing = 0x100000;  // 16 slots

// Writes descriptors [from, to) of `k` (same_params after the first) and opens the ring.
inline void ring_describe(AccelDriver& d, const KeptJobs& k, int from, int to) {
  for (int i = from; i < to; ++i) {
    d.mem().write_bytes(
        kTestRing + 64 * static_cast<std::uint64_t>(i % 16),
        descriptor(k.jobs[static_cast<std::size_t>(i)], d.shape(), i > 0 ? 1u << 17 : 0u));
  }
}
inline void ring_open(AccelDriver& d) {
  d.mem().allow_read(kTestRing, 64ULL << 4);
  d.mem().allow_write(kTestRing, 64ULL << 4);
  d.wr(R::RING_BASE_LO_OFFSET, static_cast<std::uint32_t>(kTestRing));
  d.wr(R::RING_BASE_HI_OFFSET, 0);
  d.wr(R::RING_SIZE_OFFSET, 4);
  d.wr(R::CTRL_OFFSET, R::CTRL_IRQ_EN_RING_MASK | R::CTRL_IRQ_EN_ERROR_MASK);
  d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK);
}
inline std::vector<std::uint8_t> ring_status(AccelDriver& d, int i) {
  return d.mem().read_bytes(kTestRing + 64 * static_cast<std::uint64_t>(i % 16) + 48, 16);
}

// A chain of layers on the ring: every other descriptor reads its predecessor's output. The
// writes crawl (WREADY low 90 % of the cycles) while reads are fast, so an input read started
// before the predecessor's output is written would see stale bytes: the early read must not
// start for them (docs/architecture.md "Early read"). Every output against the golden model.
TEST(Accel, RingChainReadsThePredecessorsOutputNotStaleBytes) {
  AxiMemConfig mc = mem_config(5, 4, 0.0);
  mc.p_wready_low = 0.9;
  AccelDriver d(mc, 5);
  d.reset();
  const ArithSpec a = d.shape().arith();
  if (a.xw != a.yw || a.x_signed != a.y_signed) GTEST_SKIP() << "output is no input here";
  std::mt19937_64 rng(23);
  constexpr int kJobs = 12;
  const KeptJobs k = kept_jobs(d, rng, kJobs, true);
  ring_describe(d, k, 0, kJobs);
  ring_open(d);
  d.wr(R::RING_HEAD_OFFSET, kJobs);
  ASSERT_TRUE(d.wait_irq(10'000'000));
  EXPECT_EQ(d.rd(R::RING_TAIL_OFFSET), static_cast<std::uint32_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) {
    const AccelJob& j = k.jobs[static_cast<std::size_t>(i)];
    EXPECT_EQ(ring_status(d, i)[0], 1) << "descriptor " << i;
    EXPECT_EQ(d.read_output(j), golden(j)) << "descriptor " << i << " chained " << k.chained[i];
  }
}

// Bus errors on ring jobs (kept tables: the early read and the overlapped prefetch run): a read
// error in a job's input (met by the early read), a write error in a job's output and a write
// error of a status each stop the ring at that descriptor with IRQ_STATUS.error, ERR_CODE and
// ERR_ADDR; a failed job's status is written (code, ELEMS 0 for the read error, ERR_ADDR), a
// failed status write leaves none (nor a status after it); nothing after the stop runs but
// (a failed status write only) the next job's output; resume and skip go on. Then an
// unreadable descriptor read as the second of a two-descriptor prefetch: the first runs, the
// ring stops at it with a read error and no status. The `ref:` model's semantics
// (runtime/src/ref_ring.cpp).
TEST(Accel, RingBusErrorsStopTheRingWithStatusThenResumeOrSkip) {
  AccelDriver d(mem_config(6, 24, 0.05), 6);
  d.reset();
  std::mt19937_64 rng(29);
  constexpr int kJobs = 14;
  const KeptJobs k = kept_jobs(d, rng, kJobs, false);
  const std::uint64_t bb = static_cast<std::uint64_t>(d.shape().bus_bytes());
  const auto err_addr = [&] {
    return static_cast<std::uint64_t>(d.rd(R::ERR_ADDR_HI_OFFSET)) << 32 |
           d.rd(R::ERR_ADDR_LO_OFFSET);
  };
  const auto le = [](const std::vector<std::uint8_t>& b, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
    return v;
  };
  // A stop at descriptor `at` with `code` / `addr`; the interrupt cleared.
  const auto stopped_at = [&](int at, std::uint32_t code, std::uint64_t addr) {
    ASSERT_TRUE(d.wait_irq(10'000'000));
    EXPECT_EQ(d.rd(R::RING_TAIL_OFFSET), static_cast<std::uint32_t>(at));
    EXPECT_NE(d.rd(R::RING_STATUS_OFFSET) & R::RING_STATUS_STOPPED_MASK, 0u);
    EXPECT_NE(d.rd(R::IRQ_STATUS_OFFSET) & R::IRQ_STATUS_ERROR_MASK, 0u);
    EXPECT_EQ(d.rd(R::ERR_CODE_OFFSET), code);
    EXPECT_EQ(err_addr(), addr);
    d.wr(R::IRQ_STATUS_OFFSET, ~0U);
  };
  const auto good = [&](int i) {
    const AccelJob& j = k.jobs[static_cast<std::size_t>(i)];
    const auto st = ring_status(d, i);
    EXPECT_EQ(le(st, 0, 4), 1u) << "descriptor " << i;
    EXPECT_EQ(le(st, 4, 4), j.elements()) << "descriptor " << i;
    EXPECT_EQ(d.read_output(j), golden(j)) << "descriptor " << i;
  };
  const std::vector<std::uint8_t> unwritten(16, 0xA5);  // the memory's fill: never written
  std::vector<std::uint8_t> no_status(16, 0);           // as descriptor() leaves bytes 48..63
  for (int i = 0; i < 4; ++i) no_status[static_cast<std::size_t>(i)] = 0xFF;
  ring_describe(d, k, 0, 8);
  ring_open(d);
  // 1. A read error in descriptor 3's input: its status says so, nothing of it is written.
  const AccelJob& j3 = k.jobs[3];
  d.mem().add_read_error({j3.src, bb, AxiResp::slverr});
  d.wr(R::RING_HEAD_OFFSET, 8);
  stopped_at(3, 7, j3.src);
  for (int i = 0; i < 3; ++i) good(i);
  auto st = ring_status(d, 3);
  EXPECT_EQ(le(st, 0, 4), 2u | 7u << 8);
  EXPECT_EQ(le(st, 4, 4), 0u);
  EXPECT_EQ(le(st, 8, 8), j3.src);
  EXPECT_EQ(d.mem().read_bytes(j3.dst, 16), unwritten) << "nothing of the failed job";
  EXPECT_EQ(ring_status(d, 4), no_status) << "nothing after the stop";
  // 2. Resume (the fault gone) with a write error in descriptor 5's output.
  d.mem().clear_read_errors();
  const AccelJob& j5 = k.jobs[5];
  d.mem().add_write_error({j5.dst, bb, AxiResp::slverr});
  d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK | R::RING_CTRL_RESUME_MASK);
  stopped_at(5, 8, j5.dst);
  good(3);
  good(4);
  st = ring_status(d, 5);
  EXPECT_EQ(le(st, 0, 4), 2u | 8u << 8);
  EXPECT_EQ(le(st, 8, 8), j5.dst);
  EXPECT_EQ(ring_status(d, 6), no_status) << "nothing after the stop";
  // 3. Skip it; then a write error of descriptor 8's status: no status, TAIL stays at it.
  d.mem().clear_write_errors();
  ring_describe(d, k, 8, 10);
  const std::uint64_t st8 = kTestRing + 64 * 8 + 48;
  d.mem().add_write_error({st8, 16, AxiResp::slverr});
  d.wr(R::RING_HEAD_OFFSET, 10);
  d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK | R::RING_CTRL_SKIP_MASK);
  stopped_at(8, 8, st8 / bb * bb);
  good(6);
  good(7);
  EXPECT_EQ(ring_status(d, 8), no_status) << "a failed status write leaves no status";
  EXPECT_EQ(ring_status(d, 9), no_status) << "nothing after the stop";
  // 4. Resume: descriptors 8 and 9 run, the ring drains.
  d.mem().clear_write_errors();
  d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK | R::RING_CTRL_RESUME_MASK);
  ASSERT_TRUE(d.wait_irq(10'000'000));
  EXPECT_EQ(d.rd(R::RING_TAIL_OFFSET), 10u);
  EXPECT_EQ(d.rd(R::RING_STATUS_OFFSET) & R::RING_STATUS_STOPPED_MASK, 0u);
  d.wr(R::IRQ_STATUS_OFFSET, ~0U);
  good(8);
  good(9);
  EXPECT_EQ(le(ring_status(d, 5), 0, 4), 2u | 8u << 8) << "the skipped one keeps its status";
  // 5. Descriptor 12 unreadable (its last bus word; the memory fails every beat of a burst
  // touching it; prefetched with 11 while 10 runs): 10 and 11 run, the ring stops at 12 with a
  // read error at its first word and no status; resume runs it.
  ring_describe(d, k, 10, kJobs);
  const std::uint64_t d12 = kTestRing + 64 * 12;
  d.mem().add_read_error({d12 + 64 - bb, bb, AxiResp::slverr});
  d.wr(R::RING_HEAD_OFFSET, kJobs);
  stopped_at(12, 7, d12);
  good(10);
  good(11);
  EXPECT_EQ(ring_status(d, 12), no_status) << "an unreadable descriptor gets no status";
  d.mem().clear_read_errors();
  d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK | R::RING_CTRL_RESUME_MASK);
  ASSERT_TRUE(d.wait_irq(10'000'000));
  EXPECT_EQ(d.rd(R::RING_TAIL_OFFSET), static_cast<std::uint32_t>(kJobs));
  good(12);
  good(13);
  EXPECT_TRUE(d.mem().idle());
  for (const auto& v : d.mem().violations()) ADD_FAILURE() << v;
}

// The ring's write DMA streams (docs/architecture.md "DMA": a burst's address once its first word
// is in the write FIFO), so a read error can leave an issued write burst whose data never comes:
// a START job on the ring build whose input starts 16 words below a 4 KiB boundary reads bursts
// of 16, 32, 32 ... words while its output goes in bursts of 32; the third read burst fails
// (words 48..79) while the core, starved by the reads, writes the second output burst (32..63).
// Its beats from 48 on go with no strobes (without them ABORT waits forever); the DST holds only
// golden bytes below word 48 and nothing from there; the next job runs.
TEST(Accel, RingBuildReadErrorPadsTheIssuedWriteBurst) {
  AccelDriver d(mem_config(7, 16, 0.0), 7);
  d.reset();
  const ArithSpec a = d.shape().arith();
  const std::uint64_t bb = static_cast<std::uint64_t>(d.shape().bus_bytes());
  if (a.xw != 8 || a.yw != 8 || bb != 8) GTEST_SKIP() << "set for int8 on a 64-bit bus";
  std::mt19937_64 rng(31);
  AccelJob j = kept_jobs(d, rng, 1, false, 64).jobs[0];
  j.src = 0x4000000 + 0x1000 - 16 * bb;
  d.stage(j);
  d.program(j);
  d.mem().add_read_error({j.src + 48 * bb, bb, AxiResp::slverr});
  const std::uint64_t null0 = d.mem().stats().null_write_beats;
  const auto o = run_started(d, 100000);
  EXPECT_TRUE(o.irq);
  EXPECT_EQ(o.err_code, 7U);
  EXPECT_EQ(o.err_addr, j.src + 48 * bb);
  EXPECT_GT(d.mem().stats().null_write_beats, null0) << "no padding: the case was missed";
  const std::vector<std::int64_t> gold = golden(j);
  const std::vector<std::uint8_t> want = bits::pack(gold, a.yw);
  const std::vector<std::uint8_t> got = d.mem().read_bytes(j.dst, want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (i >= 48 * bb) {
      ASSERT_EQ(got[i], 0xA5) << "byte " << i << " past the error";
    } else {
      ASSERT_TRUE(got[i] == 0xA5 || got[i] == want[i]) << "byte " << i;
    }
  }
  EXPECT_TRUE(d.mem().idle()) << "transactions left outstanding";
  for (const auto& v : d.mem().violations()) ADD_FAILURE() << v;
  d.mem().clear_violations();
  d.mem().clear_read_errors();
  run_good_job(d, random_job(rng, d.shape(), 1500));
}

// RING_CTRL.enable cleared while the ring runs, at several points of a job (so also while the
// next input is read early: that read is drained and dropped): the device goes idle, a START
// job beside the ring is exact (no stale words left in the read FIFO), and enabling the ring
// again runs the rest; every output against the golden model.
TEST(Accel, RingDisabledMidRunDropsTheEarlyReadThenStartAndResumeAreExact) {
  AccelDriver d(mem_config(7, 24, 0.0), 7);
  d.reset();
  std::mt19937_64 rng(31);
  constexpr int kTrials = 6, kPer = 4;
  const KeptJobs k = kept_jobs(d, rng, kTrials * kPer, false);
  AccelJob solo = k.jobs[0];  // START: its own input and output
  solo.src = 0x6000000;
  solo.dst = 0x7000000;
  for (auto& v : solo.x) v = std::uniform_int_distribution<std::int64_t>(-128, 127)(rng);
  d.stage_data(solo);
  ring_open(d);
  int head = 0;
  for (int t = 0; t < kTrials && !HasFailure(); ++t) {
    ring_describe(d, k, head, head + kPer);
    head += kPer;
    d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK);
    d.wr(R::RING_HEAD_OFFSET, static_cast<std::uint32_t>(head));
    for (int c = 0; c < 150 + 53 * t; ++c) d.tick();
    d.wr(R::RING_CTRL_OFFSET, 0);  // disabled mid-run
    int waited = 0;
    while ((d.rd(R::STATUS_OFFSET) & R::STATUS_BUSY_MASK) != 0 && waited++ < 100000) d.tick();
    ASSERT_LT(waited, 100000) << "trial " << t << ": still busy after the ring was disabled";
    d.program(solo);
    const auto o = run_started(d, 1'000'000);
    ASSERT_TRUE(o.irq) << "trial " << t;
    EXPECT_EQ(o.err_code, 0u) << "trial " << t;
    EXPECT_EQ(d.read_output(solo), golden(solo)) << "trial " << t << ": START beside the ring";
    d.mem().write_bytes(solo.dst, std::vector<std::uint8_t>(solo.elements(), 0));
    d.wr(R::CTRL_OFFSET, R::CTRL_IRQ_EN_RING_MASK | R::CTRL_IRQ_EN_ERROR_MASK);  // START's gone
    d.wr(R::RING_CTRL_OFFSET, R::RING_CTRL_ENABLE_MASK);
    ASSERT_TRUE(d.wait_irq(10'000'000)) << "trial " << t;
    EXPECT_EQ(d.rd(R::RING_TAIL_OFFSET), static_cast<std::uint32_t>(head)) << "trial " << t;
    d.wr(R::IRQ_STATUS_OFFSET, ~0U);
  }
  for (int i = 0; i < head; ++i) {
    const AccelJob& j = k.jobs[static_cast<std::size_t>(i)];
    EXPECT_EQ(ring_status(d, i)[0], 1) << "descriptor " << i;
    EXPECT_EQ(d.read_output(j), golden(j)) << "descriptor " << i;
  }
  EXPECT_TRUE(d.mem().idle());
  for (const auto& v : d.mem().violations()) ADD_FAILURE() << v;
}
