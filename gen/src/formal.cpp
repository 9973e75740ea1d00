// Verification-only files of `normcore gen --formal` (formal/ in the output): the behavioural
// reference of the integer contract for one lane (<n>_lane_ref, docs/contract.md sections 1-3,
// written as the definition reads, not as the lane computes it) and the proof harness
// <n>_lane_fv, which drives the generated lane and the reference with the same free inputs and
// asserts that the lane's y equals the reference's y delayed by the lane's latency.
// scripts/prove.sh runs yosys-smtbmc (BMC + k-induction) on the harness.
#include "normcore/gen/formal.hpp"

#include <sstream>
#include <stdexcept>

#include "core_internal.hpp"
#include "specialise.hpp"

namespace normcore::gen {

namespace {

using std::to_string;

// Sign or zero extension of an n-bit net to `w` bits (Verilog text: a number or a parameter).
std::string ext(const std::string& v, int n, bool sgn, const std::string& w = "W") {
  return "{{(" + w + "-" + to_string(n) + "){" +
         (sgn ? v + "[" + to_string(n - 1) + "]" : std::string("1'b0")) + "}}, " + v + "}";
}

std::string lane_ref(const CoreConfig& c, const core::Variant& v) {
  const auto& a = c.arith;
  const std::string n = c.name + "_lane_ref";
  std::ostringstream o;
  o << formal_header(c, "formal/" + n + ".v");
  o << "// Verification only (not synthesised): the normcore contract for one element, the "
       "obvious\n"
       "// way, every value exact in W = AW + 2 signed bits (docs/contract.md sections 1-3):\n"
       "//   acc = x * s + b; q = floor(acc / 2^R); rem = acc - q * 2^R; half = 2^(R-1)\n"
       "//   r = q + inc(mode, rem, half, q, acc); y = min(max(r, lo), hi)   (lo <= hi)\n"
       "// Combinational; formal/"
    << c.name << "_lane_fv.v compares it with the lane.\n";
  o << "module " << n << " (\n"
    << "  input  wire [" << a.xw - 1 << ":0] x_i,\n"
    << "  input  wire [" << a.sw - 1 << ":0] s_i,\n"
    << "  input  wire [" << a.bw - 1 << ":0] b_i,\n"
    << "  input  wire [" << v.rw - 1 << ":0] shift_i,  // R, 0.." << v.aw << "\n"
    << "  input  wire [1:0] round_i,  // 0 floor, 1 half_up, 2 half_even, 3 half_away\n"
    << "  input  wire [" << a.yw - 1 << ":0] lo_i,\n"
    << "  input  wire [" << a.yw - 1 << ":0] hi_i,\n"
    << "  output wire [" << a.yw - 1 << ":0] y_o\n);\n";
  o << "  localparam integer AW = " << v.aw << ";\n  localparam integer W = AW + 2;\n";
  o << "  wire signed [W-1:0] x = " << ext("x_i", a.xw, a.x_signed) << ";\n";
  o << "  wire signed [W-1:0] s = " << ext("s_i", a.sw, true) << ";\n";
  o << "  wire signed [W-1:0] b = " << ext("b_i", a.bw, true) << ";\n";
  const int xsw = a.x_signed ? a.xw : a.xw + 1, pw = a.xw + a.sw;
  o << "`ifdef NORMCORE_FV_SHARED_MUL\n"
       "  // x * s at its exact width XW + SW (docs/contract.md section 1), written as the lane "
       "writes\n"
       "  // its product, so that the solver sees the same multiplier term on both sides\n"
    << "  wire signed [" << xsw - 1 << ":0] xs = " << (a.x_signed ? "x_i" : "{1'b0, x_i}") << ";\n"
    << "  wire signed [" << a.sw - 1 << ":0] ss = s_i;\n"
    << "  wire signed [" << pw - 1 << ":0] prod = xs * ss;\n"
    << "  wire signed [W-1:0] acc = " << ext("prod", pw, true) << " + b;\n"
    << "`else\n"
       "  wire signed [W-1:0] acc = x * s + b;\n"
       "`endif\n"
       "  wire signed [W-1:0] one = 1, zero = 0;\n"
       "  wire signed [W-1:0] q = acc >>> shift_i;\n"
       "  wire signed [W-1:0] rem = acc - (q <<< shift_i);\n"
       "  wire signed [W-1:0] half = shift_i == 0 ? zero : one <<< (shift_i - 1);\n"
       "  wire r0 = shift_i == 0;\n"
       "  reg inc;\n"
       "  always @* begin\n"
       "    case (round_i)\n"
       "      2'd0: inc = 1'b0;\n"
       "      2'd1: inc = !r0 && rem >= half;\n"
       "      2'd2: inc = !r0 && (rem > half || (rem == half && q[0]));\n"
       "      default: inc = !r0 && (rem > half || (rem == half && acc >= 0));\n"
       "    endcase\n"
       "  end\n"
       "  wire signed [W-1:0] r = q + (inc ? one : zero);\n";
  o << "  wire signed [W-1:0] lo = " << ext("lo_i", a.yw, a.y_signed) << ";\n";
  o << "  wire signed [W-1:0] hi = " << ext("hi_i", a.yw, a.y_signed) << ";\n";
  o << "  wire signed [W-1:0] y = r < lo ? lo : r > hi ? hi : r;\n"
       "  assign y_o = y["
    << a.yw - 1 << ":0];\nendmodule\n";
  return o.str();
}

// The harness's per-job lane inputs (what core_top.cpp derives from R, lo, hi), from their
// documented meaning in core_lane.cpp's lane_ports.
std::string lane_job_inputs(const CoreConfig& c, const core::Variant& v, std::string& conns) {
  const auto& a = c.arith;
  const core::LaneShape sh = core::lane_shape(v);
  const int kw = a.yw + 3;
  std::ostringstream o;
  std::string sel = "r";
  if (sh.fold_top) {
    o << "  wire [" << sh.lsw - 1 << ":0] lsh = r >= " << sh.top << " ? " << sh.lsw << "'d"
      << sh.top - 1 << " : r[" << sh.lsw - 1 << ":0];\n";
    conns += "    .lsh_i(lsh), .rtop_i(r >= " + to_string(sh.top) + "),\n";
    if (sh.top == v.aw - 1) conns += "    .rmax_i(r == " + to_string(v.aw) + "),\n";
    sel = "lsh";
  } else {
    conns += "    .shift_i(r),\n";
  }
  if (!c.has_fixed_shift()) {
    for (const auto& [hi, lo] : sh.parts(c.shift_parts())) {
      if (hi < lo) continue;
      const int nt = (1 << (hi - lo + 1)) - 1;
      const std::string t = "tq" + to_string(lo);
      o << "  wire [" << nt - 1 << ":0] " << t << ";  // bit i: i < " << sel << "[" << hi << ":"
        << lo << "]\n";
      o << "  genvar g" << lo << ";\n  for (g" << lo << " = 0; g" << lo << " < " << nt << "; g"
        << lo << " = g" << lo << " + 1) begin : G" << t << "\n    assign " << t << "[g" << lo
        << "] = g" << lo << " < " << sel << "[" << hi << ":" << lo << "];\n  end\n";
      conns += "    ." + t + "_i(" + t + "),\n";
    }
  }
  if (const int k = core::lane_ntq_bits(c, v); k > 0)
    conns += "    .ntq0_i(~tq0[" + to_string(k - 1) + ":0]),\n";
  for (const char* b : {"lo", "hi"}) {
    o << "  wire signed [" << kw - 1 << ":0] " << b
      << "_e = " << ext(b, a.yw, a.y_signed, to_string(kw)) << ";\n";
  }
  conns += "    .round_i(mode), .lo_i(lo), .hi_i(hi), .lox_i(-lo_e), .hip1_i(~hi_e),\n";
  if (core::lane_keep(c)) conns += "    .keep_i(1'b1),\n";
  return o.str();
}

std::string lane_fv(const CoreConfig& c, const core::Variant& v) {
  const auto& a = c.arith;
  const int lat = v.ns(c) - 1;
  const std::string n = c.name + "_lane_fv";
  std::ostringstream o;
  o << formal_header(c, "formal/" + n + ".v");
  o << "// Verification only: the lane " << c.name << "_lane equals " << c.name
    << "_lane_ref delayed by the lane's\n"
    << "// latency (" << lat
    << " cycles), for free x, s, b every cycle and a free job (R, mode, lo <= hi)\n"
    << "// held for the whole run. Read with `read_verilog -formal` (Yosys); run by "
       "scripts/prove.sh.\n";
  o << "module " << n << " (input wire clk_i);\n";
  o << "  wire [" << a.xw - 1 << ":0] x = $anyseq;\n"
    << "  wire [" << a.sw - 1 << ":0] s = $anyseq;\n"
    << "  wire [" << a.bw - 1 << ":0] b = $anyseq;\n";
  if (c.has_fixed_shift())
    o << "  wire [" << v.rw - 1 << ":0] r = " << v.rw << "'d" << c.fixed_shift
      << ";  // fixed_shift\n";
  else
    o << "  wire [" << v.rw - 1 << ":0] r = $anyconst;\n";
  if (c.has_fixed_rounding())
    o << "  wire [1:0] mode = 2'd" << spec::rounding_code(c) << ";  // fixed_rounding\n";
  else
    o << "  wire [1:0] mode = $anyconst;\n";
  o << "  wire [" << a.yw - 1 << ":0] lo = $anyconst;\n"
    << "  wire [" << a.yw - 1 << ":0] hi = $anyconst;\n";
  const std::string cmp = a.y_signed ? "$signed(lo) <= $signed(hi)" : "lo <= hi";
  o << "  always @* begin\n    assume (r <= " << v.aw << ");\n    assume (" << cmp
    << ");  // JobSettings::check\n  end\n";
  std::string conns;
  o << lane_job_inputs(c, v, conns);
  o << "  wire [" << a.yw - 1 << ":0] y_lane, y_ref;\n";
  o << "  " << c.name << "_lane u_dut (\n    .clk_i(clk_i), .x_i(x), .s_i(s), .b_i(b),\n"
    << conns << "    .y_o(y_lane)\n  );\n";
  o << "  " << c.name
    << "_lane_ref u_ref (\n    .x_i(x), .s_i(s), .b_i(b), .shift_i(r), .round_i(mode), .lo_i(lo), "
       ".hi_i(hi),\n    .y_o(y_ref)\n  );\n";
  o << "  localparam integer L = " << lat << ";\n";
  o << "  reg [L*" << a.yw << "-1:0] d;  // the reference, delayed: d[" << a.yw << "*k +: " << a.yw
    << "] is k + 1 cycles old\n"
    << "  always @(posedge clk_i) d <= {d[(L-1)*" << a.yw << "-1:0], y_ref};\n";
  o << "  reg [7:0] filled = 0;  // cycles run, saturating at L\n"
    << "  always @(posedge clk_i) if (filled < L) filled <= filled + 1;\n"
    << "  always @* if (filled >= L) assert (y_lane == d[L*" << a.yw << "-1 -: " << a.yw << "]);\n";
  o << "endmodule\n";
  return o.str();
}

}  // namespace

std::string formal_header(const CoreConfig& cfg, const std::string& file) {
  std::string h;
  for (const auto& l : generated_header(cfg.to_json(), file)) h += "// " + l + "\n";
  return h;
}

std::vector<GeneratedFile> render_formal(const CoreConfig& cfg) {
  if (cfg.arith.is_float()) return render_formal_float(cfg);
  const core::Variant v = core::variant(cfg, LaneArith::folded);
  return {{"formal/" + cfg.name + "_lane_ref.v", lane_ref(cfg, v)},
          {"formal/" + cfg.name + "_lane_fv.v", lane_fv(cfg, v)},
          {"formal/" + cfg.name + "_pos_fv.v", render_pos_fv(cfg)},
          {"formal/" + cfg.name + "_trk_fv.v", render_trk_fv(cfg)},
          {"formal/" + cfg.name + "_tab_fv.v", render_tab_fv(cfg)}};
}

nlohmann::json formal_manifest(const CoreConfig& cfg) {
  if (cfg.arith.is_float()) return formal_float_manifest(cfg);
  const core::Variant v = core::variant(cfg, LaneArith::folded);
  return {{"files",
           {"formal/" + cfg.name + "_lane_ref.v", "formal/" + cfg.name + "_lane_fv.v",
            "formal/" + cfg.name + "_pos_fv.v", "formal/" + cfg.name + "_trk_fv.v",
            "formal/" + cfg.name + "_tab_fv.v"}},
          {"pos",
           {{"harness", cfg.name + "_pos_fv"},
            {"dut", cfg.top_name()},
            {"generated", cfg.arith.bw > cfg.chan_bits() && cfg.arith.yw > cfg.chan_bits()}}},
          {"trk",
           {{"harness", cfg.name + "_trk_fv"},
            {"dut", cfg.top_name()},
            {"exposed", {"in_fire", "pos_c0", "pos_d"}}}},
          {"tab", {{"harness", cfg.name + "_tab_fv"}, {"dut", cfg.name + "_ptable"}}},
          {"lane",
           {{"harness", cfg.name + "_lane_fv"},
            {"reference", cfg.name + "_lane_ref"},
            {"dut", cfg.name + "_lane"},
            {"latency", v.ns(cfg) - 1},
            {"note", "verification only: not in the filelists; run by scripts/prove.sh"}}}};
}

}  // namespace normcore::gen
