#include "primitives.hpp"

#include <algorithm>

#include "normcore/gen/config.hpp"

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
  const Expr rdata_o =
      m.out("rdata_o", spec.width, "word at raddr_i of the previous cycle (held while writing)");
  const Expr mem = m.memory("mem_q", spec.width, spec.depth);
  if (spec.block_attr) m.attr_last("ram_style = \"block\"");
  const Expr rdata = m.reg("rdata_q", spec.width);
  // The synthesis tools' block-RAM template: write and enabled registered read in one clocked
  // block (a read through an always @* would not map to the RAM's output register).
  m.always_ff({if_(we, {assign(ex::index(mem, waddr), wdata)}),
               if_(ex::lnot(we), {assign(rdata, ex::index(mem, raddr))})});
  m.assign(rdata_o, rdata);
  return m;
}

Module fifo_module(const FifoSpec& spec) {
  const int d = spec.depth;
  const int pt = std::max(1, clog2(d));
  const int cn = bits_for(d);
  Module m;
  m.name = spec.name;
  m.description = spec.description;
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr wr = m.in("wr_i", 1);
  const Expr wdata = m.in("wdata_i", spec.width);
  const Expr rd = m.in("rd_i", 1, "only while valid_o");
  const Expr rdata = m.out("rdata_o", spec.width);
  const Expr valid = m.out("valid_o", 1);
  const Expr mem = m.memory("mem_q", spec.width, d);
  const Expr wptr = m.reg("wptr_q", pt);
  const Expr rptr = m.reg("rptr_q", pt);
  const Expr cnt = m.reg("cnt_q", cn);
  const Expr last = lit(pt, static_cast<std::uint64_t>(d - 1));
  const auto next = [&](const Expr& p) {
    return ex::mux(ex::eq(p, last), lit(pt, 0), p + lit(pt, 1));
  };
  m.seq({if_(ex::lnot(m.ref("rst_ni")),
             {assign(wptr, lit(pt, 0)), assign(rptr, lit(pt, 0)), assign(cnt, lit(cn, 0))},
             {if_(wr, {assign(wptr, next(wptr))}), if_(rd, {assign(rptr, next(rptr))}),
              assign(cnt, cnt + ex::zext(wr, cn) - ex::zext(rd, cn))})});
  // The storage (no reset): written in the RAM template's clocked block.
  m.always_ff({if_(wr, {assign(ex::index(mem, wptr), wdata)})});
  m.assign(rdata, ex::index(mem, rptr));
  m.assign(valid, ex::ne(cnt, lit(cn, 0)));
  return m;
}

}  // namespace normcore::gen
