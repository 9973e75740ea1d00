// Shared builders of the accelerator's datapath primitives (private to the generator library):
// the gearboxes (bus words <-> groups of elements) and the AXI4 burst issuer that the read and
// the write DMA engines both use.
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/accel.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen::prim {

// Bus words in -> groups of `k` elements of `ew` bits out (the last group partial, with keep/last).
// in_bits and k * ew must have a power-of-two greatest common divisor.
Module build_gear_in(const std::string& name, int in_bits, int ew, int k, int count_bits);
// Groups of `k` elements of `ew` bits (keep, last) in -> bus words of out_bits out; the final
// word is flushed partially filled.
Module build_gear_out(const std::string& name, int out_bits, int ew, int k);

// The AXI4 address channel m_axi_<ch>* (ch "ar" or "aw") as ports of m.
void axi_addr_ports(Module& m, const AccelConfig& c, const std::string& ch);

// The burst issuer of a DMA engine: the address channel's registers (<ch>_valid_q, <ch>_addr_q,
// <ch>_len_q), the next burst's address (addr_q) and the words not yet covered by a burst
// (left_q), and the next burst's length `len` = min(max_burst, words to the next 4 KiB boundary,
// left_q) (wires b_to4k, b_cap, b_len). Expects ports start_i, addr_i, words_i, abort_i.
struct BurstIssuer {
  std::string ch;
  Expr valid_q, ax_addr_q, ax_len_q, addr_q, left_q;
  Expr len;  // b_len
  int len_bits = 0;
};
BurstIssuer burst_issuer(Module& m, const AccelConfig& c, const std::string& ch, int wb,
                         const std::string& left_comment);
// issue = (~<ch>_valid_q | m_axi_<ch>ready) & (left_q != 0) & ~abort_i & ~err_q & all of
// `extra`: a burst every cycle while the slave takes them.
Expr burst_issue(Module& m, const BurstIssuer& b, const Expr& err_q,
                 const std::vector<Expr>& extra);
// The issuer's registers (START loads addr_q / left_q; an issue presents the burst and advances
// them; the handshake drops VALID) and the m_axi_<ch>* outputs.
void burst_logic(Module& m, const AccelConfig& c, const BurstIssuer& b, const Expr& issue);

}  // namespace normcore::gen::prim
