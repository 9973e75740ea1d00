// AXI4 slave memory model for cycle-level co-simulation of an accelerator's m_axi_* master port.
//
// Two layers, so the model is unit-testable without Verilator:
//   AxiSignals  a plain snapshot of the five channels (data as bytes, lane i = bits 8i+7..8i);
//   AxiMemory   a slave on AxiSignals, stepped once per clock with drive() then sample().
// The adapters to_top()/from_top() copy between AxiSignals and a Verilated model's m_axi_* ports
// of any width; they are compiled only where verilated.h is on the include path.
//
// One clock cycle with a Verilated top:
//   mem.drive(sig);            // slave outputs for this cycle (from state + random stalls)
//   to_top(sig, top);          // ... onto the ports
//   top.clk = 0; top.eval();   // the master's outputs settle
//   from_top(top, sig);        // master outputs into sig
//   mem.sample(sig);           // handshakes = VALID && READY, state advances, protocol checks
//   top.clk = 1; top.eval();   // rising edge
// Hold the DUT in reset before stepping the model, or call mem.reset() once reset is released:
// a master's VALIDs are not meaningful before its registers are reset, and the model would take
// them as requests.
//
// Timing: cycle c is the pair drive()/sample() between two edges (cycle() counts the samples).
// An AR handshake in cycle c gives the first RVALID in cycle c + read_latency (beats follow back to
// back unless stalled); the last handshake of a write burst (its AW or its last W beat) in cycle
// c gives BVALID in cycle c + write_latency. The slave's READY signals never depend on VALID.
// Responses are in order (one queue per direction); the ID of each burst is echoed.
//
// Memory is a sparse byte store; bytes never written read as the fill pattern. Reads return the
// whole bus-aligned word of each beat (every lane), writes store the lanes whose WSTRB is set.
// Protocol problems are recorded as human-readable violations (never thrown, never fatal);
// misuse of the C++ API (wrong data vector sizes, bad configuration) throws std::invalid_argument.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace normcore::sim {

enum class AxiResp : std::uint8_t { okay = 0, exokay = 1, slverr = 2, decerr = 3 };
enum class AxiBurst : std::uint8_t { fixed = 0, incr = 1, wrap = 2 };

// Snapshot of every AXI4 signal of one port for one cycle.
struct AxiSignals {
  explicit AxiSignals(int data_bits = 64)
      : wdata(bytes_for(data_bits), 0), rdata(bytes_for(data_bits), 0) {}

  std::size_t data_bytes() const { return wdata.size(); }

  // AW: master -> slave, except awready.
  std::uint32_t awid = 0;
  std::uint64_t awaddr = 0;
  std::uint8_t awlen = 0;
  std::uint8_t awsize = 0;
  std::uint8_t awburst = 1;
  bool awlock = false;
  std::uint8_t awcache = 0;
  std::uint8_t awprot = 0;
  bool awvalid = false;
  bool awready = false;
  // W: master -> slave, except wready. wstrb bit i enables byte lane i.
  std::vector<std::uint8_t> wdata;
  std::uint64_t wstrb = 0;
  bool wlast = false;
  bool wvalid = false;
  bool wready = false;
  // B: slave -> master, except bready.
  std::uint32_t bid = 0;
  std::uint8_t bresp = 0;
  bool bvalid = false;
  bool bready = false;
  // AR: master -> slave, except arready.
  std::uint32_t arid = 0;
  std::uint64_t araddr = 0;
  std::uint8_t arlen = 0;
  std::uint8_t arsize = 0;
  std::uint8_t arburst = 1;
  bool arlock = false;
  std::uint8_t arcache = 0;
  std::uint8_t arprot = 0;
  bool arvalid = false;
  bool arready = false;
  // R: slave -> master, except rready.
  std::uint32_t rid = 0;
  std::vector<std::uint8_t> rdata;
  std::uint8_t rresp = 0;
  bool rlast = false;
  bool rvalid = false;
  bool rready = false;

 private:
  static std::size_t bytes_for(int data_bits) {
    if (data_bits < 8 || data_bits > 512 || (data_bits & (data_bits - 1)) != 0) {
      throw std::invalid_argument("AXI data width must be a power of two in 8..512 bits, not " +
                                  std::to_string(data_bits));
    }
    return static_cast<std::size_t>(data_bits / 8);
  }
};

// Half-open address range [base, base + size); overflow-safe near 2^64.
struct AxiRange {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  bool contains(std::uint64_t a) const { return a - base < size; }
  // Overlap with the closed range [lo, hi].
  bool overlaps(std::uint64_t lo, std::uint64_t hi) const {
    return size != 0 && (contains(lo) || (base >= lo && base <= hi));
  }
};

struct AxiErrorRange {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  AxiResp resp = AxiResp::slverr;
};

// Sparse byte-addressed memory in 4 KiB pages. Untouched bytes read as the fill pattern.
class SparseMemory {
 public:
  static constexpr std::uint64_t page_bytes = 4096;
  using FillFn = std::function<std::uint8_t(std::uint64_t)>;

  explicit SparseMemory(std::uint8_t fill_byte = 0, FillFn fill_fn = {})
      : fill_byte_(fill_byte), fill_fn_(std::move(fill_fn)) {}

  // Changes the pattern of bytes never written (pages already touched keep their contents).
  void set_fill(std::uint8_t fill_byte, FillFn fill_fn = {}) {
    fill_byte_ = fill_byte;
    fill_fn_ = std::move(fill_fn);
  }
  std::uint8_t fill_at(std::uint64_t addr) const { return fill_fn_ ? fill_fn_(addr) : fill_byte_; }

  void write_byte(std::uint64_t addr, std::uint8_t v) { page(addr)[addr % page_bytes] = v; }
  std::uint8_t read_byte(std::uint64_t addr) const {
    const auto it = pages_.find(addr / page_bytes);
    return it == pages_.end() ? fill_at(addr) : (*it->second)[addr % page_bytes];
  }

  void write_bytes(std::uint64_t addr, std::span<const std::uint8_t> data) {
    std::size_t i = 0;
    while (i < data.size()) {
      const std::uint64_t a = addr + i;
      const std::size_t off = static_cast<std::size_t>(a % page_bytes);
      const std::size_t n = std::min(data.size() - i, static_cast<std::size_t>(page_bytes) - off);
      std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i), n, page(a).begin() + off);
      i += n;
    }
  }
  void read_into(std::uint64_t addr, std::span<std::uint8_t> out) const {
    std::size_t i = 0;
    while (i < out.size()) {
      const std::uint64_t a = addr + i;
      const std::size_t off = static_cast<std::size_t>(a % page_bytes);
      const std::size_t n = std::min(out.size() - i, static_cast<std::size_t>(page_bytes) - off);
      const auto it = pages_.find(a / page_bytes);
      for (std::size_t k = 0; k < n; ++k) {
        out[i + k] = it == pages_.end() ? fill_at(a + k) : (*it->second)[off + k];
      }
      i += n;
    }
  }
  std::vector<std::uint8_t> read_bytes(std::uint64_t addr, std::size_t n) const {
    std::vector<std::uint8_t> v(n);
    read_into(addr, v);
    return v;
  }

  bool touched(std::uint64_t addr) const { return pages_.count(addr / page_bytes) != 0; }
  std::size_t page_count() const { return pages_.size(); }
  void clear() { pages_.clear(); }

 private:
  using Page = std::array<std::uint8_t, page_bytes>;
  Page& page(std::uint64_t addr) {
    auto& p = pages_[addr / page_bytes];
    if (!p) {
      p = std::make_unique<Page>();
      const std::uint64_t base = addr - addr % page_bytes;
      for (std::size_t k = 0; k < page_bytes; ++k) (*p)[k] = fill_at(base + k);
    }
    return *p;
  }

  std::uint8_t fill_byte_;
  FillFn fill_fn_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
};

struct AxiMemConfig {
  int data_bits = 64;          // BUS: power of two, 8..512
  int addr_bits = 64;          // addresses are masked to this width
  unsigned read_latency = 1;   // AR handshake -> first RVALID, cycles (0 is taken as 1)
  unsigned write_latency = 1;  // last AW/W handshake of a burst -> BVALID, cycles (0 -> 1)
  double p_arready_low = 0.0;  // per cycle probability of a random stall
  double p_awready_low = 0.0;
  double p_wready_low = 0.0;
  double p_r_idle = 0.0;                // probability of an idle cycle before presenting an R beat
  unsigned max_outstanding_reads = 8;   // accepted AR bursts not yet fully returned
  unsigned max_outstanding_writes = 8;  // accepted AW bursts whose B is not yet accepted
  unsigned max_w_ahead = 256;           // W beats accepted before their AW (then WREADY low)
  std::uint64_t seed = 1;
  std::uint8_t fill_byte = 0;               // value of bytes never written ...
  SparseMemory::FillFn fill_fn;             // ... or a function of the address, if set
  std::uint8_t idle_rdata = 0;              // RDATA bytes while RVALID is low
  std::vector<AxiErrorRange> read_errors;   // every beat of a burst touching one: its resp
  std::vector<AxiErrorRange> write_errors;  // a burst touching one: B resp, no data written
  std::uint64_t ready_timeout = 100000;     // RVALID/BVALID stalled longer: a violation
  std::size_t max_messages = 1000;          // violation strings kept (counts are always exact)
};

// Kinds of violation, for counting (violations() has the text).
enum class AxiCheck : std::uint8_t {
  boundary_4k,      // burst crosses a 4 KiB boundary
  burst_type,       // AxBURST not INCR
  burst_size,       // AxSIZE != log2(BUS/8)
  wlast,            // WLAST early or missing on the last beat
  wstrb,            // WSTRB set on a byte lane outside the transfer
  valid_dropped,    // AxVALID/WVALID dropped before READY
  payload_changed,  // payload changed while VALID && !READY
  read_region,      // read outside the allowed read regions
  write_region,     // write (strobed byte) outside the allowed write regions
  ready_timeout,    // RVALID or BVALID waited for READY longer than ready_timeout cycles
  incomplete,       // finish(): transactions still in flight
  count_
};

struct AxiMemStats {
  std::uint64_t cycles = 0;
  std::uint64_t read_bursts = 0, read_beats = 0, read_bytes = 0;     // bytes: active lanes
  std::uint64_t write_bursts = 0, write_beats = 0, write_bytes = 0;  // bytes: strobed lanes
  std::uint64_t read_error_bursts = 0, write_error_bursts = 0;       // answered SLVERR/DECERR
  std::uint64_t null_write_beats = 0;  // W beats with WSTRB 0 (the ring's padding after a stop)
  unsigned max_outstanding_reads = 0, max_outstanding_writes = 0;
  std::uint64_t r_valid_cycles = 0;  // RVALID high
  std::uint64_t r_stall_cycles = 0;  // RVALID && !RREADY
  std::uint64_t b_stall_cycles = 0;  // BVALID && !BREADY
  std::uint64_t ar_wait_cycles = 0;  // ARVALID && !ARREADY
  std::uint64_t aw_wait_cycles = 0;  // AWVALID && !AWREADY
  std::uint64_t w_wait_cycles = 0;   // WVALID && !WREADY
};

class AxiMemory {
 public:
  explicit AxiMemory(AxiMemConfig cfg = {})
      : cfg_(std::move(cfg)),
        mem_(cfg_.fill_byte, cfg_.fill_fn),
        rng_(cfg_.seed),
        bytes_(AxiSignals(cfg_.data_bits).data_bytes()),
        rdata_(bytes_, cfg_.idle_rdata),
        prev_(cfg_.data_bits) {
    if (cfg_.addr_bits < 1 || cfg_.addr_bits > 64) {
      throw std::invalid_argument("AXI address width must be 1..64 bits");
    }
    if (cfg_.max_outstanding_reads == 0 || cfg_.max_outstanding_writes == 0) {
      throw std::invalid_argument("AXI outstanding limits must be at least 1");
    }
    addr_mask_ = cfg_.addr_bits >= 64 ? ~0ULL : (1ULL << cfg_.addr_bits) - 1;
    while ((1ULL << bus_log2_) < bytes_) ++bus_log2_;
    if (cfg_.read_latency == 0) cfg_.read_latency = 1;
    if (cfg_.write_latency == 0) cfg_.write_latency = 1;
  }

  const AxiMemConfig& config() const { return cfg_; }
  std::size_t data_bytes() const { return bytes_; }
  AxiSignals make_signals() const { return AxiSignals(cfg_.data_bits); }

  // ---- Backdoor memory access (no region checks, no cycles) ----
  SparseMemory& memory() { return mem_; }
  const SparseMemory& memory() const { return mem_; }
  void write_bytes(std::uint64_t addr, std::span<const std::uint8_t> data) {
    mem_.write_bytes(addr, data);
  }
  std::vector<std::uint8_t> read_bytes(std::uint64_t addr, std::size_t n) const {
    return mem_.read_bytes(addr, n);
  }

  // ---- Regions. Until the first allow_read (allow_write) call every read (write) is allowed;
  // after it, only bytes inside the union of the allowed ranges are. ----
  void allow_read(std::uint64_t base, std::uint64_t size) { read_ok_.push_back({base, size}); }
  void allow_write(std::uint64_t base, std::uint64_t size) { write_ok_.push_back({base, size}); }
  void clear_regions() {
    read_ok_.clear();
    write_ok_.clear();
  }
  void add_read_error(AxiErrorRange r) { cfg_.read_errors.push_back(r); }
  void clear_read_errors() { cfg_.read_errors.clear(); }
  void clear_write_errors() { cfg_.write_errors.clear(); }
  void add_write_error(AxiErrorRange r) { cfg_.write_errors.push_back(r); }

  // ---- Hang (fault injection): while on, the memory stops answering: every READY is low and
  // no new R beat or B response is presented (one already presented stays until accepted, as
  // AXI requires). Accepted bursts keep their place and resume when it is turned off. ----
  void set_hang(bool on) {
    hang_ = on;
    if (!on) {
      hang_read_at_.reset();
      hang_reads_ = false;
    }
  }
  bool hung() const { return hang_; }
  // Hang from a read (a ring job's hang): once an AR burst touching byte `addr` is accepted, the
  // read side stops answering (ARREADY low, no new R beat) while writes go on, so the jobs
  // before it finish. Cleared by set_hang(false).
  void hang_from_read(std::uint64_t addr) { hang_read_at_ = addr; }

  // ---- Per cycle ----
  // Sets the slave outputs for this cycle. Calling it again in the same cycle repeats them.
  void drive(AxiSignals& s) {
    if (!driven_) {
      driven_ = true;
      if (hang_) {
        ar_ready_ = aw_ready_ = w_ready_ = false;
      } else {
        ar_ready_ = !hang_reads_ && reads_.size() < cfg_.max_outstanding_reads &&
                    !chance(cfg_.p_arready_low);
        aw_ready_ =
            outstanding_writes() < cfg_.max_outstanding_writes && !chance(cfg_.p_awready_low);
        w_ready_ = w_ahead_.size() < cfg_.max_w_ahead && !chance(cfg_.p_wready_low);
      }
      if (!hang_ && !hang_reads_ && !r_valid_ && !reads_.empty() &&
          cycle_ >= reads_.front().first_cycle && !chance(cfg_.p_r_idle)) {
        const ReadBurst& rb = reads_.front();
        r_valid_ = true;
        const std::uint64_t a = beat_addr(rb.addr, rb.size, rb.beat);
        mem_.read_into((a & ~static_cast<std::uint64_t>(bytes_ - 1)) & addr_mask_, rdata_);
      }
      if (!hang_ && !b_valid_ && !bresps_.empty() && cycle_ >= bresps_.front().cycle) {
        b_valid_ = true;
      }
      if (!r_valid_) std::fill(rdata_.begin(), rdata_.end(), cfg_.idle_rdata);
    }
    check_sizes(s, "drive");
    s.awready = aw_ready_;
    s.wready = w_ready_;
    s.arready = ar_ready_;
    s.bvalid = b_valid_;
    s.bid = b_valid_ ? bresps_.front().id : 0;
    s.bresp = b_valid_ ? static_cast<std::uint8_t>(bresps_.front().resp) : 0;
    s.rvalid = r_valid_;
    s.rid = r_valid_ ? reads_.front().id : 0;
    s.rresp = r_valid_ ? static_cast<std::uint8_t>(reads_.front().resp) : 0;
    s.rlast = r_valid_ && reads_.front().beat == reads_.front().len;
    std::copy(rdata_.begin(), rdata_.end(), s.rdata.begin());
  }

  // Observes the master's outputs for this cycle (the slave outputs are the ones drive() chose),
  // advances the state and ends the cycle.
  void sample(const AxiSignals& s) {
    if (!driven_) {
      AxiSignals tmp = make_signals();
      drive(tmp);
    }
    check_sizes(s, "sample");
    if (have_prev_) check_stable(s);

    // Responses first (they belong to bursts accepted in earlier cycles).
    if (r_valid_) {
      ++stats_.r_valid_cycles;
      if (s.rready) {
        r_stall_run_ = 0;
        retire_r_beat();
      } else {
        ++stats_.r_stall_cycles;
        if (++r_stall_run_ == cfg_.ready_timeout + 1) {
          violation(AxiCheck::ready_timeout, "RVALID waited more than " +
                                                 std::to_string(cfg_.ready_timeout) +
                                                 " cycles for RREADY");
        }
      }
    }
    if (b_valid_) {
      if (s.bready) {
        b_stall_run_ = 0;
        b_valid_ = false;
        bresps_.pop_front();
      } else {
        ++stats_.b_stall_cycles;
        if (++b_stall_run_ == cfg_.ready_timeout + 1) {
          violation(AxiCheck::ready_timeout, "BVALID waited more than " +
                                                 std::to_string(cfg_.ready_timeout) +
                                                 " cycles for BREADY");
        }
      }
    }

    if (s.arvalid && !ar_ready_) ++stats_.ar_wait_cycles;
    if (s.awvalid && !aw_ready_) ++stats_.aw_wait_cycles;
    if (s.wvalid && !w_ready_) ++stats_.w_wait_cycles;
    if (s.arvalid && ar_ready_) accept_ar(s);
    if (s.awvalid && aw_ready_) accept_aw(s);
    if (s.wvalid && w_ready_) {
      w_ahead_.push_back(WBeat{s.wdata, s.wstrb, s.wlast});
    }
    match_w();

    stats_.max_outstanding_reads =
        std::max(stats_.max_outstanding_reads, static_cast<unsigned>(reads_.size()));
    stats_.max_outstanding_writes =
        std::max(stats_.max_outstanding_writes, static_cast<unsigned>(outstanding_writes()));

    save_prev(s);
    ++cycle_;
    stats_.cycles = cycle_;
    driven_ = false;
  }

  // Records every transaction still in flight as a violation (call at the end of a test).
  void finish() {
    if (!reads_.empty()) {
      violation(AxiCheck::incomplete, std::to_string(reads_.size()) +
                                          " read burst(s) not fully returned (R beats pending)");
    }
    if (!writes_.empty()) {
      violation(AxiCheck::incomplete,
                std::to_string(writes_.size()) + " write burst(s) still waiting for W data");
    }
    if (!w_ahead_.empty()) {
      violation(AxiCheck::incomplete,
                std::to_string(w_ahead_.size()) + " W beat(s) without a matching AW");
    }
    if (!bresps_.empty()) {
      violation(AxiCheck::incomplete,
                std::to_string(bresps_.size()) + " write response(s) not accepted on B");
    }
  }

  // Drops every transaction in flight and the channel history (memory, regions, statistics and
  // violations are kept), e.g. around a reset of the master.
  void reset() {
    reads_.clear();
    writes_.clear();
    w_ahead_.clear();
    bresps_.clear();
    r_valid_ = b_valid_ = false;
    ar_ready_ = aw_ready_ = w_ready_ = false;
    driven_ = have_prev_ = false;
    r_stall_run_ = b_stall_run_ = 0;
    std::fill(rdata_.begin(), rdata_.end(), cfg_.idle_rdata);
  }

  // ---- State, results ----
  std::uint64_t cycle() const { return cycle_; }
  std::size_t outstanding_reads() const { return reads_.size(); }
  std::size_t outstanding_writes() const { return writes_.size() + bresps_.size(); }
  bool idle() const {
    return reads_.empty() && writes_.empty() && w_ahead_.empty() && bresps_.empty();
  }
  const std::vector<std::string>& violations() const { return messages_; }
  std::size_t violation_count() const { return total_violations_; }
  std::size_t violation_count(AxiCheck kind) const {
    return counts_[static_cast<std::size_t>(kind)];
  }
  void clear_violations() {
    messages_.clear();
    counts_.fill(0);
    total_violations_ = 0;
  }
  const AxiMemStats& stats() const { return stats_; }
  void clear_stats() { stats_ = AxiMemStats{}; }

  // Lower-case digits, unlike normcore::hex (util/hex.hpp): the memory model's violation texts
  // have always used them, and tests/sim/test_axi_mem.cpp matches them ("AR burst at 0x1ff8").
  static std::string hex(std::uint64_t v) {
    char buf[20];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
    return "0x" + std::string(buf, r.ptr);
  }

 private:
  struct ReadBurst {
    std::uint32_t id;
    std::uint64_t addr;
    unsigned len;   // beats - 1
    unsigned size;  // log2 bytes per beat (clamped to the bus)
    std::uint64_t first_cycle;
    AxiResp resp;
    unsigned beat = 0;
  };
  struct WriteBurst {
    std::uint32_t id;
    std::uint64_t addr;
    unsigned len;
    unsigned size;
    AxiResp resp;
    unsigned beat = 0;
    bool wlast_reported = false, wstrb_reported = false, region_reported = false;
  };
  struct WBeat {
    std::vector<std::uint8_t> data;
    std::uint64_t strb;
    bool last;
  };
  struct BResp {
    std::uint32_t id;
    AxiResp resp;
    std::uint64_t cycle;
  };
  struct Channel {  // AR or AW payload
    std::uint32_t id;
    std::uint64_t addr;
    std::uint8_t len, size, burst;
    bool lock;
    std::uint8_t cache, prot;
    bool operator==(const Channel&) const = default;
  };
  static Channel ar_of(const AxiSignals& s) {
    return {s.arid, s.araddr, s.arlen, s.arsize, s.arburst, s.arlock, s.arcache, s.arprot};
  }
  static Channel aw_of(const AxiSignals& s) {
    return {s.awid, s.awaddr, s.awlen, s.awsize, s.awburst, s.awlock, s.awcache, s.awprot};
  }

  bool chance(double p) { return p > 0.0 && uni_(rng_) < p; }

  void check_sizes(const AxiSignals& s, const char* where) const {
    if (s.wdata.size() != bytes_ || s.rdata.size() != bytes_) {
      throw std::invalid_argument(std::string("AxiMemory::") + where +
                                  ": AxiSignals data vectors must have " + std::to_string(bytes_) +
                                  " bytes");
    }
  }

  void violation(AxiCheck kind, const std::string& text) {
    ++counts_[static_cast<std::size_t>(kind)];
    ++total_violations_;
    if (messages_.size() < cfg_.max_messages) {
      messages_.push_back("cycle " + std::to_string(cycle_) + ": " + text);
    }
  }

  // Address of beat i of an INCR burst (the first beat may be unaligned).
  static std::uint64_t beat_addr(std::uint64_t addr, unsigned size, unsigned i) {
    if (i == 0) return addr;
    const std::uint64_t n = 1ULL << size;
    return (addr & ~(n - 1)) + static_cast<std::uint64_t>(i) * n;
  }

  // Checks burst type, size and the 4 KiB rule; returns the effective size and the last byte.
  std::pair<unsigned, std::uint64_t> check_burst(const char* ch, const Channel& c) {
    const std::string where = std::string(ch) + " burst at " + hex(c.addr) + " (len " +
                              std::to_string(c.len) + ", size " + std::to_string(c.size) + ")";
    if (c.burst != static_cast<std::uint8_t>(AxiBurst::incr)) {
      violation(AxiCheck::burst_type,
                where + ": " + ch + "BURST " + std::to_string(c.burst) + " is not INCR (1)");
    }
    unsigned size = c.size & 7U;
    if (size != bus_log2_) {
      violation(AxiCheck::burst_size, where + ": " + ch + "SIZE " + std::to_string(size) +
                                          " != log2(BUS/8) = " + std::to_string(bus_log2_));
      size = std::min(size, bus_log2_);
    }
    const std::uint64_t n = 1ULL << size;
    const std::uint64_t last =
        (c.addr & ~(n - 1)) + (static_cast<std::uint64_t>(c.len) + 1) * n - 1;
    if ((c.addr >> 12) != (last >> 12)) {
      violation(AxiCheck::boundary_4k,
                where + ": crosses a 4 KiB boundary (last byte " + hex(last) + ")");
    }
    return {size, last};
  }

  // Whether some byte of [lo, hi] is outside the union of `ok` (the first one goes to `first`).
  // An empty list allows everything.
  static bool uncovered(const std::vector<AxiRange>& ok, std::uint64_t lo, std::uint64_t hi,
                        std::uint64_t& first) {
    if (ok.empty()) return false;
    std::uint64_t cur = lo;
    for (std::size_t guard = 0; guard <= ok.size(); ++guard) {
      const AxiRange* r = nullptr;
      for (const auto& x : ok) {
        if (x.contains(cur)) {
          r = &x;
          break;
        }
      }
      if (r == nullptr) {
        first = cur;
        return true;
      }
      const std::uint64_t last = r->base + (r->size - 1);  // may wrap only at the very top
      if (last >= hi || last < r->base) return false;
      cur = last + 1;
    }
    first = cur;
    return true;
  }
  static bool allowed(const std::vector<AxiRange>& ok, std::uint64_t a) {
    if (ok.empty()) return true;
    return std::any_of(ok.begin(), ok.end(), [a](const AxiRange& r) { return r.contains(a); });
  }
  static AxiResp error_for(const std::vector<AxiErrorRange>& errs, std::uint64_t lo,
                           std::uint64_t hi) {
    for (const auto& e : errs) {
      if (AxiRange{e.base, e.size}.overlaps(lo, hi)) return e.resp;
    }
    return AxiResp::okay;
  }

  void accept_ar(const AxiSignals& s) {
    Channel c = ar_of(s);
    c.addr &= addr_mask_;
    const auto [size, last] = check_burst("AR", c);
    std::uint64_t first = 0;
    if (uncovered(read_ok_, c.addr, last, first)) {
      violation(AxiCheck::read_region, "read outside the allowed regions: AR burst [" +
                                           hex(c.addr) + ", " + hex(last) + "], first byte " +
                                           hex(first));
    }
    const AxiResp resp = error_for(cfg_.read_errors, c.addr, last);
    if (resp != AxiResp::okay) ++stats_.read_error_bursts;
    if (hang_read_at_ && *hang_read_at_ >= c.addr && *hang_read_at_ <= last) hang_reads_ = true;
    reads_.push_back(ReadBurst{c.id, c.addr, c.len, size, cycle_ + cfg_.read_latency, resp});
    ++stats_.read_bursts;
  }

  void retire_r_beat() {
    ReadBurst& rb = reads_.front();
    const std::uint64_t a = beat_addr(rb.addr, rb.size, rb.beat);
    const std::uint64_t n = 1ULL << rb.size;
    ++stats_.read_beats;
    stats_.read_bytes += n - (a & (n - 1));
    r_valid_ = false;
    if (rb.beat++ == rb.len) reads_.pop_front();
  }

  void accept_aw(const AxiSignals& s) {
    Channel c = aw_of(s);
    c.addr &= addr_mask_;
    const auto [size, last] = check_burst("AW", c);
    const AxiResp resp = error_for(cfg_.write_errors, c.addr, last);
    if (resp != AxiResp::okay) ++stats_.write_error_bursts;
    writes_.push_back(WriteBurst{c.id, c.addr, c.len, size, resp});
    ++stats_.write_bursts;
  }

  // Pairs buffered W beats with accepted AW bursts, in order.
  void match_w() {
    while (!w_ahead_.empty() && !writes_.empty()) {
      WriteBurst& wb = writes_.front();
      const WBeat& w = w_ahead_.front();
      const auto where = [&wb] {
        return "AW burst at " + hex(wb.addr) + " (len " + std::to_string(wb.len) + ")";
      };
      const bool final_beat = wb.beat == wb.len;
      if (w.last != final_beat && !wb.wlast_reported) {
        wb.wlast_reported = true;
        violation(
            AxiCheck::wlast,
            where() + ": " +
                (w.last ? "WLAST early on beat " + std::to_string(wb.beat + 1) + " of " +
                              std::to_string(wb.len + 1)
                        : "WLAST missing on the last beat (" + std::to_string(wb.len + 1) + ")"));
      }
      const std::uint64_t a = beat_addr(wb.addr, wb.size, wb.beat);
      const std::uint64_t n = 1ULL << wb.size;
      const std::uint64_t lane_lo = a % bytes_;
      const std::uint64_t lane_hi = (a & ~(n - 1)) % bytes_ + n - 1;
      const std::uint64_t word = a & ~static_cast<std::uint64_t>(bytes_ - 1);
      for (std::size_t lane = 0; lane < bytes_; ++lane) {
        if (((w.strb >> lane) & 1U) == 0) continue;
        if (lane < lane_lo || lane > lane_hi) {
          if (!wb.wstrb_reported) {
            wb.wstrb_reported = true;
            violation(AxiCheck::wstrb,
                      where() + ": WSTRB " + hex(w.strb) + " on beat " + std::to_string(wb.beat) +
                          " sets lane " + std::to_string(lane) + " outside lanes " +
                          std::to_string(lane_lo) + ".." + std::to_string(lane_hi));
          }
          continue;
        }
        const std::uint64_t byte_addr = (word + lane) & addr_mask_;
        ++stats_.write_bytes;
        if (!allowed(write_ok_, byte_addr)) {
          if (!wb.region_reported) {
            wb.region_reported = true;
            violation(AxiCheck::write_region, "write outside the allowed regions: " + where() +
                                                  ", beat " + std::to_string(wb.beat) + ", byte " +
                                                  hex(byte_addr));
          }
          continue;  // not stored
        }
        if (wb.resp == AxiResp::okay) mem_.write_byte(byte_addr, w.data[lane]);
      }
      ++stats_.write_beats;
      if (w.strb == 0) ++stats_.null_write_beats;
      w_ahead_.pop_front();
      if (wb.beat++ == wb.len) {
        bresps_.push_back(BResp{wb.id, wb.resp, cycle_ + cfg_.write_latency});
        writes_.pop_front();
      }
    }
  }

  void check_stable(const AxiSignals& s) {
    if (prev_.arvalid && !prev_arready_) {
      if (!s.arvalid) {
        violation(AxiCheck::valid_dropped, "ARVALID dropped before ARREADY");
      } else if (!(ar_of(s) == ar_of(prev_))) {
        violation(AxiCheck::payload_changed, "AR payload changed while ARVALID && !ARREADY (" +
                                                 hex(prev_.araddr) + " -> " + hex(s.araddr) + ")");
      }
    }
    if (prev_.awvalid && !prev_awready_) {
      if (!s.awvalid) {
        violation(AxiCheck::valid_dropped, "AWVALID dropped before AWREADY");
      } else if (!(aw_of(s) == aw_of(prev_))) {
        violation(AxiCheck::payload_changed, "AW payload changed while AWVALID && !AWREADY (" +
                                                 hex(prev_.awaddr) + " -> " + hex(s.awaddr) + ")");
      }
    }
    if (prev_.wvalid && !prev_wready_) {
      if (!s.wvalid) {
        violation(AxiCheck::valid_dropped, "WVALID dropped before WREADY");
      } else if (s.wdata != prev_.wdata || s.wstrb != prev_.wstrb || s.wlast != prev_.wlast) {
        violation(AxiCheck::payload_changed, "W payload changed while WVALID && !WREADY");
      }
    }
  }

  void save_prev(const AxiSignals& s) {
    prev_.arid = s.arid;
    prev_.araddr = s.araddr;
    prev_.arlen = s.arlen;
    prev_.arsize = s.arsize;
    prev_.arburst = s.arburst;
    prev_.arlock = s.arlock;
    prev_.arcache = s.arcache;
    prev_.arprot = s.arprot;
    prev_.arvalid = s.arvalid;
    prev_.awid = s.awid;
    prev_.awaddr = s.awaddr;
    prev_.awlen = s.awlen;
    prev_.awsize = s.awsize;
    prev_.awburst = s.awburst;
    prev_.awlock = s.awlock;
    prev_.awcache = s.awcache;
    prev_.awprot = s.awprot;
    prev_.awvalid = s.awvalid;
    prev_.wdata = s.wdata;
    prev_.wstrb = s.wstrb;
    prev_.wlast = s.wlast;
    prev_.wvalid = s.wvalid;
    prev_arready_ = ar_ready_;
    prev_awready_ = aw_ready_;
    prev_wready_ = w_ready_;
    have_prev_ = true;
  }

  AxiMemConfig cfg_;
  SparseMemory mem_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  std::size_t bytes_;
  unsigned bus_log2_ = 0;
  std::uint64_t addr_mask_ = ~0ULL;
  std::vector<AxiRange> read_ok_, write_ok_;

  std::uint64_t cycle_ = 0;
  bool driven_ = false;
  bool ar_ready_ = false, aw_ready_ = false, w_ready_ = false;
  bool r_valid_ = false, b_valid_ = false;
  std::vector<std::uint8_t> rdata_;
  std::deque<ReadBurst> reads_;    // accepted, R not complete; front is on R
  std::deque<WriteBurst> writes_;  // accepted AW, W data incomplete; front takes the next beat
  std::deque<WBeat> w_ahead_;      // W beats not yet paired with an AW
  std::deque<BResp> bresps_;       // complete writes, B not accepted; front is on B
  std::uint64_t r_stall_run_ = 0, b_stall_run_ = 0;

  AxiSignals prev_;
  bool prev_arready_ = false, prev_awready_ = false, prev_wready_ = false;
  bool have_prev_ = false;
  bool hang_ = false;
  std::optional<std::uint64_t> hang_read_at_;
  bool hang_reads_ = false;

  std::vector<std::string> messages_;
  std::array<std::size_t, static_cast<std::size_t>(AxiCheck::count_)> counts_{};
  std::size_t total_violations_ = 0;
  AxiMemStats stats_;
};

}  // namespace normcore::sim

// ---- Adapters to a Verilated top with m_axi_* ports (only where Verilator's headers are) ----
#if __has_include("verilated.h")
#include "verilated_bits.hpp"

namespace normcore::sim {
namespace axi_port {

// Storage bits of a Verilated port type.
template <typename P>
struct storage_bits {
  static constexpr int value = static_cast<int>(8 * sizeof(P));
};
template <std::size_t N>
struct storage_bits<VlWide<N>> {
  static constexpr int value = static_cast<int>(32 * N);
};

template <typename P>
std::uint64_t get_scalar(const P& port) {
  return get_bits(port, 0, std::min(64, storage_bits<P>::value));
}
template <typename P>
void set_scalar(P& port, std::uint64_t v) {
  set_bits(port, 0, std::min(64, storage_bits<P>::value), v);
}

template <typename P>
void check_data_width(const char* name, std::size_t bytes) {
  if (storage_bits<P>::value != static_cast<int>(8 * bytes)) {
    throw std::invalid_argument(std::string(name) + " port has " +
                                std::to_string(storage_bits<P>::value) +
                                " bits of storage, AxiSignals has " + std::to_string(8 * bytes));
  }
}
template <typename P>
void set_data(P& port, const std::vector<std::uint8_t>& bytes) {
  check_data_width<P>("m_axi_rdata", bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    set_bits(port, static_cast<int>(8 * i), 8, bytes[i]);
  }
}
template <typename P>
void get_data(const P& port, std::vector<std::uint8_t>& bytes) {
  check_data_width<P>("m_axi_wdata", bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(get_bits(port, static_cast<int>(8 * i), 8));
  }
}

}  // namespace axi_port

// Slave outputs of `s` onto the master's input ports. The ID ports are optional.
template <class Top>
void to_top(const AxiSignals& s, Top& top) {
  using namespace axi_port;
  set_scalar(top.m_axi_awready, s.awready);
  set_scalar(top.m_axi_wready, s.wready);
  if constexpr (requires { top.m_axi_bid; }) set_scalar(top.m_axi_bid, s.bid);
  set_scalar(top.m_axi_bresp, s.bresp);
  set_scalar(top.m_axi_bvalid, s.bvalid);
  set_scalar(top.m_axi_arready, s.arready);
  if constexpr (requires { top.m_axi_rid; }) set_scalar(top.m_axi_rid, s.rid);
  set_data(top.m_axi_rdata, s.rdata);
  set_scalar(top.m_axi_rresp, s.rresp);
  set_scalar(top.m_axi_rlast, s.rlast);
  set_scalar(top.m_axi_rvalid, s.rvalid);
}

// The master's output ports into `s` (slave outputs in `s` are left alone). The ID, lock, cache
// and prot ports are optional (absent: 0).
template <class Top>
void from_top(const Top& top, AxiSignals& s) {
  using namespace axi_port;
  if constexpr (requires { top.m_axi_awid; }) {
    s.awid = static_cast<std::uint32_t>(get_scalar(top.m_axi_awid));
  }
  s.awaddr = get_scalar(top.m_axi_awaddr);
  s.awlen = static_cast<std::uint8_t>(get_scalar(top.m_axi_awlen));
  s.awsize = static_cast<std::uint8_t>(get_scalar(top.m_axi_awsize) & 7U);
  s.awburst = static_cast<std::uint8_t>(get_scalar(top.m_axi_awburst) & 3U);
  if constexpr (requires { top.m_axi_awlock; }) s.awlock = (get_scalar(top.m_axi_awlock) & 1U) != 0;
  if constexpr (requires { top.m_axi_awcache; }) {
    s.awcache = static_cast<std::uint8_t>(get_scalar(top.m_axi_awcache) & 15U);
  }
  if constexpr (requires { top.m_axi_awprot; }) {
    s.awprot = static_cast<std::uint8_t>(get_scalar(top.m_axi_awprot) & 7U);
  }
  s.awvalid = (get_scalar(top.m_axi_awvalid) & 1U) != 0;
  get_data(top.m_axi_wdata, s.wdata);
  s.wstrb = get_scalar(top.m_axi_wstrb);
  if (s.wdata.size() < 64) s.wstrb &= (1ULL << s.wdata.size()) - 1;
  s.wlast = (get_scalar(top.m_axi_wlast) & 1U) != 0;
  s.wvalid = (get_scalar(top.m_axi_wvalid) & 1U) != 0;
  s.bready = (get_scalar(top.m_axi_bready) & 1U) != 0;
  if constexpr (requires { top.m_axi_arid; }) {
    s.arid = static_cast<std::uint32_t>(get_scalar(top.m_axi_arid));
  }
  s.araddr = get_scalar(top.m_axi_araddr);
  s.arlen = static_cast<std::uint8_t>(get_scalar(top.m_axi_arlen));
  s.arsize = static_cast<std::uint8_t>(get_scalar(top.m_axi_arsize) & 7U);
  s.arburst = static_cast<std::uint8_t>(get_scalar(top.m_axi_arburst) & 3U);
  if constexpr (requires { top.m_axi_arlock; }) s.arlock = (get_scalar(top.m_axi_arlock) & 1U) != 0;
  if constexpr (requires { top.m_axi_arcache; }) {
    s.arcache = static_cast<std::uint8_t>(get_scalar(top.m_axi_arcache) & 15U);
  }
  if constexpr (requires { top.m_axi_arprot; }) {
    s.arprot = static_cast<std::uint8_t>(get_scalar(top.m_axi_arprot) & 7U);
  }
  s.arvalid = (get_scalar(top.m_axi_arvalid) & 1U) != 0;
  s.rready = (get_scalar(top.m_axi_rready) & 1U) != 0;
}

}  // namespace normcore::sim
#endif
