// Generator tests: IR emission, config validation, determinism, atomic output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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
  m.always_comb(
      {case_("s_i", {{"2'd0", {assign("y", "1'b1")}}, {"default", {assign("y", "1'b0")}}})});
  m.assign("y_o", "y");
  const std::string v = emit_module(m, {});
  EXPECT_NE(v.find("always @* begin"), std::string::npos);
  EXPECT_NE(v.find("case (s_i)"), std::string::npos);
  EXPECT_NE(v.find("y = 1'b1;"), std::string::npos);
}

TEST(Ir, ConstantOnlyBlockIsPrintedAsAssigns) {
  // Icarus never runs an always @* that reads no net: constants (literals, localparams) go out
  // as continuous assignments to wires; a block that reads a net stays a block.
  Module m;
  m.name = "k";
  m.in("a_i", 1);
  m.out("y_o", 1);
  m.out("z_o", 1);
  const Expr one = m.localparam("ONE", 1, 1);
  const Expr y = m.reg("y", 1);
  const Expr z = m.reg("z", 1);
  m.always_comb({assign(y, ex::binary(Op::band, one, ex::lit(1, 1)))});
  m.always_comb({assign(z, ex::binary(Op::band, one, ex::ref("a_i", 1)))});
  m.assign("y_o", y);
  m.assign("z_o", z);
  const std::string v = emit_module(m, {});
  EXPECT_NE(v.find("  wire y;"), std::string::npos) << v;
  EXPECT_NE(v.find("  assign y = ONE & 1'b1;"), std::string::npos) << v;
  EXPECT_NE(v.find("  reg z;"), std::string::npos) << v;
  EXPECT_NE(v.find("    z = ONE & a_i;"), std::string::npos) << v;
  EXPECT_EQ(v.find("always @* begin\n    y ="), std::string::npos) << v;
}

TEST(Ir, DuplicateNamesAreRejected) {
  Module m;
  m.name = "d";
  m.in("a", 1);
  m.wire("a", 1);
  EXPECT_THROW(m.validate(), std::logic_error);
}

TEST(Config, DefaultsAreValid) {
  EXPECT_EQ(CoreConfig{}.check(), "");
}

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
  bad([](CoreConfig& c) { c.arith.bw = 63; }, "--offset-bits");
  bad([](CoreConfig& c) { c.max_channels = 0; }, "--max-channels");
  bad([](CoreConfig& c) { c.inner_bits = 0; }, "--inner-bits");
  bad([](CoreConfig& c) { c.pipeline = 2; }, "--pipeline");
  bad([](CoreConfig& c) { c.pipeline = 12; }, "--pipeline");
  bad([](CoreConfig& c) { c.name = "9x"; }, "--name");
  bad([](CoreConfig& c) { c.target = "gowin"; }, "--target");
  bad(
      [](CoreConfig& c) {
        c.arith.xw = 32;
        c.arith.sw = 32;
      },
      "--in-bits/--scale-bits");
  bad(
      [](CoreConfig& c) {
        c.arith.xw = 2;
        c.arith.sw = 2;
        c.arith.bw = 2;
        c.arith.yw = 8;
      },
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
  EXPECT_EQ(CoreConfig::default_pipeline("ice40"), 10);
  EXPECT_EQ(CoreConfig::default_pipeline("xilinx"), 4);
  EXPECT_EQ(CoreConfig::default_pipeline("asic"), 5);
  EXPECT_EQ(CoreConfig::default_pipeline("ecp5"), 11);
  EXPECT_EQ(CoreConfig::default_pipeline("gowin"), 0);
  auto find = [](const std::vector<GeneratedFile>& files, const std::string& suffix) {
    for (const auto& f : files) {
      if (f.name.size() >= suffix.size() &&
          f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return f.content;
      }
    }
    return std::string();
  };
  CoreConfig c;
  c.lanes = 2;
  const auto generic = render_core(c);
  // The banks read every cycle: no_rw_check is their one attribute on a generic target.
  EXPECT_EQ(find(generic, "_bank.v").find("(* ram_style"), std::string::npos);
  EXPECT_NE(find(generic, "_bank.v").find("(* no_rw_check *)"), std::string::npos);
  EXPECT_EQ(find(generic, "_lane.v").find("(*"), std::string::npos);
  c.target = "xilinx";
  const auto xil = render_core(c);
  EXPECT_NE(
      find(xil, "_bank.v").find("(* ram_style = \"block\", no_rw_check *)\n  reg [47:0] mem_q"),
      std::string::npos);
  EXPECT_NE(find(xil, "_lane.v").find("(* use_dsp = \"yes\" *)\n  reg signed [31:0] lo_q"),
            std::string::npos);
  EXPECT_NE(find(xil, "_core.v").find("\"target\":\"xilinx\""), std::string::npos);
}

TEST(Config, DerivedSizes) {
  CoreConfig c;
  c.lanes = 3;
  c.max_channels = 10;
  EXPECT_EQ(c.banks(), 4);  // power of two >= lanes
  EXPECT_EQ(c.bank_depth(), (10 + 4 - 2) / 4 + 1);
  EXPECT_EQ(c.chan_bits(), 4);
  c.lanes = 1;
  EXPECT_EQ(c.banks(), 1);
  EXPECT_EQ(c.bank_depth(), 10);
  EXPECT_EQ(c.latency(), c.pipeline + 2);  // two table stages, then the lane's pipeline - 1
  EXPECT_EQ(c.fifo_depth(), c.latency() + 2);
}

// NHWC with C a multiple of a power-of-two LANES: the direct table (lane i reads bank i; no
// crossbar, no wrap-around copies, MAX_CHANNELS / L words a bank); otherwise the general one.
TEST(Config, DirectTableOnlyWhenEveryBeatIsAligned) {
  CoreConfig c;
  c.lanes = 4;
  c.max_channels = 512;
  c.fixed_layout = "nhwc";
  EXPECT_FALSE(c.table_direct());
  c.lanes_divide_channels = true;
  EXPECT_TRUE(c.table_direct());
  EXPECT_EQ(c.bank_depth(), 128);
  c.fixed_layout = "nchw";
  EXPECT_FALSE(c.table_direct());
  c.fixed_layout = "nhwc";
  c.lanes = 6;  // not a power of two: c0 / L would need a divider
  EXPECT_FALSE(c.table_direct());
  c.lanes = 1;
  EXPECT_FALSE(c.table_direct());
  c.lanes = 8;
  const auto files = render_core(c);
  for (const auto& f : files) {
    if (f.name.find("_ptable.v") == std::string::npos) continue;
    EXPECT_EQ(f.content.find("sel2_q"), std::string::npos) << "a crossbar in the direct table";
    EXPECT_EQ(f.content.find("ld_cpy_q"), std::string::npos) << "copies in the direct table";
    EXPECT_NE(f.content.find("reg [7:0] ld_wen_q"), std::string::npos);
    return;
  }
  ADD_FAILURE() << "no ptable";
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
  for (const char* want :
       {"normcore_core.v", "normcore_lane.v", "normcore_ptable.v", "normcore_bank.v",
        "normcore_chan.v", "normcore_step.v", "normcore_fifo.v", "manifest.json", "filelist.f"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // Every Verilog file names the generator version and the exact config in its header.
  for (const auto& f : a) {
    if (f.name.ends_with(".v")) {
      EXPECT_NE(f.content.find(std::string("normcore-gen ") + kGeneratorVersion),
                std::string::npos);
      EXPECT_EQ(config_from_header(f.content), c.to_json()) << f.name;
    }
  }
}

TEST(Render, ManifestDescribesTheCore) {
  CoreConfig c;
  c.lanes = 16;
  c.pipeline = 5;
  const auto m = core_manifest(c, build_core(c));
  EXPECT_EQ(m["top"], "normcore_core");
  EXPECT_EQ(m["latency"], 7);  // pipeline + 2 (two table stages)
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

// --table copies: one C-word RAM per lane, read at (c0 + d_i) mod C; no crossbar, copies only
// at C .. L - 2. --target ecp5 picks it; the direct table and one lane win over it.
TEST(Config, TableCopiesOnePerLaneWithoutCrossbar) {
  EXPECT_EQ(CoreConfig::default_table("ice40"), "banked");
  EXPECT_EQ(CoreConfig::default_table("ecp5"), "copies");
  EXPECT_EQ(CoreConfig::default_table("generic"), "banked");
  EXPECT_EQ(CoreConfig::default_table("xilinx"), "banked");
  CoreConfig c;
  c.lanes = 5;
  c.max_channels = 300;
  EXPECT_FALSE(c.table_copies());
  c.table = "copies";
  ASSERT_EQ(c.check(), "");
  EXPECT_TRUE(c.table_copies());
  EXPECT_EQ(c.bank_depth(), 300);
  // four table stages: c0 / d_i, the read address, the RAM read, its output register
  EXPECT_EQ(c.table_stages(), 4);
  EXPECT_EQ(c.latency(), c.pipeline + 4);
  c.table = "Copies";
  EXPECT_EQ(c.check(), "--table: must be banked or copies (got 'Copies')");
  c.table = "copies";
  const auto mods = build_core(c);
  const Module& pt = module_named(mods, "normcore_ptable");
  int rams = 0;
  for (const auto& it : pt.items) {
    if (const auto* inst = std::get_if<Instance>(&it); inst && inst->module == "normcore_bank") {
      ++rams;
    }
  }
  EXPECT_EQ(rams, 5);
  EXPECT_FALSE(has_net(pt, "sel2_q_1")) << "a crossbar";
  EXPECT_FALSE(has_net(pt, "ld_nu_q")) << "the banked table's copy bank (its wrap-around copies)";
  EXPECT_TRUE(has_net(pt, "ld_km_q"));  // copies only at C .. L - 2
  EXPECT_TRUE(has_net(pt, "wrap_4_q"));
  c.lanes = 1;
  EXPECT_FALSE(c.table_copies());
  c.lanes = 4;
  c.fixed_layout = "nhwc";
  c.lanes_divide_channels = true;
  EXPECT_FALSE(c.table_copies());  // the direct table: no copies needed
  EXPECT_TRUE(c.table_direct());
}

TEST(CoreLane, EveryPipelineValueAddsOneLaneRegister) {
  // The lane has pipeline - 1 register stages: lo_q (the DSP's output) and y_q always, then (in
  // this order) the input registers, after the shifter, after rounding, inside the shifter, after
  // saturation, the accumulator in the fabric, the shifter's third part, the product before the
  // add.
  const char* regs[] = {"x_q", "z_q", "rq_q", "z1_q", "qn_q", "accr_q", "z2_q", "prod_q"};
  for (int p = 3; p <= 11; ++p) {
    CoreConfig c;
    c.lanes = 4;
    c.pipeline = p;
    ASSERT_EQ(c.check(), "");
    const auto mods = build_core(c);
    const auto& lane = module_named(mods, "normcore_lane");
    EXPECT_TRUE(has_net(lane, "lo_q"));
    EXPECT_TRUE(has_net(lane, "y_q"));
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(has_net(lane, regs[k]), p >= 4 + k) << regs[k] << " p=" << p;
    bool latency_line = false;
    for (const auto& d : lane.description) {
      latency_line |= d.find("latency " + std::to_string(p - 1) + " cycles") != std::string::npos;
    }
    EXPECT_TRUE(latency_line) << "p=" << p;
    EXPECT_EQ(core_manifest(c, mods)["latency"], p + 2);  // + the two table stages
  }
}

// The folded lane's multiply-add: the DSP adds modulo 2^W (W = max(XW + SW, BW)) and the top bit
// of the (W+1)-bit acc is MAJ(sign(x) ^ sign(s), sign(b), lo[W-1]), exhaustively at small widths.
TEST(CoreLane, DspAddPlusMajorityIsTheFullAccumulator) {
  long checks = 0;
  for (const bool xs : {true, false}) {
    for (int xw = 2; xw <= 4; ++xw) {
      for (int sw = 2; sw <= 4; ++sw) {
        for (int bw = 2; bw <= 9; ++bw) {
          const int W = std::max(xw + sw, bw);
          const std::int64_t xlo = xs ? -(std::int64_t{1} << (xw - 1)) : 0;
          const std::int64_t xhi = xs ? (std::int64_t{1} << (xw - 1)) : (std::int64_t{1} << xw);
          for (std::int64_t x = xlo; x < xhi; ++x) {
            for (std::int64_t s = -(1 << (sw - 1)); s < (1 << (sw - 1)); ++s) {
              for (std::int64_t b = -(1 << (bw - 1)); b < (1 << (bw - 1)); ++b) {
                const std::int64_t acc = x * s + b;
                const std::uint64_t lo = static_cast<std::uint64_t>(acc) & ((1ULL << W) - 1);
                const bool psg = (xs && x < 0) != (s < 0);
                const bool bsg = b < 0, top = ((lo >> (W - 1)) & 1) != 0;
                const bool maj = (psg && bsg) || (psg && top) || (bsg && top);
                const std::int64_t got = maj ? static_cast<std::int64_t>(lo) - (1LL << W)
                                             : static_cast<std::int64_t>(lo);
                ++checks;
                ASSERT_EQ(got, acc) << "x " << x << " s " << s << " b " << b << " W " << W;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checks, 100000);
}

// The lane's output stage, bit for bit at small widths (aw-bit accumulator, yw-bit output),
// against the contract, modelled as the RTL computes it (core_lane.cpp):
// * the shifter: z = E >>> u in one part or two (select bits hi..rl, then rl-1..0) with
//   E = {acc, 0}, u = R; with the top select bit folded (2^(rw-1) = T >= aw - 1) u = T - 1 for
//   R >= T and E's bits T-1.. patched to {sign..., h};
// * sticky: the bits each part shifts out at the bottom (+ acc[R-2:T-2] when R >= T);
// * fits: every bit a part drops off the top of its output window (the last part: every bit
//   it brings to z[nw] or above) equals the sign;
// * q = the quotient's low nw = yw+1 bits, h = z[0]; +1 by mode; the clamp compares q with lo
//   or lo - 1 and hi or hi + 1 (lo = min(lo, hi)), chosen by the +1, and a q that does not fit
//   gives lo or hi by the sign.
namespace {
struct LaneModel {
  int aw, nw;
  static std::uint64_t m(int w) { return w >= 64 ? ~0ULL : (1ULL << w) - 1; }
  struct Out {
    std::int64_t z;  // the shifter's output, sign-extended (bits 0..nw are the result window)
    bool sticky, fits;
  };
  Out run(std::int64_t acc, int r, bool split) const {
    int rw = 1;
    while ((1 << rw) <= aw) ++rw;
    const int T = 1 << (rw - 1);
    const bool fold = rw >= 2 && T >= aw - 1;
    const std::uint64_t ua = static_cast<std::uint64_t>(acc);
    std::uint64_t e = (ua << 1) & m(aw + 1);  // {acc, 0}
    int u = r;
    bool sticky = false, fits = true;
    if (fold && r >= T) {
      const std::uint64_t sg = (e >> aw) & 1;
      for (int i = T; i <= aw - 1; ++i) e = (e & ~(1ULL << i)) | (sg << i);
      const std::uint64_t h = r == aw ? sg : (ua >> (aw - 2)) & 1;
      e = (e & ~(1ULL << (T - 1))) | (h << (T - 1));
      u = T - 1;
      sticky = ((ua >> (T - 2)) & 1) || (r == aw && T == aw - 1 && ((ua >> (T - 1)) & 1));
    }
    const auto sx = [&](std::uint64_t v) {
      return (v >> aw) & 1 ? static_cast<std::int64_t>(v | ~m(aw + 1))
                           : static_cast<std::int64_t>(v);
    };
    std::int64_t cur = sx(e);
    const int lsw = fold ? rw - 1 : rw, rl = std::min((rw + 1) / 2, lsw);
    std::vector<std::pair<int, int>> parts{{lsw - 1, 0}};  // select bits {hi, lo} of each part
    if (split && rl < lsw) parts = {{lsw - 1, rl}, {rl - 1, 0}};
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const auto [hi, lo] = parts[p];
      const int sh = ((u >> lo) & static_cast<int>(m(hi - lo + 1))) << lo;
      const auto uc = static_cast<std::uint64_t>(cur);
      if ((uc & m(sh)) != 0) sticky = true;  // shifted out at the bottom
      const bool last = p + 1 == parts.size();
      const int c0 = last ? nw : nw + (1 << lo);  // first bit above the part's output window
      const int ce = p == 0 ? aw - 1 : std::min(aw - 1, nw + (1 << parts[p - 1].second) - 1);
      for (int j = c0 + sh; j <= ce; ++j) fits &= ((uc >> j) & 1) == ((uc >> aw) & 1);
      cur >>= sh;
    }
    return {cur, sticky, nw >= aw || fits};
  }
};
}  // namespace

TEST(CoreLane, RoundingAndClampIdentitiesMatchTheContract) {
  long checks = 0;
  for (int aw = 3; aw <= 9; ++aw) {
    for (int yw = 2; yw <= aw; ++yw) {
      for (const bool ys : {false, true}) {
        const std::int64_t ymin = ys ? -(std::int64_t{1} << (yw - 1)) : 0;
        const std::int64_t ymax =
            ys ? (std::int64_t{1} << (yw - 1)) - 1 : (std::int64_t{1} << yw) - 1;
        const std::pair<std::int64_t, std::int64_t> clamps[] = {{ymin, ymax},         {0, ymax},
                                                                {ymin, ymin},         {ymax, ymax},
                                                                {ymin + 1, ymax - 1}, {ymax, ymin}};
        const int nw = yw + 1;
        const LaneModel lm{aw, nw};
        for (int r = 0; r <= aw; ++r) {
          for (int mode = 0; mode < 4; ++mode) {
            for (const auto& [lo, hi] : clamps) {
              for (std::int64_t k = 0; k < (std::int64_t{2} << aw); ++k) {
                const std::int64_t acc = (k >> 1) - (std::int64_t{1} << (aw - 1));
                const auto [z, t, fits] = lm.run(acc, r, (k & 1) != 0);  // both shifter shapes
                const int h = static_cast<int>(z & 1);
                // q: the quotient's low nw bits, as a signed nw-bit number
                const std::int64_t qu = (z >> 1) & static_cast<std::int64_t>(LaneModel::m(nw));
                const std::int64_t q = qu >= (std::int64_t{1} << (nw - 1)) ? qu - (1LL << nw) : qu;
                const bool neg = acc < 0;
                int inc = 0;
                if (mode == 1) inc = h;
                if (mode == 2) inc = h & (t || (q & 1) != 0);
                if (mode == 3) inc = h & (t || !neg);
                const std::int64_t loe = std::min(lo, hi);
                const bool below = fits ? (inc != 0 ? q < loe - 1 : q < loe) : neg;
                const bool above = fits ? (inc != 0 ? !(q < hi) : !(q < hi + 1)) : !neg;
                const std::int64_t y = below ? loe : above ? hi : q + inc;
                const std::int64_t want =
                    std::min(std::max(round_shift(acc, r, static_cast<Rounding>(mode)), lo), hi);
                // pipeline >= 8 (lane_clamp_sat): rq = q + inc against lo and hi + 1, the sign
                // of ({q, inc} + {-k, inc}) mod 2^(nw + 3), the RTL's widths.
                const auto lt = [&](std::int64_t bound) {
                  const auto u = [&](std::int64_t v) {
                    return ((static_cast<std::uint64_t>(v) << 1) | static_cast<unsigned>(inc)) &
                           LaneModel::m(nw + 3);
                  };
                  return (((u(q) + u(-bound)) >> (nw + 2)) & 1) != 0;
                };
                const bool below2 = fits ? lt(loe) : neg;
                const bool above2 = fits ? !lt(hi + 1) : !neg;
                const std::int64_t y2 = below2 ? loe : above2 ? hi : q + inc;
                ++checks;
                ASSERT_EQ(y, want) << "aw " << aw << " yw " << yw << " signed " << ys << " R " << r
                                   << " mode " << mode << " lo " << lo << " hi " << hi << " acc "
                                   << acc << " split " << (k & 1);
                ASSERT_EQ(y2, want)
                    << "two compares: aw " << aw << " yw " << yw << " R " << r << " mode " << mode
                    << " lo " << lo << " hi " << hi << " acc " << acc;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checks, 1000000);
}

// The channel tracker (<n>_chan), bit for bit at the RTL's widths: lane 0's channel c0 and the
// lanes' offsets d_i, registers (S >= L: rem = (h - pb) * 2^lw + lo with a pending borrow, lo
// stepped by one add of the register op, neg = rem <= L computed a beat ahead; S < L: lane 0's
// u = q_0 + 1; every d_i set to db_i or dp_i by flags that are carries of register adds with
// per-lane negated thresholds), starts from the walker. Every lane must see element e = beat * L +
// lane: (c0 + d_i) mod C = (e div S) mod C, d_i < L.
TEST(CoreChan, SharedTrackerGivesEveryLanesChannel) {
  long checks = 0;
  for (int L = 1; L <= 9; ++L) {
    for (int hw = 1; hw <= 6; ++hw) {
      for (const int maxc : {1, 6}) {
        CoreConfig cfg;  // the widths the generator uses
        cfg.lanes = L, cfg.inner_bits = hw, cfg.max_channels = maxc;
        const int nb = cfg.lane_count_bits(), cw = cfg.chan_bits(), ml = cfg.chan_low_bits(),
                  lw = nb + 1, W = ml + 1;
        const int RW = std::max(hw, lw) + 1, hb = RW - lw, p = cfg.bank_sel_bits();
        const auto mask = [](int w) { return (std::uint64_t{1} << w) - 1; };
        const std::uint64_t lm = mask(lw), hm = mask(hb), cm = mask(cw), cm1 = mask(cw + 1),
                            qm = mask(ml), pm = mask(p), wm = mask(RW), Wm = mask(W);
        const auto carry = [](std::uint64_t a, std::uint64_t b, int w) {
          return ((a + b) >> w) & 1;  // the carry out of a w-bit add
        };
        for (std::int64_t S = 1; S < (1LL << hw); ++S) {
          for (std::int64_t C = 1; C <= maxc; ++C) {
            const bool small = S < L, sle = S <= L, s2l = S < 2 * L;
            const auto s = static_cast<std::uint64_t>(S);
            const std::uint64_t kr = static_cast<std::uint64_t>(L % S) & qm;
            const std::uint64_t sk = (s - static_cast<std::uint64_t>(L % S)) & qm;
            const std::uint64_t kcs = small ? static_cast<std::uint64_t>((L / S) % C) : 0;
            const std::uint64_t kc[2] = {kcs & cm, (kcs + 1) & cm};
            const std::uint64_t kw[2] = {(kcs - static_cast<std::uint64_t>(C)) & cm1,
                                         (kcs + 1 - static_cast<std::uint64_t>(C)) & cm1};
            const std::uint64_t remw = (s - static_cast<std::uint64_t>(L)) & wm;
            const std::uint64_t remw1 = ((remw >> lw) + 1) & hm;
            const std::uint64_t op_w = remw & lm, op_s = ((1ULL << lw) - L) & lm;
            // nle: lo <= 2L - S, made a beat ahead on the new lo (t2l after a step, t4 after a
            // wrap, S <= L at the load).
            const std::uint64_t t2l =
                S < 2 * L ? static_cast<std::uint64_t>(3 * L - S) : static_cast<std::uint64_t>(L);
            const std::uint64_t t4 = 2 * S <= 3 * L ? static_cast<std::uint64_t>(3 * L - 2 * S) : 0;
            // Lane 0's thresholds (as 2^W - 1 - t): nsk = -(S - k_r), nsk2, nskr.
            const std::uint64_t nsk = (kr - s) & qm, nsk2 = ~(2 * sk) & Wm;
            const std::int64_t d1 = static_cast<std::int64_t>(kr) - static_cast<std::int64_t>(sk);
            const std::uint64_t nskr =
                d1 >= 0 ? Wm : ((static_cast<std::uint64_t>(d1) & Wm) - 1) & Wm;
            // Walker and starts (lanes 1..L-1 save wm = 2^W - 1 - (S - r) and i div S).
            std::vector<std::uint64_t> wms(L, 0), d0(L, 0);
            std::uint64_t wr = 0, wd = 0, wmw = ~(s & qm) & Wm;
            for (int i = 0; i < L; ++i) {
              wms[i] = wmw, d0[i] = wd;
              const bool w_end = S < (1LL << nb) && wr == static_cast<std::uint64_t>(S - 1);
              wr = w_end ? 0 : (wr + 1) & qm;
              wmw = w_end ? ~(s & qm) & Wm : (wmw + 1) & Wm;
              if (w_end) wd = (wd + 1) & pm;
            }
            // Per-lane per-job thresholds and the two d_i values.
            std::vector<std::uint64_t> nta(L), ntb(L), nx(L), nl(L), db(L), dp(L);
            for (int i = 1; i < L; ++i) {
              const std::uint64_t sb = wms[i] + kr;
              nta[i] = small ? (wms[i] - sk) & Wm : 0;
              ntb[i] = small ? (sb > Wm ? Wm : sb) : 0;
              const std::uint64_t kx = static_cast<std::uint64_t>(L + 1 + i);
              const std::uint64_t xs = (kx - (s & lm)) & mask(lw + 1);
              nx[i] = (small || !s2l || ((xs >> lw) & 1)) ? 0 : xs & lm;
              nl[i] = small ? 0 : kx & lm;
              db[i] = small ? d0[i] : 0;
              dp[i] = small ? (d0[i] + 1) & pm : 1;
            }
            // Load.
            std::uint64_t lo = s & lm, h = (s >> lw) & hm, pb = 0, c = 0, u = 1;
            std::uint64_t op = sle ? op_w : op_s;
            bool neg = sle, nle = sle, cy0 = false, cyc = !small && sle;
            std::vector<std::uint64_t> d(db);
            for (int beat = 0; beat < 3 * maxc * 8; ++beat) {
              for (int i = 0; i < L; ++i) {
                const std::uint64_t di = i > 0 ? d[i] : 0;
                const std::int64_t e = static_cast<std::int64_t>(beat) * L + i;
                ASSERT_LT(di, static_cast<std::uint64_t>(L));
                ASSERT_EQ(static_cast<std::int64_t>((c + di) % static_cast<std::uint64_t>(C)),
                          (e / S) % C)
                    << "L " << L << " hw " << hw << " S " << S << " C " << C << " beat " << beat
                    << " lane " << i;
                ++checks;
              }
              // One beat, as the RTL's next-state logic.
              const std::uint64_t nlo = ~lo & lm;
              const bool hi_zero = ((h - pb) & hm) == 0;
              for (int i = 1; i < L; ++i) {
                const bool fa = carry(u, nta[i], W), fb = carry(u, ntb[i], W);
                const bool fw = carry(nlo, nx[i], lw), fl = carry(nlo, nl[i], lw);
                const bool g = cyc ? (fa || fw) : (fb || (hi_zero && fl));
                d[i] = g ? dp[i] : db[i];
              }
              std::uint64_t cnx[2];
              for (int j = 0; j < 2; ++j) {
                const std::uint64_t add = (c + kc[j]) & cm, sub = (c + kw[j]) & cm1;
                cnx[j] = ((sub >> cw) & 1) == 0 ? (sub & cm) : add;
              }
              c = cnx[cyc ? 1 : 0];
              const bool neg_nx = neg ? nle : (hi_zero && lo <= static_cast<std::uint64_t>(2 * L));
              nle = neg ? lo <= t4 : lo <= t2l;
              const std::uint64_t sum = lo + op;
              if (neg) {
                h = (sum >> lw) & 1 ? remw1 : (remw >> lw) & hm;
                pb = 0;
              } else {
                h = (h - pb) & hm;
                pb = ((sum >> lw) & 1) ^ 1;
              }
              lo = sum & lm;
              op = neg_nx ? op_w : op_s;
              neg = neg_nx;
              const bool cy0_nx = cy0 ? carry(u, nsk2, W) : carry(u, nskr, W);
              u = cy0 ? (u + nsk) & qm : (u + kr) & qm;
              cy0 = cy0_nx;
              cyc = small ? cy0_nx : neg_nx;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checks, 100000);
}

}  // namespace
}  // namespace normcore::gen
