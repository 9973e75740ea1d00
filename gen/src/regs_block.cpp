// The AXI4-Lite register block built from the register description (build_regblock), in the
// typed IR: next-state logic in always @* blocks, flops as q <= d.
#include <stdexcept>

#include "normcore/gen/regs.hpp"
#include "props.hpp"
#include "regs_internal.hpp"
#include "rtl_util.hpp"

namespace normcore::gen {

namespace {

using regs_detail::base_name;
using regs_detail::hex;
using regs_detail::lower;
using rtl::bin_lit;
using rtl::hex_lit;
using rtl::RegPair;

bool writable(Access a) {
  return a != Access::ro;
}

// The slices of the 32-bit `e` at the runs of set bits in mask, high bits first.
std::vector<Expr> runs(const Expr& e, std::uint32_t mask) {
  std::vector<Expr> out;
  for (int b = 31; b >= 0;) {
    if (((mask >> b) & 1U) == 0) {
      --b;
      continue;
    }
    int lo = b;
    while (lo > 0 && ((mask >> (lo - 1)) & 1U) != 0) --lo;
    out.push_back(ex::slice(e, lo, b - lo + 1));
    b = lo - 1;
  }
  return out;
}

void add_ports(Module& m, const RegisterMap& map) {
  const int A = map.addr_bits;
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  m.in("s_axil_awaddr", A);
  m.in("s_axil_awprot", 3, "ignored");
  m.in("s_axil_awvalid", 1);
  m.out("s_axil_awready", 1);
  m.in("s_axil_wdata", 32);
  m.in("s_axil_wstrb", 4);
  m.in("s_axil_wvalid", 1);
  m.out("s_axil_wready", 1);
  m.out("s_axil_bresp", 2, "0: OKAY, 2: SLVERR (unmapped)");
  m.out("s_axil_bvalid", 1);
  m.in("s_axil_bready", 1);
  m.in("s_axil_araddr", A);
  m.in("s_axil_arprot", 3, "ignored");
  m.in("s_axil_arvalid", 1);
  m.out("s_axil_arready", 1);
  m.out("s_axil_rdata", 32);
  m.out("s_axil_rresp", 2, "0: OKAY, 2: SLVERR (unmapped)");
  m.out("s_axil_rvalid", 1);
  m.in("s_axil_rready", 1);
  for (const auto& r : map.regs) {
    for (const auto& f : r.fields) {
      const std::string b = base_name(r, f);
      const std::string what = r.name + "." + f.name + ": " + f.desc;
      switch (f.access) {
        case Access::ro:
          if (!f.hw_const) m.in(b + "_i", f.width, what);
          break;
        case Access::rw:
          m.out(b + "_o", f.width, what);
          break;
        case Access::w1c:
          m.in(b + "_set_i", f.width, r.name + "." + f.name + ": set (wins over a clear)");
          m.out(b + "_o", f.width, what);
          break;
        case Access::w1s_sc:
          m.out(b + "_o", f.width, r.name + "." + f.name + ": one-cycle pulse after a write of 1");
          break;
      }
    }
  }
}

// The word addresses of the map's registers as WA-bit literals.
std::vector<Expr> word_addrs(const RegisterMap& map, int WA) {
  std::vector<Expr> out;
  for (const auto& r : map.regs) out.push_back(hex_lit(WA, r.offset >> 2));
  return out;
}

// Hold-then-commit write channel: aw_*, w_*, b_* flops, wr_en, wr_mask, wr_hit.
void write_channel(Module& m, const RegisterMap& map) {
  const int WA = map.addr_bits - 2;
  const Expr zero = bin_lit(1, 0), one = bin_lit(1, 1);
  m.section("Write channel: AW and W are held until both are there, then the write commits");
  const RegPair aw_full = rtl::reg_pair(m, "aw_full", 1, "write address held");
  const RegPair aw_addr = rtl::reg_pair(m, "aw_addr", WA, "word address");
  const RegPair w_full = rtl::reg_pair(m, "w_full", 1, "write data held");
  const RegPair w_data = rtl::reg_pair(m, "w_data", 32);
  const RegPair w_strb = rtl::reg_pair(m, "w_strb", 4);
  const RegPair b_valid = rtl::reg_pair(m, "b_valid", 1);
  const RegPair b_resp = rtl::reg_pair(m, "b_resp", 2);
  const Expr aw_take = m.wire("aw_take", 1);
  const Expr w_take = m.wire("w_take", 1);
  const Expr wr_en = m.wire("wr_en", 1, "the held write commits this cycle");
  const Expr wr_mask = m.wire("wr_mask", 32, "WSTRB per bit");
  const Expr wr_hit = m.reg("wr_hit", 1, "the held write address is mapped");
  m.assign(aw_take, m.ref("s_axil_awvalid") & ~aw_full.q);
  m.assign(w_take, m.ref("s_axil_wvalid") & ~w_full.q);
  m.assign(wr_en, aw_full.q & w_full.q & ~b_valid.q);
  std::vector<Expr> strb;
  for (int i = 3; i >= 0; --i) strb.push_back(ex::repl(8, ex::bit(w_strb.q, i)));
  m.assign(wr_mask, ex::cat(strb));
  m.always_comb({assign(wr_hit, zero),
                 case_(aw_addr.q, std::vector<CaseArm>{{word_addrs(map, WA), {assign(wr_hit, one)}},
                                                       {{}, {assign(wr_hit, zero)}}})});
  m.always_comb(
      {assign(aw_full.d, aw_full.q), assign(w_full.d, w_full.q), assign(b_valid.d, b_valid.q),
       assign(b_resp.d, b_resp.q), assign(aw_addr.d, aw_addr.q), assign(w_data.d, w_data.q),
       assign(w_strb.d, w_strb.q),
       if_(aw_take, {assign(aw_full.d, one)}, {if_(wr_en, {assign(aw_full.d, zero)})}),
       if_(w_take, {assign(w_full.d, one)}, {if_(wr_en, {assign(w_full.d, zero)})}),
       if_(wr_en,
           {assign(b_valid.d, one),
            assign(b_resp.d, ex::mux(wr_hit, bin_lit(2, 0), bin_lit(2, 2)))},
           {if_(m.ref("s_axil_bready"), {assign(b_valid.d, zero)})}),
       if_(aw_take, {assign(aw_addr.d, ex::slice(m.ref("s_axil_awaddr"), 2, WA))}),
       if_(w_take,
           {assign(w_data.d, m.ref("s_axil_wdata")), assign(w_strb.d, m.ref("s_axil_wstrb"))})});
  m.flops({{aw_full.q, aw_full.d, zero},
           {w_full.q, w_full.d, zero},
           {b_valid.q, b_valid.d, zero},
           {b_resp.q, b_resp.d, bin_lit(2, 0)},
           {aw_addr.q, aw_addr.d, {}},
           {w_data.q, w_data.d, {}},
           {w_strb.q, w_strb.d, {}}});
  m.assign(m.ref("s_axil_awready"), ~aw_full.q);
  m.assign(m.ref("s_axil_wready"), ~w_full.q);
  m.assign(m.ref("s_axil_bvalid"), b_valid.q);
  m.assign(m.ref("s_axil_bresp"), b_resp.q);
}

// The flops of r's writable fields and r's read value <reg>_rd. Returns the bits of w_data_q /
// wr_mask that the fields read.
std::uint32_t register_logic(Module& m, const RegisterMap& map, const Register& r) {
  const int WA = map.addr_bits - 2;
  const std::string rl = lower(r.name);
  bool any_w = false;
  for (const auto& f : r.fields) any_w = any_w || writable(f.access);
  m.section(hex(r.offset, 3) + " " + r.name + ": " + r.desc);
  Expr wr;
  if (any_w) {
    wr = m.wire(rl + "_wr", 1);
    m.assign(wr, m.ref("wr_en") & ex::eq(m.ref("aw_addr_q"), hex_lit(WA, r.offset >> 2)));
  }
  std::uint32_t wbits = 0;
  Block body, rw_writes;
  std::vector<Flop> flops;
  for (const auto* fp : regs_detail::fields_by_lsb(r)) {
    const Field& f = *fp;
    if (!writable(f.access)) continue;
    wbits |= f.mask();
    const std::string b = base_name(r, f);
    const Expr d = ex::slice(m.ref("w_data_q"), f.lsb, f.width);
    const Expr msk = ex::slice(m.ref("wr_mask"), f.lsb, f.width);
    const RegPair p = rtl::reg_pair(m, b, f.width);
    flops.push_back({p.q, p.d, hex_lit(f.width, f.reset)});
    switch (f.access) {
      case Access::rw:
        body.push_back(assign(p.d, p.q));
        rw_writes.push_back(assign(p.d, (p.q & ~msk) | (d & msk)));
        break;
      case Access::w1c: {
        const Expr clr = m.wire(b + "_clr", f.width, "software clear");
        m.assign(clr, ex::mux(wr, d & msk, hex_lit(f.width, 0)));
        body.push_back(assign(p.d, m.ref(b + "_set_i") | (p.q & ~clr)));
        break;
      }
      case Access::w1s_sc:
        body.push_back(assign(p.d, ex::mux(wr, d & msk, hex_lit(f.width, 0))));
        break;
      case Access::ro:
        break;
    }
    m.assign(m.ref(b + "_o"), p.q);
  }
  if (!rw_writes.empty()) body.push_back(if_(wr, std::move(rw_writes)));
  if (any_w) {
    m.always_comb(std::move(body));
    m.flops(flops);
  }
  return wbits;
}

// <reg>_rd: the 32-bit read value of r (reserved bits 0).
void read_value(Module& m, const Register& r) {
  std::vector<Expr> parts;
  int next = 32;  // one above the last bit placed
  const auto sorted = regs_detail::fields_by_lsb(r);
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
    const Field& f = **it;
    if (f.msb() + 1 < next) parts.push_back(hex_lit(next - f.msb() - 1, 0));
    const std::string b = base_name(r, f);
    switch (f.access) {
      case Access::ro:
        parts.push_back(f.hw_const ? hex_lit(f.width, f.reset) : m.ref(b + "_i"));
        break;
      case Access::rw:
      case Access::w1c:
        parts.push_back(m.ref(b + "_q"));
        break;
      case Access::w1s_sc:
        parts.push_back(hex_lit(f.width, 0));
        break;
    }
    next = f.lsb;
  }
  if (next > 0) parts.push_back(hex_lit(next, 0));
  m.assign(m.wire(lower(r.name) + "_rd", 32, "read value"), ex::cat(parts));
}

// AR accepted -> the read value registered in r_data_q.
void read_channel(Module& m, const RegisterMap& map) {
  const int WA = map.addr_bits - 2;
  const Expr zero = bin_lit(1, 0), one = bin_lit(1, 1);
  m.section("Read channel: the read value is registered when AR is accepted");
  const RegPair r_valid = rtl::reg_pair(m, "r_valid", 1);
  const RegPair r_data = rtl::reg_pair(m, "r_data", 32);
  const RegPair r_resp = rtl::reg_pair(m, "r_resp", 2);
  const Expr ar_take = m.wire("ar_take", 1);
  const Expr ar_addr = m.wire("ar_addr", WA, "word address");
  const Expr rd_data = m.reg("rd_data", 32);
  const Expr rd_hit = m.reg("rd_hit", 1);
  m.assign(ar_take, m.ref("s_axil_arvalid") & ~r_valid.q);
  m.assign(ar_addr, ex::slice(m.ref("s_axil_araddr"), 2, WA));
  std::vector<CaseArm> arms;
  for (const auto& r : map.regs) {
    arms.push_back({{hex_lit(WA, r.offset >> 2)}, {assign(rd_data, m.ref(lower(r.name) + "_rd"))}});
  }
  arms.push_back({{}, {assign(rd_hit, zero)}});
  m.always_comb(
      {assign(rd_data, hex_lit(32, 0)), assign(rd_hit, one), case_(ar_addr, std::move(arms))});
  m.always_comb({assign(r_valid.d, r_valid.q), assign(r_data.d, r_data.q),
                 assign(r_resp.d, r_resp.q),
                 if_(ar_take,
                     {assign(r_valid.d, one), assign(r_data.d, rd_data),
                      assign(r_resp.d, ex::mux(rd_hit, bin_lit(2, 0), bin_lit(2, 2)))},
                     {if_(m.ref("s_axil_rready"), {assign(r_valid.d, zero)})})});
  m.flops({{r_valid.q, r_valid.d, zero},
           {r_data.q, r_data.d, hex_lit(32, 0)},
           {r_resp.q, r_resp.d, bin_lit(2, 0)}});
  m.assign(m.ref("s_axil_arready"), ~r_valid.q);
  m.assign(m.ref("s_axil_rvalid"), r_valid.q);
  m.assign(m.ref("s_axil_rdata"), r_data.q);
  m.assign(m.ref("s_axil_rresp"), r_resp.q);
}

}  // namespace

namespace regs_detail {

Module build_regblock_unchecked(const RegisterMap& map, const std::string& module_name) {
  Module m;
  m.name = module_name;
  m.description = {
      "AXI4-Lite register block of " + map.block + " (" + std::to_string(map.regs.size()) +
          " registers), generated from the register description.",
      "AW and W are accepted independently (either first), one write and one read at a time;",
      "WSTRB is honoured per byte; OKAY for mapped offsets, SLVERR (write ignored, read 0) for",
      "unmapped ones; the low two address bits are ignored. Reset: rst_ni, synchronous, active "
      "low."};
  add_ports(m, map);
  write_channel(m, map);
  std::uint32_t wbits = 0;  // bits of w_data_q / wr_mask that some field reads
  for (const auto& r : map.regs) {
    wbits |= register_logic(m, map, r);
    read_value(m, r);
  }
  read_channel(m, map);
  // Inputs and bits that nothing reads.
  std::vector<Expr> unused = {ex::slice(m.ref("s_axil_awaddr"), 0, 2), m.ref("s_axil_awprot"),
                              ex::slice(m.ref("s_axil_araddr"), 0, 2), m.ref("s_axil_arprot")};
  for (const auto& s : runs(m.ref("w_data_q"), ~wbits)) unused.push_back(s);
  for (const auto& s : runs(m.ref("wr_mask"), ~wbits)) unused.push_back(s);
  m.section("Deliberately unread: protection bits, byte offsets, data bits of no writable field");
  rtl::sink(m, "unused_inputs", unused);
  fv::Formal f(m);
  fv::axil_slave(f);
  f.done();
  return m;
}

}  // namespace regs_detail

Module build_regblock(const RegisterMap& map, const std::string& module_name) {
  if (auto err = map.check(); !err.empty()) throw std::invalid_argument(err);
  Module m = regs_detail::build_regblock_unchecked(map, module_name);
  m.validate();
  return m;
}

}  // namespace normcore::gen
