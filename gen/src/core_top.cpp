// The core's top <n>_core: configuration latch and set-up FSM, per-job constants, positions,
// table, flow control, lanes and output buffer.
#include <algorithm>

#include "core_internal.hpp"
#include "normcore/gen/ref_designs.hpp"
#include "props.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

using U = std::uint64_t;
using Conns = std::vector<std::pair<std::string, Expr>>;

// The set-up FSM's states.
struct States {
  Expr unconf, setup, run, check, latch;
};

void top_ports(Module& m, const CoreConfig& c, const Variant& v) {
  const int L = c.lanes, cw = c.chan_bits(), hw = c.inner_bits, yw = c.arith.yw;
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("cfg_channels_i", cw, "C, 1.." + std::to_string(c.max_channels));
  m.in("cfg_inner_i", hw, "HW >= 1");
  m.in("cfg_layout_i", 1, "0 nchw, 1 nhwc");
  m.in("cfg_shift_i", v.rw, "R, 0.." + std::to_string(v.aw));
  if (v.dec) m.in("cfg_k1_i", v.k1w, "requantisation shift after inv_std");
  m.in("cfg_round_i", 2, "0 floor, 1 half_up, 2 half_even, 3 half_away");
  m.in("cfg_lo_i", yw, "clamp low");
  m.in("cfg_hi_i", yw, "clamp high");
  m.in("start_i", 1, "latch cfg_* (taken when ready_o)");
  m.out("ready_o", 1, "idle: no set-up, load or beat in flight");
  m.out("configured_o", 1, "set-up done: prm_* and s_axis open");
  m.out("cfg_error_o", 1, "last start had an invalid configuration");
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1);
  for (const auto& f : v.fields) m.in("prm_" + f.prm + "_i", f.width);
  m.in("s_axis_tvalid", 1);
  m.out("s_axis_tready", 1);
  m.in("s_axis_tdata", L * c.arith.xw);
  m.in("s_axis_tkeep", L);
  m.in("s_axis_tlast", 1);
  m.out("m_axis_tvalid", 1);
  m.in("m_axis_tready", 1);
  m.out("m_axis_tdata", L * yw);
  m.out("m_axis_tkeep", L);
  m.out("m_axis_tlast", 1);
}

bool fixed_nhwc(const CoreConfig& c) {
  return c.has_fixed_layout() && spec::layout_code(c) == 1;
}
bool fixed_nchw(const CoreConfig& c) {
  return c.has_fixed_layout() && spec::layout_code(c) == 0;
}

// Checks of cfg_* latched with start_i, each a narrow function of the inputs (at most two LUT
// levels: kChunk bits or a constant compare), and combined in the latch cycle into ok_q.
constexpr int kChunk = 12;

// e[hi-1:lo] != 0 as one flag per chunk of at most kChunk bits (their OR is that != 0).
std::vector<Expr> nonzero_chunks(const Expr& e, int lo, int hi) {
  std::vector<Expr> out;
  for (int b = lo; b < hi; b += kChunk) {
    const int n = std::min(kChunk, hi - b);
    out.push_back(ex::ne(slice(e, b, n), lit(n, 0)));
  }
  return out;
}

Expr flag_reg(Module& m, const std::string& name, const std::vector<Expr>& bits,
              std::string comment) {
  return m.reg(name, static_cast<int>(bits.size()), std::move(comment));
}

// cfg_* registered every cycle (no enable) with the checks' partial flags, each a narrow
// function of the inputs: the start cycle's values are there in the latch cycle (lat_q), when
// ok_q is formed from the flags and the job registers load from the staged values (enable
// lat_q, a register: a start's enable never comes from logic, so no logic sits in front of a
// global buffer to the latch's ~70 flip-flops). Fixed settings are not staged.
void config_stage(Module& m, const CoreConfig& c, const Variant& v) {
  const int hw = c.inner_bits, nb = c.lane_count_bits(), yw = c.arith.yw;
  const Expr inner = m.ref("cfg_inner_i");
  const bool pos = !fixed_nhwc(c);  // fixed nhwc (S = 1): no stride, divider or walker
  const auto checks = config_checks(m, c, v);
  Block st{
      assign(m.reg("chs_q", c.chan_bits(), "cfg_channels_i (staged)"), m.ref("cfg_channels_i"))};
  if (!checks.empty()) {
    st.push_back(assign(flag_reg(m, "pk_q", checks, "the checks of config_checks"),
                        cat(std::vector<Expr>(checks.rbegin(), checks.rend()))));
  }
  const auto cnz = nonzero_chunks(m.ref("cfg_channels_i"), 0, c.chan_bits());
  st.push_back(assign(flag_reg(m, "cnz_q", cnz, "cfg_channels_i != 0, per chunk"),
                      cat(std::vector<Expr>(cnz.rbegin(), cnz.rend()))));
  // HW: bits [lb, hw) != 0 per chunk; with the positions and HW wider than L's bits the low
  // bits apart (lnz_q, lle_q), so that the chunks also give S >= 2^nb (s_big_q, ge0_q).
  const int lb = pos && hw > nb ? nb : 0;
  const auto inz = nonzero_chunks(inner, lb, hw);
  st.push_back(assign(flag_reg(m, "inz_q", inz,
                               "cfg_inner_i[" + std::to_string(hw - 1) + ":" + std::to_string(lb) +
                                   "] != 0, per chunk"),
                      cat(std::vector<Expr>(inz.rbegin(), inz.rend()))));
  if (lb > 0) {
    st.push_back(assign(m.reg("lnz_q", 1, "cfg_inner_i's low bits != 0"),
                        ex::ne(slice(inner, 0, nb), lit(nb, 0))));
    if (c.lanes != (1LL << nb) - 1) {
      st.push_back(assign(m.reg("lle_q", 1, "cfg_inner_i's low bits <= L"),
                          ex::le(slice(inner, 0, nb), lit(nb, static_cast<U>(c.lanes)))));
    }
  }
  if (pos && !c.has_fixed_layout())
    st.push_back(assign(m.reg("lay_q", 1, "cfg_layout_i (staged)"), m.ref("cfg_layout_i")));
  if (pos) st.push_back(assign(m.reg("ins_q", hw, "cfg_inner_i (staged)"), inner));
  if (!c.has_fixed_shift())
    st.push_back(assign(m.reg("shs_q", v.rw, "cfg_shift_i (staged)"), m.ref("cfg_shift_i")));
  if (!c.has_fixed_rounding())
    st.push_back(assign(m.reg("rds_q", 2, "cfg_round_i (staged)"), m.ref("cfg_round_i")));
  st.push_back(assign(m.reg("los_q", yw, "cfg_lo_i (staged)"), m.ref("cfg_lo_i")));
  st.push_back(assign(m.reg("his_q", yw, "cfg_hi_i (staged)"), m.ref("cfg_hi_i")));
  if (v.dec) st.push_back(assign(m.reg("k1s_q", v.k1w, "cfg_k1_i (staged)"), m.ref("cfg_k1_i")));
  m.seq(st);
}

// The staged stride (a wire): S = HW (nchw) or 1 (nhwc).
Expr staged_stride(Module& m, const CoreConfig& c) {
  const int hw = c.inner_bits;
  if (fixed_nhwc(c)) return lit(hw, 1);
  if (fixed_nchw(c)) return m.ref("ins_q");
  const Expr s = m.wire("stride_s", hw, "the staged S");
  m.assign(s, mux(m.ref("lay_q"), lit(hw, 1), m.ref("ins_q")));
  return s;
}

// The job registers, loaded in the latch cycle (`if (lat_q)`) from the staged configuration:
// the job's settings (fixed ones as constants), the clamp compare's operands and the set-up
// values u_step and the walker read from the check cycle on (s_big_q, ge0_q; the walker's
// nsm_q is core_top_pos.cpp's).
Block config_latch(Module& m, const CoreConfig& c, const Variant& v) {
  const int hw = c.inner_bits, nb = c.lane_count_bits(), yw = c.arith.yw;
  const bool pos = !fixed_nhwc(c);
  const Expr chs = m.ref("chs_q"), lo = m.ref("los_q"), hi = m.ref("his_q");
  Block latch{assign(m.ref("ch_q"), chs)};
  if (pos) {
    const Expr stride = staged_stride(m, c);
    latch.push_back(assign(m.ref("stride_q"), stride));
    if (hw > nb) {
      const Expr hnz = ex::red_or(m.ref("inz_q"));
      const Expr lay = c.has_fixed_layout() ? lit(1, spec::layout_code(c)) : m.ref("lay_q");
      const Expr s_big = m.reg(
          "s_big_q", 1, "S >= 2^" + std::to_string(nb) + " (u_step compares only the low bits)");
      latch.push_back(assign(s_big, fixed_nchw(c) ? hnz : ~lay & hnz));
      const Expr lle = c.lanes != (1LL << nb) - 1 ? m.ref("lle_q") : lit(1, 1);
      const Expr small = ~hnz & lle;
      latch.push_back(assign(m.ref("ge0_q"), fixed_nchw(c) ? small : lay | small));
    } else {
      latch.push_back(
          assign(m.ref("ge0_q"), c.lanes >= (1LL << hw) - 1
                                     ? lit(1, 1)
                                     : ex::le(stride, lit(hw, static_cast<U>(c.lanes)))));
    }
  }
  latch.push_back(assign(m.ref("shift_q"), c.has_fixed_shift()
                                               ? lit(v.rw, static_cast<U>(c.fixed_shift))
                                               : m.ref("shs_q")));
  latch.push_back(assign(m.ref("round_q"),
                         c.has_fixed_rounding() ? lit(2, spec::rounding_code(c)) : m.ref("rds_q")));
  latch.push_back(assign(m.ref("lo_q"), lo));
  latch.push_back(assign(m.ref("hi_q"), hi));
  // lo > hi as one carry chain from registers (top_lane_consts): lo + ~hi >= 2^yw, signed
  // values with their sign bits flipped. split_consts: from cmpa_q / cmpb_q, latched here (one
  // stage earlier); else from lo_q and hip1_q = ~hi (area15: no operand registers).
  if (c.arith.is_float()) return latch;  // the float lanes take lo_q / hi_q as they are
  if (split_consts(c) && yw >= 4) {
    latch.push_back(
        assign(m.reg("cmpa_q", yw, "lo (sign bit flipped if signed)"), sign_flipped(c, lo)));
    latch.push_back(
        assign(m.reg("cmpb_q", yw, "~hi (sign bit flipped if signed)"), sign_flipped(c, ~hi)));
  }
  if (v.dec) latch.push_back(assign(m.ref("k1_q"), m.ref("k1s_q")));
  return latch;
}

// The latch cycle (the cycle after start): ok_q from the staged flags (read only in the check
// cycle that follows).
void config_derive(Module& m, const CoreConfig& c, const Variant& v) {
  const int hw = c.inner_bits, nb = c.lane_count_bits();
  const bool pos = !fixed_nhwc(c);
  const int lb = pos && hw > nb ? nb : 0;
  const Expr hnz = ex::red_or(m.ref("inz_q"));
  Expr ok = ex::red_or(m.ref("cnz_q")) & (lb > 0 ? hnz | m.ref("lnz_q") : hnz);
  if (!config_checks(m, c, v).empty()) ok = ex::red_and(m.ref("pk_q")) & ok;
  if (c.lanes_divide_channels && c.lanes > 1 && (c.lanes & (c.lanes - 1)) != 0)
    ok = ok & spec::multiple_of(m.ref("chs_q"), c.lanes);
  m.seq({assign(m.ref("ok_q"), ok)});
}

// The latched job settings. A fixed one (specialised) is loaded with its constant at start
// instead of from cfg_*: a flop with a constant D, which synthesis removes together with the
// logic it fed (a localparam would leave always @* blocks that read only constants, which
// event-driven simulators such as Icarus never evaluate).
void job_settings(Module& m, const CoreConfig& c, const Variant& v) {
  if (!fixed_nhwc(c)) {
    m.reg("stride_q", c.inner_bits, fixed_nchw(c) ? "S = HW: fixed layout nchw" : "S: HW or 1");
    m.reg("ge0_q", 1, "L >= S: u_step's first compare");
  }
  m.reg("shift_q", v.rw, c.has_fixed_shift() ? "R: fixed (a constant)" : "");
  if (v.dec) m.reg("k1_q", v.k1w);
  m.reg("round_q", 2, c.has_fixed_rounding() ? "rounding: fixed " + c.fixed_rounding : "");
}

// err_q's next value: err_d, or (split_consts) the same from a start seen through nrdy_q, a copy
// of ~ready_q (top_flow_lagged), so that err_q's enable and reset are one LUT of start_i, nrdy_q,
// chk_q (and ok_q), not a LUT after the start_fire LUT that the other readers share (lat_q and
// chk_q are never both set, so the latch state needs no term).
Expr err_nx(Module& m, const CoreConfig& c) {
  if (!split_consts(c)) return {};
  const bool same = spec::same_copies(c);
  const Expr sf =
      m.wire("start_err", 1,
             same ? "start_fire for err_q (from rdyc_q)" : "start_fire for err_q (from nrdy_q)");
  m.assign(sf, m.ref("start_i") & (same ? m.reg("rdyc_q", 1, "ready_q (err_q's copy)")
                                        : ~m.reg("nrdy_q", 1, "~ready_q (err_q's copy)")));
  // The reset in the next value itself, in ANDs and ORs (no select: synthesis then infers neither
  // an enable nor a synchronous reset, each of which needs rst_ni's LUT in front of another).
  const Expr chk = m.ref("chk_q");
  return m.ref("rst_ni") & ~sf & ((chk & ~m.ref("ok_q")) | (~chk & m.ref("err_q")));
}

void top_config(Module& m, const CoreConfig& c, const Variant& v) {
  const int L = c.lanes, cw = c.chan_bits(), yw = c.arith.yw;
  m.section("Job configuration and set-up");
  const auto sv = m.states({"S_UNCONF", "S_SETUP", "S_RUN", "S_CHECK", "S_LATCH"}, "set-up states");
  const States s{sv[0], sv[1], sv[2], sv[3], sv[4]};
  const Expr st = m.reg("st_q", 3, "S_UNCONF -> S_LATCH -> S_CHECK -> S_SETUP -> S_RUN");
  const Expr st_d = m.reg("st_d", 3);
  // Registered decodes of the state, from the transitions' own conditions (one LUT each).
  const Expr lat = m.reg("lat_q", 1, "st_q == S_LATCH");
  const Expr chk = m.reg("chk_q", 1, "st_q == S_CHECK");
  const Expr run = m.reg("run_q", 1, "st_q == S_RUN");
  const Expr ist = m.reg("ist_q", 1, "st_q is S_UNCONF or S_RUN (a start may be taken)");
  const Expr err = m.reg("err_q", 1), err_d = m.reg("err_d", 1);
  m.reg("ch_q", cw);
  job_settings(m, c, v);
  m.reg("lo_q", yw);
  m.reg("hi_q", yw);
  const Expr start_fire = m.wire("start_fire", 1);
  m.wire("ld_busy", 1, "a table write this cycle");
  m.wire("ld_done", 1, "the table is complete from the next cycle on");
  const Expr step_done = m.wire("step_done", 1, "u_step's result is final");
  const Expr wait = m.reg("wait_q", 1, "set-up: waiting for the walker and u_step");
  const Expr sdone = m.reg("sdone_q", 1, "every lane has saved its start position (as r)");
  const int ws = pos_fixed_nhwc(c) ? 1 : L;  // fixed nhwc: no walker, one set-up cycle
  const Expr wsave = m.reg("wsave_q", ws, "lane i saves the walker's position (one-hot, shifts)");
  const Expr rbk = m.reg("rbk_q", 1, "arm + 1: the beat constants (k*_q) have settled");
  const Expr reb = m.reg("reb_q", 1, "arm + 2: the lanes load their start; the last set-up cycle");
  const Expr arm = m.wire("arm", 1, "walker and u_step done (wait_q: in S_SETUP)");
  const Expr run_nx = m.wire("run_nx", 1, "st_d == S_RUN");
  // ready_o is a register: idle now and nothing starting now (no start, beat or parameter
  // taken), so idle in the next cycle too (it may lag the idle state by one cycle).
  const Expr ready = m.reg("ready_q", 1);
  m.assign(m.ref("ready_o"), ready);
  m.assign(start_fire, m.ref("start_i") & ready);
  const Expr ok = m.reg("ok_q", 1, "the configuration is valid (latch cycle, acted on in check)");
  // start -> latch (cfg_* and the checks' partial flags registered) -> check (ok_q and the set-up
  // values registered from them) -> set-up or unconfigured with cfg_error_o. u_step and the
  // walker start in the check cycle (and are simply restarted by the next start if the
  // configuration was invalid). Set-up:
  //   check + 1 + i   the walker is at element i: lane i saves it as its start (r, c)
  //   arm             every lane saved, u_step done (its result is final)
  //   arm + 1         the lanes convert their start to v = r + k_r - S (k registers now valid)
  //   arm + 2         the lanes load their start (reb_q); then run.
  m.assign(arm, wait & sdone & step_done);
  m.assign(run_nx, (run & ~start_fire) | reb);
  Block fsm{
      assign(st_d, st),
      assign(err_d, err),
      if_(start_fire, {assign(st_d, s.latch), assign(err_d, lit(1, 0))},
          {if_(lat, {assign(st_d, s.check)},
               {if_(chk, {assign(st_d, mux(ok, s.setup, s.unconf)), assign(err_d, ~ok)},
                    {if_(reb, {assign(st_d, s.run)})})})}),
  };
  if (const Expr e = err_nx(m, c); e.valid()) fsm.push_back(assign(err_d, e));
  m.always_comb(std::move(fsm));
  config_stage(m, c, v);
  Block latch = config_latch(m, c, v);
  // split_consts: err_q's reset is in its next value (err_nx), outside this block.
  const bool err_free = split_consts(c);
  Block on_rst{assign(st, s.unconf), assign(lat, lit(1, 0)), assign(chk, lit(1, 0)),
               assign(run, lit(1, 0)), assign(ist, lit(1, 1))};
  Block on_run{assign(st, st_d), assign(lat, start_fire), assign(chk, lat), assign(run, run_nx),
               assign(ist, (ist & ~start_fire) | (chk & ~ok) | reb)};
  if (!err_free) {
    on_rst.push_back(assign(err, lit(1, 0)));
    on_run.push_back(assign(err, err_d));
  }
  on_rst.insert(on_rst.end(),
                {assign(wait, lit(1, 0)), assign(rbk, lit(1, 0)), assign(reb, lit(1, 0))});
  on_run.insert(on_run.end(), {assign(wait, (chk & ok) | (wait & ~(sdone & step_done))),
                               assign(rbk, arm), assign(reb, rbk)});
  m.seq({if_(ex::lnot(m.ref("rst_ni")), std::move(on_rst), std::move(on_run)),
         // No reset and no enable (one LUT): read only through arm, i.e. with wait_q, which
         // is set in the check cycle that clears this.
         assign(sdone, ~chk & (sdone | bit(wsave, ws - 1))), if_(lat, std::move(latch))});
  if (err_free) m.seq({assign(err, err_d)});
  config_derive(m, c, v);
  m.assign(m.ref("configured_o"), run, "run_q: st_q == S_RUN");
  m.assign(m.ref("cfg_error_o"), err);
}

void top_table(Module& m, const CoreConfig& c, const Variant& v) {
  const int L = c.lanes;
  m.section("Parameter table");
  for (const auto& f : v.fields) m.wire(f.wire, L * f.width);
  Conns tc = {{"clk_i", m.ref("clk_i")},  {"rst_ni", m.ref("rst_ni")},
              {"load_i", m.ref("reb_q")}, {"abort_i", m.ref("start_fire")},
              {"chans_i", m.ref("ch_q")}, {"c0_i", m.ref("pos_c0")}};
  if (L > 1 && !c.table_direct()) tc.emplace_back("lane_d_i", m.ref("pos_d"));
  if (L > 1 && c.table_direct()) {
    m.assign(m.wire("unused_pos_d", 1), ex::red_xor(m.ref("pos_d")), "d_i = i: the direct table");
  }
  for (const char* n : {"prm_valid_i", "prm_ready_o"}) tc.emplace_back(n, m.ref(n));
  for (const auto& f : v.fields)
    tc.emplace_back("prm_" + f.prm + "_i", m.ref("prm_" + f.prm + "_i"));
  tc.emplace_back("busy_o", m.ref("ld_busy"));
  tc.emplace_back("done_o", m.ref("ld_done"));
  for (const auto& f : v.fields) tc.emplace_back(f.prm + "_o", m.ref(f.wire));
  m.instance(Instance{c.name + "_ptable", "u_ptable", std::move(tc)});
}

void top_flow(Module& m, const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
  m.section("Flow control: admit a beat only if the output buffer can hold all beats in flight");
  m.section("(and only once the job's table is complete: table reads never meet writes)");
  const Expr tready = m.reg("tready_q", 1);
  const Expr out_fire = m.wire("out_fire", 1);
  const Expr in_fire = m.ref("in_fire");
  m.assign(in_fire, m.ref("s_axis_tvalid") & tready);
  m.assign(out_fire, m.ref("m_axis_tvalid") & m.ref("m_axis_tready"));
  // Beats held (accepted, not yet delivered) as a thermometer code: occ_q[k] = (held > k), so
  // "held < n" is one register bit. A beat is admitted when held + in_fire < d, not counting this
  // cycle's delivery (the buffer has one slot more for it): no path from m_axis_tready to tready.
  const Expr occ = m.reg("occ_q", d, "thermometer: bit k = more than k beats held");
  const auto th = [&](int k) { return k < 0 ? lit(1, 1) : k >= d ? lit(1, 0) : bit(occ, k); };
  if (reg_counts(c)) {
    top_flow_lagged(m, d, occ, spec::same_copies(c));
    return;
  }
  std::vector<Expr> occ_bits;
  // in_fire ? (out_fire ? same : one more) : (out_fire ? one fewer : same): each side one LUT.
  // out_head_parts (--target ecp5, a wide word): as an enable, in_fire ^ out_fire (one LUT4 of the
  // two valid / ready pairs, into the clock enables), and in_fire ? up : down (one LUT4 a bit):
  // m_axis_tready is one LUT from occ_q, not the out_fire LUT, then a LUT5 (LUT + PFUMX) a bit.
  const Expr occ_mv =
      out_head_parts(c) ? m.wire("occ_mv", 1, "occ_q moves (in_fire ^ out_fire)") : Expr{};
  if (out_head_parts(c)) {
    m.assign(occ_mv, in_fire ^ out_fire);
    for (int k = d - 1; k >= 0; --k) occ_bits.push_back(mux(in_fire, th(k - 1), th(k + 1)));
  } else {
    for (int k = d - 1; k >= 0; --k)
      occ_bits.push_back(
          mux(in_fire, mux(out_fire, th(k), th(k - 1)), mux(out_fire, th(k + 1), th(k))));
  }
  const Expr room = m.wire("room", 1, "held + in_fire < " + std::to_string(d));
  m.assign(room, ~th(d - 2) | (~in_fire & ~th(d - 1)));
  const Expr busy = m.ref("ld_busy");
  const Expr prm_fire = m.ref("prm_valid_i") & m.ref("prm_ready_o");
  const Expr ready = m.ref("ready_q");
  const Expr tready_d = m.wire("trdy_nx", 1, "s_axis_tready's next value");
  m.assign(tready_d, m.ref("run_nx") & room & m.ref("ld_done"));
  const Expr ntr = m.ref("ntr_q");  // declared with the positions' enable (chan_control)
  m.seq({if_(
      ex::lnot(m.ref("rst_ni")),
      {assign(occ, lit(d, 0)), assign(tready, lit(1, 0)), assign(ntr, lit(1, 1)),
       assign(ready, lit(1, 0))},
      {out_head_parts(c) ? if_(occ_mv, {assign(occ, cat(occ_bits))}) : assign(occ, cat(occ_bits)),
       assign(tready, tready_d), assign(ntr, ~tready_d),
       assign(ready,
              m.ref("ist_q") & ~th(0) & ~busy & ~in_fire & ~prm_fire & ~m.ref("start_fire"))})});
  m.assign(m.ref("s_axis_tready"), tready);
}

// The last stage of the side registers: the table's stages, then the lane's ns - 1.
int side_stages(const CoreConfig& c, const Variant& v) {
  return v.ns(c) + c.table_stages() - 1;
}

// Stages 1..table_stages (the input beat beside the bank read and the bank's output register)
// and valid / keep / last beside the table and the lanes for stages 1..side_stages.
void top_side(Module& m, const CoreConfig& c, const Variant& v) {
  const int L = c.lanes, ns = side_stages(c, v), ts = c.table_stages();
  m.section("Stages 1.." + std::to_string(ts) + ": input beat registered alongside the table read");
  std::vector<Flop> xf;
  for (int k = 1; k <= ts; ++k) {
    xf.push_back({m.reg(idx("x", k) + "_q", L * c.arith.xw),
                  k == 1 ? m.ref("s_axis_tdata") : m.ref(idx("x", k - 1) + "_q"),
                  {}});
  }
  m.flops(xf);
  Block reset, run, side;
  for (int k = 1; k <= ns; ++k) {
    const Expr vq = m.reg(idx("v", k) + "_q", 1);
    reset.push_back(assign(vq, lit(1, 0)));
    run.push_back(assign(vq, k == 1 ? m.ref("in_fire") : m.ref(idx("v", k - 1) + "_q")));
    if (k == ns && early_write(c)) break;  // the buffer's RAM takes keep / last a stage early
    const Expr keep = m.reg(idx("keep", k) + "_q", L);
    const Expr last = m.reg(idx("last", k) + "_q", 1);
    side.push_back(assign(keep, k == 1 ? m.ref("s_axis_tkeep") : m.ref(idx("keep", k - 1) + "_q")));
    side.push_back(assign(last, k == 1 ? m.ref("s_axis_tlast") : m.ref(idx("last", k - 1) + "_q")));
  }
  if (out_head(c) && ns >= 1) {  // the output buffer's flags' copy of ~v_ns_q
    const Expr nw = m.reg("nwc_q", 1, "~v_" + std::to_string(ns) + "_q (the buffer's flags)");
    reset.push_back(assign(nw, lit(1, 1)));
    run.push_back(assign(nw, ~(ns == 1 ? m.ref("in_fire") : m.ref(idx("v", ns - 1) + "_q"))));
  }
  Block vff{if_(ex::lnot(m.ref("rst_ni")), std::move(reset), std::move(run))};
  for (auto& st : side) vff.push_back(std::move(st));
  m.seq(vff);
}

// The integer lane's per-job inputs after R (core_lane.cpp's lane_ports).
void top_lane_conns(Module& m, const CoreConfig& c, const Variant& v, Conns& lc) {
  const LaneShape sh = lane_shape(v);
  if (!c.has_fixed_shift()) {
    for (const auto& pt : sh.parts(c.shift_parts())) {
      if (pt.first < pt.second) continue;  // an empty part: no select bits
      const std::string n = "tq" + std::to_string(pt.second);
      lc.emplace_back(n + "_i", m.ref(n + "_q"));
    }
  }
  if (lane_ntq_bits(c, v) > 0) lc.emplace_back("ntq0_i", m.ref("ntq0_q"));
  lc.emplace_back("round_i", m.ref("round_q"));
  if (lane_nlo(c))
    lc.emplace_back("nlo_i", m.ref("nloe_q"));
  else
    lc.emplace_back("lo_i", m.ref("loe_q"));
  lc.emplace_back("hi_i", m.ref("hi_q"));
  // lane_nlo: lox_q has yw + 1 bits (core_top_consts.cpp), the port yw + 3
  lc.emplace_back("lox_i", lane_nlo(c) ? ex::sext(m.ref("lox_q"), c.arith.yw + 3) : m.ref("lox_q"));
  lc.emplace_back("hip1_i", m.ref("hip1_q"));
}

void top_lanes(Module& m, const CoreConfig& c, const Variant& v) {
  const int L = c.lanes, xw = c.arith.xw, yw = c.arith.yw, ns = side_stages(c, v);
  const Expr xt = m.ref(idx("x", c.table_stages()) + "_q");
  const int fw = out_word_bits(c);
  const LaneShape sh = lane_shape(v);
  m.section("Lanes");
  // early_write: the word (and we_i) at stage ns - 1, the flags' wr_i at ns
  const int ws = early_write(c) ? ns - 1 : ns;
  const Expr keep = m.ref(idx("keep", ws) + "_q");
  // lane_keep: the lanes' output registers take keep a stage before the output buffer does
  const Expr keep_in = ns >= 2 ? m.ref(idx("keep", ns - 1) + "_q") : m.ref("s_axis_tkeep");
  std::vector<Expr> ycat;
  for (int i = 0; i < L; ++i) {
    const Expr y = m.wire(idx("y", i), yw);
    Conns lc = {{"clk_i", m.ref("clk_i")}, {"x_i", slice(xt, i * xw, xw)}};
    for (const auto& f : v.fields)
      lc.emplace_back(f.lane + "_i", slice(m.ref(f.wire), i * f.width, f.width));
    if (v.dec) lc.emplace_back("k1_i", m.ref("k1_q"));
    if (c.arith.is_float()) {  // core_flane.hpp: clk, x, s, b, [round,] lo, hi, y
      if (c.arith.y_type == NumType::integer) lc.emplace_back("round_i", m.ref("round_q"));
      lc.emplace_back("lo_i", m.ref("lo_q"));
      lc.emplace_back("hi_i", m.ref("hi_q"));
    } else if (sh.fold_top) {
      lc.emplace_back("lsh_i", m.ref("lsh_q"));
      lc.emplace_back("rtop_i", bit(m.ref("shift_q"), v.rw - 1));
      if (sh.top == v.aw - 1) lc.emplace_back("rmax_i", m.ref("rmax_q"));
    } else {
      lc.emplace_back("shift_i", m.ref("shift_q"));
    }
    if (!c.arith.is_float()) top_lane_conns(m, c, v, lc);
    if (lane_keep(c)) lc.emplace_back("keep_i", bit(keep_in, i));
    lc.emplace_back("y_o", y);
    m.instance(Instance{c.name + "_lane", idx("u_lane", i), std::move(lc)});
    ycat.insert(ycat.begin(), lane_keep(c) ? y : y & ex::repl(yw, bit(keep, i)));
  }
  m.section(lane_keep(c) ? "Output buffer (the lanes output 0 where tkeep = 0)"
                         : "Output buffer (lanes with tkeep = 0 output 0)");
  const Expr wdata = m.wire("fifo_wdata", fw);
  ycat.insert(ycat.begin(), keep);
  ycat.insert(ycat.begin(), m.ref(idx("last", ws) + "_q"));
  m.assign(wdata, cat(std::move(ycat)));
  const Expr rdata = m.wire("fifo_rdata", fw);
  Conns fc{{"clk_i", m.ref("clk_i")},
           {"rst_ni", m.ref("rst_ni")},
           {"wr_i", m.ref(idx("v", ns) + "_q")},
           {"wdata_i", wdata},
           {"rd_i", fifo_rd_ready(c) ? m.ref("m_axis_tready") : m.ref("out_fire")},
           {"rdata_o", rdata},
           {"valid_o", m.ref("m_axis_tvalid")}};
  if (out_head(c)) fc.insert(fc.begin() + 3, {"nwr_i", m.ref("nwc_q")});
  if (early_write(c)) fc.insert(fc.begin() + 3, {"we_i", m.ref(idx("v", ws) + "_q")});
  m.instance(Instance{c.name + "_fifo", "u_fifo", std::move(fc)});
  m.assign(m.ref("m_axis_tdata"), slice(rdata, 0, L * yw));
  m.assign(m.ref("m_axis_tkeep"), slice(rdata, L * yw, L));
  m.assign(m.ref("m_axis_tlast"), bit(rdata, fw - 1));
}

// AXI4-Stream rules on s_axis (assumed) and m_axis (asserted); every accepted beat's keep and
// last leave once, in order, with at most the output buffer's depth of beats in flight.
void top_formal(Module& m, const CoreConfig& c, const Variant& v) {
  fv::Formal f(m);
  const auto r = [&](const std::string& n) { return m.ref(n); };
  const Expr in_keep = r("s_axis_tkeep"), in_last = r("s_axis_tlast");
  const Expr out_keep = r("m_axis_tkeep"), out_last = r("m_axis_tlast");
  fv::stream_rules(
      f, {"s", r("s_axis_tvalid"), r("s_axis_tready"), {r("s_axis_tdata"), in_keep, in_last}},
      true);
  std::vector<Expr> prm;
  for (const auto& fl : v.fields) prm.push_back(r("prm_" + fl.prm + "_i"));
  fv::stream_rules(f, {"prm", r("prm_valid_i"), r("prm_ready_o"), prm}, true);
  f.add(if_(r("s_axis_tvalid"), {assume(fv::keep_ok(in_keep, in_last))}));
  fv::stream_rules(
      f, {"m", r("m_axis_tvalid"), r("m_axis_tready"), {r("m_axis_tdata"), out_keep, out_last}},
      false);
  f.add(if_(r("m_axis_tvalid"), {assert_(fv::keep_ok(out_keep, out_last))}));
  fv::channel(f, {"beats",
                  r("in_fire"),
                  ex::cat({in_keep, in_last}),
                  r("out_fire"),
                  ex::cat({out_keep, out_last}),
                  v.fifo_depth(c),
                  {},
                  {}});
  f.done();
}

}  // namespace

Module build_top(const CoreConfig& c, const Variant& v) {
  const int L = c.lanes;
  Module m;
  m.name = c.top_name();
  m.description = {
      v.dec ? "PPA reference (decomposed-core): the normcore core with " + std::to_string(L) +
                  " decomposed-BN lanes, per element"
            : "normcore streaming batch-norm inference core: " + std::to_string(L) +
                  " lanes, per element",
      v.dec                ? "y = clamp(round(a / 2^R), lo, hi),"
      : c.arith.is_float() ? "y = clamp(RNE(x*s[c] + b[c]), lo, hi): float lanes (contract v2; " +
                                 std::string(to_string(c.arith.x_type)) + " -> " +
                                 std::string(to_string(c.arith.y_type)) + ", s / b fp32; no R)."
                           : "y = clamp(round((x*s[c] + b[c]) / 2^R), lo, hi).",
      "Job: hold cfg_* and pulse start_i while ready_o; load parameters on prm_*; then",
      "stream N*C*HW elements on s_axis (lane 0 in the low bits, tlast on the final beat,",
      "tkeep one bit per element/lane, only the final beat may be partial).",
      "Latency " + std::to_string(v.latency(c)) +
          " cycles; one beat per cycle under any back-pressure."};
  if (v.dec) {
    m.description.insert(m.description.begin() + 2,
                         "a = sat(round((x*2^f - mean[c]) * inv_std[c] / 2^k1)) * gamma[c] + "
                         "beta[c].");
    m.description.insert(m.description.begin() + 3, "Not bit-exact with anything: measured only.");
  }
  top_ports(m, c, v);
  top_config(m, c, v);
  top_lane_consts(m, c, v);
  top_positions(m, c, m.ref("chk_q"));
  top_table(m, c, v);
  top_flow(m, c, v);
  top_side(m, c, v);
  top_lanes(m, c, v);
  top_formal(m, c, v);
  return m;
}

}  // namespace normcore::gen::core
