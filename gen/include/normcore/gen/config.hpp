// Configuration of a generated streaming BN-inference core, its validation and derived sizes.
#pragma once

#include <algorithm>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "normcore/contract.hpp"

namespace normcore::gen {

inline constexpr const char* kGeneratorVersion = "0.1.0";

// Number of bits needed to hold the unsigned value v (at least 1).
int bits_for(long long v);
// ceil(log2(v)) for v >= 1 (0 for v == 1).
int clog2(long long v);

struct CoreConfig {
  std::string name = "normcore";  // module name prefix
  int lanes = 8;                  // elements per beat, 1..64
  ArithSpec arith;                // element widths and signedness
  int max_channels = 1024;        // table size, 1..65536
  int inner_bits = 24;            // width of the inner-size (HW) config input, 1..32
  int pipeline = 3;               // 3..8 register stages from input beat to lane result
  std::string target = "generic";  // generic | ice40 | xilinx | asic: mapping hints (see below)

  // The pipeline depth `normcore gen --target T` picks when --pipeline is not given: generic 3
  // (fewest registers), ice40 8 (measured best on UP5K, docs/ppa.md), xilinx 4 (the lane's
  // multiply-add with its input and output registers, the DSP48E1's A/B/C and P registers),
  // asic 5 (the >>> R shifter registered).
  [[nodiscard]] static int default_pipeline(const std::string& target);
  // Xilinx: Vivado attributes (ram_style on the table banks, use_dsp on the lanes' multiply-add).
  [[nodiscard]] bool xilinx_attrs() const { return target == "xilinx"; }

  // Empty if valid, else a message that starts with the offending CLI option ("--lanes: ...").
  [[nodiscard]] std::string check() const;

  // Derived sizes (valid only for a checked config).
  [[nodiscard]] int acc_bits() const { return arith.acc_bits(); }
  [[nodiscard]] int chan_bits() const { return bits_for(max_channels); }  // holds C
  [[nodiscard]] int rshift_bits() const { return bits_for(acc_bits()); }  // holds R
  [[nodiscard]] int banks() const { return 1 << clog2(lanes); }           // power of two >= L
  [[nodiscard]] int bank_sel_bits() const { return clog2(lanes); }
  [[nodiscard]] int bank_depth() const {                                  // words per bank
    return ((max_channels + banks() - 2) >> bank_sel_bits()) + 1;
  }
  [[nodiscard]] int bank_addr_bits() const { return clog2(bank_depth() < 2 ? 2 : bank_depth()); }
  [[nodiscard]] int lane_count_bits() const { return bits_for(lanes); }  // holds L
  // Narrow in-channel offsets (used while S < L): the walker's r, per-lane q_i, L mod S, S - (L mod S).
  [[nodiscard]] int chan_low_bits() const { return std::min(lane_count_bits(), inner_bits); }
  [[nodiscard]] int param_bits() const { return arith.sw + arith.bw; }
  // Cycles from an accepted input beat to its output beat on m_axis (unstalled).
  [[nodiscard]] int latency() const { return pipeline + 1; }
  // Beats the core holds (in flight plus buffered): sized so an unstalled stream never bubbles.
  [[nodiscard]] int fifo_depth() const { return pipeline + 2; }
  // Optional lane registers, each added by one more pipeline step (the lane has pipeline - 1
  // register stages: the accumulator and the output always, these in between):
  [[nodiscard]] bool pipe_xbar() const { return pipeline >= 4; }    // lane input regs after the crossbar
  [[nodiscard]] bool pipe_shift() const { return pipeline >= 5; }   // after the >>> R shifter
  [[nodiscard]] bool pipe_round() const { return pipeline >= 6; }   // after rounding, before the clamp
  [[nodiscard]] bool pipe_shift2() const { return pipeline >= 7; }  // inside the shifter
  [[nodiscard]] bool pipe_sat() const { return pipeline >= 8; }     // after saturation and +1 decision
  [[nodiscard]] std::string top_name() const { return name + "_core"; }

  [[nodiscard]] nlohmann::json to_json() const;
  // Reads a config object (as written by to_json(); missing keys keep their defaults).
  // Throws std::invalid_argument naming the key on a type error.
  static CoreConfig from_json(const nlohmann::json& j);
};

}  // namespace normcore::gen
