// The recogniser's algebra: parameter expressions (sums of monomials over atoms), parameter
// shapes, interned atoms (leaves, sqrt, opaque functions) and their numeric evaluation.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "recognise_internal.hpp"

namespace normcore::import::detail {

std::string num(double v) {
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", v);
  return buf.data();
}

// ---------------------------------------------------------------------------------------------
// Polynomials.

AtomPowers mul_atoms(const AtomPowers& a, const AtomPowers& b) {
  std::map<int, int> m;
  for (const auto& [id, e] : a) m[id] += e;
  for (const auto& [id, e] : b) m[id] += e;
  AtomPowers out;
  for (const auto& [id, e] : m) {
    if (e != 0) out.emplace_back(id, e);
  }
  return out;
}

Poly normalise(Poly p) {
  std::sort(p.begin(), p.end(), [](const Mono& a, const Mono& b) { return a.atoms < b.atoms; });
  Poly out;
  for (auto& m : p) {
    if (!out.empty() && out.back().atoms == m.atoms) {
      out.back().coef += m.coef;
    } else {
      out.push_back(std::move(m));
    }
  }
  std::erase_if(out, [](const Mono& m) { return m.coef == 0; });
  return out;
}

Poly constant_poly(double c) {
  return c == 0 ? Poly{} : Poly{Mono{c, {}}};
}
Poly atom_poly(int id, int e) {
  return Poly{Mono{1, {{id, e}}}};
}

std::optional<double> constant_of(const Poly& p) {
  if (p.empty()) return 0.0;
  if (p.size() == 1 && p[0].atoms.empty()) return p[0].coef;
  return std::nullopt;
}

Poly add(const Poly& a, const Poly& b) {
  Poly r = a;
  r.insert(r.end(), b.begin(), b.end());
  return normalise(std::move(r));
}
Poly neg(const Poly& a) {
  Poly r = a;
  for (auto& m : r) m.coef = -m.coef;
  return r;
}
Poly sub(const Poly& a, const Poly& b) {
  return add(a, neg(b));
}
Poly mul(const Poly& a, const Poly& b) {
  Poly r;
  for (const auto& x : a) {
    for (const auto& y : b) r.push_back(Mono{x.coef * y.coef, mul_atoms(x.atoms, y.atoms)});
  }
  return normalise(std::move(r));
}

std::string poly_key(const Poly& p) {
  std::string s;
  for (const auto& m : p) {
    std::array<char, 40> buf{};
    std::snprintf(buf.data(), buf.size(), "%.17g", m.coef);
    s += "+";
    s += buf.data();
    for (const auto& [id, e] : m.atoms) s += "*a" + std::to_string(id) + "^" + std::to_string(e);
  }
  return s.empty() ? "0" : s;
}

// ---------------------------------------------------------------------------------------------
// Parameter shapes.

int PShape::vary_count() const {
  return static_cast<int>(std::count(vary.begin(), vary.end(), char{1}));
}

int PShape::vary_axis() const {
  for (std::size_t i = 0; i < vary.size(); ++i) {
    if (vary[i] != 0) return static_cast<int>(i);
  }
  return -1;
}

std::string axes_str(const PShape& s) {
  std::string r;
  for (std::size_t i = 0; i < s.vary.size(); ++i) {
    if (s.vary[i] == 0) continue;
    if (!r.empty()) r += ", ";
    r += std::to_string(i);
  }
  return r;
}

void merge_into(std::vector<int>& dst, const std::vector<int>& src) {
  for (int v : src) {
    if (std::find(dst.begin(), dst.end(), v) == dst.end()) dst.push_back(v);
  }
}

// ---------------------------------------------------------------------------------------------
// Atoms.

int Recogniser::intern(AtomDef def, const std::string& key) {
  auto it = atom_ids_.find(key);
  if (it != atom_ids_.end()) return it->second;
  atoms_.push_back(std::move(def));
  const int id = static_cast<int>(atoms_.size()) - 1;
  atom_ids_.emplace(key, id);
  return id;
}

int Recogniser::leaf_atom(int value) {
  AtomDef d;
  d.kind = AtomKind::leaf;
  d.value = value;
  return intern(d, "v" + std::to_string(value));
}

Poly Recogniser::inv(const Poly& p) {
  if (p.size() == 1) {
    Mono m{1.0 / p[0].coef, p[0].atoms};
    for (auto& a : m.atoms) a.second = -a.second;
    return {m};
  }
  return func("recip", {p});
}

Poly Recogniser::sqrt_of(const Poly& p) {
  if (auto c = constant_of(p); c && *c >= 0) return constant_poly(std::sqrt(*c));
  AtomDef d;
  d.kind = AtomKind::sqrt;
  d.inner = p;
  return atom_poly(intern(d, "sqrt(" + poly_key(p) + ")"));
}

Poly Recogniser::power(const Poly& p, double e) {
  if (auto c = constant_of(p)) return constant_poly(std::pow(*c, e));
  if (e == 0.5) return sqrt_of(p);
  if (e == -0.5) return inv(sqrt_of(p));
  if (e == std::round(e) && std::fabs(e) <= 4) {
    Poly r = constant_poly(1);
    for (int i = 0; i < static_cast<int>(std::fabs(e)); ++i) r = mul(r, p);
    return e < 0 ? inv(r) : r;
  }
  return func("pow", {p}, e);
}

bool Recogniser::has_inv_sqrt(const Poly& A) const {
  for (const auto& m : A) {
    for (const auto& [id, e] : m.atoms) {
      if (atoms_[static_cast<std::size_t>(id)].kind == AtomKind::sqrt && e < 0) return true;
    }
  }
  return false;
}

Poly Recogniser::func(const std::string& name, std::vector<Poly> args, double param) {
  // All-constant arguments: evaluate now.
  std::vector<double> cv;
  for (const auto& a : args) {
    if (auto c = constant_of(a)) cv.push_back(*c);
  }
  if (cv.size() == args.size()) {
    if (name == "recip" && cv[0] != 0) return constant_poly(1.0 / cv[0]);
    if (name == "max") return constant_poly(std::max(cv[0], cv[1]));
    if (name == "min") return constant_poly(std::min(cv[0], cv[1]));
    if (name == "pow") return constant_poly(std::pow(cv[0], param));
    if (name == "relu") return constant_poly(std::max(cv[0], 0.0));
  }
  AtomDef d;
  d.kind = AtomKind::func;
  d.func = name;
  d.param = param;
  std::string key = name + "(";
  for (const auto& a : args) key += poly_key(a) + ";";
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", param);
  key += buf.data();
  key += ")";
  d.args = std::move(args);
  return atom_poly(intern(std::move(d), key));
}

// ---------------------------------------------------------------------------------------------
// Numeric evaluation.

std::optional<std::vector<double>> Recogniser::eval_poly(const Poly& p, std::size_t c) {
  std::vector<double> r(c, 0.0);
  for (const auto& m : p) {
    std::vector<double> t(c, m.coef);
    for (const auto& [id, e] : m.atoms) {
      auto v = eval_atom(id, c);
      if (!v) return std::nullopt;
      for (std::size_t i = 0; i < c; ++i) t[i] *= std::pow((*v)[i], e);
    }
    for (std::size_t i = 0; i < c; ++i) r[i] += t[i];
  }
  return r;
}

namespace {

std::optional<std::vector<double>> eval_leaf(const Value& v, std::size_t c) {
  if (!v.constant) return std::nullopt;
  const auto& data = v.constant->data;
  if (data.size() == c) return data;
  if (data.size() == 1) return std::vector<double>(c, data[0]);
  return std::nullopt;
}

double apply_func(const AtomDef& d, const std::vector<std::vector<double>>& args, std::size_t i) {
  if (d.func == "recip") return 1.0 / args[0][i];
  if (d.func == "max") return std::max(args[0][i], args[1][i]);
  if (d.func == "min") return std::min(args[0][i], args[1][i]);
  if (d.func == "pow") return std::pow(args[0][i], d.param);
  if (d.func == "relu") return std::max(args[0][i], 0.0);
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

std::optional<std::vector<double>> Recogniser::eval_atom(int id, std::size_t c) {
  const auto key = std::make_pair(id, c);
  if (auto it = atom_cache_.find(key); it != atom_cache_.end()) return it->second;
  std::optional<std::vector<double>> r;
  const AtomDef& d = atoms_[static_cast<std::size_t>(id)];
  switch (d.kind) {
    case AtomKind::leaf:
      r = eval_leaf(g_.values[static_cast<std::size_t>(d.value)], c);
      break;
    case AtomKind::sqrt:
      if (auto in = eval_poly(d.inner, c)) {
        for (auto& x : *in) x = std::sqrt(x);
        r = std::move(in);
      }
      break;
    case AtomKind::func: {
      std::vector<std::vector<double>> args;
      bool ok = true;
      for (const auto& a : d.args) {
        auto v = eval_poly(a, c);
        if (!v) {
          ok = false;
          break;
        }
        args.push_back(std::move(*v));
      }
      if (!ok) break;
      std::vector<double> o(c);
      for (std::size_t i = 0; i < c; ++i) o[i] = apply_func(d, args, i);
      r = std::move(o);
      break;
    }
  }
  atom_cache_[key] = r;
  return r;
}

}  // namespace normcore::import::detail
