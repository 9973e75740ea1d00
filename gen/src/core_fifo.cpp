// The core's output buffer <n>_fifo: a first-word-fall-through FIFO on a RAM with a registered,
// non-transparent read (the block RAM's own read register), a bypass register for the word written
// in the previous cycle, and registered "at least 1 / 2 words" flags beside the count (no address
// compare; the count's add has a one-LUT step in front of its carry chain). On --target ecp5 the
// head is a register in front of that buffer (rdata_o straight from flip-flops; the RAM, ECP5's
// distributed RAM with an asynchronous read, only refills it).
#include <algorithm>

#include "core_internal.hpp"
#include "primitives.hpp"

namespace normcore::gen::core {

using ex::lit;
using ex::mux;

namespace {

// The RAM buffer of `d` words: writes `wr`, pops `rd` (only while valid_q); its head is returned
// (mux(byp_q, wd_q, ram_q)), valid_q says it has one. The RAM itself is written at wptr_q on
// `we` (wr, or more: a word written to the free slot at wptr_q without `wr` is never read).
// split (--target ecp5, behind the head register): no count register and no address select in
// front of the RAM: the flags above two words are a thermometer (one LUT a bit, no carry chain),
// and both candidate heads are read from registered addresses, the select after the RAM.
Expr fifo_body(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd,
               const Expr& we, bool split = false) {
  using U = std::uint64_t;
  const int pt = clog2(d);
  const Expr mem = m.memory("mem_q", fw, d);
  m.attr_last("no_rw_check");
  const Expr wptr = m.reg("wptr_q", pt), wnx = m.reg("wnx_q", pt, "wptr_q + 1 mod depth");
  const Expr rptr = m.reg("rptr_q", pt), rnx = m.reg("rnx_q", pt, "rptr_q + 1 mod depth");
  const int cn = bits_for(d);
  const Expr cnt = split ? Expr{} : m.reg("cnt_q", cn, "words held");
  const Expr valid = m.reg("valid_q", 1, "cnt_q >= 1");
  const Expr ge2 = m.reg("ge2_q", 1, "cnt_q >= 2");
  const Expr ram = m.reg("ram_q", fw, "mem_q[raddr] (the word before this cycle's write)");
  const Expr byp = m.reg("byp_q", 1, "the head is the word written in the previous cycle");
  const Expr wd = m.reg("wd_q", fw, "wdata_i of the previous cycle");
  const auto next = [&](const Expr& p) {
    return mux(ex::eq(p, lit(pt, static_cast<U>(d - 1))), lit(pt, 0), p + lit(pt, 1));
  };
  // The flags next: wr ? (rd ? same : one more) : (rd ? one fewer : same). cnt_q >= 3 is one LUT
  // of the count register; the step (+1, 0, -1) one LUT in front of the count's carry chain.
  const Expr ge3 = m.wire("ge3", 1, "cnt_q >= 3");
  Block count;  // the count's update (one statement)
  if (split) {
    // thr_q[k] = (held >= k + 3); held <= d.
    const int tn = std::max(1, d - 2);
    const Expr thr = m.reg("thr_q", tn, "thermometer: bit k = at least k + 3 words held");
    const auto th = [&](int k) {
      return k < 0 ? m.ref("ge2_q") : k >= tn ? lit(1, 0) : ex::bit(thr, k);
    };
    std::vector<Expr> bits;
    for (int k = tn - 1; k >= 0; --k)
      bits.push_back(mux(wr, mux(rd, th(k), th(k - 1)), mux(rd, th(k + 1), th(k))));
    m.assign(ge3, ex::bit(thr, 0));
    count.push_back(assign(thr, ex::cat(bits)));
  } else {
    m.assign(ge3, ex::ge(cnt, lit(cn, 3)));
    const Expr up = m.wire("cnt_up", 1), dn = m.wire("cnt_dn", 1);
    m.assign(up, wr & ~rd);
    m.assign(dn, rd & ~wr);
    count.push_back(assign(cnt, cnt + mux(dn, ex::ones(cn), ex::zext(up, cn))));
  }
  Expr rdw;    // the next cycle's head word
  Block wr_b;  // split: the copy's write
  if (split) {
    // Two copies of the RAM (one read port each: Yosys merges two reads of one memory under a
    // select back into one read at a selected address).
    const Expr mem_b = m.memory("mem_b_q", fw, d);
    m.attr_last("no_rw_check");
    wr_b.push_back(if_(we, {assign(ex::index(mem_b, wptr), wdata)}));
    rdw = mux(rd, ex::index(mem_b, rnx), ex::index(mem, rptr));
  } else {
    const Expr raddr = m.wire("raddr", pt, "the next cycle's head (rptr_q after this cycle)");
    m.assign(raddr, mux(rd, rnx, rptr));
    rdw = ex::index(mem, raddr);
  }
  // The word written now is the head of the next cycle when nothing else is left: held == rd.
  const Expr byp_d = wr & (~valid | (~ge2 & rd));
  m.seq({if_(ex::lnot(m.ref("rst_ni")),
             {assign(wptr, lit(pt, 0)), assign(wnx, lit(pt, 1)), assign(rptr, lit(pt, 0)),
              assign(rnx, lit(pt, 1)),
              split ? assign(m.ref("thr_q"), lit(std::max(1, d - 2), 0)) : assign(cnt, lit(cn, 0)),
              assign(valid, lit(1, 0)), assign(ge2, lit(1, 0)), assign(byp, lit(1, 0))},
             {if_(wr, {assign(wptr, wnx), assign(wnx, next(wnx))}),
              if_(rd, {assign(rptr, rnx), assign(rnx, next(rnx))}), std::move(count.front()),
              assign(valid, mux(wr, mux(rd, valid, lit(1, 1)), mux(rd, ge2, valid))),
              assign(ge2, mux(wr, mux(rd, ge2, valid), mux(rd, ge3, ge2))), assign(byp, byp_d)}),
         assign(wd, wdata)});
  // The storage (no reset) and its registered read in the RAM template's clocked block: the read
  // sees the word before this cycle's write (the bypass register has the new one).
  Block ram_ff{if_(we, {assign(ex::index(mem, wptr), wdata)}), assign(ram, rdw)};
  for (auto& st : wr_b) ram_ff.push_back(std::move(st));
  m.always_ff(std::move(ram_ff));
  return mux(byp, wd, ram);
}

// --target ecp5: head_q / hv_q in front of the RAM buffer. The head is free when empty or read
// (`take`); it then takes the buffer's head, or else the word written now (which then bypasses the
// buffer). hv_q is low only while the buffer is empty, so valid_o is "at least one word" and the
// whole is cycle for cycle the plain buffer of d words.
void fifo_head(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd) {
  const Expr head = m.reg("head_q", fw, "the oldest word (rdata_o)");
  const Expr hv = m.reg("hv_q", 1, "head_q holds a word (valid_o)");
  const Expr take = m.wire("take", 1, "head_q is free this cycle (empty or read)");
  m.assign(take, ~hv | rd);
  const Expr bwr = m.wire("bwr", 1, "the RAM buffer writes (the word does not go to head_q)");
  const Expr bpop = m.wire("bpop", 1, "the RAM buffer's head moves to head_q");
  // The RAM holds the rest, d - 1 words (17 beats at pipeline 11 leave 16: one DPR16X4 deep).
  // The RAM is written on every wr_i (a register: its write enables need no logic); a word that
  // goes to head_q finds the RAM empty, so the slot at wptr_q it lands in is free.
  const Expr bhead = fifo_body(m, std::max(2, d - 1), fw, bwr, wdata, bpop, wr, true);
  const Expr bval = m.ref("valid_q");
  m.assign(bwr, wr & ~(take & ~bval));
  m.assign(bpop, take & bval);
  m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(hv, lit(1, 0))},
             {if_(take, {assign(hv, bval | wr)})}),
         if_(take, {assign(head, mux(bval, bhead, wdata))})});
  m.assign(m.ref("rdata_o"), head);
  m.assign(m.ref("valid_o"), hv);
}

}  // namespace

Module build_out_fifo(const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
  const int fw = c.lanes * c.arith.yw + c.lanes + 1;
  const bool head = c.target == "ecp5";
  Module m;
  m.name = c.name + "_fifo";
  m.description = {
      "Output buffer of " + std::to_string(d) +
          " beats. The core admits a beat only when it has room here for",
      "every beat in flight, so writes never find it full. The RAM reads every cycle at the next",
      "head's address (rd_i selects between two pointer registers); the word written in the",
      "previous cycle, which that read could not see yet, comes from a bypass register. valid_o",
      "(at least one word) and ge2_q (at least two) are registers updated beside the count."};
  if (head)
    m.description.push_back(
        "The head is a register in front of the RAM (rdata_o and valid_o from flip-flops).");
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr wr = m.in("wr_i", 1);
  const Expr wdata = m.in("wdata_i", fw);
  const Expr rd = m.in("rd_i", 1, "only while valid_o");
  const Expr rdata = m.out("rdata_o", fw);
  const Expr valid_o = m.out("valid_o", 1, "a register");
  if (head) {
    fifo_head(m, d, fw, wr, wdata, rd);
    fifo_formal(m, d, {}, true);
    return m;
  }
  m.assign(rdata, fifo_body(m, d, fw, wr, wdata, rd, wr));
  m.assign(valid_o, m.ref("valid_q"));
  fifo_formal(m, d, m.ref("cnt_q"), true);
  return m;
}

}  // namespace normcore::gen::core
