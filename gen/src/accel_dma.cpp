// The accelerator's read and write DMA engines, both built around the shared burst issuer
// (prim_axi.hpp).
#include "accel_parts.hpp"
#include "prim_axi.hpp"
#include "rtl_util.hpp"

namespace normcore::gen {

namespace {

using ex::lit;

std::uint64_t u(int v) {
  return static_cast<std::uint64_t>(v);
}

void rdma_ports(Module& m, const AccelConfig& c, int wb, int crb) {
  const int aw = c.addr_bits;
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "only while done_o (after reset, a finished job or a flush)");
  m.in("addr_i", aw, "bus-aligned");
  m.in("words_i", wb);
  m.in("abort_i", 1, "issue nothing more");
  m.in("credit_i", crb, "free words in the consumer FIFO");
  prim::axi_addr_ports(m, c, "ar");
  m.in("m_axi_rid", c.id_bits);
  m.in("m_axi_rdata", c.bus_bits);
  m.in("m_axi_rresp", 2);
  m.in("m_axi_rlast", 1);
  m.in("m_axi_rvalid", 1);
  m.out("m_axi_rready", 1);
  m.out("data_valid_o", 1, "write data_o into the consumer FIFO");
  m.out("data_o", c.bus_bits);
  m.out("idle_o", 1, "no request pending or outstanding");
  m.out("done_o", 1, "idle and every word requested");
  m.out("err_o", 1, "a read returned SLVERR/DECERR");
  m.out("err_addr_o", aw, "bus word of the first error");
  if (c.ring) {  // rdma_overlap
    m.out("next_ok_o", 1, "a new request may start: this one issued, no older beats in flight");
    m.out("rx_new_o", 1, "a beat now belongs to the newest request");
    m.out("err_new_o", 1, "the error was in the newest request's beats");
  }
}

// With the ring a request may start once the previous one is issued (its beats still in
// flight: next_ok_o), so a descriptor prefetch follows the job's input with no gap. The
// address of the next beat to arrive (for the error address) steps through the older
// request's remaining beats, then jumps to the newest request's base.
void rdma_overlap(Module& m, const AccelConfig& c, const prim::BurstIssuer& b, int crb) {
  const int aw = c.addr_bits, wb = b.left_q.width(), bl = clog2(c.bus_bytes());
  const Expr cur = m.reg("cur_q", aw, "address of the next beat to arrive");
  const Expr old = m.reg("old_q", crb, "beats of the older request still to arrive");
  const Expr nb = m.reg("nb_q", aw, "the newest request's base (while old_q != 0)");
  const Expr enew = m.reg("enew_q", 1, "the error was in the newest request");
  const Expr err = m.ref("err_q"), infl = m.ref("infl_q"), rfire = m.ref("rfire");
  const Expr start = m.ref("start_i");
  const Expr left = m.wire("infl_left", crb, "beats in flight after this cycle's beat");
  m.assign(left, infl - ex::zext(rfire, crb));
  const Expr step = m.wire("cur_step", aw);
  m.assign(step, cur + lit(aw, u(c.bus_bytes())));
  const Expr zero = lit(crb, 0);
  rtl::Process p;
  p.resets = {{old, zero}, {enew, lit(1, 0)}};
  p.body = {
      if_(start,
          {if_(ex::eq(left, zero), {assign(cur, m.ref("addr_i")), assign(old, zero)},
               {assign(old, left), assign(nb, m.ref("addr_i")), if_(rfire, {assign(cur, step)})})},
          {if_(rfire, {if_(ex::eq(old, lit(crb, 1)), {assign(cur, nb), assign(old, zero)},
                           {assign(cur, step),
                            if_(ex::ne(old, zero), {assign(old, old - lit(crb, 1))})})})}),
      if_(m.ref("rerr") & ~err, {assign(m.ref("eaddr_q"), cur), assign(enew, m.ref("rx_new_o"))})};
  p.comment = "The beat's address across overlapping requests";
  rtl::process(m, p);
  m.assign(m.ref("rx_new_o"), ex::eq(old, zero) & ~start);
  m.assign(m.ref("err_new_o"), enew);
  m.assign(m.ref("next_ok_o"),
           ~b.valid_q & ex::eq(b.left_q, lit(wb, 0)) & ex::eq(old, zero) & ~err & ~start);
  (void)bl;
}

void wdma_ports(Module& m, const AccelConfig& c, int wb, int fcb) {
  const int aw = c.addr_bits, bb = c.bus_bytes();
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "only while done_o (after reset, a finished job or a flush)");
  m.in("addr_i", aw);
  m.in("words_i", wb);
  m.in("last_strb_i", bb, "byte strobes of the final word");
  m.in("abort_i", 1);
  m.in("fifo_count_i", fcb, "words waiting in the FIFO");
  m.in("fifo_valid_i", 1);
  m.in("fifo_data_i", c.bus_bits);
  m.out("fifo_pop_o", 1);
  prim::axi_addr_ports(m, c, "aw");
  m.out("m_axi_wdata", c.bus_bits);
  m.out("m_axi_wstrb", bb);
  m.out("m_axi_wlast", 1);
  m.out("m_axi_wvalid", 1);
  m.in("m_axi_wready", 1);
  m.in("m_axi_bid", c.id_bits);
  m.in("m_axi_bresp", 2);
  m.in("m_axi_bvalid", 1);
  m.out("m_axi_bready", 1);
  m.out("idle_o", 1);
  m.out("done_o", 1);
  m.out("err_o", 1);
  m.out("err_addr_o", aw, "start of the burst that failed");
  if (c.ring) {
    m.out("sent_o", 1, "every word sent: only write responses outstanding");
    m.out("bok_o", 1, "a write response without error");
  }
}

// A flop FIFO instance of the write DMA (u_lenq / u_adrq).
void wdma_queue(Module& m, const std::string& module, const std::string& q, const Expr& wdata,
                const Expr& rd, const std::string& comment) {
  m.instance(Instance{module,
                      "u_" + q,
                      {{"clk_i", m.ref("clk_i")},
                       {"rst_ni", m.ref("rst_ni")},
                       {"wr_i", m.ref("issue")},
                       {"wdata_i", wdata},
                       {"rd_i", rd},
                       {"rdata_o", m.ref(q + "_head")},
                       {"valid_o", m.ref(q + "_valid")},
                       {"full_o", m.ref(q + "_full")}},
                      comment});
}

// With the ring a burst's address goes out once a word beyond those owed to earlier bursts
// waits in the FIFO, so its beats stream out as the core makes them (WVALID may drop inside a
// burst) and a job pays no burst fill before its first or after its last beat. When the
// job stops (abort_i: a read error, a write error, a soft reset) while the FIFO lacks data
// for bursts already issued (`short`), the data may never come: once W holds no beat, every
// beat still owed is sent with no strobes (`pad_q`: it writes nothing; the FIFO is not popped
// and the datapath reset empties it), so the bursts end and ABORT's wait for idle ends.
void wdma_pad(Module& m, const AccelConfig& c, const Expr& owed_q, const Expr& strb,
              const Expr& short_w) {
  const int fcb = owed_q.width(), bb = c.bus_bytes();
  const Expr pad = m.reg("pad_q", 1, "the owed beats are sent with no strobes");
  const Expr sh = m.wire("short_w", 1, "the FIFO lacks data for issued bursts");
  m.assign(sh, short_w);
  const Expr wv = m.ref("m_axi_wvalid");
  rtl::Process p;
  p.resets = {{pad, lit(1, 0)}};
  p.body = {if_(pad, {if_(ex::eq(owed_q, lit(fcb, 0)), {assign(pad, lit(1, 0))})},
                {if_(m.ref("abort_i") & sh & ~wv, {assign(pad, lit(1, 1))})})};
  p.comment = "Padding the owed beats after a stop";
  rtl::process(m, p);
  m.assign(wv, (m.ref("fifo_valid_i") | pad) & m.ref("lenq_valid"));
  m.assign(m.ref("m_axi_wdata"), ex::mux(pad, lit(c.bus_bits, 0), m.ref("fifo_data_i")));
  m.assign(m.ref("m_axi_wstrb"), ex::mux(pad, lit(bb, 0), strb));
  m.assign(m.ref("fifo_pop_o"), m.ref("wfire") & ~pad);
}

std::vector<std::string> wdma_description(const AccelConfig& c) {
  const std::string n = std::to_string(std::max(2, c.outstanding));
  if (c.ring) {
    return {"Write DMA: writes `words` bus words to `addr` in INCR bursts that never cross 4 KiB.",
            "A burst's address goes out once a word beyond those owed to issued bursts waits in",
            "the FIFO, so the beats stream as they come (after a stop the owed beats go with no",
            "strobes); up to " + n + " bursts await their response. WSTRB of the last word covers",
            "exactly the job's bytes. A SLVERR/DECERR stops new bursts; issued ones complete."};
  }
  return {"Write DMA: writes `words` bus words to `addr` in INCR bursts that never cross 4 KiB.",
          "A burst's address goes out only once all its data waits in the FIFO, so W never stalls",
          "the interconnect; up to " + n +
              " bursts await their response. WSTRB of the last word covers",
          "exactly the job's bytes. A SLVERR/DECERR stops new bursts; issued ones complete."};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Module build_rdma(const AccelConfig& c, const std::string& name, int wb, int crb) {
  const int aw = c.addr_bits;
  const int bl = clog2(c.bus_bytes());
  const int ob = bits_for(c.outstanding);
  Module m;
  m.name = name;
  m.description = {
      "Read DMA: reads `words` bus words from `addr` in INCR bursts of up to " +
          std::to_string(c.max_burst) + " beats that never",
      "cross 4 KiB, with up to " + std::to_string(c.outstanding) +
          " bursts outstanding. A burst is issued only when the consumer FIFO has",
      "room for it and every beat already requested (credit_i), so RREADY stays high and the",
      "buffering is bounded. A SLVERR/DECERR stops new requests; outstanding beats are drained."};
  rdma_ports(m, c, wb, crb);
  const prim::BurstIssuer b = prim::burst_issuer(m, c, "ar", wb, "words not yet requested");
  const Expr infl_q = m.reg("infl_q", crb, "beats requested, not yet received");
  const Expr out_q = m.reg("out_q", ob, "bursts outstanding");
  const Expr rbase_q = c.ring ? Expr{} : m.reg("rbase_q", aw);
  const Expr rcnt_q = c.ring ? Expr{} : m.reg("rcnt_q", wb, "beats received");
  const Expr err_q = m.reg("err_q", 1);
  const Expr eaddr_q = m.reg("eaddr_q", aw);
  const Expr room = m.wire("room", 1, "consumer can take this burst on top of the beats in flight");
  const int rw = std::max(crb, b.len_bits) + 1;
  m.assign(room,
           ex::ge(ex::zext(m.ref("credit_i"), rw), ex::zext(infl_q, rw) + ex::zext(b.len, rw)));
  const Expr issue =
      prim::burst_issue(m, b, err_q, {ex::lt(out_q, lit(ob, u(c.outstanding))), room});
  const Expr rfire = m.wire("rfire", 1);
  m.assign(rfire, m.ref("m_axi_rvalid"));
  const Expr rerr = m.wire("rerr", 1);
  m.assign(rerr, rfire & ex::bit(m.ref("m_axi_rresp"), 1));
  prim::burst_logic(m, c, b, issue);
  rtl::Process p;
  p.resets = {{infl_q, lit(crb, 0)}, {out_q, lit(ob, 0)}, {err_q, lit(1, 0)}};
  if (c.ring) {  // the error address from rdma_overlap; an error wins over a START
    p.body = {if_(m.ref("start_i"), {assign(err_q, lit(1, 0))}),
              if_(rerr & ~err_q, {assign(err_q, lit(1, 1))})};
  } else {
    p.body = {if_(
        m.ref("start_i"),
        {assign(rbase_q, m.ref("addr_i")), assign(rcnt_q, lit(wb, 0)), assign(err_q, lit(1, 0))},
        {if_(rfire, {assign(rcnt_q, rcnt_q + lit(wb, 1))}),
         if_(rerr & ~err_q, {assign(err_q, lit(1, 1)),
                             assign(eaddr_q, rbase_q + rtl::shl_by(ex::fit(rcnt_q, aw), bl))})})};
  }
  p.body.push_back(assign(
      infl_q, infl_q + ex::mux(issue, ex::fit(b.len, crb), lit(crb, 0)) - ex::zext(rfire, crb)));
  p.body.push_back(
      assign(out_q, out_q + ex::zext(issue, ob) - ex::zext(rfire & m.ref("m_axi_rlast"), ob)));
  p.comment = "Beats in flight, bursts outstanding, the first error";
  rtl::process(m, p);
  if (c.ring) rdma_overlap(m, c, b, crb);
  m.assign(m.ref("m_axi_rready"), lit(1, 1), "credits guarantee room");
  m.assign(m.ref("data_valid_o"), rfire & ~err_q & ~rerr);
  m.assign(m.ref("data_o"), m.ref("m_axi_rdata"));
  m.assign(m.ref("idle_o"), ~b.valid_q & ex::eq(out_q, lit(ob, 0)));
  m.assign(m.ref("done_o"), m.ref("idle_o") & ex::eq(b.left_q, lit(wb, 0)));
  m.assign(m.ref("err_o"), err_q);
  m.assign(m.ref("err_addr_o"), eaddr_q);
  rtl::sink(m, "unused_rid", {m.ref("m_axi_rid"), ex::bit(m.ref("m_axi_rresp"), 0)});
  rdma_formal(m, c);
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_wdma(const AccelConfig& c, const std::string& name, int wb, int fcb) {
  const int aw = c.addr_bits, bb = c.bus_bytes();
  Module m;
  m.name = name;
  m.description = wdma_description(c);
  wdma_ports(m, c, wb, fcb);
  const prim::BurstIssuer b =
      prim::burst_issuer(m, c, "aw", wb, "words not yet covered by a burst");
  const Expr owed_q = m.reg("owed_q", fcb, "words of issued bursts not yet sent");
  const Expr words_q = m.reg("words_q", wb);
  const Expr sent_q = m.reg("sent_q", wb, "words sent");
  const Expr beat_q = m.reg("beat_q", 8, "beat inside the current burst");
  const Expr err_q = m.reg("err_q", 1);
  const Expr eaddr_q = m.reg("eaddr_q", aw);
  const Expr lenq_valid = m.wire("lenq_valid", 1);
  const Expr lenq_head = m.wire("lenq_head", 8);
  const Expr lenq_full = m.wire("lenq_full", 1);
  const Expr adrq_valid = m.wire("adrq_valid", 1);
  const Expr adrq_head = m.wire("adrq_head", aw);
  const Expr adrq_full = m.wire("adrq_full", 1);
  const Expr have = m.wire("have", 1, "the FIFO holds the next burst's data");
  const int hw = std::max(fcb, b.len_bits) + 1;
  const Expr cnt = ex::zext(m.ref("fifo_count_i"), hw), owed = ex::zext(owed_q, hw);
  if (c.ring) {  // streaming: a word beyond those owed (wdma_pad)
    m.assign(have, ex::gt(cnt, owed));
  } else {
    m.assign(have, ex::ge(cnt, owed + ex::zext(b.len, hw)));
  }
  const Expr issue = prim::burst_issue(m, b, err_q, {~adrq_full, ~lenq_full, have});
  const Expr wfire = m.wire("wfire", 1);
  const Expr wlast = m.ref("m_axi_wlast");
  m.assign(wfire, m.ref("m_axi_wvalid") & m.ref("m_axi_wready"));
  const Expr bfire = m.wire("bfire", 1);
  m.assign(bfire, m.ref("m_axi_bvalid"));
  const Expr strb =
      ex::mux(ex::eq(sent_q, words_q - lit(wb, 1)), m.ref("last_strb_i"), ex::ones(bb));
  m.assign(wlast, ex::eq(beat_q, lenq_head));
  if (c.ring) {
    wdma_pad(m, c, owed_q, strb, ex::lt(cnt, owed));
  } else {
    m.assign(m.ref("m_axi_wvalid"), m.ref("fifo_valid_i") & lenq_valid);
    m.assign(m.ref("m_axi_wdata"), m.ref("fifo_data_i"));
    m.assign(m.ref("m_axi_wstrb"), strb);
    m.assign(m.ref("fifo_pop_o"), wfire);
  }
  prim::burst_logic(m, c, b, issue);
  rtl::Process p;
  p.resets = {{owed_q, lit(fcb, 0)}, {beat_q, lit(8, 0)}, {err_q, lit(1, 0)}};
  // With the ring a request may start while the last one's responses are outstanding (once it
  // is sent): an error stays until the datapath reset (FLUSH), whichever request it hit.
  const Stmt wbeat = if_(wfire, {assign(sent_q, sent_q + lit(wb, 1)),
                                 assign(beat_q, ex::mux(wlast, lit(8, 0), beat_q + lit(8, 1)))});
  const Stmt berr = if_(bfire & ex::bit(m.ref("m_axi_bresp"), 1) & ~err_q,
                        {assign(err_q, lit(1, 1)), assign(eaddr_q, adrq_head)});
  Block init = {assign(words_q, m.ref("words_i")), assign(sent_q, lit(wb, 0))};
  if (!c.ring) init.push_back(assign(err_q, lit(1, 0)));
  p.body = c.ring ? Block{if_(m.ref("start_i"), std::move(init), {wbeat}), berr}
                  : Block{if_(m.ref("start_i"), std::move(init), {wbeat, berr})};
  p.body.push_back(assign(
      owed_q, owed_q + ex::mux(issue, ex::fit(b.len, fcb), lit(fcb, 0)) - ex::zext(wfire, fcb)));
  p.comment = "Words owed to issued bursts, beats, the first error";
  rtl::process(m, p);
  wdma_queue(m, name + "_lenq", "lenq", ex::fit(b.len, 8) - lit(8, 1), wfire & wlast,
             "burst lengths whose data is still to be sent");
  wdma_queue(m, name + "_adrq", "adrq", b.addr_q, bfire,
             "addresses of bursts awaiting their response");
  m.assign(m.ref("m_axi_bready"), lit(1, 1));
  m.assign(m.ref("idle_o"), ~b.valid_q & ~adrq_valid);
  m.assign(m.ref("done_o"), m.ref("idle_o") & ex::eq(b.left_q, lit(wb, 0)));
  if (c.ring) {
    m.assign(m.ref("sent_o"),
             ~b.valid_q & ex::eq(b.left_q, lit(wb, 0)) & ex::eq(owed_q, lit(fcb, 0)));
    m.assign(m.ref("bok_o"), bfire & ~ex::bit(m.ref("m_axi_bresp"), 1));
  }
  m.assign(m.ref("err_o"), err_q);
  m.assign(m.ref("err_addr_o"), eaddr_q);
  rtl::sink(m, "unused_bid", {m.ref("m_axi_bid"), ex::bit(m.ref("m_axi_bresp"), 0)});
  wdma_formal(m, c);
  return m;
}

}  // namespace normcore::gen
