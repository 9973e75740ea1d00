// The clock/reset core of every Verilator harness here (core_driver.hpp, accel_driver.hpp,
// test_regblock.cpp, the sim plugin): owns the VerilatedContext and the model, steps the clock
// clk_i and holds rst_ni (active low), optionally writes a trace (VCD, or FST when the model was
// verilated with --trace-fst: VM_TRACE_FST), and calls final() at the end. A model verilated with
// coverage (VM_COVERAGE: --coverage-line / --coverage-toggle) writes its counters at the end into
// $NC_COVERAGE_DIR (one file per harness: cov_<pid>_<n>.dat; scripts/coverage.py merges them).
// Bus models and monitors stay outside, hooked into tick():
//
//   VHarness<Vtop> h;                 // clk_i = 0, rst_ni = 0
//   h.reset(4);                       // 4 clocks in reset, then rst_ni = 1
//   h.tick([&] { drive inputs }, [&] { sample outputs settled at clk_i = 0 });
//
// A tick is: before(); clk_i = 0; eval(); settled(); clk_i = 1; eval() (the rising edge). With a
// trace, each of the two evaluations is dumped: tick k (counted from 0, reset included) at times
// k*P (clk_i low) and k*P + P/2 (the rising edge), P = TraceOptions::period in the model's time
// precision (Verilator's default 1 ps; P = 2 unless given), for the ticks from..to only.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "verilated.h"
#if VM_COVERAGE
#include <unistd.h>

#include "verilated_cov.h"
#endif
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#elif VM_TRACE
#include "verilated_vcd_c.h"
#endif

namespace normcore::sim {

#if VM_TRACE_FST
using TraceFile = VerilatedFstC;
inline constexpr const char* kTraceFormat = "fst";
#else
#if VM_TRACE
using TraceFile = VerilatedVcdC;
#endif
inline constexpr const char* kTraceFormat = "vcd";
#endif

// The trace's clock and window (see the file comment).
struct TraceOptions {
  std::uint64_t period = 2;       // time units (the model's precision) per clock, >= 2
  std::uint64_t from = 0;         // first tick dumped
  std::uint64_t to = UINT64_MAX;  // last tick dumped
};

template <class Top>
class VHarness {
 public:
  // `traced`: the model may be traced (open_trace()); Verilator needs to know before it is built.
  // `rand_seed` != 0: every register (and memory word) starts at a random value drawn from that
  // seed (a model verilated with --x-initial unique: randReset(2)) instead of 0. Verilator draws
  // them from the thread's context, which a new VerilatedContext becomes.
  explicit VHarness(bool traced = false, int rand_seed = 0)
      : ctx_(std::make_unique<VerilatedContext>()) {
    if (traced) ctx_->traceEverOn(true);
    if (rand_seed != 0) {
      ctx_->randReset(2);
      ctx_->randSeed(rand_seed);
    }
    top_ = std::make_unique<Top>(ctx_.get(), "TOP");
    top_->clk_i = 0;
    top_->rst_ni = 0;
  }
  ~VHarness() {
    close_trace();
    top_->final();
    write_coverage();
  }
  VHarness(const VHarness&) = delete;
  VHarness& operator=(const VHarness&) = delete;

  Top& top() { return *top_; }
  const Top& top() const { return *top_; }
  VerilatedContext& context() { return *ctx_; }
  // Rising edges so far (reset included).
  [[nodiscard]] std::uint64_t cycle() const { return cycle_; }

  // One clock; see the file comment.
  template <class Before, class Settled>
  void tick(Before&& before, Settled&& settled) {
    before();
    top_->clk_i = 0;
    top_->eval();
    settled();
    dump();
    top_->clk_i = 1;
    top_->eval();
    dump();
    ++cycle_;
  }
  void tick() {
    tick([] {}, [] {});
  }

  // `cycles` plain clocks with rst_ni low, then rst_ni high (and clk_i low, evaluated: the
  // model's outputs out of reset are visible before the next tick).
  void reset(int cycles) {
    top_->rst_ni = 0;
    for (int i = 0; i < cycles; ++i) tick();
    top_->rst_ni = 1;
    top_->clk_i = 0;
    top_->eval();
  }

#if VM_TRACE
  // Starts a trace of every signal (the harness must have been built with traced = true).
  void open_trace(const std::string& path, TraceOptions opt = {}) {
    topt_ = opt;
    if (topt_.period < 2) topt_.period = 2;
    vcd_ = std::make_unique<TraceFile>();
    top_->trace(vcd_.get(), 99);
    vcd_->open(path.c_str());
    if (!vcd_->isOpen()) {
      vcd_.reset();
      throw std::runtime_error("cannot write the trace file " + path);
    }
  }
#endif
  // Flushes and closes the trace (if any); a failing test calls it before its assertion fires.
  void close_trace() {
#if VM_TRACE
    if (vcd_) {
      vcd_->flush();
      vcd_->close();
      vcd_.reset();
    }
#endif
  }

 private:
  void write_coverage() {
#if VM_COVERAGE
    static std::atomic<unsigned> n{0};
    const char* dir = std::getenv("NC_COVERAGE_DIR");
    if (dir == nullptr || *dir == 0) return;
    const std::string path = std::string(dir) + "/cov_" + std::to_string(::getpid()) + "_" +
                             std::to_string(n++) + ".dat";
    ctx_->coveragep()->write(path.c_str());
#endif
  }
  void dump() {
#if VM_TRACE
    if (!vcd_) return;
    const bool high = top_->clk_i != 0;
    const std::uint64_t t = cycle_ * topt_.period + (high ? topt_.period / 2 : 0);
    ctx_->time(t);
    if (cycle_ >= topt_.from && cycle_ <= topt_.to) vcd_->dump(t);
#endif
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Top> top_;
#if VM_TRACE
  std::unique_ptr<TraceFile> vcd_;
  TraceOptions topt_;
#endif
  std::uint64_t cycle_ = 0;
};

}  // namespace normcore::sim
