// The accelerator and register-block builders use the typed IR only: no untyped (raw) text in
// any expression, the job FSM's states are named localparams, and flops only take q <= d.
#include <gtest/gtest.h>

#include <string>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/ir.hpp"
#include "normcore/gen/regs.hpp"

namespace normcore::gen {
namespace {

int raw_nodes(const Expr& e) {
  if (!e.valid()) return 0;
  int n = e.op() == Op::raw ? 1 : 0;
  for (const auto& k : e.node().kids) n += raw_nodes(k);
  return n;
}

int raw_nodes(const Block& b) {
  int n = 0;
  for (const auto& s : b) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      n += raw_nodes(a->lhs) + raw_nodes(a->rhs);
    } else if (const auto* i = std::get_if<If>(&s.node)) {
      n += raw_nodes(i->cond) + raw_nodes(i->then_body) + raw_nodes(i->else_body);
    } else if (const auto* c = std::get_if<Case>(&s.node)) {
      n += raw_nodes(c->subject);
      for (const auto& arm : c->arms) {
        for (const auto& l : arm.labels) n += raw_nodes(l);
        n += raw_nodes(arm.body);
      }
    }
  }
  return n;
}

int raw_nodes(const Module& m) {
  int n = 0;
  for (const auto& it : m.items) {
    if (const auto* a = std::get_if<ContAssign>(&it)) {
      n += raw_nodes(a->lhs) + raw_nodes(a->rhs);
    } else if (const auto* al = std::get_if<Always>(&it)) {
      n += raw_nodes(al->body);
    } else if (const auto* in = std::get_if<Instance>(&it)) {
      for (const auto& [port, e] : in->connections) n += raw_nodes(e);
    }
  }
  return n;
}

bool is_core_module(const std::string& name, const std::string& n) {
  for (const char* s : {"_bank", "_step", "_chan", "_ptable", "_lane", "_fifo", "_core"}) {
    if (name == n + s) return true;
  }
  return false;
}

AccelConfig small_config() {
  AccelConfig c;
  c.core.name = "t";
  c.core.lanes = 3;
  c.core.max_channels = 5;
  c.core.inner_bits = 4;
  c.bus_bits = 32;
  return c;
}

TEST(AccelIr, NoUntypedText) {
  for (const AccelConfig& c : {AccelConfig{}, small_config()}) {
    for (const auto& m : build_accel(c)) {
      if (is_core_module(m.name, c.core.name)) continue;  // ported on the core's own branch
      EXPECT_EQ(raw_nodes(m), 0) << m.name;
    }
  }
}

int checks(const Block& b, Check::Kind k) {
  int n = 0;
  for (const auto& s : b) {
    if (const auto* c = std::get_if<Check>(&s.node)) n += c->kind == k ? 1 : 0;
    if (const auto* i = std::get_if<If>(&s.node))
      n += checks(i->then_body, k) + checks(i->else_body, k);
  }
  return n;
}

// Issue 20: every module with a stream or bus interface carries its protocol properties.
TEST(AccelIr, StreamAndBusModulesCarryProperties) {
  const AccelConfig c = small_config();
  int seen = 0;
  for (const auto& m : build_accel(c)) {
    int asserts = 0;
    for (const auto& it : m.items) {
      if (const auto* al = std::get_if<Always>(&it))
        asserts += checks(al->body, Check::Kind::assert_);
    }
    for (const char* s : {"_skid", "_fifo", "_rfifo", "_wfifo", "_wdma_lenq", "_wdma_adrq", "_core",
                          "_rdma", "_wdma", "_regs", "_igear", "_pgear", "_ogear"}) {
      if (m.name == c.core.name + s) {
        EXPECT_GE(asserts, 2) << m.name;
        ++seen;
      }
    }
    if (m.name == c.core.name + "_lane" || m.name == c.core.name + "_ctrl") {
      EXPECT_EQ(asserts, 0);
    }
  }
  EXPECT_EQ(seen, 13);
}

TEST(AccelIr, NamedStatesAndFlops) {
  const auto files = render_accel(AccelConfig{});
  std::string ctrl;
  for (const auto& f : files) {
    if (f.name == "normcore_ctrl.v") ctrl = f.content;
  }
  ASSERT_FALSE(ctrl.empty());
  EXPECT_NE(ctrl.find("localparam [3:0] ST_IDLE = 4'd0,"), std::string::npos);
  EXPECT_NE(ctrl.find("ST_FLUSH = 4'd10;"), std::string::npos);
  EXPECT_NE(ctrl.find("      ST_RUN: begin\n"), std::string::npos);
  EXPECT_NE(ctrl.find("st_q <= st_d;"), std::string::npos);
  EXPECT_EQ(ctrl.find("4'd8:"), std::string::npos);  // no bare state numbers as labels
  EXPECT_EQ(ctrl.find("st_q <= ST_"), ctrl.find("st_q <= ST_IDLE;"));  // only the reset
}

}  // namespace
}  // namespace normcore::gen
