// The core's parameter table <n>_ptable: loader, banked read addressing, lane crossbar.
#include <algorithm>

#include "core_internal.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::lit;
using ex::mux;
using ex::slice;
using ex::zext;

namespace {

using U = std::uint64_t;

struct TableWidths {
  int L, P, p, dp, cw, pw, ab, uw, nb, ts;
  bool direct;  // no crossbar, no wrap-around copies (CoreConfig::table_direct)
  bool copies;  // one whole table per lane, no crossbar, no wrap-around copies
  bool staged;  // --target ecp5 / ice40: the per-job k registers in two stages (difference, clamp)
  bool e5_table;  // --target ecp5: the loader's left - 1 a chain of left alone; copies' t1 address
  bool e5_wide;   // core::e5_wide: the copies' t1 address from t0's low sums (lo_i_q, ch1_q)
  bool radd;      // --target ice40: read_word
  int nrd;        // --target ice40: the word counter's enable from ld_nrd_q (1) or ld_rdc_q (2)
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
        ts(c.table_stages()),
        direct(c.table_direct()),
        copies(c.table_copies()),
        staged(lut_tracker(c)),
        e5_table(c.target == "ecp5"),
        e5_wide(core::e5_wide(c)),
        radd(c.target == "ice40"),
        nrd(!split_consts(c)       ? 0
            : spec::same_copies(c) ? 2
                                   : 1) {}
  // The loader writes the wrap-around copies T[u] (C <= u < C + L - 1).
  [[nodiscard]] bool wraps() const { return L > 1 && !direct && !copies; }
};

void table_ports(Module& m, const TableWidths& w, const Variant& v) {
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  m.in("load_i", 1, "open the load (the next cycle takes channel 0); chans_i stable 2 cycles");
  m.in("abort_i", 1, "a start: the load (if any) is abandoned");
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
    m.out(
        f.prm + "_o", w.L * f.width,
        &f == &v.fields.front() ? "per lane, " + std::to_string(w.ts) + " cycles after c0_i" : "");
  }
}

// The per-job register max(0, base - times * C) (nb bits, base < L), from C's low nb bits (C >=
// 2^nb >= L gives 0 through its high bits). Staged (w.staged): the difference and C's high bits
// are registered first and the clamp is a LUT of registers; one cycle later, which the set-up
// leaves (C is latched at least four cycles before the loader's first word).
Expr k_reg(Module& m, const TableWidths& w, Block& consts, const std::string& name, int times,
           int base) {
  const int nb = w.nb, cw = w.cw, kw_bits = nb + times;
  const Expr chans = m.ref("chans_i");
  const std::string tc = (times > 1 ? std::to_string(times) : "") + "C";
  const std::string bs = std::to_string(base);
  const Expr kq = m.reg(name + "_q", nb, bs + " - " + tc + " when >= 0, else 0 (per job)");
  const Expr kw = m.wire(name + "w", kw_bits, bs + " - " + tc + " (C < 2^nb)");
  Expr sub = lit(kw_bits, static_cast<U>(base));
  for (int t = 0; t < times; ++t) sub = sub - zext(ex::fit(chans, nb), kw_bits);
  Expr chi = cw > nb ? ex::ne(slice(chans, nb, cw - nb), lit(cw - nb, 0)) : Expr{};
  if (w.staged) {
    const Expr ks = m.reg(name + "s_q", kw_bits, bs + " - " + tc + " (set-up stage 1)");
    consts.push_back(assign(ks, sub));
    sub = ks;
    if (cw > nb) {
      const Expr hz = m.reg(name + "h_q", 1, "C >= 2^nb (set-up stage 1)");
      consts.push_back(assign(hz, chi));
      chi = hz;
    }
  }
  m.assign(kw, sub);
  // Negative (sign bit) or, for times > 1, not below 2^nb: clamp to 0 (a non-negative value is <
  // L).
  Expr k_zero = times == 1 ? bit(kw, nb) : ex::ne(slice(kw, nb, times), lit(times, 0));
  if (cw > nb) k_zero = k_zero | chi;
  consts.push_back(assign(kq, mux(k_zero, lit(nb, 0), slice(kw, 0, nb))));
  return kq;
}

// The loader's registers and the signals its next-state logic reads.
struct Loader {
  Expr accept, ready, valid, cpy, more, small, u, cnt, chans, load, open;
};

// Per-bank write enables, registers (the block RAMs' write enables come straight from flip-flops),
// each at most two LUT levels from registers: bank j is written next cycle when a word is taken
// now and the word counter's low bits are j, or (wrap-around copies) a copy is issued now and its
// index mod P (ld_nu_q, kept beside u) is j.
void bank_write_enables(Module& m, const TableWidths& w, const Loader& l, Block& rst, Block& run,
                        Block& on_accept, Block& on_load, Block& always) {
  if (w.p == 0) return;
  const int P = w.P, p = w.p;
  const Expr wen = m.reg("ld_wen_q", P, "bank j's write enable (bit j)");
  Expr nu;
  if (w.wraps()) {
    const Expr ncl = m.reg("ld_ncl_q", p, "(cnt + C) mod " + std::to_string(P));
    nu = m.reg("ld_nu_q", p, "(u + C) mod " + std::to_string(P) + ": the next copy's bank");
    on_accept.push_back(assign(ncl, ncl + lit(p, 1)));
    on_load.push_back(assign(ncl, ex::fit(l.chans, p)));
    always.push_back(assign(nu, mux(l.ready, ncl, nu + ex::fit(l.chans, p))));
  }
  const Expr clo = ex::fit(l.cnt, p);
  std::vector<Expr> bits;
  for (int j = P - 1; j >= 0; --j) {
    Expr e = l.accept & ex::eq(clo, lit(p, static_cast<U>(j)));
    if (w.wraps()) e = e | (l.cpy & ex::eq(nu, lit(p, static_cast<U>(j))));
    bits.push_back(e);
  }
  rst.push_back(assign(wen, lit(P, 0)));
  run.push_back(assign(wen, ex::cat(std::move(bits))));
}

// The copy flags: ld_cpy_q (a copy T[u + C] is issued this cycle), ld_small_q (the next word
// has a copy), ld_more_q (the copy issued now has another after it). Banked: word c < L - 1 has
// copies T[c + C], T[c + 2C], ... below C + L - 1; per-lane copies: only C .. L - 2 hold copies.
// ld_more_q is registered a cycle ahead: on a word (u becomes cnt) cnt < Ka, on a copy (u
// becomes u + C) u < Kb, with Ka, Kb = L - 1 - C, L - 1 - 2C (copies: L - 1 - 2C, L - 1 - 3C),
// clamped at 0 (per job); each a short compare of registers and a select.
void copy_flags(Module& m, const TableWidths& w, Loader& l, Block& consts, Block& on_accept,
                Block& on_load, Block& every) {
  const int nb = w.nb, L = w.L;
  l.cpy = m.reg("ld_cpy_q", 1, "a copy T[u + C] is issued this cycle (written the next)");
  l.small = m.reg("ld_small_q", 1, "the next word has a copy");
  l.more = m.reg("ld_more_q", 1, "the copy issued this cycle has another after it");
  const int t0 = w.copies ? 2 : 1;
  const Expr ka = k_reg(m, w, consts, "ld_ka", t0, L - 1);
  const Expr kb = k_reg(m, w, consts, "ld_kb", t0 + 1, L - 1);
  const Expr cnt_lo = ex::fit(l.cnt, nb);
  every.push_back(assign(l.more, mux(l.ready, ex::lt(cnt_lo, ka), ex::lt(ex::fit(l.u, nb), kb))));
  if (w.copies) {
    // Word c has a copy when c + C < L - 1, i.e. c < L - 1 - C: after word c, c + 1 < that.
    const Expr km1 = k_reg(m, w, consts, "ld_km", 1, L - 2);
    const Expr k1 = k_reg(m, w, consts, "ld_k1", 1, L - 1);
    const Expr kz = m.reg("ld_kz_q", 1, "C < L - 1: word 0 has a copy (per job)");
    consts.push_back(assign(kz, ex::ne(k1, lit(nb, 0))));
    on_accept.push_back(assign(l.small, ex::lt(cnt_lo, km1)));
    on_load.push_back(assign(l.small, kz));
  } else {
    on_accept.push_back(assign(l.small, l.small & ex::ne(cnt_lo, lit(nb, static_cast<U>(L - 2)))));
    on_load.push_back(assign(l.small, lit(1, 1)));
  }
}

// The loader's counters and its data register. No enable computed by logic drives more than
// about a dozen flip-flops (nextpnr promotes an enable of more than 15 to a global buffer, and
// logic in front of one costs the route to and from it): ld_cnt_q counts the words (enable
// accept | load_i, with ld_ncl_q and ld_small_q), ld_left_q (words left - 2) is reloaded while
// no word is expected and counts the accepts (enable ~open | accept, its own); ld_data_q loads
// every cycle (no copies) or while ld_ready_q (a register: copies reuse the word); ld_u_q, the
// index written, is cnt delayed (no copies) or `ready ? cnt : u + C`, every cycle (read only
// after a word or a copy is issued).
void loader_counters(Module& m, const TableWidths& w, const Variant& v, Loader& l, bool cp,
                     Block& consts, Block& on_accept, Block& on_load, Block& always) {
  const int uw = w.uw, cw = w.cw;
  const Expr data = m.reg("ld_data_q", w.pw, v.word());
  const Expr left = m.reg("ld_left_q", cw + 1, "words left - 2, signed: < 0 for the last one");
  const Expr chm2 = m.reg("ld_chm2_q", cw + 1, "C - 2, signed (per job)");
  consts.push_back(assign(chm2, zext(l.chans, cw + 1) - lit(cw + 1, 2)));
  // The decrement adds open to every bit (left - 1 while open): synthesis (opt_lut -dlogic) folds
  // the reload select into the chain cell's sum LUT (left_k, open, the carry, chm2_k): no route
  // from the chain to a separate select LUT (4.2 ns on one UP5K placement). --target ecp5 (CCU2C
  // keeps the select out of the chain): left - 1, open only into the select LUT after it.
  const Expr dec = w.e5_table ? left - lit(cw + 1, 1) : left + ex::repl(cw + 1, l.open);
  always.push_back(if_(~l.open | l.accept, {assign(left, mux(l.open, dec, chm2))}));
  l.cnt = m.reg("ld_cnt_q", cw, "words taken: the channel of the next one");
  on_accept.push_back(assign(l.cnt, l.cnt + lit(cw, 1)));
  on_load.push_back(assign(l.cnt, lit(cw, 0)));
  if (!cp) {
    // The bank word written: cnt / P a cycle late (the bank is in ld_wen_q).
    l.u =
        m.reg("ld_u_q", w.ab, "the bank word written (the channel / " + std::to_string(w.P) + ")");
    always.push_back(assign(data, v.word_ports()));
    const int hb = std::min(cw - w.p, w.ab);  // cnt < MAX_CHANNELS <= P * 2^ab
    always.push_back(assign(l.u, hb > 0 ? zext(slice(l.cnt, w.p, hb), w.ab) : lit(w.ab, 0)));
    return;
  }
  l.u = m.reg("ld_u_q", uw, "table index written (T[u] = param[u mod C])");
  always.push_back(if_(l.ready, {assign(data, v.word_ports())}));
  // u: the word's channel after a word, u + C after a copy (ready and cpy are never both 1).
  always.push_back(assign(l.u, mux(l.ready, zext(l.cnt, uw), l.u + ex::fit(l.chans, uw))));
}

// Loader: exactly C words in channel order, one per cycle. Word c is written to T[c] one cycle
// after it is taken; a word with copies (banked: c < L - 1 at T[c + C], T[c + 2C], ... below
// C + L - 1; per-lane copies: at C .. L - 2) has them written in the following cycles,
// prm_ready_o low meanwhile (the direct table has no copies). Every register's next state is at
// most two LUT levels (and a short carry chain) from registers and prm_valid_i / abort_i:
// prm_ready_o, the write enables and the copy flags are registers computed a cycle ahead, "the
// next word is the last" is the sign of a down counter of the words left, and done_o is set by
// the final write's issue and cleared by a start.
void table_loader(Module& m, const TableWidths& w, const Variant& v) {
  const bool cp = w.wraps() || w.copies;
  m.section("Loader");
  const Expr abort = m.ref("abort_i");
  Loader l;
  l.load = m.ref("load_i");
  l.chans = m.ref("chans_i");
  l.valid = m.ref("prm_valid_i");
  l.ready = m.reg("ld_ready_q", 1, "prm_ready_o");
  const Expr we = m.reg("ld_we_q", 1, "write T[ld_u_q] = ld_data_q this cycle");
  const Expr fin = m.reg("ld_fin_q", 1, "no write after this cycle (the job's table complete)");
  l.accept = m.wire("ld_accept", 1);
  m.assign(l.accept, l.valid & l.ready);
  // Without copies ld_ready_q is also "words still expected" (no copy ever holds it low).
  l.open = cp ? m.reg("ld_open_q", 1, "words still expected") : l.ready;
  const Expr open = l.open;
  Block consts, on_accept, on_load, always;
  loader_counters(m, w, v, l, cp, consts, on_accept, on_load, always);
  const Expr lastw = m.wire("ld_lastw", 1, "the next word is channel C - 1");
  m.assign(lastw, bit(m.ref("ld_left_q"), w.cw));
  Block rst{assign(l.ready, lit(1, 0)), assign(we, lit(1, 0)), assign(fin, lit(1, 0))};
  Block go;
  if (!cp) {
    go = {assign(l.ready, ~abort & (l.load | (l.ready & ~(l.valid & lastw)))), assign(we, l.accept),
          assign(fin, ~abort & (fin | (l.accept & lastw)))};
  } else {
    l.cpy = l.more = l.small = lit(1, 0);
    copy_flags(m, w, l, consts, on_accept, on_load, always);
    const Expr act = m.reg("ld_act_q", 1, "a load since the last start");
    // ready stays; ready comes back (the last copy issued); the final write is issued now.
    const Expr keep = l.ready & ~(l.valid & (lastw | l.small));
    const Expr back = ~l.ready & open & ~(l.cpy & l.more);
    const Expr fin_set = (l.accept & lastw & ~l.small) | (act & ~open & l.cpy & ~l.more);
    for (const Expr& r : {open, act, l.cpy}) rst.push_back(assign(r, lit(1, 0)));
    go = {assign(open, ~abort & (l.load | (open & ~(l.accept & lastw)))),
          assign(l.ready, ~abort & (l.load | keep | back)),
          assign(we, l.accept | l.cpy),
          assign(fin, ~abort & (fin | fin_set)),
          assign(act, ~abort & (l.load | act)),
          assign(l.cpy, mux(l.ready, l.valid & l.small, l.cpy & l.more))};
  }
  bank_write_enables(m, w, l, rst, go, on_accept, on_load, always);
  // --target ice40, no copies: the counters' accept from a copy of ld_ready_q (ld_nrd_q or
  // ld_rdc_q, loader_ready_copy): an AND of their own, so their enable is one LUT of load_i,
  // prm_valid_i and the copy, not a LUT after the shared ld_accept LUT (as ntr_q for pos_en).
  const Expr cnt_accept =
      !cp && w.nrd > 0
          ? loader_ready_copy(m, w.nrd == 2, {abort, l.load, l.ready, l.valid, lastw}, rst, go)
          : l.accept;
  Block body{if_(ex::lnot(m.ref("rst_ni")), std::move(rst), std::move(go))};
  if (!on_accept.empty() || !on_load.empty()) {
    body.push_back(if_(l.load, std::move(on_load), {if_(cnt_accept, std::move(on_accept))}));
  }
  for (auto& st : always) body.push_back(std::move(st));
  m.seq(body);
  m.seq(consts);
  m.assign(m.ref("prm_ready_o"), l.ready);
  m.assign(m.ref("busy_o"), we);
  m.assign(m.ref("done_o"), fin);
  const Expr addr = m.wire("ld_addr", w.ab);
  const int uw = w.uw;
  if (!cp) {
    m.assign(addr, l.u);
  } else if (uw <= w.p) {
    m.assign(addr, lit(w.ab, 0));
  } else {
    m.assign(addr,
             w.p + w.ab <= uw ? slice(l.u, w.p, w.ab) : zext(slice(l.u, w.p, uw - w.p), w.ab));
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
      a = w.radd ? table_read_word(m, cw, p, ab, j)
                 : a + zext(ex::gt(c0_lo, lit(p, static_cast<U>(j))), ab);
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
    // c0 mod P and d_i registered as they come (beside the bank read), their sum mod P
    // registered beside the bank's output register: no adder after the tracker's outputs.
    std::vector<Flop> ff;
    const Expr c0q = m.reg("c0lo_q", p, "c0 mod " + std::to_string(w.P) + ", beside the bank read");
    ff.push_back(Flop{c0q, c0_lo, {}});
    for (int i = 0; i < L; ++i) {
      const Expr sq = m.reg(idx("sel2_q", i), p, "beside the bank's output register");
      if (i == 0) {
        ff.push_back(Flop{sq, c0q, {}});
        continue;
      }
      const Expr dq =
          m.reg(idx("d_q", i), p, "d_i mod " + std::to_string(w.P) + ", beside the bank read");
      ff.push_back(Flop{dq, slice(m.ref("lane_d_i"), (i - 1) * w.dp, p), {}});
      ff.push_back(Flop{sq, c0q + dq, {}});
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

// Per-lane copies: lane i's RAM holds T[c] = param[c], c < C (the loader writes every copy), read
// at u_i = (c0 + d_i) mod C. With e = C - c0 (1..C) lane i wraps exactly when e <= d_i, which
// needs e < 2^nb, i.e. c0 >= C + 1 - 2^nb (a compare with a per-job register): u_i is then (c0 +
// d_i - C) mod 2^k (< L - 1), else c0 + d_i (< C). t0 registers c0, d_i, e mod 2^nb and e < 2^nb
// (one short chain each from c0_i); t1 both candidates and the wrap flag, the read address their
// select (one LUT; --target ecp5: the select registered at t1, the address straight from flops);
// t2 the RAM's read register, t3 its output register (DP16KD's OUTREG, BRAM's DOB_REG; iCE40: FFs).
void table_copies_read(Module& m, const TableWidths& w, const Variant& v, const std::string& name) {
  const int L = w.L, cw = w.cw, ab = w.ab, dp = w.dp, nb = w.nb, k = std::min(nb, ab);
  m.section("Read side: lane i reads its own copy at (c0 + d_i) mod C");
  const Expr c0 = m.ref("c0_i"), chans = m.ref("chans_i");
  const Expr elo = m.wire("e_lo", nb, "(C - c0) mod 2^" + std::to_string(nb));
  m.assign(elo, ex::fit(chans, nb) - ex::fit(c0, nb));
  Expr esmall = lit(1, 1);
  if (cw > nb) {
    const Expr cmw = m.wire("cm_w", cw + 1, "C + 1 - 2^" + std::to_string(nb));  // < 0: C < 2^nb
    m.assign(cmw, zext(chans, cw + 1) - lit(cw + 1, (U{1} << nb) - 1));
    const Expr cm = m.reg("cm_q", cw, "max(0, C + 1 - 2^" + std::to_string(nb) + ") (per job)");
    m.seq({assign(cm, mux(bit(cmw, cw), lit(cw, 0), slice(cmw, 0, cw)))});
    esmall = m.wire("e_small", 1, "C - c0 < 2^" + std::to_string(nb));
    if (w.staged) {  // --target ecp5 / ice40: the carry of c0 + (2^cw - cm), straight into es_q
      const Expr ncm = m.reg("ncm_q", cw + 1, "2^cw - cm_q (per job)");
      m.seq({assign(ncm, lit(cw + 1, U{1} << cw) - zext(cm, cw + 1))});
      const Expr ges = m.wire("es_s", cw + 1, "c0 + 2^cw - cm: top bit c0 >= cm");
      m.assign(ges, zext(c0, cw + 1) + ncm);
      m.assign(esmall, bit(ges, cw));
      rtl::sink(m, "unused_es_s", {slice(ges, 0, cw)});
    } else {
      m.assign(esmall, ex::ge(c0, cm));
    }
  }
  // t0: c0, e and d_i registered as they come (no adder after the tracker's outputs).
  const Expr c0q = m.reg("c0_q", ab, "c0 (t0)"), eq = m.reg("e_q", nb, "(C - c0) mod 2^nb (t0)");
  const Expr esq = m.reg("es_q", 1, "C - c0 < 2^nb (t0)");
  std::vector<Flop> ff{{c0q, ex::fit(c0, ab), {}}, {eq, elo, {}}, {esq, esmall, {}}};
  // e5_wide with a high part: t1's address from t0's low sums (core_table_addr.cpp)
  const bool lsum = w.e5_wide && ab > nb;
  const Expr ch1 = lsum ? copies_high_inc(m, c0, nb, ab, ff) : Expr{};
  for (int i = 0; i < L; ++i) {
    const Expr raddr = m.wire(idx("raddr", i), ab);
    const Expr sq = w.e5_table && i > 0 ? Expr{}
                                        : m.reg(idx("s", i) + "_q", ab,
                                                i == 0 ? "c0 (t1)" : "c0 + d_i (when < C; t1)");
    if (i == 0) {
      ff.push_back(Flop{sq, c0q, {}});
      m.assign(raddr, sq, "c0 < C <= MAX_CHANNELS <= 2^ab");
    } else {
      const Expr d = m.reg(idx("d", i) + "_q", dp, "d_i (t0)");
      ff.push_back(Flop{d, slice(m.ref("lane_d_i"), (i - 1) * dp, dp), {}});
      const Expr wrap = esq & ex::le(eq, zext(d, nb));
      Expr sum = c0q + ex::fit(d, ab);
      if (lsum)
        sum = copies_low_sum(m, {c0, c0q, ch1, slice(m.ref("lane_d_i"), (i - 1) * dp, dp)}, nb, i,
                             ff);
      const Expr dif = ex::fit(d, k) - ex::fit(eq, k);
      if (w.e5_table) {  // --target ecp5: the address a register (t1), no LUT in front of DP16KD
        const Expr ra = m.reg(idx("ra", i) + "_q", ab, "(c0 + d_i) mod C (t1)");
        ff.push_back(Flop{ra, mux(wrap, zext(dif, ab), sum), {}});
        m.assign(raddr, ra);
      } else {
        const Expr wq = m.reg(idx("wrap", i) + "_q", 1, "c0 + d_i >= C (t1)");
        const Expr tq = m.reg(idx("t", i) + "_q", k, "c0 + d_i - C (when >= C; t1)");
        ff.insert(ff.end(), {Flop{sq, sum, {}}, Flop{wq, wrap, {}}, Flop{tq, dif, {}}});
        m.assign(raddr, mux(wq, zext(tq, ab), sq));
      }
    }
    m.wire(idx("word", i), w.pw, "four cycles after c0_i");
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

// One DP16KD in its pseudo dual-port 512 x 36 mode (as Yosys maps $__ECP5_PDPW16KD_: port A
// writes {DIB, DIA} at ADA13..5 with the byte enables ADA3..0, port B reads {DOB, DOA} at
// ADB13..5), REGMODE "OUTREG": the read register (enabled when not writing, as the behavioural
// RAM) and the output register inside the block.
void dp16kd(Module& m, const std::string& name, const Expr& di, const Expr& dout, int ab,
            bool read_always) {
  Instance in{"DP16KD", name, std::vector<std::pair<std::string, Expr>>{}};
  in.comment = "512 x 36, its read and output registers (REGMODE OUTREG)";
  for (const char* n : {"DATA_WIDTH_A", "DATA_WIDTH_B"}) in.parameters.push_back({n, 32, 36, {}});
  for (const char* n : {"REGMODE_A", "REGMODE_B"}) in.parameters.push_back({n, 0, 0, "OUTREG"});
  for (const char* n : {"RESETMODE", "ASYNC_RESET_RELEASE"})
    in.parameters.push_back({n, 0, 0, "SYNC"});
  for (const char* n : {"CSDECODE_A", "CSDECODE_B"}) in.parameters.push_back({n, 0, 0, "0b000"});
  in.parameters.push_back({"GSR", 0, 0, "AUTO"});
  const Expr wa = m.wire(name + "_wa", 9), ra = m.wire(name + "_ra", 9);
  m.assign(wa, ab >= 9 ? m.ref("waddr_i") : zext(m.ref("waddr_i"), 9));
  m.assign(ra, ab >= 9 ? m.ref("raddr_i") : zext(m.ref("raddr_i"), 9));
  ram_pins(in, "DIA", 0, di, 18);
  ram_consts(in, "ADA", 0, 15, 5);  // byte enables 1111, ADA4 = 0
  ram_pins(in, "ADA", 5, wa, 9);
  in.connections.emplace_back("CEA", m.ref("we_i"));
  in.connections.emplace_back("OCEA", lit(1, 1));
  in.connections.emplace_back("CLKA", m.ref("clk_i"));
  in.connections.emplace_back("WEA", lit(1, 1));
  in.connections.emplace_back("RSTA", lit(1, 0));
  ram_consts(in, "CSA", 0, 0, 3);
  ram_pins(in, "DOA", 0, dout, 18);
  ram_pins(in, "DIB", 0, di, 18, 18);
  ram_consts(in, "ADB", 0, 0, 5);
  ram_pins(in, "ADB", 5, ra, 9);
  in.connections.emplace_back("CEB", read_always ? lit(1, 1) : ~m.ref("we_i"));
  in.connections.emplace_back("OCEB", lit(1, 1));
  in.connections.emplace_back("CLKB", m.ref("clk_i"));
  in.connections.emplace_back("WEB", lit(1, 0));
  in.connections.emplace_back("RSTB", lit(1, 0));
  ram_consts(in, "CSB", 0, 0, 3);
  ram_pins(in, "DOB", 0, dout, 18, 18);
  m.instance(std::move(in));
}

}  // namespace

// --target ecp5 with an output register and at most 512 words: the RAM as ceil(width / 36)
// DP16KD blocks with their output registers, instantiated under `ifdef SYNTHESIS (Yosys 0.23's
// inference never sets REGMODE: the output register would be fabric flip-flops after DP16KD's
// slow clock-to-out), and the generic RAM otherwise (simulators and lint need no vendor cells).
// tests/gen/ecp5_dsp.sh simulates the instantiated branch (hw/tb/ecp5/DP16KD.v) and checks
// Yosys's netlist for REGMODE OUTREG.
Module build_table_ram(const CoreConfig& c, const RamSpec& spec) {
  const int ab = c.bank_addr_bits(), W = spec.width;
  if (c.target != "ecp5" || !spec.out_reg || ab > 9) return ram_module(spec);
  Module m;
  m.name = spec.name;
  m.description = spec.description;
  m.description.emplace_back("ECP5 (SYNTHESIS defined): DP16KD blocks with their output register.");
  m.in("clk_i", 1);
  m.in("we_i", 1, "write enable");
  m.in("waddr_i", ab);
  m.in("wdata_i", W);
  m.in("raddr_i", ab);
  m.out("rdata_o", W, "word at raddr_i two cycles before (output register)");
  m.ifdef("SYNTHESIS");
  const int nblk = (W + 35) / 36;
  std::vector<Expr> parts;
  for (int b = nblk - 1; b >= 0; --b) {
    const int n = std::min(36, W - 36 * b);
    const Expr di = m.wire(idx("ram_di", b), 36);
    m.assign(di, n == 36 ? slice(m.ref("wdata_i"), 36 * b, 36)
                         : zext(slice(m.ref("wdata_i"), 36 * b, n), 36));
    const Expr dq = m.wire(idx("ram_do", b), 36);
    dp16kd(m, idx("u_ram", b), di, dq, ab, spec.read_always);
    parts.push_back(slice(dq, 0, n));
    if (n < 36) m.assign(m.wire(idx("unused_ram_do", b), 1), ex::red_xor(slice(dq, n, 36 - n)));
  }
  m.assign(m.ref("rdata_o"), parts.size() == 1 ? parts.front() : ex::cat(std::move(parts)));
  m.else_();
  const Expr mem = m.memory("mem_q", W, spec.depth);
  if (spec.block_attr) m.attr_last("ram_style = \"block\"");
  const Expr rdata = m.reg("rdata_q", W);
  const Stmt rd = assign(rdata, ex::index(mem, m.ref("raddr_i")));
  m.always_ff({if_(m.ref("we_i"), {assign(ex::index(mem, m.ref("waddr_i")), m.ref("wdata_i"))}),
               spec.read_always ? rd : if_(ex::lnot(m.ref("we_i")), {rd})});
  const Expr rdo = m.reg("rdo_q", W, "output register");
  m.flops({{rdo, rdata, {}}});
  m.assign(m.ref("rdata_o"), rdo);
  m.endif();
  return m;
}

Module build_ptable(const CoreConfig& c, const Variant& v) {
  const TableWidths w(c, v);
  Module m;
  m.name = c.name + "_ptable";
  if (w.copies) {
    m.description = {
        "Parameter table, one copy per lane: lane i's RAM holds all C words (the load writes",
        "every copy at once) and is read at its own channel (c0 + d_i) mod C. No crossbar, no",
        "wrap-around copies; " + std::to_string(w.L) +
            " times the RAM of one table. Stages: c0 and d_i registered, the address candidates",
        "registered, RAM read, the RAM's output register."};
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
