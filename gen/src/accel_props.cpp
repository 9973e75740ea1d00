// Formal properties of the accelerator's AXI4 masters (props.hpp): the read and the write DMA
// engines. See docs/architecture.md, "Protocol properties".
#include <algorithm>

#include "accel_parts.hpp"
#include "normcore/gen/config.hpp"
#include "props.hpp"

namespace normcore::gen {

namespace {

using ex::lit;
using ex::zext;

std::uint64_t u(int v) {
  return static_cast<std::uint64_t>(v);
}

// The engine's job inputs: START only while done (idle, no word left: after reset, a finished
// job or the controller's flush; START while idle with words left would also count the burst
// its cycle issues, which START's loading discards), a bus-aligned address.
void job_assumptions(fv::Formal& f, const AccelConfig& c) {
  Module& m = f.mod();
  const int bl = clog2(c.bus_bytes());
  // A ring configuration's read DMA also takes a request once the last one is issued, its
  // write DMA once the last one is sent (responses outstanding).
  const auto has = [&](const char* n) {
    return c.ring &&
           std::any_of(m.ports.begin(), m.ports.end(), [&](const Port& p) { return p.name == n; });
  };
  const char* more = has("next_ok_o") ? "next_ok_o" : has("sent_o") ? "sent_o" : nullptr;
  f.add(if_(m.ref("start_i"),
            {assume(more != nullptr ? m.ref("done_o") | m.ref(more) : m.ref("done_o"))}));
  if (bl > 0) {
    f.add(if_(m.ref("start_i"), {assume(ex::eq(ex::slice(m.ref("addr_i"), 0, bl), lit(bl, 0)))}));
  }
}

// The address channel m_axi_<ch>*: AXI4 handshake rules, bursts of at most max_burst beats that
// never cross 4 KiB; after an error response (`err`, one cycle to take effect: the issue is
// registered) no new burst until the next START.
void addr_channel(fv::Formal& f, const AccelConfig& c, const std::string& ch, const Expr& err) {
  Module& m = f.mod();
  const auto a = [&](const std::string& n) { return m.ref("m_axi_" + ch + n); };
  fv::stream_rules(
      f,
      {ch,
       a("valid"),
       a("ready"),
       {a("id"), a("addr"), a("len"), a("size"), a("burst"), a("lock"), a("cache"), a("prot")}},
      false);
  f.add(note(ch + ": at most " + std::to_string(c.max_burst) +
             " beats, no burst across a 4 KiB boundary"));
  f.add(if_(a("valid"), {assert_(fv::burst_in_4k(a("addr"), a("len"), c.bus_bytes())),
                         assert_(ex::lt(zext(a("len"), 9), lit(9, u(c.max_burst))))}));
  const Expr seen = f.reg(ch + "_err", 1, "an error response since START");
  const Expr seen2 = f.reg(ch + "_err2", 1, "... one cycle ago");
  const Expr start = m.ref("start_i");
  f.next(seen, ~start & (seen | err), lit(1, 0));
  f.next(seen2, ~start & seen, lit(1, 0));
  const Expr fresh = a("valid") & ~m.ref("f_" + ch + "_stall_q");
  f.add(note(ch + ": no new burst after an error stop"));
  f.add(if_(seen2, {assert_(ex::lnot(fresh))}));
}

// f_<name>_q: up - down, 5 bits (wraps; differences stay below 16).
Expr counter(fv::Formal& f, const std::string& name, const Expr& up, const Expr& down,
             const std::string& comment) {
  const Expr q = f.reg(name, 5, comment);
  f.next(q, q + zext(up, 5) - zext(down, 5), lit(5, 0));
  return q;
}

}  // namespace

void rdma_formal(Module& m, const AccelConfig& c) {
  fv::Formal f(m);
  const auto r = [&](const std::string& n) { return m.ref(n); };
  job_assumptions(f, c);
  const Expr rerr = r("m_axi_rvalid") & ex::bit(r("m_axi_rresp"), 1);
  addr_channel(f, c, "ar", rerr);
  // Bursts accepted on AR and not yet ended by RLAST.
  const Expr out =
      counter(f, "rout", r("m_axi_arvalid") & r("m_axi_arready"),
              r("m_axi_rvalid") & r("m_axi_rready") & r("m_axi_rlast"), "bursts outstanding");
  f.add(note("R: only for an accepted burst (slave); at most " + std::to_string(c.outstanding) +
             " bursts outstanding; no data passed on after an error"));
  f.add(if_(r("m_axi_rvalid"), {assume(ex::ne(out, lit(5, 0)))}));
  f.add(assert_(ex::le(out, lit(5, u(c.outstanding)))));
  f.add(assert_(ex::lnot(r("data_valid_o") & (r("f_ar_err_q") | rerr))));
  f.add(cover(r("m_axi_rvalid") & r("m_axi_rlast") & ex::eq(out, lit(5, u(c.outstanding)))));
  f.done();
}

namespace {

// WLAST on exactly the beat AWLEN + 1 of the burst: one burst (picked by a free f_bpick, its
// ordinal among the AW handshakes and W bursts, whichever side is ahead) is followed.
void wlast_rule(fv::Formal& f, const Expr& awn, const Expr& wn) {
  Module& m = f.mod();
  const auto r = [&](const std::string& n) { return m.ref(n); };
  const Expr awhs = r("m_axi_awvalid") & r("m_axi_awready");
  const Expr wfire = r("m_axi_wvalid") & r("m_axi_wready");
  const Expr wlast = r("m_axi_wlast"), awlen = zext(r("m_axi_awlen"), 9);
  const Expr beat = f.reg("wbeat", 9, "beats of the W burst under way");
  f.next(beat, ex::mux(wfire, ex::mux(wlast, lit(9, 0), beat + lit(9, 1)), beat), lit(9, 0));
  f.add(if_(wfire & ~wlast, {assert_(ex::ne(beat, lit(9, 255)))}));
  const Expr pick = f.anyseq("bpick", 1, "follow the next burst");
  const Expr trk = f.reg("btrk", 1, "a burst is followed");
  const Expr ord = f.reg("bord", 5, "its ordinal");
  const Expr has_aw = f.reg("bhas_aw", 1, "its AW was accepted");
  const Expr len = f.reg("blen", 9, "its AWLEN");
  const Expr tb = f.reg("btb", 9, "its W beats so far");
  const Expr wdone = f.reg("bwdone", 1, "its WLAST was sent");
  const Expr aw_ahead = ex::lt(awn - wn, lit(5, 16));
  const Expr next_o = f.wire("bnext", ex::mux(aw_ahead, awn, wn), "next burst of the leading side");
  const Expr arm = f.wire("barm", ~trk & pick & (ex::ne(next_o, wn) | ex::eq(beat, lit(9, 0))));
  const Expr cur = f.wire("bcur", ex::mux(trk, ord, next_o));
  const Expr act = trk | arm;
  const Expr aw_ev = f.wire("baw_ev", act & awhs & ex::eq(awn, cur));
  const Expr w_ev = f.wire("bw_ev", act & wfire & ex::eq(wn, cur));
  const Expr len_now = ex::mux(has_aw, len, awlen);
  const Expr fin = (has_aw | aw_ev) & (wdone | (w_ev & wlast));
  const Expr keep = f.wire("bkeep", act & ~fin);
  f.next(trk, keep, lit(1, 0));
  f.next(ord, cur);
  f.next(has_aw, keep & (has_aw | aw_ev), lit(1, 0));
  f.next(len, ex::mux(aw_ev, awlen, len));
  f.next(tb, ex::mux(keep, ex::mux(w_ev, tb + lit(9, 1), tb), lit(9, 0)), lit(9, 0));
  f.next(wdone, keep & (wdone | (w_ev & wlast)), lit(1, 0));
  f.add(note("W: WLAST on exactly beat AWLEN + 1 of the burst"));
  f.add(if_(w_ev & (has_aw | aw_ev), {assert_(ex::eq(wlast, ex::eq(tb, len_now)))}));
  f.add(if_(aw_ev & wdone, {assert_(ex::eq(awlen + lit(9, 1), tb))}));
}

}  // namespace

void wdma_formal(Module& m, const AccelConfig& c) {
  fv::Formal f(m);
  const auto r = [&](const std::string& n) { return m.ref(n); };
  job_assumptions(f, c);
  // The FIFO in front: its head held until popped; the final word's strobes fixed for the job.
  fv::stream_rules(f, {"fifo", r("fifo_valid_i"), r("fifo_pop_o"), {r("fifo_data_i")}}, true);
  const Expr strb = f.reg("strb", c.bus_bytes());
  f.next(strb, r("last_strb_i"));
  f.add(if_(ex::lnot(r("start_i")), {assume(ex::eq(r("last_strb_i"), strb))}));
  const Expr berr = r("m_axi_bvalid") & ex::bit(r("m_axi_bresp"), 1);
  addr_channel(f, c, "aw", berr);
  fv::stream_rules(f,
                   {"w",
                    r("m_axi_wvalid"),
                    r("m_axi_wready"),
                    {r("m_axi_wdata"), r("m_axi_wstrb"), r("m_axi_wlast")}},
                   false);
  const Expr bfire = r("m_axi_bvalid") & r("m_axi_bready");
  const Expr awn = counter(f, "awn", r("m_axi_awvalid") & r("m_axi_awready"), lit(1, 0),
                           "AW handshakes (mod 32)");
  const Expr wn = counter(f, "wn", r("m_axi_wvalid") & r("m_axi_wready") & r("m_axi_wlast"),
                          lit(1, 0), "W bursts sent (mod 32)");
  const Expr bn = counter(f, "bn", bfire, lit(1, 0), "B responses (mod 32)");
  const int lim = std::max(2, c.outstanding);
  f.add(note("B: only after the burst's AW and last W beat (slave); at most " +
             std::to_string(lim) + " bursts await their response"));
  f.add(if_(r("m_axi_bvalid"), {assume(ex::ne(awn, bn) & ex::ne(wn, bn))}));
  f.add(assert_(ex::le(awn - bn, lit(5, u(lim)))));
  wlast_rule(f, awn, wn);
  f.add(
      note("W: a beat without FIFO data writes nothing (padding after a stop); a FIFO word "
           "is popped only by a W handshake"));
  f.add(if_(r("m_axi_wvalid") & ~r("fifo_valid_i"),
            {assert_(ex::eq(r("m_axi_wstrb"), lit(c.bus_bytes(), 0)))}));
  f.add(if_(r("fifo_pop_o"), {assert_(r("m_axi_wvalid") & r("m_axi_wready"))}));
  f.add(cover(bfire & ex::eq(awn - bn, lit(5, 1)) & ex::eq(bn, lit(5, 2))));
  f.done();
}

}  // namespace normcore::gen
