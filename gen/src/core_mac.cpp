// The core lane's multiply-add stage: lo = x * s + b and the accumulator acc = {sign, lo}.
#include "core_mac.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
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

std::string mac_stages(const CoreConfig& c) {
  return c.pipe_prod() ? "[x*s] [+b] " : "[x*s+b in the DSP] ";
}

void lane_mac_acc(Module& m, const CoreConfig& c, const Variant& v) {
  const MacWidths w(c, v);
  lane_mac(m, c, w);
  lane_acc(m, c, w);
}

}  // namespace normcore::gen::core
