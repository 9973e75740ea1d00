// Small helpers over the typed IR (expr.hpp, ir.hpp) shared by the accelerator and register-block
// builders: literals in other bases, register pairs (foo_q / foo_d), shifts by a constant and
// the unread-bit sink. Private to the generator library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normcore/gen/ir.hpp"

namespace normcore::gen::rtl {

// `width`-bit literal printed in hexadecimal ("8'h4e"; "1'b1" for one bit); must fit.
Expr hex_lit(int width, std::uint64_t value);
// `width`-bit literal printed in binary ("2'b10"); must fit.
Expr bin_lit(int width, std::uint64_t value);

// A flop and its next value: <stem>_q (the flop) and <stem>_d (set in an always @* block).
struct RegPair {
  Expr q, d;
};
RegPair reg_pair(Module& m, const std::string& stem, int width, const std::string& comment = {});

// A clocked process written as "if (reset) resets else body; always", turned into next-state
// logic: a <x>_d for every <x>_q the statements assign, one always @* block (x_d = x_q, then the
// statements with x_d on the left), and one flop block of q <= d. A register that `body` assigns
// and `resets` does not is only loaded out of reset, as in the clocked process.
struct Process {
  std::vector<std::pair<Expr, Expr>> resets;  // q, value while rst_ni is low
  Expr clear;           // optional: also take the reset values when this is high (not rst_ni)
  Block body;           // when not in reset (and not clear)
  Block always;         // every cycle: registers without a reset
  std::string comment;  // above the always @* block
};
void process(Module& m, const Process& p);

// e << n and e >> n for a constant n >= 1 (the amount as a literal of the fewest bits).
Expr shl_by(const Expr& e, int n);
Expr shr_by(const Expr& e, int n);

// ^{parts...} (one part: ^part; a 1-bit part alone stays itself): the sink of unread bits.
Expr xor_all(const std::vector<Expr>& parts);

// Adds `name` (1 bit) = xor_all(parts) to m: bits that are deliberately left unread.
void sink(Module& m, const std::string& name, const std::vector<Expr>& parts);

// The sum of the bits of `e` as an `out_bits` wide expression (a balanced adder tree of wires
// <prefix>_<level>_<i> added to m).
Expr popcount(Module& m, const std::string& prefix, const Expr& e, int out_bits);

}  // namespace normcore::gen::rtl
