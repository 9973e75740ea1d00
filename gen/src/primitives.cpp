#include "primitives.hpp"

#include <algorithm>

#include "normcore/gen/config.hpp"
#include "props.hpp"

namespace normcore::gen {

using ex::lit;

Module ram_module(const RamSpec& spec) {
  const int ab = clog2(std::max(spec.depth, 2));
  Module m;
  m.name = spec.name;
  m.description = spec.description;
  m.in("clk_i", 1);
  const Expr we = m.in("we_i", 1, "write enable");
  const Expr waddr = m.in("waddr_i", ab);
  const Expr wdata = m.in("wdata_i", spec.width);
  const Expr raddr = m.in("raddr_i", ab);
  const Expr rdata_o = m.out("rdata_o", spec.width,
                             spec.out_reg ? "word at raddr_i two cycles before (output register)"
                                          : "word at raddr_i of the previous cycle (held while "
                                            "writing)");
  const Expr mem = m.memory("mem_q", spec.width, spec.depth);
  if (spec.block_attr || spec.read_always) {
    const std::string ba = spec.block_attr ? "ram_style = \"block\"" : "";
    m.attr_last(spec.read_always ? (ba.empty() ? "" : ba + ", ") + "no_rw_check" : ba);
  }
  const Expr rdata = m.reg("rdata_q", spec.width);
  // The synthesis tools' block-RAM template: write and enabled registered read in one clocked
  // block (a read through an always @* would not map to the RAM's output register).
  const Stmt rd = assign(rdata, ex::index(mem, raddr));
  m.always_ff({if_(we, {assign(ex::index(mem, waddr), wdata)}),
               spec.read_always ? rd : if_(ex::lnot(we), {rd})});
  if (spec.out_reg) {
    const Expr rdo = m.reg("rdo_q", spec.width, "output register");
    m.flops({{rdo, rdata, {}}});
    m.assign(rdata_o, rdo);
  } else {
    m.assign(rdata_o, rdata);
  }
  return m;
}

namespace {

// p + 1, wrapping at depth (a plain increment when depth is a power of two).
Expr ptr_inc(const Expr& p, int depth) {
  const int pb = p.width();
  if ((1 << pb) == depth) return p + lit(pb, 1);
  return ex::mux(ex::eq(p, lit(pb, static_cast<std::uint64_t>(depth - 1))), lit(pb, 0),
                 p + lit(pb, 1));
}

void fifo_ports(Module& m, const FifoSpec& spec, int cb) {
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("wr_i", 1, spec.full ? "only while !full_o" : "never when full (the writer counts)");
  m.in("wdata_i", spec.width);
  m.in("rd_i", 1, "pop the head; only while valid_o");
  m.out("rdata_o", spec.width);
  m.out("valid_o", 1);
  if (spec.full) m.out("full_o", 1);
  if (spec.count) m.out("count_o", cb, "words held");
}

}  // namespace

// Pointers and counts in one clocked process; the storage (no reset) written in the RAM
// template's clocked block. The RAM variant reads into rdata_q (the head) whenever the RAM holds
// a word and the head is free or being popped.
Module fifo_module(const FifoSpec& spec) {
  const int d = spec.depth;
  const int pb = std::max(1, clog2(d));
  const int cap = spec.ram ? d + 1 : d;
  const int cb = bits_for(cap);
  Module m;
  m.name = spec.name;
  m.description = spec.description;
  fifo_ports(m, spec, cb);
  const Expr wr = m.ref("wr_i"), rd = m.ref("rd_i");
  const Expr mem = m.memory("mem_q", spec.width, d);
  const Expr wptr = m.reg("wptr_q", pb);
  const Expr rptr = m.reg("rptr_q", pb);
  const Expr cnt = m.reg(spec.ram ? "ram_cnt_q" : "cnt_q", cb, spec.ram ? "words in the RAM" : "");
  Expr pop = rd, head_valid, held = cnt;
  ClockedProcess p;
  p.resets = {{wptr, lit(pb, 0)}, {rptr, lit(pb, 0)}, {cnt, lit(cb, 0)}};
  Block read_port;
  if (spec.ram) {
    const Expr rdata = m.reg("rdata_q", spec.width);
    const Expr ov = m.reg("ov_q", 1, "rdata_q holds the head");
    pop = m.wire("issue", 1, "RAM read into the head register");
    m.assign(pop, ex::ne(cnt, lit(cb, 0)) & (~ov | rd));
    read_port = {if_(pop, {assign(rdata, ex::index(mem, rptr))})};
    p.resets.emplace_back(ov, lit(1, 0));
    p.body.push_back(assign(ov, pop | (ov & ~rd)));
    head_valid = ov;
    held = cnt + ex::zext(ov, cb);
    m.assign(m.ref("rdata_o"), rdata);
  } else {
    head_valid = ex::ne(cnt, lit(cb, 0));
    m.assign(m.ref("rdata_o"), ex::index(mem, rptr));
  }
  Block ports{if_(wr, {assign(ex::index(mem, wptr), m.ref("wdata_i"))})};
  ports.insert(ports.end(), read_port.begin(), read_port.end());
  m.always_ff(std::move(ports),
              spec.ram ? "RAM: write port, registered read port" : "storage: write port");
  p.body.insert(p.body.begin(), {if_(wr, {assign(wptr, ptr_inc(wptr, d))}),
                                 if_(pop, {assign(rptr, ptr_inc(rptr, d))}),
                                 assign(cnt, cnt + ex::zext(wr, cb) - ex::zext(pop, cb))});
  m.process(p);
  m.assign(m.ref("valid_o"), head_valid);
  if (spec.full) m.assign(m.ref("full_o"), ex::eq(held, lit(cb, static_cast<std::uint64_t>(cap))));
  if (spec.count) m.assign(m.ref("count_o"), held);
  fifo_formal(m, cap, held, !spec.ram);
  return m;
}

// The writer never writes a full FIFO, the reader pops only a valid head; the head is held
// until popped; the FIFO itself neither loses, duplicates nor reorders words.
namespace {
void fifo_formal_body(Module& m, int cap, const Expr& held, bool eager_valid, const Expr& rd,
                      bool rd_only_valid, const Expr& also = {}, bool early = false) {
  fv::Formal f(m);
  const Expr wr = m.ref("wr_i"), valid = m.ref("valid_o");
  if (also.valid()) f.add(assume(also));
  Expr wdata = m.ref("wdata_i");
  if (early) {  // the word written a cycle before wr_i counts it
    const Expr weq = f.reg("we", 1, "we_i of the previous cycle");
    const Expr wdq = f.reg("wd", wdata.width(), "wdata_i of the previous cycle");
    f.next(weq, m.ref("we_i"), ex::lit(1, 0));  // no word of the first (reset) cycle
    f.next(wdq, wdata);
    f.add(assume(ex::eq(wr, weq)));
    wdata = wdq;
  }
  if (rd_only_valid) f.add(if_(rd, {assume(valid)}));
  fv::stream_rules(f, {"head", valid, rd_only_valid ? rd : m.ref("rd_i"), {m.ref("rdata_o")}},
                   false);
  const Expr cnt = fv::channel(
      f, {"q", wr, wdata, rd, m.ref("rdata_o"), cap, held, eager_valid ? valid : Expr{}});
  f.add(if_(wr, {assume(ex::lt(cnt, lit(cnt.width(), static_cast<std::uint64_t>(cap))))}));
  f.done();
}
}  // namespace

void fifo_formal(Module& m, int cap, const Expr& held, bool eager_valid, const Expr& also) {
  fifo_formal_body(m, cap, held, eager_valid, m.ref("rd_i"), true, also);
}

void fifo_formal_ready(Module& m, int cap, const Expr& held, const Expr& pop, const Expr& also,
                       bool early) {
  fifo_formal_body(m, cap, held, true, pop, false, also, early);
}

// out_q is the output register, skid_q catches the beat accepted while the output stalls (the
// input saw in_ready_o = !skid_valid_q, a flop). Either the input or the skid loads the output.
Module skid_module(const SkidSpec& spec) {
  const int w = spec.width;
  Module m;
  m.name = spec.name;
  m.description = spec.description;
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr in_valid = m.in("in_valid_i", 1);
  const Expr in_ready = m.out("in_ready_o", 1, "a flop: !skid_valid_q");
  const Expr in_data = m.in("in_data_i", w);
  const Expr out_valid = m.out("out_valid_o", 1);
  const Expr out_ready = m.in("out_ready_i", 1);
  const Expr out_data = m.out("out_data_o", w);
  const Expr ov = m.reg("out_valid_q", 1);
  const Expr od = m.reg("out_data_q", w);
  const Expr sv = m.reg("skid_valid_q", 1, "a beat waits in skid_data_q");
  const Expr sd = m.reg("skid_data_q", w);
  const Expr load = m.wire("load", 1, "the output register takes a beat (or empties)");
  m.assign(load, out_ready | ~ov);
  ClockedProcess p;
  p.resets = {{ov, lit(1, 0)}, {sv, lit(1, 0)}};
  p.body = {if_(load, {assign(ov, in_valid | sv), assign(sv, lit(1, 0))},
                {if_(in_valid & ~sv, {assign(sv, lit(1, 1))})})};
  p.always = {if_(load, {assign(od, ex::mux(sv, sd, in_data))}),
              if_(~sv & ~load, {assign(sd, in_data)})};
  p.comment = "Output register loads from the skid first, else from the input";
  m.process(p);
  m.assign(in_ready, ~sv);
  m.assign(out_valid, ov);
  m.assign(out_data, od);
  fv::Formal f(m);
  fv::stream_rules(f, {"in", in_valid, in_ready, {in_data}}, true);
  fv::stream_rules(f, {"out", out_valid, out_ready, {out_data}}, false);
  fv::channel(f, {"q",
                  in_valid & in_ready,
                  in_data,
                  out_valid & out_ready,
                  out_data,
                  2,
                  ex::zext(ov, 2) + ex::zext(sv, 2),
                  {}});
  f.done();
  return m;
}

}  // namespace normcore::gen
