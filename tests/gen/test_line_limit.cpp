// Every line the generator writes into Verilog stays within 100 columns (the emitter wraps
// expressions and comments, the file header wraps its config), for the core, the accelerator and
// the PPA reference designs, at edge and wide configurations and with a long name prefix.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "gen/accel_configs.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ref_designs.hpp"

namespace normcore::gen {
namespace {

constexpr std::size_t kLimit = 100;

// The lines of `f` over the limit, as "<file>:<line>: <length> columns".
std::vector<std::string> long_lines(const GeneratedFile& f) {
  std::vector<std::string> out;
  std::istringstream is(f.content);
  std::string line;
  for (int n = 1; std::getline(is, line); ++n) {
    if (line.size() > kLimit) {
      out.push_back(f.name + ":" + std::to_string(n) + ": " + std::to_string(line.size()) +
                    " columns");
    }
  }
  return out;
}

// Checks the Verilog files of `files` (and that there is at least one).
void expect_within_limit(const std::vector<GeneratedFile>& files, const std::string& what) {
  int verilog = 0;
  for (const auto& f : files) {
    if (!f.name.ends_with(".v")) continue;
    ++verilog;
    for (const auto& l : long_lines(f)) ADD_FAILURE() << what << ": " << l;
  }
  EXPECT_GT(verilog, 0) << what;
}

// The shared accelerator configurations, and the widest one with a long name prefix.
std::vector<AccelConfig> accel_configs() {
  std::vector<AccelConfig> out = test_configs::configs();
  AccelConfig long_name = test_configs::big_config();
  long_name.core.name = "a_rather_long_prefix_for_a_module";
  out.push_back(long_name);
  return out;
}

TEST(LineLimit, CoreFilesStayWithin100Columns) {
  CoreConfig mid;  // the l16_i16 reference, for Xilinx
  mid.lanes = 16;
  mid.arith = {16, true, 18, 40, 8, true};
  mid.pipeline = 5;
  mid.target = "xilinx";
  std::vector<CoreConfig> cores = {mid};
  for (const AccelConfig& a : accel_configs()) cores.push_back(a.core);
  cores.back().pipeline = 8;
  for (const CoreConfig& c : cores) {
    ASSERT_EQ(c.check(), "") << c.name;
    expect_within_limit(render_core(c), "core " + c.to_json().dump());
  }
}

TEST(LineLimit, AcceleratorFilesStayWithin100Columns) {
  for (const AccelConfig& c : accel_configs()) {
    ASSERT_EQ(c.check(), "") << c.core.name;
    expect_within_limit(render_accel(c), "accel " + c.to_json().dump());
  }
}

TEST(LineLimit, ReferenceDesignsStayWithin100Columns) {
  for (const AccelConfig& a : accel_configs()) {
    const CoreConfig& c = a.core;
    for (RefDesign d : {RefDesign::bare_mac, RefDesign::decomposed, RefDesign::decomposed_core}) {
      expect_within_limit(render_ref(c, d), to_string(d) + " " + c.to_json().dump());
    }
  }
}

// The check itself: a file with a 101-column line is reported, one with 100 columns is not.
TEST(LineLimit, TheCheckSeesALongLine) {
  EXPECT_TRUE(long_lines({"a.v", std::string(100, 'x') + "\n"}).empty());
  EXPECT_EQ(long_lines({"a.v", "x\n" + std::string(101, 'x') + "\n"}),
            std::vector<std::string>{"a.v:2: 101 columns"});
}

// The header keeps the exact config machine-readable over several comment lines.
TEST(LineLimit, HeaderConfigReadsBack) {
  for (const AccelConfig& c : accel_configs()) {
    for (const auto& f : render_accel(c)) {
      if (f.name.ends_with(".v")) {
        EXPECT_EQ(config_from_header(f.content), c.to_json()) << f.name;
      }
    }
  }
  EXPECT_THROW(config_from_header("// nothing here\n"), std::invalid_argument);
}

}  // namespace
}  // namespace normcore::gen
