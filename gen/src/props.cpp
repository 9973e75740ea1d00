// Protocol properties inside the generated RTL (props.hpp).
#include "props.hpp"

#include <algorithm>

#include "normcore/gen/config.hpp"

namespace normcore::gen::fv {

using ex::lit;

namespace {
std::uint64_t u(int v) {
  return static_cast<std::uint64_t>(v);
}
// a == b at the wider of the two widths.
Expr eq_w(const Expr& a, const Expr& b) {
  const int w = std::max(a.width(), b.width());
  return ex::eq(ex::zext(a, w), ex::zext(b, w));
}
}  // namespace

Formal::Formal(Module& m) : m_(m) {
  m_.formal_begin();
  m_.section("Formal properties (yosys read_verilog -formal; scripts/prove_props.py)");
  past_ = m_.reg("f_past_q", 1, "0 in the first cycle (in reset), then 1");
  std::get<Net>(m_.items.back()).init = "1'b0";
  flops_.push_back({past_, lit(1, 1), {}});
}

Expr Formal::reg(const std::string& name, int width, const std::string& comment) {
  return m_.reg("f_" + name + "_q", width, comment);
}

Expr Formal::wire(const std::string& name, const Expr& value, const std::string& comment) {
  const Expr w = m_.wire("f_" + name, value.width(), comment);
  m_.assign(w, value);
  return w;
}

Expr Formal::anyseq(const std::string& name, int width, const std::string& comment) {
  const Expr w = m_.wire("f_" + name, width, comment);
  m_.attr_last("anyseq");
  return w;
}

void Formal::next(const Expr& q, const Expr& d, const Expr& first) {
  flops_.push_back({q, first.valid() ? ex::mux(past_, d, first) : d, {}});
}

void Formal::add(Stmt s) {
  checks_.push_back(std::move(s));
}

void Formal::done() {
  m_.flops(flops_, "formal: history");
  Block body{note("the first cycle resets the design; no reset after it"),
             assume(ex::eq(m_.ref("rst_ni"), past_)), if_(past_, std::move(checks_))};
  m_.always_ff(std::move(body), "formal: checks (from the second cycle)");
  m_.formal_end();
}

void stream_rules(Formal& f, const Stream& s, bool as_assumption) {
  const Expr stall = f.reg(s.name + "_stall", 1, s.name + ": valid and not ready");
  f.next(stall, f.past() & s.valid & ~s.ready, lit(1, 0));
  const auto chk = [&](Expr c) {
    return as_assumption ? assume(std::move(c)) : assert_(std::move(c));
  };
  Block held{chk(s.valid)};
  if (!s.payload.empty()) {
    const Expr pay = ex::cat(s.payload);
    const Expr prev = f.reg(s.name + "_data", pay.width());
    f.next(prev, pay);
    held.push_back(chk(ex::eq(pay, prev)));
  }
  f.add(note(s.name + ": valid held until ready, payload stable while stalled"));
  f.add(if_(stall, std::move(held)));
}

Expr keep_ok(const Expr& keep, const Expr& last) {
  const int w = keep.width();
  if (w == 1) return keep;
  const Expr contiguous = ex::eq(keep & (keep + lit(w, 1)), lit(w, 0));
  return ex::all_and({contiguous, ex::ne(keep, lit(w, 0)), last | ex::eq(keep, ex::ones(w))});
}

Expr channel(Formal& f, const Channel& c) {
  const int cb = bits_for(c.capacity + 1);
  const Expr cnt = f.reg(c.name + "_cnt", cb, c.name + ": beats held");
  const Expr in = ex::zext(c.in_fire, cb), out = ex::zext(c.out_fire, cb);
  f.next(cnt, cnt + in - out, lit(cb, 0));
  f.add(
      note(c.name + ": at most " + std::to_string(c.capacity) +
           " beats held, none out of an empty buffer; a tracked beat leaves intact and in order"));
  f.add(assert_(ex::le(cnt, lit(cb, u(c.capacity)))));
  f.add(if_(c.out_fire, {assert_(ex::ne(cnt, lit(cb, 0)))}));
  if (c.held.valid()) f.add(assert_(eq_w(c.held, cnt)));
  if (c.out_valid.valid()) f.add(assert_(ex::eq(c.out_valid, ex::ne(cnt, lit(cb, 0)))));
  // The tracked beat: picked when accepted; `ahead` beats leave before it.
  const Expr pick = f.anyseq(c.name + "_pick", 1, "track the beat accepted now");
  const Expr trk = f.reg(c.name + "_trk", 1, "a beat is tracked");
  const Expr val = f.reg(c.name + "_val", c.in_data.width());
  const Expr ahead = f.reg(c.name + "_ahead", cb, "beats to leave before it");
  const Expr start = f.wire(c.name + "_start", ~trk & pick & c.in_fire);
  const Expr leave = f.wire(c.name + "_leave", trk & c.out_fire & ex::eq(ahead, lit(cb, 0)));
  f.next(trk, ex::mux(start, lit(1, 1), ex::mux(leave, lit(1, 0), trk)), lit(1, 0));
  f.next(val, ex::mux(start, c.in_data, val));
  f.next(ahead, ex::mux(start, cnt - out, ex::mux(trk & c.out_fire, ahead - lit(cb, 1), ahead)));
  f.add(if_(trk, {assert_(ex::lt(ahead, cnt))}));
  f.add(if_(leave, {assert_(ex::eq(c.out_data, val))}));
  return cnt;
}

void axil_slave(Formal& f) {
  Module& m = f.mod();
  const auto r = [&](const std::string& n) { return m.ref("s_axil_" + n); };
  stream_rules(f, {"aw", r("awvalid"), r("awready"), {r("awaddr"), r("awprot")}}, true);
  stream_rules(f, {"w", r("wvalid"), r("wready"), {r("wdata"), r("wstrb")}}, true);
  stream_rules(f, {"ar", r("arvalid"), r("arready"), {r("araddr"), r("arprot")}}, true);
  stream_rules(f, {"b", r("bvalid"), r("bready"), {r("bresp")}}, false);
  stream_rules(f, {"r", r("rvalid"), r("rready"), {r("rdata"), r("rresp")}}, false);
  // Requests accepted and not yet answered (each at most 2: one answered-pending, one new).
  const auto count = [&](const std::string& n, const Expr& up, const Expr& dn) {
    const Expr q = f.reg(n, 2, n + ": accepted, not yet answered");
    f.next(q, q + ex::zext(up, 2) - ex::zext(dn, 2), lit(2, 0));
    return q;
  };
  const Expr bfire = r("bvalid") & r("bready"), rfire = r("rvalid") & r("rready");
  const Expr awn = count("awn", r("awvalid") & r("awready"), bfire);
  const Expr wn = count("wn", r("wvalid") & r("wready"), bfire);
  const Expr arn = count("arn", r("arvalid") & r("arready"), rfire);
  f.add(note("one response per request: B only for an accepted AW and W, R for an accepted AR"));
  f.add(if_(r("bvalid"), {assert_(ex::ne(awn, lit(2, 0)) & ex::ne(wn, lit(2, 0)))}));
  f.add(assert_(ex::le(awn, lit(2, 2)) & ex::le(wn, lit(2, 2)) & ex::le(arn, lit(2, 1))));
  f.add(assert_(ex::eq(r("rvalid"), ex::eq(arn, lit(2, 1)))));
  // A write whose address and data are both in and that has no response out gets one next.
  const Expr due = f.reg("b_due", 1, "a complete write without its response");
  f.next(due, ex::ne(awn, lit(2, 0)) & ex::ne(wn, lit(2, 0)) & ~r("bvalid"), lit(1, 0));
  f.add(if_(due, {assert_(r("bvalid"))}));
  f.add(cover(bfire & ex::eq(r("bresp"), lit(2, 0))));
  f.add(cover(rfire & ex::eq(r("rresp"), lit(2, 0))));
}

Expr burst_in_4k(const Expr& addr, const Expr& len, int bus_bytes) {
  const int bl = clog2(bus_bytes), w = 18;
  const Expr off = ex::zext(ex::slice(addr, 0, std::min(12, addr.width())), w);
  const Expr beats = ex::zext(len, w) + lit(w, 1);
  const Expr bytes = bl > 0 ? ex::shl(beats, lit(bits_for(bl), u(bl))) : beats;
  return ex::le(off + bytes, lit(w, 4096));
}

}  // namespace normcore::gen::fv
