// Verification only (`normcore gen --formal`): formal/<n>_trk_fv.v, the core's lane positions
// (the channel tracker <n>_chan with everything that feeds it in <n>_core: the set-up divider
// <n>_step, the walker, the per-job constants, the beat enable and the packet restart) against a
// plain element counter and position -> channel by division, for an unbounded proof (ABC pdr,
// scripts/prove.sh). The harness instantiates <n>_core with three more ports than the RTL has:
// in_fire (a beat is taken), pos_c0 and pos_d (the tracker's outputs, what the parameter table
// reads); scripts/prove.sh makes them with Yosys `expose` on the core's wires of those names. A
// free sequence of free valid jobs (a start whenever the core is ready), free gaps in the
// parameter load, free beats, tlast and m_axis_tready; at every beat of a job, with e the
// element index of its lane 0 in the packet modulo HW * C (0 at the start and after tlast):
// c0 = channel(e), d_i < L and (c0 + d_i) mod C = channel(e + i), channel(p) = (p / HW) mod C
// (nchw) or p mod C (nhwc); the direct table (lane i reads bank i at c0 / L) also needs d_i = i
// and c0 a multiple of L.
#include <algorithm>
#include <sstream>

#include "core_internal.hpp"
#include "normcore/gen/formal.hpp"
#include "specialise.hpp"

namespace normcore::gen {

namespace {

using std::to_string;

// A job field: the input <name>_i in the cycle of a start, held in <name>_q from then on (the
// core reads cfg_* in the start cycle; the reference reads the held copy: a beat in the start
// cycle still belongs to the previous job).
std::string job_field(const std::string& name, int w, std::string& ports) {
  const std::string r = "[" + to_string(w - 1) + ":0] ";
  ports += "  input wire " + r + name + "_i,  // job: read at a start\n";
  return "  reg " + r + name + "_q;\n  wire " + r + name + " = start ? " + name + "_i : " + name +
         "_q;\n  always @(posedge clk_i) " + name + "_q <= " + name + ";\n";
}

std::string trk_job(const CoreConfig& c, std::string& ports) {
  std::ostringstream o;
  o << "  reg rst_n = 1'b0;  // the core's reset in cycle 0\n"
    << "  always @(posedge clk_i) rst_n <= 1'b1;\n"
    << "  wire ready;\n"
    << "  wire start = rst_n && start_i && ready;  // any number of jobs\n"
    << "  reg started = 1'b0;\n"
    << "  always @(posedge clk_i) if (start) started <= 1'b1;\n"
    << job_field("chans", c.chan_bits(), ports) << job_field("inner", c.inner_bits, ports);
  if (c.has_fixed_layout())
    o << "  wire lay = 1'b" << spec::layout_code(c) << ", lay_q = lay;  // fixed_layout\n";
  else
    o << job_field("lay", 1, ports);  // 0 nchw, 1 nhwc
  o << "  always @* if (start) begin  // a valid job (JobSettings::check, CoreConfig::check_job)\n"
    << "    assume (chans_i >= 1 && chans_i <= " << c.max_channels << ");\n"
    << "    assume (inner_i >= 1);\n";
  if (c.lanes_divide_channels) o << "    assume (chans_i % " << c.lanes << " == 0);\n";
  o << "  end\n";
  return o.str();
}

std::string trk_core(const CoreConfig& c, const core::Variant& v) {
  const auto& a = c.arith;
  const int L = c.lanes, p = c.bank_sel_bits();
  std::ostringstream o;
  o << "  wire configured, cfg_error, prm_ready, s_ready, m_valid, m_last, fire_w;\n"
    << "  wire [" << L * a.yw - 1 << ":0] m_data;\n"
    << "  wire [" << L - 1 << ":0] m_keep;\n"
    << "  wire [" << c.chan_bits() - 1 << ":0] c0;  // the tracker: lane 0's channel\n";
  if (L > 1) o << "  wire [" << (L - 1) * p - 1 << ":0] d;  // lanes 1..L-1: offset from c0\n";
  o << "  " << c.top_name() << " u_dut (  // in_fire, pos_c0, pos_d: exposed wires (prove.sh)\n"
    << "    .clk_i(clk_i), .rst_ni(rst_n),\n"
    << "    .cfg_channels_i(chans), .cfg_inner_i(inner), .cfg_layout_i(lay),\n"
    << "    .cfg_shift_i(" << v.rw << "'d0), .cfg_round_i(2'd0), .cfg_lo_i(" << a.yw
    << "'d0), .cfg_hi_i(" << a.yw << "'d0),\n"
    << "    .start_i(start), .ready_o(ready), .configured_o(configured), "
       ".cfg_error_o(cfg_error),\n"
    << "    .prm_valid_i(prm_valid_i), .prm_ready_o(prm_ready),\n"
    << "    .prm_scale_i(" << a.sw << "'d0), .prm_offset_i(" << a.bw << "'d0),\n"
    << "    .s_axis_tvalid(s_valid_i), .s_axis_tready(s_ready), .s_axis_tdata(" << L * a.xw
    << "'d0),\n"
    << "    .s_axis_tkeep({" << L << "{1'b1}}), .s_axis_tlast(s_last_i),\n"
    << "    .m_axis_tvalid(m_valid), .m_axis_tready(m_ready_i), .m_axis_tdata(m_data),\n"
    << "    .m_axis_tkeep(m_keep), .m_axis_tlast(m_last),\n"
    << "    .in_fire(fire_w), .pos_c0(c0)" << (L > 1 ? ", .pos_d(d)" : "") << "\n  );\n";
  return o.str();
}

std::string trk_check(const CoreConfig& c) {
  const int cw = c.chan_bits(), hw = c.inner_bits, L = c.lanes, p = c.bank_sel_bits();
  const int pw = std::max(cw + hw, c.lane_count_bits()) + 1;  // holds HW * C + L
  std::ostringstream o;
  o << "  // The reference: e = the element index (mod HW * C) of the next beat's lane 0 in its\n"
    << "  // packet; element e + i's channel by division.\n"
    << "  localparam integer PW = " << pw << ";\n"
    << "  wire [PW-1:0] period = inner_q * chans_q;  // elements per channel cycle\n"
    << "  reg [PW-1:0] e = 0;\n"
    << "  wire fire = rst_n && started && fire_w;  // a beat of the job in chans_q, inner_q\n"
    << "  always @(posedge clk_i)\n"
    << "    if (start) e <= {PW{1'b0}};\n"
    << "    else if (fire) e <= s_last_i ? {PW{1'b0}} : (e + PW'd" << L << ") % period;\n"
    << "  wire [PW-1:0] ch0 = lay_q ? e % chans_q : (e / inner_q) % chans_q;\n"
    << "  always @* if (started) assert (!cfg_error);\n"
    << "  always @* if (fire) assert (c0 == ch0);\n"
    << "  // Not vacuous (prove.sh shows both reachable): a beat, and a beat with element\n"
    << "  // HW * C - 1 of a job with C >= 2, not its packet's first or last beat (the wrap:\n"
    << "  // the beat spans it, or the next beat starts at element 0).\n"
    << "  wire reach_beat = fire;\n"
    << "  wire reach_wrap = fire && !s_last_i && chans_q >= 2 && e != 0 && e + PW'd" << L
    << " >= period;\n";
  if (c.table_direct()) o << "  always @* if (fire) assert (c0 % " << L << " == 0);\n";
  if (L > 1) {
    o << "  genvar i;\n"
      << "  for (i = 1; i < " << L << "; i = i + 1) begin : G_lane\n"
      << "    localparam [PW-1:0] I = i;\n"
      << "    wire [PW-1:0] pos = (e + I) % period;  // element e + i mod HW * C\n"
      << "    wire [PW-1:0] ch = lay_q ? pos % chans_q : (pos / inner_q) % chans_q;\n"
      << "    wire [" << p - 1 << ":0] di = d[(i-1)*" << p << " +: " << p << "];\n"
      << "    wire [PW-1:0] u = c0 + di;  // the table's window address\n"
      << "    always @* if (fire) begin\n"
      << "      assert (di < " << L << ");\n"
      << "      assert (u % chans_q == ch);\n";
    if (c.table_direct()) o << "      assert (di == I);\n";
    o << "    end\n  end\n";
  }
  return o.str();
}

}  // namespace

std::string render_trk_fv(const CoreConfig& cfg) {
  const core::Variant v = core::variant(cfg, LaneArith::folded);
  std::ostringstream o;
  o << formal_header(cfg, "formal/" + cfg.name + "_trk_fv.v");
  o << "// Verification only: the core's lane positions (channel tracker and what feeds it)\n"
       "// against an element counter and position -> channel by division\n"
       "// (gen/src/formal_trk.cpp). The core's ports in_fire, pos_c0, pos_d are its wires of\n"
       "// those names, made ports by Yosys `expose` (scripts/prove.sh).\n";
  std::string ports;
  const std::string job = trk_job(cfg, ports);
  o << "module " << cfg.name << "_trk_fv (  // every input free\n"
    << ports << "  input wire clk_i, start_i, prm_valid_i, s_valid_i, s_last_i, m_ready_i\n);\n";
  o << job << trk_core(cfg, v) << trk_check(cfg) << "endmodule\n";
  return o.str();
}

}  // namespace normcore::gen
