// Generator tests: IR emission, config validation, determinism, atomic output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "normcore/gen/core.hpp"

namespace normcore::gen {
namespace {

TEST(Ir, EmitsPortsNetsAndBlocks) {
  Module m;
  m.name = "m";
  m.in("clk_i", 1);
  m.in("a_i", 4, "input a");
  m.out("y_o", 4);
  m.reg("y_q", 4);
  m.always_ff({if_("a_i == 4'd0", {assign("y_q", "4'd1")}, {assign("y_q", "a_i")})});
  m.assign("y_o", "y_q");
  const std::string v = emit_module(m, {"hdr"});
  EXPECT_EQ(v,
            "// hdr\n"
            "`default_nettype none\n\n"
            "module m (\n"
            "  input  wire       clk_i,\n"
            "  input  wire [3:0] a_i,  // input a\n"
            "  output wire [3:0] y_o\n"
            ");\n"
            "  reg [3:0] y_q;\n"
            "  always @(posedge clk_i) begin\n"
            "    if (a_i == 4'd0) begin\n"
            "      y_q <= 4'd1;\n"
            "    end else begin\n"
            "      y_q <= a_i;\n"
            "    end\n"
            "  end\n"
            "  assign y_o = y_q;\n"
            "endmodule\n\n"
            "`default_nettype wire\n");
}

TEST(Ir, CombinationalBlockUsesBlockingAssignAndCase) {
  Module m;
  m.name = "c";
  m.in("s_i", 2);
  m.out("y_o", 1);
  m.reg("y", 1);
  m.always_comb({case_("s_i", {{"2'd0", {assign("y", "1'b1")}}, {"default", {assign("y", "1'b0")}}})});
  m.assign("y_o", "y");
  const std::string v = emit_module(m, {});
  EXPECT_NE(v.find("always @* begin"), std::string::npos);
  EXPECT_NE(v.find("case (s_i)"), std::string::npos);
  EXPECT_NE(v.find("y = 1'b1;"), std::string::npos);
}

TEST(Ir, DuplicateNamesAreRejected) {
  Module m;
  m.name = "d";
  m.in("a", 1);
  m.wire("a", 1);
  EXPECT_THROW(m.validate(), std::logic_error);
}

TEST(Config, DefaultsAreValid) { EXPECT_EQ(CoreConfig{}.check(), ""); }

TEST(Config, RejectionsNameTheOption) {
  auto bad = [](auto edit, const std::string& opt) {
    CoreConfig c;
    edit(c);
    const auto msg = c.check();
    EXPECT_EQ(msg.rfind(opt, 0), 0U) << "message '" << msg << "' should start with " << opt;
  };
  bad([](CoreConfig& c) { c.lanes = 0; }, "--lanes");
  bad([](CoreConfig& c) { c.lanes = 65; }, "--lanes");
  bad([](CoreConfig& c) { c.arith.xw = 1; }, "--in-bits");
  bad([](CoreConfig& c) { c.arith.yw = 33; }, "--out-bits");
  bad([](CoreConfig& c) { c.arith.sw = 0; }, "--scale-bits");
  bad([](CoreConfig& c) { c.arith.bw = 63; }, "--shift-bits");
  bad([](CoreConfig& c) { c.max_channels = 0; }, "--max-channels");
  bad([](CoreConfig& c) { c.inner_bits = 0; }, "--inner-bits");
  bad([](CoreConfig& c) { c.pipeline = 2; }, "--pipeline");
  bad([](CoreConfig& c) { c.name = "9x"; }, "--name");
  bad([](CoreConfig& c) { c.arith.xw = 32; c.arith.sw = 32; }, "--in-bits/--scale-bits");
  bad([](CoreConfig& c) { c.arith.xw = 2; c.arith.sw = 2; c.arith.bw = 2; c.arith.yw = 8; },
      "--out-bits");
}

TEST(Config, JsonRoundTrip) {
  CoreConfig c;
  c.name = "bn";
  c.lanes = 5;
  c.arith.x_signed = false;
  c.arith.yw = 12;
  c.pipeline = 5;
  const auto back = CoreConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_THROW(CoreConfig::from_json(nlohmann::json{{"lanes", "eight"}}), std::invalid_argument);
}

TEST(Config, DerivedSizes) {
  CoreConfig c;
  c.lanes = 3;
  c.max_channels = 10;
  EXPECT_EQ(c.banks(), 4);                     // power of two >= lanes
  EXPECT_EQ(c.bank_depth(), (10 + 4 - 2) / 4 + 1);
  EXPECT_EQ(c.chan_bits(), 4);
  c.lanes = 1;
  EXPECT_EQ(c.banks(), 1);
  EXPECT_EQ(c.bank_depth(), 10);
}

TEST(Render, OutputIsDeterministicAndComplete) {
  CoreConfig c;
  c.lanes = 4;
  const auto a = render_core(c);
  const auto b = render_core(c);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].content, b[i].content);
  }
  std::vector<std::string> names;
  for (const auto& f : a) names.push_back(f.name);
  for (const char* want : {"normcore_core.v", "normcore_lane.v", "normcore_ptable.v",
                           "normcore_bank.v", "normcore_chan.v", "normcore_step.v",
                           "normcore_fifo.v", "manifest.json", "filelist.f"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // Every Verilog file names the generator version and the exact config in its header.
  for (const auto& f : a) {
    if (f.name.ends_with(".v")) {
      EXPECT_NE(f.content.find(std::string("normcore-gen ") + kGeneratorVersion), std::string::npos);
      EXPECT_NE(f.content.find("config: " + c.to_json().dump()), std::string::npos) << f.name;
    }
  }
}

TEST(Render, ManifestDescribesTheCore) {
  CoreConfig c;
  c.lanes = 16;
  c.pipeline = 5;
  const auto m = core_manifest(c, build_core(c));
  EXPECT_EQ(m["top"], "normcore_core");
  EXPECT_EQ(m["latency"], 6);
  EXPECT_EQ(m["contract_version"], kContractVersion);
  EXPECT_EQ(CoreConfig::from_json(m["config"]).to_json(), c.to_json());
  bool found = false;
  for (const auto& p : m["ports"]) {
    if (p["name"] == "s_axis_tdata") {
      EXPECT_EQ(p["width"], 16 * 8);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Render, LaneCountChangesInstances) {
  CoreConfig c;
  c.lanes = 3;
  const auto mods = build_core(c);
  const auto& top = mods.back();
  int lanes = 0;
  for (const auto& it : top.items) {
    if (const auto* inst = std::get_if<Instance>(&it); inst && inst->module == "normcore_lane") {
      ++lanes;
    }
  }
  EXPECT_EQ(lanes, 3);
}

TEST(Write, AtomicReplaceLeavesNoTemporaries) {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("nc_gen_test_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path out = base / "rtl";
  write_files_atomically(out, {{"a.v", "one"}});
  write_files_atomically(out, {{"b.v", "two"}});
  EXPECT_FALSE(fs::exists(out / "a.v"));  // replaced as a whole
  std::ifstream is(out / "b.v");
  std::string s;
  is >> s;
  EXPECT_EQ(s, "two");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(base)) ++entries;
  EXPECT_EQ(entries, 1);
  fs::remove_all(base);
}

TEST(Write, FailureLeavesTargetUntouched) {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("nc_gen_fail_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path out = base / "rtl";
  write_files_atomically(out, {{"keep.v", "old"}});
  // A file name with a directory that does not exist makes the write fail midway.
  EXPECT_THROW(write_files_atomically(out, {{"x.v", "new"}, {"no/such/dir.v", "bad"}}),
               std::runtime_error);
  EXPECT_TRUE(fs::exists(out / "keep.v"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(base)) ++entries;
  EXPECT_EQ(entries, 1);
  fs::remove_all(base);
}

}  // namespace
}  // namespace normcore::gen
