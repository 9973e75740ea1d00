// --target ice40: the banked table's read address of bank j (core_table.cpp, table_banks).
#include <algorithm>
#include <vector>

#include "core_internal.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::core {

using ex::lit;
using ex::slice;
using ex::zext;

// Bank j reads word c0 / P + (c0 mod P > j) = (c0 + P - 1 - j) / P: written as the add of a
// constant, it is one carry chain from c0_i (the tracker's register) into the block RAM's read
// address, where c0 / P + (c0 mod P > j) put a LUT and its route in front of the chain.
Expr table_read_word(Module& m, int cw, int p, int ab, int j) {
  using U = std::uint64_t;
  const int hw = std::min(ab, cw + 1 - p);
  const Expr s = m.wire(idx("rsum", j), cw + 1, "c0 + P - 1 - j");
  m.assign(s, zext(m.ref("c0_i"), cw + 1) + lit(cw + 1, (U{1} << p) - 1 - static_cast<U>(j)));
  std::vector<Expr> rest{slice(s, 0, p)};
  if (hw < cw + 1 - p) rest.push_back(slice(s, p + hw, cw + 1 - p - hw));
  rtl::sink(m, "unused_" + idx("rsum", j), rest);
  return hw < ab ? zext(slice(s, p, hw), ab) : slice(s, p, hw);
}

// The loader's copy of ld_ready_q for its word counter (core_table.cpp table_loader): ld_nrd_q =
// ~ld_ready_q, or (same: spec::same_copies) ld_rdc_q = ld_ready_q, its next value in De Morgan
// form (another shape of the same function, so that synthesis keeps the two flip-flops apart).
// s = {abort_i, load_i, ld_ready_q, prm_valid_i, ld_lastw}. Returns the counters' accept.
Expr loader_ready_copy(Module& m, bool same, const std::vector<Expr>& s, Block& rst, Block& go) {
  const Expr &abort = s[0], &load = s[1], &ready = s[2], &valid = s[3], &lastw = s[4];
  const Expr r = m.reg(same ? "ld_rdc_q" : "ld_nrd_q", 1,
                       std::string(same ? "" : "~") + "ld_ready_q (the word counter's copy)");
  rst.push_back(assign(r, lit(1, same ? 0 : 1)));
  go.push_back(assign(r, same ? ~(abort | ~(load | ~(~ready | (valid & lastw))))
                              : ~(~abort & (load | (ready & ~(valid & lastw))))));
  return valid & (same ? r : ~r);
}

}  // namespace normcore::gen::core
