// --target ecp5 / ice40 (lut_tracker) parts of <n>_chan: compares and per-job tables as LUT
// logic, no carry chains.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "core_internal.hpp"

namespace normcore::gen::core {

// v <= k (k a constant) as and / or terms of v's bits: LUT logic that synthesis cannot map to a
// carry chain (Yosys maps a compare, even with a constant, to CCU2C on ECP5).
Expr le_bits(const Expr& v, std::uint64_t k);
// The same compare read from nv = ~v (a register holding the complement).
Expr le_bits_inv(const Expr& nv, std::uint64_t k);

// Bit idx of t (names; t.width() == 2^idx.width()): a tree of 2:1 selects, LUTs and ECP5's PFUMX /
// L6MUX, no carry chain.
Expr pick_bit(const Expr& t, const Expr& idx);

// <n>_chan's lo <= t as the carry of {1, ~lo} + (t + 1) (tp, lw + 1 bits; nlo_q = ~lo): no
// inverter in front of the chain.
Expr le_lo(Module& md, int lw, const std::string& name, const Expr& tp);

// r's update under en_i when the load (ld_i) gives r = {0, ld_lo} (ld_lo: r's `have` low bits,
// 0 <= have < r's width) and a beat nx: the zero bits as ANDs with ~ld_i, not a select of a
// constant (synthesis makes that a synchronous reset: en_i & ld_i through a LUT into LSR).
// (nx: a wire `name`).
Stmt load_or_zero(Module& md, const Expr& r, const std::string& name, const Expr& ld_lo, int have,
                  const Expr& nx);

// e5_wide (ecp20): lo <= 2L as a register le2_q written in the branches that write lo (its load
// value s_lo, its next value lo_nx, lw bits: wires lo_ld, lo_nx), so that neg_nx has no LUT of
// lo_q in front. Returns le2_q.
Expr le2_reg(Module& md, int lw, std::uint64_t twol, const Expr& s_lo, const Expr& lo_nx, Block& ld,
             Block& wrap, Block& dec);

// e5_wide with a high part of more than 2 bits (ECP5 LANES 8, ecp22): lo_q, nlo_q and le2_q
// written without lo's adder (its chain and the two LUTs behind it were the worst paths). A
// step's lo - L is LUT logic of lo_q (const_table). A wrap adds (S - L)_low to lo = rem, which is
// 1..L there: per-job tables of the 2^k results (2^k >= L; lo mod 2^k is distinct on 1..L)
// registered from remw_i every cycle (wl<b>_q, wle_q; remw_i holds for the job), a bit picked
// by lo_q's k low bits (pick_bit). Adds the updates to ld / wrap / dec / always (s_lo: the load
// value, lw bits); returns le2_q.
Expr lo_tables(Module& md, int lanes, int lw, const Expr& s_lo, Block& ld, Block& wrap, Block& dec,
               Block& always);

// <n>_chan's c0 next value c_nx (cn bits): c_add and c_sub (c0 + k_c + cy, the same less C),
// returned in that order (core_pos.cpp build_chan).
std::pair<Expr, Expr> chan_c0_next(Module& md, const CoreConfig& c, int cn, const Expr& c_q,
                                   const Expr& kc, const Expr& kw);

// c0's adders' outputs and the addend k_c - C (kw), read by chan_c0_copy.
struct C0Sums {
  Expr add, sub, kw;
};
// --target ecp5: c0's copy for the table, ct_q (n bits; c0_o is cw bits): its next value in ANDs
// and ORs (c_nx is a select: synthesis would merge a register of the same cell); with own_sign
// (e5_wide) its select reads a sign of its own, ct_q + k_c + cy - C (ct_q = c_q), so each sign
// drives n select LUTs, not 2n (ecp20). Adds its update to `beat`; returns ct_q (n bits).
Expr chan_c0_copy(Module& md, int n, bool own_sign, const C0Sums& s, Block& beat);

// f(v) for v = idx's `bits` low bits (idx a name, bits <= 6) as a tree of selects of constants
// (`width` bits): one LUT4 an output bit for up to 4 index bits, no carry chain (a subtract of a
// register from a constant is a carry chain and its routes in Yosys' mapping, shared between
// the constants).
Expr const_table(const Expr& idx, int bits, int width,
                 const std::function<std::uint64_t(std::uint64_t)>& f);

// Bits of u_0 (<= L - 1 when S < L) that index the per-job tables.
int u_index_bits(int lanes);

// Lane 0's next carry as a per-job table (S < L): bit v of cyt_q is the carry of the beat after
// the one with u_0 = v (v = q_0 + 1), made from sk_i and kr_i every cycle in two register stages
// (skr_q = sk - kr, then cyt_q: LUT logic; valid two cycles after them). Adds the registers'
// updates to `consts`; returns cyt_q.
Expr carry_table(Module& md, int lanes, int ml, Block& consts);

// <n>_chan's widths that chan_small_lut reads (core_pos.cpp's ChanWidths).
struct SmallWidths {
  int L, ml, p, lw, hw;
  // --target ice40: the lanes' th_i_q read a copy of small_i of their own (`smt_q`, a cycle late),
  // and xs_i (i + L + 1 - S) is a constant table of S's low bits (const_table), not a subtract.
  bool ice40 = false;
};

// --target ecp5, L > 1: lane 0 tracked a beat ahead (un_q = u_0 of the next beat, cyn_q its
// carry), so that every lane's flag for the next beat (S < L) is a per-job table's bit selected
// by un_q's bits, and lane 0's next carry is carry_table's; the S >= L flags as in core_pos.cpp
// (lo <= L + i as LUT logic). Adds the load-or-step statement to `upd` and the start saves to
// `save`; returns the lanes' d outputs (lane L-1 first). Drives the wire cy0_nx.
std::vector<Expr> chan_small_lut(Module& md, const SmallWidths& w, Block& upd, Block& save);

// --target ecp5: c0's carry for its adders from a copy of cyc_q of its own (`ccy_q`, placed
// beside the chains; its next value in ANDs and ORs, not cyc_q's select, so that synthesis does
// not merge the two). Adds its update to `upd`; returns it.
Expr chan_cyc_copy(Module& md, Block& upd);

}  // namespace normcore::gen::core
