// The recogniser's transfer functions over parameters: an op whose inputs are all parameters
// (constants, parameter inputs, expressions of them) gives a parameter expression and its shape.
#include <algorithm>

#include "recognise_internal.hpp"

namespace normcore::import::detail {

void Recogniser::param_op(int ni, Op op) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  Sym r;
  r.kind = Sym::Kind::param;
  const Sym& a = sym(in(node, 0));
  r.pnodes = a.pnodes;
  r.pnodes.push_back(ni);
  r.leaves = a.leaves;
  for (std::size_t k = 1; k < node.inputs.size(); ++k) {
    if (node.inputs[k] < 0 || op == Op::reshape) continue;
    merge_into(r.pnodes, sym(node.inputs[k]).pnodes);
    merge_into(r.leaves, sym(node.inputs[k]).leaves);
  }
  switch (op) {
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::max:
    case Op::min:
    case Op::pow:
      if (!param_binary(ni, op, a, r)) {
        set_all_data(node);
        return;
      }
      break;
    case Op::clamp:
      param_clamp(node, a, r);
      break;
    default:
      param_unary(op, a, r);
      if (op == Op::broadcast && a.ps.bad.empty()) {
        r.ps = broadcast_pshape(ni, a.ps);
      } else if (op == Op::reshape && a.ps.bad.empty()) {
        r.ps = reshape_pshape(ni, a.ps);
      }
      break;
  }
  for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, k == 0 ? r : Sym{}, k);
}

// add sub mul div max min pow; false: the result is not a parameter (no second operand, or a
// pow exponent that is not a constant scalar).
bool Recogniser::param_binary(int ni, Op op, const Sym& a, Sym& r) {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  if (in(node, 1) < 0) return false;
  const Sym& b = sym(in(node, 1));
  r.ps = broadcast_shapes(a.ps, b.ps, ni);
  switch (op) {
    case Op::add:
      r.poly = add(a.poly, b.poly);
      break;
    case Op::sub:
      r.poly = sub(a.poly, b.poly);
      break;
    case Op::mul:
      r.poly = mul(a.poly, b.poly);
      break;
    case Op::div:
      r.poly = mul(a.poly, inv(b.poly));
      break;
    case Op::max:
    case Op::min:
      r.poly = func(node.op, {a.poly, b.poly});
      break;
    default: {  // pow: exponent must be a constant scalar
      auto e = uniform_constant(b);
      if (!e) return false;
      r.ps = a.ps;
      r.poly = power(a.poly, *e);
      break;
    }
  }
  return true;
}

void Recogniser::param_clamp(const Node& node, const Sym& a, Sym& r) {
  r.ps = a.ps;
  Poly p = a.poly;
  if (in(node, 1) >= 0) p = func("max", {p, sym(in(node, 1)).poly});
  if (in(node, 2) >= 0) p = func("min", {p, sym(in(node, 2)).poly});
  r.poly = p;
}

// sqrt rsqrt reciprocal neg relu, and the shape-only broadcast reshape identity convert.
void Recogniser::param_unary(Op op, const Sym& a, Sym& r) {
  r.ps = a.ps;
  switch (op) {
    case Op::sqrt:
      r.poly = sqrt_of(a.poly);
      break;
    case Op::rsqrt:
      r.poly = inv(sqrt_of(a.poly));
      break;
    case Op::reciprocal:
      r.poly = inv(a.poly);
      break;
    case Op::neg:
      r.poly = neg(a.poly);
      break;
    case Op::relu:
      r.poly = func("relu", {a.poly});
      break;
    default:
      r.poly = a.poly;  // broadcast reshape identity convert
      break;
  }
}

// A broadcast moves the varying axis to where its `dims` attribute (or NumPy-style trailing
// alignment) puts the operand's axes.
PShape Recogniser::broadcast_pshape(int ni, const PShape& a) const {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const Value* ov = out_value(ni);
  PShape s;
  if (ov == nullptr || !ov->shape_known || !a.known) return s;
  s.known = true;
  s.dims = ov->shape;
  s.vary.assign(s.dims.size(), 0);
  auto it = node.attrs.find("dims");
  std::vector<std::int64_t> dims;
  if (it != node.attrs.end()) {
    dims = it->second.ints;
  } else {  // NumPy-style: trailing dimensions
    for (std::size_t i = 0; i < a.dims.size(); ++i) {
      dims.push_back(static_cast<std::int64_t>(s.dims.size() - a.dims.size() + i));
    }
  }
  for (std::size_t i = 0; i < a.vary.size() && i < dims.size(); ++i) {
    const auto d = dims[i];
    if (d >= 0 && d < static_cast<std::int64_t>(s.vary.size()) && a.vary[i] != 0) {
      s.vary[static_cast<std::size_t>(d)] = 1;
    }
  }
  if (dims.size() != a.dims.size()) {
    s.bad = loc(ni) + ": broadcast dimensions do not match the operand's rank";
    s.bad_node = ni;
  }
  return s;
}

// The target shape of a reshape: the output's shape, the front end's `shape` attribute, or an
// ONNX constant target shape (0 = copy, -1 = infer). False when unknown.
bool Recogniser::reshape_target(int ni, const PShape& a, std::vector<std::int64_t>& odims) const {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  const Value* ov = out_value(ni);
  if (ov != nullptr && ov->shape_known) {
    odims = ov->shape;
    return true;
  }
  if (auto it = node.attrs.find("shape"); it != node.attrs.end() && !it->second.ints.empty()) {
    odims = it->second.ints;  // the front end's target shape
    return std::none_of(odims.begin(), odims.end(), [](std::int64_t d) { return d < 0; });
  }
  const int target = in(node, 1);
  if (target < 0 || !g_.values[static_cast<std::size_t>(target)].constant || !a.known) {
    return false;
  }
  std::int64_t total = 1;
  for (auto d : a.dims) total *= d;
  std::int64_t known = 1;
  int infer = -1;
  const auto& t = g_.values[static_cast<std::size_t>(target)].constant->data;
  for (std::size_t i = 0; i < t.size(); ++i) {
    auto d = static_cast<std::int64_t>(t[i]);
    if (d == 0 && i < a.dims.size()) d = a.dims[i];
    if (d == -1) {
      infer = static_cast<int>(i);
      odims.push_back(1);
      continue;
    }
    odims.push_back(d);
    known *= d;
  }
  if (infer >= 0 && known > 0) odims[static_cast<std::size_t>(infer)] = total / known;
  return true;
}

// A reshape keeps a per-channel parameter per-channel when its one non-1 dimension stays the
// one non-1 dimension.
PShape Recogniser::reshape_pshape(int ni, const PShape& a) const {
  PShape s;
  std::vector<std::int64_t> odims;
  if (!reshape_target(ni, a, odims) || !a.known) return s;
  s.known = true;
  s.dims = odims;
  s.vary.assign(odims.size(), 0);
  if (a.vary_count() != 1) return s;
  bool other_big = false;
  for (std::size_t i = 0; i < a.dims.size(); ++i) {
    if (a.vary[i] == 0 && a.dims[i] != 1) other_big = true;
  }
  const std::int64_t len = a.dims[static_cast<std::size_t>(a.vary_axis())];
  int pos = -1, big = 0;
  for (std::size_t i = 0; i < odims.size(); ++i) {
    if (odims[i] != 1) {
      ++big;
      pos = static_cast<int>(i);
    }
  }
  if (other_big || big != 1 || odims[static_cast<std::size_t>(pos)] != len) {
    s.bad = loc(ni) + " reshapes a per-channel parameter of shape " + shape_str(a.dims) + " to " +
            shape_str(odims);
    s.bad_node = ni;
  } else {
    s.vary[static_cast<std::size_t>(pos)] = 1;
  }
  return s;
}

}  // namespace normcore::import::detail
