// Storage primitives shared by the core and the accelerator builders: a simple dual-port RAM
// with a registered read (block RAM) and a first-word-fall-through FIFO.
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
};

// Ports clk_i, we_i, waddr_i, wdata_i, raddr_i, rdata_o (the word at raddr_i of the previous
// cycle, held while writing: no read while writing, so no read-during-write logic).
Module ram_module(const RamSpec& spec);

struct FifoSpec {
  std::string name;
  int width = 1;
  int depth = 2;
  std::vector<std::string> description;
};

// Ports clk_i, rst_ni, wr_i, wdata_i, rd_i (only while valid_o), rdata_o, valid_o. The writer
// guarantees room (no full flag).
Module fifo_module(const FifoSpec& spec);

}  // namespace normcore::gen
