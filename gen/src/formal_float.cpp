// Verification-only files of `normcore gen --formal` for a float lane (gen/src/core_flane.cpp):
// the behavioural reference of the float contract (docs/contract.md section 9) for one element,
// written as the contract reads and not as the lane computes it, and the proof harness.
//
// The reference computes v = x * s + b EXACTLY as one integer in a fixed-point window whose LSB
// has the exponent of the smallest possible product LSB (EMIN = x's smallest LSB exponent + s's,
// -173 for fp16 x, -282 for bf16 x), wide enough for every finite operand (the widths are
// derived in float_window below and written into the file), then rounds |v| once: to nearest
// even at the output's LSB (the leading bit's exponent - man_bits, at least the subnormal LSB),
// with the IEEE encoding's carry (pattern + 1: a carry out of the fraction bumps the exponent,
// into the all-ones exponent is Inf), or to an integer with the job's mode. No narrow window, no
// alignment, no round-to-odd: nothing of the lane's stage structure.
#include <sstream>
#include <string>

#include "core_internal.hpp"
#include "normcore/float_contract.hpp"
#include "normcore/gen/formal.hpp"

namespace normcore::gen {

namespace {

using std::to_string;

// The exact window: EMIN (exponent of its LSB), MW (bits of |v|), XOFF (b's LSB position).
struct Window {
  int px = 0;     // x's precision (hidden bit included)
  int pw = 0;     // significand product bits: px + 24
  int emin = 0;   // exponent of the window's LSB: x's smallest LSB exponent + s's (-149)
  int xoff = 0;   // window position of b's smallest LSB (2^-149): -149 - emin
  int pbits = 0;  // the product placed: < 2^(pw + xpos_max + spos_max)
  int bbits = 0;  // b placed: < 2^(24 + spos_max + xoff)
  int mw = 0;     // |v| < 2^mw: one more than the larger (the sum's carry)
};

Window float_window(const FloatFormat& fx) {
  Window w;
  w.px = fx.man_bits + 1;
  w.pw = w.px + 24;
  const int x_lsb = fx.emin() - fx.man_bits;  // smallest LSB exponent of x (subnormal grid)
  w.emin = x_lsb - 149;
  w.xoff = -x_lsb;
  const int xpos_max = (1 << fx.exp_bits) - 3;  // pos = max(e, 1) - 1 of the largest finite
  const int spos_max = 253;
  w.pbits = w.pw + xpos_max + spos_max;
  w.bbits = 24 + spos_max + w.xoff;
  w.mw = (w.pbits > w.bbits ? w.pbits : w.bbits) + 1;
  return w;
}

// One operand's fields and class, its significand (0 for a zero) and its position pos =
// max(e, 1) - 1: value = sig * 2^(pos + LSB exponent of the smallest subnormal).
std::string unpack(const std::string& n, const std::string& in, const FloatFormat& f, bool flush,
                   int posw) {
  const int e = f.exp_bits, m = f.man_bits, top = f.bits - 1;
  std::ostringstream o;
  o << "  wire " << n << "s = " << in << "[" << top << "];\n"
    << "  wire [" << e - 1 << ":0] " << n << "e = " << in << "[" << top - 1 << ":" << m << "];\n"
    << "  wire [" << m - 1 << ":0] " << n << "m = " << in << "[" << m - 1 << ":0];\n"
    << "  wire " << n << "_nan = &" << n << "e && |" << n << "m;\n"
    << "  wire " << n << "_inf = &" << n << "e && !(|" << n << "m);\n"
    << "  wire " << n << "_sub = !(|" << n << "e);\n"
    << "  wire " << n << "_zero = " << n << "_sub && "
    << (flush ? "1'b1;  // flush" : "!(|" + n + "m);") << "\n"
    << "  wire [" << m << ":0] " << n << "sig = " << n << "_zero ? " << m + 1 << "'d0 : {!" << n
    << "_sub, " << n << "m};\n"
    << "  wire [" << posw - 1 << ":0] " << n << "pos = " << n << "_sub ? " << posw << "'d0 : " << n
    << "e - 1'b1;\n";
  return o.str();
}

std::string ports(const CoreConfig& c, int yw) {
  const auto& a = c.arith;
  std::ostringstream o;
  o << "  input  wire [15:0] x_i,  // " << to_string(a.x_type) << "\n"
    << "  input  wire [31:0] s_i,  // fp32\n  input  wire [31:0] b_i,  // fp32\n";
  if (a.y_type == NumType::integer)
    o << "  input  wire [1:0] round_i,  // 0 floor, 1 half_up, 2 half_even, 3 half_away\n";
  o << "  input  wire [" << yw - 1 << ":0] lo_i,\n  input  wire [" << yw - 1 << ":0] hi_i,\n"
    << "  output wire [" << yw - 1 << ":0] y_o,\n"
    << "  output wire [9:0] psh_o,  // the product's and b's shifts, for the harness's shift "
       "lemma\n  output wire [9:0] bsh_o\n);\n";
  return o.str();
}

// Unpack, the special classes (section 9's "Special values"), the exact signed sum v, |v|.
std::string exact_sum(const CoreConfig& c, const Window& w) {
  const FloatFormat fx = float_format(c.arith.x_type), f32 = float_format(NumType::fp32);
  const bool fl = c.arith.flush_subnormals;
  std::ostringstream o;
  o << unpack("x", "x_i", fx, fl, 10) << unpack("s", "s_i", f32, fl, 10)
    << unpack("b", "b_i", f32, fl, 10);
  o << "  wire pinf = x_inf || s_inf, pzero = x_zero || s_zero, psign = xs ^ ss;\n"
       "  wire nan = x_nan || s_nan || b_nan || (pinf && pzero) || (pinf && b_inf && psign != "
       "bs);\n"
       "  wire inf = !nan && (pinf || b_inf);\n"
       "  wire inf_neg = pinf ? psign : bs;\n"
       "  wire zsum = !nan && !inf && pzero && b_zero;  // a sum of two exact zeros\n";
  o << "  // v = x * s + b, exact: an integer times 2^EMIN. The product xsig * ssig (written as "
       "the\n  // lane writes it, for scripts/prove.sh's product cut) sits at position xpos + "
       "spos, "
       "b at\n  // bpos + XOFF; MW bits hold |product| + |b| for every finite operand.\n";
  o << "  localparam integer EMIN = " << w.emin << ", XOFF = " << w.xoff << ", MW = " << w.mw
    << ";\n";
  o << "  wire [" << w.pw - 1 << ":0] p = {" << w.pw - w.px << "'d0, xsig} * {" << w.pw - 24
    << "'d0, ssig};\n";
  o << "  wire [9:0] psh = xpos + spos, bsh = bpos + XOFF;  // < " << w.pbits - w.pw + 1 << ", < "
    << w.bbits - 24 + 1 << "\n";
  o << "  wire [MW-1:0] pv = {{(MW-" << w.pw << "){1'b0}}, p} << psh;  // < 2^" << w.pbits << "\n"
    << "  wire [MW-1:0] bv = {{(MW-24){1'b0}}, bsig} << bsh;  // < 2^" << w.bbits << "\n"
    << "  wire [MW:0] ps = psign ? -{1'b0, pv} : {1'b0, pv};\n"
    << "  wire [MW:0] bsv = bs ? -{1'b0, bv} : {1'b0, bv};\n"
    << "  assign psh_o = psh, bsh_o = bsh;\n"
    << "  wire [MW:0] v = ps + bsv;  // two's complement, |v| < 2^MW\n"
    << "  wire neg = v[MW];\n"
    << "  wire [MW:0] vabs = neg ? -v : v;\n"
    << "  wire [MW-1:0] mag = vabs[MW-1:0];\n";
  return o.str();
}

// Float y: RNE of |v| at the output's LSB, IEEE packing by pattern + 1, the clamp.
std::string round_float(const CoreConfig& c, const Window& w) {
  const NumType yt = c.arith.y_type;
  const FloatFormat fy = float_format(yt);
  const int ym = fy.man_bits, ye = fy.exp_bits, yw = fy.bits;
  const int lsbmin = fy.emin() - ym - w.emin;  // the subnormal LSB's window position
  const int tw = 10 + ym + 2;
  std::ostringstream o;
  o << "  // Round |v| once. lead: the position of its leading 1; k: the output LSB's position\n"
       "  // (lead - YM, at least LSBMIN, the subnormal LSB); the pattern {exponent field, "
       "fraction}\n  // of the truncated value is ((k - LSBMIN) << YM) + (mag >> k), and RNE adds "
       "1 to it.\n";
  o << "  localparam integer YM = " << ym << ", LSBMIN = " << lsbmin << ";\n";
  o << "  integer i;\n  reg [9:0] lead;\n"
       "  always @* begin\n    lead = 10'd0;\n"
       "    for (i = 0; i < MW; i = i + 1) if (mag[i]) lead = i;\n  end\n";
  o << "  wire [9:0] k = lead >= LSBMIN + YM ? lead - YM : LSBMIN;\n"
       "  wire [MW-1:0] one = 1;\n"
       "  wire [MW-1:0] q = mag >> k;  // < 2^(YM + 1)\n"
       "  wire g = mag[k - 1'b1];  // the half bit\n"
       "  wire st = |(mag & ((one << (k - 1'b1)) - one));  // sticky: below the half bit\n";
  o << "  wire [" << tw - 1 << ":0] t = ((k - LSBMIN) << YM) + q[YM:0];\n"
    << "  wire [" << tw - 1 << ":0] r = t + (g && (st || q[0]));\n"
    << "  wire ovf = r >= " << tw << "'d" << fy.exp_mask() << ";  // rounds to >= 2^(emax+1): Inf\n"
    << "  wire subn = r < " << tw << "'d" << (1U << ym) << ";  // a subnormal result\n";
  const std::string sgn = "{neg, " + to_string(yw - 1) + "'d";
  o << "  wire [" << yw - 1 << ":0] yfin = mag == 0 ? " << yw << "'d0  // exact cancellation: +0\n"
    << "      : ovf ? " << sgn << fy.exp_mask() << "}\n"
    << (c.arith.flush_subnormals ? "      : subn ? " + sgn + "0}  // flush\n" : "")
    << "      : {neg, r[" << ye + ym - 1 << ":0]};\n";
  o << "  wire [" << yw - 1 << ":0] yv = nan ? " << yw << "'h" << std::hex << canonical_nan(yt)
    << std::dec << " : inf ? {inf_neg, " << yw - 1 << "'d" << fy.exp_mask()
    << "} : zsum ? {psign && bs, " << yw - 1 << "'d0} : yfin;\n";
  o << "  // the clamp: numeric order (sign-magnitude as a signed key: -0 = +0); NaN unclamped\n"
    << "  function signed [" << yw << ":0] key(input [" << yw - 1 << ":0] f);\n"
    << "    key = f[" << yw - 1 << "] ? -$signed({2'b0, f[" << yw - 2 << ":0]}) : $signed({2'b0, f["
    << yw - 2 << ":0]});\n  endfunction\n";
  o << "  assign y_o = nan ? yv : key(yv) < key(lo_i) ? lo_i : key(yv) > key(hi_i) ? hi_i : yv;\n";
  return o.str();
}

// Integer y: |v| rounded to an integer with the job's mode (the units bit is at window position
// -EMIN, a constant), the sign, min(max(., lo), hi) at full width; NaN and zero sums 0, Inf lo /
// hi.
std::string round_int(const CoreConfig& c, const Window& w) {
  const auto& a = c.arith;
  const int u = -w.emin, iw = w.mw - u + 3, yw = a.yw;
  std::ostringstream o;
  o << "  localparam integer U = " << u << ";  // window position of the units bit\n"
    << "  wire [MW-U-1:0] qi = mag[MW-1:U];  // |v| truncated\n"
    << "  wire [U-1:0] rem = mag[U-1:0];\n"
    << "  wire [U-1:0] half = {1'b1, {(U-1){1'b0}}};\n"
    << "  reg up;\n  always @* begin\n    case (round_i)\n"
    << "      2'd0: up = neg && rem != 0;  // floor: toward -inf\n"
    << "      2'd1: up = rem > half || (rem == half && !neg);  // half_up: ties toward +inf\n"
    << "      2'd2: up = rem > half || (rem == half && qi[0]);  // half_even\n"
    << "      default: up = rem >= half;  // half_away\n    endcase\n  end\n";
  const std::string ext =
      a.y_signed ? "{{(IW-" + to_string(yw) + "){lo_i[" + to_string(yw - 1) + "]}}, lo_i}"
                 : "{{(IW-" + to_string(yw) + "){1'b0}}, lo_i}";
  std::string exh = ext;
  for (std::size_t p = exh.find("lo_i"); p != std::string::npos; p = exh.find("lo_i"))
    exh.replace(p, 4, "hi_i");
  o << "  localparam integer IW = " << iw << ";\n"
    << "  wire signed [IW-1:0] ri = {{2{1'b0}}, qi} + up;\n"
    << "  wire signed [IW-1:0] vi = nan || zsum ? 0 : neg ? -ri : ri;\n"
    << "  wire signed [IW-1:0] lo = " << ext << ";\n"
    << "  wire signed [IW-1:0] hi = " << exh << ";\n"
    << "  wire signed [IW-1:0] mx = vi < lo ? lo : vi;  // max(v, lo)\n"
    << "  wire signed [IW-1:0] yc = mx > hi ? hi : mx;  // min(max(v, lo), hi): hi when lo > hi\n"
    << "  assign y_o = inf ? (inf_neg ? lo_i : hi_i) : yc[" << yw - 1 << ":0];\n";
  return o.str();
}

std::string flane_ref(const CoreConfig& c) {
  const auto& a = c.arith;
  const bool iy = a.y_type == NumType::integer;
  const Window w = float_window(float_format(a.x_type));
  const std::string n = c.name + "_lane_ref";
  std::ostringstream o;
  o << formal_header(c, "formal/" + n + ".v");
  o << "// Verification only (not synthesised): the float contract (docs/contract.md section 9)\n"
       "// for one element, the obvious way: v = x * s + b exactly, as an integer times 2^EMIN\n"
       "// in MW bits (EMIN: x's smallest LSB exponent + s's; MW: the largest finite product "
       "or b\n// placed, + 1 for the sum's carry; gen/src/formal_float.cpp derives them), "
    << (iy ? "rounded once to an\n// integer with the job's mode, then min(max(v, lo), hi)"
           : "rounded once\n// (RNE) to y's precision and exponent range, then clamped")
    << "; NaN / Inf / zero sums as the\n// contract says"
    << (a.flush_subnormals ? "; subnormal inputs and results flushed to signed zeros" : "")
    << ". Combinational; formal/" << c.name << "_lane_fv.v compares it with the lane.\n";
  o << "module " << n << " (\n" << ports(c, iy ? a.yw : float_bits(a.y_type));
  o << exact_sum(c, w) << (iy ? round_int(c, w) : round_float(c, w)) << "endmodule\n";
  return o.str();
}

// True leading-bit exponents (unbiased, subnormals included) of x, s, b: xl, sl, bl; the product's
// leading bit is at pl = xl + sl or pl + 1. hb: the index of the highest 1 of a 24-bit value.
std::string leads(const FloatFormat& fx) {
  const int m = fx.man_bits;
  // n's leading exponent: max(e, 1) - off + h, h = hb(sig) (the wire h_<v>, also read by the
  // shift lemma).
  auto lead = [](const std::string& n, const std::string& v, int top, int mb, int off) {
    const std::string e = v + "[" + to_string(top - 1) + ":" + to_string(mb) + "]";
    return "  wire [4:0] h_" + v + " = hb({" +
           (mb < 23 ? to_string(23 - mb) + "'d0, " : std::string()) + "|" + e + ", " + v + "[" +
           to_string(mb - 1) + ":0]});  // hb of " + v + "'s significand\n" +
           "  wire signed [11:0] " + n + " = (|" + e + " ? $signed({4'd0, " + e +
           "}) : 12'sd1) - 12'sd" + to_string(off) + " + $signed({7'd0, h_" + v + "});\n";
  };
  std::ostringstream o;
  o << "  function [4:0] hb(input [23:0] v);  // the index of the highest 1 (0 for 0)\n"
    << "    integer i;\n    begin\n      hb = 5'd0;\n"
    << "      for (i = 0; i < 24; i = i + 1) if (v[i]) hb = i[4:0];\n    end\n  endfunction\n"
    << "  // True leading-bit exponents (unbiased; subnormals included): x * s's leading bit is\n"
    << "  // at pl or pl + 1, b's at bl.\n"
    << lead("xl", "x", fx.bits - 1, m, fx.bias() + m) << lead("sl", "s", 31, 23, 150)
    << lead("bl", "b", 31, 23, 150) << "  wire signed [11:0] pl = xl + sl;\n";
  return o.str();
}

// The closed forms of two classes of ABOVE / BELOW (|dist| > 4; the dominant operand (the
// product for ABOVE, b for BELOW) decides the sign, and |v| is in [2^(dl - 1), 2^(dl + 3)) for
// its leading exponent dl): SAT (|v| beyond every y: integer y dl > YW, |v| >= 2^YW; float y
// dl >= emax + 2, |v| >= 2^(emax + 1): Inf) and TINY (integer y |v| < 1/2: dl <= -4 for ABOVE,
// <= -3 for BELOW; y = -1 with floor for a negative v, else 0; float y |v| < half the smallest
// subnormal: a signed zero), then the clamp. NORMCORE_FV_CLASS_TINY / _SAT: only that class, and
// the harness asserts lane == closed form and reference == closed form (a cut: both proven, so
// lane == reference there).
std::string closed_forms(const CoreConfig& c) {
  const bool iy = c.arith.y_type == NumType::integer;
  std::ostringstream o;
  o << "  wire c_far = c_fin && (dist > 12'sd4 || dist < -12'sd4);\n"
    << "  wire dom_p = dist > 0;  // the product dominates (ABOVE), else b (BELOW)\n"
    << "  wire signed [11:0] dl = dom_p ? pl : bl;\n"
    << "  wire dneg = dom_p ? x[15] ^ s[31] : b[31];  // the sign of v\n";
  if (iy) {
    const int yw = c.arith.yw, cw = yw + 3;
    const std::string cs = to_string(cw), big = to_string(1L << (yw + 1));
    auto ext = [&](const std::string& v) {
      return c.arith.y_signed ? "$signed({{3{" + v + "[" + to_string(yw - 1) + "]}}, " + v + "})"
                              : "$signed({3'd0, " + v + "})";
    };
    o << "  wire c_sat = c_far && dl >= 12'sd" << yw + 1 << ";  // |v| >= 2^" << yw << "\n"
      << "  wire c_tiny = c_far && dl <= (dom_p ? -12'sd4 : -12'sd3);  // |v| < 1/2\n"
      << "  wire signed [" << cw - 1 << ":0] r_cf = c_sat ? (dneg ? -" << cs << "'sd" << big
      << " : " << cs << "'sd" << big << ")\n      : (mode == 2'd0 && dneg) ? -" << cs
      << "'sd1 : " << cs << "'sd0;\n"
      << "  wire signed [" << cw - 1 << ":0] lo_cf = " << ext("lo") << ", hi_cf = " << ext("hi")
      << ";\n"
      << "  wire signed [" << cw - 1 << ":0] mx_cf = r_cf < lo_cf ? lo_cf : r_cf;\n"
      << "  wire signed [" << cw - 1 << ":0] yc_cf = mx_cf > hi_cf ? hi_cf : mx_cf;\n"
      << "  wire [" << yw - 1 << ":0] y_cf = yc_cf[" << yw - 1 << ":0];  // the closed form\n";
  } else {
    const FloatFormat fy = float_format(c.arith.y_type);
    const int yw = fy.bits, half = fy.emin() - fy.man_bits - 1;  // half the smallest subnormal
    o << "  wire c_sat = c_far && dl >= 12'sd" << fy.emax() + 2 << ";  // |v| >= 2^"
      << fy.emax() + 1 << ": Inf\n"
      << "  wire c_tiny = c_far && dl <= (dom_p ? -12'sd" << 3 - half << " : -12'sd" << 2 - half
      << ");  // |v| < 2^" << half << ": a signed zero\n"
      << "  wire [" << yw - 1 << ":0] yv_cf = c_sat ? {dneg, " << yw - 1 << "'d" << fy.exp_mask()
      << "} : {dneg, " << yw - 1 << "'d0};\n"
      << "  wire [" << yw - 1
      << ":0] y_cf = key(yv_cf) < key(lo) ? lo : key(yv_cf) > key(hi) ? "
         "hi : yv_cf;\n";
  }
  o << "`ifdef NORMCORE_FV_CLASS_TINY\n  wire in_cls = c_tiny;\n"
    << "`elsif NORMCORE_FV_CLASS_SAT\n  wire in_cls = c_sat;\n"
    << "`else\n  wire in_cls = 1'b1;\n`endif\n";
  return o.str();
}

// The case split (scripts/prove.sh, configurations named *_case_<c>_cut): with
// NORMCORE_FV_CASE_<C> the assertion is checked only for the elements whose own x, s, b are in
// case C (cd: the flag delayed with the element); the other elements stay free inputs. SPECIAL
// (a NaN / Inf among x, s, b); else ZEROS (x or s a zero, and b), ZEROP (x or s a zero, b
// not: v = b), ZEROB (b a zero, x and s not: v = x * s); for three finite non-zero operands by
// dist = pl - bl, the distance of the true leading exponents of the product (pl: its leading
// bit at pl or pl + 1) and b: NEAR (|dist| <= NORMCORE_FV_NEAR, default 4), ABOVE (> N),
// BELOW (< -N). The seven cover every element.
std::string cases(const CoreConfig& c, int lat) {
  const FloatFormat fx = float_format(c.arith.x_type);
  const int m = fx.man_bits;
  const bool fl = c.arith.flush_subnormals;
  auto field = [](const std::string& v, int hi, int lo) {
    return v + "[" + to_string(hi) + ":" + to_string(lo) + "]";
  };
  auto zero = [&](const std::string& v, int top, int mb) {
    return "(!(|" + field(v, top - 1, mb) + ") && " +
           (fl ? std::string("1'b1") : "!(|" + field(v, mb - 1, 0) + ")") + ")";
  };
  auto emax1 = [&](const std::string& v, int top, int mb) {
    const std::string e = field(v, top - 1, mb);
    return "(|" + e + " ? $signed({4'd0, " + e + "}) : 12'sd1)";
  };
  auto band = [](const std::string& k, const std::string& v) {
    return "`ifdef NORMCORE_FV_" + k + "_LO\n  wire in_" + k + " = " + v + " >= `NORMCORE_FV_" + k +
           "_LO && " + v + " <= `NORMCORE_FV_" + k + "_HI;\n`else\n  wire in_" + k +
           " = 1'b1;\n`endif\n";
  };
  std::ostringstream o;
  o << "  // Case split (`ifdef NORMCORE_FV_CASE_*; gen/src/formal_float.cpp): the assertion "
       "covers\n  // the elements of one case only; the seven cases cover every element.\n"
    << "`ifndef NORMCORE_FV_NEAR\n`define NORMCORE_FV_NEAR 4\n`endif\n"
    << "  wire c_special = &x[14:" << m << "] || &s[30:23] || &b[30:23];\n"
    << "  wire pz = " << zero("x", 15, m) << " || " << zero("s", 31, 23) << ";\n"
    << "  wire bz = " << zero("b", 31, 23) << ";\n"
    << "  wire c_fin = !c_special && !pz && !bz;\n"
    << leads(fx) << "  wire signed [11:0] dist = pl - bl;\n"
    << "  wire c_near = c_fin && dist <= `NORMCORE_FV_NEAR && dist >= -`NORMCORE_FV_NEAR;\n"
    << "`ifdef NORMCORE_FV_CASE_SPECIAL\n  wire in_case = c_special;\n"
    << "`elsif NORMCORE_FV_CASE_ZEROS\n  wire in_case = !c_special && pz && bz;\n"
    << "`elsif NORMCORE_FV_CASE_ZEROP\n  wire in_case = !c_special && pz && !bz;  // v = b\n"
    << "`elsif NORMCORE_FV_CASE_ZEROB\n  wire in_case = !c_special && !pz && bz;  // v = x * s\n"
    << "`elsif NORMCORE_FV_CASE_NEAR\n  wire in_case = c_near;\n"
    << "`elsif NORMCORE_FV_CASE_ABOVE\n  wire in_case = c_fin && dist > `NORMCORE_FV_NEAR;\n"
    << "`elsif NORMCORE_FV_CASE_BELOW\n  wire in_case = c_fin && dist < -`NORMCORE_FV_NEAR;\n"
    << "`else\n  wire in_case = 1'b1;\n`endif\n"
    << "  // Bands (optional, inside a case): b's exponent field, max(e, 1), in [BE_LO, BE_HI];\n"
    << "  // the product's, max(xe, 1) + max(se, 1), in [PE_LO, PE_HI]; the true leading\n"
    << "  // exponents pl in [PL_LO, PL_HI], bl in [BL_LO, BL_HI]; x's field in [XE_LO, XE_HI];\n"
    << "  // hb(xsig), x's significand's leading 1 (h_x), in [HX_LO, HX_HI].\n"
    << "  wire signed [11:0] be1 = " << emax1("b", 31, 23) << ";\n"
    << "  wire signed [11:0] pe1 = " << emax1("x", 15, m) << " + " << emax1("s", 31, 23) << ";\n"
    << "  wire signed [11:0] xe1 = " << emax1("x", 15, m) << ";  // x's field, max(e, 1)\n"
    << band("BE", "be1") << band("PE", "pe1") << band("PL", "pl") << band("BL", "bl")
    << band("XE", "xe1") << band("HX", "$signed({7'd0, h_x})") << closed_forms(c) << "  reg ["
    << lat - 1 << ":0] cd;  // in_case, delayed with the element\n"
    << "  always @(posedge clk_i) cd <= {cd[" << lat - 2
    << ":0], in_case && in_BE && in_PE && in_PL && in_BL && in_XE && in_HX && in_cls};\n";
  return o.str();
}

// The shift lemma (scripts/prove.sh: its own row per band row, NORMCORE_FV_SHIFT_PROVE, BMC of
// step 0 over free x, s, b; assumed with NORMCORE_FV_SHIFT_LEMMA): for finite non-zero x, s, b
// the reference's product shift psh = xpos + spos is pl - EMIN - hb(xsig) - hb(ssig) and b's
// shift bsh = bpos + XOFF is bl - EMIN - hb(bsig). So a band that fixes pl and bl fixes both
// shifts once the significands' leading bits are known (a normal operand's is its hidden bit),
// without a split by x's exponent field.
std::string shift_lemma(const CoreConfig& c) {
  const FloatFormat fx = float_format(c.arith.x_type);
  const int emin = float_window(fx).emin, xe = fx.exp_bits;
  auto lsb_exp = [](const std::string& v, int top, int e, int mb, int off) {
    const std::string f = v + "[" + to_string(top - 1) + ":" + to_string(mb) + "]";
    return "  wire [11:0] " + v + "_exp_l = {" + to_string(12 - e) + "'d0, ~|" + f + " ? " +
           to_string(e) + "'d1 : " + f + "} + 12'd" + to_string(4096 - off) + ";\n";
  };
  std::ostringstream o;
  o << "  // The shift lemma: the reference's shifts from the leading exponents pl, bl.\n"
    << "  wire signed [11:0] psh_l = pl + 12'sd" << -emin << " - $signed({7'd0, h_x}) - "
    << "$signed({7'd0, h_s});\n"
    << "  wire signed [11:0] bsh_l = bl + 12'sd" << -emin << " - $signed({7'd0, h_b});\n"
    << "  // The lane's exponents of the significands' LSBs, in its form (max(e, 1) - bias - man\n"
    << "  // bits, 12 bits; Yosys opt_merge shares them with the lane's): from pl and bl too.\n"
    << lsb_exp("x", fx.bits - 1, xe, fx.man_bits, fx.bias() + fx.man_bits)
    << lsb_exp("s", 31, 8, 23, 150) << lsb_exp("b", 31, 8, 23, 150)
    << "  wire [11:0] pexp_l = x_exp_l + s_exp_l;\n"
    << "  wire shift_ok = {2'b00, psh_r} == psh_l && {2'b00, bsh_r} == bsh_l\n"
    << "      && pexp_l == pl - $signed({7'd0, h_x}) - $signed({7'd0, h_s})\n"
    << "      && b_exp_l == bl - $signed({7'd0, h_b});\n"
    << "`ifdef NORMCORE_FV_SHIFT_LEMMA\n  always @* if (c_fin) assume (shift_ok);\n`endif\n";
  return o.str();
}

std::string flane_fv(const CoreConfig& c) {
  const auto& a = c.arith;
  const bool iy = a.y_type == NumType::integer;
  const int yw = iy ? a.yw : float_bits(a.y_type), lat = kFloatLanePipeline - 1;
  const std::string n = c.name + "_lane_fv";
  std::ostringstream o;
  o << formal_header(c, "formal/" + n + ".v");
  o << "// Verification only: the float lane " << c.name << "_lane equals " << c.name
    << "_lane_ref delayed by the lane's\n// latency (" << lat
    << " cycles), for free x, s, b every cycle and free job constants ("
    << (iy ? "rounding mode, lo, hi" : "lo <= hi, not NaN")
    << ")\n// held for the whole run. Read with `read_verilog -formal`; run by scripts/prove.sh.\n";
  o << "module " << n << " (input wire clk_i);\n"
    << "  wire [15:0] x = $anyseq;\n  wire [31:0] s = $anyseq;\n  wire [31:0] b = $anyseq;\n"
    << "  wire [" << yw - 1 << ":0] lo = $anyconst;\n  wire [" << yw - 1 << ":0] hi = $anyconst;\n";
  if (iy) {
    o << "  wire [1:0] mode = $anyconst;\n";
  } else {
    const FloatFormat fy = float_format(a.y_type);
    o << "  function signed [" << yw << ":0] key(input [" << yw - 1 << ":0] f);\n"
      << "    key = f[" << yw - 1 << "] ? -$signed({2'b0, f[" << yw - 2
      << ":0]}) : $signed({2'b0, f[" << yw - 2 << ":0]});\n  endfunction\n";
    const std::string em = to_string(fy.exp_mask()), mm = to_string(fy.man_mask());
    o << "  always @* begin  // the contract's clamp bounds: not NaN, lo <= hi (numerically)\n"
      << "    assume (!((lo & " << em << ") == " << em << " && (lo & " << mm << ") != 0));\n"
      << "    assume (!((hi & " << em << ") == " << em << " && (hi & " << mm << ") != 0));\n"
      << "    assume (key(lo) <= key(hi));\n  end\n";
  }
  o << cases(c, lat);
  const std::string rnd = iy ? ".round_i(mode), " : "";
  o << "  wire [" << yw - 1 << ":0] y_lane, y_ref;\n";
  o << "  " << c.name << "_lane u_dut (\n    .clk_i(clk_i), .x_i(x), .s_i(s), .b_i(b), " << rnd
    << ".lo_i(lo), .hi_i(hi), .y_o(y_lane)\n  );\n";
  o << "  wire [9:0] psh_r, bsh_r;  // the reference's shifts of the product and of b\n";
  o << "  " << c.name << "_lane_ref u_ref (\n    .x_i(x), .s_i(s), .b_i(b), " << rnd
    << ".lo_i(lo), .hi_i(hi), .y_o(y_ref),\n    .psh_o(psh_r), .bsh_o(bsh_r)\n  );\n";
  o << shift_lemma(c);
  o << "  localparam integer L = " << lat << ";\n"
    << "  reg [L*" << yw << "-1:0] d;  // the reference, delayed: d[" << yw << "*k +: " << yw
    << "] is k + 1 cycles old\n"
    << "  always @(posedge clk_i) d <= {d[(L-1)*" << yw << "-1:0], y_ref};\n"
    << "  reg [7:0] filled = 0;  // cycles run, saturating at L\n"
    << "  always @(posedge clk_i) if (filled < L) filled <= filled + 1;\n"
    << "  wire [" << yw - 1 << ":0] y_refd = d[L*" << yw << "-1 -: " << yw << "];\n";
  // A class with a closed form: lane == closed form and reference == closed form.
  // The coverage check of a case split into bands (scripts/prove.sh): every element of the case
  // is in one of the rows' restrictions, written by prove.sh as `covered` in nc_fv_cover.vh.
  o << "`ifdef NORMCORE_FV_COVER\n  wire covered;\n`include \"nc_fv_cover.vh\"\n"
    << "  always @* if (in_case) assert (covered);\n"
    << "`elsif NORMCORE_FV_SHIFT_PROVE\n  always @* if (c_fin) assert (shift_ok);\n`else\n";
  o << "`ifdef NORMCORE_FV_CLASS_TINY\n`define NORMCORE_FV_CLOSED\n`endif\n"
    << "`ifdef NORMCORE_FV_CLASS_SAT\n`define NORMCORE_FV_CLOSED\n`endif\n"
    << "`ifdef NORMCORE_FV_CLOSED\n"
    << "  reg [L*" << yw << "-1:0] dcf;  // the closed form, delayed as d\n"
    << "  always @(posedge clk_i) dcf <= {dcf[(L-1)*" << yw << "-1:0], y_cf};\n"
    << "  wire [" << yw - 1 << ":0] y_cfd = dcf[L*" << yw << "-1 -: " << yw << "];\n"
    << "  always @* if (filled >= L && cd[L-1]) assert (y_lane == y_cfd && y_refd == y_cfd);\n"
    << "`else\n"
    << "  always @* if (filled >= L && cd[L-1]) assert (y_lane == y_refd);\n`endif\n`endif\n";
  o << "endmodule\n";
  return o.str();
}

}  // namespace

std::vector<GeneratedFile> render_formal_float(const CoreConfig& cfg) {
  return {{"formal/" + cfg.name + "_lane_ref.v", flane_ref(cfg)},
          {"formal/" + cfg.name + "_lane_fv.v", flane_fv(cfg)}};
}

nlohmann::json formal_float_manifest(const CoreConfig& cfg) {
  return {{"files", {"formal/" + cfg.name + "_lane_ref.v", "formal/" + cfg.name + "_lane_fv.v"}},
          {"lane",
           {{"harness", cfg.name + "_lane_fv"},
            {"reference", cfg.name + "_lane_ref"},
            {"dut", cfg.name + "_lane"},
            {"latency", kFloatLanePipeline - 1},
            {"float", true},
            {"note", "verification only: not in the filelists; run by scripts/prove.sh"}}}};
}

}  // namespace normcore::gen
