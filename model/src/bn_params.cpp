#include "normcore/bn_params.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "normcore/npz.hpp"

namespace normcore {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string num_str(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", v);
  return buf.data();
}

// ---------------------------------------------------------------------------------------------
// NaN / Infinity literals: Python's json.dump writes them, strict JSON has none. Outside string
// literals they are rewritten to the strings "NaN" / "Infinity" / "-Infinity" (which number()
// below accepts), remembering where, so that parse errors still report original byte offsets.

struct Relaxed {
  std::string text;
  std::vector<std::size_t> inserted_at;  // offsets in `text` where 2 quote bytes were added

  [[nodiscard]] std::size_t original_offset(std::size_t offset) const {
    std::size_t shift = 0;
    for (const auto at : inserted_at) {
      if (at < offset) shift += 2;
    }
    return offset > shift ? offset - shift : 0;
  }
};

bool is_word_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
}

Relaxed relax_json(std::string_view in) {
  static constexpr std::array<std::string_view, 3> kWords = {"-Infinity", "Infinity", "NaN"};
  Relaxed r;
  r.text.reserve(in.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char ch = in[i];
    if (in_string) {
      r.text += ch;
      if (ch == '\\' && i + 1 < in.size()) {
        r.text += in[++i];
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
      r.text += ch;
      continue;
    }
    bool replaced = false;
    for (const auto word : kWords) {
      if (in.substr(i, word.size()) != word) continue;
      const bool left_ok = i == 0 || !is_word_char(in[i - 1]);
      const bool right_ok = i + word.size() >= in.size() || !is_word_char(in[i + word.size()]);
      if (!left_ok || !right_ok) continue;
      r.inserted_at.push_back(r.text.size());
      r.text += '"';
      r.text += word;
      r.text += '"';
      i += word.size() - 1;
      replaced = true;
      break;
    }
    if (!replaced) r.text += ch;
  }
  return r;
}

json parse_json_text(std::string_view text, const std::string& source) {
  const Relaxed relaxed = relax_json(text);
  try {
    return json::parse(relaxed.text);
  } catch (const json::parse_error& e) {
    const std::size_t byte = relaxed.original_offset(e.byte);
    // Line / column of the original text.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 18: <detail>".
    std::string detail = e.what();
    if (const auto at = detail.find("column "); at != std::string::npos) {
      if (const auto colon = detail.find(": ", at); colon != std::string::npos) {
        detail = detail.substr(colon + 2);
      }
    }
    throw Error(source + ": malformed JSON at byte " + std::to_string(byte) + " (line " +
                std::to_string(line) + ", column " + std::to_string(col) + "): " + detail);
  }
}

// ---------------------------------------------------------------------------------------------
// Field readers

class Reader {
 public:
  explicit Reader(const std::string& source) : src_(source) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(src_ + ": " + what); }

  double number(const json& v, const std::string& where) const {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    fail(where + " must be a number, got " + describe(v));
  }

  std::int64_t integer(const json& v, const std::string& where) const {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() &&
          v.get<std::uint64_t>() >
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail(where + " = " + v.dump() + " is too large");
      }
      return v.get<std::int64_t>();
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::nearbyint(d) && std::fabs(d) < 9.0e18) {
        return static_cast<std::int64_t>(d);
      }
    }
    fail(where + " must be an integer, got " + describe(v));
  }

  std::vector<double> array(const json& v, const std::string& name) const {
    if (!v.is_array()) fail(name + " must be an array of numbers, got " + describe(v));
    std::vector<double> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.push_back(number(v[i], name + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  Quant quant(const json& v, const std::string& name) const {
    if (!v.is_object()) {
      fail(name + " must be an object {\"scale\": s, \"zero_point\": z}, got " + describe(v));
    }
    Quant q;
    bool have_scale = false;
    for (const auto& [key, val] : v.items()) {
      if (key == "scale") {
        q.scale = number(val, name + ".scale");
        have_scale = true;
      } else if (key == "zero_point") {
        q.zero_point = integer(val, name + ".zero_point");
      } else {
        fail(name + ": unknown key '" + key + "' (expected scale, zero_point)");
      }
    }
    if (!have_scale) fail(name + ".scale is missing");
    return q;
  }

  static std::string describe(const json& v) {
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(v.type_name()) + " " + text;
  }

 private:
  const std::string& src_;
};

bool ignored_key(const std::string& key) {
  return key.starts_with('_') || key == "name" || key == "comment" || key == "description";
}

void fill_defaults(BnParams& p) {
  if (p.gamma.empty()) p.gamma.assign(p.mean.size(), 1.0);
  if (p.beta.empty()) p.beta.assign(p.mean.size(), 0.0);
}

// "activation": none | relu | relu6 | {"min": lo, "max": hi} (clamp).
void read_activation(const Reader& rd, const json& val, BnParams& p) {
  if (val.is_null()) {
    p.activation = "none";
  } else if (val.is_string()) {
    p.activation = val.get<std::string>();
    if (p.activation != "none" && p.activation != "relu" && p.activation != "relu6") {
      rd.fail("activation '" + p.activation +
              "' is not one of none, relu, relu6 or {\"min\": lo, \"max\": hi}");
    }
  } else if (val.is_object()) {
    p.activation = "clamp";
    bool have_min = false, have_max = false;
    for (const auto& [k, v] : val.items()) {
      if (k == "min") {
        p.act_min = rd.number(v, "activation.min");
        have_min = true;
      } else if (k == "max") {
        p.act_max = rd.number(v, "activation.max");
        have_max = true;
      } else {
        rd.fail("activation: unknown key '" + k + "' (expected min, max)");
      }
    }
    if (!have_min || !have_max) rd.fail("activation clamp needs both \"min\" and \"max\"");
  } else {
    rd.fail("activation must be a string or {\"min\": lo, \"max\": hi}, got " +
            Reader::describe(val));
  }
}

// Either "quant": "integer" or both "input" and "output".
void check_quant(const Reader& rd, BnParams& p, bool have_in, bool have_out, bool have_quant) {
  if (have_quant && (have_in || have_out)) {
    rd.fail("\"quant\": \"integer\" conflicts with \"" + std::string(have_in ? "input" : "output") +
            "\" quantisation; give one or the other");
  }
  if (have_quant) {
    p.integer_io = true;
    p.in = Quant{};
    p.out = Quant{};
  } else if (!have_in && !have_out) {
    rd.fail(
        "no quantisation: give \"input\" and \"output\" {\"scale\", \"zero_point\"} or "
        "\"quant\": \"integer\"");
  } else if (!have_in || !have_out) {
    rd.fail(std::string(have_in ? "output" : "input") + " quantisation is missing");
  }
}

}  // namespace

BnParams parse_bn_json(std::string_view text, const std::string& source, Arrays arrays) {
  const json doc = parse_json_text(text, source);
  const Reader rd(source);
  if (!doc.is_object()) rd.fail("top level must be a JSON object, got " + Reader::describe(doc));

  BnParams p;
  p.source = source;
  bool have_in = false, have_out = false, have_quant = false;
  for (const auto& [key, val] : doc.items()) {
    if (key == "gamma") {
      p.gamma = rd.array(val, key);
    } else if (key == "beta") {
      p.beta = rd.array(val, key);
    } else if (key == "mean") {
      p.mean = rd.array(val, key);
    } else if (key == "var") {
      p.var = rd.array(val, key);
    } else if (key == "eps") {
      p.eps = rd.number(val, key);
    } else if (key == "input") {
      p.in = rd.quant(val, key);
      have_in = true;
    } else if (key == "output") {
      p.out = rd.quant(val, key);
      have_out = true;
    } else if (key == "quant") {
      // "float" (contract v2): the layer's tensors are real values, no quantisation (the
      // same identity as "integer": scales 1, zero points 0)
      if (!val.is_string() ||
          (val.get<std::string>() != "integer" && val.get<std::string>() != "float")) {
        rd.fail(
            "quant must be \"integer\" or \"float\" (or give \"input\" and \"output\" "
            "quantisation), got " +
            Reader::describe(val));
      }
      have_quant = true;
    } else if (key == "activation") {
      read_activation(rd, val, p);
    } else if (key == "rounding") {
      if (!val.is_string()) rd.fail("rounding must be a string, got " + Reader::describe(val));
      try {
        p.rounding = parse_rounding(val.get<std::string>());
      } catch (const std::invalid_argument& e) {
        rd.fail(std::string("rounding: ") + e.what());
      }
    } else if (!ignored_key(key)) {
      rd.fail("unknown key '" + key +
              "' (expected gamma, beta, mean, var, eps, input, output, quant, activation, "
              "rounding)");
    }
  }

  check_quant(rd, p, have_in, have_out, have_quant);

  if (arrays == Arrays::required) {
    if (p.mean.empty() && !doc.contains("mean")) rd.fail("mean is missing");
    if (p.var.empty() && !doc.contains("var")) rd.fail("var is missing");
    if (!doc.contains("gamma")) p.gamma.assign(p.mean.size(), 1.0);  // Keras scale=False
    if (!doc.contains("beta")) p.beta.assign(p.mean.size(), 0.0);    // Keras center=False
    validate(p);
  }
  return p;
}

BnParams load_bn_json(const fs::path& path, Arrays arrays) {
  const auto bytes = read_file_bytes(path);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return parse_bn_json(text, path.string(), arrays);
}

namespace {

// The role name a key denotes: the part after the last '/' or '.', without a ":0" suffix.
std::string leaf_of(const std::string& key) {
  std::string leaf = key;
  if (const auto at = leaf.find_last_of("/."); at != std::string::npos) leaf = leaf.substr(at + 1);
  if (const auto colon = leaf.rfind(':');
      colon != std::string::npos && colon + 1 < leaf.size() &&
      std::all_of(leaf.begin() + static_cast<long>(colon) + 1, leaf.end(),
                  [](char ch) { return ch >= '0' && ch <= '9'; })) {
    leaf = leaf.substr(0, colon);
  }
  return leaf;
}

std::vector<double> channel_vector(const NpyArray& a, const std::string& who) {
  std::size_t big_dims = 0;
  for (const auto d : a.shape) big_dims += d != 1 ? 1 : 0;
  if (big_dims > 1) {
    std::string shape;
    for (const auto d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw Error(who + " has shape (" + shape + "); expected one value per channel");
  }
  return a.as_double;
}

}  // namespace

void load_bn_npz(const fs::path& path, BnParams& p) {
  struct Role {
    const char* field;
    std::vector<double>* target;
    std::array<std::string_view, 3> names;
  };
  const std::array<Role, 4> roles = {{
      {"gamma", &p.gamma, {"gamma", "weight", "scale"}},
      {"beta", &p.beta, {"beta", "bias", ""}},
      {"mean", &p.mean, {"mean", "running_mean", "moving_mean"}},
      {"var", &p.var, {"var", "running_var", "moving_variance"}},
  }};
  // Only the members that can hold a role are decompressed.
  const auto arrays = read_npz(path, [&](const std::string& key) {
    const std::string leaf = leaf_of(key);
    return !leaf.empty() && std::any_of(roles.begin(), roles.end(), [&](const Role& r) {
      return std::find(r.names.begin(), r.names.end(), leaf) != r.names.end();
    });
  });
  const std::string npz = path.string();
  for (const auto& role : roles) {
    std::vector<std::string> hits;
    for (const auto& [key, arr] : arrays) {
      const std::string leaf = leaf_of(key);
      if (std::find(role.names.begin(), role.names.end(), leaf) != role.names.end() &&
          !leaf.empty()) {
        hits.push_back(key);
      }
    }
    if (hits.size() > 1) {
      std::string list;
      for (const auto& h : hits) list += (list.empty() ? "'" : ", '") + h + "'";
      throw Error(npz + ": keys " + list + " all look like " + role.field +
                  "; keep exactly one per role");
    }
    if (hits.size() == 1) {
      *role.target = channel_vector(arrays.at(hits[0]), npz + ": '" + hits[0] + "'");
    }
  }
  p.source = p.source.empty() ? npz : p.source + " + " + npz;
  if (p.mean.empty()) {
    throw Error(p.source + ": no mean array (npz keys mean, running_mean or moving_mean)");
  }
  if (p.var.empty()) {
    throw Error(p.source + ": no var array (npz keys var, running_var or moving_variance)");
  }
  fill_defaults(p);
  validate(p);
}

BnParams load_bn(const fs::path& json_path, const fs::path& npz_path) {
  BnParams p = load_bn_json(json_path, Arrays::optional);
  load_bn_npz(npz_path, p);
  return p;
}

void validate(const BnParams& p) {
  const std::string src = p.source.empty() ? std::string("bn params") : p.source;
  auto fail = [&](const std::string& what) { throw Error(src + ": " + what); };

  const std::size_t c = p.mean.size();
  if (c == 0) fail("mean has 0 channels (need at least 1)");
  const std::array<std::pair<const char*, const std::vector<double>*>, 4> arrays = {
      {{"gamma", &p.gamma}, {"beta", &p.beta}, {"mean", &p.mean}, {"var", &p.var}}};
  for (const auto& [name, vec] : arrays) {
    if (vec->size() != c) {
      fail("mean has " + std::to_string(c) + " channels but " + name + " has " +
           std::to_string(vec->size()));
    }
  }
  for (const auto& [name, vec] : arrays) {
    for (std::size_t i = 0; i < c; ++i) {
      if (!std::isfinite((*vec)[i])) {
        fail(std::string(name) + "[" + std::to_string(i) + "] is " + num_str((*vec)[i]));
      }
    }
  }
  if (!std::isfinite(p.eps)) fail("eps is " + num_str(p.eps));
  if (p.eps < 0) fail("eps = " + num_str(p.eps) + " must be >= 0");
  for (std::size_t i = 0; i < c; ++i) {
    const double v = p.var[i] + p.eps;
    if (!(v > 0)) {
      fail("var[" + std::to_string(i) + "] + eps = " + num_str(v) + " must be > 0");
    }
  }
  if (!p.integer_io) {
    for (const auto& [name, q] : {std::pair{"input", &p.in}, std::pair{"output", &p.out}}) {
      if (!std::isfinite(q->scale)) fail(std::string(name) + " scale is " + num_str(q->scale));
      if (q->scale <= 0) {
        fail(std::string(name) + " scale = " + num_str(q->scale) + " must be > 0");
      }
    }
  }
  if (p.activation == "clamp") {
    if (!std::isfinite(p.act_min)) fail("activation min is " + num_str(p.act_min));
    if (!std::isfinite(p.act_max)) fail("activation max is " + num_str(p.act_max));
    if (p.act_min > p.act_max) {
      fail("activation min = " + num_str(p.act_min) + " is above max = " + num_str(p.act_max));
    }
  } else if (p.activation != "none" && p.activation != "relu" && p.activation != "relu6") {
    fail("activation '" + p.activation + "' is not one of none, relu, relu6, clamp");
  }
}

}  // namespace normcore
