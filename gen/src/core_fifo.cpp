// The core's output buffer <n>_fifo: a first-word-fall-through FIFO on a RAM with a registered,
// non-transparent read (the block RAM's own read register), a bypass register for the word written
// in the previous cycle, and registered "at least 1 / 2 words" flags beside the count (no address
// compare; the count's add has a one-LUT step in front of its carry chain; pipeline >= 8: the
// words held as a thermometer code instead, each bit two LUT levels).
#include "core_internal.hpp"

namespace normcore::gen::core {

using ex::lit;
using ex::mux;

namespace {

// The registers of the words held: occ (thermometer) or cnt, valid (at least one), ge2 (two).
struct Held {
  Expr occ, cnt, valid, ge2;
};

Held held_regs(Module& m, const CoreConfig& c, int d) {
  // pipeline >= 8 (the timing-driven depths): the words held as a thermometer code (bit k: more
  // than k), each bit's next value two LUT levels (wr ? a[k-1] : a[k], a[k] = rd ? occ[k+1] :
  // occ[k], rd = valid & tready in the top); below, a count (smaller: its step is one LUT in
  // front of the count's carry chain, three levels from m_axis_tready).
  Held h;
  if (c.pipe_sat()) {
    h.occ = m.reg("occ_q", d, "thermometer: bit k = more than k words held");
    h.valid = ex::bit(h.occ, 0), h.ge2 = ex::bit(h.occ, 1);
  } else {
    h.cnt = m.reg("cnt_q", bits_for(d), "words held");
    h.valid = m.reg("valid_q", 1, "cnt_q >= 1");
    h.ge2 = m.reg("ge2_q", 1, "cnt_q >= 2");
  }
  return h;
}

// Their reset and next-state statements.
void held_logic(Module& m, int d, const Held& h, const Expr& wr, const Expr& rd, Block& held_reset,
                Block& held_next) {
  const Expr &occ = h.occ, &cnt = h.cnt, &valid = h.valid, &ge2 = h.ge2;
  const int cn = cnt.valid() ? cnt.width() : 0;
  if (occ.valid()) {
    const auto th = [&](int k) { return k < 0 ? lit(1, 1) : k >= d ? lit(1, 0) : ex::bit(occ, k); };
    std::vector<Expr> bits;
    for (int k = d - 1; k >= 0; --k)
      bits.push_back(mux(wr, mux(rd, th(k), th(k - 1)), mux(rd, th(k + 1), th(k))));
    held_reset.push_back(assign(occ, lit(d, 0)));
    held_next.push_back(assign(occ, ex::cat(std::move(bits))));
  } else {
    // The flags next: wr ? (rd ? same : one more) : (rd ? one fewer : same). cnt_q >= 3 is one
    // LUT of the count register; the step (+1, 0, -1) one LUT in front of the count's carry chain.
    const Expr ge3 = m.wire("ge3", 1, "cnt_q >= 3");
    m.assign(ge3, ex::ge(cnt, lit(cn, 3)));
    const Expr up = m.wire("cnt_up", 1), dn = m.wire("cnt_dn", 1);
    m.assign(up, wr & ~rd);
    m.assign(dn, rd & ~wr);
    held_reset = {assign(cnt, lit(cn, 0)), assign(valid, lit(1, 0)), assign(ge2, lit(1, 0))};
    held_next = {assign(cnt, cnt + mux(dn, ex::ones(cn), ex::zext(up, cn))),
                 assign(valid, mux(wr, mux(rd, valid, lit(1, 1)), mux(rd, ge2, valid))),
                 assign(ge2, mux(wr, mux(rd, ge2, valid), mux(rd, ge3, ge2)))};
  }
}

}  // namespace

Module build_out_fifo(const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
  const int fw = c.lanes * c.arith.yw + c.lanes + 1;
  const int pt = clog2(d);
  using U = std::uint64_t;
  Module m;
  m.name = c.name + "_fifo";
  m.description = {
      "Output buffer of " + std::to_string(d) +
          " beats. The core admits a beat only when it has room here for",
      "every beat in flight, so writes never find it full. The RAM reads every cycle at the next",
      "head's address (rd_i selects between two pointer registers); the word written in the",
      "previous cycle, which that read could not see yet, comes from a bypass register. valid_o",
      c.pipe_sat()
          ? "is occ_q[0] of the words held as a thermometer code occ_q (bit k: more than k)."
          : "(at least one word) and ge2_q (at least two) are registers updated beside the "
            "count."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr wr = m.in("wr_i", 1);
  const Expr wdata = m.in("wdata_i", fw);
  const Expr rd = m.in("rd_i", 1, "only while valid_o");
  const Expr rdata = m.out("rdata_o", fw);
  const Expr valid_o = m.out("valid_o", 1, "a register");
  const Expr mem = m.memory("mem_q", fw, d);
  m.attr_last("no_rw_check");
  const Expr wptr = m.reg("wptr_q", pt), wnx = m.reg("wnx_q", pt, "wptr_q + 1 mod depth");
  const Expr rptr = m.reg("rptr_q", pt), rnx = m.reg("rnx_q", pt, "rptr_q + 1 mod depth");
  const Held held = held_regs(m, c, d);
  const Expr &valid = held.valid, &ge2 = held.ge2;
  const Expr ram = m.reg("ram_q", fw, "mem_q[raddr] (the word before this cycle's write)");
  const Expr byp = m.reg("byp_q", 1, "the head is the word written in the previous cycle");
  const Expr wd = m.reg("wd_q", fw, "wdata_i of the previous cycle");
  const auto next = [&](const Expr& p) {
    return mux(ex::eq(p, lit(pt, static_cast<U>(d - 1))), lit(pt, 0), p + lit(pt, 1));
  };
  Block held_reset, held_next;
  held_logic(m, d, held, wr, rd, held_reset, held_next);
  const Expr raddr = m.wire("raddr", pt, "the next cycle's head (rptr_q after this cycle)");
  m.assign(raddr, mux(rd, rnx, rptr));
  // The word written now is the head of the next cycle when nothing else is left: held == rd.
  const Expr byp_d = wr & (~valid | (~ge2 & rd));
  Block rst{assign(wptr, lit(pt, 0)), assign(wnx, lit(pt, 1)), assign(rptr, lit(pt, 0)),
            assign(rnx, lit(pt, 1))};
  for (auto& st : held_reset) rst.push_back(std::move(st));
  rst.push_back(assign(byp, lit(1, 0)));
  Block run{if_(wr, {assign(wptr, wnx), assign(wnx, next(wnx))}),
            if_(rd, {assign(rptr, rnx), assign(rnx, next(rnx))})};
  for (auto& st : held_next) run.push_back(std::move(st));
  run.push_back(assign(byp, byp_d));
  m.seq({if_(ex::lnot(m.ref("rst_ni")), std::move(rst), std::move(run)), assign(wd, wdata)});
  // The storage (no reset) and its registered read in the RAM template's clocked block: the read
  // sees the word before this cycle's write (the bypass register has the new one).
  m.always_ff({if_(wr, {assign(ex::index(mem, wptr), wdata)}), assign(ram, ex::index(mem, raddr))});
  m.assign(rdata, mux(byp, wd, ram));
  m.assign(valid_o, valid);
  return m;
}

}  // namespace normcore::gen::core
