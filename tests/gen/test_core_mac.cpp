// The lane's multiply-add stage per target (gen/src/core_mac.cpp) and the IR's `ifdef blocks.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "normcore/gen/core.hpp"

namespace normcore::gen {
namespace {

std::string lane_text(const CoreConfig& c) {
  for (const auto& f : render_core(c)) {
    if (f.name == c.name + "_lane.v") return f.content;
  }
  return {};
}

CoreConfig ecp5(int pipeline) {
  CoreConfig c;
  c.target = "ecp5";
  c.pipeline = pipeline;
  c.arith.xw = 8;
  c.arith.sw = 16;
  c.arith.bw = 32;
  return c;
}

TEST(CoreMac, Ecp5InstantiatesMult18WithItsRegistersUnderSynthesis) {
  const std::string v = lane_text(ecp5(11));
  const auto ifdef = v.find("`ifdef SYNTHESIS\n"), els = v.find("`else\n"),
             endif = v.find("`endif\n");
  ASSERT_NE(ifdef, std::string::npos);
  ASSERT_NE(els, std::string::npos);
  ASSERT_NE(endif, std::string::npos);
  const auto inst = v.find("  MULT18X18D #(");
  ASSERT_NE(inst, std::string::npos);
  EXPECT_TRUE(ifdef < inst && inst < els && els < endif);
  for (const char* p :
       {".REG_INPUTA_CLK(\"CLK0\")", ".REG_INPUTB_CLK(\"CLK0\")", ".REG_OUTPUT_CLK(\"CLK0\")"}) {
    EXPECT_NE(v.find(p), std::string::npos) << p;
  }
  EXPECT_EQ(v.find("REG_PIPELINE_CLK"), std::string::npos);
  // The simulation branch: the same two registers in the fabric.
  EXPECT_NE(v.find("prod_q <= x_q * s_q;", els), std::string::npos);
}

TEST(CoreMac, OtherTargetsDepthsAndWidthsKeepTheInferredMultiplier) {
  for (const CoreConfig& c : {ecp5(8), ecp5(10),
                              [] {
                                auto e = ecp5(11);
                                e.target = "generic";
                                return e;
                              }(),
                              [] {
                                auto e = ecp5(11);
                                e.arith.sw = 19;  // B wider than MULT18X18D's 18 bits
                                return e;
                              }(),
                              [] {
                                auto e = ecp5(11);
                                e.arith.xw = 18;  // unsigned 18-bit x: 19 signed bits
                                e.arith.x_signed = false;
                                return e;
                              }()}) {
    ASSERT_EQ(c.check(), "");
    const std::string v = lane_text(c);
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v.find("MULT18X18D"), std::string::npos) << c.target << " " << c.pipeline;
    EXPECT_EQ(v.find("`ifdef"), std::string::npos);
  }
}

TEST(Ir, ConditionalBlocksRenderAndMustBalance) {
  Module m;
  m.name = "m";
  m.in("a_i", 1);
  m.out("y_o", 1);
  m.ifdef("SYNTHESIS");
  m.assign(m.ref("y_o"), m.ref("a_i"));
  m.else_();
  m.assign(m.ref("y_o"), ~m.ref("a_i"));
  m.endif();
  m.validate();
  const std::string v = emit_module(m, {});
  EXPECT_NE(v.find("`ifdef SYNTHESIS\n  assign y_o = a_i;\n`else\n  assign y_o = ~a_i;\n`endif\n"),
            std::string::npos)
      << v;
  Module open = m;
  open.ifdef("X");
  EXPECT_THROW(open.validate(), std::logic_error);
  Module stray;
  stray.name = "s";
  stray.endif();
  EXPECT_THROW(stray.validate(), std::logic_error);
}

}  // namespace
}  // namespace normcore::gen
