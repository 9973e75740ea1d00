// Generator tests: IR emission, config validation, determinism, atomic output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "normcore/contract.hpp"
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
  bad([](CoreConfig& c) { c.pipeline = 9; }, "--pipeline");
  bad([](CoreConfig& c) { c.name = "9x"; }, "--name");
  bad([](CoreConfig& c) { c.target = "ecp5"; }, "--target");
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
  c.target = "asic";
  const auto back = CoreConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.target, "asic");
  EXPECT_THROW(CoreConfig::from_json(nlohmann::json{{"lanes", "eight"}}), std::invalid_argument);
  EXPECT_THROW(CoreConfig::from_json(nlohmann::json{{"target", 3}}), std::invalid_argument);
  // Manifests written before --target existed read as generic.
  EXPECT_EQ(CoreConfig::from_json(nlohmann::json{{"lanes", 2}}).target, "generic");
}

TEST(Config, TargetPicksPipelineAndAttributes) {
  EXPECT_EQ(CoreConfig::default_pipeline("generic"), 3);
  EXPECT_EQ(CoreConfig::default_pipeline("ice40"), 7);
  EXPECT_EQ(CoreConfig::default_pipeline("xilinx"), 4);
  EXPECT_EQ(CoreConfig::default_pipeline("asic"), 5);
  EXPECT_EQ(CoreConfig::default_pipeline("ecp5"), 0);
  auto find = [](const std::vector<GeneratedFile>& files, const std::string& suffix) {
    for (const auto& f : files) {
      if (f.name.size() >= suffix.size() && f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return f.content;
      }
    }
    return std::string();
  };
  CoreConfig c;
  c.lanes = 2;
  const auto generic = render_core(c);
  EXPECT_EQ(find(generic, "_bank.v").find("(*"), std::string::npos);
  EXPECT_EQ(find(generic, "_lane.v").find("(*"), std::string::npos);
  c.target = "xilinx";
  const auto xil = render_core(c);
  EXPECT_NE(find(xil, "_bank.v").find("(* ram_style = \"block\" *)\n  reg [47:0] mem_q"), std::string::npos);
  EXPECT_NE(find(xil, "_lane.v").find("(* use_dsp = \"yes\" *)\n  reg [32:0] acc_q"), std::string::npos);
  EXPECT_NE(find(xil, "_core.v").find("\"target\":\"xilinx\""), std::string::npos);
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

// ---- The streaming core's lane and channel tracker ----------------------------------------------

const Module& module_named(const std::vector<Module>& mods, const std::string& name) {
  for (const auto& m : mods) {
    if (m.name == name) return m;
  }
  throw std::logic_error("no module " + name);
}

bool has_net(const Module& m, const std::string& name) {
  for (const auto& it : m.items) {
    if (const auto* n = std::get_if<Net>(&it); n && n->name == name) return true;
  }
  return false;
}

TEST(CoreLane, EveryPipelineValueAddsOneLaneRegister) {
  // The lane has pipeline - 1 register stages: acc_q and y_q always, then (in this order) the
  // input registers, after the shifter, after rounding, inside the shifter, after saturation.
  const char* regs[] = {"x_q", "z_q", "rq_q", "z1_q", "qn_q"};
  for (int p = 3; p <= 8; ++p) {
    CoreConfig c;
    c.lanes = 4;
    c.pipeline = p;
    ASSERT_EQ(c.check(), "");
    const auto mods = build_core(c);
    const auto& lane = module_named(mods, "normcore_lane");
    EXPECT_TRUE(has_net(lane, "acc_q"));
    EXPECT_TRUE(has_net(lane, "y_q"));
    for (int k = 0; k < 5; ++k) EXPECT_EQ(has_net(lane, regs[k]), p >= 4 + k) << regs[k] << " p=" << p;
    bool latency_line = false;
    for (const auto& d : lane.description) {
      latency_line |= d.find("latency " + std::to_string(p - 1) + " cycles") != std::string::npos;
    }
    EXPECT_TRUE(latency_line) << "p=" << p;
    EXPECT_EQ(core_manifest(c, mods)["latency"], p + 1);
  }
}

// The lane's arithmetic, bit for bit at small widths (aw-bit accumulator, yw-bit output), against
// the contract: q = acc >>> R, h = bit R-1, t = any bit below R-1; +1 by mode; q saturated to
// yw+1 bits (the test: bits >= R + yw of acc equal the sign); the clamp decided by comparing the
// saturated q with lo or lo - 1 and hi or hi + 1 (lo = min(lo, hi)), chosen by the +1.
TEST(CoreLane, RoundingAndClampIdentitiesMatchTheContract) {
  long checks = 0;
  for (int aw = 3; aw <= 9; ++aw) {
    for (int yw = 2; yw <= aw; ++yw) {
      for (const bool ys : {false, true}) {
        const std::int64_t ymin = ys ? -(std::int64_t{1} << (yw - 1)) : 0;
        const std::int64_t ymax = ys ? (std::int64_t{1} << (yw - 1)) - 1 : (std::int64_t{1} << yw) - 1;
        const std::pair<std::int64_t, std::int64_t> clamps[] = {
            {ymin, ymax}, {0, ymax}, {ymin, ymin}, {ymax, ymax}, {ymin + 1, ymax - 1}, {ymax, ymin}};
        const int nw = yw + 1;
        for (int r = 0; r <= aw; ++r) {
          for (int mode = 0; mode < 4; ++mode) {
            for (const auto& [lo, hi] : clamps) {
              for (std::int64_t acc = -(std::int64_t{1} << (aw - 1)); acc < (std::int64_t{1} << (aw - 1)); ++acc) {
                const std::int64_t q = acc >> r;  // arithmetic
                const int h = r >= 1 ? static_cast<int>((acc >> (r - 1)) & 1) : 0;
                const std::uint64_t smask = r >= 2 ? (std::uint64_t{1} << (r - 1)) - 1 : 0;
                const bool t = (static_cast<std::uint64_t>(acc) & smask) != 0;
                const bool neg = acc < 0;
                int inc = 0;
                if (mode == 1) inc = h;
                if (mode == 2) inc = h & (t || (q & 1) != 0);
                if (mode == 3) inc = h & (t || !neg);
                std::int64_t qn = q;
                if (nw < aw) {
                  bool fits = true;  // omask: bits >= R + nw - 1 (below the sign) equal the sign
                  for (int b = r + nw - 1; b < aw - 1; ++b) fits &= ((acc >> b) & 1) == (neg ? 1 : 0);
                  if (!fits) qn = neg ? -(std::int64_t{1} << (nw - 1)) : (std::int64_t{1} << (nw - 1)) - 1;
                }
                const std::int64_t loe = std::min(lo, hi);
                const bool below = inc != 0 ? qn < loe - 1 : qn < loe;
                const bool above = inc != 0 ? !(qn < hi) : !(qn < hi + 1);
                const std::int64_t y = below ? loe : above ? hi : qn + inc;
                const std::int64_t want =
                    std::min(std::max(round_shift(acc, r, static_cast<Rounding>(mode)), lo), hi);
                ++checks;
                ASSERT_EQ(y, want) << "aw " << aw << " yw " << yw << " signed " << ys << " R " << r
                                   << " mode " << mode << " lo " << lo << " hi " << hi << " acc " << acc;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checks, 1000000);
}

// The channel tracker (<n>_chan), bit for bit: v = r + k_r - S split into an m-bit low part and
// a high part; start positions from the walker, converted to v; then beats. Every lane's
// (c, r) must follow element e = beat * L + lane: c = (e div S) mod C, r = e mod S.
TEST(CoreChan, CarryFromTheSignAndNarrowHighPartTrackEveryElement) {
  for (int L = 1; L <= 7; ++L) {
    for (int hw = 1; hw <= 5; ++hw) {
      for (const int maxc : {1, 6}) {
        const int nb = bits_for(L), cw = bits_for(maxc);
        const int m = std::min(hw, nb), hb = hw + 1 - m;
        const std::uint64_t mm = (1ULL << m) - 1, hm = (1ULL << hb) - 1, cm = (1ULL << cw) - 1;
        const std::uint64_t cm1 = (cm << 1) | 1, vm = (1ULL << (hw + 1)) - 1;
        for (std::int64_t S = 1; S < (1LL << hw); ++S) {
          for (std::int64_t C = 1; C <= maxc; ++C) {
            const std::int64_t kr = L % S, kc = (L / S) % C;
            const std::uint64_t k1 = static_cast<std::uint64_t>(kr - S) & vm;
            const std::uint64_t vh0 = k1 >> m, vh1 = (vh0 + 1) & hm;
            const std::uint64_t kcs[2] = {static_cast<std::uint64_t>(kc) & cm, static_cast<std::uint64_t>(kc + 1) & cm};
            const std::uint64_t kws[2] = {static_cast<std::uint64_t>(kc - C) & cm1,
                                          static_cast<std::uint64_t>(kc + 1 - C) & cm1};
            std::uint64_t wr = 0, wc = 0;  // the walker: element 0, 1, ...
            for (int lane = 0; lane < L; ++lane) {
              const std::uint64_t v0 = (wr + k1) & vm;
              std::uint64_t vl = v0 & mm, vh = v0 >> m, c = wc;
              for (int beat = 0; beat < 24; ++beat) {
                const std::int64_t e = static_cast<std::int64_t>(beat) * L + lane;
                std::int64_t v = static_cast<std::int64_t>((vh << m) | vl);
                if ((v >> hw) != 0) v -= std::int64_t{1} << (hw + 1);
                ASSERT_EQ(static_cast<std::int64_t>(c), (e / S) % C) << L << " " << hw << " S " << S << " C " << C;
                ASSERT_EQ(v - kr + S, e % S) << L << " " << hw << " S " << S << " C " << C;
                const bool carry = ((vh >> (hb - 1)) & 1) == 0;
                const std::uint64_t lo0 = vl + static_cast<std::uint64_t>(kr), lo1 = (vl + (k1 & mm)) & mm;
                std::uint64_t nx[2];
                for (int j = 0; j < 2; ++j) {
                  const std::uint64_t add = (c + kcs[j]) & cm, sub = (c + kws[j]) & cm1;
                  nx[j] = ((sub >> cw) & 1) == 0 ? (sub & cm) : add;
                }
                c = nx[carry ? 1 : 0];
                if (carry) {
                  ASSERT_EQ(vh, 0U);  // v < k_r: the high part is 0 before a wrap
                  vh = vl > (~k1 & mm) ? vh1 : vh0;
                  vl = lo1;
                } else {
                  vh = (vh + (lo0 >> m)) & hm;
                  vl = lo0 & mm;
                }
              }
              const bool w_end = wr == static_cast<std::uint64_t>(S - 1);
              if (w_end) wc = wc == static_cast<std::uint64_t>(C - 1) ? 0 : wc + 1;
              wr = w_end ? 0 : wr + 1;
            }
          }
        }
      }
    }
  }
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
