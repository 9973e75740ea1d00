// The recogniser's transfer functions on the data path: the op enum, the dispatch of a node to
// the function of its op kind, and one function per kind (arithmetic, shape-only ops,
// activations, explicit batch norm). The parameter path is in recognise_param_ops.cpp.
#include <algorithm>
#include <array>
#include <cctype>

#include "recognise_internal.hpp"

namespace normcore::import::detail {

Op op_of(const std::string& op) {
  static const std::map<std::string, Op> kOps = {{"add", Op::add},
                                                 {"sub", Op::sub},
                                                 {"mul", Op::mul},
                                                 {"div", Op::div},
                                                 {"sqrt", Op::sqrt},
                                                 {"rsqrt", Op::rsqrt},
                                                 {"reciprocal", Op::reciprocal},
                                                 {"pow", Op::pow},
                                                 {"neg", Op::neg},
                                                 {"max", Op::max},
                                                 {"min", Op::min},
                                                 {"clamp", Op::clamp},
                                                 {"relu", Op::relu},
                                                 {"broadcast", Op::broadcast},
                                                 {"reshape", Op::reshape},
                                                 {"identity", Op::identity},
                                                 {"convert", Op::convert},
                                                 {"bn", Op::bn}};
  if (op.rfind("other:", 0) == 0) return Op::other;
  auto it = kOps.find(op);
  return it == kOps.end() ? Op::unknown : it->second;
}

bool is_param_op(Op op) {
  return op != Op::bn && op != Op::other && op != Op::unknown;
}

// ---------------------------------------------------------------------------------------------
// The dispatch.

bool Recogniser::all_param_inputs(const Node& node, Op op) {
  bool all_param = !node.inputs.empty();
  for (std::size_t k = 0; k < node.inputs.size(); ++k) {
    const int v = node.inputs[k];
    if (v < 0) continue;
    // Second inputs of reshape (target shape) are not data.
    if (op == Op::reshape && k > 0) continue;
    if (!is_param(sym(v))) all_param = false;
  }
  return all_param;
}

void Recogniser::process(int ni) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const Op op = op_of(node.op);
  // Ops whose inputs are all parameters give a parameter (where the op is understood).
  const bool all_param = all_param_inputs(node, op);
  if (op == Op::other) {
    other_op(ni);
    return;
  }
  if (all_param && is_param_op(op) && in(node, 0) >= 0) {
    param_op(ni, op);
    return;
  }
  switch (op) {
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
      data_arith(ni, op);
      return;
    case Op::neg:
    case Op::identity:
    case Op::convert:
    case Op::reshape:
      data_unary(ni, op);
      return;
    case Op::relu:
    case Op::max:
    case Op::min:
    case Op::clamp:
      data_activation(ni, op);
      return;
    case Op::bn:
      data_bn(ni);
      return;
    default:
      set_all_data(node);
      return;
  }
}

// An op the front end did not map: a batch-norm training op is a near miss.
void Recogniser::other_op(int ni) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  std::string lower = node.op;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower.find("batchnorm") != std::string::npos ||
      lower.find("batch-norm") != std::string::npos ||
      lower.find("batch_norm") != std::string::npos) {
    NearMiss nm;
    nm.reason = node.op.substr(6) +
                " is not batch-norm inference (training mode: it normalises with "
                "the batch's own statistics)";
    nm.location = loc(ni);
    nm.nodes = {loc(ni)};
    nm.output = node.outputs.empty() ? -1 : node.outputs[0];
    out_.near_misses.push_back(nm);
  }
  set_all_data(node);
}

// ---------------------------------------------------------------------------------------------
// add sub mul div on the data path.

void Recogniser::data_arith(int ni, Op op) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const int a = in(node, 0), b = in(node, 1);
  if (a < 0 || b < 0) {
    set_out(node, Sym{});
    return;
  }
  const bool pa = is_param(sym(a)), pb = is_param(sym(b));
  if (pa != pb) {
    data_param_arith(ni, op, pa ? b : a, pa ? a : b, !pa);
    return;
  }
  // Both operands are data.
  if ((op == Op::mul || op == Op::div) && data_data_mul(ni, op, a, b)) return;
  set_out(node, Sym{});
}

// The bias of a conv / matmul: an add of a per-channel vector right on its output, or on a
// reshape of it (TOSA's matmul is 3-d: torch-mlir reshapes [N,F] around it).
bool Recogniser::conv_bias(int dv, const Sym& p) const {
  if (!p.ps.bad.empty() || p.ps.vary_count() != 1) return false;
  int prod = g_.values[static_cast<std::size_t>(dv)].producer;
  for (int hops = 0; prod >= 0 && hops < 4; ++hops) {
    const Node& n = g_.nodes[static_cast<std::size_t>(prod)];
    if (n.op == "conv" || n.op == "matmul") return true;
    if (n.op != "reshape" || n.inputs.empty() || n.inputs[0] < 0) return false;
    const auto in = static_cast<std::size_t>(n.inputs[0]);
    if (consumers_[in] != 1) return false;
    prod = g_.values[in].producer;
  }
  return false;
}

// x * A + B combined with the parameter p (x on the left of the op when data_lhs).
void Recogniser::apply_affine(Chain& c, Op op, const Poly& p, bool data_lhs) {
  if (op == Op::add) {
    c.B = add(c.B, p);
  } else if (op == Op::sub) {
    if (data_lhs) {
      c.B = sub(c.B, p);
    } else {
      c.A = neg(c.A);
      c.B = sub(p, c.B);
    }
  } else if (op == Op::mul) {
    c.A = mul(c.A, p);
    c.B = mul(c.B, p);
  } else {
    const Poly q = inv(p);
    c.A = mul(c.A, q);
    c.B = mul(c.B, q);
  }
}

// One data operand (dv) and one parameter (pv): the chain of dv extends through the op.
void Recogniser::data_param_arith(int ni, Op op, int dv, int pv, bool data_lhs) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  if (op == Op::div && !data_lhs) {
    set_out(node, Sym{});
    return;
  }
  Chain c = chain_for(dv, false);
  const Sym& p = sym(pv);
  const bool fresh = c.trivial();
  if (fresh && op == Op::add && conv_bias(dv, p)) {
    set_out(node, Sym{});
    return;
  }
  if (!c.bad.empty()) ++c.ops_after_bad;
  const bool additive = op == Op::add || op == Op::sub;
  bind(c, p, pv, ni, additive ? (c.scaled ? "bias" : "mean") : "scale");
  const bool pc = p.ps.vary_count() == 1;
  apply_affine(c, op, p.poly, data_lhs);
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
  c.ops.push_back(node.op);
  if (const Value* ov = out_value(ni); !c.dknown && ov != nullptr && ov->shape_known) {
    c.dknown = true;
    c.dshape = ov->shape;
  }
  if (!fresh) extended_[static_cast<std::size_t>(dv)] = 1;
  set_chain(node, std::move(c));
}

// A chain multiplied or divided by another data tensor: a near miss, unless the chain ends
// right before it (finish_chain falls back to clean_prefix).
bool Recogniser::data_data_mul(int ni, Op op, int a, int b) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  Chain ca = chain_for(a, false), cb = chain_for(b, false);
  const bool na = !ca.trivial(), nb = !cb.trivial();
  if (!(na != nb && (op == Op::mul || na) && a != b)) return false;
  Chain c = na ? ca : cb;
  const int cv = na ? a : b, other = na ? b : a;
  if (c.bad.empty()) {
    c.clean_prefix = cv;
    c.bad_datamul = true;
    set_bad(c,
            describe(other) + " is not a constant: " + loc(ni) +
                (op == Op::mul ? " multiplies" : " divides") +
                " the batch-norm chain by a data tensor (a per-channel scale must be "
                "constant)",
            ni);
  } else {
    ++c.ops_after_bad;
  }
  c.dnodes.push_back(ni);
  c.ops.push_back(node.op);
  extended_[static_cast<std::size_t>(cv)] = 1;
  set_chain(node, std::move(c));
  return true;
}

// ---------------------------------------------------------------------------------------------
// neg identity convert reshape on the data path (a reshape only when it keeps x's shape).

void Recogniser::data_unary(int ni, Op op) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const int a = in(node, 0);
  if (a < 0 || is_param(sym(a))) {
    set_out(node, Sym{});
    return;
  }
  Chain c = chain_for(a, op != Op::neg);
  if (c.trivial()) {
    set_out(node, Sym{});
    return;
  }
  const Value* ov = out_value(ni);
  if (op == Op::reshape) {
    if (ov == nullptr || !ov->shape_known || (c.dknown && ov->shape != c.dshape)) {
      set_out(node, Sym{});
      return;
    }
  }
  if (op == Op::neg) {
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
  set_chain(node, std::move(c));
}

// ---------------------------------------------------------------------------------------------
// relu max min clamp: an activation with scalar constant bounds ends the chain.

// The data operand (dv) and the bounds; false when a bound is not a scalar constant.
bool Recogniser::activation_bounds(const Node& node, Op op, int& dv, std::optional<double>& lo,
                                   std::optional<double>& hi) {
  dv = in(node, 0);
  if (op == Op::relu) {
    lo = 0.0;
    return true;
  }
  if (op == Op::clamp) {
    bool ok = true;
    if (in(node, 1) >= 0) {
      lo = uniform_constant(sym(in(node, 1)));
      ok = ok && lo.has_value();
    }
    if (in(node, 2) >= 0) {
      hi = uniform_constant(sym(in(node, 2)));
      ok = ok && hi.has_value();
    }
    return ok;
  }
  int pv = in(node, 1);
  if (dv >= 0 && pv >= 0 && is_param(sym(dv)) && !is_param(sym(pv))) std::swap(dv, pv);
  if (pv < 0) return false;
  auto v = uniform_constant(sym(pv));
  if (op == Op::max)
    lo = v;
  else
    hi = v;
  return v.has_value();
}

void Recogniser::data_activation(int ni, Op op) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  int dv = -1;
  std::optional<double> lo, hi;
  const bool ok = activation_bounds(node, op, dv, lo, hi);
  if (dv < 0 || is_param(sym(dv)) || !ok) {
    set_out(node, Sym{});
    return;
  }
  Chain c = chain_for(dv, true);
  if (c.trivial()) {
    set_out(node, Sym{});
    return;
  }
  if (!c.bad.empty()) ++c.ops_after_bad;
  if (lo) c.act_lo = c.act_lo ? std::max(*c.act_lo, *lo) : *lo;
  if (hi) c.act_hi = c.act_hi ? std::min(*c.act_hi, *hi) : *hi;
  c.activated = true;
  if (op == Op::clamp && hi) c.act_clamp_op = true;
  c.ops.push_back(node.op);
  c.dnodes.push_back(ni);
  extended_[static_cast<std::size_t>(dv)] = 1;
  set_chain(node, std::move(c));
}

// ---------------------------------------------------------------------------------------------
// An explicit batch norm (ONNX BatchNormalization, HLO batch-norm-inference).

namespace {
const std::array<const char*, 4> kBnRole = {"scale", "bias", "mean", "var"};
}

// Training mode: the attribute, or a batch-statistics output in use.
void Recogniser::bn_training_checks(int ni, Chain& c) const {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
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
}

// Parameter k (scale, bias, mean, var) of the bn: into p[k], checked against the channel axis.
void Recogniser::bn_param(int ni, std::size_t k, int axis, Chain& c, std::array<Poly, 4>& p) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const int v = in(node, k + 1);
  if (v < 0) return;
  const Sym& s = sym(v);
  const std::string role = kBnRole[k];
  if (!is_param(s)) {
    set_bad(c, role + " " + describe(v) + " of " + loc(ni) + " is not a constant", ni);
    return;
  }
  p[k] = s.poly;
  merge_into(c.pnodes, s.pnodes);
  merge_into(c.leaves, s.leaves);
  if (!s.ps.bad.empty()) {
    set_bad(c, role + " " + s.ps.bad, ni);
    return;
  }
  if (s.ps.vary_count() != 1) return;  // scalar, or already reported through ps.bad
  const std::int64_t len = s.ps.dims[static_cast<std::size_t>(s.ps.vary_axis())];
  if (c.dknown && axis >= 0 && axis < static_cast<int>(c.dshape.size())) {
    const auto d = c.dshape[static_cast<std::size_t>(axis)];
    if (d >= 0 && d != len) {
      set_bad(c,
              role + " " + describe(v) + " has " + std::to_string(len) +
                  " elements but the channel dimension (axis " + std::to_string(axis) + ") of " +
                  describe(c.x) + " " + shape_str(c.dshape) + " has " + std::to_string(d),
              ni);
    }
  }
  if (c.len > 0 && c.len != len) {
    set_bad(c,
            role + " " + describe(v) + " has " + std::to_string(len) +
                " elements but the other parameters have " + std::to_string(c.len),
            ni);
  }
  c.len = len;
}

void Recogniser::bn_axis(int ni, int axis, Chain& c) const {
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
}

void Recogniser::data_bn(int ni) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const int xv = in(node, 0);
  if (xv < 0 || is_param(sym(xv))) {
    set_all_data(node);
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
  bn_training_checks(ni, c);
  std::array<Poly, 4> p = {constant_poly(1), Poly{}, Poly{}, Poly{}};
  for (std::size_t k = 0; k < 4; ++k) bn_param(ni, k, axis, c, p);
  bn_axis(ni, axis, c);
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
  set_chain(node, std::move(c));
  for (std::size_t k2 = 1; k2 < node.outputs.size(); ++k2) set_out(node, Sym{}, k2);
}

}  // namespace normcore::import::detail
