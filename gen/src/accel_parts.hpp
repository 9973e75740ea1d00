// Builders of the accelerator's building blocks (FIFOs, gearboxes, DMA engines, job control).
#pragma once

#include <string>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen {

// FIFO on a RAM with registered read (block RAM friendly), first word falls through after two
// cycles. Capacity depth + 1 (the RAM output register holds the head). count_o = entries held.
Module build_ram_fifo(const std::string& name, int width, int depth);
// Small FIFO in flip-flops with a combinational head.
Module build_flop_fifo(const std::string& name, int width, int depth);
// Bus words in -> groups of `k` elements of `ew` bits out (the last group partial, with keep/last).
// in_bits and k * ew must have a power-of-two greatest common divisor.
Module build_gear_in(const std::string& name, int in_bits, int ew, int k, int count_bits);
// Groups of `k` elements of `ew` bits (keep, last) in -> bus words of out_bits out; the final
// word is flushed partially filled.
Module build_gear_out(const std::string& name, int out_bits, int ew, int k);
Module build_rdma(const AccelConfig& c, const std::string& name, int words_bits, int credit_bits);
Module build_wdma(const AccelConfig& c, const std::string& name, int words_bits, int count_bits);

// Sum of the bits of a `width`-bit net as an expression `out_bits` wide (balanced adder tree of
// intermediate wires added to m, named prefix_*).
std::string popcount(Module& m, const std::string& prefix, const std::string& net, int width,
                     int out_bits);

}  // namespace normcore::gen
