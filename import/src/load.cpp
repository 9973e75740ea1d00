// The format pick and dispatch of load.hpp: the one place that knows every front end.
#include "normcore/import/load.hpp"

#include <cctype>

#include "normcore/bn_params.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/mlir.hpp"
#include "normcore/import/onnx.hpp"
#include "normcore/import/relay.hpp"
#include "normcore/import/torch_export.hpp"
#include "normcore/npz.hpp"
#include "text_start.hpp"

namespace normcore::import {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& ch : r) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return r;
}

}  // namespace

bool looks_like_hlo(std::string_view text) {
  return detail::after_comments(text, true).starts_with("HloModule");
}

Graph load_model(const std::filesystem::path& path, std::string_view format,
                 std::string_view option) {
  const std::string file = path.string();
  const auto bytes = read_file_bytes(path);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::string fmt = lower(format);
  if (fmt.empty()) {
    const std::string ext = lower(path.extension().string());
    if (ext == ".onnx") {
      fmt = "onnx";
    } else if (ext == ".pt2" || looks_like_pt2(bytes)) {
      fmt = "torch.export";
    } else if (ext == ".hlo" || looks_like_hlo(text)) {
      fmt = "hlo";
    } else if (ext == ".relay" || (ext != ".mlir" && looks_like_relay(text))) {
      fmt = "relay";
    } else if (ext == ".mlir" || looks_like_mlir(text)) {
      fmt = "mlir";
    } else if (ext == ".txt") {
      throw Error(file +
                  ": a .txt model must be XLA HLO text starting with 'HloModule', MLIR or Relay "
                  "text (or give " +
                  std::string(option) + ")");
    } else {
      fmt = "onnx";
    }
  }
  if (fmt == "onnx") return parse_onnx(bytes, file);
  if (fmt == "hlo") return parse_hlo(text, file);
  if (fmt == "mlir") return parse_mlir(text, file);
  if (fmt == "torch.export" || fmt == "pt2") return parse_torch_export(bytes, file);
  if (fmt == "relay") return parse_relay(text, file);
  throw Error(std::string(option) + ": '" + std::string(format) +
              "' is not onnx, hlo, mlir, torch.export or relay");
}

}  // namespace normcore::import
