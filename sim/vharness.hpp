// The clock/reset core of every Verilator harness here (core_driver.hpp, accel_driver.hpp,
// test_regblock.cpp, the sim plugin): owns the VerilatedContext and the model, steps the clock
// clk_i and holds rst_ni (active low), optionally writes a VCD trace, and calls final() at the end.
// Bus models and monitors stay outside, hooked into tick():
//
//   VHarness<Vtop> h;                 // clk_i = 0, rst_ni = 0
//   h.reset(4);                       // 4 clocks in reset, then rst_ni = 1
//   h.tick([&] { drive inputs }, [&] { sample outputs settled at clk_i = 0 });
//
// A tick is: before(); clk_i = 0; eval(); settled(); clk_i = 1; eval() (the rising edge). With a
// trace, each of the two evaluations is dumped one time unit apart.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif

namespace normcore::sim {

template <class Top>
class VHarness {
 public:
  // `traced`: the model may be traced (open_trace()); Verilator needs to know before it is built.
  explicit VHarness(bool traced = false) : ctx_(std::make_unique<VerilatedContext>()) {
    if (traced) ctx_->traceEverOn(true);
    top_ = std::make_unique<Top>(ctx_.get(), "TOP");
    top_->clk_i = 0;
    top_->rst_ni = 0;
  }
  ~VHarness() {
    close_trace();
    top_->final();
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
  // Starts a VCD of every signal (the harness must have been built with traced = true).
  void open_trace(const std::string& path) {
    vcd_ = std::make_unique<VerilatedVcdC>();
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
  void dump() {
#if VM_TRACE
    if (!vcd_) return;
    vcd_->dump(static_cast<std::uint64_t>(ctx_->time()));
    ctx_->timeInc(1);
#endif
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Top> top_;
#if VM_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
#endif
  std::uint64_t cycle_ = 0;
};

}  // namespace normcore::sim
