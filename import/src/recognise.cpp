// The batch-norm recogniser (see recognise.hpp for what it accepts and why).
#include "normcore/import/recognise.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "normcore/import/bundle.hpp"

namespace normcore::import {

namespace {

std::string num(double v) {
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", v);
  return buf.data();
}

std::string shape_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ",";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------------------------------------
// Parameter expressions: sums of monomials over atoms.

struct Mono {
  double coef = 1;
  std::vector<std::pair<int, int>> atoms;  // (atom id, exponent), sorted by id, exponents != 0
};
using Poly = std::vector<Mono>;  // merged, sorted by atoms, no zero coefficients

enum class AtomKind : std::uint8_t { leaf, sqrt, func };

struct AtomDef {
  AtomKind kind = AtomKind::leaf;
  int value = -1;          // leaf
  Poly inner;              // sqrt
  std::string func;        // func: recip | max | min | pow | relu | clamp
  std::vector<Poly> args;  // func arguments
  double param = 0;        // pow exponent
};

std::vector<std::pair<int, int>> mul_atoms(const std::vector<std::pair<int, int>>& a,
                                           const std::vector<std::pair<int, int>>& b) {
  std::map<int, int> m;
  for (const auto& [id, e] : a) m[id] += e;
  for (const auto& [id, e] : b) m[id] += e;
  std::vector<std::pair<int, int>> out;
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
Poly atom_poly(int id, int e = 1) {
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
// Shapes of parameter tensors: which axes they vary along.

struct PShape {
  bool known = false;
  std::vector<std::int64_t> dims;
  std::vector<char> vary;  // per dim: the values change along it (size > 1, not a broadcast)
  std::string bad;         // non-empty: not usable as a per-channel vector (the reason)
  int bad_node = -1;

  [[nodiscard]] int vary_count() const {
    return static_cast<int>(std::count(vary.begin(), vary.end(), char{1}));
  }
  [[nodiscard]] int vary_axis() const {
    for (std::size_t i = 0; i < vary.size(); ++i) {
      if (vary[i] != 0) return static_cast<int>(i);
    }
    return -1;
  }
};

std::string axes_str(const PShape& s) {
  std::string r;
  for (std::size_t i = 0; i < s.vary.size(); ++i) {
    if (s.vary[i] == 0) continue;
    if (!r.empty()) r += ", ";
    r += std::to_string(i);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Symbolic values.

struct Chain {
  int x = -1;                    // the data tensor
  Poly A = constant_poly(1), B;  // value = x * A + B
  std::vector<int> dnodes, pnodes, leaves;
  bool dknown = false;
  std::vector<std::int64_t> dshape;
  int axis = -1;     // absolute channel axis (when the rank is known)
  int axis_end = 0;  // channel axis counted from the end (1 = last) when the rank is unknown
  std::int64_t len = 0;
  std::string bad;
  int bad_node = -1;
  bool bad_datamul = false;
  int clean_prefix = -1;  // value before a multiply by data (for a chain that ends right there)
  int ops_after_bad = 0;
  bool explicit_bn = false, pc_mul = false, pc_add = false, scaled = false, mean_first = false;
  std::vector<std::string> ops;
  bool activated = false;
  bool act_clamp_op = false;  // an upper bound came from a clamp op (Clip / HLO clamp)
  std::optional<double> act_lo, act_hi;

  [[nodiscard]] bool trivial() const { return dnodes.empty(); }
};

struct Sym {
  enum class Kind : std::uint8_t { data, param, chain } kind = Kind::data;
  // param
  Poly poly;
  PShape ps;
  std::vector<int> pnodes, leaves;
  // chain
  Chain ch;
};

void merge_into(std::vector<int>& dst, const std::vector<int>& src) {
  for (int v : src) {
    if (std::find(dst.begin(), dst.end(), v) == dst.end()) dst.push_back(v);
  }
}

class Recogniser {
 public:
  explicit Recogniser(const Graph& g) : g_(g), syms_(g.values.size()), extended_(g.values.size()) {
    consumers_.assign(g.values.size(), 0);
    for (const auto& n : g.nodes) {
      std::set<int> seen;
      for (int in : n.inputs) {
        if (in >= 0 && in < static_cast<int>(g.values.size()) && seen.insert(in).second) {
          ++consumers_[static_cast<std::size_t>(in)];
        }
      }
    }
    is_output_.assign(g.values.size(), 0);
    for (int o : g.outputs) {
      if (o >= 0 && o < static_cast<int>(g.values.size()))
        is_output_[static_cast<std::size_t>(o)] = 1;
    }
  }

  Recognition run();

 private:
  const Graph& g_;
  std::vector<std::optional<Sym>> syms_;
  std::vector<char> extended_;
  std::vector<int> consumers_;
  std::vector<char> is_output_;
  std::vector<AtomDef> atoms_;
  std::map<std::string, int> atom_ids_;
  Recognition out_;
  std::map<std::pair<int, std::size_t>, std::optional<std::vector<double>>> atom_cache_;

  // --- atoms ---
  int intern(AtomDef def, const std::string& key) {
    auto it = atom_ids_.find(key);
    if (it != atom_ids_.end()) return it->second;
    atoms_.push_back(std::move(def));
    const int id = static_cast<int>(atoms_.size()) - 1;
    atom_ids_.emplace(key, id);
    return id;
  }
  int leaf_atom(int value) {
    AtomDef d;
    d.kind = AtomKind::leaf;
    d.value = value;
    return intern(d, "v" + std::to_string(value));
  }
  Poly func(const std::string& name, std::vector<Poly> args, double param = 0);
  Poly inv(const Poly& p) {
    if (p.size() == 1) {
      Mono m{1.0 / p[0].coef, p[0].atoms};
      for (auto& a : m.atoms) a.second = -a.second;
      return {m};
    }
    return func("recip", {p});
  }
  Poly sqrt_of(const Poly& p) {
    if (auto c = constant_of(p); c && *c >= 0) return constant_poly(std::sqrt(*c));
    AtomDef d;
    d.kind = AtomKind::sqrt;
    d.inner = p;
    return atom_poly(intern(d, "sqrt(" + poly_key(p) + ")"));
  }
  Poly power(const Poly& p, double e) {
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

  // --- numeric evaluation (per channel, `c` channels) ---
  std::optional<std::vector<double>> eval_atom(int id, std::size_t c);
  std::optional<std::vector<double>> eval_poly(const Poly& p, std::size_t c);

  // --- symbols ---
  const Sym& sym(int v);
  Sym leaf_sym(int v);
  static bool is_param(const Sym& s) { return s.kind == Sym::Kind::param; }
  Chain chain_for(int v, bool allow_activated);
  bool extendable(int v) const {
    return consumers_[static_cast<std::size_t>(v)] == 1 &&
           is_output_[static_cast<std::size_t>(v)] == 0;
  }
  std::string loc(int node) const {
    if (node < 0) return "?";
    const Node& n = g_.nodes[static_cast<std::size_t>(node)];
    if (!n.location.empty()) return n.location;
    return "node '" + n.name + "' (" + n.op + ")";
  }
  std::string describe(int v) const;
  void set_bad(Chain& c, const std::string& why, int node) const {
    if (!c.bad.empty()) return;
    c.bad = why;
    c.bad_node = node;
  }
  void bind(Chain& c, const Sym& p, int pv, int node, const std::string& role);
  PShape broadcast_shapes(const PShape& a, const PShape& b, int node) const;
  static std::optional<double> uniform_constant(const Sym& s);

  void process(int n);
  void set_out(const Node& node, Sym s, std::size_t k = 0) {
    if (k < node.outputs.size() && node.outputs[k] >= 0) {
      syms_[static_cast<std::size_t>(node.outputs[k])] = std::move(s);
    }
  }
  void finish_chain(int v, const Chain& c);
  void make_match(int v, const Chain& c);
  static bool has_inv_sqrt(const Poly& A, const std::vector<AtomDef>& atoms) {
    for (const auto& m : A) {
      for (const auto& [id, e] : m.atoms) {
        if (atoms[static_cast<std::size_t>(id)].kind == AtomKind::sqrt && e < 0) return true;
      }
    }
    return false;
  }
  void name_layers();
};

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

std::optional<std::vector<double>> Recogniser::eval_atom(int id, std::size_t c) {
  const auto key = std::make_pair(id, c);
  if (auto it = atom_cache_.find(key); it != atom_cache_.end()) return it->second;
  std::optional<std::vector<double>> r;
  const AtomDef& d = atoms_[static_cast<std::size_t>(id)];
  switch (d.kind) {
    case AtomKind::leaf: {
      const Value& v = g_.values[static_cast<std::size_t>(d.value)];
      if (v.constant) {
        const auto& data = v.constant->data;
        if (data.size() == c) {
          r = data;
        } else if (data.size() == 1) {
          r = std::vector<double>(c, data[0]);
        }
      }
      break;
    }
    case AtomKind::sqrt: {
      if (auto in = eval_poly(d.inner, c)) {
        for (auto& x : *in) x = std::sqrt(x);
        r = std::move(in);
      }
      break;
    }
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
      for (std::size_t i = 0; i < c; ++i) {
        if (d.func == "recip")
          o[i] = 1.0 / args[0][i];
        else if (d.func == "max")
          o[i] = std::max(args[0][i], args[1][i]);
        else if (d.func == "min")
          o[i] = std::min(args[0][i], args[1][i]);
        else if (d.func == "pow")
          o[i] = std::pow(args[0][i], d.param);
        else if (d.func == "relu")
          o[i] = std::max(args[0][i], 0.0);
        else
          o[i] = std::numeric_limits<double>::quiet_NaN();
      }
      r = std::move(o);
      break;
    }
  }
  atom_cache_[key] = r;
  return r;
}

std::string Recogniser::describe(int v) const {
  return describe_value(g_, v);
}

Sym Recogniser::leaf_sym(int v) {
  const Value& val = g_.values[static_cast<std::size_t>(v)];
  Sym s;
  if (val.constant) {
    s.kind = Sym::Kind::param;
    const Constant& k = *val.constant;
    s.ps.known = true;
    s.ps.dims = k.shape;
    for (auto d : k.shape) s.ps.vary.push_back(d > 1 ? 1 : 0);
    if (k.data.size() == 1) {
      s.poly = constant_poly(k.data[0]);
      std::fill(s.ps.vary.begin(), s.ps.vary.end(), char{0});
    } else {
      s.poly = atom_poly(leaf_atom(v));
      s.leaves.push_back(v);
    }
  } else if (val.producer < 0 && val.shape_known && val.shape.size() <= 1) {
    // A parameter input without data yet (a bundle may fill it).
    s.kind = Sym::Kind::param;
    s.ps.known = true;
    s.ps.dims = val.shape;
    for (auto d : val.shape) s.ps.vary.push_back(d != 1 ? 1 : 0);
    s.poly = atom_poly(leaf_atom(v));
    s.leaves.push_back(v);
  } else {
    s.kind = Sym::Kind::data;
    return s;
  }
  if (s.ps.vary_count() > 1) {
    s.ps.bad = describe(v) + " is not per-channel: shape " + shape_str(s.ps.dims) +
               " varies along axes " + axes_str(s.ps) + ", not along one channel axis";
  }
  return s;
}

const Sym& Recogniser::sym(int v) {
  auto& slot = syms_[static_cast<std::size_t>(v)];
  if (!slot) slot = leaf_sym(v);  // graph inputs, constants, and outputs of skipped nodes
  return *slot;
}

Chain Recogniser::chain_for(int v, bool allow_activated) {
  const Sym& s = sym(v);
  if (s.kind == Sym::Kind::chain && extendable(v) && (allow_activated || !s.ch.activated)) {
    return s.ch;
  }
  Chain c;
  c.x = v;
  const Value& val = g_.values[static_cast<std::size_t>(v)];
  if (val.shape_known) {
    c.dknown = true;
    c.dshape = val.shape;
  }
  return c;
}

std::optional<double> Recogniser::uniform_constant(const Sym& s) {
  if (s.kind != Sym::Kind::param || s.ps.vary_count() != 0) return std::nullopt;
  return constant_of(s.poly);
}

PShape Recogniser::broadcast_shapes(const PShape& a, const PShape& b, int node) const {
  PShape r;
  if (!a.bad.empty()) return a;
  if (!b.bad.empty()) return b;
  if (!a.known || !b.known) return r;
  r.known = true;
  const std::size_t rank = std::max(a.dims.size(), b.dims.size());
  r.dims.assign(rank, 1);
  r.vary.assign(rank, 0);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t ia = i + a.dims.size(), ib = i + b.dims.size();
    std::int64_t da = 1, db = 1;
    char va = 0, vb = 0;
    if (ia >= rank) {
      da = a.dims[ia - rank];
      va = a.vary[ia - rank];
    }
    if (ib >= rank) {
      db = b.dims[ib - rank];
      vb = b.vary[ib - rank];
    }
    if (da != db && da != 1 && db != 1) {
      r.bad = loc(node) + ": parameter shapes " + shape_str(a.dims) + " and " + shape_str(b.dims) +
              " do not broadcast";
      r.bad_node = node;
      return r;
    }
    r.dims[i] = da == 1 ? db : da;
    r.vary[i] = static_cast<char>(va | vb);
  }
  if (r.vary_count() > 1) {
    r.bad = loc(node) + " combines parameters into shape " + shape_str(r.dims) +
            " varying along axes " + axes_str(r) + ": not a per-channel vector";
    r.bad_node = node;
  }
  return r;
}

void Recogniser::bind(Chain& c, const Sym& p, int pv, int node, const std::string& role) {
  const std::string who = role.empty() ? describe(pv) : role + " " + describe(pv);
  if (!p.ps.bad.empty()) {
    // The leaf descriptions already name the value; prefix the role.
    set_bad(c, role.empty() ? p.ps.bad : role + " " + p.ps.bad, node);
    return;
  }
  if (!p.ps.known) {
    set_bad(c, "the shape of " + who + " is unknown", node);
    return;
  }
  if (p.ps.vary_count() == 0) {
    if (c.dknown && p.ps.dims.size() > c.dshape.size()) {
      set_bad(c,
              who + " has rank " + std::to_string(p.ps.dims.size()) + ", more than the input's " +
                  shape_str(c.dshape),
              node);
    }
    return;
  }
  const int k = p.ps.vary_axis();
  const auto prank = static_cast<int>(p.ps.dims.size());
  const std::int64_t len = p.ps.dims[static_cast<std::size_t>(k)];
  if (c.dknown) {
    const auto rank = static_cast<int>(c.dshape.size());
    const int axis = rank - (prank - k);
    if (prank > rank || axis < 0) {
      set_bad(c,
              who + " of shape " + shape_str(p.ps.dims) + " has more dimensions than the input " +
                  shape_str(c.dshape),
              node);
      return;
    }
    const std::int64_t d = c.dshape[static_cast<std::size_t>(axis)];
    if (d >= 0 && d != len) {
      set_bad(c,
              who + " has " + std::to_string(len) + " elements (shape " + shape_str(p.ps.dims) +
                  ") but the channel dimension (axis " + std::to_string(axis) + ") of " +
                  describe(c.x) + " " + shape_str(c.dshape) + " has " + std::to_string(d),
              node);
      return;
    }
    if (c.axis >= 0 && c.axis != axis) {
      set_bad(c,
              who + " varies along axis " + std::to_string(axis) +
                  " but the earlier parameters along axis " + std::to_string(c.axis),
              node);
      return;
    }
    c.axis = axis;
  } else {
    const int from_end = prank - k;
    if (c.axis_end > 0 && c.axis_end != from_end) {
      set_bad(c, who + " varies along a different axis than the earlier parameters", node);
      return;
    }
    c.axis_end = from_end;
  }
  if (c.len > 0 && c.len != len) {
    set_bad(c,
            who + " has " + std::to_string(len) + " elements but the earlier parameters have " +
                std::to_string(c.len),
            node);
    return;
  }
  c.len = len;
}

void Recogniser::process(int ni) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const std::string& op = node.op;
  auto in = [&](std::size_t k) { return k < node.inputs.size() ? node.inputs[k] : -1; };
  auto out_value = [&]() { return node.outputs.empty() ? -1 : node.outputs[0]; };
  Sym data;
  data.kind = Sym::Kind::data;

  // Ops whose inputs are all parameters give a parameter (where the op is understood).
  static const std::set<std::string> kParamOps = {
      "add", "sub", "mul",   "div",  "sqrt",      "rsqrt",   "reciprocal", "pow",    "neg",
      "max", "min", "clamp", "relu", "broadcast", "reshape", "identity",   "convert"};
  bool all_param = !node.inputs.empty();
  for (std::size_t k = 0; k < node.inputs.size(); ++k) {
    const int v = node.inputs[k];
    if (v < 0) continue;
    // Second inputs of reshape (target shape) are not data.
    if (op == "reshape" && k > 0) continue;
    if (!is_param(sym(v))) all_param = false;
  }

  if (op.rfind("other:", 0) == 0) {
    std::string lower = op;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (lower.find("batchnorm") != std::string::npos ||
        lower.find("batch-norm") != std::string::npos) {
      NearMiss nm;
      nm.reason = op.substr(6) +
                  " is not batch-norm inference (training mode: it normalises with "
                  "the batch's own statistics)";
      nm.location = loc(ni);
      nm.nodes = {loc(ni)};
      nm.output = out_value();
      out_.near_misses.push_back(nm);
    }
    for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, data, k);
    return;
  }

  if (all_param && kParamOps.contains(op) && in(0) >= 0) {
    Sym r;
    r.kind = Sym::Kind::param;
    const Sym& a = sym(in(0));
    r.pnodes = a.pnodes;
    r.pnodes.push_back(ni);
    r.leaves = a.leaves;
    for (std::size_t k = 1; k < node.inputs.size(); ++k) {
      if (node.inputs[k] < 0 || (op == "reshape")) continue;
      merge_into(r.pnodes, sym(node.inputs[k]).pnodes);
      merge_into(r.leaves, sym(node.inputs[k]).leaves);
    }
    const bool binary = op == "add" || op == "sub" || op == "mul" || op == "div" || op == "max" ||
                        op == "min" || op == "pow";
    if (binary) {
      if (in(1) < 0) {
        for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, data, k);
        return;
      }
      const Sym& b = sym(in(1));
      r.ps = broadcast_shapes(a.ps, b.ps, ni);
      if (op == "add")
        r.poly = add(a.poly, b.poly);
      else if (op == "sub")
        r.poly = sub(a.poly, b.poly);
      else if (op == "mul")
        r.poly = mul(a.poly, b.poly);
      else if (op == "div")
        r.poly = mul(a.poly, inv(b.poly));
      else if (op == "max" || op == "min")
        r.poly = func(op, {a.poly, b.poly});
      else {  // pow: exponent must be a constant scalar
        auto e = uniform_constant(b);
        if (!e) {
          for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, data, k);
          return;
        }
        r.ps = a.ps;
        r.poly = power(a.poly, *e);
      }
    } else if (op == "clamp") {
      r.ps = a.ps;
      Poly p = a.poly;
      if (in(1) >= 0) p = func("max", {p, sym(in(1)).poly});
      if (in(2) >= 0) p = func("min", {p, sym(in(2)).poly});
      r.poly = p;
    } else {
      r.ps = a.ps;
      if (op == "sqrt")
        r.poly = sqrt_of(a.poly);
      else if (op == "rsqrt")
        r.poly = inv(sqrt_of(a.poly));
      else if (op == "reciprocal")
        r.poly = inv(a.poly);
      else if (op == "neg")
        r.poly = neg(a.poly);
      else if (op == "relu")
        r.poly = func("relu", {a.poly});
      else
        r.poly = a.poly;  // broadcast reshape identity convert
      const Value* ov =
          out_value() >= 0 ? &g_.values[static_cast<std::size_t>(out_value())] : nullptr;
      if (op == "broadcast" && a.ps.bad.empty()) {
        PShape s;
        if (ov != nullptr && ov->shape_known && a.ps.known) {
          s.known = true;
          s.dims = ov->shape;
          s.vary.assign(s.dims.size(), 0);
          auto it = node.attrs.find("dims");
          std::vector<std::int64_t> dims;
          if (it != node.attrs.end()) {
            dims = it->second.ints;
          } else {  // NumPy-style: trailing dimensions
            for (std::size_t i = 0; i < a.ps.dims.size(); ++i) {
              dims.push_back(static_cast<std::int64_t>(s.dims.size() - a.ps.dims.size() + i));
            }
          }
          for (std::size_t i = 0; i < a.ps.vary.size() && i < dims.size(); ++i) {
            const auto d = dims[i];
            if (d >= 0 && d < static_cast<std::int64_t>(s.vary.size()) && a.ps.vary[i] != 0) {
              s.vary[static_cast<std::size_t>(d)] = 1;
            }
          }
          if (dims.size() != a.ps.dims.size()) {
            s.bad = loc(ni) + ": broadcast dimensions do not match the operand's rank";
            s.bad_node = ni;
          }
        }
        r.ps = s;
      } else if (op == "reshape" && a.ps.bad.empty()) {
        PShape s;
        std::vector<std::int64_t> odims;
        bool have = false;
        if (ov != nullptr && ov->shape_known) {
          odims = ov->shape;
          have = true;
        } else if (auto it = node.attrs.find("shape");
                   it != node.attrs.end() && !it->second.ints.empty()) {
          odims = it->second.ints;  // the front end's target shape
          have = std::none_of(odims.begin(), odims.end(), [](std::int64_t d) { return d < 0; });
        } else if (in(1) >= 0 && g_.values[static_cast<std::size_t>(in(1))].constant &&
                   a.ps.known) {
          // ONNX Reshape with a constant target shape (0 = copy, -1 = infer).
          std::int64_t total = 1;
          for (auto d : a.ps.dims) total *= d;
          std::int64_t known = 1;
          int infer = -1;
          const auto& t = g_.values[static_cast<std::size_t>(in(1))].constant->data;
          for (std::size_t i = 0; i < t.size(); ++i) {
            auto d = static_cast<std::int64_t>(t[i]);
            if (d == 0 && i < a.ps.dims.size()) d = a.ps.dims[i];
            if (d == -1) {
              infer = static_cast<int>(i);
              odims.push_back(1);
              continue;
            }
            odims.push_back(d);
            known *= d;
          }
          if (infer >= 0 && known > 0) odims[static_cast<std::size_t>(infer)] = total / known;
          have = true;
        }
        if (have && a.ps.known) {
          s.known = true;
          s.dims = odims;
          s.vary.assign(odims.size(), 0);
          const int cnt = a.ps.vary_count();
          bool other_big = false;
          for (std::size_t i = 0; i < a.ps.dims.size(); ++i) {
            if (a.ps.vary[i] == 0 && a.ps.dims[i] != 1) other_big = true;
          }
          if (cnt == 1) {
            const std::int64_t len = a.ps.dims[static_cast<std::size_t>(a.ps.vary_axis())];
            int pos = -1, big = 0;
            for (std::size_t i = 0; i < odims.size(); ++i) {
              if (odims[i] != 1) {
                ++big;
                pos = static_cast<int>(i);
              }
            }
            if (other_big || big != 1 || odims[static_cast<std::size_t>(pos)] != len) {
              s.bad = loc(ni) + " reshapes a per-channel parameter of shape " +
                      shape_str(a.ps.dims) + " to " + shape_str(odims);
              s.bad_node = ni;
            } else {
              s.vary[static_cast<std::size_t>(pos)] = 1;
            }
          }
        }
        r.ps = s;
      }
    }
    for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, k == 0 ? r : data, k);
    return;
  }

  // --- data path ---
  if (op == "add" || op == "sub" || op == "mul" || op == "div") {
    const int a = in(0), b = in(1);
    if (a < 0 || b < 0) {
      set_out(node, data);
      return;
    }
    const bool pa = is_param(sym(a)), pb = is_param(sym(b));
    if (pa != pb) {
      const int dv = pa ? b : a, pv = pa ? a : b;
      const bool data_lhs = !pa;
      if (op == "div" && !data_lhs) {
        set_out(node, data);
        return;
      }
      Chain c = chain_for(dv, false);
      const Sym& p = sym(pv);
      const bool fresh = c.trivial();
      // The bias of a conv / matmul: an add of a per-channel vector right on its output.
      if (fresh && (op == "add") && p.ps.bad.empty() && p.ps.vary_count() == 1) {
        const int prod = g_.values[static_cast<std::size_t>(dv)].producer;
        if (prod >= 0) {
          const std::string& pop = g_.nodes[static_cast<std::size_t>(prod)].op;
          if (pop == "conv" || pop == "matmul") {
            set_out(node, data);
            return;
          }
        }
      }
      if (!c.bad.empty()) ++c.ops_after_bad;
      const bool additive = op == "add" || op == "sub";
      std::string role;
      if (additive)
        role = c.scaled ? "bias" : "mean";
      else
        role = "scale";
      bind(c, p, pv, ni, role);
      const bool pc = p.ps.vary_count() == 1;
      if (op == "add") {
        c.B = add(c.B, p.poly);
      } else if (op == "sub") {
        if (data_lhs) {
          c.B = sub(c.B, p.poly);
        } else {
          c.A = neg(c.A);
          c.B = sub(p.poly, c.B);
        }
      } else if (op == "mul") {
        c.A = mul(c.A, p.poly);
        c.B = mul(c.B, p.poly);
      } else {
        const Poly q = inv(p.poly);
        c.A = mul(c.A, q);
        c.B = mul(c.B, q);
      }
      if (additive) {
        if (pc) {
          c.pc_add = true;
          if (!c.scaled) c.mean_first = true;
        }
      } else {
        if (pc) c.pc_mul = true;
        c.scaled = true;
      }
      c.dnodes.push_back(ni);
      merge_into(c.pnodes, p.pnodes);
      merge_into(c.leaves, p.leaves);
      c.ops.push_back(op);
      if (!c.dknown && out_value() >= 0 &&
          g_.values[static_cast<std::size_t>(out_value())].shape_known) {
        c.dknown = true;
        c.dshape = g_.values[static_cast<std::size_t>(out_value())].shape;
      }
      if (!fresh) extended_[static_cast<std::size_t>(dv)] = 1;
      Sym r;
      r.kind = Sym::Kind::chain;
      r.ch = std::move(c);
      set_out(node, std::move(r));
      return;
    }
    // Both operands are data.
    if (op == "mul" || op == "div") {
      Chain ca = chain_for(a, false), cb = chain_for(b, false);
      const bool na = !ca.trivial(), nb = !cb.trivial();
      if (na != nb && (op == "mul" || na) && a != b) {
        Chain c = na ? ca : cb;
        const int cv = na ? a : b, other = na ? b : a;
        if (c.bad.empty()) {
          c.clean_prefix = cv;
          c.bad_datamul = true;
          set_bad(c,
                  describe(other) + " is not a constant: " + loc(ni) +
                      (op == "mul" ? " multiplies" : " divides") +
                      " the batch-norm chain by a data tensor (a per-channel scale must be "
                      "constant)",
                  ni);
        } else {
          ++c.ops_after_bad;
        }
        c.dnodes.push_back(ni);
        c.ops.push_back(op);
        extended_[static_cast<std::size_t>(cv)] = 1;
        Sym r;
        r.kind = Sym::Kind::chain;
        r.ch = std::move(c);
        set_out(node, std::move(r));
        return;
      }
    }
    set_out(node, data);
    return;
  }

  if (op == "neg" || op == "identity" || op == "convert" || op == "reshape") {
    const int a = in(0);
    if (a < 0 || is_param(sym(a))) {
      set_out(node, data);
      return;
    }
    Chain c = chain_for(a, op != "neg");
    if (c.trivial()) {
      set_out(node, data);
      return;
    }
    const Value* ov =
        out_value() >= 0 ? &g_.values[static_cast<std::size_t>(out_value())] : nullptr;
    if (op == "reshape") {
      if (ov == nullptr || !ov->shape_known || (c.dknown && ov->shape != c.dshape)) {
        set_out(node, data);
        return;
      }
    }
    if (op == "neg") {
      c.A = neg(c.A);
      c.B = neg(c.B);
      c.ops.push_back("neg");
      if (!c.bad.empty()) ++c.ops_after_bad;
    }
    if (!c.dknown && ov != nullptr && ov->shape_known) {
      c.dknown = true;
      c.dshape = ov->shape;
    }
    c.dnodes.push_back(ni);
    extended_[static_cast<std::size_t>(a)] = 1;
    Sym r;
    r.kind = Sym::Kind::chain;
    r.ch = std::move(c);
    set_out(node, std::move(r));
    return;
  }

  if (op == "relu" || op == "max" || op == "min" || op == "clamp") {
    int dv = in(0);
    std::optional<double> lo, hi;
    bool ok = true;
    if (op == "relu") {
      lo = 0.0;
    } else if (op == "clamp") {
      if (in(1) >= 0) {
        lo = uniform_constant(sym(in(1)));
        ok = ok && lo.has_value();
      }
      if (in(2) >= 0) {
        hi = uniform_constant(sym(in(2)));
        ok = ok && hi.has_value();
      }
    } else {
      int pv = in(1);
      if (dv >= 0 && pv >= 0 && is_param(sym(dv)) && !is_param(sym(pv))) std::swap(dv, pv);
      if (pv < 0) {
        ok = false;
      } else {
        auto v = uniform_constant(sym(pv));
        ok = v.has_value();
        if (op == "max")
          lo = v;
        else
          hi = v;
      }
    }
    if (dv < 0 || is_param(sym(dv)) || !ok) {
      set_out(node, data);
      return;
    }
    Chain c = chain_for(dv, true);
    if (c.trivial()) {
      set_out(node, data);
      return;
    }
    if (!c.bad.empty()) ++c.ops_after_bad;
    if (lo) c.act_lo = c.act_lo ? std::max(*c.act_lo, *lo) : *lo;
    if (hi) c.act_hi = c.act_hi ? std::min(*c.act_hi, *hi) : *hi;
    c.activated = true;
    if (op == "clamp" && hi) c.act_clamp_op = true;
    c.ops.push_back(op);
    c.dnodes.push_back(ni);
    extended_[static_cast<std::size_t>(dv)] = 1;
    Sym r;
    r.kind = Sym::Kind::chain;
    r.ch = std::move(c);
    set_out(node, std::move(r));
    return;
  }

  if (op == "bn") {
    const int xv = in(0);
    if (xv < 0 || is_param(sym(xv))) {
      for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, data, k);
      return;
    }
    Chain c = chain_for(xv, false);
    const bool fresh = c.trivial();
    if (!c.bad.empty()) ++c.ops_after_bad;
    double eps = 1e-5;
    if (auto it = node.attrs.find("epsilon"); it != node.attrs.end() && it->second.f)
      eps = *it->second.f;
    int axis = 1;
    if (auto it = node.attrs.find("axis"); it != node.attrs.end() && it->second.i) {
      axis = static_cast<int>(*it->second.i);
    }
    if (c.dknown && axis < 0) axis += static_cast<int>(c.dshape.size());
    if (auto it = node.attrs.find("training_mode");
        it != node.attrs.end() && it->second.i && *it->second.i != 0) {
      set_bad(c,
              loc(ni) + " is in training mode (training_mode=" + std::to_string(*it->second.i) +
                  "): it normalises with the batch's own statistics",
              ni);
    }
    for (std::size_t k = 1; k < node.outputs.size(); ++k) {
      const int o = node.outputs[k];
      if (o >= 0 && (consumers_[static_cast<std::size_t>(o)] > 0 ||
                     is_output_[static_cast<std::size_t>(o)] != 0)) {
        set_bad(c,
                loc(ni) + " has its batch-statistics output '" +
                    g_.values[static_cast<std::size_t>(o)].name + "' in use (training mode)",
                ni);
      }
    }
    static const std::array<const char*, 4> kRole = {"scale", "bias", "mean", "var"};
    std::array<Poly, 4> p = {constant_poly(1), Poly{}, Poly{}, Poly{}};
    for (std::size_t k = 0; k < 4; ++k) {
      const int v = in(k + 1);
      if (v < 0) continue;
      const Sym& s = sym(v);
      if (!is_param(s)) {
        set_bad(c,
                std::string(kRole[k]) + " " + describe(v) + " of " + loc(ni) + " is not a constant",
                ni);
        continue;
      }
      p[k] = s.poly;
      merge_into(c.pnodes, s.pnodes);
      merge_into(c.leaves, s.leaves);
      if (!s.ps.bad.empty()) {
        set_bad(c, std::string(kRole[k]) + " " + s.ps.bad, ni);
        continue;
      }
      if (s.ps.vary_count() > 1) continue;  // already reported through ps.bad
      if (s.ps.vary_count() == 1) {
        const std::int64_t len = s.ps.dims[static_cast<std::size_t>(s.ps.vary_axis())];
        if (c.dknown && axis >= 0 && axis < static_cast<int>(c.dshape.size())) {
          const auto d = c.dshape[static_cast<std::size_t>(axis)];
          if (d >= 0 && d != len) {
            set_bad(c,
                    std::string(kRole[k]) + " " + describe(v) + " has " + std::to_string(len) +
                        " elements but the channel dimension (axis " + std::to_string(axis) +
                        ") of " + describe(c.x) + " " + shape_str(c.dshape) + " has " +
                        std::to_string(d),
                    ni);
          }
        }
        if (c.len > 0 && c.len != len) {
          set_bad(c,
                  std::string(kRole[k]) + " " + describe(v) + " has " + std::to_string(len) +
                      " elements but the other parameters have " + std::to_string(c.len),
                  ni);
        }
        c.len = len;
      }
    }
    if (c.dknown) {
      if (c.axis >= 0 && c.axis != axis) {
        set_bad(c,
                loc(ni) + " normalises axis " + std::to_string(axis) +
                    " but the earlier parameters vary along axis " + std::to_string(c.axis),
                ni);
      }
      c.axis = axis;
    } else if (c.axis < 0 && c.axis_end == 0) {
      c.axis = axis;
    }
    const Poly k = mul(p[0], inv(sqrt_of(add(p[3], constant_poly(eps)))));
    c.A = mul(c.A, k);
    c.B = add(mul(sub(c.B, p[2]), k), p[1]);
    c.explicit_bn = true;
    c.pc_mul = c.pc_add = true;
    c.scaled = true;
    c.mean_first = true;
    c.ops.push_back("bn");
    c.dnodes.push_back(ni);
    if (!fresh) extended_[static_cast<std::size_t>(xv)] = 1;
    Sym r;
    r.kind = Sym::Kind::chain;
    r.ch = std::move(c);
    set_out(node, std::move(r));
    for (std::size_t k2 = 1; k2 < node.outputs.size(); ++k2) set_out(node, data, k2);
    return;
  }

  for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, data, k);
}

void Recogniser::finish_chain(int v, const Chain& c) {
  const bool norm = has_inv_sqrt(c.A, atoms_);
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
  int axis = c.axis;
  if (axis < 0 && c.axis_end > 0) {
    const int rank = c.dknown ? static_cast<int>(c.dshape.size()) : std::max(4, c.axis_end);
    axis = rank - c.axis_end;
  }
  std::int64_t len = c.len;
  if (len == 0) {
    if (!c.explicit_bn) return;  // nothing per-channel: not a BN
    if (c.dknown && axis >= 0 && axis < static_cast<int>(c.dshape.size())) {
      len = c.dshape[static_cast<std::size_t>(axis)];
    }
    if (len <= 0) return;
  }
  m.channel_axis = axis;
  m.channels = len;
  const int rank = c.dknown ? static_cast<int>(c.dshape.size()) : -1;
  m.layout = (rank >= 3 && axis == rank - 1) ? Layout::nhwc : Layout::nchw;
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

  // Activation.
  const double lowest = std::numeric_limits<double>::lowest();
  const double highest = std::numeric_limits<double>::max();
  if (c.act_lo || c.act_hi) {
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

  // Read A and B back as gamma / sqrt(var + eps) and beta - mean * A.
  const auto C = static_cast<std::size_t>(len);
  const bool norm = has_inv_sqrt(c.A, atoms_);
  bool structured = c.A.size() == 1;
  const Mono* ma = structured ? &c.A[0] : nullptr;
  int sqrt_atom = -1;
  std::vector<std::pair<int, int>> gamma_atoms;
  if (structured) {
    for (const auto& [id, e] : ma->atoms) {
      if (atoms_[static_cast<std::size_t>(id)].kind == AtomKind::sqrt && e == -1 && sqrt_atom < 0) {
        sqrt_atom = id;
      } else {
        gamma_atoms.emplace_back(id, e);
      }
    }
  }
  // Roles.
  auto leaf_of = [&](int id) {
    const AtomDef& d = atoms_[static_cast<std::size_t>(id)];
    return d.kind == AtomKind::leaf ? d.value : -1;
  };
  auto is_vector_leaf = [&](int value) {
    const Value& val = g_.values[static_cast<std::size_t>(value)];
    if (val.constant) return val.constant->data.size() > 1;
    std::int64_t n = 1;
    for (auto d : val.shape) n *= d;
    return n != 1;
  };
  if (structured && ma->coef == 1 && gamma_atoms.size() == 1 && gamma_atoms[0].second == 1) {
    const int lv = leaf_of(gamma_atoms[0].first);
    if (lv >= 0 && is_vector_leaf(lv)) m.gamma_value = lv;
  }
  // Inner of the sqrt: var (per-channel) + eps (scalar terms).
  std::vector<Mono> var_terms, eps_terms;
  if (sqrt_atom >= 0) {
    for (const auto& t : atoms_[static_cast<std::size_t>(sqrt_atom)].inner) {
      const bool scalar = t.atoms.empty() || (t.atoms.size() == 1 && t.atoms[0].second == 1 &&
                                              leaf_of(t.atoms[0].first) >= 0 &&
                                              !is_vector_leaf(leaf_of(t.atoms[0].first)));
      (scalar ? eps_terms : var_terms).push_back(t);
    }
    if (var_terms.size() == 1 && var_terms[0].coef == 1 && var_terms[0].atoms.size() == 1 &&
        var_terms[0].atoms[0].second == 1) {
      m.var_value = leaf_of(var_terms[0].atoms[0].first);
    }
    if (eps_terms.size() == 1 && !eps_terms[0].atoms.empty() && eps_terms[0].coef == 1) {
      m.eps_value = leaf_of(eps_terms[0].atoms[0].first);
    }
  }
  // B: mean terms are A times one more vector leaf.
  std::vector<std::pair<double, int>> mean_terms;  // (factor, leaf value): mean += factor * leaf
  Poly beta_poly;
  for (const auto& t : c.B) {
    bool is_mean = false;
    if (structured && !ma->atoms.empty()) {
      std::map<int, int> rem;
      for (const auto& [id, e] : t.atoms) rem[id] += e;
      for (const auto& [id, e] : ma->atoms) rem[id] -= e;
      std::erase_if(rem, [](const auto& kv) { return kv.second == 0; });
      if (rem.size() == 1 && rem.begin()->second == 1) {
        const int lv = leaf_of(rem.begin()->first);
        if (lv >= 0 && is_vector_leaf(lv)) {
          mean_terms.emplace_back(-t.coef / ma->coef, lv);
          is_mean = true;
        }
      }
    }
    if (!is_mean) beta_poly.push_back(t);
  }
  if (mean_terms.size() == 1 && mean_terms[0].first == 1) m.mean_value = mean_terms[0].second;
  if (beta_poly.size() == 1 && beta_poly[0].coef == 1 && beta_poly[0].atoms.size() == 1 &&
      beta_poly[0].atoms[0].second == 1) {
    const int lv = leaf_of(beta_poly[0].atoms[0].first);
    if (lv >= 0 && is_vector_leaf(lv)) m.beta_value = lv;
  }

  if (c.explicit_bn)
    m.pattern = "batchnorm";
  else if (!structured)
    m.pattern = "affine";
  else if (norm)
    m.pattern = c.mean_first ? "decomposed" : "folded-shift";
  else
    m.pattern = "scale-shift";

  // Numbers.
  if (m.missing.empty()) {
    const auto a_num = eval_poly(c.A, C);
    const auto b_num = eval_poly(c.B, C);
    bool ok = a_num && b_num;
    std::vector<double> gamma(C, 1.0), var(C, 1.0), mean(C, 0.0), beta(C, 0.0);
    double eps = 0;
    if (ok && structured) {
      for (std::size_t i = 0; i < C; ++i) gamma[i] = ma->coef;
      for (const auto& [id, e] : gamma_atoms) {
        auto v2 = eval_atom(id, C);
        if (!v2) {
          ok = false;
          break;
        }
        for (std::size_t i = 0; i < C; ++i) gamma[i] *= std::pow((*v2)[i], e);
      }
      if (sqrt_atom >= 0 && ok) {
        std::fill(var.begin(), var.end(), 0.0);
        // A per-channel term that is numerically the same for every channel is epsilon when the
        // variance is another term.
        std::vector<std::vector<double>> vt;
        for (const auto& t : var_terms) {
          auto e2 = eval_poly({t}, C);
          if (!e2) {
            ok = false;
            break;
          }
          vt.push_back(*e2);
        }
        if (ok && vt.size() > 1) {
          int uni = -1, count = 0;
          for (std::size_t k = 0; k < vt.size(); ++k) {
            if (std::all_of(vt[k].begin(), vt[k].end(), [&](double x) { return x == vt[k][0]; })) {
              uni = static_cast<int>(k);
              ++count;
            }
          }
          if (count == 1 && vt.size() == 2) {
            const auto u = static_cast<std::size_t>(uni);
            const Mono& other = var_terms[1 - u];
            eps += vt[u][0];
            vt.erase(vt.begin() + uni);
            if (other.atoms.size() == 1 && other.atoms[0].second == 1 && other.coef == 1) {
              m.var_value = leaf_of(other.atoms[0].first);
            }
          }
        }
        for (const auto& t : vt) {
          for (std::size_t i = 0; i < C; ++i) var[i] += t[i];
        }
        for (const auto& t : eps_terms) {
          auto e2 = eval_poly({t}, C);
          if (!e2) {
            ok = false;
            break;
          }
          eps += (*e2)[0];
        }
      }
      for (const auto& [f, lv] : mean_terms) {
        auto v2 = eval_atom(leaf_atom(lv), C);
        if (!v2) {
          ok = false;
          break;
        }
        for (std::size_t i = 0; i < C; ++i) mean[i] += f * (*v2)[i];
      }
      if (auto bv = eval_poly(normalise(beta_poly), C); bv && ok) {
        beta = *bv;
      } else {
        ok = false;
      }
      // The read-back must reproduce the evaluated affine map.
      if (ok) {
        for (std::size_t i = 0; i < C && ok; ++i) {
          const double ar = gamma[i] / std::sqrt(var[i] + eps);
          const double br = beta[i] - mean[i] * ar;
          const double ta = 1e-9 * std::max(1.0, std::fabs((*a_num)[i]));
          const double tb = 1e-9 * std::max({1.0, std::fabs((*b_num)[i]), std::fabs(mean[i] * ar)});
          if (!(std::fabs(ar - (*a_num)[i]) <= ta) || !(std::fabs(br - (*b_num)[i]) <= tb)) {
            ok = false;
          }
        }
        if (!ok) {
          m.warnings.push_back(
              "the parameters read back as gamma / sqrt(var + eps) and beta - "
              "mean * scale do not reproduce the graph's values (variance + eps "
              "<= 0?); using gamma = the folded scale, beta = the folded shift");
        }
      }
    } else {
      ok = false;
    }
    if (!ok && a_num && b_num) {
      gamma = *a_num;
      beta = *b_num;
      std::fill(mean.begin(), mean.end(), 0.0);
      std::fill(var.begin(), var.end(), 1.0);
      eps = 0;
      m.pattern = c.explicit_bn ? m.pattern : "affine";
      m.gamma_value = m.beta_value = m.mean_value = m.var_value = m.eps_value = -1;
      ok = true;
    }
    if (ok) {
      m.complete = true;
      m.eps = eps;
      m.params.gamma = std::move(gamma);
      m.params.beta = std::move(beta);
      m.params.mean = std::move(mean);
      m.params.var = std::move(var);
      m.params.eps = eps;
      m.params.activation = m.activation;
      m.params.act_min = m.act_min;
      m.params.act_max = m.act_max;
      for (std::size_t i = 0; i < C; ++i) {
        if (!(m.params.var[i] + eps > 0)) {
          m.warnings.push_back("channel " + std::to_string(i) +
                               ": var + eps = " + num(m.params.var[i] + eps) + " is not positive");
          break;
        }
      }
    } else {
      m.warnings.push_back("parameter values could not be evaluated");
    }
  } else {
    // eps is known without data when it is a constant.
    double eps = 0;
    for (const auto& t : eps_terms) {
      if (t.atoms.empty()) eps += t.coef;
    }
    m.eps = eps;
    m.params.eps = eps;
  }
  out_.layers.push_back(std::move(m));
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (char ch : s) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '-' || ch == '.';
    r += ok ? ch : '_';
  }
  while (!r.empty() && r.front() == '.') r.erase(r.begin());
  return r;
}

// Names a value is known by: its name, the quoted name in its origin, a bundle key it came from.
std::vector<std::string> names_of(const Value& v) {
  std::vector<std::string> out;
  const std::string& o = v.origin;
  if (auto p = o.find("bundle '"); p != std::string::npos) {
    const auto s = p + 8;
    const auto e = o.find('\'', s);
    if (e != std::string::npos) out.push_back(o.substr(s, e - s));
  }
  out.push_back(v.name);
  if (auto p = o.find('\''); p != std::string::npos) {
    const auto e = o.find('\'', p + 1);
    if (e != std::string::npos) out.push_back(o.substr(p + 1, e - p - 1));
  }
  return out;
}

void Recogniser::name_layers() {
  std::set<std::string> used;
  for (auto& m : out_.layers) {
    std::string name;
    for (int v : {m.gamma_value, m.beta_value, m.mean_value, m.var_value}) {
      if (v < 0 || !name.empty()) continue;
      for (const auto& n : names_of(g_.values[static_cast<std::size_t>(v)])) {
        if (auto lk = split_layer_key(n)) {
          name = lk->first;
          break;
        }
      }
    }
    if (name.empty() && !m.nodes.empty()) {
      const Node& first = g_.nodes[static_cast<std::size_t>(m.nodes.front())];
      name = first.name;
      if (name.empty() && m.output >= 0) name = g_.values[static_cast<std::size_t>(m.output)].name;
    }
    name = sanitize(name);
    if (name.empty()) name = "bn";
    std::string unique = name;
    for (int k = 2; used.contains(unique); ++k) unique = name + "_" + std::to_string(k);
    used.insert(unique);
    m.name = unique;
    m.params.source = (g_.source.empty() ? std::string() : g_.source + ": ") + "layer " + unique;
  }
}

Recognition Recogniser::run() {
  for (std::size_t n = 0; n < g_.nodes.size(); ++n) process(static_cast<int>(n));
  for (std::size_t v = 0; v < g_.values.size(); ++v) {
    const auto& s = syms_[v];
    if (!s || s->kind != Sym::Kind::chain || s->ch.trivial() || extended_[v] != 0) continue;
    finish_chain(static_cast<int>(v), s->ch);
  }
  // Graph order (by the first data-path node).
  auto first_node = [&](const BnMatch& m) { return m.nodes.empty() ? 0 : m.nodes.front(); };
  std::stable_sort(out_.layers.begin(), out_.layers.end(), [&](const BnMatch& a, const BnMatch& b) {
    return first_node(a) < first_node(b);
  });
  name_layers();
  return std::move(out_);
}

}  // namespace

std::string describe_value(const Graph& g, int value) {
  if (value < 0 || value >= static_cast<int>(g.values.size())) return "(none)";
  const Value& v = g.values[static_cast<std::size_t>(value)];
  std::string s = "'" + v.name + "'";
  if (!v.origin.empty()) {
    s += " (" + v.origin + ")";
  } else if (v.producer >= 0) {
    const Node& n = g.nodes[static_cast<std::size_t>(v.producer)];
    s += " (output of " + (n.location.empty() ? "node '" + n.name + "'" : n.location) + ")";
  } else {
    s += " (graph input)";
  }
  return s;
}

Recognition recognise(const Graph& g) {
  return Recogniser(g).run();
}

}  // namespace normcore::import
