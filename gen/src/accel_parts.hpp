// Builders of the accelerator's building blocks: FIFOs (accel_parts.cpp) and the DMA engines
// (accel_dma.cpp). The gearboxes and the burst issuer are shared primitives (prim_axi.hpp).
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
Module build_rdma(const AccelConfig& c, const std::string& name, int words_bits, int credit_bits);
Module build_wdma(const AccelConfig& c, const std::string& name, int words_bits, int count_bits);
// The DMA engines' formal properties (`ifdef FORMAL, accel_props.cpp): AXI4 handshakes, burst
// length and 4 KiB rules, outstanding limits, WLAST on the burst's last beat, no new burst after
// an error stop.
void rdma_formal(Module& m, const AccelConfig& c);
void wdma_formal(Module& m, const AccelConfig& c);

}  // namespace normcore::gen
