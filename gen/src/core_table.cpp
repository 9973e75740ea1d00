// The core's parameter table <n>_ptable: loader, banked read addressing, lane crossbar.
#include <algorithm>

#include "core_internal.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

using U = std::uint64_t;

struct TableWidths {
  int L, P, p, dp, cw, pw, ab, uw, nb;
  bool direct;  // no crossbar, no wrap-around copies (CoreConfig::table_direct)
  bool copies;  // one whole table per lane, no crossbar, no wrap-around copies
  TableWidths(const CoreConfig& c, const Variant& v)
      : L(c.lanes),
        P(c.table_copies() ? 1 : c.banks()),
        p(c.table_copies() ? 0 : c.bank_sel_bits()),
        dp(c.bank_sel_bits()),
        cw(c.chan_bits()),
        pw(v.pw),
        ab(c.bank_addr_bits()),
        uw(c.table_copies() ? std::max(c.chan_bits(), bits_for(c.lanes - 2))
                            : std::max(c.chan_bits(), bits_for(c.max_channels + c.lanes - 2))),
        nb(c.lane_count_bits()),
        direct(c.table_direct()),
        copies(c.table_copies()) {}
  // The loader writes the wrap-around copies T[u] (C <= u < C + L - 1).
  [[nodiscard]] bool wraps() const { return L > 1 && !direct && !copies; }
};

void table_ports(Module& m, const TableWidths& w, const Variant& v) {
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("load_i", 1, "open the load (the next cycle takes channel 0); chans_i stable 2 cycles");
  m.in("run_i", 1, "the job runs (low: the load is abandoned)");
  m.in("chans_i", w.cw, "C");
  m.in("c0_i", w.cw, "channel of lane 0 for the next beat");
  if (w.L > 1 && !w.direct) {
    m.in("lane_d_i", (w.L - 1) * w.dp, "lanes 1..L-1: channel offset from lane 0 (< L)");
  }
  m.in("prm_valid_i", 1);
  m.out("prm_ready_o", 1, "a register: high while the load takes a word this cycle");
  for (const auto& f : v.fields) m.in("prm_" + f.prm + "_i", f.width, f.comment);
  m.out("busy_o", 1, "a table write this cycle");
  m.out("done_o", 1, "no table write after this cycle: the table is complete from the next one");
  for (const auto& f : v.fields) {
    m.out(f.prm + "_o", w.L * f.width,
          &f == &v.fields.front() ? "per lane, two cycles after c0_i" : "");
  }
}

// Per-bank write enables, registered: bank j is written next cycle when the index written then
// (cnt on a word, u + C on a copy) is j mod P. No decode between a register and a RAM's WE.
void bank_write_enables(Module& m, const TableWidths& w, const Expr& issue, Block& rst,
                        Block& run) {
  if (w.p == 0) return;
  const Expr accept = m.ref("ld_accept"), cnt = m.ref("ld_cnt_q"), u = m.ref("ld_u_q");
  const Expr wen = m.reg("ld_wen_q", w.P, "bank j's write enable (bit j)");
  const Expr nlo = m.wire("ld_nlo", w.p, "next written index mod " + std::to_string(w.P));
  m.assign(nlo, w.wraps() ? mux(accept, ex::fit(cnt, w.p),
                                ex::fit(u, w.p) + ex::fit(m.ref("chans_i"), w.p))
                          : ex::fit(cnt, w.p));
  std::vector<Expr> bits;
  for (int j = w.P - 1; j >= 0; --j)
    bits.push_back(ex::eq(nlo, lit(w.p, static_cast<U>(j))) & (accept | issue));
  rst.push_back(assign(wen, lit(w.P, 0)));
  run.push_back(assign(wen, ex::cat(std::move(bits))));
}

// The per-job register max(0, L - 1 - times * C) (nb bits), from C's low nb bits (C >= 2^nb >= L
// gives 0 through its high bits).
Expr k_reg(Module& m, const TableWidths& w, Block& consts, const std::string& name, int times) {
  const int nb = w.nb, cw = w.cw, kw_bits = nb + times;
  const Expr chans = m.ref("chans_i");
  const std::string tc = (times > 1 ? std::to_string(times) : "") + "C";
  const Expr kq =
      m.reg(name + "_q", nb, "L - 1 - " + tc + " when " + tc + " < L - 1, else 0 (per job)");
  const Expr kw = m.wire(name + "w", kw_bits, "L - 1 - " + tc + " (C < 2^nb)");
  Expr sub = lit(kw_bits, static_cast<U>(w.L - 1));
  for (int t = 0; t < times; ++t) sub = sub - zext(ex::fit(chans, nb), kw_bits);
  m.assign(kw, sub);
  // Negative (sign bit) or, for times > 1, not below 2^nb: clamp to 0 (a non-negative value is <
  // L).
  Expr k_zero = times == 1 ? bit(kw, nb) : ex::ne(slice(kw, nb, times), lit(times, 0));
  if (cw > nb) k_zero = k_zero | ex::ne(slice(chans, nb, cw - nb), lit(cw - nb, 0));
  consts.push_back(assign(kq, mux(k_zero, lit(nb, 0), slice(kw, 0, nb))));
  return kq;
}

// Loader: exactly C words in channel order, one per cycle. Word c is written to T[c] one cycle
// after it is taken; a word c < L - 1 also to its copies T[c + C], T[c + 2C], ... (u < C + L - 1)
// in the following cycles, prm_ready_o low meanwhile (the direct table has no copies). C + L - 1
// writes in all (direct: C), back to back when prm_valid_i stays high. Every decision is a
// register or a narrow compare of registers; each bank's write enable is a register of its own.
void table_loader(Module& m, const TableWidths& w, const Variant& v) {
  const int uw = w.uw, nb = w.nb, cw = w.cw, L = w.L;
  m.section("Loader");
  const Expr chans = m.ref("chans_i"), run = m.ref("run_i"), load = m.ref("load_i");
  const Expr open = m.reg("ld_open_q", 1, "words still expected");
  const Expr ready = m.reg("ld_ready_q", 1, "prm_ready_o");
  const Expr we = m.reg("ld_we_q", 1, "write T[ld_u_q] = ld_data_q this cycle");
  const Expr fin = m.reg("ld_fin_q", 1, "no write after this cycle");
  const Expr u = m.reg("ld_u_q", uw, "table index written (T[u] = param[u mod C])");
  const Expr data = m.reg("ld_data_q", w.pw, v.word());
  const Expr cnt = m.reg("ld_cnt_q", cw, "words taken: the channel of the next one");
  const Expr lastw = m.reg("ld_lastw_q", 1, "the next word is channel C - 1");
  const Expr chm2 = m.reg("ld_chm2_q", cw, "C - 2 (per job)");
  const Expr accept = m.wire("ld_accept", 1);
  m.assign(accept, m.ref("prm_valid_i") & ready);
  Expr cpy_d = lit(1, 0);
  Block on_accept{assign(u, zext(cnt, uw)), assign(data, v.word_ports()),
                  assign(cnt, cnt + lit(cw, 1)), assign(lastw, ex::eq(cnt, chm2))};
  Block on_load{assign(cnt, lit(cw, 0)), assign(lastw, ex::eq(chans, lit(cw, 1)))};
  Block consts{assign(chm2, cw >= 2 ? chans - lit(cw, 2) : chans)};
  Expr issue = lit(1, 0);
  if (w.wraps() || w.copies) {
    // Banked: word c < L - 1 has copies T[c + C], T[c + 2C], ... below C + L - 1; the copy after
    // T[u + C] exists when u + C < L - 1, i.e. u < K = L - 1 - C (0 when C >= L - 1).
    // Per-lane copies: only the addresses C .. L - 2 (C < L - 1) hold copies: word c has one when
    // c < K, and the copy after T[u + C] exists when u + 2C < L - 1, i.e. u < K2 = L - 1 - 2C.
    const Expr cpy = m.reg("ld_cpy_q", 1, "the write stage's word has another copy");
    const Expr kq = k_reg(m, w, consts, "ld_k", 1);
    const Expr issue_w = m.wire("ld_issue", 1, "write the next copy, T[u + C], next cycle");
    m.assign(issue_w, we & cpy);
    issue = issue_w;
    const Expr more = m.wire("ld_more", 1, "T[u + C] has a copy after it (u < L - 1: low bits)");
    m.assign(more, ex::lt(ex::fit(u, nb), w.copies ? k_reg(m, w, consts, "ld_k2", 2) : kq));
    Expr first;
    if (w.copies) {
      first = ex::lt(ex::fit(cnt, nb), kq);  // cnt < C < L - 1 whenever K > 0
    } else {
      first = m.reg("ld_small_q", 1, "the next word's channel is < L - 1");
      on_accept.push_back(
          assign(first, first & ex::ne(ex::fit(cnt, nb), lit(nb, static_cast<U>(L - 2)))));
      on_load.push_back(assign(first, lit(1, 1)));
    }
    const Expr cpyd = m.wire("ld_cpy_d", 1);
    m.assign(cpyd, mux(accept, first, issue_w & more));
    cpy_d = cpyd;
    m.seq({assign(cpy, cpyd)});
  }
  const Expr open_d = m.wire("ld_open_d", 1);
  m.assign(open_d, run & (load | (open & ~(accept & lastw))));
  Block wen_rst, wen_run;
  bank_write_enables(m, w, issue, wen_rst, wen_run);
  Block upd{if_(accept, std::move(on_accept), {if_(issue, {assign(u, u + ex::fit(chans, uw))})})};
  Block rst{assign(open, lit(1, 0)), assign(ready, lit(1, 0)), assign(we, lit(1, 0)),
            assign(fin, lit(1, 0))};
  Block go{assign(open, open_d), assign(ready, open_d & ~cpy_d), assign(we, accept | issue),
           assign(fin, run & ~open_d & ~cpy_d)};
  for (auto& st : wen_rst) rst.push_back(std::move(st));
  for (auto& st : wen_run) go.push_back(std::move(st));
  m.seq({if_(ex::lnot(m.ref("rst_ni")), std::move(rst), std::move(go)),
         if_(ex::lnot(load), std::move(upd), std::move(on_load))});
  m.seq(consts);
  m.assign(m.ref("prm_ready_o"), ready);
  m.assign(m.ref("busy_o"), we);
  m.assign(m.ref("done_o"), fin);
  const Expr addr = m.wire("ld_addr", w.ab);
  if (uw <= w.p) {
    m.assign(addr, lit(w.ab, 0));
  } else {
    m.assign(addr, w.p + w.ab <= uw ? slice(u, w.p, w.ab) : zext(slice(u, w.p, uw - w.p), w.ab));
  }
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
  for (int j = w.P - 1; j >= 0; --j) {
    const Expr raddr = m.wire(idx("raddr", j), ab);
    Expr a = c0_hi;
    if (p > 0 && j < w.P - 1 && !w.direct)
      a = a + zext(ex::gt(c0_lo, lit(p, static_cast<U>(j))), ab);
    m.assign(raddr, a);
    const Expr we = m.wire(idx("we", j), 1);
    m.assign(we, p > 0 ? bit(m.ref("ld_wen_q"), j) : m.ref("ld_we_q"));
    m.wire(idx("rdata", j), w.pw, "two cycles after raddr");
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

// The outputs: field f of every lane's word word_i, lane L-1 first ({f of lane L-1, ..., lane 0}).
void lane_fields_out(Module& m, const Variant& v, int L) {
  int off = 0;
  for (const auto& f : v.fields) {
    std::vector<Expr> parts;
    for (int i = L - 1; i >= 0; --i) parts.push_back(slice(m.ref(idx("word", i)), off, f.width));
    m.assign(m.ref(f.prm + "_o"), ex::cat(std::move(parts)));
    off += f.width;
  }
}

// Lane crossbar: lane i takes the bank holding its u (the select registered twice, beside the
// bank read and the bank's output register). The direct table has none: lane i reads bank i.
void table_xbar(Module& m, const TableWidths& w, const Variant& v, const Expr& c0_lo) {
  const int p = w.p, L = w.L, pw = w.pw;
  if (w.direct) {
    m.section("No crossbar: c0 is a multiple of " + std::to_string(L) + ", lane i reads bank i");
    m.assign(m.wire("unused_c0_lo", 1), ex::red_xor(c0_lo), "0: c0 is a multiple of L");
    for (int i = 0; i < L; ++i) m.assign(m.wire(idx("word", i), pw), m.ref(idx("rdata", i)));
  } else if (p > 0) {
    m.section("Crossbar: lane i takes the bank holding its u (registered select)");
    std::vector<Flop> ff;
    for (int i = 0; i < L; ++i) {
      const Expr sel = m.wire(idx("sel", i), p);
      if (i == 0) {
        m.assign(sel, c0_lo);
      } else {
        m.assign(sel, c0_lo + slice(m.ref("lane_d_i"), (i - 1) * p, p),
                 "u = c0 + d_i, mod " + std::to_string(w.P));
      }
      const Expr sq = m.reg(idx("sel_q", i), p, "beside the bank read");
      ff.push_back(Flop{sq, sel, {}});
      ff.push_back(Flop{m.reg(idx("sel2_q", i), p, "beside the bank's output register"), sq, {}});
    }
    m.flops(ff);
    // One P:1 multiplexer per lane (a case on the registered select: maps to $pmux / LUTs).
    for (int i = 0; i < L; ++i) {
      const Expr word = m.reg(idx("word", i), pw);
      std::vector<CaseArm> arms;
      for (int j = 0; j < w.P; ++j) {
        arms.push_back({{lit(p, static_cast<U>(j))}, {assign(word, m.ref(idx("rdata", j)))}});
      }
      m.always_comb({case_(m.ref(idx("sel2_q", i)), std::move(arms))});
    }
  } else {
    m.assign(m.wire(idx("word", 0), pw), m.ref(idx("rdata", 0)));
  }
  lane_fields_out(m, v, L);
}

// Per-lane copies: lane i's RAM holds T[c] = param[c] for every c < C (the loader writes all
// copies at once) and is read at u_i = (c0 + d_i) mod C. With e = C - c0 (1 <= e <= C) lane i
// wraps exactly when e <= d_i, which needs e < 2^nb, i.e. c0 >= C + 1 - 2^nb (a compare with a
// per-job register): u_i is then (c0 + d_i - C) mod 2^k (< L - 1), else c0 + d_i (< C). Stage
// t1 registers both candidates and the wrap flag (every path from c0_i is one short carry chain
// and a LUT); the RAM's read address is their select (one LUT); t2 is the RAM's read register.
void table_copies_read(Module& m, const TableWidths& w, const Variant& v, const std::string& name) {
  const int L = w.L, cw = w.cw, ab = w.ab, dp = w.dp, nb = w.nb, k = std::min(nb, ab);
  m.section("Read side: lane i reads its own copy at (c0 + d_i) mod C");
  const Expr c0 = m.ref("c0_i"), chans = m.ref("chans_i");
  const Expr elo = m.wire("e_lo", nb, "(C - c0) mod 2^" + std::to_string(nb));
  m.assign(elo, ex::fit(chans, nb) - ex::fit(c0, nb));
  Expr esmall = lit(1, 1);
  if (cw > nb) {
    // C + 1 - 2^nb, or 0 when C < 2^nb (then e < 2^nb always).
    const Expr cmw = m.wire("cm_w", cw + 1, "C + 1 - 2^" + std::to_string(nb));
    m.assign(cmw, zext(chans, cw + 1) - lit(cw + 1, (U{1} << nb) - 1));
    const Expr cm = m.reg("cm_q", cw, "max(0, C + 1 - 2^" + std::to_string(nb) + ") (per job)");
    m.seq({assign(cm, mux(bit(cmw, cw), lit(cw, 0), slice(cmw, 0, cw)))});
    esmall = m.wire("e_small", 1, "C - c0 < 2^" + std::to_string(nb));
    m.assign(esmall, ex::ge(c0, cm));
  }
  std::vector<Flop> ff;
  for (int i = 0; i < L; ++i) {
    const Expr raddr = m.wire(idx("raddr", i), ab);
    const Expr sq = m.reg(idx("s", i) + "_q", ab, i == 0 ? "c0" : "c0 + d_i (when < C)");
    if (i == 0) {
      ff.push_back(Flop{sq, ex::fit(c0, ab), {}});
      m.assign(raddr, sq, "c0 < C <= MAX_CHANNELS <= 2^ab");
    } else {
      const Expr d = m.wire(idx("d", i), dp);
      m.assign(d, slice(m.ref("lane_d_i"), (i - 1) * dp, dp));
      const Expr wq = m.reg(idx("wrap", i) + "_q", 1, "c0 + d_i >= C");
      const Expr tq = m.reg(idx("t", i) + "_q", k, "c0 + d_i - C (when >= C)");
      ff.push_back(Flop{sq, ex::fit(c0, ab) + ex::fit(d, ab), {}});
      ff.push_back(Flop{wq, esmall & ex::le(elo, zext(d, nb)), {}});
      ff.push_back(Flop{tq, ex::fit(d, k) - ex::fit(elo, k), {}});
      m.assign(raddr, mux(wq, zext(tq, ab), sq));
    }
    m.wire(idx("word", i), w.pw, "two cycles after c0_i");
    m.instance(Instance{name + "_bank",
                        idx("u_copy", i),
                        {{"clk_i", m.ref("clk_i")},
                         {"we_i", m.ref("ld_we_q")},
                         {"waddr_i", m.ref("ld_addr")},
                         {"wdata_i", m.ref("ld_data_q")},
                         {"raddr_i", raddr},
                         {"rdata_o", m.ref(idx("word", i))}}});
  }
  m.flops(ff);
  lane_fields_out(m, v, L);
}

}  // namespace

Module build_ptable(const CoreConfig& c, const Variant& v) {
  const TableWidths w(c, v);
  Module m;
  m.name = c.name + "_ptable";
  if (w.copies) {
    m.description = {
        "Parameter table, one copy per lane: lane i's RAM holds all C words (the load writes",
        "every copy at once) and is read at its own channel (c0 + d_i) mod C. No crossbar, no",
        "wrap-around copies; " + std::to_string(w.L) +
            " times the RAM of one table. Stages: the address candidates registered, RAM read."};
  } else if (w.direct) {
    m.description = {
        "Parameter table, direct (NHWC, C a multiple of " + std::to_string(w.L) +
            "): bank j holds channel c = j (mod " + std::to_string(w.P) + ") at c / " +
            std::to_string(w.P) + ".",
        "Every beat's channels are c0 .. c0+L-1 with c0 a multiple of L: lane i reads bank i",
        "at c0 / L (no crossbar, no wrap-around copies). Stages: bank read, output register."};
  } else {
    m.description = {
        "Parameter table, banked so that every beat reads each lane's channel in one cycle.",
        "Virtual table T[u] = param[u mod C] for u < C + L - 1 (the first channels kept again",
        "after C for the wrap-around); bank j = u mod " + std::to_string(w.P) +
            " holds T[u] at u / " + std::to_string(w.P) + ".",
        "The channels of one beat are a window u = c0 .. c0+L-1, which hits every bank once.",
        "Stages: bank read, the bank's output register, then the crossbar (registered selects)."};
  }
  table_ports(m, w, v);
  table_loader(m, w, v);
  if (w.copies) {
    table_copies_read(m, w, v, c.name);
  } else {
    table_xbar(m, w, v, table_banks(m, w, c.name));
  }
  return m;
}

}  // namespace normcore::gen::core
