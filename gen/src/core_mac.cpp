// The core lane's multiply-add stage: lo = x * s + b and the accumulator acc = {sign, lo}.
#include "core_mac.hpp"

#include "ref_internal.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::slice;
using ex::zext;

namespace {

struct MacWidths {
  int xw, sw, bw, aw;
  MacWidths(const CoreConfig& c, const Variant& v)
      : xw(c.arith.xw), sw(c.arith.sw), bw(c.arith.bw), aw(v.aw) {}
};

// The folded multiply-add, all of it inside the DSP: lo = x * s + b modulo 2^W, W = AW - 1 (the
// width of the wider operand), written as a signed product at its own width (ex::smul) plus b, so
// that Yosys maps the add into SB_MAC16's 32-bit adder (DSP48's post-adder) with the DSP's input
// and output registers. acc's top bit is not computed by the DSP: both operands fit W signed bits,
// so acc[W] = MAJ(sign of the product, sign of b, lo[W-1]) (equal signs: that sign; else no
// overflow: lo's sign), one LUT3 after the DSP. The product's sign is taken as sign(x) ^ sign(s),
// wrong only when the product is 0, where lo = b and the majority is b's sign either way.
// The wires: lo_d (into the DSP's output register) and the two sign bits.
void lane_mac(Module& m, const CoreConfig& c, const MacWidths& w) {
  Expr x = m.ref("x_i"), s = m.ref("s_i"), b = m.ref("b_i");
  if (c.pipe_xbar()) {
    m.section("Input registers (DSP A/B/C registers)");
    const Expr xq = m.reg("x_q", w.xw), sq = m.reg("s_q", w.sw), bq = m.reg("b_q", w.bw);
    m.flops({{xq, x, {}}, {sq, s, {}}, {bq, b, {}}});
    x = xq, s = sq, b = bq;
  }
  const int W = w.aw - 1, xsw = c.arith.x_signed ? w.xw : w.xw + 1;
  m.section("Multiply-add in the DSP: lo = (x * s + b) mod 2^" + std::to_string(W));
  const Expr x_s = m.wire("x_s", xsw, c.arith.x_signed ? "" : "x, zero-extended", true);
  m.assign(x_s, c.arith.x_signed ? x : zext(x, xsw));
  const Expr s_s = m.wire("s_s", w.sw, "", true);
  m.assign(s_s, s);
  const Expr b_s = m.wire("b_s", W, "", true);
  const Expr lo_d = m.wire("lo_d", W, "", true);
  const Expr bsg_d = m.wire("bsg_d", 1, "sign of b");
  const Expr psg_d = m.wire("psg_d", 1, "sign of x * s (either value when it is 0)");
  // The product at its own width pw (a natively narrow multiplier), then the add of the
  // sign-extended product: Yosys reduces the add's redundant sign bits itself and packs both into
  // SB_MAC16 (with the 32-bit add written as one `x * s + b`, whether the add was packed depended
  // on the order in which Yosys's wreduce visited the two cells).
  const int pw = w.xw + w.sw;  // |x * s| < 2^(pw - 1)
  const Expr prod = m.wire("prod", pw, "exact", true);
  m.assign(prod, ex::smul(x_s, s_s, pw));
  Expr p = prod;
  if (c.pipe_prod()) {
    // The product registered before the add (MULT18X18D's pipeline register; Yosys 0.23 keeps
    // it in the fabric on ECP5), b delayed beside it; the add is then a W-bit carry chain.
    const Expr pq = m.reg("prod_q", pw, "", true),
               bq = m.reg("bp_q", w.bw, "b, beside the product");
    m.flops({{pq, prod, {}}, {bq, b, {}}}, "the multiplier's output register");
    p = pq, b = bq;
    m.assign(psg_d, bit(pq, pw - 1));
  } else {
    m.assign(psg_d, c.arith.x_signed ? bit(x, w.xw - 1) ^ bit(s, w.sw - 1) : bit(s, w.sw - 1));
  }
  m.assign(b_s, w.bw == W ? b : ex::sext(b, W));
  m.assign(lo_d, (pw == W ? p : ex::as_signed(ex::sext(p, W))) + b_s);
  m.assign(bsg_d, bit(b, w.bw - 1));
}

// ECP5's registers of the product inside MULT18X18D (the REG_*_CLK parameters set): its A/B
// input registers and its output register, two cycles as in the fabric version (x_q, prod_q);
// the add after it is a W-bit carry chain in the fabric. Measured (nextpnr-ecp5 0.11, seed 1,
// one lane): with the pipeline register instead of the output register, P's clock-to-out is
// 3.86 ns and P -> carry chain -> lo_q the worst path (7.02 ns, 142.4 MHz); with the output
// register the worst path is elsewhere (145.5 MHz).
const std::vector<std::string>& mult18_regs() {
  static const std::vector<std::string> r{"REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_OUTPUT_CLK"};
  return r;
}

// --target ecp5 at pipeline >= 9 with operands of at most 18 signed bits: the product in one
// MULT18X18D with its own registers, instantiated under `ifdef SYNTHESIS (Yosys defines it on
// read_verilog; Yosys 0.23's inference would leave every register in the fabric), and the same
// two registers written behaviourally otherwise (simulators and lint need no vendor cells).
// tests/rtl/ecp5_dsp.sh simulates the instantiated branch against the golden model.
void lane_mac_ecp5(Module& m, const CoreConfig& c, const MacWidths& w) {
  const Expr x = m.ref("x_i"), s = m.ref("s_i"), b = m.ref("b_i");
  const int W = w.aw - 1, xsw = c.arith.x_signed ? w.xw : w.xw + 1, pw = w.xw + w.sw;
  m.section("Multiply in MULT18X18D: x * s two cycles later (its input and output registers)");
  const Expr x_s = m.wire("x_s", xsw, c.arith.x_signed ? "" : "x, zero-extended", true);
  m.assign(x_s, c.arith.x_signed ? x : zext(x, xsw));
  const Expr s_s = m.wire("s_s", w.sw, "", true);
  m.assign(s_s, s);
  const Expr prod = m.wire("prod", pw, "x * s (exact), two cycles after x_i, s_i", true);
  m.ifdef("SYNTHESIS");
  const Expr a18 = m.wire("mult_a", 18, "x, sign-extended to A's 18 bits");
  m.assign(a18, xsw == 18 ? x_s : ex::sext(x_s, 18));
  const Expr b18 = m.wire("mult_b", 18, "s, sign-extended to B's 18 bits");
  m.assign(b18, w.sw == 18 ? s_s : ex::sext(s_s, 18));
  const Expr mp = m.wire("mult_p", 36, "A * B, 36-bit signed");
  mult18x18d(m, Mult18{"u_mult18", "", m.ref("clk_i"), a18, 0, b18, 0, mp, 0, mult18_regs()},
             "P = A * B, 18 x 18 signed, with the DSP's input and output registers");
  m.assign(prod, slice(mp, 0, pw));
  if (pw < 36)
    m.assign(m.wire("unused_mult_p", 1, "|x * s| < 2^" + std::to_string(pw - 1)),
             ex::red_xor(slice(mp, pw, 36 - pw)));
  m.else_();
  const Expr xq = m.reg("x_q", xsw, "MULT18X18D's A register", true),
             sq = m.reg("s_q", w.sw, "its B register", true),
             pq = m.reg("prod_q", pw, "its output register", true);
  m.flops({{xq, x_s, {}}, {sq, s_s, {}}, {pq, ex::smul(xq, sq, pw), {}}},
          "the same registers outside the DSP (simulation)");
  m.assign(prod, pq);
  m.endif();
  m.section("+ b in the fabric: lo = (x * s + b) mod 2^" + std::to_string(W) +
            ", b delayed beside the product");
  const Expr bq = m.reg("b_q", w.bw), bp = m.reg("bp_q", w.bw, "b, beside the product");
  m.flops({{bq, b, {}}, {bp, bq, {}}});
  const Expr b_s = m.wire("b_s", W, "", true);
  m.assign(b_s, w.bw == W ? bp : ex::sext(bp, W));
  const Expr lo_d = m.wire("lo_d", W, "", true);
  m.assign(lo_d, (pw == W ? prod : ex::as_signed(ex::sext(prod, W))) + b_s);
  m.assign(m.wire("bsg_d", 1, "sign of b"), bit(bp, w.bw - 1));
  m.assign(m.wire("psg_d", 1, "sign of x * s"), bit(prod, pw - 1));
}

// The folded lane's accumulator: the DSP's output register lo_q and the sign bits beside it;
// acc = {MAJ(psg, bsg, lo[W-1]), lo}.
void lane_acc(Module& m, const CoreConfig& c, const MacWidths& w) {
  const int W = w.aw - 1;
  const Expr lo = m.reg("lo_q", W, "the DSP's output register", true);
  if (c.xilinx_attrs()) m.attr_last("use_dsp = \"yes\"");
  const Expr bsg = m.reg("bsg_q", 1), psg = m.reg("psg_q", 1);
  m.flops({{lo, m.ref("lo_d"), {}}, {bsg, m.ref("bsg_d"), {}}, {psg, m.ref("psg_d"), {}}});
  const Expr top = bit(lo, W - 1);
  const Expr sg = m.wire("acc_sg", 1, "acc < 0: the majority of the two signs and lo's");
  m.assign(sg, (psg & bsg) | (psg & top) | (bsg & top));
  m.assign(m.wire("acc", w.aw), cat({sg, lo}));
}

}  // namespace

bool mac_in_mult18(const CoreConfig& c) {
  const bool xs = c.arith.x_signed;
  return c.target == "ecp5" && c.pipe_prod() && (xs ? c.arith.xw : c.arith.xw + 1) <= 18 &&
         c.arith.sw <= 18;
}

std::string mac_stages(const CoreConfig& c) {
  if (mac_in_mult18(c)) return "[x*s in MULT18X18D] [+b] ";
  return c.pipe_prod() ? "[x*s] [+b] " : "[x*s+b in the DSP] ";
}

void lane_mac_acc(Module& m, const CoreConfig& c, const Variant& v) {
  const MacWidths w(c, v);
  if (mac_in_mult18(c)) {
    lane_mac_ecp5(m, c, w);
  } else {
    lane_mac(m, c, w);
  }
  lane_acc(m, c, w);
}

}  // namespace normcore::gen::core
