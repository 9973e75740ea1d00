// The core's output buffer <n>_fifo: a first-word-fall-through FIFO whose valid_o is a register
// and whose read and write pointers step to registered next values (no increment or wrap compare
// between rd_i and the storage's read address).
#include "core_internal.hpp"

namespace normcore::gen::core {

using ex::lit;
using ex::mux;
using ex::zext;

Module build_out_fifo(const CoreConfig& c, const Variant& v) {
  const int d = v.fifo_depth(c);
  const int fw = c.lanes * c.arith.yw + c.lanes + 1;
  const int pt = clog2(d);
  const int cn = bits_for(d);
  using U = std::uint64_t;
  Module m;
  m.name = c.name + "_fifo";
  m.description = {
      "Output buffer of " + std::to_string(d) +
          " beats. The core admits a beat only when it has room here for",
      "every beat in flight, so writes never find it full. valid_o is a register; the pointers",
      "step to precomputed next values, so rd_i reaches the read address through one select."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr wr = m.in("wr_i", 1);
  const Expr wdata = m.in("wdata_i", fw);
  const Expr rd = m.in("rd_i", 1, "only while valid_o");
  const Expr rdata = m.out("rdata_o", fw);
  const Expr valid_o = m.out("valid_o", 1, "a register");
  const Expr mem = m.memory("mem_q", fw, d);
  const Expr wptr = m.reg("wptr_q", pt), wnx = m.reg("wnx_q", pt, "wptr_q + 1 mod depth");
  const Expr rptr = m.reg("rptr_q", pt), rnx = m.reg("rnx_q", pt, "rptr_q + 1 mod depth");
  const Expr cnt = m.reg("cnt_q", cn);
  const Expr valid = m.reg("valid_q", 1, "cnt_q != 0");
  const auto next = [&](const Expr& p) {
    return mux(ex::eq(p, lit(pt, static_cast<U>(d - 1))), lit(pt, 0), p + lit(pt, 1));
  };
  // cnt_d != 0: a write, or at least two held, or one held and not read.
  const Expr many = ex::ge(cnt, lit(cn, 2));
  const Expr one = ex::eq(cnt, lit(cn, 1));
  m.seq({if_(
      ex::lnot(m.ref("rst_ni")),
      {assign(wptr, lit(pt, 0)), assign(wnx, lit(pt, 1)), assign(rptr, lit(pt, 0)),
       assign(rnx, lit(pt, 1)), assign(cnt, lit(cn, 0)), assign(valid, lit(1, 0))},
      {if_(wr, {assign(wptr, wnx), assign(wnx, next(wnx))}),
       if_(rd, {assign(rptr, rnx), assign(rnx, next(rnx))}),
       assign(cnt, cnt + zext(wr, cn) - zext(rd, cn)), assign(valid, wr | many | (one & ~rd))})});
  // The storage (no reset): written in the RAM template's clocked block.
  m.always_ff({if_(wr, {assign(ex::index(mem, wptr), wdata)})});
  m.assign(rdata, ex::index(mem, rptr));
  m.assign(valid_o, valid);
  return m;
}

}  // namespace normcore::gen::core
