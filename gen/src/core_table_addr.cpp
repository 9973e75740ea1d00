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

}  // namespace normcore::gen::core
