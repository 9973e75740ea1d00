// Specialised cores (CoreConfig::fixed_*, lanes_divide_channels) in the generated RTL: fixed
// settings are constants, not registers; the start check and the accelerator's validation test
// them (ERR_UNSUPPORTED); the manifest says what is fixed. Bit-exactness and the rejections
// themselves are co-simulated (sim/sweep.cmake, sim/accel.cmake: *_spec*).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"

namespace {

using namespace normcore;

std::string file(const std::vector<gen::GeneratedFile>& files, const std::string& suffix) {
  for (const auto& f : files) {
    if (f.name.size() >= suffix.size() &&
        f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return f.content;
    }
  }
  return {};
}

CoreConfig spec_config() {
  CoreConfig c;
  c.name = "sp";
  c.lanes = 4;
  c.max_channels = 512;
  c.fixed_shift = 14;
  c.fixed_rounding = "half_away";
  c.fixed_layout = "nhwc";
  c.lanes_divide_channels = true;
  return c;
}

TEST(Specialise, FixedSettingsAreConstantsAndChecked) {
  const std::string generic = file(gen::render_core(CoreConfig{}), "_core.v");
  EXPECT_NE(generic.find("shift_d = shs_q;"), std::string::npos);
  const std::string v = file(gen::render_core(spec_config()), "_core.v");
  // Loaded with the constant (synthesis removes the flop and what it fed), not from cfg_*.
  EXPECT_NE(v.find("shift_d = 6'd14;"), std::string::npos);
  EXPECT_NE(v.find("round_d = 2'd3;"), std::string::npos);
  // Fixed nhwc (S = 1): no stride, divider or walker settings at all; <n>_chan's d_i are the
  // constants i and c0 (a multiple of L = 4) is held as c0 / 4.
  EXPECT_NE(generic.find("stride_q"), std::string::npos);
  EXPECT_EQ(v.find("stride_q"), std::string::npos);
  EXPECT_EQ(v.find("nsm_q"), std::string::npos);
  EXPECT_EQ(v.find("wr_q"), std::string::npos);
  const std::string ch = file(gen::render_core(spec_config()), "_chan.v");
  EXPECT_NE(ch.find("assign d_o = {2'd3, 2'd2, 2'd1};"), std::string::npos) << ch;
  EXPECT_NE(ch.find("assign c0_o = {c_q, 2'd0};"), std::string::npos) << ch;
  EXPECT_EQ(v.find("shift_d = cfg_shift_i"), std::string::npos);
  // The checks, latched with start as the flags pk_q (combined into ok_q in the latch cycle).
  EXPECT_NE(v.find("cfg_shift_i == 6'd14"), std::string::npos);
  EXPECT_NE(v.find("cfg_round_i == 2'd3"), std::string::npos);
  EXPECT_NE(v.find("cfg_layout_i == 1'b1"), std::string::npos);
  EXPECT_NE(v.find("cfg_channels_i[1:0] == 2'd0"), std::string::npos);  // C % 4
  EXPECT_NE(v.find("ok_d = &pk_q"), std::string::npos);
}

TEST(Specialise, OddLanesUseTheInverseTest) {
  CoreConfig c = spec_config();
  c.lanes = 6;  // 2 * 3: one low bit, then (C >> 1) * 3^-1 mod 2^9 <= 511 / 3
  c.max_channels = 600;
  const std::string v = file(gen::render_core(c), "_core.v");
  // Not a power of two: C % L from the staged chs_q in the latch cycle (into ok_q).
  EXPECT_NE(v.find("(chs_q[0] == 1'b0)"), std::string::npos) << v.substr(0, 4000);
  EXPECT_NE(v.find("(chs_q[9:1] * 9'd171 <= 9'd170)"), std::string::npos) << v.substr(0, 4000);
}

TEST(Specialise, AcceleratorManifestAndErrorCode) {
  AccelConfig a;
  a.core = spec_config();
  const auto files = gen::render_accel(a);
  const auto m = nlohmann::json::parse(file(files, "manifest.json"));
  EXPECT_EQ(m["error_codes"]["unsupported"], 10);
  EXPECT_EQ(m["config"]["fixed_shift"], 14);
  EXPECT_EQ(m["config"]["fixed_layout"], "nhwc");
  EXPECT_EQ(m["config"]["lanes_divide_channels"], true);
  bool caps4 = false;
  for (const auto& r : m["registers"]["registers"]) caps4 = caps4 || r["name"] == "CAPS4";
  EXPECT_TRUE(caps4);
  const std::string ctrl = file(files, "_ctrl.v");
  EXPECT_NE(ctrl.find("unsupported ? 8'd10"), std::string::npos);
}

}  // namespace
