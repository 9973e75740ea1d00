// The accelerator's FIFOs, both the shared FIFO primitive (primitives.hpp): a RAM FIFO with a
// registered read (read and write buffers) and a small flop FIFO with full_o (the write DMA's
// queues). The gearboxes and the burst issuer are in prim_axi.cpp, the DMA engines in
// accel_dma.cpp.
#include "accel_parts.hpp"

#include "primitives.hpp"

namespace normcore::gen {

Module build_ram_fifo(const std::string& name, int width, int depth) {
  return fifo_module(
      {.name = name,
       .width = width,
       .depth = depth,
       .description = {"FIFO of " + std::to_string(depth) +
                           " words in a RAM with a registered read,",
                       "plus the RAM output register as the head (capacity " +
                           std::to_string(depth + 1) + "). First word out two cycles after it",
                       "is written; then one word per cycle."},
       .ram = true,
       .count = true});
}

Module build_flop_fifo(const std::string& name, int width, int depth) {
  return fifo_module({.name = name,
                      .width = width,
                      .depth = depth,
                      .description = {"FIFO of " + std::to_string(depth) +
                                      " entries in flip-flops; the head is combinational."},
                      .full = true});
}

}  // namespace normcore::gen
