// --target ice40, the direct table (a specialised core): the loader's ready register's next value
// (core_table.cpp, table_loader).
#include "core_internal.hpp"

namespace normcore::gen::core {

// ~abort & (load | ready & ~(valid & lastw)) has six inputs (abort is start_i & the top's ready_q),
// so two LUT levels. The abort terms are keep wires of registers and start_i (ld_kr = ~abort &
// ready, ld_kl = ~abort & load), so the last LUT is kl | kr & ~(valid & lastw): the word port and
// the chain's sign ld_lastw enter it directly (left to itself, ABC put valid & lastw in the first
// LUT, a route from the chain's top cell and a LUT more on the path into ld_ready_q).
Expr direct_ready_next(Module& m, const Expr& abort, const Expr& ready, const Expr& load,
                       const Expr& valid, const Expr& lastw) {
  const Expr kr = m.wire("ld_kr", 1, "~abort & ld_ready_q");
  m.attr_last("keep");
  m.assign(kr, ~abort & ready);
  const Expr kl = m.wire("ld_kl", 1, "~abort & load_i");
  m.attr_last("keep");
  m.assign(kl, ~abort & load);
  return kl | (kr & ~(valid & lastw));
}

}  // namespace normcore::gen::core
