// Verilator test of the skid buffer primitive (primitives.hpp, written by prims_gen as
// prim_skid, 16-bit payload). Random valid/ready on both sides against a reference queue: beats
// leave in order, each exactly once, at most two are held, a stalled output holds its beat,
// in_ready_o does not depend on out_ready_i in the same cycle (a flop), and with both sides
// always ready one beat passes every cycle.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>

#include "Vcore.h"
#include "vharness.hpp"

namespace normcore::sim {
namespace {

// The source and sink around the model and the reference queue, kept across phases.
class Bench {
 public:
  Bench() { h_.reset(2); }

  struct Counts {
    std::uint64_t sent = 0, received = 0;
  };
  // `cycles` clocks; the source offers a beat with probability pv (and holds it until taken),
  // the sink is ready with probability pr. Returns the handshakes of these cycles.
  Counts run(double pv, double pr, int cycles, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::bernoulli_distribution offer(pv), take(pr);
    Counts n;
    for (int c = 0; c < cycles && !::testing::Test::HasFatalFailure(); ++c) {
      const bool ready = take(rng);
      valid_ = valid_ || offer(rng);
      bool in_fire = false, out_fire = false;
      h_.tick([&] { drive(ready); }, [&] { check(ready, in_fire, out_fire); });
      if (out_fire) {
        held_.pop_front();
        ++n.received;
      }
      if (in_fire) {
        held_.push_back(next_++);
        valid_ = false;
        ++n.sent;
      }
      EXPECT_LE(held_.size(), 2U) << "cycle " << h_.cycle();
    }
    return n;
  }

 private:
  void drive(bool ready) {
    Vcore& t = h_.top();
    t.in_valid_i = valid_;
    t.in_data_i = next_;
    t.out_ready_i = ready;
  }
  // Outputs settled before the edge: what fires at it, and the rules.
  void check(bool ready, bool& in_fire, bool& out_fire) {
    Vcore& t = h_.top();
    const std::uint64_t c = h_.cycle();
    const bool in_ready = t.in_ready_o;
    t.out_ready_i = !ready;  // in_ready_o is a flop: out_ready_i must not reach it
    t.eval();
    ASSERT_EQ(static_cast<bool>(t.in_ready_o), in_ready) << "cycle " << c;
    t.out_ready_i = ready;
    t.eval();
    if (stalled_) {
      ASSERT_TRUE(t.out_valid_o) << "a stalled beat was dropped, cycle " << c;
      ASSERT_EQ(t.out_data_o, stalled_data_) << "a stalled beat changed, cycle " << c;
    }
    in_fire = valid_ && in_ready;
    out_fire = t.out_valid_o && ready;
    if (t.out_valid_o) {
      ASSERT_FALSE(held_.empty()) << "a beat out of nothing, cycle " << c;
      ASSERT_EQ(t.out_data_o, held_.front()) << "order or duplication, cycle " << c;
    }
    stalled_ = t.out_valid_o && !ready;
    stalled_data_ = static_cast<std::uint16_t>(t.out_data_o);
  }

  VHarness<Vcore> h_;
  std::deque<std::uint16_t> held_;  // accepted, not yet delivered, in order
  std::uint16_t next_ = 0;          // payload of the next beat (a sequence number)
  bool valid_ = false;
  bool stalled_ = false;  // the output was valid and not taken last cycle
  std::uint16_t stalled_data_ = 0;
};

TEST(SkidBuffer, RandomValidReadyKeepsOrderWithoutLossOrDuplication) {
  const double p[] = {0.1, 0.5, 0.9, 1.0};
  std::uint32_t seed = 1;
  Bench b;
  std::uint64_t sent = 0, received = 0;
  for (double pv : p) {
    for (double pr : p) {
      const Bench::Counts n = b.run(pv, pr, 4000, seed++);
      if (HasFatalFailure()) return;
      EXPECT_GT(n.received, 300U) << "pv " << pv << " pr " << pr;
      sent += n.sent;
      received += n.received;
    }
  }
  EXPECT_LE(sent - received, 2U);
}

TEST(SkidBuffer, OneBeatPerCycleWhenBothSidesAreReady) {
  Bench b;
  const Bench::Counts n = b.run(1.0, 1.0, 1000, 7);
  EXPECT_EQ(n.sent, 1000U);
  EXPECT_EQ(n.received, 999U);  // one cycle of latency
}

// A stall fills both entries (the input sees in_ready_o low after two beats); once the sink is
// ready again a beat leaves every cycle, with no bubble.
TEST(SkidBuffer, FullThroughputAfterAStall) {
  Bench b;
  Bench::Counts n = b.run(1.0, 0.0, 10, 3);
  EXPECT_EQ(n.sent, 2U);
  EXPECT_EQ(n.received, 0U);
  n = b.run(1.0, 1.0, 100, 4);
  EXPECT_EQ(n.received, 100U);
  EXPECT_EQ(n.sent, 99U);  // the skid entry leaves first: the input waits one cycle
}

}  // namespace
}  // namespace normcore::sim
