// <n>_ctrl: job control of the accelerator. START snapshots the job registers, C*HW*N is sized
// by shift-and-add, the job is validated with no bus traffic on failure, then the job FSM runs
// core set-up, the parameter DMA and the data DMA; errors and SOFT RESET drain and flush.
#include "accel_ctrl.hpp"

#include "rtl_util.hpp"
#include "specialise.hpp"

namespace normcore::gen::accel_detail {

namespace {

using ex::lit;

void job_ports(Module& m, const AccelConfig& c) {
  const auto& core = c.core;
  const int yw = core.arith.yw;
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1);
  m.in("soft_reset_i", 1);
  m.in("channels_i", core.chan_bits());
  m.in("inner_i", core.inner_bits);
  m.in("outer_i", 32);
  m.in("layout_i", 1);
  m.in("round_i", 2);
  m.in("shift_i", core.rshift_bits());
  m.in("lo_i", yw);
  m.in("hi_i", yw);
  for (const char* p : {"src_i", "dst_i", "param_i", "win_base_i", "win_last_i"}) m.in(p, 64);
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
}

void datapath_ports(Module& m, const AccelConfig& c) {
  const auto& core = c.core;
  const int cw = core.chan_bits(), yw = core.arith.yw, aw = c.addr_bits;
  const AccelSizes sz = accel_sizes(c);
  m.out("core_channels_o", cw);
  m.out("core_inner_o", core.inner_bits);
  m.out("core_layout_o", 1);
  m.out("core_shift_o", core.rshift_bits());
  m.out("core_round_o", 2);
  m.out("core_lo_o", yw);
  m.out("core_hi_o", yw);
  m.out("core_start_o", 1);
  for (const char* p : {"core_ready_i", "core_configured_i", "core_cfg_error_i", "prm_fire_i"}) {
    m.in(p, 1);
  }
  for (const char* p : {"s_valid_i", "s_ready_i", "m_valid_i", "m_ready_i"}) m.in(p, 1);
  m.in("m_keep_i", core.lanes);
  m.out("dp_rst_no", 1, "datapath reset (flush)");
  m.out("phase_param_o", 1, "read data goes to the parameter gearbox");
  m.out("pg_start_o", 1);
  m.out("ig_start_o", 1);
  m.out("total_o", sz.tw, "elements in the job");
  for (const std::string d : {"rd", "wr"}) {
    m.out(d + "_start_o", 1);
    m.out(d + "_addr_o", aw);
    m.out(d + "_words_o", sz.wb);
    if (d == "wr") m.out("wr_last_strb_o", c.bus_bytes());
    m.out(d + "_abort_o", 1);
    m.in(d + "_idle_i", 1);
    m.in(d + "_done_i", 1);
    m.in(d + "_err_i", 1);
    m.in(d + "_err_addr_i", aw);
  }
}

void snapshot_regs(Ctx& x) {
  Module& m = x.m;
  const auto& core = x.c.core;
  m.section("Job snapshot (taken at START)");
  std::vector<std::string> names = {"ST_IDLE",  "ST_MUL1",  "ST_MUL2", "ST_SIZES",
                                    "ST_CHECK", "ST_CFG",   "ST_CFGW", "ST_PARAM",
                                    "ST_RUN",   "ST_ABORT", "ST_FLUSH"};
  if (x.c.ring) {
    for (const char* n : {"ST_FETCH", "ST_DSNAP", "ST_WB"}) names.emplace_back(n);
  }
  x.st = m.states(names, "Job FSM states");
  m.reg("st_q", x.st[0].width());
  m.reg("ch_q", core.chan_bits());
  m.reg("inner_q", core.inner_bits);
  m.reg("outer_q", 32);
  m.reg("layout_q", 1);
  m.reg("round_q", 2);
  m.reg("shift_q", core.rshift_bits());
  m.reg("lo_q", core.arith.yw);
  m.reg("hi_q", core.arith.yw);
  for (const char* r : {"src_q", "dst_q", "param_q", "base_q", "last_q"}) m.reg(r, 64);
  m.reg("done_q", 1);
  m.reg("error_q", 1);
  m.reg("code_q", 8);
  m.reg("eaddr_q", 64);
  m.reg("sr_q", 1, "the current stop is a soft reset");
  if (x.c.ring) {
    ring_state_regs(x);  // busy while a descriptor prefetch is still reading
    m.assign(m.wire("busy", 1),
             ex::ne(x.r("st_q"), x.s(IDLE)) | x.r("pf_q") | x.r("wbpend_q") | x.r("nx_q"));
  } else {
    m.assign(m.wire("busy", 1), ex::ne(x.r("st_q"), x.s(IDLE)));
  }
}

// (e + add) >> shift into an `out`-bit wire `nm`, through a sum wire; the dropped low bits are
// marked unused (they only round up).
void shr_to(Module& m, const std::string& nm, const Expr& e, int add, int shift, int out) {
  const int sb = out + shift;
  const Expr sum = m.wire(nm + "_sum", sb);
  m.assign(sum, ex::zext(e, sb) + lit(sb, u(add)));
  m.assign(m.wire(nm, out), ex::slice(sum, shift, out));
  rtl::sink(m, "unused_" + nm, {ex::slice(sum, 0, shift)});
}

void sizing(Ctx& x) {
  Module& m = x.m;
  const auto& a = x.c.core.arith;
  const AccelSizes sz = accel_sizes(x.c);
  const int tw = sz.tw, wb = sz.wb, ew = sz.ew, cw = x.c.core.chan_bits();
  const int bb = x.c.bus_bytes(), bl = clog2(bb);
  m.section("Sizing: C * HW, then * N, by shift-and-add (32 steps each)");
  const Expr ma = m.reg("ma_q", tw), mb = m.reg("mb_q", 32), macc = m.reg("macc_q", tw);
  m.reg("mcnt_q", 5);
  m.assign(m.wire("macc_next", tw), ex::mux(ex::bit(mb, 0), macc + ma, macc));
  const Expr total = m.reg("total_q", tw);
  m.section("Sizes in bytes and bus words; region ends (inclusive)");
  const int bw2 = tw + 6;  // bit counts: total * 32 fits
  const Expr in_bits = m.wire("in_bits", bw2), out_bits = m.wire("out_bits", bw2);
  m.assign(in_bits, ex::zext(total, bw2) * lit(bw2, u(a.xw)));
  m.assign(out_bits, ex::zext(total, bw2) * lit(bw2, u(a.yw)));
  const int byb = bw2 - 2;  // ceil(bits / 8) fits
  shr_to(m, "in_bytes", in_bits, 7, 3, byb);
  shr_to(m, "out_bytes", out_bits, 7, 3, byb);
  const int pe = x.c.param_entry_bytes();
  const int pbb = cw + clog2(pe);
  const Expr prm_bytes = m.wire("prm_bytes", pbb);
  m.assign(prm_bytes, rtl::shl_by(ex::zext(x.r("ch_q"), pbb), clog2(pe)));
  for (const char* r : {"in_words_q", "out_words_q", "prm_words_q"}) m.reg(r, wb);
  for (const char* r : {"in_end_q", "out_end_q", "prm_end_q"}) m.reg(r, ew);
  m.reg("strb_q", bb);
  shr_to(m, "in_words_w", x.r("in_bytes"), bb - 1, bl, wb);
  shr_to(m, "out_words_w", x.r("out_bytes"), bb - 1, bl, wb);
  shr_to(m, "prm_words_w", prm_bytes, bb - 1, bl, wb);
  const Expr ob_low = m.wire("ob_low", bl, "out_bytes mod bus bytes");
  m.assign(ob_low, ex::slice(x.r("out_bytes"), 0, bl));
  m.assign(m.wire("strb_last", bb), ex::mux(ex::eq(ob_low, lit(bl, 0)), ex::ones(bb),
                                            ex::shl(lit(bb, 1), ob_low) - lit(bb, 1)));
}

// start..end (ew bits) inside [WIN_BASE, WIN_LAST] and the address space.
Expr in_window(const Ctx& x, const Expr& start, const Expr& end) {
  const int ew = accel_sizes(x.c).ew, aw = x.c.addr_bits;
  Expr e = ex::ge(ex::zext(start, ew), ex::zext(x.r("base_q"), ew)) &
           ex::le(end, ex::zext(x.r("last_q"), ew));
  if (aw < 64) e = e & ex::lt(end, rtl::shl_by(lit(ew, 1), aw));
  return e;
}

// A job this specialised core cannot run (CoreConfig::check_job): R, rounding or layout other
// than the fixed ones, or C not a multiple of LANES. 0 for a core with nothing fixed.
Expr unsupported(const Ctx& x) {
  const auto& core = x.c.core;
  std::vector<Expr> bad;
  if (core.has_fixed_shift()) {
    bad.push_back(ex::ne(x.r("shift_q"), lit(core.rshift_bits(), u(core.fixed_shift))));
  }
  if (core.has_fixed_rounding())
    bad.push_back(ex::ne(x.r("round_q"), lit(2, spec::rounding_code(core))));
  if (core.has_fixed_layout())
    bad.push_back(ex::ne(x.r("layout_q"), lit(1, spec::layout_code(core))));
  if (core.lanes_divide_channels && core.lanes > 1)
    bad.push_back(~spec::multiple_of(x.r("ch_q"), core.lanes));
  return bad.empty() ? lit(1, 0) : ex::all_or(bad);
}

void validation(Ctx& x) {
  Module& m = x.m;
  const auto& core = x.c.core;
  const int cw = core.chan_bits(), hw = core.inner_bits, rw = core.rshift_bits();
  const int ew = accel_sizes(x.c).ew, bl = clog2(x.c.bus_bytes());
  m.section("Validation (all from registered values)");
  Expr bc = ex::eq(x.r("ch_q"), lit(cw, 0));
  if (core.max_channels != (1LL << cw) - 1)
    bc = bc | ex::gt(x.r("ch_q"), lit(cw, u(core.max_channels)));
  m.assign(m.wire("bad_chan", 1), bc);
  m.assign(m.wire("zero_len", 1),
           ex::eq(x.r("inner_q"), lit(hw, 0)) | ex::eq(x.r("outer_q"), lit(32, 0)));
  const Expr bad_shift = m.wire("bad_shift", 1);
  if (core.arith.is_float()) {  // contract v2: R = 0 (ref_job's check too)
    m.assign(bad_shift, ex::ne(x.r("shift_q"), lit(rw, 0)));
  } else if (core.acc_bits() != (1 << rw) - 1) {
    m.assign(bad_shift, ex::gt(x.r("shift_q"), lit(rw, u(core.acc_bits()))));
  } else {
    m.assign(bad_shift, lit(1, 0));
  }
  std::vector<Expr> mis;
  for (const char* r : {"src_q", "dst_q", "param_q"}) {
    mis.push_back(ex::ne(ex::slice(x.r(r), 0, bl), lit(bl, 0)));
  }
  m.assign(m.wire("misaligned", 1), ex::all_or(mis));
  m.assign(m.wire("bad_window", 1), ~(in_window(x, x.r("src_q"), x.r("in_end_q")) &
                                      in_window(x, x.r("dst_q"), x.r("out_end_q")) &
                                      in_window(x, x.r("param_q"), x.r("prm_end_q"))));
  Expr ov = ex::le(ex::zext(x.r("src_q"), ew), x.r("out_end_q")) &
            ex::le(ex::zext(x.r("dst_q"), ew), x.r("in_end_q"));
  if (core.arith.yw <= core.arith.xw) {
    ov = ov & ex::ne(x.r("src_q"), x.r("dst_q"));  // in place is safe when YW <= XW
  }
  m.assign(m.wire("overlap", 1), ov);
  m.assign(m.wire("unsupported", 1), unsupported(x));
  Expr cc = lit(8, 0);
  const std::pair<const char*, AccelError> checks[] = {
      {"overlap", AccelError::overlap},       {"bad_window", AccelError::window},
      {"misaligned", AccelError::misaligned}, {"unsupported", AccelError::unsupported},
      {"bad_shift", AccelError::bad_shift},   {"zero_len", AccelError::zero_length},
      {"bad_chan", AccelError::bad_channels}};
  for (const auto& [w, e] : checks) cc = ex::mux(x.r(w), code(e), cc);  // first check wins
  m.assign(m.wire("check_code", 8), cc);
}

void stop_and_pulses(Ctx& x) {
  Module& m = x.m;
  const int aw = x.c.addr_bits;
  m.section("Stop handling");
  Expr rerr = x.r("rd_err_i");
  if (x.c.ring) {  // a failed descriptor prefetch is the next descriptor's error, not this job's
    rerr = m.wire("rd_err_job", 1);
    m.assign(rerr, x.r("rd_err_i") & ~((x.r("pf_q") | x.r("nx_q")) & x.r("rd_err_new_i")) &
                       ~x.r("pferr_q") & ~x.r("pfdrop_q"));
  }
  m.assign(m.wire("dma_err", 1), rerr | x.r("wr_err_i"));
  m.assign(m.wire("dma_code", 8), ex::mux(rerr, code(AccelError::read), code(AccelError::write)));
  m.assign(m.wire("dma_addr", 64),
           ex::zext(ex::mux(rerr, x.r("rd_err_addr_i"), x.r("wr_err_addr_i")), 64));
  m.reg("prm_cnt_q", x.c.core.chan_bits(), "parameters delivered to the core");
  m.section("Pulses to the datapath and status");
  m.reg("rd_start_q", 1);
  m.reg("rd_addr_q", aw);
  m.reg("rd_words_q", accel_sizes(x.c).wb);
  for (const char* r : {"wr_start_q", "pg_start_q", "ig_start_q", "irq_done_q", "irq_err_q"}) {
    m.reg(r, 1);
  }
}

// IDLE: START takes the job registers (START wins over a runnable ring descriptor).
CaseArm idle_arm(const Ctx& x) {
  const int tw = accel_sizes(x.c).tw;
  const std::pair<const char*, const char*> from[] = {
      {"ch_q", "channels_i"},   {"inner_q", "inner_i"}, {"outer_q", "outer_i"},
      {"layout_q", "layout_i"}, {"round_q", "round_i"}, {"shift_q", "shift_i"},
      {"lo_q", "lo_i"},         {"hi_q", "hi_i"},       {"src_q", "src_i"},
      {"dst_q", "dst_i"},       {"param_q", "param_i"}, {"base_q", "win_base_i"},
      {"last_q", "win_last_i"}};
  Block snap;
  for (const auto& [q, i] : from) snap.push_back(x.a(q, x.r(i)));
  for (auto s :
       {x.a("done_q", lit(1, 0)), x.a("error_q", lit(1, 0)), x.a("code_q", lit(8, 0)),
        x.a("eaddr_q", lit(64, 0)), x.a("sr_q", lit(1, 0)),
        x.a("ma_q", ex::zext(x.r("channels_i"), tw)), x.a("mb_q", ex::zext(x.r("inner_i"), 32)),
        x.a("macc_q", lit(tw, 0)), x.a("mcnt_q", lit(5, 0)), x.to(MUL1)}) {
    snap.push_back(s);
  }
  if (!x.c.ring) return {{x.s(IDLE)}, {if_(x.r("start_i"), std::move(snap))}};
  for (const char* q : {"ring_q", "keep_q", "tot_ok_q", "pfok_q", "pf2_q"}) {
    snap.push_back(x.a(q, lit(1, 0)));
  }
  // An early read whose descriptor is no longer runnable (ring disabled) is drained and dropped.
  return {{x.s(IDLE)},
          {if_(x.r("start_i") & ~x.r("pf_q") & ~x.r("wbpend_q") & ~x.r("nx_q"), std::move(snap),
               {if_(x.r("ring_launch"), ring_launch(x),
                    {if_(x.r("nx_q") & ~x.r("ring_go") & ~x.r("start_i"), {x.to(ABORT)})})})}};
}

// The job's DMA: the input read, the output write, the input gearbox; then RUN.
Block run_entry(const Ctx& x) {
  const int aw = x.c.addr_bits;
  const Expr one = lit(1, 1);
  // With the ring the write DMA starts once the last status write is answered (wrwait_q).
  Block rd = {x.a("rd_start_q", one), x.a("rd_addr_q", ex::fit(x.r("src_q"), aw)),
              x.a("rd_words_q", x.r("in_words_q"))};
  Block b = {x.a(x.c.ring ? "wrwait_q" : "wr_start_q", one), x.a("ig_start_q", one), x.to(RUN)};
  if (!x.c.ring) {
    rd.insert(rd.end(), b.begin(), b.end());
    return rd;
  }
  b.push_back(x.a("loaded_q", one));  // the core holds the table from now on
  // The input already read ahead (early read): it is this job's read from now on.
  b.push_back(if_(x.r("nx_q"), {x.a("nx_q", lit(1, 0))}, std::move(rd)));
  return b;
}

// CHECK: a failed START job stops at once; a failed descriptor writes its status first; a
// descriptor that keeps the loaded table (keep_q) goes straight to the run.
CaseArm check_arm(const Ctx& x) {
  Block fail = {x.a("code_q", x.r("check_code")), x.to(IDLE), x.a("error_q", lit(1, 1)),
                x.a("irq_err_q", lit(1, 1))};
  Block pass = {x.to(CFG)};
  if (x.c.ring) {
    Block wb = ring_wb_entry(x);
    wb.push_back(x.a("code_q", x.r("check_code")));
    // After an early read (the window registers changed since its pre-check) the read is
    // drained and the datapath flushed first (ABORT, FLUSH, then the status).
    wb = {if_(x.r("nx_q"), {x.a("code_q", x.r("check_code")), x.to(ABORT)}, std::move(wb))};
    fail = {if_(x.r("ring_q"), std::move(wb), std::move(fail))};
    pass = {if_(x.r("keep_q"), run_entry(x), std::move(pass))};
  }
  Stmt body = if_(ex::ne(x.r("check_code"), lit(8, 0)), std::move(fail), std::move(pass));
  // With the ring, a datapath reset (CHECK unless the table is kept) waits until the last
  // status write is answered: the write DMA is part of the datapath.
  if (x.c.ring) body = if_(x.r("keep_q") | ~x.r("wbpend_q"), {std::move(body)});
  return {{x.s(CHECK)}, {std::move(body)}};
}

// IDLE .. CHECK: the snapshot, the two multiplications, the sizes, the check.
std::vector<CaseArm> setup_arms(const Ctx& x) {
  const AccelSizes sz = accel_sizes(x.c);
  const int tw = sz.tw, ew = sz.ew;
  auto a = [&](const char* q, const Expr& v) { return x.a(q, v); };
  auto to = [&](State s) { return x.to(s); };
  auto step = [&](Block last) {
    return Block{a("macc_q", x.r("macc_next")), a("ma_q", rtl::shl_by(x.r("ma_q"), 1)),
                 a("mb_q", rtl::shr_by(x.r("mb_q"), 1)), a("mcnt_q", x.r("mcnt_q") + lit(5, 1)),
                 if_(ex::eq(x.r("mcnt_q"), lit(5, 31)), std::move(last))};
  };
  auto end = [&](const char* start, const char* bytes) {
    return ex::zext(x.r(start), ew) + ex::zext(x.r(bytes), ew) - lit(ew, 1);
  };
  Block mul_done = {a("total_q", x.r("macc_next")), to(SIZES)};
  if (x.c.ring) mul_done.push_back(a("tot_ok_q", lit(1, 1)));
  std::vector<CaseArm> arms;
  arms.push_back(idle_arm(x));
  arms.push_back({{x.s(MUL1)},
                  step({a("ma_q", x.r("macc_next")), a("mb_q", x.r("outer_q")),
                        a("macc_q", lit(tw, 0)), to(MUL2)})});
  arms.push_back({{x.s(MUL2)}, step(std::move(mul_done))});
  arms.push_back(
      {{x.s(SIZES)},
       {a("in_words_q", x.r("in_words_w")), a("out_words_q", x.r("out_words_w")),
        a("prm_words_q", x.r("prm_words_w")), a("in_end_q", end("src_q", "in_bytes")),
        a("out_end_q", end("dst_q", "out_bytes")), a("prm_end_q", end("param_q", "prm_bytes")),
        a("strb_q", x.r("strb_last")), to(CHECK)}});
  arms.push_back(check_arm(x));
  return arms;
}

// FLUSH: back to IDLE; a failed START job (or a ring descriptor whose status cannot be written:
// nowb_q) reports its error, a failed descriptor first writes its status.
CaseArm flush_arm(const Ctx& x) {
  const Expr one = lit(1, 1);
  const Expr failed = ex::ne(x.r("code_q"), lit(8, 0)) & ~x.r("sr_q");
  Block report = {if_(failed, {x.a("error_q", one), x.a("irq_err_q", one)})};
  if (!x.c.ring) {
    report.insert(report.begin(), x.to(IDLE));
    return {{x.s(FLUSH)}, std::move(report)};
  }
  return {{x.s(FLUSH)},
          {x.to(IDLE),
           if_(failed & x.r("ring_q") & ~x.r("nowb_q"), ring_wb_entry(x), std::move(report))}};
}

// CFG .. FLUSH: core set-up, parameters, the run, the stops.
std::vector<CaseArm> run_arms(const Ctx& x) {
  const int cw = x.c.core.chan_bits(), aw = x.c.addr_bits;
  auto a = [&](const char* q, const Expr& v) { return x.a(q, v); };
  auto to = [&](State s) { return x.to(s); };
  auto to_abort = [&](const Expr& cd, const Expr& addr) {
    return Block{a("code_q", cd), a("eaddr_q", addr), to(ABORT)};
  };
  const Expr one = lit(1, 1);
  std::vector<CaseArm> arms;
  arms.push_back({{x.s(CFG)}, {if_(x.r("core_ready_i"), {to(CFGW)})}});
  arms.push_back({{x.s(CFGW)},
                  {if_(x.r("core_cfg_error_i"), {a("code_q", code(AccelError::core)), to(FLUSH)},
                       {if_(x.r("core_configured_i"),
                            {a("rd_start_q", one), a("rd_addr_q", ex::fit(x.r("param_q"), aw)),
                             a("rd_words_q", x.r("prm_words_q")), a("pg_start_q", one),
                             a("prm_cnt_q", lit(cw, 0)), to(PARAM)})})}});
  // All C words handed to the core (it opens s_axis only once its table is complete).
  const Expr params_in =
      ex::eq(x.r("prm_cnt_q"), x.r("ch_q")) & x.r("rd_done_i") & ~x.r("rd_start_q");
  arms.push_back({{x.s(PARAM)},
                  {if_(x.r("prm_fire_i"), {a("prm_cnt_q", x.r("prm_cnt_q") + lit(cw, 1))}),
                   if_(x.r("rd_err_i"), to_abort(code(AccelError::read), x.r("dma_addr")),
                       {if_(params_in, run_entry(x))})}});
  Expr all_done = x.r("wr_done_i") & x.r("rd_done_i") & ~x.r("wr_start_q") & ~x.r("rd_start_q");
  if (x.c.ring) {  // and a descriptor prefetch finished (or failed: the read DMA stopped)
    all_done =
        x.r("wr_done_i") &
        (x.r("rd_done_i") | x.r("pferr_q") | (x.r("pfdrop_q") & x.r("rd_idle_i")) | x.r("nx_q")) &
        ~x.r("wr_start_q") & ~x.r("wrwait_q") & ~x.r("rd_start_q") & ~x.r("pf_q");
  }
  Block done = {a("done_q", one), a("irq_done_q", one), to(FLUSH)};
  if (x.c.ring) done = {if_(x.r("ring_q"), ring_wb_entry(x), std::move(done))};
  arms.push_back({{x.s(RUN)},
                  {if_(x.r("dma_err"), to_abort(x.r("dma_code"), x.r("dma_addr")),
                       {if_(all_done, std::move(done))})}});
  arms.push_back({{x.s(ABORT)}, {if_(x.r("rd_idle_i") & x.r("wr_idle_i"), {to(FLUSH)})}});
  arms.push_back(flush_arm(x));
  if (x.c.ring) {
    for (auto& arm : ring_arms(x)) arms.push_back(std::move(arm));
  }
  arms.push_back({{}, {to(IDLE)}});
  return arms;
}

// The job FSM and the registers it sets, as next-state logic and q <= d flops.
void fsm(Ctx& x) {
  const int cw = x.c.core.chan_bits();
  std::vector<const char*> pulses = {"rd_start_q", "wr_start_q", "pg_start_q",
                                     "ig_start_q", "irq_done_q", "irq_err_q"};
  rtl::Process p;
  p.resets = {{x.r("st_q"), x.s(IDLE)},   {x.r("done_q"), lit(1, 0)},   {x.r("error_q"), lit(1, 0)},
              {x.r("code_q"), lit(8, 0)}, {x.r("eaddr_q"), lit(64, 0)}, {x.r("sr_q"), lit(1, 0)}};
  for (const char* q : pulses) p.resets.emplace_back(x.r(q), lit(1, 0));
  p.resets.emplace_back(x.r("prm_cnt_q"), lit(cw, 0));
  if (x.c.ring) {
    for (const char* q :
         {"ring_q", "keep_q", "loaded_q", "tot_ok_q", "nowb_q", "pf_q", "pfok_q", "pferr_q",
          "wbpend_q", "wrwait_q", "nx_q", "pf2_q", "pfn_q", "pfdrop_q"}) {
      p.resets.emplace_back(x.r(q), lit(1, 0));
    }
  }
  for (const char* q : pulses) p.body.push_back(assign(x.r(q), lit(1, 0)));  // pulses low
  if (x.c.ring) {  // a datapath reset: no table, no prefetch
    Block clr;
    for (const char* q :
         {"loaded_q", "pf_q", "pfok_q", "pferr_q", "wrwait_q", "nx_q", "pf2_q", "pfdrop_q"})
      clr.push_back(x.a(q, lit(1, 0)));
    p.body.push_back(if_(x.r("flush_now"), std::move(clr)));
  }
  std::vector<CaseArm> arms = setup_arms(x);
  for (auto& arm : run_arms(x)) arms.push_back(std::move(arm));
  if (x.c.ring) p.body.push_back(ring_capture(x));
  p.body.push_back(case_(x.r("st_q"), std::move(arms)));
  if (x.c.ring) {
    for (auto& st : ring_prefetch(x)) p.body.push_back(std::move(st));
  }
  // SOFT RESET from anywhere: drain in the DMA states, else flush at once.
  Expr draining = x.in_state(PARAM) | x.in_state(RUN) | x.in_state(ABORT);
  if (x.c.ring) {  // also a prefetch or the last status write still in flight
    draining =
        draining | x.in_state(FETCH) | x.in_state(WB) | x.r("pf_q") | x.r("wbpend_q") | x.r("nx_q");
  }
  Block reset = {
      assign(x.r("sr_q"), lit(1, 1)), assign(x.r("done_q"), lit(1, 0)),
      assign(x.r("error_q"), lit(1, 0)),
      if_(draining, {assign(x.r("st_q"), x.s(ABORT))}, {assign(x.r("st_q"), x.s(FLUSH))})};
  if (x.c.ring) reset.push_back(x.a("wbpend_q", lit(1, 0)));  // TAIL stays 0
  p.body.push_back(if_(x.r("soft_reset_i"), std::move(reset)));
  p.comment = "Job FSM: next state and the registers it sets";
  rtl::process(x.m, p);
}

void perf(Ctx& x) {
  Module& m = x.m;
  const int L = x.c.core.lanes;
  m.section("Performance counters (cleared by START)");
  const Expr pa = m.reg("pa_q", 32), prs = m.reg("prs_q", 32), pws = m.reg("pws_q", 32);
  const Expr pel = m.reg("pel_q", 64);
  const Expr kcnt = rtl::popcount(m, "kc", x.r("m_keep_i"), bits_for(L));
  const Expr keep_cnt = m.wire("keep_cnt", bits_for(L));
  m.assign(keep_cnt, kcnt);
  const Expr run = m.wire("run", 1);
  m.assign(run, x.in_state(RUN));
  rtl::Process p;
  p.resets = {{pa, lit(32, 0)}, {prs, lit(32, 0)}, {pws, lit(32, 0)}, {pel, lit(64, 0)}};
  p.clear = x.r("start_i") & ~x.r("busy");
  if (x.c.ring) p.clear = p.clear | x.r("ring_launch");  // a descriptor clears them too
  p.body = {if_(x.r("busy"), {assign(pa, pa + lit(32, 1))}),
            if_(run & x.r("s_ready_i") & ~x.r("s_valid_i"), {assign(prs, prs + lit(32, 1))}),
            if_(run & x.r("m_valid_i") & ~x.r("m_ready_i"), {assign(pws, pws + lit(32, 1))}),
            if_(x.r("m_valid_i") & x.r("m_ready_i"), {assign(pel, pel + ex::zext(keep_cnt, 64))})};
  rtl::process(m, p);
}

void outputs(Ctx& x) {
  Module& m = x.m;
  const int aw = x.c.addr_bits;
  m.section("Outputs");
  const std::pair<const char*, const char*> same[] = {
      {"busy_o", "busy"},           {"done_o", "done_q"},          {"error_o", "error_q"},
      {"irq_done_o", "irq_done_q"}, {"irq_error_o", "irq_err_q"},  {"err_code_o", "code_q"},
      {"err_addr_o", "eaddr_q"},    {"perf_active_o", "pa_q"},     {"perf_rd_stall_o", "prs_q"},
      {"perf_wr_stall_o", "pws_q"}, {"perf_elems_o", "pel_q"},     {"core_channels_o", "ch_q"},
      {"core_inner_o", "inner_q"},  {"core_layout_o", "layout_q"}, {"core_shift_o", "shift_q"},
      {"core_round_o", "round_q"},  {"core_lo_o", "lo_q"},         {"core_hi_o", "hi_q"},
      {"pg_start_o", "pg_start_q"}, {"ig_start_o", "ig_start_q"},  {"total_o", "total_q"},
      {"rd_start_o", "rd_start_q"}, {"rd_addr_o", "rd_addr_q"},    {"rd_words_o", "rd_words_q"},
      {"wr_start_o", "wr_start_q"}, {"wr_words_o", "out_words_q"}, {"wr_last_strb_o", "strb_q"}};
  for (const auto& [o, q] : same) {
    const std::string out(o);
    if (x.c.ring && (out == "wr_words_o" || out == "wr_last_strb_o")) continue;  // ring_outputs
    m.assign(x.r(o), x.r(q));
  }
  // Combinational, so the sticky bit is visible to a read right after the ignored write.
  m.assign(x.r("start_ignored_o"), x.r("start_i") & x.r("busy"));
  m.assign(x.r("core_start_o"), x.in_state(CFG));
  if (x.c.ring) {
    m.assign(x.r("dp_rst_no"), x.r("rst_ni") & ~x.r("flush_now"));
  } else {
    m.assign(x.r("dp_rst_no"), x.r("rst_ni") & ex::ne(x.r("st_q"), x.s(FLUSH)));
  }
  m.assign(x.r("phase_param_o"), x.in_state(PARAM));
  // The DMA engines may only start bursts while the job runs (never in ABORT or FLUSH).
  const Expr dma_go = m.wire("dma_go", 1);
  Expr go = x.in_state(PARAM) | x.in_state(RUN);
  if (x.c.ring) {  // the descriptor (fetched, or prefetched past the job's end), its status
    go = go | x.in_state(FETCH) | x.in_state(WB) | (x.in_state(IDLE) & x.r("pf_q")) |
         (x.r("nx_q") & ~x.in_state(ABORT) & ~x.in_state(FLUSH));
  }
  m.assign(dma_go, go);
  m.assign(x.r("rd_abort_o"), ~dma_go);
  if (x.c.ring) {
    ring_outputs(x);
  } else {
    m.assign(x.r("wr_addr_o"), ex::fit(x.r("dst_q"), aw));
  }
  m.assign(x.r("wr_abort_o"), ~dma_go);
}

}  // namespace

Module build_ctrl(const AccelConfig& c, const std::string& name) {
  Module m;
  m.name = name;
  m.description = {
      "Job control: takes START, sizes the job (C*HW*N by shift-and-add), validates it with no",
      "bus traffic on failure, then runs: core set-up, parameter DMA, data DMA in and out.",
      "Errors and SOFT RESET stop new requests, drain the outstanding ones, then reset the",
      "datapath. Also the performance counters."};
  if (c.ring) {
    m.description.emplace_back(
        "The descriptor ring: fetches the descriptor at TAIL through the read DMA, runs it like");
    m.description.emplace_back(
        "a START job (the loaded table kept when it may), writes its status back, TAIL + 1.");
  }
  job_ports(m, c);
  datapath_ports(m, c);
  if (c.ring) ring_ports(m, c);
  Ctx x{c, m, {}};
  snapshot_regs(x);
  sizing(x);
  validation(x);
  stop_and_pulses(x);
  if (c.ring) ring_regs(x);
  fsm(x);
  if (c.ring) ring_process(x);
  perf(x);
  outputs(x);
  return m;
}

}  // namespace normcore::gen::accel_detail
