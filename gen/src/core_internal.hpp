// The streaming core's builders (one file per group of modules) and what they share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "normcore/gen/config.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ir.hpp"
#include "primitives.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

inline std::string idx(const std::string& base, int i) {
  return base + "_" + std::to_string(i);
}

// One per-channel parameter: prm_<prm>_i on the top and the table, <prm>_o out of the table
// (every lane's value), <lane>_i into a lane, <wire> the top's net between them.
struct Field {
  std::string prm;
  int width;
  std::string lane;
  std::string wire;
  std::string comment;
};

// What the folded lanes (the product) and the decomposed reference lanes differ in.
struct Variant {
  bool dec = false;
  std::vector<Field> fields;  // the parameter word, low bits first
  int pw = 0;                 // its width
  int aw = 0;                 // the accumulator the output stage rounds (R is 0..aw)
  int rw = 0;                 // width of R
  int extra = 0;              // lane stages in front of the multiply-add
  int k1w = 0;                // decomposed: width of the requantisation shift k1
  [[nodiscard]] int ns(const CoreConfig& c) const { return c.lane_stages() + extra; }
  [[nodiscard]] int fifo_depth(const CoreConfig& c) const { return c.fifo_depth() + extra; }
  [[nodiscard]] int latency(const CoreConfig& c) const { return c.latency() + extra; }
  // The fields high to low as text, for comments: "{offset, scale}".
  [[nodiscard]] std::string word() const;
  // The fields high to low as a concatenation of the ports prm_<prm>_i.
  [[nodiscard]] Expr word_ports() const;
};

Variant variant(const CoreConfig& c, LaneArith arith);

// Positions (core_pos.cpp, core_top_pos.cpp). A fixed nhwc layout (S = 1) has its own, much
// smaller <n>_step and <n>_chan; with lanes_divide_channels and L = 2^a they count c0 / L.
bool pos_fixed_nhwc(const CoreConfig& c);
// --target ecp5 and ice40: the general tracker's compares of lo as LUT logic, lane 0's carry
// from a per-job table, the loads without a synchronous reset behind en_i, the walker's end as an
// equality, kw0 from the register kc0 (core_pos.cpp, core_pos_lut.cpp, core_top_pos.cpp), and the
// table's per-job k registers in two stages (core_table.cpp).
inline bool lut_tracker(const CoreConfig& c) {
  return c.target == "ecp5" || c.target == "ice40";
}
// --target ice40: <n>_step's subtract operand, a copy of stride_i loaded at start_i (else stride;
// core_pos_ice40.cpp)
Expr step_operand(Module& m, const CoreConfig& c, const Expr& stride, const Expr& start);
// <n>_chan's c0 register and adders on bits_for(C_max - 1) bits (c0 <= C - 1; one carry less
// when C_max is a power of two) for --target ice40 not specialised (ice18) and --target ecp5 with
// e5_wide (ecp20); else chan_bits() (core_pos.cpp)
int chan_c0_width(const CoreConfig& c);
// Input `name` (have bits) read as its low `want` bits; the rest to an unused-bit sink.
Expr c0_operand(Module& md, const std::string& name, int have, int want);
// --target ice40: c0's carry copy (ccy_q) from a next-rem <= L of its own (le 2L read from
// nlo_q, not lo_q: synthesis cannot share it with neg_nx's 20 readers); returns ccy_q.
Expr chan_cyc_copy_ice40(Module& md, int lanes, Block& upd);
// The default target at pipeline 3 (the lane sets its clock): c0's next value from one adder
// whose addend c_sub's sign selects (core_pos.cpp), not two sums and a select.
inline bool serial_c0(const CoreConfig& c) {
  return c.target == "generic" && c.pipeline == 3;
}
// --target ice40, banked table: bank j's read word (c0 + P - 1 - j) / P (P = 2^p, c0_i cw bits,
// ab address bits), one carry chain from c0_i with a constant addend (core_table_addr.cpp).
Expr table_read_word(Module& m, int cw, int p, int ab, int j);
// The loader's ld_ready_q copy for its word counter; s = {abort, load, ready, valid, lastw}.
Expr loader_ready_copy(Module& m, bool same, const std::vector<Expr>& s, Block& rst, Block& go);
// core::e5_wide, per-lane copies with ab > nb address bits (core_table_addr.cpp): t0 registers
// c0's high part + 1 (ch1_q, returned; its update added to ff) and each lane's c0 + d_i low nb
// bits with their carry (lo_i_q), so that t1's c0 + d_i is a select of registers, not a chain
// from c0_q (whose route fans out to every lane's adder).
Expr copies_high_inc(Module& m, const Expr& c0, int nb, int ab, std::vector<Flop>& ff);
struct CopiesSum {
  Expr c0, c0q, ch1, d;  // c0_i, c0_q (t0, ab bits), ch1_q, lane i's d_i input
};
Expr copies_low_sum(Module& m, const CopiesSum& s, int nb, int i, std::vector<Flop>& ff);
// DP16KD's pins <base><lo> .. <base><lo + n - 1> from bits from .. from + n - 1 of the net e
// (core_table_addr.cpp; build_table_ram).
void ram_pins(Instance& in, const std::string& base, int lo, const Expr& e, int n, int from = 0);
// The same pins tied to the bits of the constant v.
void ram_consts(Instance& in, const std::string& base, int lo, std::uint64_t v, int n);
// --target ice40: the flow control counts the accepted beats a cycle late (from in_q, a register)
// and the output buffer holds its count as a thermometer read by m_axis_tready directly, so that
// no port handshake is more than one LUT from a flip-flop (core_top.cpp top_flow, core_fifo.cpp).
inline bool reg_counts(const CoreConfig& c) {
  return c.target == "ice40";
}
// --target ecp5: the output buffer keeps its oldest word in a head register, with its flags'
// write strobe from a register of its own (nwr_i) and rd_i the reader's ready (core_fifo.cpp).
inline bool out_head(const CoreConfig& c) {
  return c.target == "ecp5";
}
// The output buffer's word: the lanes' y, tkeep and tlast.
inline int out_word_bits(const CoreConfig& c) {
  return c.lanes * c.arith.yw + c.lanes + 1;
}
// out_head with a buffer word (out_word_bits) of at least 40 bits (LANES 8 at int8: 73):
// the head in two parts, each with its own flag copies (core_fifo.cpp fifo_head_parts), and the
// top's occupancy thermometer under one enable in_fire ^ out_fire (core_top.cpp top_flow).
// Measured on ECP5: both help LANES 8; the thermometer's form alone cost LANES 4 (37 bits).
inline bool out_head_parts(const CoreConfig& c) {
  return out_head(c) && out_word_bits(c) >= 40;
}
// --target ecp5 with out_head_parts (LANES 8 at int8), ECP5 round 9 (ecp20): c0's registers at
// bits_for(max - 1) bits, the table copy ct_q's select from a sign of its own and lo <= 2L a
// register (core_pos.cpp); the copies' t1 address a select of t0 registers (core_table.cpp).
// Measured: LANES 8 198.45 -> 207.30 MHz; LANES 4 213.90 -> 204.33 (without le2_q), so not there.
inline bool e5_wide(const CoreConfig& c) {
  return out_head_parts(c);
}
// The output buffer's rd_i is the reader's ready (not the pop) for these two.
inline bool fifo_rd_ready(const CoreConfig& c) {
  return reg_counts(c) || out_head(c);
}
// The flow control of reg_counts (core_fifo.cpp): occ_q (d bits), in_q, tready_q, ready_q and their
// copies ntr_q, nrdy_q (or, spec::same_copies, trc_q, rdyc_q).
void top_flow_lagged(Module& m, int d, const Expr& occ, bool same);
// --target ice40: the per-job clamp constants' set-up chains without inverters or long carries
// (lo > hi over two stages, -lo from a register holding ~lo; core_top_consts.cpp).
inline bool split_consts(const CoreConfig& c) {
  return c.target == "ice40";
}
// The per-job lane constants from lo_q / hi_q / shift_q (core_top_consts.cpp).
void top_lane_consts(Module& m, const CoreConfig& c, const Variant& v);
int pos_group_bits(const CoreConfig& c);
// The core top's position part: step divider, walker, beat constants, the <n>_chan instance.
// `check`: the set-up FSM is in its check state.
void top_positions(Module& m, const CoreConfig& c, const Expr& check);

// How the lane's output stage reads the per-job constants that core_top.cpp registers for it.
struct LaneShape {
  // R >= 2^(rw-1) leaves q = the sign (only R = aw-1, aw are that large): two input bits of the
  // shifter take that case (rtop_i, rmax_i) and the shifter's select lsh_i has rw-1 bits.
  bool fold_top = false;
  int lsw = 0;  // width of the shifter's select (lsh_i, or shift_i when !fold_top)
  int top = 0;  // 2^(rw-1)
  int rl = 0;   // a split shifter's second part: select bits rl-1..0
  // The shifter's parts {hi, lo} (select bits hi..lo), first part first, for n =
  // CoreConfig::shift_parts(): two when split (one if the select is too narrow); three
  // (pipe_shift3) always three, at most two select bits each, the later parts the wider (a part
  // may be empty, hi = lo - 1: only its register).
  [[nodiscard]] std::vector<std::pair<int, int>> parts(int n) const;
};
LaneShape lane_shape(const Variant& v);
// The top's registers for LaneShape (lsh_q, rmax_q, the thermometers tq<lo>_q), from shift_q.
void lane_job_consts(Module& m, const CoreConfig& c, const Variant& v);
// The single-part shifter's sticky / fits tests as carry chains (lane_chain_tests, no pipe_shift:
// the tests share a stage with the shifter, rounding and clamp) need the inverted thermometer
// ntq0 = ~tq0's low bits as a per-job constant: its width, 0 when not used.
bool lane_chain_tests(const CoreConfig& c);
int lane_ntq_bits(const CoreConfig& c, const Variant& v);
// An output value (yw bits) with its sign bit flipped if y is signed: unsigned order of the
// result = the signed order of the value (the clamp bounds' lo > hi compare as one carry chain).
inline Expr sign_flipped(const CoreConfig& c, const Expr& e) {
  const int yw = c.arith.yw;
  return c.arith.y_signed ? e ^ ex::lit(yw, std::uint64_t{1} << (yw - 1)) : e;
}
// The integer lane zeroes its output register itself for an element with tkeep = 0 (keep_i, the
// register's synchronous reset: no LUT), instead of a mask in front of the output buffer (one
// LUT a bit); not --target ecp5 (its output buffer head) nor the float lanes.
inline bool lane_keep(const CoreConfig& c) {
  return !c.arith.is_float() && !out_head(c);
}

Module build_step(const CoreConfig& c);
Module build_chan(const CoreConfig& c);
// Fixed nhwc (core_pos_ice40.cpp): <n>_step as L mod C, <n>_chan with c0 a counter.
Module build_step_nhwc(const CoreConfig& c);
Module build_chan_nhwc(const CoreConfig& c);
// --target ice40, fixed nhwc, C a multiple of L = 2^a (core_pos_ice40.cpp): c0 / L a counter
// modulo C / L, its wrap a register.
Module build_chan_nhwc_wrap(const CoreConfig& c);
Module build_ptable(const CoreConfig& c, const Variant& v);
// One table bank (or lane copy) from its RAM spec: the generic RAM, or on --target ecp5 with an
// output register and at most 512 words, DP16KD blocks with their own output register.
Module build_table_ram(const CoreConfig& c, const RamSpec& spec);
Module build_lane(const CoreConfig& c, const Variant& v);
Module build_top(const CoreConfig& c, const Variant& v);
Module build_out_fifo(const CoreConfig& c, const Variant& v);

}  // namespace normcore::gen::core
