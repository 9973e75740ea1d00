// Table read addresses: --target ice40's banked table (bank j), core::e5_wide's copies (t0
// sums); DP16KD's pin lists.
#include <algorithm>
#include <vector>

#include "core_internal.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::cat;
using ex::lit;
using ex::mux;
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

Expr copies_high_inc(Module& m, const Expr& c0, int nb, int ab, std::vector<Flop>& ff) {
  const Expr ch1 = m.reg("ch1_q", ab - nb, "c0's high part + 1 (t0)");
  ff.push_back(Flop{ch1, slice(c0, nb, ab - nb) + lit(ab - nb, 1), {}});
  return ch1;
}

// c0 + d_i < C <= 2^ab when read (no wrap): the high part is ch1_q after a carry, and ch1_q's
// overflow (high part all ones) is a wrap.
Expr copies_low_sum(Module& m, const CopiesSum& s, int nb, int i, std::vector<Flop>& ff) {
  const int ab = s.c0q.width();
  const Expr lo = m.reg(idx("lo", i) + "_q", nb + 1, "c0's low part + d_i, its carry (t0)");
  ff.push_back(Flop{lo, zext(slice(s.c0, 0, nb), nb + 1) + zext(s.d, nb + 1), {}});
  return cat({mux(bit(lo, nb), s.ch1, slice(s.c0q, nb, ab - nb)), slice(lo, 0, nb)});
}

void ram_pins(Instance& in, const std::string& base, int lo, const Expr& e, int n, int from) {
  for (int k = 0; k < n; ++k)
    in.connections.emplace_back(base + std::to_string(lo + k), bit(e, from + k));
}
void ram_consts(Instance& in, const std::string& base, int lo, std::uint64_t v, int n) {
  for (int k = 0; k < n; ++k)
    in.connections.emplace_back(base + std::to_string(lo + k), lit(1, (v >> k) & 1));
}

}  // namespace normcore::gen::core
