// The flow files of a design directory (eda.hpp) and the plain C register header: names, clock
// port and period from the IR and the config, --clock-mhz in the schema, determinism. The tools'
// side (compilers, Verilator, Icarus, FuseSoC) is checked by gen.flow_files and gen.fusesoc.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/eda.hpp"
#include "normcore/gen/regs.hpp"

namespace normcore::gen {
namespace {

const std::string& content(const std::vector<GeneratedFile>& files, const std::string& name) {
  for (const auto& f : files) {
    if (f.name == name) return f.content;
  }
  throw std::runtime_error("no file " + name);
}

TEST(FlowFiles, CoreDirectoryHasFilelistsConstraintsAndCore) {
  CoreConfig c;
  c.clock_mhz = 125;
  const auto files = render_core(c);
  EXPECT_EQ(content(files, "filelist.f").substr(0, 15), "normcore_bank.v");
  EXPECT_NE(content(files, "filelist_env.f").find("${NORMCORE_RTL_DIR}/normcore_core.v\n"),
            std::string::npos);
  const std::string clock = "create_clock -name clk_i -period 8.000 [get_ports clk_i]\n";
  EXPECT_NE(content(files, "normcore_core.sdc").find(clock), std::string::npos);
  EXPECT_NE(content(files, "normcore_core.xdc").find(clock), std::string::npos);
  const std::string& core = content(files, "normcore_core.core");
  EXPECT_EQ(core.substr(0, 8), "CAPI=2:\n");  // FuseSoC reads the first line
  EXPECT_NE(core.find("name: normcore:generated:normcore_core:0.1.0\n"), std::string::npos);
  EXPECT_NE(core.find("    toplevel: normcore_core\n"), std::string::npos);
  const auto m = nlohmann::json::parse(content(files, "manifest.json"));
  EXPECT_EQ(m["clock"]["port"], "clk_i");
  EXPECT_EQ(m["clock"]["mhz"], 125);
  EXPECT_EQ(m["clock"]["period_ns"], "8.000");
  EXPECT_EQ(m["flow_files"]["filelist_env_variable"], "NORMCORE_RTL_DIR");
  EXPECT_EQ(m["config"]["clock_mhz"], 125);
}

// Issue 15: fractional MHz in the constraints' period and comment, the manifest's "clock" and
// "config", and the sim:/tlm: trace period; whole MHz are written as integers, as before.
TEST(FlowFiles, FractionalClockMhz) {
  CoreConfig c;
  c.clock_mhz = 62.5;
  const auto files = render_core(c);
  for (const char* f : {"normcore_core.sdc", "normcore_core.xdc"}) {
    const std::string& s = content(files, f);
    EXPECT_NE(s.find("create_clock -name clk_i -period 16.000 [get_ports clk_i]\n"),
              std::string::npos)
        << f;
    EXPECT_NE(s.find("port clk_i, 62.5 MHz\n"), std::string::npos) << f;
  }
  const auto m = nlohmann::json::parse(content(files, "manifest.json"));
  EXPECT_EQ(m["clock"]["mhz"], 62.5);
  EXPECT_EQ(m["clock"]["period_ns"], "16.000");
  EXPECT_EQ(m["config"]["clock_mhz"], 62.5);
  EXPECT_EQ(AccelConfig::from_json(m["config"]).core.clock_mhz, 62.5);  // reads back
  EXPECT_EQ(c.clock_period_ps(), 16000U);
  c.clock_mhz = 33.333;
  EXPECT_EQ(clock_period_ns(c.clock_mhz), "30.000");
  EXPECT_EQ(c.clock_period_ps(), 30000U);  // round(30000.3)
  c.clock_mhz = 100;
  EXPECT_EQ(c.clock_period_ps(), 10000U);
  EXPECT_TRUE(c.to_json()["clock_mhz"].is_number_integer());
  EXPECT_EQ(normcore::format_number(33.333), "33.333");
  EXPECT_EQ(normcore::format_number(100), "100");
}

TEST(FlowFiles, ClockOnlyChangesTheConstraintsAndHeaders) {
  CoreConfig a, b;
  b.clock_mhz = 250;
  const auto fa = render_core(a), fb = render_core(b);
  ASSERT_EQ(fa.size(), fb.size());
  EXPECT_EQ(content(fa, "filelist.f"), content(fb, "filelist.f"));
  EXPECT_NE(content(fb, "normcore_core.sdc").find("-period 4.000 "), std::string::npos);
  // The Verilog differs in its header's config line only.
  const std::string& va = content(fa, "normcore_core.v");
  const std::string& vb = content(fb, "normcore_core.v");
  EXPECT_EQ(va.substr(va.find("`default_nettype")), vb.substr(vb.find("`default_nettype")));
}

TEST(FlowFiles, AcceleratorListsRegisterHeadersInTheCore) {
  AccelConfig c;
  c.core.name = "acc";
  const auto files = render_accel(c);
  const std::string& core = content(files, "acc_top.core");
  EXPECT_NE(core.find("      - acc_regs.h: {is_include_file: true}\n"), std::string::npos);
  EXPECT_NE(core.find("      - acc_top.v\n"), std::string::npos);
  EXPECT_NE(content(files, "filelist_env.f").find("${ACC_RTL_DIR}/acc_top.v\n"), std::string::npos);
  const auto m = nlohmann::json::parse(content(files, "manifest.json"));
  EXPECT_EQ(m["flow_files"]["c_header"], "acc_regs.h");
  EXPECT_EQ(m["flow_files"]["fusesoc_core"], "acc_top.core");
  const auto again = render_accel(c);  // deterministic
  ASSERT_EQ(again.size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(again[i].name, files[i].name);
    EXPECT_EQ(again[i].content, files[i].content) << files[i].name;
  }
}

TEST(FlowFiles, PeriodAndClockPort) {
  EXPECT_EQ(clock_period_ns(100), "10.000");
  EXPECT_EQ(clock_period_ns(3), "333.333");
  EXPECT_EQ(clock_period_ns(1000), "1.000");
  Module m;
  m.name = "noclk";
  m.in("a_i", 1);
  EXPECT_THROW((void)clock_port(m), std::logic_error);
  m.in(kClockPort, 1);
  EXPECT_EQ(clock_port(m).name, "clk_i");
}

TEST(FlowFiles, ClockMhzIsAConfigField) {
  CoreConfig c;
  EXPECT_EQ(c.clock_mhz, 100);
  c.clock_mhz = 0;
  EXPECT_NE(c.check().find("--clock-mhz: 0 is out of range 1..1000"), std::string::npos);
  c.clock_mhz = 1001;
  EXPECT_NE(c.check(FieldNames::json).find("'clock_mhz'"), std::string::npos);
  EXPECT_EQ(CoreConfig::from_json({{"clock_mhz", 200}}).clock_mhz, 200);
  EXPECT_EQ(CoreConfig::from_json({{"clock_mhz", 62.5}}).clock_mhz, 62.5);
  EXPECT_THROW(CoreConfig::from_json({{"clock_mhz", "62.5"}}), std::invalid_argument);
  // Fractions are fine; NaN, infinities, zero, negative and huge values name the option.
  c.clock_mhz = 33.333;
  EXPECT_EQ(c.check(), "");
  for (const double bad : {0.0, -5.0, 0.5, 1000.5, 1e300, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    c.clock_mhz = bad;
    EXPECT_EQ(c.check().rfind("--clock-mhz: ", 0), 0U) << bad;
  }
  c.clock_mhz = std::nan("");
  EXPECT_EQ(c.check(), "--clock-mhz: nan is out of range 1..1000 (a number: fractions allowed)");
  // A manifest written before the field existed still reads (as the default).
  nlohmann::json old = AccelConfig{}.to_json();
  old.erase("clock_mhz");
  EXPECT_EQ(AccelConfig::from_json(old, true).core.clock_mhz, 100);
}

TEST(PlainCHeader, IsCNotCxx) {
  const std::string h = emit_plain_c_header(accel_register_map(AccelConfig{}));
  EXPECT_NE(h.find("#include <stdint.h>\n"), std::string::npos);
  for (const char* cxx : {"<cstdint>", "namespace", "constexpr", "std::", "#pragma once"}) {
    EXPECT_EQ(h.find(cxx), std::string::npos) << cxx;
  }
  EXPECT_NE(h.find("#define NORMCORE_REGS_CTRL_OFFSET 0x020u\n"), std::string::npos);
  EXPECT_NE(h.find("#define NORMCORE_REGS_CTRL_START_ACCESS NORMCORE_REGS_ACCESS_W1S_SC\n"),
            std::string::npos);
  EXPECT_NE(h.find("#ifndef NORMCORE_REGS_H_\n"), std::string::npos);
}

}  // namespace
}  // namespace normcore::gen
