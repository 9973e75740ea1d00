// The recogniser's symbols: leaf symbols of graph inputs and constants, parameter shapes and
// their broadcast, chains, and the binding of a per-channel parameter to a chain.
#include <algorithm>

#include "recognise_internal.hpp"

namespace normcore::import::detail {

// ---------------------------------------------------------------------------------------------
// Symbols and helpers.

std::string Recogniser::describe(int v) const {
  return describe_value(g_, v);
}

std::string Recogniser::loc(int node) const {
  if (node < 0) return "?";
  const Node& n = g_.nodes[static_cast<std::size_t>(node)];
  if (!n.location.empty()) return n.location;
  return "node '" + n.name + "' (" + n.op + ")";
}

bool Recogniser::extendable(int v) const {
  return consumers_[static_cast<std::size_t>(v)] == 1 &&
         is_output_[static_cast<std::size_t>(v)] == 0;
}

void Recogniser::set_bad(Chain& c, const std::string& why, int node) {
  if (!c.bad.empty()) return;
  c.bad = why;
  c.bad_node = node;
}

int Recogniser::in(const Node& node, std::size_t k) {
  return k < node.inputs.size() ? node.inputs[k] : -1;
}

const Value* Recogniser::out_value(int ni) const {
  const Node& node = g_.nodes[static_cast<std::size_t>(ni)];
  if (node.outputs.empty() || node.outputs[0] < 0) return nullptr;
  return &g_.values[static_cast<std::size_t>(node.outputs[0])];
}

void Recogniser::set_out(const Node& node, Sym s, std::size_t k) {
  if (k < node.outputs.size() && node.outputs[k] >= 0) {
    syms_[static_cast<std::size_t>(node.outputs[k])] = std::move(s);
  }
}

void Recogniser::set_all_data(const Node& node) {
  for (std::size_t k = 0; k < node.outputs.size(); ++k) set_out(node, Sym{}, k);
}

void Recogniser::set_chain(const Node& node, Chain c) {
  Sym r;
  r.kind = Sym::Kind::chain;
  r.ch = std::move(c);
  set_out(node, std::move(r));
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

// Binds a per-channel parameter to the chain: its axis and length must agree with x and with
// the chain's earlier parameters.
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
  if (!bind_axis(c, p.ps, who, node)) return;
  const std::int64_t len = p.ps.dims[static_cast<std::size_t>(p.ps.vary_axis())];
  if (c.len > 0 && c.len != len) {
    set_bad(c,
            who + " has " + std::to_string(len) + " elements but the earlier parameters have " +
                std::to_string(c.len),
            node);
    return;
  }
  c.len = len;
}

bool Recogniser::bind_axis(Chain& c, const PShape& ps, const std::string& who, int node) const {
  const int k = ps.vary_axis();
  const auto prank = static_cast<int>(ps.dims.size());
  const std::int64_t len = ps.dims[static_cast<std::size_t>(k)];
  if (!c.dknown) {
    const int from_end = prank - k;
    if (c.axis_end > 0 && c.axis_end != from_end) {
      set_bad(c, who + " varies along a different axis than the earlier parameters", node);
      return false;
    }
    c.axis_end = from_end;
    return true;
  }
  const auto rank = static_cast<int>(c.dshape.size());
  const int axis = rank - (prank - k);
  if (prank > rank || axis < 0) {
    set_bad(c,
            who + " of shape " + shape_str(ps.dims) + " has more dimensions than the input " +
                shape_str(c.dshape),
            node);
    return false;
  }
  const std::int64_t d = c.dshape[static_cast<std::size_t>(axis)];
  if (d >= 0 && d != len) {
    set_bad(c,
            who + " has " + std::to_string(len) + " elements (shape " + shape_str(ps.dims) +
                ") but the channel dimension (axis " + std::to_string(axis) + ") of " +
                describe(c.x) + " " + shape_str(c.dshape) + " has " + std::to_string(d),
            node);
    return false;
  }
  if (c.axis >= 0 && c.axis != axis) {
    set_bad(c,
            who + " varies along axis " + std::to_string(axis) +
                " but the earlier parameters along axis " + std::to_string(c.axis),
            node);
    return false;
  }
  c.axis = axis;
  return true;
}

}  // namespace normcore::import::detail
