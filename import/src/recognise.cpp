// The batch-norm recogniser (see recognise.hpp for what it accepts and why): one forward pass
// over the nodes (transfer functions: recognise_ops.cpp, recognise_param_ops.cpp), then every
// chain end is read back (recognise_match.cpp); layers are named here.
#include "normcore/import/recognise.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "normcore/import/bundle.hpp"
#include "recognise_internal.hpp"

namespace normcore::import {

namespace detail {

namespace {

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

}  // namespace

Recogniser::Recogniser(const Graph& g) : g_(g), syms_(g.values.size()), extended_(g.values.size()) {
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

}  // namespace detail

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

std::string no_bn_note(const Graph& g, const Recognition& rec) {
  if (!rec.layers.empty()) return "";
  std::string convs;
  int count = 0;
  for (const auto& n : g.nodes) {
    if (n.op != "conv" && n.op != "matmul") continue;
    if (count++ < 3) convs += (convs.empty() ? "" : ", ") + n.location;
  }
  if (count > 0) {
    return "no batch norm: the " + std::string(count == 1 ? "layer" : "layers") + " at " + convs +
           (count > 3 ? " (and " + std::to_string(count - 3) + " more)" : "") + " (" +
           std::to_string(count) +
           " conv / matmul in all) may already include it: exporters "
           "fold an eval-mode BN into the conv's weights and bias (torch.onnx.export does by "
           "default; optimize=False keeps the BatchNormalization, or with dynamo=False "
           "training=torch.onnx.TrainingMode.PRESERVE)";
  }
  return "no batch norm: " + std::to_string(g.nodes.size()) +
         " op(s), none a batch norm or a per-channel multiply-add chain";
}

Recognition recognise(const Graph& g) {
  auto rec = detail::Recogniser(g).run();
  rec.note = no_bn_note(g, rec);
  return rec;
}

}  // namespace normcore::import
