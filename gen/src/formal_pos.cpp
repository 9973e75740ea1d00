// Verification only (`normcore gen --formal`): formal/<n>_pos_fv.v, the stream bookkeeping of the
// whole core (<n>_core: channel tracker, step divider, walker, parameter table addressing, FIFO)
// against position -> channel by division. The harness resets the core, starts one free valid job
// (C, HW, layout, R, mode, lo <= hi), loads the table with b[c] = c and s[c] = 0, so every output
// element is the contract's y for acc = its channel, with free gaps in prm_valid_i, free s_axis
// beats and tlast, and free m_axis_tready; it asserts that output element e of a packet (lane i
// of the k-th output beat since the packet start: e = k * L + i) is <n>_lane_ref's y for acc =
// (e / HW) mod C (nchw) or e mod C (nhwc), and that the job is never refused. With R = 0 and
// lo / hi the whole range y is the channel itself; other jobs also check the top's per-job lane
// constants (for these small accumulators only: the lane proof covers every acc).
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "core_internal.hpp"
#include "normcore/gen/formal.hpp"
#include "specialise.hpp"

namespace normcore::gen {

namespace {

using std::to_string;

// A free job constant: the input <name>_i in the reset cycle (cycle 0), held from then on (a
// plain input and a register: no $anyconst, so that the AIGER flow for ABC keeps it). Adds the
// port to `ports`.
std::string hold(const std::string& name, int w, std::string& ports) {
  const std::string r = "[" + to_string(w - 1) + ":0] ";
  ports += "  input wire " + r + name + "_i,  // job: read in cycle 0 only\n";
  return "  reg " + r + name + "_q;\n  wire " + r + name + " = rst_n ? " + name + "_q : " + name +
         "_i;\n  always @(posedge clk_i) if (!rst_n) " + name + "_q <= " + name + "_i;\n";
}

std::string pos_job(const CoreConfig& c, const core::Variant& v, std::string& ports) {
  const int cw = c.chan_bits(), hw = c.inner_bits, yw = c.arith.yw;
  std::ostringstream o;
  if (c.has_fixed_shift())
    o << "  wire [" << v.rw - 1 << ":0] r = " << v.rw << "'d" << c.fixed_shift << ";\n";
  else
    o << hold("r", v.rw, ports);
  if (c.has_fixed_rounding())
    o << "  wire [1:0] mode = 2'd" << spec::rounding_code(c) << ";\n";
  else
    o << hold("mode", 2, ports);
  o << hold("lo", yw, ports) << hold("hi", yw, ports) << hold("chans", cw, ports)
    << hold("inner", hw, ports);
  if (c.has_fixed_layout())
    o << "  wire lay = 1'b" << spec::layout_code(c) << ";  // fixed_layout\n";
  else
    o << hold("lay", 1, ports) << "  // 0 nchw, 1 nhwc\n";
  o << "  always @* begin  // a valid job (JobSettings::check, CoreConfig::check_job)\n"
    << "    assume (chans >= 1 && chans <= " << c.max_channels << ");\n"
    << "    assume (inner >= 1);\n"
    << "    assume (r <= " << v.aw << ");\n"
    << "    assume (" << (c.arith.y_signed ? "$signed(lo) <= $signed(hi)" : "lo <= hi") << ");\n";
  if (c.lanes_divide_channels) o << "    assume (chans % " << c.lanes << " == 0);\n";
  o << "  end\n";
  return o.str();
}

std::string pos_drive(const CoreConfig& c) {
  const auto& a = c.arith;
  const int cw = c.chan_bits(), L = c.lanes, yw = a.yw;
  std::ostringstream o;
  o << "  reg started = 1'b0;\n"
    << "  wire ready, configured, cfg_error, prm_ready;\n"
    << "  wire start = rst_n && !started && ready;\n"
    << "  always @(posedge clk_i) if (start) started <= 1'b1;\n"
    << "  reg [" << cw << ":0] words = 0;  // parameter words taken: the next is channel `words`\n"
    << "  always @(posedge clk_i) if (rst_n && prm_valid_i && prm_ready) words <= words + 1;\n"
    << "  wire s_ready, m_valid, m_last;\n"
    << "  wire [" << L * yw - 1 << ":0] m_data;\n"
    << "  wire [" << L - 1 << ":0] m_keep;\n";
  o << "  " << c.top_name() << " u_dut (\n"
    << "    .clk_i(clk_i), .rst_ni(rst_n),\n"
    << "    .cfg_channels_i(chans), .cfg_inner_i(inner), .cfg_layout_i(lay),\n"
    << "    .cfg_shift_i(r), .cfg_round_i(mode), .cfg_lo_i(lo), .cfg_hi_i(hi),\n"
    << "    .start_i(start), .ready_o(ready), .configured_o(configured), "
       ".cfg_error_o(cfg_error),\n"
    << "    .prm_valid_i(prm_valid_i), .prm_ready_o(prm_ready),\n"
    << "    .prm_scale_i(" << a.sw << "'d0), .prm_offset_i(words[" << cw - 1 << ":0]),\n"
    << "    .s_axis_tvalid(s_valid_i), .s_axis_tready(s_ready), .s_axis_tdata(s_data_i),\n"
    << "    .s_axis_tkeep({" << L << "{1'b1}}), .s_axis_tlast(s_last_i),\n"
    << "    .m_axis_tvalid(m_valid), .m_axis_tready(m_ready_i), .m_axis_tdata(m_data),\n"
    << "    .m_axis_tkeep(m_keep), .m_axis_tlast(m_last)\n  );\n";
  return o.str();
}

std::string pos_check(const CoreConfig& c) {
  const int cw = c.chan_bits(), hw = c.inner_bits, L = c.lanes, yw = c.arith.yw;
  const int pw = std::max(cw + hw, c.lane_count_bits()) + 1;  // holds HW * C + L
  std::ostringstream o;
  o << "  // The reference: e = the element index (mod HW * C) of the next output beat's lane 0\n"
    << "  // in its packet; lane i's channel by division.\n"
    << "  localparam integer PW = " << pw << ";\n"
    << "  wire [PW-1:0] period = inner * chans;  // elements per channel cycle\n"
    << "  reg [PW-1:0] e = 0;\n"
    << "  wire m_fire = rst_n && m_valid && m_ready_i;\n"
    << "  wire [PW-1:0] e_next = (e + PW'd" << L << ") % period;\n"
    << "  always @(posedge clk_i) if (m_fire) e <= m_last ? {PW{1'b0}} : e_next;\n"
    << "  always @* begin  // from the cycle after the reset on\n"
    << "    if (started) assert (!cfg_error);\n"
    << "    if (rst_n && m_valid) assert (m_keep == {" << L << "{1'b1}});\n"
    << "  end\n"
    << "  genvar i;\n"
    << "  for (i = 0; i < " << L << "; i = i + 1) begin : G_lane\n"
    << "    localparam [PW-1:0] I = i;\n"
    << "    wire [PW-1:0] pos = (e + I) % period;  // this element's index mod HW * C\n"
    << "    wire [PW-1:0] ch = lay ? pos % chans : (pos / inner) % chans;\n"
    << "    wire [" << yw - 1
    << ":0] y;  // the contract for x * 0 + ch: b[c] = c tags the channel\n"
    << "    " << c.name << "_lane_ref u_ref (.x_i(" << c.arith.xw << "'d0), .s_i(" << c.arith.sw
    << "'d0), .b_i(ch[" << c.chan_bits() - 1 << ":0]), .shift_i(r),\n"
    << "      .round_i(mode), .lo_i(lo), .hi_i(hi), .y_o(y));\n"
    << "    always @* if (rst_n && m_valid) assert (m_data[i*" << yw << " +: " << yw << "] == y);\n"
    << "  end\n";
  return o.str();
}

}  // namespace

std::string render_pos_fv(const CoreConfig& cfg) {
  const core::Variant v = core::variant(cfg, LaneArith::folded);
  const auto& a = cfg.arith;
  if (a.bw < cfg.chan_bits() + 1 || a.yw < cfg.chan_bits() + 1) {
    return "// " + cfg.name +
           "_pos_fv: not generated: offset and output bits must hold MAX_CHANNELS - 1 "
           "(b[c] = c is the channel's tag)\n";
  }
  std::ostringstream o;
  o << formal_header(cfg, "formal/" + cfg.name + "_pos_fv.v");
  o << "// Verification only: the core's stream bookkeeping against position -> channel by\n"
       "// division (gen/src/formal_pos.cpp). Read with `read_verilog -formal`; "
       "scripts/prove.sh.\n";
  std::string ports;
  const std::string job = pos_job(cfg, v, ports);
  o << "module " << cfg.name << "_pos_fv (  // every input free\n"
    << ports << "  input wire clk_i, prm_valid_i, s_valid_i, s_last_i, m_ready_i,\n"
    << "  input wire [" << cfg.lanes * a.xw - 1 << ":0] s_data_i\n);\n"
    << "  reg rst_n = 1'b0;  // the core's reset in cycle 0\n"
    << "  always @(posedge clk_i) rst_n <= 1'b1;\n";
  o << job << pos_drive(cfg) << pos_check(cfg) << "endmodule\n";
  return o.str();
}

}  // namespace normcore::gen
