// The recogniser's chain ends: a chain that looks like a batch norm becomes a near miss (when
// something in it is not per-channel / constant) or a BnMatch, whose A and B are read back as
//   A = gamma * sqrt(var + eps)^-1   and   B = beta - mean * A
// (channel axis, parameter roles, eps, activation, numbers checked against the evaluated A, B).
#include <algorithm>
#include <cmath>
#include <limits>

#include "recognise_internal.hpp"

namespace normcore::import::detail {

void Recogniser::finish_chain(int v, const Chain& c) {
  const bool norm = has_inv_sqrt(c.A);
  const bool bn_like =
      c.explicit_bn || norm || (c.pc_mul && c.pc_add) || (c.bad_datamul && c.pc_add);
  if (!c.bad.empty()) {
    if (c.bad_datamul && c.ops_after_bad == 0 && c.clean_prefix >= 0) {
      const Sym& s = sym(c.clean_prefix);
      if (s.kind == Sym::Kind::chain) finish_chain(c.clean_prefix, s.ch);
      return;
    }
    if (!bn_like) return;
    NearMiss nm;
    nm.reason = c.bad;
    nm.location = loc(c.bad_node);
    for (int n : c.dnodes) nm.nodes.push_back(loc(n));
    nm.output = v;
    out_.near_misses.push_back(std::move(nm));
    return;
  }
  if (!bn_like) return;
  make_match(v, c);
}

void Recogniser::make_match(int v, const Chain& c) {
  BnMatch m;
  m.input = c.x;
  m.output = v;
  m.ops.clear();
  for (std::size_t i = 0; i < c.ops.size(); ++i) m.ops += (i > 0 ? "," : "") + c.ops[i];
  if (c.dknown) m.shape = c.dshape;
  if (!match_channels(m, c)) return;  // nothing per-channel: not a BN
  match_nodes(m, c);
  match_activation(m, c);
  Readback rb = read_scale(m, c);
  read_shift(m, c, rb);
  m.pattern = match_pattern(c, rb, has_inv_sqrt(c.A));
  if (m.missing.empty()) {
    match_numbers(m, c, rb);
  } else {
    // eps is known without data when it is a constant.
    double eps = 0;
    for (const auto& t : rb.eps_terms) {
      if (t.atoms.empty()) eps += t.coef;
    }
    m.eps = eps;
    m.params.eps = eps;
  }
  out_.layers.push_back(std::move(m));
}

// The channel axis, the number of channels and the layout; false when there are none.
bool Recogniser::match_channels(BnMatch& m, const Chain& c) const {
  int axis = c.axis;
  if (axis < 0 && c.axis_end > 0) {
    const int rank = c.dknown ? static_cast<int>(c.dshape.size()) : std::max(4, c.axis_end);
    axis = rank - c.axis_end;
  }
  std::int64_t len = c.len;
  if (len == 0) {
    if (!c.explicit_bn) return false;
    if (c.dknown && axis >= 0 && axis < static_cast<int>(c.dshape.size())) {
      len = c.dshape[static_cast<std::size_t>(axis)];
    }
    if (len <= 0) return false;
  }
  m.channel_axis = axis;
  m.channels = len;
  const int rank = c.dknown ? static_cast<int>(c.dshape.size()) : -1;
  m.layout = (rank >= 3 && axis == rank - 1) ? Layout::nhwc : Layout::nchw;
  return true;
}

// Nodes (data path first), their locations, the leaves and those without data.
void Recogniser::match_nodes(BnMatch& m, const Chain& c) const {
  for (int n : c.dnodes) m.nodes.push_back(n);
  for (int n : c.pnodes) {
    if (std::find(m.nodes.begin(), m.nodes.end(), n) == m.nodes.end()) m.nodes.push_back(n);
  }
  for (int n : m.nodes) m.locations.push_back(loc(n));
  m.location = c.dnodes.empty() ? std::string() : loc(c.dnodes.front());
  m.leaves = c.leaves;
  for (int leaf : c.leaves) {
    if (!g_.values[static_cast<std::size_t>(leaf)].constant) m.missing.push_back(describe(leaf));
  }
}

void Recogniser::match_activation(BnMatch& m, const Chain& c) {
  const double lowest = std::numeric_limits<double>::lowest();
  const double highest = std::numeric_limits<double>::max();
  if (!c.act_lo && !c.act_hi) return;
  if (c.act_lo && *c.act_lo == 0 && !c.act_hi) {
    m.activation = "relu";
  } else if (c.act_lo && *c.act_lo == 0 && c.act_hi && *c.act_hi == 6 && !c.act_clamp_op) {
    m.activation = "relu6";
  } else {
    m.activation = "clamp";
    m.act_min = c.act_lo.value_or(lowest);
    m.act_max = c.act_hi.value_or(highest);
  }
}

int Recogniser::leaf_of(int id) const {
  const AtomDef& d = atoms_[static_cast<std::size_t>(id)];
  return d.kind == AtomKind::leaf ? d.value : -1;
}

bool Recogniser::is_vector_leaf(int value) const {
  const Value& val = g_.values[static_cast<std::size_t>(value)];
  if (val.constant) return val.constant->data.size() > 1;
  std::int64_t n = 1;
  for (auto d : val.shape) n *= d;
  return n != 1;
}

// A: gamma (the factors other than one sqrt(...)^-1) and, inside the sqrt, var (per-channel
// terms) + eps (scalar terms).
Readback Recogniser::read_scale(BnMatch& m, const Chain& c) const {
  Readback rb;
  rb.structured = c.A.size() == 1;
  if (!rb.structured) return rb;
  rb.ma = &c.A[0];
  for (const auto& [id, e] : rb.ma->atoms) {
    if (atoms_[static_cast<std::size_t>(id)].kind == AtomKind::sqrt && e == -1 &&
        rb.sqrt_atom < 0) {
      rb.sqrt_atom = id;
    } else {
      rb.gamma_atoms.emplace_back(id, e);
    }
  }
  if (rb.ma->coef == 1 && rb.gamma_atoms.size() == 1 && rb.gamma_atoms[0].second == 1) {
    const int lv = leaf_of(rb.gamma_atoms[0].first);
    if (lv >= 0 && is_vector_leaf(lv)) m.gamma_value = lv;
  }
  if (rb.sqrt_atom < 0) return rb;
  for (const auto& t : atoms_[static_cast<std::size_t>(rb.sqrt_atom)].inner) {
    const bool scalar = t.atoms.empty() || (t.atoms.size() == 1 && t.atoms[0].second == 1 &&
                                            leaf_of(t.atoms[0].first) >= 0 &&
                                            !is_vector_leaf(leaf_of(t.atoms[0].first)));
    (scalar ? rb.eps_terms : rb.var_terms).push_back(t);
  }
  const auto& vt = rb.var_terms;
  if (vt.size() == 1 && vt[0].coef == 1 && vt[0].atoms.size() == 1 && vt[0].atoms[0].second == 1) {
    m.var_value = leaf_of(vt[0].atoms[0].first);
  }
  const auto& et = rb.eps_terms;
  if (et.size() == 1 && !et[0].atoms.empty() && et[0].coef == 1) {
    m.eps_value = leaf_of(et[0].atoms[0].first);
  }
  return rb;
}

// B: mean terms are A times one more vector leaf; the rest is beta.
void Recogniser::read_shift(BnMatch& m, const Chain& c, Readback& rb) const {
  for (const auto& t : c.B) {
    bool is_mean = false;
    if (rb.structured && !rb.ma->atoms.empty()) {
      std::map<int, int> rem;
      for (const auto& [id, e] : t.atoms) rem[id] += e;
      for (const auto& [id, e] : rb.ma->atoms) rem[id] -= e;
      std::erase_if(rem, [](const auto& kv) { return kv.second == 0; });
      if (rem.size() == 1 && rem.begin()->second == 1) {
        const int lv = leaf_of(rem.begin()->first);
        if (lv >= 0 && is_vector_leaf(lv)) {
          rb.mean_terms.emplace_back(-t.coef / rb.ma->coef, lv);
          is_mean = true;
        }
      }
    }
    if (!is_mean) rb.beta_poly.push_back(t);
  }
  if (rb.mean_terms.size() == 1 && rb.mean_terms[0].first == 1) {
    m.mean_value = rb.mean_terms[0].second;
  }
  const auto& bp = rb.beta_poly;
  if (bp.size() == 1 && bp[0].coef == 1 && bp[0].atoms.size() == 1 && bp[0].atoms[0].second == 1) {
    const int lv = leaf_of(bp[0].atoms[0].first);
    if (lv >= 0 && is_vector_leaf(lv)) m.beta_value = lv;
  }
}

std::string Recogniser::match_pattern(const Chain& c, const Readback& rb, bool norm) {
  if (c.explicit_bn) return "batchnorm";
  if (!rb.structured) return "affine";
  if (norm) return c.mean_first ? "decomposed" : "folded-shift";
  return "scale-shift";
}

// ---------------------------------------------------------------------------------------------
// Numbers (every leaf has data).

namespace {

// Finite parameters, eps >= 0 and var + eps > 0 (what validate() in bn_params.cpp requires).
bool plausible(const BnNumbers& n) {
  auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (!finite(n.gamma) || !finite(n.beta) || !finite(n.mean) || !finite(n.var)) return false;
  if (!std::isfinite(n.eps) || n.eps < 0) return false;
  return std::all_of(n.var.begin(), n.var.end(), [&](double v) { return v + n.eps > 0; });
}

}  // namespace

void Recogniser::match_numbers(BnMatch& m, const Chain& c, const Readback& rb) {
  const auto C = static_cast<std::size_t>(m.channels);
  const auto a_num = eval_poly(c.A, C);
  const auto b_num = eval_poly(c.B, C);
  BnNumbers n{std::vector<double>(C, 1.0), std::vector<double>(C, 1.0), std::vector<double>(C, 0.0),
              std::vector<double>(C, 0.0), 0};
  bool ok = a_num && b_num && rb.structured;
  if (ok) {
    ok = eval_structured(m, rb, C, n);
    if (ok && !plausible(n)) {  // a NaN / negative var, an infinite mean, a negative eps: kept
      store_numbers(m, std::move(n));  // as read, so that the check names that field
      return;
    }
    // The read-back must reproduce the evaluated affine map.
    if (ok && !reproduces(n, *a_num, *b_num)) {
      ok = false;
      m.warnings.push_back(
          "the parameters read back as gamma / sqrt(var + eps) and beta - "
          "mean * scale do not reproduce the graph's values (variance + eps "
          "<= 0?); using gamma = the folded scale, beta = the folded shift");
    }
  }
  if (!ok && a_num && b_num) {
    n.gamma = *a_num;
    n.beta = *b_num;
    std::fill(n.mean.begin(), n.mean.end(), 0.0);
    std::fill(n.var.begin(), n.var.end(), 1.0);
    n.eps = 0;
    m.pattern = c.explicit_bn ? m.pattern : "affine";
    m.gamma_value = m.beta_value = m.mean_value = m.var_value = m.eps_value = -1;
    ok = true;
  }
  if (ok) {
    store_numbers(m, std::move(n));
  } else {
    m.warnings.push_back("parameter values could not be evaluated");
  }
}

bool Recogniser::eval_structured(BnMatch& m, const Readback& rb, std::size_t C, BnNumbers& n) {
  bool ok = eval_gamma(rb, C, n);
  if (rb.sqrt_atom >= 0 && ok) ok = eval_var_eps(m, rb, C, n);
  const bool mb = eval_mean_beta(rb, C, n);
  return ok && mb;
}

bool Recogniser::eval_gamma(const Readback& rb, std::size_t C, BnNumbers& n) {
  for (std::size_t i = 0; i < C; ++i) n.gamma[i] = rb.ma->coef;
  for (const auto& [id, e] : rb.gamma_atoms) {
    auto v = eval_atom(id, C);
    if (!v) return false;
    for (std::size_t i = 0; i < C; ++i) n.gamma[i] *= std::pow((*v)[i], e);
  }
  return true;
}

bool Recogniser::eval_var_eps(BnMatch& m, const Readback& rb, std::size_t C, BnNumbers& n) {
  std::fill(n.var.begin(), n.var.end(), 0.0);
  std::vector<std::vector<double>> vt;
  for (const auto& t : rb.var_terms) {
    auto e = eval_poly({t}, C);
    if (!e) return false;
    vt.push_back(*e);
  }
  // A per-channel term that is numerically the same for every channel is epsilon when the
  // variance is another term.
  if (vt.size() > 1) {
    int uni = -1, count = 0;
    for (std::size_t k = 0; k < vt.size(); ++k) {
      if (std::all_of(vt[k].begin(), vt[k].end(), [&](double x) { return x == vt[k][0]; })) {
        uni = static_cast<int>(k);
        ++count;
      }
    }
    if (count == 1 && vt.size() == 2) {
      const auto u = static_cast<std::size_t>(uni);
      const Mono& other = rb.var_terms[1 - u];
      n.eps += vt[u][0];
      vt.erase(vt.begin() + uni);
      if (other.atoms.size() == 1 && other.atoms[0].second == 1 && other.coef == 1) {
        m.var_value = leaf_of(other.atoms[0].first);
      }
    }
  }
  for (const auto& t : vt) {
    for (std::size_t i = 0; i < C; ++i) n.var[i] += t[i];
  }
  for (const auto& t : rb.eps_terms) {
    auto e = eval_poly({t}, C);
    if (!e) return false;
    n.eps += (*e)[0];
  }
  return true;
}

bool Recogniser::eval_mean_beta(const Readback& rb, std::size_t C, BnNumbers& n) {
  for (const auto& [f, lv] : rb.mean_terms) {
    auto v = eval_atom(leaf_atom(lv), C);
    if (!v) return false;
    for (std::size_t i = 0; i < C; ++i) n.mean[i] += f * (*v)[i];
  }
  auto bv = eval_poly(normalise(rb.beta_poly), C);
  if (!bv) return false;
  n.beta = *bv;
  return true;
}

bool Recogniser::reproduces(const BnNumbers& n, const std::vector<double>& a,
                            const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ar = n.gamma[i] / std::sqrt(n.var[i] + n.eps);
    const double br = n.beta[i] - n.mean[i] * ar;
    const double ta = 1e-9 * std::max(1.0, std::fabs(a[i]));
    const double tb = 1e-9 * std::max({1.0, std::fabs(b[i]), std::fabs(n.mean[i] * ar)});
    if (!(std::fabs(ar - a[i]) <= ta) || !(std::fabs(br - b[i]) <= tb)) return false;
  }
  return true;
}

void Recogniser::store_numbers(BnMatch& m, BnNumbers n) {
  const double eps = n.eps;
  m.complete = true;
  m.eps = eps;
  m.params.gamma = std::move(n.gamma);
  m.params.beta = std::move(n.beta);
  m.params.mean = std::move(n.mean);
  m.params.var = std::move(n.var);
  m.params.eps = eps;
  m.params.activation = m.activation;
  m.params.act_min = m.act_min;
  m.params.act_max = m.act_max;
  for (std::size_t i = 0; i < m.params.var.size(); ++i) {
    if (!(m.params.var[i] + eps > 0)) {
      m.warnings.push_back("channel " + std::to_string(i) +
                           ": var + eps = " + num(m.params.var[i] + eps) + " is not positive");
      break;
    }
  }
}

}  // namespace normcore::import::detail
