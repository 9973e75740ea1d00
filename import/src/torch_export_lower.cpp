// The serialized torch.export graph (graph_module of models/model.json) -> Graph: inputs from the
// signature (parameters, buffers and constants with the archive's data), nodes lowered onto the
// graph ops (torch_export.hpp lists them), outputs.
#include <algorithm>
#include <set>

#include "torch_export_internal.hpp"

namespace normcore::import::torch_export_detail {

namespace {

using nlohmann::json;

// "torch.ops.aten.add.Tensor" -> ("aten.add", "Tensor"); "operator.getitem" -> itself, "".
std::pair<std::string, std::string> split_target(const std::string& target) {
  std::string t = target;
  if (t.rfind("torch.ops.", 0) == 0) t = t.substr(10);
  if (t.rfind("aten.", 0) != 0 && t.rfind("prims.", 0) != 0) return {t, ""};
  const auto last = t.rfind('.');
  const auto first = t.find('.');
  if (last == first) return {t, ""};
  return {t.substr(0, last), t.substr(last + 1)};
}

const std::map<std::string, std::string>& simple_ops() {
  static const std::map<std::string, std::string> k = {{"aten.sqrt", "sqrt"},
                                                       {"aten.rsqrt", "rsqrt"},
                                                       {"aten.reciprocal", "reciprocal"},
                                                       {"aten.neg", "neg"},
                                                       {"aten.relu", "relu"},
                                                       {"aten.maximum", "max"},
                                                       {"aten.minimum", "min"},
                                                       {"aten.unsqueeze", "reshape"},
                                                       {"aten.view", "reshape"},
                                                       {"aten.reshape", "reshape"},
                                                       {"aten._unsafe_view", "reshape"},
                                                       {"aten.squeeze", "reshape"},
                                                       {"aten.flatten", "reshape"},
                                                       {"aten._to_copy", "convert"},
                                                       {"aten.to", "convert"},
                                                       {"aten.clone", "identity"},
                                                       {"aten.alias", "identity"},
                                                       {"aten.detach", "identity"},
                                                       {"aten.contiguous", "identity"},
                                                       {"aten.dropout", "identity"},
                                                       {"aten.lift_fresh_copy", "identity"},
                                                       {"aten.conv1d", "conv"},
                                                       {"aten.conv2d", "conv"},
                                                       {"aten.conv3d", "conv"},
                                                       {"aten.convolution", "conv"},
                                                       {"aten.linear", "matmul"},
                                                       {"aten.addmm", "matmul"},
                                                       {"aten.mm", "matmul"},
                                                       {"aten.matmul", "matmul"},
                                                       {"aten.bmm", "matmul"}};
  return k;
}

// Ops whose data operand is input 0 only (the rest are sizes / dims / flags).
bool unary_data(const std::string& op) {
  return op == "reshape" || op == "convert" || op == "identity" || op == "sqrt" || op == "rsqrt" ||
         op == "reciprocal" || op == "neg" || op == "relu";
}

class Lowering {
 public:
  Lowering(const json& gm, const Inputs& in, const std::string& source)
      : gm_(gm), in_(in), source_(source), graph_(gm.at("graph")) {
    g_.source = source;
    g_.format = "torch.export";
  }

  Graph run() {
    if (!graph_.contains("tensor_values") || !graph_["tensor_values"].is_object()) {
      throw Error(source_ + ": graph has no tensor_values");
    }
    add_inputs();
    if (!graph_.contains("nodes") || !graph_["nodes"].is_array()) {
      throw Error(source_ + ": graph has no nodes list");
    }
    for (const auto& n : graph_["nodes"]) lower(n);
    for (const auto& o : list(graph_, "outputs")) {
      if (o.contains("as_tensor")) g_.outputs.push_back(use(name_of(o["as_tensor"]), "output"));
    }
    return std::move(g_);
  }

 private:
  const json& gm_;
  const Inputs& in_;
  const std::string& source_;
  const json& graph_;
  Graph g_;
  std::map<std::string, int> values_;
  std::string where_;  // the node being lowered, for messages

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(source_ + ": " + (where_.empty() ? "" : where_ + ": ") + msg);
  }

  static const json& list(const json& j, const char* key) {
    static const json empty = json::array();
    return j.contains(key) && j[key].is_array() ? j[key] : empty;
  }

  std::string name_of(const json& t) const {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
      fail("a tensor reference without a name");
    }
    return t["name"].get<std::string>();
  }

  // A value named `name` with the shape and dtype tensor_values gives it.
  Value make_value(const std::string& name) const {
    const json& tv = graph_["tensor_values"];
    if (!tv.contains(name)) fail("tensor '" + name + "' has no entry in tensor_values");
    const TensorMeta m = tensor_meta(tv[name], source_ + ": tensor '" + name + "'");
    Value v;
    v.name = name;
    v.shape = m.sizes;
    v.shape_known = true;
    v.dtype = dtype_name(m.dtype);
    return v;
  }

  int define(Value v) {
    const std::string name = v.name;
    if (values_.contains(name)) fail("tensor '" + name + "' is defined twice");
    const int id = g_.add_value(std::move(v));
    values_[name] = id;
    return id;
  }

  int use(const std::string& name, const std::string& what) const {
    auto it = values_.find(name);
    if (it == values_.end()) fail(what + " '" + name + "' is not defined before its use");
    return it->second;
  }

  // fqn and kind of each graph input from the signature.
  std::map<std::string, std::pair<std::string, std::string>> input_specs() const {
    std::map<std::string, std::pair<std::string, std::string>> out;
    if (!gm_.contains("signature")) return out;
    for (const auto& s : list(gm_["signature"], "input_specs")) {
      for (const auto& [kind, body] : s.items()) {
        if (!body.is_object() || !body.contains("arg")) continue;
        const json& arg = body["arg"];
        const json& t = arg.contains("as_tensor") ? arg["as_tensor"] : arg;
        if (!t.is_object() || !t.contains("name")) continue;
        std::string fqn;
        for (const char* k : {"parameter_name", "buffer_name", "tensor_constant_name"}) {
          if (body.contains(k) && body[k].is_string()) fqn = body[k].get<std::string>();
        }
        out[t["name"].get<std::string>()] = {kind, fqn};
      }
    }
    return out;
  }

  void add_inputs() {
    const auto specs = input_specs();
    for (const auto& i : list(graph_, "inputs")) {
      if (!i.contains("as_tensor")) continue;  // tokens, custom objects, symbolic ints
      Value v = make_value(name_of(i["as_tensor"]));
      auto it = specs.find(v.name);
      const std::string kind = it == specs.end() ? "user_input" : it->second.first;
      const std::string fqn = it == specs.end() ? "" : it->second.second;
      if (kind == "user_input" || fqn.empty()) {
        v.origin = "input '" + v.name + "'";
      } else {
        const bool constant = kind == "tensor_constant";
        const auto& store = constant ? in_.constants : in_.weights;
        v.origin = (kind == "buffer" ? "buffer '"
                    : constant       ? "constant '"
                                     : "parameter '") +
                   fqn + "'";
        auto w = store.find(fqn);
        if (w == store.end()) {
          v.origin += " (no data in the archive: give it in --params)";
        } else if (!w->second.data) {
          v.origin += " (" + w->second.note + ")";
        } else {
          if (w->second.meta.sizes != v.shape) {
            fail("weight '" + fqn + "' has sizes " + shape_str(w->second.meta.sizes) +
                 " but the graph's input '" + v.name + "' " + shape_str(v.shape));
          }
          v.constant = w->second.data;
        }
      }
      g_.inputs.push_back(define(std::move(v)));
    }
  }

  // ---- arguments

  // The argument `name` (or, if no argument has that name, the one at position `pos`).
  const json* arg(const json& n, const std::string& name, std::size_t pos) const {
    const json& ins = list(n, "inputs");
    for (const auto& a : ins) {
      if (a.contains("name") && a["name"] == name && a.contains("arg")) return &a["arg"];
    }
    if (pos < ins.size() && ins[pos].contains("arg") && !ins[pos].contains("name")) {
      return &ins[pos]["arg"];
    }
    return nullptr;
  }

  std::optional<double> number(const json* a) const {
    if (a == nullptr) return std::nullopt;
    for (const char* k : {"as_float", "as_int"}) {
      if (a->contains(k) && (*a)[k].is_number()) return (*a)[k].get<double>();
    }
    if (a->contains("as_bool") && (*a)["as_bool"].is_boolean()) {
      return (*a)["as_bool"].get<bool>() ? 1.0 : 0.0;
    }
    return std::nullopt;
  }

  bool flag(const json& n, const std::string& name, std::size_t pos, bool dflt) const {
    const auto v = number(arg(n, name, pos));
    return v ? *v != 0 : dflt;
  }

  int scalar(double x, const std::string& what) {
    Value v;
    v.name = where_ + "." + what;
    v.shape_known = true;
    v.dtype = "f32";
    v.constant = Constant{{}, {x}};
    v.origin = "scalar " + what + " of " + where_;
    return g_.add_value(std::move(v));
  }

  // A tensor operand, a scalar made a constant, or -1 for None / absent.
  int operand(const json& n, const std::string& name, std::size_t pos) {
    const json* a = arg(n, name, pos);
    if (a == nullptr || a->contains("as_none")) return -1;
    if (a->contains("as_tensor")) return use(name_of((*a)["as_tensor"]), name);
    if (auto x = number(a)) return scalar(*x, name);
    fail("argument '" + name + "' is neither a tensor nor a number");
  }

  // ---- nodes

  void lower(const json& n) {
    if (!n.is_object() || !n.contains("target") || !n["target"].is_string()) {
      throw Error(source_ + ": a node without a target");
    }
    const std::string target = n["target"].get<std::string>();
    const std::string nname =
        n.value("name", std::string("node") + std::to_string(g_.nodes.size()));
    const auto [base, overload] = split_target(target);
    where_ = "node '" + nname + "' (" + base + (overload.empty() ? "" : "." + overload) + ")";
    Node node;
    node.name = nname;
    node.location = where_;
    lower_op(n, base, overload, node);
    outputs(n, node);
    where_.clear();
  }

  void outputs(const json& n, Node& node) {
    const int id = static_cast<int>(g_.nodes.size());
    for (const auto& o : list(n, "outputs")) {
      std::vector<std::string> names;
      if (o.contains("as_tensor")) names.push_back(name_of(o["as_tensor"]));
      if (o.contains("as_tensors")) {
        for (const auto& t : o["as_tensors"]) names.push_back(name_of(t));
      }
      if (names.empty()) node.outputs.push_back(-1);
      for (const auto& nm : names) {
        Value v = make_value(nm);
        v.producer = id;
        node.outputs.push_back(define(std::move(v)));
      }
    }
    g_.nodes.push_back(std::move(node));
  }

  void lower_op(const json& n, const std::string& base, const std::string& ov, Node& node);
  void lower_bn(const json& n, const std::string& base, const std::string& ov, Node& node);
  void lower_getitem(const json& n, Node& node);
};

void Lowering::lower_bn(const json& n, const std::string& base, const std::string& ov, Node& node) {
  bool training = false;
  if (base == "aten.batch_norm") training = flag(n, "training", 5, false);
  if (base == "aten._native_batch_norm_legit" || base == "aten.native_batch_norm") {
    training = ov == "no_stats" || flag(n, "training", 5, false);
  }
  if (base == "aten._native_batch_norm_legit_functional") training = true;
  if (training) {
    fail(
        "training=True (training-mode batch norm: it normalises with the batch's own "
        "statistics) is not supported; export the model in eval mode (model.eval())");
  }
  node.op = "bn";
  node.inputs = {operand(n, "input", 0), operand(n, "weight", 1), operand(n, "bias", 2),
                 operand(n, "running_mean", 3), operand(n, "running_var", 4)};
  if (node.inputs[0] < 0 || node.inputs[3] < 0 || node.inputs[4] < 0) {
    fail("input, running_mean and running_var must be tensors");
  }
  const std::size_t eps_pos = base == "aten._native_batch_norm_legit_no_training" ? 6 : 7;
  const auto eps = number(arg(n, "eps", eps_pos));
  if (!eps) fail("no eps argument");
  node.attrs["epsilon"].f = *eps;
  node.attrs["axis"].i = 1;
}

void Lowering::lower_getitem(const json& n, Node& node) {
  const json& ins = list(n, "inputs");
  if (ins.size() != 2 || !ins[0].contains("arg") || !ins[0]["arg"].contains("as_tensors")) {
    fail("getitem needs a tuple of tensors and an index");
  }
  const json& items = ins[0]["arg"]["as_tensors"];
  const auto k = number(&ins[1]["arg"]);
  if (!k || *k < 0 || *k >= static_cast<double>(items.size())) fail("getitem index out of range");
  node.op = "identity";
  node.inputs = {use(name_of(items[static_cast<std::size_t>(*k)]), "tuple element")};
}

void Lowering::lower_op(const json& n, const std::string& base, const std::string& ov, Node& node) {
  static const std::set<std::string> kBn = {
      "aten.batch_norm", "aten._native_batch_norm_legit_no_training",
      "aten._native_batch_norm_legit", "aten.native_batch_norm",
      "aten._native_batch_norm_legit_functional"};
  static const std::map<std::string, std::string> kArith = {
      {"aten.add", "add"}, {"aten.sub", "sub"}, {"aten.mul", "mul"}, {"aten.div", "div"}};
  if (kBn.contains(base)) return lower_bn(n, base, ov, node);
  if (base == "operator.getitem") return lower_getitem(n, node);
  if (auto it = kArith.find(base); it != kArith.end()) {
    const auto alpha = number(arg(n, "alpha", 2));
    const json* mode = arg(n, "rounding_mode", 2);
    if ((alpha && *alpha != 1) ||
        (mode != nullptr && !mode->contains("as_none") && it->second == "div")) {
      node.op = "other:" + base;
    } else {
      node.op = it->second;
    }
    node.inputs = {operand(n, "self", 0), operand(n, "other", 1)};
    return;
  }
  if (base == "aten.pow" && ov == "Tensor_Scalar") {
    node.op = "pow";
    node.inputs = {operand(n, "self", 0), operand(n, "exponent", 1)};
    return;
  }
  if (base == "aten.clamp" || base == "aten.hardtanh" || base == "aten.relu6" ||
      base == "aten.clamp_min" || base == "aten.clamp_max") {
    node.op = "clamp";
    const int x = operand(n, "self", 0);
    int lo = -1, hi = -1;
    if (base == "aten.clamp") {
      lo = operand(n, "min", 1), hi = operand(n, "max", 2);
    } else if (base == "aten.clamp_min") {
      lo = operand(n, "min", 1);
    } else if (base == "aten.clamp_max") {
      hi = operand(n, "max", 1);
    } else if (base == "aten.relu6") {
      lo = scalar(0, "min"), hi = scalar(6, "max");
    } else {
      const auto a = number(arg(n, "min_val", 1)), b = number(arg(n, "max_val", 2));
      lo = scalar(a.value_or(-1.0), "min_val"), hi = scalar(b.value_or(1.0), "max_val");
    }
    node.inputs = {x, lo, hi};
    return;
  }
  if (base == "aten.expand") {
    node.op = "broadcast";
    node.inputs = {operand(n, "self", 0)};
    return;  // dims set once the output's rank is known (below, in outputs)
  }
  auto it = simple_ops().find(base);
  node.op = it == simple_ops().end() ? "other:" + base : it->second;
  if (unary_data(node.op)) {
    node.inputs = {operand(n, "self", 0)};
    if (node.inputs[0] < 0) node.inputs = {operand(n, "input", 0)};
    return;
  }
  // Everything else: every tensor argument is an input, in order.
  for (const auto& a : list(n, "inputs")) {
    if (!a.contains("arg")) continue;
    const json& v = a["arg"];
    if (v.contains("as_tensor")) node.inputs.push_back(use(name_of(v["as_tensor"]), "input"));
    if (v.contains("as_tensors")) {
      for (const auto& t : v["as_tensors"]) node.inputs.push_back(use(name_of(t), "input"));
    }
  }
}

}  // namespace

Graph lower_program(const json& gm, const Inputs& in, const std::string& source) {
  Graph g = Lowering(gm, in, source).run();
  // aten.expand: right-aligned broadcast of the operand's dimensions.
  for (auto& n : g.nodes) {
    if (n.op != "broadcast" || n.inputs.empty() || n.outputs.empty() || n.inputs[0] < 0) continue;
    const auto r =
        static_cast<std::int64_t>(g.values[static_cast<std::size_t>(n.inputs[0])].shape.size());
    const auto R =
        static_cast<std::int64_t>(g.values[static_cast<std::size_t>(n.outputs[0])].shape.size());
    if (r > R) throw Error(source + ": " + n.location + ": expands to a lower rank");
    for (std::int64_t i = 0; i < r; ++i) n.attrs["dims"].ints.push_back(R - r + i);
  }
  return g;
}

}  // namespace normcore::import::torch_export_detail
