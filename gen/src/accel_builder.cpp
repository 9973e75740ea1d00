// The memory-mapped accelerator: <n>_top = register block + job control + read DMA + gearboxes +
// streaming core + write DMA. See docs/architecture.md ("Accelerator").
#include <stdexcept>

#include "accel_parts.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/regs.hpp"
#include "vexpr.hpp"

namespace normcore::gen {

using v::bit;
using v::fit;
using v::lit;
using v::part;
using v::sext;
using v::zext;

constexpr int kErrChannels = static_cast<int>(AccelError::bad_channels);
constexpr int kErrZeroLength = static_cast<int>(AccelError::zero_length);
constexpr int kErrShift = static_cast<int>(AccelError::bad_shift);
constexpr int kErrMisaligned = static_cast<int>(AccelError::misaligned);
constexpr int kErrWindow = static_cast<int>(AccelError::window);
constexpr int kErrOverlap = static_cast<int>(AccelError::overlap);
constexpr int kErrRead = static_cast<int>(AccelError::read);
constexpr int kErrWrite = static_cast<int>(AccelError::write);
constexpr int kErrCore = static_cast<int>(AccelError::core);

namespace {
struct AccelSizes {
  int tw;   // total elements
  int wb;   // word counts
  int ew;   // address arithmetic (end addresses, compares)
};

AccelSizes accel_sizes(const AccelConfig& c) {
  AccelSizes s{};
  s.tw = c.core.chan_bits() + c.core.inner_bits + 32;
  s.wb = s.tw + 3;
  s.ew = std::max(64, s.tw + 6) + 1;
  return s;
}
}  // namespace

Module build_ctrl(const AccelConfig& c, const std::string& name) {
  const auto& core = c.core;
  const auto& a = core.arith;
  const AccelSizes sz = accel_sizes(c);
  const int tw = sz.tw, wb = sz.wb, ew = sz.ew;
  const int cw = core.chan_bits(), hw = core.inner_bits, rw = core.rshift_bits();
  const int aw = c.addr_bits;
  const int bb = c.bus_bytes(), bl = clog2(bb);
  const int L = core.lanes;
  Module m;
  m.name = name;
  m.description = {
      "Job control: takes START, sizes the job (C*HW*N by shift-and-add), validates it with no",
      "bus traffic on failure, then runs: core set-up, parameter DMA, data DMA in and out.",
      "Errors and SOFT RESET stop new requests, drain the outstanding ones, then reset the",
      "datapath. Also the performance counters."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1);
  m.in("soft_reset_i", 1);
  m.in("channels_i", cw);
  m.in("inner_i", hw);
  m.in("outer_i", 32);
  m.in("layout_i", 1);
  m.in("round_i", 2);
  m.in("shift_i", rw);
  m.in("lo_i", a.yw);
  m.in("hi_i", a.yw);
  m.in("src_i", 64);
  m.in("dst_i", 64);
  m.in("param_i", 64);
  m.in("win_base_i", 64);
  m.in("win_last_i", 64);
  m.out("busy_o", 1);
  m.out("done_o", 1);
  m.out("error_o", 1);
  m.out("start_ignored_o", 1, "pulse");
  m.out("irq_done_o", 1, "pulse");
  m.out("irq_error_o", 1, "pulse");
  m.out("err_code_o", 8);
  m.out("err_addr_o", 64);
  m.out("perf_active_o", 32);
  m.out("perf_rd_stall_o", 32);
  m.out("perf_wr_stall_o", 32);
  m.out("perf_elems_o", 64);
  // Core.
  m.out("core_channels_o", cw);
  m.out("core_inner_o", hw);
  m.out("core_layout_o", 1);
  m.out("core_shift_o", rw);
  m.out("core_round_o", 2);
  m.out("core_lo_o", a.yw);
  m.out("core_hi_o", a.yw);
  m.out("core_start_o", 1);
  m.in("core_ready_i", 1);
  m.in("core_configured_i", 1);
  m.in("core_cfg_error_i", 1);
  m.in("core_prm_ready_i", 1);
  m.in("prm_fire_i", 1);
  m.out("prm_chan_o", cw);
  m.in("s_valid_i", 1);
  m.in("s_ready_i", 1);
  m.in("m_valid_i", 1);
  m.in("m_ready_i", 1);
  m.in("m_keep_i", L);
  // Datapath.
  m.out("dp_rst_no", 1, "datapath reset (flush)");
  m.out("phase_param_o", 1, "read data goes to the parameter gearbox");
  m.out("pg_start_o", 1);
  m.out("ig_start_o", 1);
  m.out("total_o", tw, "elements in the job");
  m.out("rd_start_o", 1);
  m.out("rd_addr_o", aw);
  m.out("rd_words_o", wb);
  m.out("rd_abort_o", 1);
  m.in("rd_idle_i", 1);
  m.in("rd_done_i", 1);
  m.in("rd_err_i", 1);
  m.in("rd_err_addr_i", aw);
  m.out("wr_start_o", 1);
  m.out("wr_addr_o", aw);
  m.out("wr_words_o", wb);
  m.out("wr_last_strb_o", bb);
  m.out("wr_abort_o", 1);
  m.in("wr_idle_i", 1);
  m.in("wr_done_i", 1);
  m.in("wr_err_i", 1);
  m.in("wr_err_addr_i", aw);

  // States.
  const int sb = 4;
  auto S = [&](int v) { return lit(sb, static_cast<unsigned long long>(v)); };
  enum { IDLE, MUL1, MUL2, SIZES, CHECK, CFG, CFGW, PARAM, RUN, ABORT, FLUSH };
  m.section("Job snapshot (taken at START)");
  m.reg("st_q", sb);
  m.reg("ch_q", cw);
  m.reg("inner_q", hw);
  m.reg("outer_q", 32);
  m.reg("layout_q", 1);
  m.reg("round_q", 2);
  m.reg("shift_q", rw);
  m.reg("lo_q", a.yw);
  m.reg("hi_q", a.yw);
  m.reg("src_q", 64);
  m.reg("dst_q", 64);
  m.reg("param_q", 64);
  m.reg("base_q", 64);
  m.reg("last_q", 64);
  m.reg("done_q", 1);
  m.reg("error_q", 1);
  m.reg("code_q", 8);
  m.reg("eaddr_q", 64);
  m.reg("sr_q", 1, "the current stop is a soft reset");
  m.wire("busy", 1);
  m.assign("busy", "st_q != " + S(IDLE));

  m.section("Sizing: C * HW, then * N, by shift-and-add (32 steps each)");
  m.reg("ma_q", tw);
  m.reg("mb_q", 32);
  m.reg("macc_q", tw);
  m.reg("mcnt_q", 5);
  m.wire("macc_next", tw);
  m.assign("macc_next", "mb_q[0] ? macc_q + ma_q : macc_q");
  m.reg("total_q", tw);

  m.section("Sizes in bytes and bus words; region ends (inclusive)");
  const int xb = bits_for(a.xw), yb = bits_for(a.yw);
  const int bw2 = tw + 6;  // bit counts: total * 32 fits
  m.wire("in_bits", bw2);
  m.assign("in_bits", zext("total_q", tw, bw2) + " * " + lit(bw2, static_cast<unsigned long long>(a.xw)));
  m.wire("out_bits", bw2);
  m.assign("out_bits", zext("total_q", tw, bw2) + " * " + lit(bw2, static_cast<unsigned long long>(a.yw)));
  (void)xb;
  (void)yb;
  // (expr + add) >> shift into an out-bit wire, through a sum wire; the dropped low bits are
  // marked unused (they only round up).
  auto shr_to = [&](const std::string& nm, const std::string& e, int ebits, int add, int shift,
                    int out) {
    const int sb2 = out + shift;
    m.wire(nm + "_sum", sb2);
    m.assign(nm + "_sum", zext(e, ebits, sb2) + " + " + lit(sb2, static_cast<unsigned long long>(add)));
    m.wire(nm, out);
    m.assign(nm, part(nm + "_sum", sb2, shift, out));
    if (shift > 0) {
      m.wire("unused_" + nm, 1);
      m.assign("unused_" + nm, "^" + part(nm + "_sum", sb2, 0, shift));
    }
  };
  const int byb = bw2 - 2;  // ceil(bits / 8) fits
  shr_to("in_bytes", "in_bits", bw2, 7, 3, byb);
  shr_to("out_bytes", "out_bits", bw2, 7, 3, byb);
  const int pe = c.param_entry_bytes();
  const int pbb = cw + clog2(pe);
  m.wire("prm_bytes", pbb);
  m.assign("prm_bytes", zext("ch_q", cw, pbb) + " << " + std::to_string(clog2(pe)));
  m.reg("in_words_q", wb);
  m.reg("out_words_q", wb);
  m.reg("prm_words_q", wb);
  m.reg("in_end_q", ew);
  m.reg("out_end_q", ew);
  m.reg("prm_end_q", ew);
  m.reg("strb_q", bb);
  shr_to("in_words_w", "in_bytes", byb, bb - 1, bl, wb);
  shr_to("out_words_w", "out_bytes", byb, bb - 1, bl, wb);
  shr_to("prm_words_w", "prm_bytes", pbb, bb - 1, bl, wb);
  m.wire("ob_low", bl, "out_bytes mod bus bytes");
  m.assign("ob_low", part("out_bytes", byb, 0, bl));
  m.wire("strb_last", bb);
  m.assign("strb_last", "(ob_low == " + lit(bl, 0) + ") ? {" + std::to_string(bb) + "{1'b1}} : (" +
                            lit(bb, 1) + " << ob_low) - " + lit(bb, 1));

  m.section("Validation (all from registered values)");
  m.wire("bad_chan", 1);
  std::string bc = "(ch_q == " + lit(cw, 0) + ")";
  if (core.max_channels != (1LL << cw) - 1) {
    bc += " | (ch_q > " + lit(cw, static_cast<unsigned long long>(core.max_channels)) + ")";
  }
  m.assign("bad_chan", bc);
  m.wire("zero_len", 1);
  m.assign("zero_len", "(inner_q == " + lit(hw, 0) + ") | (outer_q == 32'd0)");
  m.wire("bad_shift", 1);
  if (core.acc_bits() != (1 << rw) - 1) {
    m.assign("bad_shift", "shift_q > " + lit(rw, static_cast<unsigned long long>(core.acc_bits())));
  } else {
    m.assign("bad_shift", "1'b0");
  }
  m.wire("misaligned", 1);
  m.assign("misaligned", "(" + part("src_q", 64, 0, bl) + " != " + lit(bl, 0) + ") | (" +
                             part("dst_q", 64, 0, bl) + " != " + lit(bl, 0) + ") | (" +
                             part("param_q", 64, 0, bl) + " != " + lit(bl, 0) + ")");
  auto in_window = [&](const std::string& start, const std::string& end) {
    std::string e = "(" + zext(start, 64, ew) + " >= " + zext("base_q", 64, ew) + ") & (" + end +
                    " <= " + zext("last_q", 64, ew) + ")";
    if (aw < 64) e += " & (" + end + " < " + "(" + lit(ew, 1) + " << " + std::to_string(aw) + "))";
    return e;
  };
  m.wire("bad_window", 1);
  m.assign("bad_window", "~((" + in_window("src_q", "in_end_q") + ") & (" +
                             in_window("dst_q", "out_end_q") + ") & (" +
                             in_window("param_q", "prm_end_q") + "))");
  m.wire("overlap", 1);
  std::string ov = "(" + zext("src_q", 64, ew) + " <= out_end_q) & (" + zext("dst_q", 64, ew) +
                   " <= in_end_q)";
  if (a.yw <= a.xw) ov = "(" + ov + ") & (src_q != dst_q)";  // in place is safe when YW <= XW
  m.assign("overlap", ov);
  m.wire("check_code", 8);
  m.assign("check_code", "bad_chan ? 8'd" + std::to_string(kErrChannels) + " : zero_len ? 8'd" +
                             std::to_string(kErrZeroLength) + " : bad_shift ? 8'd" +
                             std::to_string(kErrShift) + " : misaligned ? 8'd" +
                             std::to_string(kErrMisaligned) + " : bad_window ? 8'd" +
                             std::to_string(kErrWindow) + " : overlap ? 8'd" +
                             std::to_string(kErrOverlap) + " : 8'd0");

  m.section("Stop handling");
  m.wire("dma_err", 1);
  m.assign("dma_err", "rd_err_i | wr_err_i");
  m.wire("dma_code", 8);
  m.assign("dma_code", "rd_err_i ? 8'd" + std::to_string(kErrRead) + " : 8'd" +
                           std::to_string(kErrWrite));
  m.wire("dma_addr", 64);
  m.assign("dma_addr", zext("(rd_err_i ? rd_err_addr_i : wr_err_addr_i)", aw, 64));
  m.reg("prm_cnt_q", cw, "parameters delivered to the core");

  m.section("Pulses to the datapath and status");
  m.reg("rd_start_q", 1);
  m.reg("rd_addr_q", aw);
  m.reg("rd_words_q", wb);
  m.reg("wr_start_q", 1);
  m.reg("pg_start_q", 1);
  m.reg("ig_start_q", 1);
  m.reg("irq_done_q", 1);
  m.reg("irq_err_q", 1);

  Block seq;
  // Defaults: pulses low.
  for (const char* r : {"rd_start_q", "wr_start_q", "pg_start_q", "ig_start_q",
                        "irq_done_q", "irq_err_q"}) {
    seq.push_back(assign(r, "1'b0"));
  }
  auto finish = [&](bool error) {
    Block b{assign("st_q", S(IDLE))};
    if (error) {
      b.push_back(assign("error_q", "1'b1"));
      b.push_back(assign("irq_err_q", "1'b1"));
    }
    return b;
  };
  auto to_abort = [&](const std::string& code, const std::string& addr) {
    return Block{assign("code_q", code), assign("eaddr_q", addr), assign("st_q", S(ABORT))};
  };
  std::vector<std::pair<std::string, Block>> arms;
  arms.push_back({S(IDLE),
                  {if_("start_i",
                       {assign("ch_q", "channels_i"), assign("inner_q", "inner_i"),
                        assign("outer_q", "outer_i"), assign("layout_q", "layout_i"),
                        assign("round_q", "round_i"), assign("shift_q", "shift_i"),
                        assign("lo_q", "lo_i"), assign("hi_q", "hi_i"), assign("src_q", "src_i"),
                        assign("dst_q", "dst_i"), assign("param_q", "param_i"),
                        assign("base_q", "win_base_i"), assign("last_q", "win_last_i"),
                        assign("done_q", "1'b0"), assign("error_q", "1'b0"),
                        assign("code_q", "8'd0"), assign("eaddr_q", "64'd0"),
                        assign("sr_q", "1'b0"),
                        assign("ma_q", zext("channels_i", cw, tw)),
                        assign("mb_q", zext("inner_i", hw, 32)), assign("macc_q", lit(tw, 0)),
                        assign("mcnt_q", "5'd0"), assign("st_q", S(MUL1))})}});
  const std::string step_regs_a = "ma_q << 1";
  arms.push_back({S(MUL1),
                  {assign("macc_q", "macc_next"), assign("ma_q", step_regs_a),
                   assign("mb_q", "mb_q >> 1"), assign("mcnt_q", "mcnt_q + 5'd1"),
                   if_("mcnt_q == 5'd31",
                       {assign("ma_q", "macc_next"), assign("mb_q", "outer_q"),
                        assign("macc_q", lit(tw, 0)), assign("st_q", S(MUL2))})}});
  arms.push_back({S(MUL2),
                  {assign("macc_q", "macc_next"), assign("ma_q", step_regs_a),
                   assign("mb_q", "mb_q >> 1"), assign("mcnt_q", "mcnt_q + 5'd1"),
                   if_("mcnt_q == 5'd31", {assign("total_q", "macc_next"), assign("st_q", S(SIZES))})}});
  arms.push_back(
      {S(SIZES),
       {assign("in_words_q", "in_words_w"), assign("out_words_q", "out_words_w"),
        assign("prm_words_q", "prm_words_w"),
        assign("in_end_q", zext("src_q", 64, ew) + " + " + zext("in_bytes", byb, ew) + " - " + lit(ew, 1)),
        assign("out_end_q", zext("dst_q", 64, ew) + " + " + zext("out_bytes", byb, ew) + " - " + lit(ew, 1)),
        assign("prm_end_q", zext("param_q", 64, ew) + " + " + zext("prm_bytes", pbb, ew) + " - " + lit(ew, 1)),
        assign("strb_q", "strb_last"), assign("st_q", S(CHECK))}});
  Block check_fail = finish(true);
  check_fail.insert(check_fail.begin(), assign("code_q", "check_code"));
  arms.push_back({S(CHECK), {if_("check_code != 8'd0", check_fail, {assign("st_q", S(CFG))})}});
  arms.push_back({S(CFG), {if_("core_ready_i", {assign("st_q", S(CFGW))})}});
  arms.push_back(
      {S(CFGW),
       {if_("core_cfg_error_i",
            {assign("code_q", "8'd" + std::to_string(kErrCore)), assign("st_q", S(FLUSH))},
            {if_("core_configured_i",
                 {assign("rd_start_q", "1'b1"), assign("rd_addr_q", fit("param_q", 64, aw)),
                  assign("rd_words_q", "prm_words_q"), assign("pg_start_q", "1'b1"),
                  assign("prm_cnt_q", lit(cw, 0)), assign("st_q", S(PARAM))})})}});
  arms.push_back(
      {S(PARAM),
       {if_("prm_fire_i", {assign("prm_cnt_q", "prm_cnt_q + " + lit(cw, 1))}),
        if_("rd_err_i", to_abort("8'd" + std::to_string(kErrRead), "dma_addr"),
            {if_("(prm_cnt_q == ch_q) & core_prm_ready_i & rd_done_i & ~rd_start_q",
                 {assign("rd_start_q", "1'b1"), assign("rd_addr_q", fit("src_q", 64, aw)),
                  assign("rd_words_q", "in_words_q"), assign("wr_start_q", "1'b1"),
                  assign("ig_start_q", "1'b1"), assign("st_q", S(RUN))})})}});
  arms.push_back(
      {S(RUN),
       {if_("dma_err", to_abort("dma_code", "dma_addr"),
            {if_("wr_done_i & rd_done_i & ~wr_start_q & ~rd_start_q",
                 {assign("done_q", "1'b1"), assign("irq_done_q", "1'b1"), assign("st_q", S(FLUSH))})})}});
  arms.push_back({S(ABORT), {if_("rd_idle_i & wr_idle_i", {assign("st_q", S(FLUSH))})}});
  arms.push_back({S(FLUSH),
                  {assign("st_q", S(IDLE)),
                   if_("(code_q != 8'd0) & ~sr_q", {assign("error_q", "1'b1"), assign("irq_err_q", "1'b1")})}});
  arms.push_back({"default", {assign("st_q", S(IDLE))}});
  seq.push_back(case_("st_q", std::move(arms)));
  // START while busy; SOFT RESET from anywhere.
  seq.push_back(if_(
      "soft_reset_i",
      {assign("sr_q", "1'b1"), assign("done_q", "1'b0"), assign("error_q", "1'b0"),
       if_("(st_q == " + S(PARAM) + ") | (st_q == " + S(RUN) + ") | (st_q == " + S(ABORT) + ")",
           {assign("st_q", S(ABORT))}, {assign("st_q", S(FLUSH))})}));
  Block top_ff{if_("!rst_ni",
                   {assign("st_q", S(IDLE)), assign("done_q", "1'b0"), assign("error_q", "1'b0"),
                    assign("code_q", "8'd0"), assign("eaddr_q", "64'd0"), assign("sr_q", "1'b0"),
                    assign("rd_start_q", "1'b0"), assign("wr_start_q", "1'b0"),
                    assign("pg_start_q", "1'b0"), assign("ig_start_q", "1'b0"),
                    assign("irq_done_q", "1'b0"),
                    assign("irq_err_q", "1'b0"),
                    assign("prm_cnt_q", lit(cw, 0))},
                   std::move(seq))};
  m.always_ff(std::move(top_ff));

  m.section("Performance counters (cleared by START)");
  m.reg("pa_q", 32);
  m.reg("prs_q", 32);
  m.reg("pws_q", 32);
  m.reg("pel_q", 64);
  const std::string kcnt = popcount(m, "kc", "m_keep_i", L, bits_for(L));
  m.wire("keep_cnt", bits_for(L));
  m.assign("keep_cnt", kcnt);
  m.wire("run", 1);
  m.assign("run", "st_q == " + S(RUN));
  m.always_ff({if_("!rst_ni | (start_i & ~busy)",
                   {assign("pa_q", "32'd0"), assign("prs_q", "32'd0"), assign("pws_q", "32'd0"),
                    assign("pel_q", "64'd0")},
                   {if_("busy", {assign("pa_q", "pa_q + 32'd1")}),
                    if_("run & s_ready_i & ~s_valid_i", {assign("prs_q", "prs_q + 32'd1")}),
                    if_("run & m_valid_i & ~m_ready_i", {assign("pws_q", "pws_q + 32'd1")}),
                    if_("m_valid_i & m_ready_i",
                        {assign("pel_q", "pel_q + " + zext("keep_cnt", bits_for(L), 64))})})});

  m.section("Outputs");
  m.assign("busy_o", "busy");
  m.assign("done_o", "done_q");
  m.assign("error_o", "error_q");
  // Combinational, so the sticky bit is visible to a read right after the ignored write.
  m.assign("start_ignored_o", "start_i & busy");
  m.assign("irq_done_o", "irq_done_q");
  m.assign("irq_error_o", "irq_err_q");
  m.assign("err_code_o", "code_q");
  m.assign("err_addr_o", "eaddr_q");
  m.assign("perf_active_o", "pa_q");
  m.assign("perf_rd_stall_o", "prs_q");
  m.assign("perf_wr_stall_o", "pws_q");
  m.assign("perf_elems_o", "pel_q");
  m.assign("core_channels_o", "ch_q");
  m.assign("core_inner_o", "inner_q");
  m.assign("core_layout_o", "layout_q");
  m.assign("core_shift_o", "shift_q");
  m.assign("core_round_o", "round_q");
  m.assign("core_lo_o", "lo_q");
  m.assign("core_hi_o", "hi_q");
  m.assign("core_start_o", "st_q == " + S(CFG));
  m.assign("prm_chan_o", "prm_cnt_q");
  m.assign("dp_rst_no", "rst_ni & (st_q != " + S(FLUSH) + ")");
  m.assign("phase_param_o", "st_q == " + S(PARAM));
  m.assign("pg_start_o", "pg_start_q");
  m.assign("ig_start_o", "ig_start_q");
  m.assign("total_o", "total_q");
  m.assign("rd_start_o", "rd_start_q");
  m.assign("rd_addr_o", "rd_addr_q");
  m.assign("rd_words_o", "rd_words_q");
  // The DMA engines may only start bursts while the job runs (never in ABORT or FLUSH).
  m.wire("dma_go", 1);
  m.assign("dma_go", "(st_q == " + S(PARAM) + ") | (st_q == " + S(RUN) + ")");
  m.assign("rd_abort_o", "~dma_go");
  m.assign("wr_start_o", "wr_start_q");
  m.assign("wr_addr_o", fit("dst_q", 64, aw));
  m.assign("wr_words_o", "out_words_q");
  m.assign("wr_last_strb_o", "strb_q");
  m.assign("wr_abort_o", "~dma_go");
  return m;
}

}  // namespace normcore::gen

namespace normcore::gen {

namespace {

int rd_depth(const AccelConfig& c) { return std::max(2, c.outstanding * c.max_burst); }
int wr_depth(const AccelConfig& c) { return std::max(2, 2 * c.max_burst); }

Module build_top(const AccelConfig& c, const RegisterMap& map, const Module& regs) {
  const auto& core = c.core;
  const auto& a = core.arith;
  const AccelSizes sz = accel_sizes(c);
  const int L = core.lanes;
  const int cw = core.chan_bits();
  const int bus = c.bus_bits;
  const int rd = rd_depth(c), wd = wr_depth(c);
  const int rcb = bits_for(rd + 1), wcb = bits_for(wd + 1);
  const std::string n = core.name;
  Module m;
  m.name = c.top_name();
  m.description = {
      "normcore accelerator: AXI4-Lite registers (s_axil_*), AXI4 DMA master (m_axi_*, " +
          std::to_string(bus) + "-bit), irq_o.",
      "A job: START -> validate -> core set-up -> DMA C parameters from PARAM -> stream N*C*HW",
      "elements SRC -> core -> DST -> DONE + IRQ. See the register reference for the map."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  for (const auto& p : regs.ports) {
    if (p.name.rfind("s_axil_", 0) == 0) m.port(p.name, p.output, p.width, "");
  }
  const char* addr_sig[] = {"id", "addr", "len", "size", "burst", "lock", "cache", "prot"};
  const int addr_w[] = {c.id_bits, c.addr_bits, 8, 3, 2, 1, 4, 3};
  for (const char* ch : {"aw", "w", "b", "ar", "r"}) {
    const std::string s(ch);
    if (s == "aw" || s == "ar") {
      for (int i = 0; i < 8; ++i) m.out("m_axi_" + s + addr_sig[i], addr_w[i]);
      m.out("m_axi_" + s + "valid", 1);
      m.in("m_axi_" + s + "ready", 1);
    } else if (s == "w") {
      m.out("m_axi_wdata", bus);
      m.out("m_axi_wstrb", bus / 8);
      m.out("m_axi_wlast", 1);
      m.out("m_axi_wvalid", 1);
      m.in("m_axi_wready", 1);
    } else if (s == "b") {
      m.in("m_axi_bid", c.id_bits);
      m.in("m_axi_bresp", 2);
      m.in("m_axi_bvalid", 1);
      m.out("m_axi_bready", 1);
    } else {
      m.in("m_axi_rid", c.id_bits);
      m.in("m_axi_rdata", bus);
      m.in("m_axi_rresp", 2);
      m.in("m_axi_rlast", 1);
      m.in("m_axi_rvalid", 1);
      m.out("m_axi_rready", 1);
    }
  }
  m.out("irq_o", 1, "level: |(IRQ_STATUS & enables)");

  // Register block: every field port becomes a wire r_<port> (outputs) or is driven from the
  // job control (inputs).
  m.section("Register block");
  std::vector<std::pair<std::string, std::string>> rconn;
  for (const auto& p : regs.ports) {
    if (p.name == "clk_i" || p.name == "rst_ni" || p.name.rfind("s_axil_", 0) == 0) {
      rconn.push_back({p.name, p.name});
      continue;
    }
    const std::string w = "r_" + p.name;
    m.wire(w, p.width);
    rconn.push_back({p.name, w});
  }
  auto R = [&](const std::string& port) {  // a regblock port's wire, checked to exist
    for (const auto& p : regs.ports) {
      if (p.name == port) return "r_" + port;
    }
    throw std::logic_error("register block has no port " + port);
  };
  m.instance(Instance{regs.name, "u_regs", rconn, {}});
  (void)map;

  m.section("Job control");
  const std::vector<std::string> ctrl_out = {
      "busy", "done", "error", "start_ignored", "irq_done", "irq_error", "err_code", "err_addr",
      "perf_active", "perf_rd_stall", "perf_wr_stall", "perf_elems"};
  const int ctrl_w[] = {1, 1, 1, 1, 1, 1, 8, 64, 32, 32, 32, 64};
  for (std::size_t i = 0; i < ctrl_out.size(); ++i) m.wire("c_" + ctrl_out[i], ctrl_w[i]);
  m.assign(R("status_busy_i"), "c_busy");
  m.assign(R("status_done_i"), "c_done");
  m.assign(R("status_error_i"), "c_error");
  m.assign(R("status_start_ignored_set_i"), "c_start_ignored");
  m.assign(R("irq_status_done_set_i"), "c_irq_done");
  m.assign(R("irq_status_error_set_i"), "c_irq_error");
  m.assign(R("err_code_code_i"), "c_err_code");
  m.assign(R("err_addr_lo_value_i"), "c_err_addr[31:0]");
  m.assign(R("err_addr_hi_value_i"), "c_err_addr[63:32]");
  m.assign(R("perf_active_value_i"), "c_perf_active");
  m.assign(R("perf_rd_stall_value_i"), "c_perf_rd_stall");
  m.assign(R("perf_wr_stall_value_i"), "c_perf_wr_stall");
  m.assign(R("perf_elems_lo_value_i"), "c_perf_elems[31:0]");
  m.assign(R("perf_elems_hi_value_i"), "c_perf_elems[63:32]");
  m.assign("irq_o", "(" + R("irq_status_done_o") + " & " + R("ctrl_irq_en_done_o") + ") | (" +
                        R("irq_status_error_o") + " & " + R("ctrl_irq_en_error_o") + ")");
  m.wire("unused_sticky", 1);
  m.assign("unused_sticky", R("status_start_ignored_o"));

  // Datapath wires.
  const int tw = sz.tw, wb = sz.wb;
  const int hw = core.inner_bits, rw = core.rshift_bits();
  for (auto [nm, w] : std::vector<std::pair<std::string, int>>{
           {"k_channels", cw}, {"k_inner", hw}, {"k_layout", 1}, {"k_shift", rw}, {"k_round", 2},
           {"k_lo", a.yw}, {"k_hi", a.yw}, {"k_start", 1}, {"k_ready", 1}, {"k_configured", 1},
           {"k_cfg_error", 1}, {"k_prm_ready", 1}, {"prm_chan", cw}, {"dp_rst_n", 1},
           {"phase_param", 1}, {"pg_start", 1}, {"ig_start", 1}, {"total", tw},
           {"rd_start", 1}, {"rd_addr", c.addr_bits}, {"rd_words", wb}, {"rd_abort", 1},
           {"rd_idle", 1}, {"rd_done", 1}, {"rd_err", 1}, {"rd_err_addr", c.addr_bits},
           {"wr_start", 1}, {"wr_addr", c.addr_bits}, {"wr_words", wb}, {"wr_strb", bus / 8},
           {"wr_abort", 1}, {"wr_idle", 1}, {"wr_done", 1}, {"wr_err", 1},
           {"wr_err_addr", c.addr_bits}, {"s_valid", 1}, {"s_ready", 1}, {"s_data", L * a.xw},
           {"s_keep", L}, {"s_last", 1}, {"m_valid", 1}, {"m_ready", 1}, {"m_data", L * a.yw},
           {"m_keep", L}, {"m_last", 1}, {"pg_valid", 1}, {"pg_data", c.param_entry_bytes() * 8}, {"pg_keep", 1}, {"pg_last", 1},
           {"rf_valid", 1}, {"rf_data", bus}, {"rf_count", rcb}, {"rf_rd", 1}, {"rf_wr", 1},
           {"rf_wdata", bus}, {"pg_in_ready", 1}, {"ig_in_ready", 1}, {"og_valid", 1},
           {"og_data", bus}, {"wf_count", wcb}, {"wf_valid", 1}, {"wf_data", bus}, {"wf_pop", 1},
           {"wf_space", 1}}) {
    m.wire(nm, w);
  }
  auto reg64 = [&](const std::string& r) {
    return "{" + R(r + "_hi_value_o") + ", " + R(r + "_lo_value_o") + "}";
  };
  m.instance(Instance{
      n + "_ctrl",
      "u_ctrl",
      {{"clk_i", "clk_i"}, {"rst_ni", "rst_ni"}, {"start_i", R("ctrl_start_o")},
       {"soft_reset_i", R("ctrl_soft_reset_o")}, {"channels_i", R("channels_value_o")},
       {"inner_i", R("inner_value_o")}, {"outer_i", R("outer_value_o")},
       {"layout_i", R("mode_layout_o")}, {"round_i", R("mode_rounding_o")},
       {"shift_i", R("mode_shift_o")}, {"lo_i", R("clamp_lo_value_o")},
       {"hi_i", R("clamp_hi_value_o")}, {"src_i", reg64("src")}, {"dst_i", reg64("dst")},
       {"param_i", reg64("param")}, {"win_base_i", reg64("win_base")},
       {"win_last_i", reg64("win_last")}, {"busy_o", "c_busy"}, {"done_o", "c_done"},
       {"error_o", "c_error"}, {"start_ignored_o", "c_start_ignored"},
       {"irq_done_o", "c_irq_done"}, {"irq_error_o", "c_irq_error"},
       {"err_code_o", "c_err_code"}, {"err_addr_o", "c_err_addr"},
       {"perf_active_o", "c_perf_active"}, {"perf_rd_stall_o", "c_perf_rd_stall"},
       {"perf_wr_stall_o", "c_perf_wr_stall"}, {"perf_elems_o", "c_perf_elems"},
       {"core_channels_o", "k_channels"}, {"core_inner_o", "k_inner"},
       {"core_layout_o", "k_layout"}, {"core_shift_o", "k_shift"}, {"core_round_o", "k_round"},
       {"core_lo_o", "k_lo"}, {"core_hi_o", "k_hi"}, {"core_start_o", "k_start"},
       {"core_ready_i", "k_ready"}, {"core_configured_i", "k_configured"},
       {"core_cfg_error_i", "k_cfg_error"}, {"core_prm_ready_i", "k_prm_ready"},
       {"prm_fire_i", "pg_valid & k_prm_ready"}, {"prm_chan_o", "prm_chan"},
       {"s_valid_i", "s_valid"}, {"s_ready_i", "s_ready"}, {"m_valid_i", "m_valid"},
       {"m_ready_i", "m_ready"}, {"m_keep_i", "m_keep"}, {"dp_rst_no", "dp_rst_n"},
       {"phase_param_o", "phase_param"}, {"pg_start_o", "pg_start"}, {"ig_start_o", "ig_start"},
       {"total_o", "total"}, {"rd_start_o", "rd_start"}, {"rd_addr_o", "rd_addr"},
       {"rd_words_o", "rd_words"}, {"rd_abort_o", "rd_abort"}, {"rd_idle_i", "rd_idle"},
       {"rd_done_i", "rd_done"}, {"rd_err_i", "rd_err"}, {"rd_err_addr_i", "rd_err_addr"},
       {"wr_start_o", "wr_start"}, {"wr_addr_o", "wr_addr"}, {"wr_words_o", "wr_words"},
       {"wr_last_strb_o", "wr_strb"}, {"wr_abort_o", "wr_abort"}, {"wr_idle_i", "wr_idle"},
       {"wr_done_i", "wr_done"}, {"wr_err_i", "wr_err"}, {"wr_err_addr_i", "wr_err_addr"}},
      {}});

  m.section("Read DMA -> read FIFO -> parameter / data gearboxes");
  std::vector<std::pair<std::string, std::string>> rconn2 = {
      {"clk_i", "clk_i"},         {"rst_ni", "dp_rst_n"},   {"start_i", "rd_start"},
      {"addr_i", "rd_addr"},      {"words_i", "rd_words"},  {"abort_i", "rd_abort"},
      {"credit_i", lit(rcb, static_cast<unsigned long long>(rd + 1)) + " - rf_count"}};
  for (const char* s : {"id", "addr", "len", "size", "burst", "lock", "cache", "prot", "valid",
                        "ready"}) {
    rconn2.push_back({std::string("m_axi_ar") + s, std::string("m_axi_ar") + s});
  }
  for (const char* s : {"id", "data", "resp", "last", "valid", "ready"}) {
    rconn2.push_back({std::string("m_axi_r") + s, std::string("m_axi_r") + s});
  }
  for (auto [p, w] : std::vector<std::pair<std::string, std::string>>{
           {"data_valid_o", "rf_wr"}, {"data_o", "rf_wdata"}, {"idle_o", "rd_idle"},
           {"done_o", "rd_done"}, {"err_o", "rd_err"}, {"err_addr_o", "rd_err_addr"}}) {
    rconn2.push_back({p, w});
  }
  m.instance(Instance{n + "_rdma", "u_rdma", rconn2, {}});
  m.instance(Instance{n + "_rfifo",
                      "u_rfifo",
                      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"wr_i", "rf_wr"},
                       {"wdata_i", "rf_wdata"}, {"rd_i", "rf_rd"}, {"rdata_o", "rf_data"},
                       {"valid_o", "rf_valid"}, {"count_o", "rf_count"}},
                      {}});
  m.assign("rf_rd", "rf_valid & (phase_param ? pg_in_ready : ig_in_ready)");
  const int pbits = c.param_entry_bytes() * 8;
  m.instance(Instance{n + "_pgear",
                      "u_pgear",
                      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"start_i", "pg_start"},
                       {"total_i", "k_channels"}, {"in_valid_i", "rf_valid & phase_param"},
                       {"in_ready_o", "pg_in_ready"}, {"in_data_i", "rf_data"},
                       {"out_valid_o", "pg_valid"}, {"out_ready_i", "k_prm_ready"},
                       {"out_data_o", "pg_data"}, {"out_keep_o", "pg_keep"},
                       {"out_last_o", "pg_last"}},
                      "parameter entries {shift, scale} -> core parameter port"});
  m.wire("unused_pg", 1);
  std::string unused_pg = "pg_keep ^ pg_last";
  if (pbits > core.param_bits()) {
    unused_pg += " ^ (^" + part("pg_data", pbits, core.param_bits(), pbits - core.param_bits()) + ")";
  }
  m.assign("unused_pg", unused_pg);
  m.instance(Instance{n + "_igear",
                      "u_igear",
                      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"start_i", "ig_start"},
                       {"total_i", "total"}, {"in_valid_i", "rf_valid & ~phase_param"},
                       {"in_ready_o", "ig_in_ready"}, {"in_data_i", "rf_data"},
                       {"out_valid_o", "s_valid"}, {"out_ready_i", "s_ready"},
                       {"out_data_o", "s_data"}, {"out_keep_o", "s_keep"},
                       {"out_last_o", "s_last"}},
                      "bus words -> beats of " + std::to_string(L) + " elements"});

  m.section("Streaming core");
  m.instance(Instance{
      core.top_name(),
      "u_core",
      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"cfg_channels_i", "k_channels"},
       {"cfg_inner_i", "k_inner"}, {"cfg_layout_i", "k_layout"}, {"cfg_shift_i", "k_shift"},
       {"cfg_round_i", "k_round"}, {"cfg_lo_i", "k_lo"}, {"cfg_hi_i", "k_hi"},
       {"start_i", "k_start"}, {"ready_o", "k_ready"}, {"configured_o", "k_configured"},
       {"cfg_error_o", "k_cfg_error"}, {"prm_valid_i", "pg_valid"},
       {"prm_ready_o", "k_prm_ready"}, {"prm_chan_i", "prm_chan"},
       {"prm_scale_i", part("pg_data", pbits, 0, a.sw)},
       {"prm_shift_i", part("pg_data", pbits, a.sw, a.bw)}, {"s_axis_tvalid", "s_valid"},
       {"s_axis_tready", "s_ready"}, {"s_axis_tdata", "s_data"}, {"s_axis_tkeep", "s_keep"},
       {"s_axis_tlast", "s_last"}, {"m_axis_tvalid", "m_valid"}, {"m_axis_tready", "m_ready"},
       {"m_axis_tdata", "m_data"}, {"m_axis_tkeep", "m_keep"}, {"m_axis_tlast", "m_last"}},
      {}});

  m.section("Output gearbox -> write FIFO -> write DMA");
  m.instance(Instance{n + "_ogear",
                      "u_ogear",
                      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"in_valid_i", "m_valid"},
                       {"in_ready_o", "m_ready"}, {"in_data_i", "m_data"}, {"in_keep_i", "m_keep"},
                       {"in_last_i", "m_last"}, {"out_valid_o", "og_valid"},
                       {"out_ready_i", "wf_space"}, {"out_data_o", "og_data"}},
                      {}});
  m.assign("wf_space", "wf_count < " + lit(wcb, static_cast<unsigned long long>(wd + 1)));
  m.instance(Instance{n + "_wfifo",
                      "u_wfifo",
                      {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"wr_i", "og_valid & wf_space"},
                       {"wdata_i", "og_data"}, {"rd_i", "wf_pop"}, {"rdata_o", "wf_data"},
                       {"valid_o", "wf_valid"}, {"count_o", "wf_count"}},
                      {}});
  std::vector<std::pair<std::string, std::string>> wconn = {
      {"clk_i", "clk_i"},          {"rst_ni", "dp_rst_n"},   {"start_i", "wr_start"},
      {"addr_i", "wr_addr"},       {"words_i", "wr_words"},  {"last_strb_i", "wr_strb"},
      {"abort_i", "wr_abort"},     {"fifo_count_i", "wf_count"}, {"fifo_valid_i", "wf_valid"},
      {"fifo_data_i", "wf_data"},  {"fifo_pop_o", "wf_pop"}};
  for (const char* s : {"id", "addr", "len", "size", "burst", "lock", "cache", "prot", "valid",
                        "ready"}) {
    wconn.push_back({std::string("m_axi_aw") + s, std::string("m_axi_aw") + s});
  }
  for (const char* s : {"data", "strb", "last", "valid", "ready"}) {
    wconn.push_back({std::string("m_axi_w") + s, std::string("m_axi_w") + s});
  }
  for (const char* s : {"id", "resp", "valid", "ready"}) {
    wconn.push_back({std::string("m_axi_b") + s, std::string("m_axi_b") + s});
  }
  for (auto [p, w] : std::vector<std::pair<std::string, std::string>>{
           {"idle_o", "wr_idle"}, {"done_o", "wr_done"}, {"err_o", "wr_err"},
           {"err_addr_o", "wr_err_addr"}}) {
    wconn.push_back({p, w});
  }
  m.instance(Instance{n + "_wdma", "u_wdma", wconn, {}});
  return m;
}

}  // namespace

std::vector<Module> build_accel(const AccelConfig& c) {
  if (auto err = c.check(); !err.empty()) throw std::invalid_argument(err);
  const auto& core = c.core;
  const AccelSizes sz = accel_sizes(c);
  const std::string n = core.name;
  std::vector<Module> mods = build_core(core);
  const RegisterMap map = accel_register_map(c);
  Module regs = build_regblock(map, n + "_regs");
  const int rd = rd_depth(c), wd = wr_depth(c);
  mods.push_back(build_ram_fifo(n + "_rfifo", c.bus_bits, rd));
  mods.push_back(build_ram_fifo(n + "_wfifo", c.bus_bits, wd));
  mods.push_back(build_gear_in(n + "_pgear", c.bus_bits, c.param_entry_bytes() * 8, 1,
                               core.chan_bits()));
  mods.push_back(build_gear_in(n + "_igear", c.bus_bits, core.arith.xw, core.lanes, sz.tw));
  mods.push_back(build_gear_out(n + "_ogear", c.bus_bits, core.arith.yw, core.lanes));
  mods.push_back(build_rdma(c, n + "_rdma", sz.wb, bits_for(rd + 1)));
  mods.push_back(build_flop_fifo(n + "_wdma_lenq", 8, std::max(2, c.outstanding)));
  mods.push_back(build_flop_fifo(n + "_wdma_adrq", c.addr_bits, std::max(2, c.outstanding)));
  mods.push_back(build_wdma(c, n + "_wdma", sz.wb, bits_for(wd + 1)));
  mods.push_back(build_ctrl(c, n + "_ctrl"));
  Module top = build_top(c, map, regs);
  mods.push_back(std::move(regs));
  mods.push_back(std::move(top));
  return mods;
}

}  // namespace normcore::gen

namespace normcore::gen {

std::vector<GeneratedFile> render_accel(const AccelConfig& cfg) {
  const auto modules = build_accel(cfg);
  const auto map = accel_register_map(cfg);
  const auto cj = cfg.to_json();
  std::vector<GeneratedFile> out;
  std::string filelist;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& m : modules) {
    const std::string fname = m.name + ".v";
    out.push_back({fname, emit_module(m, generated_header(cj, fname))});
    filelist += fname + "\n";
    files.push_back(fname);
  }
  const std::string n = cfg.core.name;
  auto commented = [&](const std::string& text, const std::string& fname, const char* lead) {
    std::string h;
    for (const auto& line : generated_header(cj, fname)) h += std::string(lead) + line + "\n";
    return h + text;
  };
  out.push_back({n + "_regs.hpp", commented(emit_c_header(map), n + "_regs.hpp", "// ")});
  out.push_back({n + "_regs.rdl", commented(emit_systemrdl(map), n + "_regs.rdl", "// ")});
  out.push_back({n + "_registers.md", emit_markdown(map)});
  out.push_back({"filelist.f", filelist});
  const Module& top = modules.back();
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : top.ports) {
    ports.push_back({{"name", p.name}, {"dir", p.output ? "output" : "input"}, {"width", p.width}});
  }
  nlohmann::json errors = nlohmann::json::object();
  const std::pair<const char*, AccelError> codes[] = {
      {"none", AccelError::none},         {"bad_channels", AccelError::bad_channels},
      {"zero_length", AccelError::zero_length}, {"bad_shift", AccelError::bad_shift},
      {"misaligned", AccelError::misaligned}, {"window", AccelError::window},
      {"overlap", AccelError::overlap},   {"read", AccelError::read},
      {"write", AccelError::write},       {"core", AccelError::core}};
  for (const auto& [k, v] : codes) errors[k] = static_cast<int>(v);
  nlohmann::json man{
      {"generator", "normcore-gen"},
      {"generator_version", kGeneratorVersion},
      {"contract_version", kContractVersion},
      {"kind", "accelerator"},
      {"top", top.name},
      {"core_top", cfg.core.top_name()},
      {"config", cj},
      {"latency", cfg.core.latency()},
      {"param_entry",
       {{"bytes", cfg.param_entry_bytes()},
        {"layout", "little endian; scale s in bits [" + std::to_string(cfg.core.arith.sw - 1) +
                       ":0], shift b in bits [" +
                       std::to_string(cfg.core.arith.sw + cfg.core.arith.bw - 1) + ":" +
                       std::to_string(cfg.core.arith.sw) + "], both two's complement"}}},
      {"tensor_packing", "elements packed LSB first at in_bits (input) / out_bits (output)"},
      {"alignment_bytes", cfg.bus_bytes()},
      {"error_codes", errors},
      {"registers", regs_json(map)},
      {"files", files},
      {"ports", ports},
  };
  out.push_back({"manifest.json", man.dump(2) + "\n"});
  return out;
}

}  // namespace normcore::gen
