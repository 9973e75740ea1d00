// The descriptor ring of <n>_ctrl (`--ring`; docs/architecture.md "Descriptor ring", the
// register reference's "Descriptor ring" note; runtime/src/ref_ring.cpp is the contract).
// IDLE -> FETCH (the 64-byte descriptor at RING_BASE + (TAIL mod 2^k) * 64 through the read DMA,
// its words taken from the read DMA into desc_q, past the read FIFO) -> DSNAP (the job registers
// from it) -> the START job's SIZES, CHECK, CFG .. RUN (or, for a descriptor that keeps the loaded
// table, CHECK
// -> RUN: no datapath flush, no core set-up, no parameter read) -> WB (the status words pushed
// into the write FIFO and written to bytes 48..63) -> IDLE with TAIL + 1. A failure writes the
// status, then stops the ring; a fetch or write-back error stops it without a status.
#include "accel_ctrl.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::accel_detail {

namespace {

using ex::lit;

// Bytes of the descriptor (the register reference's table) and bit positions of MODE's fields
// (regs_map.cpp: layout bit 0, rounding 5:4, shift from bit 8; the irq flag 16, same_params 17).
constexpr int kSrc = 0, kDst = 8, kParam = 16, kChannels = 24, kInner = 28, kOuter = 32;
constexpr int kMode = 36, kLo = 40, kHi = 44, kStatus = 48;

struct RingSizes {
  int dw;      // bus words of a descriptor
  int wbw;     // bus words written back
  int wb_off;  // their byte offset in the descriptor
};
RingSizes ring_sizes(const AccelConfig& c) {
  const int bb = c.bus_bytes();
  if (bb <= 16) return {64 / bb, 16 / bb, kStatus};
  return {64 / bb, 1, 64 - bb};  // one word: bytes from 64 - bb up, the status patched in
}

// (lsb, width) of each descriptor bit the controller reads.
std::vector<std::pair<int, int>> used_bits(const AccelConfig& c) {
  const auto& core = c.core;
  std::vector<std::pair<int, int>> used = {{8 * kSrc, 64},
                                           {8 * kDst, 64},
                                           {8 * kParam, 64},
                                           {8 * kChannels, core.chan_bits()},
                                           {8 * kInner, core.inner_bits},
                                           {8 * kOuter, 32},
                                           {8 * kMode, 1},
                                           {8 * kMode + 4, 2},
                                           {8 * kMode + 8, core.rshift_bits()},
                                           {8 * kMode + 16, 2},
                                           {8 * kLo, core.arith.yw},
                                           {8 * kHi, core.arith.yw}};
  const int bb = c.bus_bytes();
  if (bb > 16) used.emplace_back(8 * (64 - bb), 8 * (bb - 16));  // rewritten beside the status
  return used;
}

// The descriptor's fields (wires d_*) and the sink of the bits nothing reads.
void desc_fields(Ctx& x) {
  Module& m = x.m;
  const auto& core = x.c.core;
  const Expr d = x.r("desc_q");
  const std::pair<const char*, std::pair<int, int>> f[] = {
      {"d_src", {8 * kSrc, 64}},
      {"d_dst", {8 * kDst, 64}},
      {"d_param", {8 * kParam, 64}},
      {"d_ch", {8 * kChannels, core.chan_bits()}},
      {"d_inner", {8 * kInner, core.inner_bits}},
      {"d_outer", {8 * kOuter, 32}},
      {"d_layout", {8 * kMode, 1}},
      {"d_round", {8 * kMode + 4, 2}},
      {"d_shift", {8 * kMode + 8, core.rshift_bits()}},
      {"d_irq", {8 * kMode + 16, 1}},
      {"d_same", {8 * kMode + 17, 1}},
      {"d_lo", {8 * kLo, core.arith.yw}},
      {"d_hi", {8 * kHi, core.arith.yw}}};
  for (const auto& [n, pos] : f) {
    m.assign(m.wire(n, pos.second), ex::slice(d, pos.first, pos.second));
  }
  std::vector<bool> read(512, false);
  for (const auto& [lsb, w] : used_bits(x.c)) {
    for (int i = lsb; i < lsb + w; ++i) read[static_cast<std::size_t>(i)] = true;
  }
  std::vector<Expr> unread;
  for (int i = 0; i < 512;) {
    int j = i;
    while (j < 512 && !read[static_cast<std::size_t>(j)]) ++j;
    if (j > i) unread.push_back(ex::slice(d, i, j - i));
    i = j == i ? i + 1 : j;
  }
  rtl::sink(m, "unused_desc", unread);
}

// Whether the descriptor may keep the core's table and set-up, or the sizes.
void reuse(Ctx& x) {
  Module& m = x.m;
  auto same = [&](const char* d, const char* q) { return ex::eq(x.r(d), x.r(q)); };
  const Expr shape = same("d_ch", "ch_q") & same("d_inner", "inner_q");
  m.assign(m.wire("keep_w", 1, "same_params, the table loaded, the same core set-up and PARAM"),
           x.r("d_same") & x.r("loaded_q") & shape & same("d_layout", "layout_q") &
               same("d_round", "round_q") & same("d_shift", "shift_q") & same("d_lo", "lo_q") &
               same("d_hi", "hi_q") & same("d_param", "param_q"));
  m.assign(m.wire("mul_skip", 1, "C, HW and N as sized last: total_q stands"),
           x.r("tot_ok_q") & shape & same("d_outer", "outer_q"));
}

// The ring's wires of the FSM: the descriptor capture, the prefetch's start condition, the
// status words' push and end, the outcome of a descriptor, the datapath reset.
void ring_wires(Ctx& x) {
  Module& m = x.m;
  const RingSizes rs = ring_sizes(x.c);
  m.assign(m.wire("desc_rd", 1, "read DMA words are descriptor words"),
           (x.in_state(FETCH) | x.r("pf_q")) & x.r("rd_rx_new_i"));
  m.assign(m.wire("desc_take", 1), x.r("desc_rd") & x.r("rd_valid_i"));
  // The prefetch: once the job's input read is issued (its beats may be in flight: the read DMA
  // overlaps the two), while the next descriptor is runnable; only
  // when the status words come from the status alone (bus <= 128 bits: desc_q is overwritten).
  Expr pf_go = x.in_state(RUN) & x.r("ring_q") & x.r("rd_next_ok_i") & ~x.r("rd_start_q") &
               ~x.r("pf_q") & ~x.r("pfok_q") & ~x.r("pferr_q") & x.r("ring_enable_i") &
               ~x.r("stopped_q") & ex::ne(x.r("tail_eff_next"), x.r("ring_head_i"));
  if (x.c.bus_bytes() > 16) {
    pf_go = lit(1, 0);
    rtl::sink(m, "unused_next_ok", {x.r("rd_next_ok_i")});  // no prefetch: no overlap
  }
  m.assign(m.wire("pf_go", 1), pf_go);
  const int wcb = bits_for(rs.wbw);
  m.assign(m.wire("wb_push", 1),
           x.in_state(WB) & ex::ne(x.r("wbcnt_q"), lit(wcb, u(rs.wbw))) & x.r("wf_space_i"));
  const Expr pushed = x.in_state(WB) & ex::eq(x.r("wbcnt_q"), lit(wcb, u(rs.wbw))) &
                      ~x.r("wr_start_q") & ~x.r("wrwait_q") & ~x.r("wr_err_i");
  m.assign(m.wire("wb_fin", 1, "the status is written (answered)"), pushed & x.r("wr_done_i"));
  m.assign(m.wire("wb_sent", 1, "the status is sent (its response may be outstanding)"),
           pushed & x.r("wr_sent_i"));
  const Expr ok = ex::eq(x.r("code_q"), lit(8, 0));
  // The status's response is the first after it is sent (the output's are in): the next job's
  // write DMA may start meanwhile.
  m.assign(m.wire("ring_ok", 1, "a good descriptor's status write answered: TAIL + 1"),
           x.r("wbpend_q") & (x.r("wr_idle_i") | x.r("wr_bok_i")) & ~x.r("wr_err_i"));
  m.assign(m.wire("ring_fail", 1), (x.r("wb_fin") & ~ok) | (x.in_state(FLUSH) & x.r("ring_q") &
                                                            ~x.r("sr_q") & x.r("nowb_q") & ~ok));
  m.assign(m.wire("flush_now", 1, "datapath reset: FLUSH, or CHECK unless the table is kept"),
           x.in_state(FLUSH) | (x.in_state(CHECK) & ~x.r("keep_q") & ~x.r("wbpend_q")));
}

// start..end (ew bits) inside job k's window (base_q, last_q) and the address space.
Expr nx_window(const Ctx& x, const Expr& start, const Expr& end) {
  const int ew = accel_sizes(x.c).ew, aw = x.c.addr_bits;
  Expr e = ex::ge(ex::zext(start, ew), ex::zext(x.r("base_q"), ew)) &
           ex::le(end, ex::zext(x.r("last_q"), ew));
  if (aw < 64) e = e & ex::lt(end, rtl::shl_by(lit(ew, 1), aw));
  return e;
}

// The early read (docs/architecture.md "Descriptor ring"): the prefetched descriptor's input is
// read while the current job drains when the descriptor keeps the table and the sizes
// (keep_w, mul_skip: every check but those of SRC and DST is the current job's) and a
// pre-check, two registered stages from desc_q, finds its SRC and DST valid (aligned, in the
// window, not overlapping) and its input clear of the current job's output and status bytes
// (so the read sees what the ref: model's later read sees).
void early_read(Ctx& x) {
  Module& m = x.m;
  const int ew = accel_sizes(x.c).ew, bl = clog2(x.c.bus_bytes());
  const RingSizes rs = ring_sizes(x.c);
  auto end = [&](const char* start, const char* bytes) {
    return ex::zext(x.r(start), ew) + ex::zext(x.r(bytes), ew) - lit(ew, 1);
  };
  m.assign(m.wire("nx_in_end", ew), end("d_src", "in_bytes"));
  m.assign(m.wire("nx_out_end", ew), end("d_dst", "out_bytes"));
  const Expr in_end = m.reg("nxin_q", ew, "the prefetched descriptor's input end");
  const Expr out_end = m.reg("nxout_q", ew, "its output end");
  m.reg("nxv_q", 2, "nxin_q / nxout_q, then nxok_q hold the prefetched descriptor's values");
  m.reg("nxok_q", 1, "the pre-check passed");
  const Expr src = ex::zext(x.r("d_src"), ew), dst = ex::zext(x.r("d_dst"), ew);
  Expr ov = ex::le(src, out_end) & ex::le(dst, in_end);
  if (x.c.core.arith.yw <= x.c.core.arith.xw) ov = ov & ex::ne(x.r("d_src"), x.r("d_dst"));
  const Expr at = ex::zext(x.r("at_q"), ew);
  const Expr clear_out = ex::lt(in_end, ex::zext(x.r("dst_q"), ew)) | ex::gt(src, x.r("out_end_q"));
  const Expr clear_st = ex::lt(in_end, at + lit(ew, u(rs.wb_off))) | ex::gt(src, at + lit(ew, 63));
  const Expr aligned = ex::eq(ex::slice(x.r("d_src"), 0, bl), lit(bl, 0)) &
                       ex::eq(ex::slice(x.r("d_dst"), 0, bl), lit(bl, 0));
  m.assign(m.wire("nx_check", 1, "the pre-check of the prefetched descriptor"),
           aligned & nx_window(x, x.r("d_src"), in_end) & nx_window(x, x.r("d_dst"), out_end) &
               ~ov & clear_out & clear_st & ex::eq(x.r("win_base_i"), x.r("base_q")) &
               ex::eq(x.r("win_last_i"), x.r("last_q")));
  m.assign(m.wire("nx_go", 1, "start the early read"),
           x.in_state(RUN) & x.r("ring_q") & x.r("pfok_q") & ex::bit(x.r("nxv_q"), 1) &
               x.r("nxok_q") & x.r("keep_w") & x.r("mul_skip") & ~x.r("nx_q") &
               x.r("rd_next_ok_i") & ~x.r("rd_start_q") & ~x.r("pf_q") & ~x.r("rd_err_i") &
               ~x.r("wbpend_q") & ~x.r("wrwait_q") & x.r("ring_enable_i") & ~x.r("stopped_q") &
               ex::ne(x.r("tail_eff_next"), x.r("ring_head_i")));
  const int wb = accel_sizes(x.c).wb;
  const Expr igw = m.reg("igw_q", wb, "read FIFO words the input gearbox may still take");
  rtl::Process p;
  p.resets = {{igw, lit(wb, 0)}, {x.r("nxv_q"), lit(2, 0)}, {x.r("nxok_q"), lit(1, 0)}};
  p.body = {x.a("nxin_q", x.r("nx_in_end")),
            x.a("nxout_q", x.r("nx_out_end")),
            x.a("nxok_q", x.r("nx_check")),
            x.a("nxv_q", ex::cat({ex::bit(x.r("nxv_q"), 0) & x.r("pfok_q"), x.r("pfok_q")})),
            if_(x.r("ig_start_q"), {x.a("igw_q", x.r("in_words_q"))},
                {if_(x.r("ig_take_i"), {x.a("igw_q", igw - lit(wb, 1))})}),
            if_(x.r("flush_now"), {x.a("igw_q", lit(wb, 0))})};
  p.comment = "The early read's pre-check; the input gearbox's words (a job's words only)";
  rtl::process(m, p);
}

}  // namespace

void ring_ports(Module& m, const AccelConfig& c) {
  m.in("ring_enable_i", 1);
  m.in("ring_resume_i", 1, "pulse");
  m.in("ring_skip_i", 1, "pulse");
  m.in("ring_coalesce_i", 16);
  m.in("ring_head_i", 16);
  m.in("ring_base_i", 64, "64-byte aligned");
  m.in("ring_log2_i", 4);
  m.in("rd_valid_i", 1, "a read DMA word (a descriptor word while desc_rd_o)");
  m.in("rd_data_i", c.bus_bits);
  m.in("wf_space_i", 1, "the write FIFO takes a word");
  m.in("wr_sent_i", 1, "the write DMA sent every word (only responses outstanding)");
  m.in("wr_bok_i", 1, "a write response without error");
  m.in("ig_take_i", 1, "the input gearbox takes a read FIFO word");
  m.in("rd_next_ok_i", 1, "the read DMA takes a request (the last one issued)");
  m.in("rd_rx_new_i", 1, "a read beat belongs to the newest request");
  m.in("rd_err_new_i", 1, "the read error is the newest request's");
  m.out("ig_open_o", 1, "the input gearbox may take words (the job's words not all taken)");
  m.out("desc_rd_o", 1, "read DMA words go to the descriptor capture, not the read FIFO");
  m.out("phase_wb_o", 1, "the write FIFO takes the status words");
  m.out("wb_valid_o", 1);
  m.out("wb_data_o", c.bus_bits);
  m.out("ring_tail_o", 16);
  m.out("ring_active_o", 1);
  m.out("ring_stopped_o", 1);
  m.out("irq_ring_o", 1, "pulse");
}

void ring_state_regs(Ctx& x) {
  x.m.reg("pf_q", 1, "the read DMA prefetches the next descriptor");
  x.m.reg("pfok_q", 1, "desc_q holds the descriptor at TAIL (prefetched)");
  x.m.reg("pferr_q", 1, "the prefetch read failed: the descriptor at TAIL is unreadable");
  x.m.reg("wbpend_q", 1, "a good descriptor's status is sent, its write response not yet in");
  x.m.reg("nx_q", 1, "the read DMA reads the prefetched descriptor's input (early read)");
  x.m.reg("pf2_q", 1, "desc2_q holds the descriptor after the prefetched one (read with it)");
  x.m.reg("pfn_q", 1, "the prefetch reads two descriptors");
  x.m.reg("pfdrop_q", 1, "the read DMA stopped on the second descriptor of a prefetch (dropped)");
}

void ring_regs(Ctx& x) {
  Module& m = x.m;
  const RingSizes rs = ring_sizes(x.c);
  const int aw = x.c.addr_bits;
  m.section("Descriptor ring");
  m.reg("ring_q", 1, "the job is a ring descriptor");
  m.reg("keep_q", 1, "the descriptor keeps the loaded table and core set-up");
  m.reg("loaded_q", 1, "the core holds the table and set-up of ch_q .. hi_q, param_q");
  m.reg("tot_ok_q", 1, "total_q is C * HW * N of ch_q, inner_q, outer_q");
  m.reg("nowb_q", 1, "stop without a status (the fetch or the write-back failed)");
  m.reg("dirq_q", 1, "the descriptor's irq flag");
  m.reg("desc_q", 512, "the descriptor, word 0 at the bottom");
  m.reg("desc2_q", 512, "the second descriptor of a two-descriptor prefetch");
  m.reg("dcnt_q", bits_for(2 * rs.dw), "descriptor words taken");
  m.reg("at_q", aw, "the descriptor's address");
  m.reg("pfaddr_q", aw, "the prefetch's failing read");
  m.reg("wbcnt_q", bits_for(rs.wbw), "status words pushed");
  m.reg("tail_q", 16);
  m.reg("stopped_q", 1);
  m.reg("rcnt_q", 16, "descriptors completed since IRQ_STATUS.ring by count (saturating)");
  m.reg("irq_ring_q", 1);
  m.reg("wbirq_q", 1, "the irq flag of the descriptor whose status is in flight");
  m.reg("wrwait_q", 1, "start the write DMA once the last status write is answered");
  m.assign(m.wire("tail_next", 16), x.r("tail_q") + lit(16, 1));
  m.assign(m.wire("tail_eff", 16, "TAIL, + 1 while the last status write is answered"),
           x.r("tail_q") + ex::zext(x.r("wbpend_q"), 16));
  m.assign(m.wire("tail_eff_next", 16), x.r("tail_eff") + lit(16, 1));
  m.assign(m.wire("ring_go", 1, "a descriptor is runnable"),
           x.r("ring_enable_i") & ~x.r("stopped_q") & ex::ne(x.r("tail_eff"), x.r("ring_head_i")));
  m.assign(m.wire("ring_launch", 1, "the descriptor at TAIL starts (fetched or prefetched)"),
           x.in_state(IDLE) & ~x.r("start_i") & x.r("ring_go") & ~x.r("pf_q"));
  const Expr idx = m.wire("slot_idx", 16, "(TAIL, or TAIL + 1 in RUN: the prefetch) mod 2^k");
  m.assign(idx, ex::mux(x.in_state(RUN), x.r("tail_eff_next"), x.r("tail_eff")) &
                    ~ex::shl(ex::ones(16), x.r("ring_log2_i")));
  const Expr slot = m.wire("slot_addr", 64);
  m.assign(slot, x.r("ring_base_i") + rtl::shl_by(ex::zext(idx, 64), 6));
  if (aw < 64) rtl::sink(m, "unused_slot", {ex::slice(slot, aw, 64 - aw)});
  // A prefetch reads TAIL + 1 and TAIL + 2 together when both are runnable and their slots
  // follow each other in one burst (not across 4 KiB; bus <= 128 bits).
  Expr pair = lit(1, 0);
  if (2 * rs.dw <= x.c.max_burst) {
    const Expr after = m.wire("tail_eff_next2", 16);
    m.assign(after, x.r("tail_eff_next") + lit(16, 1));
    pair = ex::ne(after, x.r("ring_head_i")) &
           ex::ne(after & ~ex::shl(ex::ones(16), x.r("ring_log2_i")), lit(16, 0)) &
           ex::ne(ex::slice(x.r("slot_addr"), 6, 6), ex::ones(6));
  }
  m.assign(m.wire("pf_pair", 1, "the prefetch reads two descriptors"), pair);
  desc_fields(x);
  reuse(x);
  ring_wires(x);
  early_read(x);
}

// IDLE, a runnable descriptor at TAIL: prefetched (DSNAP), its prefetch failed (the read error
// stops the ring, no status), or fetched now (FETCH).
Block ring_launch(const Ctx& x) {
  const int aw = x.c.addr_bits;
  const RingSizes rs = ring_sizes(x.c);
  const Expr at = ex::fit(x.r("slot_addr"), aw);
  const Expr one = lit(1, 1), zero = lit(1, 0);
  Block b = {x.a("ring_q", one),         x.a("keep_q", zero),  x.a("nowb_q", zero),
             x.a("done_q", zero),        x.a("error_q", zero), x.a("code_q", lit(8, 0)),
             x.a("eaddr_q", lit(64, 0)), x.a("sr_q", zero),    x.a("at_q", at),
             x.a("pfok_q", zero),        x.a("pferr_q", zero)};
  Block fetch = {x.a("dcnt_q", lit(bits_for(2 * rs.dw), 0)), x.a("rd_start_q", one),
                 x.a("rd_addr_q", at), x.a("rd_words_q", lit(accel_sizes(x.c).wb, u(rs.dw))),
                 x.to(FETCH)};
  Block failed = {x.a("code_q", code(AccelError::read)),
                  x.a("eaddr_q", ex::zext(x.r("pfaddr_q"), 64)), x.a("nowb_q", one), x.to(ABORT)};
  b.push_back(if_(x.r("pferr_q"), std::move(failed),
                  {if_(x.r("pfok_q"), {x.to(DSNAP)}, std::move(fetch))}));
  return b;
}

// Descriptor words from the read DMA (FETCH or the prefetch) shift into desc_q.
Stmt ring_capture(const Ctx& x) {
  const int bus = x.c.bus_bits;
  const int dw = ring_sizes(x.c).dw, dcb = bits_for(2 * dw);
  auto shifted = [&](const char* q) {
    const Expr d = x.r(q);
    return bus == 512 ? x.r("rd_data_i")
                      : ex::cat({x.r("rd_data_i"), ex::slice(d, bus, 512 - bus)});
  };
  // Words 0 .. dw - 1 into desc_q, the second descriptor's (a two-descriptor prefetch) into
  // desc2_q.
  return if_(x.r("desc_take"),
             {if_(ex::lt(x.r("dcnt_q"), lit(dcb, u(dw))), {x.a("desc_q", shifted("desc_q"))},
                  {x.a("desc2_q", shifted("desc2_q"))}),
              x.a("dcnt_q", x.r("dcnt_q") + lit(dcb, 1))});
}

// After the case: the prefetch (its start in RUN, its end: the descriptor complete, or a read
// error; no prefetched descriptor survives a stopped ring (one still reading when the ring stops is
// dropped: the ring resumes at TAIL with a fresh fetch).
Block ring_prefetch(const Ctx& x) {
  const int aw = x.c.addr_bits;
  const RingSizes rs = ring_sizes(x.c);
  const int dcb = bits_for(2 * rs.dw), wb = accel_sizes(x.c).wb;
  const Expr one = lit(1, 1), zero = lit(1, 0);
  const Expr words = ex::mux(x.r("pfn_q"), lit(dcb, u(2 * rs.dw)), lit(dcb, u(rs.dw)));
  const Expr complete =
      x.r("pf_q") & ex::eq(x.r("dcnt_q"), words) & x.r("rd_done_i") & ~x.r("rd_start_q");
  return {
      if_(x.r("pf_go"),
          {x.a("rd_start_q", one), x.a("rd_addr_q", ex::fit(x.r("slot_addr"), aw)),
           x.a("rd_words_q", ex::mux(x.r("pf_pair"), lit(wb, u(2 * rs.dw)), lit(wb, u(rs.dw)))),
           x.a("dcnt_q", lit(dcb, 0)), x.a("pf_q", one), x.a("pfn_q", x.r("pf_pair"))}),
      if_(x.r("rd_start_q"), {x.a("pfdrop_q", zero)}),  // the read DMA's error cleared
      if_(x.r("nx_go"), {x.a("rd_start_q", one), x.a("rd_addr_q", ex::fit(x.r("d_src"), aw)),
                         x.a("rd_words_q", x.r("in_words_q")), x.a("nx_q", one)}),
      // A read error in a two-descriptor prefetch (the burst's response: either may be the
      // unreadable one) drops both: each is fetched again alone, so an error comes as in the
      // ref: model. Of one descriptor: its fetch error, reported when it is due.
      if_(x.r("pf_q") & x.r("rd_err_i") & x.r("rd_err_new_i"),
          {if_(x.r("pfn_q"), {x.a("pf_q", zero), x.a("pfdrop_q", one)},
               {x.a("pf_q", zero), x.a("pferr_q", one), x.a("pfaddr_q", x.r("rd_err_addr_i"))})},
          {if_(complete, {x.a("pf_q", zero), x.a("pfok_q", one), x.a("pf2_q", x.r("pfn_q"))})}),
      if_(x.r("ring_fail") | x.r("soft_reset_i") | x.r("stopped_q"),
          {x.a("pfok_q", zero), x.a("pferr_q", zero), x.a("pf2_q", zero)}),
      // A job's write DMA starts once the last status write is sent (its response may be
      // outstanding: a failing one stops the ring with this job's output perhaps partly
      // written), a status write once the last one is answered.
      if_(x.r("wrwait_q") & (x.in_state(RUN) | (x.in_state(WB) & ~x.r("wbpend_q"))),
          {x.a("wr_start_q", one), x.a("wrwait_q", zero)}),
      if_(x.r("ring_ok"), {x.a("wbpend_q", zero)}),
      // That status write failed: the descriptor after it (if any) is abandoned with no status
      // and the ring stops at the one whose status failed (TAIL not advanced).
      if_(x.r("wbpend_q") & x.r("wr_err_i"),
          {x.a("wbpend_q", zero), x.a("ring_q", one), x.a("nowb_q", one), x.a("sr_q", zero),
           x.a("code_q", code(AccelError::write)),
           x.a("eaddr_q", ex::zext(x.r("wr_err_addr_i"), 64)), x.to(ABORT)})};
}

Block ring_wb_entry(const Ctx& x) {
  return {x.a("wrwait_q", lit(1, 1)), x.a("wbcnt_q", lit(bits_for(ring_sizes(x.c).wbw), 0)),
          x.to(WB)};
}

std::vector<CaseArm> ring_arms(const Ctx& x) {
  const int tw = accel_sizes(x.c).tw;
  const RingSizes rs = ring_sizes(x.c);
  const Expr one = lit(1, 1);
  const int dcb = bits_for(2 * rs.dw), wcb = bits_for(rs.wbw);
  auto stop = [&](AccelError e) {
    return Block{x.a("code_q", code(e)), x.a("eaddr_q", x.r("dma_addr")), x.a("nowb_q", one),
                 x.to(ABORT)};
  };
  std::vector<CaseArm> arms;
  arms.push_back(
      {{x.s(FETCH)},
       {if_(x.r("rd_err_i") & ~x.r("pfdrop_q"), stop(AccelError::read),
            {if_(ex::eq(x.r("dcnt_q"), lit(dcb, u(rs.dw))) & x.r("rd_done_i") & ~x.r("rd_start_q"),
                 {x.to(DSNAP)})})}});
  const std::pair<const char*, const char*> from[] = {
      {"ch_q", "d_ch"},         {"inner_q", "d_inner"}, {"outer_q", "d_outer"},
      {"layout_q", "d_layout"}, {"round_q", "d_round"}, {"shift_q", "d_shift"},
      {"lo_q", "d_lo"},         {"hi_q", "d_hi"},       {"src_q", "d_src"},
      {"dst_q", "d_dst"},       {"param_q", "d_param"}, {"base_q", "win_base_i"},
      {"last_q", "win_last_i"}, {"dirq_q", "d_irq"},    {"keep_q", "keep_w"}};
  Block snap;
  for (const auto& [q, w] : from) snap.push_back(x.a(q, x.r(w)));
  snap.push_back(if_(x.r("pf2_q"),
                     {x.a("desc_q", x.r("desc2_q")), x.a("pfok_q", one), x.a("pf2_q", lit(1, 0))}));
  snap.push_back(if_(x.r("mul_skip"), {x.to(SIZES)},
                     {x.a("ma_q", ex::zext(x.r("d_ch"), tw)),
                      x.a("mb_q", ex::zext(x.r("d_inner"), 32)), x.a("macc_q", lit(tw, 0)),
                      x.a("mcnt_q", lit(5, 0)), x.a("tot_ok_q", lit(1, 0)), x.to(MUL1)}));
  arms.push_back({{x.s(DSNAP)}, std::move(snap)});
  // A good descriptor leaves once its status is sent (wbpend_q: TAIL + 1 when it is answered,
  // the next descriptor may start meanwhile); a failed one once its status is answered.
  const Expr ok = ex::eq(x.r("code_q"), lit(8, 0));
  arms.push_back(
      {{x.s(WB)},
       {if_(x.r("wb_push"), {x.a("wbcnt_q", x.r("wbcnt_q") + lit(wcb, 1))}),
        if_(x.r("wr_err_i"), stop(AccelError::write),
            {if_(ok & x.r("wb_sent"), {x.to(IDLE), x.a("done_q", one), x.a("wbpend_q", one),
                                       x.a("wbirq_q", x.r("dirq_q"))}),
             if_(~ok & x.r("wb_fin"),
                 {x.to(IDLE), x.a("error_q", one), x.a("irq_err_q", one)})})}});
  return arms;
}

// TAIL, the stopped state, the coalescing count and IRQ_STATUS.ring.
void ring_process(Ctx& x) {
  Module& m = x.m;
  const Expr tail = x.r("tail_q"), rcnt = x.r("rcnt_q"), coal = x.r("ring_coalesce_i");
  const Expr next = x.r("tail_next");
  const Expr n = m.wire("rcnt_next", 16);
  m.assign(n, rcnt + ex::zext(ex::ne(rcnt, ex::ones(16)), 16));
  const Expr fire = m.wire("ring_fire", 1, "IRQ_STATUS.ring after this descriptor");
  m.assign(fire, x.r("wbirq_q") | (ex::ne(coal, lit(16, 0)) & ex::ge(n, coal)) |
                     ex::eq(next, x.r("ring_head_i")));
  const Expr zero = lit(1, 0), one = lit(1, 1);
  rtl::Process p;
  p.resets = {
      {tail, lit(16, 0)}, {x.r("stopped_q"), zero}, {rcnt, lit(16, 0)}, {x.r("irq_ring_q"), zero}};
  const Expr pulse_ok = x.r("stopped_q") & ~x.r("busy");  // only a stopped, idle ring takes them
  p.body = {x.a("irq_ring_q", zero),
            if_(x.r("ring_ok"),
                {x.a("tail_q", next), if_(fire, {x.a("irq_ring_q", one), x.a("rcnt_q", lit(16, 0))},
                                          {x.a("rcnt_q", n)})}),
            if_(x.r("ring_fail"), {x.a("stopped_q", one)}),
            if_(pulse_ok & x.r("ring_skip_i"), {x.a("tail_q", next), x.a("stopped_q", zero)},
                {if_(pulse_ok & x.r("ring_resume_i"), {x.a("stopped_q", zero)})}),
            if_(x.r("soft_reset_i"),
                {x.a("tail_q", lit(16, 0)), x.a("stopped_q", one), x.a("rcnt_q", lit(16, 0))})};
  p.comment = "Ring state: TAIL, stopped, the interrupt coalescing";
  rtl::process(m, p);
}

void ring_outputs(Ctx& x) {
  Module& m = x.m;
  const RingSizes rs = ring_sizes(x.c);
  const int aw = x.c.addr_bits, bus = x.c.bus_bits, bb = x.c.bus_bytes(), wb = accel_sizes(x.c).wb;
  const Expr wb_st = x.in_state(WB);
  const Expr ok = ex::eq(x.r("code_q"), lit(8, 0));
  const Expr st = m.wire("status_words", 128, "{ERR_ADDR, ELEMS, STATUS}: bytes 48..63");
  m.assign(st, ex::cat({x.r("eaddr_q"), ex::slice(x.r("pel_q"), 0, 32), lit(16, 0), x.r("code_q"),
                        lit(6, 0), ~ok, ok}));
  Expr word;
  if (bb > 16) {
    word = ex::cat({st, ex::slice(x.r("desc_q"), 8 * (64 - bb), 8 * (bb - 16))});
  } else {
    const int wcb = bits_for(rs.wbw);
    word = ex::slice(st, 0, bus);
    for (int i = 1; i < rs.wbw; ++i) {
      word = ex::mux(ex::eq(x.r("wbcnt_q"), lit(wcb, u(i))), ex::slice(st, i * bus, bus), word);
    }
  }
  m.assign(x.r("wb_data_o"), word);
  m.assign(x.r("wb_valid_o"), x.r("wb_push"));
  m.assign(x.r("desc_rd_o"), x.r("desc_rd"));
  m.assign(x.r("ig_open_o"), ex::ne(x.r("igw_q"), lit(wb, 0)));
  m.assign(x.r("phase_wb_o"), wb_st);
  m.assign(x.r("wr_addr_o"),
           ex::mux(wb_st, x.r("at_q") + lit(aw, u(rs.wb_off)), ex::fit(x.r("dst_q"), aw)));
  m.assign(x.r("wr_words_o"), ex::mux(wb_st, lit(wb, u(rs.wbw)), x.r("out_words_q")));
  m.assign(x.r("wr_last_strb_o"), ex::mux(wb_st, ex::ones(bb), x.r("strb_q")));
  m.assign(x.r("ring_tail_o"), x.r("tail_q"));
  m.assign(x.r("ring_active_o"), x.r("ring_q") & x.r("busy"));
  m.assign(x.r("ring_stopped_o"), x.r("stopped_q"));
  m.assign(x.r("irq_ring_o"), x.r("irq_ring_q"));
}

}  // namespace normcore::gen::accel_detail
