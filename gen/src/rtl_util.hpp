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

// A clocked process (reset values, optional synchronous clear, body, always part): the IR's
// one implementation, Module::process (see ClockedProcess in ir.hpp).
using Process = ClockedProcess;
inline void process(Module& m, const Process& p) {
  m.process(p);
}

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
