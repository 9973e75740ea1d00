// Verification only (`normcore gen --formal`): formal/<n>_tab_fv.v, the parameter table <n>_ptable
// alone, for any sequence of jobs (the reset or abort_i begins one, with a free valid C): each
// loaded once with word k = channel k's tag (every field = k, truncated or zero-extended),
// then read every cycle at a free window (c0 < C, d_i < L: what the lane-position proof shows the
// tracker gives; the direct table: c0 a multiple of L, d_i = i) and every lane's field must be the
// tag of channel (c0 + d_i) mod C, table_stages cycles later. With formal/<n>_trk_fv.v (c0 and d_i
// are the channels of the beat's elements) this gives: every lane reads its element's channel's
// parameters. Unbounded with ABC pdr (scripts/prove.sh).
#include <sstream>

#include "core_internal.hpp"
#include "normcore/gen/formal.hpp"

namespace normcore::gen {

namespace {

using std::to_string;

std::string tab_drive(const CoreConfig& c, const core::Variant& v) {
  const int cw = c.chan_bits(), L = c.lanes, dp = c.bank_sel_bits();
  const bool dports = L > 1 && !c.table_direct();
  std::ostringstream o;
  o << "  reg rst_n = 1'b0;  // the table's reset in cycle 0\n"
    << "  always @(posedge clk_i) rst_n <= 1'b1;\n"
    << "  // Jobs: the reset or a start (abort_i: a load under way is abandoned) begins one; its\n"
    << "  // C is chans_i then, the table's chans_i from the next cycle on (the core's ch_q).\n"
    << "  wire abort = rst_n && abort_i;\n"
    << "  wire job = !rst_n || abort;\n"
    << "  reg [" << cw - 1 << ":0] chans_q;\n"
    << "  always @(posedge clk_i) if (job) chans_q <= chans_i;\n"
    << "  wire [" << cw - 1 << ":0] chans = rst_n ? chans_q : chans_i;\n"
    << "  always @* if (job) begin  // a valid job\n"
    << "    assume (chans_i >= 1 && chans_i <= " << c.max_channels << ");\n";
  if (c.lanes_divide_channels) o << "    assume (chans_i % " << L << " == 0);\n";
  o << "  end\n"
    << "  // One load a job, at least 6 cycles after its start (the core's set-up opens the load\n"
    << "  // later than that; the table's per-job registers settle in 2 cycles).\n"
    << "  reg [2:0] age = 3'd0;\n"
    << "  always @(posedge clk_i) age <= job ? 3'd0 : age + {2'd0, age != 3'd6};\n"
    << "  reg loaded = 1'b0;\n"
    << "  wire load = load_i && !loaded && !abort && age == 3'd6;\n"
    << "  always @(posedge clk_i) loaded <= !job && (loaded || load);\n"
    << "  reg [" << cw
    << ":0] words = 0;  // words taken in this load: the next is channel `words`\n"
    << "  wire prm_ready, busy, done;\n"
    << "  always @(posedge clk_i)\n"
    << "    if (load) words <= 0;\n"
    << "    else if (rst_n && prm_valid_i && prm_ready) words <= words + 1'b1;\n"
    << "  // The table is complete from the cycle after done_o, once this job's load has begun.\n"
    << "  reg complete = 1'b0;\n"
    << "  always @(posedge clk_i) complete <= !job && (complete || (loaded && done));\n"
    << "  always @* begin  // a read window as the tracker makes it\n"
    << "    assume (c0_i < chans);\n";
  if (c.table_direct()) o << "    assume (c0_i % " << L << " == 0);\n";
  o << "  end\n";
  if (dports) {
    o << "  genvar j;\n"
      << "  for (j = 0; j < " << L - 1 << "; j = j + 1) begin : G_d\n"
      << "    always @* assume (d_i[j*" << dp << " +: " << dp << "] < " << L << ");\n"
      << "  end\n";
  }
  for (const auto& f : v.fields) o << "  wire [" << L * f.width - 1 << ":0] " << f.prm << "_q;\n";
  o << "  " << c.name << "_ptable u_dut (\n"
    << "    .clk_i(clk_i), .rst_ni(rst_n), .load_i(load), .abort_i(abort), .chans_i(chans),\n"
    << "    .c0_i(c0_i)," << (dports ? " .lane_d_i(d_i)," : "")
    << " .prm_valid_i(prm_valid_i), .prm_ready_o(prm_ready),\n";
  for (const auto& f : v.fields) {
    o << "    .prm_" << f.prm << "_i(";
    if (f.width <= cw + 1)
      o << "words[" << f.width - 1 << ":0]";
    else
      o << "{" << f.width - cw - 1 << "'d0, words}";
    o << "), ." << f.prm << "_o(" << f.prm << "_q),\n";
  }
  o << "    .busy_o(busy), .done_o(done)\n  );\n";
  return o.str();
}

std::string tab_check(const CoreConfig& c, const core::Variant& v) {
  const int cw = c.chan_bits(), L = c.lanes, dp = c.bank_sel_bits(), ts = c.table_stages();
  const bool dports = L > 1 && !c.table_direct();
  std::ostringstream o;
  o << "  // The reference: lane i's channel (c0 + d_i) mod C, delayed by the table's " << ts
    << " stages.\n"
    << "  localparam integer TS = " << ts << ", CW = " << cw << ";\n"
    << "  reg [TS-1:0] rv = 0;  // a read of the complete table, k + 1 cycles ago at bit k\n"
    << "  always @(posedge clk_i) rv <= {rv[TS-2:0], complete};\n"
    << "  genvar i;\n"
    << "  for (i = 0; i < " << L << "; i = i + 1) begin : G_lane\n";
  if (dports)
    o << "    wire [CW:0] di = i == 0 ? {CW+1{1'b0}} : d_i[(i == 0 ? 0 : i-1)*" << dp
      << " +: " << dp << "];\n";
  else
    o << "    wire [CW:0] di = i;\n";
  o << "    wire [CW+1:0] u = c0_i + di;\n"
    << "    wire [CW-1:0] ch = u % chans;  // its channel\n"
    << "    reg [TS*CW-1:0] hist = 0;\n"
    << "    always @(posedge clk_i) hist <= {hist[(TS-1)*CW-1:0], ch};\n"
    << "    wire [CW:0] want = {1'b0, hist[TS*CW-1 -: CW]};  // the tag read TS cycles ago\n";
  for (const auto& f : v.fields) {
    o << "    wire [" << f.width - 1 << ":0] " << f.prm << "_got = " << f.prm << "_q[i*" << f.width
      << " +: " << f.width << "];\n"
      << "    always @* if (rv[TS-1]) assert (" << f.prm << "_got == ";
    if (f.width <= cw + 1)
      o << "want[" << f.width - 1 << ":0]";
    else
      o << "{" << f.width - cw - 1 << "'d0, want}";
    o << ");\n";
  }
  o << "  end\n"
    << "  // Not vacuous (prove.sh): a read of the complete table with lane 0 past channel 0.\n"
    << "  reg [TS*CW-1:0] c0h = 0;\n"
    << "  always @(posedge clk_i) c0h <= {c0h[(TS-1)*CW-1:0], c0_i};\n"
    << "  wire reach_read = rv[TS-1] && c0h[TS*CW-1 -: CW] != 0;\n";
  return o.str();
}

}  // namespace

std::string render_tab_fv(const CoreConfig& cfg) {
  const core::Variant v = core::variant(cfg, LaneArith::folded);
  const int cw = cfg.chan_bits(), L = cfg.lanes, dp = cfg.bank_sel_bits();
  std::ostringstream o;
  o << formal_header(cfg, "formal/" + cfg.name + "_tab_fv.v");
  o << "// Verification only: the parameter table <n>_ptable, channel (c0 + d_i) mod C to every\n"
       "// lane's parameters (gen/src/formal_tab.cpp). scripts/prove.sh.\n";
  o << "module " << cfg.name << "_tab_fv (  // every input free\n"
    << "  input wire [" << cw - 1 << ":0] chans_i,  // a job's C: read in cycle 0 and at abort_i\n"
    << "  input wire [" << cw - 1 << ":0] c0_i,  // the read window, every cycle\n";
  if (L > 1 && !cfg.table_direct())
    o << "  input wire [" << (L - 1) * dp - 1 << ":0] d_i,  // lanes 1..L-1, lane 1 low\n";
  o << "  input wire clk_i, abort_i, load_i, prm_valid_i\n);\n";
  o << tab_drive(cfg, v) << tab_check(cfg, v) << "endmodule\n";
  return o.str();
}

}  // namespace normcore::gen
