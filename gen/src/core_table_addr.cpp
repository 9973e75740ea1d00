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

// The copies' wrap test c0 >= cm, cm = max(0, C + 1 - 2^nb) from cmw = C + 1 - 2^nb (cw + 1 bits,
// negative when C < 2^nb) (core_table.cpp table_copies_read): --target ecp5 (staged) the carry of
// c0 + (2^cw - cm) from a register ncm_q; --target ice40 (staged, ice) the carry of c0 + ~cm + 1
// with ~cm registered as it is made (its select inverted: no 2^cw - cm chain, no cm_q); else a
// compare with cm_q.
Expr copies_small(Module& m, const Expr& c0, const Expr& cmw, int cw, int nb, bool staged,
                  bool ice) {
  using U = std::uint64_t;
  Expr esmall;
  const std::string cmd = "max(0, C + 1 - 2^" + std::to_string(nb) + ") (per job)";
  if (staged && ice) {
    esmall = m.wire("e_small", 1, "C - c0 < 2^" + std::to_string(nb));
    const Expr ncm = m.reg("ncm_q", cw, "~" + cmd);
    m.seq({assign(ncm, mux(bit(cmw, cw), ex::ones(cw), ~slice(cmw, 0, cw)))});
    const Expr ges = m.wire("es_s", cw + 2, "{c0, 1} + {~cm, 1}: top bit c0 >= cm");
    m.assign(ges, zext(cat({c0, lit(1, 1)}), cw + 2) + zext(cat({ncm, lit(1, 1)}), cw + 2));
    m.assign(esmall, bit(ges, cw + 1));
    rtl::sink(m, "unused_es_s", {slice(ges, 0, cw + 1)});
  } else {
    const Expr cm = m.reg("cm_q", cw, cmd);
    m.seq({assign(cm, mux(bit(cmw, cw), lit(cw, 0), slice(cmw, 0, cw)))});
    esmall = m.wire("e_small", 1, "C - c0 < 2^" + std::to_string(nb));
    if (staged) {  // --target ecp5: the carry of c0 + (2^cw - cm), straight into es_q
      const Expr ncm = m.reg("ncm_q", cw + 1, "2^cw - cm_q (per job)");
      m.seq({assign(ncm, lit(cw + 1, U{1} << cw) - zext(cm, cw + 1))});
      const Expr ges = m.wire("es_s", cw + 1, "c0 + 2^cw - cm: top bit c0 >= cm");
      m.assign(ges, zext(c0, cw + 1) + ncm);
      m.assign(esmall, bit(ges, cw));
      rtl::sink(m, "unused_es_s", {slice(ges, 0, cw)});
    } else {
      m.assign(esmall, ex::ge(c0, cm));
    }
  }
  return esmall;
}

// TableWidths::ktab (core_table.cpp k_reg): max(0, base - times * C) for C < 2^nb as a table of C's
// low nb bits (one LUT a bit for nb <= 3; Yosys made each difference a carry chain and the clamp a
// LUT a bit), registered (set-up stage 1) beside C >= 2^nb, whose register then clears it: the same
// stages as k_reg's.
Expr k_table(Module& m, int nb, int cw, Block& consts, const std::string& name, int times, int base,
             const Expr& kq) {
  using U = std::uint64_t;
  const Expr chans = m.ref("chans_i"), lc = ex::fit(chans, nb);
  Expr t = lit(nb, 0);
  for (int j = (1 << nb) - 1; j >= 0; --j) {
    const long long v = base - static_cast<long long>(times) * j;
    if (v > 0) t = mux(ex::eq(lc, lit(nb, static_cast<U>(j))), lit(nb, static_cast<U>(v)), t);
  }
  const std::string what = "max(0, " + std::to_string(base) + " - " +
                           (times > 1 ? std::to_string(times) : "") + "C) for C < 2^nb";
  const Expr ks = m.reg(name + "s_q", nb, what + " (set-up stage 1)");
  consts.push_back(assign(ks, t));
  Expr k = ks;
  if (cw > nb) {
    const Expr hz = m.reg(name + "h_q", 1, "C >= 2^nb (set-up stage 1)");
    consts.push_back(assign(hz, ex::ne(slice(chans, nb, cw - nb), lit(cw - nb, 0))));
    k = mux(hz, lit(nb, 0), ks);
  }
  consts.push_back(assign(kq, k));
  return kq;
}

}  // namespace normcore::gen::core
