// The core's parameter table <n>_ptable: loader, banked read addressing, lane crossbar.
#include "core_internal.hpp"

namespace normcore::gen::core {

using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

using U = std::uint64_t;

struct TableWidths {
  int L, P, p, cw, pw, ab, uw, nb;
  TableWidths(const CoreConfig& c, const Variant& v)
      : L(c.lanes),
        P(c.banks()),
        p(c.bank_sel_bits()),
        cw(c.chan_bits()),
        pw(v.pw),
        ab(c.bank_addr_bits()),
        uw(bits_for(2LL * c.max_channels + c.lanes)),
        nb(c.lane_count_bits()) {}
};

void table_ports(Module& m, const TableWidths& w, const Variant& v) {
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("en_i", 1, "loading allowed (core configured)");
  m.in("chans_i", w.cw, "C");
  m.in("c0_i", w.cw, "channel of lane 0 for the next beat");
  if (w.L > 1) m.in("lane_d_i", (w.L - 1) * w.p, "lanes 1..L-1: channel offset from lane 0 (< L)");
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1);
  m.in("prm_chan_i", w.cw, "channel index (< C; others are ignored)");
  for (const auto& f : v.fields) m.in("prm_" + f.prm + "_i", f.width, f.comment);
  m.out("busy_o", 1, "loader writing copies");
  for (const auto& f : v.fields) {
    m.out(f.prm + "_o", w.L * f.width,
          &f == &v.fields.front() ? "per lane, one cycle after c0_i" : "");
  }
}

// Loader: writes T[c], T[c+C], T[c+2C], ... (u < C + L - 1), one bank word per cycle.
void table_loader(Module& m, const TableWidths& w, const Variant& v) {
  const int uw = w.uw, nb = w.nb;
  m.section("Loader");
  const Expr busy = m.reg("ld_busy_q", 1);
  const Expr first = m.reg("ld_first_q", 1, "first copy: u = the channel received");
  const Expr in = m.reg("ld_in_q", 1,
                        "prm_chan_i < C, registered every cycle (read in the first copy's cycle)");
  const Expr u = m.reg("ld_u_q", uw);
  const Expr data = m.reg("ld_data_q", w.pw, v.word());
  const Expr accept = m.wire("ld_accept", 1);
  const Expr ok = m.wire("ld_ok", 1, "write this copy (a channel >= C is dropped)");
  const Expr en = m.ref("en_i"), chans = m.ref("chans_i"), chan = m.ref("prm_chan_i");
  m.assign(m.ref("prm_ready_o"), en & ~busy);
  m.assign(accept, m.ref("prm_valid_i") & en & ~busy);
  m.assign(ok, ~first | in);
  // Copy u is the last exactly when u >= L - 1 (the next one, u + C, would be beyond C + L - 2):
  // the copy's own u against a constant, narrow (u >= 2^nb, or its low nb bits >= L - 1).
  Expr last = lit(1, 1);
  if (w.L > 1) {
    last = m.wire("ld_last", 1, "this copy is the last: u >= L - 1");
    const Expr lo_ge =
        ex::ge(uw <= nb ? zext(u, nb) : slice(u, 0, nb), lit(nb, static_cast<U>(w.L - 1)));
    m.assign(last, uw <= nb ? lo_ge : ex::ne(slice(u, nb, uw - nb), lit(uw - nb, 0)) | lo_ge);
  }
  m.seq(
      {if_(ex::lnot(m.ref("rst_ni")), {assign(busy, lit(1, 0))},
           {if_(accept, {assign(busy, lit(1, 1))}, {if_(last | ~ok, {assign(busy, lit(1, 0))})})}),
       assign(first, accept), assign(in, ex::lt(chan, chans)),
       if_(accept, {assign(u, zext(chan, uw)), assign(data, v.word_ports())},
           {if_(busy, {assign(u, u + zext(chans, uw))})})});
  m.assign(m.ref("busy_o"), busy);
  const Expr addr = m.wire("ld_addr", w.ab);
  m.assign(addr, w.p + w.ab <= uw ? slice(u, w.p, w.ab) : zext(slice(u, w.p, uw - w.p), w.ab));
}

// Read addressing from the window start c0 = channel of lane 0, and the banks. Returns c0_lo
// (empty with one bank).
Expr table_banks(Module& m, const TableWidths& w, const std::string& name) {
  const int p = w.p, cw = w.cw, ab = w.ab;
  m.section("Read side: bank j serves the u = j (mod " + std::to_string(w.P) + ") of the window");
  const Expr c0 = m.wire("c0", cw);
  m.assign(c0, m.ref("c0_i"));
  Expr c0_lo;
  if (p > 0) {
    c0_lo = m.wire("c0_lo", p);
    m.assign(c0_lo, cw >= p ? slice(c0, 0, p) : zext(c0, p));
  }
  Expr c0_hi = lit(ab, 0);
  if (cw > p) {
    c0_hi = m.wire("c0_hi", ab, "c0 / " + std::to_string(w.P));
    if (cw - p <= ab) {
      m.assign(c0_hi, zext(slice(c0, p, cw - p), ab));
    } else {
      // c0 < MAX_CHANNELS, so c0 / P < bank depth: the top bits of c0 are always zero here.
      m.assign(c0_hi, slice(c0, p, ab));
      m.assign(m.wire("unused_c0_top", 1), ex::red_xor(slice(c0, p + ab, cw - p - ab)));
    }
  }
  const Expr busy = m.ref("ld_busy_q"), ok = m.ref("ld_ok"), u = m.ref("ld_u_q");
  for (int j = w.P - 1; j >= 0; --j) {
    const Expr raddr = m.wire(idx("raddr", j), ab);
    Expr a = c0_hi;
    if (p > 0 && j < w.P - 1) a = a + zext(ex::gt(c0_lo, lit(p, static_cast<U>(j))), ab);
    m.assign(raddr, a);
    const Expr we = m.wire(idx("we", j), 1);
    m.assign(we, p > 0 ? busy & ok & ex::eq(slice(u, 0, p), lit(p, static_cast<U>(j))) : busy & ok);
    m.wire(idx("rdata", j), w.pw);
  }
  for (int j = 0; j < w.P; ++j) {
    m.instance(Instance{name + "_bank",
                        idx("u_bank", j),
                        {{"clk_i", m.ref("clk_i")},
                         {"we_i", m.ref(idx("we", j))},
                         {"waddr_i", m.ref("ld_addr")},
                         {"wdata_i", m.ref("ld_data_q")},
                         {"raddr_i", m.ref(idx("raddr", j))},
                         {"rdata_o", m.ref(idx("rdata", j))}}});
  }
  return c0_lo;
}

// Lane crossbar: lane i takes the bank holding its u (registered select).
void table_xbar(Module& m, const TableWidths& w, const Variant& v, const Expr& c0_lo) {
  const int p = w.p, L = w.L, pw = w.pw;
  m.section("Crossbar: lane i takes the bank holding its u (registered select)");
  if (p > 0) {
    std::vector<Flop> ff;
    for (int i = 0; i < L; ++i) {
      const Expr sel = m.wire(idx("sel", i), p);
      if (i == 0) {
        m.assign(sel, c0_lo);
      } else {
        m.assign(sel, c0_lo + slice(m.ref("lane_d_i"), (i - 1) * p, p),
                 "u = c0 + d_i, mod " + std::to_string(w.P));
      }
      ff.push_back(Flop{m.reg(idx("sel_q", i), p), sel, {}});
    }
    m.flops(ff);
    // One P:1 multiplexer per lane (a case on the registered select: maps to $pmux / LUTs).
    for (int i = 0; i < L; ++i) {
      const Expr word = m.reg(idx("word", i), pw);
      std::vector<CaseArm> arms;
      for (int j = 0; j < w.P; ++j) {
        arms.push_back({{lit(p, static_cast<U>(j))}, {assign(word, m.ref(idx("rdata", j)))}});
      }
      m.always_comb({case_(m.ref(idx("sel_q", i)), std::move(arms))});
    }
  } else {
    m.assign(m.wire(idx("word", 0), pw), m.ref(idx("rdata", 0)));
  }
  int off = 0;
  for (const auto& f : v.fields) {
    std::vector<Expr> parts;
    for (int i = L - 1; i >= 0; --i) parts.push_back(slice(m.ref(idx("word", i)), off, f.width));
    m.assign(m.ref(f.prm + "_o"), ex::cat(std::move(parts)));
    off += f.width;
  }
}

}  // namespace

Module build_ptable(const CoreConfig& c, const Variant& v) {
  const TableWidths w(c, v);
  Module m;
  m.name = c.name + "_ptable";
  m.description = {
      "Parameter table, banked so that every beat reads each lane's channel in one cycle.",
      "Virtual table T[u] = param[u mod C] for u < C + L - 1 (the first channels kept again",
      "after C for the wrap-around); bank j = u mod " + std::to_string(w.P) +
          " holds T[u] at u / " + std::to_string(w.P) + ".",
      "The channels of one beat are a window u = c0 .. c0+L-1, which hits every bank once."};
  table_ports(m, w, v);
  table_loader(m, w, v);
  const Expr c0_lo = table_banks(m, w, c.name);
  table_xbar(m, w, v, c0_lo);
  return m;
}

}  // namespace normcore::gen::core
