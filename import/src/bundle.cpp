// Parameter bundles (.npz / .npy / JSON; safetensors and Flax msgpack in bundle_formats.cpp)
// and attaching them to a Graph (see bundle.hpp).
#include "normcore/import/bundle.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "normcore/import/recognise.hpp"
#include "normcore/npz.hpp"
#include "normcore/util/names.hpp"

namespace normcore::import {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return r;
}

// '/' and '.' are the same separator.
std::string norm_sep(std::string_view s) {
  std::string r(s);
  std::replace(r.begin(), r.end(), '.', '/');
  return r;
}

// For comparing layer names: separators and other punctuation become '_', lower case.
std::string norm_layer(std::string_view s) {
  std::string r;
  for (char ch : s) {
    r += std::isalnum(static_cast<unsigned char>(ch)) != 0
             ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch)))
             : '_';
  }
  return r;
}

// Natural order: digit runs compare by value (BatchNorm_2 < BatchNorm_10).
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie])) != 0) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je])) != 0) ++je;
      std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// ---- JSON ----

void json_array(const json& j, const std::string& key, const std::string& source,
                std::vector<std::int64_t>& shape, std::vector<double>& data, std::size_t depth) {
  if (j.is_number()) {
    if (depth != shape.size()) {
      throw Error(source + ": key '" + key +
                  "': ragged nested list (a number where a list was expected)");
    }
    data.push_back(j.get<double>());
    return;
  }
  if (!j.is_array()) {
    throw Error(source + ": key '" + key + "': expected numbers, found " +
                std::string(j.type_name()));
  }
  const auto n = static_cast<std::int64_t>(j.size());
  if (depth == shape.size()) {
    if (!data.empty()) throw Error(source + ": key '" + key + "': ragged nested list");
    shape.push_back(n);
  } else if (shape[depth] != n) {
    throw Error(source + ": key '" + key + "': ragged nested list (lengths " +
                std::to_string(shape[depth]) + " and " + std::to_string(n) + " at depth " +
                std::to_string(depth) + ")");
  }
  for (const auto& e : j) json_array(e, key, source, shape, data, depth + 1);
}

void flatten_json(const json& j, const std::string& prefix, const std::string& source, Bundle& b) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (!k.empty() && k[0] == '_') continue;
    const std::string key = prefix.empty() ? k : prefix + "/" + k;
    const json& v = it.value();
    if (v.is_object()) {
      flatten_json(v, key, source, b);
      continue;
    }
    Constant c;
    if (v.is_number()) {
      c.data.push_back(v.get<double>());
    } else if (v.is_array()) {
      json_array(v, key, source, c.shape, c.data, 0);
      if (c.shape.size() == 1 && c.shape[0] == 0) {
        throw Error(source + ": key '" + key + "': empty array");
      }
    } else {
      throw Error(source + ": key '" + key + "': expected a number or a list of numbers, found " +
                  std::string(v.type_name()));
    }
    for (double x : c.data) {
      if (!std::isfinite(x)) throw Error(source + ": key '" + key + "': non-finite value");
    }
    if (b.arrays.contains(key)) throw Error(source + ": key '" + key + "' appears twice");
    b.arrays.emplace(key, std::move(c));
  }
}

Constant from_npy(const NpyArray& a) {
  Constant c;
  for (auto d : a.shape) c.shape.push_back(static_cast<std::int64_t>(d));
  c.data = a.as_double;
  return c;
}

// ---- graph side ----

std::optional<int> param_number(const Value& v) {
  const auto p = v.origin.find("parameter(");
  if (p == std::string::npos) return std::nullopt;
  std::size_t i = p + 10;
  int n = 0;
  bool any = false;
  while (i < v.origin.size() && std::isdigit(static_cast<unsigned char>(v.origin[i])) != 0) {
    n = n * 10 + (v.origin[i] - '0');
    any = true;
    ++i;
  }
  if (!any) return std::nullopt;
  return n;
}

std::vector<std::string> value_names(const Value& v) {
  std::vector<std::string> out;
  if (!v.name.empty()) out.push_back(v.name);
  if (auto p = v.origin.find('\''); p != std::string::npos) {
    const auto e = v.origin.find('\'', p + 1);
    if (e != std::string::npos && e > p + 1) {
      std::string n = v.origin.substr(p + 1, e - p - 1);
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  }
  return out;
}

std::string who(const Graph& g, int v) {
  const Value& val = g.values[static_cast<std::size_t>(v)];
  if (!val.origin.empty())
    return val.origin + (val.origin.find('\'') == std::string::npos ? " '" + val.name + "'" : "");
  return "input '" + val.name + "'";
}

std::vector<std::int64_t> squeezed(const std::vector<std::int64_t>& s) {
  std::vector<std::int64_t> r;
  for (auto d : s) {
    if (d != 1) r.push_back(d);
  }
  return r;
}

void fill(Graph& g, int v, const Bundle& b, const std::string& key, const std::string& how,
          AttachReport& rep, std::set<std::string>& used) {
  Value& val = g.values[static_cast<std::size_t>(v)];
  const Constant& arr = b.get(key);
  std::int64_t n = 1;
  for (auto d : arr.shape) n *= d;
  if (val.shape_known) {
    bool ok = squeezed(val.shape) == squeezed(arr.shape);
    if (!ok) {
      // An unknown dimension matches anything of the right rank.
      const auto a = squeezed(val.shape), bb = squeezed(arr.shape);
      if (a.size() == bb.size()) {
        ok = true;
        for (std::size_t i = 0; i < a.size(); ++i) ok = ok && (a[i] < 0 || a[i] == bb[i]);
      }
    }
    if (!ok) {
      throw Error(b.source + ": key '" + key + "' (for " + who(g, v) + ", " + how +
                  "): expected shape " + shape_str(val.shape) + ", found " + shape_str(arr.shape));
    }
  }
  Constant c;
  c.shape = val.shape_known ? val.shape : arr.shape;
  for (auto& d : c.shape) {
    if (d < 0) d = 1;  // an unknown size-1 dimension squeezed away above
  }
  if (val.shape_known && !squeezed(val.shape).empty()) {
    // Resolve unknown dimensions from the array.
    const auto bb = squeezed(arr.shape);
    std::size_t k = 0;
    for (std::size_t i = 0; i < val.shape.size(); ++i) {
      if (val.shape[i] != 1 && k < bb.size()) c.shape[i] = bb[k++];
    }
  }
  c.data = arr.data;
  val.constant = std::move(c);
  if (!val.shape_known) {
    val.shape = arr.shape;
    val.shape_known = true;
  }
  val.origin += (val.origin.empty() ? "" : " ") + std::string("<- bundle '") + key + "'";
  rep.attached.push_back({v, key, how});
  used.insert(key);
}

struct LayerGroup {
  std::string layer;
  std::map<std::string, std::string> keys;  // role -> key
};

}  // namespace

std::optional<std::pair<std::string, std::string>> split_layer_key(std::string_view key) {
  static const std::map<std::string, std::string> kRoles = {
      {"scale", "gamma"},  {"weight", "gamma"},      {"gamma", "gamma"},
      {"bias", "beta"},    {"beta", "beta"},         {"offset", "beta"},
      {"mean", "mean"},    {"running_mean", "mean"}, {"moving_mean", "mean"},
      {"var", "var"},      {"running_var", "var"},   {"moving_variance", "var"},
      {"variance", "var"}, {"moving_var", "var"}};
  const auto sep = key.find_last_of("/.");
  const std::string last(sep == std::string_view::npos ? key : key.substr(sep + 1));
  auto it = kRoles.find(lower(last));
  if (it == kRoles.end()) return std::nullopt;
  std::string layer(sep == std::string_view::npos ? std::string_view() : key.substr(0, sep));
  for (const char* coll : {"params", "batch_stats"}) {
    const std::string c(coll);
    if (layer == c) {
      layer.clear();
    } else if (layer.size() > c.size() && layer.compare(0, c.size(), c) == 0 &&
               (layer[c.size()] == '/' || layer[c.size()] == '.')) {
      layer.erase(0, c.size() + 1);
    }
  }
  return std::make_pair(layer, it->second);
}

std::vector<std::string> close_keys(const Bundle& b, std::string_view name, std::size_t n) {
  std::vector<std::pair<std::size_t, std::string>> d;
  const std::string ln = lower(name);
  for (const auto& [k, v] : b.arrays) {
    // A key containing the name (or contained in it) ranks first, then by edit distance.
    const std::string lk = lower(k);
    const bool contains =
        !ln.empty() && (lk.find(ln) != std::string::npos || ln.find(lk) != std::string::npos);
    d.emplace_back(contains ? 0 : 1 + util::edit_distance(ln, lk), k);
  }
  std::stable_sort(d.begin(), d.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < d.size() && i < n; ++i) out.push_back(d[i].second);
  return out;
}

// An .npz bundle's archive and the members decoded so far (Bundle::get).
struct BundleArchive {
  explicit BundleArchive(ZipArchive z) : zip(std::move(z)) {}
  ZipArchive zip;
  std::map<std::string, Constant> decoded;
};

const Constant& Bundle::get(const std::string& key) const {
  const Constant& c = arrays.at(key);
  if (!archive) return c;
  auto& d = archive->decoded;
  if (auto it = d.find(key); it != d.end()) return it->second;
  const std::string member = key + ".npy";
  const auto bytes = archive->zip.read(member);
  return d.emplace(key, from_npy(parse_npy(bytes, source + ": member '" + member + "'")))
      .first->second;
}

Bundle parse_bundle_json(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": malformed JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(source + ": expected a JSON object {\"key\": [numbers...]}");
  Bundle b;
  b.source = source;
  flatten_json(j, "", source, b);
  if (b.arrays.empty()) throw Error(source + ": no arrays");
  return b;
}

namespace {
// An 8-byte little-endian length that fits the file, then the JSON header's '{'.
bool looks_like_safetensors(const std::vector<std::uint8_t>& b) {
  if (b.size() < 10 || b[8] != '{') return false;
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | b[static_cast<std::size_t>(k)];
  return n <= b.size() - 8;
}
}  // namespace

Bundle load_bundle(const fs::path& path) {
  const std::string ext = lower(path.extension().string());
  auto bytes = read_file_bytes(path);
  const bool zip = bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K';
  const bool npy = bytes.size() >= 6 && bytes[0] == 0x93 && bytes[1] == 'N' && bytes[2] == 'U';
  if (ext == ".safetensors" || (ext != ".json" && looks_like_safetensors(bytes))) {
    return parse_safetensors(bytes, path.string());
  }
  if (ext == ".msgpack" || (ext != ".json" && !bytes.empty() &&
                            ((bytes[0] & 0xF0) == 0x80 || bytes[0] == 0xde || bytes[0] == 0xdf))) {
    return parse_flax_msgpack(bytes, path.string());
  }
  Bundle b;
  b.source = path.string();
  if (ext == ".npz" || (ext != ".npy" && ext != ".json" && zip)) {
    b.archive = std::make_shared<BundleArchive>(ZipArchive(std::move(bytes), path.string()));
    for (const auto& member : b.archive->zip.members()) {
      if (member.size() > 4 && member.ends_with(".npy"))
        b.arrays.emplace(member.substr(0, member.size() - 4), Constant{});
    }
    if (b.arrays.empty()) throw Error(path.string() + ": no .npy members");
    return b;
  }
  if (ext == ".npy" || (ext != ".json" && npy)) {
    b.arrays.emplace(path.stem().string(), from_npy(parse_npy(bytes, path.string())));
    return b;
  }
  return parse_bundle_json(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
}

namespace {

// The steps of attach_bundle (see bundle.hpp): by name, by parameter number, by role through the
// recognised batch norms, then the check that every batch-norm parameter has data.
class Attacher {
 public:
  Attacher(Graph& g, const Bundle& b) : g_(g), b_(b) {
    for (const auto& [k, a] : b.arrays) by_norm_.emplace(norm_sep(k), k);
  }

  AttachReport run() {
    by_name_and_number();
    by_role();
    check_complete();
    for (const auto& [k, a] : b_.arrays) {
      if (!used_.contains(k)) rep_.unused_keys.push_back(k);
    }
    return std::move(rep_);
  }

 private:
  Graph& g_;
  const Bundle& b_;
  AttachReport rep_;
  std::set<std::string> used_;
  std::map<std::string, std::string> by_norm_;  // normalised key -> key

  [[nodiscard]] bool empty_input(int v) const {
    const Value& val = g_.values[static_cast<std::size_t>(v)];
    return val.producer < 0 && !val.constant;
  }

  [[nodiscard]] std::string key_by_name(const Value& val) const {
    for (const auto& n : value_names(val)) {
      if (b_.arrays.contains(n)) return n;
      if (auto it = by_norm_.find(norm_sep(n)); it != by_norm_.end()) return it->second;
    }
    return {};
  }

  [[nodiscard]] std::string key_by_number(const Value& val) const {
    const auto pn = param_number(val);
    if (!pn) return {};
    const std::string s = std::to_string(*pn);
    for (const std::string& cand : {"param" + s, s, "parameter." + s, "parameter" + s, "param_" + s,
                                    "arg_" + s, "arg" + s, "parameter_" + s}) {
      if (b_.arrays.contains(cand)) return cand;
    }
    return {};
  }

  // 1 and 2: name, parameter number.
  void by_name_and_number() {
    for (std::size_t i = 0; i < g_.values.size(); ++i) {
      const int v = static_cast<int>(i);
      if (!empty_input(v)) continue;
      const Value& val = g_.values[i];
      if (std::string key = key_by_name(val); !key.empty()) {
        fill(g_, v, b_, key, "by name", rep_, used_);
      } else if (key = key_by_number(val); !key.empty()) {
        fill(g_, v, b_, key, "by parameter number", rep_, used_);
      }
    }
  }

  // The unused bundle keys grouped by layer (normalised layer name -> group), only layers with
  // both mean and var.
  [[nodiscard]] std::map<std::string, LayerGroup> layer_groups() const {
    std::map<std::string, LayerGroup> groups;
    for (const auto& [k, a] : b_.arrays) {
      if (used_.contains(k)) continue;
      auto lk = split_layer_key(k);
      if (!lk) continue;
      auto& grp = groups[norm_layer(lk->first)];
      grp.layer = lk->first;
      if (grp.keys.contains(lk->second)) {
        throw Error(b_.source + ": layer '" + lk->first + "' has two keys for its " + lk->second +
                    ": '" + grp.keys[lk->second] + "' and '" + k + "'");
      }
      grp.keys[lk->second] = k;
    }
    std::erase_if(groups, [](const auto& kv) {
      return !kv.second.keys.contains("mean") || !kv.second.keys.contains("var");
    });
    return groups;
  }

  // Batch norms (by index) paired with layer groups: by layer name, then the rest in order.
  static std::vector<std::pair<std::size_t, std::string>> pair_layers(
      const Bundle& b, const Recognition& rec, const std::vector<std::size_t>& need,
      std::map<std::string, LayerGroup>& groups) {
    std::vector<std::pair<std::size_t, std::string>> pairs;  // (layer index, group id)
    std::vector<std::size_t> rest;
    std::set<std::string> taken;
    for (std::size_t i : need) {
      auto it = groups.find(norm_layer(rec.layers[i].name));
      if (it != groups.end() && !taken.contains(it->first)) {
        pairs.emplace_back(i, it->first);
        taken.insert(it->first);
      } else {
        rest.push_back(i);
      }
    }
    std::vector<std::string> free_groups;
    for (const auto& [id, grp] : groups) {
      if (!taken.contains(id)) free_groups.push_back(id);
    }
    std::sort(free_groups.begin(), free_groups.end(),
              [&](const std::string& x, const std::string& y) {
                return natural_less(groups[x].layer, groups[y].layer);
              });
    // Without any layer left in the bundle there is nothing to map by role: the parameters are
    // reported as missing keys below.
    if (rest.empty() || free_groups.empty()) return pairs;
    if (free_groups.size() != rest.size()) {
      std::string bns, lays;
      for (std::size_t i : rest)
        bns += (bns.empty() ? "" : ", ") + rec.layers[i].name + " (" + rec.layers[i].location + ")";
      for (const auto& id : free_groups) lays += (lays.empty() ? "" : ", ") + groups[id].layer;
      throw Error(b.source + ": cannot map parameters by role: the model has " +
                  std::to_string(rest.size()) + " batch norm(s) with unnamed parameters [" + bns +
                  "] but the bundle has " + std::to_string(free_groups.size()) +
                  " unused layer(s) with mean and var [" + lays + "]");
    }
    for (std::size_t k = 0; k < rest.size(); ++k) pairs.emplace_back(rest[k], free_groups[k]);
    return pairs;
  }

  void fill_roles(const BnMatch& m, const LayerGroup& grp) {
    const std::pair<const char*, int> roles[] = {{"gamma", m.gamma_value},
                                                 {"beta", m.beta_value},
                                                 {"mean", m.mean_value},
                                                 {"var", m.var_value}};
    for (const auto& [role, v] : roles) {
      if (v < 0 || !empty_input(v)) continue;
      auto kit = grp.keys.find(role);
      if (kit == grp.keys.end()) continue;  // reported below as missing
      const Constant& arr = b_.get(kit->second);
      std::int64_t n = 1;
      for (auto d : arr.shape) n *= d;
      if (n != m.channels) {
        throw Error(b_.source + ": key '" + kit->second + "' (" + role + " of layer '" + grp.layer +
                    "', mapped to batch norm '" + m.name + "' at " + m.location +
                    "): expected shape [" + std::to_string(m.channels) + "], found " +
                    shape_str(arr.shape));
      }
      fill(g_, v, b_, kit->second,
           std::string("by role: ") + role + " of layer '" + grp.layer + "'", rep_, used_);
    }
  }

  // 3: by role through the recognised batch norms.
  void by_role() {
    const Recognition rec = recognise(g_);
    std::vector<std::size_t> need;  // layers with an empty role leaf
    for (std::size_t i = 0; i < rec.layers.size(); ++i) {
      const auto& m = rec.layers[i];
      for (int v : {m.gamma_value, m.beta_value, m.mean_value, m.var_value}) {
        if (v >= 0 && empty_input(v)) {
          need.push_back(i);
          break;
        }
      }
    }
    if (need.empty()) return;
    auto groups = layer_groups();
    for (const auto& [i, id] : pair_layers(b_, rec, need, groups))
      fill_roles(rec.layers[i], groups[id]);
  }

  [[nodiscard]] static std::string role_of(const BnMatch& m, int v) {
    if (v == m.gamma_value) return "gamma (scale)";
    if (v == m.beta_value) return "beta (bias)";
    if (v == m.mean_value) return "mean";
    if (v == m.var_value) return "var";
    if (v == m.eps_value) return "eps";
    return {};
  }

  // A parameter of a recognised batch norm without data: the keys tried and close keys.
  [[noreturn]] void missing(const BnMatch& m, int v) const {
    const std::string role = role_of(m, v);
    const Value& val = g_.values[static_cast<std::size_t>(v)];
    std::string tried;
    for (const auto& n : value_names(val)) tried += (tried.empty() ? "'" : ", '") + n + "'";
    if (auto pn = param_number(val)) {
      const std::string s = std::to_string(*pn);
      tried += (tried.empty() ? "'" : ", '") + std::string("param") + s + "', '" + s +
               "', 'parameter." + s + "'";
    }
    std::set<std::string> close;
    std::vector<std::string> list;
    for (const auto& n : value_names(val)) {
      for (auto& k : close_keys(b_, n, 3)) {
        if (close.insert(k).second) list.push_back(k);
      }
    }
    if (!role.empty()) {
      for (const auto& [k, a] : b_.arrays) {
        auto lk = split_layer_key(k);
        if (lk && role.rfind(lk->second, 0) == 0 && close.insert(k).second) list.push_back(k);
      }
    }
    std::string cl;
    for (std::size_t i = 0; i < list.size() && i < 6; ++i) cl += (i > 0 ? ", " : "") + list[i];
    throw Error(b_.source + ": no key for " + who(g_, v) +
                (role.empty() ? std::string(" (read by") : " (the " + role + " of") +
                " batch norm '" + m.name + "' at " + m.location + "): tried " + tried +
                (cl.empty() ? std::string() : "; close keys: " + cl));
  }

  // Every parameter of a recognised batch norm must now have data.
  void check_complete() const {
    const Recognition rec = recognise(g_);
    for (const auto& m : rec.layers) {
      for (int v : m.leaves) {
        if (empty_input(v)) missing(m, v);
      }
    }
  }
};

}  // namespace

AttachReport attach_bundle(Graph& g, const Bundle& b) {
  return Attacher(g, b).run();
}

}  // namespace normcore::import
