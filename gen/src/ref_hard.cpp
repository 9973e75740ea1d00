// Hard-block references of the PPA harness (docs/ppa.md): LANES copies of one FPGA DSP primitive,
// instantiated with its own input, pipeline and output registers, nothing in the fabric:
//   hard-mac-ice40   SB_MAC16: p = a * b + c, 16 x 16 signed, the 32-bit add in the DSP's adder
//                    (C, D the addend's halves), A/B/C/D, 8x8 + 16x16 product and output regs
//   hard-mac-ecp5    MULT18X18D: p = a * b, 18 x 18 signed, input A/B, pipeline, output regs
//                    (no ALU54B: the add is not used)
//   hard-mac-xilinx  DSP48E1: p = a * b + c, 25 x 18 signed + 48, A/B/C/M/P registers
// c enters later than a and b (its one register meets the product after the multiplier's
// registers): p(t + latency) = a(t) * b(t) + c(t + latency - c_latency).
#include <stdexcept>
#include <string>

#include "normcore/gen/ref_designs.hpp"
#include "ref_internal.hpp"

namespace normcore::gen {
namespace {

using ex::bit;
using ex::lit;
using ex::slice;

std::string lane_name(const std::string& base, int i) {
  return base + "_" + std::to_string(i);
}

InstParam num(const std::string& name, int width, std::uint64_t v) {
  return {name, width, v, {}};
}
InstParam str(const std::string& name, const std::string& v) {
  return {name, 0, 0, v};
}

// Outputs of a primitive that the reference leaves unread: wires named unused_* (Verilator's
// default --unused-regexp), declared once per lane.
Expr unused(Module& m, const std::string& port, int width, int lane) {
  return m.wire("unused_" + lane_name(port, lane), width);
}

// a, b, p: the lane's slices; c: the whole c_i port (its halves are sliced here).
void ice40_lane(Module& m, int i, const Expr& clk, const Expr& a, const Expr& b, const Expr& c,
                const Expr& p) {
  const int cw = 32;
  const Expr zero = lit(1, 0);
  Instance in{"SB_MAC16", lane_name("u_mac16", i), std::vector<std::pair<std::string, Expr>>{}};
  in.comment = "lane " + std::to_string(i) + ": O = {C, D} + A * B, every register in the DSP";
  in.parameters = {num("NEG_TRIGGER", 1, 0),
                   num("C_REG", 1, 1),
                   num("A_REG", 1, 1),
                   num("B_REG", 1, 1),
                   num("D_REG", 1, 1),
                   num("TOP_8x8_MULT_REG", 1, 1),
                   num("BOT_8x8_MULT_REG", 1, 1),
                   num("PIPELINE_16x16_MULT_REG1", 1, 1),
                   num("PIPELINE_16x16_MULT_REG2", 1, 1),
                   num("TOPOUTPUT_SELECT", 2, 1),       // the top accumulator register
                   num("TOPADDSUB_LOWERINPUT", 2, 2),   // product[31:16]
                   num("TOPADDSUB_UPPERINPUT", 1, 1),   // C
                   num("TOPADDSUB_CARRYSELECT", 2, 2),  // carry from the bottom adder
                   num("BOTOUTPUT_SELECT", 2, 1),
                   num("BOTADDSUB_LOWERINPUT", 2, 2),  // product[15:0]
                   num("BOTADDSUB_UPPERINPUT", 1, 1),  // D
                   num("BOTADDSUB_CARRYSELECT", 2, 0),
                   num("MODE_8x8", 1, 0),
                   num("A_SIGNED", 1, 1),
                   num("B_SIGNED", 1, 1)};
  in.connections = {{"CLK", clk}, {"CE", lit(1, 1)}, {"C", slice(c, i * cw + 16, 16)},
                    {"A", a},     {"B", b},          {"D", slice(c, i * cw, 16)}};
  for (const char* z : {"AHOLD", "BHOLD", "CHOLD", "DHOLD", "IRSTTOP", "IRSTBOT", "ORSTTOP",
                        "ORSTBOT", "OLOADTOP", "OLOADBOT", "ADDSUBTOP", "ADDSUBBOT", "OHOLDTOP",
                        "OHOLDBOT", "CI", "ACCUMCI", "SIGNEXTIN"}) {
    in.connections.emplace_back(z, zero);
  }
  in.connections.emplace_back("O", p);
  for (const char* o : {"CO", "ACCUMCO", "SIGNEXTOUT"}) {
    in.connections.emplace_back(o, unused(m, o, 1, i));
  }
  m.instance(std::move(in));
}

// a, b, p: the whole ports (one bit per primitive pin).
void ecp5_lane(Module& m, int i, const Expr& clk, const Expr& a, const Expr& b, const Expr& p) {
  const int w = 18, pw = 36;
  Mult18 in{lane_name("u_mult18", i),
            "_" + std::to_string(i),
            clk,
            a,
            i * w,
            b,
            i * w,
            p,
            i * pw,
            {"REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK"}};
  mult18x18d(m, in,
             "lane " + std::to_string(i) + ": P = A * B, input, pipeline and output registers");
}

// a: the whole a_i port (the lane's 25 bits sign-extended to A's 30 here); b, c, p: slices.
void xilinx_lane(Module& m, int i, const Expr& clk, const Expr& a, const Expr& b, const Expr& c,
                 const Expr& p) {
  const int aw = 25;
  const Expr a30 = ex::cat({ex::repl(5, bit(a, i * aw + aw - 1)), slice(a, i * aw, aw)});
  Instance in{"DSP48E1", lane_name("u_dsp48", i), std::vector<std::pair<std::string, Expr>>{}};
  in.comment = "lane " + std::to_string(i) + ": P = C + A * B (OPMODE Z = C, X:Y = M)";
  in.parameters = {num("AREG", 32, 1),       num("BREG", 32, 1),       num("ACASCREG", 32, 1),
                   num("BCASCREG", 32, 1),   num("CREG", 32, 1),       num("MREG", 32, 1),
                   num("PREG", 32, 1),       num("ADREG", 32, 0),      num("DREG", 32, 0),
                   num("ALUMODEREG", 32, 0), num("CARRYINREG", 32, 0), num("CARRYINSELREG", 32, 0),
                   num("INMODEREG", 32, 0),  num("OPMODEREG", 32, 0),  str("USE_MULT", "MULTIPLY"),
                   str("USE_DPORT", "FALSE")};
  in.connections = {{"CLK", clk},
                    {"A", a30},
                    {"B", b},
                    {"C", c},
                    {"D", lit(25, 0)},
                    {"ACIN", lit(30, 0)},
                    {"BCIN", lit(18, 0)},
                    {"PCIN", lit(48, 0)},
                    {"ALUMODE", lit(4, 0)},
                    {"OPMODE", lit(7, 0x35)},
                    {"INMODE", lit(5, 0)},
                    {"CARRYINSEL", lit(3, 0)}};
  for (const char* z :
       {"CARRYCASCIN", "CARRYIN", "MULTSIGNIN", "RSTA", "RSTALLCARRYIN", "RSTALUMODE", "RSTB",
        "RSTC", "RSTCTRL", "RSTD", "RSTINMODE", "RSTM", "RSTP"}) {
    in.connections.emplace_back(z, lit(1, 0));
  }
  for (const char* ce : {"CEA1", "CEA2", "CEAD", "CEALUMODE", "CEB1", "CEB2", "CEC", "CECARRYIN",
                         "CECTRL", "CED", "CEINMODE", "CEM", "CEP"}) {
    in.connections.emplace_back(ce, lit(1, 1));
  }
  in.connections.emplace_back("P", p);
  const std::pair<const char*, int> outs[] = {
      {"ACOUT", 30},      {"BCOUT", 18},   {"CARRYCASCOUT", 1},   {"CARRYOUT", 4},
      {"MULTSIGNOUT", 1}, {"OVERFLOW", 1}, {"PATTERNBDETECT", 1}, {"PATTERNDETECT", 1},
      {"PCOUT", 48},      {"UNDERFLOW", 1}};
  for (const auto& [o, w] : outs) in.connections.emplace_back(o, unused(m, o, w, i));
  m.instance(std::move(in));
}

}  // namespace

// MULT18X18D has one port per bit: <base>0 .. <base><n-1> from bits lo .. lo + n - 1 of e.
void pin_bits(Instance& in, const std::string& base, const Expr& e, int lo, int n) {
  for (int k = 0; k < n; ++k) {
    in.connections.emplace_back(base + std::to_string(k), bit(e, lo + k));
  }
}

void mult18x18d(Module& m, const Mult18& d, std::string comment) {
  Instance in{"MULT18X18D", d.name, std::vector<std::pair<std::string, Expr>>{}};
  in.comment = std::move(comment);
  for (const auto& r : d.regs) in.parameters.push_back(str(r, "CLK0"));
  pin_bits(in, "A", d.a, d.a_lo, 18);
  pin_bits(in, "B", d.b, d.b_lo, 18);
  for (int k = 0; k < 18; ++k) in.connections.emplace_back("C" + std::to_string(k), lit(1, 0));
  in.connections.emplace_back("SIGNEDA", lit(1, 1));
  in.connections.emplace_back("SIGNEDB", lit(1, 1));
  in.connections.emplace_back("SOURCEA", lit(1, 0));
  in.connections.emplace_back("SOURCEB", lit(1, 0));
  // CLK1..3, CE1..3, RST1..3 and the shift inputs SRIA / SRIB stay unconnected, as in Yosys's
  // own MULT18X18D mapping: tied to a constant, nextpnr-ecp5 0.11 fails to route them.
  in.connections.emplace_back("CLK0", d.clk);
  in.connections.emplace_back("CE0", lit(1, 1));
  in.connections.emplace_back("RST0", lit(1, 0));
  for (const char* o : {"SROA", "SROB", "ROA", "ROB", "ROC"}) {
    pin_bits(in, o, m.wire(std::string("unused_") + o + d.suffix, 18), 0, 18);
  }
  pin_bits(in, "P", d.p, d.p_lo, 36);
  in.connections.emplace_back("SIGNEDP", m.wire("unused_SIGNEDP" + d.suffix, 1));
  m.instance(std::move(in));
}

bool is_hard_mac(RefDesign d) {
  return d == RefDesign::hard_mac_ice40 || d == RefDesign::hard_mac_ecp5 ||
         d == RefDesign::hard_mac_xilinx;
}

HardMacSpec hard_mac_spec(RefDesign d) {
  switch (d) {
    case RefDesign::hard_mac_ice40:
      return {"ice40", "SB_MAC16", 16, 16, 32, 32, 4, 2};
    case RefDesign::hard_mac_ecp5:
      return {"ecp5", "MULT18X18D", 18, 18, 0, 36, 3, 0};
    case RefDesign::hard_mac_xilinx:
      return {"xilinx", "DSP48E1", 25, 18, 48, 48, 3, 2};
    default:
      break;
  }
  throw std::logic_error("hard_mac_spec: not a hard-block design");
}

Module build_hard_mac(const CoreConfig& c, RefDesign d) {
  const HardMacSpec s = hard_mac_spec(d);
  const int L = c.lanes;
  Module m;
  m.name = ref_top_name(c, d);
  m.description = {
      "Reference: " + std::to_string(L) + " " + s.primitive + " (" + s.family +
          ") with the DSP's own input, pipeline and output registers;",
      "no fabric logic.",
      "p(t + " + std::to_string(s.latency) + ") = a(t) * b(t)" +
          (s.cw > 0 ? " + c(t + " + std::to_string(s.latency - s.c_latency) + ")" : "") +
          ", signed, lane 0 in the low bits."};
  const Expr clk = m.in("clk_i", 1);
  const Expr a = m.in("a_i", L * s.aw, "lane 0 in the low bits");
  const Expr b = m.in("b_i", L * s.bw);
  const Expr cc = s.cw > 0 ? m.in("c_i", L * s.cw) : Expr();
  const Expr p = m.out("p_o", L * s.pw);
  for (int i = 0; i < L; ++i) {
    const Expr ai = slice(a, i * s.aw, s.aw), bi = slice(b, i * s.bw, s.bw);
    const Expr pi = slice(p, i * s.pw, s.pw);
    if (d == RefDesign::hard_mac_ice40) {
      ice40_lane(m, i, clk, ai, bi, cc, pi);
    } else if (d == RefDesign::hard_mac_ecp5) {
      ecp5_lane(m, i, clk, a, b, p);
    } else {
      xilinx_lane(m, i, clk, a, bi, slice(cc, i * s.cw, s.cw), pi);
    }
  }
  return m;
}

}  // namespace normcore::gen
