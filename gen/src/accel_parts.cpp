// Building blocks of the accelerator: FIFOs, gearboxes, the read and write DMA engines.
#include <numeric>

#include "accel_parts.hpp"
#include "vexpr.hpp"

namespace normcore::gen {

using v::bit;
using v::fit;
using v::lit;
using v::part;
using v::sext;
using v::zext;

namespace {

// ptr + 1, wrapping at depth (a plain increment when depth is a power of two).
std::string ptr_inc(const std::string& p, int pb, int depth) {
  if ((1 << pb) == depth) return p + " + " + lit(pb, 1);
  return "(" + p + " == " + lit(pb, static_cast<unsigned long long>(depth - 1)) + ") ? " +
         lit(pb, 0) + " : " + p + " + " + lit(pb, 1);
}

int pow2_gcd(int pow2, int other) {
  int g = 1;
  while (g < pow2 && other % (g * 2) == 0) g *= 2;
  return g;
}


}  // namespace

std::string popcount(Module& m, const std::string& prefix, const std::string& net, int width,
                     int out_bits) {
  std::vector<std::string> terms;
  for (int i = 0; i < width; ++i) terms.push_back(zext(bit(net, width, i), 1, out_bits));
  int level = 0;
  while (terms.size() > 1) {
    std::vector<std::string> next;
    for (std::size_t i = 0; i < terms.size(); i += 2) {
      if (i + 1 == terms.size()) {
        next.push_back(terms[i]);
        continue;
      }
      const std::string w = prefix + "_" + std::to_string(level) + "_" + std::to_string(i / 2);
      m.wire(w, out_bits);
      m.assign(w, terms[i] + " + " + terms[i + 1]);
      next.push_back(w);
    }
    terms = std::move(next);
    ++level;
  }
  return terms[0];
}

// ---------------------------------------------------------------------------------------------
Module build_ram_fifo(const std::string& name, int width, int depth) {
  const int pb = std::max(1, clog2(depth));
  const int cb = bits_for(depth + 1);
  Module m;
  m.name = name;
  m.description = {"FIFO of " + std::to_string(depth) + " words in a RAM with a registered read,",
                   "plus the RAM output register as the head (capacity " +
                       std::to_string(depth + 1) + "). First word out two cycles after it",
                   "is written; then one word per cycle."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("wr_i", 1, "never when full (callers count credits)");
  m.in("wdata_i", width);
  m.in("rd_i", 1, "pop the head; only while valid_o");
  m.out("rdata_o", width);
  m.out("valid_o", 1);
  m.out("count_o", cb, "words held");
  m.memory("mem_q", width, depth);
  m.reg("rdata_q", width);
  m.reg("wptr_q", pb);
  m.reg("rptr_q", pb);
  m.reg("ram_cnt_q", cb, "words in the RAM");
  m.reg("ov_q", 1, "rdata_q holds the head");
  m.wire("issue", 1, "RAM read into the head register");
  m.assign("issue", "(ram_cnt_q != " + lit(cb, 0) + ") & (~ov_q | rd_i)");
  m.always_ff({if_("wr_i", {assign("mem_q[wptr_q]", "wdata_i")}),
               if_("issue", {assign("rdata_q", "mem_q[rptr_q]")})});
  m.always_ff({if_("!rst_ni",
                   {assign("wptr_q", lit(pb, 0)), assign("rptr_q", lit(pb, 0)),
                    assign("ram_cnt_q", lit(cb, 0)), assign("ov_q", "1'b0")},
                   {if_("wr_i", {assign("wptr_q", ptr_inc("wptr_q", pb, depth))}),
                    if_("issue", {assign("rptr_q", ptr_inc("rptr_q", pb, depth))}),
                    assign("ram_cnt_q",
                           "ram_cnt_q + " + zext("wr_i", 1, cb) + " - " + zext("issue", 1, cb)),
                    assign("ov_q", "issue | (ov_q & ~rd_i)")})});
  m.assign("rdata_o", "rdata_q");
  m.assign("valid_o", "ov_q");
  m.assign("count_o", "ram_cnt_q + " + zext("ov_q", 1, cb));
  return m;
}

Module build_flop_fifo(const std::string& name, int width, int depth) {
  const int pb = std::max(1, clog2(depth));
  const int cb = bits_for(depth);
  Module m;
  m.name = name;
  m.description = {"FIFO of " + std::to_string(depth) + " entries in flip-flops; the head is combinational."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("wr_i", 1, "only while !full_o");
  m.in("wdata_i", width);
  m.in("rd_i", 1, "only while valid_o");
  m.out("rdata_o", width);
  m.out("valid_o", 1);
  m.out("full_o", 1);
  m.memory("mem_q", width, depth);
  m.reg("wptr_q", pb);
  m.reg("rptr_q", pb);
  m.reg("cnt_q", cb);
  m.always_ff({if_("wr_i", {assign("mem_q[wptr_q]", "wdata_i")})});
  m.always_ff({if_("!rst_ni",
                   {assign("wptr_q", lit(pb, 0)), assign("rptr_q", lit(pb, 0)),
                    assign("cnt_q", lit(cb, 0))},
                   {if_("wr_i", {assign("wptr_q", ptr_inc("wptr_q", pb, depth))}),
                    if_("rd_i", {assign("rptr_q", ptr_inc("rptr_q", pb, depth))}),
                    assign("cnt_q", "cnt_q + " + zext("wr_i", 1, cb) + " - " + zext("rd_i", 1, cb))})});
  m.assign("rdata_o", "mem_q[rptr_q]");
  m.assign("valid_o", "cnt_q != " + lit(cb, 0));
  m.assign("full_o", "cnt_q == " + lit(cb, static_cast<unsigned long long>(depth)));
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_gear_in(const std::string& name, int in_bits, int ew, int k, int count_bits) {
  const int kew = k * ew;
  const int g = pow2_gcd(in_bits, kew);
  const int lg = clog2(g);
  const int cap = in_bits + kew;
  const int capu = cap / g, au = in_bits / g, ku = kew / g;
  const int fw = bits_for(capu);
  const int nb = bits_for(kew);  // holds a bit count up to k*ew
  const int tc = count_bits;
  Module m;
  m.name = name;
  m.description = {"Gearbox: " + std::to_string(in_bits) + "-bit words in, groups of " +
                       std::to_string(k) + " x " + std::to_string(ew) + "-bit elements out.",
                   "start_i loads the element count; the final group may be partial (keep, last);",
                   "padding after the final element is dropped. Fill is kept in " +
                       std::to_string(g) + "-bit units."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1);
  m.in("total_i", tc, "elements in the stream");
  m.in("in_valid_i", 1);
  m.out("in_ready_o", 1);
  m.in("in_data_i", in_bits);
  m.out("out_valid_o", 1);
  m.in("out_ready_i", 1);
  m.out("out_data_o", kew);
  m.out("out_keep_o", k);
  m.out("out_last_o", 1);
  m.reg("buf_q", cap);
  m.reg("fill_q", fw, "units held");
  m.reg("left_q", tc, "elements still to emit");
  m.wire("fill_bits", fw + lg);
  m.assign("fill_bits", lg > 0 ? "{fill_q, " + lit(lg, 0) + "}" : "fill_q");
  m.wire("need", nb, "bits the next group needs");
  m.wire("few", 1, "fewer than " + std::to_string(k) + " elements left");
  if (k == 1) {
    m.assign("few", "1'b0");
    m.assign("need", lit(nb, static_cast<unsigned long long>(kew)));
    m.assign("out_keep_o", "1'b1");
    m.wire("unused_few", 1);
    m.assign("unused_few", "few");
  } else {
    const int kb = bits_for(k);
    m.assign("few", "left_q < " + lit(tc, static_cast<unsigned long long>(k)));
    m.wire("left_few", kb);
    m.assign("left_few", fit("left_q", tc, kb));
    m.assign("need", "few ? " + zext("left_few", kb, nb) + " * " +
                         lit(nb, static_cast<unsigned long long>(ew)) + " : " +
                         lit(nb, static_cast<unsigned long long>(kew)));
    m.assign("out_keep_o", "few ? (" + lit(k, 1) + " << left_few) - " + lit(k, 1) + " : {" +
                               std::to_string(k) + "{1'b1}}");
  }
  const int cw = std::max(fw + lg, nb);
  m.assign("out_valid_o", "(left_q != " + lit(tc, 0) + ") & (" + zext("fill_bits", fw + lg, cw) +
                              " >= " + zext("need", nb, cw) + ")");
  m.assign("out_last_o", "left_q <= " + lit(tc, static_cast<unsigned long long>(k)));
  m.assign("out_data_o", part("buf_q", cap, 0, kew));
  m.assign("in_ready_o", "fill_q <= " + lit(fw, static_cast<unsigned long long>(ku)));
  m.wire("pop", 1);
  m.assign("pop", "out_valid_o & out_ready_i");
  m.wire("push", 1);
  m.assign("push", "in_valid_i & in_ready_o");
  m.wire("fill_after", fw, "after this cycle's pop");
  m.assign("fill_after", "pop ? fill_q - " + lit(fw, static_cast<unsigned long long>(ku)) + " : fill_q");
  m.wire("buf_kept", cap);
  m.assign("buf_kept", "pop ? buf_q >> " + std::to_string(kew) + " : buf_q");
  m.wire("in_shifted", cap);
  const std::string amount = lg > 0 ? "{fill_after, " + lit(lg, 0) + "}" : "fill_after";
  m.assign("in_shifted", zext("in_data_i", in_bits, cap) + " << " + amount);
  m.always_ff({if_("!rst_ni | start_i",
                   {assign("buf_q", lit(cap, 0)), assign("fill_q", lit(fw, 0)),
                    assign("left_q", "start_i ? total_i : " + lit(tc, 0))},
                   {if_("pop & out_last_o",
                        {assign("buf_q", lit(cap, 0)), assign("fill_q", lit(fw, 0)),
                         assign("left_q", lit(tc, 0))},
                        {assign("buf_q", "buf_kept | (push ? in_shifted : " + lit(cap, 0) + ")"),
                         assign("fill_q", "fill_after + (push ? " +
                                              lit(fw, static_cast<unsigned long long>(au)) +
                                              " : " + lit(fw, 0) + ")"),
                         if_("pop", {assign("left_q", "left_q - " +
                                                          lit(tc, static_cast<unsigned long long>(k)))})})})});
  (void)capu;
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_gear_out(const std::string& name, int out_bits, int ew, int k) {
  const int kew = k * ew;
  const int g = pow2_gcd(out_bits, kew);
  const int lg = clog2(g);
  const int cap = out_bits + kew;
  const int au = out_bits / g, ku = kew / g;
  const int fw = bits_for(cap / g);
  const int nb = bits_for(kew + g);
  const int kb = bits_for(k);
  Module m;
  m.name = name;
  m.description = {"Gearbox: groups of " + std::to_string(k) + " x " + std::to_string(ew) +
                       "-bit elements in (keep, last), " + std::to_string(out_bits) +
                       "-bit words out.",
                   "After the group with last, the remaining bits leave as a final partial word."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("in_valid_i", 1);
  m.out("in_ready_o", 1);
  m.in("in_data_i", kew, "elements beyond keep must be zero");
  m.in("in_keep_i", k, "contiguous from element 0");
  m.in("in_last_i", 1);
  m.out("out_valid_o", 1);
  m.in("out_ready_i", 1);
  m.out("out_data_o", out_bits);
  m.reg("buf_q", cap);
  m.reg("fill_q", fw, "units held");
  m.reg("flush_q", 1, "the last group is in: drain everything");
  m.assign("in_ready_o", "~flush_q & (fill_q <= " + lit(fw, static_cast<unsigned long long>(au)) + ")");
  m.assign("out_valid_o", "(fill_q >= " + lit(fw, static_cast<unsigned long long>(au)) +
                              ") | (flush_q & (fill_q != " + lit(fw, 0) + "))");
  m.assign("out_data_o", part("buf_q", cap, 0, out_bits));
  m.wire("pop", 1);
  m.assign("pop", "out_valid_o & out_ready_i");
  m.wire("push", 1);
  m.assign("push", "in_valid_i & in_ready_o");
  m.wire("fill_after", fw);
  m.assign("fill_after", "pop ? ((fill_q >= " + lit(fw, static_cast<unsigned long long>(au)) +
                             ") ? fill_q - " + lit(fw, static_cast<unsigned long long>(au)) +
                             " : " + lit(fw, 0) + ") : fill_q");
  // Units a group adds: all k elements, or ceil(count * ew / g) for the last one.
  const std::string cnt = popcount(m, "keep_pc", "in_keep_i", k, kb);
  m.wire("cnt", kb, "elements in this group");
  m.assign("cnt", cnt);
  m.wire("last_bits", nb);
  m.assign("last_bits", zext("cnt", kb, nb) + " * " + lit(nb, static_cast<unsigned long long>(ew)) +
                            " + " + lit(nb, static_cast<unsigned long long>(g - 1)));
  m.wire("add_units", fw);
  const int ub = nb - lg;  // bits of last_bits >> lg
  m.assign("add_units", "in_last_i ? " + fit(lg > 0 ? "last_units" : "last_bits", ub, fw) + " : " +
                            lit(fw, static_cast<unsigned long long>(ku)));
  if (lg > 0) {
    m.wire("last_units", ub);
    m.assign("last_units", part("last_bits", nb, lg, ub));
    m.wire("unused_last_bits", 1);
    m.assign("unused_last_bits", "^" + part("last_bits", nb, 0, lg));
  }
  m.wire("buf_kept", cap);
  m.assign("buf_kept", "pop ? buf_q >> " + std::to_string(out_bits) + " : buf_q");
  m.wire("in_shifted", cap);
  const std::string amount = lg > 0 ? "{fill_after, " + lit(lg, 0) + "}" : "fill_after";
  m.assign("in_shifted", zext("in_data_i", kew, cap) + " << " + amount);
  m.wire("fill_next", fw);
  m.assign("fill_next", "fill_after + (push ? add_units : " + lit(fw, 0) + ")");
  m.always_ff({if_("!rst_ni",
                   {assign("buf_q", lit(cap, 0)), assign("fill_q", lit(fw, 0)),
                    assign("flush_q", "1'b0")},
                   {assign("buf_q", "buf_kept | (push ? in_shifted : " + lit(cap, 0) + ")"),
                    assign("fill_q", "fill_next"),
                    if_("push & in_last_i", {assign("flush_q", "1'b1")},
                        {if_("fill_next == " + lit(fw, 0), {assign("flush_q", "1'b0")})})})});
  return m;
}

}  // namespace normcore::gen

namespace normcore::gen {

namespace {

// Shared burst sizing: len = min(max_burst, words to the next 4 KiB boundary, words left).
// Adds wires <p>_len (lb bits) to m.
void burst_len(Module& m, const AccelConfig& c, const std::string& p, const std::string& addr,
               const std::string& left, int wb, int lb) {
  const int aw = c.addr_bits;
  const int bl = clog2(c.bus_bytes());
  const int wpb = 4096 / c.bus_bytes();  // words per 4 KiB
  const int ob = 12 - bl;                 // bits of the word offset inside 4 KiB
  m.wire(p + "_to4k", lb, "words to the next 4 KiB boundary");
  m.assign(p + "_to4k", lit(lb, static_cast<unsigned long long>(wpb)) + " - " +
                            zext(part(addr, aw, bl, ob), ob, lb));
  m.wire(p + "_cap", lb);
  m.assign(p + "_cap", "(" + p + "_to4k < " + lit(lb, static_cast<unsigned long long>(c.max_burst)) +
                           ") ? " + p + "_to4k : " +
                           lit(lb, static_cast<unsigned long long>(c.max_burst)));
  m.wire(p + "_len", lb, "words in the next burst");
  const int cw = std::max(wb, lb);
  m.assign(p + "_len", "(" + zext(left, wb, cw) + " < " + zext(p + "_cap", lb, cw) + ") ? " +
                           fit(left, wb, lb) + " : " + p + "_cap");
}

void axi_consts(Module& m, const AccelConfig& c, const std::string& ch) {
  const int bl = clog2(c.bus_bytes());
  m.assign("m_axi_" + ch + "id", lit(c.id_bits, 0));
  m.assign("m_axi_" + ch + "size", lit(3, static_cast<unsigned long long>(bl)), "full bus width");
  m.assign("m_axi_" + ch + "burst", "2'b01", "INCR");
  m.assign("m_axi_" + ch + "lock", "1'b0");
  m.assign("m_axi_" + ch + "cache", "4'b0011", "normal, non-cacheable, bufferable");
  m.assign("m_axi_" + ch + "prot", "3'b000");
}

void axi_addr_ports(Module& m, const AccelConfig& c, const std::string& ch) {
  m.out("m_axi_" + ch + "id", c.id_bits);
  m.out("m_axi_" + ch + "addr", c.addr_bits);
  m.out("m_axi_" + ch + "len", 8);
  m.out("m_axi_" + ch + "size", 3);
  m.out("m_axi_" + ch + "burst", 2);
  m.out("m_axi_" + ch + "lock", 1);
  m.out("m_axi_" + ch + "cache", 4);
  m.out("m_axi_" + ch + "prot", 3);
  m.out("m_axi_" + ch + "valid", 1);
  m.in("m_axi_" + ch + "ready", 1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Module build_rdma(const AccelConfig& c, const std::string& name, int wb, int crb) {
  const int aw = c.addr_bits;
  const int bl = clog2(c.bus_bytes());
  const int lb = bits_for(std::max(c.max_burst, 4096 / c.bus_bytes()));
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
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "only while idle_o");
  m.in("addr_i", aw, "bus-aligned");
  m.in("words_i", wb);
  m.in("abort_i", 1, "issue nothing more");
  m.in("credit_i", crb, "free words in the consumer FIFO");
  axi_addr_ports(m, c, "ar");
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

  m.reg("ar_valid_q", 1);
  m.reg("ar_addr_q", aw);
  m.reg("ar_len_q", 8);
  m.reg("addr_q", aw, "next burst address");
  m.reg("left_q", wb, "words not yet requested");
  m.reg("infl_q", crb, "beats requested, not yet received");
  m.reg("out_q", ob, "bursts outstanding");
  m.reg("rbase_q", aw);
  m.reg("rcnt_q", wb, "beats received");
  m.reg("err_q", 1);
  m.reg("eaddr_q", aw);
  burst_len(m, c, "b", "addr_q", "left_q", wb, lb);
  m.wire("room", 1, "consumer can take this burst on top of the beats in flight");
  const int rw = std::max(crb, lb) + 1;
  m.assign("room", zext("credit_i", crb, rw) + " >= " + zext("infl_q", crb, rw) + " + " +
                       zext("b_len", lb, rw));
  m.wire("issue", 1);
  m.assign("issue", "~ar_valid_q & (left_q != " + lit(wb, 0) + ") & ~abort_i & ~err_q & (out_q < " +
                        lit(ob, static_cast<unsigned long long>(c.outstanding)) + ") & room");
  m.wire("rfire", 1);
  m.assign("rfire", "m_axi_rvalid");
  m.wire("rerr", 1);
  m.assign("rerr", "rfire & m_axi_rresp[1]");
  m.always_ff({if_(
      "!rst_ni",
      {assign("ar_valid_q", "1'b0"), assign("left_q", lit(wb, 0)), assign("infl_q", lit(crb, 0)),
       assign("out_q", lit(ob, 0)), assign("err_q", "1'b0")},
      {if_("start_i",
           {assign("addr_q", "addr_i"), assign("left_q", "words_i"), assign("rbase_q", "addr_i"),
            assign("rcnt_q", lit(wb, 0)), assign("err_q", "1'b0")},
           {if_("issue",
                {assign("ar_valid_q", "1'b1"), assign("ar_addr_q", "addr_q"),
                 assign("ar_len_q", fit("b_len", lb, 8) + " - 8'd1"),
                 assign("addr_q", "addr_q + (" + zext("b_len", lb, aw) + " << " +
                                      std::to_string(bl) + ")"),
                 assign("left_q", "left_q - " + zext("b_len", lb, wb))},
                {if_("m_axi_arready", {assign("ar_valid_q", "1'b0")})}),
            if_("rfire", {assign("rcnt_q", "rcnt_q + " + lit(wb, 1))}),
            if_("rerr & ~err_q",
                {assign("err_q", "1'b1"),
                 assign("eaddr_q", "rbase_q + (" + fit("rcnt_q", wb, aw) + " << " +
                                       std::to_string(bl) + ")")})}),
       assign("infl_q", "infl_q + (issue ? " + fit("b_len", lb, crb) + " : " + lit(crb, 0) +
                            ") - " + zext("rfire", 1, crb)),
       assign("out_q", "out_q + " + zext("issue", 1, ob) + " - " +
                           zext("(rfire & m_axi_rlast)", 1, ob))})});
  m.assign("m_axi_arvalid", "ar_valid_q");
  m.assign("m_axi_araddr", "ar_addr_q");
  m.assign("m_axi_arlen", "ar_len_q");
  axi_consts(m, c, "ar");
  m.assign("m_axi_rready", "1'b1", "credits guarantee room");
  m.assign("data_valid_o", "rfire & ~err_q & ~rerr");
  m.assign("data_o", "m_axi_rdata");
  m.assign("idle_o", "~ar_valid_q & (out_q == " + lit(ob, 0) + ")");
  m.assign("done_o", "idle_o & (left_q == " + lit(wb, 0) + ")");
  m.assign("err_o", "err_q");
  m.assign("err_addr_o", "eaddr_q");
  m.wire("unused_rid", 1);
  m.assign("unused_rid", "^{m_axi_rid, m_axi_rresp[0]}");
  return m;
}

// ---------------------------------------------------------------------------------------------
Module build_wdma(const AccelConfig& c, const std::string& name, int wb, int fcb) {
  const int aw = c.addr_bits;
  const int bb = c.bus_bytes();
  const int bl = clog2(bb);
  const int lb = bits_for(std::max(c.max_burst, 4096 / bb));
  Module m;
  m.name = name;
  m.description = {
      "Write DMA: writes `words` bus words to `addr` in INCR bursts that never cross 4 KiB.",
      "A burst's address goes out only once all its data waits in the FIFO, so W never stalls",
      "the interconnect; up to " + std::to_string(std::max(2, c.outstanding)) +
          " bursts await their response. WSTRB of the last word covers",
      "exactly the job's bytes. A SLVERR/DECERR stops new bursts; issued ones complete."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("start_i", 1, "only while idle_o");
  m.in("addr_i", aw);
  m.in("words_i", wb);
  m.in("last_strb_i", bb, "byte strobes of the final word");
  m.in("abort_i", 1);
  m.in("fifo_count_i", fcb, "words waiting in the FIFO");
  m.in("fifo_valid_i", 1);
  m.in("fifo_data_i", c.bus_bits);
  m.out("fifo_pop_o", 1);
  axi_addr_ports(m, c, "aw");
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

  m.reg("aw_valid_q", 1);
  m.reg("aw_addr_q", aw);
  m.reg("aw_len_q", 8);
  m.reg("addr_q", aw);
  m.reg("left_q", wb, "words not yet covered by a burst");
  m.reg("owed_q", fcb, "words of issued bursts not yet sent");
  m.reg("words_q", wb);
  m.reg("sent_q", wb, "words sent");
  m.reg("beat_q", 8, "beat inside the current burst");
  m.reg("err_q", 1);
  m.reg("eaddr_q", aw);
  burst_len(m, c, "b", "addr_q", "left_q", wb, lb);
  m.wire("lenq_valid", 1);
  m.wire("lenq_head", 8);
  m.wire("lenq_full", 1);
  m.wire("adrq_valid", 1);
  m.wire("adrq_head", aw);
  m.wire("adrq_full", 1);
  m.wire("have", 1, "the FIFO holds the next burst's data");
  const int hw = std::max(fcb, lb) + 1;
  m.assign("have", zext("fifo_count_i", fcb, hw) + " >= " + zext("owed_q", fcb, hw) + " + " +
                       zext("b_len", lb, hw));
  m.wire("issue", 1);
  m.assign("issue", "~aw_valid_q & (left_q != " + lit(wb, 0) +
                        ") & ~abort_i & ~err_q & ~adrq_full & ~lenq_full & have");
  m.wire("wfire", 1);
  m.assign("wfire", "m_axi_wvalid & m_axi_wready");
  m.wire("bfire", 1);
  m.assign("bfire", "m_axi_bvalid");
  m.assign("m_axi_wvalid", "fifo_valid_i & lenq_valid");
  m.assign("m_axi_wlast", "beat_q == lenq_head");
  m.assign("m_axi_wdata", "fifo_data_i");
  m.assign("m_axi_wstrb", "(sent_q == words_q - " + lit(wb, 1) + ") ? last_strb_i : {" +
                              std::to_string(bb) + "{1'b1}}");
  m.assign("fifo_pop_o", "wfire");
  m.always_ff({if_(
      "!rst_ni",
      {assign("aw_valid_q", "1'b0"), assign("left_q", lit(wb, 0)), assign("owed_q", lit(fcb, 0)),
       assign("beat_q", "8'd0"), assign("err_q", "1'b0")},
      {if_("start_i",
           {assign("addr_q", "addr_i"), assign("left_q", "words_i"), assign("words_q", "words_i"),
            assign("sent_q", lit(wb, 0)), assign("err_q", "1'b0")},
           {if_("issue",
                {assign("aw_valid_q", "1'b1"), assign("aw_addr_q", "addr_q"),
                 assign("aw_len_q", fit("b_len", lb, 8) + " - 8'd1"),
                 assign("addr_q", "addr_q + (" + zext("b_len", lb, aw) + " << " +
                                      std::to_string(bl) + ")"),
                 assign("left_q", "left_q - " + zext("b_len", lb, wb))},
                {if_("m_axi_awready", {assign("aw_valid_q", "1'b0")})}),
            if_("wfire", {assign("sent_q", "sent_q + " + lit(wb, 1)),
                          assign("beat_q", "m_axi_wlast ? 8'd0 : beat_q + 8'd1")}),
            if_("bfire & m_axi_bresp[1] & ~err_q",
                {assign("err_q", "1'b1"), assign("eaddr_q", "adrq_head")})}),
       assign("owed_q", "owed_q + (issue ? " + fit("b_len", lb, fcb) + " : " + lit(fcb, 0) +
                            ") - " + zext("wfire", 1, fcb))})});
  m.instance(Instance{name + "_lenq",
                      "u_lenq",
                      {{"clk_i", "clk_i"},
                       {"rst_ni", "rst_ni"},
                       {"wr_i", "issue"},
                       {"wdata_i", fit("b_len", lb, 8) + " - 8'd1"},
                       {"rd_i", "wfire & m_axi_wlast"},
                       {"rdata_o", "lenq_head"},
                       {"valid_o", "lenq_valid"},
                       {"full_o", "lenq_full"}},
                      "burst lengths whose data is still to be sent"});
  m.instance(Instance{name + "_adrq",
                      "u_adrq",
                      {{"clk_i", "clk_i"},
                       {"rst_ni", "rst_ni"},
                       {"wr_i", "issue"},
                       {"wdata_i", "addr_q"},
                       {"rd_i", "bfire"},
                       {"rdata_o", "adrq_head"},
                       {"valid_o", "adrq_valid"},
                       {"full_o", "adrq_full"}},
                      "addresses of bursts awaiting their response"});
  m.assign("m_axi_awvalid", "aw_valid_q");
  m.assign("m_axi_awaddr", "aw_addr_q");
  m.assign("m_axi_awlen", "aw_len_q");
  axi_consts(m, c, "aw");
  m.assign("m_axi_bready", "1'b1");
  m.assign("idle_o", "~aw_valid_q & ~adrq_valid");
  m.assign("done_o", "idle_o & (left_q == " + lit(wb, 0) + ")");
  m.assign("err_o", "err_q");
  m.assign("err_addr_o", "eaddr_q");
  m.wire("unused_bid", 1);
  m.assign("unused_bid", "^{m_axi_bid, m_axi_bresp[0]}");
  return m;
}

}  // namespace normcore::gen
