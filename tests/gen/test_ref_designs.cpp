// Reference designs for the PPA harness (gen/src/ref_designs.cpp): structure, widths, determinism.
// Lint (verilator -Wall) and Yosys checks of the emitted RTL: tests/ref_lint.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "normcore/gen/ref_designs.hpp"

namespace normcore::gen {
namespace {

CoreConfig cfg_l(int lanes) {
  CoreConfig c;
  c.name = "r";
  c.lanes = lanes;
  c.max_channels = 512;
  return c;
}

int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

const GeneratedFile& file(const std::vector<GeneratedFile>& fs, const std::string& name) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const auto& f) { return f.name == name; });
  if (it == fs.end()) throw std::runtime_error("no file " + name);
  return *it;
}

TEST(RefDesigns, BareMacHasOneMultiplierPerLaneAndCoreWidths) {
  const auto mods = build_ref(cfg_l(4), RefDesign::bare_mac);
  ASSERT_EQ(mods.size(), 2U);
  EXPECT_EQ(mods.back().name, "r_bare_mac");
  EXPECT_EQ(ref_top_name(cfg_l(4), RefDesign::bare_mac), "r_bare_mac");
  const auto fs = render_ref(cfg_l(4), RefDesign::bare_mac);
  const std::string lane = file(fs, "r_mac.v").content;
  EXPECT_EQ(count_of(lane, "_e * "), 1);
  EXPECT_NE(lane.find("input  wire [15:0] b_i"), std::string::npos);
  EXPECT_NE(lane.find("output wire [32:0] p_o"), std::string::npos);  // acc bits of the core
  const std::string top = file(fs, "r_bare_mac.v").content;
  EXPECT_EQ(count_of(top, "r_mac u_mac_"), 4);
}

TEST(RefDesigns, DecomposedHasTwoMultipliersAndSeparateStages) {
  const auto fs = render_ref(cfg_l(4), RefDesign::decomposed);
  const std::string lane = file(fs, "r_dlane.v").content;
  EXPECT_EQ(count_of(lane, "_e * "), 2);
  EXPECT_NE(lane.find("d_d = x_e - mean_e;"), std::string::npos);
  EXPECT_NE(lane.find("d_q <= d_d;"), std::string::npos);
  for (const char* r : {"d_q", "p_q", "t_q", "g_q", "a_q", "y_q"}) {
    EXPECT_NE(lane.find(std::string(r) + " <="), std::string::npos) << r;
  }
  const std::string top = file(fs, "r_decomposed.v").content;
  EXPECT_EQ(count_of(top, "r_dlane u_dlane_"), 4);
  EXPECT_EQ(count_of(top, "r_dram u_dram_"), 4);
  const auto w = decomposed_widths(cfg_l(4));
  EXPECT_EQ(w.mw, 15);
  EXPECT_EQ(w.f, 7);
  EXPECT_EQ(w.dw, 16);  // fits one 16x16 DSP
  EXPECT_EQ(w.aw, 33);
  EXPECT_EQ(w.param_bits(32), 15 + 16 + 16 + 32);
  const auto man = nlohmann::json::parse(file(fs, "manifest.json").content);
  EXPECT_EQ(man["kind"], "reference");
  EXPECT_EQ(man["design"], "decomposed");
  EXPECT_EQ(man["top"], "r_decomposed");
  EXPECT_EQ(man["multipliers_per_lane"], 2);
  EXPECT_EQ(file(fs, "filelist.f").content, "r_dram.v\nr_dlane.v\nr_decomposed.v\n");
}

// decomposed-core: the core itself with the decomposed chain in the lanes, so whole-design
// ratios compare like with like.
TEST(RefDesigns, DecomposedCoreIsTheCoreWithTheChainInItsLanes) {
  for (const std::string target : {"generic", "ice40"}) {
    auto c = cfg_l(4);
    c.target = target;
    c.pipeline = CoreConfig::default_pipeline(target);
    const auto ref = build_ref(c, RefDesign::decomposed_core);
    const auto core = build_core(c);
    ASSERT_EQ(ref.size(), core.size());
    EXPECT_EQ(ref.back().name, "r_core");
    EXPECT_EQ(ref_top_name(c, RefDesign::decomposed_core), "r_core");
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(ref[i].name, core[i].name);
      const std::string rt = emit_module(ref[i], {}), ct = emit_module(core[i], {});
      // The position tracking and the set-up divider are the core's, unchanged.
      if (ref[i].name == "r_chan" || ref[i].name == "r_step") {
        EXPECT_EQ(rt, ct) << ref[i].name;
      } else {
        EXPECT_NE(rt, ct) << ref[i].name;
      }
    }
    const auto fs = render_ref(c, RefDesign::decomposed_core);
    const std::string lane = file(fs, "r_lane.v").content;
    EXPECT_EQ(count_of(lane, "_e * "), 2) << target;
    EXPECT_NE(lane.find("d_d = x_e - mean_e;"), std::string::npos);
    EXPECT_NE(lane.find("d_q <= d_d;"), std::string::npos);
    EXPECT_NE(lane.find("assign acc_d = {prod[31], prod} + {beta3_q[31], beta3_q};"),
              std::string::npos);
    // The core's output stage: shifter, sticky, clamp compares.
    EXPECT_NE(lane.find("ext >>> "), std::string::npos);
    EXPECT_NE(lane.find("lox_i"), std::string::npos);
    const std::string top = file(fs, "r_core.v").content;
    for (const char* p : {"prm_mean_i", "prm_istd_i", "prm_gamma_i", "prm_beta_i", "cfg_k1_i"}) {
      EXPECT_NE(top.find(p), std::string::npos) << p;
    }
    EXPECT_EQ(top.find("prm_scale_i"), std::string::npos);
    EXPECT_EQ(count_of(top, "r_lane u_lane_"), 4);
    const auto man = nlohmann::json::parse(file(fs, "manifest.json").content);
    EXPECT_EQ(man["design"], "decomposed-core");
    EXPECT_EQ(man["multipliers_per_lane"], 2);
    EXPECT_EQ(man["latency"], c.latency() + kDecomposedExtraStages);
    EXPECT_EQ(man["config"]["pipeline"], c.pipeline);
    // The table word holds the four parameters.
    const std::string bank = file(fs, "r_bank.v").content;
    EXPECT_NE(bank.find("{beta, gamma, istd, mean}"), std::string::npos);
    EXPECT_NE(bank.find("input  wire [78:0] wdata_i"), std::string::npos) << bank;
  }
}

TEST(RefDesigns, OneLaneHasNoLaneSelect) {
  const auto fs = render_ref(cfg_l(1), RefDesign::decomposed);
  EXPECT_EQ(file(fs, "r_decomposed.v").content.find("prm_lane_i,\n"), std::string::npos);
  const auto fs3 = render_ref(cfg_l(3), RefDesign::decomposed);
  EXPECT_NE(file(fs3, "r_decomposed.v").content.find("[1:0]  prm_lane_i,\n"), std::string::npos);
}

TEST(RefDesigns, UnsignedInputWidensTheDifference) {
  auto c = cfg_l(2);
  c.arith.x_signed = false;
  EXPECT_EQ(decomposed_widths(c).dw, 17);
}

TEST(RefDesigns, DeterministicAndValidated) {
  for (auto d : {RefDesign::bare_mac, RefDesign::decomposed, RefDesign::decomposed_core,
                 RefDesign::hard_mac_ice40, RefDesign::hard_mac_ecp5, RefDesign::hard_mac_xilinx}) {
    const auto a = render_ref(cfg_l(5), d);
    const auto b = render_ref(cfg_l(5), d);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].content, b[i].content);
    auto bad = cfg_l(0);
    EXPECT_THROW(build_ref(bad, d), std::invalid_argument);
  }
  EXPECT_EQ(to_string(RefDesign::bare_mac), "bare-mac");
  EXPECT_EQ(to_string(RefDesign::decomposed), "decomposed");
  EXPECT_EQ(to_string(RefDesign::decomposed_core), "decomposed-core");
  EXPECT_EQ(to_string(RefDesign::hard_mac_ecp5), "hard-mac-ecp5");
}

// hard-mac: one instantiated primitive per lane with its registers on, nothing else in the
// module (simulation and the synthesized netlist: tests/gen/ref_lint.sh, scripts/ppa_hard.py).
TEST(RefDesigns, HardMacIsOnePrimitivePerLaneWithItsRegisters) {
  struct Want {
    RefDesign d;
    const char* prim;
    std::vector<std::string> regs;
  };
  const Want wants[] = {
      {RefDesign::hard_mac_ice40,
       "SB_MAC16 #(",
       {".A_REG(1'b1)", ".B_REG(1'b1)", ".C_REG(1'b1)", ".D_REG(1'b1)",
        ".PIPELINE_16x16_MULT_REG2(1'b1)", ".TOPOUTPUT_SELECT(2'd1)",
        ".TOPADDSUB_UPPERINPUT(1'b1)"}},
      {RefDesign::hard_mac_ecp5,
       "MULT18X18D #(",
       {".REG_INPUTA_CLK(\"CLK0\")", ".REG_PIPELINE_CLK(\"CLK0\")", ".REG_OUTPUT_CLK(\"CLK0\")"}},
      {RefDesign::hard_mac_xilinx,
       "DSP48E1 #(",
       {".AREG(32'd1)", ".BREG(32'd1)", ".CREG(32'd1)", ".MREG(32'd1)", ".PREG(32'd1)"}}};
  for (const auto& w : wants) {
    const auto fs = render_ref(cfg_l(3), w.d);
    ASSERT_EQ(fs.size(), 3U);  // the top, filelist.f, manifest.json
    const std::string v = file(fs, "r_hard_mac.v").content;
    EXPECT_EQ(count_of(v, w.prim), 3) << to_string(w.d);
    for (const auto& r : w.regs) EXPECT_EQ(count_of(v, r), 3) << r;
    EXPECT_EQ(count_of(v, "always"), 0);  // no fabric register or logic of its own
    EXPECT_EQ(count_of(v, "assign"), 0);
    const auto man = nlohmann::json::parse(file(fs, "manifest.json").content);
    const auto s = hard_mac_spec(w.d);
    EXPECT_EQ(man["hard_block"]["primitive"], s.primitive);
    EXPECT_EQ(man["latency"], s.latency);
    EXPECT_EQ(man["top"], "r_hard_mac");
    EXPECT_EQ(man["ports"].size(), s.cw > 0 ? 5U : 4U);
  }
  EXPECT_THROW(hard_mac_spec(RefDesign::bare_mac), std::logic_error);
}

}  // namespace
}  // namespace normcore::gen
