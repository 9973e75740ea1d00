// Gearboxes and the AXI4 burst issuer shared by the accelerator's engines (prim_axi.hpp).
#include "prim_axi.hpp"

#include <algorithm>

#include "props.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::prim {

namespace {

using ex::lit;

int pow2_gcd(int pow2, int other) {
  int g = 1;
  while (g < pow2 && other % (g * 2) == 0) g *= 2;
  return g;
}

std::uint64_t u(int v) {
  return static_cast<std::uint64_t>(v);
}

// Full rate: a gearbox whose words of `push` units come in and whose groups of `pop` units leave
// takes a push whenever it holds at most this many units (a registered ready: it does not wait
// for this cycle's pop). Then a pop every cycle never starves when pushes are the faster side
// (the fill after a pop stays >= pop), and a push every cycle never stalls when pops are the
// faster side (the fill after a push stays <= the threshold). The buffer holds threshold + push.
int full_rate_threshold(int push, int pop) {
  return pop - 1 + std::min(push, pop);
}

// {e, lg'd0} (e times 2^lg) for lg > 0, else e.
Expr units_to_bits(const Expr& e, int lg) {
  return lg > 0 ? ex::cat({e, lit(lg, 0)}) : e;
}

// need / few / out_keep_o of the input gearbox: bits and keep of the next (maybe partial) group.
void gear_in_group(Module& m, int k, int ew, int nb, int tc) {
  const Expr need = m.wire("need", nb, "bits the next group needs");
  const Expr few = m.wire("few", 1, "fewer than " + std::to_string(k) + " elements left");
  const Expr left_q = m.ref("left_q");
  if (k == 1) {
    m.assign(few, lit(1, 0));
    m.assign(need, lit(nb, u(k * ew)));
    m.assign(m.ref("out_keep_o"), lit(1, 1));
    rtl::sink(m, "unused_few", {few});
    return;
  }
  const int kb = bits_for(k);
  m.assign(few, ex::lt(left_q, lit(tc, u(k))));
  const Expr left_few = m.wire("left_few", kb);
  m.assign(left_few, ex::fit(left_q, kb));
  m.assign(need, ex::mux(few, ex::zext(left_few, nb) * lit(nb, u(ew)), lit(nb, u(k * ew))));
  m.assign(m.ref("out_keep_o"),
           ex::mux(few, ex::shl(lit(k, 1), left_few) - lit(k, 1), ex::ones(k)));
}

}  // namespace

Module build_gear_in(const std::string& name, int in_bits, int ew, int k, int count_bits) {
  const int kew = k * ew;
  const int g = pow2_gcd(in_bits, kew);
  const int lg = clog2(g);
  const int au = in_bits / g, ku = kew / g;
  const int thr = full_rate_threshold(au, ku);
  const int cap = (thr + au) * g;
  const int fw = bits_for(cap / g);
  const int nb = bits_for(kew);  // holds a bit count up to k*ew
  const int tc = count_bits;
  Module m;
  m.name = name;
  m.description = {"Gearbox: " + std::to_string(in_bits) + "-bit words in, groups of " +
                       std::to_string(k) + " x " + std::to_string(ew) + "-bit elements out.",
                   "start_i loads the element count; the final group may be partial (keep, last);",
                   "padding after the final element is dropped. Fill is kept in " +
                       std::to_string(g) + "-bit units;",
                   "a word is taken while at most " + std::to_string(thr) +
                       " units are held: a word and a group every cycle at full rate."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr start = m.in("start_i", 1);
  const Expr total = m.in("total_i", tc, "elements in the stream");
  const Expr in_valid = m.in("in_valid_i", 1);
  const Expr in_ready = m.out("in_ready_o", 1);
  const Expr in_data = m.in("in_data_i", in_bits);
  const Expr out_valid = m.out("out_valid_o", 1);
  const Expr out_ready = m.in("out_ready_i", 1);
  const Expr out_data = m.out("out_data_o", kew);
  m.out("out_keep_o", k);
  const Expr out_last = m.out("out_last_o", 1);
  const Expr buf_q = m.reg("buf_q", cap);
  const Expr fill_q = m.reg("fill_q", fw, "units held");
  const Expr left_q = m.reg("left_q", tc, "elements still to emit");
  const Expr fill_bits = m.wire("fill_bits", fw + lg);
  m.assign(fill_bits, units_to_bits(fill_q, lg));
  gear_in_group(m, k, ew, nb, tc);
  const int cw = std::max(fw + lg, nb);
  m.assign(out_valid, ex::ne(left_q, lit(tc, 0)) &
                          ex::ge(ex::zext(fill_bits, cw), ex::zext(m.ref("need"), cw)));
  // left_q <= k, a constant 1 when k reaches left_q's largest value (e.g. a 1-bit count and
  // k = 1: lint would flag the compare as constant).
  const bool always_last = tc < 63 && static_cast<std::uint64_t>(k) + 1 >= (1ULL << tc);
  m.assign(out_last, always_last ? lit(1, 1) : ex::le(left_q, lit(tc, u(k))));
  m.assign(out_data, ex::slice(buf_q, 0, kew));
  m.assign(in_ready, ex::le(fill_q, lit(fw, u(thr))));
  const Expr pop = m.wire("pop", 1);
  m.assign(pop, out_valid & out_ready);
  const Expr push = m.wire("push", 1);
  m.assign(push, in_valid & in_ready);
  const Expr fill_after = m.wire("fill_after", fw, "after this cycle's pop");
  m.assign(fill_after, ex::mux(pop, fill_q - lit(fw, u(ku)), fill_q));
  const Expr buf_kept = m.wire("buf_kept", cap);
  m.assign(buf_kept, ex::mux(pop, rtl::shr_by(buf_q, kew), buf_q));
  const Expr in_shifted = m.wire("in_shifted", cap);
  m.assign(in_shifted, ex::shl(ex::zext(in_data, cap), units_to_bits(fill_after, lg)));
  rtl::Process p;
  p.resets = {
      {buf_q, lit(cap, 0)}, {fill_q, lit(fw, 0)}, {left_q, ex::mux(start, total, lit(tc, 0))}};
  p.clear = start;
  p.body = {
      if_(pop & out_last,
          {assign(buf_q, lit(cap, 0)), assign(fill_q, lit(fw, 0)), assign(left_q, lit(tc, 0))},
          {assign(buf_q, buf_kept | ex::mux(push, in_shifted, lit(cap, 0))),
           assign(fill_q, fill_after + ex::mux(push, lit(fw, u(au)), lit(fw, 0))),
           if_(pop, {assign(left_q, left_q - lit(tc, u(k)))})})};
  p.comment = "start_i restarts the stream";
  rtl::process(m, p);
  fv::Formal f(m);
  f.add(if_(start, {assume(~out_valid)}));
  fv::stream_rules(f, {"in", in_valid, in_ready, {in_data}}, true);
  fv::stream_rules(f, {"out", out_valid, out_ready, {out_data, m.ref("out_keep_o"), out_last}},
                   false);
  f.add(if_(out_valid, {assert_(fv::keep_ok(m.ref("out_keep_o"), out_last))}));
  f.done();
  return m;
}

Module build_gear_out(const std::string& name, int out_bits, int ew, int k) {
  const int kew = k * ew;
  const int g = pow2_gcd(out_bits, kew);
  const int lg = clog2(g);
  const int au = out_bits / g, ku = kew / g;
  const int thr = full_rate_threshold(ku, au);
  const int cap = (thr + ku) * g;
  const int fw = bits_for(cap / g);
  const int nb = bits_for(kew + g);
  const int kb = bits_for(k);
  Module m;
  m.name = name;
  m.description = {"Gearbox: groups of " + std::to_string(k) + " x " + std::to_string(ew) +
                       "-bit elements in (keep, last), " + std::to_string(out_bits) +
                       "-bit words out.",
                   "After the group with last, the remaining bits leave as a final partial word.",
                   "A group is taken while at most " + std::to_string(thr) + " " +
                       std::to_string(g) + "-bit units are held: a group and a word every",
                   "cycle at full rate."};
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  const Expr in_valid = m.in("in_valid_i", 1);
  const Expr in_ready = m.out("in_ready_o", 1);
  const Expr in_data = m.in("in_data_i", kew, "elements beyond keep must be zero");
  const Expr in_keep = m.in("in_keep_i", k, "contiguous from element 0");
  const Expr in_last = m.in("in_last_i", 1);
  const Expr out_valid = m.out("out_valid_o", 1);
  const Expr out_ready = m.in("out_ready_i", 1);
  const Expr out_data = m.out("out_data_o", out_bits);
  const Expr buf_q = m.reg("buf_q", cap);
  const Expr fill_q = m.reg("fill_q", fw, "units held");
  const Expr flush_q = m.reg("flush_q", 1, "the last group is in: drain everything");
  const Expr full = ex::ge(fill_q, lit(fw, u(au)));
  m.assign(in_ready, ~flush_q & ex::le(fill_q, lit(fw, u(thr))));
  m.assign(out_valid, full | (flush_q & ex::ne(fill_q, lit(fw, 0))));
  m.assign(out_data, ex::slice(buf_q, 0, out_bits));
  const Expr pop = m.wire("pop", 1);
  m.assign(pop, out_valid & out_ready);
  const Expr push = m.wire("push", 1);
  m.assign(push, in_valid & in_ready);
  const Expr fill_after = m.wire("fill_after", fw);
  m.assign(fill_after, ex::mux(pop, ex::mux(full, fill_q - lit(fw, u(au)), lit(fw, 0)), fill_q));
  // Units a group adds: all k elements, or ceil(count * ew / g) for the last one.
  const Expr pc = rtl::popcount(m, "keep_pc", in_keep, kb);
  const Expr cnt = m.wire("cnt", kb, "elements in this group");
  m.assign(cnt, pc);
  const Expr last_bits = m.wire("last_bits", nb);
  m.assign(last_bits, ex::zext(cnt, nb) * lit(nb, u(ew)) + lit(nb, u(g - 1)));
  Expr last_units = last_bits;
  if (lg > 0) {
    last_units = m.wire("last_units", nb - lg);
    m.assign(last_units, ex::slice(last_bits, lg, nb - lg));
    rtl::sink(m, "unused_last_bits", {ex::slice(last_bits, 0, lg)});
  }
  const Expr add_units = m.wire("add_units", fw);
  m.assign(add_units, ex::mux(in_last, ex::fit(last_units, fw), lit(fw, u(ku))));
  const Expr buf_kept = m.wire("buf_kept", cap);
  m.assign(buf_kept, ex::mux(pop, rtl::shr_by(buf_q, out_bits), buf_q));
  const Expr in_shifted = m.wire("in_shifted", cap);
  m.assign(in_shifted, ex::shl(ex::zext(in_data, cap), units_to_bits(fill_after, lg)));
  const Expr fill_next = m.wire("fill_next", fw);
  m.assign(fill_next, fill_after + ex::mux(push, add_units, lit(fw, 0)));
  rtl::Process p;
  p.resets = {{buf_q, lit(cap, 0)}, {fill_q, lit(fw, 0)}, {flush_q, lit(1, 0)}};
  p.body = {assign(buf_q, buf_kept | ex::mux(push, in_shifted, lit(cap, 0))),
            assign(fill_q, fill_next),
            if_(push & in_last, {assign(flush_q, lit(1, 1))},
                {if_(ex::eq(fill_next, lit(fw, 0)), {assign(flush_q, lit(1, 0))})})};
  rtl::process(m, p);
  fv::Formal f(m);
  fv::stream_rules(f, {"in", in_valid, in_ready, {in_data, in_keep, in_last}}, true);
  f.add(if_(in_valid, {assume(fv::keep_ok(in_keep, in_last))}));
  fv::stream_rules(f, {"out", out_valid, out_ready, {out_data}}, false);
  f.done();
  return m;
}

// ---------------------------------------------------------------------------------------------
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

namespace {

// b_to4k, b_cap, b_len: the next burst's length.
Expr burst_len(Module& m, const AccelConfig& c, const BurstIssuer& b) {
  const int bl = clog2(c.bus_bytes());
  const int wpb = 4096 / c.bus_bytes();  // words per 4 KiB
  const int ob = 12 - bl;                // bits of the word offset inside 4 KiB
  const int lb = b.len_bits, wb = b.left_q.width();
  const Expr to4k = m.wire("b_to4k", lb, "words to the next 4 KiB boundary");
  m.assign(to4k, lit(lb, u(wpb)) - ex::zext(ex::slice(b.addr_q, bl, ob), lb));
  const Expr cap = m.wire("b_cap", lb);
  m.assign(cap, ex::mux(ex::lt(to4k, lit(lb, u(c.max_burst))), to4k, lit(lb, u(c.max_burst))));
  const Expr len = m.wire("b_len", lb, "words in the next burst");
  const int cw = std::max(wb, lb);
  m.assign(len,
           ex::mux(ex::lt(ex::zext(b.left_q, cw), ex::zext(cap, cw)), ex::fit(b.left_q, lb), cap));
  return len;
}

}  // namespace

BurstIssuer burst_issuer(Module& m, const AccelConfig& c, const std::string& ch, int wb,
                         const std::string& left_comment) {
  BurstIssuer b;
  b.ch = ch;
  b.len_bits = bits_for(std::max(c.max_burst, 4096 / c.bus_bytes()));
  b.valid_q = m.reg(ch + "_valid_q", 1);
  b.ax_addr_q = m.reg(ch + "_addr_q", c.addr_bits);
  b.ax_len_q = m.reg(ch + "_len_q", 8);
  b.addr_q = m.reg("addr_q", c.addr_bits, ch == "ar" ? "next burst address" : "");
  b.left_q = m.reg("left_q", wb, left_comment);
  b.len = burst_len(m, c, b);
  return b;
}

Expr burst_issue(Module& m, const BurstIssuer& b, const Expr& err_q,
                 const std::vector<Expr>& extra) {
  // Back to back: the next burst may be presented in the cycle the current one is accepted.
  const Expr free = ~b.valid_q | m.ref("m_axi_" + b.ch + "ready");
  std::vector<Expr> terms = {free, ex::ne(b.left_q, lit(b.left_q.width(), 0)), ~m.ref("abort_i"),
                             ~err_q};
  for (const auto& e : extra) terms.push_back(e);
  const Expr issue = m.wire("issue", 1);
  m.assign(issue, ex::all_and(terms));
  return issue;
}

void burst_logic(Module& m, const AccelConfig& c, const BurstIssuer& b, const Expr& issue) {
  const int aw = c.addr_bits, wb = b.left_q.width();
  const int bl = clog2(c.bus_bytes());
  const std::string ax = "m_axi_" + b.ch;
  rtl::Process p;
  p.resets = {{b.valid_q, lit(1, 0)}, {b.left_q, lit(wb, 0)}};
  p.body = {if_(m.ref("start_i"),
                {assign(b.addr_q, m.ref("addr_i")), assign(b.left_q, m.ref("words_i"))},
                {if_(issue,
                     {assign(b.valid_q, lit(1, 1)), assign(b.ax_addr_q, b.addr_q),
                      assign(b.ax_len_q, ex::fit(b.len, 8) - lit(8, 1)),
                      assign(b.addr_q, b.addr_q + rtl::shl_by(ex::zext(b.len, aw), bl)),
                      assign(b.left_q, b.left_q - ex::zext(b.len, wb))},
                     {if_(m.ref(ax + "ready"), {assign(b.valid_q, lit(1, 0))})})})};
  p.comment = "Burst issue: START loads the job, an issue presents the next burst";
  rtl::process(m, p);
  m.assign(m.ref(ax + "valid"), b.valid_q);
  m.assign(m.ref(ax + "addr"), b.ax_addr_q);
  m.assign(m.ref(ax + "len"), b.ax_len_q);
  m.assign(m.ref(ax + "id"), lit(c.id_bits, 0));
  m.assign(m.ref(ax + "size"), lit(3, u(bl)), "full bus width");
  m.assign(m.ref(ax + "burst"), rtl::bin_lit(2, 1), "INCR");
  m.assign(m.ref(ax + "lock"), lit(1, 0));
  m.assign(m.ref(ax + "cache"), rtl::bin_lit(4, 3), "normal, non-cacheable, bufferable");
  m.assign(m.ref(ax + "prot"), rtl::bin_lit(3, 0));
}

}  // namespace normcore::gen::prim
