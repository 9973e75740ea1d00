// torch.export `.pt2` archives -> Graph (see torch_export.hpp): the archive's layout, the
// serialized program's JSON, tensor metadata and the raw weight storage. The node lowering is in
// torch_export_lower.cpp.
#include "normcore/import/torch_export.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "normcore/npz.hpp"  // ZipArchive, read_file_bytes
#include "raw_decode.hpp"
#include "torch_export_internal.hpp"

namespace normcore::import {

namespace te = torch_export_detail;
using nlohmann::json;

namespace torch_export_detail {

namespace {

constexpr std::size_t kMaxElements = std::size_t{1} << 27;  // per weight (1 GiB as double)

// torch._export.serde.schema.ScalarType
std::optional<detail::RawType> raw_type(std::int64_t code) {
  using detail::RawType;
  switch (code) {
    case 1:
      return RawType::u8;
    case 2:
      return RawType::i8;
    case 3:
      return RawType::i16;
    case 4:
      return RawType::i32;
    case 5:
      return RawType::i64;
    case 6:
      return RawType::f16;
    case 7:
      return RawType::f32;
    case 8:
      return RawType::f64;
    case 12:
      return RawType::boolean;
    case 13:
      return RawType::bf16;
    default:
      return std::nullopt;
  }
}

std::int64_t int_of(const json& j, const std::string& what) {
  if (j.is_object() && j.contains("as_int") && j["as_int"].is_number_integer()) {
    return j["as_int"].get<std::int64_t>();
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  throw Error(what + " is not an integer");
}

}  // namespace

std::string dtype_name(std::int64_t code) {
  static const std::map<std::int64_t, std::string> k = {
      {1, "u8"},  {2, "i8"},  {3, "i16"}, {4, "i32"}, {5, "i64"},
      {6, "f16"}, {7, "f32"}, {8, "f64"}, {12, "i1"}, {13, "bf16"}};
  auto it = k.find(code);
  return it == k.end() ? "dtype" + std::to_string(code) : it->second;
}

TensorMeta tensor_meta(const json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + ": tensor metadata is not an object");
  TensorMeta m;
  m.dtype = j.contains("dtype") && j["dtype"].is_number_integer() ? j["dtype"].get<int>() : 0;
  const json& sizes = j.contains("sizes") ? j["sizes"] : json::array();
  if (!sizes.is_array()) throw Error(what + ": 'sizes' is not a list");
  for (const auto& s : sizes) {
    // A symbolic size (as_expr) is an unknown dimension.
    if (s.is_object() && s.contains("as_int") && s["as_int"].is_number_integer()) {
      const auto d = s["as_int"].get<std::int64_t>();
      if (d < 0) throw Error(what + ": negative size " + std::to_string(d));
      m.sizes.push_back(d);
    } else {
      m.sizes.push_back(-1);
    }
  }
  if (j.contains("strides") && j["strides"].is_array()) {
    for (const auto& s : j["strides"]) m.strides.push_back(int_of(s, what + ": a stride"));
  }
  if (j.contains("storage_offset")) m.offset = int_of(j["storage_offset"], what + ": offset");
  return m;
}

// The elements of a weight from its raw storage, addressed through sizes / strides / offset.
Constant decode_storage(const TensorMeta& m, std::span<const std::uint8_t> bytes,
                        const std::string& what) {
  const auto rt = raw_type(m.dtype);
  if (!rt) throw Error(what + ": dtype " + std::to_string(m.dtype) + " is not supported");
  const std::size_t item = detail::raw_size(*rt);
  const auto count = detail::element_count(m.sizes);
  if (!count || *count > kMaxElements) {
    throw Error(what + ": sizes " + shape_str(m.sizes) + " are unknown or too large");
  }
  std::vector<std::int64_t> strides = m.strides;
  if (strides.empty() && !m.sizes.empty()) {  // contiguous
    strides.assign(m.sizes.size(), 1);
    for (std::size_t k = m.sizes.size() - 1; k > 0; --k) strides[k - 1] = strides[k] * m.sizes[k];
  }
  if (strides.size() != m.sizes.size()) throw Error(what + ": strides do not match the sizes");
  // The furthest element addressed must lie inside the storage.
  std::uint64_t last = static_cast<std::uint64_t>(std::max<std::int64_t>(m.offset, 0));
  if (m.offset < 0) throw Error(what + ": negative storage offset");
  for (std::size_t k = 0; k < strides.size(); ++k) {
    if (strides[k] < 0 || strides[k] > (std::int64_t{1} << 40)) {
      throw Error(what + ": stride " + std::to_string(strides[k]) + " is out of range");
    }
    if (m.sizes[k] > 0) last += static_cast<std::uint64_t>(strides[k] * (m.sizes[k] - 1));
  }
  if (*count > 0 && (last + 1) * item > bytes.size()) {
    throw Error(what + ": its storage has " + std::to_string(bytes.size()) + " bytes but sizes " +
                shape_str(m.sizes) + " address " + std::to_string((last + 1) * item));
  }
  Constant c;
  c.shape = m.sizes;
  c.data.resize(*count);
  std::vector<std::int64_t> idx(m.sizes.size(), 0);
  for (std::size_t e = 0; e < *count; ++e) {
    std::uint64_t off = static_cast<std::uint64_t>(m.offset);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      off += static_cast<std::uint64_t>(idx[k] * strides[k]);
    }
    c.data[e] = detail::raw_element(*rt, bytes.data() + off * item);
    for (std::size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < m.sizes[k]) break;
      idx[k] = 0;
    }
  }
  return c;
}

}  // namespace torch_export_detail

namespace {

struct Archive {
  ZipArchive zip;
  std::string prefix;   // "<dir>/"
  std::string program;  // the models/*.json member
};

Archive open_archive(std::span<const std::uint8_t> bytes, const std::string& source) {
  Archive a{ZipArchive(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), source), "", ""};
  std::vector<std::string> programs;
  for (const auto& m : a.zip.members()) {
    const auto p = m.find("models/");
    if (p == std::string::npos || m.size() < 5 || m.substr(m.size() - 5) != ".json") continue;
    if (m.find('/', p + 7) != std::string::npos) continue;
    if (p != 0 && m[p - 1] != '/') continue;
    programs.push_back(m);
  }
  if (programs.empty()) {
    throw Error(source +
                ": not a torch.export archive (no <dir>/models/<name>.json member; write it with "
                "torch.export.save)");
  }
  auto it = std::find_if(programs.begin(), programs.end(),
                         [](const std::string& m) { return m.ends_with("models/model.json"); });
  if (it == programs.end() && programs.size() > 1) {
    throw Error(source + ": several programs (" + programs[0] + ", " + programs[1] +
                ") and none is models/model.json");
  }
  a.program = it != programs.end() ? *it : programs[0];
  a.prefix = a.program.substr(0, a.program.find("models/"));
  return a;
}

json read_json(const Archive& a, const std::string& member, const std::string& source) {
  const auto bytes = a.zip.read(member);
  try {
    return json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {
    throw Error(source + ": " + member + ": malformed JSON: " + e.what());
  }
}

// fqn -> weight (or constant) data from a *_config.json and the raw entries beside it.
std::map<std::string, te::Stored> stored_tensors(const Archive& a, const std::string& dir,
                                                 const std::string& config,
                                                 const std::string& source) {
  std::map<std::string, te::Stored> out;
  const auto members = a.zip.members();
  const std::string cfg = a.prefix + dir + config;
  if (std::find(members.begin(), members.end(), cfg) == members.end()) return out;
  const json j = read_json(a, cfg, source);
  if (!j.contains("config") || !j["config"].is_object()) {
    throw Error(source + ": " + cfg + ": no 'config' object");
  }
  for (const auto& [fqn, e] : j["config"].items()) {
    const std::string what = source + ": weight '" + fqn + "'";
    te::Stored s;
    if (!e.is_object() || !e.contains("tensor_meta")) throw Error(what + ": no tensor_meta");
    s.meta = te::tensor_meta(e["tensor_meta"], what);
    if (e.value("use_pickle", false)) {
      s.note = "pickled by torch (a tensor subclass): not read";
    } else {
      const std::string member = a.prefix + dir + e.value("path_name", std::string());
      if (std::find(members.begin(), members.end(), member) == members.end()) {
        throw Error(what + ": its storage " + member + " is not in the archive");
      }
      s.data = te::decode_storage(s.meta, a.zip.read(member), what);
    }
    out.emplace(fqn, std::move(s));
  }
  return out;
}

}  // namespace

Graph parse_torch_export(std::span<const std::uint8_t> bytes, const std::string& source) {
  const Archive a = open_archive(bytes, source);
  const json program = read_json(a, a.program, source);
  if (!program.contains("graph_module") || !program["graph_module"].is_object() ||
      !program["graph_module"].contains("graph")) {
    throw Error(source + ": " + a.program + ": no graph_module.graph (not an ExportedProgram)");
  }
  te::Inputs in;
  in.weights = stored_tensors(a, "data/weights/", "model_weights_config.json", source);
  in.constants = stored_tensors(a, "data/constants/", "model_constants_config.json", source);
  return te::lower_program(program["graph_module"], in, source);
}

Graph load_torch_export(const std::filesystem::path& path) {
  return parse_torch_export(read_file_bytes(path), path.string());
}

bool looks_like_pt2(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4;
}

}  // namespace normcore::import
