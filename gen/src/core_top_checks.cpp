// The configuration check of a specialised core on --target ice40 in flags of one LUT4 each
// (core_top.cpp, config_stage / config_derive): the generic flags (a 10-bit compare, 12-bit
// chunks) are two LUT levels from cfg_*, ports whose routes are long.
#include <algorithm>

#include "core_internal.hpp"
#include "specialise.hpp"

namespace normcore::gen::core {

using ex::bit;
using ex::lit;
using ex::slice;

namespace {
constexpr int kLut = 4;
}  // namespace

bool narrow_checks(const CoreConfig& c, const Variant& v) {
  const bool spec = c.has_fixed_shift() || c.has_fixed_rounding() || c.has_fixed_layout() ||
                    c.lanes_divide_channels;
  const int cw = c.chan_bits();
  return spec && !v.dec && c.target == "ice40" && cw >= 2 && cw - 1 <= 3 * kLut &&
         c.max_channels == (1LL << (cw - 1));
}

// C <= MAX = 2^(cw-1) and C != 0 as C's top bit t and "C's low bits are 0" per chunk z_k (at
// most three chunks: t and the z_k are one LUT in config_derive, ok = t ? AND z : ~AND z).
std::vector<Expr> narrow_chan_flags(const Module& m, const CoreConfig& c) {
  const Expr ch = m.ref("cfg_channels_i");
  const int lw = c.chan_bits() - 1, n = (lw + 2) / 3;
  std::vector<Expr> out{bit(ch, lw)};
  for (int b = 0; b < lw; b += n) {
    const int k = std::min(n, lw - b);
    out.push_back(ex::eq(slice(ch, b, k), lit(k, 0)));
  }
  return out;
}

Expr narrow_chan_ok(const Expr& f) {
  const Expr z = ex::red_and(slice(f, 1, f.width() - 1));
  return ex::mux(bit(f, 0), z, ~z);
}

// The fixed settings' checks (config_checks without the channel compare): equalities cut into
// pieces of at most four input bits, packed into flags of at most four inputs.
std::vector<Expr> narrow_config_checks(const Module& m, const CoreConfig& c, const Variant& v) {
  struct Piece {
    Expr e;
    int n;
  };
  std::vector<Piece> ps;
  const auto eq = [&](const Expr& e, std::uint64_t val) {
    for (int b = 0; b < e.width(); b += kLut - 1) {
      const int k = std::min(kLut - 1, e.width() - b);
      ps.push_back({ex::eq(slice(e, b, k), lit(k, (val >> b) & ((1ULL << k) - 1))), k});
    }
  };
  if (c.has_fixed_shift())
    eq(m.ref("cfg_shift_i"), static_cast<std::uint64_t>(c.fixed_shift) & ((1ULL << v.rw) - 1));
  if (c.has_fixed_rounding()) eq(m.ref("cfg_round_i"), spec::rounding_code(c));
  if (c.has_fixed_layout()) eq(m.ref("cfg_layout_i"), spec::layout_code(c));
  if (c.lanes_divide_channels && c.lanes > 1 && (c.lanes & (c.lanes - 1)) == 0) {
    int a = 0;
    while ((1LL << a) < c.lanes) ++a;
    eq(slice(m.ref("cfg_channels_i"), 0, a), 0);
  }
  std::sort(ps.begin(), ps.end(), [](const Piece& x, const Piece& y) { return x.n > y.n; });
  std::vector<Expr> out;
  std::vector<int> used;
  for (const auto& p : ps) {  // first fit, largest first
    std::size_t i = 0;
    while (i < out.size() && used[i] + p.n > kLut) ++i;
    if (i == out.size()) {
      out.push_back(p.e), used.push_back(p.n);
    } else {
      out[i] = out[i] & p.e, used[i] += p.n;
    }
  }
  return out;
}

}  // namespace normcore::gen::core
