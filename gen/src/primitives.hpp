// Storage primitives shared by the core and the accelerator builders: a simple dual-port RAM
// with a registered read (block RAM), a FIFO (flip-flops or block RAM; full and count flags on
// request) and a skid buffer (a full-throughput register slice for valid/ready streams).
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/ir.hpp"

namespace normcore::gen {

struct RamSpec {
  std::string name;
  int width = 1;
  int depth = 2;
  bool block_attr = false;               // (* ram_style = "block" *) on the array (Xilinx)
  std::vector<std::string> description;  // comment lines above the module
  bool out_reg = false;                  // a second register after the read (the RAM's own
                                         // output register: EBR OUTREG, BRAM DOB_REG)
  bool read_always = false;              // read every cycle (no read enable, no_rw_check): the
                                         // word read in a write cycle is never used
};

// Ports clk_i, we_i, waddr_i, wdata_i, raddr_i, rdata_o (the word at raddr_i of the previous
// cycle, or with out_reg of the cycle before that; held while writing: no read while writing,
// so no read-during-write logic; with read_always read every cycle, the word read while writing
// undefined: no_rw_check, so the block RAM's read enable is constant).
Module ram_module(const RamSpec& spec);

struct FifoSpec {
  std::string name;
  int width = 1;
  int depth = 2;
  std::vector<std::string> description;
  // Storage: false: flip-flops, the head read combinationally (out the cycle after its write);
  // true: a RAM with a registered read (block RAM) plus that output register as the head:
  // capacity depth + 1, first word out two cycles after its write, then one per cycle.
  bool ram = false;
  bool full = false;   // full_o: no room (then wr_i only while !full_o)
  bool count = false;  // count_o: words held (0 .. capacity)
};

// Ports clk_i, rst_ni, wr_i, wdata_i, rd_i (pop the head, only while valid_o), rdata_o, valid_o,
// and full_o / count_o when asked for. Without full_o the writer guarantees room.
Module fifo_module(const FifoSpec& spec);

// The FIFO's formal properties (`ifdef FORMAL, props.hpp) for ports wr_i, wdata_i, rd_i,
// rdata_o, valid_o and `capacity` words: the writer never overfills it, the reader pops only a
// valid head (assumed); the head is held until popped, no word is lost, duplicated or reordered,
// `held` (optional: the design's count) is the number of words held (asserted); with
// `eager_valid` valid_o is (words held != 0) (a RAM with a registered read shows a word later).
void fifo_formal(Module& m, int capacity, const Expr& held, bool eager_valid,
                 const Expr& also = {});
// The same for a buffer whose rd_i is the reader's ready and whose pop is `pop` (valid_o & rd_i):
// rd_i is not assumed to come only with valid_o. `early`: wdata_i comes with we_i a cycle before
// wr_i counts the word (wr_i is we_i of the previous cycle, assumed; the word is wdata_i then).
void fifo_formal_ready(Module& m, int capacity, const Expr& held, const Expr& pop,
                       const Expr& also = {}, bool early = false);

struct SkidSpec {
  std::string name;
  int width = 1;  // the payload (data, keep, last, ... concatenated by the caller)
  std::vector<std::string> description;
};

// A register slice on a valid/ready stream: in_valid_i, in_ready_o, in_data_i -> out_valid_o,
// out_ready_i, out_data_o. Two entries (the output register and a skid register) so that
// in_ready_o is a flop (not combinational from out_ready_i) and a beat passes every cycle; order
// kept, each beat once; one cycle of latency.
Module skid_module(const SkidSpec& spec);

}  // namespace normcore::gen
