// The accelerator's FIFOs: a RAM FIFO with a registered read (read and write buffers) and a
// small flop FIFO (the write DMA's queues). The gearboxes and the burst issuer are in
// prim_axi.cpp, the DMA engines in accel_dma.cpp.
#include "accel_parts.hpp"

#include "rtl_util.hpp"

namespace normcore::gen {

namespace {

using ex::lit;

// p + 1, wrapping at depth (a plain increment when depth is a power of two).
Expr ptr_inc(const Expr& p, int depth) {
  const int pb = p.width();
  if ((1 << pb) == depth) return p + lit(pb, 1);
  return ex::mux(ex::eq(p, lit(pb, static_cast<std::uint64_t>(depth - 1))), lit(pb, 0),
                 p + lit(pb, 1));
}

}  // namespace

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
  const Expr wr = m.in("wr_i", 1, "never when full (callers count credits)");
  const Expr wdata = m.in("wdata_i", width);
  const Expr rd = m.in("rd_i", 1, "pop the head; only while valid_o");
  m.out("rdata_o", width);
  m.out("valid_o", 1);
  m.out("count_o", cb, "words held");
  const Expr mem = m.memory("mem_q", width, depth);
  const Expr rdata_q = m.reg("rdata_q", width);
  const Expr wptr_q = m.reg("wptr_q", pb);
  const Expr rptr_q = m.reg("rptr_q", pb);
  const Expr cnt_q = m.reg("ram_cnt_q", cb, "words in the RAM");
  const Expr ov_q = m.reg("ov_q", 1, "rdata_q holds the head");
  const Expr issue = m.wire("issue", 1, "RAM read into the head register");
  m.assign(issue, ex::ne(cnt_q, lit(cb, 0)) & (~ov_q | rd));
  // The RAM's ports stay one clocked block (a synchronous write and a registered read) so that
  // synthesis maps them to block RAM.
  m.always_ff({if_(wr, {assign(ex::index(mem, wptr_q), wdata)}),
               if_(issue, {assign(rdata_q, ex::index(mem, rptr_q))})},
              "RAM: write port, registered read port");
  rtl::Process p;
  p.resets = {{wptr_q, lit(pb, 0)}, {rptr_q, lit(pb, 0)}, {cnt_q, lit(cb, 0)}, {ov_q, lit(1, 0)}};
  p.body = {if_(wr, {assign(wptr_q, ptr_inc(wptr_q, depth))}),
            if_(issue, {assign(rptr_q, ptr_inc(rptr_q, depth))}),
            assign(cnt_q, cnt_q + ex::zext(wr, cb) - ex::zext(issue, cb)),
            assign(ov_q, issue | (ov_q & ~rd))};
  rtl::process(m, p);
  m.assign(m.ref("rdata_o"), rdata_q);
  m.assign(m.ref("valid_o"), ov_q);
  m.assign(m.ref("count_o"), cnt_q + ex::zext(ov_q, cb));
  return m;
}

Module build_flop_fifo(const std::string& name, int width, int depth) {
  const int pb = std::max(1, clog2(depth));
  const int cb = bits_for(depth);
  Module m;
  m.name = name;
  m.description = {"FIFO of " + std::to_string(depth) +
                   " entries in flip-flops; the head is combinational."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr wr = m.in("wr_i", 1, "only while !full_o");
  const Expr wdata = m.in("wdata_i", width);
  const Expr rd = m.in("rd_i", 1, "only while valid_o");
  m.out("rdata_o", width);
  m.out("valid_o", 1);
  m.out("full_o", 1);
  const Expr mem = m.memory("mem_q", width, depth);
  const Expr wptr_q = m.reg("wptr_q", pb);
  const Expr rptr_q = m.reg("rptr_q", pb);
  const Expr cnt_q = m.reg("cnt_q", cb);
  m.always_ff({if_(wr, {assign(ex::index(mem, wptr_q), wdata)})}, "storage: write port");
  rtl::Process p;
  p.resets = {{wptr_q, lit(pb, 0)}, {rptr_q, lit(pb, 0)}, {cnt_q, lit(cb, 0)}};
  p.body = {if_(wr, {assign(wptr_q, ptr_inc(wptr_q, depth))}),
            if_(rd, {assign(rptr_q, ptr_inc(rptr_q, depth))}),
            assign(cnt_q, cnt_q + ex::zext(wr, cb) - ex::zext(rd, cb))};
  rtl::process(m, p);
  m.assign(m.ref("rdata_o"), ex::index(mem, rptr_q));
  m.assign(m.ref("valid_o"), ex::ne(cnt_q, lit(cb, 0)));
  m.assign(m.ref("full_o"), ex::eq(cnt_q, lit(cb, static_cast<std::uint64_t>(depth))));
  return m;
}

}  // namespace normcore::gen
