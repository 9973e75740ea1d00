// Private to the recogniser (recognise*.cpp): the algebra it computes over (parameter
// expressions as sums of monomials over atoms, parameter shapes), the symbolic values (param,
// affine chain, data), the op enum of the transfer functions, and the Recogniser itself.
//   recognise_algebra.cpp  polynomials, atoms, numeric evaluation
//   recognise_ops.cpp      leaf symbols, shapes, one transfer function per op kind
//   recognise_match.cpp    chain ends: near misses and the read-back of a BnMatch
//   recognise.cpp          the pass over the graph, layer names, the public entry points
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "normcore/import/recognise.hpp"

namespace normcore::import::detail {

std::string num(double v);  // "%.6g"

// ---------------------------------------------------------------------------------------------
// Parameter expressions: sums of monomials over atoms.

using AtomPowers = std::vector<std::pair<int, int>>;  // (atom id, exponent), sorted by id

struct Mono {
  double coef = 1;
  AtomPowers atoms;  // exponents != 0
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

AtomPowers mul_atoms(const AtomPowers& a, const AtomPowers& b);
Poly normalise(Poly p);
Poly constant_poly(double c);
Poly atom_poly(int id, int e = 1);
std::optional<double> constant_of(const Poly& p);
Poly add(const Poly& a, const Poly& b);
Poly neg(const Poly& a);
Poly sub(const Poly& a, const Poly& b);
Poly mul(const Poly& a, const Poly& b);
std::string poly_key(const Poly& p);

// ---------------------------------------------------------------------------------------------
// Shapes of parameter tensors: which axes they vary along.

struct PShape {
  bool known = false;
  std::vector<std::int64_t> dims;
  std::vector<char> vary;  // per dim: the values change along it (size > 1, not a broadcast)
  std::string bad;         // non-empty: not usable as a per-channel vector (the reason)
  int bad_node = -1;

  [[nodiscard]] int vary_count() const;
  [[nodiscard]] int vary_axis() const;
};

std::string axes_str(const PShape& s);

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

void merge_into(std::vector<int>& dst, const std::vector<int>& src);

// ---------------------------------------------------------------------------------------------
// The normalised ops (graph.hpp) the transfer functions know; everything else is `unknown`
// (outputs are data) or `other` (an "other:<op>" node; checked for a training-mode BN).

enum class Op : std::uint8_t {
  add,
  sub,
  mul,
  div,
  sqrt,
  rsqrt,
  reciprocal,
  pow,
  neg,
  max,
  min,
  clamp,
  relu,
  broadcast,
  reshape,
  identity,
  convert,
  bn,
  other,
  unknown
};

Op op_of(const std::string& op);
bool is_param_op(Op op);  // all-parameter inputs give a parameter

// ---------------------------------------------------------------------------------------------
// The structure of A and B read back as gamma / sqrt(var + eps) and beta - mean * A.

struct Readback {
  bool structured = false;  // A is one monomial
  const Mono* ma = nullptr;
  int sqrt_atom = -1;
  AtomPowers gamma_atoms;
  std::vector<Mono> var_terms, eps_terms;
  std::vector<std::pair<double, int>> mean_terms;  // (factor, leaf value): mean += factor * leaf
  Poly beta_poly;
};

struct BnNumbers {
  std::vector<double> gamma, var, mean, beta;
  double eps = 0;
};

class Recogniser {
 public:
  explicit Recogniser(const Graph& g);
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

  // --- atoms (recognise_algebra.cpp) ---
  int intern(AtomDef def, const std::string& key);
  int leaf_atom(int value);
  Poly func(const std::string& name, std::vector<Poly> args, double param = 0);
  Poly inv(const Poly& p);
  Poly sqrt_of(const Poly& p);
  Poly power(const Poly& p, double e);
  bool has_inv_sqrt(const Poly& A) const;

  // --- numeric evaluation (per channel, `c` channels) ---
  std::optional<std::vector<double>> eval_atom(int id, std::size_t c);
  std::optional<std::vector<double>> eval_poly(const Poly& p, std::size_t c);

  // --- symbols (recognise_ops.cpp) ---
  const Sym& sym(int v);
  Sym leaf_sym(int v);
  static bool is_param(const Sym& s) { return s.kind == Sym::Kind::param; }
  Chain chain_for(int v, bool allow_activated);
  bool extendable(int v) const;
  std::string loc(int node) const;
  std::string describe(int v) const;
  static void set_bad(Chain& c, const std::string& why, int node);
  void bind(Chain& c, const Sym& p, int pv, int node, const std::string& role);
  bool bind_axis(Chain& c, const PShape& ps, const std::string& who, int node) const;
  PShape broadcast_shapes(const PShape& a, const PShape& b, int node) const;
  static std::optional<double> uniform_constant(const Sym& s);
  const Value* out_value(int ni) const;
  static int in(const Node& node, std::size_t k);
  void set_out(const Node& node, Sym s, std::size_t k = 0);
  void set_all_data(const Node& node);
  void set_chain(const Node& node, Chain c);

  // --- transfer functions, one per op kind ---
  void process(int ni);
  void other_op(int ni);
  bool all_param_inputs(const Node& node, Op op);
  void param_op(int ni, Op op);
  bool param_binary(int ni, Op op, const Sym& a, Sym& r);
  void param_clamp(const Node& node, const Sym& a, Sym& r);
  void param_unary(Op op, const Sym& a, Sym& r);
  PShape broadcast_pshape(int ni, const PShape& a) const;
  PShape reshape_pshape(int ni, const PShape& a) const;
  bool reshape_target(int ni, const PShape& a, std::vector<std::int64_t>& odims) const;
  void data_arith(int ni, Op op);
  bool conv_bias(int dv, const Sym& p) const;
  void data_param_arith(int ni, Op op, int dv, int pv, bool data_lhs);
  void apply_affine(Chain& c, Op op, const Poly& p, bool data_lhs);
  bool data_data_mul(int ni, Op op, int a, int b);
  void data_unary(int ni, Op op);
  void data_activation(int ni, Op op);
  bool activation_bounds(const Node& node, Op op, int& dv, std::optional<double>& lo,
                         std::optional<double>& hi);
  void data_bn(int ni);
  void bn_training_checks(int ni, Chain& c) const;
  void bn_param(int ni, std::size_t k, int axis, Chain& c, std::array<Poly, 4>& p);
  void bn_axis(int ni, int axis, Chain& c) const;

  // --- chain ends (recognise_match.cpp) ---
  void finish_chain(int v, const Chain& c);
  void make_match(int v, const Chain& c);
  bool match_channels(BnMatch& m, const Chain& c) const;
  void match_nodes(BnMatch& m, const Chain& c) const;
  static void match_activation(BnMatch& m, const Chain& c);
  int leaf_of(int id) const;
  bool is_vector_leaf(int value) const;
  Readback read_scale(BnMatch& m, const Chain& c) const;
  void read_shift(BnMatch& m, const Chain& c, Readback& rb) const;
  static std::string match_pattern(const Chain& c, const Readback& rb, bool norm);
  void match_numbers(BnMatch& m, const Chain& c, const Readback& rb);
  bool eval_structured(BnMatch& m, const Readback& rb, std::size_t C, BnNumbers& n);
  bool eval_gamma(const Readback& rb, std::size_t C, BnNumbers& n);
  bool eval_var_eps(BnMatch& m, const Readback& rb, std::size_t C, BnNumbers& n);
  bool eval_mean_beta(const Readback& rb, std::size_t C, BnNumbers& n);
  static bool reproduces(const BnNumbers& n, const std::vector<double>& a,
                         const std::vector<double>& b);
  static void store_numbers(BnMatch& m, BnNumbers n);
  void name_layers();
};

}  // namespace normcore::import::detail
