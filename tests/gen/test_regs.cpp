// Register description: the accelerator's map for several configurations, the consistency check,
// the register block's structure, and golden pieces of every output (C header, Markdown,
// SystemRDL, JSON). The block's behaviour is tested in simulation (sim/test_regblock.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "gen/accel_configs.hpp"
#include "normcore/gen/regs.hpp"
#include "test_paths.hpp"

namespace normcore::gen {
namespace {

using namespace test_configs;

bool has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

const Field& field(const RegisterMap& m, const std::string& reg, const std::string& f) {
  const Register* r = m.reg(reg);
  if (r == nullptr) throw std::runtime_error("no register " + reg);
  const Field* p = r->field(f);
  if (p == nullptr) throw std::runtime_error("no field " + reg + "." + f);
  return *p;
}

// ------------------------------------------------------------------------------------------------
TEST(RegsMap, ChecksPassForSeveralConfigs) {
  for (const auto& cfg : configs()) {
    ASSERT_EQ(cfg.check(), "") << cfg.core.name;
    const RegisterMap m = accel_register_map(cfg);
    EXPECT_EQ(m.check(), "") << cfg.core.name;
    EXPECT_EQ(m.block, cfg.core.name + "_regs");
    EXPECT_EQ(m.addr_bits, cfg.axil_addr_bits);
    EXPECT_NO_THROW(build_regblock(m, m.block));
    EXPECT_NO_THROW(emit_c_header(m));
    EXPECT_NO_THROW(emit_markdown(m));
    EXPECT_NO_THROW(emit_systemrdl(m));
    EXPECT_NO_THROW(regs_json(m));
  }
}

TEST(RegsMap, OffsetsAndAccessAsSpecified) {
  const RegisterMap m = accel_register_map(pinned_config());
  const std::vector<std::pair<std::string, std::uint32_t>> expect = {{"ID", 0x000},
                                                                     {"VERSION", 0x004},
                                                                     {"CAPS0", 0x008},
                                                                     {"CAPS1", 0x00C},
                                                                     {"CAPS2", 0x010},
                                                                     {"CAPS3", 0x014},
                                                                     {"CAPS4", 0x018},
                                                                     {"CTRL", 0x020},
                                                                     {"STATUS", 0x024},
                                                                     {"IRQ_STATUS", 0x028},
                                                                     {"ERR_CODE", 0x02C},
                                                                     {"ERR_ADDR_LO", 0x030},
                                                                     {"ERR_ADDR_HI", 0x034},
                                                                     {"CHANNELS", 0x040},
                                                                     {"INNER", 0x044},
                                                                     {"OUTER", 0x048},
                                                                     {"MODE", 0x04C},
                                                                     {"CLAMP_LO", 0x050},
                                                                     {"CLAMP_HI", 0x054},
                                                                     {"SRC_LO", 0x060},
                                                                     {"SRC_HI", 0x064},
                                                                     {"DST_LO", 0x068},
                                                                     {"DST_HI", 0x06C},
                                                                     {"PARAM_LO", 0x070},
                                                                     {"PARAM_HI", 0x074},
                                                                     {"WIN_BASE_LO", 0x078},
                                                                     {"WIN_BASE_HI", 0x07C},
                                                                     {"WIN_LAST_LO", 0x080},
                                                                     {"WIN_LAST_HI", 0x084},
                                                                     {"PERF_ACTIVE", 0x090},
                                                                     {"PERF_RD_STALL", 0x094},
                                                                     {"PERF_WR_STALL", 0x098},
                                                                     {"PERF_ELEMS_LO", 0x09C},
                                                                     {"PERF_ELEMS_HI", 0x0A0}};
  ASSERT_EQ(m.regs.size(), expect.size());
  for (std::size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(m.regs[i].name, expect[i].first);
    EXPECT_EQ(m.regs[i].offset, expect[i].second) << expect[i].first;
  }
  auto acc = [&](const char* r, const char* f) { return field(m, r, f).access; };
  EXPECT_EQ(acc("CTRL", "start"), Access::w1s_sc);
  EXPECT_EQ(acc("CTRL", "soft_reset"), Access::w1s_sc);
  EXPECT_EQ(acc("CTRL", "irq_en_done"), Access::rw);
  EXPECT_EQ(field(m, "CTRL", "irq_en_error").lsb, 9);
  EXPECT_EQ(acc("STATUS", "busy"), Access::ro);
  EXPECT_EQ(acc("STATUS", "start_ignored"), Access::w1c);
  EXPECT_EQ(field(m, "STATUS", "start_ignored").lsb, 3);
  EXPECT_EQ(acc("IRQ_STATUS", "done"), Access::w1c);
  EXPECT_EQ(acc("IRQ_STATUS", "error"), Access::w1c);
  EXPECT_EQ(acc("ERR_CODE", "code"), Access::ro);
  EXPECT_EQ(acc("PERF_ELEMS_HI", "value"), Access::ro);
  EXPECT_FALSE(field(m, "PERF_ELEMS_HI", "value").hw_const);
  for (const char* r : {"ID", "VERSION", "CAPS0", "CAPS1", "CAPS2", "CAPS3", "CAPS4"}) {
    for (const auto& f : m.reg(r)->fields) EXPECT_TRUE(f.hw_const) << r << "." << f.name;
  }
  EXPECT_EQ(m.reg("WIN_LAST_LO")->reset_value(), 0xFFFFFFFFu);
  EXPECT_EQ(m.reg("WIN_LAST_HI")->reset_value(), 0xFFFFFFFFu);
  EXPECT_EQ(m.reg("WIN_BASE_LO")->reset_value(), 0u);
  EXPECT_EQ(m.reg("OUTER")->reset_value(), 1u);
  EXPECT_EQ(m.reg("MODE")->reset_value(), 2u << 4);  // half_even
}

TEST(RegsMap, ConstantsOfAPinnedConfig) {
  const RegisterMap m = accel_register_map(pinned_config());
  EXPECT_EQ(m.reg("ID")->reset_value(), 0x4E43424Eu);
  EXPECT_EQ(m.reg("VERSION")->reset_value(), 0x02000100u);  // contract 2, "0.1.0"
  EXPECT_EQ(m.reg("CAPS0")->reset_value(), 0x0F484808u);
  EXPECT_EQ(m.reg("CAPS1")->reset_value(), 1024u);
  EXPECT_EQ(m.reg("CAPS2")->reset_value(), 0x04082008u);  // log2(16) = 4, 8 outstanding
  EXPECT_EQ(m.reg("CAPS3")->reset_value(), 0x08182010u);
  EXPECT_EQ(m.reg("CAPS4")->reset_value(), 3u);  // both layouts, nothing fixed
}

// A specialised core says what it fixes: CAPS0.round_modes, CAPS4, MODE's reset values.
TEST(RegsMap, SpecialisationInCapsAndMode) {
  AccelConfig cfg = pinned_config();
  cfg.core.fixed_shift = 14;
  cfg.core.fixed_rounding = "half_away";
  cfg.core.fixed_layout = "nhwc";
  cfg.core.lanes_divide_channels = true;
  const RegisterMap m = accel_register_map(cfg);
  EXPECT_EQ(field(m, "CAPS0", "round_modes").reset, 1u << 3);
  EXPECT_EQ(field(m, "CAPS4", "layouts").reset, 2u);
  EXPECT_EQ(field(m, "CAPS4", "c_multiple_of_lanes").reset, 1u);
  EXPECT_EQ(field(m, "CAPS4", "shift_fixed").reset, 1u);
  EXPECT_EQ(field(m, "CAPS4", "fixed_shift").reset, 14u);
  EXPECT_EQ(m.reg("MODE")->reset_value(), 1u | 3u << 4 | 14u << 8);
  cfg.core.fixed_shift = 0;  // R = 0 fixed is not "per job"
  EXPECT_EQ(field(accel_register_map(cfg), "CAPS4", "shift_fixed").reset, 1u);
}

TEST(RegsMap, WidthsFollowTheConfig) {
  for (const auto& cfg : configs()) {
    SCOPED_TRACE(cfg.core.name);
    const RegisterMap m = accel_register_map(cfg);
    const auto& a = cfg.core.arith;
    EXPECT_EQ(field(m, "CHANNELS", "value").width, cfg.core.chan_bits());
    EXPECT_EQ(field(m, "INNER", "value").width, cfg.core.inner_bits);
    EXPECT_EQ(field(m, "MODE", "shift").width, cfg.core.rshift_bits());
    EXPECT_EQ(field(m, "MODE", "shift").lsb, 8);
    EXPECT_EQ(field(m, "CLAMP_LO", "value").width, a.yw);
    EXPECT_EQ(field(m, "CLAMP_HI", "value").width, a.yw);
    const std::uint64_t ymask = (std::uint64_t{1} << a.yw) - 1;
    EXPECT_EQ(field(m, "CLAMP_LO", "value").reset, static_cast<std::uint64_t>(a.y_min()) & ymask);
    EXPECT_EQ(field(m, "CLAMP_HI", "value").reset, static_cast<std::uint64_t>(a.y_max()) & ymask);
    // The constants, recomputed with the formulas of the specification.
    auto u = [](auto v) { return static_cast<std::uint32_t>(v); };
    std::uint32_t burst_log2 = 0;
    while ((1 << burst_log2) < cfg.max_burst) ++burst_log2;
    EXPECT_EQ(m.reg("CAPS0")->reset_value(), u(cfg.core.lanes) | u(a.xw) << 8 |
                                                 u(a.x_signed) << 14 | u(a.yw) << 16 |
                                                 u(a.y_signed) << 22 | 0xFu << 24);
    EXPECT_EQ(m.reg("CAPS1")->reset_value(), u(cfg.core.max_channels));
    EXPECT_EQ(m.reg("CAPS2")->reset_value(), u(cfg.bus_bits / 8) | u(cfg.addr_bits) << 8 |
                                                 u(cfg.outstanding) << 16 | burst_log2 << 24);
    EXPECT_EQ(m.reg("CAPS3")->reset_value(), u(a.sw) | u(a.bw) << 8 | u(cfg.core.inner_bits) << 16 |
                                                 (a.sw + a.bw <= 64 ? 8u : 16u) << 24);
    // The regblock's ports have the same widths.
    const Module rb = build_regblock(m, "rb");
    auto port = [&](const std::string& n) -> const Port* {
      for (const auto& p : rb.ports) {
        if (p.name == n) return &p;
      }
      return nullptr;
    };
    ASSERT_NE(port("channels_value_o"), nullptr);
    EXPECT_EQ(port("channels_value_o")->width, cfg.core.chan_bits());
    EXPECT_EQ(port("inner_value_o")->width, cfg.core.inner_bits);
    EXPECT_EQ(port("mode_shift_o")->width, cfg.core.rshift_bits());
    EXPECT_EQ(port("clamp_hi_value_o")->width, a.yw);
    EXPECT_EQ(port("s_axil_awaddr")->width, cfg.axil_addr_bits);
    EXPECT_EQ(port("s_axil_araddr")->width, cfg.axil_addr_bits);
  }
}

// ------------------------------------------------------------------------------------------------
RegisterMap tiny() {
  RegisterMap m;
  m.block = std::string("t_regs");
  m.addr_bits = 4;
  m.regs = {Register{"A",
                     0x0,
                     "a",
                     {Field{"x", 0, 4, Access::rw, 3, "x", false},
                      Field{"y", 8, 8, Access::ro, 0, "y", false}}},
            Register{"B", 0x4, "b", {Field{"z", 0, 1, Access::w1c, 0, "z", false}}}};
  return m;
}

TEST(RegsCheck, CatchesBadMaps) {
  ASSERT_EQ(tiny().check(), "");
  const std::vector<std::pair<std::function<void(RegisterMap&)>, std::string>> cases = {
      {[](RegisterMap& m) { m.regs[0].fields[1].lsb = 2; }, "register A field y: overlaps"},
      {[](RegisterMap& m) { m.regs[0].fields[1].lsb = 28; }, "field y: bits [35:28] are outside"},
      {[](RegisterMap& m) { m.regs[0].fields[0].width = 0; }, "field x: width 0"},
      {[](RegisterMap& m) { m.regs[0].fields[0].lsb = -1; }, "field x: bits"},
      {[](RegisterMap& m) { m.regs[0].fields[0].reset = 16; },
       "field x: reset 0x10 does not fit 4"},
      {[](RegisterMap& m) { m.regs[1].offset = 0x2; }, "register B: offset 0x002 is not 4-byte"},
      {[](RegisterMap& m) { m.regs[1].offset = 0x0; }, "register B: offset 0x000 overlaps"},
      {[](RegisterMap& m) { m.regs[1].offset = 0x10; }, "outside the 4-bit address space"},
      {[](RegisterMap& m) { m.regs[1].name = std::string("A"); },
       "register A: duplicate register name"},
      {[](RegisterMap& m) { m.regs[0].fields[1].name = std::string("x"); },
       "field x: duplicate field name"},
      {[](RegisterMap& m) { m.regs[1].name = std::string("b"); }, "upper-case identifier"},
      {[](RegisterMap& m) { m.regs[1].fields[0].name = std::string("Z"); },
       "lower-case identifier"},
      {[](RegisterMap& m) { m.regs[1].fields[0].name = std::string("reg"); }, "SystemRDL keyword"},
      {[](RegisterMap& m) { m.regs[1].fields.clear(); }, "register B: has no fields"},
      {[](RegisterMap& m) { m.regs[0].fields[0].hw_const = true; }, "a constant must be ro"},
      {[](RegisterMap& m) {
         m.regs[1].fields[0].access = Access::w1s_sc;
         m.regs[1].fields[0].reset = 1;
       },
       "a w1s_sc field resets to 0"},
      {[](RegisterMap& m) { m.regs[1].name = std::string("A_X"); }, "the name A_X collides"},
      {[](RegisterMap& m) {
         m.regs[1].name = std::string("AW");
         m.regs[1].fields[0].name = std::string("full");
       },
       "register block: module t_regs: duplicate or empty name 'aw_full_q'"},
      {[](RegisterMap& m) { m.data_bits = 64; }, "data_bits: 64"},
      {[](RegisterMap& m) { m.addr_bits = 2; }, "addr_bits: 2 is out of range"},
      {[](RegisterMap& m) { m.block = std::string("9x"); }, "block name '9x'"},
      {[](RegisterMap& m) { m.regs.clear(); }, "no registers"},
  };
  for (const auto& [mutate, msg] : cases) {
    RegisterMap m = tiny();
    mutate(m);
    const std::string err = m.check();
    EXPECT_TRUE(has(err, msg)) << "expected '" << msg << "', got '" << err << "'";
    EXPECT_THROW(build_regblock(m, "x"), std::invalid_argument) << msg;
    EXPECT_THROW(emit_c_header(m), std::invalid_argument) << msg;
  }
}

// ------------------------------------------------------------------------------------------------
TEST(RegsBlock, PortsFollowAccess) {
  const RegisterMap m = accel_register_map(pinned_config());
  const Module rb = build_regblock(m, "normcore_regs");
  std::set<std::string> in, out;
  for (const auto& p : rb.ports) (p.output ? out : in).insert(p.name);
  for (const char* p :
       {"clk_i", "rst_ni", "s_axil_awaddr", "s_axil_awprot", "s_axil_awvalid", "s_axil_wdata",
        "s_axil_wstrb", "s_axil_wvalid", "s_axil_bready", "s_axil_araddr", "s_axil_arprot",
        "s_axil_arvalid", "s_axil_rready", "status_busy_i", "status_start_ignored_set_i",
        "irq_status_done_set_i", "err_code_code_i", "perf_elems_hi_value_i"}) {
    EXPECT_EQ(in.count(p), 1u) << p;
  }
  for (const char* p :
       {"s_axil_awready", "s_axil_wready", "s_axil_bresp", "s_axil_bvalid", "s_axil_arready",
        "s_axil_rdata", "s_axil_rresp", "s_axil_rvalid", "ctrl_start_o", "ctrl_soft_reset_o",
        "ctrl_irq_en_done_o", "status_start_ignored_o", "irq_status_error_o", "channels_value_o",
        "mode_rounding_o", "win_last_hi_value_o"}) {
    EXPECT_EQ(out.count(p), 1u) << p;
  }
  for (const char* p : {"id_magic_i", "version_major_i", "caps0_lanes_i", "irq_o", "status_busy_o",
                        "ctrl_start_i"}) {
    EXPECT_EQ(in.count(p) + out.count(p), 0u) << p;
  }
  const std::string v = emit_regblock(m, "normcore_regs");
  EXPECT_TRUE(has(v, "module normcore_regs ("));
  EXPECT_TRUE(has(v, "generated by normcore-gen"));
  EXPECT_TRUE(has(v, "channels_value_q <= 11'h1;"));
  EXPECT_TRUE(has(v, "win_last_lo_value_q <= 32'hffffffff;"));
  EXPECT_TRUE(has(v, "assign id_rd = 32'h4e43424e;"));
  EXPECT_TRUE(has(v,
                  "status_start_ignored_d = status_start_ignored_set_i |\n"
                  "        (status_start_ignored_q & ~status_start_ignored_clr);"));
  EXPECT_TRUE(has(v, "ctrl_start_d = ctrl_wr ? w_data_q[0] & wr_mask[0] : 1'b0;"));
  EXPECT_TRUE(has(v, "b_resp_d = wr_hit ? 2'b00 : 2'b10;"));
  EXPECT_TRUE(has(v, "r_resp_d = rd_hit ? 2'b00 : 2'b10;"));
  // Flops only take their next value (q <= d).
  EXPECT_TRUE(has(v, "status_start_ignored_q <= status_start_ignored_d;"));
  EXPECT_TRUE(has(v, "r_resp_q <= r_resp_d;"));
  EXPECT_FALSE(has(v, "lint_off"));
}

// ------------------------------------------------------------------------------------------------
TEST(RegsEmit, CHeader) {
  const std::string h = emit_c_header(accel_register_map(pinned_config()));
  for (const char* piece : {
           "#pragma once\n",
           "#include <cstdint>\n",
           "namespace normcore_regs {\n",
           "enum class Access : std::uint8_t { ro, rw, w1c, w1s_sc };",
           "inline constexpr std::uint32_t kAddrBits = 12u;",
           "inline constexpr std::uint32_t kRegisterCount = 34u;",
           "inline constexpr std::uint32_t ID_OFFSET = 0x000u;",
           "inline constexpr std::uint32_t ID_RESET = 0x4E43424Eu;",
           "inline constexpr std::uint32_t CTRL_OFFSET = 0x020u;",
           "inline constexpr std::uint32_t CTRL_START_SHIFT = 0u;",
           "inline constexpr std::uint32_t CTRL_START_MASK = 0x00000001u;",
           "inline constexpr Access CTRL_START_ACCESS = Access::w1s_sc;",
           "inline constexpr std::uint32_t CTRL_IRQ_EN_ERROR_MASK = 0x00000200u;",
           "inline constexpr std::uint32_t MODE_ROUNDING_SHIFT = 4u;",
           "inline constexpr std::uint32_t MODE_ROUNDING_RESET = 0x2u;",
           "inline constexpr std::uint32_t MODE_SHIFT_WIDTH = 6u;",
           "inline constexpr std::uint32_t CHANNELS_VALUE_MASK = 0x000007FFu;",
           "inline constexpr std::uint32_t CLAMP_LO_VALUE_RESET = 0x80u;",
           "inline constexpr Access STATUS_START_IGNORED_ACCESS = Access::w1c;",
           "inline constexpr std::uint32_t PERF_ELEMS_HI_OFFSET = 0x0A0u;",
           "inline constexpr RegDesc kRegisters[] = {",
           "{\"CTRL\", CTRL_OFFSET, CTRL_RESET, CTRL_MASK, 4u, CTRL_FIELDS, \"Control\"},",
           "static_assert(detail::consistent(),",
           "}  // namespace normcore_regs\n",
       }) {
    EXPECT_TRUE(has(h, piece)) << piece;
  }
  // Every register and field has its constants.
  const RegisterMap m = accel_register_map(pinned_config());
  for (const auto& r : m.regs) {
    EXPECT_TRUE(has(h, " " + r.name + "_OFFSET = ")) << r.name;
    for (const auto& f : r.fields) {
      std::string fn = f.name;
      for (char& ch : fn) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      EXPECT_TRUE(has(h, " " + r.name + "_" + fn + "_SHIFT = " + std::to_string(f.lsb) + "u;"));
      EXPECT_TRUE(has(h, " " + r.name + "_" + fn + "_WIDTH = " + std::to_string(f.width) + "u;"));
    }
  }
}

TEST(RegsEmit, Markdown) {
  const std::string md = emit_markdown(accel_register_map(pinned_config()));
  for (const char* piece : {
           "# normcore_regs register map\n",
           "This file is generated by normcore-gen",
           "| offset | register | reset | description |",
           "| 0x020 | [CTRL](#0x020-ctrl) | 0x00000000 | Control |",
           "## 0x020 CTRL\n",
           "| bits | field | access | reset | description |",
           "| [0] | start | w1s_sc | 0x0 |",
           "| [7:2] | — | reserved | 0 | |",
           "| [31:10] | — | reserved | 0 | |",
           "| [31:0] | magic | ro (constant) | 0x4E43424E |",
           "| [5:4] | rounding | rw | 0x2 |",
           "| [3] | start_ignored | w1c | 0x0 |",
           "| [10:0] | value | rw | 0x1 | C, 1..1024 |",
           "| [31:0] | value | rw | 0xFFFFFFFF |",
       }) {
    EXPECT_TRUE(has(md, piece)) << piece;
  }
}

TEST(RegsEmit, SystemRdl) {
  const std::string rdl = emit_systemrdl(accel_register_map(pinned_config()));
  for (const char* piece : {
           "addrmap normcore_regs {\n",
           "    default regwidth = 32;\n",
           "        } magic[31:0] = 0x4E43424E;\n    } ID @ 0x000;\n",
           "            sw = w;\n            hw = r;\n            singlepulse;\n        } "
           "start[0:0] = 0x0;",
           "            sw = rw;\n            hw = r;\n            onwrite = woclr;\n            "
           "hwset;\n"
           "        } start_ignored[3:3] = 0x0;",
           "            sw = r;\n            hw = w;\n        } busy[0:0] = 0x0;",
           "            sw = rw;\n            hw = r;\n        } rounding[5:4] = 0x2;",
           "    } PERF_ELEMS_HI @ 0x0A0;\n};\n",
           "desc = \"\\\"NCBN\\\" in ASCII\";",
       }) {
    EXPECT_TRUE(has(rdl, piece)) << piece;
  }
}

TEST(RegsEmit, Json) {
  const RegisterMap m = accel_register_map(pinned_config());
  const nlohmann::json j = regs_json(m);
  EXPECT_EQ(j["block"], "normcore_regs");
  EXPECT_EQ(j["data_bits"], 32);
  EXPECT_EQ(j["addr_bits"], 12);
  ASSERT_EQ(j["registers"].size(), m.regs.size());
  for (std::size_t i = 0; i < m.regs.size(); ++i) {
    const auto& jr = j["registers"][i];
    EXPECT_EQ(jr["name"], m.regs[i].name);
    EXPECT_EQ(jr["offset"], m.regs[i].offset);
    EXPECT_EQ(jr["reset"], m.regs[i].reset_value());
    EXPECT_EQ(jr["fields"].size(), m.regs[i].fields.size());
  }
  const auto& ctrl = j["registers"][7];
  EXPECT_EQ(ctrl["name"], "CTRL");
  EXPECT_EQ(ctrl["fields"][0],
            (nlohmann::json{{"name", "start"},
                            {"lsb", 0},
                            {"width", 1},
                            {"access", "w1s_sc"},
                            {"hw_const", false},
                            {"reset", 0},
                            {"desc", "write 1: start a job with the current settings"}}));
  EXPECT_EQ(j["registers"][0]["fields"][0]["hw_const"], true);
  EXPECT_EQ(j["registers"][0]["fields"][0]["reset"], 0x4E43424E);
}

TEST(RegsEmit, Deterministic) {
  const RegisterMap m = accel_register_map(odd_config());
  EXPECT_EQ(emit_c_header(m), emit_c_header(accel_register_map(odd_config())));
  EXPECT_EQ(emit_regblock(m, "x"), emit_regblock(accel_register_map(odd_config()), "x"));
}

// docs/registers.md is the Markdown of the default configuration (written by regs_gen).
TEST(RegsEmit, CommittedReferenceIsCurrent) {
  std::ifstream is(normcore::test::source_dir() + "/docs/registers.md", std::ios::binary);
  ASSERT_TRUE(is.good()) << "docs/registers.md is missing";
  std::ostringstream ss;
  ss << is.rdbuf();
  EXPECT_EQ(ss.str(), emit_markdown(accel_register_map(AccelConfig{})))
      << "regenerate: build/sim/regs_gen <dir>, then copy <dir>/normcore_regs.md to "
         "docs/registers.md";
}

// Issue 15 item 10: the register docs list every ERR_CODE value (the same table as the
// manifest's "error_codes"), name the C header, and give the parameter table's layout in memory
// with the entry size and bit positions of the configuration.
TEST(RegsEmit, MarkdownHasErrorCodesCHeaderAndParamTable) {
  AccelConfig cfg;
  cfg.core.arith.sw = 18;
  cfg.core.arith.bw = 40;  // 58 bits: 8-byte entries; s [17:0], b [57:18], zero [63:58]
  const std::string md = emit_markdown(accel_register_map(cfg));
  EXPECT_NE(md.find("the C header `normcore_regs.h`"), std::string::npos);
  const auto at = md.find("Values of ERR_CODE.code:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(md.find("## 0x02C ERR_CODE"), at);
  EXPECT_GT(md.find("## 0x030 ERR_ADDR_LO"), at);
  ASSERT_EQ(accel_error_codes().size(), 11U);
  for (const auto& e : accel_error_codes()) {
    EXPECT_NE(md.find("| " + std::to_string(static_cast<int>(e.code)) + " | " + e.name + " | " +
                      e.meaning + " |"),
              std::string::npos)
        << e.name;
  }
  const auto pt = md.find("## Parameter table in memory");
  ASSERT_NE(pt, std::string::npos);
  const std::string tail = md.substr(pt);
  EXPECT_NE(tail.find("C entries of 8 bytes"), std::string::npos);
  EXPECT_NE(tail.find("| [17:0] | scale s[c], 18-bit"), std::string::npos);
  EXPECT_NE(tail.find("| [57:18] | offset b[c], 40-bit"), std::string::npos);
  EXPECT_NE(tail.find("| [63:58] | zero |"), std::string::npos);
  EXPECT_NE(tail.find("entry c = s[c] | b[c] << 18"), std::string::npos);
  cfg.core.arith.bw = 48;  // 66 bits: 16-byte entries
  const std::string wide = emit_markdown(accel_register_map(cfg));
  EXPECT_NE(wide.find("C entries of 16 bytes"), std::string::npos);
  EXPECT_NE(wide.find("| [127:66] | zero |"), std::string::npos);
}

}  // namespace
}  // namespace normcore::gen
