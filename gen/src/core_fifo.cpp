// The core's output buffer <n>_fifo: a first-word-fall-through FIFO on a RAM with a registered,
// non-transparent read (the block RAM's own read register), a bypass register for the word written
// in the previous cycle, and registered "at least 1 / 2 words" flags beside the count (no address
// compare; the count's add has a one-LUT step in front of its carry chain). On --target ecp5 the
// head is a register in front of that buffer (rdata_o straight from flip-flops; the RAM, ECP5's
// distributed RAM with an asynchronous read, only refills it); a word of 40 bits or more is two
// such heads and buffers side by side, each with its own copies of the flags (fifo_head_parts).
#include <algorithm>

#include "core_internal.hpp"
#include "primitives.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
using ex::slice;

namespace {

// The RAM buffer of `d` words: writes `wr`, pops `rd` (only while valid_q); its head is returned
// (mux(byp_q, wd_q, ram_q)), valid_q says it has one. The RAM itself is written at wptr_q on
// `we` (wr, or more: a word written to the free slot at wptr_q without `wr` is never read).
// split (--target ecp5, behind the head register): no count register and no address select in
// front of the RAM: the flags above two words are a thermometer (one LUT a bit, no carry chain),
// and both candidate heads are read from registered addresses, the select after the RAM. `sfx`
// names one part of a head in parts (fifo_head): its own registers <name><sfx>_q, wires
// <name><sfx>.
Expr fifo_body(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd,
               const Expr& we, bool split = false, const std::string& sfx = "") {
  using U = std::uint64_t;
  const auto q = [&](const std::string& n) { return n + sfx + "_q"; };
  const int pt = clog2(d);
  const Expr mem = m.memory(q("mem"), fw, d);
  m.attr_last("no_rw_check");
  const Expr wptr = m.reg(q("wptr"), pt), wnx = m.reg(q("wnx"), pt, "wptr_q + 1 mod depth");
  const Expr rptr = m.reg(q("rptr"), pt), rnx = m.reg(q("rnx"), pt, "rptr_q + 1 mod depth");
  const int cn = bits_for(d);
  const Expr cnt = split ? Expr{} : m.reg("cnt_q", cn, "words held");
  const Expr valid = m.reg(q("valid"), 1, "cnt_q >= 1");
  const Expr ge2 = m.reg(q("ge2"), 1, "cnt_q >= 2");
  const Expr ram = m.reg(q("ram"), fw, "mem_q[raddr] (the word before this cycle's write)");
  const Expr byp = m.reg(q("byp"), 1, "the head is the word written in the previous cycle");
  const Expr wd = m.reg(q("wd"), fw, "wdata_i of the previous cycle");
  const auto next = [&](const Expr& p) {
    return mux(ex::eq(p, lit(pt, static_cast<U>(d - 1))), lit(pt, 0), p + lit(pt, 1));
  };
  // The flags next: wr ? (rd ? same : one more) : (rd ? one fewer : same). cnt_q >= 3 is one LUT
  // of the count register; the step (+1, 0, -1) one LUT in front of the count's carry chain.
  const Expr ge3 = m.wire("ge3" + sfx, 1, "cnt_q >= 3");
  Block count;  // the count's update (one statement)
  if (split) {
    // thr_q[k] = (held >= k + 3); held <= d.
    const int tn = std::max(1, d - 2);
    const Expr thr = m.reg(q("thr"), tn, "thermometer: bit k = at least k + 3 words held");
    const auto th = [&](int k) { return k < 0 ? ge2 : k >= tn ? lit(1, 0) : ex::bit(thr, k); };
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
    const Expr mem_b = m.memory(q("mem_b"), fw, d);
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
              split ? assign(m.ref(q("thr")), lit(std::max(1, d - 2), 0)) : assign(cnt, lit(cn, 0)),
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

// --target ice40 (core_internal.hpp's reg_counts): the same buffer with its words held as a
// thermometer (`occ_q[k]`: more than k words; valid_q / ge2_q are its bits 0 / 1) instead of a
// count, so that every flip-flop is one LUT from registers and the ports: the thermometer moves
// when wr ^ rd (its enable, with the reset: rst, wr, occ_q[0], m_axis_tready, one LUT) towards
// wr's side (then rd is ~wr: one LUT of rst, wr and two neighbours); the read address reads a
// copy of ~valid (`nvl_q`, so that its AND with rd_i is not the shared rd LUT), and byp_q needs
// no reset (wr_i is low in reset, so it is 0 a cycle later). Cycle for cycle fifo_body.
// `we` (early_write): the word comes a cycle before wr_i counts it, on we; the RAM is written
// then (at its own pointer wptr_q, moved by we), so that the registered read of the cycle in
// which wr_i counts it already sees it: rdata_o is the RAM's read register (no bypass). The
// slot is free a cycle early too: with d words held and one read, raddr is rnx_q, not the slot.
Expr fifo_body_therm(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd_en,
                     const Expr& we = {}) {
  const bool early = we.valid();
  using U = std::uint64_t;
  const int pt = clog2(d);
  const Expr mem = m.memory("mem_q", fw, d);
  m.attr_last("no_rw_check");
  const Expr wptr = m.reg("wptr_q", pt), wnx = m.reg("wnx_q", pt, "wptr_q + 1 mod depth");
  const Expr rptr = m.reg("rptr_q", pt), rnx = m.reg("rnx_q", pt, "rptr_q + 1 mod depth");
  const Expr occ = m.reg("occ_q", d, "thermometer: bit k = more than k words held");
  const Expr nvl = m.reg("nvl_q", 1, "~occ_q[0] (the read address's copy)");
  const Expr ram = m.reg("ram_q", fw, "mem_q[raddr] (the word before this cycle's write)");
  const Expr byp =
      early ? Expr{} : m.reg("byp_q", 1, "the head is the word written in the previous cycle");
  const Expr wd = early ? Expr{} : m.reg("wd_q", fw, "wdata_i of the previous cycle");
  const Expr wmv = early ? we : wr;  // moves the write pointer
  const Expr valid = bit(occ, 0), ge2 = d > 1 ? bit(occ, 1) : lit(1, 0);
  const Expr rd = m.wire("rd", 1, "a word leaves");
  m.assign(rd, valid & rd_en);
  const auto next = [&](const Expr& p) {
    return mux(ex::eq(p, lit(pt, static_cast<U>(d - 1))), lit(pt, 0), p + lit(pt, 1));
  };
  const Expr mv = m.wire("occ_mv", 1, "the count changes (wr ^ rd)");
  m.assign(mv, wr ^ rd);
  const Expr up = d > 1 ? cat({slice(occ, 0, d - 1), lit(1, 1)}) : lit(1, 1);
  const Expr dn = d > 1 ? cat({lit(1, 0), slice(occ, 1, d - 1)}) : lit(1, 0);
  const Expr raddr = m.wire("raddr", pt, "the next cycle's head (rptr_q after this cycle)");
  m.assign(raddr, mux(rd_en & ~nvl, rnx, rptr));
  Block seq{if_(ex::lnot(m.ref("rst_ni")),
                {assign(wptr, lit(pt, 0)), assign(wnx, lit(pt, 1)), assign(rptr, lit(pt, 0)),
                 assign(rnx, lit(pt, 1)), assign(occ, lit(d, 0)), assign(nvl, lit(1, 1))},
                {if_(wmv, {assign(wptr, wnx), assign(wnx, next(wnx))}),
                 if_(rd, {assign(rptr, rnx), assign(rnx, next(rnx))}),
                 if_(mv, {assign(occ, mux(wr, up, dn)), assign(nvl, ~(wr | ge2))})})};
  if (!early) {
    seq.push_back(assign(byp, wr & (~valid | (~ge2 & rd_en))));
    seq.push_back(assign(wd, wdata));
  }
  m.seq(std::move(seq));
  m.always_ff(
      {if_(wmv, {assign(ex::index(mem, wptr), wdata)}), assign(ram, ex::index(mem, raddr))});
  m.assign(m.ref("rdata_o"), early ? ram : mux(byp, wd, ram));
  m.assign(m.ref("valid_o"), valid);
  // The words held (for the formal channel's count): the thermometer's ones.
  const int cn = bits_for(d);
  Expr held = lit(cn, 0);
  for (int k = 0; k < d; ++k) held = held + ex::zext(bit(occ, k), cn);
  return held;
}

// --target ecp5: head_q / hv_q in front of the RAM buffer. The head is free when empty or read
// (`take`); it then takes the buffer's head, or else the word written now (which then bypasses the
// buffer). hv_q is low only while the buffer is empty, so valid_o is "at least one word" and the
// whole is cycle for cycle the plain buffer of d words. wr writes the RAMs only; the flags,
// pointers and head take `wrf`, the same strobe from a register of its own (~nwr_i: a fan-out
// of the flags' LUTs alone, not of the RAMs' write enables too).
// One head and its RAM buffer (fifo_head; each part of fifo_head_parts, named by `sfx`): `take`
// when head<sfx>_q is free, the buffer written unless the word goes to the head, popped into it.
struct HeadPart {
  Expr take, bhead, bval;
};
HeadPart head_part(Module& m, int d, int w, const Expr& wr, const Expr& wrf, const Expr& wdata,
                   const Expr& rd, const Expr& hv, const std::string& sfx) {
  const std::string head = "head" + sfx + "_q";
  const Expr take = m.wire("take" + sfx, 1, head + " is free this cycle (empty or read)");
  m.assign(take, ~hv | rd);
  const Expr bwr =
      m.wire("bwr" + sfx, 1, "the RAM buffer writes (the word does not go to " + head + ")");
  const Expr bpop = m.wire("bpop" + sfx, 1, "the RAM buffer's head moves to " + head);
  // The RAM holds the rest, d - 1 words (17 beats at pipeline 11 leave 16: one DPR16X4 deep).
  // The RAM is written on every wr_i (a register: its write enables need no logic); a word that
  // goes to the head finds the RAM empty, so the slot at wptr_q it lands in is free.
  const Expr bhead = fifo_body(m, std::max(2, d - 1), w, bwr, wdata, bpop, wr, true, sfx);
  const Expr bval = m.ref("valid" + sfx + "_q");
  m.assign(bwr, wrf & ~(take & ~bval));
  m.assign(bpop, take & bval);
  return {take, bhead, bval};
}

// --target ecp5: head_q / hv_q in front of the RAM buffer. The head is free when empty or read
// (`take`); it then takes the buffer's head, or else the word written now (which then bypasses the
// buffer). hv_q is low only while the buffer is empty, so valid_o is "at least one word" and the
// whole is cycle for cycle the plain buffer of d words. wr writes the RAMs only; the flags,
// pointers and head take `wrf`, the same strobe from a register of its own (~nwr_i: a fan-out
// of the flags' LUTs alone, not of the RAMs' write enables too).
void fifo_head(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd) {
  const Expr wrf = m.wire("wrf", 1, "wr_i from its copy (~nwr_i): the flags' write strobe");
  m.assign(wrf, ~m.ref("nwr_i"));
  const Expr head = m.reg("head_q", fw, "the oldest word (rdata_o)");
  const Expr hv = m.reg("hv_q", 1, "head_q holds a word (valid_o)");
  const HeadPart h = head_part(m, d, fw, wr, wrf, wdata, rd, hv, "");
  m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(hv, lit(1, 0))},
             {if_(h.take, {assign(hv, h.bval | wrf)})}),
         if_(h.take, {assign(head, mux(h.bval, h.bhead, wdata))})});
  m.assign(m.ref("rdata_o"), head);
  m.assign(m.ref("valid_o"), hv);
}

// fifo_head in parts: each part p of the word (low bits first) is a head and RAM buffer of its
// own, with its own copies of every flag (hv_<p>_q, valid_<p>_q, ge2_<p>_q, thr_<p>_q, the
// pointers, byp_<p>_q): the parts are one state machine in lockstep (each copy's next value reads
// its own register, so synthesis cannot merge them), each with half the fan-out. hv's next value
// without an enable: take ? (bval | wrf) : hv is (hv & ~rd) | bval | wrf (not take is hv & ~rd).
// valid_o is hv_q, one more copy of the same (the top's flow control reads it).
void fifo_head_parts(Module& m, int d, int fw, const Expr& wr, const Expr& wdata, const Expr& rd,
                     int parts) {
  const Expr wrf = m.wire("wrf", 1, "wr_i from its copy (~nwr_i): the flags' write strobe");
  m.assign(wrf, ~m.ref("nwr_i"));
  const Expr hv = m.reg("hv_q", 1, "the heads hold a word (valid_o; a copy of hv_<p>_q)");
  Block reset{assign(hv, lit(1, 0))};
  Block run;
  Block data;
  std::vector<Expr> heads;
  for (int p = 0, lo = 0; p < parts; ++p) {
    const int w = (fw - lo) / (parts - p);
    const std::string sfx = "_" + std::to_string(p);
    const Expr wd = slice(wdata, lo, w);
    const Expr head =
        m.reg("head" + sfx + "_q", w, "bits " + std::to_string(lo) + ".. of the head");
    const Expr hvp = m.reg("hv" + sfx + "_q", 1, "head" + sfx + "_q holds a word (= hv_q)");
    const HeadPart h = head_part(m, d, w, wr, wrf, wd, rd, hvp, sfx);
    reset.push_back(assign(hvp, lit(1, 0)));
    run.push_back(assign(hvp, (hvp & ~rd) | h.bval | wrf));
    data.push_back(if_(h.take, {assign(head, mux(h.bval, h.bhead, wd))}));
    heads.insert(heads.begin(), head);
    lo += w;
  }
  run.push_back(assign(hv, (hv & ~rd) | m.ref("valid_0_q") | wrf));
  Block seq{if_(ex::lnot(m.ref("rst_ni")), std::move(reset), std::move(run))};
  for (auto& st : data) seq.push_back(std::move(st));
  m.seq(std::move(seq));
  m.assign(m.ref("rdata_o"), cat(std::move(heads)));
  m.assign(m.ref("valid_o"), hv);
}

}  // namespace

// reg_counts (--target ice40): occ_q counts the accepted beats a cycle late, from in_q (in_fire
// registered), so the beats held are occ_q + in_q. Its enable in_q ^ out_fire (with the reset:
// rst, in_q, m_axis_tvalid, m_axis_tready) and its next value (in_q ? up : down, as the two
// differ when it moves) are one LUT each. Admission assumes a beat is taken now: held + 1 < d,
// ~occ_q[d-3] | (~in_q & ~occ_q[d-2]), registers only. Unstalled, pipeline + 2 beats are held, as
// with top_flow's rule (which also admits at d - 1 held when no beat is taken now).
void top_flow_lagged(Module& m, int d, const Expr& occ, bool same) {
  const Expr tready = m.ref("tready_q"), out_fire = m.ref("out_fire"), in_fire = m.ref("in_fire");
  const Expr inq = m.reg("in_q", 1, "in_fire of the previous cycle (not yet in occ_q)");
  const auto th = [&](int k) { return k < 0 ? lit(1, 1) : k >= d ? lit(1, 0) : bit(occ, k); };
  const Expr room = m.wire("room", 1, "held + 1 < " + std::to_string(d) + " (held = occ_q + in_q)");
  m.assign(room, ~th(d - 3) | (~inq & ~th(d - 2)));
  const Expr up = d > 1 ? cat({slice(occ, 0, d - 1), lit(1, 1)}) : lit(1, 1);
  const Expr dn = d > 1 ? cat({lit(1, 0), slice(occ, 1, d - 1)}) : lit(1, 0);
  const Expr mv = m.wire("occ_mv", 1, "occ_q moves (in_q ^ out_fire)");
  m.assign(mv, inq ^ out_fire);
  const Expr prm_fire = m.ref("prm_valid_i") & m.ref("prm_ready_o");
  const Expr ready = m.ref("ready_q");
  const Expr tready_d = m.wire("trdy_nx", 1, "s_axis_tready's next value");
  m.assign(tready_d, m.ref("run_nx") & room & m.ref("ld_done"));
  const Expr ready_d = m.wire("ready_nx", 1, "ready_o's next value");
  m.assign(ready_d, m.ref("ist_q") & ~th(0) & ~inq & ~m.ref("ld_busy") & ~in_fire & ~prm_fire &
                        ~m.ref("start_fire"));
  // The copies (declared with their readers: chan_control, err_nx). spec::same_copies: trc_q =
  // tready_q and rdyc_q = ready_q, their next values in De Morgan form (another shape of the same
  // function, so that synthesis keeps the flip-flops apart); else ntr_q / nrdy_q, the complements.
  const Expr ntr = m.ref(same ? "trc_q" : "ntr_q"), nrdy = m.ref(same ? "rdyc_q" : "nrdy_q");
  const Expr ntr_d = same ? ~(~m.ref("run_nx") | ~room | ~m.ref("ld_done")) : ~tready_d;
  const Expr nrdy_d = same ? ~(~m.ref("ist_q") | th(0) | inq | m.ref("ld_busy") | in_fire |
                               prm_fire | m.ref("start_fire"))
                           : ~ready_d;
  m.seq({if_(
      ex::lnot(m.ref("rst_ni")),
      {assign(occ, lit(d, 0)), assign(inq, lit(1, 0)), assign(tready, lit(1, 0)),
       assign(ntr, lit(1, same ? 0 : 1)), assign(ready, lit(1, 0)),
       assign(nrdy, lit(1, same ? 0 : 1))},
      {if_(mv, {assign(occ, mux(inq, up, dn))}), assign(inq, in_fire), assign(tready, tready_d),
       assign(ntr, ntr_d), assign(ready, ready_d), assign(nrdy, nrdy_d)})});
  m.assign(m.ref("s_axis_tready"), tready);
}

Module build_out_fifo(const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
  const int fw = out_word_bits(c);
  const bool head = out_head(c);
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
  if (head) m.in("nwr_i", 1, "~wr_i from a register of its own (the flags' copy)");
  const Expr we = early_write(c) ? m.in("we_i", 1, "wdata_i is valid: wr_i a cycle early") : Expr{};
  const Expr wdata = m.in("wdata_i", fw);
  const Expr rd = m.in("rd_i", 1,
                       fifo_rd_ready(c) ? "the reader's ready (a word leaves when valid_o too)"
                                        : "only while valid_o");
  const Expr rdata = m.out("rdata_o", fw);
  const Expr valid_o = m.out("valid_o", 1, "a register");
  if (head) {
    if (out_head_parts(c))  // two parts: each take / pop drives half the enables and selects
      fifo_head_parts(m, d, fw, wr, wdata, rd, 2);
    else
      fifo_head(m, d, fw, wr, wdata, rd);
    // rd_i is the reader's ready: take = ~hv_q | rd_i is the same with or without hv_q in rd_i.
    fifo_formal_ready(m, d, {}, m.ref("hv_q") & rd, ex::eq(m.ref("nwr_i"), ~wr));
    return m;
  }
  if (reg_counts(c)) {
    const Expr held = fifo_body_therm(m, d, fw, wr, wdata, rd, we);
    fifo_formal_ready(m, d, held, m.ref("rd"), {}, we.valid());
    return m;
  }
  m.assign(rdata, fifo_body(m, d, fw, wr, wdata, rd, wr));
  m.assign(valid_o, m.ref("valid_q"));
  fifo_formal(m, d, m.ref("cnt_q"), true);
  return m;
}

}  // namespace normcore::gen::core
